//! The 2025 era on Streamable HTTP (protocol versions 2025-11-25, 2025-06-18,
//! 2025-03-26), beside 2026-07-28 clients on the same endpoint.
//!
//! - `POST` of a 2025-era `initialize` (no 2026-07-28 `_meta`) opens a session
//!   ([`sessions`](super::sessions)) and answers with its `Mcp-Session-Id`;
//! - `POST` with the session's id: a request is handled by
//!   [`Service::handle_legacy`]; a carrier request from a client that accepts
//!   `text/event-stream` is answered on an SSE stream that opens with a priming
//!   event (an id, `retry`, no data), carries the handler's progress and log
//!   messages and its asks as server-to-client requests, and ends with the
//!   response; the flow runs on a task of its own, so a stream the client or
//!   the server ([`HttpOptions::with_sse_poll`](super::HttpOptions::with_sse_poll))
//!   closes can be resumed. A JSON-RPC response is the client's answer to one
//!   of those requests (202); a notification gets 202;
//! - `GET` with the session's id opens its standalone stream (list changes,
//!   subscribed resources updated), or, with `Last-Event-ID`, resumes a stream
//!   where the client lost it: the events after that one (of the last
//!   [`SESSION_REPLAY_EVENTS`](crate::defaults::SESSION_REPLAY_EVENTS)), then
//!   the rest as they come;
//! - `DELETE` with the session's id ends it.
//!
//! A session is bound to the principal that opened it: another's request on it
//! gets 404, as an unknown session does.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use futures_util::stream;
use serde_json::{Value, json};

use super::framing::{Refused, event_stream, refuse, reply_response};
use super::sessions::{EventLog, HttpSession, Standalone, parse_event_id};
use super::{AppState, LoggedByBody, accepts_event_stream, framing, log};
use mrtr::NotificationSink;
use mrtr::legacy::{BoxFuture, RequestFailed, ServerRequests, VERSIONS};
use mrtr::service::{ParsedMessage, RequestContext, RequestLog};
use mrtr::streamable_http::{self, Refusal};
use mrtr::wire::CarrierMethod;
use mrtr::wire::jsonrpc::RequestId;

/// The session header.
pub(super) const SESSION_ID: &str = "mcp-session-id";

/// The value of the session header, when the request has one.
pub(super) fn session_header(parts: &Parts) -> Option<&str> {
    parts.headers.get(SESSION_ID).and_then(|v| v.to_str().ok())
}

/// Answers a 2025-era `initialize`: a new session and its id, or the refusal.
pub(super) fn initialize(
    app: &AppState,
    parts: &Parts,
    message: ParsedMessage,
    ctx: &RequestContext,
) -> Response {
    let framing = framing(&parts.headers);
    let (core, reply) = match app.service.initialize(message, ctx) {
        Ok(opened) => opened,
        Err(reply) => return reply_response(reply, framing),
    };
    crate::span::session_version(&crate::span::RequestSpan::of(parts), core.version());
    let Ok(session) = app.sessions.open(ctx.caller_key(), core) else {
        return refuse(Refused::new(
            Refusal::Busy,
            "every 2025-era session at the cap is in use",
        ));
    };
    let mut resp = reply_response(reply, framing);
    if let Ok(id) = HeaderValue::from_str(&session.id) {
        resp.headers_mut().insert(SESSION_ID, id);
    }
    resp
}

/// The session the request names, or the refusal (404: unknown, ended, expired
/// or another principal's; 400: a version header not of the 2025 era).
fn session_of(
    app: &AppState,
    parts: &Parts,
    ctx: &RequestContext,
    id: &str,
) -> Result<Arc<HttpSession>, Refused> {
    let version = parts
        .headers
        .get(streamable_http::HEADER_PROTOCOL_VERSION)
        .map(|v| v.to_str().unwrap_or(""));
    if version.is_some_and(|v| !VERSIONS.contains(&v)) {
        return Err(Refused::new(
            Refusal::SessionRequired,
            "session request with a protocol version not of the 2025 era",
        ));
    }
    app.sessions
        .get(id, &ctx.caller_key())
        .ok_or_else(|| Refused::new(Refusal::SessionNotFound, "unknown session"))
}

