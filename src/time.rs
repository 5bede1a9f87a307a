//! Time as the sans-IO core sees it: a value passed in, never read from a clock.
//!
//! The core never calls `SystemTime::now()`; adapters (the reference server, tests
//! with a fake clock) pass a [`Timestamp`] into every call that needs one.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A point in time, in whole seconds since the Unix epoch (UTC).
///
/// Seconds are the unit of every expiry in a sealed `requestState`: absolute
/// seconds avoid the "expires in" versus "expires at" ambiguity.
///
/// ```
/// use mrtr::Timestamp;
/// let t = Timestamp::from_unix_secs(1_800_000_000);
/// assert_eq!(t.add_secs(60).unix_secs(), 1_800_000_060);
/// ```
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct Timestamp(u64);

impl Timestamp {
    /// The timestamp `secs` seconds after the Unix epoch.
    pub const fn from_unix_secs(secs: u64) -> Self {
        Self(secs)
    }

    /// Seconds since the Unix epoch.
    pub const fn unix_secs(self) -> u64 {
        self.0
    }

    /// Reads the system clock. Only adapters call this; the core takes `now` as an argument.
    pub fn now() -> Self {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            // A clock set before 1970 is a broken host; treat it as the epoch rather than panic.
            .unwrap_or(0);
        Self(secs)
    }

    /// This timestamp plus `secs` seconds, saturating at `u64::MAX`.
    pub const fn add_secs(self, secs: u64) -> Self {
        Self(self.0.saturating_add(secs))
    }

    /// This timestamp plus a duration (whole seconds), saturating.
    pub const fn add(self, d: Duration) -> Self {
        self.add_secs(d.as_secs())
    }

    /// This timestamp minus `secs` seconds, saturating at the epoch.
    pub const fn sub_secs(self, secs: u64) -> Self {
        Self(self.0.saturating_sub(secs))
    }
}
