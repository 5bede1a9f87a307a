//! Engine-dependent behaviour of `mrtr serve` (issue 5's test list) that needs the
//! built binary on a loopback port (and over stdio): multi-round flows over JSON
//! and SSE, the protocol errors and their HTTP statuses, headers and Origin, a
//! fleet of processes sharing `MRTR_KEYS`, the `serve` flags reaching the engine,
//! concurrent replays, and the per-request log line. The engine behaviour behind
//! them (binding, expiry, exactly-once, the round cap, every demo) is tested in
//! process, without a socket: tests/flow_guarantees.rs and tests/demos.rs.

use crate::support as server_support;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use server_support::{
    ELICIT, HttpResponse, MULTI, PROMPT, Server, StdioServer, VAULT, accept, all_caps, asked_keys,
    assert_frozen_state_response, borrow, carrier, complete_text, confirm_answer, headers_for,
    meta, name_answer, result, retry, rpc_error, sse_messages, state_of, tool_call,
    tool_error_text, tool_text,
};

/// POSTs `body` with its agreeing MCP headers and only `Accept: text/event-stream`;
/// checks the SSE framing and returns the one JSON-RPC message.
fn sse_call(s: &Server, body: &Value) -> Value {
    let r = s.rpc_with(body, &[("Accept", "text/event-stream")]);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("text/event-stream"), "{r:?}");
    let text = r.text();
    let first = text.lines().next().unwrap_or_default();
    assert_eq!(first, "event: message", "{text:?}");
    assert!(text.lines().any(|l| l.starts_with("data: ")), "{text:?}");
    let mut messages = sse_messages(&text);
    assert_eq!(messages.len(), 1, "{text:?}");
    let v = messages.remove(0);
    assert_eq!(v["jsonrpc"], "2.0", "{v}");
    assert_eq!(v["id"], body["id"], "{v}");
    v
}

/// POSTs `body` with exactly `headers` (plus Content-Type).
fn post_headers(s: &Server, body: &Value, headers: &[(&str, &str)]) -> HttpResponse {
    s.post(headers, body.to_string().as_bytes())
}

/// Asserts an HTTP `status` carrying JSON-RPC error `code` for request `id`.
fn expect_error(r: &HttpResponse, status: u16, code: i64, id: &Value) -> Value {
    assert_eq!(r.status, status, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("application/json"), "{r:?}");
    let v = r.json();
    rpc_error(&v, code);
    assert_eq!(&v["id"], id, "{v}");
    v
}

fn unix_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

// 1. A two-round tools/call over JSON and over SSE.

#[test]
fn two_round_tools_call_over_json() {
    let s = Server::start(&[]);
    let first = tool_call(1, ELICIT, None);
    let r = s.rpc_with(&first, &[("Accept", "application/json")]);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("application/json"));
    let irr = r.json();
    assert_eq!(irr["id"], 1);
    assert_eq!(asked_keys(&irr), ["user_name"]);
    let ask = &result(&irr)["inputRequests"]["user_name"];
    assert_eq!(ask["method"], "elicitation/create", "{irr}");
    assert_eq!(
        ask["params"]["requestedSchema"]["properties"]["name"]["type"], "string",
        "{irr}"
    );
    let state = state_of(&irr);
    assert!(!state.is_empty());

    let second = retry(&first, 2, Some(name_answer("Ada")), &state);
    let r = s.rpc_with(&second, &[("Accept", "application/json")]);
    assert_eq!(r.status, 200, "{}", r.text());
    let done = r.json();
    assert_eq!(done["id"], 2);
    assert_eq!(result(&done)["resultType"], "complete");
    assert_eq!(complete_text(&done), "Hello, Ada!");
    assert!(result(&done).get("requestState").is_none(), "{done}");
}

#[test]
fn two_round_tools_call_over_sse() {
    let s = Server::start(&[]);
    let first = tool_call(1, ELICIT, None);
    let irr = sse_call(&s, &first);
    assert_eq!(asked_keys(&irr), ["user_name"]);
    let state = state_of(&irr);
    let done = sse_call(&s, &retry(&first, 2, Some(name_answer("Grace")), &state));
    assert_eq!(result(&done)["resultType"], "complete");
    assert_eq!(complete_text(&done), "Hello, Grace!");
    // Errors are framed the same way on SSE (still one message event).
    let r = s.rpc_with(
        &retry(&first, 3, Some(name_answer("x")), "not-a-token"),
        &[("Accept", "text/event-stream")],
    );
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let msgs = sse_messages(&r.text());
    assert_eq!(msgs.len(), 1);
    assert_frozen_state_response(&msgs[0]);
    assert_eq!(msgs[0]["id"], 3);
}

#[test]
fn json_round_one_and_sse_round_two_mix() {
    // The framing is per POST: a flow may switch between JSON and SSE.
    let s = Server::start(&[]);
    let first = tool_call(1, ELICIT, None);
    let state = state_of(&s.call(&first, 200));
    let done = sse_call(&s, &retry(&first, 2, Some(name_answer("Mix")), &state));
    assert_eq!(complete_text(&done), "Hello, Mix!");
}

// 2. Header mismatch (-32020, 400), echoing the request id.

