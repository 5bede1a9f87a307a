//! Per-request `_meta` (`RequestMetaObject`) and `ClientCapabilities`.
//!
//! Since 2026-07-28 every request carries its protocol version and the client's
//! capabilities in `params._meta`; a server must not infer capabilities from
//! earlier requests (MCP 2026-07-28, Base Protocol §_meta, Per-request protocol fields).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{JsonObject, SUPPORTED_PROTOCOL_VERSIONS, WireError, type_name};

/// `_meta` key of the protocol version.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of the client info.
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key of the client capabilities.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// `Implementation`: `{name, version, ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Implementation {
    /// Software name.
    pub name: String,
    /// Software version.
    pub version: String,
    /// Other fields (title, icons, ...), kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `elicitation` capability: `{form?, url?}`; `{}` means form only.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ElicitationCapability {
    /// `form`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<JsonObject>,
    /// `url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<JsonObject>,
    /// Other fields, kept.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ElicitationCapability {
    /// Form mode is supported: `form` declared, or neither `form` nor `url`
    /// (`elicitation: {}` is `{form: {}}` for backward compatibility).
    pub fn supports_form(&self) -> bool {
        self.form.is_some() || self.url.is_none()
    }

    /// URL mode is supported (`url` declared).
    pub fn supports_url(&self) -> bool {
        self.url.is_some()
    }
}

/// `sampling` capability: `{context?, tools?}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SamplingCapability {
    /// `context`: the client honours `includeContext` other than `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<JsonObject>,
    /// `tools`: the client accepts `tools` and `toolChoice`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<JsonObject>,
    /// Other fields, kept.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `ClientCapabilities`, as declared in this request's `_meta`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientCapabilities {
    /// `experimental`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<JsonObject>,
    /// `roots` (deprecated feature, still supported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<JsonObject>,
    /// `sampling` (deprecated feature, still supported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingCapability>,
    /// `elicitation`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<ElicitationCapability>,
    /// `extensions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<JsonObject>,
    /// Other fields, kept.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ClientCapabilities {
    /// No optional capabilities (`{}`).
    pub fn none() -> Self {
        Self::default()
    }

    /// Whether nothing is declared.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }

    /// The JSON form.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|_| Value::Object(Map::new()))
    }
}

/// Why `_meta` was refused. Its text never holds a value the client sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MetaError {
    /// A required field is missing or has the wrong type (-32602, HTTP 400).
    #[error("{0}")]
    Invalid(WireError),
    /// The protocol version is not supported (-32022 with `{supported, requested}`).
    #[error("unsupported protocol version")]
    UnsupportedVersion {
        /// The version the client asked for.
        requested: String,
    },
}

/// The per-request `_meta` of a client request.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestMeta {
    /// `io.modelcontextprotocol/protocolVersion`.
    pub protocol_version: String,
    /// `io.modelcontextprotocol/clientInfo` (optional, self-reported).
    pub client_info: Option<Implementation>,
    /// `io.modelcontextprotocol/clientCapabilities`.
    pub client_capabilities: ClientCapabilities,
    /// `progressToken`, passed through.
    pub progress_token: Option<Value>,
    /// Every other key (`traceparent`, `tracestate`, `baggage`, `logLevel`, ...), passed through.
    pub other: JsonObject,
}

impl RequestMeta {
    /// `_meta` for this crate's protocol version and the given capabilities.
    pub fn new(client_capabilities: ClientCapabilities) -> Self {
        Self {
            protocol_version: super::PROTOCOL_VERSION.to_owned(),
            client_info: None,
            client_capabilities,
            progress_token: None,
            other: JsonObject::new(),
        }
    }

    /// Reads `params._meta`. `meta` is the `_meta` value, or `None` when absent.
    ///
    /// # Errors
    /// [`MetaError::Invalid`] when `_meta`, its protocol version or its client
    /// capabilities are missing or malformed; [`MetaError::UnsupportedVersion`]
    /// when the version is not one of [`SUPPORTED_PROTOCOL_VERSIONS`] (checked
    /// right after the version is read, before the fields whose shape it decides).
    pub fn from_meta(meta: Option<&Value>) -> Result<Self, MetaError> {
        match meta {
            Some(Value::Object(o)) => Self::from_object(Some(o)),
            Some(v) => Err(MetaError::Invalid(WireError::new(format!(
                "params._meta must be an object, not {}",
                type_name(v)
            )))),
            None => Self::from_object(None),
        }
    }

