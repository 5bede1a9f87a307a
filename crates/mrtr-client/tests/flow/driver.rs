//! The client driver against a scripted in-memory server: every rule of spec.md §2.4.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mrtr::wire::{
    CreateMessageResult, ElicitAction, ElicitParams, ElicitResult, InputKind, InputResponse,
    InputResponses, ListRootsResult, Root,
};
use mrtr_client::{
    BoxFuture, CarrierCall, Client, ClientError, FlowError, HandlerError, Handlers, InputHandler,
    PendingFlow, Step, Timer, Transport, TransportError,
};
use serde_json::{Value, json};

// ---------------------------------------------------------------- fakes

type ServerFn = Arc<dyn Fn(Value) -> BoxFuture<'static, Value> + Send + Sync>;

/// An in-memory transport: records every request and answers with a script.
#[derive(Clone)]
struct Fake {
    log: Arc<Mutex<Vec<Value>>>,
    server: ServerFn,
}

impl std::fmt::Debug for Fake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Fake")
    }
}

impl Fake {
    /// A server answering synchronously with `f(request) -> result`.
    fn new(f: impl Fn(&Value) -> Value + Send + Sync + 'static) -> Self {
        Self::new_async(move |req| {
            let result = f(&req);
            async move { respond(&req, result) }
        })
    }

    /// A server answering with a full response from an async function.
    fn new_async<F, Fut>(f: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Value> + Send + 'static,
    {
        Self {
            log: Arc::default(),
            server: Arc::new(move |req| Box::pin(f(req))),
        }
    }

    fn requests(&self) -> Vec<Value> {
        self.log.lock().unwrap().clone()
    }
}

impl Transport for Fake {
    fn send(&self, request: Value) -> BoxFuture<'_, Result<Value, TransportError>> {
        self.log.lock().unwrap().push(request.clone());
        let answer = (self.server)(request);
        Box::pin(async move { Ok(answer.await) })
    }
}

fn respond(req: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": req["id"], "result": result})
}

/// A timer that records every pause; pauses under a second pass at once, longer
/// ones (the total time cap) never end.
#[derive(Debug, Default, Clone)]
struct RecordingTimer(Arc<Mutex<Vec<Duration>>>);

impl Timer for RecordingTimer {
    fn sleep(&self, d: Duration) -> BoxFuture<'static, ()> {
        if d >= Duration::from_secs(1) {
            return Box::pin(std::future::pending());
        }
        self.0.lock().unwrap().push(d);
        Box::pin(async {})
    }
}

impl RecordingTimer {
    fn pauses(&self) -> Vec<Duration> {
        self.0.lock().unwrap().clone()
    }
}

