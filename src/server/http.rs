//! Streamable HTTP transport: `POST /mcp` (axum on tokio).
//!
//! [`mcp_router`] is a router you mount in your own axum application, behind your
//! own authentication layer; `mrtr serve` runs the same router in a process of its
//! own. The principal every sealed `requestState` is bound to comes from the
//! request, through the [`PrincipalSource`] you give: [`FromExtension`] (a
//! [`Principal`] your authentication middleware put into the request's
//! extensions), [`FromHeader`] (a header set by an authenticating reverse proxy),
//! a closure, or [`Anonymous`], which must be chosen by name.
//!
//! ```no_run
//! use std::sync::Arc;
//! use axum::{Router, extract::Request, middleware::{self, Next}, response::Response};
//! use mrtr::server::http::{FromExtension, HttpOptions, mcp_router};
//! use mrtr::{Engine, Keyring, Principal, Service};
//!
//! async fn authenticate(mut req: Request, next: Next) -> Response {
//!     // Your authentication: on success, say who the caller is; else answer 401 here.
//!     req.extensions_mut().insert(Principal::subject("alice"));
//!     next.run(req).await
//! }
//!
//! let service = Arc::new(Service::new(Engine::new(Keyring::ephemeral(), "https://mcp.example.com"), "example", "1.0.0"));
//! let app: Router = Router::new()
//!     .merge(mcp_router(service, HttpOptions::default(), FromExtension))
//!     .layer(middleware::from_fn(authenticate));
//! ```
//!
//! Order of checks on `POST /mcp`: `Host` (421, only with an allow-list), `Origin`
//! (403), the principal (401), `Content-Type` (415), the declared body size (413),
//! the body's share of the body budget (503 after
//! [`defaults::ADMISSION_TIMEOUT`]), the body itself (413; 408 when it does not
//! arrive in time), a slot under the in-flight cap (503 after
//! [`defaults::ADMISSION_TIMEOUT`]), then [`Service::handle_parsed_until`]. A
//! request takes its in-flight slot only once its body is in, so bodies that
//! arrive slowly, or never, hold no slot that another request needs. `GET`/`DELETE` (and any other method) on
//! `/mcp` answer 405 with `Allow: POST`. The router has no fallback of its own, so
//! it merges into an application that has one; `mrtr serve` answers 404 on other
//! paths.
//!
//! # DNS rebinding: `Origin` and `Host`
//! A web page whose name an attacker points at 127.0.0.1 is, to the browser, the
//! same origin as the attacker's site, so it can reach a loopback server. Two
//! checks refuse it. `Origin` (spec: Streamable HTTP §Security Warning): a browser
//! sends it on every POST, and only loopback origins and the ones you allow pass
//! (403). `Host` ([`HttpOptions::allow_host`]): the name the request was sent to
//! must be one you listed; the rebound page sends its own name (421). The router
//! checks `Host` only when given a list, since behind your proxy only you know your
//! names; `mrtr serve` on a loopback address without `--allow-host` allows
//! `localhost`, `127.0.0.1` and `[::1]` on any port.
//!
//! # Limits
//! Per router ([`HttpOptions`]): the body size, the time a body may take (a
//! short allowance plus its size at a minimum rate, so neither a stalled nor a
//! trickled body can stretch it), the requests in flight, and a budget of body
//! bytes buffered at once. Per listener ([`ServeOptions`], for [`serve_with`],
//! which runs its own accept loop since `axum::serve` has none of these): the
//! header-read and keep-alive idle timeouts, the connection cap, and the share of
//! it one peer may hold. If you serve the router with `axum::serve` or your own
//! server, put the connection-level limits there (or in front of it): without a
//! per-peer cap, one client can hold every connection with bodies it never sends.
//!
//! [`Service::handle_parsed_until`] is awaited on the request's own task: the core
//! does no I/O itself, and a handler that awaits (a database, an API) yields the
//! worker to other requests instead of blocking it. The handler's deadline is the
//! service's [`Service::handler_timeout_value`]. Panics in a handler are caught by
//! the service (-32603); a panic anywhere else in the request is caught around the
//! whole request (a 500 with a -32603 body).
//!
//! Only the parse moves: a body larger than [`defaults::BLOCKING_PARSE_THRESHOLD`]
//! is parsed with [`ParsedMessage::parse`] on tokio's blocking pool, so a burst of
//! large bodies does not hold the runtime's workers while small requests (a
//! `ping`) wait. Parsing is the one step whose cost grows with the body; the rest
//! is bounded whatever the client sends (the `requestState` it opens is at most
//! [`defaults::MAX_TOKEN_LEN`] characters). Running the whole request on a
//! blocking thread instead (`Handle::block_on` in `spawn_blocking`) would cover the
//! handler too, but would hold a blocking thread for as long as an async handler
//! awaits its database, and those threads are many and heavy compared to tasks.
//! How many bodies are parsed at once is bounded by the body budget.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::handler::Handler as _;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::post;
use http_body_util::BodyExt;

use super::{ServerConfigError, log};
use crate::defaults;
use crate::service::{ParsedMessage, Reply, RequestContext, RequestLog, Service};
use crate::streamable_http::{HEADER_METHOD, HEADER_NAME, HEADER_PROTOCOL_VERSION, McpHeaders};
use crate::time::Timestamp;

mod connections;
mod principal;

pub use connections::{ServeOptions, serve_with};
pub(crate) use principal::is_principal_name;
pub use principal::{Anonymous, FromExtension, FromHeader, PrincipalSource, Rejection};

/// The path of the MCP endpoint.
pub const MCP_PATH: &str = "/mcp";

