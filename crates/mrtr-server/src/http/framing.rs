//! Responses: the service's reply, framed as one JSON body or one SSE event
//! ([`streamable_http::reply_framing`], [`streamable_http::sse_event`]) with the
//! status the table gives it ([`streamable_http::reply_shape`]), and the
//! transport's own refusals ([`streamable_http::Refusal`]).

use std::borrow::Cow;

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;

use super::super::log;
use mrtr::service::{Reply, RequestLog};
use mrtr::streamable_http::{self, Framing, Refusal, ReplyShape};

/// Frames the core's reply as `framing` says, with the status
/// [`streamable_http::reply_shape`] gives it: never a bare 5xx.
///
/// This is the one place the transport maps a reply to its status
/// ([`streamable_http::reply_status`]).
pub(super) fn reply_response(reply: Reply, framing: Framing) -> Response {
    let status = streamable_http::reply_status(&reply);
    reply_with(reply, status, framing)
}

/// [`reply_response`] with the status given.
fn reply_with(reply: Reply, status: u16, framing: Framing) -> Response {
    let shape = streamable_http::reply_shape(status, reply.body.as_deref());
    let mut resp = match (shape, reply.body) {
        (ReplyShape::Body(s), Some(body)) => {
            let status = status_code(s);
            match framing {
                // The SSE event id is a fresh random value, not the correlation id,
                // which stays private to the log.
                Framing::EventStream => sse(status, &log::correlation_id(), &body),
                Framing::Json => json(status, body),
            }
        }
        (ReplyShape::Empty(s), _) => empty(status_code(s)),
        // `Body` comes only with a body.
        (ReplyShape::Internal | ReplyShape::Body(_), _) => internal_error(),
    };
    resp.extensions_mut().insert(reply.log);
    resp
}

/// A status the table gave (always in 200..=599); 500 if it were not.
fn status_code(status: u16) -> StatusCode {
    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// A refusal by one of the transport's guards, with the private detail for the
/// log line (never a header value).
#[derive(Debug)]
pub(super) struct Refused {
    refusal: Refusal,
    detail: Cow<'static, str>,
}

impl Refused {
    pub(super) fn new(refusal: Refusal, detail: impl Into<Cow<'static, str>>) -> Self {
        Self {
            refusal,
            detail: detail.into(),
        }
    }
}

/// The refusal's status and id-less JSON-RPC error body, and its detail in the
/// log line. [`Refusal::Busy`] (503) also says `Retry-After: 1`: the router is at
/// its in-flight cap or its body budget is spent, and stayed so for
/// [`crate::defaults::ADMISSION_TIMEOUT`].
pub(super) fn refuse(refused: Refused) -> Response {
    let Refused { refusal, detail } = refused;
    let mut resp = json(status_code(refusal.status()), refusal.body());
    resp.extensions_mut().insert(RequestLog {
        outcome: format!("error:{}", refusal.code()),
        detail: Some(detail.into_owned()),
        ..RequestLog::default()
    });
    if refusal == Refusal::Busy {
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    resp
}

/// 500 with a -32603 body.
pub(super) fn internal_error() -> Response {
    json(
        status_code(Refusal::Internal.status()),
        Refusal::Internal.body(),
    )
}

/// A response with no body.
pub(super) fn empty(status: StatusCode) -> Response {
    let mut resp = Response::new(Body::empty());
    *resp.status_mut() = status;
    resp
}

fn json(status: StatusCode, body: String) -> Response {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(streamable_http::JSON),
    );
    resp
}

/// One SSE `message` event carrying the reply, then the end of the stream.
fn sse(status: StatusCode, event_id: &str, body: &str) -> Response {
    event_stream(
        status,
        Body::from(streamable_http::sse_event(event_id, body)),
    )
}

/// An SSE response (`text/event-stream`, not cached) whose events `body` carries.
pub(super) fn event_stream(status: StatusCode, body: Body) -> Response {
    let mut resp = Response::new(body);
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(streamable_http::EVENT_STREAM),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // Asks proxies that honour it (nginx) not to buffer the stream.
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    fn reply(body: Option<&str>, http_status: u16) -> (Reply, u16) {
        let reply = Reply {
            body: body.map(str::to_owned),
            error_code: None,
            log: RequestLog {
                outcome: "x".into(),
                ..RequestLog::default()
            },
            task: None,
        };
        (reply, http_status)
    }

    fn reply_response((reply, status): (Reply, u16), framing: Framing) -> Response {
        reply_with(reply, status, framing)
    }

    async fn body_text(resp: Response) -> String {
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn notification_reply_is_202_without_body() {
        let resp = reply_response(reply(None, 202), Framing::Json);
        assert_eq!(resp.status(), StatusCode::ACCEPTED);
        assert!(resp.extensions().get::<RequestLog>().is_some());
        assert_eq!(body_text(resp).await, "");
        let resp = reply_response(reply(None, 200), Framing::EventStream);
        assert_eq!(resp.status(), StatusCode::ACCEPTED);
        let resp = reply_response(reply(None, 400), Framing::Json);
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
            let resp = reply_response(r, Framing::Json);
            assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
            assert!(body_text(resp).await.contains("-32603"));
        }
    }

    #[tokio::test]
    async fn sse_framing_is_one_message_event() {
        let body = r#"{"jsonrpc":"2.0","id":7,"result":{}}"#;
        let resp = reply_response(reply(Some(body), 200), Framing::EventStream);
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
        let resp = reply_response(reply(Some(body), 200), Framing::Json);
        assert_eq!(resp.headers()[header::CONTENT_TYPE], "application/json");
        assert_eq!(body_text(resp).await, body);
    }

    #[tokio::test]
    async fn refusals_carry_their_status_and_log_detail() {
        let resp = refuse(Refused::new(Refusal::Busy, "no slot"));
        assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(resp.headers()[header::RETRY_AFTER], "1");
        let log = resp.extensions().get::<RequestLog>().unwrap();
        assert_eq!(log.outcome, "error:-32603");
        assert_eq!(log.detail.as_deref(), Some("no slot"));
        let resp = refuse(Refused::new(
            Refusal::OriginNotAllowed,
            "origin not allowed",
        ));
        assert!(resp.headers().get(header::RETRY_AFTER).is_none());
        assert_eq!(resp.status(), StatusCode::FORBIDDEN);
        assert_eq!(body_text(resp).await, Refusal::OriginNotAllowed.body());
    }
}
