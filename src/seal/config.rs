//! Sealing configuration: secure defaults (from [`crate::defaults`]), each stated on its setter.

use std::time::Duration;

use crate::defaults;

/// Limits and lifetimes of sealed `requestState` tokens.
///
/// Times are whole seconds (a [`crate::time::Timestamp`] has no finer unit);
/// sub-second parts of a `Duration` are dropped. Set `max_ttl` before raising
/// `ttl` above the default maximum.
///
/// ```
/// use std::time::Duration;
/// use mrtr::seal::SealConfig;
/// let c = SealConfig::default().with_ttl(Duration::from_secs(120)).unwrap();
/// assert_eq!(c.ttl(), Duration::from_secs(120));
/// assert_eq!(c.clock_skew(), Duration::from_secs(60));
/// assert!(SealConfig::default().with_ttl(Duration::ZERO).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealConfig {
    ttl: u64,
    max_ttl: u64,
    flow_lifetime: u64,
    clock_skew: u64,
    max_token_len: usize,
    max_plaintext: usize,
}

impl Default for SealConfig {
    fn default() -> Self {
        SealConfig {
            ttl: defaults::STATE_TTL.as_secs(),
            max_ttl: defaults::MAX_STATE_TTL.as_secs(),
            flow_lifetime: defaults::FLOW_LIFETIME.as_secs(),
            clock_skew: defaults::CLOCK_SKEW.as_secs(),
            max_token_len: defaults::MAX_TOKEN_LEN,
            max_plaintext: defaults::MAX_PLAINTEXT,
        }
    }
}

/// A configuration value out of range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SealConfigError {
    /// A duration that must be at least one second was shorter.
    #[error("{what} must be at least one second")]
    Zero {
        /// Which setting.
        what: &'static str,
    },
    /// `ttl` would exceed `max_ttl`.
    #[error("ttl of {ttl_secs} s exceeds max_ttl of {max_ttl_secs} s")]
    TtlAboveMax {
        /// The requested or current ttl, in seconds.
        ttl_secs: u64,
        /// The current or requested max_ttl, in seconds.
        max_ttl_secs: u64,
    },
}

impl SealConfig {
    /// Per-round expiry: a token sealed at `now` expires at `now + ttl`, never later
    /// than the flow deadline. Default 600 s (10 minutes, [`defaults::STATE_TTL`]).
    ///
    /// # Errors
    ///
    /// [`SealConfigError::Zero`] below one second; [`SealConfigError::TtlAboveMax`] above `max_ttl`.
    pub fn with_ttl(mut self, d: Duration) -> Result<Self, SealConfigError> {
        let secs = d.as_secs();
        if secs == 0 {
            return Err(SealConfigError::Zero { what: "ttl" });
        }
        if secs > self.max_ttl {
            return Err(SealConfigError::TtlAboveMax {
                ttl_secs: secs,
                max_ttl_secs: self.max_ttl,
            });
        }
        self.ttl = secs;
        Ok(self)
    }

    /// Ceiling for `ttl`, and for how far ahead of `now` a token's expiry may lie when
    /// opened (a far-future expiry is refused as `far_future`). Default 24 h
    /// ([`defaults::MAX_STATE_TTL`]).
    /// Lowering it is a global kill switch for long-lived tokens.
    ///
    /// # Errors
    ///
    /// [`SealConfigError::Zero`] below one second; [`SealConfigError::TtlAboveMax`] below the current `ttl`.
    pub fn with_max_ttl(mut self, d: Duration) -> Result<Self, SealConfigError> {
        let secs = d.as_secs();
        if secs == 0 {
            return Err(SealConfigError::Zero { what: "max_ttl" });
        }
        if secs < self.ttl {
            return Err(SealConfigError::TtlAboveMax {
                ttl_secs: self.ttl,
                max_ttl_secs: secs,
            });
        }
        self.max_ttl = secs;
        Ok(self)
    }

    /// Absolute flow lifetime: the deadline is round 1's issue time plus this, and later
    /// rounds never extend it. Default 1 h ([`defaults::FLOW_LIFETIME`]).
    ///
    /// # Errors
    ///
    /// [`SealConfigError::Zero`] below one second.
    pub fn with_flow_lifetime(mut self, d: Duration) -> Result<Self, SealConfigError> {
        let secs = d.as_secs();
        if secs == 0 {
            return Err(SealConfigError::Zero {
                what: "flow_lifetime",
            });
        }
        self.flow_lifetime = secs;
        Ok(self)
    }

