//! 2025-era clients on the real router, beside 2026-07-28 ones: `initialize`
//! opens a session bound to its principal; a handler's asks reach the client
//! as server-to-client requests on the request's SSE stream and its POSTed
//! answers complete the flow; a stream closed early resumes with
//! `Last-Event-ID`; the standalone stream tells list changes and subscribed
//! resources; `DELETE` ends a session; a modern-only server refuses all of it
//! as the revision says; both eras are served at once.

use mrtr_testkit as server_support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::http::HeaderName;
use mrtr::legacy::Eras;
use mrtr::service::{Changes, List};
use mrtr::{
    Elicited, Engine, Form, Keyring, ResourceDefinition, ResourceResult, Service, ToolResult,
};
use mrtr_server::http::{FromHeader, HttpOptions, mcp_router};
use serde_json::{Value, json};

use server_support::{EventStream, request};

const VERSION: &str = "2025-11-25";

fn service(changes: &Changes) -> Service {
    Service::new(Engine::new(Keyring::ephemeral(), "legacy"), "legacy", "0")
        .tool("echo", "Says hi.", json!({"type": "object"}), |_| {
            Ok(ToolResult::text("hi"))
        })
        .tool(
            "greet",
            "Asks your name.",
            json!({"type": "object"}),
            |round| match round.elicit("name", Form::new("Your name?").string("name", "Name"))? {
                Elicited::Accepted(f) => Ok(ToolResult::text(format!(
                    "Hello, {}!",
                    f.str("name").unwrap_or("you")
                ))),
                _ => Ok(ToolResult::text("Hello!")),
            },
        )
        .tool(
            "slow",
            "Takes a while.",
            json!({"type": "object"}),
            |_| async {
                tokio::time::sleep(Duration::from_millis(600)).await;
                Ok(ToolResult::text("done at last"))
            },
        )
        .resource(ResourceDefinition::new("file:///a.txt", "a"), |_| {
            Ok(ResourceResult::text("file:///a.txt", "text/plain", "a"))
        })
        .with_changes(changes.clone())
}

fn serve_with(service: Service, options: HttpOptions) -> (tokio::runtime::Runtime, SocketAddr) {
    let who = FromHeader::new(HeaderName::from_static("x-user"));
    crate::loopback::serve(mcp_router(Arc::new(service), options, who))
}

fn initialize(addr: SocketAddr, user: &str) -> (u16, Value, Option<String>) {
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": VERSION,
        "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "test", "version": "1"}}});
    let r = request(
        addr,
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("x-user", user),
        ],
        body.to_string().as_bytes(),
    );
    let id = r.header("mcp-session-id").map(str::to_owned);
    (r.status, r.json(), id)
}

/// POSTs `body` on session `id` as `user`; the status and the body's text.
fn post(addr: SocketAddr, id: &str, user: &str, body: &Value) -> (u16, String) {
    let r = request(
        addr,
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json"),
            ("Mcp-Session-Id", id),
            ("MCP-Protocol-Version", VERSION),
            ("x-user", user),
        ],
        body.to_string().as_bytes(),
    );
    (r.status, r.text())
}

