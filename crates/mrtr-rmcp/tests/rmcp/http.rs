//! mrtr handlers on rmcp's real Streamable HTTP server (`mrtr_rmcp`), over
//! loopback HTTP, no mocks: a tool, a prompt and a resource in two rounds; the
//! frozen -32602 for cross-argument, cross-principal and tampered states; expiry
//! as on `mrtr serve`; -32021 naming exactly what is missing; `once`; both
//! extractor orders, and a `ToolCall` not routed through `Mrtr::call_tool`
//! failing closed; what reaches the log.

use crate::rmcp_support;
use crate::support as server_support;

use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mrtr::replay::MemoryReplayGuard;
use mrtr::seal::SealConfig;
use mrtr::{Engine, Keyring, Timestamp};
use mrtr_rmcp::{Mrtr, Principals};
use rmcp_support::{NOTE, PROMPT, USER_HEADER, text_of};
use serde_json::{Value, json};
use server_support::common::{
    accept, all_caps, asked_keys, assert_frozen_state_response, carrier, meta, retry, rpc_error,
    sampled, state_of,
};
use server_support::{borrow, headers_for, request};
use std::sync::Arc;

fn engine() -> Engine {
    // A fresh second, as `mrtr serve` starts on (MemoryReplayGuard::new).
    let started = Timestamp::now();
    while Timestamp::now() == started {
        std::thread::sleep(Duration::from_millis(20));
    }
    Engine::new(Keyring::ephemeral(), "https://rmcp.test.example")
        .with_replay_guard(Arc::new(MemoryReplayGuard::new(Timestamp::now())))
}

/// POSTs `body` to rmcp's `/mcp` with the MCP headers that agree with it, as
/// `user` (the principal header) when given; returns the JSON-RPC reply.
fn post(addr: SocketAddr, body: &Value, user: Option<&str>) -> Value {
    let owned = headers_for(body);
    let mut headers = borrow(&owned);
    headers.push(("Content-Type", "application/json"));
    headers.push(("Accept", "application/json, text/event-stream"));
    if let Some(u) = user {
        headers.push((USER_HEADER, u));
    }
    let r = request(addr, "POST", "/mcp", &headers, body.to_string().as_bytes());
    let v = r.json();
    // rmcp picks the status of an error reply; a result is always 200.
    if v.get("result").is_some() {
        assert_eq!(r.status, 200, "{}", r.text());
    }
    v
}

fn call(addr: SocketAddr, body: &Value) -> Value {
    post(addr, body, Some("alice"))
}

fn tool(id: u64, name: &str, args: Option<Value>) -> Value {
    carrier(id, "tools/call", name, args)
}

fn confirm(yes: bool) -> Value {
    json!({"confirm": accept(json!({"confirm": yes}))})
}

fn complete(v: &Value) -> &str {
    assert_eq!(v["result"]["resultType"], "complete", "{v}");
    assert_ne!(v["result"]["isError"], true, "{v}");
    text_of(v)
}

fn tool_error(v: &Value) -> &str {
    assert_eq!(v["result"]["isError"], true, "{v}");
    text_of(v)
}

fn start() -> rmcp_support::Running {
    rmcp_support::start(Mrtr::new(engine(), rmcp_support::header_principals()))
}

#[test]
fn a_tool_completes_in_two_rounds() {
    let s = start();
    let first = tool(1, "greet", None);
    let v = call(s.addr, &first);
    assert_eq!(asked_keys(&v), ["user_name"]);
    let state = state_of(&v);
    let answers = json!({"user_name": accept(json!({"name": "Ada"}))});
    let v = call(s.addr, &retry(&first, 2, Some(answers), &state));
    assert_eq!(complete(&v), "Hello, Ada!");
}

