//! Nothing but an untouched token opens: bit flips, character flips, truncation,
//! extension, non-canonical base64, other versions, other kids, swapped nonces.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mrtr::Timestamp;
use mrtr::principal::Principal;
use mrtr::seal::{
    Binding, BindingInput, Claims, Key, Keyring, OpenError, RejectReason, SealConfig, Sealer,
    UntrustedState,
};
use proptest::prelude::*;
use serde_json::{Value, json};

const T0: u64 = 1_800_000_000;

fn sealer() -> Sealer {
    let ring = Keyring::new(Key::from_secret(&[0x11; 32]).unwrap())
        .with_open_only(Key::from_secret(&[0x22; 32]).unwrap())
        .unwrap();
    Sealer::new(ring, SealConfig::default())
}

fn binding() -> Binding {
    let who = Principal::subject("alice");
    Binding::new(&BindingInput {
        method: "tools/call",
        target: "deploy",
        arguments: Some(&json!({"env": "prod"})),
        principal: &who,
        audience: "https://mcp.example",
        protocol_version: "2026-07-28",
    })
}

fn now() -> Timestamp {
    Timestamp::from_unix_secs(T0)
}

fn token(s: &Sealer, state: Value) -> String {
    s.seal(&Claims::first_round(binding(), now(), s.config(), state))
        .unwrap()
}

fn open(s: &Sealer, t: &str) -> Result<Value, OpenError> {
    s.open::<Value>(&UntrustedState::new(t), &binding(), now())
        .map(|v| v.into_inner().into_state())
}

fn reason(s: &Sealer, t: &str) -> RejectReason {
    let e = open(s, t).unwrap_err();
    assert_eq!(e.to_string(), "invalid or expired requestState");
    assert!(!e.is_expired_but_authentic());
    e.reason()
}

#[test]
fn every_bit_flip_of_the_bytes_is_rejected() {
    let s = sealer();
    let tok = token(&s, json!({"n": 1, "s": "hello"}));
    let raw = URL_SAFE_NO_PAD.decode(&tok).unwrap();
    let mut flips = 0;
    for i in 0..raw.len() {
        for bit in 0..8 {
            let mut m = raw.clone();
            m[i] ^= 1 << bit;
            let r = reason(&s, &URL_SAFE_NO_PAD.encode(&m));
            let want: &[RejectReason] = match i {
                0 => &[RejectReason::UnknownVersion],
                1..=4 => &[RejectReason::UnknownKey],
                _ => &[RejectReason::Tag],
            };
            assert!(want.contains(&r), "byte {i} bit {bit}: {r}");
            flips += 1;
        }
    }
    assert_eq!(flips, raw.len() * 8);
    assert_eq!(s.reject_counts().total(), flips as u64);
    assert_eq!(open(&s, &tok).unwrap(), json!({"n": 1, "s": "hello"}));
}

#[test]
fn every_character_change_is_rejected() {
    let s = sealer();
    let tok = token(&s, json!(["a", 2]));
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/=. ";
    let bytes = tok.as_bytes();
    for i in 0..bytes.len() {
        for &c in alphabet.iter().filter(|&&c| c != bytes[i]) {
            let mut m = bytes.to_vec();
            m[i] = c;
            let m = String::from_utf8(m).unwrap();
            assert!(open(&s, &m).is_err(), "position {i} char {}", c as char);
        }
    }
}

#[test]
fn truncation_and_extension_are_rejected() {
    let s = sealer();
    let tok = token(&s, json!({"k": "v"}));
    for n in 0..tok.len() {
        let r = reason(&s, &tok[..n]);
        assert!(
            matches!(r, RejectReason::Malformed | RejectReason::Tag),
            "len {n}: {r}"
        );
    }
    let raw = URL_SAFE_NO_PAD.decode(&tok).unwrap();
    for extra in [&[0u8][..], &[0, 0, 0], &[0xff; 16]] {
        let mut m = raw.clone();
        m.extend_from_slice(extra);
        assert_eq!(reason(&s, &URL_SAFE_NO_PAD.encode(&m)), RejectReason::Tag);
    }
    for suffix in ["A", "AA", "AAAA", "=", "==", "\n", " "] {
        let r = reason(&s, &format!("{tok}{suffix}"));
        assert!(
            matches!(r, RejectReason::Malformed | RejectReason::Tag),
            "{suffix:?}: {r}"
        );
    }
    // Truncating the tag (1..=15 bytes short) is a tag failure, never a shorter accepted tag.
    for cut in 1..16 {
        assert_eq!(
            reason(&s, &URL_SAFE_NO_PAD.encode(&raw[..raw.len() - cut])),
            RejectReason::Tag
        );
    }
}