#[test]
fn header_mismatch_is_32020_with_400_echoing_the_id() {
    let s = Server::start(&[]);
    let body = tool_call(41, ELICIT, None);
    let pv = ("MCP-Protocol-Version", "2026-07-28");
    let mm = ("Mcp-Method", "tools/call");
    let mn = ("Mcp-Name", ELICIT);
    let cases: Vec<(&str, Vec<(&str, &str)>)> = vec![
        (
            "protocol version differs from _meta",
            vec![("MCP-Protocol-Version", "2025-11-25"), mm, mn],
        ),
        ("method differs", vec![pv, ("Mcp-Method", "tools/list"), mn]),
        ("name differs", vec![pv, mm, ("Mcp-Name", "deploy")]),
        ("name missing", vec![pv, mm]),
        ("method missing", vec![pv, mn]),
        ("protocol version missing", vec![mm, mn]),
        (
            "name case differs",
            vec![
                pv,
                mm,
                ("Mcp-Name", "TEST_INPUT_REQUIRED_RESULT_ELICITATION"),
            ],
        ),
        ("method repeated", vec![pv, mm, mm, mn]),
    ];
    for (what, headers) in cases {
        let r = post_headers(&s, &body, &headers);
        let v = expect_error(&r, 400, -32020, &json!(41));
        assert!(
            v["error"]["message"].as_str().unwrap().contains("Mcp-")
                || v["error"]["message"].as_str().unwrap().contains("MCP-"),
            "{what}: {v}"
        );
    }
    // Header names are case-insensitive: the same request in lower case passes.
    let r = post_headers(
        &s,
        &body,
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", ELICIT),
        ],
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(result(&r.json())["resultType"], "input_required");

    // prompts/get and resources/read: Mcp-Name is params.name / params.uri.
    let prompt = carrier(42, "prompts/get", PROMPT, None);
    let r = post_headers(
        &s,
        &prompt,
        &[pv, ("Mcp-Method", "prompts/get"), ("Mcp-Name", "other")],
    );
    expect_error(&r, 400, -32020, &json!(42));
    let read = carrier(43, "resources/read", VAULT, None);
    let r = post_headers(
        &s,
        &read,
        &[
            pv,
            ("Mcp-Method", "resources/read"),
            ("Mcp-Name", "vault-note"),
        ],
    );
    expect_error(&r, 400, -32020, &json!(43));
    let r = s.rpc(&read);
    assert_eq!(r.status, 200, "{}", r.text());

    // A retry is checked like any request: round 2 with a wrong Mcp-Name is refused.
    let state = state_of(&s.call(&body, 200));
    let second = retry(&body, 44, Some(name_answer("Ada")), &state);
    let r = post_headers(&s, &second, &[pv, mm, ("Mcp-Name", "deploy")]);
    expect_error(&r, 400, -32020, &json!(44));
    let done = s.call(&second, 200);
    assert_eq!(complete_text(&done), "Hello, Ada!");

    // The mismatch is logged with its outcome.
    let line = s.log_line_for(41);
    assert!(line.contains("outcome=\"error:-32020\""), "{line}");
    assert!(line.contains("http_status=400"), "{line}");
}

// 3. Foreign Origin → 403, with a real tools/call body.

#[test]
fn foreign_origin_refuses_a_real_tools_call() {
    let s = Server::start(&[]);
    let body = tool_call(5, ELICIT, None);
    for origin in ["http://evil.example", "https://localhost:3000", "null"] {
        let r = s.rpc_with(&body, &[("Origin", origin)]);
        assert_eq!(r.status, 403, "{origin}: {}", r.text());
        let v = r.json();
        rpc_error(&v, -32600);
        assert!(v.get("id").is_none(), "{v}");
    }
    // The same body from a local origin reaches the engine.
    let r = s.rpc_with(&body, &[("Origin", "http://localhost:6274")]);
    assert_eq!(r.status, 200);
    assert_eq!(result(&r.json())["resultType"], "input_required");
    // And the refused requests never reached the service (no IRR logged for them).
    let lines = s.wait_for_lines("mrtr::request", 4);
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.contains("http_status=403"))
            .count(),
        3,
        "{lines:?}"
    );
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.contains("outcome=\"input_required\""))
            .count(),
        1,
        "{lines:?}"
    );
}

// 4. Oversized body → 413 with a JSON-RPC error body.

#[test]
fn oversized_tools_call_is_413_with_a_jsonrpc_error() {
    let s = Server::start(&["--max-body", "2048"]);
    let big = tool_call(6, "deploy", Some(json!({"service": "x".repeat(4000)})));
    let r = s.rpc(&big);
    assert_eq!(r.status, 413, "{r:?}");
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v = r.json();
    rpc_error(&v, -32600);
    assert!(
        v["error"]["message"].as_str().unwrap().contains("2048"),
        "{v}"
    );
    // A normal call on the same server still works.
    let small = tool_call(7, "deploy", Some(json!({"service": "web"})));
    assert_eq!(asked_keys(&s.call(&small, 200)), ["confirm"]);
}

// 5. Malformed JSON, wrong param types, missing _meta, unsupported version,
// unknown method, GET/DELETE.

