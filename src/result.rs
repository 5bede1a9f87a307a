//! Typed builders for the three complete carrier results (MCP 2026-07-28 `schema.ts`):
//! [`ToolResult`] (`CallToolResult`), [`PromptResult`] (`GetPromptResult`) and
//! [`ResourceResult`] (`ReadResourceResult`).
//!
//! Each converts into the result object as a [`serde_json::Value`] *without*
//! `resultType`: the engine adds `"resultType": "complete"` when the handler
//! returns. Binary data is taken as bytes and base64-encoded here; a string that
//! is already base64 is accepted only after it is checked.
//!
//! Tool failures the model should see (`isError: true`) are not built here; they
//! go through the crate's error channel ([`crate::error`]).
//!
//! ```
//! use mrtr::result::{Content, PromptResult, ResourceContents, ResourceResult, Role, ToolResult};
//! use serde_json::{Value, json};
//!
//! let tool: Value = ToolResult::text("Deployed.")
//!     .with(Content::image_bytes(&[0x89, b'P', b'N', b'G'], "image/png"))
//!     .into();
//! assert_eq!(tool, json!({"content": [
//!     {"type": "text", "text": "Deployed."},
//!     {"type": "image", "data": "iVBORw==", "mimeType": "image/png"},
//! ]}));
//!
//! let prompt: Value = PromptResult::new()
//!     .description("Review a diff")
//!     .user_text("Review this change:")
//!     .message(
//!         Role::User,
//!         Content::resource(ResourceContents::text("file:///a.rs", "text/x-rust", "fn main() {}")),
//!     )
//!     .into();
//! assert_eq!(prompt["messages"][1]["content"]["resource"]["uri"], "file:///a.rs");
//!
//! let resource: Value = ResourceResult::text("file:///notes.txt", "text/plain", "hello").into();
//! assert_eq!(resource["contents"][0]["text"], "hello");
//! ```

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Serialize;
use serde_json::{Map, Value};

/// Why a result could not be built. The text never holds the data itself.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A string given as base64 is not standard, padded base64 (RFC 4648 §4).
    #[error("{what} is not valid base64")]
    InvalidBase64 {
        /// Which data: `image data`, `audio data` or `blob`.
        what: &'static str,
    },
    /// The value for `structuredContent` could not be serialized to JSON (for
    /// example a map with non-string keys).
    #[error("structured content could not be serialized to JSON")]
    NotSerializable,
}

/// Checks that `data` is standard padded base64, as `schema.ts` `@format byte` asks.
fn checked_base64(data: String, what: &'static str) -> Result<String, BuildError> {
    // Decoding allocates, but proves the client will be able to decode it too.
    STANDARD
        .decode(data.as_bytes())
        .map_err(|_| BuildError::InvalidBase64 { what })?;
    Ok(data)
}

/// Who a prompt message is from (`Role`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// `"user"`.
    User,
    /// `"assistant"`.
    Assistant,
}

impl Role {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Assistant => "assistant",
        }
    }
}

/// The contents of a resource (`TextResourceContents` or `BlobResourceContents`),
/// returned by `resources/read` or embedded in a tool or prompt result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceContents {
    uri: String,
    mime_type: String,
    body: Body,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Body {
    Text(String),
    /// Already base64.
    Blob(String),
}

impl ResourceContents {
    /// Text contents.
    pub fn text(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        Self {
            uri: uri.into(),
            mime_type: mime_type.into(),
            body: Body::Text(text.into()),
        }
    }

    /// Binary contents, base64-encoded here.
    pub fn blob(uri: impl Into<String>, mime_type: impl Into<String>, bytes: &[u8]) -> Self {
        Self {
            uri: uri.into(),
            mime_type: mime_type.into(),
            body: Body::Blob(STANDARD.encode(bytes)),
        }
    }

    /// Binary contents already encoded as standard padded base64.
    ///
    /// # Errors
    /// [`BuildError::InvalidBase64`] when `base64` does not decode.
    pub fn blob_base64(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        base64: impl Into<String>,
    ) -> Result<Self, BuildError> {
        Ok(Self {
            uri: uri.into(),
            mime_type: mime_type.into(),
            body: Body::Blob(checked_base64(base64.into(), "blob")?),
        })
    }