fn rpc(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn stream(addr: SocketAddr, session: &str, user: &str, body: &Value) -> EventStream {
    EventStream::post(
        addr,
        body,
        &[
            ("Mcp-Session-Id", session),
            ("MCP-Protocol-Version", VERSION),
            ("x-user", user),
        ],
    )
}

#[test]
fn initialize_opens_a_session_only_its_principal_can_use_until_deleted() {
    let (_rt, addr) = serve_with(service(&Changes::new()), HttpOptions::default());
    let (status, init, id) = initialize(addr, "alice");
    assert_eq!(status, 200, "{init}");
    assert_eq!(init["result"]["protocolVersion"], VERSION);
    assert_eq!(init["result"]["capabilities"]["logging"], json!({}));
    let id = id.expect("Mcp-Session-Id");
    // At least 128 random bits.
    assert!(
        id.len() >= 32 && id.bytes().all(|b| b.is_ascii_hexdigit()),
        "{id}"
    );

    let (status, list) = post(addr, &id, "alice", &rpc(1, "tools/list", json!({})));
    assert_eq!(status, 200, "{list}");
    let list: Value = serde_json::from_str(&list).unwrap();
    assert_eq!(list["result"]["tools"][0]["name"], "echo");
    assert!(list["result"].get("resultType").is_none(), "{list}");
    assert_eq!(
        post(addr, &id, "alice", &rpc(2, "ping", json!({}))).1,
        r#"{"jsonrpc":"2.0","id":2,"result":{}}"#
    );

    // Another principal's request on it: as for no session at all.
    assert_eq!(
        post(addr, &id, "mallory", &rpc(3, "tools/list", json!({}))).0,
        404
    );
    let del = |user: &str| {
        request(
            addr,
            "DELETE",
            "/mcp",
            &[("Mcp-Session-Id", id.as_str()), ("x-user", user)],
            b"",
        )
        .status
    };
    assert_eq!(del("mallory"), 404);
    assert_eq!(del("alice"), 200);
    assert_eq!(
        post(addr, &id, "alice", &rpc(4, "tools/list", json!({}))).0,
        404
    );
    assert_eq!(del("alice"), 404);
    // A made-up id, and a version header not of the 2025 era.
    assert_eq!(
        post(addr, "00ff", "alice", &rpc(5, "ping", json!({}))).0,
        404
    );
}

#[test]
fn an_ask_goes_out_on_the_request_stream_and_the_posted_answer_completes_it() {
    let (_rt, addr) = serve_with(service(&Changes::new()), HttpOptions::default());
    let (_, _, id) = initialize(addr, "alice");
    let id = id.unwrap();
    let mut s = stream(
        addr,
        &id,
        "alice",
        &rpc(9, "tools/call", json!({"name": "greet"})),
    );
    let ask = s.next_event().expect("the server's request");
    assert!(s.head.contains("text/event-stream"), "{}", s.head);
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(ask["params"]["message"], "Your name?");
    // The answer, POSTed on the session, is accepted (202) and completes it.
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"],
        "result": {"action": "accept", "content": {"name": "Ada"}}});
    assert_eq!(post(addr, &id, "alice", &answer).0, 202);
    let done = s.next_event().expect("the response");
    assert_eq!(done["id"], 9);
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Ada!");
    assert!(
        s.next_event().is_none(),
        "the stream ends with the response"
    );

    // An answer another principal posts reaches nothing; one to no request is
    // accepted and dropped.
    let mut s = stream(
        addr,
        &id,
        "alice",
        &rpc(10, "tools/call", json!({"name": "greet"})),
    );
    let ask = s.next_event().unwrap();
    let forged = json!({"jsonrpc": "2.0", "id": ask["id"],
        "result": {"action": "accept", "content": {"name": "Mallory"}}});
    assert_eq!(post(addr, &id, "mallory", &forged).0, 404);
    let declined = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "decline"}});
    assert_eq!(post(addr, &id, "alice", &declined).0, 202);
    assert_eq!(
        s.next_event().unwrap()["result"]["content"][0]["text"],
        "Hello!"
    );
    let stray = json!({"jsonrpc": "2.0", "id": 12345, "result": {}});
    assert_eq!(post(addr, &id, "alice", &stray).0, 202);
}

#[test]
fn a_client_that_answers_with_an_error_gets_a_retryable_tool_error() {
    let (_rt, addr) = serve_with(service(&Changes::new()), HttpOptions::default());
    let id = initialize(addr, "alice").2.unwrap();
    let mut s = stream(
        addr,
        &id,
        "alice",
        &rpc(9, "tools/call", json!({"name": "greet"})),
    );
    let ask = s.next_event().unwrap();
    let refused = json!({"jsonrpc": "2.0", "id": ask["id"],
        "error": {"code": -32600, "message": "no"}});
    assert_eq!(post(addr, &id, "alice", &refused).0, 202);
    let done = s.next_event().unwrap();
    assert_eq!(done["result"]["isError"], true, "{done}");
}

