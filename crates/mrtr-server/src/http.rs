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
//! use mrtr_server::http::{FromExtension, HttpOptions, mcp_router};
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
//! [`crate::defaults::ADMISSION_TIMEOUT`]), the body itself (413; 408 when it does not
//! arrive in time), a slot under the in-flight cap (503 after
//! [`crate::defaults::ADMISSION_TIMEOUT`]), the parse, behind the OAuth resource server
//! (feature `oauth`) the scope of the tool a `tools/call` names (403, on that one
//! parse), then [`Service::handle_parsed_until`], which first checks the MCP
//! headers against the body (400, -32020; for a `tools/call` of a tool that
//! declares `x-mcp-header` parameters, its `Mcp-Param-*` headers too); a
//! request that asks for notifications (a `progressToken` or a log level in its
//! `_meta`, [`ParsedMessage::asks_for_notifications`]) from a client that
//! accepts `text/event-stream` runs through [`Service::handle_parsed_notifying`]
//! instead, its handler's notifications SSE events before the response event
//! (the head waits for the first of them, so a request whose handler sends none
//! is answered as any other). A
//! request takes its in-flight slot only once its body is in, so bodies that
//! arrive slowly, or never, hold no slot that another request needs.
//!
//! Both client eras ([`Service::eras`]): after the parse, a message without the
//! 2026-07-28 `_meta` that names a session (`Mcp-Session-Id`), or is a 2025-era
//! `initialize`, goes to the 2025 era's path (`legacy`: sessions bound to their
//! principal in a bounded table ([`SessionLimits`]), the handler's asks as
//! server-to-client requests on the request's SSE stream, which opens with a
//! priming event and can be resumed with `Last-Event-ID` on `GET`, the
//! standalone stream on `GET`, `DELETE` to end one), every other to the
//! stateless path above. `GET` and `DELETE` without a session, under
//! [`Eras::ModernOnly`](mrtr::legacy::Eras::ModernOnly), or (`GET`) on a service
//! with nothing to tell, and any other method, answer 405 with `Allow: POST`.
//! The router has no fallback of its own, so
//! it merges into an application that has one; `mrtr serve` answers 404 on other
//! paths.
//!
//! The Streamable HTTP rules these checks apply (`Origin`, `Content-Type`,
//! `Accept`, SSE framing, the MCP headers, the statuses and the id-less error
//! body) live in [`mrtr::streamable_http`], which the client's transport uses
//! too; this module is their axum adapter. Its parts: `options` ([`HttpOptions`]),
//! `guard` (`Host` and `Origin`), `body` (the body budget and deadline),
//! `framing` (replies and refusals as responses), `connections` ([`serve_with`]'s
//! accept loop), `principal` ([`PrincipalSource`]), `legacy` and `sessions` (the
//! 2025 era).
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
//! service's [`Service::handler_timeout`]. Panics in a handler are caught by
//! the service (-32603); a panic anywhere else in the request is caught around the
//! whole request (a 500 with a -32603 body).
//!
//! Only the parse moves: a body larger than [`crate::defaults::BLOCKING_PARSE_THRESHOLD`]
//! is parsed with [`ParsedMessage::parse`] on tokio's blocking pool, so a burst of
//! large bodies does not hold the runtime's workers while small requests (a
//! `ping`) wait. Parsing is the one step whose cost grows with the body; the rest
//! is bounded whatever the client sends (the `requestState` it opens is at most
//! [`defaults::MAX_TOKEN_LEN`](mrtr::defaults::MAX_TOKEN_LEN) characters). Running the whole request on a
//! blocking thread instead (`Handle::block_on` in `spawn_blocking`) would cover the
//! handler too, but would hold a blocking thread for as long as an async handler
//! awaits its database, and those threads are many and heavy compared to tasks.
//! How many bodies are parsed at once is bounded by the body budget.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::handler::Handler as _;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::post;

use super::log;
use mrtr::Timestamp;
use mrtr::principal::Principal;
use mrtr::service::{ParsedMessage, RequestContext, RequestLog, Service};
use mrtr::streamable_http::{self, McpHeaders, Refusal};
use mrtr::wire::CarrierMethod;