/// The router's limits: the body size, the requests in flight, the body bytes
/// buffered at once, and the allowed `Origin` and `Host` values.
///
/// ```
/// use mrtr::server::http::HttpOptions;
/// let options = HttpOptions::default()
///     .max_body(64 * 1024)
///     .max_in_flight(128)
///     .body_budget(2 * 1024 * 1024)
///     .allow_origin("https://app.example")?
///     .allow_host("mcp.example.com")?;
/// # Ok::<(), mrtr::server::ServerConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct HttpOptions {
    max_body: usize,
    body_timeout: Duration,
    body_min_rate: u64,
    max_in_flight: usize,
    body_budget: usize,
    allowed_origins: Vec<String>,
    allowed_hosts: Vec<HostPattern>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            max_body: defaults::MAX_BODY,
            body_timeout: defaults::BODY_READ_TIMEOUT,
            body_min_rate: defaults::BODY_MIN_RATE,
            max_in_flight: defaults::MAX_IN_FLIGHT,
            body_budget: defaults::BODY_BUDGET,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
        }
    }
}

/// The largest body any setting admits: a reservation of the body budget is
/// counted in `u32` permits.
const MAX_BODY_CEILING: usize = u32::MAX as usize;

impl HttpOptions {
    /// The largest request body accepted, in bytes (at most 4 GiB); larger ones
    /// get 413. Nothing is allocated from a declared `Content-Length`: the buffer
    /// grows with the bytes that arrive. Default: [`defaults::MAX_BODY`] (256 KiB).
    #[must_use]
    pub fn max_body(mut self, bytes: usize) -> Self {
        self.max_body = bytes.min(MAX_BODY_CEILING);
        self
    }

    /// How long a body may take beyond what its size needs at
    /// [`HttpOptions::body_min_rate`]: a body must be in within this plus
    /// (bytes arrived so far) ÷ (minimum rate) of the start of its read, or the
    /// request gets 408. A body that stalls is cut after this long; one trickled
    /// below the minimum rate soon after. Waiting for a share of the body budget
    /// does not count. Default: [`defaults::BODY_READ_TIMEOUT`] (5 s).
    #[must_use]
    pub fn body_timeout(mut self, timeout: Duration) -> Self {
        self.body_timeout = timeout;
        self
    }

    /// The slowest average rate a body may arrive at past
    /// [`HttpOptions::body_timeout`], in bytes per second (at least 1). Default:
    /// [`defaults::BODY_MIN_RATE`] (16 KiB/s).
    #[must_use]
    pub fn body_min_rate(mut self, bytes_per_sec: u64) -> Self {
        self.body_min_rate = bytes_per_sec.max(1);
        self
    }

    /// The most requests this router handles at once (at least 1). A request
    /// takes its slot once its body is in; beyond the cap it waits for at most
    /// [`defaults::ADMISSION_TIMEOUT`], then gets 503 with `Retry-After: 1`.
    /// Default: [`defaults::MAX_IN_FLIGHT`] (256).
    #[must_use]
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.max_in_flight = n.max(1);
        self
    }

    /// The bytes of request bodies this router buffers at once beyond the first
    /// [`defaults::BODY_ALLOWANCE`] (16 KiB) of each; raised to the body limit if
    /// smaller, so every admissible body fits. A body over the allowance reserves
    /// its size before any of it is read and keeps the reservation until its reply
    /// is built; while the budget is spent it waits, for at most
    /// [`defaults::ADMISSION_TIMEOUT`], then gets 503 with `Retry-After: 1`.
    /// Default: [`defaults::BODY_BUDGET`] (4 MiB).
    #[must_use]
    pub fn body_budget(mut self, bytes: usize) -> Self {
        self.body_budget = bytes;
        self
    }

    /// Allows requests whose `Origin` is `origin` (`scheme://host[:port]`).
    /// Default: only requests without `Origin` or from `http://localhost`,
    /// `http://127.0.0.1` and `http://[::1]` (any port); any other `Origin` gets 403
    /// (spec: Streamable HTTP §Security Warning, DNS rebinding).
    ///
    /// # Errors
    /// [`ServerConfigError`] if `origin` is not of the form `scheme://host[:port]`.
    pub fn allow_origin(mut self, origin: &str) -> Result<Self, ServerConfigError> {
        let origin = normalize_origin(origin)?;
        if !self.allowed_origins.contains(&origin) {
            self.allowed_origins.push(origin);
        }
        Ok(self)
    }

    /// Allows requests addressed to `host` (`NAME`, `NAME:PORT`, an IPv4 address,
    /// or `[IPv6]`, with or without `:PORT`; without a port, any port matches).
    /// Once any host is allowed, a request whose `Host` (or absolute request target)
    /// names another, or that has none, gets `421 Misdirected Request` before
    /// anything else is looked at: this server does not answer for that name. That
    /// is the `Host` half of the DNS-rebinding defence (see the module doc); 421
    /// rather than 403 because the request may be fine, only sent to the wrong
    /// name. Default: no list, every `Host` passes (`mrtr serve` on a loopback
    /// address allows the loopback names unless `--allow-host` is given).
    ///
    /// # Errors
    /// [`ServerConfigError`] if `host` is not of that form.
    pub fn allow_host(mut self, host: &str) -> Result<Self, ServerConfigError> {
        let pattern = parse_authority(host.trim())
            .map(|(host, port)| HostPattern { host, port })
            .ok_or_else(|| ServerConfigError(format!("not a host (NAME[:PORT]): {host:?}")))?;
        if !self.allowed_hosts.contains(&pattern) {
            self.allowed_hosts.push(pattern);
        }
        Ok(self)
    }
}

#[cfg(test)]
impl HttpOptions {
    /// The allowed hosts as `NAME[:PORT]`, for tests of the configuration.
    pub(crate) fn allowed_host_names(&self) -> Vec<String> {
        self.allowed_hosts
            .iter()
            .map(|p| match p.port {
                Some(port) => format!("{}:{port}", p.host),
                None => p.host.clone(),
            })
            .collect()
    }
}

/// One allowed `Host`: a lower-case name or address (IPv6 in brackets), and a
/// port unless any port will do.
#[derive(Debug, Clone, PartialEq, Eq)]
struct HostPattern {
    host: String,
    port: Option<u16>,
}

