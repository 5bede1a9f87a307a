//! Unit tests of `Sealer`: round trips, each rejection reason, counters, inspect.

use super::*;
use crate::principal::Principal;
use serde_json::json;
use std::sync::Mutex;
use std::time::Duration;

const T0: u64 = 1_800_000_000;

fn sealer() -> Sealer {
    Sealer::new(
        Keyring::new(Key::from_secret(&[7u8; 32]).unwrap()),
        SealConfig::default(),
    )
}

fn binding_for(p: &Principal, target: &str) -> Binding {
    let args = json!({"env": "prod", "n": 3});
    Binding::new(&BindingInput {
        method: "tools/call",
        target,
        arguments: Some(&args),
        principal: p,
        audience: "https://mcp.example",
        protocol_version: "2026-07-28",
    })
}

fn alice() -> Principal {
    Principal::subject("alice").with_issuer("https://idp.example")
}

fn now() -> Timestamp {
    Timestamp::from_unix_secs(T0)
}

fn sealed(s: &Sealer) -> (String, Binding) {
    let b = binding_for(&alice(), "deploy");
    let c = Claims::first_round(b, now(), s.config(), json!({"step": 1}));
    (s.seal(&c).unwrap(), b)
}

fn reason(r: Result<Verified<Claims<serde_json::Value>>, OpenError>) -> RejectReason {
    r.unwrap_err().reason()
}

#[test]
fn sealer_is_send_sync_and_cheap_clone() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Sealer>();
    let s = sealer();
    let t = s.clone();
    let _ = t.open::<()>(
        &UntrustedState::new("x"),
        &binding_for(&alice(), "d"),
        now(),
    );
    assert_eq!(
        s.reject_counts().get(RejectReason::Malformed),
        1,
        "clones share counters"
    );
}

#[test]
fn round_trip() {
    let s = sealer();
    let (tok, b) = sealed(&s);
    let v = s
        .open::<serde_json::Value>(&UntrustedState::new(tok.clone()), &b, now())
        .unwrap();
    assert_eq!(v.state(), &json!({"step": 1}));
    assert_eq!(v.round(), 1);
    assert_eq!(v.issued_at(), now());
    assert_eq!(v.binding(), &b);
    // Same claims, new nonce: a different token.
    let c = Claims::first_round(b, now(), s.config(), json!({"step": 1}));
    assert_ne!(s.seal(&c).unwrap(), s.seal(&c).unwrap());
    assert!(
        tok.bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
    );
    assert_eq!(s.reject_counts().total(), 0);
}

#[test]
fn next_round_round_trip() {
    let s = sealer();
    let (tok, b) = sealed(&s);
    let v = s
        .open::<serde_json::Value>(&UntrustedState::new(tok), &b, now())
        .unwrap();
    let later = now().add_secs(100);
    let c2 = Claims::next_round(&v, later, s.config(), vec![1u8, 2, 3]);
    let v2 = s
        .open::<Vec<u8>>(&UntrustedState::new(s.seal(&c2).unwrap()), &b, later)
        .unwrap();
    assert_eq!(v2.round(), 2);
    assert_eq!(v2.flow_id(), v.flow_id());
    assert_eq!(v2.deadline(), v.deadline());
    assert_eq!(v2.into_inner().into_state(), vec![1, 2, 3]);
}

#[test]
fn deterministic_seal_is_deterministic() {
    let s = sealer();
    let b = binding_for(&alice(), "deploy");
    let c = Claims::first_round(b, now(), s.config(), "x").with_flow_id([5; 16]);
    let a = s.seal_with_nonce(&c, [9; 24]).unwrap();
    assert_eq!(a, s.seal_with_nonce(&c, [9; 24]).unwrap());
    assert_ne!(a, s.seal_with_nonce(&c, [8; 24]).unwrap());
}

