//! Errors of the seal module: one opaque public error for opening, precise
//! errors for operator mistakes (keys, configuration, sealing).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use super::key::Kid;

/// Why a `requestState` was refused, for the private log and metrics only.
///
/// The reasons are listed in the order `open` checks them. Never send a reason
/// to the client: the public error text is always the same
/// (see [`OpenError`]).
///
/// ```
/// use mrtr::seal::RejectReason;
/// assert_eq!(RejectReason::UnknownKey.as_str(), "unknown_key");
/// assert_eq!(RejectReason::ALL.len(), 12);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum RejectReason {
    /// Not canonical base64url, or too short to hold a header and a tag.
    Malformed,
    /// Longer than the configured maximum token length (checked before decoding).
    TooLarge,
    /// The version byte names no format this build knows.
    UnknownVersion,
    /// The key id names no key in the key ring (e.g. a retired key).
    UnknownKey,
    /// The authentication tag did not verify: tampering, or another key with a colliding id.
    Tag,
    /// Authentic, but the plaintext did not decode (claims format or state type).
    Decode,
    /// Authentic, but this round's expiry (plus clock skew) has passed.
    Expired,
    /// Authentic, but the flow's absolute deadline (plus clock skew) has passed.
    Deadline,
    /// Authentic, but sealed for another request (method, target, arguments or protocol version).
    Binding,
    /// Authentic, but sealed for another principal.
    Principal,
    /// Authentic, but sealed for another audience.
    Audience,
    /// Authentic, but its expiry lies further ahead than `max_ttl` plus skew allows.
    FarFuture,
}

impl RejectReason {
    /// Every reason, in checking order (`FarFuture` last: it is reported with expiry).
    pub const ALL: [RejectReason; 12] = [
        RejectReason::Malformed,
        RejectReason::TooLarge,
        RejectReason::UnknownVersion,
        RejectReason::UnknownKey,
        RejectReason::Tag,
        RejectReason::Decode,
        RejectReason::Expired,
        RejectReason::Deadline,
        RejectReason::Binding,
        RejectReason::Principal,
        RejectReason::Audience,
        RejectReason::FarFuture,
    ];

    /// A stable snake_case name for logs and metric labels.
    pub const fn as_str(self) -> &'static str {
        match self {
            RejectReason::Malformed => "malformed",
            RejectReason::TooLarge => "too_large",
            RejectReason::UnknownVersion => "unknown_version",
            RejectReason::UnknownKey => "unknown_key",
            RejectReason::Tag => "tag",
            RejectReason::Decode => "decode",
            RejectReason::Expired => "expired",
            RejectReason::Deadline => "deadline",
            RejectReason::Binding => "binding",
            RejectReason::Principal => "principal",
            RejectReason::Audience => "audience",
            RejectReason::FarFuture => "far_future",
        }
    }

    /// Parses a name produced by [`RejectReason::as_str`].
    pub fn from_name(name: &str) -> Option<RejectReason> {
        RejectReason::ALL.into_iter().find(|r| r.as_str() == name)
    }

    const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The one public error for a `requestState` that cannot be used.
///
/// Its `Display` is always the frozen text `invalid or expired requestState`,
/// whatever went wrong; the precise [`RejectReason`] is available through
/// [`OpenError::reason`] for the private log only.
///
/// ```
/// use mrtr::seal::{Keyring, SealConfig, Sealer, UntrustedState, Binding, BindingInput, RejectReason};
/// use mrtr::principal::Principal;
/// use mrtr::Timestamp;
/// let sealer = Sealer::new(Keyring::ephemeral(), SealConfig::default());
/// let who = Principal::anonymous();
/// let binding = Binding::new(&BindingInput {
///     method: "tools/call", target: "t", arguments: None, principal: &who,
///     audience: "https://mcp.example", protocol_version: "2026-07-28",
/// });
/// let err = sealer
///     .open::<()>(&UntrustedState::new("garbage"), &binding, Timestamp::from_unix_secs(0))
///     .unwrap_err();
/// assert_eq!(err.to_string(), "invalid or expired requestState");
/// assert_eq!(err.reason(), RejectReason::Malformed);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenError {
    reason: RejectReason,
    expired_but_authentic: bool,
    kid: Option<Kid>,
}

impl OpenError {
    /// The frozen public text of every open failure.
    const PUBLIC_TEXT: &'static str = "invalid or expired requestState";

    pub(super) const fn new(reason: RejectReason) -> Self {
        Self {
            reason,
            expired_but_authentic: false,
            kid: None,
        }
    }

    pub(super) const fn with_kid(mut self, kid: Kid) -> Self {
        self.kid = Some(kid);
        self
    }

    pub(super) const fn with_expired_but_authentic(mut self, flag: bool) -> Self {
        self.expired_but_authentic = flag;
        self
    }

