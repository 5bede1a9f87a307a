//! The binary's own defaults: where `mrtr serve` listens, and the ceilings its
//! flags are checked against. The core's defaults are in [`mrtr::defaults`], the
//! transports' in [`mrtr_server::defaults`].

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::Duration;

/// The listen address: loopback only, so nothing else on the network can reach it.
pub const LISTEN: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 8808));

/// The ceiling for a configured [`CLOCK_SKEW`](mrtr::defaults::CLOCK_SKEW): 1 hour. The binary refuses a `serve --clock-skew` above it.
pub const MAX_CLOCK_SKEW: Duration = Duration::from_secs(3600);

/// The ceiling for a configured [`REPLAY_MAX_CLAIMS`](mrtr::defaults::REPLAY_MAX_CLAIMS) (and so
/// [`REPLAY_MAX_CLAIMS_PER_PRINCIPAL`](mrtr::defaults::REPLAY_MAX_CLAIMS_PER_PRINCIPAL)): 20 000 000, about 2 GiB of claims when
/// full. The binary refuses a
/// `serve --replay-max-claims` above it.
pub const REPLAY_MAX_CLAIMS_CEILING: usize = 20_000_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ceilings_hold_the_core_defaults() {
        const { assert!(mrtr::defaults::CLOCK_SKEW.as_secs() <= MAX_CLOCK_SKEW.as_secs()) };
        const { assert!(mrtr::defaults::REPLAY_MAX_CLAIMS <= REPLAY_MAX_CLAIMS_CEILING) };
        assert_eq!(LISTEN.to_string(), "127.0.0.1:8808");
    }
}