#[test]
fn malformed_json_is_32700_with_400() {
    let s = Server::start(&[]);
    let h = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", ELICIT),
    ];
    for body in [
        &br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"#[..],
        b"{not json",
        b"\xff\xfe",
        b"",
    ] {
        let r = s.post(&h, body);
        // No id could be read: the reply's id is null or absent (the MCP schema
        // makes it optional on errors; JSON-RPC 2.0 says null).
        let v = expect_error(&r, 400, -32700, &Value::Null);
        assert!(v.get("result").is_none(), "{v}");
    }
}

#[test]
fn wrong_param_types_are_32602_with_400() {
    let s = Server::start(&[]);
    let base = tool_call(50, ELICIT, None);
    let mut cases: Vec<(&str, Value)> = Vec::new();
    let mut b = base.clone();
    b["params"]["name"] = json!(5);
    cases.push(("name: 5", b));
    let mut b = base.clone();
    b["params"]["arguments"] = json!("x");
    cases.push(("arguments: \"x\"", b));
    let mut b = base.clone();
    b["params"]["inputResponses"] = Value::Null;
    cases.push(("inputResponses: null", b));
    let mut b = base.clone();
    b["params"]["requestState"] = json!(7);
    cases.push(("requestState: 7", b));
    let mut b = base.clone();
    b["params"]["inputResponses"] = json!([1, 2]);
    cases.push(("inputResponses: array", b));
    let mut b = base.clone();
    b["params"] = json!("params");
    cases.push(("params: string", b));
    let mut b = base.clone();
    b["params"].as_object_mut().unwrap().remove("name");
    cases.push(("name missing", b));
    let mut b = base.clone();
    b["params"]["name"] = json!("no_such_tool");
    cases.push(("unknown tool", b));
    let mut b = base.clone();
    b["params"].as_object_mut().unwrap().remove("_meta");
    cases.push(("_meta missing", b));
    let mut b = base.clone();
    b["params"]["_meta"]
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientCapabilities");
    cases.push(("clientCapabilities missing", b));
    let mut b = base.clone();
    b["params"]["_meta"] = json!("meta");
    cases.push(("_meta: string", b));
    let mut b = carrier(50, "prompts/get", PROMPT, None);
    b["params"]["arguments"] = json!({"n": 1});
    cases.push(("prompt argument not a string", b));
    let mut b = carrier(50, "resources/read", VAULT, None);
    b["params"]["arguments"] = json!({});
    cases.push(("resources/read with arguments", b));

    for (what, body) in &cases {
        // The headers agree with the body as far as they can (Mcp-Name from a
        // non-string name cannot be derived; send the fixture's).
        let mut headers = headers_for(body);
        if !headers.iter().any(|(k, _)| k == "Mcp-Name") {
            headers.push(("Mcp-Name".into(), ELICIT.into()));
        }
        let r = s.post(&borrow(&headers), body.to_string().as_bytes());
        assert_eq!(r.status, 400, "{what}: {}", r.text());
        let v = r.json();
        assert_eq!(v["error"]["code"], -32602, "{what}: {v}");
        assert_eq!(v["id"], 50, "{what}: {v}");
    }

    // An empty name: over HTTP the (equally empty) Mcp-Name header is malformed,
    // so -32020 comes first; either way a 400.
    let mut b = base.clone();
    b["params"]["name"] = json!("");
    expect_error(&s.rpc(&b), 400, -32020, &json!(50));
    let r = s.post(
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", ELICIT),
        ],
        b.to_string().as_bytes(),
    );
    expect_error(&r, 400, -32020, &json!(50));

    // tools/list without _meta: -32602, 400 too.
    let list = json!({"jsonrpc": "2.0", "id": 51, "method": "tools/list", "params": {}});
    expect_error(&s.rpc(&list), 400, -32602, &json!(51));
    let list = json!({"jsonrpc": "2.0", "id": 52, "method": "tools/list"});
    expect_error(&s.rpc(&list), 400, -32602, &json!(52));
}

#[test]
fn unsupported_protocol_version_is_32022_with_supported_and_requested() {
    let s = Server::start(&[]);
    for (id, method, target) in [
        (60, "tools/call", Some(ELICIT)),
        (61, "tools/list", None),
        (62, "prompts/get", Some(PROMPT)),
    ] {
        let mut body = match target {
            Some(t) => carrier(id, method, t, None),
            None => json!({"jsonrpc": "2.0", "id": id, "method": method,
                           "params": {"_meta": meta(&json!({}))}}),
        };
        body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("1900-01-01");
        // headers_for copies the body's version into MCP-Protocol-Version.
        let headers = headers_for(&body);
        assert!(headers.contains(&("MCP-Protocol-Version".into(), "1900-01-01".into())));
        let r = s.rpc(&body);
        let v = expect_error(&r, 400, -32022, &json!(id));
        let data = &v["error"]["data"];
        assert_eq!(data["requested"], "1900-01-01", "{v}");
        let supported = data["supported"].as_array().expect("supported list");
        assert!(supported.contains(&json!("2026-07-28")), "{v}");
        assert!(supported.iter().all(Value::is_string), "{v}");
    }
}

