//! `subscriptions/listen` (SEP-2575) on the real router: the response is an SSE
//! stream whose first event is the acknowledgement, then the updates of the
//! resources it named, each tagged with the listen request's id; the caps hold;
//! a client that goes away frees its subscription; a graceful end sends the
//! listen result.

use mrtr_testkit as server_support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mrtr::service::{Changes, META_SUBSCRIPTION_ID};
use mrtr::{Engine, Keyring, ResourceDefinition, ResourceResult, Service, ToolResult};
use mrtr_server::http::{Anonymous, HttpOptions, mcp_router};
use serde_json::{Value, json};

use server_support::{EventStream, headers_for, request};

const PROTOCOL: &str = "2026-07-28";

fn rpc(id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": PROTOCOL,
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn listen(id: u64, uris: &[&str]) -> Value {
    rpc(
        id,
        "subscriptions/listen",
        json!({"notifications": {
        "resourceSubscriptions": uris, "toolsListChanged": true}}),
    )
}

/// A server whose tool `touch` announces that `file:///a.txt` changed.
fn serve(changes: &Changes) -> (tokio::runtime::Runtime, SocketAddr) {
    let announce = changes.clone();
    let service = Service::new(Engine::new(Keyring::ephemeral(), "subs"), "subs", "0")
        .tool(
            "touch",
            "Changes a.txt.",
            json!({"type": "object"}),
            move |_| {
                announce.resource_updated("file:///a.txt");
                Ok(ToolResult::text("touched"))
            },
        )
        .resource(ResourceDefinition::new("file:///a.txt", "a"), |_| {
            Ok(ResourceResult::text("file:///a.txt", "text/plain", "a"))
        })
        .with_changes(changes.clone());
    crate::loopback::serve(mcp_router(
        Arc::new(service),
        HttpOptions::default(),
        Anonymous,
    ))
}

fn call(addr: SocketAddr, body: &Value) -> (u16, Value) {
    let owned = headers_for(body);
    let mut h: Vec<(&str, &str)> = owned
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    h.push(("Content-Type", "application/json"));
    let r = request(addr, "POST", "/mcp", &h, body.to_string().as_bytes());
    (r.status, r.json())
}

/// Waits (bounded) until `changes` holds `n` open subscriptions.
fn wait_open(changes: &Changes, n: usize) {
    let start = Instant::now();
    while changes.open_subscriptions() != n {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{} open, not {n}",
            changes.open_subscriptions()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_listen_stream_acknowledges_then_delivers_tagged_updates() {
    let changes = Changes::new();
    let (_rt, addr) = serve(&changes);
    let (status, discover) = call(addr, &rpc(1, "server/discover", json!({})));
    assert_eq!(status, 200);
    assert_eq!(
        discover["result"]["capabilities"]["resources"],
        json!({"subscribe": true, "listChanged": true}),
        "{discover}"
    );
    assert_eq!(
        discover["result"]["capabilities"]["tools"],
        json!({"listChanged": true})
    );

    let mut s = EventStream::open(addr, &listen(7, &["file:///a.txt"]), &[]);
    let ack = s.next_event().expect("the acknowledgement");
    assert!(s.head.starts_with("HTTP/1.1 200"), "{}", s.head);
    assert!(
        s.head
            .to_ascii_lowercase()
            .contains("content-type: text/event-stream")
    );
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(ack["params"]["_meta"][META_SUBSCRIPTION_ID], 7);
    // What is honoured: the resource and the tool list; not the prompt list
    // (there are no prompts).
    assert_eq!(
        ack["params"]["notifications"],
        json!({"resourceSubscriptions": ["file:///a.txt"], "toolsListChanged": true})
    );
    wait_open(&changes, 1);

    let (status, touched) = call(addr, &rpc(2, "tools/call", json!({"name": "touch"})));
    assert_eq!(status, 200, "{touched}");
    let update = s.next_event().expect("an update");
    assert_eq!(update["method"], "notifications/resources/updated");
    assert_eq!(update["params"]["uri"], "file:///a.txt");
    assert_eq!(update["params"]["_meta"][META_SUBSCRIPTION_ID], 7);
    assert!(
        update.get("id").is_none(),
        "a notification, never a request"
    );

    // The application takes `touch` out of the list: listeners are told, the
    // list leaves it out, and calling it is an unknown tool; then back.
    assert!(changes.hide(mrtr::service::List::Tools, "touch"));
    let changed = s.next_event().expect("a list change");
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    assert_eq!(changed["params"]["_meta"][META_SUBSCRIPTION_ID], 7);
    let (_, list) = call(addr, &rpc(3, "tools/list", json!({})));
    assert_eq!(list["result"]["tools"], json!([]), "{list}");
    let (status, hidden) = call(addr, &rpc(4, "tools/call", json!({"name": "touch"})));
    assert_eq!(status, 400, "{hidden}");
    assert_eq!(hidden["error"]["message"], "Unknown tool", "{hidden}");
    assert!(changes.show(mrtr::service::List::Tools, "touch"));
    assert_eq!(
        s.next_event().unwrap()["method"],
        "notifications/tools/list_changed"
    );
    let (_, list) = call(addr, &rpc(5, "tools/list", json!({})));
    assert_eq!(list["result"]["tools"][0]["name"], "touch", "{list}");

    // A graceful end: the listen request's result, then the end of the stream.
    changes.close_all();
    let end = s.next_event().expect("the result");
    assert_eq!(end["id"], 7);
    assert_eq!(end["result"]["resultType"], "complete");
    assert_eq!(end["result"]["_meta"][META_SUBSCRIPTION_ID], 7);
    assert!(s.next_event().is_none(), "the stream ends");
    drop(s);
    wait_open(&changes, 0);
}

#[test]
fn a_client_that_goes_away_frees_its_subscription_and_the_caps_hold() {
    let changes = Changes::new();
    let (_rt, addr) = serve(&changes);
    let cap = mrtr::defaults::SUBSCRIPTIONS_PER_PRINCIPAL_MAX;
    let mut open: Vec<EventStream> = (0..cap)
        .map(|i| {
            let mut s = EventStream::open(addr, &listen(100 + i as u64, &["file:///a.txt"]), &[]);
            assert!(s.next_event().is_some(), "ack {i}");
            s
        })
        .collect();
    wait_open(&changes, cap);
    // One more from the same caller: refused with a JSON-RPC error, no stream.
    let (status, refused) = call(addr, &listen(200, &["file:///a.txt"]));
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert_eq!(refused["id"], 200);
    // Bad filters are -32602.
    let (status, bad) = call(
        addr,
        &rpc(
            201,
            "subscriptions/listen",
            json!({"notifications": {"resourceSubscriptions": "x"}}),
        ),
    );
    assert_eq!(
        (status, bad["error"]["code"].clone()),
        (400, json!(-32602)),
        "{bad}"
    );
    let (status, bad) = call(addr, &rpc(202, "subscriptions/listen", json!({})));
    assert_eq!(
        (status, bad["error"]["code"].clone()),
        (400, json!(-32602)),
        "{bad}"
    );

    // A client closes its stream: the next update finds it gone, and its place
    // is free again.
    let gone = open.pop().unwrap();
    drop(gone);
    let start = Instant::now();
    while changes.open_subscriptions() == cap {
        assert!(start.elapsed() < Duration::from_secs(10), "never freed");
        call(addr, &rpc(3, "tools/call", json!({"name": "touch"})));
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut again = EventStream::open(addr, &listen(300, &["file:///a.txt"]), &[]);
    assert_eq!(
        again.next_event().unwrap()["method"],
        "notifications/subscriptions/acknowledged"
    );
    // The others still get their updates (one more change: the gone stream
    // may have been freed before any change above was made).
    call(addr, &rpc(4, "tools/call", json!({"name": "touch"})));
    for s in &mut open {
        let mut got = s.next_event().unwrap();
        while got["method"] != "notifications/resources/updated" {
            got = s.next_event().unwrap();
        }
        assert_eq!(got["params"]["uri"], "file:///a.txt");
    }
}

#[test]
fn without_changes_listen_is_method_not_found() {
    let service = Service::new(Engine::new(Keyring::ephemeral(), "n"), "n", "0")
        .resource(ResourceDefinition::new("file:///a.txt", "a"), |_| {
            Ok(ResourceResult::text("file:///a.txt", "text/plain", "a"))
        });
    let app = mcp_router(Arc::new(service), HttpOptions::default(), Anonymous);
    let (_runtime, addr) = crate::loopback::serve(app);
    let (status, v) = call(addr, &listen(1, &["file:///a.txt"]));
    assert_eq!(status, 404, "{v}");
    assert_eq!(v["error"]["code"], -32601);
}

#[test]
fn on_shutdown_a_listen_stream_ends_with_its_result_and_the_drain_is_quick() {
    let changes = Changes::new();
    let service = Service::new(Engine::new(Keyring::ephemeral(), "s"), "s", "0")
        .resource(ResourceDefinition::new("file:///a.txt", "a"), |_| {
            Ok(ResourceResult::text("file:///a.txt", "text/plain", "a"))
        })
        .with_changes(changes.clone());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let closing = changes.clone();
    // As `mrtr serve` does: on the signal, subscriptions end first.
    let shutdown = async move {
        let _ = stopped.await;
        closing.close_all();
    };
    let app = mcp_router(Arc::new(service), HttpOptions::default(), Anonymous);
    let served = runtime.spawn(mrtr_server::http::serve_with(
        listener,
        app,
        mrtr_server::http::ServeOptions::default(),
        shutdown,
    ));
    let mut s = EventStream::open(addr, &listen(7, &["file:///a.txt"]), &[]);
    assert!(s.next_event().is_some(), "the acknowledgement");
    let started = Instant::now();
    stop.send(()).unwrap();
    let end = s.next_event().expect("the listen result");
    assert_eq!(end["id"], 7, "{end}");
    assert_eq!(end["result"]["resultType"], "complete", "{end}");
    assert!(s.next_event().is_none(), "then the end of the stream");
    runtime.block_on(served).unwrap().unwrap();
    // Well within the 10 s shutdown grace: the stream did not hold the drain up.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}
