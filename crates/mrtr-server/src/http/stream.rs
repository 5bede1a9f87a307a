//! A request that asked for notifications (a `progressToken`, a log level) from a
//! client that accepts `text/event-stream`: its handler's notifications as SSE
//! events as they are sent, then the response as the last event (Streamable
//! HTTP §Sending Messages to the Server: the server MAY send notifications
//! related to the request before the response; it sends no independent request,
//! and nothing after the response).
//!
//! The response's head waits for the first notification: a request whose
//! handler sends none (or one refused before its handler, -32602 for a bad
//! token, -32020 for its headers) is answered exactly as without the stream,
//! one JSON body (or event) with the status the table gives it. Once the
//! stream has begun its status is 200, and an error arrives as the last event.
//!
//! At most [`MAX_NOTIFICATIONS_PER_REQUEST`](crate::defaults::MAX_NOTIFICATIONS_PER_REQUEST)
//! notifications wait for a slow reader; beyond them a notification is dropped
//! (the request's log line counts them). Closing the stream cancels the
//! request: the handler's future is dropped with the body (Streamable HTTP
//! §Cancellation).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use bytes::Bytes;
use futures_util::stream::{self, StreamExt as _};
use tokio::sync::mpsc;

use super::framing::{event_stream, reply_response};
use super::{LoggedByBody, log};
use crate::notify::{Outbox, Queued};
use mrtr::service::{ParsedMessage, Reply, RequestContext, RequestLog, Service};
use mrtr::streamable_http::{self, Framing, Refusal};

/// Runs the request with a sink for its notifications and answers as the module
/// doc says. `held` (the body's reservation, the in-flight slot) is released
/// when the response's last event is made, or the stream is dropped.
pub(super) async fn respond<C, H>(
    service: Arc<Service>,
    message: ParsedMessage<C>,
    (ctx, span): (RequestContext, tracing::Span),
    framing: Framing,
    held: H,
    started: Instant,
) -> Response
where
    C: FnOnce(&str, Option<&serde_json::Value>) -> Result<(), mrtr::Error> + Send + 'static,
    H: Send + 'static,
{
    let (tx, mut rx) = mpsc::unbounded_channel();
    let outbox = Outbox::new(tx);
    let sink: Arc<dyn mrtr::NotificationSink> = outbox.clone();
    let correlation_id = ctx.correlation_id.clone();
    let in_span = span.clone();
    let mut run = Box::pin(async move {
        let deadline = tokio::time::sleep(service.handler_timeout());
        let handled = service.handle_parsed_notifying(message, &ctx, deadline, sink);
        let mut reply = tracing::Instrument::instrument(handled, in_span).await;
        crate::tasks::start(&service, &mut reply);
        reply
    });
    let first = tokio::select! {
        biased;
        Some(first) = rx.recv() => first,
        reply = &mut run => {
            // Ended before a notification was read: any it sent are queued.
            rx.close();
            let queued = drain(&mut rx);
            let reply = with_dropped(reply, &outbox);
            if queued.is_empty() {
                return reply_response(reply, framing);
            }
            let mut text = queued;
            text.push_str(&reply_event(&reply));
            let mut resp = event_stream(StatusCode::OK, Body::from(text));
            resp.extensions_mut().insert(reply.log);
            return resp;
        }
    };
    // The stream begins: its first event now, the rest as they come.
    let head = Bytes::from(event(&first));
    drop(first);
    let running = Running {
        run,
        rx,
        outbox,
        held,
        line: LogLine {
            correlation_id,
            started,
            written: false,
            span,
        },
    };
    let rest = stream::unfold(Some(running), |state| async move {
        let mut r = state?;
        tokio::select! {
            biased;
            Some(n) = r.rx.recv() => Some((Bytes::from(event(&n)), Some(r))),
            reply = &mut r.run => {
                r.rx.close();
                let mut text = drain(&mut r.rx);
                let reply = with_dropped(reply, &r.outbox);
                text.push_str(&reply_event(&reply));
                r.line.write(&reply.log, reply.error_code);
                Some((Bytes::from(text), None))
            }
        }
    });
    let body = stream::once(async move { head })
        .chain(rest)
        .map(Ok::<_, Infallible>);
    let mut resp = event_stream(StatusCode::OK, Body::from_stream(body));
    resp.extensions_mut().insert(LoggedByBody);
    resp
}

/// A streamed request between its first event and its last: the handler's
/// future, its notifications, what it holds, and its log line.
struct Running<F, H> {
    run: std::pin::Pin<Box<F>>,
    rx: mpsc::UnboundedReceiver<Queued>,
    outbox: Arc<Outbox>,
    /// Released with the rest when the last event is made.
    #[allow(dead_code)] // why: held for its drop only
    held: H,
    line: LogLine,
}

/// The request's log line, written when its stream ends, or as cancelled when
/// the client closed the stream first.
struct LogLine {
    correlation_id: String,
    started: Instant,
    written: bool,
    /// The request's span, which records how it ended before the line.
    span: tracing::Span,
}

impl LogLine {
    fn write(&mut self, entry: &RequestLog, error_code: Option<i64>) {
        self.written = true;
        crate::span::conclude(&self.span, entry, error_code);
        let _in_span = self.span.enter();
        log::request(
            &self.correlation_id,
            "http",
            entry,
            Some(StatusCode::OK.as_u16()),
            self.started.elapsed(),
        );
    }
}

impl Drop for LogLine {
    fn drop(&mut self) {
        if !self.written {
            let entry = RequestLog {
                outcome: "cancelled".into(),
                detail: Some("the client closed the event stream".into()),
                ..RequestLog::default()
            };
            self.write(&entry, None);
        }
    }
}

/// One notification as an SSE event.
fn event(n: &Queued) -> String {
    streamable_http::sse_event(&log::correlation_id(), n.text())
}

/// Every notification still queued, as SSE events in order.
fn drain(rx: &mut mpsc::UnboundedReceiver<Queued>) -> String {
    let mut text = String::new();
    while let Ok(n) = rx.try_recv() {
        text.push_str(&event(&n));
    }
    text
}

/// The response as the stream's last event.
fn reply_event(reply: &Reply) -> String {
    let body = reply
        .body
        .clone()
        .unwrap_or_else(|| Refusal::Internal.body());
    streamable_http::sse_event(&log::correlation_id(), &body)
}

/// The reply, its log naming the notifications the cap dropped.
fn with_dropped(mut reply: Reply, outbox: &Outbox) -> Reply {
    let dropped = outbox.dropped();
    if dropped > 0 && reply.log.detail.is_none() {
        reply.log.detail = Some(format!("{dropped} notifications dropped (queue full)"));
    }
    reply
}
