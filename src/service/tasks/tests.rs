use super::*;
use record::{Status, iso8601, owner_digest};

#[test]
fn dates_are_rfc_3339() {
    assert_eq!(
        iso8601(Timestamp::from_unix_secs(0)),
        "1970-01-01T00:00:00Z"
    );
    assert_eq!(
        iso8601(Timestamp::from_unix_secs(1_796_442_684)),
        "2026-12-05T03:51:24Z"
    );
    assert_eq!(
        iso8601(Timestamp::from_unix_secs(951_782_400)),
        "2000-02-29T00:00:00Z"
    );
}

#[test]
fn the_missing_extension_error_names_it() {
    let e = missing_extension();
    assert_eq!(e.code(), -32021);
    assert_eq!(
        e.data().unwrap()["requiredCapabilities"]["extensions"][EXTENSION],
        json!({})
    );
}

#[test]
fn the_store_keeps_no_principal_name_and_no_secret_in_its_debug() {
    let owner = owner_digest("https://idp.example\u{0}alice");
    assert_eq!(owner.len(), 64);
    assert!(!owner.contains("alice"));
    let stored = StoredTask {
        record: r#"{"arguments":{"password":"hunter2"}}"#.into(),
        owner,
        expires_at: Timestamp::from_unix_secs(10),
        due_at: None,
    };
    assert!(!format!("{stored:?}").contains("hunter2"));
}

/// A record as a `tools/call` of `t` by alice at 1 000 makes it.
fn record() -> Record {
    let ctx = crate::service::RequestContext::new(
        crate::Principal::new("https://idp.example", "alice"),
        Timestamp::from_unix_secs(1_000),
        "c",
    );
    let params = json!({"name": "t", "arguments": {"n": 1}});
    Record::new(
        params.as_object().unwrap(),
        Creator::of(&ctx),
        owner_digest(&ctx.caller_key()),
        ctx.now,
        lease("a", 1_000),
    )
}

fn lease(holder: &str, until: u64) -> record::Lease {
    record::Lease {
        holder: holder.into(),
        until: Timestamp::from_unix_secs(until),
    }
}

fn asks(keys: &[String]) -> Outcome {
    let mut asks = crate::wire::InputRequests::new();
    for k in keys {
        asks.insert(
            k.clone(),
            crate::wire::InputRequest::ListRoots { meta: None },
        );
    }
    Outcome::InputRequired(
        crate::wire::InputRequiredResult::new(
            crate::wire::CarrierMethod::ToolsCall,
            asks,
            Some("sealed".into()),
        )
        .unwrap(),
    )
}

fn written<R>(c: Change<R>) -> Option<R> {
    match c {
        Change::Write(r) => Some(r),
        Change::Keep(_) => None,
    }
}

#[test]
fn a_record_reads_back_and_binds_its_runs_to_its_creator() {
    let r = record();
    let stored = r.stored().unwrap();
    assert_eq!(stored.due_at, Some(Timestamp::from_unix_secs(1_000)));
    assert_eq!(
        stored.expires_at,
        Timestamp::from_unix_secs(1_000).add(crate::defaults::TASK_TTL)
    );
    let back = Record::read(&stored.record).unwrap();
    assert_eq!(back, r);
    assert_eq!(
        back.creator.principal(),
        crate::Principal::new("https://idp.example", "alice")
    );
    let mut bad = stored.clone();
    bad.record = bad.record.replace("\"format\":1", "\"format\":9");
    assert!(Record::read(&bad.record).is_err());
}

#[test]
fn one_runner_holds_a_task_until_its_lease_lapses() {
    let mut r = record();
    let t = Timestamp::from_unix_secs;
    let params = written(r.acquire("a", t(1_000), t(1_030)))
        .flatten()
        .unwrap();
    assert_eq!(params["arguments"], json!({"n": 1}));
    assert!(params.get("requestState").is_none());
    assert_eq!(
        r.stored().unwrap().due_at,
        Some(t(1_030)),
        "due when the lease ends"
    );
    assert!(
        written(r.acquire("b", t(1_010), t(1_040))).is_none(),
        "held"
    );
    assert_eq!(written(r.renew("a", t(1_050))), Some(true));
    assert!(written(r.renew("b", t(1_050))).is_none(), "not b's");
    assert!(
        written(r.acquire("b", t(1_040), t(1_070))).is_none(),
        "renewed"
    );
    // a's lease lapses: b takes over; a's renewal and finish are refused.
    assert!(
        written(r.acquire("b", t(1_050), t(1_080)))
            .flatten()
            .is_some()
    );
    assert!(written(r.renew("a", t(1_090))).is_none());
    assert!(written(r.finish("a", Some(asks(&["k".into()])), t(1_051))).is_none());
    assert!(written(r.finish("b", Some(asks(&["k".into()])), t(1_052))).is_some());
    assert_eq!(r.status, Status::InputRequired);
    assert_eq!(r.stored().unwrap().due_at, None, "waits for its client");
    assert!(
        written(r.acquire("c", t(1_100), t(1_130))).is_none(),
        "not working"
    );
}