    /// Parses `params._meta` already known to be an object (or absent), as an SDK
    /// that parsed the request itself holds it; the rules of
    /// [`RequestMeta::from_meta`].
    ///
    /// # Errors
    /// As [`RequestMeta::from_meta`].
    pub fn from_object(meta: Option<&JsonObject>) -> Result<Self, MetaError> {
        let invalid = |m: String| MetaError::Invalid(WireError::new(m));
        let Some(o) = meta else {
            return Err(invalid("params._meta is required".into()));
        };
        // One walk over the object picks the four known keys and keeps the rest:
        // a lookup per key would hash each of these long keys once more.
        let (mut version, mut capabilities, mut info, mut progress) = (None, None, None, None);
        let mut other = JsonObject::new();
        for (k, v) in o {
            match k.as_str() {
                META_PROTOCOL_VERSION => version = Some(v),
                META_CLIENT_CAPABILITIES => capabilities = Some(v),
                META_CLIENT_INFO => info = Some(v),
                "progressToken" => progress = Some(v),
                _ => {
                    other.insert(k.clone(), v.clone());
                }
            }
        }
        let protocol_version = match version {
            Some(Value::String(s)) => s.clone(),
            Some(_) => {
                return Err(invalid(format!(
                    "_meta[{META_PROTOCOL_VERSION:?}] must be a string"
                )));
            }
            None => {
                return Err(invalid(format!(
                    "_meta[{META_PROTOCOL_VERSION:?}] is required"
                )));
            }
        };
        // The version decides which fields are required and how they look, so
        // an unsupported one is reported as such (-32022 with `supported`, which
        // a client can act on) before any other field is judged by this
        // version's rules.
        if !SUPPORTED_PROTOCOL_VERSIONS.contains(&protocol_version.as_str()) {
            return Err(MetaError::UnsupportedVersion {
                requested: protocol_version,
            });
        }
        let client_capabilities = match capabilities {
            // Deserialized from the borrowed value: no copy of it first.
            Some(v @ Value::Object(_)) => ClientCapabilities::deserialize(v).map_err(|_| {
                invalid(format!(
                    "_meta[{META_CLIENT_CAPABILITIES:?}] is not a valid ClientCapabilities"
                ))
            })?,
            Some(_) => {
                return Err(invalid(format!(
                    "_meta[{META_CLIENT_CAPABILITIES:?}] must be an object"
                )));
            }
            None => {
                return Err(invalid(format!(
                    "_meta[{META_CLIENT_CAPABILITIES:?}] is required"
                )));
            }
        };
        let client_info = match info {
            None => None,
            Some(v) => Some(Implementation::deserialize(v).map_err(|_| {
                invalid(format!(
                    "_meta[{META_CLIENT_INFO:?}] needs string name and version"
                ))
            })?),
        };
        let progress_token = match progress {
            None => None,
            Some(v @ (Value::String(_) | Value::Number(_))) => Some(v.clone()),
            Some(_) => {
                return Err(invalid(
                    "_meta.progressToken must be a string or number".into(),
                ));
            }
        };
        Ok(Self {
            protocol_version,
            client_info,
            client_capabilities,
            progress_token,
            other,
        })
    }

    /// The JSON form of `_meta`.
    pub fn to_value(&self) -> Value {
        let mut o = self.other.clone();
        o.insert(
            META_PROTOCOL_VERSION.into(),
            self.protocol_version.clone().into(),
        );
        if let Some(ci) = &self.client_info {
            o.insert(
                META_CLIENT_INFO.into(),
                serde_json::to_value(ci).unwrap_or(Value::Null),
            );
        }
        o.insert(
            META_CLIENT_CAPABILITIES.into(),
            self.client_capabilities.to_value(),
        );
        if let Some(p) = &self.progress_token {
            o.insert("progressToken".into(), p.clone());
        }
        Value::Object(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unsupported_version_wins_over_fields_this_version_requires() {
        for meta in [
            json!({META_PROTOCOL_VERSION: "2099-01-01"}),
            json!({META_PROTOCOL_VERSION: "2099-01-01", META_CLIENT_CAPABILITIES: "new shape"}),
            json!({META_PROTOCOL_VERSION: "2099-01-01", META_CLIENT_CAPABILITIES: {}, META_CLIENT_INFO: 1}),
            json!({META_PROTOCOL_VERSION: "2099-01-01", META_CLIENT_CAPABILITIES: {}, "progressToken": {}}),
        ] {
            assert_eq!(
                RequestMeta::from_meta(Some(&meta)),
                Err(MetaError::UnsupportedVersion {
                    requested: "2099-01-01".into()
                }),
                "{meta}"
            );
        }
        // Without a version there is nothing to compare: -32602.
        assert!(matches!(
            RequestMeta::from_meta(Some(&json!({META_CLIENT_CAPABILITIES: {}}))),
            Err(MetaError::Invalid(_))
        ));
    }

    #[test]
    fn elicitation_modes() {
        let e = |v: Value| serde_json::from_value::<ElicitationCapability>(v).unwrap();
        assert!(e(json!({})).supports_form() && !e(json!({})).supports_url());
        assert!(e(json!({"form": {}})).supports_form() && !e(json!({"form": {}})).supports_url());
        assert!(!e(json!({"url": {}})).supports_form() && e(json!({"url": {}})).supports_url());
        let both = e(json!({"form": {}, "url": {}}));
        assert!(both.supports_form() && both.supports_url());
    }

    #[test]
    fn empty_capabilities() {
        assert!(ClientCapabilities::none().is_empty());
        assert_eq!(ClientCapabilities::none().to_value(), json!({}));
        let c: ClientCapabilities = serde_json::from_value(json!({"roots": {}})).unwrap();
        assert!(!c.is_empty());
    }
}
