//! The request spans as an OpenTelemetry SDK exports them (feature `otel`):
//! a three-round flow whose client sends `traceparent` in `params._meta`
//! gives three SERVER spans named and attributed per the MCP conventions,
//! each the child of the client's span, rounds 2 and 3 linked to round 1's
//! span, the flow named by one digest; no state or argument in any
//! attribute; a tampered state's span carries the refusal, not its reason.

use std::sync::Arc;

use mrtr::engine::{Form, Round};
use mrtr::{Engine, Keyring, Service, ToolResult};
use mrtr_server::http::{Anonymous, HttpOptions, mcp_router};
use mrtr_testkit::{headers_for, request};
use opentelemetry::trace::{SpanKind, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::{Value, json};
use tracing_subscriber::layer::SubscriberExt;

/// Serves `app` on a thread of its own, a current-thread runtime under a
/// subscriber with the OpenTelemetry layer (that thread's default: another
/// test of this binary may own the global one); the exporter and the address.
/// The server stops when the test's process ends.
fn serve_traced(app: axum::Router) -> (InMemorySpanExporter, std::net::SocketAddr) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let tracer = provider.tracer("mrtr-server-tests");
        let subscriber =
            tracing_subscriber::registry().with(tracing_opentelemetry::layer().with_tracer(tracer));
        let _default = tracing::subscriber::set_default(subscriber);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            let app = app.into_make_service_with_connect_info::<std::net::SocketAddr>();
            axum::serve(listener, app).await.unwrap();
        });
    });
    (exporter, rx.recv().unwrap())
}

/// The span of `spans` whose parent is the span `parent` (16 hex digits).
fn child_of<'a>(spans: &'a [SpanData], parent: &str) -> Option<&'a SpanData> {
    spans
        .iter()
        .find(|s| s.parent_span_id.to_string() == parent)
}

/// The exported span whose parent is the span `parent`, once it is there
/// (bounded).
fn span_under(exporter: &InMemorySpanExporter, parent: &str) -> SpanData {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let spans = exporter.get_finished_spans().unwrap();
        if let Some(s) = child_of(&spans, parent) {
            return s.clone();
        }
        assert!(std::time::Instant::now() < deadline, "{spans:#?}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A service with one tool, `name`, that answers "done".
fn answering(name: &str) -> Service {
    Service::new(Engine::new(Keyring::ephemeral(), "otel"), "otel", "0").tool(
        name,
        "answers",
        json!({"type": "object"}),
        |_| Ok(ToolResult::text("done")),
    )
}

const CLIENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

fn call(addr: std::net::SocketAddr, id: u64, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    let owned = headers_for(&body);
    let mut h: Vec<(&str, &str)> = owned
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    h.push(("Content-Type", "application/json"));
    request(addr, "POST", "/mcp", &h, body.to_string().as_bytes()).json()
}

fn params(client_span: &str, state: Option<&str>, answers: Value) -> Value {
    let mut p = json!({"name": "otel_two_questions", "arguments": {"secret": "hunter2"},
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "traceparent": format!("00-{CLIENT_TRACE}-{client_span}-01"),
        "tracestate": "vendor=1",
    }});
    if let Some(s) = state {
        p["requestState"] = json!(s);
        p["inputResponses"] = answers;
    }
    p
}

fn attr(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.to_string())
}

