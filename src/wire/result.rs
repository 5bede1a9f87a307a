//! `resultType` and `InputRequiredResult`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::input::{InputRequest, InputRequests};
use super::method::CarrierMethod;
use super::{JsonObject, WireError};

/// The `resultType` discriminator. Open: an unknown value survives a round trip
/// (a client must then treat it as invalid: MCP 2026-07-28, Base Protocol §Result
/// Responses, ResultType).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ResultType {
    /// `"complete"`: the final result.
    Complete,
    /// `"input_required"`: an [`InputRequiredResult`].
    InputRequired,
    /// Any other value (extensions, e.g. `"task"`).
    Other(String),
}

impl ResultType {
    /// The wire string.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Complete => "complete",
            Self::InputRequired => "input_required",
            Self::Other(s) => s,
        }
    }

    /// Reads a wire string.
    pub fn from_wire(s: &str) -> Self {
        match s {
            "complete" => Self::Complete,
            "input_required" => Self::InputRequired,
            other => Self::Other(other.to_owned()),
        }
    }
}

impl Serialize for ResultType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ResultType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(Self::from_wire(&s))
    }
}

/// An `InputRequiredResult`: the server needs input before it can finish.
///
/// Every value knows which carrier request it answers ([`InputRequiredResult::method`]):
/// one of the three [`CarrierMethod`]s, so one for `tools/list` cannot be built.
/// Both ways to get one take that method:
///
/// - **Server side**, [`InputRequiredResult::new`]: the round engine builds it for
///   the request it is answering, and only with a non-empty `inputRequests` or a
///   non-empty `requestState` (MRTR Server Requirement 6). The service refuses to
///   send one whose method is not the request's (a -32603, never a mismatched result).
/// - **Client side**, [`InputRequiredResult::from_value`]: a client parses the
///   result of a request it sent, so it passes that request's method.
///
/// Because the method is not on the wire, there is `Serialize` (the wire shape)
/// but no `Deserialize`: parse with [`InputRequiredResult::from_value`].
///
/// An empty `inputRequests` map is never emitted: the schema allows one, but it
/// asks for nothing, and the MCP conformance suite counts it as a failure.
///
/// ```
/// use mrtr::wire::{CarrierMethod, InputRequest, InputRequiredResult, InputRequests};
/// let mut asks = InputRequests::new();
/// asks.insert("roots".into(), InputRequest::ListRoots { meta: None });
/// let irr = InputRequiredResult::new(CarrierMethod::ToolsCall, asks, None).unwrap();
/// assert_eq!(irr.method(), CarrierMethod::ToolsCall);
/// assert_eq!(
///     serde_json::to_value(&irr).unwrap(),
///     serde_json::json!({"resultType": "input_required", "inputRequests": {"roots": {"method": "roots/list"}}})
/// );
/// assert!(InputRequiredResult::new(CarrierMethod::PromptsGet, InputRequests::new(), None).is_err());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct InputRequiredResult {
    method: CarrierMethod,
    input_requests: Option<InputRequests>,
    request_state: Option<String>,
    meta: Option<JsonObject>,
}

impl InputRequiredResult {
    /// Builds the result answering a `method` request.
    ///
    /// # Errors
    /// When both `input_requests` is empty and `request_state` is absent or empty.
    pub fn new(
        method: CarrierMethod,
        input_requests: InputRequests,
        request_state: Option<String>,
    ) -> Result<Self, WireError> {
        let input_requests = (!input_requests.is_empty()).then_some(input_requests);
        let request_state = request_state.filter(|s| !s.is_empty());
        if input_requests.is_none() && request_state.is_none() {
            return Err(WireError::new(
                "an InputRequiredResult needs at least one input request or a request state",
            ));
        }
        Ok(Self {
            method,
            input_requests,
            request_state,
            meta: None,
        })
    }

    /// The carrier request this result answers.
    pub fn method(&self) -> CarrierMethod {
        self.method
    }

    /// Adds result `_meta` (e.g. `io.modelcontextprotocol/serverInfo`).
    pub fn with_meta(mut self, meta: JsonObject) -> Self {
        self.meta = Some(meta);
        self
    }

    /// The input requests, if any.
    pub fn input_requests(&self) -> Option<&InputRequests> {
        self.input_requests.as_ref()
    }

    /// The opaque request state, if any.
    pub fn request_state(&self) -> Option<&str> {
        self.request_state.as_deref()
    }

    /// Result `_meta`, if any.
    pub fn meta(&self) -> Option<&JsonObject> {
        self.meta.as_ref()
    }

    /// The `requestState`, the result given up for it (moved, not copied).
    pub(crate) fn into_request_state(self) -> Option<String> {
        self.request_state
    }

    /// The JSON form, with `resultType: "input_required"`.
    pub fn to_value(&self) -> Value {
        let mut o = Map::new();
        if let Some(m) = &self.meta {
            o.insert("_meta".into(), Value::Object(m.clone()));
        }
        o.insert("resultType".into(), "input_required".into());
        if let Some(r) = &self.input_requests {
            let m: Map<String, Value> = r.iter().map(|(k, v)| (k.clone(), v.to_value())).collect();
            o.insert("inputRequests".into(), Value::Object(m));
        }
        if let Some(s) = &self.request_state {
            o.insert("requestState".into(), Value::String(s.clone()));
        }
        Value::Object(o)
    }

    /// Parses a result object whose `resultType` is `input_required`, received in
    /// answer to a `method` request. An empty `inputRequests` counts as absent.
    ///
    /// # Errors
    /// When a field has the wrong shape, or neither input requests nor state is present.
    pub fn from_value(method: CarrierMethod, v: &Value) -> Result<Self, WireError> {
        let o = v
            .as_object()
            .ok_or_else(|| WireError::new("a result must be an object"))?;
        match o.get("resultType").and_then(Value::as_str) {
            Some("input_required") => {}
            _ => return Err(WireError::new("resultType must be input_required")),
        }
        let input_requests = match o.get("inputRequests") {
            None => None,
            Some(Value::Object(m)) => {
                let mut out = InputRequests::new();
                for (k, r) in m {
                    out.insert(
                        k.clone(),
                        InputRequest::from_value(r).map_err(|e| {
                            WireError::new(format!("inputRequests[{k:?}]: {}", e.message()))
                        })?,
                    );
                }
                (!out.is_empty()).then_some(out)
            }
            Some(_) => return Err(WireError::new("inputRequests must be an object")),
        };
        let request_state = match o.get("requestState") {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(WireError::new("requestState must be a string")),
        };
        let meta = match o.get("_meta") {
            None => None,
            Some(Value::Object(m)) => Some(m.clone()),
            Some(_) => return Err(WireError::new("_meta must be an object")),
        };
        if input_requests.is_none() && request_state.as_deref().is_none_or(str::is_empty) {
            return Err(WireError::new(
                "an InputRequiredResult needs at least one input request or a request state",
            ));
        }
        Ok(Self {
            method,
            input_requests,
            request_state,
            meta,
        })
    }
}

impl Serialize for InputRequiredResult {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(s)
    }
}
