//! The 2025 era: servers that speak MCP 2025-11-25, 2025-06-18 or 2025-03-26,
//! which open a session with `initialize` and ask for input with requests of
//! their own (`elicitation/create`, `sampling/createMessage`, `roots/list`)
//! sent to the client while a request of the client's is open.
//!
//! A [`Client`](crate::Client) tells the eras apart by itself ([`EraMode::Auto`],
//! the default) and remembers what it learned per server ([`EraCache`]):
//!
//! - over HTTP it sends the first request as a 2026-07-28 one; a `400` whose body
//!   is not an error a 2026-07-28 server would send ([`is_modern_error`]) means
//!   a 2025-era server, anything else is the answer of a modern one (so a modern
//!   server costs no extra round trip);
//! - over stdio it first asks `server/discover`; an error to it (`-32601`, or
//!   `-32022` whose `data.supported` lists only 2025 versions) means a 2025-era
//!   server ([`discover_says_legacy`]).
//!
//! With a 2025-era server the client runs `initialize` (then
//! `notifications/initialized`) once, keeps the session (its `Mcp-Session-Id`
//! over HTTP), and sends each call as a plain 2025 request. Every server request
//! that arrives before the response is answered by the *same* handler that
//! answers an `InputRequiredResult`'s input requests: a server request's
//! `{method, params}` is an input request. Its key is made up by the client, as
//! the server gives none: `<method>#<n>`, the n-th server request of the call
//! (`elicitation/create#1`). At most [`MAX_SERVER_REQUESTS`] are answered per call
//! (by default), and the per-request time cap bounds `initialize` but not a
//! call, which waits for the user's answers (the total cap bounds it).
//!
//! Not done: the standalone `GET` stream of a 2025-era HTTP session is never
//! opened, so a server that sends its requests there rather than on the
//! stream of the `POST` they belong to is not answered (the SDKs send them on
//! the `POST`'s stream, and rmcp falls back to one even in JSON mode).
//!
//! A transport that can carry the 2025 era implements [`LegacyTransport`] and
//! returns itself from [`Transport::legacy`](crate::Transport::legacy);
//! [`HttpTransport`](crate::HttpTransport) and [`StdioTransport`](crate::StdioTransport) do.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use serde_json::Value;

use crate::{BoxFuture, TransportError};

/// The 2025-era protocol versions the client can speak, newest first; the first
/// is the one it asks for in `initialize`.
pub const LEGACY_PROTOCOL_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];

/// The most server requests answered during one call (a server that sends more
/// ends the call with [`ClientError::TooManyServerRequests`](crate::ClientError::TooManyServerRequests)).
pub const MAX_SERVER_REQUESTS: usize = 32;

/// The longest SSE event (or the bytes of a stream read without completing
/// one) a 2025-era exchange takes.
pub const MAX_EVENT_BYTES: usize = 4 * 1024 * 1024;

/// The longest `Mcp-Session-Id` kept (bytes); a longer one is refused.
pub const MAX_SESSION_ID_BYTES: usize = 1024;

/// The most servers an [`EraCache`] remembers; past it, the oldest entry goes.
pub const MAX_REMEMBERED_SERVERS: usize = 256;

/// Which generation of MCP a server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Era {
    /// MCP 2026-07-28: stateless, `_meta` on every request, `InputRequiredResult`.
    Modern,
    /// MCP 2025-11-25, 2025-06-18 or 2025-03-26: `initialize`, sessions, server requests.
    Legacy,
}

impl Era {
    /// `"modern"` or `"legacy"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Modern => "modern",
            Self::Legacy => "legacy",
        }
    }

    /// The era named `s` (`"modern"` or `"legacy"`).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "modern" => Some(Self::Modern),
            "legacy" => Some(Self::Legacy),
            _ => None,
        }
    }
}

/// How a [`Client`](crate::Client) picks the era of its server
/// ([`ClientBuilder::with_era`](crate::ClientBuilder::with_era)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum EraMode {
    /// Tell it from the server's answers (see [the module](self)), and remember it.
    #[default]
    Auto,
    /// Always MCP 2026-07-28.
    Modern,
    /// Always the 2025 era (`initialize` first).
    Legacy,
}

