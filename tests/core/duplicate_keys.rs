//! A message whose objects name a member twice, at any depth, is refused with
//! -32700 (Parse error, HTTP 400, no `id`) and never reaches a handler: a proxy
//! that routes on the first `name` and a server that runs the last would run
//! different tools (`ParsedMessage` documents the choice of code).

use mrtr_testkit as common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use common::*;
use mrtr::ToolResult;
use mrtr::service::Service;
use serde_json::{Value, json};

/// A service with two tools, `safe` and `count`; `count` counts its runs.
fn counting() -> (Service, Arc<AtomicU64>) {
    let runs = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&runs);
    let service = Service::new(engine(), "dup", "0")
        .tool("safe", "does nothing", json!({"type": "object"}), |_| {
            Ok(ToolResult::text("safe"))
        })
        .tool("count", "counts", json!({"type": "object"}), move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok(ToolResult::text("counted"))
        });
    (service, runs)
}

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

fn send(service: &Service, body: &str) -> (u16, Value) {
    let reply = service.handle_sync(body.as_bytes(), &ctx(T0));
    let v = serde_json::from_str(reply.body.as_deref().expect("a reply body")).unwrap();
    (mrtr::streamable_http::reply_status(&reply), v)
}

#[test]
fn the_control_message_runs_the_handler() {
    let (service, runs) = counting();
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"count","arguments":{{"x":1}},{META}}}}}"#
    );
    let (status, v) = send(&service, &body);
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["result"]["content"][0]["text"], "counted", "{v}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn duplicate_keys_anywhere_are_a_parse_error_and_run_nothing() {
    let meta_dup = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#;
    let cases = [
        (
            "top-level method",
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{{"name":"count",{META}}}}}"#
            ),
        ),
        (
            "params.name",
            format!(
                r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"safe","name":"count",{META}}}}}"#
            ),
        ),
        (
            "inside arguments",
            format!(
                r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"count","arguments":{{"x":1,"y":{{"z":1,"z":2}}}},{META}}}}}"#
            ),
        ),
        (
            "inside _meta",
            format!(
                r#"{{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{{"name":"count",{meta_dup}}}}}"#
            ),
        ),
        (
            "the id",
            format!(
                r#"{{"jsonrpc":"2.0","id":5,"id":6,"method":"tools/call","params":{{"name":"count",{META}}}}}"#
            ),
        ),
        (
            "an escaped spelling of the same name",
            format!(
                r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"safe","n\u0061me":"count",{META}}}}}"#
            ),
        ),
    ];
    let (service, runs) = counting();
    for (what, body) in &cases {
        let (status, v) = send(&service, body);
        assert_eq!(status, 400, "{what}: {v}");
        assert_eq!(v["error"]["code"], -32700, "{what}: {v}");
        assert_eq!(v["error"]["message"], "Parse error", "{what}: {v}");
        // No member of an ambiguous message is trusted, not even its id.
        assert!(v.get("id").is_none(), "{what}: {v}");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0, "a handler ran");
}

#[test]
fn the_same_name_in_different_objects_is_fine() {
    let (service, runs) = counting();
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"count","arguments":{{"name":"a","inner":{{"name":"b"}}}},{META}}}}}"#
    );
    let (status, v) = send(&service, &body);
    assert_eq!(status, 200, "{v}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}
