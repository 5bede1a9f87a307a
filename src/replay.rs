//! At-most-once guards for side effects, across re-runs of a flow.
//!
//! A sealed `requestState` bounds replay (principal, request, deadline) but
//! cannot make a step single-use: the same client can present the same token
//! twice within its window (MRTR §Server Requirements 5, Warning). A
//! [`ReplayGuard`] is the server-side store that can. Fleets need a shared
//! implementation (e.g. Redis `SET NX PX`); [`MemoryReplayGuard`] serves one process.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::time::Timestamp;

/// A store of claimed `(flow, step)` pairs.
pub trait ReplayGuard: Send + Sync + std::fmt::Debug {
    /// Claims `step` of `flow` until `until`. Returns `true` the first time, and
    /// `false` if it was already claimed and has not expired.
    fn claim(&self, flow: [u8; 16], step: &str, until: Timestamp, now: Timestamp) -> bool;
}

/// An in-process [`ReplayGuard`] with expiry, bounded in size.
#[derive(Debug)]
pub struct MemoryReplayGuard {
    inner: Mutex<HashMap<([u8; 16], String), Timestamp>>,
    max_entries: usize,
}

impl MemoryReplayGuard {
    /// A guard holding at most `max_entries` live claims (expired ones are evicted
    /// first; when full of live claims, a new claim is refused: fail closed).
    pub fn new(max_entries: usize) -> Self {
        Self {
            inner: Mutex::new(HashMap::new()),
            max_entries,
        }
    }
}

impl Default for MemoryReplayGuard {
    fn default() -> Self {
        Self::new(100_000)
    }
}

impl ReplayGuard for MemoryReplayGuard {
    fn claim(&self, flow: [u8; 16], step: &str, until: Timestamp, now: Timestamp) -> bool {
        let mut map = match self.inner.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        };
        let key = (flow, step.to_owned());
        if let Some(exp) = map.get(&key)
            && *exp >= now
        {
            return false;
        }
        if map.len() >= self.max_entries {
            map.retain(|_, exp| *exp >= now);
            if map.len() >= self.max_entries {
                return false;
            }
        }
        map.insert(key, until);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_once_until_expiry() {
        let g = MemoryReplayGuard::new(2);
        let t = Timestamp::from_unix_secs(100);
        assert!(g.claim([1; 16], "a", t.add_secs(10), t));
        assert!(!g.claim([1; 16], "a", t.add_secs(10), t));
        assert!(g.claim([1; 16], "b", t.add_secs(10), t));
        assert!(
            !g.claim([2; 16], "a", t.add_secs(10), t),
            "full of live claims: fail closed"
        );
        assert!(
            g.claim([2; 16], "a", t.add_secs(100), t.add_secs(11)),
            "expired claims are evicted"
        );
    }
}
