//! Unit tests of `replay`.

use super::*;
use crate::principal::Principal;
use crate::seal::BindingInput;

const T: Timestamp = Timestamp::from_unix_secs(1_800_000_000);
const ALICE: PrincipalKey = PrincipalKey::from_bytes([1; 16]);
const BOB: PrincipalKey = PrincipalKey::from_bytes([2; 16]);

fn claim(flow: u8, step: &str, until: Timestamp, now: Timestamp, who: PrincipalKey) -> Claim {
    Claim::new([flow; 16], step, T, until, now, who)
}

#[test]
fn claims_once_until_expiry() {
    let g = MemoryReplayGuard::new(T);
    let c = claim(1, "a", T.add_secs(10), T, ALICE);
    assert_eq!(g.claim_sync(&c), ClaimOutcome::Claimed);
    assert_eq!(g.claim_sync(&c), ClaimOutcome::AlreadyClaimed);
    assert_eq!(
        g.claim_sync(&claim(1, "b", T.add_secs(10), T, ALICE)),
        ClaimOutcome::Claimed,
        "another step of the same flow"
    );
    assert_eq!(
        g.claim_sync(&claim(2, "a", T.add_secs(10), T, ALICE)),
        ClaimOutcome::Claimed,
        "the same step of another flow"
    );
    // Still held at `until` itself, gone one second later.
    let at_until = claim(1, "a", T.add_secs(20), T.add_secs(10), ALICE);
    assert_eq!(g.claim_sync(&at_until), ClaimOutcome::AlreadyClaimed);
    let after = claim(1, "a", T.add_secs(20), T.add_secs(11), ALICE);
    assert_eq!(g.claim_sync(&after), ClaimOutcome::Claimed);
}

#[test]
fn expiry_drops_the_earliest_first_and_only_what_expired() {
    let g = MemoryReplayGuard::new(T);
    // Claimed out of expiry order.
    for (flow, ttl) in [(1, 30), (2, 10), (3, 20)] {
        let c = claim(flow, "s", T.add_secs(ttl), T, ALICE);
        assert_eq!(g.claim_sync(&c), ClaimOutcome::Claimed);
    }
    assert_eq!(g.claims_held(), 3);
    // At T+15 only flow 2 (until T+10) has expired; the new claim is held too.
    let c = claim(4, "s", T.add_secs(100), T.add_secs(15), ALICE);
    assert_eq!(g.claim_sync(&c), ClaimOutcome::Claimed);
    assert_eq!(g.claims_held(), 3);
    let order: Vec<Timestamp> = g.lock().by_expiry.iter().map(|(t, _)| *t).collect();
    assert_eq!(order, [T.add_secs(20), T.add_secs(30), T.add_secs(100)]);
    // At T+31 flows 3 and 1 have expired as well.
    let c = claim(5, "s", T.add_secs(100), T.add_secs(31), ALICE);
    assert_eq!(g.claim_sync(&c), ClaimOutcome::Claimed);
    assert_eq!(g.claims_held(), 2);
    let store = g.lock();
    assert_eq!(store.live.len(), store.by_expiry.len());
    assert_eq!(store.per_principal.get(&ALICE), Some(&2));
}

#[test]
fn a_claim_is_held_until_its_until_not_longer() {
    // The engine passes the round's expiry plus skew: the claim must not
    // outlive it (the guard would fill with flows nobody can replay).
    let g = MemoryReplayGuard::new(T).with_max_claims(1);
    let c = claim(1, "s", T.add_secs(660), T, ALICE);
    assert_eq!(g.claim_sync(&c), ClaimOutcome::Claimed);
    let next = claim(2, "s", T.add_secs(2000), T.add_secs(660), ALICE);
    assert_eq!(
        g.claim_sync(&next),
        ClaimOutcome::Unavailable,
        "still live at its until"
    );
    let next = claim(2, "s", T.add_secs(2000), T.add_secs(661), ALICE);
    assert_eq!(g.claim_sync(&next), ClaimOutcome::Claimed, "dropped after");
}