fn elicit(message: &str) -> Value {
    json!({"method": "elicitation/create", "params": {"message": message,
        "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}})
}

fn irr(asks: Value, state: Option<&str>) -> Value {
    let mut r = json!({"resultType": "input_required"});
    if !asks.is_null() {
        r["inputRequests"] = asks;
    }
    if let Some(s) = state {
        r["requestState"] = json!(s);
    }
    r
}

fn done(text: &str) -> Value {
    json!({"resultType": "complete", "content": [{"type": "text", "text": text}]})
}

fn accept_ok() -> ElicitResult {
    ElicitResult {
        action: ElicitAction::Accept,
        content: json!({"ok": true}).as_object().cloned(),
    }
}

fn elicit_handler() -> Handlers {
    Handlers::new().on_elicit(|_ctx, _p| async { Ok(accept_ok()) })
}

fn client(fake: &Fake, handler: impl InputHandler + 'static) -> (Client, RecordingTimer) {
    let timer = RecordingTimer::default();
    let c = Client::builder(fake.clone())
        .with_handler(handler)
        .with_timer(timer.clone())
        .build();
    (c, timer)
}

fn retried(req: &Value) -> bool {
    req["params"].get("inputResponses").is_some() || req["params"].get("requestState").is_some()
}

// ---------------------------------------------------------------- tests

#[tokio::test]
async fn request_state_is_echoed_byte_exact() {
    // Whitespace, quotes, escapes, control and non-ASCII characters, and a
    // JSON-looking value that must not be re-serialized.
    let states = [
        " {\"b\": 1,  \"a\":2} ",
        "\u{0}\t\r\n \\u0041 é 🚀 \u{2028}",
        "   ",
    ];
    let states: Vec<String> = states.iter().map(|s| (*s).to_owned()).collect();
    let script = states.clone();
    let fake = Fake::new(move |req| {
        let p = &req["params"];
        let round = match p.get("requestState").and_then(Value::as_str) {
            None => 0,
            Some(s) => script.iter().position(|x| x == s).expect("an echoed state") + 1,
        };
        match round {
            0..=2 => irr(
                json!({ format!("q{round}"): elicit("?") }),
                Some(&script[round]),
            ),
            _ => done("ok"),
        }
    });
    let (c, _) = client(&fake, elicit_handler());
    let out = c.call_tool("t", json!({"x": 1})).await.unwrap();
    assert_eq!(out.rounds, 4);
    let reqs = fake.requests();
    assert!(reqs[0]["params"].get("requestState").is_none());
    for (i, s) in states.iter().enumerate() {
        let sent = reqs[i + 1]["params"]["requestState"].as_str().unwrap();
        assert_eq!(sent.as_bytes(), s.as_bytes(), "round {}", i + 2);
        // The retry answers only the latest round's question.
        let keys: Vec<_> = reqs[i + 1]["params"]["inputResponses"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(keys, vec![format!("q{i}")]);
    }
}

#[tokio::test]
async fn state_is_omitted_when_none_came() {
    // Round 1: state; round 2: no state; round 3: complete. The third request
    // must not carry the first round's state.
    let fake = Fake::new(|req| {
        let p = &req["params"];
        match (p.get("inputResponses"), p.get("requestState")) {
            (None, _) => irr(json!({"a": elicit("a")}), Some("s1")),
            (Some(r), Some(_)) if r.get("a").is_some() => irr(json!({"b": elicit("b")}), None),
            _ => done("ok"),
        }
    });
    let (c, _) = client(&fake, elicit_handler());
    c.call_tool("t", Value::Null).await.unwrap();
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(reqs[1]["params"]["requestState"], "s1");
    let last = reqs[2]["params"].as_object().unwrap();
    assert!(
        !last.contains_key("requestState"),
        "no requestState key at all: {last:?}"
    );
    assert!(last.contains_key("inputResponses"));
    assert!(
        !last.contains_key("arguments"),
        "Value::Null sends no arguments"
    );
}

#[tokio::test]
async fn every_request_has_a_fresh_id_and_full_meta() {
    let fake = Fake::new(|req| {
        if req["params"].get("inputResponses").is_some() {
            done("ok")
        } else {
            irr(json!({"a": elicit("a")}), Some("s"))
        }
    });
    let handlers = elicit_handler().with_url_mode();
    let (c, _) = client(&fake, handlers);
    c.call_tool("one", json!({})).await.unwrap();
    c.get_prompt("two", json!({"k": "v"})).await.unwrap();
    c.read_resource("file:///three").await.unwrap();
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 6);
    let mut ids: Vec<String> = reqs.iter().map(|r| r["id"].to_string()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 6, "ids repeat: {ids:?}");
    for r in &reqs {
        let meta = &r["params"]["_meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        assert_eq!(meta["io.modelcontextprotocol/clientInfo"]["name"], "mrtr");
        assert_eq!(
            meta["io.modelcontextprotocol/clientCapabilities"],
            json!({"elicitation": {"form": {}, "url": {}}})
        );
    }
    // The retry re-sends the original params.
    assert_eq!(reqs[2]["method"], "prompts/get");
    assert_eq!(reqs[3]["params"]["name"], "two");
    assert_eq!(reqs[3]["params"]["arguments"], json!({"k": "v"}));
    assert_eq!(reqs[5]["method"], "resources/read");
    assert_eq!(reqs[5]["params"]["uri"], "file:///three");
}

#[tokio::test]
async fn parallel_flows_never_share_state() {
    // Each tool's first response waits until both first requests have arrived, so
    // the two flows are interleaved; each issues its own state and question key.
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let fake = Fake::new_async(move |req| {
        let barrier = barrier.clone();
        async move {
            let p = &req["params"];
            let name = p["name"].as_str().unwrap().to_owned();
            let result = if retried(&req) {
                let state = p["requestState"].as_str().unwrap_or("<none>");
                let keys: Vec<_> = p["inputResponses"]
                    .as_object()
                    .unwrap()
                    .keys()
                    .cloned()
                    .collect();
                json!({"resultType": "complete", "state": state, "keys": keys})
            } else {
                barrier.wait().await;
                irr(
                    json!({ format!("ask-{name}"): elicit(&name) }),
                    Some(&format!("state-{name}")),
                )
            };
            respond(&req, result)
        }
    });
    let (c, _) = client(&fake, elicit_handler());
    let (a, b) = tokio::join!(
        c.call_tool("alpha", json!({})),
        c.call_tool("beta", json!({}))
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.result["state"], "state-alpha");
    assert_eq!(a.result["keys"], json!(["ask-alpha"]));
    assert_eq!(b.result["state"], "state-beta");
    assert_eq!(b.result["keys"], json!(["ask-beta"]));
    // Across tasks of a multi-thread runtime too.
    let c2 = c.clone();
    let h = tokio::spawn(async move { c2.call_tool("gamma", json!({})).await });
    let d = c.call_tool("delta", json!({})).await.unwrap();
    let g = h.await.unwrap().unwrap();
    assert_eq!(g.result["state"], "state-gamma");
    assert_eq!(d.result["state"], "state-delta");
}

#[tokio::test]
async fn rounds_are_capped() {
    let fake = Fake::new(|_| irr(json!({"again": elicit("again")}), Some("s")));
    let asked = Arc::new(Mutex::new(0));
    let count = asked.clone();
    let h = Handlers::new().on_elicit(move |_ctx, _p| {
        *count.lock().unwrap() += 1;
        async { Ok(accept_ok()) }
    });
    let timer = RecordingTimer::default();
    let c = Client::builder(fake.clone())
        .with_handler(h)
        .with_timer(timer)
        .with_max_rounds(3)
        .build();
    let err = c.call_tool("t", json!({})).await.unwrap_err();
    assert_eq!(err, ClientError::Flow(FlowError::MaxRounds { rounds: 3 }));
    assert_eq!(fake.requests().len(), 3);
    // The last round's questions are not shown to anyone: no retry could carry the answers.
    assert_eq!(*asked.lock().unwrap(), 2);

    // The default cap is a default server's rounds plus the request that completes.
    let default_cap = mrtr::defaults::CLIENT_MAX_ROUNDS;
    assert_eq!(default_cap, mrtr::defaults::MAX_ROUNDS + 1);
    let (c, _) = client(&fake, elicit_handler());
    let before = fake.requests().len();
    assert_eq!(
        c.call_tool("t", json!({})).await.unwrap_err(),
        ClientError::Flow(FlowError::MaxRounds {
            rounds: default_cap
        })
    );
    assert_eq!(fake.requests().len() - before, default_cap as usize);
}

#[tokio::test]
async fn state_only_rounds_back_off() {
    // Five state-only rounds, a question, two state-only rounds, then complete.
    let fake = Fake::new(|req| {
        let n: usize = req["params"]["requestState"]
            .as_str()
            .map_or(0, |s| s.parse().unwrap());
        match n {
            0..=4 | 6 => irr(Value::Null, Some(&(n + 1).to_string())),
            5 => irr(json!({"q": elicit("q")}), Some("6")),
            7 => irr(Value::Null, Some("8")),
            _ => done("ok"),
        }
    });
    let (c, timer) = client(&fake, elicit_handler());
    let out = c.call_tool("t", json!({})).await.unwrap();
    assert_eq!(out.rounds, 9);
    let ms: Vec<u128> = timer.pauses().iter().map(Duration::as_millis).collect();
    // 50 ms doubling to 250 ms; reset after a round with questions.
    assert_eq!(ms, vec![50, 100, 200, 250, 250, 50, 100]);
    let reqs = fake.requests();
    for (i, r) in reqs.iter().enumerate().skip(1) {
        // Only the retry after the question carries inputResponses.
        assert_eq!(
            r["params"].get("inputResponses").is_some(),
            i == 6,
            "request {i}"
        );
        assert_eq!(r["params"]["requestState"], i.to_string());
    }
}

#[tokio::test]
async fn an_undeclared_kind_is_refused_without_retry() {
    let cases = [
        (
            json!({"s": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}}),
            InputKind::Sampling,
        ),
        (json!({"r": {"method": "roots/list"}}), InputKind::Roots),
        (
            json!({"u": {"method": "elicitation/create", "params": {"mode": "url", "message": "m", "url": "https://x.example/a"}}}),
            InputKind::ElicitUrl,
        ),
    ];
    for (asks, kind) in cases {
        let a = asks.clone();
        let fake = Fake::new(move |_| irr(a.clone(), Some("s")));
        let called = Arc::new(Mutex::new(false));
        let flag = called.clone();
        let h = Handlers::new().on_elicit(move |_c, _p| {
            *flag.lock().unwrap() = true;
            async { Ok(accept_ok()) }
        });
        let (c, _) = client(&fake, h);
        match c.call_tool("t", json!({})).await.unwrap_err() {
            ClientError::Flow(FlowError::UndeclaredInput { kind: k, .. }) => assert_eq!(k, kind),
            e => panic!("unexpected {e:?}"),
        }
        assert_eq!(fake.requests().len(), 1, "no retry");
        assert!(!*called.lock().unwrap(), "nobody was asked");
    }
    // Sampling with tools needs sampling.tools.
    let fake = Fake::new(|_| {
        irr(
            json!({"s": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5, "tools": []}}}),
            None,
        )
    });
    let h = Handlers::new().on_sampling(|_c, _p| async { Err(HandlerError::Declined) });
    let (c, _) = client(&fake, h);
    match c.call_tool("t", json!({})).await.unwrap_err() {
        ClientError::Flow(FlowError::UndeclaredInput { missing, .. }) => {
            assert_eq!(missing.to_value(), json!({"sampling": {"tools": {}}}));
        }
        e => panic!("unexpected {e:?}"),
    }
}

#[tokio::test]
async fn a_missing_result_type_is_complete() {
    let fake = Fake::new(|_| json!({"content": [{"type": "text", "text": "legacy"}]}));
    let (c, _) = client(&fake, elicit_handler());
    let out = c.call_tool("t", json!({})).await.unwrap();
    assert_eq!(out.text(), "legacy");
    assert_eq!(out.rounds, 1);
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn an_unknown_result_type_is_an_error() {
    let fake = Fake::new(|_| json!({"resultType": "task", "task": {"id": "1"}}));
    let (c, _) = client(&fake, elicit_handler());
    assert_eq!(
        c.call_tool("t", json!({})).await.unwrap_err(),
        ClientError::Flow(FlowError::UnknownResultType {
            result_type: "task".into()
        })
    );
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn a_jsonrpc_error_is_typed() {
    let fake = Fake::new_async(|req| async move {
        json!({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32021, "message": "Missing required client capability",
            "data": {"requiredCapabilities": {"elicitation": {}}}}})
    });
    let (c, _) = client(&fake, mrtr_client::NoInput);
    let err = c.call_tool("t", json!({})).await.unwrap_err();
    assert_eq!(
        err,
        ClientError::Flow(FlowError::JsonRpc {
            code: -32021,
            message: "Missing required client capability".into(),
            data: Some(json!({"requiredCapabilities": {"elicitation": {}}})),
        })
    );
    assert_eq!(err.jsonrpc_code(), Some(-32021));
}

#[tokio::test]
async fn malformed_responses_are_errors() {
    // (A response with another id is its own error: tests/client_hostile.rs.)
    let cases = [
        json!({"jsonrpc": "2.0", "id": 1}),
        json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "input_required"}}),
        json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": 7}}),
        json!([1]),
    ];
    for case in cases {
        let fake = Fake::new_async(move |_| {
            let c = case.clone();
            async move { c }
        });
        let (c, _) = client(&fake, elicit_handler());
        match c.call_tool("t", json!({})).await {
            Err(ClientError::Flow(FlowError::Malformed(_))) => {}
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test]
async fn a_tool_error_is_a_completion() {
    let fake = Fake::new(
        |_| json!({"resultType": "complete", "isError": true, "content": [{"type": "text", "text": "no"}]}),
    );
    let (c, _) = client(&fake, elicit_handler());
    let out = c.call_tool("t", json!({})).await.unwrap();
    assert!(out.is_tool_error());
}

#[tokio::test]
async fn all_inputs_of_a_round_are_fulfilled_concurrently() {
    let fake = Fake::new(|req| {
        if retried(req) {
            let r = &req["params"]["inputResponses"];
            json!({"resultType": "complete", "got": r})
        } else {
            irr(
                json!({"e": elicit("e"),
                       "s": {"method": "sampling/createMessage", "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}},
                       "r": {"method": "roots/list"}}),
                None,
            )
        }
    });
    // Elicitation and sampling each wait for the other: only concurrent fulfilment completes.
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let (b1, b2) = (barrier.clone(), barrier);
    let h = Handlers::new()
        .on_elicit(move |_c, _p| {
            let b = b1.clone();
            async move {
                b.wait().await;
                Ok(accept_ok())
            }
        })
        .on_sampling(move |_c, _p| {
            let b = b2.clone();
            async move {
                b.wait().await;
                Ok(CreateMessageResult {
                    role: "assistant".into(),
                    content: json!({"type": "text", "text": "hello"}),
                    model: "m".into(),
                    stop_reason: None,
                    meta: None,
                })
            }
        })
        .on_roots(|_c| async {
            Ok(ListRootsResult {
                roots: vec![Root {
                    uri: "file:///w".into(),
                    name: None,
                    meta: None,
                }],
            })
        });
    let (c, _) = client(&fake, h);
    let out = tokio::time::timeout(Duration::from_secs(10), c.call_tool("t", json!({})))
        .await
        .expect("no deadlock");
    let got = &out.unwrap().result["got"];
    assert_eq!(
        got["e"],
        json!({"action": "accept", "content": {"ok": true}})
    );
    assert_eq!(got["s"]["model"], "m");
    assert_eq!(got["r"], json!({"roots": [{"uri": "file:///w"}]}));
}

#[tokio::test]
async fn a_failed_handler_ends_the_flow_without_retry() {
    let fake = Fake::new(|_| irr(json!({"r": {"method": "roots/list"}}), Some("s")));
    let h = Handlers::new().on_roots(|_c| async { Err(HandlerError::Declined) });
    let (c, _) = client(&fake, h);
    match c.call_tool("t", json!({})).await.unwrap_err() {
        ClientError::Handler { key, kind, source } => {
            assert_eq!(
                (key.as_str(), kind, source),
                ("r", InputKind::Roots, HandlerError::Declined)
            );
        }
        e => panic!("{e:?}"),
    }
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn a_declined_elicitation_is_an_answer() {
    let fake = Fake::new(|req| {
        if retried(req) {
            json!({"resultType": "complete", "got": req["params"]["inputResponses"]})
        } else {
            irr(json!({"q": elicit("q")}), None)
        }
    });
    let h = Handlers::new().on_elicit(|_c, _p| async {
        Ok(ElicitResult {
            action: ElicitAction::Decline,
            content: None,
        })
    });
    let (c, _) = client(&fake, h);
    let out = c.call_tool("t", json!({})).await.unwrap();
    assert_eq!(out.result["got"], json!({"q": {"action": "decline"}}));
}

#[tokio::test]
async fn the_total_time_is_capped() {
    #[derive(Debug)]
    struct Instant;
    impl Timer for Instant {
        fn sleep(&self, _d: Duration) -> BoxFuture<'static, ()> {
            Box::pin(async {})
        }
    }
    let fake = Fake::new_async(|_| std::future::pending());
    let c = Client::builder(fake)
        .with_timer(Instant)
        .with_total_timeout(Some(Duration::from_secs(7)))
        .build();
    assert_eq!(
        c.call_tool("t", json!({})).await.unwrap_err(),
        ClientError::Timeout {
            after: Duration::from_secs(7)
        }
    );
}

#[tokio::test]
async fn a_pending_flow_is_saved_reloaded_and_finished() {
    // The server keeps no memory: all it needs is in the request (as with mrtr's sealed state).
    let fake = Fake::new(|req| {
        let p = &req["params"];
        match p.get("requestState").and_then(Value::as_str) {
            None => irr(json!({"first": elicit("first")}), Some("r1 \"state\"")),
            Some("r1 \"state\"") => {
                assert_eq!(p["inputResponses"]["first"]["action"], "accept");
                irr(json!({"second": elicit("second")}), Some("r2"))
            }
            Some("r2") => {
                json!({"resultType": "complete", "args": p["arguments"], "answer": p["inputResponses"]["second"]})
            }
            Some(other) => panic!("unexpected state {other}"),
        }
    });
    let (c, _) = client(&fake, elicit_handler());
    let Step::NeedsInput(pending) = c
        .start(CarrierCall::tool("deploy", json!({"env": "prod"})))
        .await
        .unwrap()
    else {
        panic!("expected input");
    };
    assert_eq!(pending.round, 1);
    let saved = serde_json::to_string(&pending).unwrap();
    let v: Value = serde_json::from_str(&saved).unwrap();
    assert_eq!(v["method"], "tools/call");
    assert_eq!(
        v["params"],
        json!({"name": "deploy", "arguments": {"env": "prod"}})
    );
    assert_eq!(v["requestState"], "r1 \"state\"");
    assert_eq!(v["inputRequests"]["first"], elicit("first"));
    drop(c);

    // "Another process": a new client and transport, the flow reloaded from JSON.
    let (c2, _) = client(&fake, elicit_handler());
    let pending: PendingFlow = serde_json::from_str(&saved).unwrap();
    let mut answers = InputResponses::new();
    answers.insert("first".into(), InputResponse::Elicit(accept_ok()));
    let Step::NeedsInput(pending) = c2.resume(pending, answers).await.unwrap() else {
        panic!("expected input")
    };
    assert_eq!(pending.round, 2);
    let pending: PendingFlow =
        serde_json::from_str(&serde_json::to_string(&pending).unwrap()).unwrap();
    let answers = c2.fulfil(&pending).await.unwrap();
    let Step::Complete(out) = c2.resume(pending, answers).await.unwrap() else {
        panic!("expected completion")
    };
    assert_eq!(out.rounds, 3);
    assert_eq!(out.result["args"], json!({"env": "prod"}));
    assert_eq!(
        out.result["answer"],
        json!({"action": "accept", "content": {"ok": true}})
    );
}

#[tokio::test]
async fn a_pending_flow_without_state_has_no_state_key() {
    let fake = Fake::new(|req| {
        if retried(req) {
            done("ok")
        } else {
            irr(json!({"q": elicit("q")}), None)
        }
    });
    let (c, _) = client(&fake, elicit_handler());
    let Step::NeedsInput(pending) = c.start(CarrierCall::resource("file:///x")).await.unwrap()
    else {
        panic!()
    };
    let v = serde_json::to_value(&pending).unwrap();
    assert!(v.get("requestState").is_none());
    let mut answers = InputResponses::new();
    answers.insert("q".into(), InputResponse::Elicit(accept_ok()));
    let out = c.resume_to_completion(pending, answers).await.unwrap();
    assert_eq!(out.text(), "ok");
    assert!(fake.requests()[1]["params"].get("requestState").is_none());
}

#[tokio::test]
async fn resume_refuses_answers_that_do_not_fit() {
    let fake = Fake::new(|_| irr(json!({"q": elicit("q")}), Some("s")));
    let (c, _) = client(&fake, elicit_handler());
    let Step::NeedsInput(pending) = c.start(CarrierCall::tool("t", json!({}))).await.unwrap()
    else {
        panic!()
    };
    let roots = InputResponse::ListRoots(ListRootsResult { roots: vec![] });
    let bad: [Vec<(&str, InputResponse)>; 3] = [
        vec![],
        vec![("q", roots.clone())],
        vec![("q", InputResponse::Elicit(accept_ok())), ("extra", roots)],
    ];
    for answers in bad {
        let answers: InputResponses = answers
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        match c.resume(pending.clone(), answers).await.unwrap_err() {
            ClientError::Flow(FlowError::AnswerMismatch { .. }) => {}
            e => panic!("{e:?}"),
        }
    }
    assert_eq!(fake.requests().len(), 1, "nothing sent");
}

#[tokio::test]
async fn the_handler_sees_where_a_question_comes_from() {
    let fake = Fake::new(|req| {
        if retried(req) {
            done("ok")
        } else {
            irr(json!({"k1": elicit("m")}), None)
        }
    });
    let seen = Arc::new(Mutex::new(None));
    let s = seen.clone();
    let h = Handlers::new().on_elicit(move |ctx, p| {
        let ElicitParams::Form(f) = p else { panic!() };
        *s.lock().unwrap() = Some((
            ctx.key,
            ctx.method.as_str(),
            ctx.target,
            ctx.round,
            f.message,
        ));
        async { Ok(accept_ok()) }
    });
    let (c, _) = client(&fake, h);
    c.get_prompt("greet", json!({"who": "x"})).await.unwrap();
    assert_eq!(
        seen.lock().unwrap().clone().unwrap(),
        ("k1".into(), "prompts/get", "greet".into(), 1, "m".into())
    );
}
