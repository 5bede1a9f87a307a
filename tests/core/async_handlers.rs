//! Async handlers through the client driver and the in-process transport, on a
//! current-thread runtime: a handler that awaits never holds up another request
//! (shown by the order of events, not by timing), and a panicking or an overdue
//! handler gets the documented error on each carrier.

use mrtr::{PromptDefinition, ResourceDefinition};
use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use mrtr::Timestamp;
use mrtr::engine::{Confirmation, Engine, Form};
use mrtr::principal::Principal;
use mrtr::seal::Keyring;
use mrtr::service::Service;
use mrtr::wire::{ElicitAction, ElicitResult};
use mrtr::{PromptResult, ResourceResult, ToolResult};
use mrtr_client::{Client, ClientError, FlowError, Handlers, InProcess};
use serde_json::{Value, json};
use tokio::sync::{Notify, oneshot};

const T0: Timestamp = Timestamp::from_unix_secs(1_800_000_000);

fn empty_service() -> Service {
    Service::new(Engine::new(Keyring::ephemeral(), "async-tests"), "t", "0")
}

fn schema() -> Value {
    json!({"type": "object"})
}

/// A client that accepts every form with `content`. No timer: nothing here backs off.
fn client(transport: InProcess, content: Value) -> Client {
    let handlers = Handlers::new().on_elicit(move |_ctx, _form| {
        let content = content.as_object().cloned();
        async move {
            Ok(ElicitResult {
                action: ElicitAction::Accept,
                content,
            })
        }
    });
    Client::builder(transport)
        .with_handler(handlers)
        .no_timer()
        .build()
}

/// An ordered record of what happened, shared by the handlers and the test.
#[derive(Clone, Default)]
struct Events(Arc<Mutex<Vec<String>>>);

impl Events {
    fn push(&self, e: impl Into<String>) {
        self.0.lock().unwrap().push(e.into());
    }
    fn all(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_parked_async_handler_does_not_hold_up_another_flow() {
    let events = Events::default();
    // A's handler parks on `gate` and tells the test through `parked` that it has.
    let (parked_tx, parked_rx) = oneshot::channel::<()>();
    let (gate_tx, gate_rx) = oneshot::channel::<()>();
    let parked_tx = Arc::new(Mutex::new(Some(parked_tx)));
    let gate_rx = Arc::new(Mutex::new(Some(gate_rx)));
    let (ev_a, ev_b) = (events.clone(), events.clone());
    let service = empty_service()
        .tool("slow", "waits for the gate", schema(), move |_round| {
            let (ev, parked, gate) = (ev_a.clone(), parked_tx.clone(), gate_rx.clone());
            async move {
                let gate = gate.lock().unwrap().take().expect("A runs one round");
                ev.push("A parked");
                let _ = parked.lock().unwrap().take().unwrap().send(());
                gate.await.expect("the test releases the gate");
                ev.push("A resumed");
                Ok(ToolResult::text("A done"))
            }
        })
        .tool("quick", "asks, then answers", schema(), move |round| {
            let ev = ev_b.clone();
            async move {
                ev.push(format!("B round {}", round.number()));
                tokio::task::yield_now().await;
                let ok = round.confirm("ok", "Go on?")?;
                assert_eq!(ok, Confirmation::Accepted);
                Ok(ToolResult::text("B done"))
            }
        });
    let transport = InProcess::new(service, Principal::anonymous()).fixed_clock(T0);
    let client = client(transport, json!({"confirm": true}));

    // Flow A on its own task, on this same (only) thread.
    let a = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("slow", json!({})).await }
    });
    parked_rx.await.expect("A reaches its await");

    // Flow B runs both its rounds to completion while A is parked.
    let b = client.call_tool("quick", json!({})).await.unwrap();
    assert_eq!(b.text(), "B done");
    assert_eq!(b.rounds, 2);
    events.push("B done");
    assert!(!a.is_finished(), "A cannot finish before the gate opens");

    // Only now is A released, and it completes.
    gate_tx.send(()).unwrap();
    let a = a.await.unwrap().unwrap();
    assert_eq!(a.text(), "A done");
    assert_eq!(
        events.all(),
        ["A parked", "B round 1", "B round 2", "B done", "A resumed"]
    );
}