mod body;
mod connections;
mod framing;
mod guard;
mod legacy;
mod listen;
mod options;
mod principal;
mod sessions;
mod stream;
#[cfg(test)]
mod tests;

use body::{BodyError, BodyLimits, declared_length, read_body};
pub use connections::{ServeOptions, serve_with};
use framing::{Refused, empty, internal_error, refuse, reply_response};
pub use options::{HttpOptions, SessionLimits, normalize_origin};
pub use principal::{Anonymous, FromExtension, FromHeader, PrincipalSource, Rejection};
/// The id-less JSON-RPC error body, for the stdio transport's refusals.
pub(crate) use streamable_http::error_body;

/// The path of the MCP endpoint.
pub const MCP_PATH: &str = "/mcp";

struct AppState {
    service: Arc<Service>,
    options: HttpOptions,
    principal: Box<dyn PrincipalSource>,
    /// Slots for requests past the cheap checks: [`HttpOptions::with_max_in_flight`].
    in_flight: Arc<Semaphore>,
    /// Bytes of large bodies buffered at once: [`HttpOptions::with_body_budget`].
    body_budget: Arc<Semaphore>,
    /// Large bodies parsed at once on the blocking pool: half the cores, rounded
    /// up, so the other half is always free for the runtime's workers (and few
    /// threads means few per-thread allocator arenas holding memory after a burst).
    parse_slots: Arc<Semaphore>,
    /// The 2025-era sessions ([`legacy`]).
    sessions: sessions::Sessions,
    /// The tasks extension's sweeper: started with the router when a runtime
    /// is there, else with the first request; stopped with the router.
    sweeper: std::sync::OnceLock<Option<crate::tasks::Sweeper>>,
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
/// outer middleware so the handler uses the same one, and when the request began
/// (for the log line a streamed response writes itself).
#[derive(Debug, Clone)]
struct CorrelationId(String, Instant);

/// On a response whose log line its body writes when it ends (a streamed
/// response: [`stream`]): the outer middleware writes none.
#[derive(Debug, Clone, Copy)]
struct LoggedByBody;

/// The MCP endpoint as a router to merge (or nest) into an axum application:
/// `POST /mcp` runs `service` for the principal `principal` gives, other methods
/// on `/mcp` get 405, but `GET` and `DELETE` on a 2025-era session.
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
        .max(
            options
                .max_body
                .saturating_sub(crate::defaults::BODY_ALLOWANCE),
        )
        .min(Semaphore::MAX_PERMITS);
    let sessions = sessions::Sessions::new(options.sessions);
    let sweeper = std::sync::OnceLock::new();
    if tokio::runtime::Handle::try_current().is_ok() {
        let _ = sweeper.set(crate::tasks::Sweeper::start(&service));
    }
    let state = Arc::new(AppState {
        sweeper,
        sessions,
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
        .route(
            MCP_PATH,
            post(post_mcp)
                .get(get_mcp)
                .delete(delete_mcp)
                .fallback(method_not_allowed),
        )
        .route_layer(middleware::from_fn(per_request))
        .with_state(state)
}

/// [`mcp_router`] for a process of its own (`mrtr serve`): other paths get a
/// logged 404 (an embedding application routes them itself).
pub fn standalone_router<P: PrincipalSource>(
    service: Arc<Service>,
    options: HttpOptions,
    principal: P,
) -> Router {
    mcp_router(service, options, principal)
        .fallback(not_found.layer(middleware::from_fn(per_request)))
}

/// Serves `app` on `listener` with the default [`ServeOptions`] until `shutdown`
/// resolves, then lets in-flight requests finish (at most
/// [`crate::defaults::SHUTDOWN_GRACE`]). See [`serve_with`].
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
    req.extensions_mut()
        .insert(CorrelationId(corr.clone(), started));
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
    if resp.extensions().get::<LoggedByBody>().is_some() {
        return resp;
    }
    let status = resp.status().as_u16();
    let entry = resp
        .extensions_mut()
        .remove::<RequestLog>()
        .unwrap_or_else(|| RequestLog {
            outcome: format!("http:{status}"),
            ..RequestLog::default()
        });
    // The MCP request's span, when the response is to one (`post_mcp`).
    let span = resp
        .extensions_mut()
        .remove::<crate::span::RequestSpan>()
        .map_or_else(tracing::Span::none, |s| s.0);
    crate::span::conclude(&span, &entry, crate::span::error_code(&entry));
    let _in_span = span.enter();
    log::request(&corr, "http", &entry, Some(status), started.elapsed());
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

/// `POST /mcp`: the guards in the order the module doc gives, each a refusal
/// with its own status, then the service.
async fn post_mcp(State(app): State<Arc<AppState>>, req: Request) -> Response {
    app.sweeper
        .get_or_init(|| crate::tasks::Sweeper::start(&app.service));
    let (corr, started) = req.extensions().get::<CorrelationId>().map_or_else(
        || (log::correlation_id(), Instant::now()),
        |c| (c.0.clone(), c.1),
    );
    let (mut parts, body) = req.into_parts();
    match admit(&app, &parts, body).await {
        Ok((principal, bytes, reservation)) => {
            #[allow(unused_mut)] // why: the `otel` feature's span context goes in
            let mut ctx = context(&parts, principal, corr);
            // A 2025-era client's answer to the server's request needs no slot:
            // the flow waiting for it holds one.
            if let Some(answer) = legacy::answer(&app, &parts, &ctx, &bytes) {
                return answer;
            }
            let in_flight = match slot(&app).await {
                Ok(s) => s,
                Err(refused) => return refuse(refused),
            };
            let Ok(message) = parse(&app, bytes).await else {
                return internal_error();
            };
            let span = open_span(&message, &mut ctx, &mut parts);
            // A labelled block, not a function of its own: an async fn's
            // future would be moved whole (kilobytes) on every request.
            let mut resp = 'served: {
                #[cfg(feature = "oauth")]
                if let Some(refused) = tool_scope_refusal(&parts, &message) {
                    break 'served refused;
                }
                let eras = app.service.eras();
                let legacy = eras.serves_legacy() && !message.has_modern_meta();
                if let Some(id) = legacy::session_header(&parts).filter(|_| legacy) {
                    let held = (reservation, in_flight);
                    break 'served legacy::post(&app, &parts, id, message, ctx, held, started)
                        .await;
                }
                if message.is_legacy_initialize() {
                    // A session, or (not served, or with the modern `_meta`)
                    // -32022 naming the versions served.
                    break 'served legacy::initialize(&app, &parts, message, &ctx);
                }
                if !eras.serves_modern() {
                    break 'served refuse(Refused::new(
                        Refusal::SessionRequired,
                        if legacy {
                            "request without a session on a 2025-era-only server"
                        } else {
                            "2026-07-28 request on a 2025-era-only server"
                        },
                    ));
                }
                let message = agree(&parts, &app.service, message);
                let framing = framing(&parts.headers);
                if message.asks_for_notifications() && accepts_event_stream(&parts.headers) {
                    let held = (reservation, in_flight);
                    break 'served stream::respond(
                        Arc::clone(&app.service),
                        message,
                        (ctx, span.clone()),
                        framing,
                        held,
                        started,
                    )
                    .await;
                }
                let service = &app.service;
                if service.changes().is_some() && message.is_listen() {
                    // Answered, not handled: the stream holds no in-flight slot.
                    drop((reservation, in_flight));
                    break 'served listen::respond(service.listen(message, &ctx), framing);
                }
                let deadline = tokio::time::sleep(service.handler_timeout());
                let handled = service.handle_parsed_until(message, &ctx, deadline);
                let mut reply = tracing::Instrument::instrument(handled, span.clone()).await;
                drop((reservation, in_flight));
                crate::tasks::start(service, &mut reply);
                reply_response(reply, framing)
            };
            if !span.is_disabled() {
                resp.extensions_mut().insert(crate::span::RequestSpan(span));
            }
            resp
        }
        Err(refused) => refuse(refused),
    }
}