#[test]
fn unknown_method_is_32601_with_404_and_get_delete_are_405() {
    let s = Server::start(&[]);
    let body = json!({"jsonrpc": "2.0", "id": 70, "method": "tools/explode",
                      "params": {"_meta": meta(&all_caps())}});
    let v = expect_error(&s.rpc(&body), 404, -32601, &json!(70));
    assert_eq!(v["id"], 70);
    // The retired 2025 handshake is an unknown method too.
    let init = json!({"jsonrpc": "2.0", "id": 71, "method": "initialize",
                      "params": {"_meta": meta(&all_caps())}});
    expect_error(&s.rpc(&init), 404, -32601, &json!(71));
    for m in ["GET", "DELETE"] {
        let r = server_support::request(
            s.addr,
            m,
            "/mcp",
            &[("MCP-Protocol-Version", "2026-07-28")],
            b"",
        );
        assert_eq!(r.status, 405, "{m}");
    }
}

#[test]
fn notification_is_202_without_a_body() {
    let s = Server::start(&[]);
    let n = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": 1, "_meta": meta(&json!({}))}});
    let r = s.rpc(&n);
    assert_eq!(r.status, 202, "{r:?}");
    assert!(r.body.is_empty(), "{:?}", r.text());
}

// 6. A requestState is bound to its request: in process, tests/flow_guarantees.rs
// (request_state_replayed_on_another_tool_or_other_arguments_is_refused). Here:
// what the refusals leave in the server's log.

#[test]
fn refused_tokens_never_reach_the_log() {
    let s = Server::start(&[]);
    let first = tool_call(80, ELICIT, None);
    let state = state_of(&s.call(&first, 200));
    let other = tool_call(81, "test_input_required_result_request_state", None);
    assert_frozen_state_response(
        &s.call(&retry(&other, 81, Some(name_answer("Ada")), &state), 400),
    );
    let a = tool_call(84, "deploy", Some(json!({"service": "a"})));
    let deploy_state = state_of(&s.call(&a, 200));
    let b = tool_call(85, "deploy", Some(json!({"service": "b"})));
    assert_frozen_state_response(&s.call(
        &retry(&b, 85, Some(confirm_answer(true)), &deploy_state),
        400,
    ));
    let none = tool_call(86, "deploy", None);
    assert_frozen_state_response(&s.call(
        &retry(&none, 86, Some(confirm_answer(true)), &deploy_state),
        400,
    ));
    let mut tampered = deploy_state.clone().into_bytes();
    let mid = tampered.len() / 2;
    tampered[mid] = if tampered[mid] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    assert_frozen_state_response(
        &s.call(&retry(&a, 87, Some(confirm_answer(true)), &tampered), 400),
    );

    // The private log line names the reason, never the token.
    for id in [81, 85, 86] {
        let line = s.log_line_for(id);
        assert!(line.contains("outcome=\"error:-32602\""), "{line}");
        assert!(line.contains("reject_reason=\"binding\""), "{line}");
        assert!(line.contains("http_status=400"), "{line}");
    }
    let line = s.log_line_for(87);
    assert!(line.contains("reject_reason="), "{line}");
    assert!(!line.contains("reject_reason=\"binding\""), "{line}");
    let all = s.stderr_lines().join("\n");
    for token in [&state, &deploy_state, &tampered] {
        assert!(!all.contains(token.as_str()), "a token reached the log");
        // Not even a recognisable slice of it.
        assert!(
            !all.contains(&token[10..40]),
            "a token slice reached the log"
        );
    }
}

// 7. A fleet: two processes sharing MRTR_KEYS finish one flow across both; a
// third with another key refuses it.

#[test]
fn fleet_with_shared_keys_finishes_one_flow_across_processes() {
    // The key as an operator makes it: `mrtr keygen`.
    let out = std::process::Command::new(server_support::bin())
        .arg("keygen")
        .output()
        .unwrap();
    assert!(out.status.success());
    let key = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let a = Server::start_with_keys(&[], &key);
    let b = Server::start_with_keys(&[], &key);
    let other = Server::start_with_keys(&[], &mrtr::seal::generate_key_string());

    let first = tool_call(1, MULTI, None);
    let r1 = a.call(&first, 200);
    assert_eq!(asked_keys(&r1), ["step1"]);
    let s1 = state_of(&r1);

    // Round 2 on B.
    let second = retry(
        &first,
        2,
        Some(json!({"step1": accept(json!({"name": "Ada"}))})),
        &s1,
    );
    let r2 = b.call(&second, 200);
    assert_eq!(asked_keys(&r2), ["step2"], "{r2}");
    let s2 = state_of(&r2);

    // The other key refuses both rounds' state.
    assert_frozen_state_response(&other.call(&second, 400));
    let third = retry(
        &first,
        3,
        Some(json!({"step2": accept(json!({"color": "green"}))})),
        &s2,
    );
    assert_frozen_state_response(&other.call(&third, 400));
    let line = other.log_line_for(3);
    assert!(line.contains("reject_reason=\"unknown_key\""), "{line}");

    // Round 3 back on A finishes, with the round-1 answer carried in the state.
    let done = a.call(&third, 200);
    assert_eq!(complete_text(&done), "Ada likes green");
    let line = a.log_line_for(3);
    assert!(line.contains("round=3"), "{line}");
    let line = b.log_line_for(2);
    assert!(line.contains("round=2"), "{line}");

    // A rotated instance (new key first, the shared one kept to open) still opens
    // state sealed by A; the flow finishes there too.
    let rotated = format!("{}, {key}", mrtr::seal::generate_key_string());
    let c = Server::start_with_keys(&[], &rotated);
    assert_eq!(complete_text(&c.call(&third, 200)), "Ada likes green");
}

