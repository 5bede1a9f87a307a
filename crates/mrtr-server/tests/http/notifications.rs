//! A handler's progress and log notifications over the real router: SSE events
//! as they are sent, then the result as the last event, for a request that
//! asked for them (a `progressToken`, an `io.modelcontextprotocol/logLevel`)
//! from a client that accepts `text/event-stream`; the plain JSON reply, as
//! before, for every other request; the per-request cap.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use mrtr::{Engine, Keyring, LogLevel, Service, ToolResult};
use mrtr_server::defaults::MAX_NOTIFICATIONS_PER_REQUEST;
use mrtr_server::http::{Anonymous, HttpOptions, mcp_router};
use mrtr_testkit::{HttpResponse, borrow, headers_for, parse_response, request, sse_messages};
use serde_json::{Value, json};

/// The router on a loopback port, on a runtime of its own (dropped: stopped).
struct Running {
    addr: SocketAddr,
    _runtime: tokio::runtime::Runtime,
}

/// The tools: `work` (progress 1, 2, 3 of 3; a debug and an info log message),
/// `gated` (progress 1, then waits for the test's go, then progress 2), and
/// `flood` (200 progress notifications at once).
fn serve(go: Arc<tokio::sync::Notify>) -> Running {
    let service = Service::new(Engine::new(Keyring::ephemeral(), "notes"), "notes", "0")
        .tool("work", "Works.", json!({"type": "object"}), |round| {
            for p in 1..=3 {
                round.progress(f64::from(p), Some(3.0), Some("working"));
            }
            round.log(LogLevel::Debug, json!("too fine"));
            round.log_from(LogLevel::Info, Some("work"), json!({"rows": 3}));
            Ok(ToolResult::text("worked"))
        })
        .tool("gated", "Waits.", json!({"type": "object"}), move |round| {
            let go = Arc::clone(&go);
            async move {
                round.progress(1.0, None, Some("waiting"));
                go.notified().await;
                round.progress(2.0, None, None);
                Ok(ToolResult::text("went"))
            }
        })
        .tool("flood", "Floods.", json!({"type": "object"}), |round| {
            for p in 0..200 {
                round.progress(f64::from(p), None, None);
            }
            Ok(ToolResult::text("flooded"))
        });
    let app = mcp_router(Arc::new(service), HttpOptions::default(), Anonymous);
    let (runtime, addr) = crate::loopback::serve(app);
    Running {
        addr,
        _runtime: runtime,
    }
}

/// A `tools/call` of `tool` whose `_meta` has `extra` too.
fn call(id: u64, tool: &str, extra: Value) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    for (k, v) in extra.as_object().unwrap() {
        meta[k] = v.clone();
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": {}, "_meta": meta}})
}

fn post(s: &Running, body: &Value, accept: &str) -> HttpResponse {
    let mut h = headers_for(body);
    h.push(("Content-Type".into(), "application/json".into()));
    h.push(("Accept".into(), accept.into()));
    request(
        s.addr,
        "POST",
        "/mcp",
        &borrow(&h),
        body.to_string().as_bytes(),
    )
}

const BOTH: &str = "application/json, text/event-stream";

fn methods(messages: &[Value]) -> Vec<&str> {
    messages
        .iter()
        .map(|m| m["method"].as_str().unwrap_or("(response)"))
        .collect()
}

#[test]
fn progress_and_log_messages_are_events_before_the_result() {
    let s = serve(Arc::default());
    let body = call(
        7,
        "work",
        json!({"progressToken": "tok-1", "io.modelcontextprotocol/logLevel": "info"}),
    );
    let r = post(&s, &body, BOTH);
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let m = sse_messages(&r.text());
    assert_eq!(
        methods(&m),
        [
            "notifications/progress",
            "notifications/progress",
            "notifications/progress",
            "notifications/message",
            "(response)"
        ]
    );
    for (i, n) in m[..3].iter().enumerate() {
        assert_eq!(n["params"]["progressToken"], "tok-1");
        assert_eq!(n["params"]["progress"], i + 1);
        assert_eq!(n["params"]["total"], 3);
        assert!(n.get("id").is_none(), "a notification has no id: {n}");
    }
    // The debug message is below the level asked for.
    assert_eq!(
        m[3]["params"],
        json!({"level": "info", "logger": "work", "data": {"rows": 3}})
    );
    assert_eq!(m[4]["id"], 7);
    assert_eq!(m[4]["result"]["content"][0]["text"], "worked");
}