/// The eras learned, by server (an HTTP endpoint without userinfo or query, a stdio server's command
/// line): shared by the clients it is given to, at most
/// [`MAX_REMEMBERED_SERVERS`] entries.
#[derive(Debug, Default)]
pub struct EraCache {
    inner: Mutex<CacheInner>,
}

#[derive(Debug, Default)]
struct CacheInner {
    eras: HashMap<String, (Era, u64)>,
    tick: u64,
}

impl EraCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The era remembered for `server`.
    pub fn get(&self, server: &str) -> Option<Era> {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.eras.get(server).map(|(era, _)| *era)
    }

    /// Remembers `era` for `server`; the entry used least recently goes when the
    /// cache is full.
    pub fn insert(&self, server: &str, era: Era) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.tick += 1;
        let tick = inner.tick;
        if !inner.eras.contains_key(server) && inner.eras.len() >= MAX_REMEMBERED_SERVERS {
            let oldest = inner
                .eras
                .iter()
                .min_by_key(|(_, (_, t))| *t)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                inner.eras.remove(&k);
            }
        }
        inner.eras.insert(server.to_owned(), (era, tick));
    }

    /// Forgets `server` (e.g. after it was upgraded).
    pub fn forget(&self, server: &str) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.eras.remove(server);
    }

    /// Every entry, to store (e.g. in a file, as `mrtr call` does).
    pub fn entries(&self) -> Vec<(String, Era)> {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let mut all: Vec<_> = inner
            .eras
            .iter()
            .map(|(k, (e, t))| (k.clone(), *e, *t))
            .collect();
        all.sort_by_key(|(_, _, t)| *t);
        all.into_iter().map(|(k, e, _)| (k, e)).collect()
    }
}

/// A 2025-era session: the version `initialize` settled on, and over HTTP the
/// `Mcp-Session-Id` the server gave (never shown by `Debug`).
#[derive(Default)]
pub struct Session {
    version: Mutex<Option<String>>,
    id: Mutex<Option<String>>,
    /// When `initialize` was answered (the session's life is measured from it).
    opened: Mutex<Option<std::time::Instant>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("version", &self.version())
            .field("id", &self.id().map(|_| ".."))
            .finish()
    }
}

impl Session {
    /// A session not initialized yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The negotiated protocol version; `None` until `initialize` was answered.
    pub fn version(&self) -> Option<String> {
        self.version
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Sets the negotiated protocol version: the session is open from now.
    pub fn set_version(&self, version: &str) {
        *self.version.lock().unwrap_or_else(PoisonError::into_inner) = Some(version.to_owned());
        *self.opened.lock().unwrap_or_else(PoisonError::into_inner) =
            Some(std::time::Instant::now());
    }

    /// How long the session has been open (since its version was set);
    /// `None` before.
    pub fn age(&self) -> Option<std::time::Duration> {
        self.opened
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .map(|t| t.elapsed())
    }

    /// The session id the server assigned (HTTP), if any: a secret, never to log.
    pub fn id(&self) -> Option<String> {
        self.id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Keeps the session id the server assigned.
    ///
    /// # Errors
    /// [`TransportError::InvalidResponse`] when it is empty, longer than
    /// [`MAX_SESSION_ID_BYTES`] or not visible ASCII (the message never shows it).
    pub fn set_id(&self, id: &str) -> Result<(), TransportError> {
        if id.is_empty()
            || id.len() > MAX_SESSION_ID_BYTES
            || !id.bytes().all(|b| (0x21..=0x7e).contains(&b))
        {
            return Err(TransportError::InvalidResponse(
                "the server's Mcp-Session-Id is not 1 to 1024 visible ASCII characters".into(),
            ));
        }
        *self.id.lock().unwrap_or_else(PoisonError::into_inner) = Some(id.to_owned());
        Ok(())
    }
}

/// What a transport does with a server request ([`ServeRequest::serve`]'s answer).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Served {
    /// Send this JSON-RPC response back and keep waiting for the response.
    Answer(Value),
    /// Send this JSON-RPC response back (if any), then stop waiting: the call
    /// ends (the server broke a rule or a cap, or a handler gave no answer).
    Stop(Option<Value>),
}

/// Answers the requests a 2025-era server sends while a request is open.
pub trait ServeRequest: Send + Sync {
    /// The answer to `request` (a whole JSON-RPC request object from the server).
    fn serve(&self, request: Value) -> BoxFuture<'_, Served>;
}

/// What became of a message sent with [`LegacyTransport::exchange`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Exchanged {
    /// The JSON-RPC response to the request.
    Response(Value),
    /// Nothing to wait for: a notification or a response was delivered.
    Delivered,
    /// [`ServeRequest::serve`] said [`Served::Stop`].
    Stopped,
}

