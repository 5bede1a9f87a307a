//! The status table: which HTTP status each reply gets, the refusals a transport
//! makes before the body reaches the service, and the id-less JSON-RPC error body
//! those refusals carry.

use crate::engine::Outcome;
use crate::error::{Error, code};
use crate::service::Reply;

/// The status of a reply without a body (a notification, or a response to one).
pub const NOTIFICATION_STATUS: u16 = 202;

/// The HTTP status of `error` when it goes out as a JSON-RPC error: 404 for
/// -32601, 500 for -32603, 400 for every other code.
///
/// ```
/// use mrtr::error::Error;
/// use mrtr::streamable_http::error_status;
/// assert_eq!(error_status(&Error::method_not_found("x")), 404);
/// assert_eq!(error_status(&Error::invalid_request_state("tag")), 400);
/// assert_eq!(error_status(&Error::internal("x")), 500);
/// ```
pub fn error_status(error: &Error) -> u16 {
    code_status(error.code())
}

/// The HTTP status of a JSON-RPC error response with `code`.
fn code_status(code: i64) -> u16 {
    match code {
        code::METHOD_NOT_FOUND => 404,
        code::INTERNAL_ERROR => 500,
        _ => 400,
    }
}

/// The HTTP status of the response carrying the router's `reply`: 202 without a
/// body (a notification), [`error_status`] for a JSON-RPC error, else 200 (a
/// result, a tool error included).
pub fn reply_status(reply: &Reply) -> u16 {
    match (&reply.body, reply.error_code) {
        (None, _) => NOTIFICATION_STATUS,
        (Some(_), Some(code)) => code_status(code),
        (Some(_), None) => 200,
    }
}

/// The HTTP status of the response carrying `outcome`: 200 for a result (a tool
/// error included), else [`error_status`].
pub fn outcome_status(outcome: &Outcome) -> u16 {
    match outcome {
        Outcome::Protocol(e) => error_status(e),
        _ => 200,
    }
}

/// How a reply of the service goes out ([`reply_shape`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyShape {
    /// The body, with this status.
    Body(u16),
    /// No body, with this status: [`NOTIFICATION_STATUS`], or a 4xx.
    Empty(u16),
    /// [`Refusal::Internal`] in its place: never a bare 5xx.
    Internal,
}

/// The shape of a reply with `status` and `body`: no body → 202 (a 4xx stays a
/// bodiless 4xx); a status outside 200..=599, or a 5xx without a body (or with a
/// blank one), becomes [`Refusal::Internal`], so a 5xx always carries a -32603 body.
///
/// ```
/// use mrtr::streamable_http::{ReplyShape, reply_shape};
/// assert_eq!(reply_shape(200, Some("{}")), ReplyShape::Body(200));
/// assert_eq!(reply_shape(200, None), ReplyShape::Empty(202));
/// assert_eq!(reply_shape(503, None), ReplyShape::Internal);
/// ```
pub fn reply_shape(status: u16, body: Option<&str>) -> ReplyShape {
    if !(200..600).contains(&status) {
        return ReplyShape::Internal;
    }
    let server_error = status >= 500;
    match body {
        None if server_error => ReplyShape::Internal,
        None if status >= 400 => ReplyShape::Empty(status),
        None => ReplyShape::Empty(NOTIFICATION_STATUS),
        Some(b) if server_error && b.trim().is_empty() => ReplyShape::Internal,
        Some(_) => ReplyShape::Body(status),
    }
}

/// A refusal made by the transport before any request id could be read: its
/// status, JSON-RPC code and public message ([`Refusal::body`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// 421: the request names a `Host` this server does not answer for.
    MisdirectedHost,
    /// 403: a foreign `Origin` (spec: Streamable HTTP §Security Warning).
    OriginNotAllowed,
    /// 401: no principal could be established.
    Unauthenticated,
    /// 415: the body is not declared `application/json` ([`crate::streamable_http::is_json_content_type`]).
    UnsupportedMediaType,
    /// 413: the body is over the limit (bytes).
    BodyTooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// 408: the body did not arrive in time.
    BodyTimeout,
    /// 400: the body could not be read.
    BodyUnreadable,
    /// 503 (send `Retry-After`): the transport is at a cap.
    Busy,
    /// 500: the transport's own failure (a panic, a lost task, a reply that
    /// cannot go out as it is).
    Internal,
    /// 404: the `Mcp-Session-Id` names no session this server keeps for the
    /// caller (never opened, ended, expired, or another principal's): the
    /// client opens a new one with `initialize`.
    SessionNotFound,
    /// 400: a 2025-era request without `Mcp-Session-Id` on a server that
    /// serves only that era, or a session request naming a protocol version
    /// not of that era.
    SessionRequired,
    /// 409: the session's standalone stream (`GET`) is open already.
    StreamOpen,
    /// 406: a `GET` whose `Accept` does not allow `text/event-stream`.
    NotAcceptable,
}

impl Refusal {
    /// The HTTP status.
    pub fn status(self) -> u16 {
        match self {
            Self::MisdirectedHost => 421,
            Self::OriginNotAllowed => 403,
            Self::Unauthenticated => 401,
            Self::UnsupportedMediaType => 415,
            Self::BodyTooLarge { .. } => 413,
            Self::BodyTimeout => 408,
            Self::BodyUnreadable => 400,
            Self::Busy => 503,
            Self::Internal => 500,
            Self::SessionNotFound => 404,
            Self::SessionRequired => 400,
            Self::StreamOpen => 409,
            Self::NotAcceptable => 406,
        }
    }

    /// The JSON-RPC error code: -32603 for [`Refusal::Busy`] and
    /// [`Refusal::Internal`], -32600 for the client's faults.
    pub fn code(self) -> i64 {
        match self {
            Self::Busy | Self::Internal => code::INTERNAL_ERROR,
            _ => code::INVALID_REQUEST,
        }
    }

