//! [`HttpGuard`]: what `mrtr serve` checks at the HTTP layer, in front of rmcp's
//! Streamable HTTP service (feature `http`).
//!
//! The public docs are on [`HttpGuard`].

use std::collections::HashMap;
use std::error::Error as StdError;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use ::rmcp::transport::streamable_http_server::session::{SessionId, SessionManager};
use bytes::Bytes;
use futures_util::future::BoxFuture;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode, header};
use http_body::Body;
use http_body_util::{BodyExt, Either, Full, LengthLimitError, Limited};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{Mrtr, Principals, SessionBound, correlation_id};
use mrtr::engine::Outcome;
use mrtr::error::Error;
use mrtr::principal::Principal;
use mrtr::wire::jsonrpc::{self, StrictJsonError, from_slice_strict};

/// The default most bindings of sessions to principals held at once: 10 000.
/// Each is a session id and a digest (about 100 bytes); rmcp's own session
/// behind each costs far more (a task, channels).
pub const DEFAULT_MAX_SESSIONS: usize = 10_000;

/// The default bound on reading one request body: 10 seconds, for a body of at
/// most [`mrtr::defaults::MAX_BODY`] bytes. rmcp's own read has no deadline.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// At most one sweep of dead bindings per this long, so a full map costs each
/// refused `initialize` nothing but a lookup.
const SWEEP_INTERVAL: Duration = Duration::from_secs(1);

/// The header naming a session (Streamable HTTP, 2025-11-25).
const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");

/// The HTTP layer `mrtr serve` has, for rmcp's Streamable HTTP service: refuses a
/// body with duplicate JSON keys (-32700, as `mrtr serve`), bounds the body read,
/// and binds every 2025-11-25 session to the principal that opened it. Wrap
/// rmcp's service with [`HttpGuard::wrap`].
///
/// ```text
///  client ──► Guarded (HttpGuard::wrap) ──────────────────────► rmcp StreamableHttpService
///             1. the session the request names: bound to this        (Request<Full<Bytes>>)
///                request's principal, else 404 as for no session
///             2. the body, bounded in size and time (413, 408)
///             3. duplicate JSON keys at any depth: -32700, as mrtr serve
///             4. an `initialize` that opens a session: the session is
///                bound to the principal that sent it
/// ```
///
/// # Duplicate keys
/// serde (and so rmcp) keeps the last of two members with the same name; other
/// readers keep the first. A proxy that routes or audits on the first `name` or
/// argument and a server that runs the last would act on different requests.
/// `mrtr serve` refuses such a body, and so does the guard, with the same
/// answer: HTTP 400, `{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse
/// error"}}` (no `id`: no member of an ambiguous message is trusted), the same
/// diagnostic in the log and the same count in the metrics. The detection is the
/// core's ([`from_slice_strict`]), run on every `POST` with a JSON body before
/// rmcp parses it; anything else (not JSON at all, another content type) goes on
/// to rmcp, which answers it as it does.
///
/// # Sessions bound to their principal
/// A 2025-11-25 client opens a session with `initialize` and names it on every
/// later request with `Mcp-Session-Id`. rmcp routes the answers to the server's
/// questions (`elicitation/create`, sampling, roots) by that id and nothing
/// else, so whoever learns the id can answer them. The guard resolves the
/// principal of the `initialize` that opens a session (with the [`Mrtr`]'s own
/// resolver, over the request's HTTP parts), keeps it (a SHA-256 digest, never
/// the value), and answers any later `POST`, `GET` or `DELETE` on that session
/// from another principal exactly as rmcp answers one on a session that does not
/// exist (404, `Not Found: Session not found`). A request on a session the guard
/// does not know goes on to rmcp only if it is a JSON-RPC request (rmcp answers
/// 404, or serves a 2026-07-28 request statelessly); an answer, a notification,
/// a `GET` or a `DELETE` on it gets the 404.
///
/// The guard marks each request it checked this way, and the adapter sends a
/// 2025-11-25 flow's asks only on a marked request (see
/// [`Mrtr::allow_unbound_sessions`]): so a legacy flow's answers come from the
/// principal that made the call, and one not served through the guard fails
/// closed.
///
/// The bindings live in memory, at most [`HttpGuard::with_max_sessions`] at once
/// (default [`DEFAULT_MAX_SESSIONS`]). A binding is dropped when its session is
/// deleted, when rmcp answers 404 for it (the session ended or idled out: rmcp's
/// `SessionConfig::keep_alive`, 5 minutes by default), and, when the map is
/// full, when rmcp's session manager no longer has the session. With every
/// binding in use by a live session, a new `initialize` is refused (503,
/// `Retry-After: 1`) rather than handing out an unbound session. The bindings
/// are per process: a session restored from rmcp's `session_store` on another
/// instance is unknown to that instance's guard, which refuses its answers,
/// notifications and streams (and the adapter sends its flows no asks), so do
/// not spread one session over instances behind the guard.
///
/// [`from_slice_strict`]: mrtr::wire::jsonrpc::from_slice_strict
///
/// # Example
///
/// ```
/// use std::sync::Arc;
/// use mrtr_rmcp::{HttpGuard, Mrtr, Principals};
/// use mrtr::{Engine, Keyring, Principal};
/// use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
/// use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
/// # #[derive(Clone)] struct Server;
/// # impl rmcp::ServerHandler for Server {}
///
/// let principals = Principals::from_http(|parts| {
///     Some(Principal::subject(parts.headers.get("x-user")?.to_str().ok()?))
/// });
/// let mrtr = Mrtr::new(Engine::new(Keyring::ephemeral(), "https://mcp.example.com"), principals);
/// // One session manager, for rmcp's service and for the guard.
/// let sessions = Arc::new(LocalSessionManager::default());
/// let guard = HttpGuard::new(&mrtr, Arc::clone(&sessions)).expect("an HTTP resolver");
/// let config = StreamableHttpServerConfig::default();
/// let mcp = StreamableHttpService::new(|| Ok(Server), sessions, config);
/// let app: axum::Router = axum::Router::new().nest_service("/mcp", guard.wrap(mcp));
/// # drop(app);
/// ```
pub struct HttpGuard {
    principals: Owners,
    sessions: Arc<dyn Sessions>,
    max_sessions: usize,
    max_body: usize,
    body_timeout: Duration,
}