    /// The JSON form: `{uri, mimeType, text}` or `{uri, mimeType, blob}`.
    pub fn to_value(&self) -> Value {
        let mut o = Map::new();
        o.insert("uri".into(), self.uri.clone().into());
        o.insert("mimeType".into(), self.mime_type.clone().into());
        match &self.body {
            Body::Text(t) => o.insert("text".into(), t.clone().into()),
            Body::Blob(b) => o.insert("blob".into(), b.clone().into()),
        };
        Value::Object(o)
    }
}

/// A link to a resource the client can read (`ResourceLink`,
/// `type: "resource_link"`). It need not appear in `resources/list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceLink {
    uri: String,
    name: String,
    title: Option<String>,
    description: Option<String>,
    mime_type: Option<String>,
    size: Option<u64>,
}

impl ResourceLink {
    /// A link to `uri`, with a programmatic `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
        }
    }

    /// Sets the display `title`.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the `description`, a hint to the model.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the `mimeType`.
    #[must_use]
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Sets the `size` of the raw contents in bytes (before base64).
    #[must_use]
    pub fn size(mut self, bytes: u64) -> Self {
        self.size = Some(bytes);
        self
    }
}

/// One content block (`ContentBlock`): text, image, audio, a resource link or an
/// embedded resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Content(Block);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Block {
    Text(String),
    /// `type`, base64 `data`, `mimeType`.
    Media(&'static str, String, String),
    Link(ResourceLink),
    Resource(ResourceContents),
}

/// The JSON form of a text block: the one place its shape is written.
fn text_block(text: String) -> Value {
    let mut o = Map::new();
    o.insert("type".into(), "text".into());
    o.insert("text".into(), text.into());
    Value::Object(o)
}

impl Content {
    /// `TextContent`.
    pub fn text(text: impl Into<String>) -> Self {
        Self(Block::Text(text.into()))
    }

    /// `ImageContent` from raw bytes, base64-encoded here.
    pub fn image_bytes(bytes: &[u8], mime_type: impl Into<String>) -> Self {
        Self(Block::Media(
            "image",
            STANDARD.encode(bytes),
            mime_type.into(),
        ))
    }

    /// `ImageContent` from data already in standard padded base64.
    ///
    /// # Errors
    /// [`BuildError::InvalidBase64`] when `base64` does not decode.
    pub fn image(
        base64: impl Into<String>,
        mime_type: impl Into<String>,
    ) -> Result<Self, BuildError> {
        let data = checked_base64(base64.into(), "image data")?;
        Ok(Self(Block::Media("image", data, mime_type.into())))
    }

    /// `AudioContent` from raw bytes, base64-encoded here.
    pub fn audio_bytes(bytes: &[u8], mime_type: impl Into<String>) -> Self {
        Self(Block::Media(
            "audio",
            STANDARD.encode(bytes),
            mime_type.into(),
        ))
    }

    /// `AudioContent` from data already in standard padded base64.
    ///
    /// # Errors
    /// [`BuildError::InvalidBase64`] when `base64` does not decode.
    pub fn audio(
        base64: impl Into<String>,
        mime_type: impl Into<String>,
    ) -> Result<Self, BuildError> {
        let data = checked_base64(base64.into(), "audio data")?;
        Ok(Self(Block::Media("audio", data, mime_type.into())))
    }

    /// `EmbeddedResource`: `resource` embedded in the result.
    pub fn resource(resource: ResourceContents) -> Self {
        Self(Block::Resource(resource))
    }

    /// `ResourceLink`.
    pub fn link(link: ResourceLink) -> Self {
        Self(Block::Link(link))
    }

    /// [`Content::to_value`], the block given up for it (a text is moved).
    fn into_value(self) -> Value {
        match self.0 {
            Block::Text(t) => text_block(t),
            block => Self(block).to_value(),
        }
    }

