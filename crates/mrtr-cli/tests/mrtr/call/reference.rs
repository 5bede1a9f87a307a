//! The client driver against the reference server (`mrtr serve`) over loopback:
//! every conformance fixture and demo, a tampered state, and a pending flow
//! resumed on a second server instance that shares the key ring.
//!
//! The server is the crate's own `mrtr` binary, started on 127.0.0.1:0.

use std::process::Stdio;
use std::time::Duration;

use mrtr::wire::{
    CreateMessageResult, ElicitAction, ElicitParams, ElicitResult, JsonObject, ListRootsResult,
    PrimitiveSchema, Root,
};
use mrtr_client::{
    CarrierCall, Client, ClientError, FlowError, Handlers, HttpTransport, PendingFlow, Step,
};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A running `mrtr serve`; killed on drop.
struct Server {
    url: String,
    _child: Child,
}

/// Starts `mrtr serve` with `keys` (MRTR_KEYS).
async fn start(keys: &str) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mrtr"))
        .args(["serve", "--listen", "127.0.0.1:0", "--anonymous"])
        .env("MRTR_KEYS", keys)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn mrtr");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    let url = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(i) = line.find("listening on http://") {
                let rest = &line[i + "listening on ".len()..];
                return Some(rest.split_whitespace().next().unwrap().to_owned());
            }
            seen.push(line);
        }
        None
    })
    .await
    .expect("mrtr serve reports its address");
    let Some(url) = url else {
        let status = child.wait().await.unwrap();
        panic!("mrtr serve did not start: {status} {seen:?}");
    };
    // Keep draining the log so the server never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Server { url, _child: child }
}

const KEY: &str = "joQA0P64mi7jAzkeI2Nh28DK0YRUlWHu68MvGeKKUIw";

/// Answers everything: forms with `<field>` strings, `true`, the minimum or 1,
/// the first option; url consent; sampling "Paris"; roots file:///tmp.
fn everything() -> Handlers {
    Handlers::new()
        .on_elicit(|_ctx, p| async move { Ok(accept(&p)) })
        .with_url_mode()
        .on_sampling(|_ctx, _p| async {
            Ok(CreateMessageResult {
                role: "assistant".into(),
                content: json!({"type": "text", "text": "Paris"}),
                model: "test".into(),
                stop_reason: Some("endTurn".into()),
                meta: None,
            })
        })
        .on_roots(|_ctx| async {
            Ok(ListRootsResult {
                roots: vec![Root {
                    uri: "file:///tmp".into(),
                    name: Some("tmp".into()),
                    meta: None,
                }],
            })
        })
}

fn accept(p: &ElicitParams) -> ElicitResult {
    let ElicitParams::Form(f) = p else {
        return ElicitResult {
            action: ElicitAction::Accept,
            content: None,
        };
    };
    let mut c = JsonObject::new();
    for (name, field) in &f.requested_schema.properties {
        let v = match field {
            PrimitiveSchema::String { .. } => json!(format!("<{name}>")),
            PrimitiveSchema::Boolean { .. } => json!(true),
            PrimitiveSchema::Number { minimum, .. } => json!(minimum.unwrap_or(1.0) as i64),
            PrimitiveSchema::SingleSelect { options, .. } => json!(options[0].value),
            PrimitiveSchema::MultiSelect { options, .. } => json!([options[0].value]),
            _ => continue,
        };
        c.insert(name.clone(), v);
    }
    ElicitResult {
        action: ElicitAction::Accept,
        content: Some(c),
    }
}

fn client(url: &str, h: Handlers) -> Client {
    Client::builder(HttpTransport::new(url).unwrap())
        .with_handler(h)
        .build()
}