#[test]
fn a_question_asked_again_is_asked_under_a_key_of_its_own() {
    let mut r = record();
    let t = Timestamp::from_unix_secs;
    assert!(written(r.acquire("a", t(1_000), t(1_030))).is_some());
    assert!(written(r.finish("a", Some(asks(&["k".into()])), t(1_001))).is_some());
    let answer = |key: &str| {
        let mut m = Map::new();
        m.insert(key.into(), json!({"roots": [1]}));
        m
    };
    assert_eq!(
        written(r.answer(&answer("k"), t(1_002), lease("a", 1_040))),
        Some(true)
    );
    assert_eq!(r.answers, answer("k"));
    // The handler did not accept the answer and asks "k" again.
    assert!(written(r.acquire("a", t(1_003), t(1_040))).is_some());
    assert!(written(r.finish("a", Some(asks(&["k".into(), "j".into()])), t(1_004))).is_some());
    let keys: Vec<&String> = r.outstanding.keys().collect();
    assert_eq!(keys, ["k~2", "j"]);
    // The old key is ignored; the new one stands for the handler's "k".
    assert!(written(r.answer(&answer("k"), t(1_005), lease("a", 1_050))).is_none());
    assert_eq!(
        written(r.answer(&answer("k~2"), t(1_005), lease("a", 1_050))),
        Some(false)
    );
    assert_eq!(
        written(r.answer(&answer("j"), t(1_006), lease("a", 1_050))),
        Some(true)
    );
    let params = written(r.acquire("a", t(1_007), t(1_050)))
        .flatten()
        .unwrap();
    assert_eq!(params["inputResponses"]["k"], json!({"roots": [1]}));
    assert_eq!(params["inputResponses"]["j"], json!({"roots": [1]}));
    assert!(params["inputResponses"].get("k~2").is_none());
}

mod property {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Op {
        Answer(Vec<u8>, bool),
        Cancel,
        Acquire(bool),
        Renew(bool),
        /// The run of runner a or b ends: asking two keys numbered from
        /// `first`, completing, failing, or at the deadline.
        Finish(bool, u8, u8),
        Later(u64),
    }