/// Splits `NAME[:PORT]` or `[IPv6][:PORT]` into a lower-case host and a port;
/// `None` if it is neither (empty parts, stray characters, a port over 65535).
fn parse_authority(authority: &str) -> Option<(String, Option<u16>)> {
    let (host, port) = if authority.starts_with('[') {
        let end = authority.find(']')?;
        let (host, rest) = authority.split_at(end + 1);
        let inner = &host[1..host.len() - 1];
        if inner.is_empty()
            || !inner
                .bytes()
                .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
        {
            return None;
        }
        (
            host,
            if rest.is_empty() {
                None
            } else {
                Some(rest.strip_prefix(':')?)
            },
        )
    } else {
        let (host, port) = match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        };
        if host.is_empty()
            || host.len() > 253
            || !host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
        {
            return None;
        }
        (host, port)
    };
    let port = match port {
        None => None,
        Some(p) if !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()) => {
            Some(p.parse::<u16>().ok()?)
        }
        Some(_) => return None,
    };
    Some((host.to_ascii_lowercase(), port))
}

/// Whether the request is addressed to an allowed host: the absolute request
/// target's authority if it has one (RFC 9112 §3.2.2: then `Host` is ignored),
/// else its one `Host` header. No list: always.
fn host_allowed(parts: &Parts, allowed: &[HostPattern]) -> bool {
    if allowed.is_empty() {
        return true;
    }
    let authority = match parts.uri.authority() {
        Some(a) => a.as_str().to_owned(),
        None => {
            let mut hosts = parts.headers.get_all(header::HOST).iter();
            match (hosts.next().map(|h| h.to_str()), hosts.next()) {
                (Some(Ok(h)), None) => h.to_owned(),
                _ => return false,
            }
        }
    };
    let Some((host, port)) = parse_authority(&authority) else {
        return false;
    };
    allowed
        .iter()
        .any(|p| p.host == host && p.port.is_none_or(|allowed| Some(allowed) == port))
}

struct AppState {
    service: Arc<Service>,
    options: HttpOptions,
    principal: Box<dyn PrincipalSource>,
    /// Slots for requests past the cheap checks: [`HttpOptions::max_in_flight`].
    in_flight: Arc<Semaphore>,
    /// Bytes of large bodies buffered at once: [`HttpOptions::body_budget`].
    body_budget: Arc<Semaphore>,
    /// Large bodies parsed at once on the blocking pool: half the cores, rounded
    /// up, so the other half is always free for the runtime's workers (and few
    /// threads means few per-thread allocator arenas holding memory after a burst).
    parse_slots: Arc<Semaphore>,
}

impl fmt::Debug for AppState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AppState")
            .field("service", &self.service)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// The per-request correlation id, put into the request's extensions by the
/// outer middleware so the handler uses the same one.
#[derive(Debug, Clone)]
struct CorrelationId(String);

/// The MCP endpoint as a router to merge (or nest) into an axum application:
/// `POST /mcp` runs `service` for the principal `principal` gives, other methods
/// on `/mcp` get 405.
///
/// Each request on `/mcp` is logged in one line and runs on a task of its own, so a
/// panic ends only that request (a 500 with a -32603 body). Layers you add around
/// the router (authentication, tracing, limits) run before it. The router sets no
/// fallback, so it merges into an application that has its own; it is generic over
/// the application's state type and holds its own.
pub fn mcp_router<S, P>(service: Arc<Service>, options: HttpOptions, principal: P) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
    P: PrincipalSource,
{
    let in_flight = Arc::new(Semaphore::new(options.max_in_flight));
    // Every admissible body must fit the budget, or it would wait forever.
    let budget = options
        .body_budget
        .max(options.max_body.saturating_sub(defaults::BODY_ALLOWANCE))
        .min(Semaphore::MAX_PERMITS);
    let state = Arc::new(AppState {
        service,
        options,
        principal: Box::new(principal),
        in_flight,
        body_budget: Arc::new(Semaphore::new(budget)),
        parse_slots: Arc::new(Semaphore::new(
            std::thread::available_parallelism().map_or(1, |n| n.get().div_ceil(2)),
        )),
    });
    Router::new()
        .route(MCP_PATH, post(post_mcp).fallback(method_not_allowed))
        .route_layer(middleware::from_fn(per_request))
        .with_state(state)
}

/// [`mcp_router`] for a process of its own (`mrtr serve`): other paths get a
/// logged 404.
pub(crate) fn standalone_router<P: PrincipalSource>(
    service: Arc<Service>,
    options: HttpOptions,
    principal: P,
) -> Router {
    mcp_router(service, options, principal)
        .fallback(not_found.layer(middleware::from_fn(per_request)))
}

/// Serves `app` on `listener` with the default [`ServeOptions`] until `shutdown`
/// resolves, then lets in-flight requests finish (at most
/// [`defaults::SHUTDOWN_GRACE`]). See [`serve_with`].
///
/// # Errors
/// As [`serve_with`].
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(listener, app, ServeOptions::default(), shutdown).await
}

/// Outer middleware: correlation id, panic isolation, and the one log line.
async fn per_request(mut req: Request, next: Next) -> Response {
    let started = Instant::now();
    let corr = log::correlation_id();
    req.extensions_mut().insert(CorrelationId(corr.clone()));
    // A panic anywhere below (handler, extractors) ends only that task; the
    // client still gets a JSON-RPC error body.
    let mut resp = match tokio::spawn(next.run(req)).await {
        Ok(resp) => resp,
        Err(e) => {
            let mut resp = internal_error();
            resp.extensions_mut().insert(RequestLog {
                outcome: "error:-32603".into(),
                detail: Some(if e.is_panic() {
                    "panic".into()
                } else {
                    "task cancelled".into()
                }),
                ..RequestLog::default()
            });
            resp
        }
    };
    let status = resp.status().as_u16();
    let entry = resp
        .extensions_mut()
        .remove::<RequestLog>()
        .unwrap_or_else(|| RequestLog {
            outcome: format!("http:{status}"),
            ..RequestLog::default()
        });
    log::request(&corr, "http", &entry, Some(status), started.elapsed());
    resp
}