#[test]
fn length_and_encoding_reasons() {
    let s = sealer();
    let (tok, b) = sealed(&s);
    let open = |t: &str| reason(s.open(&UntrustedState::new(t), &b, now()));
    assert_eq!(open(""), RejectReason::Malformed);
    assert_eq!(open(&tok[..59]), RejectReason::Malformed);
    assert_eq!(open(&format!("{tok}=")), RejectReason::Malformed);
    assert_eq!(open(&format!(" {tok}")), RejectReason::Malformed);
    // The standard alphabet's '+' and '/' are not base64url.
    assert_eq!(open(&format!("+{}", &tok[1..])), RejectReason::Malformed);
    assert_eq!(
        open(&format!("{}/", &tok[..tok.len() - 1])),
        RejectReason::Malformed
    );
    assert_eq!(open(&"A".repeat(16_385)), RejectReason::TooLarge);
    let small = Sealer::new(
        Keyring::clone(&s.keyring()),
        SealConfig::default().with_max_token_len(tok.len() - 1),
    );
    assert_eq!(
        reason(small.open(&UntrustedState::new(tok.clone()), &b, now())),
        RejectReason::TooLarge
    );
    assert_eq!(small.reject_counts().get(RejectReason::TooLarge), 1);
}

#[test]
fn header_reasons() {
    let s = sealer();
    let (tok, b) = sealed(&s);
    let mut raw = URL_SAFE_NO_PAD.decode(&tok).unwrap();
    let reenc = |r: &[u8]| UntrustedState::new(URL_SAFE_NO_PAD.encode(r));
    raw[0] = 2;
    assert_eq!(
        reason(s.open(&reenc(&raw), &b, now())),
        RejectReason::UnknownVersion
    );
    raw[0] = 1;
    raw[4] ^= 1;
    let e = s
        .open::<serde_json::Value>(&reenc(&raw), &b, now())
        .unwrap_err();
    assert_eq!(e.reason(), RejectReason::UnknownKey);
    assert!(e.kid().is_some());
    raw[4] ^= 1;
    raw[10] ^= 0x80; // nonce
    assert_eq!(reason(s.open(&reenc(&raw), &b, now())), RejectReason::Tag);
    raw[10] ^= 0x80;
    let last = raw.len() - 1;
    raw[last] ^= 1; // tag
    assert_eq!(reason(s.open(&reenc(&raw), &b, now())), RejectReason::Tag);
    raw[last] ^= 1;
    raw[40] ^= 1; // ciphertext
    assert_eq!(reason(s.open(&reenc(&raw), &b, now())), RejectReason::Tag);
    raw[40] ^= 1;
    assert!(s.open::<serde_json::Value>(&reenc(&raw), &b, now()).is_ok());
    // Another key with the same kid cannot exist in one ring; a token from another ring fails by kid.
    let other = Sealer::new(Keyring::ephemeral(), SealConfig::default());
    assert_eq!(
        reason(other.open(&UntrustedState::new(tok), &b, now())),
        RejectReason::UnknownKey
    );
}

#[test]
fn decode_reason_for_wrong_state_type() {
    let s = sealer();
    let (tok, b) = sealed(&s);
    let e = s
        .open::<Vec<u32>>(&UntrustedState::new(tok), &b, now())
        .unwrap_err();
    assert_eq!(e.reason(), RejectReason::Decode);
    assert!(!e.is_expired_but_authentic());
}

#[test]
fn claim_reasons_and_expired_flag() {
    let s = sealer();
    let (tok, b) = sealed(&s);
    let t = UntrustedState::new(tok);
    let exp = T0 + 600;
    // Boundaries: exactly exp + skew opens, one second more fails.
    assert!(
        s.open::<serde_json::Value>(&t, &b, Timestamp::from_unix_secs(exp + 60))
            .is_ok()
    );
    let e = s
        .open::<serde_json::Value>(&t, &b, Timestamp::from_unix_secs(exp + 61))
        .unwrap_err();
    assert_eq!(e.reason(), RejectReason::Expired);
    assert!(e.is_expired_but_authentic());
    // Expired and for another principal: reason Expired, but not "expired but authentic".
    let bob = binding_for(&Principal::subject("bob"), "deploy");
    let e = s
        .open::<serde_json::Value>(&t, &bob, Timestamp::from_unix_secs(exp + 61))
        .unwrap_err();
    assert_eq!(e.reason(), RejectReason::Expired);
    assert!(!e.is_expired_but_authentic());
    let e = s.open::<serde_json::Value>(&t, &bob, now()).unwrap_err();
    assert_eq!(e.reason(), RejectReason::Principal);
    assert!(!e.is_expired_but_authentic());
    let other_target = binding_for(&alice(), "undeploy");
    assert_eq!(
        reason(s.open(&t, &other_target, now())),
        RejectReason::Binding
    );
    let mut aud = b;
    aud.audience[0] ^= 1;
    assert_eq!(reason(s.open(&t, &aud, now())), RejectReason::Audience);
    // Far future: opened long before it was sealed.
    let early = Timestamp::from_unix_secs(T0 - 86_400);
    let e = s.open::<serde_json::Value>(&t, &b, early).unwrap_err();
    assert_eq!(e.reason(), RejectReason::FarFuture);
    assert!(!e.is_expired_but_authentic());
    let c = s.reject_counts();
    assert_eq!(c.get(RejectReason::Expired), 2);
    assert_eq!(c.get(RejectReason::Principal), 1);
    assert_eq!(c.get(RejectReason::FarFuture), 1);
    assert_eq!(c.total(), 6);
}

