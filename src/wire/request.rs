//! A carrier request's params, parsed: [`CarrierRequest`], with its
//! attacker-controlled `requestState` kept as an [`UntrustedState`].
//!
//! The parser is the only way to build a [`CarrierRequest`]: its fields are
//! private, so a request with an empty target or an unsupported protocol
//! version cannot reach the engine.

use std::fmt;

use serde_json::{Map, Value};

use super::meta::{MetaError, RequestMeta};
use super::method::CarrierMethod;
use super::{JsonObject, WireError, truncate, type_name};

/// A `requestState` string as received: nothing in it is readable or trusted
/// until the seal module's `Sealer::open` turns it into a `Verified` value.
///
/// `Debug` shows only its length: tokens are never logged.
///
/// ```
/// use mrtr::seal::UntrustedState;
/// let s = UntrustedState::new("AQID");
/// assert_eq!(s.as_str(), "AQID");
/// assert_eq!(format!("{s:?}"), "UntrustedState { len: 4 }");
/// ```
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct UntrustedState(String);

impl UntrustedState {
    /// Wraps a received token.
    pub fn new(token: impl Into<String>) -> Self {
        UntrustedState(token.into())
    }

    /// The token exactly as received (to echo or compare, never to parse).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<String> for UntrustedState {
    fn from(s: String) -> Self {
        UntrustedState(s)
    }
}

impl fmt::Debug for UntrustedState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "UntrustedState {{ len: {} }}", self.0.len())
    }
}

/// Why the params of a carrier request were refused. Messages name the field at
/// fault, never its value. `mrtr::error::Error` converts from it: -32602 (HTTP
/// 400) for [`RequestError::InvalidParams`] and a malformed `_meta`, -32022 with
/// `{supported, requested}` for an unsupported protocol version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// A field other than `_meta` is missing or malformed (the target, `arguments`,
    /// `inputResponses`, `requestState`, or params itself).
    #[error("{0}")]
    InvalidParams(WireError),
    /// `_meta` is missing or malformed, or names an unsupported protocol version.
    #[error(transparent)]
    Meta(#[from] MetaError),
}

impl RequestError {
    fn invalid(msg: impl Into<String>) -> Self {
        Self::InvalidParams(WireError::new(msg))
    }
}

/// A parsed carrier request: what is called, with what, and the MRTR retry fields.
///
/// Built only by [`CarrierRequest::from_params`], so every value has a non-empty
/// target, a supported protocol version and well-formed MRTR fields.
#[derive(Debug, Clone, PartialEq)]
pub struct CarrierRequest {
    method: CarrierMethod,
    target: String,
    arguments: Option<JsonObject>,
    meta: RequestMeta,
    input_responses: Option<JsonObject>,
    request_state: Option<UntrustedState>,
}