/// The client's answer to one of its session's server-to-client requests,
/// handled before the request would take an in-flight slot (the flow waiting
/// for it holds one; were answers to wait for slots, flows holding every slot
/// would wait for answers that cannot come in). Only a body of at most
/// [`BODY_ALLOWANCE`](crate::defaults::BODY_ALLOWANCE) bytes that names a live
/// session of the caller is parsed here (each is bounded by the table), and
/// only a JSON-RPC response is answered: `None` sends any other message on
/// its way.
pub(super) fn answer(
    app: &AppState,
    parts: &Parts,
    ctx: &RequestContext,
    body: &[u8],
) -> Option<Response> {
    if !app.service.eras().serves_legacy() || body.len() > crate::defaults::BODY_ALLOWANCE {
        return None;
    }
    let session = session_of(app, parts, ctx, session_header(parts)?).ok()?;
    let (id, answer) = ParsedMessage::parse(body).response()?;
    Some(delivered(&session, &id, answer))
}

/// Delivers the client's answer to request `id` of `session`: 202, and the
/// log says whether a request was waiting for it.
fn delivered(session: &HttpSession, id: &RequestId, answer: Result<Value, i64>) -> Response {
    let matched = session.answer(id, answer);
    let mut resp = super::framing::empty(StatusCode::ACCEPTED);
    resp.extensions_mut().insert(RequestLog {
        outcome: if matched {
            "answer"
        } else {
            "answer:unmatched"
        }
        .into(),
        era: mrtr::legacy::Era::Legacy,
        ..RequestLog::default()
    });
    resp
}

/// `POST` on a session: a request, a notification, or the client's answer to
/// a server-to-client request (one too large for [`answer`]).
pub(super) async fn post<H: Send + 'static>(
    app: &Arc<AppState>,
    parts: &Parts,
    id: &str,
    message: ParsedMessage,
    ctx: RequestContext,
    held: H,
    started: Instant,
) -> Response {
    let session = match session_of(app, parts, &ctx, id) {
        Ok(s) => s,
        Err(refused) => return refuse(refused),
    };
    crate::span::session_version(&crate::span::RequestSpan::of(parts), session.core.version());
    if let Some(cancelled) = message.cancels() {
        let stopped = session.cancel(&serde_json::to_string(&cancelled).unwrap_or_default());
        let mut resp = super::framing::empty(StatusCode::ACCEPTED);
        resp.extensions_mut().insert(RequestLog {
            outcome: if stopped { "cancelled" } else { "notification" }.into(),
            era: mrtr::legacy::Era::Legacy,
            ..RequestLog::default()
        });
        return resp;
    }
    if let Some((id, answer)) = message.response() {
        return delivered(&session, &id, answer);
    }
    let carrier = message
        .request()
        .is_some_and(|(m, _)| CarrierMethod::from_method(m).is_some());
    let _busy = session.busy();
    if carrier && accepts_event_stream(&parts.headers) {
        if !session.may_start_flow() {
            return refuse(Refused::new(
                Refusal::Busy,
                "the session runs as many flows as it may",
            ));
        }
        let span = crate::span::RequestSpan::of(parts);
        return flow(app, session, message, (ctx, span), held, started);
    }
    let channel = Channel::without_stream();
    let reply = app
        .service
        .handle_legacy(message, &session.core, &ctx, &channel, None)
        .await;
    drop(held);
    reply_response(reply, framing(&parts.headers))
}

