//! `InputRequests` (what the server asks) and `InputResponses` (what the client answers).
//!
//! Input requests are bare `{method, params}` objects, not JSON-RPC requests: no
//! `jsonrpc`, no `id` (MCP 2026-07-28 schema, `InputRequest`). Input responses
//! have no `resultType`: the schema's `ElicitResult`, `CreateMessageResult` and
//! `ListRootsResult` do not extend `Result`.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::schema::RequestedSchema;
use super::{JsonObject, WireError, type_name};

/// The three kinds of input a server may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[non_exhaustive]
pub enum InputKind {
    /// `elicitation/create` in form mode.
    #[serde(rename = "elicitation/form")]
    ElicitForm,
    /// `elicitation/create` in url mode.
    #[serde(rename = "elicitation/url")]
    ElicitUrl,
    /// `sampling/createMessage`.
    #[serde(rename = "sampling")]
    Sampling,
    /// `roots/list`.
    #[serde(rename = "roots")]
    Roots,
}

impl InputKind {
    /// The JSON-RPC method of an input request of this kind.
    pub fn method(self) -> &'static str {
        match self {
            Self::ElicitForm | Self::ElicitUrl => "elicitation/create",
            Self::Sampling => "sampling/createMessage",
            Self::Roots => "roots/list",
        }
    }

    /// A short human name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ElicitForm => "elicitation/form",
            Self::ElicitUrl => "elicitation/url",
            Self::Sampling => "sampling",
            Self::Roots => "roots",
        }
    }
}

/// Form-mode elicitation params (`ElicitRequestFormParams`).
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitFormParams {
    /// What the user is asked.
    pub message: String,
    /// The flat schema of the form.
    pub requested_schema: RequestedSchema,
    /// Whether `mode: "form"` is written out (absent means form too).
    pub explicit_mode: bool,
}

/// URL-mode elicitation params (`ElicitRequestURLParams`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElicitUrlParams {
    /// Why the user should visit the URL.
    pub message: String,
    /// The URL to visit.
    pub url: String,
}

/// `elicitation/create` params: form or url mode.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ElicitParams {
    /// Form mode (`mode` absent or `"form"`).
    Form(ElicitFormParams),
    /// URL mode (`mode: "url"`).
    Url(ElicitUrlParams),
}

/// `sampling/createMessage` params (`CreateMessageRequestParams`).
///
/// Message content blocks are kept as JSON: mrtr passes them through untouched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageParams {
    /// `messages` (`SamplingMessage[]`: `{role, content, _meta?}`).
    pub messages: Vec<Value>,
    /// `maxTokens` (required).
    pub max_tokens: u64,
    /// `modelPreferences`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_preferences: Option<Value>,
    /// `systemPrompt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// `includeContext` (`none`, `thisServer`, `allServers`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_context: Option<String>,
    /// `temperature`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// `stopSequences`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// `metadata`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
    /// `tools` (needs the client's `sampling.tools`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Value>>,
    /// `toolChoice` (needs the client's `sampling.tools`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
    /// Fields this version does not know, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CreateMessageParams {
    /// One user text message and a token budget.
    pub fn user_text(text: impl Into<String>, max_tokens: u64) -> Self {
        Self {
            messages: vec![
                serde_json::json!({"role": "user", "content": {"type": "text", "text": text.into()}}),
            ],
            max_tokens,
            model_preferences: None,
            system_prompt: None,
            include_context: None,
            temperature: None,
            stop_sequences: None,
            metadata: None,
            tools: None,
            tool_choice: None,
            extra: JsonObject::new(),
        }
    }

    fn validate(&self) -> Result<(), WireError> {
        if let Some(ic) = &self.include_context
            && !matches!(ic.as_str(), "none" | "thisServer" | "allServers")
        {
            return Err(WireError::new(
                "includeContext must be none, thisServer or allServers",
            ));
        }
        for m in &self.messages {
            let ok = m.as_object().is_some_and(|o| {
                matches!(
                    o.get("role").and_then(Value::as_str),
                    Some("user" | "assistant")
                ) && o.contains_key("content")
            });
            if !ok {
                return Err(WireError::new(
                    "each sampling message needs a role (user or assistant) and content",
                ));
            }
        }
        Ok(())
    }
}