    /// The JSON form of the block.
    pub fn to_value(&self) -> Value {
        let mut o = Map::new();
        match &self.0 {
            Block::Text(t) => return text_block(t.clone()),
            Block::Media(kind, data, mime) => {
                o.insert("type".into(), (*kind).into());
                o.insert("data".into(), data.clone().into());
                o.insert("mimeType".into(), mime.clone().into());
            }
            Block::Resource(r) => {
                o.insert("type".into(), "resource".into());
                o.insert("resource".into(), r.to_value());
            }
            Block::Link(l) => {
                o.insert("type".into(), "resource_link".into());
                o.insert("uri".into(), l.uri.clone().into());
                o.insert("name".into(), l.name.clone().into());
                let optional = [
                    ("title", &l.title),
                    ("description", &l.description),
                    ("mimeType", &l.mime_type),
                ];
                for (k, v) in optional {
                    if let Some(v) = v {
                        o.insert(k.into(), v.clone().into());
                    }
                }
                if let Some(n) = l.size {
                    o.insert("size".into(), n.into());
                }
            }
        }
        Value::Object(o)
    }
}

/// A complete `tools/call` result (`CallToolResult`) without `isError`.
///
/// ```
/// use mrtr::result::ToolResult;
/// use serde::Serialize;
/// use serde_json::{Value, json};
///
/// #[derive(Serialize)]
/// struct Weather { city: &'static str, celsius: i32 }
///
/// let v: Value = ToolResult::structured(&Weather { city: "Paris", celsius: 21 }).unwrap().into();
/// assert_eq!(v, json!({
///     "content": [{"type": "text", "text": "{\"city\":\"Paris\",\"celsius\":21}"}],
///     "structuredContent": {"city": "Paris", "celsius": 21},
/// }));
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolResult {
    content: Vec<Content>,
    structured: Option<Value>,
}

impl ToolResult {
    /// A result with no content blocks (`content: []`, which the schema allows).
    pub fn new() -> Self {
        Self::default()
    }

    /// A result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::text(text)],
            structured: None,
        }
    }

    /// A result with `structuredContent` set to `value` and, for clients that only
    /// read `content`, one text block holding the same value as compact JSON (the
    /// spec's backwards-compatibility advice). Since 2026-07-28 any JSON value is
    /// allowed, not only an object.
    ///
    /// # Errors
    /// [`BuildError::NotSerializable`] when `value` does not serialize to JSON.
    pub fn structured<T: Serialize + ?Sized>(value: &T) -> Result<Self, BuildError> {
        let value = serde_json::to_value(value).map_err(|_| BuildError::NotSerializable)?;
        let text = serde_json::to_string(&value).map_err(|_| BuildError::NotSerializable)?;
        Ok(Self {
            content: vec![Content::text(text)],
            structured: Some(value),
        })
    }

    /// Appends any content block.
    #[must_use]
    pub fn with(mut self, content: Content) -> Self {
        self.content.push(content);
        self
    }
}

impl ToolResult {
    /// The text of each block and the structured content, when every block is
    /// text and the structured content is not `null` (the shape the `rmcp`
    /// adapter builds rmcp's result from directly); else the result, unchanged.
    pub(crate) fn into_texts(self) -> Result<(Vec<String>, Option<Value>), Self> {
        let plain = self.content.iter().all(|c| matches!(c.0, Block::Text(_)))
            && !matches!(self.structured, Some(Value::Null));
        if !plain {
            return Err(self);
        }
        let texts = self
            .content
            .into_iter()
            .filter_map(|c| match c.0 {
                Block::Text(t) => Some(t),
                _ => None,
            })
            .collect();
        Ok((texts, self.structured))
    }
}

impl From<ToolResult> for Value {
    fn from(r: ToolResult) -> Self {
        let mut o = Map::new();
        o.insert(
            "content".into(),
            r.content.into_iter().map(Content::into_value).collect(),
        );
        if let Some(s) = r.structured {
            o.insert("structuredContent".into(), s);
        }
        Value::Object(o)
    }
}

/// A complete `prompts/get` result (`GetPromptResult`): an optional description
/// and messages, each with one content block.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PromptResult {
    description: Option<String>,
    messages: Vec<(Role, Content)>,
}

impl PromptResult {
    /// A result with no messages yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the prompt's `description`.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Appends a message from `role` with any content block.
    #[must_use]
    pub fn message(mut self, role: Role, content: Content) -> Self {
        self.messages.push((role, content));
        self
    }

    /// Appends a user text message.
    #[must_use]
    pub fn user_text(self, text: impl Into<String>) -> Self {
        self.message(Role::User, Content::text(text))
    }
}

