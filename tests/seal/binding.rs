//! A state opens only for the request, principal and audience it was sealed for.

use mrtr::Timestamp;
use mrtr::principal::Principal;
use mrtr::seal::{
    Binding, BindingInput, Claims, Key, Keyring, RejectReason, SealConfig, Sealer, UntrustedState,
};
use serde_json::{Value, json};

fn now() -> Timestamp {
    Timestamp::from_unix_secs(1_800_000_000)
}

fn sealer() -> Sealer {
    Sealer::new(
        Keyring::new(Key::from_secret(&[0x42; 32]).unwrap()),
        SealConfig::default(),
    )
}

fn alice() -> Principal {
    Principal::subject("alice")
        .with_issuer("https://idp.example")
        .with_client_id("app-1")
}

fn args() -> Value {
    json!({"env": "prod", "replicas": 3, "tags": ["a", "b"], "opts": {"force": false, "ttl": 1.5}})
}

fn base<'a>(p: &'a Principal, a: &'a Value) -> BindingInput<'a> {
    BindingInput {
        method: "tools/call",
        target: "deploy",
        arguments: Some(a),
        principal: p,
        audience: "https://mcp.example",
        protocol_version: "2026-07-28",
    }
}

fn sealed_token(s: &Sealer) -> UntrustedState {
    let (p, a) = (alice(), args());
    let c = Claims::first_round(
        Binding::new(&base(&p, &a)),
        now(),
        s.config(),
        json!({"ok": 1}),
    );
    UntrustedState::new(s.seal(&c).unwrap())
}

fn check(s: &Sealer, t: &UntrustedState, input: &BindingInput<'_>) -> Result<(), RejectReason> {
    s.open::<Value>(t, &Binding::new(input), now())
        .map(|_| ())
        .map_err(|e| {
            assert!(!e.is_expired_but_authentic());
            e.reason()
        })
}

#[test]
fn same_request_opens() {
    let s = sealer();
    let t = sealed_token(&s);
    let (p, a) = (alice(), args());
    assert_eq!(check(&s, &t, &base(&p, &a)), Ok(()));
}

#[test]
fn reordered_argument_keys_still_open() {
    let s = sealer();
    let t = sealed_token(&s);
    let p = alice();
    let text = r#"{"tags":["a","b"],"opts":{"ttl":1.5,"force":false},"replicas":3,"env":"prod"}"#;
    let reordered: Value = serde_json::from_str(text).unwrap();
    assert_eq!(check(&s, &t, &base(&p, &reordered)), Ok(()));
    let spaced: Value = serde_json::from_str(&format!("  {}  ", text.replace(',', " , "))).unwrap();
    assert_eq!(check(&s, &t, &base(&p, &spaced)), Ok(()));
}

#[test]
fn each_request_component_matters() {
    let s = sealer();
    let t = sealed_token(&s);
    let (p, a) = (alice(), args());
    let b = base(&p, &a);
    for input in [
        BindingInput {
            method: "prompts/get",
            ..b
        },
        BindingInput {
            target: "Deploy",
            ..b
        },
        BindingInput {
            target: "deploy ",
            ..b
        },
        BindingInput {
            protocol_version: "2025-11-25",
            ..b
        },
        BindingInput {
            arguments: None,
            ..b
        },
    ] {
        assert_eq!(check(&s, &t, &input), Err(RejectReason::Binding));
    }
}

#[test]
fn each_argument_value_matters() {
    let s = sealer();
    let t = sealed_token(&s);
    let p = alice();
    let variants = [
        json!({"env": "staging", "replicas": 3, "tags": ["a", "b"], "opts": {"force": false, "ttl": 1.5}}),
        json!({"env": "prod", "replicas": 4, "tags": ["a", "b"], "opts": {"force": false, "ttl": 1.5}}),
        json!({"env": "prod", "replicas": 3.0, "tags": ["a", "b"], "opts": {"force": false, "ttl": 1.5}}),
        json!({"env": "prod", "replicas": "3", "tags": ["a", "b"], "opts": {"force": false, "ttl": 1.5}}),
        json!({"env": "prod", "replicas": 3, "tags": ["b", "a"], "opts": {"force": false, "ttl": 1.5}}),
        json!({"env": "prod", "replicas": 3, "tags": ["a"], "opts": {"force": false, "ttl": 1.5}}),
        json!({"env": "prod", "replicas": 3, "tags": ["a", "b"], "opts": {"force": true, "ttl": 1.5}}),
        json!({"env": "prod", "replicas": 3, "tags": ["a", "b"], "opts": {"force": false, "ttl": 2.5}}),
        json!({"env": "prod", "replicas": 3, "tags": ["a", "b"], "opts": {"force": false}}),
        json!({"env": "prod", "replicas": 3, "tags": ["a", "b"], "opts": {"force": false, "ttl": 1.5}, "x": null}),
        json!({"env": "prod", "replicas": 3, "tags": ["a", "b"], "opts": {"force": false, "ttl": 1.5, "Force": false}}),
    ];
    for v in &variants {
        assert_eq!(
            check(&s, &t, &base(&p, v)),
            Err(RejectReason::Binding),
            "{v}"
        );
    }
}

#[test]
fn each_principal_field_matters() {
    let s = sealer();
    let t = sealed_token(&s);
    let a = args();
    let others = [
        Principal::subject("bob")
            .with_issuer("https://idp.example")
            .with_client_id("app-1"),
        Principal::subject("alice")
            .with_issuer("https://other.example")
            .with_client_id("app-1"),
        Principal::subject("alice")
            .with_issuer("https://idp.example")
            .with_client_id("app-2"),
        Principal::subject("alice").with_issuer("https://idp.example"),
        Principal::subject("alice").with_client_id("app-1"),
        Principal::anonymous(),
    ];
    for p in &others {
        assert_eq!(
            check(&s, &t, &base(p, &a)),
            Err(RejectReason::Principal),
            "{p:?}"
        );
    }
}

#[test]
fn audience_matters() {
    let s = sealer();
    let t = sealed_token(&s);
    let (p, a) = (alice(), args());
    let input = BindingInput {
        audience: "https://mcp.example/",
        ..base(&p, &a)
    };
    assert_eq!(check(&s, &t, &input), Err(RejectReason::Audience));
}

#[test]
fn first_failing_component_is_reported() {
    let s = sealer();
    let t = sealed_token(&s);
    let a = args();
    let bob = Principal::subject("bob");
    let all_wrong = BindingInput {
        target: "x",
        audience: "y",
        ..base(&bob, &a)
    };
    assert_eq!(check(&s, &t, &all_wrong), Err(RejectReason::Binding));
    let p_and_aud = BindingInput {
        audience: "y",
        ..base(&bob, &a)
    };
    assert_eq!(check(&s, &t, &p_and_aud), Err(RejectReason::Principal));
    let c = s.reject_counts();
    assert_eq!(
        (c.get(RejectReason::Binding), c.get(RejectReason::Principal)),
        (1, 1)
    );
}

#[test]
fn absent_and_empty_arguments_bind_alike() {
    let s = sealer();
    let p = alice();
    let empty = json!({});
    let without = BindingInput {
        arguments: None,
        ..base(&p, &empty)
    };
    let c = Claims::first_round(Binding::new(&without), now(), s.config(), 0);
    let t = UntrustedState::new(s.seal(&c).unwrap());
    assert_eq!(check(&s, &t, &base(&p, &empty)), Ok(()));
    assert_eq!(check(&s, &t, &without), Ok(()));
}