/// The request's span (the MCP conventions' SERVER span), named and parented
/// after `message`, in `parts`' extensions for the code below to find. Only an
/// MCP message has one: not a refusal before one is read, a client's answer,
/// nor a session's GET or DELETE (HTTP's, with their log lines). `per_request`
/// concludes it, from the response's extensions.
fn open_span(
    message: &ParsedMessage,
    ctx: &mut RequestContext,
    parts: &mut Parts,
) -> tracing::Span {
    let span = crate::span::request("http");
    if span.is_disabled() {
        // Nobody traces: nothing to name, parent or find.
        return span;
    }
    crate::span::adopt(&span, message, ctx);
    crate::span::link_transport(&span, &parts.headers);
    crate::span::http_version(&span, parts.version);
    if let Some(info) = parts
        .extensions
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
    {
        crate::span::client(&span, info.0);
    }
    parts
        .extensions
        .insert(crate::span::RequestSpan(span.clone()));
    span
}

/// `GET /mcp`: a 2025-era session's stream ([`legacy::get`]); 405 where
/// there is none to open (a modern-only service, no session named, a service
/// with nothing to tell on it).
async fn get_mcp(State(app): State<Arc<AppState>>, req: Request) -> Response {
    let (parts, _) = req.into_parts();
    let Some(id) = legacy::session_header(&parts).filter(|_| app.service.eras().serves_legacy())
    else {
        return method_not_allowed().await;
    };
    if app.service.changes().is_none() {
        return method_not_allowed().await;
    }
    match guards(&app, &parts) {
        Ok(ctx) => legacy::get(&app, &parts, &ctx, id).await,
        Err(refused) => refuse(refused),
    }
}