impl From<PromptResult> for Value {
    fn from(r: PromptResult) -> Self {
        let mut o = Map::new();
        if let Some(d) = r.description {
            o.insert("description".into(), d.into());
        }
        let messages = r
            .messages
            .iter()
            .map(|(role, content)| {
                let mut m = Map::new();
                m.insert("role".into(), role.as_str().into());
                m.insert("content".into(), content.to_value());
                Value::Object(m)
            })
            .collect();
        o.insert("messages".into(), messages);
        Value::Object(o)
    }
}

/// Who may reuse a cached `resources/read` result (`cacheScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CacheScope {
    /// `"public"`: holds no user-specific data; any cache may share it.
    Public,
    /// `"private"`: reusable only within the same authorization context.
    Private,
}

impl CacheScope {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Public => "public",
            Self::Private => "private",
        }
    }
}

/// A complete `resources/read` result (`ReadResourceResult`): one or more
/// contents, and the caching hints 2026-07-28 requires on it (`ttlMs`,
/// `cacheScope`).
///
/// The hints default to `ttlMs: 0` and `cacheScope: "private"` (stale at once,
/// never shared), which is right for any result that came from a retry:
/// `caching.mdx` says results of requests carrying `inputResponses` or
/// `requestState` MUST NOT be cached. Use [`ResourceResult::cache_for`] only for
/// a result produced without a round of input.
///
/// ```
/// use mrtr::result::{ResourceContents, ResourceResult};
/// use serde_json::{Value, json};
///
/// let v: Value = ResourceResult::blob("file:///logo.png", "image/png", &[1, 2, 3])
///     .with(ResourceContents::text("file:///logo.txt", "text/plain", "a logo"))
///     .into();
/// assert_eq!(v, json!({
///     "contents": [
///         {"uri": "file:///logo.png", "mimeType": "image/png", "blob": "AQID"},
///         {"uri": "file:///logo.txt", "mimeType": "text/plain", "text": "a logo"},
///     ],
///     "ttlMs": 0,
///     "cacheScope": "private",
/// }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceResult {
    contents: Vec<ResourceContents>,
    ttl_ms: u64,
    scope: CacheScope,
}

impl ResourceResult {
    /// A result with `contents` as its first entry.
    pub fn new(contents: ResourceContents) -> Self {
        Self {
            contents: vec![contents],
            ttl_ms: 0,
            scope: CacheScope::Private,
        }
    }

    /// A result with one text contents.
    pub fn text(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        Self::new(ResourceContents::text(uri, mime_type, text))
    }

    /// A result with one binary contents, base64-encoded here.
    pub fn blob(uri: impl Into<String>, mime_type: impl Into<String>, bytes: &[u8]) -> Self {
        Self::new(ResourceContents::blob(uri, mime_type, bytes))
    }

    /// Appends any contents.
    #[must_use]
    pub fn with(mut self, contents: ResourceContents) -> Self {
        self.contents.push(contents);
        self
    }

    /// Lets clients cache this result for `ttl_ms` milliseconds within `scope`.
    /// The default is `0` and [`CacheScope::Private`]; never raise it for a result
    /// produced by a retry (see the type's docs).
    #[must_use]
    pub fn cache_for(mut self, ttl_ms: u64, scope: CacheScope) -> Self {
        self.ttl_ms = ttl_ms;
        self.scope = scope;
        self
    }
}

impl ResourceResult {
    /// [`ResourceResult::cache_for`] unless the handler set hints of its own
    /// (anything but the default `0`, private): a registration's default.
    pub(crate) fn or_cache_for(self, caching: Option<(u64, CacheScope)>) -> Self {
        match caching {
            Some((ttl_ms, scope)) if self.ttl_ms == 0 && self.scope == CacheScope::Private => {
                self.cache_for(ttl_ms, scope)
            }
            _ => self,
        }
    }
}

impl From<ResourceResult> for Value {
    fn from(r: ResourceResult) -> Self {
        let mut o = Map::new();
        o.insert(
            "contents".into(),
            r.contents.iter().map(ResourceContents::to_value).collect(),
        );
        o.insert("ttlMs".into(), r.ttl_ms.into());
        o.insert("cacheScope".into(), r.scope.as_str().into());
        Value::Object(o)
    }
}

#[cfg(test)]
mod tests;
