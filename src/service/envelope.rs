//! The JSON-RPC envelope of one message: strict parsing, the `id`, `jsonrpc`
//! and `method` members, notifications, and a transport's own check of the
//! message (Streamable HTTP's header agreement) before it is routed.

use serde_json::Value;

use crate::error::Error;
use crate::record::{self, RequestLog};
use crate::wire::jsonrpc::RequestId;

/// One JSON-RPC message, parsed: the first step of [`Service::handle_until`], on
/// its own so a transport can run it where it likes and check it against what
/// it saw ([`ParsedMessage::check`]).
///
/// The parse is the part of handling whose cost grows with the size of the body;
/// the rest is bounded by the engine's own limits (the `requestState` is at most
/// [`defaults::MAX_TOKEN_LEN`](crate::defaults::MAX_TOKEN_LEN) characters). The
/// HTTP transport parses bodies above
/// `mrtr_server::defaults::BLOCKING_PARSE_THRESHOLD` on tokio's blocking pool, then hands the result to
/// [`Service::handle_parsed_until`].
///
/// A message that is not JSON, or whose objects name a member twice at any depth,
/// is answered -32700 (Parse error) without an `id`: two readers of such a
/// message (a proxy routing on `params.name`, the server running the tool) can
/// disagree on what it says, so no member of it, not even `id`, is trusted
/// ([`from_slice_strict`](crate::wire::jsonrpc::from_slice_strict)). -32600
/// (Invalid Request) would claim the message was read and found wrong; it was
/// never read unambiguously.
///
/// [`Service::handle_until`]: super::Service::handle_until
/// [`Service::handle_parsed_until`]: super::Service::handle_parsed_until
pub struct ParsedMessage<C = NoCheck> {
    message: Result<Value, Error>,
    /// The transport's rule ([`ParsedMessage::check`]), run once the envelope
    /// has read the request's method and params.
    rule: Option<C>,
}

/// The rule of a message no transport checks ([`ParsedMessage::parse`]).
pub type NoCheck = fn(&str, Option<&Value>) -> Result<(), Error>;

impl<C> std::fmt::Debug for ParsedMessage<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParsedMessage")
            .field("message", &self.message)
            .field("checked", &self.rule.is_some())
            .finish()
    }
}

impl ParsedMessage {
    /// Parses `body`; a failure is kept and answered when the message is handled.
    pub fn parse(body: &[u8]) -> Self {
        use crate::wire::jsonrpc::{StrictJsonError, from_slice_strict};
        let message = from_slice_strict(body).map_err(|e| {
            Error::parse(match e {
                StrictJsonError::Syntax { line, column } => {
                    format!("invalid JSON at line {line} column {column}")
                }
                StrictJsonError::DuplicateKey { line, column } => {
                    format!("duplicate object key before line {line} column {column}")
                }
            })
        });
        Self {
            message,
            rule: None,
        }
    }

    /// Adds a transport's own rule over the request's `method` and `params` (the
    /// Streamable HTTP transport checks that its headers agree with them:
    /// [`streamable_http::check_headers`](crate::streamable_http::check_headers)).
    /// The rule runs when the message is handled, once the envelope has read the
    /// method and params (no second look at the message); an `Err` answers the
    /// request with that error, under its id, instead of routing it. A message
    /// that is no request (a notification, or one the envelope refuses) is not
    /// checked: it is answered as without the rule.
    #[must_use]
    pub fn check<F>(self, rule: F) -> ParsedMessage<F>
    where
        F: FnOnce(&str, Option<&Value>) -> Result<(), Error>,
    {
        ParsedMessage {
            message: self.message,
            rule: Some(rule),
        }
    }
}

impl<C> ParsedMessage<C> {
    /// Whether this message names the method `subscriptions/listen`, for which
    /// a transport opens a stream with [`Service::listen`](super::Service::listen)
    /// rather than handling it (which checks the rest of its envelope). One
    /// lookup: every request of a service with changes pays it.
    pub fn is_listen(&self) -> bool {
        self.message.as_ref().is_ok_and(|m| {
            m.get("method").and_then(Value::as_str) == Some(super::subscription::LISTEN)
        })
    }

    /// The method and params of the request this message is, read as the
    /// envelope reads them when the message is handled; `None` when it is no
    /// request (not JSON, ambiguous, a batch, a notification, or a wrong
    /// `jsonrpc` or `id`), which is then answered with an error, or not at all,
    /// and runs nothing.
    ///
    /// For a transport's own decision on its one parse of the body, made before
    /// the message is handled (the HTTP transport's per-tool authorization).
    ///
    /// [`ParsedMessage::asks_for_notifications`] is the cheaper question the
    /// transports ask of every request.
    pub fn request(&self) -> Option<(&str, Option<&Value>)> {
        match envelope(&self.message, &mut RequestLog::default()) {
            Read::Request(r) => Some((r.method, r.params)),
            Read::Notification | Read::Refused(..) => None,
        }
    }
}