/// A service whose handlers on all three carriers panic: `before_await` ones at
/// once, the others after an `.await`.
fn panicking(before_await: bool) -> Service {
    async fn maybe_yield(before_await: bool) {
        if !before_await {
            tokio::task::yield_now().await;
        }
    }
    empty_service()
        .tool("boom", "panics", schema(), move |_| async move {
            maybe_yield(before_await).await;
            panic!("tool handler bug");
            #[allow(unreachable_code)] // the type of the handler's result
            Ok(ToolResult::text("never"))
        })
        .prompt(
            PromptDefinition::new("boom").description("panics"),
            move |_| async move {
                maybe_yield(before_await).await;
                panic!("prompt handler bug");
                #[allow(unreachable_code)] // the type of the handler's result
                Ok(PromptResult::new().description("never").user_text("never"))
            },
        )
        .resource(
            ResourceDefinition::new("mrtr://boom", "boom")
                .description("panics")
                .mime_type("text/plain"),
            move |_| async move {
                maybe_yield(before_await).await;
                panic!("resource handler bug");
                #[allow(unreachable_code)] // the type of the handler's result
                Ok(ResourceResult::text("mrtr://boom", "text/plain", "never"))
            },
        )
        .tool("fine", "works", schema(), |_| Ok(ToolResult::text("fine")))
}