/// One input request: a bare `{method, params}` (`InputRequest` in schema.ts).
#[derive(Debug, Clone, PartialEq)]
// A handful of these exist per round; boxing the sampling params would only make
// matching on them clumsier for users.
#[allow(clippy::large_enum_variant)]
#[non_exhaustive]
pub enum InputRequest {
    /// `elicitation/create`.
    Elicit(ElicitParams),
    /// `sampling/createMessage`.
    CreateMessage(CreateMessageParams),
    /// `roots/list` (params, if any, carry only `_meta`).
    ListRoots {
        /// `params._meta`, when present.
        meta: Option<JsonObject>,
    },
}

impl InputRequest {
    /// The kind of this request.
    pub fn kind(&self) -> InputKind {
        match self {
            Self::Elicit(ElicitParams::Form(_)) => InputKind::ElicitForm,
            Self::Elicit(ElicitParams::Url(_)) => InputKind::ElicitUrl,
            Self::CreateMessage(_) => InputKind::Sampling,
            Self::ListRoots { .. } => InputKind::Roots,
        }
    }

    /// Feeds what tells asks apart cheaply (kind, message, URL, field names in
    /// order, sampling's size) to `h`: a key for a memo that then compares with
    /// [`InputRequest::same_as`].
    pub(crate) fn fingerprint(&self, h: &mut impl std::hash::Hasher) {
        h.write(self.kind().method().as_bytes());
        match self {
            Self::Elicit(ElicitParams::Form(f)) => {
                h.write(f.message.as_bytes());
                h.write_u8(0xff);
                for k in f.requested_schema.properties.keys() {
                    h.write(k.as_bytes());
                    h.write_u8(0xff);
                }
            }
            Self::Elicit(ElicitParams::Url(u)) => {
                h.write(u.message.as_bytes());
                h.write_u8(0xff);
                h.write(u.url.as_bytes());
            }
            Self::CreateMessage(p) => {
                h.write_u64(p.max_tokens);
                h.write_usize(p.messages.len());
            }
            Self::ListRoots { meta } => h.write_u8(u8::from(meta.is_some())),
        }
    }

    /// Whether `other` has the same JSON form as this ask: equal, and a form's
    /// fields in the same order (equality alone does not look at their order, the
    /// order the client shows them in).
    pub(crate) fn same_as(&self, other: &Self) -> bool {
        self == other
            && match (self, other) {
                (Self::Elicit(ElicitParams::Form(a)), Self::Elicit(ElicitParams::Form(b))) => a
                    .requested_schema
                    .properties
                    .keys()
                    .eq(b.requested_schema.properties.keys()),
                _ => true,
            }
    }

    /// The JSON form `{method, params}`.
    pub fn to_value(&self) -> Value {
        let mut o = Map::new();
        o.insert("method".into(), self.kind().method().into());
        match self {
            Self::Elicit(ElicitParams::Form(f)) => {
                let mut p = Map::new();
                if f.explicit_mode {
                    p.insert("mode".into(), "form".into());
                }
                p.insert("message".into(), f.message.clone().into());
                p.insert("requestedSchema".into(), f.requested_schema.to_value());
                o.insert("params".into(), Value::Object(p));
            }
            Self::Elicit(ElicitParams::Url(u)) => {
                o.insert(
                    "params".into(),
                    serde_json::json!({"mode": "url", "message": u.message, "url": u.url}),
                );
            }
            Self::CreateMessage(p) => {
                o.insert(
                    "params".into(),
                    serde_json::to_value(p).unwrap_or(Value::Null),
                );
            }
            Self::ListRoots { meta } => {
                if let Some(m) = meta {
                    o.insert("params".into(), serde_json::json!({ "_meta": m }));
                }
            }
        }
        Value::Object(o)
    }