#[test]
fn a_prompt_and_a_resource_complete_in_two_rounds() {
    let s = start();
    let first = carrier(1, "prompts/get", PROMPT, None);
    let v = call(s.addr, &first);
    assert_eq!(asked_keys(&v), ["user_context"]);
    let state = state_of(&v);
    let answers = json!({"user_context": accept(json!({"context": "rust"}))});
    let v = call(s.addr, &retry(&first, 2, Some(answers), &state));
    assert_eq!(v["result"]["resultType"], "complete", "{v}");
    assert_eq!(
        v["result"]["messages"][0]["content"]["text"], "Use this context: rust",
        "{v}"
    );

    let first = carrier(3, "resources/read", NOTE, None);
    let v = call(s.addr, &first);
    assert_eq!(asked_keys(&v), ["reveal"]);
    let state = state_of(&v);
    let v = call(
        s.addr,
        &retry(
            &first,
            4,
            Some(json!({"reveal": accept(json!({"confirm": true}))})),
            &state,
        ),
    );
    assert_eq!(v["result"]["resultType"], "complete", "{v}");
    assert_eq!(v["result"]["contents"][0]["text"], "the note", "{v}");
    // A refusal on a resource is a JSON-RPC error (no isError there).
    let v = call(s.addr, &first);
    let state = state_of(&v);
    let v = call(
        s.addr,
        &retry(
            &first,
            5,
            Some(json!({"reveal": accept(json!({"confirm": false}))})),
            &state,
        ),
    );
    rpc_error(&v, -32602);
}

#[test]
fn cross_argument_cross_principal_and_tampered_states_are_the_frozen_error() {
    rmcp_support::capture_log();
    let s = start();
    let a = tool(1, "deploy", Some(json!({"service": "a"})));
    let state = state_of(&call(s.addr, &a));
    // Another argument.
    let b = tool(2, "deploy", Some(json!({"service": "b"})));
    assert_frozen_state_response(&call(s.addr, &retry(&b, 2, Some(confirm(true)), &state)));
    // Another principal.
    let v = post(
        s.addr,
        &retry(&a, 3, Some(confirm(true)), &state),
        Some("mallory"),
    );
    assert_frozen_state_response(&v);
    // Another tool.
    let greet = tool(4, "greet", None);
    assert_frozen_state_response(&call(
        s.addr,
        &retry(&greet, 4, Some(confirm(true)), &state),
    ));
    // A tampered token.
    let mut tampered = state.clone().into_bytes();
    let mid = tampered.len() / 2;
    tampered[mid] = if tampered[mid] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    assert_frozen_state_response(&call(s.addr, &retry(&a, 5, Some(confirm(true)), &tampered)));
    assert_eq!(
        s.server
            .deployments
            .load(std::sync::atomic::Ordering::SeqCst),
        0
    );
    // The genuine retry still works, once.
    let last = retry(&a, 6, Some(confirm(true)), &state);
    assert_eq!(
        complete(&call(s.addr, &last)),
        "Deployed a (deployment #1)."
    );

    // The refusals' private reasons reach the log; the tokens never do.
    let log = rmcp_support::captured_log();
    assert!(log.contains("reject_reason=\"binding\""), "{log}");
    assert!(log.contains("request failed"), "{log}");
    for token in [&state, &tampered] {
        assert!(!log.contains(&token[10..40]), "a token reached the log");
    }
}

#[test]
fn the_once_step_runs_once_when_the_last_round_is_replayed() {
    let s = start();
    let a = tool(1, "deploy", Some(json!({"service": "svc"})));
    let state = state_of(&call(s.addr, &a));
    let last = retry(&a, 2, Some(confirm(true)), &state);
    assert_eq!(
        complete(&call(s.addr, &last)),
        "Deployed svc (deployment #1)."
    );
    let mut replay = last.clone();
    replay["id"] = json!(3);
    let v = call(s.addr, &replay);
    assert!(tool_error(&v).contains("already carried out"), "{v}");
    assert_eq!(
        s.server
            .deployments
            .load(std::sync::atomic::Ordering::SeqCst),
        1
    );
}

