//! Per-request `_meta` (`RequestMetaObject`) and `ClientCapabilities`.
//!
//! Since 2026-07-28 every request carries its protocol version and the client's
//! capabilities in `params._meta`; a server must not infer capabilities from
//! earlier requests (MCP 2026-07-28, Base Protocol §_meta, Per-request protocol fields).

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{JsonObject, SUPPORTED_PROTOCOL_VERSIONS, WireError, string_bytes, type_name};

/// `_meta` key of the protocol version.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of the client info.
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key of the client capabilities.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key of the log level a request asks for (MCP 2026-07-28; without it
/// the server sends no `notifications/message` for the request).
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// The severity of a log message, RFC 5424's eight levels (the schema's
/// `LoggingLevel`), least severe first: a level compares below every more
/// severe one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// `debug`.
    Debug,
    /// `info`.
    Info,
    /// `notice`.
    Notice,
    /// `warning`.
    Warning,
    /// `error`.
    Error,
    /// `critical`.
    Critical,
    /// `alert`.
    Alert,
    /// `emergency`.
    Emergency,
}

impl LogLevel {
    /// Every level, least severe first.
    pub const ALL: [Self; 8] = [
        Self::Debug,
        Self::Info,
        Self::Notice,
        Self::Warning,
        Self::Error,
        Self::Critical,
        Self::Alert,
        Self::Emergency,
    ];

    /// The level's name on the wire (`"debug"`, ..., `"emergency"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Notice => "notice",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
            Self::Alert => "alert",
            Self::Emergency => "emergency",
        }
    }

    /// The level named `name` exactly as on the wire; `None` for any other string.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.as_str() == name)
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

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
    /// `io.modelcontextprotocol/logLevel`: the least severe log message the
    /// client wants for this request; `None`: no log messages at all.
    pub log_level: Option<LogLevel>,
    /// Every other key (`traceparent`, `tracestate`, `baggage`, ...), passed through.
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
            log_level: None,
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
    pub(crate) fn from_object(meta: Option<&JsonObject>) -> Result<Self, MetaError> {
        let invalid = |m: String| MetaError::Invalid(WireError::new(m));
        let Some(o) = meta else {
            return Err(invalid("params._meta is required".into()));
        };
        // One walk over the object picks the four known keys and keeps the rest:
        // a lookup per key would hash each of these long keys once more.
        let (mut version, mut capabilities, mut info, mut progress) = (None, None, None, None);
        let mut level = None;
        let mut other = JsonObject::new();
        for (k, v) in o {
            match k.as_str() {
                META_PROTOCOL_VERSION => version = Some(v),
                META_CLIENT_CAPABILITIES => capabilities = Some(v),
                META_CLIENT_INFO => info = Some(v),
                "progressToken" => progress = Some(v),
                META_LOG_LEVEL => level = Some(v),
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
        // The schema's `LoggingLevel`: one of eight names. Anything else is
        // refused like a malformed progress token, never taken as "no level".
        let log_level = match level {
            None => None,
            Some(v) => Some(v.as_str().and_then(LogLevel::from_name).ok_or_else(|| {
                invalid(format!(
                    "_meta[{META_LOG_LEVEL:?}] must be one of debug, info, notice, warning, error, critical, alert, emergency"
                ))
            })?),
        };
        Ok(Self {
            protocol_version,
            client_info,
            client_capabilities,
            progress_token,
            log_level,
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
        if let Some(l) = self.log_level {
            o.insert(META_LOG_LEVEL.into(), l.as_str().into());
        }
        Value::Object(o)
    }
}

/// How many `_meta` objects a [`MetaMemo`] keeps.
const METAS: usize = 8;

/// The most string bytes (keys included) of a `_meta` a [`MetaMemo`] keeps.
const META_BYTES: usize = 4096;

/// The typed `_meta` of the last few distinct `_meta` objects parsed.
///
/// A client sends the same `_meta` (protocol version, capabilities, client info)
/// with every request, and each must be parsed again (MCP 2026-07-28: a server
/// never carries capabilities over from an earlier request). The memo returns
/// the typed form of an object exactly equal to one it parsed, its keys in the
/// same order at every depth, so a hit is what parsing would give; it never
/// carries anything over between objects that differ. Only an object of those
/// three keys and at most `META_BYTES` of strings is kept (one with a
/// `progressToken` or trace context differs per request: it is parsed, not kept);
/// a new one replaces the oldest. Never printed: `_meta` is the client's.
pub struct MetaMemo {
    slots: RwLock<Vec<(JsonObject, Arc<RequestMeta>)>>,
    next: AtomicUsize,
}

impl fmt::Debug for MetaMemo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetaMemo")
            .field("entries", &self.len())
            .finish()
    }
}

impl Default for MetaMemo {
    fn default() -> Self {
        Self {
            slots: RwLock::new(Vec::with_capacity(METAS)),
            next: AtomicUsize::new(0),
        }
    }
}

impl MetaMemo {
    fn len(&self) -> usize {
        self.slots
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// [`RequestMeta::from_meta`] of `meta`, through [`MetaMemo::parse`] when
    /// it is an object.
    ///
    /// # Errors
    /// As [`RequestMeta::from_meta`].
    pub(crate) fn parse_value(&self, meta: Option<&Value>) -> Result<Arc<RequestMeta>, MetaError> {
        match meta {
            Some(Value::Object(object)) => self.parse(Some(object)),
            other => RequestMeta::from_meta(other).map(Arc::new),
        }
    }

    /// [`RequestMeta::from_object`] of `meta`, from the memo when it parsed an
    /// equal object before.
    ///
    /// # Errors
    /// As [`RequestMeta::from_object`] (a refused `_meta` is never kept).
    pub fn parse(&self, meta: Option<&JsonObject>) -> Result<Arc<RequestMeta>, MetaError> {
        let Some(object) = meta.filter(|o| o.keys().all(|k| REPEATED.contains(&k.as_str()))) else {
            return RequestMeta::from_object(meta).map(Arc::new);
        };
        // A comparison stops at the first difference, and a kept object is small:
        // a large `_meta` costs no more to look up than a small one.
        {
            let slots = self.slots.read().unwrap_or_else(PoisonError::into_inner);
            if let Some((_, parsed)) = slots.iter().find(|(seen, _)| same_object(seen, object)) {
                return Ok(Arc::clone(parsed));
            }
        }
        let parsed = Arc::new(RequestMeta::from_object(meta)?);
        if object
            .iter()
            .map(|(k, v)| k.len() + string_bytes(v))
            .sum::<usize>()
            > META_BYTES
        {
            return Ok(parsed);
        }
        let mut slots = self.slots.write().unwrap_or_else(PoisonError::into_inner);
        let entry = (object.clone(), Arc::clone(&parsed));
        if slots.len() < METAS {
            slots.push(entry);
        } else {
            slots[self.next.fetch_add(1, Ordering::Relaxed) % METAS] = entry;
        }
        Ok(parsed)
    }
}

/// The `_meta` keys every request repeats: the only ones a [`MetaMemo`] keeps.
const REPEATED: [&str; 3] = [
    META_PROTOCOL_VERSION,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
];

/// Equal JSON objects with their keys in the same order, at every depth (a
/// `serde_json::Map` with `preserve_order` compares as a map, ignoring order).
fn same_object(a: &JsonObject, b: &JsonObject) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|((ka, va), (kb, vb))| ka == kb && same_value(va, vb))
}

fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => same_object(a, b),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same_value(a, b))
        }
        // Numbers compare by representation (1 and 1.0 differ): a miss, never
        // a wrong hit.
        _ => a == b,
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
    fn log_level_is_one_of_eight_names_or_refused() {
        let base = || json!({META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}});
        assert_eq!(
            RequestMeta::from_meta(Some(&base())).unwrap().log_level,
            None
        );
        let mut m = base();
        m[META_LOG_LEVEL] = json!("warning");
        let parsed = RequestMeta::from_meta(Some(&m)).unwrap();
        assert_eq!(parsed.log_level, Some(LogLevel::Warning));
        assert!(!parsed.other.contains_key(META_LOG_LEVEL));
        assert_eq!(parsed.to_value()[META_LOG_LEVEL], "warning");
        for bad in [
            json!("WARN"),
            json!(3),
            json!(null),
            json!({"level": "info"}),
        ] {
            m[META_LOG_LEVEL] = bad;
            let Err(MetaError::Invalid(e)) = RequestMeta::from_meta(Some(&m)) else {
                panic!("{m}")
            };
            // The text names the key, never the value sent.
            assert!(e.to_string().contains("logLevel") && !e.to_string().contains("WARN"));
        }
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

    fn meta(v: Value) -> JsonObject {
        match v {
            Value::Object(o) => o,
            _ => unreachable!("a JSON object"),
        }
    }

    fn client(caps: Value) -> JsonObject {
        meta(json!({
            META_PROTOCOL_VERSION: "2026-07-28",
            META_CLIENT_INFO: {"name": "c", "version": "1"},
            META_CLIENT_CAPABILITIES: caps,
        }))
    }

    #[test]
    fn a_repeated_meta_is_parsed_once_and_gives_what_parsing_gives() {
        let memo = MetaMemo::default();
        let a = client(json!({"elicitation": {"form": {}}, "x-ext": {"b": 1, "a": 2}}));
        let first = memo.parse(Some(&a)).unwrap();
        let again = memo.parse(Some(&a.clone())).unwrap();
        assert!(Arc::ptr_eq(&first, &again), "a hit");
        assert_eq!(*again, RequestMeta::from_object(Some(&a)).unwrap());
        // The same members in another order, at any depth: another object, whose
        // parse keeps its own order (a map's equality would not tell them apart).
        let b = client(json!({"elicitation": {"form": {}}, "x-ext": {"a": 2, "b": 1}}));
        let other = memo.parse(Some(&b)).unwrap();
        assert!(!Arc::ptr_eq(&first, &other));
        let keys = |m: &RequestMeta| {
            let ext = &m.client_capabilities.extra["x-ext"];
            ext.as_object().unwrap().keys().cloned().collect::<Vec<_>>()
        };
        assert_eq!(keys(&first), ["b", "a"]);
        assert_eq!(keys(&other), ["a", "b"]);
        // Another capability, another answer: nothing carries over.
        let c = client(json!({}));
        let none = memo.parse(Some(&c)).unwrap();
        assert!(none.client_capabilities.elicitation.is_none());
        assert!(first.client_capabilities.elicitation.is_some());
        // Numbers by representation: 1 and 1.0 are two objects.
        let one = memo.parse(Some(&client(json!({"x": {"n": 1}})))).unwrap();
        let one_f = memo.parse(Some(&client(json!({"x": {"n": 1.0}})))).unwrap();
        assert!(!Arc::ptr_eq(&one, &one_f));
        assert_eq!(one_f.client_capabilities.extra["x"]["n"], json!(1.0));
        assert_eq!(memo.len(), 5);
        assert_eq!(format!("{memo:?}"), "MetaMemo { entries: 5 }");
    }

    #[test]
    fn only_a_small_valid_meta_of_the_repeated_keys_is_kept() {
        let memo = MetaMemo::default();
        // Refused: the error parsing gives, nothing kept.
        for bad in [
            json!({META_PROTOCOL_VERSION: "2024-01-01", META_CLIENT_CAPABILITIES: {}}),
            json!({META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: []}),
            json!({META_PROTOCOL_VERSION: "2026-07-28"}),
        ] {
            let o = meta(bad);
            let want = RequestMeta::from_object(Some(&o)).unwrap_err().to_string();
            for _ in 0..2 {
                assert_eq!(memo.parse(Some(&o)).unwrap_err().to_string(), want);
            }
        }
        assert!(memo.parse(None).is_err());
        assert!(memo.parse_value(Some(&json!([]))).is_err());
        assert_eq!(memo.len(), 0);
        // A per-request key (progress token, trace context): parsed, not kept.
        let mut traced = client(json!({}));
        traced.insert("traceparent".into(), json!("00-1-2-01"));
        traced.insert("progressToken".into(), json!(7));
        let parsed = memo.parse(Some(&traced)).unwrap();
        assert_eq!(*parsed, RequestMeta::from_object(Some(&traced)).unwrap());
        assert_eq!(parsed.progress_token, Some(json!(7)));
        assert_eq!(memo.len(), 0);
        // Too large to keep.
        let big = client(json!({"x": {"s": "x".repeat(META_BYTES)}}));
        memo.parse(Some(&big)).unwrap();
        assert_eq!(memo.len(), 0);
        // Bounded in entries: the newest replace the oldest, and each still parses
        // to what parsing gives.
        for round in 0..2 {
            for i in 0..METAS + 3 {
                let o = client(json!({ "x": {"i": i} }));
                let m = memo.parse_value(Some(&Value::Object(o.clone()))).unwrap();
                assert_eq!(
                    *m,
                    RequestMeta::from_object(Some(&o)).unwrap(),
                    "{round} {i}"
                );
                assert!(memo.len() <= METAS);
            }
        }
        assert_eq!(memo.len(), METAS);
    }
}
