//! The 2025 era over Streamable HTTP: [`HttpTransport`] as a [`LegacyTransport`].
//!
//! Every message is a `POST` with `MCP-Protocol-Version: <negotiated>` (from the
//! request after `initialize` on) and the session's `Mcp-Session-Id` (from the
//! `initialize` response's header on). A request is answered with a JSON body
//! or an SSE stream; on a stream the server may send requests of its own before
//! the response, each answered by a `POST` of the JSON-RPC response (`202`).
//! Notifications and responses get `202` and no body. The session ends with a
//! `DELETE`.

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::StatusCode;
use hyper::header::CONTENT_TYPE;
use serde_json::Value;

use super::{
    HEADER_SESSION_ID, HttpTransport, MAX_RESPONSE_BYTES, Wire, error_chain, is_jsonrpc_response,
    read_body,
};
use crate::legacy::{
    Exchanged, LegacyTransport, MAX_EVENT_BYTES, Probe, ServeRequest, Served, Session,
    is_modern_error,
};
use crate::{BoxFuture, TransportError};
use mrtr::streamable_http::{self, Framing, SseParser};

impl LegacyTransport for HttpTransport {
    fn server(&self) -> String {
        // Scheme, host, port and path: never userinfo or a query.
        let uri = self.uri();
        let port = uri.port_u16().map(|p| format!(":{p}")).unwrap_or_default();
        format!(
            "{}://{}{port}{}",
            uri.scheme_str().unwrap_or("http"),
            uri.host().unwrap_or(""),
            uri.path()
        )
    }

    fn probe(&self, request: Value) -> BoxFuture<'_, Result<Probe, TransportError>> {
        Box::pin(async move {
            let resp = self.post(&request, Wire::Modern).await?;
            if resp.status() != StatusCode::BAD_REQUEST {
                let reply = self.read_reply(&request, resp).await?;
                return Ok(Probe::Modern(self.after_reply(&request, reply).await?));
            }
            let mut body = resp.into_body();
            let buf = read_body(&mut body).await?;
            let id = request.get("id").cloned().unwrap_or(Value::Null);
            match serde_json::from_slice::<Value>(&buf) {
                Ok(v) if is_modern_error(&v, &id) => {
                    Ok(Probe::Modern(self.after_reply(&request, v).await?))
                }
                _ => Ok(Probe::Legacy),
            }
        })
    }

    fn exchange<'a>(
        &'a self,
        session: &'a Session,
        message: Value,
        serve: &'a dyn ServeRequest,
    ) -> BoxFuture<'a, Result<Exchanged, TransportError>> {
        Box::pin(async move {
            let version = session.version();
            let sid = session.id();
            let wire = Wire::Legacy {
                version: version.as_deref(),
                session: sid.as_deref(),
            };
            let resp = self.post(&message, wire).await?;
            let status = resp.status();
            let method = message.get("method").and_then(Value::as_str);
            if method == Some("initialize")
                && let Some(given) = resp.headers().get(HEADER_SESSION_ID)
            {
                let given = given.to_str().map_err(|_| {
                    TransportError::InvalidResponse(
                        "the server's Mcp-Session-Id is not visible ASCII".into(),
                    )
                })?;
                session.set_id(given)?;
            }
            if status == StatusCode::NOT_FOUND && sid.is_some() {
                // The session is gone (expired, or the server restarted): the
                // client opens another and sends the request again.
                let mut body = resp.into_body();
                let buf = read_body(&mut body).await?;
                return Err(status_error(status, &buf));
            }
            let id = message.get("id").filter(|id| !id.is_null()).cloned();
            let Some(id) = id.filter(|_| method.is_some()) else {
                // A notification or a response: 202 and no body.
                let mut body = resp.into_body();
                let buf = read_body(&mut body).await?;
                return if status.is_success() {
                    Ok(Exchanged::Delivered)
                } else {
                    Err(status_error(status, &buf))
                };
            };
            let content_type = resp
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok());
            let framing = streamable_http::response_framing(content_type);
            let mut body = resp.into_body();
            if framing != Framing::EventStream {
                let buf = read_body(&mut body).await?;
                return match serde_json::from_slice::<Value>(&buf) {
                    Ok(v) if is_jsonrpc_response(&v) => Ok(Exchanged::Response(v)),
                    _ if !status.is_success() => Err(status_error(status, &buf)),
                    _ => Err(TransportError::InvalidResponse(
                        "the body is not a JSON-RPC response".into(),
                    )),
                };
            }
            self.follow(session, body, &id, status, serve).await
        })
    }

    fn end<'a>(&'a self, session: &'a Session) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Some(id) = session.id() {
                self.delete_session(session.version().as_deref(), &id).await;
            }
        })
    }
}

