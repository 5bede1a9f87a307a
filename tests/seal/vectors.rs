//! Known-answer vectors for the token format v1 (`tests/vectors/seal_vectors.json`).
//!
//! Valid entries: a fixed key, nonce, flow id and clock must seal to exactly the stored
//! token, and the stored token must open to the stored claims. Invalid entries: each
//! stored token must be refused, at the stored time, with the stored private reason.
//! The file is frozen: if the format drifts, `vectors_hold` fails.
//!
//! Regenerate (only for a deliberate format change, with a new version byte):
//! `MRTR_WRITE_VECTORS=1 cargo test --test seal_vectors -- --ignored --exact regenerate_vectors`

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mrtr::Timestamp;
use mrtr::principal::Principal;
use mrtr::seal::primitive::xaes_seal;
use mrtr::seal::{Binding, BindingInput, Claims, Key, Keyring, SealConfig, Sealer, UntrustedState};
use serde_json::{Value, json};

const PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/vectors/seal_vectors.json"
);
const SEALING_SECRET: [u8; 32] = [0x0b; 32];
const OPEN_ONLY_SECRET: [u8; 32] = [0x0c; 32];
const T0: u64 = 1_800_000_000;

fn config() -> SealConfig {
    SealConfig::default()
        .with_max_token_len(1024)
        .with_max_plaintext(600)
}

fn sealer() -> Sealer {
    let ring = Keyring::new(Key::from_secret(&SEALING_SECRET).unwrap())
        .with_open_only(Key::from_secret(&OPEN_ONLY_SECRET).unwrap())
        .unwrap();
    Sealer::new(ring, config())
}

fn principal(v: &Value) -> Principal {
    let mut p = match v["subject"].as_str() {
        Some(s) => Principal::subject(s),
        None => Principal::anonymous(),
    };
    if let Some(i) = v["issuer"].as_str() {
        p = p.with_issuer(i);
    }
    if let Some(c) = v["client_id"].as_str() {
        p = p.with_client_id(c);
    }
    p
}

/// A binding from its JSON description in the vector file.
fn binding(v: &Value) -> Binding {
    let p = principal(&v["principal"]);
    let args = &v["arguments"];
    Binding::new(&BindingInput {
        method: v["method"].as_str().unwrap(),
        target: v["target"].as_str().unwrap(),
        arguments: if args.is_null() { None } else { Some(args) },
        principal: &p,
        audience: v["audience"].as_str().unwrap(),
        protocol_version: v["protocol_version"].as_str().unwrap(),
    })
}

fn base_binding() -> Value {
    json!({
        "method": "tools/call",
        "target": "deploy",
        "arguments": {"env": "prod", "replicas": 3},
        "principal": {"subject": "alice", "issuer": "https://idp.example", "client_id": "app-1"},
        "audience": "https://mcp.example",
        "protocol_version": "2026-07-28",
    })
}

fn with(mut v: Value, path: &[&str], new: Value) -> Value {
    let mut at = &mut v;
    for p in &path[..path.len() - 1] {
        at = &mut at[*p];
    }
    at[path[path.len() - 1]] = new;
    v
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex<const N: usize>(s: &str) -> [u8; N] {
    let v: Vec<u8> = (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect();
    v.try_into().unwrap()
}

/// Seals one valid entry's claims with its fixed nonce and flow id.
fn seal_entry(s: &Sealer, e: &Value) -> String {
    let b = binding(&e["binding"]);
    let now = Timestamp::from_unix_secs(e["iat"].as_u64().unwrap());
    let mut c = Claims::first_round(b, now, s.config(), sorted(&e["state"]))
        .with_flow_id(unhex(e["flow_id"].as_str().unwrap()));
    if let Some(exp) = e.get("exp_override").and_then(Value::as_u64) {
        c = c.with_expires_at(Timestamp::from_unix_secs(exp));
    }
    s.seal_with_nonce(&c, unhex(e["nonce"].as_str().unwrap()))
        .unwrap()
}

/// The state with object keys in sorted order, so the sealed bytes do not depend
/// on whether serde_json keeps insertion order (the crate enables `preserve_order`;
/// the vectors were made with sorted maps).
fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&m[k])))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