#[track_caller]
fn assert_internal_error(r: Result<mrtr_client::Completion, ClientError>) {
    match r {
        Err(ClientError::Flow(FlowError::JsonRpc { code, message, .. })) => {
            assert_eq!(code, -32603);
            // The panic message stays in the process.
            assert!(!message.contains("bug"), "{message}");
        }
        other => panic!("expected -32603, got {other:?}"),
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_panicking_async_handler_is_32603_on_every_carrier() {
    for before_await in [true, false] {
        let transport = InProcess::new(panicking(before_await), Principal::anonymous());
        let client = client(transport, json!({}));
        // tools/call too: a panic is a server fault, not a tool failure the model could act on.
        assert_internal_error(client.call_tool("boom", json!({})).await);
        assert_internal_error(client.get_prompt("boom", json!({})).await);
        assert_internal_error(client.read_resource("mrtr://boom").await);
        // The service is unharmed.
        let ok = client.call_tool("fine", json!({})).await.unwrap();
        assert_eq!(ok.text(), "fine");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_handler_that_panics_before_returning_its_future_is_32603() {
    // The closure itself panics while building its future: still caught.
    let service = empty_service()
        .tool("early", "panics early", schema(), |_round| {
            if std::hint::black_box(true) {
                panic!("closure bug");
            }
            async move { Ok(mrtr::ToolResult::text("unreachable")) }
        })
        .tool("fine", "fine", schema(), |_| {
            Ok(mrtr::ToolResult::text("fine"))
        });
    let client = client(InProcess::new(service, Principal::anonymous()), json!({}));
    assert_internal_error(client.call_tool("early", json!({})).await);
    assert_eq!(
        client.call_tool("fine", json!({})).await.unwrap().text(),
        "fine"
    );
}

/// What the overdue test's handlers share: whether to stall, the deadline the
/// stall fires, and what ran.
#[derive(Clone, Default)]
struct Overdue {
    stall: Arc<std::sync::atomic::AtomicBool>,
    deadline: Arc<Notify>,
    charges: Arc<AtomicU32>,
    rounds: Arc<Mutex<Vec<u32>>>,
}

impl Overdue {
    /// Stalls (when told to) after firing the deadline: the handler is then
    /// waiting when its deadline passes.
    fn stall_point(&self) -> impl Future<Output = ()> + Send + 'static {
        let stalled = self.stall.load(Ordering::SeqCst);
        let deadline = Arc::clone(&self.deadline);
        async move {
            if stalled {
                deadline.notify_one();
                std::future::pending::<()>().await;
            }
        }
    }

    fn service(&self) -> Service {
        let (t, p) = (self.clone(), self.clone());
        empty_service()
            .tool(
                "charge",
                "charges once, then confirms",
                schema(),
                move |round| {
                    let o = t.clone();
                    async move {
                        o.rounds.lock().unwrap().push(round.number());
                        let n = round
                            .once_async("charge", || async {
                                Ok(o.charges.fetch_add(1, Ordering::SeqCst) + 1)
                            })
                            .await?;
                        o.stall_point().await;
                        if round.confirm("keep", format!("Keep charge #{n}?"))?
                            != Confirmation::Accepted
                        {
                            return Ok(ToolResult::text("Dropped."));
                        }
                        Ok(ToolResult::text(format!("Kept charge #{n}.")))
                    }
                },
            )
            .prompt(
                PromptDefinition::new("slow").description("stalls"),
                move |_| {
                    let o = p.clone();
                    async move {
                        o.stall_point().await;
                        Ok(PromptResult::new().description("slow").user_text("done"))
                    }
                },
            )
    }

    fn transport(&self) -> InProcess {
        let deadline = Arc::clone(&self.deadline);
        InProcess::new(self.service(), Principal::anonymous())
            .fixed_clock(T0)
            .with_deadline(move || {
                let deadline = Arc::clone(&deadline);
                Box::pin(async move { deadline.notified().await })
            })
    }
}

#[tokio::test(flavor = "current_thread")]
async fn an_overdue_async_handler_is_a_retryable_tool_error_and_its_side_effect_is_not_kept() {
    let o = Overdue::default();
    let client = client(o.transport(), json!({"confirm": true}));

    o.stall.store(true, Ordering::SeqCst);
    let done = client.call_tool("charge", json!({})).await.unwrap();
    assert!(done.is_tool_error(), "{:?}", done.result);
    assert_eq!(done.result["resultType"], "complete");
    assert!(done.result.get("requestState").is_none());
    let text = done.text();
    assert!(text.contains("did not finish in time"), "{text}");
    assert!(text.contains("Call the tool again"), "{text}");
    // The charge ran before the deadline passed...
    assert_eq!(o.charges.load(Ordering::SeqCst), 1);

    // ...but was not recorded as done: calling again starts over at round 1 and
    // charges again; from then on the flow keeps its (second) charge.
    o.stall.store(false, Ordering::SeqCst);
    let done = client.call_tool("charge", json!({})).await.unwrap();
    assert!(!done.is_tool_error(), "{:?}", done.result);
    assert_eq!(done.text(), "Kept charge #2.");
    assert_eq!(done.rounds, 2);
    assert_eq!(o.charges.load(Ordering::SeqCst), 2);
    assert_eq!(*o.rounds.lock().unwrap(), [1, 1, 2]);
}

#[tokio::test(flavor = "current_thread")]
async fn an_overdue_async_prompt_handler_is_32603() {
    let o = Overdue::default();
    let client = client(o.transport(), json!({}));
    o.stall.store(true, Ordering::SeqCst);
    match client.get_prompt("slow", json!({})).await {
        Err(e) => assert_eq!(e.jsonrpc_code(), Some(-32603), "{e}"),
        Ok(c) => panic!("expected -32603, got {:?}", c.result),
    }
    o.stall.store(false, Ordering::SeqCst);
    let done = client.get_prompt("slow", json!({})).await.unwrap();
    assert_eq!(done.result["messages"][0]["content"]["text"], "done");
}

#[tokio::test(flavor = "current_thread")]
async fn sync_and_async_handlers_side_by_side() {
    let name_form = || Form::new("Your name?").string("name", "Name");
    let service = empty_service()
        .tool("sync_greet", "sync", schema(), move |round| {
            let f = round.elicit("name", name_form())?;
            let name = f.accepted().and_then(|f| f.str("name")).unwrap_or("you");
            Ok(ToolResult::text(format!("sync: Hello, {name}!")))
        })
        .tool("async_greet", "async", schema(), move |round| async move {
            tokio::task::yield_now().await;
            let f = round.elicit("name", name_form())?;
            tokio::task::yield_now().await;
            let name = f.accepted().and_then(|f| f.str("name")).unwrap_or("you");
            Ok(ToolResult::text(format!("async: Hello, {name}!")))
        })
        .prompt(
            PromptDefinition::new("sync_prompt").description("sync"),
            |_| {
                Ok(PromptResult::new()
                    .description("p")
                    .user_text("sync prompt"))
            },
        )
        .prompt(
            PromptDefinition::new("async_prompt").description("async"),
            |_| async {
                tokio::task::yield_now().await;
                Ok(PromptResult::new()
                    .description("p")
                    .user_text("async prompt"))
            },
        );
    let client = client(
        InProcess::new(service, Principal::subject("alice")).fixed_clock(T0),
        json!({"name": "Ada"}),
    );
    // One after the other, then both at once.
    for name in ["sync_greet", "async_greet"] {
        let done = client.call_tool(name, json!({})).await.unwrap();
        assert_eq!(done.rounds, 2);
        assert!(done.text().ends_with("Hello, Ada!"), "{}", done.text());
    }
    let (s, a) = futures_util::future::join(
        client.call_tool("sync_greet", json!({})),
        client.call_tool("async_greet", json!({})),
    )
    .await;
    assert_eq!(s.unwrap().text(), "sync: Hello, Ada!");
    assert_eq!(a.unwrap().text(), "async: Hello, Ada!");
    for (name, text) in [
        ("sync_prompt", "sync prompt"),
        ("async_prompt", "async prompt"),
    ] {
        let done = client.get_prompt(name, json!({})).await.unwrap();
        assert_eq!(done.result["messages"][0]["content"]["text"], text);
    }
}