async fn post_mcp(State(app): State<Arc<AppState>>, req: Request) -> Response {
    let corr = req
        .extensions()
        .get::<CorrelationId>()
        .map(|c| c.0.clone())
        .unwrap_or_else(log::correlation_id);
    let (parts, body) = req.into_parts();
    let headers = &parts.headers;

    if !host_allowed(&parts, &app.options.allowed_hosts) {
        return transport_error(
            StatusCode::MISDIRECTED_REQUEST,
            -32600,
            "Misdirected Request: this server does not answer for that Host",
            "host not allowed",
        );
    }
    if let Some(origin) = headers.get(header::ORIGIN)
        && !origin_allowed(origin.as_bytes(), &app.options.allowed_origins)
    {
        // Spec (Streamable HTTP §Security): 403, optional JSON-RPC error without id.
        return transport_error(
            StatusCode::FORBIDDEN,
            -32600,
            "Forbidden: Origin not allowed",
            "origin not allowed",
        );
    }
    let principal = match app.principal.principal(&parts) {
        Ok(p) => p,
        Err(rejection) => {
            let mut resp = transport_error(
                StatusCode::UNAUTHORIZED,
                -32600,
                "Unauthorized",
                "unauthenticated",
            );
            if let Some(log) = resp.extensions_mut().get_mut::<RequestLog>() {
                log.detail = Some(format!("unauthenticated: {}", rejection.detail()));
            }
            return resp;
        }
    };
    if !is_json_content_type(headers) {
        return transport_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            -32600,
            "Unsupported Media Type: Content-Type must be application/json",
            "content-type not application/json",
        );
    }
    let max_body = app.options.max_body;
    let too_large = || {
        transport_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            -32600,
            &format!("Request body too large (limit {max_body} bytes)"),
            "body too large",
        )
    };
    let declared = declared_length(headers);
    if declared.is_some_and(|n| n > max_body as u64) {
        return too_large();
    }
    let limits = BodyLimits {
        max: max_body,
        // Bounded by max_body (≤ u32::MAX), so the casts below are exact.
        declared: declared.map(|n| n as usize),
        budget: &app.body_budget,
        timeout: app.options.body_timeout,
        min_rate: app.options.body_min_rate,
    };
    let (bytes, _reservation) = match read_body(body, limits).await {
        Ok(b) => b,
        Err(BodyError::TooLarge) => return too_large(),
        Err(BodyError::Busy) => return busy("body budget spent"),
        Err(BodyError::Timeout) => {
            return transport_error(
                StatusCode::REQUEST_TIMEOUT,
                -32600,
                "Invalid Request: the request body was not received in time",
                "body read timed out",
            );
        }
        Err(BodyError::Read) => {
            return transport_error(
                StatusCode::BAD_REQUEST,
                -32600,
                "Invalid Request: the request body could not be read",
                "body read failed",
            );
        }
    };
    // Only now, with the body in, does the request take a slot.
    let Ok(Ok(_in_flight)) = tokio::time::timeout(
        defaults::ADMISSION_TIMEOUT,
        Arc::clone(&app.in_flight).acquire_owned(),
    )
    .await
    else {
        return busy("no request slot free in time");
    };

    let ctx = RequestContext {
        principal,
        now: Timestamp::now(),
        correlation_id: corr.clone(),
        http_headers: Some(mcp_headers(headers)),
        // Set by `serve_with`'s accept loop, or by `axum::serve` with
        // `into_make_service_with_connect_info::<SocketAddr>()`.
        peer: parts
            .extensions
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .map(|info| info.0.ip()),
    };
    let message = if bytes.len() > defaults::BLOCKING_PARSE_THRESHOLD {
        // Off the runtime's workers (see the module doc); the body is freed there too.
        let Ok(_slot) = app.parse_slots.acquire().await else {
            return internal_error();
        };
        match tokio::task::spawn_blocking(move || ParsedMessage::parse(&bytes)).await {
            Ok(m) => m,
            Err(_) => return internal_error(),
        }
    } else {
        ParsedMessage::parse(&bytes)
    };
    let service = &app.service;
    let deadline = tokio::time::sleep(service.handler_timeout_value());
    let reply = service.handle_parsed_until(message, &ctx, deadline).await;

    reply_response(reply, wants_sse(headers))
}

/// 503 with `Retry-After: 1` and a -32603 body: the router is at its in-flight cap
/// or its body budget is spent, and stayed so for [`defaults::ADMISSION_TIMEOUT`].
fn busy(detail: &'static str) -> Response {
    let mut resp = transport_error(
        StatusCode::SERVICE_UNAVAILABLE,
        -32603,
        "Server busy: try again shortly",
        detail,
    );
    resp.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    resp
}

/// Frames the core's reply: its status with a JSON body or one SSE event; no
/// body → 202 (a 4xx stays a bodiless 4xx). A status outside 200..=599, or a
/// 5xx without a body, becomes 500 with a -32603 body: never a bare 5xx.
fn reply_response(reply: Reply, sse_framing: bool) -> Response {
    let status = StatusCode::from_u16(reply.http_status)
        .ok()
        .filter(|s| (200..600).contains(&s.as_u16()));
    let mut resp = match (reply.body, status) {
        (_, None) => internal_error(),
        (None, Some(s)) if s.is_server_error() => internal_error(),
        (None, Some(s)) if s.is_client_error() => empty(s),
        (None, Some(_)) => empty(StatusCode::ACCEPTED),
        (Some(body), Some(s)) if s.is_server_error() && body.trim().is_empty() => internal_error(),
        // The SSE event id is a fresh random value, not the correlation id,
        // which stays private to the log.
        (Some(body), Some(s)) if sse_framing => sse(s, &log::correlation_id(), &body),
        (Some(body), Some(s)) => json(s, body),
    };
    resp.extensions_mut().insert(reply.log);
    resp
}

