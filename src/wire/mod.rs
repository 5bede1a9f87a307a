//! The MCP 2026-07-28 wire shapes that MRTR touches, as serde types.
//!
//! Everything here follows the schema of the MCP 2026-07-28 revision and its
//! Multi Round-Trip Requests page. Types reject on parse what the schema forbids (a form
//! elicitation without `requestedSchema`, a url elicitation without `url`,
//! sampling without `maxTokens`, a non-primitive form property) and preserve
//! what it leaves open (`_meta`, unknown `resultType` values, extension
//! capabilities).

/// Serialize and Deserialize through the type's own `to_value` and `from_value`, for
/// shapes whose parse is by kind (and whose errors name a field, never a value).
macro_rules! serde_via_value {
    ($($t:ty),+) => {$(
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                serde::Serialize::serialize(&self.to_value(), s)
            }
        }

        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let v = <serde_json::Value as serde::Deserialize>::deserialize(d)?;
                Self::from_value(&v).map_err(<D::Error as serde::de::Error>::custom)
            }
        }
    )+};
}

pub(crate) mod input;
pub mod jsonrpc;
pub(crate) mod meta;
pub(crate) mod method;
pub(crate) mod request;
pub(crate) mod result;
pub(crate) mod schema;
pub(crate) mod trace;

pub use input::{
    CreateMessageParams, CreateMessageResult, ElicitAction, ElicitFormParams, ElicitParams,
    ElicitResult, ElicitUrlParams, InputKind, InputRequest, InputRequests, InputResponse,
    InputResponses, ListRootsResult, Root,
};
pub use jsonrpc::RequestId;
pub use meta::{
    ClientCapabilities, ElicitationCapability, Implementation, LogLevel, META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO, META_LOG_LEVEL, META_PROTOCOL_VERSION, MetaError, RequestMeta,
    SamplingCapability,
};
pub use method::CarrierMethod;
pub use request::{CarrierRequest, RequestError, UntrustedState};
pub use result::{InputRequiredResult, ResultType};
pub use schema::{
    AnswerProblem, EnumOption, EnumStyle, PrimitiveSchema, RequestedSchema, StringFormat,
};
pub use trace::{META_TRACEPARENT, META_TRACESTATE, TraceParent, trace_context};

/// The protocol revision this crate speaks.
pub const PROTOCOL_VERSION: &str = "2026-07-28";

/// The protocol versions this crate accepts in `_meta` (MRTR exists only from 2026-07-28).
pub const SUPPORTED_PROTOCOL_VERSIONS: &[&str] = &[PROTOCOL_VERSION];

/// The era of a client (the protocol eras of 2026-07-28): 2026-07-28, or the
/// 2025 era that opens with `initialize` ([`crate::legacy`]). A label with two
/// values for the metrics and the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Era {
    /// 2026-07-28: stateless, `_meta` on every request.
    #[default]
    Modern,
    /// The 2025 era: `initialize`, a session.
    Legacy,
}

impl Era {
    /// `modern` or `legacy`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Modern => "modern",
            Self::Legacy => "legacy",
        }
    }
}

/// A wire value that does not fit the schema. The message names the field, never its value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct WireError(pub(crate) String);

impl WireError {
    pub(crate) fn new(msg: impl Into<String>) -> Self {
        Self(msg.into())
    }

    /// The description of what is wrong (safe to show: it names fields, never values).
    pub fn message(&self) -> &str {
        &self.0
    }
}

/// A JSON object, as used for `_meta` and open-ended fields.
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

/// Shortens client-provided text to at most `max` characters (for a message or a
/// log line), never splitting a character.
pub fn truncate(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// The bytes of the strings and keys in `v`: how much client text a value holds.
pub(crate) fn string_bytes(v: &serde_json::Value) -> usize {
    use serde_json::Value;
    match v {
        Value::String(s) => s.len(),
        Value::Array(items) => items.iter().map(string_bytes).sum(),
        Value::Object(map) => map.iter().map(|(k, v)| k.len() + string_bytes(v)).sum(),
        _ => 0,
    }
}

pub(crate) fn type_name(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "boolean",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::truncate;

    #[test]
    fn truncate_keeps_whole_characters() {
        assert_eq!(truncate("abc", 5), "abc");
        assert_eq!(truncate("abcdef", 3), "abc");
        assert_eq!(truncate("ééé", 2), "éé");
        assert_eq!(truncate("🦀🦀", 1), "🦀");
        assert_eq!(truncate("", 0), "");
    }
}
