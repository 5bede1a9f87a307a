//! The client driver against scripted hostile servers (an in-memory `Transport`,
//! no sockets): every cap ends the flow with a typed error before the round at
//! fault is answered or sent, a response for another id is refused, and no
//! request can hang a flow past its time caps.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mrtr::defaults;
use mrtr::wire::jsonrpc::RequestId;
use mrtr::wire::{
    CreateMessageResult, ElicitAction, ElicitResult, InputResponse, InputResponses, JsonObject,
};
use mrtr_client::{
    BoxFuture, Cap, CarrierCall, Client, ClientError, FlowError, Handlers, PendingFlow, Step,
    Timer, Transport, TransportError,
};
use serde_json::{Value, json};

// ---------------------------------------------------------------- the hostile server

type Script = Arc<dyn Fn(&Value) -> Option<Value> + Send + Sync>;

/// Records every request and answers with `script(request)`: `Some(response)`
/// at once, `None` never (the future stays pending).
#[derive(Clone)]
struct Hostile {
    log: Arc<Mutex<Vec<Value>>>,
    script: Script,
}

impl std::fmt::Debug for Hostile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Hostile")
    }
}

impl Hostile {
    /// Answers each request with `result(request)` as the JSON-RPC result, under the request's id.
    fn results(result: impl Fn(&Value) -> Value + Send + Sync + 'static) -> Self {
        Self::responses(move |req| {
            Some(json!({"jsonrpc": "2.0", "id": req["id"], "result": result(req)}))
        })
    }

    fn responses(script: impl Fn(&Value) -> Option<Value> + Send + Sync + 'static) -> Self {
        Self {
            log: Arc::default(),
            script: Arc::new(script),
        }
    }

    fn sent(&self) -> Vec<Value> {
        self.log.lock().unwrap().clone()
    }
}

impl Transport for Hostile {
    fn send(&self, request: Value) -> BoxFuture<'_, Result<Value, TransportError>> {
        self.log.lock().unwrap().push(request.clone());
        match (self.script)(&request) {
            Some(response) => Box::pin(async move { Ok(response) }),
            None => Box::pin(std::future::pending()),
        }
    }
}

/// tokio's clock: the time caps are real here, but tiny.
#[derive(Debug)]
struct Tokio;

impl Timer for Tokio {
    fn sleep(&self, d: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(d))
    }
}