    /// Tolerated clock difference between the instance that sealed and the one that
    /// opens: a token opens while `now <= exp + skew`. Default 60 s
    /// ([`defaults::CLOCK_SKEW`]). Zero is allowed.
    pub fn with_clock_skew(mut self, d: Duration) -> Self {
        self.clock_skew = d.as_secs();
        self
    }

    /// Maximum token length, in bytes of the string (base64url is ASCII, so characters),
    /// checked by `open` before any decoding. `seal` refuses to produce a longer token.
    /// Default 16 384 ([`defaults::MAX_TOKEN_LEN`]).
    pub fn with_max_token_len(mut self, n: usize) -> Self {
        self.max_token_len = n;
        self
    }

    /// Maximum plaintext in bytes (the 93-byte claims header plus the JSON state),
    /// checked by `seal`: a larger state is an error for the operator, never a
    /// truncated token. Default 8 192 ([`defaults::MAX_PLAINTEXT`]).
    pub fn with_max_plaintext(mut self, n: usize) -> Self {
        self.max_plaintext = n;
        self
    }

    /// The per-round time to live.
    pub fn ttl(&self) -> Duration {
        Duration::from_secs(self.ttl)
    }

    /// The ceiling for ttl and for future expiries.
    pub fn max_ttl(&self) -> Duration {
        Duration::from_secs(self.max_ttl)
    }

    /// The absolute flow lifetime.
    pub fn flow_lifetime(&self) -> Duration {
        Duration::from_secs(self.flow_lifetime)
    }

    /// The tolerated clock skew.
    pub fn clock_skew(&self) -> Duration {
        Duration::from_secs(self.clock_skew)
    }

    /// The maximum token length accepted by `open`.
    pub fn max_token_len(&self) -> usize {
        self.max_token_len
    }

    /// The maximum plaintext accepted by `seal`.
    pub fn max_plaintext(&self) -> usize {
        self.max_plaintext
    }

    pub(super) fn ttl_secs(&self) -> u64 {
        self.ttl
    }
    pub(super) fn max_ttl_secs(&self) -> u64 {
        self.max_ttl
    }
    pub(super) fn flow_lifetime_secs(&self) -> u64 {
        self.flow_lifetime
    }
    pub(super) fn skew_secs(&self) -> u64 {
        self.clock_skew
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let c = SealConfig::default();
        assert_eq!(c.ttl(), Duration::from_secs(600));
        assert_eq!(c.max_ttl(), Duration::from_secs(86_400));
        assert_eq!(c.flow_lifetime(), Duration::from_secs(3_600));
        assert_eq!(c.clock_skew(), Duration::from_secs(60));
        assert_eq!(c.max_token_len(), 16_384);
        assert_eq!(c.max_plaintext(), 8_192);
    }

    #[test]
    fn ttl_bounds() {
        let c = SealConfig::default();
        assert_eq!(
            c.clone().with_ttl(Duration::from_millis(999)),
            Err(SealConfigError::Zero { what: "ttl" })
        );
        assert!(matches!(
            c.clone().with_ttl(Duration::from_secs(86_401)),
            Err(SealConfigError::TtlAboveMax { .. })
        ));
        assert!(c.clone().with_ttl(Duration::from_secs(86_400)).is_ok());
        assert!(c.clone().with_max_ttl(Duration::from_secs(599)).is_err());
        let c = c.with_max_ttl(Duration::from_secs(7 * 86_400)).unwrap();
        assert!(c.clone().with_ttl(Duration::from_secs(2 * 86_400)).is_ok());
        assert!(c.clone().with_flow_lifetime(Duration::ZERO).is_err());
        assert!(c.with_max_ttl(Duration::ZERO).is_err());
    }

    #[test]
    fn infallible_setters() {
        let c = SealConfig::default()
            .with_clock_skew(Duration::ZERO)
            .with_max_token_len(100)
            .with_max_plaintext(50);
        assert_eq!(c.clock_skew(), Duration::ZERO);
        assert_eq!(c.max_token_len(), 100);
        assert_eq!(c.max_plaintext(), 50);
    }
}