    /// Ops weighted so that sequences reach questions, their answers and
    /// questions asked again before a cancellation or an end.
    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (proptest::collection::vec(0u8..4, 1..4), any::<bool>())
                .prop_map(|(k, a)| Op::Answer(k, a)),
            1 => Just(Op::Cancel),
            2 => any::<bool>().prop_map(Op::Acquire),
            2 => any::<bool>().prop_map(Op::Renew),
            6 => (any::<bool>(), prop_oneof![4 => Just(0u8), 1 => 1u8..4], 0u8..3)
                .prop_map(|(a, k, f)| Op::Finish(a, k, f)),
            1 => (0u64..90).prop_map(Op::Later),
        ]
    }

    proptest! {
            /// Whatever happens, in any order: an ended task never changes
            /// again; an answer is kept only for a question outstanding then;
            /// a key once asked is never outstanding again after it was
            /// answered; at most one runner holds the lease at a time and only
            /// its run's end is recorded; a record always reads back as written.
            #[test]
            fn any_sequence_keeps_the_task_s_rules(ops in proptest::collection::vec(op(), 0..60)) {
                let mut r = record();
                let mut now = 1_000u64;
                let mut ended: Option<Record> = None;
                let mut answered: Vec<String> = Vec::new();
                for op in ops {
                    let t = Timestamp::from_unix_secs(now);
                    let holder = |a: bool| if a { "a" } else { "b" };
                    let before = r.clone();
                    let outstanding: Vec<String> = r.outstanding.keys().cloned().collect();
                    match op {
                        Op::Answer(keys, a) => {
                            let mut responses = Map::new();
                            for k in &keys {
                                responses.insert(format!("k{k}"), json!({"roots": []}));
                            }
                            let _ = r.answer(&responses, t, lease(holder(a), now + 30));
                            for k in r.answers.keys() {
                                let stands_for = |w: &String| {
                                    r.asked.get(w).and_then(Value::as_str) == Some(k.as_str())
                                };
                                prop_assert!(
                                    before.answers.contains_key(k) || outstanding.iter().any(stands_for),
                                    "answer {} taken though not asked", k
                                );
                            }
                            for k in before.outstanding.keys() {
                                if !r.outstanding.contains_key(k) {
                                    answered.push(k.clone());
                                }
                            }
                        }
                        Op::Cancel => {
                            let _ = r.cancel(t);
                        }
                        Op::Acquire(a) => {
                            let held = before
                                .lease
                                .as_ref()
                                .is_some_and(|l| l.until > t && l.holder != holder(a));
                            let got = written(r.acquire(holder(a), t, t.add_secs(30))).flatten();
                            prop_assert_eq!(got.is_some(), before.status == Status::Working && !held);
                        }
                        Op::Renew(a) => {
                            let _ = r.renew(holder(a), t.add_secs(30));
                        }
                        Op::Finish(a, kind, first) => {
                            let outcome = match kind {
                                0 => {
                                    // Answered keys among them: the handler asks again.
                                    let keys: Vec<String> =
                                        (first..first + 2).map(|k| format!("k{k}")).collect();
                                    Some(asks(&keys))
                                }
                                1 => Some(Outcome::Complete(json!({"content": [], "resultType": "complete"}))),
                                2 => Some(Outcome::Protocol(Error::internal("x"))),
                                _ => None,
                            };
                            let theirs = before.lease.as_ref().is_some_and(|l| l.holder == holder(a));
                            let wrote = written(r.finish(holder(a), outcome, t)).is_some();
                            prop_assert_eq!(wrote, theirs && before.status == Status::Working);
                            prop_assert!(r.request_state.is_none() || r.status == Status::InputRequired || r.status == Status::Working);
                        }
                        Op::Later(secs) => now += secs,
                    }
                    if let Some(end) = &ended {
                        prop_assert_eq!(&r, end, "an ended task changed");
                    }
                    if r.status.is_terminal() && ended.is_none() {
                        ended = Some(r.clone());
                    }
    for k in r.outstanding.keys() {
                        prop_assert!(
                            !answered.contains(k) || before.outstanding.contains_key(k),
                            "key {} asked again", k
                        );
                        prop_assert!(r.asked.contains_key(k), "key {} not recorded", k);
                    }
                    let detailed = r.detailed("id");
                    prop_assert!(detailed.get("requestState").is_none());
                    prop_assert_eq!(Record::read(&r.stored().unwrap().record).unwrap(), r.clone());
                }
            }
        }
}

mod on_the_service {
    use super::super::*;
    use crate::engine::{Confirmation, Engine, Round};
    use crate::principal::Principal;
    use crate::replay::MemoryReplayGuard;
    use crate::result::ToolResult;
    use crate::seal::Keyring;
    use crate::service::{RequestContext, Service};
    use std::sync::atomic::AtomicU32;

    /// What a test's tools did: deletions, starts, and whether a start may end.
    #[derive(Debug, Default)]
    struct Done {
        deletions: AtomicU32,
        starts: AtomicU32,
        may_end: AtomicBool,
    }

    const T0: u64 = 1_800_000_000;

    fn engine() -> Engine {
        Engine::new(Keyring::ephemeral(), "t").with_replay_guard(Arc::new(MemoryReplayGuard::new(
            Timestamp::from_unix_secs(T0 - 10),
        )))
    }

