//! The embedding example (`examples/embed_axum/main.rs`) over real HTTP on loopback: its
//! authentication layer says who the caller is, unauthenticated requests never
//! reach mrtr, and a flow started by alice cannot be finished by bob.
//!
//! The example's own tests (`[[example]] test = true`): its application is served
//! on a loopback port in process.

use mrtr_testkit as server_support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::extract::Request;
use axum::middleware::{self, Next};
use mrtr::Keyring;
use serde_json::{Value, json};

use server_support::{
    HttpResponse, accept, asked_keys, assert_frozen_state_response, borrow, carrier, complete_text,
    headers_for, request, retry, state_of, tool_error_text,
};

/// The example's application on a loopback port, with a counter of the requests
/// that got past its authentication layer into mrtr's router.
struct App {
    addr: SocketAddr,
    reached_mrtr: Arc<AtomicU64>,
    // Dropping the runtime stops the server.
    _runtime: tokio::runtime::Runtime,
}

impl App {
    fn start() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let reached_mrtr = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&reached_mrtr);
        let service = Arc::new(super::service(Keyring::ephemeral()));
        // The example's own composition, `with_auth(mcp(service))`, with a counter
        // between the two.
        let counted =
            super::mcp(service).layer(middleware::from_fn(move |req: Request, next: Next| {
                counter.fetch_add(1, Ordering::SeqCst);
                next.run(req)
            }));
        let app = super::with_auth(counted);
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        runtime.spawn(async move { axum::serve(listener, app).await });
        Self {
            addr,
            reached_mrtr,
            _runtime: runtime,
        }
    }

    /// POSTs `body` to `/mcp` with the MCP headers that agree with it and, if
    /// given, `Authorization: <authorization>`.
    fn post(&self, authorization: Option<&str>, body: &Value) -> HttpResponse {
        let owned = headers_for(body);
        let mut headers = borrow(&owned);
        headers.push(("Content-Type", "application/json"));
        if let Some(a) = authorization {
            headers.push(("Authorization", a));
        }
        request(
            self.addr,
            "POST",
            "/mcp",
            &headers,
            body.to_string().as_bytes(),
        )
    }

    /// POSTs `body` as `user` (`alice` or `bob`) and returns the JSON-RPC reply.
    fn call_as(&self, user: &str, body: &Value) -> Value {
        let r = self.post(Some(&format!("Bearer {user}-token")), body);
        let v = r.json();
        assert_eq!(v["id"], body["id"], "{v}");
        v
    }

    fn reached_mrtr(&self) -> u64 {
        self.reached_mrtr.load(Ordering::SeqCst)
    }
}

fn deploy(id: u64, arguments: Value) -> Value {
    carrier(id, "tools/call", "slow_deploy", Some(arguments))
}

fn web() -> Value {
    json!({"service": "web", "delay_ms": 5})
}

#[test]
fn unauthenticated_requests_get_401_and_never_reach_mrtr() {
    let app = App::start();
    let first = deploy(1, web());
    for authorization in [
        None,
        Some("Bearer carol-token"),
        Some("Bearer "),
        Some("Basic YWxpY2U6YWxpY2UtdG9rZW4="),
        Some("alice-token"),
    ] {
        let r = app.post(authorization, &first);
        assert_eq!(r.status, 401, "{authorization:?}: {}", r.text());
        assert_eq!(r.header("www-authenticate"), Some("Bearer"), "{r:?}");
    }
    assert_eq!(app.reached_mrtr(), 0);
    let v = app.call_as("alice", &first);
    assert_eq!(asked_keys(&v), ["confirm"], "{v}");
    assert_eq!(app.reached_mrtr(), 1);
}

#[test]
fn alice_confirms_and_the_service_is_deployed() {
    let app = App::start();
    let first = deploy(1, web());
    let v = app.call_as("alice", &first);
    assert_eq!(asked_keys(&v), ["confirm"], "{v}");
    let ask = &v["result"]["inputRequests"]["confirm"]["params"];
    assert_eq!(
        ask["requestedSchema"]["properties"]["confirm"]["type"], "boolean",
        "{v}"
    );
    let state = state_of(&v);

    let confirmed = retry(
        &first,
        2,
        Some(json!({"confirm": accept(json!({"confirm": true}))})),
        &state,
    );
    assert_eq!(
        complete_text(&app.call_as("alice", &confirmed)),
        "Deployed web"
    );
}

#[test]
fn a_decline_or_a_cancel_deploys_nothing() {
    let app = App::start();
    let first = deploy(1, web());
    let state = state_of(&app.call_as("alice", &first));
    for (id, answer) in [
        (2, json!({"action": "decline"})),
        (3, json!({"action": "cancel"})),
    ] {
        let refused = retry(&first, id, Some(json!({"confirm": answer})), &state);
        let text = complete_text(&app.call_as("alice", &refused));
        assert!(text.starts_with("Not deployed"), "{text}");
    }
    // An accepted form whose box is unticked is a decline too.
    let unticked = retry(
        &first,
        4,
        Some(json!({"confirm": accept(json!({"confirm": false}))})),
        &state,
    );
    let text = complete_text(&app.call_as("alice", &unticked));
    assert!(text.starts_with("Not deployed"), "{text}");
}

