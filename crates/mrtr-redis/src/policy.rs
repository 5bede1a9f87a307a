//! What the store's `maxmemory-policy` means for claims: [`StoreCheck`], read
//! from a `CONFIG GET` reply or its refusal, and the log line for it.

use std::fmt;

use ::redis::{RedisError, Value};

// Named only in the docs.
#[cfg(doc)]
use super::RedisReplayGuard;

/// What the guard found on its store: the answer of [`RedisReplayGuard::check_store`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreCheck {
    /// Connected, and the store never evicts keys (`maxmemory-policy noeviction`):
    /// claims are made.
    NoEviction,
    /// Connected, and the store's `maxmemory-policy` (named here) may evict claims.
    /// Claims are refused, unless `allowed` ([`RedisReplayGuard::allow_eviction`]).
    Evicting {
        /// The policy the store reported (`allkeys-lru`, `volatile-ttl`, …).
        policy: String,
        /// Whether the operator opted in: claims are made anyway.
        allowed: bool,
    },
    /// Connected, but the store did not say its policy (`CONFIG GET` refused, as
    /// many managed services do). Claims are refused, unless `allowed`.
    Unverified {
        /// Why the policy could not be read (the store's error code, never a URL).
        reason: String,
        /// Whether the operator opted in: claims are made anyway.
        allowed: bool,
    },
    /// No connection could be made within the connect timeout; claims are
    /// unavailable until one is (and the policy is read then).
    Unreachable,
}

impl StoreCheck {
    /// Whether claims are refused on this store (an eviction policy, or one that
    /// cannot be read, without the operator's opt-in).
    pub fn refuses_claims(&self) -> bool {
        matches!(
            self,
            Self::Evicting { allowed: false, .. } | Self::Unverified { allowed: false, .. }
        )
    }
}

impl fmt::Display for StoreCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoEviction => f.write_str("maxmemory-policy is noeviction"),
            Self::Evicting { policy, .. } => write!(
                f,
                "maxmemory-policy is {policy}: Redis may evict claims, and the replay of an \
                 evicted claim's flow runs its step again"
            ),
            Self::Unverified { reason, .. } => write!(
                f,
                "its maxmemory-policy cannot be read ({reason}), so mrtr cannot rule out that \
                 it evicts claims"
            ),
            Self::Unreachable => f.write_str("it did not answer"),
        }
    }
}

/// Logs what a (re)connect found: INFO when claims are safe, WARN when they are
/// made on the operator's say-so, ERROR when they are refused.
pub(super) fn announce(check: &StoreCheck) {
    match check {
        StoreCheck::NoEviction => tracing::info!(
            target: "mrtr::replay",
            "Redis replay store connected: maxmemory-policy is noeviction, claims are kept \
             until they expire"
        ),
        StoreCheck::Evicting { allowed: true, .. }
        | StoreCheck::Unverified { allowed: true, .. } => {
            tracing::warn!(
                target: "mrtr::replay",
                "Redis replay store connected, but the store's {check}; claims are made \
                 anyway, since eviction was allowed explicitly (--replay-store-allow-eviction)"
            );
        }
        StoreCheck::Evicting { .. } | StoreCheck::Unverified { .. } => tracing::error!(
            target: "mrtr::replay",
            "Redis replay store connected, but the store's {check}: every claim is refused \
             (fail closed: once steps do not run) until it reports maxmemory-policy noeviction. \
             Use a Redis dedicated to mrtr with maxmemory-policy noeviction; if the policy \
             cannot be read there (a managed service) and you have checked it, or you accept \
             the risk, allow eviction explicitly (--replay-store-allow-eviction)"
        ),
        StoreCheck::Unreachable => {}
    }
}

/// The policy in a `CONFIG GET maxmemory-policy` reply (a RESP2 array of name and
/// value, or a RESP3 map), if it is a plausible policy name.
pub(super) fn policy_of(value: Value) -> Option<String> {
    let pairs: Vec<(Value, Value)> = match value {
        Value::Map(pairs) => pairs,
        Value::Array(items) => {
            let mut items = items.into_iter();
            let mut pairs = Vec::new();
            while let (Some(k), Some(v)) = (items.next(), items.next()) {
                pairs.push((k, v));
            }
            pairs
        }
        _ => return None,
    };
    pairs.into_iter().find_map(|(k, v)| {
        let k: String = ::redis::from_redis_value(k).ok()?;
        if !k.eq_ignore_ascii_case("maxmemory-policy") {
            return None;
        }
        let v: String = ::redis::from_redis_value(v).ok()?;
        let v = v.to_ascii_lowercase();
        // Only a name goes to the log: lower-case letters, digits and dashes.
        let plausible = !v.is_empty()
            && v.len() <= 32
            && v.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        Some(if plausible {
            v
        } else {
            "an unrecognized policy".into()
        })
    })
}

/// Why the server refused `CONFIG GET`, from its error code (never its whole text).
pub(super) fn refusal(code: &str, e: &RedisError) -> String {
    let unknown = e
        .detail()
        .is_some_and(|d| d.to_ascii_lowercase().contains("unknown command"));
    match code {
        "NOPERM" => "CONFIG GET is not permitted to this user: NOPERM".into(),
        "ERR" if unknown => "CONFIG is not a command on this server: ERR unknown command".into(),
        _ => {
            let code: String = code
                .chars()
                .filter(char::is_ascii_alphanumeric)
                .take(16)
                .collect();
            format!("CONFIG GET was refused: {code}")
        }
    }
}