#[test]
fn non_canonical_base64_is_rejected() {
    let s = sealer();
    // Find a token whose byte length is not a multiple of 3, so its last char has spare bits.
    let (tok, raw) = (0..10)
        .map(|i| token(&s, json!("x".repeat(i))))
        .map(|t| {
            let raw = URL_SAFE_NO_PAD.decode(&t).unwrap();
            (t, raw)
        })
        .find(|(_, raw)| raw.len() % 3 != 0)
        .unwrap();
    let spare = if raw.len() % 3 == 1 { 4 } else { 2 };
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let last = *tok.as_bytes().last().unwrap();
    let idx = alphabet.iter().position(|&c| c == last).unwrap();
    for low in 1..(1 << spare) {
        let mut m = tok.clone().into_bytes();
        *m.last_mut().unwrap() = alphabet[idx ^ low];
        let m = String::from_utf8(m).unwrap();
        assert_eq!(
            reason(&s, &m),
            RejectReason::Malformed,
            "trailing bits {low}"
        );
    }
    // Padded, standard alphabet, whitespace inside.
    let padded = base64::engine::general_purpose::URL_SAFE.encode(&raw);
    assert!(padded.ends_with('='));
    assert_eq!(reason(&s, &padded), RejectReason::Malformed);
    let standard = base64::engine::general_purpose::STANDARD_NO_PAD.encode(&raw);
    if standard != tok {
        assert_eq!(reason(&s, &standard), RejectReason::Malformed);
    }
    let spaced = format!("{} {}", &tok[..20], &tok[20..]);
    assert_eq!(reason(&s, &spaced), RejectReason::Malformed);
    assert_eq!(reason(&s, &format!("{tok}\n")), RejectReason::Malformed);
}

#[test]
fn other_version_other_kid_swapped_nonce() {
    let s = sealer();
    let a = URL_SAFE_NO_PAD.decode(token(&s, json!(1))).unwrap();
    let b = URL_SAFE_NO_PAD.decode(token(&s, json!(1))).unwrap();
    for v in [0u8, 2, 0x80, 0xff] {
        let mut m = a.clone();
        m[0] = v;
        assert_eq!(
            reason(&s, &URL_SAFE_NO_PAD.encode(&m)),
            RejectReason::UnknownVersion
        );
    }
    // The open-only key's kid: the right key is selected, and its tag check fails.
    let other_kid = Key::from_secret(&[0x22; 32]).unwrap().kid();
    let mut m = a.clone();
    m[1..5].copy_from_slice(&other_kid.to_be_bytes());
    assert_eq!(reason(&s, &URL_SAFE_NO_PAD.encode(&m)), RejectReason::Tag);
    let mut m = a.clone();
    m[1..5].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
    assert_eq!(
        reason(&s, &URL_SAFE_NO_PAD.encode(&m)),
        RejectReason::UnknownKey
    );
    // Nonce of another token, ciphertext of this one.
    let mut m = a.clone();
    m[5..29].copy_from_slice(&b[5..29]);
    assert_eq!(reason(&s, &URL_SAFE_NO_PAD.encode(&m)), RejectReason::Tag);
    // Tag of another token.
    let mut m = a.clone();
    let n = m.len();
    m[n - 16..].copy_from_slice(&b[b.len() - 16..]);
    assert_eq!(reason(&s, &URL_SAFE_NO_PAD.encode(&m)), RejectReason::Tag);
}

#[test]
fn garbage_of_every_short_length_is_rejected() {
    let s = sealer();
    for n in 0..200 {
        let g = "A".repeat(n);
        assert!(open(&s, &g).is_err());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn open_never_panics_nor_succeeds_on_random_strings(t in ".{0,400}") {
        let s = sealer();
        prop_assert!(open(&s, &t).is_err());
    }

    #[test]
    fn open_never_succeeds_on_random_base64(raw in proptest::collection::vec(any::<u8>(), 0..600)) {
        let s = sealer();
        let mut raw = raw;
        if raw.len() > 5 {
            // Give some inputs a valid version and kid so they reach the tag check.
            raw[0] = 1;
            raw[1..5].copy_from_slice(&s.keyring().sealing_kid().to_be_bytes());
        }
        let r = open(&s, &URL_SAFE_NO_PAD.encode(&raw));
        prop_assert!(r.is_err());
    }

    #[test]
    fn random_single_byte_edits_are_rejected(pos in any::<prop::sample::Index>(), delta in 1u8..=255) {
        let s = sealer();
        let mut raw = URL_SAFE_NO_PAD.decode(token(&s, json!({"a": [1, 2, 3]}))).unwrap();
        let i = pos.index(raw.len());
        raw[i] = raw[i].wrapping_add(delta);
        prop_assert!(open(&s, &URL_SAFE_NO_PAD.encode(&raw)).is_err());
    }
}