    fn service_on(engine: Engine, store: Arc<dyn TaskStore>, done: &Arc<Done>) -> Service {
        let (d1, d2) = (Arc::clone(done), Arc::clone(done));
        Service::new(engine, "t", "0")
            .tool("quick", "answers", json!({"type": "object"}), |_| {
                Ok(ToolResult::text("done"))
            })
            .tool(
                "delete",
                "asks, then deletes once",
                json!({"type": "object"}),
                move |r| {
                    Ok(match r.confirm("confirm", "Delete?")? {
                        Confirmation::Accepted => {
                            r.once("delete", || {
                                d1.deletions.fetch_add(1, Ordering::SeqCst);
                                Ok(())
                            })?;
                            ToolResult::text("deleted")
                        }
                        _ => ToolResult::text("kept"),
                    })
                },
            )
            .tool(
                "start",
                "starts once, then works until the test lets it end",
                json!({"type": "object"}),
                move |r: Round| {
                    let d2 = Arc::clone(&d2);
                    async move {
                        r.once("start", || {
                            d2.starts.fetch_add(1, Ordering::SeqCst);
                            Ok(())
                        })?;
                        if !d2.may_end.load(Ordering::SeqCst) {
                            std::future::pending::<()>().await;
                        }
                        Ok(ToolResult::text("started"))
                    }
                },
            )
            .tool(
                "ask_first",
                "asks, then a task",
                json!({"type": "object"}),
                |r| {
                    let _ = r.confirm("go", "Go?")?;
                    Ok(ToolResult::text("went"))
                },
            )
            .task_support("quick", TaskSupport::Optional)
            .task_support("delete", TaskSupport::Required)
            .task_support("start", TaskSupport::Required)
            .task_support("ask_first", TaskSupport::AfterFirstRound)
            .with_task_store(store)
    }

    fn service() -> (Service, Arc<Done>) {
        let done = Arc::default();
        let s = service_on(engine(), Arc::new(MemoryTaskStore::default()), &done);
        (s, done)
    }

    fn ctx(who: &str, secs: u64) -> RequestContext {
        RequestContext::new(
            Principal::subject(who),
            Timestamp::from_unix_secs(secs),
            "c",
        )
    }

    fn meta(ext: bool) -> Value {
        let mut caps = json!({"elicitation": {}});
        if ext {
            caps["extensions"] = json!({EXTENSION: {}});
        }
        json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": caps})
    }

    fn send_at(
        s: &Service,
        who: &str,
        secs: u64,
        method: &str,
        mut params: Value,
        ext: bool,
    ) -> (Value, Option<TaskRun>) {
        params["_meta"] = meta(ext);
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let reply = s.handle_sync(body.to_string().as_bytes(), &ctx(who, secs));
        (
            serde_json::from_str(reply.body.as_deref().unwrap()).unwrap(),
            reply.task,
        )
    }

    fn send(
        s: &Service,
        who: &str,
        method: &str,
        params: Value,
        ext: bool,
    ) -> (Value, Option<TaskRun>) {
        send_at(s, who, T0, method, params, ext)
    }

    /// Polls `s`'s run of `run` at `secs` once: `true` when it ended.
    fn poll_run(s: &Service, run: TaskRun, secs: u64) -> bool {
        let mut fut = std::pin::pin!(s.run_task(
            run,
            move || Timestamp::from_unix_secs(secs),
            |_| std::future::pending()
        ));
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        // Dropped when pending: the instance running it died.
        fut.as_mut().poll(&mut cx).is_ready()
    }

    fn run(s: &Service, run: TaskRun) {
        assert!(
            poll_run(s, run, T0 + 1),
            "a synchronous handler's run ends at once"
        );
    }

    #[test]
    fn a_task_is_made_only_for_a_client_that_declares_the_extension() {
        let (s, _) = service();
        let (sync, run_due) = send(&s, "alice", "tools/call", json!({"name": "quick"}), false);
        assert_eq!(sync["result"]["content"][0]["text"], "done");
        assert!(run_due.is_none());
        let (created, run_due) = send(&s, "alice", "tools/call", json!({"name": "quick"}), true);
        let r = &created["result"];
        assert_eq!(r["resultType"], "task");
        assert_eq!(r["status"], "working");
        for gone in ["requestState", "inputRequests", "result", "error", "task"] {
            assert!(r.get(gone).is_none(), "{gone}: {r}");
        }
        assert!(r["ttlMs"].as_u64().unwrap() > 0 && r["pollIntervalMs"].as_u64().unwrap() > 0);
        let id = r["taskId"].as_str().unwrap().to_owned();
        assert_eq!(id.len(), 32);
        run(&s, run_due.expect("a run is due"));
        let (got, _) = send(&s, "alice", "tasks/get", json!({"taskId": id}), true);
        assert_eq!(got["result"]["status"], "completed", "{got}");
        assert_eq!(got["result"]["result"]["content"][0]["text"], "done");
        // Another caller, an unknown id, a client without the extension.
        let (other, _) = send(&s, "mallory", "tasks/get", json!({"taskId": id}), true);
        assert_eq!(other["error"]["code"], -32602);
        let (unknown, _) = send(&s, "alice", "tasks/get", json!({"taskId": "nope"}), true);
        assert_eq!(unknown, other, "another's task is an unknown one");
        let (gated, _) = send(&s, "alice", "tasks/get", json!({"taskId": id}), false);
        assert_eq!(gated["error"]["code"], -32021);
        assert_eq!(
            gated["error"]["data"]["requiredCapabilities"]["extensions"][EXTENSION],
            json!({})
        );
        // Expired with its time to live.
        let later = T0 + crate::defaults::TASK_TTL.as_secs() + 1;
        let (gone, _) = send_at(&s, "alice", later, "tasks/get", json!({"taskId": id}), true);
        assert_eq!(gone, other);
    }