    /// Parses `{method, params}`.
    ///
    /// # Errors
    /// On an unknown method or params the schema forbids.
    pub fn from_value(v: &Value) -> Result<Self, WireError> {
        let o = v
            .as_object()
            .ok_or_else(|| WireError::new("an input request must be an object"))?;
        let method = o
            .get("method")
            .and_then(Value::as_str)
            .ok_or_else(|| WireError::new("an input request needs a string method"))?;
        let params = o.get("params");
        match method {
            "elicitation/create" => {
                let p = params
                    .and_then(Value::as_object)
                    .ok_or_else(|| WireError::new("elicitation/create needs params"))?;
                let message = p
                    .get("message")
                    .and_then(Value::as_str)
                    .ok_or_else(|| WireError::new("elicitation/create needs a string message"))?
                    .to_owned();
                let mode = match p.get("mode") {
                    None => None,
                    Some(Value::String(m)) => Some(m.as_str()),
                    Some(_) => return Err(WireError::new("elicitation mode must be form or url")),
                };
                match mode {
                    None | Some("form") => {
                        let schema = p.get("requestedSchema").ok_or_else(|| {
                            WireError::new("a form elicitation needs requestedSchema")
                        })?;
                        Ok(Self::Elicit(ElicitParams::Form(ElicitFormParams {
                            message,
                            requested_schema: RequestedSchema::from_value(schema)?,
                            explicit_mode: mode.is_some(),
                        })))
                    }
                    Some("url") => {
                        let url = p.get("url").and_then(Value::as_str).ok_or_else(|| {
                            WireError::new("a url elicitation needs a string url")
                        })?;
                        if !url.contains(':') {
                            return Err(WireError::new("a url elicitation needs an absolute url"));
                        }
                        Ok(Self::Elicit(ElicitParams::Url(ElicitUrlParams {
                            message,
                            url: url.to_owned(),
                        })))
                    }
                    Some(_) => Err(WireError::new("elicitation mode must be form or url")),
                }
            }
            "sampling/createMessage" => {
                let p =
                    params.ok_or_else(|| WireError::new("sampling/createMessage needs params"))?;
                let p: CreateMessageParams = serde_json::from_value(p.clone()).map_err(|e| {
                    WireError::new(format!(
                        "sampling/createMessage params: {}",
                        field_error(&e)
                    ))
                })?;
                p.validate()?;
                Ok(Self::CreateMessage(p))
            }
            "roots/list" => {
                let meta = match params {
                    None | Some(Value::Null) => None,
                    Some(Value::Object(p)) => match p.get("_meta") {
                        None => None,
                        Some(Value::Object(m)) => Some(m.clone()),
                        Some(_) => {
                            return Err(WireError::new(
                                "roots/list params._meta must be an object",
                            ));
                        }
                    },
                    Some(_) => return Err(WireError::new("roots/list params must be an object")),
                };
                Ok(Self::ListRoots { meta })
            }
            _ => Err(WireError::new(
                "an input request method must be elicitation/create, sampling/createMessage or roots/list",
            )),
        }
    }
}

/// Strips serde's value echo from an error, keeping the field description.
fn field_error(e: &serde_json::Error) -> String {
    let s = e.to_string();
    // serde_json messages look like "missing field `maxTokens`" (a schema field
    // name: keep it), or "invalid type: string \"x\", expected u64" and
    // "invalid value: integer `-5`, expected u64" (a client value: keep only the
    // part before it, whichever quote serde used for it).
    if s.starts_with("missing field `") {
        return s;
    }
    match s.find(['"', '\'', '`']) {
        Some(i) => s[..i].trim_end().to_owned(),
        None => s,
    }
}

serde_via_value!(InputRequest);

/// The `inputRequests` map: server-assigned key → input request, in order.
pub type InputRequests = IndexMap<String, InputRequest>;

/// An elicitation answer's `action`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// The user submitted (form) or consented to open the URL (url mode).
    Accept,
    /// The user said no.
    Decline,
    /// The user dismissed the request.
    Cancel,
}

/// `ElicitResult`: `{action, content?}`.
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// The submitted form values (accept in form mode only).
    pub content: Option<JsonObject>,
}