/// A carrier request on a stream of its own: the flow on a task, the stream a
/// follower of its event log.
fn flow<H: Send + 'static>(
    app: &Arc<AppState>,
    session: Arc<HttpSession>,
    message: ParsedMessage,
    (ctx, span): (RequestContext, tracing::Span),
    held: H,
    started: Instant,
) -> Response {
    let request_id = serde_json::to_string(&message.request_id()).unwrap_or_default();
    let events = session.new_stream();
    events.push("");
    let channel = Arc::new(Channel {
        stream: Some((Arc::clone(&session), Arc::clone(&events))),
        notifications: AtomicUsize::new(0),
    });
    let service = Arc::clone(&app.service);
    let busy = session.busy();
    let finish = Finish(Arc::clone(&events));
    let task_session = Arc::clone(&session);
    let task = tokio::spawn(async move {
        let _held = (held, busy, finish);
        let sink: Arc<dyn NotificationSink> = Arc::clone(&channel) as _;
        let handled =
            service.handle_legacy(message, &task_session.core, &ctx, &*channel, Some(sink));
        let reply = tracing::Instrument::instrument(handled, span.clone()).await;
        if let Some(body) = &reply.body {
            channel.push(body.as_str());
        }
        crate::span::conclude(&span, &reply.log, reply.error_code);
        let _in_span = span.enter();
        log::request(
            &ctx.correlation_id,
            "http",
            &reply.log,
            Some(200),
            started.elapsed(),
        );
    });
    session.track(request_id, task.abort_handle());
    follow(events, None, app.options.sse_poll, ())
}

/// `GET`: the session's standalone stream, or a stream resumed after
/// `Last-Event-ID`.
pub(super) async fn get(
    app: &Arc<AppState>,
    parts: &Parts,
    ctx: &RequestContext,
    id: &str,
) -> Response {
    let session = match session_of(app, parts, ctx, id) {
        Ok(s) => s,
        Err(refused) => return refuse(refused),
    };
    if !accepts_event_stream(&parts.headers) {
        return refuse(Refused::new(
            Refusal::NotAcceptable,
            "GET without text/event-stream",
        ));
    }
    let resume = parts
        .headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(parse_event_id);
    match resume {
        Some((stream, after)) if stream != 0 => match session.stream(stream) {
            Some(events) => follow(events, Some(after), app.options.sse_poll, session.busy()),
            None => standalone(&session, None),
        },
        Some((_, after)) => standalone(&session, Some(after)),
        None => standalone(&session, session.standalone.last()),
    }
}

/// `DELETE`: ends the session.
pub(super) fn delete(app: &AppState, parts: &Parts, ctx: &RequestContext, id: &str) -> Response {
    if let Err(refused) = session_of(app, parts, ctx, id) {
        return refuse(refused);
    }
    app.sessions.remove(id, &ctx.caller_key());
    let mut resp = super::framing::empty(StatusCode::OK);
    resp.extensions_mut().insert(RequestLog {
        outcome: "session_closed".into(),
        era: mrtr::legacy::Era::Legacy,
        ..RequestLog::default()
    });
    resp
}

/// The standalone stream from event `after` on: what the log kept, then the
/// session's notifications as they come, with a keepalive comment when quiet.
/// It ends when the session's notifications do (the server is closing).
fn standalone(session: &Arc<HttpSession>, after: Option<u64>) -> Response {
    let Some(claim) = session.claim_standalone() else {
        return refuse(Refused::new(
            Refusal::StreamOpen,
            "standalone stream open already",
        ));
    };
    let keepalive = crate::defaults::LISTEN_KEEPALIVE;
    let events = stream::unfold(
        (claim, after),
        move |(claim, after): (Standalone, Option<u64>)| async move {
            let session = Arc::clone(claim.session());
            let log = &session.standalone;
            tokio::select! {
                biased;
                next = log.next_after(after) => {
                    let (n, data) = next?;
                    Some((Ok::<_, Infallible>(frame(log, n, &data)), (claim, Some(n))))
                }
                next = session.core.next_notification() => {
                    let data = next?;
                    let n = log.push(data.as_str());
                    Some((Ok(frame(log, n, &data)), (claim, Some(n))))
                }
                () = tokio::time::sleep(keepalive) => {
                    Some((Ok(": keepalive\n\n".to_owned()), (claim, after)))
                }
            }
        },
    );
    let mut resp = event_stream(StatusCode::OK, Body::from_stream(events));
    resp.extensions_mut().insert(RequestLog {
        outcome: "stream".into(),
        era: mrtr::legacy::Era::Legacy,
        ..RequestLog::default()
    });
    resp
}