#[test]
fn a_stream_the_server_closes_early_resumes_with_last_event_id() {
    let options = HttpOptions::default().with_sse_poll(Some(Duration::from_millis(150)));
    let (_rt, addr) = serve_with(service(&Changes::new()), options);
    let id = initialize(addr, "alice").2.unwrap();
    let mut s = stream(
        addr,
        &id,
        "alice",
        &rpc(9, "tools/call", json!({"name": "slow"})),
    );
    // Only the priming event came before the stream was closed.
    assert!(s.next_event().is_none());
    assert!(s.head.contains("text/event-stream"), "{}", s.head);
    // Each resumed stream is closed the same way until the response is in:
    // the client reconnects again, as SEP-1699 has it.
    let resume = || {
        EventStream::send(
            addr,
            "GET",
            &[
                ("Accept", "text/event-stream"),
                ("Mcp-Session-Id", id.as_str()),
                ("MCP-Protocol-Version", VERSION),
                ("Last-Event-ID", "1-0"),
                ("x-user", "alice"),
            ],
        )
    };
    let done = (0..40)
        .find_map(|_| {
            let mut resumed = resume();
            let event = resumed.next_event();
            assert!(resumed.head.starts_with("HTTP/1.1 200"), "{}", resumed.head);
            event
        })
        .expect("the response, replayed");
    assert_eq!(done["id"], 9);
    assert_eq!(done["result"]["content"][0]["text"], "done at last");
    // The same again: the log keeps it for another reconnect.
    let mut again = EventStream::send(
        addr,
        "GET",
        &[
            ("Accept", "text/event-stream"),
            ("Mcp-Session-Id", id.as_str()),
            ("Last-Event-ID", "1-0"),
            ("x-user", "alice"),
        ],
    );
    assert_eq!(again.next_event().unwrap()["id"], 9);
}

#[test]
fn the_standalone_stream_tells_list_changes_and_subscribed_resources() {
    let changes = Changes::new();
    let (_rt, addr) = serve_with(service(&changes), HttpOptions::default());
    let id = initialize(addr, "alice").2.unwrap();
    let (status, _) = post(
        addr,
        &id,
        "alice",
        &rpc(1, "resources/subscribe", json!({"uri": "file:///a.txt"})),
    );
    assert_eq!(status, 200);
    let get = |extra: &[(&str, &str)]| {
        let mut h = vec![
            ("Accept", "text/event-stream"),
            ("Mcp-Session-Id", id.as_str()),
            ("x-user", "alice"),
        ];
        h.extend_from_slice(extra);
        EventStream::send(addr, "GET", &h)
    };
    let mut standalone = get(&[]);
    // Wait for its head before announcing.
    std::thread::sleep(Duration::from_millis(200));
    changes.resource_updated("file:///a.txt");
    changes.resource_updated("file:///b.txt");
    changes.hide(List::Tools, "echo");
    let first = standalone.next_event().unwrap();
    let second = standalone.next_event().unwrap();
    let mut methods = [first["method"].clone(), second["method"].clone()];
    methods.sort_by_key(Value::to_string);
    assert_eq!(
        methods,
        [
            json!("notifications/resources/updated"),
            json!("notifications/tools/list_changed")
        ]
    );
    let updated = if first["method"] == "notifications/resources/updated" {
        &first
    } else {
        &second
    };
    assert_eq!(updated["params"], json!({"uri": "file:///a.txt"}));
    // One standalone stream at a time.
    let second_get = request(
        addr,
        "GET",
        "/mcp",
        &[
            ("Accept", "text/event-stream"),
            ("Mcp-Session-Id", id.as_str()),
            ("x-user", "alice"),
        ],
        b"",
    );
    assert_eq!(second_get.status, 409);
    // Without a session, GET is not allowed.
    assert_eq!(
        request(addr, "GET", "/mcp", &[("Accept", "text/event-stream")], b"").status,
        405
    );
}

#[test]
fn a_modern_only_server_refuses_initialize_naming_its_versions() {
    let service = service(&Changes::new()).with_eras(Eras::ModernOnly);
    let (_rt, addr) = serve_with(service, HttpOptions::default());
    let (status, body, id) = initialize(addr, "alice");
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], -32022);
    assert_eq!(body["error"]["data"]["supported"], json!(["2026-07-28"]));
    assert!(id.is_none());
    for method in ["GET", "DELETE"] {
        let r = request(addr, method, "/mcp", &[("Mcp-Session-Id", "abc")], b"");
        assert_eq!(r.status, 405, "{method}");
    }
}