/// `DELETE /mcp`: ends a 2025-era session ([`legacy::delete`]); 405 without one.
async fn delete_mcp(State(app): State<Arc<AppState>>, req: Request) -> Response {
    let (parts, _) = req.into_parts();
    let Some(id) = legacy::session_header(&parts).filter(|_| app.service.eras().serves_legacy())
    else {
        return method_not_allowed().await;
    };
    match guards(&app, &parts) {
        Ok(ctx) => legacy::delete(&app, &parts, &ctx, id),
        Err(refused) => refuse(refused),
    }
}

/// The guards of a request without a body (`GET`, `DELETE`): `Host`, `Origin`,
/// the principal; its context.
fn guards(app: &AppState, parts: &Parts) -> Result<RequestContext, Refused> {
    check_host(app, parts)?;
    check_origin(app, parts)?;
    let principal = principal(app, parts)?;
    let corr = parts
        .extensions
        .get::<CorrelationId>()
        .map_or_else(log::correlation_id, |c| c.0.clone());
    Ok(context(parts, principal, corr))
}

/// What a request holds once admitted: its principal, its body and the
/// body's reservation of the budget (if it needed one). Only then, with the
/// body in, does it take its in-flight slot ([`slot`]).
type Admitted = (Principal, Vec<u8>, Option<OwnedSemaphorePermit>);

/// Runs the transport's guards, in order, up to the request's body.
async fn admit(app: &AppState, parts: &Parts, body: Body) -> Result<Admitted, Refused> {
    check_host(app, parts)?;
    check_origin(app, parts)?;
    let principal = principal(app, parts)?;
    check_content_type(&parts.headers)?;
    let declared = check_declared_length(app, &parts.headers)?;
    let (bytes, reservation) = body_of(app, body, declared).await?;
    Ok((principal, bytes, reservation))
}

/// 421 unless the request names an allowed `Host` (only with an allow-list).
fn check_host(app: &AppState, parts: &Parts) -> Result<(), Refused> {
    if guard::host_allowed(parts, &app.options.allowed_hosts) {
        Ok(())
    } else {
        Err(Refused::new(Refusal::MisdirectedHost, "host not allowed"))
    }
}

/// 403 for a foreign `Origin` (spec: Streamable HTTP §Security Warning).
fn check_origin(app: &AppState, parts: &Parts) -> Result<(), Refused> {
    if guard::origin_allowed(parts, &app.options.allowed_origins) {
        Ok(())
    } else {
        Err(Refused::new(
            Refusal::OriginNotAllowed,
            "origin not allowed",
        ))
    }
}