/// A stream following `events` from after event `after` (from its first when
/// `None`) to its end, or until `poll` has passed (then the client resumes with
/// `Last-Event-ID`). `guard` is held as long as the stream is.
fn follow<G: Send + 'static>(
    events: Arc<EventLog>,
    after: Option<u64>,
    poll: Option<Duration>,
    guard: G,
) -> Response {
    let until = poll.map(|p| tokio::time::Instant::now() + p);
    let body = stream::unfold(
        (events, after, guard),
        move |(events, after, guard)| async move {
            let next = match until {
                Some(until) => tokio::time::timeout_at(until, events.next_after(after))
                    .await
                    .ok()?,
                None => events.next_after(after).await,
            };
            let (n, data) = next?;
            let text = frame(&events, n, &data);
            Some((Ok::<_, Infallible>(text), (events, Some(n), guard)))
        },
    );
    let mut resp = event_stream(StatusCode::OK, Body::from_stream(body));
    resp.extensions_mut().insert(LoggedByBody);
    resp
}

/// Event `n` of `events` as SSE: its id, and for the priming event (the first
/// of a request's stream, with no data) the `retry` too.
fn frame(events: &EventLog, n: u64, data: &str) -> String {
    let id = events.event_id(n);
    if n == 0 && data.is_empty() {
        let retry = crate::defaults::SSE_RETRY.as_millis();
        return format!("id: {id}\nretry: {retry}\ndata: \n\n");
    }
    streamable_http::sse_event(&id, data)
}

/// Finishes a request's event log when its flow ends, however it ends (a
/// panic, an abort included), so its followers end too.
struct Finish(Arc<EventLog>);

impl Drop for Finish {
    fn drop(&mut self) {
        self.0.finish();
    }
}

/// One request's side of its session: its stream (the events its client
/// follows), through which its notifications and asks go.
#[derive(Debug)]
struct Channel {
    stream: Option<(Arc<HttpSession>, Arc<EventLog>)>,
    notifications: AtomicUsize,
}

impl Channel {
    /// A request answered with one JSON body: no notifications, no asks.
    fn without_stream() -> Self {
        Self {
            stream: None,
            notifications: AtomicUsize::new(0),
        }
    }

    fn push(&self, data: &str) {
        if let Some((_, events)) = &self.stream {
            events.push(data);
        }
    }
}

impl NotificationSink for Channel {
    fn notify(&self, notification: String) -> bool {
        let sent = self.notifications.fetch_add(1, Ordering::AcqRel);
        if self.stream.is_none() || sent >= crate::defaults::MAX_NOTIFICATIONS_PER_REQUEST {
            return false;
        }
        self.push(&notification);
        true
    }
}

impl ServerRequests for Channel {
    fn request<'a>(
        &'a self,
        method: &'a str,
        params: &'a Value,
    ) -> BoxFuture<'a, Result<Value, RequestFailed>> {
        Box::pin(async move {
            let Some((session, events)) = &self.stream else {
                return Err(RequestFailed::Refused(mrtr::Error::tool_failure(
                    mrtr::ToolAdvice::new(
                        "The client cannot be asked for input on this request",
                        mrtr::Retry::DoesNotHelp,
                    )
                    .instead("Use a client that accepts text/event-stream responses"),
                    mrtr::Fallback::Internal,
                    "legacy_no_stream",
                    "2025-era request without an SSE stream: its asks cannot be sent",
                )));
            };
            let Some((id, answer, waiting)) = session.expect_answer() else {
                return Err(RequestFailed::Refused(mrtr::Error::internal(
                    "2025-era session has too many requests waiting for answers",
                )));
            };
            events.push(
                json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
                    .to_string()
                    .as_str(),
            );
            let answer = answer.await;
            drop(waiting);
            match answer {
                Ok(Ok(result)) => Ok(result),
                Ok(Err(code)) => Err(RequestFailed::Answered { code }),
                Err(_) => Err(RequestFailed::Closed),
            }
        })
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
}