/// What the first request to a server of unknown era came to ([`LegacyTransport::probe`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Probe {
    /// A 2026-07-28 server; this is its response to the request.
    Modern(Value),
    /// A 2025-era server: the request was not taken, and must be sent again
    /// in a session.
    Legacy,
}

/// A transport that can also carry the 2025 era.
pub trait LegacyTransport: Send + Sync + std::fmt::Debug {
    /// Where the server is, to remember its era by: an HTTP URL's origin and
    /// path, a stdio server's command line.
    fn server(&self) -> String;

    /// Sends `request` (a 2026-07-28 request, `_meta` and all) to a server whose
    /// era is not known, and tells the era by what comes back (see [the module](self)).
    ///
    /// # Errors
    /// When no response could be obtained.
    fn probe(&self, request: Value) -> BoxFuture<'_, Result<Probe, TransportError>>;

    /// Sends one 2025-era message (a request, a notification, or a response)
    /// in `session`: over HTTP with its headers (`MCP-Protocol-Version`,
    /// `Mcp-Session-Id`), reading the session id from the answer to
    /// `initialize`. Every server request that arrives before the response is
    /// handed to `serve`, and its answer sent back.
    ///
    /// # Errors
    /// When the message could not be delivered or no response obtained.
    fn exchange<'a>(
        &'a self,
        session: &'a Session,
        message: Value,
        serve: &'a dyn ServeRequest,
    ) -> BoxFuture<'a, Result<Exchanged, TransportError>>;

    /// Ends `session` (over HTTP a `DELETE` with its id); errors are ignored.
    fn end<'a>(&'a self, session: &'a Session) -> BoxFuture<'a, ()>;
}

fn is_legacy_version(v: &str) -> bool {
    LEGACY_PROTOCOL_VERSIONS.contains(&v)
}

/// Whether a `-32022` error's `data.supported` lists only 2025-era versions
/// (`None` when it lists none to judge by).
fn supports_only_legacy(error: &Value) -> Option<bool> {
    let supported = error.pointer("/data/supported")?.as_array()?;
    let versions: Vec<&str> = supported.iter().filter_map(Value::as_str).collect();
    if versions.is_empty() {
        return None;
    }
    Some(versions.iter().all(|v| is_legacy_version(v)))
}

/// Whether `body`, the body of an HTTP `400` to the 2026-07-28 request with id
/// `request_id`, is an error a 2026-07-28 server sends: `-32020` or `-32021`;
/// `-32022` unless its `data.supported` lists only 2025 versions; or any other
/// error that answers the request's id with a code outside the
/// implementation-defined range `-32099..=-32000` (where 2025-era SDKs put their
/// "no session" and "not initialized" refusals, which answer no id).
pub fn is_modern_error(body: &Value, request_id: &Value) -> bool {
    let Some(error) = body.get("error").filter(|e| e.is_object()) else {
        return false;
    };
    let Some(code) = error.get("code").and_then(Value::as_i64) else {
        return false;
    };
    match code {
        mrtr::error::code::HEADER_MISMATCH
        | mrtr::error::code::MISSING_REQUIRED_CLIENT_CAPABILITY => true,
        mrtr::error::code::UNSUPPORTED_PROTOCOL_VERSION => {
            supports_only_legacy(error) != Some(true)
        }
        -32099..=-32000 => false,
        _ => body
            .get("id")
            .is_some_and(|id| id == request_id && !id.is_null()),
    }
}