#[test]
fn deadline_reason() {
    let cfg = SealConfig::default()
        .with_ttl(Duration::from_secs(3_000))
        .unwrap()
        .with_flow_lifetime(Duration::from_secs(5_000))
        .unwrap();
    let s = Sealer::new(Keyring::new(Key::from_secret(&[7u8; 32]).unwrap()), cfg);
    let b = binding_for(&alice(), "deploy");
    let c1 = Claims::first_round(b, now(), s.config(), 0u8);
    let v1 = s
        .open::<u8>(&UntrustedState::new(s.seal(&c1).unwrap()), &b, now())
        .unwrap();
    // Round 2 sealed near the deadline: exp clamps to the deadline.
    let t2 = now().add_secs(4_000);
    let c2 = Claims::next_round(&v1, t2, s.config(), 1u8);
    assert_eq!(c2.expires_at(), c1.deadline());
    let tok2 = UntrustedState::new(s.seal(&c2).unwrap());
    let dl = c1.deadline().unix_secs();
    assert!(
        s.open::<u8>(&tok2, &b, Timestamp::from_unix_secs(dl + 60))
            .is_ok()
    );
    let e = s
        .open::<u8>(&tok2, &b, Timestamp::from_unix_secs(dl + 61))
        .unwrap_err();
    // exp == deadline, so both fail; expiry is checked first.
    assert_eq!(e.reason(), RejectReason::Expired);
    assert!(e.is_expired_but_authentic());
}

#[test]
fn seal_limits() {
    let b = binding_for(&alice(), "deploy");
    let s = Sealer::new(
        Keyring::ephemeral(),
        SealConfig::default().with_max_plaintext(150),
    );
    let c = Claims::first_round(b, now(), s.config(), "x".repeat(100));
    match s.seal(&c) {
        Err(e @ SealError::TooLarge { len: 195, max: 150 }) => {
            assert_eq!(
                e.to_string(),
                "sealed state plaintext is 195 bytes, above the configured maximum of 150 bytes"
            );
        }
        other => panic!("{other:?}"),
    }
    let s = Sealer::new(
        Keyring::ephemeral(),
        SealConfig::default().with_max_token_len(100),
    );
    assert!(matches!(s.seal(&c), Err(SealError::TokenTooLong { .. })));
    let mut bad = std::collections::HashMap::new();
    bad.insert((1, 2), 3);
    let c = Claims::first_round(b, now(), s.config(), bad);
    assert!(matches!(s.seal(&c), Err(SealError::Serialize(_))));
}

#[test]
fn token_length_is_exact() {
    let s = sealer();
    let b = binding_for(&alice(), "deploy");
    let c = Claims::first_round(b, now(), s.config(), "abc");
    let tok = s.seal(&c).unwrap();
    let pt = CLAIMS_HEADER_LEN + 5; // "abc" in quotes
    assert_eq!(tok.len(), token::encoded_len(HEADER_LEN + pt + TAG_LEN));
}