impl ElicitResult {
    /// Parses `{action, content?}`; content values must be string, number, boolean or string[].
    ///
    /// # Errors
    /// When the shape does not match.
    pub fn from_value(v: &Value) -> Result<Self, WireError> {
        let (action, content) = Self::parts(v)?;
        Ok(Self {
            action,
            content: content.cloned(),
        })
    }

    /// [`ElicitResult::from_value`]'s checks, with the content borrowed: for a
    /// reader that keeps only part of it (a form's declared fields).
    pub(crate) fn parts(v: &Value) -> Result<(ElicitAction, Option<&JsonObject>), WireError> {
        let o = v
            .as_object()
            .ok_or_else(|| WireError::new("an elicitation answer must be an object"))?;
        let action = match o.get("action").and_then(Value::as_str) {
            Some("accept") => ElicitAction::Accept,
            Some("decline") => ElicitAction::Decline,
            Some("cancel") => ElicitAction::Cancel,
            _ => {
                return Err(WireError::new(
                    "an elicitation answer needs action accept, decline or cancel",
                ));
            }
        };
        let content = match o.get("content") {
            None | Some(Value::Null) => None,
            Some(Value::Object(c)) => {
                for (k, val) in c {
                    let ok = match val {
                        Value::String(_) | Value::Number(_) | Value::Bool(_) => true,
                        Value::Array(a) => a.iter().all(Value::is_string),
                        _ => false,
                    };
                    if !ok {
                        return Err(WireError::new(format!(
                            "content field {k:?} must be a string, number, boolean or array of strings, not {}",
                            type_name(val)
                        )));
                    }
                }
                Some(c)
            }
            Some(_) => return Err(WireError::new("elicitation content must be an object")),
        };
        Ok((action, content))
    }

    /// The JSON form.
    pub fn to_value(&self) -> Value {
        let mut o = Map::new();
        o.insert(
            "action".into(),
            serde_json::to_value(self.action).unwrap_or(Value::Null),
        );
        if let Some(c) = &self.content {
            o.insert("content".into(), Value::Object(c.clone()));
        }
        Value::Object(o)
    }
}

/// `CreateMessageResult`: `{role, content, model, stopReason?, _meta?}`.
///
/// Deserializing checks the role and the content blocks, like
/// [`InputResponse::parse_as`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", try_from = "RawCreateMessageResult")]
pub struct CreateMessageResult {
    /// `role` (`user` or `assistant`).
    pub role: String,
    /// `content`: one block or an array of blocks.
    pub content: Value,
    /// The model that produced it.
    pub model: String,
    /// `stopReason`, open-ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl CreateMessageResult {
    /// The concatenated text of the text blocks in `content`.
    pub fn text(&self) -> String {
        let block_text = |b: &Value| -> Option<String> {
            (b.get("type").and_then(Value::as_str) == Some("text"))
                .then(|| b.get("text").and_then(Value::as_str).map(str::to_owned))
                .flatten()
        };
        match &self.content {
            Value::Array(blocks) => blocks
                .iter()
                .filter_map(block_text)
                .collect::<Vec<_>>()
                .join(""),
            b => block_text(b).unwrap_or_default(),
        }
    }

    fn from_value(v: &Value) -> Result<Self, WireError> {
        serde_json::from_value(v.clone())
            .map_err(|e| WireError::new(format!("a sampling answer: {}", field_error(&e))))
    }
}

/// The unchecked shape of a [`CreateMessageResult`], so that its `Deserialize`
/// cannot skip the checks.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawCreateMessageResult {
    role: String,
    content: Value,
    model: String,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default, rename = "_meta")]
    meta: Option<JsonObject>,
}

impl TryFrom<RawCreateMessageResult> for CreateMessageResult {
    type Error = WireError;