#[test]
fn a_three_round_flow_is_one_trace_its_later_rounds_linked_to_the_first() {
    let service = Service::new(Engine::new(Keyring::ephemeral(), "otel"), "otel", "0").tool(
        "otel_two_questions",
        "asks twice",
        json!({"type": "object"}),
        |r: Round| {
            let a = r.elicit("a", Form::new("A?").string("v", "V"))?;
            let b = r.elicit("b", Form::new("B?").string("v", "V"))?;
            let _ = (a, b);
            Ok(ToolResult::text("done"))
        },
    );
    let (exporter, addr) = serve_traced(mcp_router(
        Arc::new(service),
        HttpOptions::default(),
        Anonymous,
    ));
    let accept = json!({"action": "accept", "content": {"v": "x"}});
    let r1 = call(addr, 1, params("00f067aa0ba90201", None, json!({})));
    let s1 = r1["result"]["requestState"].as_str().unwrap().to_owned();
    let r2 = call(
        addr,
        2,
        params("00f067aa0ba90202", Some(&s1), json!({"a": accept})),
    );
    let s2 = r2["result"]["requestState"].as_str().unwrap().to_owned();
    let r3 = call(
        addr,
        3,
        params("00f067aa0ba90203", Some(&s2), json!({"b": accept})),
    );
    assert_eq!(r3["result"]["content"][0]["text"], "done", "{r3}");
    // A tampered state, in the same trace.
    let mut bad = s2.clone().into_bytes();
    let i = bad.len() / 2;
    bad[i] = if bad[i] == b'A' { b'B' } else { b'A' };
    let bad = String::from_utf8(bad).unwrap();
    let r4 = call(
        addr,
        4,
        params("00f067aa0ba90204", Some(&bad), json!({"b": accept})),
    );
    assert_eq!(r4["error"]["code"], -32602, "{r4}");

    // The log line is written in the span, after it is recorded: wait for all four.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mine = loop {
        let spans: Vec<SpanData> = exporter
            .get_finished_spans()
            .unwrap()
            .into_iter()
            .filter(|s| s.span_context.trace_id().to_string() == CLIENT_TRACE)
            .collect();
        if spans.len() >= 4 || std::time::Instant::now() > deadline {
            break spans;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(mine.len(), 4, "{mine:#?}");
    let by_parent = |p: &str| child_of(&mine, p).unwrap_or_else(|| panic!("no span under {p}"));
    let (one, two, three, tampered) = (
        by_parent("00f067aa0ba90201"),
        by_parent("00f067aa0ba90202"),
        by_parent("00f067aa0ba90203"),
        by_parent("00f067aa0ba90204"),
    );
    for s in [one, two, three, tampered] {
        assert_eq!(s.span_kind, SpanKind::Server);
        assert_eq!(s.name, "tools/call otel_two_questions");
        assert_eq!(attr(s, "mcp.method.name").as_deref(), Some("tools/call"));
        assert_eq!(
            attr(s, "gen_ai.tool.name").as_deref(),
            Some("otel_two_questions")
        );
        assert_eq!(
            attr(s, "mcp.protocol.version").as_deref(),
            Some("2026-07-28")
        );
        assert_eq!(attr(s, "network.transport").as_deref(), Some("tcp"));
        assert_eq!(attr(s, "network.protocol.name").as_deref(), Some("http"));
        assert_eq!(attr(s, "network.protocol.version").as_deref(), Some("1.1"));
        assert_eq!(attr(s, "client.address").as_deref(), Some("127.0.0.1"));
        assert!(attr(s, "client.port").is_some());
        assert_eq!(
            attr(s, "gen_ai.operation.name").as_deref(),
            Some("execute_tool")
        );
        for kv in &s.attributes {
            let v = kv.value.to_string();
            assert!(!v.contains("hunter2"), "an argument value in {}", kv.key);
            assert!(
                !v.contains(&s1[..40]) && !v.contains(&s2[..40]),
                "state bytes in {}",
                kv.key
            );
        }
        assert_eq!(s.span_context.trace_state().header(), "vendor=1");
    }
    assert_eq!(attr(one, "mrtr.round").as_deref(), Some("1"));
    assert_eq!(attr(two, "mrtr.round").as_deref(), Some("2"));
    assert_eq!(attr(three, "mrtr.round").as_deref(), Some("3"));
    assert_eq!(attr(one, "mrtr.outcome").as_deref(), Some("input_required"));
    assert_eq!(attr(three, "mrtr.outcome").as_deref(), Some("complete"));
    let flow = attr(one, "mrtr.flow").expect("the flow, named");
    assert_eq!(attr(two, "mrtr.flow"), Some(flow.clone()));
    assert_eq!(attr(three, "mrtr.flow"), Some(flow));
    assert!(one.links.is_empty());
    for later in [two, three] {
        assert_eq!(later.links.len(), 1, "{later:#?}");
        let link = &later.links[0].span_context;
        assert_eq!(link.trace_id(), one.span_context.trace_id());
        assert_eq!(link.span_id(), one.span_context.span_id());
    }
    // The refusal: its class on the span, never its private reason.
    assert_eq!(attr(tampered, "error.type").as_deref(), Some("-32602"));
    assert_eq!(
        attr(tampered, "rpc.response.status_code").as_deref(),
        Some("-32602")
    );
    assert_eq!(tampered.status, opentelemetry::trace::Status::error(""));
    assert!(attr(three, "rpc.response.status_code").is_none());
    assert!(tampered.links.is_empty() && attr(tampered, "mrtr.flow").is_none());
    for kv in &tampered.attributes {
        let v = kv.value.to_string();
        assert!(
            !v.contains("tag") && !v.contains("decrypt"),
            "{}: {v}",
            kv.key
        );
    }
}

/// Serves `input` (JSON-RPC lines) on stdio under a subscriber with the
/// OpenTelemetry layer (this thread's default); the spans exported and what
/// was written back.
fn serve_stdio_traced(service: &Service, input: &str) -> (Vec<SpanData>, Vec<u8>) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("stdio-test")));
    let _default = tracing::subscriber::set_default(subscriber);
    let mut out = Vec::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(mrtr_server::stdio::serve(
        service,
        &mrtr::Principal::anonymous(),
        64 * 1024,
        input.as_bytes(),
        &mut out,
        std::future::pending(),
    ))
    .unwrap();
    (exporter.get_finished_spans().unwrap(), out)
}