#[test]
fn inspect_shows_claims_without_checks() {
    let s = sealer();
    let (tok, b) = sealed(&s);
    let v = s.inspect(&UntrustedState::new(tok)).unwrap();
    assert_eq!(v["round"], 1);
    assert_eq!(v["iat"], T0);
    assert_eq!(v["exp"], T0 + 600);
    assert_eq!(v["deadline"], T0 + 3600);
    assert_eq!(v["kid"], s.keyring().sealing_kid().to_string());
    assert_eq!(v["state"], json!({"step": 1}));
    // The sealed digests: the first 16 bytes (32 hex digits) of each.
    let full = serde_json::to_value(b).unwrap();
    for k in ["request", "principal", "audience"] {
        assert_eq!(
            v["binding"][k].as_str().unwrap(),
            &full[k].as_str().unwrap()[..32]
        );
    }
    assert_eq!(v["binding"].as_object().unwrap().len(), 3);
    assert_eq!(v["flow_id"].as_str().unwrap().len(), 32);
    let e = s.inspect(&UntrustedState::new("nope")).unwrap_err();
    assert_eq!(e.reason(), RejectReason::Malformed);
    assert_eq!(s.reject_counts().total(), 1);
}

#[test]
fn debug_never_shows_keys() {
    let s = sealer();
    let d = format!("{s:?} {:?}", s.keyring());
    assert!(d.contains(&s.keyring().sealing_kid().to_string()));
    assert!(
        !d.contains("7, 7") && !d.contains("0707") && !d.contains("BwcH"),
        "{d}"
    );
}

/// A constant byte: NOT random. Shows that the sealer draws from its entropy only.
#[derive(Debug)]
struct Fixed(u8);

impl Entropy for Fixed {
    fn fill(&self, dest: &mut [u8]) {
        dest.fill(self.0);
    }
}

/// Counts up from 0 and records how many bytes each draw asked for.
#[derive(Debug, Default)]
struct Recording(Mutex<(u8, Vec<usize>)>);

impl Entropy for Recording {
    fn fill(&self, dest: &mut [u8]) {
        let mut g = self.0.lock().unwrap();
        g.1.push(dest.len());
        for b in dest {
            *b = g.0;
            g.0 = g.0.wrapping_add(1);
        }
    }
}

fn sealer_with(entropy: Arc<dyn Entropy>) -> Sealer {
    Sealer::with_entropy(
        Keyring::new(Key::from_secret(&[7u8; 32]).unwrap()),
        SealConfig::default(),
        entropy,
    )
}

#[test]
fn the_sealer_takes_its_randomness_from_its_entropy_only() {
    let b = binding_for(&alice(), "deploy");
    let c = Claims::first_round(b, now(), &SealConfig::default(), json!({"step": 1}));
    let one = sealer_with(Arc::new(Fixed(1)));
    let tok = one.seal(&c).unwrap();
    assert_eq!(tok, one.seal(&c).unwrap(), "nothing but the entropy varies");
    assert_eq!(
        tok,
        sealer_with(Arc::new(Fixed(1))).seal(&c).unwrap(),
        "same entropy, same token"
    );
    let two = sealer_with(Arc::new(Fixed(2)));
    assert_ne!(tok, two.seal(&c).unwrap(), "other entropy, other token");
    // The nonce in the header and the flow id inside are the entropy's bytes.
    let raw = URL_SAFE_NO_PAD.decode(&tok).unwrap();
    assert_eq!(&raw[5..HEADER_LEN], &[1u8; NONCE_LEN]);
    // Opening draws nothing: any sealer with the key opens it.
    let v = two
        .open::<serde_json::Value>(&UntrustedState::new(tok), &b, now())
        .unwrap();
    assert_eq!(v.flow_id(), [1; 16]);
    // A later round keeps the flow id; only the nonce is drawn.
    let c2 = Claims::next_round(&v, now(), two.config(), 2u8);
    let v2 = one
        .open::<u8>(&UntrustedState::new(two.seal(&c2).unwrap()), &b, now())
        .unwrap();
    assert_eq!(v2.flow_id(), [1; 16]);
    assert!(format!("{one:?}").contains("Fixed(1)"));
}

