//! [`HttpTransport`]: the Streamable HTTP client transport (feature `client-http`).
//!
//! Each JSON-RPC request is one `POST` to the MCP endpoint with the headers the
//! 2026-07-28 transport requires (`MCP-Protocol-Version`, `Mcp-Method`,
//! `Mcp-Name`) and `Accept: application/json, text/event-stream`. The response is
//! either one JSON body or an SSE stream; in a stream, the driver gets the `data`
//! of the first event that is the response to this request's id (progress
//! notifications and other messages before it are skipped), and the stream is
//! then dropped, which the server reads as the end of the request.
//!
//! Plain `http://` only: there is no TLS here, which is fine for loopback and
//! trusted networks (the reference server listens on localhost). For `https://`,
//! implement [`Transport`] over an HTTP client with TLS.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use hyper::{Request, Uri};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

use super::transport::{BoxFuture, Transport, TransportError};
use crate::streamable_http::{HEADER_METHOD, HEADER_NAME, HEADER_PROTOCOL_VERSION, McpHeaders};
use crate::wire::PROTOCOL_VERSION;

/// The largest response body read, JSON or SSE (bytes).
pub const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// A Streamable HTTP transport to one MCP endpoint (e.g. `http://127.0.0.1:8080/mcp`).
///
/// Needs a tokio runtime. Cheap to share: the connection pool is inside.
#[derive(Debug, Clone)]
pub struct HttpTransport {
    client: HyperClient<HttpConnector, Full<Bytes>>,
    uri: Uri,
}

impl HttpTransport {
    /// A transport posting to `url`.
    ///
    /// # Errors
    /// [`TransportError::InvalidRequest`] when `url` is not an absolute `http://` URL.
    pub fn new(url: &str) -> Result<Self, TransportError> {
        let uri: Uri = url
            .parse()
            .map_err(|_| TransportError::InvalidRequest(format!("not a URL: {url:?}")))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some("https") => {
                return Err(TransportError::InvalidRequest(
                    "https is not supported by this transport (no TLS); use http on loopback"
                        .into(),
                ));
            }
            _ => {
                return Err(TransportError::InvalidRequest(format!(
                    "not an http URL: {url:?}"
                )));
            }
        }
        if uri.host().is_none() {
            return Err(TransportError::InvalidRequest(format!(
                "no host in {url:?}"
            )));
        }
        let client = HyperClient::builder(TokioExecutor::new()).build(HttpConnector::new());
        Ok(Self { client, uri })
    }

    /// The endpoint.
    pub fn uri(&self) -> &Uri {
        &self.uri
    }

    fn build(&self, request: &Value) -> Result<Request<Full<Bytes>>, TransportError> {
        let headers = McpHeaders::for_request(request, PROTOCOL_VERSION);
        let mut b = Request::post(self.uri.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream");
        for (name, value) in [
            (HEADER_PROTOCOL_VERSION, &headers.protocol_version),
            (HEADER_METHOD, &headers.method),
            (HEADER_NAME, &headers.name),
        ] {
            if let Some(v) = value {
                b = b.header(name, header_value(name, v)?);
            }
        }
        let body = serde_json::to_vec(request)
            .map_err(|e| TransportError::InvalidRequest(e.to_string()))?;
        b.body(Full::new(Bytes::from(body)))
            .map_err(|e| TransportError::InvalidRequest(e.to_string()))
    }
}

fn header_value(name: &str, v: &str) -> Result<HeaderValue, TransportError> {
    HeaderValue::from_str(v).map_err(|_| {
        TransportError::InvalidRequest(format!("the {name} header cannot carry this value"))
    })
}