    /// The precise reason, for the private log and metrics. Never send it to the client.
    pub const fn reason(&self) -> RejectReason {
        self.reason
    }

    /// The key id named in the token, once the header was parsed and the kid was known.
    /// Public information (it is in clear in the token); useful in the private log.
    pub const fn kid(&self) -> Option<Kid> {
        self.kid
    }

    /// True only when the tag verified, the claims decoded, the request, principal and
    /// audience all matched, and the round expiry or the flow deadline had passed
    /// (and the expiry was not implausibly far in the future).
    ///
    /// The engine uses this to answer `tools/call` with an actionable tool error
    /// (the window lapsed, call again) instead of the uniform protocol error.
    pub const fn is_expired_but_authentic(&self) -> bool {
        self.expired_but_authentic
    }
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(Self::PUBLIC_TEXT)
    }
}

impl std::error::Error for OpenError {}

/// Why sealing failed: for the operator, never a truncated token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SealError {
    /// The plaintext (claims header plus serialized state) exceeds `max_plaintext`.
    #[error("sealed state plaintext is {len} bytes, above the configured maximum of {max} bytes")]
    TooLarge {
        /// Plaintext length in bytes.
        len: usize,
        /// The configured maximum (`SealConfig::max_plaintext`).
        max: usize,
    },
    /// The finished token would be longer than `max_token_len`, so `open` would refuse it.
    #[error("sealed token would be {len} characters, above the configured maximum of {max}")]
    TokenTooLong {
        /// Token length in characters.
        len: usize,
        /// The configured maximum (`SealConfig::max_token_len`).
        max: usize,
    },
    /// The state could not be serialized as JSON.
    #[error("state could not be serialized as json")]
    Serialize(#[source] serde_json::Error),
    /// The AEAD refused to encrypt (only possible beyond its length limits).
    #[error("encryption failed")]
    Encrypt,
}

/// Per-reason counters of refused tokens, shared by clones of a `Sealer`.
pub(super) struct Counters([AtomicU64; 12]);

impl Counters {
    pub(super) fn new() -> Self {
        Self(std::array::from_fn(|_| AtomicU64::new(0)))
    }

    pub(super) fn bump(&self, reason: RejectReason) {
        self.0[reason.index()].fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn snapshot(&self) -> RejectCounts {
        RejectCounts(std::array::from_fn(|i| self.0[i].load(Ordering::Relaxed)))
    }
}

impl fmt::Debug for Counters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.snapshot(), f)
    }
}

/// A snapshot of how many tokens were refused, per [`RejectReason`].
///
/// ```
/// use mrtr::seal::{Keyring, SealConfig, Sealer, RejectReason};
/// let sealer = Sealer::new(Keyring::ephemeral(), SealConfig::default());
/// let counts = sealer.reject_counts();
/// assert_eq!(counts.get(RejectReason::Tag), 0);
/// assert_eq!(counts.total(), 0);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct RejectCounts([u64; 12]);

impl RejectCounts {
    /// The count for one reason.
    pub const fn get(&self, reason: RejectReason) -> u64 {
        self.0[reason.index()]
    }

    /// The sum over all reasons.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// `(reason, count)` pairs in checking order, zeros included.
    pub fn iter(&self) -> impl Iterator<Item = (RejectReason, u64)> + '_ {
        RejectReason::ALL.into_iter().map(|r| (r, self.get(r)))
    }
}

impl fmt::Debug for RejectCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut m = f.debug_map();
        for (r, n) in self.iter() {
            m.entry(&r.as_str(), &n);
        }
        m.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reason_names_round_trip_and_are_unique() {
        let mut names: Vec<_> = RejectReason::ALL.iter().map(|r| r.as_str()).collect();
        for r in RejectReason::ALL {
            assert_eq!(RejectReason::from_name(r.as_str()), Some(r));
            assert_eq!(
                r.index(),
                RejectReason::ALL.iter().position(|x| *x == r).unwrap()
            );
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 12);
    }

    #[test]
    fn open_error_display_is_frozen() {
        for r in RejectReason::ALL {
            let e = OpenError::new(r).with_expired_but_authentic(true);
            assert_eq!(e.to_string(), "invalid or expired requestState");
        }
    }

    #[test]
    fn counters_count_per_reason() {
        let c = Counters::new();
        c.bump(RejectReason::Tag);
        c.bump(RejectReason::Tag);
        c.bump(RejectReason::Expired);
        let s = c.snapshot();
        assert_eq!(s.get(RejectReason::Tag), 2);
        assert_eq!(s.get(RejectReason::Expired), 1);
        assert_eq!(s.total(), 3);
        assert!(format!("{s:?}").contains("\"tag\": 2"));
    }
}
