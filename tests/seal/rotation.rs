//! Key rotation in three phases, as the Keyring docs describe it.

use mrtr::Timestamp;
use mrtr::principal::Principal;
use mrtr::seal::{
    Binding, BindingInput, Claims, Keyring, RejectReason, SealConfig, Sealer, UntrustedState,
    generate_key_string,
};

fn now() -> Timestamp {
    Timestamp::from_unix_secs(1_800_000_000)
}

fn binding() -> Binding {
    let p = Principal::subject("alice");
    Binding::new(&BindingInput {
        method: "prompts/get",
        target: "summary",
        arguments: Some(&serde_json::json!({"lang": "en"})),
        principal: &p,
        audience: "https://mcp.example",
        protocol_version: "2026-07-28",
    })
}

fn sealer(keys: &str) -> Sealer {
    Sealer::new(Keyring::parse_keys(keys).unwrap(), SealConfig::default())
}

fn seal(s: &Sealer, v: &str) -> UntrustedState {
    UntrustedState::new(
        s.seal(&Claims::first_round(binding(), now(), s.config(), v))
            .unwrap(),
    )
}

fn opens(s: &Sealer, t: &UntrustedState) -> Result<String, RejectReason> {
    s.open::<String>(t, &binding(), now())
        .map(|v| v.into_inner().into_state())
        .map_err(|e| e.reason())
}

#[test]
fn three_phase_rotation() {
    let (old, new) = (generate_key_string(), generate_key_string());

    // Phase 0: only the old key.
    let p0 = sealer(&old);
    let t_old = seal(&p0, "old");

    // Phase 1: the new key is added open-only everywhere; the old key still seals.
    let p1 = sealer(&format!("{old},{new}"));
    assert_eq!(p1.keyring().sealing_kid(), p0.keyring().sealing_kid());
    assert_eq!(opens(&p1, &t_old), Ok("old".into()));
    let t1 = seal(&p1, "one");
    assert_eq!(
        opens(&p0, &t1),
        Ok("one".into()),
        "phase-0 instances still open phase-1 tokens"
    );

    // Phase 2: the new key seals, the old one only opens.
    let p2 = sealer(&format!("{new},{old}"));
    assert_ne!(p2.keyring().sealing_kid(), p0.keyring().sealing_kid());
    let t_new = seal(&p2, "new");
    assert_eq!(opens(&p2, &t_old), Ok("old".into()));
    assert_eq!(opens(&p2, &t_new), Ok("new".into()));
    assert_eq!(
        opens(&p1, &t_new),
        Ok("new".into()),
        "phase-1 instances open phase-2 tokens"
    );

    // Phase 3: the old key is removed.
    let p3 = sealer(&new);
    assert_eq!(opens(&p3, &t_old), Err(RejectReason::UnknownKey));
    assert_eq!(opens(&p3, &t1), Err(RejectReason::UnknownKey));
    assert_eq!(opens(&p3, &t_new), Ok("new".into()));
    assert_eq!(p3.reject_counts().get(RejectReason::UnknownKey), 2);
}

#[test]
fn rotation_keeps_binding_checks() {
    // Regression class: rotation paths that forget the binding (dream#432-style).
    let (old, new) = (generate_key_string(), generate_key_string());
    let t_old = seal(&sealer(&old), "old");
    let p2 = sealer(&format!("{new},{old}"));
    let bob = Principal::subject("bob");
    let other = Binding::new(&BindingInput {
        method: "prompts/get",
        target: "summary",
        arguments: Some(&serde_json::json!({"lang": "en"})),
        principal: &bob,
        audience: "https://mcp.example",
        protocol_version: "2026-07-28",
    });
    let e = p2.open::<String>(&t_old, &other, now()).unwrap_err();
    assert_eq!(e.reason(), RejectReason::Principal);
}

#[test]
fn ephemeral_rings_do_not_share() {
    let a = Sealer::new(Keyring::ephemeral(), SealConfig::default());
    let b = Sealer::new(Keyring::ephemeral(), SealConfig::default());
    let t = seal(&a, "x");
    assert_eq!(opens(&a, &t), Ok("x".into()));
    assert_eq!(opens(&b, &t), Err(RejectReason::UnknownKey));
}