#[test]
fn a_missing_capability_is_32021_naming_exactly_what_is_missing() {
    let s = start();
    // No capabilities: the optional form is dropped, the required sampling is missing.
    let mut body = tool(1, "ask_model", None);
    body["params"]["_meta"] = meta(&json!({}));
    let v = call(s.addr, &body);
    let e = rpc_error(&v, -32021);
    assert_eq!(
        e["data"]["requiredCapabilities"],
        json!({"sampling": {}}),
        "{v}"
    );
    assert!(e["message"].as_str().unwrap().contains("sampling"), "{v}");
    assert!(
        !e["message"].as_str().unwrap().contains("elicitation"),
        "{v}"
    );
    // With sampling only: asked, and the optional form is not.
    let mut body = tool(2, "ask_model", None);
    body["params"]["_meta"] = meta(&json!({"sampling": {}}));
    let v = call(s.addr, &body);
    assert_eq!(asked_keys(&v), ["capital"]);
    let state = state_of(&v);
    let v = call(
        s.addr,
        &retry(&body, 3, Some(json!({"capital": sampled("Paris")})), &state),
    );
    assert_eq!(complete(&v), "model=Paris name=");
}

#[test]
fn an_answer_that_does_not_fit_is_asked_again() {
    let s = start();
    let first = tool(1, "greet", None);
    let state = state_of(&call(s.addr, &first));
    // `name` must be a string.
    let bad = json!({"user_name": accept(json!({"name": 42}))});
    let v = call(s.addr, &retry(&first, 2, Some(bad), &state));
    assert_eq!(asked_keys(&v), ["user_name"], "{v}");
    let state = state_of(&v);
    let good = json!({"user_name": accept(json!({"name": "Bo"}))});
    assert_eq!(
        complete(&call(s.addr, &retry(&first, 3, Some(good), &state))),
        "Hello, Bo!"
    );
}

#[test]
fn two_rounds_then_complete_and_roots() {
    let s = start();
    let first = tool(1, "two_rounds", None);
    let v = call(s.addr, &first);
    assert_eq!(asked_keys(&v), ["step1"]);
    let v = call(
        s.addr,
        &retry(
            &first,
            2,
            Some(json!({"step1": accept(json!({"name": "Ada"}))})),
            &state_of(&v),
        ),
    );
    assert_eq!(asked_keys(&v), ["step2"]);
    let v = call(
        s.addr,
        &retry(
            &first,
            3,
            Some(json!({"step2": accept(json!({"color": "red"}))})),
            &state_of(&v),
        ),
    );
    assert_eq!(complete(&v), "Ada likes red");

    let first = tool(4, "list_roots", None);
    let v = call(s.addr, &first);
    let answers = json!({"roots": {"roots": [{"uri": "file:///w", "name": "w"}]}});
    let v = call(s.addr, &retry(&first, 5, Some(answers), &state_of(&v)));
    assert_eq!(complete(&v), "roots=file:///w");
}

#[test]
fn both_extractor_orders_bind_the_arguments_the_client_sent() {
    let s = start();
    for name in ["order_mrtr_first", "order_params_first"] {
        let first = tool(1, name, Some(json!({"value": "x"})));
        let v = call(s.addr, &first);
        let state = state_of(&v);
        // The same state with other arguments: refused, whatever the order.
        let other = tool(2, name, Some(json!({"value": "y"})));
        assert_frozen_state_response(&call(
            s.addr,
            &retry(&other, 2, Some(confirm(true)), &state),
        ));
        let v = call(s.addr, &retry(&first, 3, Some(confirm(true)), &state));
        assert_eq!(complete(&v), "params=x bound=\"x\"", "{name}");
    }
}

#[test]
fn the_flow_takes_the_state_and_answers_out_of_the_call_it_routes() {
    let s = start();
    let first = tool(1, "leftovers", None);
    let v = call(s.addr, &first);
    let v = call(
        s.addr,
        &retry(&first, 2, Some(confirm(true)), &state_of(&v)),
    );
    // The retry carried both; rmcp's extractors beside the ToolCall see neither.
    assert_eq!(complete(&v), "state=false answers=false");
}

