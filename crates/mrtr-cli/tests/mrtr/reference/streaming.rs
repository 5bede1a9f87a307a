//! The reference server's notification fixtures (`reference/streaming.rs`)
//! through `Service::handle_parsed_notifying`, as a transport runs them: what
//! `tools-call-with-progress` and `server-stateless` expect of them.

use std::sync::{Arc, Mutex};

use crate::support::*;
use mrtr::NotificationSink;
use mrtr::service::ParsedMessage;
use serde_json::{Value, json};

#[derive(Debug, Default)]
struct Collect(Mutex<Vec<Value>>);

impl NotificationSink for Collect {
    fn notify(&self, n: String) -> bool {
        self.0
            .lock()
            .unwrap()
            .push(serde_json::from_str(&n).unwrap());
        true
    }
}

/// Calls `tool` with `extra` in `_meta`: the response and the notifications.
async fn run(tool: &str, extra: Value) -> (Value, Vec<Value>) {
    let (service, _) = reference(engine());
    let mut body = tool_call(1, tool, None);
    for (k, v) in extra.as_object().unwrap() {
        body["params"]["_meta"][k] = v.clone();
    }
    let sink = Arc::new(Collect::default());
    let message = ParsedMessage::parse(body.to_string().as_bytes());
    let reply = service
        .handle_parsed_notifying(message, &ctx(T0), std::future::pending(), sink.clone())
        .await;
    let response = serde_json::from_str(&reply.body.unwrap()).unwrap();
    let got = sink.0.lock().unwrap().clone();
    (response, got)
}

#[tokio::test]
async fn the_progress_fixture_reports_three_increasing_values_with_the_token() {
    let (response, got) = run(
        "test_tool_with_progress",
        json!({"progressToken": "progress-test-1"}),
    )
    .await;
    assert_eq!(response["result"]["resultType"], "complete");
    assert_eq!(got.len(), 3, "{got:?}");
    assert!(got.iter().all(|n| n["method"] == "notifications/progress"
        && n["params"]["progressToken"] == "progress-test-1"
        && n["params"]["total"] == 100));
    let values: Vec<f64> = got
        .iter()
        .map(|n| n["params"]["progress"].as_f64().unwrap())
        .collect();
    assert!(values.windows(2).all(|w| w[0] < w[1]), "{values:?}");
    // Without a token, nothing.
    let (_, got) = run("test_tool_with_progress", json!({})).await;
    assert!(got.is_empty());
}

#[tokio::test]
async fn the_logging_fixture_logs_only_when_a_level_was_asked() {
    let (response, got) = run("test_logging_tool", json!({})).await;
    assert_eq!(response["result"]["resultType"], "complete");
    assert!(got.is_empty(), "{got:?}");
    let (_, got) = run(
        "test_logging_tool",
        json!({"io.modelcontextprotocol/logLevel": "debug"}),
    )
    .await;
    assert_eq!(got.len(), 3);
    assert!(
        got.iter()
            .all(|n| n["method"] == "notifications/message" && n["params"]["level"] == "info")
    );
    let (_, got) = run(
        "test_logging_tool",
        json!({"io.modelcontextprotocol/logLevel": "warning"}),
    )
    .await;
    assert!(got.is_empty(), "info is below warning");
}

#[tokio::test]
async fn the_streaming_elicitation_fixture_sends_notifications_then_an_input_required_result() {
    let (response, got) = run(
        "test_streaming_elicitation",
        json!({"progressToken": 5, "io.modelcontextprotocol/logLevel": "info"}),
    )
    .await;
    assert_eq!(response["result"]["resultType"], "input_required");
    assert!(response["result"]["inputRequests"]["user_name"].is_object());
    // Notifications only: never a request (no id).
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(
        got.iter().all(|n| n.get("id").is_none()
            && n["method"].as_str().unwrap().starts_with("notifications/"))
    );
}