/// The principal from the [`PrincipalSource`], or 401 (its private reason goes
/// to the log line only).
fn principal(app: &AppState, parts: &Parts) -> Result<Principal, Refused> {
    app.principal.principal(parts).map_err(|rejection| {
        Refused::new(
            Refusal::Unauthenticated,
            format!("unauthenticated: {}", rejection.detail()),
        )
    })
}

/// 415 unless `Content-Type` is `application/json`.
fn check_content_type(headers: &HeaderMap) -> Result<(), Refused> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    if streamable_http::is_json_content_type(content_type) {
        Ok(())
    } else {
        Err(Refused::new(
            Refusal::UnsupportedMediaType,
            "content-type not application/json",
        ))
    }
}

fn too_large(app: &AppState) -> Refused {
    Refused::new(
        Refusal::BodyTooLarge {
            limit: app.options.max_body,
        },
        "body too large",
    )
}

/// The declared `Content-Length`, or 413 if it is over the body limit.
fn check_declared_length(app: &AppState, headers: &HeaderMap) -> Result<Option<usize>, Refused> {
    match declared_length(headers) {
        Some(n) if n > app.options.max_body as u64 => Err(too_large(app)),
        // Bounded by max_body (≤ u32::MAX), so the cast is exact.
        declared => Ok(declared.map(|n| n as usize)),
    }
}

/// The body, read within its limits: 413, 503, 408 or 400 if it cannot be.
async fn body_of(
    app: &AppState,
    body: Body,
    declared: Option<usize>,
) -> Result<(Vec<u8>, Option<OwnedSemaphorePermit>), Refused> {
    let limits = BodyLimits {
        max: app.options.max_body,
        declared,
        budget: &app.body_budget,
        timeout: app.options.body_timeout,
        min_rate: app.options.body_min_rate,
    };
    read_body(body, limits).await.map_err(|e| match e {
        BodyError::TooLarge => too_large(app),
        BodyError::Busy => Refused::new(Refusal::Busy, "body budget spent"),
        BodyError::Timeout => Refused::new(Refusal::BodyTimeout, "body read timed out"),
        BodyError::Read => Refused::new(Refusal::BodyUnreadable, "body read failed"),
    })
}

/// A slot under the in-flight cap, or 503 after [`crate::defaults::ADMISSION_TIMEOUT`].
async fn slot(app: &AppState) -> Result<OwnedSemaphorePermit, Refused> {
    match tokio::time::timeout(
        crate::defaults::ADMISSION_TIMEOUT,
        Arc::clone(&app.in_flight).acquire_owned(),
    )
    .await
    {
        Ok(Ok(permit)) => Ok(permit),
        _ => Err(Refused::new(Refusal::Busy, "no request slot free in time")),
    }
}

/// The 403 for a `tools/call` of a tool whose scope the caller's token lacks
/// ([`oauth::Grant`](crate::oauth::Grant), put into the request's extensions
/// by [`ResourceServer::protect`](crate::oauth::ResourceServer::protect));
/// `None` when the request may go on.
///
/// Checked on the transport's one strict parse, after the body limits: the
/// tool is the one the service would route to
/// ([`ParsedMessage::request`]), and a message that is no request (not JSON,
/// ambiguous, a batch, a notification) runs nothing and is refused or ignored
/// by the service. The private reason goes to the request's log line.
#[cfg(feature = "oauth")]
fn tool_scope_refusal(parts: &Parts, message: &ParsedMessage) -> Option<Response> {
    let grant = parts.extensions.get::<crate::oauth::Grant>()?;
    let (method, params) = message.request()?;
    let call = CarrierMethod::ToolsCall;
    if CarrierMethod::from_method(method) != Some(call) {
        return None;
    }
    // No tool named: the service refuses it (-32602) without running one.
    let tool = params?.get(call.target_param())?.as_str()?;
    let missing = grant.missing_for_tool(tool);
    if missing.is_empty() {
        return None;
    }
    let mut resp = grant.insufficient_scope(missing);
    let outcome = format!("http:{}", resp.status().as_u16());
    resp.extensions_mut().insert(RequestLog {
        method: Some(method.to_owned()),
        target: Some(mrtr::__private::record::target(tool).to_owned()),
        outcome,
        detail: Some("oauth: the tool needs a scope the token lacks".into()),
        ..RequestLog::default()
    });
    Some(resp)
}