/// On stdio too: a request's span is the child of its `_meta.traceparent`,
/// named per the conventions, its transport a pipe.
#[test]
fn a_stdio_request_has_its_span_under_the_client_s() {
    let service = answering("otel_stdio");
    let line = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": params("00f067aa0ba90209", None, json!({}))})
    .to_string()
    .replace("otel_two_questions", "otel_stdio")
        + "\n";
    let (spans, out) = serve_stdio_traced(&service, &line);
    let reply: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(reply["result"]["content"][0]["text"], "done", "{reply}");
    let span = child_of(&spans, "00f067aa0ba90209").unwrap_or_else(|| panic!("{spans:#?}"));
    assert_eq!(span.span_context.trace_id().to_string(), CLIENT_TRACE);
    assert_eq!(span.span_kind, SpanKind::Server);
    assert_eq!(span.name, "tools/call otel_stdio");
    assert_eq!(attr(span, "network.transport").as_deref(), Some("pipe"));
    assert_eq!(attr(span, "mrtr.outcome").as_deref(), Some("complete"));
}

/// A task's run (the tasks extension) has a span of its own, the child of the
/// request that created the task, in the client's trace.
#[test]
fn a_task_s_run_is_a_span_under_the_request_that_created_it() {
    let service = Service::new(Engine::new(Keyring::ephemeral(), "otel"), "otel", "0")
        .tool("otel_task", "a task", json!({"type": "object"}), |_| {
            Ok(ToolResult::text("done"))
        })
        .task_support("otel_task", mrtr::service::TaskSupport::Optional)
        .with_tasks();
    let (exporter, addr) = serve_traced(mcp_router(
        Arc::new(service),
        HttpOptions::default(),
        Anonymous,
    ));
    let mut p = params("00f067aa0ba90210", None, json!({}));
    p["name"] = json!("otel_task");
    p["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"] =
        json!({"io.modelcontextprotocol/tasks": {}});
    let created = call(addr, 1, p);
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let (request, run) = loop {
        let spans = exporter.get_finished_spans().unwrap();
        let request = child_of(&spans, "00f067aa0ba90210").cloned();
        let run = spans.iter().find(|s| s.name == "mrtr task run").cloned();
        if let (Some(request), Some(run)) = (request, run) {
            break (request, run);
        }
        assert!(std::time::Instant::now() < deadline, "{spans:#?}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(run.span_kind, SpanKind::Internal);
    assert_eq!(run.span_context.trace_id().to_string(), CLIENT_TRACE);
    assert_eq!(run.parent_span_id, request.span_context.span_id());
    assert_eq!(attr(&run, "gen_ai.tool.name").as_deref(), Some("otel_task"));
    assert_eq!(attr(&run, "mrtr.outcome").as_deref(), Some("complete"));
}

/// A 2025-era session's flow (`initialize`, then a `tools/call` on the
/// session, answered on an SSE stream) has its span too, under the client's
/// `traceparent`, with the same attributes as a 2026-07-28 request's.
#[test]
fn a_2025_era_flow_on_a_session_has_its_span_under_the_client_s() {
    const VERSION: &str = "2025-11-25";
    let service = answering("otel_legacy");
    let (exporter, addr) = serve_traced(mcp_router(
        Arc::new(service),
        HttpOptions::default(),
        Anonymous,
    ));
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}});
    let r = request(
        addr,
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        init.to_string().as_bytes(),
    );
    let session = r.header("mcp-session-id").expect("a session").to_owned();
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "otel_legacy", "arguments": {},
        "_meta": {"traceparent": format!("00-{CLIENT_TRACE}-00f067aa0ba90220-01")}}});
    let mut events = mrtr_testkit::EventStream::post(
        addr,
        &call,
        &[
            ("Mcp-Session-Id", session.as_str()),
            ("MCP-Protocol-Version", VERSION),
        ],
    );
    let reply = loop {
        let e = events.next_event().expect("the reply");
        if e.get("id") == Some(&json!(1)) {
            break e;
        }
    };
    assert_eq!(reply["result"]["content"][0]["text"], "done", "{reply}");
    let span = span_under(&exporter, "00f067aa0ba90220");
    assert_eq!(span.span_kind, SpanKind::Server);
    assert_eq!(span.name, "tools/call otel_legacy");
    assert_eq!(
        attr(&span, "mcp.method.name").as_deref(),
        Some("tools/call")
    );
    assert_eq!(attr(&span, "mrtr.outcome").as_deref(), Some("complete"));
    // The session's version, which its requests do not carry in `_meta`.
    assert_eq!(
        attr(&span, "mcp.protocol.version").as_deref(),
        Some(VERSION)
    );
    // The session's end is HTTP's (a DELETE): its log line, no MCP span. The
    // spans exported are the MCP messages', each named for its method.
    let ended = request(
        addr,
        "DELETE",
        "/mcp",
        &[
            ("Mcp-Session-Id", session.as_str()),
            ("MCP-Protocol-Version", VERSION),
        ],
        b"",
    );
    assert_eq!(ended.status, 200);
    let init = loop {
        let spans = exporter.get_finished_spans().unwrap();
        if let Some(init) = spans.iter().find(|s| s.name == "initialize") {
            break init.clone();
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(
        attr(&init, "mcp.protocol.version").as_deref(),
        Some(VERSION)
    );
    std::thread::sleep(std::time::Duration::from_millis(200));
    let spans = exporter.get_finished_spans().unwrap();
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_ref()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names.contains(&"initialize") && names.contains(&"tools/call otel_legacy"));
}

