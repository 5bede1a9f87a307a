//! Property: whatever the state, seal then open gives it back; Debug never shows keys.

use std::collections::BTreeMap;

use base64::Engine as _;
use mrtr::Timestamp;
use mrtr::principal::Principal;
use mrtr::seal::{Binding, BindingInput, Claims, Key, Keyring, SealConfig, Sealer, UntrustedState};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct HandlerState {
    step: u32,
    name: String,
    answers: BTreeMap<String, Option<i64>>,
    flags: Vec<bool>,
    note: Option<String>,
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e15f64..1e15).prop_map(Value::from),
        ".{0,20}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(".{0,8}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn arb_state() -> impl Strategy<Value = HandlerState> {
    (
        any::<u32>(),
        ".{0,40}",
        prop::collection::btree_map(".{0,10}", any::<Option<i64>>(), 0..8),
        prop::collection::vec(any::<bool>(), 0..10),
        any::<Option<String>>(),
    )
        .prop_map(|(step, name, answers, flags, note)| HandlerState {
            step,
            name,
            answers,
            flags,
            note,
        })
}

fn sealer() -> Sealer {
    Sealer::new(
        Keyring::new(Key::from_secret(&[0x5a; 32]).unwrap()),
        SealConfig::default(),
    )
}

fn binding(p: &Principal, target: &str, args: Option<&Value>) -> Binding {
    Binding::new(&BindingInput {
        method: "tools/call",
        target,
        arguments: args,
        principal: p,
        audience: "aud",
        protocol_version: "2026-07-28",
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn struct_states_round_trip(
        state in arb_state(),
        t in 0u64..u64::MAX / 2,
        flow in any::<[u8; 16]>(),
    ) {
        let s = sealer();
        let now = Timestamp::from_unix_secs(t);
        let b = binding(&Principal::subject("p"), "t", None);
        let c = Claims::first_round(b, now, s.config(), state.clone());
        // A first round's flow id is drawn from the sealer's entropy as it seals.
        let drawn = s.open::<HandlerState>(&UntrustedState::new(s.seal(&c).unwrap()), &b, now).unwrap();
        prop_assert_ne!(drawn.flow_id(), [0u8; 16]);
        // A set flow id is sealed as it is.
        let tok = s.seal(&c.with_flow_id(flow)).unwrap();
        let v = s.open::<HandlerState>(&UntrustedState::new(tok), &b, now).unwrap();
        prop_assert_eq!(v.round(), 1);
        prop_assert_eq!(v.flow_id(), flow);
        prop_assert_eq!(v.into_inner().into_state(), state);
    }

    #[test]
    fn json_states_round_trip(state in arb_json(), target in ".{0,30}", args in arb_json()) {
        let s = sealer();
        let now = Timestamp::from_unix_secs(1_800_000_000);
        let b = binding(&Principal::anonymous(), &target, Some(&args));
        let tok = s.seal(&Claims::first_round(b, now, s.config(), state.clone())).unwrap();
        let v = s.open::<Value>(&UntrustedState::new(tok.clone()), &b, now).unwrap();
        prop_assert_eq!(v.state(), &state);
        // inspect agrees with open.
        let i = s.inspect(&UntrustedState::new(tok)).unwrap();
        prop_assert_eq!(&i["state"], &state);
    }

    #[test]
    fn string_states_round_trip(state in any::<String>()) {
        let s = sealer();
        let now = Timestamp::from_unix_secs(1_800_000_000);
        let b = binding(&Principal::subject("x"), "t", None);
        let tok = s.seal(&Claims::first_round(b, now, s.config(), state.clone())).unwrap();
        let v = s.open::<String>(&UntrustedState::new(tok), &b, now).unwrap();
        prop_assert_eq!(v.into_inner().into_state(), state);
    }

    #[test]
    fn another_principal_never_opens(a in ".{0,12}", b in ".{0,12}") {
        prop_assume!(a != b);
        let s = sealer();
        let now = Timestamp::from_unix_secs(1_800_000_000);
        let ba = binding(&Principal::subject(a), "t", None);
        let bb = binding(&Principal::subject(b), "t", None);
        let tok = s.seal(&Claims::first_round(ba, now, s.config(), 1)).unwrap();
        prop_assert!(s.open::<u8>(&UntrustedState::new(tok), &bb, now).is_err());
    }
}

#[test]
fn debug_never_contains_key_bytes() {
    let secret = [0xc3u8; 32];
    let old = [0x3cu8; 48];
    let key = Key::from_secret(&secret).unwrap();
    let ring = Keyring::new(Key::from_secret(&secret).unwrap())
        .with_open_only(Key::from_secret(&old).unwrap())
        .unwrap();
    let s = Sealer::new(ring.clone(), SealConfig::default());
    let shown = format!("{key:?} {key:#?} {ring:?} {ring:#?} {s:?} {s:#?}");
    let forms = |b: &[u8]| {
        vec![
            b.iter().map(|x| format!("{x:02x}")).collect::<String>(),
            b.iter().map(|x| format!("{x:02X}")).collect::<String>(),
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b),
            base64::engine::general_purpose::STANDARD.encode(b),
            format!("{:?}", b),
            format!("{}, {}, {}", b[0], b[1], b[2]),
        ]
    };
    for f in forms(&secret).into_iter().chain(forms(&old)) {
        assert!(!shown.contains(&f), "{f} in {shown}");
    }
    // 4-byte windows of the secrets' encodings as well.
    let hex_secret = "c3c3c3c3";
    assert!(!shown.contains(hex_secret));
    assert!(shown.contains(&key.kid().to_string()));
}