#[test]
fn both_eras_are_served_at_once_on_one_endpoint() {
    let (_rt, addr) = serve_with(service(&Changes::new()), HttpOptions::default());
    let id = initialize(addr, "alice").2.unwrap();
    // A 2025-era flow waits for its answer ...
    let mut s = stream(
        addr,
        &id,
        "alice",
        &rpc(9, "tools/call", json!({"name": "greet"})),
    );
    let ask = s.next_event().unwrap();
    // ... while a 2026-07-28 client runs its own flow statelessly.
    let modern = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "greet",
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}}});
    let owned = server_support::headers_for(&modern);
    let mut h = server_support::borrow(&owned);
    h.push(("Content-Type", "application/json"));
    h.push(("x-user", "bob"));
    let r = request(addr, "POST", "/mcp", &h, modern.to_string().as_bytes());
    assert_eq!(r.status, 200);
    let irr = r.json();
    assert_eq!(irr["result"]["resultType"], "input_required", "{irr}");
    // The modern request with a session header is still served statelessly.
    h.push(("Mcp-Session-Id", id.as_str()));
    let r = request(addr, "POST", "/mcp", &h, modern.to_string().as_bytes());
    assert_eq!(r.json()["result"]["resultType"], "input_required");
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"],
        "result": {"action": "accept", "content": {"name": "Ada"}}});
    assert_eq!(post(addr, &id, "alice", &answer).0, 202);
    assert_eq!(
        s.next_event().unwrap()["result"]["content"][0]["text"],
        "Hello, Ada!"
    );
}

#[test]
fn an_answer_needs_no_in_flight_slot_so_a_full_server_still_completes_its_flows() {
    // One slot: the flow waiting for its answer holds it.
    let options = HttpOptions::default().with_max_in_flight(1);
    let (_rt, addr) = serve_with(service(&Changes::new()), options);
    let id = initialize(addr, "alice").2.unwrap();
    let mut s = stream(
        addr,
        &id,
        "alice",
        &rpc(9, "tools/call", json!({"name": "greet"})),
    );
    let ask = s.next_event().unwrap();
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"],
        "result": {"action": "accept", "content": {"name": "Ada"}}});
    assert_eq!(post(addr, &id, "alice", &answer).0, 202);
    assert_eq!(
        s.next_event().unwrap()["result"]["content"][0]["text"],
        "Hello, Ada!"
    );
}

#[test]
fn a_cancelled_request_stops_its_flow_and_frees_its_place() {
    let (_rt, addr) = serve_with(service(&Changes::new()), HttpOptions::default());
    let id = initialize(addr, "alice").2.unwrap();
    // As many flows as a session may run, each waiting for its answer.
    let max = mrtr_server::defaults::SESSION_FLOWS_MAX as u64;
    let mut streams: Vec<EventStream> = (1..=max)
        .map(|n| {
            let mut s = stream(
                addr,
                &id,
                "alice",
                &rpc(n, "tools/call", json!({"name": "greet"})),
            );
            assert_eq!(s.next_event().unwrap()["method"], "elicitation/create");
            s
        })
        .collect();
    let one_more = || {
        stream(
            addr,
            &id,
            "alice",
            &rpc(99, "tools/call", json!({"name": "greet"})),
        )
    };
    let refused = request(
        addr,
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Mcp-Session-Id", id.as_str()),
            ("x-user", "alice"),
        ],
        rpc(98, "tools/call", json!({"name": "greet"}))
            .to_string()
            .as_bytes(),
    );
    assert_eq!(refused.status, 503);
    // The client cancels the first: its stream ends without a response, and
    // its place is free.
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1, "reason": "the user closed the dialog"}});
    assert_eq!(post(addr, &id, "alice", &cancel).0, 202);
    assert!(
        streams[0].next_event().is_none(),
        "no response after a cancellation"
    );
    let mut admitted = one_more();
    assert_eq!(
        admitted.next_event().unwrap()["method"],
        "elicitation/create"
    );
    streams.clear();
}

#[test]
fn a_legacy_only_server_refuses_a_2026_07_28_request() {
    let service = service(&Changes::new()).with_eras(Eras::LegacyOnly);
    let (_rt, addr) = serve_with(service, HttpOptions::default());
    let modern = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    let owned = server_support::headers_for(&modern);
    let mut h = server_support::borrow(&owned);
    h.push(("Content-Type", "application/json"));
    h.push(("x-user", "bob"));
    let r = request(addr, "POST", "/mcp", &h, modern.to_string().as_bytes());
    assert_eq!(r.status, 400, "{}", r.text());
    // A 2025-era client is served.
    let (status, init, id) = initialize(addr, "alice");
    assert_eq!(status, 200, "{init}");
    let id = id.unwrap();
    assert_eq!(post(addr, &id, "alice", &rpc(2, "ping", json!({}))).0, 200);
}