impl HttpTransport {
    /// Reads the SSE stream that answers request `id` in `session`: each
    /// request of the server's is handed to `serve` and its answer POSTed, until
    /// the response (or an id-less error) comes, at most [`MAX_RESPONSE_BYTES`]
    /// in all and [`MAX_EVENT_BYTES`] an event.
    async fn follow(
        &self,
        session: &Session,
        mut body: hyper::body::Incoming,
        id: &Value,
        status: StatusCode,
        serve: &dyn ServeRequest,
    ) -> Result<Exchanged, TransportError> {
        let mut parser = SseParser::default();
        let (mut read, mut since_event) = (0usize, 0usize);
        loop {
            let events = match body.frame().await {
                None => parser.finish(),
                Some(frame) => {
                    let frame = frame.map_err(|e| TransportError::Connection(error_chain(&e)))?;
                    let Ok(chunk): Result<Bytes, _> = frame.into_data() else {
                        continue;
                    };
                    read += chunk.len();
                    since_event += chunk.len();
                    if read > MAX_RESPONSE_BYTES {
                        return Err(TransportError::InvalidResponse(
                            "the event stream is too large".into(),
                        ));
                    }
                    let events = parser.push(&chunk);
                    if events.is_empty() && since_event > MAX_EVENT_BYTES {
                        return Err(TransportError::InvalidResponse(format!(
                            "an event of the stream is longer than {MAX_EVENT_BYTES} bytes"
                        )));
                    }
                    events
                }
            };
            if !events.is_empty() {
                since_event = 0;
            }
            for data in events {
                let Ok(v) = serde_json::from_str::<Value>(&data) else {
                    tracing::debug!(bytes = data.len(), "skipped an event that is not JSON");
                    continue;
                };
                if is_jsonrpc_response(&v) {
                    match v.get("id") {
                        Some(got) if got == id => return Ok(Exchanged::Response(v)),
                        None | Some(Value::Null) if v.get("error").is_some() => {
                            return Ok(Exchanged::Response(v));
                        }
                        _ => continue,
                    }
                }
                let is_request = v.get("method").is_some_and(Value::is_string)
                    && v.get("id").is_some_and(|i| !i.is_null());
                if !is_request {
                    continue; // a notification (progress, logging)
                }
                match serve.serve(v).await {
                    Served::Answer(answer) => self.answer(session, &answer).await?,
                    Served::Stop(answer) => {
                        if let Some(answer) = answer {
                            let _ = self.answer(session, &answer).await;
                        }
                        return Ok(Exchanged::Stopped);
                    }
                }
            }
            if parser.is_finished() {
                return Err(TransportError::InvalidResponse(format!(
                    "the event stream ended without the response (http status {})",
                    status.as_u16()
                )));
            }
        }
    }

    /// Posts the answer to a server request (a JSON-RPC response) in the session.
    async fn answer(&self, session: &Session, answer: &Value) -> Result<(), TransportError> {
        let version = session.version();
        let sid = session.id();
        let wire = Wire::Legacy {
            version: version.as_deref(),
            session: sid.as_deref(),
        };
        let resp = self.post(answer, wire).await?;
        let status = resp.status();
        let mut body = resp.into_body();
        let buf = read_body(&mut body).await?;
        if status.is_success() {
            Ok(())
        } else {
            Err(status_error(status, &buf))
        }
    }
}

/// An HTTP error status with the start of its body.
fn status_error(status: StatusCode, body: &[u8]) -> TransportError {
    TransportError::Status {
        status: status.as_u16(),
        body: String::from_utf8_lossy(&body[..body.len().min(512)]).into_owned(),
    }
}