#[test]
fn a_state_issued_to_alice_is_refused_to_bob() {
    let app = App::start();
    let first = deploy(1, web());
    let state = state_of(&app.call_as("alice", &first));
    let answers = Some(json!({"confirm": accept(json!({"confirm": true}))}));

    assert_frozen_state_response(&app.call_as("bob", &retry(&first, 2, answers.clone(), &state)));
    // The same retry from alice still completes: only the principal differed.
    let v = app.call_as("alice", &retry(&first, 3, answers, &state));
    assert_eq!(complete_text(&v), "Deployed web");
}

/// The field is named by `Round::arguments` (through the crate's typed decoding) and,
/// for the range, by the example's own check; the value sent is never echoed.
#[test]
fn bad_arguments_are_tool_errors_naming_the_field_never_the_value() {
    let app = App::start();
    for (id, arguments, field, sent) in [
        (
            1,
            json!({"service": "web", "delay_ms": "soon"}),
            "delay_ms",
            "soon",
        ),
        (
            2,
            json!({"service": "web", "delay_ms": 20000}),
            "delay_ms",
            "20000",
        ),
        (
            3,
            json!({"service": "web", "delay_ms": -4}),
            "delay_ms",
            "-4",
        ),
        (
            4,
            json!({"service": "web", "delay_ms": 70000}),
            "delay_ms",
            "70000",
        ),
        (5, json!({"delay_ms": 5}), "service", "web"),
        (
            6,
            json!({"service": ["db-1"], "delay_ms": 5}),
            "service",
            "db-1",
        ),
    ] {
        let v = app.call_as("alice", &deploy(id, arguments.clone()));
        let text = tool_error_text(&v);
        assert!(text.contains(field), "{arguments}: {text}");
        assert!(!text.contains(sent), "{arguments}: {text}");
    }
    assert_eq!(app.reached_mrtr(), 6);
}

#[test]
fn progress_streams_to_a_client_that_asked_and_listeners_hear_of_the_deployment() {
    let app = App::start();
    // alice listens for the count of deployments.
    let listen = json!({"jsonrpc": "2.0", "id": 50, "method": "subscriptions/listen", "params": {
        "notifications": {"resourceSubscriptions": [super::DEPLOYMENTS_URI]},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    let mut stream = server_support::EventStream::open(
        app.addr,
        &listen,
        &[("Authorization", "Bearer alice-token")],
    );
    let ack = stream.next_event().expect("the acknowledgement");
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );

    // She deploys, asking for progress on the final round.
    let first = deploy(1, web());
    let v = app.call_as("alice", &first);
    let mut last = retry(
        &first,
        2,
        Some(json!({"confirm": accept(json!({"confirm": true}))})),
        &state_of(&v),
    );
    last["params"]["_meta"]["progressToken"] = json!("deploy-1");
    let owned = headers_for(&last);
    let mut headers = borrow(&owned);
    headers.extend([
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("Authorization", "Bearer alice-token"),
    ]);
    let r = request(
        app.addr,
        "POST",
        "/mcp",
        &headers,
        last.to_string().as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("text/event-stream"), "{r:?}");
    let events = server_support::sse_messages(&r.text());
    let (progress, result) = events.split_at(events.len() - 1);
    let values: Vec<f64> = progress
        .iter()
        .map(|e| {
            assert_eq!(e["method"], "notifications/progress", "{e}");
            assert_eq!(e["params"]["progressToken"], "deploy-1", "{e}");
            e["params"]["progress"].as_f64().unwrap()
        })
        .collect();
    assert_eq!(values, [0.0, 1.0]);
    assert_eq!(complete_text(&result[0]), "Deployed web", "{}", result[0]);

    // The listener hears of the new count, and reads it.
    let update = stream.next_event().expect("an update");
    assert_eq!(
        update["method"], "notifications/resources/updated",
        "{update}"
    );
    assert_eq!(update["params"]["uri"], super::DEPLOYMENTS_URI);
    let read = carrier(3, "resources/read", super::DEPLOYMENTS_URI, None);
    assert_eq!(
        app.call_as("alice", &read)["result"]["contents"][0]["text"],
        "1"
    );

    // Without a progressToken the same flow is answered with one JSON body.
    let first = deploy(4, web());
    let v = app.call_as("alice", &first);
    let last = retry(
        &first,
        5,
        Some(json!({"confirm": accept(json!({"confirm": true}))})),
        &state_of(&v),
    );
    let r = app.post(Some("Bearer alice-token"), &last);
    assert_eq!(r.header("content-type"), Some("application/json"), "{r:?}");
    assert_eq!(complete_text(&r.json()), "Deployed web");
}