fn sampling_ask() -> Value {
    json!({"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "say yes"}}], "maxTokens": 5}})
}

fn form_ask() -> Value {
    json!({"method": "elicitation/create", "params": {"message": "Note?",
        "requestedSchema": {"type": "object", "properties": {"note": {"type": "string"}}}}})
}

fn input_required(asks: Value) -> Value {
    json!({"resultType": "input_required", "requestState": "s", "inputRequests": asks})
}

/// A sampling handler that counts its calls.
fn counting_model(calls: &Arc<AtomicUsize>) -> Handlers {
    let calls = calls.clone();
    Handlers::new().on_sampling(move |_ctx, _p| {
        calls.fetch_add(1, Ordering::SeqCst);
        async {
            Ok(CreateMessageResult {
                role: "assistant".into(),
                content: json!({"type": "text", "text": "yes"}),
                model: "m".into(),
                stop_reason: None,
                meta: None,
            })
        }
    })
}

/// An elicitation handler that accepts with a note of `len` characters.
fn noting(len: usize) -> Handlers {
    Handlers::new().on_elicit(move |_ctx, _p| async move {
        Ok(ElicitResult {
            action: ElicitAction::Accept,
            content: json!({"note": "n".repeat(len)}).as_object().cloned(),
        })
    })
}

fn client(server: &Hostile, handler: Handlers) -> mrtr_client::ClientBuilder {
    Client::builder(server.clone())
        .with_handler(handler)
        .with_timer(Tokio)
}

fn cap(err: ClientError) -> (Cap, u64) {
    match err {
        ClientError::Flow(FlowError::CapExceeded { cap, limit }) => (cap, limit),
        other => panic!("expected CapExceeded, got {other:?}"),
    }
}

// ---------------------------------------------------------------- questions per round

#[tokio::test]
async fn twenty_thousand_questions_in_a_round_are_refused_unanswered() {
    let server = Hostile::results(|_| {
        let asks: JsonObject = (0..20_000)
            .map(|i| (format!("q{i}"), sampling_ask()))
            .collect();
        input_required(Value::Object(asks))
    });
    let calls = Arc::new(AtomicUsize::new(0));
    let c = client(&server, counting_model(&calls)).build();
    let err = c.call_tool("t", json!({})).await.unwrap_err();
    assert_eq!(
        cap(err.clone()),
        (
            Cap::QuestionsPerRound,
            defaults::CLIENT_MAX_QUESTIONS_PER_ROUND as u64
        )
    );
    assert!(err.to_string().contains("questions per round"), "{err}");
    assert_eq!(calls.load(Ordering::SeqCst), 0, "no handler ran");
    assert_eq!(server.sent().len(), 1, "no retry");

    // The manual path refuses the round before showing it, and so does `fulfil`.
    let c = client(&server, counting_model(&calls))
        .with_max_questions_per_round(3)
        .build();
    let err = c
        .start(CarrierCall::tool("t", json!({})))
        .await
        .unwrap_err();
    assert_eq!(cap(err), (Cap::QuestionsPerRound, 3));
    let pending: PendingFlow = serde_json::from_value(json!({
        "method": "tools/call", "params": {"name": "t"}, "round": 1,
        "inputRequests": {"a": sampling_ask(), "b": sampling_ask(), "c": sampling_ask(), "d": sampling_ask()}
    }))
    .unwrap();
    assert_eq!(
        cap(c.fulfil(&pending).await.unwrap_err()),
        (Cap::QuestionsPerRound, 3)
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_round_at_the_cap_is_answered() {
    let server = Hostile::results(|req| {
        if req["params"].get("inputResponses").is_some() {
            json!({"resultType": "complete", "n": req["params"]["inputResponses"].as_object().unwrap().len()})
        } else {
            let asks: JsonObject = (0..4).map(|i| (format!("q{i}"), sampling_ask())).collect();
            input_required(Value::Object(asks))
        }
    });
    let calls = Arc::new(AtomicUsize::new(0));
    let c = client(&server, counting_model(&calls))
        .with_max_questions_per_round(4)
        .build();
    let done = c.call_tool("t", json!({})).await.unwrap();
    assert_eq!(done.result["n"], 4);
    assert_eq!(calls.load(Ordering::SeqCst), 4);
}

// ---------------------------------------------------------------- questions answered at once

#[tokio::test]
async fn questions_are_answered_a_few_at_a_time_in_the_servers_order() {
    let server = Hostile::results(|req| {
        if req["params"].get("inputResponses").is_some() {
            let keys: Vec<&String> = req["params"]["inputResponses"]
                .as_object()
                .unwrap()
                .keys()
                .collect();
            json!({"resultType": "complete", "keys": keys})
        } else {
            let asks: JsonObject = (0..16).map(|i| (format!("q{i:02}"), form_ask())).collect();
            input_required(Value::Object(asks))
        }
    });
    for (limit, expected) in [
        (None, defaults::CLIENT_MAX_CONCURRENT_ANSWERS),
        (Some(3), 3),
    ] {
        let in_flight = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let (f, m) = (in_flight.clone(), most.clone());
        let h = Handlers::new().on_elicit(move |_ctx, _p| {
            let (f, m) = (f.clone(), m.clone());
            async move {
                let now = f.fetch_add(1, Ordering::SeqCst) + 1;
                m.fetch_max(now, Ordering::SeqCst);
                // Stay in flight across a few polls, so the others get to start.
                for _ in 0..3 {
                    tokio::task::yield_now().await;
                }
                f.fetch_sub(1, Ordering::SeqCst);
                Ok(ElicitResult {
                    action: ElicitAction::Decline,
                    content: None,
                })
            }
        });
        let mut b = client(&server, h);
        if let Some(n) = limit {
            b = b.with_max_concurrent_answers(n);
        }
        let done = b.build().call_tool("t", json!({})).await.unwrap();
        assert_eq!(most.load(Ordering::SeqCst), expected);
        let order: Vec<String> = (0..16).map(|i| format!("q{i:02}")).collect();
        assert_eq!(done.result["keys"], json!(order));
    }
}

// ---------------------------------------------------------------- sampling per flow

#[tokio::test]
async fn sampling_is_capped_over_the_whole_flow() {
    // Two model calls asked in every round, forever.
    let server =
        Hostile::results(|_| input_required(json!({"a": sampling_ask(), "b": sampling_ask()})));
    let calls = Arc::new(AtomicUsize::new(0));
    let c = client(&server, counting_model(&calls)).build();
    let err = c.call_tool("t", json!({})).await.unwrap_err();
    let limit = defaults::CLIENT_MAX_SAMPLING_PER_FLOW;
    assert_eq!(cap(err), (Cap::SamplingPerFlow, u64::from(limit)));
    assert_eq!(calls.load(Ordering::SeqCst), limit as usize);
    // Rounds 1..=8 were answered; the 9th asked the 17th and 18th: refused, not retried.
    assert_eq!(server.sent().len(), limit as usize / 2 + 1);

    // A lower cap, and none at all.
    calls.store(0, Ordering::SeqCst);
    let c = client(&server, counting_model(&calls))
        .with_max_sampling_per_flow(3)
        .build();
    assert_eq!(
        cap(c.call_tool("t", json!({})).await.unwrap_err()),
        (Cap::SamplingPerFlow, 3)
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "the round asking #3 and #4 is refused whole"
    );
    calls.store(0, Ordering::SeqCst);
    let c = client(&server, counting_model(&calls))
        .with_max_sampling_per_flow(0)
        .build();
    assert_eq!(
        cap(c.call_tool("t", json!({})).await.unwrap_err()),
        (Cap::SamplingPerFlow, 0)
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_pending_flow_carries_its_sampling_count() {
    let server = Hostile::results(|_| input_required(json!({"a": sampling_ask()})));
    let calls = Arc::new(AtomicUsize::new(0));
    let c = client(&server, counting_model(&calls))
        .with_max_sampling_per_flow(2)
        .build();
    let Step::NeedsInput(p) = c.start(CarrierCall::tool("t", json!({}))).await.unwrap() else {
        panic!("expected input")
    };
    assert_eq!(p.sampling_asked, 1);
    // Saved and reloaded, as by another process: the count goes with it.
    let saved = serde_json::to_value(&p).unwrap();
    assert_eq!(saved["samplingAsked"], 1);
    let p: PendingFlow = serde_json::from_value(saved).unwrap();
    let answers = c.fulfil(&p).await.unwrap();
    let Step::NeedsInput(p) = c.resume(p, answers).await.unwrap() else {
        panic!("expected input")
    };
    assert_eq!(p.sampling_asked, 2);
    assert!(p.bytes_answered > 0);
    let answers = c.fulfil(&p).await.unwrap();
    assert_eq!(
        cap(c.resume(p, answers).await.unwrap_err()),
        (Cap::SamplingPerFlow, 2)
    );
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

// ---------------------------------------------------------------- bytes answered per flow

#[tokio::test]
async fn answers_over_the_byte_cap_are_not_sent() {
    let server = Hostile::results(|_| input_required(json!({"q": form_ask()})));
    // Each answer is a little over 1000 bytes of JSON: two fit under 2500, three do not.
    let c = client(&server, noting(1000))
        .with_max_answer_bytes(2500)
        .build();
    assert_eq!(
        cap(c.call_tool("t", json!({})).await.unwrap_err()),
        (Cap::AnswerBytes, 2500)
    );
    let sent = server.sent();
    assert_eq!(sent.len(), 3, "round 1, then two answered retries");
    assert!(sent.iter().all(|r| {
        r["params"]
            .get("inputResponses")
            .is_none_or(|a| a.to_string().len() < 1100)
    }));

    // The default: one answer of 2 MiB is never sent.
    let server = Hostile::results(|_| input_required(json!({"q": form_ask()})));
    let c = client(&server, noting(2 << 20)).build();
    assert_eq!(
        cap(c.call_tool("t", json!({})).await.unwrap_err()),
        (Cap::AnswerBytes, defaults::CLIENT_MAX_ANSWER_BYTES)
    );
    assert_eq!(server.sent().len(), 1);

    // Answers given to `resume` count too.
    let c = client(&server, noting(10))
        .with_max_answer_bytes(100)
        .build();
    let Step::NeedsInput(p) = c.start(CarrierCall::tool("t", json!({}))).await.unwrap() else {
        panic!("expected input")
    };
    let mut big = InputResponses::new();
    big.insert(
        "q".into(),
        InputResponse::Elicit(ElicitResult {
            action: ElicitAction::Accept,
            content: json!({"note": "x".repeat(200)}).as_object().cloned(),
        }),
    );
    let before = server.sent().len();
    assert_eq!(
        cap(c.resume(p, big).await.unwrap_err()),
        (Cap::AnswerBytes, 100)
    );
    assert_eq!(server.sent().len(), before, "nothing sent");
}

// ---------------------------------------------------------------- the echoed state

/// A `requestState` of `len` bytes that must never show up in an error.
fn state_of_len(len: usize) -> String {
    "SEALED".repeat(len / 6 + 1)[..len].to_owned()
}

#[tokio::test]
async fn a_state_over_the_cap_is_refused_before_it_is_echoed() {
    // 15 MiB of state on every round, with a question, or state only.
    let huge = state_of_len(15 << 20);
    for asks in [Some(json!({"q": form_ask()})), None] {
        let (state, asks2) = (huge.clone(), asks.clone());
        let server = Hostile::results(move |_| {
            let mut r = json!({"resultType": "input_required", "requestState": state});
            if let Some(a) = &asks2 {
                r["inputRequests"] = a.clone();
            }
            r
        });
        let answered = Arc::new(AtomicUsize::new(0));
        let a = answered.clone();
        let h = Handlers::new().on_elicit(move |_ctx, _p| {
            a.fetch_add(1, Ordering::SeqCst);
            async {
                Ok(ElicitResult {
                    action: ElicitAction::Decline,
                    content: None,
                })
            }
        });
        let c = client(&server, h).build();
        let err = c.call_tool("t", json!({})).await.unwrap_err();
        let text = err.to_string();
        assert_eq!(
            cap(err),
            (Cap::StateBytes, defaults::CLIENT_MAX_STATE_BYTES as u64)
        );
        assert!(
            text.contains("requestState bytes echoed (limit 65536)"),
            "{text}"
        );
        assert!(!text.contains("SEALED"), "the state is never shown");
        let sent = server.sent();
        assert_eq!(sent.len(), 1, "{asks:?}: never echoed");
        assert!(sent[0]["params"].get("requestState").is_none());
        assert_eq!(answered.load(Ordering::SeqCst), 0, "no handler ran");

        // Nor is a manual caller shown the round.
        let err = c
            .start(CarrierCall::tool("t", json!({})))
            .await
            .unwrap_err();
        assert_eq!(cap(err).0, Cap::StateBytes);
    }
}

#[tokio::test]
async fn the_state_cap_is_a_library_option() {
    // One question with a state of 1000 bytes, then complete once it is echoed.
    let state = state_of_len(1000);
    let echoed = state.clone();
    let server = Hostile::results(move |req| match req["params"].get("requestState") {
        Some(s) if *s == json!(echoed) => json!({"resultType": "complete"}),
        _ => json!({"resultType": "input_required", "requestState": echoed,
            "inputRequests": {"q": form_ask()}}),
    });
    let c = client(&server, noting(1)).with_max_state_bytes(999).build();
    assert_eq!(
        cap(c.call_tool("t", json!({})).await.unwrap_err()),
        (Cap::StateBytes, 999)
    );
    assert_eq!(server.sent().len(), 1);
    let c = client(&server, noting(1))
        .with_max_state_bytes(1000)
        .build();
    let done = c.call_tool("t", json!({})).await.unwrap();
    assert_eq!(done.rounds, 2);
    assert_eq!(server.sent()[2]["params"]["requestState"], json!(state));
}

// ---------------------------------------------------------------- bytes uploaded per flow

/// The size of a request as the cap counts it: serialized JSON.
fn size(request: &Value) -> u64 {
    serde_json::to_vec(request).unwrap().len() as u64
}

#[tokio::test]
async fn the_upload_cap_ends_a_flow_whose_state_keeps_growing() {
    // Each round's state is 10 000 bytes longer than the last, all under the state cap.
    let server = Hostile::results(|req| {
        let len = req["params"]["requestState"].as_str().map_or(0, str::len) + 10_000;
        json!({"resultType": "input_required", "requestState": state_of_len(len),
            "inputRequests": {"q": form_ask()}})
    });
    let c = client(&server, noting(1))
        .with_max_upload_bytes(100_000)
        .build();
    let err = c.call_tool("t", json!({})).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("bytes uploaded per flow (limit 100000)"),
        "{err}"
    );
    assert_eq!(cap(err), (Cap::UploadBytes, 100_000));
    let sent = server.sent();
    // 0 + 10 000 + 20 000 + 30 000 bytes of state, and the requests around them; the
    // fifth request (40 000 more) would go over.
    assert_eq!(sent.len(), 4, "the request over the cap is not sent");
    let total: u64 = sent.iter().map(size).sum();
    assert!(total <= 100_000 && total + 40_000 > 100_000, "{total}");

    // A pending flow carries the count, and `resume` counts on from it.
    let c = client(&server, noting(1))
        .with_max_upload_bytes(25_000)
        .build();
    let Step::NeedsInput(p) = c.start(CarrierCall::tool("t", json!({}))).await.unwrap() else {
        panic!("expected input")
    };
    let first = size(&server.sent().last().unwrap().clone());
    assert_eq!(p.bytes_uploaded, first);
    let saved = serde_json::to_value(&p).unwrap();
    assert_eq!(saved["bytesUploaded"], first);
    let p: PendingFlow = serde_json::from_value(saved).unwrap();
    let answers = c.fulfil(&p).await.unwrap();
    let Step::NeedsInput(p) = c.resume(p, answers).await.unwrap() else {
        panic!("expected input")
    };
    assert!(p.bytes_uploaded > 10_000 + first, "{}", p.bytes_uploaded);
    let before = server.sent().len();
    let answers = c.fulfil(&p).await.unwrap();
    assert_eq!(
        cap(c.resume(p, answers).await.unwrap_err()),
        (Cap::UploadBytes, 25_000)
    );
    assert_eq!(server.sent().len(), before, "nothing sent");
}

#[tokio::test]
async fn the_default_upload_cap_counts_the_callers_arguments_too() {
    // A state-only server, forever; each request carries 1 MiB of arguments.
    let server = Hostile::results(|_| json!({"resultType": "input_required", "requestState": "s"}));
    let c = client(&server, Handlers::new()).build();
    let args = json!({"blob": "b".repeat(1 << 20)});
    let err = c.call_tool("t", args).await.unwrap_err();
    assert_eq!(
        cap(err),
        (Cap::UploadBytes, defaults::CLIENT_MAX_UPLOAD_BYTES)
    );
    // Four requests fit under 4.25 MiB; the fifth is not sent.
    assert_eq!(server.sent().len(), 4);
}

// ---------------------------------------------------------------- ids

#[tokio::test]
async fn a_response_for_another_id_is_refused() {
    let wrong_ids = [json!(1000), json!("1"), json!(null), json!({"id": 1})];
    for wrong in wrong_ids {
        let w = wrong.clone();
        let server = Hostile::responses(move |_| {
            Some(json!({"jsonrpc": "2.0", "id": w, "result": {"resultType": "complete"}}))
        });
        let c = client(&server, Handlers::new()).build();
        match c.call_tool("t", json!({})).await.unwrap_err() {
            ClientError::Flow(FlowError::IdMismatch { expected, received }) => {
                assert_eq!(expected, RequestId::from(1i64));
                assert_eq!(received, wrong);
            }
            other => panic!("{wrong}: {other:?}"),
        }
        assert!(matches!(
            c.request("tools/list", JsonObject::new()).await,
            Err(ClientError::Flow(FlowError::IdMismatch { .. }))
        ));
    }
    // An error for another request is not this request's error either.
    let server = Hostile::responses(|req| {
        let other = req["id"].as_i64().unwrap() + 1;
        Some(json!({"jsonrpc": "2.0", "id": other, "error": {"code": -32602, "message": "no"}}))
    });
    let c = client(&server, Handlers::new()).build();
    assert!(matches!(
        c.call_tool("t", json!({})).await,
        Err(ClientError::Flow(FlowError::IdMismatch { .. }))
    ));
    // An error with a null id is the server saying it could not read the id (JSON-RPC 2.0 §5).
    let server = Hostile::responses(|_| {
        Some(json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "parse"}}))
    });
    let c = client(&server, Handlers::new()).build();
    assert_eq!(
        c.call_tool("t", json!({}))
            .await
            .unwrap_err()
            .jsonrpc_code(),
        Some(-32700)
    );
}

// ---------------------------------------------------------------- time

#[tokio::test]
async fn a_request_that_is_never_answered_times_out() {
    // Round 1 asks; the retry is never answered.
    let server = Hostile::responses(|req| {
        req["params"]
            .get("inputResponses")
            .is_none()
            .then(|| json!({"jsonrpc": "2.0", "id": req["id"], "result": input_required(json!({"q": form_ask()}))}))
    });
    let c = client(&server, noting(1))
        .with_request_timeout(Some(Duration::from_millis(50)))
        .build();
    let err = tokio::time::timeout(Duration::from_secs(20), c.call_tool("t", json!({})))
        .await
        .expect("the request cap ends the flow");
    assert_eq!(
        err.unwrap_err(),
        ClientError::RequestTimeout {
            after: Duration::from_millis(50)
        }
    );
    assert_eq!(server.sent().len(), 2);
    // The same for a plain request.
    let server = Hostile::responses(|_| None);
    let c = client(&server, Handlers::new())
        .with_request_timeout(Some(Duration::from_millis(50)))
        .build();
    let err = tokio::time::timeout(
        Duration::from_secs(20),
        c.request("tools/list", JsonObject::new()),
    )
    .await
    .expect("the request cap ends it");
    assert!(matches!(err, Err(ClientError::RequestTimeout { .. })));
}

#[tokio::test]
async fn the_flow_budget_covers_every_request() {
    // No per-request cap: only the flow's budget can end these.
    let server = Hostile::responses(|_| None);
    let c = client(&server, Handlers::new())
        .with_request_timeout(None)
        .with_total_timeout(Some(Duration::from_millis(50)))
        .build();
    let budget = ClientError::Timeout {
        after: Duration::from_millis(50),
    };
    let err = tokio::time::timeout(
        Duration::from_secs(20),
        c.request("tools/list", JsonObject::new()),
    )
    .await
    .expect("the flow budget ends a plain request");
    assert_eq!(err.unwrap_err(), budget);
    let err = tokio::time::timeout(Duration::from_secs(20), c.call_tool("t", json!({})))
        .await
        .expect("and a flow");
    assert_eq!(err.unwrap_err(), budget);
}

#[test]
fn the_default_request_timeout_is_within_the_flow_budget() {
    assert_eq!(defaults::CLIENT_REQUEST_TIMEOUT, Duration::from_secs(30));
    assert!(defaults::CLIENT_REQUEST_TIMEOUT < defaults::CLIENT_TOTAL_TIMEOUT);
}
