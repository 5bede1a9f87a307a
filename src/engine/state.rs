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
use crate::wire::{InputKind, InputRequest};

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
/// of the input request, truncated to 128 bits, base64url.
pub(crate) fn question_digest(request: &InputRequest) -> String {
    let mut h = Sha256::new();
    h.update(b"mrtr/question/v1\0");
    hash_canonical(&mut h, &request.to_value());
    let d = h.finalize();
    URL_SAFE_NO_PAD.encode(&d[..16])
}