    fn try_from(raw: RawCreateMessageResult) -> Result<Self, WireError> {
        let r = Self {
            role: raw.role,
            content: raw.content,
            model: raw.model,
            stop_reason: raw.stop_reason,
            meta: raw.meta,
        };
        if !matches!(r.role.as_str(), "user" | "assistant") {
            return Err(WireError::new(
                "a sampling answer's role must be user or assistant",
            ));
        }
        let content_ok = match &r.content {
            Value::Object(b) => b.get("type").is_some_and(Value::is_string),
            Value::Array(a) => a
                .iter()
                .all(|b| b.get("type").is_some_and(Value::is_string)),
            _ => false,
        };
        if !content_ok {
            return Err(WireError::new(
                "a sampling answer's content must be a content block or an array of them",
            ));
        }
        Ok(r)
    }
}

/// A root (`{uri, name?, _meta?}`); the uri must start with `file://`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Root {
    /// `file://` URI.
    pub uri: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

/// `ListRootsResult`: `{roots}`.
///
/// Deserializing checks that every root is a `file://` URI, like
/// [`InputResponse::parse_as`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawListRootsResult")]
pub struct ListRootsResult {
    /// The roots.
    pub roots: Vec<Root>,
}

impl ListRootsResult {
    fn from_value(v: &Value) -> Result<Self, WireError> {
        serde_json::from_value(v.clone())
            .map_err(|e| WireError::new(format!("a roots answer: {}", field_error(&e))))
    }
}

/// The unchecked shape of a [`ListRootsResult`].
#[derive(Deserialize)]
struct RawListRootsResult {
    roots: Vec<Root>,
}

impl TryFrom<RawListRootsResult> for ListRootsResult {
    type Error = WireError;

    fn try_from(raw: RawListRootsResult) -> Result<Self, WireError> {
        if raw.roots.iter().any(|x| !x.uri.starts_with("file://")) {
            return Err(WireError::new("every root uri must start with file://"));
        }
        Ok(Self { roots: raw.roots })
    }
}

/// One input response (`InputResponse`: no `resultType`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum InputResponse {
    /// An `ElicitResult`.
    Elicit(ElicitResult),
    /// A `CreateMessageResult`.
    CreateMessage(CreateMessageResult),
    /// A `ListRootsResult`.
    ListRoots(ListRootsResult),
}

impl InputResponse {
    /// Parses a response as the answer to a request of `kind`. A response of
    /// another shape fails, so a wrong-kind answer is never taken for the asked one.
    ///
    /// # Errors
    /// When `v` is not a valid answer of that kind.
    pub fn parse_as(kind: InputKind, v: &Value) -> Result<Self, WireError> {
        match kind {
            InputKind::ElicitForm | InputKind::ElicitUrl => {
                ElicitResult::from_value(v).map(Self::Elicit)
            }
            InputKind::Sampling => CreateMessageResult::from_value(v).map(Self::CreateMessage),
            InputKind::Roots => ListRootsResult::from_value(v).map(Self::ListRoots),
        }
    }

    /// Parses a response of unknown kind by its distinguishing field
    /// (`action`, `roots`, or `model`), never by trying shapes in turn.
    ///
    /// # Errors
    /// When no distinguishing field is present or the shape is invalid.
    pub fn from_value(v: &Value) -> Result<Self, WireError> {
        let o = v
            .as_object()
            .ok_or_else(|| WireError::new("an input response must be an object"))?;
        if o.contains_key("action") {
            ElicitResult::from_value(v).map(Self::Elicit)
        } else if o.contains_key("roots") {
            ListRootsResult::from_value(v).map(Self::ListRoots)
        } else if o.contains_key("model") {
            CreateMessageResult::from_value(v).map(Self::CreateMessage)
        } else {
            Err(WireError::new(
                "an input response must be an elicitation, sampling or roots result",
            ))
        }
    }

    /// The JSON form.
    pub fn to_value(&self) -> Value {
        match self {
            Self::Elicit(e) => e.to_value(),
            Self::CreateMessage(m) => serde_json::to_value(m).unwrap_or(Value::Null),
            Self::ListRoots(r) => serde_json::to_value(r).unwrap_or(Value::Null),
        }
    }
}

serde_via_value!(InputResponse);

/// The `inputResponses` map: key → response.
pub type InputResponses = IndexMap<String, InputResponse>;

#[cfg(test)]
mod tests;
