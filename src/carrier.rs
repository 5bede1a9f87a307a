//! The three carrier methods: the only requests that may answer with an
//! `InputRequiredResult` (MRTR §Supported Requests).

use serde_json::{Map, Value};

use crate::error::Error;
use crate::wire::meta::RequestMeta;
use crate::wire::{JsonObject, type_name};

/// `tools/call`, `resources/read` or `prompts/get`: a closed set, so an
/// `InputRequiredResult` for `tools/list` cannot be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CarrierMethod {
    /// `tools/call`.
    ToolsCall,
    /// `resources/read`.
    ResourcesRead,
    /// `prompts/get`.
    PromptsGet,
}

impl CarrierMethod {
    /// The carrier for a method name, or `None` for every other method.
    ///
    /// ```
    /// use mrtr::carrier::CarrierMethod;
    /// assert_eq!(CarrierMethod::from_method("prompts/get"), Some(CarrierMethod::PromptsGet));
    /// assert_eq!(CarrierMethod::from_method("tools/list"), None);
    /// ```
    pub fn from_method(method: &str) -> Option<Self> {
        match method {
            "tools/call" => Some(Self::ToolsCall),
            "resources/read" => Some(Self::ResourcesRead),
            "prompts/get" => Some(Self::PromptsGet),
            _ => None,
        }
    }

    /// The method name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ToolsCall => "tools/call",
            Self::ResourcesRead => "resources/read",
            Self::PromptsGet => "prompts/get",
        }
    }

    /// Where the target lives in params (`name`, or `uri` for resources).
    pub fn target_param(self) -> &'static str {
        match self {
            Self::ResourcesRead => "uri",
            Self::ToolsCall | Self::PromptsGet => "name",
        }
    }
}

/// A parsed carrier request: what is called, with what, and the MRTR retry fields.
#[derive(Debug, Clone, PartialEq)]
pub struct CarrierRequest {
    /// Which carrier.
    pub method: CarrierMethod,
    /// Tool name, prompt name or resource URI.
    pub target: String,
    /// `arguments` (tools: any JSON object; prompts: string values), if sent.
    pub arguments: Option<JsonObject>,
    /// The per-request `_meta`.
    pub meta: RequestMeta,
    /// `inputResponses`, raw: each entry is checked against what was asked by the engine.
    pub input_responses: Option<JsonObject>,
    /// `requestState`, exactly as received (attacker-controlled).
    pub request_state: Option<String>,
}

impl CarrierRequest {
    /// Parses `params` of a carrier request.
    ///
    /// # Errors
    /// -32602 for missing or malformed `_meta` (HTTP 400), target, `arguments`,
    /// `inputResponses` (anything but an object, `null` included) or `requestState`
    /// (anything but a string); -32022 for an unsupported protocol version.
    pub fn from_params(method: CarrierMethod, params: Option<&Value>) -> Result<Self, Error> {
        let empty = Map::new();
        let p = match params {
            None => &empty,
            Some(Value::Object(p)) => p,
            Some(v) => {
                return Err(Error::invalid_params(format!(
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
                return Err(Error::invalid_params(format!(
                    "params.{key} must not be empty"
                )));
            }
            Some(v) => {
                return Err(Error::invalid_params(format!(
                    "params.{key} must be a string, not {}",
                    type_name(v)
                )));
            }
            None => return Err(Error::invalid_params(format!("params.{key} is required"))),
        };
        let arguments = match (method, p.get("arguments")) {
            (_, None) => None,
            (CarrierMethod::ResourcesRead, Some(_)) => {
                return Err(Error::invalid_params("resources/read takes no arguments"));
            }
            (CarrierMethod::PromptsGet, Some(Value::Object(a))) => {
                if let Some((k, _)) = a.iter().find(|(_, v)| !v.is_string()) {
                    return Err(Error::invalid_params(format!(
                        "prompt argument {:?} must be a string",
                        // The name is the client's: bounded, as in the log.
                        crate::error::truncate(k, 64)
                    )));
                }
                Some(a.clone())
            }
            (CarrierMethod::ToolsCall, Some(Value::Object(a))) => Some(a.clone()),
            (_, Some(v)) => {
                return Err(Error::invalid_params(format!(
                    "params.arguments must be an object, not {}",
                    type_name(v)
                )));
            }
        };
        let input_responses = match p.get("inputResponses") {
            None => None,
            Some(Value::Object(r)) => Some(r.clone()),
            Some(v) => {
                return Err(Error::invalid_params(format!(
                    "params.inputResponses must be an object, not {}",
                    type_name(v)
                )));
            }
        };
        let request_state = match p.get("requestState") {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(v) => {
                return Err(Error::invalid_params(format!(
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

    /// The arguments as one JSON value for binding (`None` when absent).
    pub fn arguments_value(&self) -> Option<Value> {
        self.arguments.clone().map(Value::Object)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_round_trip() {
        for m in [
            CarrierMethod::ToolsCall,
            CarrierMethod::ResourcesRead,
            CarrierMethod::PromptsGet,
        ] {
            assert_eq!(CarrierMethod::from_method(m.as_str()), Some(m));
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
        assert_eq!(r.meta.protocol_version, "2026-07-28");
    }
}
