//! A carrier request's params, parsed: [`CarrierRequest`], with its
//! attacker-controlled `requestState` kept as an [`UntrustedState`].
//!
//! The parser is the only way to build a [`CarrierRequest`]: its fields are
//! private, so a request with an empty target or an unsupported protocol
//! version cannot reach the engine.

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::meta::{MetaError, MetaMemo, RequestMeta};
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

fn no_arguments() -> RequestError {
    RequestError::invalid("resources/read takes no arguments")
}

/// A parsed carrier request: what is called, with what, and the MRTR retry fields.
///
/// Built only by [`CarrierRequest::from_params`] and [`CarrierRequest::from_fields`], so every value has a non-empty
/// target, a supported protocol version and well-formed MRTR fields.
#[derive(Debug, Clone, PartialEq)]
pub struct CarrierRequest {
    method: CarrierMethod,
    target: String,
    arguments: Option<JsonObject>,
    /// Behind a pointer: the capabilities make it about 1 KiB, and a request is
    /// moved through every layer of a round (and lives in the round's futures) by
    /// value. Shared: a [`MetaMemo`] hands out the `_meta` it parsed before.
    meta: Arc<RequestMeta>,
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
        Self::from_params_with(method, params, |meta| {
            RequestMeta::from_meta(meta).map(Arc::new)
        })
    }

    /// [`CarrierRequest::from_params`] with `_meta` parsed through `metas`.
    pub(crate) fn from_params_memo(
        method: CarrierMethod,
        params: Option<&Value>,
        metas: &MetaMemo,
    ) -> Result<Self, RequestError> {
        Self::from_params_with(method, params, |meta| metas.parse_value(meta))
    }

    /// [`CarrierRequest::from_params`] with `_meta` parsed by `parse_meta`.
    fn from_params_with(
        method: CarrierMethod,
        params: Option<&Value>,
        parse_meta: impl FnOnce(Option<&Value>) -> Result<Arc<RequestMeta>, MetaError>,
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
        let meta = parse_meta(p.get("_meta"))?;
        let key = method.target_param();
        let target = match p.get(key) {
            Some(Value::String(s)) => s.clone(),
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
        let object = |field: &str| match p.get(field) {
            None => Ok(None),
            Some(Value::Object(o)) => Ok(Some(o)),
            Some(v) => Err(RequestError::invalid(format!(
                "params.{field} must be an object, not {}",
                type_name(v)
            ))),
        };
        // resources/read takes no arguments of any shape: judged before the shape.
        let arguments = match (method, p.get("arguments")) {
            (CarrierMethod::ResourcesRead, Some(_)) => return Err(no_arguments()),
            _ => object("arguments")?,
        };
        let input_responses = object("inputResponses")?;
        let request_state = match p.get("requestState") {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(v) => {
                return Err(RequestError::invalid(format!(
                    "params.requestState must be a string, not {}",
                    type_name(v)
                )));
            }
        };
        Self::checked(
            method,
            meta,
            target,
            arguments.cloned(),
            input_responses.cloned(),
            request_state,
        )
    }

    /// A carrier request from fields an SDK already parsed into their types
    /// (rmcp's typed params, `_meta` beside them): the rules of
    /// [`CarrierRequest::from_params`] that the types do not already enforce,
    /// with the fields moved in rather than copied.
    ///
    /// ```
    /// use mrtr::wire::{CarrierMethod, CarrierRequest};
    /// let meta = serde_json::json!({
    ///     "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    ///     "io.modelcontextprotocol/clientCapabilities": {}});
    /// let r = CarrierRequest::from_fields(
    ///     CarrierMethod::ToolsCall, meta.as_object(), "weather".into(), None, None, None,
    /// ).unwrap();
    /// assert_eq!(r.target(), "weather");
    /// assert!(CarrierRequest::from_fields(
    ///     CarrierMethod::ToolsCall, meta.as_object(), String::new(), None, None, None,
    /// ).is_err());
    /// ```
    ///
    /// # Errors
    /// As [`CarrierRequest::from_params`].
    pub fn from_fields(
        method: CarrierMethod,
        meta: Option<&JsonObject>,
        target: String,
        arguments: Option<JsonObject>,
        input_responses: Option<JsonObject>,
        request_state: Option<String>,
    ) -> Result<Self, RequestError> {
        let meta = Arc::new(RequestMeta::from_object(meta)?);
        Self::checked(
            method,
            meta,
            target,
            arguments,
            input_responses,
            request_state,
        )
    }

    /// [`CarrierRequest::from_fields`] with `_meta` parsed through `metas`.
    #[allow(clippy::too_many_arguments)] // why: the fields of the request, each its own
    pub(crate) fn from_fields_memo(
        method: CarrierMethod,
        meta: Option<&JsonObject>,
        metas: &MetaMemo,
        target: String,
        arguments: Option<JsonObject>,
        input_responses: Option<JsonObject>,
        request_state: Option<String>,
    ) -> Result<Self, RequestError> {
        Self::checked(
            method,
            metas.parse(meta)?,
            target,
            arguments,
            input_responses,
            request_state,
        )
    }

    /// The rules both constructors share, on fields of the right types.
    fn checked(
        method: CarrierMethod,
        meta: Arc<RequestMeta>,
        target: String,
        arguments: Option<JsonObject>,
        input_responses: Option<JsonObject>,
        request_state: Option<String>,
    ) -> Result<Self, RequestError> {
        if target.is_empty() {
            return Err(RequestError::invalid(format!(
                "params.{} must not be empty",
                method.target_param()
            )));
        }
        if method == CarrierMethod::ResourcesRead && arguments.is_some() {
            return Err(no_arguments());
        }
        if let (CarrierMethod::PromptsGet, Some(a)) = (method, &arguments)
            && let Some((k, _)) = a.iter().find(|(_, v)| !v.is_string())
        {
            return Err(RequestError::invalid(format!(
                "prompt argument {:?} must be a string",
                // The name is the client's: bounded, as in the log.
                truncate(k, 64)
            )));
        }
        Ok(Self {
            method,
            target,
            arguments,
            meta,
            input_responses,
            request_state: request_state.map(UntrustedState::new),
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

    /// Sets the arguments of a `resources/read` routed through a resource
    /// template: its variables, which the server took from the URI (the client
    /// cannot send arguments there), so they are bound as the URI is.
    pub(crate) fn set_template_arguments(&mut self, variables: JsonObject) {
        self.arguments = Some(variables);
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

    /// `from_fields` on the fields of `params` (as an SDK's types hold them).
    fn from_fields_of(method: CarrierMethod, p: &Value) -> Result<CarrierRequest, RequestError> {
        let obj = |k: &str| p.get(k).and_then(Value::as_object).cloned();
        CarrierRequest::from_fields(
            method,
            p.get("_meta").and_then(Value::as_object),
            p[method.target_param()]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            obj("arguments"),
            obj("inputResponses"),
            p.get("requestState")
                .and_then(Value::as_str)
                .map(str::to_owned),
        )
    }

    #[test]
    fn from_fields_and_from_params_agree() {
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
            "progressToken": 3});
        let cases = [
            (
                CarrierMethod::ToolsCall,
                json!({"_meta": meta, "name": "t"}),
            ),
            (
                CarrierMethod::ToolsCall,
                json!({"_meta": meta, "name": "t", "arguments": {"a": [1]},
                "inputResponses": {"k": {"action": "decline"}}, "requestState": "s"}),
            ),
            (
                CarrierMethod::PromptsGet,
                json!({"_meta": meta, "name": "p", "arguments": {"a": "x"}}),
            ),
            (
                CarrierMethod::ResourcesRead,
                json!({"_meta": meta, "uri": "file:///x"}),
            ),
            // Refused alike: an empty target, a prompt argument that is not a string,
            // arguments on resources/read, a missing or unsupported _meta.
            (CarrierMethod::ToolsCall, json!({"_meta": meta, "name": ""})),
            (
                CarrierMethod::PromptsGet,
                json!({"_meta": meta, "name": "p", "arguments": {"a": 1}}),
            ),
            (
                CarrierMethod::ResourcesRead,
                json!({"_meta": meta, "uri": "u", "arguments": {}}),
            ),
            (CarrierMethod::ToolsCall, json!({"name": "t"})),
            (
                CarrierMethod::ToolsCall,
                json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2024-01-01",
                "io.modelcontextprotocol/clientCapabilities": {}}, "name": "t"}),
            ),
        ];
        for (method, p) in cases {
            assert_eq!(
                from_fields_of(method, &p),
                CarrierRequest::from_params(method, Some(&p)),
                "{p}"
            );
        }
    }

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