/// Whether the response to a `server/discover` probe says the server is of the
/// 2025 era: any error but a `-32022` that names a 2026-era version (a modern
/// server answers `server/discover`; a 2025 one does not know it, `-32601`, or
/// refuses it before `initialize`).
pub fn discover_says_legacy(response: &Value) -> bool {
    let Some(error) = response.get("error") else {
        return false;
    };
    let code = error.get("code").and_then(Value::as_i64);
    match code {
        Some(mrtr::error::code::UNSUPPORTED_PROTOCOL_VERSION) => {
            supports_only_legacy(error) == Some(true)
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn modern_errors_are_told_from_legacy_refusals() {
        let id = json!(3);
        let err = |id: Value, code: i64, data: Value| json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": "m", "data": data}});
        // Modern: the 2026-07-28 codes, and standard errors that answer our id.
        assert!(is_modern_error(&err(json!(null), -32020, Value::Null), &id));
        assert!(is_modern_error(&err(json!(3), -32021, Value::Null), &id));
        assert!(is_modern_error(
            &err(json!(3), -32022, json!({"supported": ["2026-07-28"]})),
            &id
        ));
        assert!(is_modern_error(&err(json!(3), -32602, Value::Null), &id));
        // Legacy: -32022 with only 2025 versions, session refusals, other ids, no JSON-RPC.
        assert!(!is_modern_error(
            &err(
                json!(3),
                -32022,
                json!({"supported": ["2025-11-25", "2025-06-18"]})
            ),
            &id
        ));
        assert!(!is_modern_error(
            &err(json!(null), -32000, Value::Null),
            &id
        ));
        assert!(!is_modern_error(&err(json!(3), -32001, Value::Null), &id));
        assert!(!is_modern_error(
            &err(json!("server-error"), -32600, Value::Null),
            &id
        ));
        assert!(!is_modern_error(
            &err(json!(null), -32600, Value::Null),
            &id
        ));
        assert!(!is_modern_error(&json!("Bad Request"), &id));
        assert!(!is_modern_error(&json!({"error": "x"}), &id));
        assert!(!is_modern_error(
            &json!({"jsonrpc": "2.0", "id": 3, "result": {}}),
            &id
        ));
    }

    #[test]
    fn discover_probe() {
        assert!(!discover_says_legacy(&json!({"id": 1, "result": {}})));
        assert!(discover_says_legacy(
            &json!({"id": 1, "error": {"code": -32601, "message": "no"}})
        ));
        assert!(discover_says_legacy(
            &json!({"id": 1, "error": {"code": -32022,
            "message": "v", "data": {"supported": ["2025-06-18"]}}})
        ));
        assert!(!discover_says_legacy(
            &json!({"id": 1, "error": {"code": -32022,
            "message": "v", "data": {"supported": ["2025-11-25", "2026-07-28"]}}})
        ));
    }

    #[test]
    fn session_ids_are_checked_and_not_shown() {
        let s = Session::new();
        assert!(s.set_id("").is_err());
        assert!(s.set_id("a b").is_err());
        assert!(s.set_id(&"x".repeat(MAX_SESSION_ID_BYTES + 1)).is_err());
        s.set_id("s3cret-session").unwrap();
        assert_eq!(s.id().as_deref(), Some("s3cret-session"));
        assert!(!format!("{s:?}").contains("s3cret"));
    }

    #[test]
    fn the_cache_is_capped() {
        let c = EraCache::new();
        for i in 0..MAX_REMEMBERED_SERVERS + 10 {
            c.insert(&format!("s{i}"), Era::Legacy);
        }
        assert_eq!(c.entries().len(), MAX_REMEMBERED_SERVERS);
        assert_eq!(c.get("s0"), None);
        assert_eq!(
            c.get(&format!("s{}", MAX_REMEMBERED_SERVERS + 9)),
            Some(Era::Legacy)
        );
        c.insert("s300", Era::Modern);
        assert_eq!(c.get("s300"), Some(Era::Modern));
    }
}