#[tokio::test]
async fn every_fixture_and_demo_completes() {
    let server = start(KEY).await;
    let c = client(&server.url, everything());
    let cases: &[(CarrierCall, &str)] = &[
        (
            CarrierCall::tool("test_input_required_result_elicitation", json!({})),
            "<name>",
        ),
        (
            CarrierCall::tool("test_input_required_result_sampling", json!({})),
            "Paris",
        ),
        (
            CarrierCall::tool("test_input_required_result_list_roots", json!({})),
            "file:///tmp",
        ),
        (
            CarrierCall::tool("test_input_required_result_request_state", json!({})),
            "",
        ),
        (
            CarrierCall::tool("test_input_required_result_multiple_inputs", json!({})),
            "name=<name>; greeting=Paris; roots=1",
        ),
        (
            CarrierCall::tool("test_input_required_result_multi_round", json!({})),
            "<name> likes <color>",
        ),
        (
            CarrierCall::tool("test_input_required_result_tampered_state", json!({})),
            "state verified",
        ),
        (
            CarrierCall::tool("test_input_required_result_capabilities", json!({})),
            "The model said: Paris",
        ),
        (
            CarrierCall::prompt("test_input_required_result_prompt", json!({})),
            "Use this context: <context>",
        ),
        (
            CarrierCall::tool("deploy", json!({"service": "web"})),
            "Deployed web",
        ),
        (
            CarrierCall::tool("plan_trip", json!({})),
            "Planned a city trip for 1",
        ),
        (
            CarrierCall::tool("summarize", json!({"text": "A long text."})),
            "Paris",
        ),
        (
            CarrierCall::tool("list_workspace", json!({})),
            "file:///tmp",
        ),
        (CarrierCall::tool("connect_account", json!({})), "sign-in"),
        (CarrierCall::tool("slow_report", json!({})), "Report ready"),
        (CarrierCall::resource("mrtr://demo/vault-note"), ""),
    ];
    for (call, expect) in cases {
        let name = call.target().to_owned();
        let done = c
            .call(call.clone())
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!done.is_tool_error(), "{name}: {}", done.result);
        assert!(done.rounds >= 2, "{name} asked nothing: {}", done.result);
        assert!(
            done.text().contains(expect),
            "{name}: {:?} lacks {expect:?}",
            done.text()
        );
    }
}

#[tokio::test]
async fn a_required_capability_missing_is_a_typed_error() {
    let server = start(KEY).await;
    let c = client(&server.url, Handlers::new());
    assert!(c.capabilities().is_empty());
    match c
        .call_tool("test_input_required_result_capabilities", json!({}))
        .await
        .unwrap_err()
    {
        ClientError::Flow(FlowError::JsonRpc {
            code: -32021,
            data: Some(d),
            ..
        }) => {
            assert!(d["requiredCapabilities"].get("sampling").is_some(), "{d}");
        }
        e => panic!("{e:?}"),
    }
}

#[tokio::test]
async fn a_declined_confirmation_is_a_tool_error() {
    let server = start(KEY).await;
    let h = Handlers::new().on_elicit(|_c, _p| async {
        Ok(ElicitResult {
            action: ElicitAction::Decline,
            content: None,
        })
    });
    let done = client(&server.url, h)
        .call_tool("deploy", json!({"service": "web"}))
        .await
        .unwrap();
    assert!(done.is_tool_error());
    assert!(done.text().contains("did not confirm"), "{}", done.text());
}

#[tokio::test]
async fn a_tampered_state_is_refused() {
    let server = start(KEY).await;
    let c = client(&server.url, everything());
    let Step::NeedsInput(mut pending) = c
        .start(CarrierCall::tool(
            "test_input_required_result_tampered_state",
            json!({}),
        ))
        .await
        .unwrap()
    else {
        panic!("expected a question");
    };
    let state = pending.request_state.take().expect("a sealed state");
    let mut bytes = state.into_bytes();
    let i = bytes.len() / 2;
    bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
    pending.request_state = Some(String::from_utf8(bytes).unwrap());
    let answers = c.fulfil(&pending).await.unwrap();
    match c.resume(pending, answers).await.unwrap_err() {
        ClientError::Flow(FlowError::JsonRpc { code, message, .. }) => {
            assert_eq!(code, -32602);
            assert_eq!(message, "Invalid or expired requestState");
        }
        e => panic!("{e:?}"),
    }
}

#[tokio::test]
async fn a_pending_flow_resumes_on_another_instance() {
    let a = start(KEY).await;
    let b = start(KEY).await;
    let first = client(&a.url, everything());
    let Step::NeedsInput(pending) = first
        .start(CarrierCall::tool("plan_trip", json!({})))
        .await
        .unwrap()
    else {
        panic!("expected a question");
    };
    let saved = serde_json::to_string(&pending).unwrap();
    drop(first);

    // Another process would do exactly this: load the JSON, answer, resume elsewhere.
    let second = client(&b.url, everything());
    let pending: PendingFlow = serde_json::from_str(&saved).unwrap();
    let answers = second.fulfil(&pending).await.unwrap();
    let done = second.resume_to_completion(pending, answers).await.unwrap();
    assert_eq!(done.rounds, 3);
    assert!(
        done.text().starts_with("Planned a city trip for 1"),
        "{}",
        done.text()
    );
}