#[test]
fn a_claim_already_past_until_is_held_until_now() {
    let g = MemoryReplayGuard::new(T);
    let c = claim(1, "s", T, T.add_secs(5), ALICE);
    assert_eq!(g.claim_sync(&c), ClaimOutcome::Claimed);
    assert_eq!(g.claim_sync(&c), ClaimOutcome::AlreadyClaimed);
}

#[test]
fn full_of_live_claims_fails_closed() {
    let g = MemoryReplayGuard::new(T).with_max_claims(2);
    for flow in [1, 2] {
        let c = claim(flow, "s", T.add_secs(10), T, ALICE);
        assert_eq!(g.claim_sync(&c), ClaimOutcome::Claimed);
    }
    let c = claim(3, "s", T.add_secs(10), T, BOB);
    assert_eq!(g.claim_sync(&c), ClaimOutcome::Unavailable);
    // A refused claim is not recorded: once room frees up, it is granted.
    let later = claim(3, "s", T.add_secs(100), T.add_secs(11), BOB);
    assert_eq!(g.claim_sync(&later), ClaimOutcome::Claimed);
}

#[test]
fn one_principal_cannot_fill_the_guard_for_everyone() {
    let g = MemoryReplayGuard::new(T).with_max_claims_per_principal(2);
    for flow in [1, 2] {
        let c = claim(flow, "s", T.add_secs(10), T, ALICE);
        assert_eq!(g.claim_sync(&c), ClaimOutcome::Claimed);
    }
    let over = claim(3, "s", T.add_secs(10), T, ALICE);
    assert_eq!(g.claim_sync(&over), ClaimOutcome::Unavailable);
    let bob = claim(4, "s", T.add_secs(10), T, BOB);
    assert_eq!(
        g.claim_sync(&bob),
        ClaimOutcome::Claimed,
        "others still can"
    );
    // A replay of a held claim is still told apart from the quota.
    let replay = claim(1, "s", T.add_secs(10), T, ALICE);
    assert_eq!(g.claim_sync(&replay), ClaimOutcome::AlreadyClaimed);
    // Alice's quota frees up as her claims expire.
    let later = claim(3, "s", T.add_secs(100), T.add_secs(11), ALICE);
    assert_eq!(g.claim_sync(&later), ClaimOutcome::Claimed);
    let store = g.lock();
    assert_eq!(store.per_principal.get(&ALICE), Some(&1));
    assert_eq!(store.per_principal.get(&BOB), None, "expired, forgotten");
}

#[test]
fn ten_principals_at_their_quota_leave_room_for_everyone_else() {
    // The default caps: a handful of principals (ten here), each at its quota,
    // must not reach the global cap.
    let g = MemoryReplayGuard::new(T);
    let per = defaults::REPLAY_MAX_CLAIMS_PER_PRINCIPAL;
    let until = T.add_secs(3720);
    for who in 0u8..10 {
        let p = PrincipalKey::from_bytes([100 + who; 16]);
        for n in 0..=per {
            let mut flow = [who; 16];
            flow[..8].copy_from_slice(&(n as u64).to_le_bytes());
            let want = if n < per {
                ClaimOutcome::Claimed
            } else {
                ClaimOutcome::Unavailable
            };
            assert_eq!(g.claim_sync(&claim_of(flow, until, p)), want, "{who} #{n}");
        }
    }
    assert_eq!(g.claims_held(), 10 * per);
    let victim = claim_of([0xee; 16], until, PrincipalKey::from_bytes([3; 16]));
    assert_eq!(g.claim_sync(&victim), ClaimOutcome::Claimed);
    // And it takes a hundred of them.
    assert!(defaults::REPLAY_MAX_CLAIMS >= 100 * per);
}

fn claim_of(flow: [u8; 16], until: Timestamp, who: PrincipalKey) -> Claim {
    Claim::new(flow, "deploy", T, until, T, who)
}