#[test]
fn a_tool_call_not_routed_through_mrtr_fails_closed() {
    rmcp_support::capture_log();
    let s = rmcp_support::start_unrouted(Mrtr::new(engine(), Principals::anonymous()));
    let v = call(
        s.addr,
        &tool(1, "order_params_first", Some(json!({"value": "x"}))),
    );
    rpc_error(&v, -32603);
    let log = rmcp_support::captured_log();
    assert!(log.contains("not routed through Mrtr::call_tool"), "{log}");
}

#[test]
fn a_request_without_a_principal_is_refused() {
    let s = start();
    let v = post(s.addr, &tool(1, "greet", None), None);
    rpc_error(&v, -32603);
}

#[test]
fn expiry_as_on_mrtr_serve() {
    let key = Keyring::ephemeral();
    let strict = Engine::new(key, "https://rmcp.test.example").with_seal_config(
        SealConfig::default()
            .with_ttl(Duration::from_secs(1))
            .unwrap()
            .with_clock_skew(Duration::ZERO),
    );
    let s = rmcp_support::start(Mrtr::new(strict, Principals::anonymous()));
    let started = Instant::now();
    let first = tool(1, "greet", None);
    let state = state_of(&call(s.addr, &first));
    let unix = || {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs()
    };
    let issued = unix();
    while unix() < issued + 2 || started.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let answers = json!({"user_name": accept(json!({"name": "Late"}))});
    let v = call(s.addr, &retry(&first, 2, Some(answers), &state));
    assert!(tool_error(&v).contains("lapsed"), "{v}");
    // Not even the all-capabilities request misses its flow: a fresh call works.
    let v = call(s.addr, &tool(3, "greet", None));
    assert_eq!(v["result"]["resultType"], "input_required", "{v}");
    let _ = all_caps();
}

#[test]
fn an_async_handler_past_its_deadline_is_a_retryable_tool_error() {
    let mrtr =
        Mrtr::new(engine(), Principals::anonymous()).with_handler_timeout(Duration::from_secs(2));
    let s = rmcp_support::start(mrtr);
    // Not ready on its first poll, done well before the deadline.
    let v = call(s.addr, &tool(1, "slow", Some(json!({"ms": 20}))));
    assert_eq!(complete(&v), "slept 20 ms");
    // Past the deadline: abandoned (it would answer after a minute).
    let started = Instant::now();
    let v = call(s.addr, &tool(2, "slow", Some(json!({"ms": 60_000}))));
    assert!(tool_error(&v).contains("did not finish in time"), "{v}");
    // A hang detector with a wide margin, not a timing assertion.
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn a_panicking_handler_is_32603_and_the_server_serves_on() {
    rmcp_support::capture_log();
    let s = start();
    // A synchronous handler runs with no future around it: its panic is caught
    // there, as an async handler's is in its future.
    for (id, name) in [(1, "panics_sync"), (2, "panics_async")] {
        let v = call(s.addr, &tool(id, name, None));
        let e = rpc_error(&v, -32603);
        assert!(!e.to_string().contains("bug"), "{v}");
    }
    let log = rmcp_support::captured_log();
    assert_eq!(log.matches("handler panicked").count(), 2, "{log}");
    // The server still answers, and the same tool's next call is caught again.
    let v = call(s.addr, &tool(3, "greet", None));
    assert_eq!(v["result"]["resultType"], "input_required", "{v}");
    rpc_error(&call(s.addr, &tool(4, "panics_sync", None)), -32603);
}

/// POSTs the raw `body` (duplicate keys survive only as text) to `/mcp` as
/// alice, with the MCP headers of a `method` call of `name`.
#[cfg(feature = "http")]
fn post_raw(
    addr: SocketAddr,
    method: &str,
    name: &str,
    body: &str,
) -> server_support::HttpResponse {
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
        ("Mcp-Name", name),
        (USER_HEADER, "alice"),
    ];
    request(addr, "POST", "/mcp", &headers, body.as_bytes())
}

/// What `mrtr serve`'s core answers for `body`: its status and JSON.
#[cfg(feature = "http")]
fn core_reply(body: &str) -> (u16, Value) {
    let service = mrtr::Service::new(engine(), "dup", "0");
    let reply = service.handle_sync(
        body.as_bytes(),
        &server_support::common::ctx(Timestamp::now()),
    );
    let v = serde_json::from_str(reply.body.as_deref().expect("a reply body")).unwrap();
    (mrtr::streamable_http::reply_status(&reply), v)
}

