//! Each Streamable HTTP rule of `mrtr::streamable_http`, seen from both ends:
//! the server side through the real router (`mcp_router` served on a loopback
//! port, spoken to in raw HTTP/1.1), the client side through `HttpTransport`
//! against that router or, where the reply must be shaped by hand, a tiny axum
//! stub that records what the client sent.
//!
//! | rule | server | client |
//! |---|---|---|
//! | `Accept`, JSON or SSE | `server_accept_picks_json_or_one_sse_event` | `client_accepts_both_and_reads_either_framing` |
//! | `Origin` | `server_refuses_a_foreign_origin` | `client_sends_no_origin` |
//! | `Content-Type` | `server_wants_a_json_content_type` | `client_sends_a_json_content_type` |
//! | SSE framing | `server_writes_one_event_as_the_core_frames_it` | `client_reads_events_as_the_core_frames_them` |
//! | the id-less error body | `server_refusals_carry_the_id_less_error_body` | `client_takes_an_id_less_error_as_the_reply` |
//! | MCP headers (-32020) | `server_wants_mcp_headers_that_agree` | `client_writes_mcp_headers_that_agree` |
//! | the status table | `server_statuses_follow_the_table` | `client_hands_over_a_jsonrpc_error_whatever_the_status` |

use mrtr_testkit as server_support;

use mrtr::ResourceDefinition;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::post;
use futures_util::stream;
use mrtr::streamable_http::{
    self, ACCEPT_JSON_AND_EVENT_STREAM, McpHeaders, Refusal, SseParser, error_status, sse_event,
};
use mrtr::{Engine, Keyring, ResourceResult, Service, ToolResult};
use mrtr_client::{Client, ClientError, FlowError, HttpTransport, Transport};
use mrtr_server::http::{Anonymous, HttpOptions, mcp_router};
use serde_json::{Value, json};

use server_support::{HttpResponse, MCP_HEADERS, request, rpc_error, tools_list};

const PROTOCOL: &str = "2026-07-28";
const MAX_BODY: usize = 2048;

/// A server or a stub on a loopback port, on a runtime of its own (dropping it
/// stops them).
struct Running {
    addr: SocketAddr,
    runtime: tokio::runtime::Runtime,
}

impl Running {
    fn serve(app: Router) -> Self {
        let (runtime, addr) = crate::loopback::serve(app);
        Self { addr, runtime }
    }

    /// The real router: a tool `echo`, a resource `file:///a.txt`, a body limit
    /// of [`MAX_BODY`] and one extra allowed origin.
    fn mrtr() -> Self {
        let service = Service::new(Engine::new(Keyring::ephemeral(), "rules"), "rules", "0")
            .tool("echo", "Echoes.", json!({"type": "object"}), |_round| {
                Ok(ToolResult::text("echoed"))
            })
            .resource(
                ResourceDefinition::new("file:///a.txt", "a")
                    .description("A file.")
                    .mime_type("text/plain"),
                |_round| Ok(ResourceResult::text("file:///a.txt", "text/plain", "aaa")),
            );
        let options = HttpOptions::default()
            .with_max_body(MAX_BODY)
            .allow_origin("https://app.example")
            .unwrap();
        Self::serve(mcp_router(Arc::new(service), options, Anonymous))
    }

    fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    fn client(&self) -> Client {
        Client::builder(HttpTransport::new(&self.url()).unwrap()).build()
    }

    /// A raw `POST /mcp` with these headers.
    fn post(&self, headers: &[(&str, &str)], body: &[u8]) -> HttpResponse {
        request(self.addr, "POST", "/mcp", headers, body)
    }
}

/// `MCP_HEADERS` (a `tools/list`) with `Content-Type: application/json` and `extra`.
fn list_headers<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut h = MCP_HEADERS.to_vec();
    h.push(("Content-Type", "application/json"));
    h.extend_from_slice(extra);
    h
}

