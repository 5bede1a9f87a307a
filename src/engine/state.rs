//! What the engine seals between rounds (the `S` of `Claims<S>`).
//!
//! Field names are one letter: the state travels in every retry, and each byte
//! is sealed, base64-encoded and sent twice. Unknown fields are refused, so a
//! state from a different format never half-parses.

use std::collections::BTreeMap;
use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
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
    pub(crate) digest: QuestionDigest,
}

/// An accepted answer, kept for later rounds with the question it answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SealedAnswer {
    #[serde(rename = "k")]
    pub(crate) kind: InputKind,
    #[serde(rename = "h")]
    pub(crate) digest: QuestionDigest,
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
    /// The W3C `traceparent` of the span the flow's first round ran in, which
    /// every later round's span links to: sealed, so a client cannot forge
    /// the link.
    #[serde(rename = "t", default, skip_serializing_if = "Option::is_none")]
    pub(crate) trace: Option<String>,
}

/// The digest of a question: SHA-256 over a domain label and the canonical JSON
/// of the input request (its JSON form `{method, params}`), truncated to 128 bits.
/// Sealed as its 22 characters of unpadded base64url; only that form parses.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct QuestionDigest([u8; 16]);

impl QuestionDigest {
    /// The digest of `request`, the JSON form of an input request.
    pub(crate) fn of(request: &Value) -> Self {
        let mut h = Sha256::new();
        h.update(b"mrtr/question/v1\0");
        hash_canonical(&mut h, request);
        let d = h.finalize();
        let mut out = [0; 16];
        out.copy_from_slice(&d[..16]);
        Self(out)
    }

    /// The unpadded base64url form, as sealed.
    fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.0)
    }
}

impl fmt::Debug for QuestionDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "QuestionDigest({})", self.encode())
    }
}

impl Serialize for QuestionDigest {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut buf = [0u8; 22];
        let n = URL_SAFE_NO_PAD
            .encode_slice(self.0, &mut buf)
            .map_err(serde::ser::Error::custom)?;
        let text = std::str::from_utf8(&buf[..n]).map_err(serde::ser::Error::custom)?;
        s.serialize_str(text)
    }
}

impl<'de> Deserialize<'de> for QuestionDigest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = QuestionDigest;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a question digest: 22 characters of unpadded base64url")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<QuestionDigest, E> {
                let bad = || E::invalid_value(serde::de::Unexpected::Str("…"), &self);
                if v.len() != 22 {
                    return Err(bad());
                }
                // 22 characters hold 16 bytes and 4 bits, which must be zero (the
                // decoder refuses any other): one encoding per digest.
                let mut out = [0u8; 18];
                match URL_SAFE_NO_PAD.decode_slice(v, &mut out) {
                    Ok(16) => {
                        let mut d = [0; 16];
                        d.copy_from_slice(&out[..16]);
                        Ok(QuestionDigest(d))
                    }
                    _ => Err(bad()),
                }
            }
        }
        d.deserialize_str(Visitor)
    }
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
        assert_eq!(QuestionDigest::of(&name).encode(), "Svzue_R50BAhSijhmeFwJw");
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
                    QuestionDigest::of(&ask.to_value()),
                    "{a}"
                );
            }
        }
        // The digest is of the canonical JSON: the order of the fields does not change it.
        let order = |v: &Value| engine.question_digest(&InputRequest::from_value(v).unwrap());
        assert_eq!(order(&asks[1]), order(&asks[2]));
    }

    #[test]
    fn a_question_digest_is_sealed_as_its_base64url_text_and_only_that_parses() {
        let d = QuestionDigest::of(&json!({"method": "roots/list"}));
        let text = serde_json::to_value(d).unwrap();
        assert_eq!(text, Value::String(d.encode()));
        assert_eq!(d.encode().len(), 22);
        assert_eq!(serde_json::from_value::<QuestionDigest>(text).unwrap(), d);
        let pinned: QuestionDigest = serde_json::from_str(r#""Svzue_R50BAhSijhmeFwJw""#).unwrap();
        assert_eq!(pinned.encode(), "Svzue_R50BAhSijhmeFwJw");
        // An escaped string is the same text.
        let escaped: QuestionDigest =
            serde_json::from_str(r#""Svzue\u005fR50BAhSijhmeFwJw""#).unwrap();
        assert_eq!(escaped, pinned);
        for bad in [
            json!(""),
            json!("Svzue_R50BAhSijhmeFwJ"),   // 21 characters
            json!("Svzue_R50BAhSijhmeFwJwA"), // 23
            json!("Svzue_R50BAhSijhmeFwJx"),  // the last 4 bits not zero
            json!("Svzue+R50BAhSijhmeFwJw"),  // standard, not url-safe, alphabet
            json!("Svzue_R50BAhSijhmeFw=="),  // padded
            json!(12),
            json!(null),
        ] {
            assert!(
                serde_json::from_value::<QuestionDigest>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }
}