#[test]
fn peer_keys_group_ipv6_by_64_and_map_ipv4() {
    let b = Binding::new(&BindingInput {
        method: "tools/call",
        target: "t",
        arguments: None,
        principal: &Principal::anonymous(),
        audience: "aud",
        protocol_version: "2026-07-28",
    });
    let k = |ip: &str| PrincipalKey::of_peer(&b, ip.parse().unwrap());
    assert_eq!(k("2001:db8:1:2::1"), k("2001:db8:1:2:ffff:ffff:ffff:ffff"));
    assert_ne!(k("2001:db8:1:2::1"), k("2001:db8:1:3::1"));
    assert_eq!(k("192.0.2.7"), k("::ffff:192.0.2.7"));
    assert_ne!(k("192.0.2.7"), k("192.0.2.8"));
    assert_ne!(
        k("192.0.2.7"),
        PrincipalKey::of(&b),
        "not the bare principal's"
    );
    // An IPv4 address never meets the IPv6 /64 its bytes would start.
    assert_ne!(k("0.0.0.0"), k("::"));
    assert!(!format!("{:?}", k("192.0.2.7")).contains("192"));
}

#[test]
fn a_state_sealed_before_the_guard_started_is_refused() {
    let started = T.add_secs(100);
    let g = MemoryReplayGuard::new(started);
    let mut c = claim(1, "s", started.add_secs(600), started.add_secs(1), ALICE);
    c.issued_at = started.sub_secs(1);
    assert_eq!(g.claim_sync(&c), ClaimOutcome::AlreadyClaimed);
    assert_eq!(g.claims_held(), 0, "nothing recorded");
    c.issued_at = started;
    assert_eq!(
        g.claim_sync(&c),
        ClaimOutcome::Claimed,
        "sealed at the start"
    );
}

#[test]
fn the_trait_answers_at_once() {
    let g = MemoryReplayGuard::new(T);
    let c = claim(1, "s", T.add_secs(10), T, ALICE);
    assert_eq!(claim_now(&g, &c), ClaimOutcome::Claimed);
    assert_eq!(claim_now(&g, &c), ClaimOutcome::AlreadyClaimed);
}

#[test]
fn a_pending_claim_is_unavailable_to_a_single_poll() {
    #[derive(Debug)]
    struct Never;
    impl ReplayGuard for Never {
        fn claim<'a>(&'a self, _: &'a Claim) -> BoxFuture<'a, ClaimOutcome> {
            Box::pin(std::future::pending())
        }
    }
    let c = claim(1, "s", T.add_secs(10), T, ALICE);
    assert_eq!(claim_now(&Never, &c), ClaimOutcome::Unavailable);
}

#[test]
fn keys_are_digests_that_separate_flow_and_step() {
    let a = claim(1, "ab", T, T, ALICE).store_key();
    assert_eq!(a, claim(1, "ab", T.add_secs(9), T, BOB).store_key());
    assert_ne!(a, claim(1, "ac", T, T, ALICE).store_key());
    assert_ne!(a, claim(2, "ab", T, T, ALICE).store_key());
    let d = format!("{:?}", claim(0xab, "deploy", T, T, ALICE));
    assert!(d.contains("flow_id: abab"), "{d}");
    assert!(
        !d.contains(&"ab".repeat(16)),
        "the flow id is not printed: {d}"
    );
}

#[test]
fn principal_keys_follow_the_principal_only() {
    let b = |who: &Principal, target: &str| {
        Binding::new(&BindingInput {
            method: "tools/call",
            target,
            arguments: None,
            principal: who,
            audience: "aud",
            protocol_version: "2026-07-28",
        })
    };
    let alice = Principal::subject("alice");
    let k = PrincipalKey::of(&b(&alice, "x"));
    assert_eq!(k, PrincipalKey::of(&b(&alice, "y")));
    assert_ne!(k, PrincipalKey::of(&b(&Principal::subject("bob"), "x")));
    assert_ne!(&k.as_bytes()[..], &b(&alice, "x").principal_digest()[..16]);
    assert!(!format!("{k:?}").contains("alice"));
}