impl fmt::Debug for HttpGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpGuard")
            .field("max_sessions", &self.max_sessions)
            .field("max_body", &self.max_body)
            .field("body_timeout", &self.body_timeout)
            .finish_non_exhaustive()
    }
}

/// Why an [`HttpGuard`] cannot be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HttpGuardError {
    /// The [`Mrtr`]'s principals come from rmcp's request context
    /// ([`FromContext`](super::FromContext)), which an HTTP layer does not have,
    /// so it cannot tell who sends a request on a session: use a source over the
    /// HTTP request (a [`PrincipalSource`](mrtr::principal::PrincipalSource)
    /// such as `FromExtension`, `FromHeader`, `Anonymous` or a closure).
    #[error(
        "HttpGuard needs principals it can resolve from the HTTP request \
         (a PrincipalSource over http::request::Parts), not from rmcp's request context"
    )]
    ContextPrincipals,
}

impl HttpGuard {
    /// A guard resolving principals as `mrtr` does, over the HTTP request parts.
    /// `sessions` is the session manager given to rmcp's service (the guard asks
    /// it which sessions still exist).
    ///
    /// # Errors
    /// [`HttpGuardError::ContextPrincipals`] when `mrtr`'s principals come from
    /// rmcp's request context, which the HTTP layer cannot read.
    pub fn new<M: SessionManager>(mrtr: &Mrtr, sessions: Arc<M>) -> Result<Self, HttpGuardError> {
        let principals = &mrtr.inner.principals;
        if principals.reads_context() {
            return Err(HttpGuardError::ContextPrincipals);
        }
        Ok(Self {
            principals: Owners(principals.clone()),
            sessions: Arc::new(Manager(sessions)),
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_body: mrtr::defaults::MAX_BODY,
            body_timeout: DEFAULT_BODY_TIMEOUT,
        })
    }

    /// The most sessions bound at once (at least 1; default
    /// [`DEFAULT_MAX_SESSIONS`]). At the cap, bindings whose session rmcp no
    /// longer has are dropped (at most once a second); if none is, a new
    /// `initialize` gets 503 with `Retry-After: 1`.
    #[must_use]
    pub fn with_max_sessions(mut self, n: usize) -> Self {
        self.max_sessions = n.max(1);
        self
    }