/// On stdio, a 2025-era session's requests (`initialize`, then a call) have
/// their spans as a modern request has, with the session's version.
#[test]
fn a_2025_era_session_on_stdio_has_its_spans() {
    let service = answering("otel_stdio_legacy");
    let lines = [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "otel_stdio_legacy", "arguments": {},
            "_meta": {"traceparent": format!("00-{CLIENT_TRACE}-00f067aa0ba90240-01")}}}),
    ];
    let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let (spans, out) = serve_stdio_traced(&service, &input);
    let replies: Vec<Value> = out
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    let call = replies
        .iter()
        .find(|r| r["id"] == 1)
        .expect("the call's reply");
    assert_eq!(call["result"]["content"][0]["text"], "done", "{call}");
    let span = child_of(&spans, "00f067aa0ba90240").unwrap_or_else(|| panic!("{spans:#?}"));
    assert_eq!(span.span_context.trace_id().to_string(), CLIENT_TRACE);
    assert_eq!(span.span_kind, SpanKind::Server);
    assert_eq!(span.name, "tools/call otel_stdio_legacy");
    assert_eq!(
        attr(span, "mcp.protocol.version").as_deref(),
        Some("2025-06-18")
    );
    assert_eq!(attr(span, "network.transport").as_deref(), Some("pipe"));
    assert_eq!(attr(span, "mrtr.outcome").as_deref(), Some("complete"));
    let init = spans
        .iter()
        .find(|s| s.name == "initialize")
        .unwrap_or_else(|| panic!("{spans:#?}"));
    assert_eq!(
        attr(init, "mcp.protocol.version").as_deref(),
        Some("2025-06-18")
    );
}

/// The MCP context (`_meta`) is the span's parent; the HTTP request's own
/// (`traceparent` header, from an instrumented HTTP client) is linked.
#[test]
fn the_http_request_s_trace_context_is_linked_not_the_parent() {
    let service = answering("otel_linked");
    let (exporter, addr) = serve_traced(mcp_router(
        Arc::new(service),
        HttpOptions::default(),
        Anonymous,
    ));
    let mut p = params("00f067aa0ba90230", None, json!({}));
    p["name"] = json!("otel_linked");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": p});
    let owned = headers_for(&body);
    let mut h: Vec<(&str, &str)> = owned
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    h.push(("Content-Type", "application/json"));
    let http_parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    h.push(("traceparent", http_parent));
    let r = request(addr, "POST", "/mcp", &h, body.to_string().as_bytes()).json();
    assert_eq!(r["result"]["content"][0]["text"], "done", "{r}");
    let span = span_under(&exporter, "00f067aa0ba90230");
    assert_eq!(span.span_context.trace_id().to_string(), CLIENT_TRACE);
    assert_eq!(span.links.len(), 1, "{span:#?}");
    assert_eq!(
        span.links[0].span_context.trace_id().to_string(),
        "0af7651916cd43dd8448eb211c80319c"
    );
    assert_eq!(
        span.links[0].span_context.span_id().to_string(),
        "b7ad6b7169203331"
    );
}
