//! The client against a 2025-era stdio server (tests/fixtures/legacy_stdio_server.py,
//! Python's standard library only): `server/discover` answered -32601 means
//! the 2025 era; `initialize`, then the server's `elicitation/create` answered
//! by the same handler as an input request; the caps on what such a server can
//! make the client do.
#![cfg(unix)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mrtr::wire::{CreateMessageResult, ElicitAction, ElicitResult, ListRootsResult, Root};
use mrtr_client::{
    Cap, Client, ClientError, Era, FlowError, Handlers, ServerStderr, StdioTransport,
};
use serde_json::json;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/legacy_stdio_server.py"
);

/// The fixture in `mode`, its stderr collected.
fn fixture(mode: &str) -> (StdioTransport, Arc<Mutex<Vec<String>>>) {
    let mut command = std::process::Command::new("python3");
    command.arg(FIXTURE).env("LEGACY_FIXTURE_MODE", mode);
    let lines: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = lines.clone();
    let transport = StdioTransport::builder(command)
        .stderr(ServerStderr::lines(move |l| {
            sink.lock().unwrap().push(l.to_owned())
        }))
        .spawn()
        .expect("python3 runs the fixture");
    (transport, lines)
}

/// Answers every form with `confirm: true`, recording the keys it was asked under.
fn confirm(keys: Arc<Mutex<Vec<(String, u32)>>>) -> Handlers {
    Handlers::new().on_elicit(move |ctx, _form| {
        keys.lock().unwrap().push((ctx.key.clone(), ctx.round));
        async {
            Ok(ElicitResult {
                action: ElicitAction::Accept,
                content: json!({"confirm": true}).as_object().cloned(),
            })
        }
    })
}

fn client(transport: StdioTransport, handlers: Handlers) -> Client {
    Client::builder(transport)
        .with_handler(handlers)
        .with_request_timeout(Some(Duration::from_secs(20)))
        .build()
}

