//! What the engine seals between rounds (the `S` of `Claims<S>`).
//!
//! Field names are one letter: the state travels in every retry, and each byte
//! is sealed, base64-encoded and sent twice. Unknown fields are refused, so a
//! state from a different format never half-parses.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::seal::hash_canonical;
use crate::wire::InputKind;

/// A question as issued: its kind and a digest of the exact request sent
/// (`requestedSchema` included), so a reworded question is a new question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Asked {
    #[serde(rename = "k")]
    pub(crate) kind: InputKind,
    #[serde(rename = "h")]
    pub(crate) digest: String,
}

/// An accepted answer, kept for later rounds with the question it answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SealedAnswer {
    #[serde(rename = "k")]
    pub(crate) kind: InputKind,
    #[serde(rename = "h")]
    pub(crate) digest: String,
    #[serde(rename = "v")]
    pub(crate) value: Value,
}

/// The engine's sealed state.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FlowState {
    /// Questions issued by the round that sealed this state.
    #[serde(rename = "q", default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) asked: BTreeMap<String, Asked>,
    /// Answers accumulated over earlier rounds.
    #[serde(rename = "a", default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) answers: BTreeMap<String, SealedAnswer>,
    /// Results of `once` steps already carried out.
    #[serde(rename = "o", default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) once: BTreeMap<String, Value>,
    /// The handler's own data.
    #[serde(rename = "d", default, skip_serializing_if = "Option::is_none")]
    pub(crate) data: Option<Value>,
}

/// The digest of a question: SHA-256 over a domain label and the canonical JSON
/// of the input request (`request`, its JSON form `{method, params}`), truncated
/// to 128 bits, base64url.
pub(crate) fn question_digest(request: &Value) -> String {
    let mut h = Sha256::new();
    h.update(b"mrtr/question/v1\0");
    hash_canonical(&mut h, request);
    let d = h.finalize();
    URL_SAFE_NO_PAD.encode(&d[..16])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Engine;
    use crate::seal::{Key, Keyring};
    use crate::wire::InputRequest;
    use serde_json::json;

    #[test]
    fn the_question_digest_is_pinned_and_the_engines_memo_gives_the_same() {
        let name = json!({"method": "elicitation/create", "params": {"message": "What is your name?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string", "title": "Name"}},
                "required": ["name"]}}});
        // States in flight carry this digest: it must not drift between versions.
        // (Checked independently: SHA-256 over the label and Python's sorted compact JSON.)
        assert_eq!(question_digest(&name), "Svzue_R50BAhSijhmeFwJw");
        let engine = Engine::new(
            Keyring::new(Key::from_secret(&[7; 32]).unwrap()),
            "https://mcp.example",
        );
        let swapped = json!({"method": "elicitation/create", "params": {"message": "m",
            "requestedSchema": {"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "boolean"}}}}});
        let asks = [
            name,
            swapped.clone(),
            json!({"method": "elicitation/create", "params": {"message": "m",
                "requestedSchema": {"type": "object", "properties": {"a": {"type": "boolean"}, "b": {"type": "string"}}}}}),
            json!({"method": "elicitation/create", "params": {"mode": "url", "message": "m", "url": "https://x.example"}}),
            json!({"method": "roots/list"}),
        ];
        for _ in 0..2 {
            for a in &asks {
                let ask = InputRequest::from_value(a).unwrap();
                assert_eq!(
                    engine.question_digest(&ask),
                    question_digest(&ask.to_value()),
                    "{a}"
                );
            }
        }
        // The digest is of the canonical JSON: the order of the fields does not change it.
        let order = |v: &Value| engine.question_digest(&InputRequest::from_value(v).unwrap());
        assert_eq!(order(&asks[1]), order(&asks[2]));
    }
}