impl Transport for HttpTransport {
    fn send(&self, request: Value) -> BoxFuture<'_, Result<Value, TransportError>> {
        Box::pin(async move {
            let id = request.get("id").cloned().unwrap_or(Value::Null);
            let req = self.build(&request)?;
            let resp = self
                .client
                .request(req)
                .await
                .map_err(|e| TransportError::Connection(error_chain(&e)))?;
            let status = resp.status();
            let is_sse = resp
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|ct| {
                    ct.trim_start()
                        .to_ascii_lowercase()
                        .starts_with("text/event-stream")
                });
            let mut body = resp.into_body();
            if is_sse {
                let mut parser = SseParser::default();
                let mut read = 0usize;
                loop {
                    let data = match body.frame().await {
                        None => parser.finish(),
                        Some(frame) => {
                            let frame =
                                frame.map_err(|e| TransportError::Connection(error_chain(&e)))?;
                            let Ok(chunk) = frame.into_data() else {
                                continue;
                            };
                            read += chunk.len();
                            if read > MAX_RESPONSE_BYTES {
                                return Err(TransportError::InvalidResponse(
                                    "the event stream is too large".into(),
                                ));
                            }
                            parser.push(&chunk)
                        }
                    };
                    for d in data {
                        if let Some(v) = response_for(&d, &id) {
                            return Ok(v);
                        }
                    }
                    if parser.finished {
                        return Err(TransportError::InvalidResponse(format!(
                            "the event stream ended without the response (http status {})",
                            status.as_u16()
                        )));
                    }
                }
            }
            let mut buf = Vec::new();
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|e| TransportError::Connection(error_chain(&e)))?;
                if let Ok(chunk) = frame.into_data() {
                    buf.extend_from_slice(&chunk);
                    if buf.len() > MAX_RESPONSE_BYTES {
                        return Err(TransportError::InvalidResponse(
                            "the response body is too large".into(),
                        ));
                    }
                }
            }
            // A JSON-RPC response is handed over whatever the status (errors come with 4xx).
            match serde_json::from_slice::<Value>(&buf) {
                Ok(v) if is_jsonrpc_response(&v) => Ok(v),
                _ if !status.is_success() => Err(TransportError::Status {
                    status: status.as_u16(),
                    body: String::from_utf8_lossy(&buf[..buf.len().min(512)]).into_owned(),
                }),
                Ok(_) => Err(TransportError::InvalidResponse(
                    "the body is not a JSON-RPC response".into(),
                )),
                Err(e) => Err(TransportError::InvalidResponse(format!(
                    "the body is not JSON: {e}"
                ))),
            }
        })
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s
}

fn is_jsonrpc_response(v: &Value) -> bool {
    v.as_object()
        .is_some_and(|o| o.contains_key("result") || o.contains_key("error"))
}

/// The event data if it is the response to `id` (or an error without an id).
fn response_for(data: &str, id: &Value) -> Option<Value> {
    let v: Value = serde_json::from_str(data).ok()?;
    if !is_jsonrpc_response(&v) {
        return None;
    }
    match v.get("id") {
        Some(got) if got == id => Some(v),
        None | Some(Value::Null) if v.get("error").is_some() => Some(v),
        _ => None,
    }
}

/// An incremental `text/event-stream` parser: only `data` matters here.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    pending: Vec<u8>,
    data: Option<String>,
    /// The last chunk ended with `\r`, so a `\n` opening the next one belongs to it.
    skip_lf: bool,
    pub(crate) finished: bool,
}

impl SseParser {
    /// Feeds bytes; returns the data of every event completed by them.
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        for &b in chunk {
            if self.skip_lf {
                self.skip_lf = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' | b'\r' => {
                    self.skip_lf = b == b'\r';
                    let line = std::mem::take(&mut self.pending);
                    self.line(&line, &mut out);
                }
                _ => self.pending.push(b),
            }
        }
        out
    }

    /// The stream ended: dispatches an event left without its blank line.
    pub(crate) fn finish(&mut self) -> Vec<String> {
        self.finished = true;
        let mut out = Vec::new();
        if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            self.line(&line, &mut out);
        }
        out.extend(self.data.take());
        out
    }

    fn line(&mut self, line: &[u8], out: &mut Vec<String>) {
        if line.is_empty() {
            out.extend(self.data.take());
            return;
        }
        let line = String::from_utf8_lossy(line);
        let (field, value) = match line.find(':') {
            Some(0) => return, // a comment
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (&line[..], ""),
        };
        if field == "data" {
            match &mut self.data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_split_anywhere() {
        let stream = b": comment\r\nevent: message\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\nid: 7\ndata:x\n\ndata: tail";
        for split in 0..stream.len() {
            let mut p = SseParser::default();
            let mut got = p.push(&stream[..split]);
            got.extend(p.push(&stream[split..]));
            got.extend(p.finish());
            assert_eq!(
                got,
                vec!["{\"a\":\n1}".to_owned(), "x".into(), "tail".into()],
                "split at {split}"
            );
        }
    }

    #[test]
    fn response_matching() {
        let id = Value::from(3);
        assert!(
            response_for(
                r#"{"jsonrpc":"2.0","method":"notifications/progress"}"#,
                &id
            )
            .is_none()
        );
        assert!(response_for(r#"{"jsonrpc":"2.0","id":2,"result":{}}"#, &id).is_none());
        assert!(response_for(r#"{"jsonrpc":"2.0","id":"3","result":{}}"#, &id).is_none());
        assert!(response_for(r#"{"jsonrpc":"2.0","id":3,"result":{}}"#, &id).is_some());
        assert!(
            response_for(
                r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"x"}}"#,
                &id
            )
            .is_some()
        );
    }

    #[test]
    fn only_http_urls() {
        assert!(HttpTransport::new("https://example.com/mcp").is_err());
        assert!(HttpTransport::new("ftp://x/").is_err());
        assert!(HttpTransport::new("/mcp").is_err());
    }
}