/// A JSON-RPC request as the client driver would send it, with `_meta`.
fn rpc(id: u64, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": PROTOCOL,
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The MCP headers that agree with `body` (written by the core), plus the
/// `Content-Type`.
fn agreeing(body: &Value) -> Vec<(String, String)> {
    let mut h: Vec<(String, String)> = McpHeaders::for_request(body, PROTOCOL)
        .pairs()
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
        .collect();
    h.push(("Content-Type".into(), "application/json".into()));
    h
}

fn borrowed(h: &[(String, String)]) -> Vec<(&str, &str)> {
    h.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

/// The data of every event in an SSE body, read by the core's parser.
fn events(text: &str) -> Vec<String> {
    let mut p = SseParser::default();
    let mut out = p.push(text.as_bytes());
    out.extend(p.finish());
    out
}

// ---------------------------------------------------------------------------
// A stub server, for replies the real router would not give the client.
// ---------------------------------------------------------------------------

/// What the stub saw of each request: its headers and its body.
type Seen = Arc<Mutex<Vec<(HeaderMap, Value)>>>;

/// A stub answering every `POST /mcp` with `reply(request body, n)`, where `n`
/// counts the requests from 0.
fn stub(
    reply: impl Fn(&Value, usize) -> Response + Clone + Send + Sync + 'static,
) -> (Running, Seen) {
    let seen: Seen = Arc::default();
    let log = Arc::clone(&seen);
    let app = Router::new().route(
        "/mcp",
        post(move |headers: HeaderMap, body: String| {
            let reply = reply.clone();
            let log = Arc::clone(&log);
            async move {
                let body: Value = serde_json::from_str(&body).unwrap();
                let n = {
                    let mut l = log.lock().unwrap();
                    l.push((headers, body.clone()));
                    l.len() - 1
                };
                reply(&body, n)
            }
        }),
    );
    (Running::serve(app), seen)
}

/// A reply with `status`, `content_type` and `body` sent in `chunk`-byte pieces.
fn reply_with(status: u16, content_type: &str, body: String, chunk: usize) -> Response {
    let pieces: Vec<Result<Vec<u8>, std::io::Error>> = body
        .as_bytes()
        .chunks(chunk)
        .map(|c| Ok(c.to_vec()))
        .collect();
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Body::from_stream(stream::iter(pieces)))
        .unwrap()
}

fn ok(req: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": req["id"], "result": {"resultType": "complete", "tools": []}})
}

// ---------------------------------------------------------------------------
// Accept: one JSON body or one SSE event.
// ---------------------------------------------------------------------------

#[test]
fn server_accept_picks_json_or_one_sse_event() {
    let s = Running::mrtr();
    for (accept, sse) in [
        (None, false),
        (Some(ACCEPT_JSON_AND_EVENT_STREAM), false),
        (Some("text/event-stream, */*"), false),
        (Some("text/event-stream;q=0"), false),
        (Some("text/event-stream"), true),
        (Some("Text/Event-Stream, application/json;q=0"), true),
    ] {
        let extra: Vec<(&str, &str)> = accept.map(|a| ("Accept", a)).into_iter().collect();
        let r = s.post(&list_headers(&extra), tools_list(1).as_bytes());
        assert_eq!(r.status, 200, "{accept:?}: {r:?}");
        let want = if sse {
            "text/event-stream"
        } else {
            "application/json"
        };
        assert_eq!(r.header("content-type"), Some(want), "{accept:?}");
        let body = if sse {
            events(&r.text()).remove(0)
        } else {
            r.text()
        };
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["id"], 1, "{accept:?}: {v}");
    }
}