fn valid_entry(name: &str, state: Value, nonce_byte: u8, b: Value) -> Value {
    json!({
        "name": name,
        "binding": b,
        "iat": T0,
        "flow_id": hex(&[nonce_byte ^ 0xf0; 16]),
        "nonce": hex(&[nonce_byte; 24]),
        "state": state,
    })
}

/// A token made by hand from the documented layout (not through `Sealer`), sealed
/// under the sealing key with a plaintext of the caller's choosing.
fn raw_token(kid: [u8; 4], nonce: [u8; 24], plaintext: &[u8]) -> String {
    let mut header = vec![0x01];
    header.extend_from_slice(&kid);
    header.extend_from_slice(&nonce);
    let label = b"mrtr/request-state/v1";
    let mut aad = Vec::new();
    aad.extend_from_slice(&2u64.to_le_bytes());
    aad.extend_from_slice(&(label.len() as u64).to_le_bytes());
    aad.extend_from_slice(label);
    aad.extend_from_slice(&(header.len() as u64).to_le_bytes());
    aad.extend_from_slice(&header);
    let mut out = header;
    out.extend_from_slice(&xaes_seal(&SEALING_SECRET, &nonce, &aad, plaintext));
    URL_SAFE_NO_PAD.encode(out)
}

fn claims_plaintext(format: u8, b: &Binding, state: &[u8]) -> Vec<u8> {
    let mut pt = vec![format];
    pt.extend_from_slice(&T0.to_be_bytes());
    pt.extend_from_slice(&(T0 + 600).to_be_bytes());
    pt.extend_from_slice(&(T0 + 3600).to_be_bytes());
    pt.extend_from_slice(&1u32.to_be_bytes());
    pt.extend_from_slice(&[0xaa; 16]);
    pt.extend_from_slice(&b.request_digest()[..16]);
    pt.extend_from_slice(&b.principal_digest()[..16]);
    pt.extend_from_slice(&b.audience_digest()[..16]);
    pt.extend_from_slice(state);
    pt
}

