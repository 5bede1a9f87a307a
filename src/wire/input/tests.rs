//! Unit tests of `input`.

use super::*;
use serde_json::json;

fn serde_error<T: serde::de::DeserializeOwned + std::fmt::Debug>(v: Value) -> String {
    field_error(&serde_json::from_value::<T>(v).unwrap_err())
}

#[test]
fn field_error_keeps_field_names_and_drops_values() {
    assert_eq!(
        serde_error::<CreateMessageParams>(json!({"messages": []})),
        "missing field `maxTokens`"
    );
    for (v, value) in [
        (
            json!({"messages": [], "maxTokens": -987_654_321}),
            "987654321",
        ),
        (json!({"messages": [], "maxTokens": 12.75}), "12.75"),
        (json!({"messages": [], "maxTokens": "SECRET-1"}), "SECRET-1"),
        (
            json!({"messages": [], "maxTokens": 1, "stopSequences": [424_242]}),
            "424242",
        ),
        (
            json!({"messages": [], "maxTokens": 1, "systemPrompt": true}),
            "true",
        ),
    ] {
        let msg = serde_error::<CreateMessageParams>(v);
        assert!(!msg.contains(value), "{msg}");
        assert!(msg.starts_with("invalid "), "{msg}");
    }
    let msg = serde_error::<Root>(json!({"uri": 31_337}));
    assert!(!msg.contains("31337"), "{msg}");
}

#[test]
fn direct_deserialization_checks_answers_too() {
    assert!(
        serde_json::from_value::<ListRootsResult>(json!({"roots": [{"uri": "https://x"}]}))
            .is_err()
    );
    assert!(
        serde_json::from_value::<ListRootsResult>(json!({"roots": [{"uri": "file:///x"}]})).is_ok()
    );
    for bad in [
        json!({"role": "system", "content": {"type": "text", "text": "x"}, "model": "m"}),
        json!({"role": "assistant", "content": "x", "model": "m"}),
        json!({"role": "assistant", "content": [{"text": "x"}], "model": "m"}),
    ] {
        assert!(
            serde_json::from_value::<CreateMessageResult>(bad.clone()).is_err(),
            "{bad}"
        );
    }
    let ok = json!({"role": "assistant", "content": [{"type": "text", "text": "x"}], "model": "m",
                    "stopReason": "endTurn", "_meta": {"k": 1}});
    let r: CreateMessageResult = serde_json::from_value(ok.clone()).unwrap();
    assert_eq!(serde_json::to_value(&r).unwrap(), ok);
}

#[test]
fn input_kind_names() {
    for (k, method, name) in [
        (
            InputKind::ElicitForm,
            "elicitation/create",
            "elicitation/form",
        ),
        (
            InputKind::ElicitUrl,
            "elicitation/create",
            "elicitation/url",
        ),
        (InputKind::Sampling, "sampling/createMessage", "sampling"),
        (InputKind::Roots, "roots/list", "roots"),
    ] {
        assert_eq!(k.method(), method);
        assert_eq!(k.as_str(), name);
        assert_eq!(serde_json::to_value(k).unwrap(), json!(name));
    }
}

#[test]
fn user_text_builds_a_valid_sampling_request() {
    let p = CreateMessageParams::user_text("hi", 5);
    assert!(p.validate().is_ok());
    let r = InputRequest::CreateMessage(p);
    assert_eq!(
        r.to_value(),
        json!({"method": "sampling/createMessage", "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
            "maxTokens": 5}})
    );
    assert_eq!(InputRequest::from_value(&r.to_value()).unwrap(), r);
}

#[test]
fn text_joins_text_blocks_only() {
    let r = CreateMessageResult {
        role: "assistant".into(),
        content: json!([{"type": "text", "text": "a"}, {"type": "image", "data": "", "mimeType": "image/png"}, {"type": "text", "text": "b"}]),
        model: "m".into(),
        stop_reason: None,
        meta: None,
    };
    assert_eq!(r.text(), "ab");
}