#[test]
fn client_accepts_both_and_reads_either_framing() {
    let (s, seen) = stub(|req, n| {
        let body = ok(req).to_string();
        match n {
            0 => reply_with(200, "application/json; charset=utf-8", body, 1 << 20),
            _ => reply_with(
                200,
                "Text/Event-Stream; charset=utf-8",
                sse_event("e1", &body),
                1 << 20,
            ),
        }
    });
    let client = s.client();
    s.runtime.block_on(async {
        for _ in 0..2 {
            let v = client
                .request("tools/list", Default::default())
                .await
                .unwrap();
            assert_eq!(v["tools"], json!([]), "{v}");
        }
    });
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    for (headers, _) in seen.iter() {
        assert_eq!(headers["accept"], ACCEPT_JSON_AND_EVENT_STREAM);
    }
}

// ---------------------------------------------------------------------------
// Origin.
// ---------------------------------------------------------------------------

#[test]
fn server_refuses_a_foreign_origin() {
    let s = Running::mrtr();
    for origin in [
        "https://evil.example",
        "null",
        "http://localhost.evil.example",
    ] {
        let r = s.post(
            &list_headers(&[("Origin", origin)]),
            tools_list(1).as_bytes(),
        );
        assert_eq!(r.status, 403, "{origin}");
        assert_eq!(r.text(), Refusal::OriginNotAllowed.body(), "{origin}");
    }
    for origin in [
        "http://localhost:6274",
        "http://[::1]",
        "https://App.Example/",
    ] {
        let r = s.post(
            &list_headers(&[("Origin", origin)]),
            tools_list(1).as_bytes(),
        );
        assert_eq!(r.status, 200, "{origin}: {r:?}");
    }
}

#[test]
fn client_sends_no_origin() {
    // The real router refuses a foreign Origin; the client, not a browser, sends
    // none, so it passes.
    let s = Running::mrtr();
    let client = s.client();
    let out = s
        .runtime
        .block_on(client.call_tool("echo", json!({})))
        .unwrap();
    assert_eq!(out.text(), "echoed");
    let (stub, seen) = stub(|req, _| reply_with(200, "application/json", ok(req).to_string(), 64));
    stub.runtime
        .block_on(stub.client().request("tools/list", Default::default()))
        .unwrap();
    assert!(!seen.lock().unwrap()[0].0.contains_key("origin"));
}

// ---------------------------------------------------------------------------
// Content-Type.
// ---------------------------------------------------------------------------

#[test]
fn server_wants_a_json_content_type() {
    let s = Running::mrtr();
    for ct in [Some("text/plain"), Some("application/json-seq"), None] {
        let mut h = MCP_HEADERS.to_vec();
        h.extend(ct.map(|c| ("Content-Type", c)));
        let r = s.post(&h, tools_list(1).as_bytes());
        assert_eq!(r.status, 415, "{ct:?}");
        assert_eq!(r.text(), Refusal::UnsupportedMediaType.body());
    }
    let mut h = MCP_HEADERS.to_vec();
    h.push(("Content-Type", "Application/JSON; charset=utf-8"));
    assert_eq!(s.post(&h, tools_list(1).as_bytes()).status, 200);
}

#[test]
fn client_sends_a_json_content_type() {
    let (stub, seen) = stub(|req, _| reply_with(200, "application/json", ok(req).to_string(), 64));
    stub.runtime
        .block_on(stub.client().request("tools/list", Default::default()))
        .unwrap();
    assert_eq!(
        seen.lock().unwrap()[0].0["content-type"],
        streamable_http::JSON
    );
    // And the real router, which answers 415 to anything else, takes it.
    let s = Running::mrtr();
    s.runtime
        .block_on(s.client().request("tools/list", Default::default()))
        .unwrap();
}

// ---------------------------------------------------------------------------
// SSE framing.
// ---------------------------------------------------------------------------

#[test]
fn server_writes_one_event_as_the_core_frames_it() {
    let s = Running::mrtr();
    let r = s.post(
        &list_headers(&[("Accept", "text/event-stream")]),
        tools_list(4).as_bytes(),
    );
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert_eq!(r.header("cache-control"), Some("no-cache"));
    let text = r.text();
    let id = text
        .lines()
        .find_map(|l| l.strip_prefix("id: "))
        .expect("an event id");
    let data = events(&text);
    assert_eq!(data.len(), 1, "{text:?}");
    assert_eq!(text, sse_event(id, &data[0]));
    let v: Value = serde_json::from_str(&data[0]).unwrap();
    assert_eq!(v["id"], 4);
}