    #[test]
    fn a_task_s_questions_are_answered_through_tasks_update_and_once_runs_once() {
        let (s, done) = service();
        let (refused, _) = send(&s, "alice", "tools/call", json!({"name": "delete"}), false);
        assert_eq!(refused["error"]["code"], -32021, "a required task");
        let (created, due) = send(&s, "alice", "tools/call", json!({"name": "delete"}), true);
        let id = created["result"]["taskId"].as_str().unwrap().to_owned();
        run(&s, due.unwrap());
        let (got, _) = send(&s, "alice", "tasks/get", json!({"taskId": id}), true);
        assert_eq!(got["result"]["status"], "input_required", "{got}");
        assert_eq!(
            got["result"]["inputRequests"]["confirm"]["method"],
            "elicitation/create"
        );
        assert!(got["result"].get("requestState").is_none());
        let before = done.deletions.load(Ordering::SeqCst);
        let answer = json!({"taskId": id, "inputResponses": {
            "confirm": {"action": "accept", "content": {"confirm": true}},
            "never-asked": {"anything": 1}}});
        let (ack, due) = send(&s, "alice", "tasks/update", answer.clone(), true);
        assert_eq!(ack["result"], json!({"resultType": "complete"}));
        run(
            &s,
            due.expect("every question answered: the next run is due"),
        );
        let (got, _) = send(&s, "alice", "tasks/get", json!({"taskId": id}), true);
        assert_eq!(got["result"]["status"], "completed", "{got}");
        assert_eq!(got["result"]["result"]["content"][0]["text"], "deleted");
        assert_eq!(done.deletions.load(Ordering::SeqCst), before + 1);
        // The same answers again: the task ended; nothing runs.
        let (_, due) = send(&s, "alice", "tasks/update", answer, true);
        assert!(due.is_none());
        // Cancelling an ended task is the same acknowledgement.
        let (ack, _) = send(&s, "alice", "tasks/cancel", json!({"taskId": id}), true);
        assert_eq!(ack["result"], json!({"resultType": "complete"}));
    }

    #[test]
    fn the_first_round_is_mrtr_and_the_retry_becomes_the_task() {
        let (s, _) = service();
        let (irr, due) = send(
            &s,
            "alice",
            "tools/call",
            json!({"name": "ask_first"}),
            true,
        );
        assert_eq!(irr["result"]["resultType"], "input_required", "{irr}");
        assert!(irr["result"].get("taskId").is_none() && due.is_none());
        let state = irr["result"]["requestState"].clone();
        let retry = json!({"name": "ask_first", "requestState": state,
            "inputResponses": {"go": {"action": "accept", "content": {"confirm": true}}}});
        let (created, due) = send(&s, "alice", "tools/call", retry, true);
        assert_eq!(created["result"]["resultType"], "task", "{created}");
        assert!(created["result"].get("requestState").is_none());
        let id = created["result"]["taskId"].as_str().unwrap().to_owned();
        run(&s, due.unwrap());
        let (got, _) = send(&s, "alice", "tasks/get", json!({"taskId": id}), true);
        assert_eq!(
            got["result"]["result"]["content"][0]["text"], "went",
            "{got}"
        );
    }