async fn method_not_allowed() -> Response {
    let mut resp = empty(StatusCode::METHOD_NOT_ALLOWED);
    resp.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST"));
    resp.extensions_mut().insert(RequestLog {
        outcome: "http:405".into(),
        detail: Some("method not allowed".into()),
        ..RequestLog::default()
    });
    resp
}

async fn not_found() -> Response {
    empty(StatusCode::NOT_FOUND)
}

enum BodyError {
    TooLarge,
    Timeout,
    Read,
    Busy,
}

/// The declared `Content-Length`, if there is one that parses.
fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
}

/// What [`read_body`] may buffer, where it reserves the bytes beyond the
/// allowance, and how long the body may take.
struct BodyLimits<'a> {
    /// The body limit; the declared length is already checked against it.
    max: usize,
    declared: Option<usize>,
    budget: &'a Arc<Semaphore>,
    /// [`HttpOptions::body_timeout`].
    timeout: Duration,
    /// [`HttpOptions::body_min_rate`], at least 1.
    min_rate: u64,
}

/// When a body read that started at `start` must have ended, given the bytes
/// that arrived: the allowance plus what they needed at the minimum rate. It
/// grows only with the bytes that arrive, so a stalled body is cut at `start +
/// timeout` and a trickle below `min_rate` soon after; no body can take longer
/// than `timeout + max / min_rate`.
fn body_deadline(
    start: tokio::time::Instant,
    arrived: usize,
    timeout: Duration,
    min_rate: u64,
) -> tokio::time::Instant {
    let earned = Duration::from_secs_f64(arrived as f64 / min_rate.max(1) as f64);
    start + timeout + earned
}

/// Reads the body, stopping as soon as it exceeds the limit or misses its
/// deadline ([`body_deadline`]).
///
/// The first [`defaults::BODY_ALLOWANCE`] bytes are free; a body that is larger
/// (declared so, or found so while reading a chunked one) first reserves its
/// declared size, or the whole limit when none was declared, from the budget, and
/// returns the reservation with the bytes so it lasts as long as they (and what is
/// parsed from them) do; a wait for the budget (at most
/// [`defaults::ADMISSION_TIMEOUT`]) does not count against the body's time.
/// Nothing is allocated ahead of the bytes that arrive.
async fn read_body(
    mut body: Body,
    limits: BodyLimits<'_>,
) -> Result<(Vec<u8>, Option<OwnedSemaphorePermit>), BodyError> {
    let reserve = |bytes: usize| async move {
        let n = u32::try_from(bytes.saturating_sub(defaults::BODY_ALLOWANCE)).unwrap_or(u32::MAX);
        match tokio::time::timeout(
            defaults::ADMISSION_TIMEOUT,
            Arc::clone(limits.budget).acquire_many_owned(n),
        )
        .await
        {
            Ok(Ok(permit)) => Ok(permit),
            _ => Err(BodyError::Busy),
        }
    };
    let mut reservation = match limits.declared {
        Some(n) if n > defaults::BODY_ALLOWANCE => Some(reserve(n).await?),
        _ => None,
    };
    let mut start = tokio::time::Instant::now();
    let mut buf = Vec::new();
    loop {
        let deadline = body_deadline(start, buf.len(), limits.timeout, limits.min_rate);
        let Ok(frame) = tokio::time::timeout_at(deadline, body.frame()).await else {
            return Err(BodyError::Timeout);
        };
        let Some(frame) = frame else { break };
        let frame = frame.map_err(|_| BodyError::Read)?;
        if let Ok(data) = frame.into_data() {
            let len = buf.len() + data.len();
            if len > limits.max {
                return Err(BodyError::TooLarge);
            }
            if len > defaults::BODY_ALLOWANCE && reservation.is_none() {
                // A chunked body past the allowance: reserve the worst case,
                // without charging the wait to the body.
                let waiting = tokio::time::Instant::now();
                reservation = Some(reserve(limits.max).await?);
                start += waiting.elapsed();
            }
            buf.extend_from_slice(&data);
        }
    }
    Ok((buf, reservation))
}

/// Copies the three MCP headers. Absent → `None`; repeated → the values joined
/// with ", " (so the core sees a mismatch); bytes that are not visible ASCII →
/// their lossy UTF-8 text (the core rejects it with -32020).
fn mcp_headers(headers: &HeaderMap) -> McpHeaders {
    fn one(headers: &HeaderMap, name: &'static str) -> Option<String> {
        let name = HeaderName::from_static(name);
        let values: Vec<String> = headers
            .get_all(&name)
            .iter()
            .map(|v| match v.to_str() {
                Ok(s) => s.to_owned(),
                Err(_) => String::from_utf8_lossy(v.as_bytes()).into_owned(),
            })
            .collect();
        if values.is_empty() {
            None
        } else {
            Some(values.join(", "))
        }
    }
    McpHeaders {
        protocol_version: one(headers, HEADER_PROTOCOL_VERSION),
        method: one(headers, HEADER_METHOD),
        name: one(headers, HEADER_NAME),
    }
}

/// `Content-Type: application/json`, parameters (e.g. `charset=utf-8`) allowed.
fn is_json_content_type(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
}

/// Whether to answer with SSE: only when `Accept` allows `text/event-stream`
/// and nothing that covers `application/json` (`application/json`,
/// `application/*`, `*/*`). A missing or unrelated `Accept` gets JSON.
fn wants_sse(headers: &HeaderMap) -> bool {
    let mut sse = false;
    for value in headers.get_all(header::ACCEPT) {
        let Ok(value) = value.to_str() else { continue };
        for range in value.split(',') {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let refused = parts.any(|p| {
                let p = p.trim();
                p.len() >= 2
                    && p[..2].eq_ignore_ascii_case("q=")
                    && p[2..].trim().parse::<f32>().is_ok_and(|q| q <= 0.0)
            });
            if refused {
                continue;
            }
            match media.as_str() {
                "application/json" | "application/*" | "*/*" => return false,
                "text/event-stream" => sse = true,
                _ => {}
            }
        }
    }
    sse
}