/// The request's context for the service.
fn context(parts: &Parts, principal: Principal, correlation_id: String) -> RequestContext {
    RequestContext {
        principal,
        now: Timestamp::now(),
        correlation_id,
        // Set by `serve_with`'s accept loop, or by `axum::serve` with
        // `into_make_service_with_connect_info::<SocketAddr>()`.
        peer: parts
            .extensions
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .map(|info| info.0.ip()),
        trace: None,
    }
}

/// The Streamable HTTP header agreement (-32020) over the parsed message: its
/// MCP headers must agree with its method and params, and, for a `tools/call`
/// of a tool whose `inputSchema` declares `x-mcp-header` parameters, its
/// `Mcp-Param-*` headers with the arguments ([`Service::param_headers`]; only
/// the headers the tool declares are looked up, and none for other tools).
///
/// This is the one place the transport builds the [`McpHeaders`] it checks.
fn agree(
    parts: &Parts,
    service: &Arc<Service>,
    message: ParsedMessage,
) -> ParsedMessage<
    impl FnOnce(&str, Option<&serde_json::Value>) -> Result<(), mrtr::Error> + Send + 'static + use<>,
> {
    let headers = &parts.headers;
    // The names are the module's static lower-case ones: looked up without parsing.
    let mirrored = McpHeaders::read(|name| {
        let name = axum::http::HeaderName::from_static(name);
        headers.get_all(name).iter().map(HeaderValue::as_bytes)
    });
    // The `Mcp-Param-*` headers, owned (the rule may run on another task): none
    // for a request that sends none, so the others allocate nothing here.
    let sent_params: Vec<(String, Vec<u8>)> = headers
        .iter()
        .filter(|(name, _)| {
            name.as_str()
                .starts_with(streamable_http::HEADER_PARAM_PREFIX)
        })
        .map(|(name, value)| (name.as_str().to_owned(), value.as_bytes().to_vec()))
        .collect();
    let service = Arc::clone(service);
    message.check(move |method, params| {
        streamable_http::check_headers(
            &mirrored,
            method,
            params,
            CarrierMethod::from_method(method),
        )?;
        match service.param_headers(method, params) {
            None => Ok(()),
            Some(declared) => streamable_http::check_param_headers(
                declared,
                params.and_then(|p| p.get("arguments")),
                |name| {
                    sent_params
                        .iter()
                        .filter(|(n, _)| n == name)
                        .map(|(_, v)| v.as_slice())
                        .collect::<Vec<_>>()
                },
            ),
        }
    })
}

/// Parses the body: one larger than [`crate::defaults::BLOCKING_PARSE_THRESHOLD`] on
/// the blocking pool (see the module doc), where it is freed too. `Err` only if
/// that pool failed it.
async fn parse(app: &AppState, bytes: Vec<u8>) -> Result<ParsedMessage, ()> {
    if bytes.len() <= crate::defaults::BLOCKING_PARSE_THRESHOLD {
        return Ok(ParsedMessage::parse(&bytes));
    }
    let Ok(_slot) = app.parse_slots.acquire().await else {
        return Err(());
    };
    tokio::task::spawn_blocking(move || ParsedMessage::parse(&bytes))
        .await
        .map_err(|_| ())
}

/// Whether the request's `Accept` values allow an SSE stream.
fn accepts_event_stream(headers: &HeaderMap) -> bool {
    streamable_http::accepts_event_stream(
        headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok()),
    )
}

/// The reply's framing, from the request's `Accept` values.
fn framing(headers: &HeaderMap) -> streamable_http::Framing {
    streamable_http::reply_framing(
        headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok()),
    )
}