#[test]
fn client_reads_events_as_the_core_frames_them() {
    // A progress notification, then the response, framed by the core and sent
    // three bytes at a time.
    let (s, _) = stub(|req, _| {
        let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}});
        let text = format!(
            ": keep-alive\n\n{}{}",
            sse_event("1", &progress.to_string()),
            sse_event("2", &ok(req).to_string())
        );
        reply_with(200, "text/event-stream", text, 3)
    });
    let v = s
        .runtime
        .block_on(s.client().request("tools/list", Default::default()))
        .unwrap();
    assert_eq!(v["tools"], json!([]), "{v}");
}

// ---------------------------------------------------------------------------
// The id-less error body.
// ---------------------------------------------------------------------------

#[test]
fn server_refusals_carry_the_id_less_error_body() {
    let s = Running::mrtr();
    let big = vec![b' '; MAX_BODY + 1];
    let r = s.post(&list_headers(&[]), &big);
    assert_eq!(r.status, 413);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.text(), Refusal::BodyTooLarge { limit: MAX_BODY }.body());
    let v = r.json();
    rpc_error(&v, -32600);
    assert!(v.get("id").is_none(), "{v}");
}

#[test]
fn client_takes_an_id_less_error_as_the_reply() {
    // The real router refuses a body over its limit before reading an id.
    let s = Running::mrtr();
    let huge = "x".repeat(MAX_BODY);
    let request = rpc(
        9,
        "tools/call",
        json!({"name": "echo", "arguments": {"x": huge}}),
    );
    let t = HttpTransport::new(&s.url()).unwrap();
    let v = s.runtime.block_on(t.send(request)).unwrap();
    assert_eq!(v["error"]["code"], -32600, "{v}");
    assert!(v.get("id").is_none(), "{v}");
    let err = s
        .runtime
        .block_on(s.client().call_tool("echo", json!({"x": huge})))
        .unwrap_err();
    assert!(
        matches!(
            err,
            ClientError::Flow(FlowError::JsonRpc { code: -32600, .. })
        ),
        "{err:?}"
    );
    // In an event stream too.
    let (stub, _) = stub(|_, _| {
        let body = Refusal::BodyTimeout.body();
        reply_with(408, "text/event-stream", sse_event("1", &body), 5)
    });
    let t = HttpTransport::new(&stub.url()).unwrap();
    let v = stub
        .runtime
        .block_on(t.send(rpc(1, "tools/list", json!({}))))
        .unwrap();
    assert_eq!(v["error"]["code"], -32600, "{v}");
}

// ---------------------------------------------------------------------------
// The MCP headers and their agreement with the body (-32020).
// ---------------------------------------------------------------------------

#[test]
fn server_wants_mcp_headers_that_agree() {
    let s = Running::mrtr();
    let call = rpc(1, "tools/call", json!({"name": "echo", "arguments": {}}));
    let body = call.to_string();
    let good = agreeing(&call);
    assert_eq!(s.post(&borrowed(&good), body.as_bytes()).status, 200);
    let variants: [(&str, Option<&str>); 4] = [
        ("mcp-name", Some("other")),
        ("mcp-name", None),
        ("mcp-method", Some("tools/list")),
        ("mcp-protocol-version", Some("2025-11-25")),
    ];
    for (name, value) in variants {
        let mut h: Vec<(String, String)> =
            good.iter().filter(|(n, _)| n != name).cloned().collect();
        h.extend(value.map(|v| (name.to_owned(), v.to_owned())));
        let r = s.post(&borrowed(&h), body.as_bytes());
        assert_eq!(r.status, 400, "{name}={value:?}");
        rpc_error(&r.json(), -32020);
        assert!(!r.text().contains("other"), "no header value: {}", r.text());
    }
    // A repeated header reads as both values joined: a mismatch.
    let mut h = borrowed(&good);
    h.push(("Mcp-Method", "tools/call"));
    let r = s.post(&h, body.as_bytes());
    assert_eq!(r.status, 400);
    rpc_error(&r.json(), -32020);
}