#[test]
fn fleet_with_keys_file_and_env_share_state() {
    let key = mrtr::seal::generate_key_string();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let path = std::env::temp_dir().join(format!("mrtr-flows-keys-{}-{nanos}", std::process::id()));
    std::fs::write(&path, format!("# fleet key\n{key}\n")).unwrap();
    let path_text = path.to_str().unwrap().to_owned();
    let file_server = Server::start(&["--keys-file", &path_text]);
    let env_server = Server::start_with_keys(&[], &key);
    let _ = std::fs::remove_file(&path);
    assert!(
        file_server
            .stderr_lines()
            .iter()
            .all(|l| !l.contains("WARN"))
    );

    let first = tool_call(1, ELICIT, None);
    let state = state_of(&file_server.call(&first, 200));
    let done = env_server.call(&retry(&first, 2, Some(name_answer("Kay")), &state), 200);
    assert_eq!(complete_text(&done), "Hello, Kay!");
    // And the other way round.
    let state = state_of(&env_server.call(&first, 200));
    let done = file_server.call(&retry(&first, 3, Some(name_answer("Lin")), &state), 200);
    assert_eq!(complete_text(&done), "Hello, Lin!");
}

#[test]
fn ephemeral_keys_do_not_open_each_others_state() {
    let a = Server::start(&[]);
    let b = Server::start(&[]);
    let first = tool_call(1, ELICIT, None);
    let state = state_of(&a.call(&first, 200));
    assert_frozen_state_response(&b.call(&retry(&first, 2, Some(name_answer("X")), &state), 400));
}

// 8. An expired state (tests/flow_guarantees.rs, on a fake clock), 9.
// confirm-then-act exactly once (tests/flow_guarantees.rs; the concurrent
// replays stay below) and 10. the round cap (tests/flow_guarantees.rs) are engine
// behaviour. Here: the `mrtr serve` flags behind them reach the engine.

#[test]
fn serve_flags_configure_the_engine() {
    let key = mrtr::seal::generate_key_string();
    // --max-rounds: plan_trip's round 2 would need a second IRR.
    let s = Server::start_with_keys(&["--max-rounds", "1"], &key);
    let first = tool_call(1, "plan_trip", None);
    let state = state_of(&s.call(&first, 200));
    let kind = json!({"kind": accept(json!({"kind": "beach", "travellers": 2}))});
    let v = s.call(&retry(&first, 2, Some(kind), &state), 200);
    assert!(tool_error_text(&v).contains("more rounds"), "{v}");
    let line = s.log_line_for(2);
    assert!(line.contains("outcome=\"tool_error\""), "{line}");
    assert!(line.contains("round=2"), "{line}");

    // --audience: the same key under another audience refuses the state.
    let a = Server::start_with_keys(&["--audience", "fleet-a"], &key);
    let b = Server::start_with_keys(&["--audience", "fleet-b"], &key);
    let first = tool_call(3, ELICIT, None);
    let state = state_of(&a.call(&first, 200));
    let second = retry(&first, 4, Some(name_answer("Aud")), &state);
    assert_frozen_state_response(&b.call(&second, 400));
    let line = b.log_line_for(4);
    assert!(line.contains("reject_reason=\"audience\""), "{line}");
    assert_eq!(complete_text(&a.call(&second, 200)), "Hello, Aud!");

    // --state-ttl and --clock-skew: a lapsed state is refused without skew and
    // tolerated with the default skew (60 s).
    let strict = Server::start_with_keys(&["--state-ttl", "1", "--clock-skew", "0"], &key);
    let tolerant = Server::start_with_keys(&["--state-ttl", "1"], &key);
    let started = Instant::now();
    let call = tool_call(5, ELICIT, None);
    let strict_state = state_of(&strict.call(&call, 200));
    let tolerant_state = state_of(&tolerant.call(&call, 200));
    // Issued at or before `issued` (whole seconds); expiry is issued + 1 s and the
    // check is `now > exp`, so from `issued + 2` on both have lapsed. Poll the clock.
    let issued = unix_secs();
    let deadline = Instant::now() + Duration::from_secs(5);
    while unix_secs() < issued + 2 || started.elapsed() < Duration::from_secs(2) {
        assert!(Instant::now() < deadline, "clock did not advance");
        std::thread::sleep(Duration::from_millis(50));
    }
    let v = strict.call(
        &retry(&call, 6, Some(name_answer("Late")), &strict_state),
        200,
    );
    assert!(tool_error_text(&v).contains("lapsed"), "{v}");
    let line = strict.log_line_for(6);
    assert!(line.contains("outcome=\"tool_error\""), "{line}");
    assert!(line.contains("reject_reason=\"expired\""), "{line}");
    let v = tolerant.call(
        &retry(&call, 7, Some(name_answer("Skew")), &tolerant_state),
        200,
    );
    assert_eq!(complete_text(&v), "Hello, Skew!");
}

