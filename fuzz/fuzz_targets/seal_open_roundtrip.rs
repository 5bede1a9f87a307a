//! Invariant: any state sealed for a request at any time opens, for that request at
//! that time, to the equal state and claims; and to nothing for another request.
#![no_main]

use std::collections::BTreeMap;
use std::sync::LazyLock;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use mrtr::Timestamp;
use mrtr::principal::Principal;
use mrtr::seal::{
    Binding, BindingInput, Claims, Key, Keyring, SealConfig, SealError, Sealer, UntrustedState,
};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Arbitrary, Serialize, Deserialize)]
enum Item {
    Unit,
    Flag(bool),
    Int(i64),
    Big(u64),
    Float(f64),
    Text(String),
    Bytes(Vec<u8>),
    List(Vec<Option<String>>),
}

#[derive(Debug, Clone, PartialEq, Arbitrary, Serialize, Deserialize)]
struct State {
    step: u32,
    items: Vec<Item>,
    answers: BTreeMap<String, Item>,
    note: Option<String>,
}

#[derive(Debug, Arbitrary)]
struct Input {
    state: State,
    now: u64,
    nonce: [u8; 24],
    flow_id: [u8; 16],
    target: String,
    subject: Option<String>,
    audience: String,
    args: Vec<(String, i64)>,
}

static SEALER: LazyLock<Sealer> = LazyLock::new(|| {
    Sealer::new(
        Keyring::new(Key::from_secret(&[0x52; 32]).unwrap()),
        SealConfig::default(),
    )
});

fn binding(target: &str, who: &Principal, audience: &str, args: &serde_json::Value) -> Binding {
    Binding::new(&BindingInput {
        method: "tools/call",
        target,
        arguments: Some(args),
        principal: who,
        audience,
        protocol_version: "2026-07-28",
    })
}

fn finite(item: &Item) -> bool {
    !matches!(item, Item::Float(f) if !f.is_finite())
}

fuzz_target!(|input: Input| {
    // JSON has no NaN or infinities (serde_json writes them as null): not a round-trip case.
    if !input.state.items.iter().all(finite) || !input.state.answers.values().all(finite) {
        return;
    }
    let who = match &input.subject {
        Some(s) => Principal::subject(s.clone()),
        None => Principal::anonymous(),
    };
    let args: serde_json::Value = input
        .args
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::Value::from(*v)))
        .collect();
    let b = binding(&input.target, &who, &input.audience, &args);
    let now = Timestamp::from_unix_secs(input.now);
    let claims = Claims::first_round(b, now, SEALER.config(), input.state.clone())
        .with_flow_id(input.flow_id);
    let token = match SEALER.seal_with_nonce(&claims, input.nonce) {
        Ok(t) => t,
        Err(SealError::TooLarge { .. } | SealError::TokenTooLong { .. }) => return,
        Err(e) => panic!("seal failed: {e}"),
    };
    let t = UntrustedState::new(token);
    let opened = SEALER
        .open::<State>(&t, &b, now)
        .expect("fresh seal must open");
    assert_eq!(opened.state(), &input.state);
    assert_eq!(opened.flow_id(), input.flow_id);
    assert_eq!(opened.issued_at(), now);
    assert_eq!(opened.round(), 1);
    // Another audience never opens it.
    let other = binding(&input.target, &who, &format!("{}!", input.audience), &args);
    assert!(SEALER.open::<State>(&t, &other, now).is_err());
});