impl<C> ParsedMessage<C> {
    /// Whether this message is a carrier request (`tools/call`, `prompts/get`,
    /// `resources/read`) whose `_meta` asks for notifications: a `progressToken`,
    /// or a log level (`io.modelcontextprotocol/logLevel`). Only then can its
    /// handler send any ([`Service::handle_parsed_notifying`]), so a transport
    /// asks this to decide whether to set up a stream for them (an SSE
    /// response); for every other message the answer is `false`, and the
    /// reply is the request's only message.
    ///
    /// A look at two members, not a check: a malformed token or level is
    /// refused when the message is handled (-32602), before any handler runs.
    ///
    /// [`Service::handle_parsed_notifying`]: super::Service::handle_parsed_notifying
    pub fn asks_for_notifications(&self) -> bool {
        let Ok(Value::Object(message)) = &self.message else {
            return false;
        };
        let carrier = message
            .get("method")
            .and_then(Value::as_str)
            .and_then(crate::wire::CarrierMethod::from_method)
            .is_some();
        carrier
            && message
                .get("params")
                .and_then(|p| p.get("_meta"))
                .and_then(Value::as_object)
                .is_some_and(|m| {
                    m.contains_key("progressToken") || m.contains_key(crate::wire::META_LOG_LEVEL)
                })
    }
}

impl<C> ParsedMessage<C> {
    /// Whether this message is a 2025-era `initialize`: a request naming
    /// `initialize` whose params carry no 2026-07-28 `_meta` (one that does is
    /// answered as any modern request naming a removed method: -32601).
    pub fn is_legacy_initialize(&self) -> bool {
        self.method_name() == Some("initialize") && !self.has_modern_meta()
    }

    /// Whether this message's params carry the 2026-07-28 `_meta` (a
    /// `io.modelcontextprotocol/protocolVersion`): such a message is served
    /// statelessly whatever session header came with it.
    pub fn has_modern_meta(&self) -> bool {
        self.meta()
            .and_then(|meta| meta.get(crate::wire::META_PROTOCOL_VERSION))
            .is_some()
    }

    /// The `method` member, when the message is an object that has a string
    /// one (a request or notification).
    pub fn method_name(&self) -> Option<&str> {
        self.message
            .as_ref()
            .ok()
            .and_then(|m| m.get("method"))
            .and_then(Value::as_str)
    }

    /// The tool or prompt name, or the resource URI, of a carrier request.
    pub fn target(&self) -> Option<&str> {
        let method = crate::wire::CarrierMethod::from_method(self.method_name()?)?;
        self.message
            .as_ref()
            .ok()?
            .get("params")?
            .get(method.target_param())?
            .as_str()
    }

    /// The protocol version the message's `_meta` names, if any.
    pub fn protocol_version(&self) -> Option<&str> {
        self.meta()?
            .get(crate::wire::META_PROTOCOL_VERSION)?
            .as_str()
    }

    /// The trace context the client sent in `params._meta` (`traceparent`,
    /// and `tracestate` beside it), when well formed: what a transport's
    /// span for this request takes as its parent.
    pub fn trace_context(&self) -> Option<(crate::wire::TraceParent, Option<&str>)> {
        crate::wire::trace_context(self.meta())
    }

    /// The `params._meta` member, when there is one.
    fn meta(&self) -> Option<&Value> {
        self.message.as_ref().ok()?.get("params")?.get("_meta")
    }

    /// The id of this message when it is a request (a `method` and a string
    /// or numeric `id`).
    pub fn request_id(&self) -> Option<RequestId> {
        let m = self.message.as_ref().ok()?.as_object()?;
        m.get("method")?.as_str()?;
        RequestId::from_value(m.get("id")?)
    }

    /// The request a `notifications/cancelled` names (its `params.requestId`),
    /// when this message is one.
    pub fn cancels(&self) -> Option<RequestId> {
        let m = self.message.as_ref().ok()?.as_object()?;
        if m.get("method")?.as_str()? != "notifications/cancelled" || m.contains_key("id") {
            return None;
        }
        RequestId::from_value(m.get("params")?.get("requestId")?)
    }