// 11. stdio end to end.

#[test]
fn stdio_two_round_tools_call_end_to_end() {
    let mut s = StdioServer::start(&[]);
    // No HTTP headers on stdio: the body alone.
    let first = tool_call(1, ELICIT, None);
    let irr = s.call(&first);
    assert_eq!(asked_keys(&irr), ["user_name"]);
    let state = state_of(&irr);
    let done = s.call(&retry(&first, 2, Some(name_answer("Stdio")), &state));
    assert_eq!(complete_text(&done), "Hello, Stdio!");
    // A protocol error is a line too.
    let v = s.call(&retry(&first, 3, Some(name_answer("x")), "bogus"));
    assert_frozen_state_response(&v);
    // A notification gets no line; malformed JSON gets a -32700 line; the next
    // request's reply is the next line.
    s.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#);
    s.send("{not json");
    let v = s.read_reply();
    rpc_error(&v, -32700);
    assert!(v.get("id").is_none(), "{v}");
    let v = s.call(&tool_call(4, "slow_report", None));
    assert_eq!(result(&v)["resultType"], "input_required");
    let (rest, err) = s.finish();
    assert_eq!(rest, "", "stdout must hold only the replies");
    let lines: Vec<&String> = err.iter().filter(|l| l.contains("mrtr::request")).collect();
    assert_eq!(lines.len(), 6, "{err:?}");
    assert!(
        lines[3].contains("outcome=\"notification\""),
        "{}",
        lines[3]
    );
    assert!(
        lines[4].contains("outcome=\"error:-32700\""),
        "{}",
        lines[4]
    );
    assert!(lines[0].contains("outcome=\"input_required\"") && lines[0].contains("round=1"));
    assert!(lines[1].contains("outcome=\"complete\"") && lines[1].contains("round=2"));
    assert!(
        lines[2].contains("outcome=\"error:-32602\""),
        "{}",
        lines[2]
    );
    assert!(lines.iter().all(|l| l.contains("transport=\"stdio\"")));
    assert!(err.iter().all(|l| !l.contains(&state)), "token in the log");
}

#[test]
fn stdio_with_shared_key_continues_an_http_flow() {
    // Transports share the engine: a flow started over HTTP finishes over stdio.
    let key = mrtr::seal::generate_key_string();
    let http = Server::start_with_keys(&[], &key);
    let first = tool_call(1, ELICIT, None);
    let state = state_of(&http.call(&first, 200));
    let mut stdio = StdioServer::start_with_keys(&[], &key);
    let v = stdio.call(&retry(&first, 2, Some(name_answer("Both")), &state));
    assert_eq!(complete_text(&v), "Hello, Both!");
    stdio.finish();
}

// 12. Every demo through one full flow: in process, tests/demos.rs.

// 13. The per-request log line.

#[test]
fn request_log_line_carries_outcome_and_round() {
    let s = Server::start(&[]);
    let secret = "svc-ARGUMENT-SECRET";
    let first = tool_call(1, "deploy", Some(json!({"service": secret})));
    let state = state_of(&s.call(&first, 200));
    s.call(&retry(&first, 2, Some(confirm_answer(true)), &state), 200);
    let declined = tool_call(3, "deploy", Some(json!({"service": secret})));
    let st = state_of(&s.call(&declined, 200));
    s.call(
        &retry(
            &declined,
            4,
            Some(json!({"confirm": {"action": "decline"}})),
            &st,
        ),
        200,
    );
    let other = tool_call(5, "deploy", Some(json!({"service": "other"})));
    s.call(&retry(&other, 5, Some(confirm_answer(true)), &st), 400);

    let l1 = s.log_line_for(1);
    assert!(l1.contains("outcome=\"input_required\""), "{l1}");
    assert!(l1.contains("round=1"), "{l1}");
    assert!(l1.contains("method=\"tools/call\""), "{l1}");
    assert!(l1.contains("target=\"deploy\""), "{l1}");
    assert!(l1.contains("http_status=200"), "{l1}");
    let l2 = s.log_line_for(2);
    assert!(l2.contains("outcome=\"complete\""), "{l2}");
    assert!(l2.contains("round=2"), "{l2}");
    let l4 = s.log_line_for(4);
    assert!(l4.contains("outcome=\"tool_error\""), "{l4}");
    assert!(l4.contains("round=2"), "{l4}");
    let l5 = s.log_line_for(5);
    assert!(l5.contains("outcome=\"error:-32602\""), "{l5}");
    assert!(l5.contains("reject_reason=\"binding\""), "{l5}");
    assert!(l5.contains("http_status=400"), "{l5}");
    for l in [&l1, &l2, &l4, &l5] {
        assert!(l.contains(" INFO "), "{l}");
        assert!(l.contains("correlation_id=\""), "{l}");
        assert!(l.contains("duration_ms="), "{l}");
        assert!(l.contains("transport=\"http\""), "{l}");
    }
    // Neither tokens nor argument values ever reach the log.
    let all = s.stderr_lines().join("\n");
    assert!(!all.contains(&state) && !all.contains(&st), "{all}");
    assert!(!all.contains(secret), "{all}");
}