#[test]
fn draws_are_a_nonce_then_a_first_rounds_flow_id() {
    let rec = Arc::new(Recording::default());
    let s = sealer_with(rec.clone());
    let b = binding_for(&alice(), "deploy");
    let c1 = Claims::first_round(b, now(), s.config(), 1u8);
    let tok1 = s.seal(&c1).unwrap();
    let v1 = s
        .open::<u8>(&UntrustedState::new(tok1.clone()), &b, now())
        .unwrap();
    let c2 = Claims::next_round(&v1, now(), s.config(), 2u8);
    let tok2 = s.seal(&c2).unwrap();
    // Round 1: one draw of 24 + 16 bytes; round 2: 24 bytes; opening: none.
    assert_eq!(rec.0.lock().unwrap().1, vec![40, 24]);
    let nonce = |t: &str| URL_SAFE_NO_PAD.decode(t).unwrap()[5..HEADER_LEN].to_vec();
    assert_eq!(nonce(&tok1), (0..24).collect::<Vec<u8>>());
    assert_eq!(v1.flow_id().to_vec(), (24..40).collect::<Vec<u8>>());
    assert_eq!(nonce(&tok2), (40..64).collect::<Vec<u8>>());
    // A fixed flow id (known-answer vectors) is never drawn.
    let fixed = Claims::first_round(b, now(), s.config(), 3u8).with_flow_id([5; 16]);
    s.seal(&fixed).unwrap();
    s.seal_with_nonce(&fixed, [0; 24]).unwrap();
    assert_eq!(rec.0.lock().unwrap().1, vec![40, 24, 24]);
}

#[test]
fn with_config_keeps_the_keys_and_the_entropy() {
    let s = sealer_with(Arc::new(Fixed(3)));
    let b = binding_for(&alice(), "deploy");
    let c = Claims::first_round(b, now(), s.config(), "x");
    let _ = s.open::<()>(&UntrustedState::new("x"), &b, now());
    let t = s.with_config(SealConfig::default().with_max_plaintext(150));
    assert_eq!(t.config().max_plaintext(), 150);
    assert_eq!(t.keyring().kids(), s.keyring().kids());
    assert_eq!(t.seal(&c).unwrap(), s.seal(&c).unwrap());
    assert_eq!(t.reject_counts().total(), 0, "fresh counters");
    assert_eq!(s.reject_counts().total(), 1);
}

#[test]
fn default_sealer_uses_os_entropy_and_fresh_flow_ids() {
    let s = sealer();
    assert!(format!("{s:?}").contains("OsEntropy"));
    let b = binding_for(&alice(), "deploy");
    let c = Claims::first_round(b, now(), s.config(), ());
    let open = |t: String| s.open::<()>(&UntrustedState::new(t), &b, now()).unwrap();
    let (f1, f2) = (
        open(s.seal(&c).unwrap()).flow_id(),
        open(s.seal(&c).unwrap()).flow_id(),
    );
    assert_ne!(f1, f2, "every first round is a new flow");
    assert_ne!(f1, [0; 16]);
}

fn key(b: u8) -> Key {
    Key::from_secret(&[b; 32]).unwrap()
}

/// The kid a token names in clear (bytes 1..5 of the decoded token).
fn kid_of(token: &str) -> Kid {
    let raw = URL_SAFE_NO_PAD.decode(token).unwrap();
    Kid::from_be_bytes([raw[1], raw[2], raw[3], raw[4]])
}