    /// The public message (it names no header value).
    pub fn message(self) -> String {
        match self {
            Self::MisdirectedHost => {
                "Misdirected Request: this server does not answer for that Host".into()
            }
            Self::OriginNotAllowed => "Forbidden: Origin not allowed".into(),
            Self::Unauthenticated => "Unauthorized".into(),
            Self::UnsupportedMediaType => {
                "Unsupported Media Type: Content-Type must be application/json".into()
            }
            Self::BodyTooLarge { limit } => format!("Request body too large (limit {limit} bytes)"),
            Self::BodyTimeout => {
                "Invalid Request: the request body was not received in time".into()
            }
            Self::BodyUnreadable => "Invalid Request: the request body could not be read".into(),
            Self::Busy => "Server busy: try again shortly".into(),
            Self::Internal => "Internal error".into(),
            Self::SessionNotFound => "Session not found: initialize a new session".into(),
            Self::SessionRequired => {
                "Bad Request: a session from initialize (Mcp-Session-Id) and a 2025 protocol version are required"
                    .into()
            }
            Self::StreamOpen => "Conflict: this session's stream is open already".into(),
            Self::NotAcceptable => "Not Acceptable: Accept must allow text/event-stream".into(),
        }
    }

    /// The JSON-RPC error body ([`error_body`]).
    pub fn body(self) -> String {
        error_body(self.code(), &self.message())
    }
}

/// A JSON-RPC error body for a refusal made before any request id could be read.
///
/// The `id` member is absent, as in the service's own errors: the MCP schema
/// makes `id` optional on `JSONRPCErrorResponse` and allows only a string or a
/// number in it, so JSON-RPC 2.0's `"id": null` would not validate.
pub fn error_body(code: i64, message: &str) -> String {
    let message = serde_json::Value::from(message);
    format!(r#"{{"jsonrpc":"2.0","error":{{"code":{code},"message":{message}}}}}"#)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Fallback, Retry, ToolAdvice};
    use crate::wire::CarrierMethod;
    use serde_json::json;

    #[test]
    fn statuses() {
        assert_eq!(error_status(&Error::parse("x")), 400);
        assert_eq!(error_status(&Error::invalid_request("x")), 400);
        assert_eq!(error_status(&Error::method_not_found("x")), 404);
        assert_eq!(error_status(&Error::invalid_params("x")), 400);
        assert_eq!(error_status(&Error::internal("x")), 500);
        assert_eq!(error_status(&Error::header_mismatch("Mcp-Name", "x")), 400);
        assert_eq!(error_status(&Error::unsupported_version("1")), 400);
        let failure = Error::tool_failure(
            ToolAdvice::new("x", Retry::Helps),
            Fallback::Internal,
            "c",
            "d",
        );
        let tool_error = Outcome::from_error(Some(CarrierMethod::ToolsCall), failure.clone());
        assert_eq!(outcome_status(&tool_error), 200);
        let rpc_error = Outcome::from_error(Some(CarrierMethod::PromptsGet), failure);
        assert_eq!(outcome_status(&rpc_error), 500);
        assert_eq!(outcome_status(&Outcome::Complete(json!({}))), 200);
    }

    #[test]
    fn reply_shapes_never_leave_a_bare_5xx() {
        assert_eq!(reply_shape(200, Some("{}")), ReplyShape::Body(200));
        assert_eq!(reply_shape(404, Some("{}")), ReplyShape::Body(404));
        assert_eq!(reply_shape(500, Some("{}")), ReplyShape::Body(500));
        assert_eq!(reply_shape(202, None), ReplyShape::Empty(202));
        assert_eq!(reply_shape(200, None), ReplyShape::Empty(202));
        assert_eq!(reply_shape(400, None), ReplyShape::Empty(400));
        for (status, body) in [
            (503, None),
            (500, Some("")),
            (500, Some(" \n")),
            (42, Some("{}")),
            (1000, None),
            (600, Some("{}")),
            (199, Some("{}")),
        ] {
            assert_eq!(reply_shape(status, body), ReplyShape::Internal, "{status}");
        }
    }

    #[test]
    fn error_bodies() {
        let v: serde_json::Value = serde_json::from_str(&error_body(-32600, "x \"y\"")).unwrap();
        assert_eq!(v["error"]["code"], -32600);
        assert_eq!(v["error"]["message"], "x \"y\"");
        assert!(v.get("id").is_none(), "{v}");
    }

    #[test]
    fn refusals_are_id_less_errors_with_their_status() {
        let table = [
            (Refusal::MisdirectedHost, 421, -32600),
            (Refusal::OriginNotAllowed, 403, -32600),
            (Refusal::Unauthenticated, 401, -32600),
            (Refusal::UnsupportedMediaType, 415, -32600),
            (Refusal::BodyTooLarge { limit: 7 }, 413, -32600),
            (Refusal::BodyTimeout, 408, -32600),
            (Refusal::BodyUnreadable, 400, -32600),
            (Refusal::Busy, 503, -32603),
            (Refusal::Internal, 500, -32603),
        ];
        for (refusal, status, code) in table {
            assert_eq!(refusal.status(), status, "{refusal:?}");
            let v: serde_json::Value = serde_json::from_str(&refusal.body()).unwrap();
            assert_eq!(v["error"]["code"], code, "{refusal:?}");
            assert_eq!(v["error"]["message"], refusal.message().as_str());
            assert!(v.get("id").is_none(), "{v}");
        }
        assert!(
            Refusal::BodyTooLarge { limit: 7 }
                .message()
                .contains("limit 7 bytes")
        );
    }
}