#[cfg(feature = "http")]
const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}"#;

#[cfg(feature = "http")]
#[test]
fn duplicate_keys_are_refused_before_rmcp_as_mrtr_serve_refuses_them() {
    let s = rmcp_support::start_guarded(Mrtr::new(engine(), rmcp_support::header_principals()));
    let first = tool(1, "deploy", Some(json!({"service": "web"})));
    let state = state_of(&call(s.addr, &first));
    let answer = |yes: bool| format!(r#"{{"action":"accept","content":{{"confirm":{yes}}}}}"#);
    // The confirmation twice: a proxy reading the first sees "no", rmcp the last, "yes".
    let twice = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"deploy","arguments":{{"service":"web"}},"inputResponses":{{"confirm":{},"confirm":{}}},"requestState":"{state}",{META}}}}}"#,
        answer(false),
        answer(true)
    );
    let cases = [
        ("deploy", twice),
        (
            "order_params_first",
            format!(
                r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"order_params_first","arguments":{{"value":"x","value":"EVIL"}},{META}}}}}"#
            ),
        ),
        (
            "greet",
            format!(
                r#"{{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{{"name":"greet","name":"deploy",{META}}}}}"#
            ),
        ),
        (
            "greet",
            format!(
                r#"{{"jsonrpc":"2.0","id":5,"id":6,"method":"tools/call","params":{{"name":"greet",{META}}}}}"#
            ),
        ),
        (
            "greet",
            format!(
                r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"greet","arguments":{{"a":{{"z":1,"z":2}}}},{META}}}}}"#
            ),
        ),
    ];
    for (name, body) in &cases {
        let r = post_raw(s.addr, "tools/call", name, body);
        let (status, expected) = core_reply(body);
        assert_eq!(status, 400, "{body}");
        assert_eq!(r.status, status, "{body}: {}", r.text());
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(r.json(), expected, "{body}");
        assert_eq!(expected["error"]["code"], -32700);
        assert!(expected.get("id").is_none());
    }
    assert_eq!(
        s.server
            .deployments
            .load(std::sync::atomic::Ordering::SeqCst),
        0,
        "a refused body ran the step"
    );
    // The same round with the key once goes on to rmcp and runs.
    let once = format!(
        r#"{{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{{"name":"deploy","arguments":{{"service":"web"}},"inputResponses":{{"confirm":{}}},"requestState":"{state}",{META}}}}}"#,
        answer(true)
    );
    let r = post_raw(s.addr, "tools/call", "deploy", &once);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(complete(&r.json()), "Deployed web (deployment #1).");
    // The same name in different objects is no duplicate.
    let nested = format!(
        r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"name":"order_params_first","arguments":{{"value":"x","inner":{{"value":"y"}}}},{META}}}}}"#
    );
    let r = post_raw(s.addr, "tools/call", "order_params_first", &nested);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(asked_keys(&r.json()), ["confirm"]);
}

#[cfg(feature = "http")]
#[test]
fn a_body_over_the_guard_limit_is_refused_before_rmcp_reads_it() {
    let s = rmcp_support::start_guarded(Mrtr::new(engine(), rmcp_support::header_principals()));
    let long = "x".repeat(mrtr::defaults::MAX_BODY);
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"order_params_first","arguments":{{"value":"{long}"}},{META}}}}}"#
    );
    let r = post_raw(s.addr, "tools/call", "order_params_first", &body);
    assert_eq!(r.status, 413, "{}", r.text());
    assert_eq!(r.json()["error"]["code"], -32600);
    // Under the limit, the same call goes on to rmcp.
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"order_params_first","arguments":{{"value":"short"}},{META}}}}}"#
    );
    let r = post_raw(s.addr, "tools/call", "order_params_first", &body);
    assert_eq!(r.status, 200, "{}", r.text());
}
