//! Invariant: nothing that was not sealed by the ring ever opens, and open never panics.
//!
//! The input is tried three ways: as the token string itself; base64url-encoded as raw
//! token bytes (so it reaches the tag check); and with the sealing kid and version
//! forced into the header (so every input reaches the AEAD).
#![no_main]

use std::sync::LazyLock;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use libfuzzer_sys::fuzz_target;
use mrtr::Timestamp;
use mrtr::principal::Principal;
use mrtr::seal::{Binding, BindingInput, Key, Keyring, SealConfig, Sealer, UntrustedState};

static SEALER: LazyLock<Sealer> = LazyLock::new(|| {
    let ring = Keyring::new(Key::from_secret(&[0x46; 32]).unwrap())
        .with_open_only(Key::from_secret(&[0x47; 32]).unwrap())
        .unwrap();
    Sealer::new(ring, SealConfig::default())
});

static BINDING: LazyLock<Binding> = LazyLock::new(|| {
    let who = Principal::subject("fuzz");
    Binding::new(&BindingInput {
        method: "tools/call",
        target: "t",
        arguments: None,
        principal: &who,
        audience: "aud",
        protocol_version: "2026-07-28",
    })
});

fn refuse(token: String) {
    let t = UntrustedState::new(token);
    let now = Timestamp::from_unix_secs(1_800_000_000);
    assert!(
        SEALER.open::<serde_json::Value>(&t, &BINDING, now).is_err(),
        "garbage opened"
    );
    assert!(SEALER.inspect(&t).is_err(), "garbage inspected");
}

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        refuse(s.to_owned());
    }
    refuse(URL_SAFE_NO_PAD.encode(data));
    if data.len() >= 5 {
        let mut forged = data.to_vec();
        forged[0] = 0x01;
        forged[1..5].copy_from_slice(&SEALER.keyring().sealing_kid().to_be_bytes());
        refuse(URL_SAFE_NO_PAD.encode(&forged));
    }
});