    #[test]
    fn a_cancelled_task_stays_cancelled_and_does_not_run() {
        let (s, _) = service();
        let (created, due) = send(&s, "alice", "tools/call", json!({"name": "quick"}), true);
        let id = created["result"]["taskId"].as_str().unwrap().to_owned();
        let (ack, _) = send(&s, "alice", "tasks/cancel", json!({"taskId": id}), true);
        assert_eq!(ack["result"], json!({"resultType": "complete"}));
        assert!(poll_run(&s, due.unwrap(), T0 + 1), "nothing to run");
        let (got, _) = send(&s, "alice", "tasks/get", json!({"taskId": id}), true);
        assert_eq!(got["result"]["status"], "cancelled");
        assert!(got["result"].get("result").is_none());
        let (discover, _) = send(&s, "alice", "server/discover", json!({}), true);
        assert_eq!(
            discover["result"]["capabilities"]["extensions"][EXTENSION],
            json!({})
        );
    }

    /// Two instances sharing a store, the keys (one engine) and its replay
    /// guard, and what their tools did.
    fn two_instances() -> (Service, Service, Arc<Done>) {
        let store: Arc<dyn TaskStore> = Arc::new(MemoryTaskStore::default());
        let engine = engine();
        let done = Arc::default();
        let a = service_on(engine.clone(), Arc::clone(&store), &done);
        (a, service_on(engine, store, &done), done)
    }

