//! `subscriptions/listen` on Streamable HTTP (SEP-2575): the response to the
//! listen request is a long-lived SSE stream. Its first event is the
//! acknowledgement, then each notification as the application announces it,
//! and, when the subscription ends gracefully ([`mrtr::service::Changes::close_all`],
//! which `mrtr serve` calls on shutdown), the listen request's result as the last
//! event. A comment line every [`LISTEN_KEEPALIVE`](crate::defaults::LISTEN_KEEPALIVE)
//! keeps idle intermediaries from closing a quiet stream. The stream holds no
//! in-flight slot (it is answered, not handled); the client closing it drops
//! the subscription.

use std::sync::Arc;

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use futures_util::stream;
use mrtr::service::{Reply, Subscription};
use mrtr::streamable_http::{self, Framing};

use super::super::log;
use super::framing::{event_stream, reply_response};

/// The response to a listen request: the stream, or the error reply.
pub(super) fn respond(opened: Result<Subscription, Reply>, framing: Framing) -> Response {
    let subscription = match opened {
        Ok(s) => Arc::new(s),
        Err(reply) => return reply_response(reply, framing),
    };
    let log_entry = subscription.log().clone();
    let first = event(&subscription.acknowledgement());
    let keepalive = crate::defaults::LISTEN_KEEPALIVE;
    // State: the subscription (gone once it has ended and its result, if any,
    // has been sent) and the acknowledgement, until it has been sent.
    let events = stream::unfold(
        (Some(subscription), Some(first)),
        move |(subscription, first)| async move {
            let subscription = subscription?;
            if let Some(ack) = first {
                return Some((
                    Ok::<_, std::convert::Infallible>(ack),
                    (Some(subscription), None),
                ));
            }
            tokio::select! {
                next = subscription.next() => match next {
                    Some(n) => Some((Ok(event(&n)), (Some(subscription), None))),
                    None => subscription
                        .final_result()
                        .map(|r| (Ok(event(&r)), (None, None))),
                },
                () = tokio::time::sleep(keepalive) => {
                    Some((Ok(": keepalive\n\n".to_owned()), (Some(subscription), None)))
                }
            }
        },
    );
    let mut resp = event_stream(StatusCode::OK, Body::from_stream(events));
    resp.extensions_mut().insert(log_entry);
    resp
}

/// One SSE `message` event holding `json`, with a fresh random id.
fn event(json: &str) -> String {
    streamable_http::sse_event(&log::correlation_id(), json)
}