    /// The largest request body read (default [`mrtr::defaults::MAX_BODY`],
    /// 256 KiB, as `mrtr serve`); a larger one gets 413 before rmcp sees it.
    /// rmcp's own limit (`StreamableHttpServerConfig::max_request_body_bytes`,
    /// 4 MiB by default) applies after it; keep this one the smaller.
    #[must_use]
    pub fn with_max_body(mut self, bytes: usize) -> Self {
        self.max_body = bytes;
        self
    }

    /// How long reading one request body may take (default
    /// [`DEFAULT_BODY_TIMEOUT`], 10 s); then the request gets 408.
    #[must_use]
    pub fn with_body_timeout(mut self, timeout: Duration) -> Self {
        self.body_timeout = timeout;
        self
    }

    /// rmcp's Streamable HTTP service (or any service taking the buffered body)
    /// behind this guard.
    pub fn wrap<S>(self, inner: S) -> Guarded<S> {
        Guarded {
            inner,
            shared: Arc::new(Shared {
                bindings: Bindings {
                    map: Mutex::new(HashMap::new()),
                    max: self.max_sessions,
                    last_sweep: Mutex::new(None),
                    sessions: self.sessions,
                },
                principals: self.principals,
                max_body: self.max_body,
                body_timeout: self.body_timeout,
            }),
        }
    }
}

/// A service behind an [`HttpGuard`]: a `tower` service over `http::Request`,
/// for `axum::Router::nest_service` or any hyper server. Cheap to clone (the
/// bindings are shared).
pub struct Guarded<S> {
    inner: S,
    shared: Arc<Shared>,
}

impl<S: Clone> Clone for Guarded<S> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<S> fmt::Debug for Guarded<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guarded")
            .field("sessions_bound", &self.shared.bindings.len())
            .finish_non_exhaustive()
    }
}

impl<S, B, ResBody> tower_service::Service<Request<B>> for Guarded<S>
where
    S: tower_service::Service<Request<Full<Bytes>>, Response = Response<ResBody>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
    ResBody: Send + 'static,
{
    type Response = Response<Either<ResBody, Full<Bytes>>>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        // The service poll_ready readied goes with the request; a clone stays.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        let shared = Arc::clone(&self.shared);
        Box::pin(async move { shared.handle(inner, request).await })
    }
}

/// What every clone of a [`Guarded`] shares.
struct Shared {
    bindings: Bindings,
    principals: Owners,
    max_body: usize,
    body_timeout: Duration,
}

/// How the guard tells principals apart: the [`Mrtr`]'s resolver, over the
/// request's HTTP parts.
struct Owners(Principals);

/// Who a session belongs to: a digest of its principal, or no principal (the
/// resolver found none: the adapter refuses every request of such a session,
/// and the guard keeps anyone with a principal out of it).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Owner {
    Nobody,
    Principal([u8; 32]),
}

impl Owner {
    /// The digest of `principal`: each field tagged and length-prefixed, under a
    /// label of its own, so no two principals share one.
    fn of(principal: &Principal) -> Self {
        let mut h = Sha256::new();
        h.update(b"mrtr rmcp session owner v1");
        for field in [
            principal.subject_id(),
            principal.issuer(),
            principal.client_id(),
        ] {
            match field {
                None => h.update([0u8]),
                Some(v) => {
                    h.update([1u8]);
                    h.update((v.len() as u64).to_be_bytes());
                    h.update(v.as_bytes());
                }
            }
        }
        Self::Principal(h.finalize().into())
    }
}

impl Owners {
    fn owner(&self, parts: &http::request::Parts) -> Owner {
        self.0
            .of_http(parts)
            .map_or(Owner::Nobody, |p| Owner::of(&p))
    }
}

/// The session manager rmcp's service uses, as the guard needs it.
trait Sessions: Send + Sync {
    /// Whether the session still exists (an error counts as yes: the binding stays).
    fn exists(&self, id: SessionId) -> BoxFuture<'static, bool>;
    /// Ends a session the guard will not bind.
    fn close(&self, id: SessionId) -> BoxFuture<'static, ()>;
}

struct Manager<M>(Arc<M>);

impl<M: SessionManager> Sessions for Manager<M> {
    fn exists(&self, id: SessionId) -> BoxFuture<'static, bool> {
        let m = Arc::clone(&self.0);
        Box::pin(async move { m.has_session(&id).await.unwrap_or(true) })
    }

    fn close(&self, id: SessionId) -> BoxFuture<'static, ()> {
        let m = Arc::clone(&self.0);
        Box::pin(async move {
            let _ = m.close_session(&id).await;
        })
    }
}