/// Builds the vector file's content. Object states are written with sorted keys so the
/// tokens do not depend on serde_json's `preserve_order` feature (which keeps insertion
/// order in a `Value` and so in the sealed JSON).
fn build() -> Value {
    let s = sealer();
    let base = base_binding();
    let anon = with(base.clone(), &["principal"], json!({}));
    let no_args = with(base.clone(), &["arguments"], Value::Null);
    let subject_only = with(base.clone(), &["principal"], json!({"subject": "alice"}));
    let issuer_subject = with(
        base.clone(),
        &["principal"],
        json!({"subject": "alice", "issuer": "https://idp.example"}),
    );
    let mut valid = vec![
        valid_entry(
            "object_state",
            json!({"asked": ["confirm"], "step": 1}),
            0x01,
            base.clone(),
        ),
        valid_entry("string_state", json!("hello, world"), 0x02, base.clone()),
        valid_entry("null_state", Value::Null, 0x03, anon),
        valid_entry(
            "unicode_state",
            json!({"ctl": "\u{1}", "emoji": "🔐", "name": "Zoë"}),
            0x04,
            no_args,
        ),
        valid_entry(
            "number_state",
            json!([0, -1, 1.5, 18446744073709551615u64, 1e-7]),
            0x05,
            base.clone(),
        ),
        valid_entry("long_state", json!("x".repeat(300)), 0x06, base.clone()),
        // One per form of principal besides the full one above (null_state is the
        // anonymous one): a subject alone, and an issuer with its subject.
        valid_entry(
            "subject_only_principal",
            json!({"who": "subject"}),
            0x0e,
            subject_only.clone(),
        ),
        valid_entry(
            "issuer_subject_principal",
            json!({"who": "issuer+subject"}),
            0x0f,
            issuer_subject.clone(),
        ),
    ];
    for e in &mut valid {
        let tok = seal_entry(&s, e);
        e["token"] = json!(tok);
        e["exp"] = json!(T0 + 600);
        e["deadline"] = json!(T0 + 3600);
        e["round"] = json!(1);
    }
    // One sealed by the open-only key: it must open with the ring above.
    let old = Sealer::new(
        Keyring::new(Key::from_secret(&OPEN_ONLY_SECRET).unwrap()),
        config(),
    );
    let mut e = valid_entry("open_only_key", json!({"k": "old"}), 0x07, base.clone());
    e["token"] = json!(seal_entry(&old, &e));
    e["sealed_by"] = json!("open_only");
    e["exp"] = json!(T0 + 600);
    e["deadline"] = json!(T0 + 3600);
    e["round"] = json!(1);
    valid.push(e);

    let tok = valid[0]["token"].as_str().unwrap().to_string();
    let raw = URL_SAFE_NO_PAD.decode(&tok).unwrap();
    let reenc = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut m = raw.clone();
        f(&mut m);
        URL_SAFE_NO_PAD.encode(m)
    };
    // A token whose length leaves spare bits in its last character.
    let spare_tok = valid
        .iter()
        .map(|e| e["token"].as_str().unwrap().to_string())
        .find(|t| t.len() % 4 != 0)
        .unwrap();
    let alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let last = spare_tok.chars().last().unwrap();
    let idx = alphabet.find(last).unwrap();
    let non_canonical = format!(
        "{}{}",
        &spare_tok[..spare_tok.len() - 1],
        &alphabet[idx ^ 1..(idx ^ 1) + 1]
    );

    let mut deadline_entry =
        valid_entry("deadline_source", json!({"late": true}), 0x08, base.clone());
    deadline_entry["exp_override"] = json!(T0 + 7200);
    let deadline_tok = seal_entry(&s, &deadline_entry);

    let kid = s.keyring().sealing_kid().to_be_bytes();
    let b = binding(&base);
    let bad_format = raw_token(kid, [0x09; 24], &claims_plaintext(2, &b, b"{}"));
    let trailing_ws = raw_token(kid, [0x0a; 24], &claims_plaintext(1, &b, b"{} "));
    let trailing_json = raw_token(kid, [0x0b; 24], &claims_plaintext(1, &b, b"{}{}"));
    let short_claims = raw_token(kid, [0x0c; 24], &[1, 2, 3]);
    let hand_made_ok = raw_token(
        kid,
        [0x0d; 24],
        &claims_plaintext(1, &b, br#"{"hand":"made"}"#),
    );

    let inv = |name: &str, token: String, now: u64, reason: &str, lapsed: bool| {
        json!({"name": name, "token": token, "now": now, "binding": base.clone(),
               "reason": reason, "expired_but_authentic": lapsed})
    };
    let inv_b = |name: &str, b: Value, reason: &str| {
        json!({"name": name, "token": tok.clone(), "now": T0, "binding": b,
               "reason": reason, "expired_but_authentic": false})
    };
    let issued_tok = valid
        .iter()
        .find(|e| e["name"] == "issuer_subject_principal")
        .map(|e| e["token"].as_str().unwrap().to_string())
        .unwrap();
    let inv_p = |name: &str, b: Value| {
        json!({"name": name, "token": issued_tok.clone(), "now": T0, "binding": b,
               "reason": "principal", "expired_but_authentic": false})
    };
    let invalid = vec![
        inv(
            "bad_base64_character",
            format!("{}!{}", &tok[..10], &tok[11..]),
            T0,
            "malformed",
            false,
        ),
        inv(
            "standard_alphabet",
            tok.replacen(|c: char| c.is_ascii_alphanumeric(), "+", 1),
            T0,
            "malformed",
            false,
        ),
        inv("padding", format!("{tok}="), T0, "malformed", false),
        inv("whitespace", format!("{tok}\n"), T0, "malformed", false),
        inv(
            "non_canonical_trailing_bits",
            non_canonical,
            T0,
            "malformed",
            false,
        ),
        inv("too_long", "A".repeat(1025), T0, "too_large", false),
        inv("too_short", tok[..59].to_string(), T0, "malformed", false),
        inv("empty", String::new(), T0, "malformed", false),
        inv(
            "wrong_version",
            reenc(&|m| m[0] = 0x02),
            T0,
            "unknown_version",
            false,
        ),
        inv(
            "unknown_kid",
            reenc(&|m| m[1..5].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef])),
            T0,
            "unknown_key",
            false,
        ),
        inv(
            "flipped_tag",
            reenc(&|m| *m.last_mut().unwrap() ^= 0x01),
            T0,
            "tag",
            false,
        ),
        inv(
            "flipped_ciphertext",
            reenc(&|m| m[40] ^= 0x20),
            T0,
            "tag",
            false,
        ),
        inv("flipped_nonce", reenc(&|m| m[5] ^= 0x80), T0, "tag", false),
        inv(
            "kid_of_other_ring_key",
            reenc(&|m| {
                m[1..5].copy_from_slice(
                    &Key::from_secret(&OPEN_ONLY_SECRET)
                        .unwrap()
                        .kid()
                        .to_be_bytes(),
                )
            }),
            T0,
            "tag",
            false,
        ),
        inv(
            "truncated_tag",
            reenc(&|m| {
                m.pop();
            }),
            T0,
            "tag",
            false,
        ),
        inv("extended", reenc(&|m| m.push(0)), T0, "tag", false),
        inv("claims_format_2", bad_format, T0, "decode", false),
        inv(
            "state_trailing_whitespace",
            trailing_ws,
            T0,
            "decode",
            false,
        ),
        inv("state_trailing_value", trailing_json, T0, "decode", false),
        inv("claims_too_short", short_claims, T0, "decode", false),
        inv("expired", tok.clone(), T0 + 600 + 60 + 1, "expired", true),
        inv(
            "far_future",
            tok.clone(),
            T0 + 600 - 86_400 - 60 - 1,
            "far_future",
            false,
        ),
        inv(
            "deadline_passed",
            deadline_tok,
            T0 + 3600 + 60 + 1,
            "deadline",
            true,
        ),
        inv_b(
            "wrong_method",
            with(base.clone(), &["method"], json!("prompts/get")),
            "binding",
        ),
        inv_b(
            "wrong_target",
            with(base.clone(), &["target"], json!("undeploy")),
            "binding",
        ),
        inv_b(
            "wrong_argument",
            with(base.clone(), &["arguments", "replicas"], json!(4)),
            "binding",
        ),
        inv_b(
            "wrong_protocol_version",
            with(base.clone(), &["protocol_version"], json!("2025-11-25")),
            "binding",
        ),
        inv_b(
            "wrong_subject",
            with(base.clone(), &["principal", "subject"], json!("bob")),
            "principal",
        ),
        inv_b(
            "wrong_issuer",
            with(
                base.clone(),
                &["principal", "issuer"],
                json!("https://evil.example"),
            ),
            "principal",
        ),
        inv_b(
            "wrong_client_id",
            with(base.clone(), &["principal", "client_id"], json!("app-2")),
            "principal",
        ),
        // The issuer+subject state, presented by the same subject from another
        // issuer, or without an issuer: another principal.
        inv_p(
            "same_subject_other_issuer",
            with(
                issuer_subject.clone(),
                &["principal", "issuer"],
                json!("https://evil.example"),
            ),
        ),
        inv_p("same_subject_without_issuer", subject_only.clone()),
        inv_p("same_subject_and_issuer_with_client_id", base.clone()),
        inv_b(
            "wrong_audience",
            with(base.clone(), &["audience"], json!("https://other.example")),
            "audience",
        ),
    ];
    json!({
        "description": "mrtr sealed requestState, token format v1 (version byte 0x01: XAES-256-GCM). \
                        Keys are the 32-byte secrets below, hex. Binding inputs are given as JSON; \
                        arguments null means absent. Times are Unix seconds.",
        "sealing_key": hex(&SEALING_SECRET),
        "open_only_key": hex(&OPEN_ONLY_SECRET),
        "config": {"ttl": 600, "max_ttl": 86400, "flow_lifetime": 3600, "clock_skew": 60,
                   "max_token_len": 1024, "max_plaintext": 600},
        "valid": valid,
        "hand_made": {"token": hand_made_ok, "binding": base, "now": T0, "state": {"hand": "made"}},
        "invalid": invalid,
    })
}