#[test]
fn json_log_line_carries_round_and_reject_reason() {
    let s = Server::start(&["--log-format", "json"]);
    let first = tool_call(1, ELICIT, None);
    let state = state_of(&s.call(&first, 200));
    s.call(&retry(&first, 2, Some(name_answer("J")), &state), 200);
    let other = tool_call(3, "deploy", Some(json!({"service": "x"})));
    s.call(&retry(&other, 3, Some(confirm_answer(true)), &state), 400);
    let lines = s.wait_for_lines("mrtr::request", 3);
    let parsed: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let by_id = |id: &str| {
        parsed
            .iter()
            .find(|v| v["fields"]["jsonrpc_id"] == id)
            .unwrap_or_else(|| panic!("no line for {id}: {lines:?}"))["fields"]
            .clone()
    };
    let f = by_id("1");
    assert_eq!(f["outcome"], "input_required");
    assert_eq!(f["round"], 1);
    let f = by_id("2");
    assert_eq!(f["outcome"], "complete");
    assert_eq!(f["round"], 2);
    let f = by_id("3");
    assert_eq!(f["outcome"], "error:-32602");
    assert_eq!(f["reject_reason"], "binding");
    assert_eq!(f["http_status"], 400);
    assert!(lines.iter().all(|l| !l.contains(&state)));
}

#[test]
fn the_flow_unit_helpers_agree_with_the_wire() {
    // headers_for derives exactly the three headers the server checks.
    let b = carrier(1, "resources/read", VAULT, None);
    let h = headers_for(&b);
    assert!(h.contains(&("Mcp-Name".into(), VAULT.into())));
    assert!(h.contains(&("Mcp-Method".into(), "resources/read".into())));
    let r = retry(&b, 2, None, "s");
    assert!(r["params"].get("inputResponses").is_none());
    assert_eq!(r["params"]["requestState"], "s");
    assert_eq!(
        tool_text(&json!({"result": {"content": [{"text": "t"}]}})),
        "t"
    );
}

// Beyond the list: capability, audience and idempotent retries are in process
// (tests/flow_guarantees.rs); here what needs HTTP, and hostile input.

#[test]
fn mcp_session_id_is_ignored() {
    // Sessions are gone: a retry carrying one is handled like any other.
    let s = Server::start(&[]);
    let first = tool_call(1, MULTI, None);
    let s1 = state_of(&s.call(&first, 200));
    let step1 = json!({"step1": accept(json!({"name": "Ada"}))});
    let body = retry(&first, 7, Some(step1), &s1);
    let r = s.rpc_with(&body, &[("Mcp-Session-Id", "abc123")]);
    assert_eq!(r.status, 200);
    assert_eq!(asked_keys(&r.json()), ["step2"]);
    assert!(r.header("mcp-session-id").is_none());
}

