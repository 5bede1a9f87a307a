//! The values a flow is made of: the call ([`CarrierCall`]), the way it ends
//! ([`Completion`]), and the resumable middle ([`PendingFlow`]).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::wire::CarrierMethod;
use crate::wire::{InputRequests, JsonObject};

/// The params keys the driver owns: stripped from a caller's params and set per round.
const DRIVER_KEYS: [&str; 3] = ["_meta", "inputResponses", "requestState"];

/// One of the three requests that can need input, with its params as the caller
/// gave them. The MRTR fields (`_meta`, `inputResponses`, `requestState`) are not
/// part of it: the driver adds them to each round's request.
#[derive(Debug, Clone, PartialEq)]
pub struct CarrierCall {
    method: CarrierMethod,
    params: JsonObject,
}

impl CarrierCall {
    /// `tools/call` of `name`. `arguments` is normally an object; `Value::Null` sends none.
    pub fn tool(name: impl Into<String>, arguments: Value) -> Self {
        Self::named(CarrierMethod::ToolsCall, name.into(), arguments)
    }

    /// `prompts/get` of `name`. `arguments` is normally an object of strings; `Value::Null` sends none.
    pub fn prompt(name: impl Into<String>, arguments: Value) -> Self {
        Self::named(CarrierMethod::PromptsGet, name.into(), arguments)
    }

    /// `resources/read` of `uri`.
    pub fn resource(uri: impl Into<String>) -> Self {
        let mut params = JsonObject::new();
        params.insert("uri".into(), Value::String(uri.into()));
        Self {
            method: CarrierMethod::ResourcesRead,
            params,
        }
    }

    fn named(method: CarrierMethod, name: String, arguments: Value) -> Self {
        let mut params = JsonObject::new();
        params.insert("name".into(), Value::String(name));
        if !arguments.is_null() {
            params.insert("arguments".into(), arguments);
        }
        Self { method, params }
    }

    /// A call with arbitrary params (e.g. extra fields an extension defines).
    /// `_meta`, `inputResponses` and `requestState` are removed: the driver sets them.
    pub fn new(method: CarrierMethod, mut params: JsonObject) -> Self {
        for k in DRIVER_KEYS {
            params.remove(k);
        }
        Self { method, params }
    }

    /// The method.
    pub fn method(&self) -> CarrierMethod {
        self.method
    }

    /// The params, without the MRTR fields.
    pub fn params(&self) -> &JsonObject {
        &self.params
    }

    /// The target: `params.name`, or `params.uri` for `resources/read` (empty when missing).
    pub fn target(&self) -> &str {
        self.params
            .get(self.method.target_param())
            .and_then(Value::as_str)
            .unwrap_or("")
    }
}

/// A finished call: the final `result` object, as the server sent it.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The `result` of the last response (`resultType` `complete` or absent).
    pub result: Value,
    /// How many requests the flow took (1 = no input was needed).
    pub rounds: u32,
}

impl Completion {
    /// Whether this is a tool error (`isError: true`, `tools/call` only): the tool
    /// ran and failed, and the text says why.
    pub fn is_tool_error(&self) -> bool {
        self.result.get("isError").and_then(Value::as_bool) == Some(true)
    }

    /// The concatenated text of the `text` content blocks (`content` of a tool
    /// result, `messages[].content` of a prompt, `contents[].text` of a resource).
    pub fn text(&self) -> String {
        let mut out = Vec::new();
        let block = |b: &Value, out: &mut Vec<String>| {
            if let Some(t) = b.get("text").and_then(Value::as_str) {
                out.push(t.to_owned());
            }
        };
        if let Some(blocks) = self.result.get("content").and_then(Value::as_array) {
            blocks.iter().for_each(|b| block(b, &mut out));
        }
        if let Some(msgs) = self.result.get("messages").and_then(Value::as_array) {
            for m in msgs {
                match m.get("content") {
                    Some(Value::Array(bs)) => bs.iter().for_each(|b| block(b, &mut out)),
                    Some(b) => block(b, &mut out),
                    None => {}
                }
            }
        }
        if let Some(contents) = self.result.get("contents").and_then(Value::as_array) {
            contents.iter().for_each(|b| block(b, &mut out));
        }
        out.join("\n")
    }
}

/// A flow stopped between rounds, waiting for answers: everything needed to
/// retry, and nothing else. Serialize it (it is plain JSON), keep it, and hand it
/// to `mrtr-client`'s `Client::resume` later (or [`Asked::resume`](super::Asked::resume)),
/// or in another process with another client talking to the same server.
///
/// ```json
/// {
///   "method": "tools/call",
///   "params": {"name": "deploy", "arguments": {"env": "prod"}},
///   "requestState": "opaque-server-token",
///   "inputRequests": {"confirm": {"method": "elicitation/create", "params": {...}}},
///   "round": 1
/// }
/// ```
///
/// `params` is the original request's params without `_meta`, `inputResponses`
/// or `requestState` (the client that resumes adds its own `_meta`, as every
/// request must carry the current capabilities). `requestState` is the latest
/// one the server sent, kept byte-exact, and absent when the server sent none.
/// `round` counts the requests sent so far, so the round cap spans the whole flow
/// even across processes; so do `samplingAsked`, `bytesAnswered` and
/// `bytesUploaded` for the sampling, answer and upload caps (absent while zero). The total time cap does not (each
/// `start`/`resume` is bounded on its own), because no clock is shared between
/// processes.
///
/// # Security
/// `requestState` is the server's token for this flow and principal: store a
/// pending flow as you would a short-lived credential. Its contents are opaque
/// and the client never inspects them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingFlow {
    /// The carrier method.
    #[serde(with = "method_serde")]
    pub method: CarrierMethod,
    /// The original params, without the MRTR fields.
    pub params: JsonObject,
    /// The latest `requestState`, byte-exact; `None` when the server sent none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// The input requests still to answer, in the server's order.
    pub input_requests: InputRequests,
    /// How many requests the flow has sent so far.
    pub round: u32,
    /// How many sampling requests the flow has been asked so far, this round's included.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sampling_asked: u32,
    /// How many bytes of answers (`inputResponses` as serialized JSON) the flow has sent so far.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bytes_answered: u64,
    /// How many bytes of requests (serialized JSON-RPC, answers and echoed state
    /// included) the flow has sent so far.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bytes_uploaded: u64,
}

fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

impl PendingFlow {
    /// The call this flow drives.
    pub fn call(&self) -> CarrierCall {
        CarrierCall::new(self.method, self.params.clone())
    }
}

mod method_serde {
    use super::*;

    pub(super) fn serialize<S: Serializer>(m: &CarrierMethod, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(m.as_str())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<CarrierMethod, D::Error> {
        let s = String::deserialize(d)?;
        CarrierMethod::from_method(&s).ok_or_else(|| {
            serde::de::Error::custom("method must be tools/call, resources/read or prompts/get")
        })
    }
}