#[test]
fn vectors_hold() {
    let file: Value = serde_json::from_str(&std::fs::read_to_string(PATH).unwrap()).unwrap();
    let s = sealer();
    let valid = file["valid"].as_array().unwrap();
    assert!(valid.len() >= 6);
    for e in valid {
        let name = e["name"].as_str().unwrap();
        let token = e["token"].as_str().unwrap();
        let sealer_for_entry = if e["sealed_by"] == "open_only" {
            Sealer::new(
                Keyring::new(Key::from_secret(&OPEN_ONLY_SECRET).unwrap()),
                config(),
            )
        } else {
            s.clone()
        };
        assert_eq!(
            seal_entry(&sealer_for_entry, e),
            token,
            "{name}: sealing drifted"
        );
        let now = Timestamp::from_unix_secs(e["iat"].as_u64().unwrap());
        let v = s
            .open::<Value>(&UntrustedState::new(token), &binding(&e["binding"]), now)
            .unwrap_or_else(|err| panic!("{name}: {:?}", err.reason()));
        assert_eq!(v.state(), &e["state"], "{name}");
        assert_eq!(v.round() as u64, e["round"].as_u64().unwrap(), "{name}");
        assert_eq!(
            v.expires_at().unix_secs(),
            e["exp"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(
            v.deadline().unix_secs(),
            e["deadline"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(hex(&v.flow_id()), e["flow_id"].as_str().unwrap(), "{name}");
    }
    // A token built by hand from the documented layout opens: the layout comment is true.
    let h = &file["hand_made"];
    let v = s
        .open::<Value>(
            &UntrustedState::new(h["token"].as_str().unwrap()),
            &binding(&h["binding"]),
            Timestamp::from_unix_secs(h["now"].as_u64().unwrap()),
        )
        .unwrap();
    assert_eq!(v.state(), &h["state"]);

    let invalid = file["invalid"].as_array().unwrap();
    assert!(invalid.len() >= 12);
    for e in invalid {
        let name = e["name"].as_str().unwrap();
        let err = s
            .open::<Value>(
                &UntrustedState::new(e["token"].as_str().unwrap()),
                &binding(&e["binding"]),
                Timestamp::from_unix_secs(e["now"].as_u64().unwrap()),
            )
            .map(|_| ())
            .expect_err(name);
        assert_eq!(
            err.reason().as_str(),
            e["reason"].as_str().unwrap(),
            "{name}"
        );
        assert_eq!(err.to_string(), "invalid or expired requestState", "{name}");
        assert_eq!(
            err.is_expired_but_authentic(),
            e["expired_but_authentic"].as_bool().unwrap(),
            "{name}"
        );
    }
}

#[test]
fn vector_file_is_what_the_generator_makes() {
    let file: Value = serde_json::from_str(&std::fs::read_to_string(PATH).unwrap()).unwrap();
    assert_eq!(
        file,
        build(),
        "rerun the generator only for a deliberate format change"
    );
}

#[test]
#[ignore = "writes tests/vectors/seal_vectors.json when MRTR_WRITE_VECTORS=1"]
fn regenerate_vectors() {
    let text = serde_json::to_string_pretty(&build()).unwrap() + "\n";
    if std::env::var_os("MRTR_WRITE_VECTORS").is_some() {
        std::fs::write(PATH, text).unwrap();
    } else {
        println!("{text}");
    }
}

/// `enc(x₁..xₙ)` of the binding doc: `u64le(n) ‖ for each: u64le(len(xᵢ)) ‖ xᵢ`.
fn pae(pieces: &[&[u8]]) -> Vec<u8> {
    let mut out = (pieces.len() as u64).to_le_bytes().to_vec();
    for p in pieces {
        out.extend_from_slice(&(p.len() as u64).to_le_bytes());
        out.extend_from_slice(p);
    }
    out
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes).into()
}

/// The three binding digests from the documented formula (`Binding::new`'s doc),
/// computed here with SHA-256 alone, not through the crate.
fn documented_digests(b: &Value) -> [[u8; 32]; 3] {
    let args = match &b["arguments"] {
        Value::Null => "{}".to_string(),
        a => serde_json::to_string(&sorted(a)).unwrap(),
    };
    let a = sha256(&pae(&[b"mrtr/binding/v1/arguments", args.as_bytes()]));
    let s = |k: &str| b[k].as_str().unwrap().as_bytes();
    let request = sha256(&pae(&[
        b"mrtr/binding/v1/request",
        s("method"),
        s("target"),
        &a,
        s("protocol_version"),
    ]));
    let field = |k: &str| match b["principal"][k].as_str() {
        None => vec![0u8],
        Some(v) => [&[1u8][..], v.as_bytes()].concat(),
    };
    let (sub, iss, cid) = (field("subject"), field("issuer"), field("client_id"));
    let principal = sha256(&pae(&[b"mrtr/binding/v1/principal", &sub, &iss, &cid]));
    let audience = sha256(&pae(&[b"mrtr/binding/v1/audience", s("audience")]));
    [request, principal, audience]
}

/// Each form of principal (anonymous, subject only, issuer and subject, all three)
/// has a vector, and each vector's token is what the documented layout gives from
/// the documented digests, sealed with the bare primitive: the vector is checked
/// against the format's description, not only against what `Sealer` makes today.
#[test]
fn principal_vectors_match_the_documented_layout() {
    let file: Value = serde_json::from_str(&std::fs::read_to_string(PATH).unwrap()).unwrap();
    let valid = file["valid"].as_array().unwrap();
    let entry = |name: &str| {
        valid
            .iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("no vector {name}"))
    };
    for (name, principal) in [
        ("null_state", json!({})),
        ("subject_only_principal", json!({"subject": "alice"})),
        (
            "issuer_subject_principal",
            json!({"subject": "alice", "issuer": "https://idp.example"}),
        ),
        (
            "object_state",
            json!({"subject": "alice", "issuer": "https://idp.example", "client_id": "app-1"}),
        ),
    ] {
        let e = entry(name);
        assert_eq!(e["binding"]["principal"], principal, "{name}");
        let [request, principal, audience] = documented_digests(&e["binding"]);
        let b = binding(&e["binding"]);
        assert_eq!(b.principal_digest(), &principal, "{name}: principal digest");
        assert_eq!(b.request_digest(), &request, "{name}: request digest");
        assert_eq!(b.audience_digest(), &audience, "{name}: audience digest");
        // The claims plaintext of the documented layout, sealed by hand.
        let mut pt = vec![1u8];
        for k in ["iat", "exp", "deadline"] {
            pt.extend_from_slice(&e[k].as_u64().unwrap().to_be_bytes());
        }
        pt.extend_from_slice(&(e["round"].as_u64().unwrap() as u32).to_be_bytes());
        pt.extend_from_slice(&unhex::<16>(e["flow_id"].as_str().unwrap()));
        for d in [&request, &principal, &audience] {
            pt.extend_from_slice(&d[..16]);
        }
        pt.extend_from_slice(&serde_json::to_vec(&sorted(&e["state"])).unwrap());
        let token = URL_SAFE_NO_PAD
            .decode(e["token"].as_str().unwrap())
            .unwrap();
        let kid: [u8; 4] = token[1..5].try_into().unwrap();
        let by_hand = raw_token(kid, unhex(e["nonce"].as_str().unwrap()), &pt);
        assert_eq!(by_hand, e["token"].as_str().unwrap(), "{name}: token");
    }
    // The issuer+subject state is refused to the same subject of another issuer
    // and to the bare subject.
    let invalid = file["invalid"].as_array().unwrap();
    for name in ["same_subject_other_issuer", "same_subject_without_issuer"] {
        let e = invalid.iter().find(|e| e["name"] == name).unwrap();
        assert_eq!(
            e["token"],
            entry("issuer_subject_principal")["token"],
            "{name}"
        );
        assert_eq!(e["reason"], "principal", "{name}");
    }
}