/// The fixture's `got ...` lines so far (it writes them before answering, so
/// they are complete once the answer arrived, but stderr may lag: waited for).
async fn got(lines: &Mutex<Vec<String>>, at_least: usize) -> Vec<String> {
    for _ in 0..100 {
        let got: Vec<String> = lines
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.starts_with("got "))
            .cloned()
            .collect();
        if got.len() >= at_least {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the fixture logged {:?}", lines.lock().unwrap());
}

#[tokio::test]
async fn a_2025_stdio_server_is_initialized_and_its_question_answered_by_the_handler() {
    let (transport, lines) = fixture("");
    let keys = Arc::default();
    let c = client(transport, confirm(Arc::clone(&keys)));
    let done = c.call_tool("deploy", json!({})).await.unwrap();
    assert_eq!(done.text(), "Deployed web (2025 era).");
    assert!(!done.is_tool_error());
    assert_eq!(c.era(), Some(Era::Legacy));
    assert_eq!(
        *keys.lock().unwrap(),
        [("elicitation/create#1".to_owned(), 1)]
    );
    assert_eq!(
        got(&lines, 5).await,
        [
            "got server/discover",
            "got initialize",
            "got notifications/initialized",
            "got tools/call",
            "got response \"ask-1\"",
        ]
    );
    // The session stays: the next call and a plain request need no initialize.
    c.call_tool("deploy", json!({})).await.unwrap();
    let listed = c.request("tools/list", Default::default()).await.unwrap();
    assert_eq!(listed["tools"][0]["name"], "deploy");
    let all = got(&lines, 8).await;
    assert_eq!(
        all[5..],
        ["got tools/call", "got response \"ask-1\"", "got tools/list"]
    );
}

#[tokio::test]
async fn a_server_that_asks_without_end_is_stopped_at_the_cap() {
    let (transport, _lines) = fixture("flood");
    let c = Client::builder(transport)
        .with_handler(confirm(Arc::default()))
        .with_max_server_requests(3)
        .build();
    let e = c.call_tool("deploy", json!({})).await.unwrap_err();
    assert_eq!(e, ClientError::TooManyServerRequests { limit: 3 });

    let (transport, _lines) = fixture("flood");
    let c = client(transport, confirm(Arc::default()));
    let e = c.call_tool("deploy", json!({})).await.unwrap_err();
    assert_eq!(
        e,
        ClientError::TooManyServerRequests {
            limit: mrtr_client::legacy::MAX_SERVER_REQUESTS
        }
    );
}

#[tokio::test]
async fn garbage_and_an_invalid_request_are_errors_not_panics() {
    let (transport, _lines) = fixture("garbage");
    let c = client(transport, confirm(Arc::default()));
    let e = c.call_tool("deploy", json!({})).await.unwrap_err();
    assert!(
        matches!(&e, ClientError::Flow(FlowError::Malformed(m)) if m.contains("elicitation/create")),
        "{e:?}"
    );
}

#[tokio::test]
async fn roots_are_asked_only_when_declared() {
    // Not declared: the call ends as an undeclared input request ends a modern flow.
    let (transport, _lines) = fixture("roots");
    let c = client(transport, confirm(Arc::default()));
    let e = c.call_tool("deploy", json!({})).await.unwrap_err();
    assert!(
        matches!(
            &e,
            ClientError::Flow(FlowError::UndeclaredInput { key, .. }) if key == "roots/list#1"
        ),
        "{e:?}"
    );
    // Declared: answered by the roots handler, then the form.
    let (transport, lines) = fixture("roots");
    let keys = Arc::default();
    let handlers = confirm(Arc::clone(&keys)).on_roots(|ctx| async move {
        assert_eq!(ctx.key, "roots/list#1");
        Ok(ListRootsResult {
            roots: vec![Root {
                uri: "file:///srv/web".into(),
                name: None,
                meta: None,
            }],
        })
    });
    let c = client(transport, handlers);
    let done = c.call_tool("deploy", json!({})).await.unwrap();
    assert_eq!(done.text(), "Deployed web (2025 era).");
    assert_eq!(
        *keys.lock().unwrap(),
        [("elicitation/create#2".to_owned(), 2)]
    );
    got(&lines, 6).await;
    let shared = lines
        .lock()
        .unwrap()
        .iter()
        .find(|l| l.starts_with("roots "))
        .cloned();
    assert_eq!(
        shared.as_deref(),
        Some(r#"roots {"roots": [{"uri": "file:///srv/web"}]}"#)
    );
}

fn sampling(handlers: Handlers) -> Handlers {
    handlers.on_sampling(|ctx, _params| async move {
        assert!(
            ctx.key.starts_with("sampling/createMessage#"),
            "{}",
            ctx.key
        );
        Ok(CreateMessageResult {
            role: "assistant".into(),
            content: json!({"type": "text", "text": "web"}),
            model: "test".into(),
            stop_reason: None,
            meta: None,
        })
    })
}

#[tokio::test]
async fn sampling_is_answered_within_the_cap_per_call() {
    let (transport, lines) = fixture("sampling");
    let c = client(transport, sampling(confirm(Arc::default())));
    let done = c.call_tool("deploy", json!({})).await.unwrap();
    assert_eq!(done.text(), "Deployed web (2025 era).");
    got(&lines, 7).await;
    let sampled = lines
        .lock()
        .unwrap()
        .iter()
        .filter(|l| *l == "sampled web")
        .count();
    assert_eq!(sampled, 2);

    let (transport, _lines) = fixture("sampling");
    let c = Client::builder(transport)
        .with_handler(sampling(confirm(Arc::default())))
        .with_max_sampling_per_flow(1)
        .build();
    let e = c.call_tool("deploy", json!({})).await.unwrap_err();
    assert_eq!(
        e,
        ClientError::Flow(FlowError::CapExceeded {
            cap: Cap::SamplingPerFlow,
            limit: 1
        })
    );
}