#[test]
fn events_go_out_as_they_are_sent() {
    let go = Arc::new(tokio::sync::Notify::new());
    let s = serve(Arc::clone(&go));
    let body = call(8, "gated", json!({"progressToken": 42}));
    let mut h = headers_for(&body);
    h.push(("Content-Type".into(), "application/json".into()));
    h.push(("Accept".into(), BOTH.into()));
    let mut raw = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n",
        s.addr
    );
    for (k, v) in &h {
        raw.push_str(&format!("{k}: {v}\r\n"));
    }
    let text = body.to_string();
    raw.push_str(&format!("Content-Length: {}\r\n\r\n{text}", text.len()));
    let mut c = TcpStream::connect(s.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(raw.as_bytes()).unwrap();
    // The first event arrives while the handler still waits for the go.
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&got).contains(r#""progress":1"#) {
        let n = c.read(&mut buf).unwrap();
        assert!(n > 0, "closed before the first event");
        got.extend_from_slice(&buf[..n]);
    }
    assert!(!String::from_utf8_lossy(&got).contains(r#""result""#));
    go.notify_one();
    c.read_to_end(&mut got).unwrap();
    let r = parse_response(&got);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let m = sse_messages(&r.text());
    assert_eq!(
        methods(&m),
        [
            "notifications/progress",
            "notifications/progress",
            "(response)"
        ]
    );
    assert_eq!(m[1]["params"], json!({"progressToken": 42, "progress": 2}));
    assert_eq!(m[2]["result"]["content"][0]["text"], "went");
}

#[test]
fn a_request_that_asked_for_nothing_gets_plain_json() {
    let s = serve(Arc::default());
    for accept in [BOTH, "text/event-stream"] {
        let r = post(&s, &call(9, "work", json!({})), accept);
        assert_eq!(r.status, 200);
        if accept == BOTH {
            assert_eq!(r.header("content-type"), Some("application/json"));
            assert_eq!(r.json()["result"]["content"][0]["text"], "worked");
        } else {
            // An SSE-only client gets its one event, as before: no notification.
            let m = sse_messages(&r.text());
            assert_eq!(methods(&m), ["(response)"]);
        }
    }
    // A client that accepts JSON only gets JSON only, whatever it asked for.
    let asked = call(
        10,
        "work",
        json!({"progressToken": 1, "io.modelcontextprotocol/logLevel": "debug"}),
    );
    let r = post(&s, &asked, "application/json");
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.json()["id"], 10);
}

#[test]
fn no_log_message_without_a_level() {
    let s = serve(Arc::default());
    let r = post(&s, &call(11, "work", json!({"progressToken": "p"})), BOTH);
    let m = sse_messages(&r.text());
    assert_eq!(
        methods(&m),
        [
            "notifications/progress",
            "notifications/progress",
            "notifications/progress",
            "(response)"
        ]
    );
}

#[test]
fn a_malformed_token_or_level_is_refused_before_the_handler() {
    let s = serve(Arc::default());
    for extra in [
        json!({"progressToken": {"nested": true}}),
        json!({"progressToken": [1]}),
        json!({"io.modelcontextprotocol/logLevel": "verbose"}),
    ] {
        let r = post(&s, &call(12, "work", extra.clone()), BOTH);
        assert_eq!(r.status, 400, "{extra}: {r:?}");
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(r.json()["error"]["code"], -32602, "{extra}");
        assert_eq!(r.json()["id"], 12);
    }
}

#[test]
fn at_most_the_cap_waits_and_the_result_still_comes_last() {
    let s = serve(Arc::default());
    let r = post(&s, &call(13, "flood", json!({"progressToken": "f"})), BOTH);
    let m = sse_messages(&r.text());
    // The handler sent 200 without yielding: the first 64 were kept, the rest dropped.
    assert_eq!(m.len(), MAX_NOTIFICATIONS_PER_REQUEST + 1);
    let progress: Vec<&Value> = m[..MAX_NOTIFICATIONS_PER_REQUEST]
        .iter()
        .map(|n| &n["params"]["progress"])
        .collect();
    assert!(progress.windows(2).all(|w| w[0].as_f64() < w[1].as_f64()));
    assert_eq!(m[MAX_NOTIFICATIONS_PER_REQUEST]["id"], 13);
    assert_eq!(
        m[MAX_NOTIFICATIONS_PER_REQUEST]["result"]["content"][0]["text"],
        "flooded"
    );
}
