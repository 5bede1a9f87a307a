//! Streamable HTTP transport: `POST /mcp` (axum on tokio).
//!
//! Order of checks on `POST /mcp`: `Origin` (403), `Content-Type` (415), body
//! size (413), then [`Service::handle`]. `GET`/`DELETE` (and any other method)
//! on `/mcp` answer 405 with `Allow: POST`; other paths answer 404.
//!
//! [`Service::handle_until`] is awaited on the request's own task: the core does
//! no I/O itself, and a handler that awaits (a database, an API) yields the worker
//! to other requests instead of blocking it. The handler's deadline is the
//! service's [`Service::handler_timeout_value`]. Panics in a handler are caught by
//! the service (-32603); a panic anywhere else in the request is caught around the
//! whole request (a 500 with a -32603 body).

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::post;
use http_body_util::BodyExt;

use super::{ConfigError, ServeConfig, log};
use crate::defaults;
use crate::principal::Principal;
use crate::service::{Reply, RequestContext, RequestLog, Service};
use crate::streamable_http::{HEADER_METHOD, HEADER_NAME, HEADER_PROTOCOL_VERSION, McpHeaders};
use crate::time::Timestamp;

/// The path of the MCP endpoint.
pub const MCP_PATH: &str = "/mcp";

#[derive(Debug)]
struct AppState {
    service: Arc<Service>,
    max_body: usize,
    allowed_origins: Vec<String>,
}

/// The per-request correlation id, put into the request's extensions by the
/// outer middleware so the handler uses the same one.
#[derive(Debug, Clone)]
struct CorrelationId(String);

/// Builds the router: `POST /mcp`, 405 for other methods on `/mcp`, 404
/// elsewhere, one log line per request, panics turned into 500 with a body.
pub fn router(service: Arc<Service>, cfg: &ServeConfig) -> Router {
    let state = Arc::new(AppState {
        service,
        max_body: cfg.max_body,
        allowed_origins: cfg.allowed_origins.clone(),
    });
    Router::new()
        .route(MCP_PATH, post(post_mcp).fallback(method_not_allowed))
        .fallback(not_found)
        .with_state(state)
        .layer(middleware::from_fn(per_request))
}

/// Serves `app` on `listener` until `shutdown` resolves, then lets in-flight
/// requests finish.
///
/// # Errors
/// The listener's I/O error.
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (signalled_tx, signalled_rx) = tokio::sync::oneshot::channel::<()>();
    let server = axum::serve(listener, app).with_graceful_shutdown(async move {
        shutdown.await;
        let _ = signalled_tx.send(());
    });
    // After the signal, in-flight requests get defaults::SHUTDOWN_GRACE to finish; a
    // client that keeps a request open longer does not keep the process alive.
    let deadline = async {
        match signalled_rx.await {
            Ok(()) => tokio::time::sleep(defaults::SHUTDOWN_GRACE).await,
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        r = server.into_future() => r,
        () = deadline => {
            tracing::warn!(
                grace_secs = defaults::SHUTDOWN_GRACE.as_secs(),
                "connections still open after the grace period; closing them"
            );
            Ok(())
        }
    }
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

    if let Some(origin) = headers.get(header::ORIGIN)
        && !origin_allowed(origin.as_bytes(), &app.allowed_origins)
    {
        // Spec (Streamable HTTP §Security): 403, optional JSON-RPC error without id.
        return transport_error(
            StatusCode::FORBIDDEN,
            -32600,
            "Forbidden: Origin not allowed",
            "origin not allowed",
        );
    }
    if !is_json_content_type(headers) {
        return transport_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            -32600,
            "Unsupported Media Type: Content-Type must be application/json",
            "content-type not application/json",
        );
    }
    let bytes = match read_body(body, headers, app.max_body).await {
        Ok(b) => b,
        Err(BodyError::TooLarge) => {
            return transport_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                -32600,
                &format!("Request body too large (limit {} bytes)", app.max_body),
                "body too large",
            );
        }
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

    let ctx = RequestContext {
        principal: Principal::anonymous(),
        now: Timestamp::now(),
        correlation_id: corr.clone(),
        http_headers: Some(mcp_headers(headers)),
    };
    let service = &app.service;
    let deadline = tokio::time::sleep(service.handler_timeout_value());
    let reply = service.handle_until(&bytes, &ctx, deadline).await;

    reply_response(reply, wants_sse(headers))
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
}

/// Reads the body, stopping as soon as it exceeds `max` bytes.
async fn read_body(mut body: Body, headers: &HeaderMap, max: usize) -> Result<Vec<u8>, BodyError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(BodyError::TooLarge);
    }
    let read = async {
        let mut buf = Vec::with_capacity(declared.map_or(0, |n| n as usize));
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|_| BodyError::Read)?;
            if let Ok(data) = frame.into_data() {
                if buf.len() + data.len() > max {
                    return Err(BodyError::TooLarge);
                }
                buf.extend_from_slice(&data);
            }
        }
        Ok(buf)
    };
    tokio::time::timeout(defaults::BODY_READ_TIMEOUT, read)
        .await
        .unwrap_or(Err(BodyError::Timeout))
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
/// [`ConfigError`] if it is not of that form (no path, query, user info or spaces).
pub fn normalize_origin(origin: &str) -> Result<String, ConfigError> {
    let o = origin.trim().trim_end_matches('/').to_ascii_lowercase();
    let bad = || ConfigError(format!("not an origin (scheme://host[:port]): {origin:?}"));
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
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let req = format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
        s.write_all(req.as_bytes()).await.unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }
}