impl CarrierRequest {
    /// Parses `params` of a carrier request.
    ///
    /// ```
    /// use mrtr::wire::{CarrierMethod, CarrierRequest};
    /// let params = serde_json::json!({"name": "weather", "_meta": {
    ///     "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    ///     "io.modelcontextprotocol/clientCapabilities": {}}});
    /// let r = CarrierRequest::from_params(CarrierMethod::ToolsCall, Some(&params)).unwrap();
    /// assert_eq!(r.target(), "weather");
    /// assert!(r.request_state().is_none());
    /// ```
    ///
    /// # Errors
    /// [`RequestError::Meta`] for a missing or malformed `_meta` or an unsupported
    /// protocol version; [`RequestError::InvalidParams`] for a missing or malformed
    /// target, `arguments`, `inputResponses` (anything but an object, `null`
    /// included) or `requestState` (anything but a string).
    pub fn from_params(
        method: CarrierMethod,
        params: Option<&Value>,
    ) -> Result<Self, RequestError> {
        let empty = Map::new();
        let p = match params {
            None => &empty,
            Some(Value::Object(p)) => p,
            Some(v) => {
                return Err(RequestError::invalid(format!(
                    "params must be an object, not {}",
                    type_name(v)
                )));
            }
        };
        let meta = RequestMeta::from_meta(p.get("_meta"))?;
        let key = method.target_param();
        let target = match p.get(key) {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(Value::String(_)) => {
                return Err(RequestError::invalid(format!(
                    "params.{key} must not be empty"
                )));
            }
            Some(v) => {
                return Err(RequestError::invalid(format!(
                    "params.{key} must be a string, not {}",
                    type_name(v)
                )));
            }
            None => {
                return Err(RequestError::invalid(format!("params.{key} is required")));
            }
        };
        let arguments = match (method, p.get("arguments")) {
            (_, None) => None,
            (CarrierMethod::ResourcesRead, Some(_)) => {
                return Err(RequestError::invalid("resources/read takes no arguments"));
            }
            (CarrierMethod::PromptsGet, Some(Value::Object(a))) => {
                if let Some((k, _)) = a.iter().find(|(_, v)| !v.is_string()) {
                    return Err(RequestError::invalid(format!(
                        "prompt argument {:?} must be a string",
                        // The name is the client's: bounded, as in the log.
                        truncate(k, 64)
                    )));
                }
                Some(a.clone())
            }
            (CarrierMethod::ToolsCall, Some(Value::Object(a))) => Some(a.clone()),
            (_, Some(v)) => {
                return Err(RequestError::invalid(format!(
                    "params.arguments must be an object, not {}",
                    type_name(v)
                )));
            }
        };
        let input_responses = match p.get("inputResponses") {
            None => None,
            Some(Value::Object(r)) => Some(r.clone()),
            Some(v) => {
                return Err(RequestError::invalid(format!(
                    "params.inputResponses must be an object, not {}",
                    type_name(v)
                )));
            }
        };
        let request_state = match p.get("requestState") {
            None => None,
            Some(Value::String(s)) => Some(UntrustedState::new(s.clone())),
            Some(v) => {
                return Err(RequestError::invalid(format!(
                    "params.requestState must be a string, not {}",
                    type_name(v)
                )));
            }
        };
        Ok(Self {
            method,
            target,
            arguments,
            meta,
            input_responses,
            request_state,
        })
    }

    /// Which carrier.
    pub fn method(&self) -> CarrierMethod {
        self.method
    }

    /// Tool name, prompt name or resource URI (never empty).
    pub fn target(&self) -> &str {
        &self.target
    }

    /// `arguments` (tools: any JSON object; prompts: string values), if sent.
    pub fn arguments(&self) -> Option<&JsonObject> {
        self.arguments.as_ref()
    }

    /// The arguments as one JSON value for binding (`None` when absent).
    pub fn arguments_value(&self) -> Option<Value> {
        self.arguments.clone().map(Value::Object)
    }

    /// The per-request `_meta` (its protocol version is a supported one).
    pub fn meta(&self) -> &RequestMeta {
        &self.meta
    }

    /// `inputResponses`, raw: each entry is checked against what was asked by the engine.
    pub fn input_responses(&self) -> Option<&JsonObject> {
        self.input_responses.as_ref()
    }

    /// `requestState`, exactly as received (attacker-controlled until opened).
    pub fn request_state(&self) -> Option<&UntrustedState> {
        self.request_state.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_value_is_the_object() {
        let p = json!({
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}},
            "name": "t", "arguments": {"a": 1}
        });
        let r = CarrierRequest::from_params(CarrierMethod::ToolsCall, Some(&p)).unwrap();
        assert_eq!(r.arguments_value(), Some(json!({"a": 1})));
        assert_eq!(r.meta().protocol_version, "2026-07-28");
    }

    #[test]
    fn state_is_kept_untrusted_and_exact() {
        let p = json!({
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}},
            "name": "t", "requestState": " a b\n"
        });
        let r = CarrierRequest::from_params(CarrierMethod::ToolsCall, Some(&p)).unwrap();
        assert_eq!(
            r.request_state().map(UntrustedState::as_str),
            Some(" a b\n")
        );
    }
}
