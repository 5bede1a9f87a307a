//! Expiry, clock skew, far future and the flow deadline, under injected clocks.

use std::time::Duration;

use mrtr::Timestamp;
use mrtr::principal::Principal;
use mrtr::seal::{
    Binding, BindingInput, Claims, Key, Keyring, RejectReason, SealConfig, Sealer, UntrustedState,
    Verified,
};

const T0: u64 = 1_800_000_000;

fn at(secs: u64) -> Timestamp {
    Timestamp::from_unix_secs(secs)
}

fn binding() -> Binding {
    let p = Principal::subject("alice");
    Binding::new(&BindingInput {
        method: "resources/read",
        target: "file:///report.txt",
        arguments: None,
        principal: &p,
        audience: "https://mcp.example",
        protocol_version: "2026-07-28",
    })
}

fn sealer(cfg: SealConfig) -> Sealer {
    Sealer::new(Keyring::new(Key::from_secret(&[0x33; 32]).unwrap()), cfg)
}

fn open(s: &Sealer, t: &str, now: u64) -> Result<Verified<Claims<u32>>, mrtr::seal::OpenError> {
    s.open::<u32>(&UntrustedState::new(t), &binding(), at(now))
}

#[test]
fn expiry_boundary_with_default_skew() {
    let s = sealer(SealConfig::default());
    let t = s
        .seal(&Claims::first_round(binding(), at(T0), s.config(), 7))
        .unwrap();
    let exp = T0 + 600;
    assert!(open(&s, &t, exp).is_ok());
    assert!(open(&s, &t, exp + 60).is_ok(), "exactly exp + skew opens");
    let e = open(&s, &t, exp + 61).unwrap_err();
    assert_eq!(e.reason(), RejectReason::Expired);
    assert!(e.is_expired_but_authentic());
    assert_eq!(e.to_string(), "invalid or expired requestState");
}

#[test]
fn expiry_boundary_without_skew() {
    let s = sealer(SealConfig::default().with_clock_skew(Duration::ZERO));
    let t = s
        .seal(&Claims::first_round(binding(), at(T0), s.config(), 7))
        .unwrap();
    assert!(open(&s, &t, T0 + 600).is_ok());
    assert_eq!(
        open(&s, &t, T0 + 601).unwrap_err().reason(),
        RejectReason::Expired
    );
}

#[test]
fn far_future_boundary() {
    // A token sealed by an instance whose clock runs ahead (or a stale signer).
    let s = sealer(SealConfig::default());
    let t = s
        .seal(&Claims::first_round(binding(), at(T0), s.config(), 7))
        .unwrap();
    let exp = T0 + 600;
    let (max_ttl, skew) = (86_400, 60);
    // exp <= now + max_ttl + skew  <=>  now >= exp - max_ttl - skew
    assert!(open(&s, &t, exp - max_ttl - skew).is_ok());
    let e = open(&s, &t, exp - max_ttl - skew - 1).unwrap_err();
    assert_eq!(e.reason(), RejectReason::FarFuture);
    assert!(!e.is_expired_but_authentic());
    // Lowering max_ttl on the opening side is a global kill switch.
    let strict = Sealer::new(
        mrtr::seal::Keyring::clone(&s.keyring()),
        SealConfig::default()
            .with_ttl(Duration::from_secs(60))
            .unwrap()
            .with_max_ttl(Duration::from_secs(120))
            .unwrap(),
    );
    assert_eq!(
        open(&strict, &t, T0).unwrap_err().reason(),
        RejectReason::FarFuture
    );
}

#[test]
fn deadline_is_never_extended_and_exp_is_clamped() {
    let cfg = SealConfig::default()
        .with_ttl(Duration::from_secs(600))
        .unwrap()
        .with_flow_lifetime(Duration::from_secs(1_000))
        .unwrap();
    let s = sealer(cfg);
    let c1 = Claims::first_round(binding(), at(T0), s.config(), 1);
    let deadline = c1.deadline();
    assert_eq!(deadline, at(T0 + 1_000));
    let mut v = open(&s, &s.seal(&c1).unwrap(), T0).unwrap();
    // Keep resealing every 300 s: expiry moves, the deadline does not.
    for (i, t) in (T0 + 300..T0 + 1_200).step_by(300).enumerate() {
        let c = Claims::next_round(&v, at(t), s.config(), v.state() + 1);
        assert_eq!(c.deadline(), deadline);
        assert_eq!(c.round(), 2 + i as u32);
        assert!(c.expires_at() <= deadline);
        assert_eq!(c.expires_at(), at(t + 600).min(deadline));
        let tok = s.seal(&c).unwrap();
        match open(&s, &tok, t) {
            Ok(next) => v = next,
            Err(e) => {
                // Sealed past the deadline (+ skew): authentic, lapsed.
                assert!(t > deadline.unix_secs() + 60, "t={t}");
                assert!(e.is_expired_but_authentic());
                break;
            }
        }
    }
}

#[test]
fn exp_is_clamped_so_a_lapsed_deadline_reports_expired() {
    let cfg = SealConfig::default()
        .with_flow_lifetime(Duration::from_secs(300))
        .unwrap();
    let s = sealer(cfg);
    let c = Claims::first_round(binding(), at(T0), s.config(), 1);
    assert_eq!(c.expires_at(), c.deadline());
    let t = s.seal(&c).unwrap();
    assert!(open(&s, &t, T0 + 360).is_ok());
    let e = open(&s, &t, T0 + 361).unwrap_err();
    assert_eq!(e.reason(), RejectReason::Expired);
    assert!(e.is_expired_but_authentic());
}

#[test]
fn deadline_boundary() {
    // Only a hand-built claim (test-vectors feature) can carry exp beyond the deadline.
    let s = sealer(SealConfig::default());
    let c = Claims::first_round(binding(), at(T0), s.config(), 1).with_expires_at(at(T0 + 7_200));
    let t = s.seal(&c).unwrap();
    let dl = T0 + 3_600;
    assert!(
        open(&s, &t, dl + 60).is_ok(),
        "exactly deadline + skew opens"
    );
    let e = open(&s, &t, dl + 61).unwrap_err();
    assert_eq!(e.reason(), RejectReason::Deadline);
    assert!(e.is_expired_but_authentic());
    assert_eq!(s.reject_counts().get(RejectReason::Deadline), 1);
}

#[test]
fn expired_for_another_principal_is_not_authentic_lapse() {
    let s = sealer(SealConfig::default());
    let t = s
        .seal(&Claims::first_round(binding(), at(T0), s.config(), 7))
        .unwrap();
    let bob = Principal::subject("bob");
    let other = Binding::new(&BindingInput {
        method: "resources/read",
        target: "file:///report.txt",
        arguments: None,
        principal: &bob,
        audience: "https://mcp.example",
        protocol_version: "2026-07-28",
    });
    let e = s
        .open::<u32>(&UntrustedState::new(t), &other, at(T0 + 10_000))
        .unwrap_err();
    assert_eq!(e.reason(), RejectReason::Expired);
    assert!(!e.is_expired_but_authentic());
}

#[test]
fn saturating_times_do_not_wrap() {
    let s = sealer(SealConfig::default());
    let c = Claims::first_round(binding(), at(u64::MAX - 10), s.config(), 1);
    assert_eq!(c.deadline(), at(u64::MAX));
    let t = s.seal(&c).unwrap();
    assert!(open(&s, &t, u64::MAX - 10).is_ok());
    assert_eq!(
        open(&s, &t, 0).unwrap_err().reason(),
        RejectReason::FarFuture
    );
}
