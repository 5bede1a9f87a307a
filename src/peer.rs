//! Who a network peer is, for the limits kept per caller: an IPv4 address, or
//! the /64 prefix of an IPv6 one (a host is usually given a whole /64, so its
//! addresses count as one peer). An IPv4-mapped IPv6 address is its IPv4 address.
//!
//! One rule for both places that count by peer: the HTTP accept loop's
//! connections per peer, and the replay guard's quota of an anonymous caller
//! ([`PrincipalKey::of_peer`](crate::replay::PrincipalKey::of_peer)).

use std::net::IpAddr;

/// A peer, as the per-peer limits count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Peer {
    /// An IPv4 address.
    V4([u8; 4]),
    /// The /64 prefix of an IPv6 address.
    V6Prefix([u8; 8]),
}

impl Peer {
    /// The peer `ip` belongs to.
    pub fn of(ip: IpAddr) -> Self {
        match ip.to_canonical() {
            IpAddr::V4(v4) => Self::V4(v4.octets()),
            IpAddr::V6(v6) => {
                let mut prefix = [0u8; 8];
                prefix.copy_from_slice(&v6.octets()[..8]);
                Self::V6Prefix(prefix)
            }
        }
    }

    /// The address family's tag (4 or 6) and the bytes that identify the peer.
    pub fn tagged_bytes(&self) -> (u8, &[u8]) {
        match self {
            Self::V4(octets) => (4, octets),
            Self::V6Prefix(prefix) => (6, prefix),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_is_an_ipv4_address_or_an_ipv6_64() {
        let ip = |s: &str| Peer::of(s.parse().unwrap());
        assert_eq!(ip("192.0.2.1"), ip("::ffff:192.0.2.1"));
        assert_ne!(ip("192.0.2.1"), ip("192.0.2.2"));
        assert_eq!(ip("2001:db8:1:2::1"), ip("2001:db8:1:2:ffff::9"));
        assert_ne!(ip("2001:db8:1:2::1"), ip("2001:db8:1:3::1"));
        assert_eq!(ip("192.0.2.1").tagged_bytes(), (4, &[192, 0, 2, 1][..]));
        assert_eq!(
            ip("2001:db8:1:2::1").tagged_bytes(),
            (6, &[0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 2][..])
        );
    }
}