/// Checks `Origin` against the defaults (`http://localhost`, `http://127.0.0.1`,
/// `http://[::1]`, any port) and the configured extra origins.
fn origin_allowed(origin: &[u8], extra: &[String]) -> bool {
    let Ok(origin) = std::str::from_utf8(origin) else {
        return false;
    };
    let Ok(origin) = normalize_origin(origin) else {
        return false;
    };
    if extra.contains(&origin) {
        return true;
    }
    is_loopback_http_origin(&origin).unwrap_or(false)
}

/// `http://` + `localhost` | `127.0.0.1` | `[::1]` + optional `:port`; `None` if malformed.
fn is_loopback_http_origin(origin: &str) -> Option<bool> {
    let rest = origin.strip_prefix("http://")?;
    let (host, port) = if let Some(v6) = rest.strip_prefix('[') {
        let (host, after) = v6.split_once(']')?;
        let port = if after.is_empty() {
            None
        } else {
            Some(after.strip_prefix(':')?)
        };
        (host, port)
    } else {
        match rest.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (rest, None),
        }
    };
    let port_ok =
        port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()));
    Some(port_ok && matches!(host, "localhost" | "127.0.0.1" | "::1"))
}

/// Normalizes an origin (`scheme://host[:port]`): lower case, no trailing `/`.
///
/// # Errors
/// [`ServerConfigError`] if it is not of that form (no path, query, user info or spaces).
pub fn normalize_origin(origin: &str) -> Result<String, ServerConfigError> {
    let o = origin.trim().trim_end_matches('/').to_ascii_lowercase();
    let bad = || ServerConfigError(format!("not an origin (scheme://host[:port]): {origin:?}"));
    let (scheme, rest) = o.split_once("://").ok_or_else(bad)?;
    if scheme.is_empty()
        || !scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
        || rest.is_empty()
        || rest
            .bytes()
            .any(|b| b"/?#@ \t\\".contains(&b) || b.is_ascii_control())
    {
        return Err(bad());
    }
    Ok(o)
}

