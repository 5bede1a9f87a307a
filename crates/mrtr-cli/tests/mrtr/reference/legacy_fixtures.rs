//! The fixtures of the suite's 2025-11-25 scenarios (`reference/legacy.rs`, and
//! `test_tool_with_logging`) as a 2026-07-28 client meets them through
//! `Service::handle`: the first call returns an `InputRequiredResult` carrying
//! exactly the schema the 2025-11-25 scenario checks, and the retry with the
//! scenario's answers completes with the text it expects.

use std::sync::{Arc, Mutex};

use crate::support::*;
use mrtr::NotificationSink;
use mrtr::service::{ParsedMessage, Service};
use serde_json::{Value, json};

/// The first call of `tool` with `arguments`: its request and the response.
fn first(service: &Service, tool: &str, arguments: Value) -> (Value, Value) {
    let body = tool_call(1, tool, Some(arguments));
    let response = call(service, body.to_string().as_bytes(), T0);
    assert_eq!(
        response["result"]["resultType"], "input_required",
        "{response}"
    );
    (body, response)
}

/// The retry of `request` answering `key` with `answer`, echoing the state of `irr`.
fn answer(service: &Service, request: &Value, irr: &Value, key: &str, answer: Value) -> Value {
    let state = irr["result"]["requestState"]
        .as_str()
        .expect("a requestState");
    let body = retry(request, 2, Some(json!({key: answer})), state);
    call(service, body.to_string().as_bytes(), T0.add_secs(1))
}