#[test]
fn client_writes_mcp_headers_that_agree() {
    // The real router checks them: every carrier and a plain method pass.
    let s = Running::mrtr();
    let client = s.client();
    s.runtime.block_on(async {
        assert_eq!(
            client.call_tool("echo", json!({})).await.unwrap().text(),
            "echoed"
        );
        assert_eq!(
            client.read_resource("file:///a.txt").await.unwrap().text(),
            "aaa"
        );
        client
            .request("tools/list", Default::default())
            .await
            .unwrap();
    });
    // What went on the wire is what the core writes for that body.
    let (stub, seen) = stub(|req, _| reply_with(200, "application/json", ok(req).to_string(), 64));
    stub.runtime
        .block_on(stub.client().read_resource("file:///b"))
        .ok();
    let seen = seen.lock().unwrap();
    let (headers, body) = &seen[0];
    let want = McpHeaders::for_request(body, PROTOCOL);
    let got = McpHeaders::read(|name| headers.get_all(name).iter().map(|v| v.as_bytes()));
    assert_eq!(got, want);
    assert_eq!(got.name.as_deref(), Some("file:///b"));
}

// ---------------------------------------------------------------------------
// The status table.
// ---------------------------------------------------------------------------

#[test]
fn server_statuses_follow_the_table() {
    let s = Running::mrtr();
    // A result: 200.
    assert_eq!(
        s.post(&list_headers(&[]), tools_list(1).as_bytes()).status,
        200
    );
    // Method not found: 404, as error_status says.
    let nope = rpc(2, "nope/nothing", json!({}));
    let r = s.post(&borrowed(&agreeing(&nope)), nope.to_string().as_bytes());
    assert_eq!(r.status, 404);
    rpc_error(&r.json(), -32601);
    assert_eq!(
        error_status(&mrtr::Error::method_not_found("nope/nothing")),
        404
    );
    // A notification: 202 and no body.
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let r = s.post(&borrowed(&agreeing(&note)), note.to_string().as_bytes());
    assert_eq!(r.status, streamable_http::NOTIFICATION_STATUS);
    assert!(r.body.is_empty(), "{r:?}");
    // Every refusal has the status the table gives it.
    let r = s.post(&list_headers(&[("Origin", "https://evil.example")]), b"{}");
    assert_eq!(r.status, Refusal::OriginNotAllowed.status());
    let r = s.post(MCP_HEADERS, b"{}");
    assert_eq!(r.status, Refusal::UnsupportedMediaType.status());
}

#[test]
fn client_hands_over_a_jsonrpc_error_whatever_the_status() {
    // A 404 from the real router is a JSON-RPC error, not a transport failure.
    let s = Running::mrtr();
    let err = s
        .runtime
        .block_on(s.client().request("nope/nothing", Default::default()))
        .unwrap_err();
    assert!(
        matches!(
            err,
            ClientError::Flow(FlowError::JsonRpc { code: -32601, .. })
        ),
        "{err:?}"
    );
    // A 500 without one is a transport failure with its status.
    let (stub, _) = stub(|_, _| reply_with(500, "text/plain", "boom".into(), 64));
    let t = HttpTransport::new(&stub.url()).unwrap();
    let e = stub
        .runtime
        .block_on(t.send(rpc(1, "tools/list", json!({}))))
        .unwrap_err();
    assert!(
        matches!(e, mrtr_client::TransportError::Status { status: 500, .. }),
        "{e:?}"
    );
}
