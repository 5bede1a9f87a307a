//! Unit tests of `connections`.

use std::net::IpAddr;

use super::*;

#[test]
fn the_open_files_limit_is_read_from_proc_limits() {
    let text = "Limit                     Soft Limit           Hard Limit           Units     \n\
                Max processes             63432                63432                processes \n\
                Max open files            1024                 524288               files     \n";
    assert_eq!(parse_open_files_limit(text), Some(1024));
    let unlimited = "Max open files            unlimited            unlimited            files\n";
    assert_eq!(parse_open_files_limit(unlimited), None);
    assert_eq!(parse_open_files_limit(""), None);
}

#[test]
fn the_cap_fits_under_the_open_files_limit() {
    assert_eq!(connection_cap(512, None), 512);
    assert_eq!(connection_cap(512, Some(20_000)), 512);
    assert_eq!(connection_cap(512, Some(1024)), 512);
    assert_eq!(connection_cap(2000, Some(1024)), 960);
    assert_eq!(connection_cap(512, Some(10)), 1);
    assert_eq!(connection_cap(0, None), 1);
}

#[test]
fn a_peer_at_its_cap_gets_in_only_by_closing_one_of_its_idle_connections() {
    let registry = Registry::default();
    let (a, b) = (
        PeerKey::of(IpAddr::from([192, 0, 2, 1])),
        PeerKey::of(IpAddr::from([192, 0, 2, 2])),
    );
    let busy: Vec<_> = (0..2)
        .map(|_| {
            assert!(registry.admit(a, 2));
            let t = registry.register(SocketAddr::from(([192, 0, 2, 1], 1000)));
            t.request_started();
            t
        })
        .collect();
    // At its cap with every connection busy: refused; another peer is not.
    assert!(!registry.admit(a, 2));
    assert!(registry.admit(b, 2));
    // One of a's requests ends: that idle connection is asked to close.
    busy[0].request_ended(Instant::now());
    assert!(registry.admit(a, 2));
    assert!(busy[0].evicted_while_idle());
    assert!(!busy[1].evicted_while_idle());
    // Asked once only: a's next connection is refused until it has closed.
    assert!(!registry.admit(a, 2));
    registry.remove(busy[0].id);
    assert!(registry.admit(a, 2));
    registry.remove(busy[1].id);
    assert!(lock(&registry.live).per_peer.is_empty());
}

#[test]
fn a_tracker_times_heads_and_idleness_apart() {
    let limits = Limits {
        header: Duration::from_secs(10),
        idle: Duration::from_secs(30),
    };
    let start = Instant::now();
    let at = |secs: u64| start + Duration::from_secs(secs);
    let t = Tracker::new(0, SocketAddr::from(([127, 0, 0, 1], 1)), start);
    // A new connection owes its first head within the header timeout.
    assert_eq!(t.deadline(limits), Some(start + limits.header));
    t.request_started();
    assert_eq!(t.deadline(limits), None);
    assert_eq!(t.waiting_since(), None);
    // Bytes during a request (its body) start no head.
    t.on_read(at(50));
    t.request_ended(at(100));
    assert_eq!(t.deadline(limits), Some(at(100) + limits.idle));
    assert_eq!(t.waiting_since(), Some(at(100)));
    t.on_read(at(105));
    assert_eq!(t.deadline(limits), Some(at(105) + limits.header));
    // Further bytes of the same head do not move its deadline.
    t.on_read(at(106));
    assert_eq!(t.deadline(limits), Some(at(105) + limits.header));
    let head_from = at(105);
    assert_eq!(t.waiting_since(), Some(head_from));
    t.evict();
    assert!(t.evicted_while_idle());
    assert_eq!(t.waiting_since(), None, "not picked twice");
}