/// The sessions bound to their principals.
struct Bindings {
    map: Mutex<HashMap<SessionId, Owner>>,
    max: usize,
    last_sweep: Mutex<Option<tokio::time::Instant>>,
    sessions: Arc<dyn Sessions>,
}

impl Bindings {
    fn len(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Owner>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn owner(&self, id: &str) -> Option<Owner> {
        self.lock().get(id).copied()
    }

    fn forget(&self, id: &str) {
        self.lock().remove(id);
    }

    /// Binds `id` to `owner`; false when every binding is taken.
    fn bind(&self, id: SessionId, owner: Owner) -> bool {
        let mut map = self.lock();
        if map.len() >= self.max && !map.contains_key(&id) {
            return false;
        }
        map.insert(id, owner);
        true
    }

    /// Whether a new session can be bound, after dropping the bindings of
    /// sessions rmcp no longer has if the map is full.
    async fn room(&self) -> bool {
        if self.len() < self.max {
            return true;
        }
        self.sweep().await;
        self.len() < self.max
    }

    /// Drops the bindings of sessions rmcp no longer has (at most once per
    /// [`SWEEP_INTERVAL`]).
    async fn sweep(&self) {
        {
            let mut last = self
                .last_sweep
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let now = tokio::time::Instant::now();
            if last.is_some_and(|t| now.duration_since(t) < SWEEP_INTERVAL) {
                return;
            }
            *last = Some(now);
        }
        let ids: Vec<SessionId> = self.lock().keys().cloned().collect();
        for id in ids {
            if !self.sessions.exists(Arc::clone(&id)).await {
                self.forget(&id);
            }
        }
    }
}

/// What a request's session header names, as rmcp reads it (the first value,
/// if it is text; anything else is no session, for rmcp as for the guard).
fn session_of(headers: &HeaderMap) -> Option<SessionId> {
    headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(SessionId::from)
}

/// Whether the body is declared JSON (the one content type rmcp parses).
fn is_json(headers: &HeaderMap) -> bool {
    // The Streamable HTTP rule, as `mrtr serve` applies it.
    mrtr::streamable_http::is_json_content_type(
        headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok()),
    )
}

impl Shared {
    async fn handle<S, B, ResBody>(
        &self,
        mut inner: S,
        request: Request<B>,
    ) -> Result<Response<Either<ResBody, Full<Bytes>>>, S::Error>
    where
        S: tower_service::Service<Request<Full<Bytes>>, Response = Response<ResBody>>,
        B: Body,
        B::Error: Into<Box<dyn StdError + Send + Sync>>,
    {
        let refuse = |r: Response<Full<Bytes>>| Ok(r.map(Either::Right));
        let (mut parts, body) = request.into_parts();
        let session = session_of(&parts.headers);
        // 1. The session: checked before the body is read.
        let mut known = false;
        if let Some(id) = &session {
            match self.bindings.owner(id) {
                Some(owner) if owner == self.principals.owner(&parts) => known = true,
                Some(_) => {
                    tracing::warn!(
                        target: "mrtr::diag",
                        method = %parts.method,
                        "refused a request on a 2025-11-25 session from a principal other \
                         than the one that opened it (answered as for no such session)"
                    );
                    return refuse(no_session());
                }
                None if parts.method != Method::POST => return refuse(no_session()),
                None => {}
            }
        }
        // 2. The body.
        let bytes = if parts.method == Method::POST {
            match self.read(&parts.headers, body).await {
                Ok(b) => b,
                Err(refusal) => return refuse(refusal),
            }
        } else {
            Bytes::new()
        };
        // 3. Duplicate keys; what the message is.
        let mut opens_session = false;
        if parts.method == Method::POST && is_json(&parts.headers) {
            match from_slice_strict(&bytes) {
                Err(StrictJsonError::DuplicateKey { line, column }) => {
                    return refuse(duplicate_keys(line, column));
                }
                // Not JSON: rmcp answers it as it does.
                Err(StrictJsonError::Syntax { .. }) => {}
                Ok(message) => {
                    let method = message.get("method").and_then(Value::as_str);
                    let request = method.is_some() && message.get("id").is_some();
                    if session.is_some() && !known && !request {
                        // An answer or a notification belongs to a live session only.
                        return refuse(no_session());
                    }
                    opens_session = session.is_none() && method == Some("initialize");
                }
            }
        }
        // 4. Who opens a session, if this request opens one.
        let opener = if opens_session {
            if !self.bindings.room().await {
                return refuse(busy());
            }
            Some(self.principals.owner(&parts))
        } else {
            None
        };
        if known {
            parts.extensions.insert(SessionBound);
        }
        let method = parts.method.clone();
        let response = inner
            .call(Request::from_parts(parts, Full::new(bytes)))
            .await?;
        if let Some(id) = session.as_deref().filter(|_| known)
            && (response.status() == StatusCode::NOT_FOUND
                || (method == Method::DELETE && response.status().is_success()))
        {
            // The session ended (rmcp no longer has it), or its client ended it.
            self.bindings.forget(id);
        }
        if session.is_none()
            && let Some(id) = session_of(response.headers())
        {
            let bound = opener.is_some_and(|owner| self.bindings.bind(Arc::clone(&id), owner));
            if !bound {
                // Never hand out a session nobody is bound to.
                self.bindings.sessions.close(id).await;
                return refuse(busy());
            }
        }
        Ok(response.map(Either::Left))
    }