fn json(status: StatusCode, body: String) -> Response {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// One SSE `message` event carrying the reply, then the end of the stream.
fn sse(status: StatusCode, event_id: &str, body: &str) -> Response {
    let mut text = format!("event: message\nid: {event_id}\n");
    // Compact JSON has no raw line breaks; split defensively so a line break
    // could never end the event early.
    for line in body.split(['\n', '\r']) {
        text.push_str("data: ");
        text.push_str(line);
        text.push('\n');
    }
    text.push('\n');
    let mut resp = Response::new(Body::from(text));
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

fn empty(status: StatusCode) -> Response {
    let mut resp = Response::new(Body::empty());
    *resp.status_mut() = status;
    resp
}

/// A JSON-RPC error body for a refusal made before any request id could be read.
///
/// The `id` member is absent, as in the service's own errors: the MCP schema
/// makes `id` optional on `JSONRPCErrorResponse` and allows only a string or a
/// number in it, so JSON-RPC 2.0's `"id": null` would not validate.
pub(crate) fn error_body(code: i64, message: &str) -> String {
    let message = serde_json::Value::from(message);
    format!(r#"{{"jsonrpc":"2.0","error":{{"code":{code},"message":{message}}}}}"#)
}

fn transport_error(status: StatusCode, code: i64, message: &str, detail: &'static str) -> Response {
    let mut resp = json(status, error_body(code, message));
    resp.extensions_mut().insert(RequestLog {
        outcome: format!("error:{code}"),
        detail: Some(detail.into()),
        ..RequestLog::default()
    });
    resp
}

fn internal_error() -> Response {
    json(
        StatusCode::INTERNAL_SERVER_ERROR,
        error_body(-32603, "Internal error"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::principal::Principal;

    fn accept(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, HeaderValue::from_str(v).unwrap());
        h
    }

    #[test]
    fn accept_selects_sse_only_without_json() {
        assert!(!wants_sse(&HeaderMap::new()));
        assert!(!wants_sse(&accept("application/json, text/event-stream")));
        assert!(!wants_sse(&accept("text/event-stream, */*")));
        assert!(wants_sse(&accept("text/event-stream")));
        assert!(wants_sse(&accept("Text/Event-Stream; q=1")));
        assert!(wants_sse(&accept(
            "text/event-stream, application/json;q=0"
        )));
        assert!(!wants_sse(&accept("text/event-stream;q=0")));
        assert!(!wants_sse(&accept("text/html")));
    }

    #[test]
    fn a_body_earns_time_only_with_the_bytes_that_arrive() {
        let start = tokio::time::Instant::now();
        let five = Duration::from_secs(5);
        // Nothing arrived: the allowance alone, whatever was declared.
        assert_eq!(body_deadline(start, 0, five, 16 * 1024), start + five);
        // 32 KiB at 16 KiB/s earned two seconds.
        assert_eq!(
            body_deadline(start, 32 * 1024, five, 16 * 1024),
            start + Duration::from_secs(7)
        );
        // A trickle of 1 byte a second earns almost nothing: cut near the allowance.
        let trickled = body_deadline(start, 60, five, 16 * 1024) - start;
        assert!(trickled < Duration::from_millis(5_010), "{trickled:?}");
        // The largest body's time is bounded.
        assert_eq!(
            body_deadline(start, 256 * 1024, five, 16 * 1024),
            start + Duration::from_secs(21)
        );
        // A zero rate is taken as 1 byte a second, never a division by zero.
        assert_eq!(
            body_deadline(start, 3, five, 0),
            start + Duration::from_secs(8)
        );
    }

    #[test]
    fn default_origins() {
        let ok = |o: &str| origin_allowed(o.as_bytes(), &[]);
        assert!(ok("http://localhost"));
        assert!(ok("http://localhost:3000"));
        assert!(ok("HTTP://LOCALHOST:3000/"));
        assert!(ok("http://127.0.0.1:8808"));
        assert!(ok("http://[::1]"));
        assert!(ok("http://[::1]:9"));
        assert!(!ok("http://localhost.evil.example"));
        assert!(!ok("http://localhost:"));
        assert!(!ok("http://localhost:80x"));
        assert!(!ok("http://127.0.0.1.evil:80"));
        assert!(!ok("https://evil.example"));
        assert!(!ok("null"));
        assert!(!ok("http://localhost/path"));
        assert!(!ok("http://user@localhost"));
        assert!(!origin_allowed(b"http://local\xffhost", &[]));
    }

    #[test]
    fn extra_origins() {
        let extra = vec![normalize_origin("https://App.Example/").unwrap()];
        assert!(origin_allowed(b"https://app.example", &extra));
        assert!(!origin_allowed(b"https://app.example:8443", &extra));
        assert!(normalize_origin("app.example").is_err());
        assert!(normalize_origin("https://app.example/x").is_err());
    }

    #[test]
    fn authorities_parse_as_names_addresses_and_ports() {
        let p = |a: &str| parse_authority(a);
        assert_eq!(p("Example.COM"), Some(("example.com".into(), None)));
        assert_eq!(
            p("example.com:8443"),
            Some(("example.com".into(), Some(8443)))
        );
        assert_eq!(p("127.0.0.1:0"), Some(("127.0.0.1".into(), Some(0))));
        assert_eq!(p("[::1]"), Some(("[::1]".into(), None)));
        assert_eq!(
            p("[::FFFF:127.0.0.1]:80"),
            Some(("[::ffff:127.0.0.1]".into(), Some(80)))
        );
        for bad in [
            "",
            ":80",
            "a:",
            "a:b",
            "a:65536",
            "a:123456",
            "a b",
            "a/b",
            "user@a",
            "[::1",
            "[]",
            "[::1]x",
            "[::1]:",
            "[zz]",
            "a:1:2",
            "é.example",
        ] {
            assert_eq!(p(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn hosts_match_by_name_and_by_port_when_one_is_given() {
        let options = HttpOptions::default()
            .allow_host("a.example")
            .unwrap()
            .allow_host("b.example:9000")
            .unwrap()
            .allow_host("A.EXAMPLE")
            .unwrap();
        assert_eq!(
            options.allowed_hosts.len(),
            2,
            "{:?}",
            options.allowed_hosts
        );
        let allowed = |host: &str| {
            let mut p = parts(&[]);
            p.headers
                .insert(header::HOST, HeaderValue::from_str(host).unwrap());
            host_allowed(&p, &options.allowed_hosts)
        };
        assert!(allowed("a.example"));
        assert!(allowed("A.example:1234"));
        assert!(allowed("b.example:9000"));
        assert!(!allowed("b.example"));
        assert!(!allowed("b.example:9001"));
        assert!(!allowed("c.example"));
        assert!(
            !host_allowed(&parts(&[]), &options.allowed_hosts),
            "no Host"
        );
        assert!(host_allowed(&parts(&[]), &[]), "no list, no check");
        assert!(HttpOptions::default().allow_host("a b").is_err());
    }

    #[test]
    fn error_bodies() {
        let v: serde_json::Value = serde_json::from_str(&error_body(-32600, "x \"y\"")).unwrap();
        assert_eq!(v["error"]["code"], -32600);
        assert_eq!(v["error"]["message"], "x \"y\"");
        assert!(v.get("id").is_none(), "{v}");
    }

    fn reply(body: Option<&str>, http_status: u16) -> Reply {
        Reply {
            body: body.map(str::to_owned),
            http_status,
            log: RequestLog {
                outcome: "x".into(),
                ..RequestLog::default()
            },
        }
    }

    async fn body_text(resp: Response) -> String {
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn notification_reply_is_202_without_body() {
        let resp = reply_response(reply(None, 202), false);
        assert_eq!(resp.status(), StatusCode::ACCEPTED);
        assert!(resp.extensions().get::<RequestLog>().is_some());
        assert_eq!(body_text(resp).await, "");
        let resp = reply_response(reply(None, 200), true);
        assert_eq!(resp.status(), StatusCode::ACCEPTED);
        let resp = reply_response(reply(None, 400), false);
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    }

    #[tokio::test]
    async fn never_a_bare_5xx() {
        for r in [
            reply(None, 503),
            reply(Some(""), 500),
            reply(Some("{}"), 42),
            reply(None, 1000),
        ] {
            let resp = reply_response(r, false);
            assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
            assert!(body_text(resp).await.contains("-32603"));
        }
    }

    #[tokio::test]
    async fn sse_framing_is_one_message_event() {
        let body = r#"{"jsonrpc":"2.0","id":7,"result":{}}"#;
        let resp = reply_response(reply(Some(body), 200), true);
        assert_eq!(resp.headers()[header::CONTENT_TYPE], "text/event-stream");
        let text = body_text(resp).await;
        let lines: Vec<&str> = text.split('\n').collect();
        assert_eq!(lines[0], "event: message");
        assert!(
            lines[1].starts_with("id: ") && lines[1].len() == 20,
            "{text}"
        );
        assert_eq!(lines[2], format!("data: {body}"));
        assert!(text.ends_with("\n\n"));
        let resp = reply_response(reply(Some(body), 200), false);
        assert_eq!(resp.headers()[header::CONTENT_TYPE], "application/json");
        assert_eq!(body_text(resp).await, body);
    }

    #[tokio::test]
    async fn panics_become_500_with_jsonrpc_body() {
        let app: Router = Router::new()
            .route("/boom", post(boom))
            .layer(middleware::from_fn(per_request));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        let raw = raw_post(addr, "/boom").await;
        assert!(raw.starts_with("HTTP/1.1 500"), "{raw}");
        assert!(raw.contains("\"code\":-32603"), "{raw}");
    }

    async fn boom() -> Response {
        panic!("boom")
    }

    async fn raw_post(addr: std::net::SocketAddr, path: &str) -> String {
        raw_request(addr, path, "", "").await
    }

    /// One HTTP/1.1 POST with extra header lines (each ending in `\r\n`) and a body.
    async fn raw_request(
        addr: std::net::SocketAddr,
        path: &str,
        headers: &str,
        body: &str,
    ) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let req = format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        s.write_all(req.as_bytes()).await.unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    fn parts(headers: &[(&str, &[u8])]) -> Parts {
        let mut req = axum::http::Request::builder().method("POST").uri("/mcp");
        for (name, value) in headers {
            req = req.header(*name, HeaderValue::from_bytes(value).unwrap());
        }
        req.body(()).unwrap().into_parts().0
    }

    #[test]
    fn from_extension_reads_the_principal_the_auth_layer_inserted() {
        let mut p = parts(&[]);
        let refused = FromExtension.principal(&p).unwrap_err();
        assert_eq!(refused.detail(), "no Principal in the request extensions");
        p.extensions.insert(Principal::subject("alice"));
        assert_eq!(FromExtension.principal(&p), Ok(Principal::subject("alice")));
    }

    #[test]
    fn from_header_trusts_one_visible_ascii_value() {
        let source = FromHeader::new(HeaderName::from_static("x-forwarded-user"));
        let ok = source.principal(&parts(&[("X-Forwarded-User", b"alice@example.com")]));
        assert_eq!(ok, Ok(Principal::subject("alice@example.com")));
        for bad in [
            parts(&[]),
            parts(&[("x-other", b"alice")]),
            parts(&[("x-forwarded-user", b"")]),
            parts(&[("x-forwarded-user", b"alice smith")]),
            parts(&[("x-forwarded-user", b"al\tice")]),
            parts(&[("x-forwarded-user", b"\xc3\xa9lise")]),
            parts(&[("x-forwarded-user", b"alice"), ("x-forwarded-user", b"bob")]),
        ] {
            let refused = source.principal(&bad).unwrap_err();
            // The private reason names the header, never its value.
            assert!(refused.detail().contains("x-forwarded-user"), "{refused:?}");
            assert!(!refused.detail().contains("alice"), "{refused:?}");
        }
    }

    #[test]
    fn anonymous_and_closures() {
        assert_eq!(Anonymous.principal(&parts(&[])), Ok(Principal::anonymous()));
        let by_tenant = |parts: &Parts| match parts.headers.get("x-tenant") {
            Some(t) if t == "acme" => Ok(Principal::subject("svc").with_issuer("acme")),
            _ => Err(Rejection::new("unknown tenant")),
        };
        assert_eq!(
            by_tenant.principal(&parts(&[("x-tenant", b"acme")])),
            Ok(Principal::subject("svc").with_issuer("acme"))
        );
        assert!(by_tenant.principal(&parts(&[])).is_err());
    }

    #[test]
    fn http_options_normalize_origins() {
        let o = HttpOptions::default()
            .allow_origin("https://App.Example/")
            .unwrap()
            .allow_origin("https://app.example")
            .unwrap();
        assert_eq!(o.allowed_origins, ["https://app.example"]);
        assert_eq!(o.max_body, defaults::MAX_BODY);
        assert_eq!(o.max_in_flight, defaults::MAX_IN_FLIGHT);
        assert_eq!(o.body_budget, defaults::BODY_BUDGET);
        assert!(o.allowed_hosts.is_empty());
        assert_eq!(HttpOptions::default().max_in_flight(0).max_in_flight, 1);
        assert!(HttpOptions::default().allow_origin("app.example").is_err());
    }

    /// A user's application: its own state type, its own routes and fallback, an
    /// authentication layer, and the MCP router merged in and nested.
    #[tokio::test]
    async fn mounts_in_an_application_behind_its_auth_layer() {
        #[derive(Clone)]
        struct UserState;
        async fn authenticate(mut req: Request, next: Next) -> Response {
            if req
                .headers()
                .get("x-test-user")
                .is_some_and(|v| v == "alice")
            {
                req.extensions_mut().insert(Principal::subject("alice"));
            }
            next.run(req).await
        }
        let service = Arc::new(Service::new(
            crate::engine::Engine::new(crate::seal::Keyring::ephemeral(), "test"),
            "test",
            "1.0.0",
        ));
        let app: Router = Router::<UserState>::new()
            .route("/health", post(|| async { "ok" }))
            .merge(mcp_router(
                Arc::clone(&service),
                HttpOptions::default(),
                FromExtension,
            ))
            .nest(
                "/tenant",
                mcp_router(service, HttpOptions::default(), FromExtension),
            )
            .fallback(|| async { (StatusCode::IM_A_TEAPOT, "user fallback") })
            .layer(middleware::from_fn(authenticate))
            .with_state(UserState);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });

        let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
        let mcp = "Content-Type: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n";
        let alice = format!("{mcp}x-test-user: alice\r\n");
        for path in ["/mcp", "/tenant/mcp"] {
            let raw = raw_request(addr, path, &alice, list).await;
            assert!(raw.starts_with("HTTP/1.1 200"), "{path}: {raw}");
            assert!(raw.contains(r#""tools":[]"#), "{raw}");
            // No principal from the auth layer: 401, never anonymous.
            let raw = raw_request(addr, path, mcp, list).await;
            assert!(raw.starts_with("HTTP/1.1 401"), "{path}: {raw}");
            let body = raw.split("\r\n\r\n").nth(1).unwrap();
            let v: serde_json::Value = serde_json::from_str(body).unwrap();
            assert_eq!(v["error"]["code"], -32600, "{v}");
            assert_eq!(v["error"]["message"], "Unauthorized", "{v}");
            assert!(v.get("id").is_none(), "{v}");
        }
        assert!(raw_post(addr, "/health").await.ends_with("ok"));
        assert!(raw_post(addr, "/other").await.starts_with("HTTP/1.1 418"));
    }
}