#[test]
fn replace_keyring_runs_the_three_phases() {
    let (old, new) = (key(1), key(2));
    let s = Sealer::new(Keyring::new(old.clone()), SealConfig::default());
    let clone = s.clone();
    let (t_old, b) = sealed(&s);
    assert_eq!(kid_of(&t_old), old.kid());
    let opens =
        |s: &Sealer, t: &str| s.open::<serde_json::Value>(&UntrustedState::new(t), &b, now());
    let _ = opens(&s, "garbage");
    assert_eq!(s.reject_counts().get(RejectReason::Malformed), 1);

    // Phase 1: the new key opens only; the old one still seals.
    s.replace_keyring(
        Keyring::new(old.clone())
            .with_open_only(new.clone())
            .unwrap(),
    );
    assert_eq!(
        kid_of(&sealed(&clone).0),
        old.kid(),
        "clones share the ring"
    );
    assert!(opens(&clone, &t_old).is_ok());

    // Phase 2: the new key seals; tokens of the old one still open.
    clone.replace_keyring(
        Keyring::new(new.clone())
            .with_open_only(old.clone())
            .unwrap(),
    );
    let (t_new, _) = sealed(&s);
    assert_eq!(kid_of(&t_new), new.kid());
    assert!(opens(&s, &t_old).is_ok());
    assert!(opens(&s, &t_new).is_ok());

    // Phase 3: the old key is gone, and with it every token it sealed.
    s.replace_keyring(Keyring::new(new.clone()));
    assert!(opens(&s, &t_new).is_ok());
    let e = opens(&s, &t_old).unwrap_err();
    assert_eq!(e.reason(), RejectReason::UnknownKey);
    assert_eq!(e.kid(), Some(old.kid()));
    assert!(s.inspect(&UntrustedState::new(t_old)).is_err());

    // The counters, the configuration and the entropy outlive the swaps.
    let counts = clone.reject_counts();
    assert_eq!(counts.get(RejectReason::Malformed), 1);
    assert_eq!(counts.get(RejectReason::UnknownKey), 2);
    assert_eq!(s.keyring().kids(), vec![new.kid()]);
}

#[test]
fn a_replaced_ring_is_dropped_once_nothing_holds_it() {
    let s = sealer();
    let first = Arc::downgrade(&s.keyring());
    s.replace_keyring(Keyring::new(key(2)));
    assert!(
        first.upgrade().is_none(),
        "nothing held it: dropped, keys zeroized"
    );

    // A snapshot (as an operation in progress holds one) keeps it until it ends.
    let held = s.keyring();
    let second = Arc::downgrade(&held);
    s.replace_keyring(Keyring::new(key(3)));
    assert_eq!(
        held.sealing_kid(),
        key(2).kid(),
        "the snapshot does not change"
    );
    assert!(second.upgrade().is_some());
    drop(held);
    assert!(second.upgrade().is_none());
    assert_eq!(s.keyring().sealing_kid(), key(3).kid());

    // `with_config` starts from the ring in force, then keeps its own.
    let t = s.with_config(SealConfig::default());
    s.replace_keyring(Keyring::new(key(4)));
    assert_eq!(t.keyring().sealing_kid(), key(3).kid());
}

#[test]
fn swapping_rings_under_concurrent_seals_and_opens_fails_no_flow() {
    const WORKERS: usize = 3;
    const ROUNDS: usize = 300;
    const MAX_SWAPS: usize = 100_000;
    let (a, b) = (key(1), key(2));
    let ab = || Keyring::new(a.clone()).with_open_only(b.clone()).unwrap();
    let ba = || Keyring::new(b.clone()).with_open_only(a.clone()).unwrap();
    let s = Sealer::new(ab(), SealConfig::default());
    let (before, binding) = sealed(&s);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..WORKERS)
            .map(|_| {
                let s = s.clone();
                let before = before.clone();
                scope.spawn(move || {
                    let mut kids = std::collections::BTreeSet::new();
                    for _ in 0..ROUNDS {
                        let (t, b) = sealed(&s);
                        kids.insert(kid_of(&t));
                        for token in [&t, &before] {
                            let r = s.open::<serde_json::Value>(
                                &UntrustedState::new(token.clone()),
                                &b,
                                now(),
                            );
                            assert!(r.is_ok(), "{:?}", r.unwrap_err().reason());
                        }
                    }
                    kids
                })
            })
            .collect();
        // Swap for as long as the workers run (bounded), so that swaps land in the
        // middle of their seals and opens.
        let mut swaps = 0;
        while swaps < MAX_SWAPS && !workers.iter().all(|w| w.is_finished()) {
            s.replace_keyring(if swaps % 2 == 0 { ba() } else { ab() });
            swaps += 1;
        }
        assert!(swaps > 0);
        for w in workers {
            let kids = w.join().unwrap();
            assert!(
                kids.iter().all(|k| *k == a.kid() || *k == b.kid()),
                "{kids:?}"
            );
        }
    });
    assert_eq!(s.reject_counts().total(), 0);
    let r = s.open::<serde_json::Value>(&UntrustedState::new(before), &binding, now());
    assert!(r.is_ok());
}