#[test]
fn hostile_inputs_never_get_a_5xx_and_the_server_survives() {
    let mut s = Server::start(&[]);
    let good = tool_call(1, ELICIT, None);
    let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    let mut cases: Vec<(String, Vec<(String, String)>)> = Vec::new();
    let h = headers_for(&good);
    cases.push((deep.clone(), h.clone()));
    let mut nested = good.to_string();
    nested.truncate(nested.len() - 2);
    nested.push_str(&format!(r#","arguments":{{"a":{deep}}}}}}}"#));
    cases.push((nested, h.clone()));
    for id in [
        r#""string-id""#,
        "-1",
        "1.5",
        "18446744073709551616",
        "1e400",
        "true",
        "null",
        "{}",
    ] {
        let mut b = good.to_string();
        b = b.replacen(r#""id":1,"#, &format!(r#""id":{id},"#), 1);
        assert!(b.contains(&format!(r#""id":{id},"#)), "{b}");
        cases.push((b, h.clone()));
    }
    for (k, v) in [
        ("method", json!(5)),
        ("jsonrpc", json!("1.0")),
        ("params", json!(null)),
    ] {
        let mut b = good.clone();
        b[k] = v;
        cases.push((b.to_string(), h.clone()));
    }
    for state in [
        String::new(),
        "A".repeat(100_000),
        "not base64 !!".to_owned(),
        "AAAA".to_owned(),
    ] {
        let b = retry(&good, 9, Some(name_answer("x")), &state);
        cases.push((b.to_string(), h.clone()));
    }
    // A non-ASCII name: the header cannot carry it, so -32020.
    let uni = tool_call(10, "名前", None);
    cases.push((uni.to_string(), headers_for(&uni)));
    // Answers of every odd shape.
    for answer in [
        json!(null),
        json!("accept"),
        json!({"action": "maybe"}),
        json!({"action": "accept", "content": "x"}),
        json!({"action": "accept", "content": {"name": 5}}),
    ] {
        let first = tool_call(11, ELICIT, None);
        let state = state_of(&s.call(&first, 200));
        let b = retry(&first, 12, Some(json!({"user_name": answer})), &state);
        cases.push((b.to_string(), h.clone()));
    }

    for (body, headers) in &cases {
        let r = s.post(&borrow(headers), body.as_bytes());
        let short: String = body.chars().take(120).collect();
        assert!(
            matches!(r.status, 200 | 202 | 400 | 404),
            "{short}: {} {}",
            r.status,
            r.text()
        );
        if r.status != 202 {
            let v = r.json();
            assert_eq!(v["jsonrpc"], "2.0", "{short}: {v}");
            assert!(
                v.get("result").is_some() != v.get("error").is_some(),
                "{short}: {v}"
            );
        }
    }
    assert!(s.child.try_wait().unwrap().is_none(), "server died");
    assert_eq!(asked_keys(&s.call(&good, 200)), ["user_name"]);
    // No panic was logged.
    assert!(
        s.stderr_lines().iter().all(|l| !l.contains("panic")),
        "{:?}",
        s.stderr_lines()
    );
}

#[test]
fn inspect_opens_a_token_the_server_issued() {
    let key = mrtr::seal::generate_key_string();
    let s = Server::start_with_keys(&[], &key);
    let first = tool_call(1, MULTI, None);
    let s1 = state_of(&s.call(&first, 200));
    let step1 = json!({"step1": accept(json!({"name": "Inspected"}))});
    let s2 = state_of(&s.call(&retry(&first, 2, Some(step1), &s1), 200));
    let out = std::process::Command::new(server_support::bin())
        .args(["inspect", &s2])
        .env("MRTR_KEYS", &key)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let claims: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(claims["round"], 2, "{claims}");
    // The operator sees the sealed answers; the client never could.
    assert!(claims.to_string().contains("Inspected"), "{claims}");
    assert!(!s.stderr_lines().join("\n").contains("Inspected"));
}

#[test]
fn concurrent_replays_of_the_final_round_deploy_once() {
    let s = Server::start(&[]);
    let first = tool_call(1, "deploy", Some(json!({"service": "race"})));
    let state = state_of(&s.call(&first, 200));
    let last = retry(&first, 2, Some(confirm_answer(true)), &state);
    let replies: Vec<Value> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let mut body = last.clone();
                body["id"] = json!(100 + i);
                let s = &s;
                scope.spawn(move || s.call(&body, 200))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let deployed: Vec<&Value> = replies
        .iter()
        .filter(|v| result(v)["isError"] != true)
        .collect();
    assert_eq!(deployed.len(), 1, "{replies:?}");
    assert_eq!(complete_text(deployed[0]), "Deployed race (deployment #1).");
    for v in replies.iter().filter(|v| result(v)["isError"] == true) {
        assert!(tool_error_text(v).contains("already carried out"), "{v}");
    }
}

#[test]
fn a_flow_over_one_kept_alive_connection() {
    let s = Server::start(&[]);
    let mut conn = server_support::KeepAlive::connect(s.addr);
    let first = tool_call(1, MULTI, None);
    let r = conn.rpc(&first);
    assert_eq!(r.status, 200);
    let s1 = state_of(&r.json());
    let step1 = json!({"step1": accept(json!({"name": "Kee"}))});
    let r = conn.rpc(&retry(&first, 2, Some(step1), &s1));
    let s2 = state_of(&r.json());
    // An error in between does not close the connection.
    let r = conn.rpc(&retry(&first, 3, None, "bogus"));
    assert_eq!(r.status, 400);
    let step2 = json!({"step2": accept(json!({"color": "teal"}))});
    let r = conn.rpc(&retry(&first, 4, Some(step2), &s2));
    assert_eq!(complete_text(&r.json()), "Kee likes teal");
}

#[test]
fn a_huge_string_id_is_echoed_whole_but_logged_short() {
    let s = Server::start(&[]);
    let long = format!("{}-END", "i".repeat(100_000));
    let mut body = tool_call(1, ELICIT, None);
    body["id"] = json!(long);
    body["params"]["requestState"] = json!("bogus");
    let r = s.rpc(&body);
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["id"], long.as_str());
    s.wait_for_lines("mrtr::request", 1);
    for l in s.stderr_lines() {
        assert!(l.len() < 2048, "a log line of {} bytes", l.len());
        assert!(!l.contains("-END"), "{l}");
    }
}

#[test]
fn client_text_in_errors_is_bounded_in_the_reply_and_the_log() {
    let s = Server::start(&[]);
    let big = "K".repeat(50_000);
    let mut body = carrier(1, "prompts/get", PROMPT, None);
    body["params"]["arguments"] = json!({ big.clone(): 1 });
    let r = s.rpc(&body);
    assert_eq!(r.status, 400);
    let v = r.json();
    rpc_error(&v, -32602);
    assert!(
        v["error"]["message"].as_str().unwrap().len() < 512,
        "{}",
        r.body.len()
    );
    s.wait_for_lines("mrtr::request", 1);
    for l in s.stderr_lines() {
        assert!(l.len() < 2048, "a log line of {} bytes", l.len());
    }
}

#[test]
fn sigterm_with_an_idle_kept_alive_connection_exits_promptly() {
    let mut s = Server::start(&[]);
    let mut conn = server_support::KeepAlive::connect(s.addr);
    let r = conn.rpc(&tool_call(1, ELICIT, None));
    assert_eq!(r.status, 200);
    let started = Instant::now();
    let status = s.terminate();
    assert!(status.success(), "{status:?}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "shutdown waited {:?} for an idle connection",
        started.elapsed()
    );
    drop(conn);
}