    /// The id and the outcome of this message when it is a JSON-RPC response (a
    /// `result` or an `error`, no `method`: a 2025-era client's answer to a
    /// server-to-client request): its `result`, or the `code` of its
    /// `error` (-32603 when the error has no numeric code). `None` when the
    /// message is no response or its id is neither a string nor a number.
    pub fn response(&self) -> Option<(crate::wire::jsonrpc::RequestId, Result<Value, i64>)> {
        let m = self.message.as_ref().ok()?.as_object()?;
        if m.contains_key("method") || m.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return None;
        }
        let id = crate::wire::jsonrpc::RequestId::from_value(m.get("id")?)?;
        match (m.get("result"), m.get("error")) {
            (Some(result), None) => Some((id, Ok(result.clone()))),
            (None, Some(error)) => Some((
                id,
                Err(error
                    .get("code")
                    .and_then(Value::as_i64)
                    .unwrap_or(crate::error::code::INTERNAL_ERROR)),
            )),
            _ => None,
        }
    }
}

/// A request the envelope took: its id, method and params.
pub(super) struct Request<'a> {
    pub(super) id: RequestId,
    pub(super) method: &'a str,
    pub(super) params: Option<&'a Value>,
    /// The transport's refusal ([`ParsedMessage::check`]): answered once the
    /// request is named in the log.
    pub(super) refused: Option<Error>,
}

/// What the envelope makes of a message.
pub(super) enum Read<'a> {
    /// A request to route.
    Request(Request<'a>),
    /// A notification: nothing to answer, whatever it is (cancellation has
    /// nothing to cancel between rounds: an `InputRequiredResult` ends the
    /// request).
    Notification,
    /// Refused before routing, answered with `id` when one was read.
    Refused(Option<RequestId>, Error),
}

/// Reads the envelope of `message`, filling in the log's id and method.
pub(super) fn read<'a, C>(message: &'a mut ParsedMessage<C>, log: &mut RequestLog) -> Read<'a>
where
    C: FnOnce(&str, Option<&Value>) -> Result<(), Error>,
{
    let rule = message.rule.take();
    match envelope(&message.message, log) {
        Read::Request(mut r) => {
            r.refused = rule.and_then(|rule| rule(r.method, r.params).err());
            Read::Request(r)
        }
        other => other,
    }
}

/// What the envelope makes of `message`, before any transport's rule.
fn envelope<'a>(message: &'a Result<Value, Error>, log: &mut RequestLog) -> Read<'a> {
    let msg = match message {
        Ok(v) => v,
        Err(e) => return Read::Refused(None, e.clone()),
    };
    let Value::Object(msg) = msg else {
        let what = if msg.is_array() {
            "batch requests are not supported"
        } else {
            "a request must be a JSON object"
        };
        return Read::Refused(None, Error::invalid_request(what));
    };
    let id = match msg.get("id") {
        None => None,
        Some(v) => match RequestId::from_value(v) {
            Some(id) => Some(id),
            None => {
                return Read::Refused(
                    None,
                    Error::invalid_request("id must be a string or a number"),
                );
            }
        },
    };
    log.jsonrpc_id = id.as_ref().map(|i| record::log_id(i).to_string());
    if msg.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Read::Refused(id, Error::invalid_request("jsonrpc must be \"2.0\""));
    }
    let Some(method) = msg.get("method").and_then(Value::as_str) else {
        return Read::Refused(id, Error::invalid_request("method must be a string"));
    };
    log.method = Some(crate::wire::truncate(method, record::METHOD_MAX).to_owned());
    let Some(id) = id else {
        return Read::Notification;
    };
    let params = msg.get("params");
    Read::Request(Request {
        id,
        method,
        params,
        refused: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_names_what_the_envelope_would_route_and_nothing_else() {
        let call = ParsedMessage::parse(
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deploy"}}"#,
        );
        let (method, params) = call.request().unwrap();
        assert_eq!(method, "tools/call");
        assert_eq!(params.unwrap()["name"], "deploy");
        // The transport's rule does not change what is read.
        let checked = call.check(|_, _| Err(Error::invalid_request("no")));
        assert_eq!(checked.request().unwrap().0, "tools/call");
        for body in [
            &b"not json"[..],
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"ping"}"#,
            br#"[{"jsonrpc":"2.0","id":1,"method":"tools/call"}]"#,
            br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"deploy"}}"#,
            br#"{"jsonrpc":"1.0","id":1,"method":"tools/call"}"#,
            br#"{"jsonrpc":"2.0","id":true,"method":"tools/call"}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":7}"#,
        ] {
            assert_eq!(
                ParsedMessage::parse(body).request(),
                None,
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }
}