/// The only input request of `irr`: its key and the request.
fn only_request(irr: &Value) -> (String, Value) {
    let requests = irr["result"]["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1, "{irr}");
    let (k, v) = requests.iter().next().unwrap();
    (k.clone(), v.clone())
}

#[test]
fn test_sampling_asks_the_prompt_and_returns_the_model_s_answer() {
    let (service, _) = reference(engine());
    let (request, irr) = first(
        &service,
        "test_sampling",
        json!({"prompt": "Test prompt for sampling"}),
    );
    let (key, ask) = only_request(&irr);
    assert_eq!(ask["method"], "sampling/createMessage");
    assert_eq!(ask["params"]["maxTokens"], 100);
    assert_eq!(
        ask["params"]["messages"],
        json!([{"role": "user", "content": {"type": "text", "text": "Test prompt for sampling"}}])
    );
    let done = answer(
        &service,
        &request,
        &irr,
        &key,
        sampled("This is a test response from the client"),
    );
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(
        text(&done["result"]),
        "LLM response: This is a test response from the client"
    );
}

#[test]
fn test_elicitation_asks_for_username_and_email_with_the_given_message() {
    let (service, _) = reference(engine());
    let (request, irr) = first(
        &service,
        "test_elicitation",
        json!({"message": "Please provide your information"}),
    );
    let (key, ask) = only_request(&irr);
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(ask["params"]["message"], "Please provide your information");
    assert_eq!(
        ask["params"]["requestedSchema"],
        json!({
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        })
    );
    let done = answer(
        &service,
        &request,
        &irr,
        &key,
        accept(json!({"username": "testuser", "email": "test@example.com"})),
    );
    assert_eq!(
        text(&done["result"]),
        r#"User response: action=accept, content={"username":"testuser","email":"test@example.com"}"#
    );
    // A decline reads as one, with no content.
    let declined = answer(&service, &request, &irr, &key, json!({"action": "decline"}));
    assert_eq!(
        text(&declined["result"]),
        "User response: action=decline, content={}"
    );
}

#[test]
fn the_fixtures_with_an_argument_refuse_a_call_without_it() {
    let (service, _) = reference(engine());
    for tool in ["test_sampling", "test_elicitation"] {
        let body = tool_call(1, tool, Some(json!({})));
        let response = call(&service, body.to_string().as_bytes(), T0);
        assert_eq!(response["result"]["isError"], true, "{tool}: {response}");
    }
}

#[test]
fn test_elicitation_sep1034_defaults_asks_with_a_default_for_every_type() {
    let (service, _) = reference(engine());
    let (request, irr) = first(&service, "test_elicitation_sep1034_defaults", json!({}));
    let (key, ask) = only_request(&irr);
    assert_eq!(ask["method"], "elicitation/create");
    let p = &ask["params"]["requestedSchema"]["properties"];
    // What elicitation-sep1034-defaults checks, field by field.
    for (field, ty, default) in [
        ("name", "string", json!("John Doe")),
        ("age", "integer", json!(30)),
        ("score", "number", json!(95.5)),
        ("status", "string", json!("active")),
        ("verified", "boolean", json!(true)),
    ] {
        assert_eq!(p[field]["type"], ty, "{field}: {p}");
        assert_eq!(p[field]["default"], default, "{field}: {p}");
    }
    assert_eq!(
        p["status"]["enum"],
        json!(["active", "inactive", "pending"])
    );
    // The scenario's own answer.
    let done = answer(
        &service,
        &request,
        &irr,
        &key,
        accept(json!({"name": "Jane Smith", "age": 25, "score": 88.0,
                      "status": "inactive", "verified": false})),
    );
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    let got = text(&done["result"]);
    let content = got
        .strip_prefix("Elicitation completed: action=accept, content=")
        .unwrap_or_else(|| panic!("{got}"));
    assert_eq!(
        serde_json::from_str::<Value>(content).unwrap(),
        json!({"name": "Jane Smith", "age": 25, "score": 88.0, "status": "inactive", "verified": false})
    );
}

#[test]
fn test_elicitation_sep1330_enums_asks_the_five_enum_kinds() {
    let (service, _) = reference(engine());
    let (request, irr) = first(&service, "test_elicitation_sep1330_enums", json!({}));
    let (key, ask) = only_request(&irr);
    let p = &ask["params"]["requestedSchema"]["properties"];
    assert_eq!(
        p["untitledSingle"],
        json!({"type": "string", "title": "Untitled single-select",
               "enum": ["option1", "option2", "option3"]})
    );
    assert_eq!(p["titledSingle"]["type"], "string");
    assert_eq!(
        p["titledSingle"]["oneOf"],
        json!([{"const": "value1", "title": "First Option"},
               {"const": "value2", "title": "Second Option"},
               {"const": "value3", "title": "Third Option"}])
    );
    assert!(p["titledSingle"].get("enum").is_none());
    assert_eq!(p["legacyEnum"]["enum"], json!(["opt1", "opt2", "opt3"]));
    assert_eq!(
        p["legacyEnum"]["enumNames"],
        json!(["Option One", "Option Two", "Option Three"])
    );
    assert_eq!(p["untitledMulti"]["type"], "array");
    assert_eq!(
        p["untitledMulti"]["items"],
        json!({"type": "string", "enum": ["option1", "option2", "option3"]})
    );
    assert_eq!(p["titledMulti"]["type"], "array");
    assert_eq!(
        p["titledMulti"]["items"],
        json!({"anyOf": [{"const": "value1", "title": "First Choice"},
                         {"const": "value2", "title": "Second Choice"},
                         {"const": "value3", "title": "Third Choice"}]})
    );
    let content = json!({"untitledSingle": "option1", "titledSingle": "value1", "legacyEnum": "opt1",
                         "untitledMulti": ["option1", "option2"], "titledMulti": ["value1", "value2"]});
    let done = answer(&service, &request, &irr, &key, accept(content.clone()));
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    let got = text(&done["result"]);
    let echoed = got
        .strip_prefix("Elicitation completed: action=accept, content=")
        .unwrap_or_else(|| panic!("{got}"));
    assert_eq!(serde_json::from_str::<Value>(echoed).unwrap(), content);
    // A choice outside an enum is not taken.
    let wrong = answer(
        &service,
        &request,
        &irr,
        &key,
        accept(json!({"titledMulti": ["value9"]})),
    );
    assert_ne!(wrong["result"]["resultType"], "complete", "{wrong}");
}

#[test]
fn the_watched_resource_is_listed_and_read() {
    let (service, _) = reference(engine());
    let list = call(
        &service,
        &rpc(1, "resources/list", json!({"_meta": meta(&all_caps())})),
        T0,
    );
    let uris: Vec<&str> = list["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert!(uris.contains(&"test://watched-resource"), "{uris:?}");
    assert_ne!(
        uris[0], "test://watched-resource",
        "the caching scenario reads the first"
    );
    let read = call(
        &service,
        carrier(2, "resources/read", "test://watched-resource", None)
            .to_string()
            .as_bytes(),
        T0,
    );
    assert_eq!(
        read["result"]["contents"][0]["uri"], "test://watched-resource",
        "{read}"
    );
}

#[derive(Debug, Default)]
struct Collect(Mutex<Vec<(std::time::Instant, Value)>>);

impl NotificationSink for Collect {
    fn notify(&self, n: String) -> bool {
        self.0
            .lock()
            .unwrap()
            .push((std::time::Instant::now(), serde_json::from_str(&n).unwrap()));
        true
    }
}

#[tokio::test]
async fn test_tool_with_logging_logs_three_info_messages_about_50_ms_apart() {
    let (service, _) = reference(engine());
    let mut body = tool_call(1, "test_tool_with_logging", None);
    body["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("debug");
    let sink = Arc::new(Collect::default());
    let reply = service
        .handle_parsed_notifying(
            ParsedMessage::parse(body.to_string().as_bytes()),
            &ctx(T0),
            std::future::pending(),
            sink.clone(),
        )
        .await;
    let response: Value = serde_json::from_str(&reply.body.unwrap()).unwrap();
    assert_eq!(response["result"]["resultType"], "complete");
    assert!(!text(&response["result"]).is_empty());
    let got = sink.0.lock().unwrap().clone();
    let messages: Vec<&Value> = got.iter().map(|(_, n)| &n["params"]["data"]).collect();
    assert_eq!(
        messages,
        [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed"
        ]
    );
    assert!(
        got.iter()
            .all(|(_, n)| n["method"] == "notifications/message"
                && n["params"]["level"] == "info"
                && n["params"]["logger"] == "test_tool_with_logging")
    );
    for pair in got.windows(2) {
        let gap = pair[1].0 - pair[0].0;
        assert!(gap >= std::time::Duration::from_millis(45), "{gap:?}");
    }
}