    /// The body, at most `max_body` bytes within `body_timeout`; else the refusal
    /// `mrtr serve` answers (413, 408, 400).
    async fn read<B>(&self, headers: &HeaderMap, body: B) -> Result<Bytes, Response<Full<Bytes>>>
    where
        B: Body,
        B::Error: Into<Box<dyn StdError + Send + Sync>>,
    {
        let too_large = || {
            refusal(
                StatusCode::PAYLOAD_TOO_LARGE,
                jsonrpc::error(
                    None,
                    mrtr::error::code::INVALID_REQUEST,
                    &format!("Request body too large (limit {} bytes)", self.max_body),
                    None,
                ),
            )
        };
        let declared = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > self.max_body as u64) {
            return Err(too_large());
        }
        let read = Limited::new(body, self.max_body).collect();
        match tokio::time::timeout(self.body_timeout, read).await {
            Ok(Ok(collected)) => Ok(collected.to_bytes()),
            Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => Err(too_large()),
            Ok(Err(_)) => Err(refusal(
                StatusCode::BAD_REQUEST,
                jsonrpc::error(
                    None,
                    mrtr::error::code::INVALID_REQUEST,
                    "Invalid Request: the request body could not be read",
                    None,
                ),
            )),
            Err(_) => Err(refusal(
                StatusCode::REQUEST_TIMEOUT,
                jsonrpc::error(
                    None,
                    mrtr::error::code::INVALID_REQUEST,
                    "Invalid Request: the request body was not received in time",
                    None,
                ),
            )),
        }
    }
}

/// A JSON response of the guard's own.
fn refusal(status: StatusCode, body: Value) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// The answer to a body with a duplicate key, exactly as `mrtr serve` gives it
/// ([`mrtr::service::ParsedMessage`]): -32700 without an `id`, HTTP 400; its
/// diagnostic logged and its count recorded as the service does.
fn duplicate_keys(line: usize, column: usize) -> Response<Full<Bytes>> {
    let e = Error::parse(format!(
        "duplicate object key before line {line} column {column}"
    ));
    let status = StatusCode::from_u16(mrtr::streamable_http::error_status(&e))
        .unwrap_or(StatusCode::BAD_REQUEST);
    let body = e.to_jsonrpc(None);
    let named = mrtr::__private::Named::default();
    mrtr::__private::record::report(
        Some(&Outcome::<Value>::Protocol(e)),
        None,
        &correlation_id(),
        named,
        None,
    );
    refusal(status, body)
}

/// What rmcp answers for a session it does not have: the same for one bound to
/// another principal, so the answer tells nothing about the session.
fn no_session() -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from_static(
        b"Not Found: Session not found",
    )));
    *response.status_mut() = StatusCode::NOT_FOUND;
    response
}

/// Every binding is in use by a live session: `mrtr serve`'s busy answer.
fn busy() -> Response<Full<Bytes>> {
    let mut response = refusal(
        StatusCode::SERVICE_UNAVAILABLE,
        jsonrpc::error(
            None,
            mrtr::error::code::INTERNAL_ERROR,
            "Server busy: try again shortly",
            None,
        ),
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

#[cfg(test)]
mod tests;