    /// Two instances: one creates the task and dies in its run (after its `once` step); the
    /// other finds the run due once the lease lapsed, takes it over, and the
    /// step does not run again.
    #[test]
    fn a_run_whose_instance_died_is_taken_over_and_its_once_step_not_repeated() {
        let (a, b, done) = two_instances();
        let (created, due) = send(&a, "alice", "tools/call", json!({"name": "start"}), true);
        let id = created["result"]["taskId"].as_str().unwrap().to_owned();
        let before = done.starts.load(Ordering::SeqCst);
        assert!(!poll_run(&a, due.unwrap(), T0), "a dies mid-run");
        assert_eq!(done.starts.load(Ordering::SeqCst), before + 1);
        // While a's lease holds, nothing is due, and b cannot take it.
        let lease = crate::defaults::TASK_LEASE.as_secs();
        let during = b.handle_due(T0 + lease - 1);
        assert!(during.is_empty(), "held");
        let (got, _) = send_at(
            &b,
            "alice",
            T0 + 5,
            "tasks/get",
            json!({"taskId": id}),
            true,
        );
        assert_eq!(got["result"]["status"], "working");
        // Then it is due, on b.
        let mut due = b.handle_due(T0 + lease);
        assert_eq!(due.len(), 1);
        done.may_end.store(true, Ordering::SeqCst);
        assert!(poll_run(&b, due.remove(0), T0 + lease));
        assert_eq!(
            done.starts.load(Ordering::SeqCst),
            before + 1,
            "once, across the takeover"
        );
        let (got, _) = send_at(
            &a,
            "alice",
            T0 + lease,
            "tasks/get",
            json!({"taskId": id}),
            true,
        );
        assert_eq!(got["result"]["status"], "completed", "{got}");
        assert_eq!(got["result"]["result"]["isError"], true, "{got}");
        assert!(
            got["result"]["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("already carried out"),
            "{got}"
        );
        assert!(b.handle_due(T0 + 10 * lease).is_empty(), "ended: never due");
    }

    /// A task answered through another instance runs there, from the
    /// record alone.
    #[test]
    fn any_instance_takes_a_task_s_answers_and_runs_it() {
        let (a, b, done) = two_instances();
        let (created, due) = send(&a, "alice", "tools/call", json!({"name": "delete"}), true);
        let id = created["result"]["taskId"].as_str().unwrap().to_owned();
        run(&a, due.unwrap());
        let before = done.deletions.load(Ordering::SeqCst);
        let answer = json!({"taskId": id, "inputResponses": {
            "confirm": {"action": "accept", "content": {"confirm": true}}}});
        let (_, due) = send(&b, "alice", "tasks/update", answer, true);
        run(&b, due.unwrap());
        let (got, _) = send(&a, "alice", "tasks/get", json!({"taskId": id}), true);
        assert_eq!(
            got["result"]["result"]["content"][0]["text"], "deleted",
            "{got}"
        );
        assert_eq!(done.deletions.load(Ordering::SeqCst), before + 1);
    }

    /// Polls `f` once: it must be ready (the memory store answers at once).
    fn now<T>(f: impl Future<Output = T>) -> T {
        let mut f = std::pin::pin!(f);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match f.as_mut().poll(&mut cx) {
            Poll::Ready(v) => v,
            Poll::Pending => panic!("the memory store answers at once"),
        }
    }

    fn listen(
        s: &Service,
        who: &str,
        ids: &[&str],
        ext: bool,
    ) -> Result<crate::service::Subscription, Value> {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen",
            "params": {"notifications": {"taskIds": ids}, "_meta": meta(ext)}});
        s.listen(
            crate::service::ParsedMessage::parse(body.to_string().as_bytes()),
            &ctx(who, T0),
        )
        .map_err(|r| serde_json::from_str(r.body.as_deref().unwrap()).unwrap())
    }

    fn next(sub: &crate::service::Subscription) -> Option<Value> {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match sub.poll_next(&mut cx) {
            Poll::Ready(Some(line)) => Some(serde_json::from_str(&line).unwrap()),
            Poll::Ready(None) => panic!("the subscription ended"),
            Poll::Pending => None,
        }
    }

    #[test]
    fn a_subscription_is_told_each_status_of_the_tasks_it_follows() {
        let (s, _) = service();
        let s = s.with_changes(crate::service::Changes::new());
        let (created, due) = send(&s, "alice", "tools/call", json!({"name": "delete"}), true);
        let id = created["result"]["taskId"].as_str().unwrap().to_owned();
        let (other, _) = send(&s, "mallory", "tools/call", json!({"name": "quick"}), true);
        let theirs = other["result"]["taskId"].as_str().unwrap().to_owned();
        // Without the extension declared, following tasks is refused.
        let refused = listen(&s, "alice", &[&id], false).unwrap_err();
        assert_eq!(refused["error"]["code"], -32021, "{refused}");
        let sub = listen(&s, "alice", &[&id, &theirs, "nope"], true).unwrap();
        let ack: Value = serde_json::from_str(&sub.acknowledgement()).unwrap();
        assert_eq!(
            ack["params"]["notifications"]["taskIds"],
            json!([id, theirs, "nope"])
        );
        // The status it finds; mallory's task and the unknown one are dropped.
        now(s.tell_task_status(Timestamp::from_unix_secs(T0)));
        let told = next(&sub).expect("the first status");
        assert_eq!(told["method"], "notifications/tasks");
        assert_eq!(told["params"]["taskId"], id.as_str());
        assert_eq!(told["params"]["status"], "working");
        assert_eq!(
            told["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            7
        );
        assert!(next(&sub).is_none(), "nothing of the others");
        // Nothing changed: nothing told.
        now(s.tell_task_status(Timestamp::from_unix_secs(T0)));
        assert!(next(&sub).is_none());
        run(&s, due.unwrap());
        now(s.tell_task_status(Timestamp::from_unix_secs(T0 + 1)));
        let told = next(&sub).expect("input_required");
        assert_eq!(told["params"]["status"], "input_required");
        assert_eq!(
            told["params"]["inputRequests"]["confirm"]["method"],
            "elicitation/create"
        );
        assert!(told["params"].get("requestState").is_none());
        let (_, _) = send(&s, "alice", "tasks/cancel", json!({"taskId": id}), true);
        now(s.tell_task_status(Timestamp::from_unix_secs(T0 + 2)));
        assert_eq!(next(&sub).unwrap()["params"]["status"], "cancelled");
        // An ended task is followed no more.
        now(s.tell_task_status(Timestamp::from_unix_secs(T0 + 3)));
        assert!(next(&sub).is_none());
    }

    #[test]
    fn a_service_without_tasks_does_not_honour_task_ids() {
        let s = Service::new(engine(), "t", "0")
            .tool("quick", "answers", json!({"type": "object"}), |_| {
                Ok(ToolResult::text("done"))
            })
            .with_changes(crate::service::Changes::new());
        let sub = listen(&s, "alice", &["x"], false).unwrap();
        let ack: Value = serde_json::from_str(&sub.acknowledgement()).unwrap();
        assert!(
            ack["params"]["notifications"].get("taskIds").is_none(),
            "{ack}"
        );
        let too_many: Vec<String> = (0..17).map(|i| format!("t{i}")).collect();
        let refs: Vec<&str> = too_many.iter().map(String::as_str).collect();
        let (s2, _) = service();
        let s2 = s2.with_changes(crate::service::Changes::new());
        let refused = listen(&s2, "alice", &refs, true).unwrap_err();
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
    }

    impl Service {
        fn handle_due(&self, secs: u64) -> Vec<TaskRun> {
            now(self.due_tasks(Timestamp::from_unix_secs(secs)))
        }
    }
}
