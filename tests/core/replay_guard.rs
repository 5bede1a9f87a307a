//! A `once` step runs only when the engine's replay guard grants its claim.
//!
//! A scripted guard answers each outcome (claimed, already claimed, unavailable),
//! never answers, or answers only after yielding once; handlers use the
//! synchronous `once` and `once_async`. Also: the claim the engine makes (flow
//! id, step, the presented state's `iat`, `until` = the flow's deadline plus
//! twice the skew, a principal key), when no claim is made, and the in-memory
//! guard refusing a flow sealed before it started (a restart, without a process).
//! At-most-once across a sibling state of the flow, across two instances whose
//! clocks differ by the tolerated skew (a guard double that expires claims by a
//! shared real clock, as Redis does), and the in-memory guard's quotas against a
//! fill (per principal, per anonymous peer address). The quota reached through
//! the service, on the reference server's deploy demo, is in the binary's tests
//! (`reference/replay_guard.rs`).

use mrtr_testkit as common;

use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use common::*;
use mrtr::engine::{Elicited, Engine, Flow, Form, Outcome, Round};
use mrtr::error::code;
use mrtr::principal::Principal;
use mrtr::replay::{BoxFuture, Claim, ClaimOutcome, MemoryReplayGuard, ReplayGuard};
use mrtr::seal::{SealConfig, UntrustedState};
use mrtr::{PromptResult, ToolResult};
use serde_json::json;

/// How the scripted guard answers.
#[derive(Debug, Clone, Copy)]
enum Answer {
    /// At once.
    Now(ClaimOutcome),
    /// Never.
    Pending,
    /// After one `Pending` (it wakes its task first, as a network reply would).
    AfterYield(ClaimOutcome),
}

/// A guard that answers as scripted and records every claim.
#[derive(Debug)]
struct Scripted {
    answer: Answer,
    claims: Mutex<Vec<Claim>>,
}

impl Scripted {
    fn new(answer: Answer) -> Arc<Self> {
        Arc::new(Self {
            answer,
            claims: Mutex::new(Vec::new()),
        })
    }

    fn claims(&self) -> Vec<Claim> {
        self.claims.lock().unwrap().clone()
    }
}

impl ReplayGuard for Scripted {
    fn claim<'a>(&'a self, claim: &'a Claim) -> BoxFuture<'a, ClaimOutcome> {
        self.claims.lock().unwrap().push(claim.clone());
        match self.answer {
            Answer::Now(o) => Box::pin(std::future::ready(o)),
            Answer::Pending => Box::pin(std::future::pending()),
            Answer::AfterYield(o) => Box::pin(YieldOnce(false, o)),
        }
    }
}

/// Pending on the first poll (after waking its task), ready with the outcome after.
struct YieldOnce(bool, ClaimOutcome);

impl Future for YieldOnce {
    type Output = ClaimOutcome;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<ClaimOutcome> {
        if self.0 {
            return Poll::Ready(self.1);
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

fn with_guard(guard: Arc<dyn ReplayGuard>) -> Engine {
    engine().with_replay_guard(guard)
}

/// Confirm, then deploy inside a synchronous `once`; `runs` counts the deployments.
fn deploy_sync(runs: &Counter) -> impl Fn(Round) -> Result<mrtr::ToolResult, Flow> + '_ {
    move |r: Round| deploy_on(&r, runs)
}

/// The body of [`deploy_sync`], on a borrowed round.
fn deploy_on(r: &Round, runs: &Counter) -> Result<mrtr::ToolResult, Flow> {
    match r.elicit("confirm", Form::confirm("Deploy?"))? {
        Elicited::Accepted(f) if f.bool("confirm") == Some(true) => {
            let n: u32 = r.once("deploy", || {
                runs.set(runs.get() + 1);
                Ok(runs.get())
            })?;
            Ok(ToolResult::text(format!("deployment #{n}")))
        }
        _ => Ok(ToolResult::text("not deployed")),
    }
}

/// The same handler with `once_async`, run to completion on a current-thread runtime.
fn run_async(e: &Engine, req: &Req, now: mrtr::Timestamp, runs: &Counter) -> Outcome {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(e.run_until::<ToolResult, _, _, _, _>(
        req.build(),
        &Principal::anonymous(),
        now,
        |r: Round| async move {
            match r.elicit("confirm", Form::confirm("Deploy?"))? {
                Elicited::Accepted(f) if f.bool("confirm") == Some(true) => {
                    let n: u32 = r
                        .once_async("deploy", || async {
                            runs.set(runs.get() + 1);
                            Ok(runs.get())
                        })
                        .await?;
                    Ok(ToolResult::text(format!("deployment #{n}")))
                }
                _ => Ok(ToolResult::text("not deployed")),
            }
        },
        std::future::pending(),
    ))
    .into_json()
}

/// The two rounds of the deploy flow: round 1 (no state, nothing claimed) and the
/// final round that confirms.
fn final_round(e: &Engine) -> Req {
    let never = Counter::new(0);
    let r1 = irr(run(e, &tool("deploy"), T0, deploy_sync(&never)));
    tool("deploy").reply(&r1, json!({"confirm": accept(json!({"confirm": true}))}))
}

#[derive(Debug, Clone, Copy)]
enum Once {
    Sync,
    Async,
}

/// Runs the final round once with the handler of `kind`.
fn finish(e: &Engine, kind: Once, runs: &Counter) -> Outcome {
    let last = final_round(e);
    match kind {
        Once::Sync => run(e, &last, T0.add_secs(5), deploy_sync(runs)),
        Once::Async => run_async(e, &last, T0.add_secs(5), runs),
    }
}

#[test]
fn claimed_runs_the_step_once() {
    for kind in [Once::Sync, Once::Async] {
        let guard = Scripted::new(Answer::Now(ClaimOutcome::Claimed));
        let runs = Counter::new(0);
        let done = complete(finish(&with_guard(guard.clone()), kind, &runs));
        assert_eq!(text(&done), "deployment #1", "{kind:?}");
        assert_eq!(runs.get(), 1, "{kind:?}");
        assert_eq!(
            guard.claims().len(),
            1,
            "{kind:?}: one claim, in the final round"
        );
    }
}

#[test]
fn already_claimed_is_a_tool_error_and_the_step_does_not_run() {
    for kind in [Once::Sync, Once::Async] {
        let guard = Scripted::new(Answer::Now(ClaimOutcome::AlreadyClaimed));
        let runs = Counter::new(0);
        let (result, error) = tool_error(finish(&with_guard(guard), kind, &runs));
        assert_eq!(runs.get(), 0, "{kind:?}: the step did not run");
        let t = text(&result);
        assert!(t.contains("already carried out"), "{t}");
        assert!(t.contains("Retrying the same call will not help"), "{t}");
        assert!(
            t.contains("Call the tool again to start a new request"),
            "{t}"
        );
        assert_eq!(error.diagnostic().category, "replay");
        assert!(!error.diagnostic().retryable);
    }
}

#[test]
fn unavailable_is_a_retryable_tool_error_and_the_step_does_not_run() {
    for kind in [Once::Sync, Once::Async] {
        let guard = Scripted::new(Answer::Now(ClaimOutcome::Unavailable));
        let runs = Counter::new(0);
        let (result, error) = tool_error(finish(&with_guard(guard), kind, &runs));
        assert_eq!(runs.get(), 0, "{kind:?}: never run on a guess");
        let t = text(&result);
        assert!(t.contains("could not record this step"), "{t}");
        assert!(t.contains("was not carried out"), "{t}");
        assert!(t.contains("Retrying the same call may succeed"), "{t}");
        assert!(
            t.contains("call the tool again to start a new request"),
            "{t}"
        );
        assert_eq!(error.diagnostic().category, "replay_unavailable");
        assert!(error.diagnostic().retryable);
        assert_eq!(error.code(), code::INTERNAL_ERROR);
    }
}

#[test]
fn unavailable_is_internal_error_on_a_carrier_without_is_error() {
    let e = with_guard(Scripted::new(Answer::Now(ClaimOutcome::Unavailable)));
    let runs = Counter::new(0);
    let handler = |r: Round| -> Result<mrtr::PromptResult, Flow> {
        let _ = r.elicit("confirm", Form::confirm("Render?"))?;
        let n: u32 = r.once("render", || {
            runs.set(runs.get() + 1);
            Ok(1)
        })?;
        Ok(PromptResult::new()
            .description("p")
            .user_text(format!("render #{n}")))
    };
    let r1 = irr(run(&e, &prompt("p"), T0, handler));
    let last = prompt("p").reply(&r1, json!({"confirm": accept(json!({"confirm": true}))}));
    let error = protocol(run(&e, &last, T0.add_secs(1), handler));
    assert_eq!(error.code(), -32603);
    assert_eq!(runs.get(), 0);
}

#[test]
fn a_pending_claim_is_unavailable_to_the_synchronous_once() {
    // A network guard never answers within one poll: the synchronous `once`
    // fails closed rather than block or guess.
    for answer in [Answer::Pending, Answer::AfterYield(ClaimOutcome::Claimed)] {
        let guard = Scripted::new(answer);
        let runs = Counter::new(0);
        let (result, error) = tool_error(finish(&with_guard(guard.clone()), Once::Sync, &runs));
        assert_eq!(runs.get(), 0, "{answer:?}");
        assert!(text(&result).contains("could not record this step"));
        assert_eq!(error.diagnostic().category, "replay_unavailable");
        assert_eq!(guard.claims().len(), 1, "it was asked, once");
    }
}

#[test]
fn once_async_awaits_a_claim_that_is_not_ready_at_once() {
    for (outcome, deployed) in [
        (ClaimOutcome::Claimed, 1),
        (ClaimOutcome::AlreadyClaimed, 0),
    ] {
        let guard = Scripted::new(Answer::AfterYield(outcome));
        let runs = Counter::new(0);
        let o = finish(&with_guard(guard), Once::Async, &runs);
        assert_eq!(runs.get(), deployed, "{outcome:?}");
        match outcome {
            ClaimOutcome::Claimed => assert_eq!(text(&complete(o)), "deployment #1"),
            _ => assert!(text(&tool_error(o).0).contains("already carried out")),
        }
    }
}

#[test]
fn the_claim_holds_until_the_flow_deadline_plus_twice_the_skew() {
    // A short round (30 s) in a long flow (1 h): the claim lasts as long as any
    // state of the flow can open on any instance within the skew (the flow's
    // deadline plus two skews), not only as long as the presented state opens.
    let config = SealConfig::default()
        .with_ttl(Duration::from_secs(30))
        .unwrap()
        .with_clock_skew(Duration::from_secs(5));
    let guard = Scripted::new(Answer::Now(ClaimOutcome::Claimed));
    let e = with_guard(guard.clone()).with_seal_config(config);
    let never = Counter::new(0);
    let r1 = irr(run(&e, &tool("deploy"), T0, deploy_sync(&never)));
    let token = r1.request_state().unwrap().to_owned();
    let sealed = e.sealer().inspect(&UntrustedState::new(token)).unwrap();
    let last = tool("deploy").reply(&r1, json!({"confirm": accept(json!({"confirm": true}))}));
    let runs = Counter::new(0);
    complete(run(&e, &last, T0.add_secs(7), deploy_sync(&runs)));

    let claims = guard.claims();
    let [c] = claims.as_slice() else {
        panic!("{claims:?}")
    };
    assert_eq!(c.step(), "deploy");
    assert_eq!(c.issued_at().unix_secs(), sealed["iat"].as_u64().unwrap());
    assert_eq!(
        c.until().unix_secs(),
        sealed["deadline"].as_u64().unwrap() + 2 * 5
    );
    assert_eq!(c.until(), T0.add_secs(3600 + 10));
    assert!(
        c.until().unix_secs() > sealed["exp"].as_u64().unwrap() + 5,
        "longer than the presented state opens"
    );
    assert_eq!(c.now(), T0.add_secs(7));
    let hex: String = c.flow_id().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(sealed["flow_id"], hex.as_str());
}

#[test]
fn claims_name_the_flow_and_a_digest_of_the_principal() {
    let guard = Scripted::new(Answer::Now(ClaimOutcome::Claimed));
    let e = with_guard(guard.clone());
    let runs = Counter::new(0);
    for who in ["alice", "alice", "bob"] {
        let principal = Principal::subject(who);
        let r1 = irr(e.run(tool("deploy").build(), &principal, T0, deploy_sync(&runs)));
        let last = tool("deploy").reply(&r1, json!({"confirm": accept(json!({"confirm": true}))}));
        complete(e.run(last.build(), &principal, T0.add_secs(1), deploy_sync(&runs)));
    }
    let c = guard.claims();
    assert_eq!(c.len(), 3);
    assert_ne!(c[0].flow_id(), c[1].flow_id(), "two flows");
    assert_ne!(c[0].store_key(), c[1].store_key());
    assert_eq!(c[0].principal_key(), c[1].principal_key(), "one principal");
    assert_ne!(c[0].principal_key(), c[2].principal_key());
    assert!(!format!("{:?}", c[0]).contains("alice"));
}

#[test]
fn a_first_round_and_a_sealed_result_claim_nothing() {
    // Round 1 presents no state, so there is nothing to replay: the step runs
    // without a claim. Round 2 claims a step first run there; round 3 reuses its
    // sealed result without a claim.
    let guard = Scripted::new(Answer::Now(ClaimOutcome::AlreadyClaimed));
    let e = with_guard(guard.clone());
    let runs = Counter::new(0);
    let first = |r: Round| -> Result<mrtr::ToolResult, Flow> {
        let n: u32 = r.once("log", || {
            runs.set(runs.get() + 1);
            Ok(runs.get())
        })?;
        Ok(ToolResult::text(format!("logged #{n}")))
    };
    assert_eq!(text(&complete(run(&e, &tool("t"), T0, first))), "logged #1");
    assert!(guard.claims().is_empty());

    let guard = Scripted::new(Answer::Now(ClaimOutcome::Claimed));
    let e = with_guard(guard.clone());
    let runs = Counter::new(0);
    let handler = |r: Round| -> Result<mrtr::ToolResult, Flow> {
        let _ = r.elicit("a", Form::confirm("A?"))?;
        let n: u32 = r.once("step", || {
            runs.set(runs.get() + 1);
            Ok(runs.get())
        })?;
        let _ = r.elicit("b", Form::confirm("B?"))?;
        Ok(ToolResult::text(format!("step #{n}")))
    };
    let yes = json!({"confirm": true});
    let r1 = irr(run(&e, &tool("t"), T0, handler));
    let r2 = irr(run(
        &e,
        &tool("t").reply(&r1, json!({"a": accept(yes.clone())})),
        T0.add_secs(1),
        handler,
    ));
    assert_eq!(guard.claims().len(), 1);
    let done = complete(run(
        &e,
        &tool("t").reply(&r2, json!({"b": accept(yes)})),
        T0.add_secs(2),
        handler,
    ));
    assert_eq!(text(&done), "step #1");
    assert_eq!(runs.get(), 1);
    assert_eq!(guard.claims().len(), 1, "the sealed result needs no claim");
}

#[test]
fn a_memory_guard_refuses_a_flow_sealed_before_it_started() {
    // What a restart looks like to the engine: the same keys, a new guard that
    // started after round 1 was sealed. The final round is refused, not re-run.
    let runs = Counter::new(0);
    let before = with_guard(Arc::new(MemoryReplayGuard::new(T0)));
    let last = final_round(&before);
    complete(run(&before, &last, T0.add_secs(5), deploy_sync(&runs)));
    assert_eq!(runs.get(), 1);

    let restarted = with_guard(Arc::new(MemoryReplayGuard::new(T0.add_secs(10))));
    let (result, error) = tool_error(run(&restarted, &last, T0.add_secs(11), deploy_sync(&runs)));
    assert_eq!(runs.get(), 1, "not deployed again");
    assert!(text(&result).contains("already carried out"));
    assert_eq!(error.diagnostic().category, "replay");
    // A flow begun after the restart is served as usual.
    let fresh = tool("deploy");
    let r1 = irr(run(&restarted, &fresh, T0.add_secs(12), deploy_sync(&runs)));
    let last = fresh.reply(&r1, json!({"confirm": accept(json!({"confirm": true}))}));
    complete(run(&restarted, &last, T0.add_secs(13), deploy_sync(&runs)));
    assert_eq!(runs.get(), 2);
}

#[test]
fn a_sibling_state_of_the_flow_cannot_run_the_step_again() {
    // Round 2 presents round 1's state without an answer: the engine asks again
    // and seals a sibling state (same flow, later expiry, no step result). Round
    // 2' confirms with round 1's state: the step runs. The sibling still opens
    // after round 1's state has expired; confirming with it must not run it again.
    let config = SealConfig::default()
        .with_ttl(Duration::from_secs(30))
        .unwrap()
        .with_clock_skew(Duration::from_secs(5));
    let e = with_guard(Arc::new(MemoryReplayGuard::new(T0))).with_seal_config(config);
    let runs = Counter::new(0);
    let r1 = irr(run(&e, &tool("deploy"), T0, deploy_sync(&runs)));
    let sibling = irr(run(
        &e,
        &tool("deploy").resume(&r1),
        T0.add_secs(20),
        deploy_sync(&runs),
    ));
    let yes = json!({"confirm": accept(json!({"confirm": true}))});
    let done = complete(run(
        &e,
        &tool("deploy").reply(&r1, yes.clone()),
        T0.add_secs(21),
        deploy_sync(&runs),
    ));
    assert_eq!(text(&done), "deployment #1");
    // Round 1's state no longer opens at T0+36 (exp T0+30, skew 5); the sibling does.
    let late = run(
        &e,
        &tool("deploy").reply(&sibling, yes),
        T0.add_secs(45),
        deploy_sync(&runs),
    );
    let (result, _) = tool_error(late);
    assert!(text(&result).contains("already carried out"), "{result}");
    assert_eq!(runs.get(), 1, "deployed once");
}

/// A shared store that expires claims by its own clock, as Redis does: a claim
/// recorded at real second `r` is held through real second `r + (until - now)`,
/// whatever clock the claiming instance read `now` from.
#[derive(Debug, Default)]
struct RealClockStore {
    real: std::sync::atomic::AtomicU64,
    held: Mutex<std::collections::HashMap<[u8; 32], u64>>,
}

impl RealClockStore {
    fn set_real(&self, secs: u64) {
        self.real.store(secs, std::sync::atomic::Ordering::SeqCst);
    }
}

impl ReplayGuard for RealClockStore {
    fn claim<'a>(&'a self, claim: &'a Claim) -> BoxFuture<'a, ClaimOutcome> {
        let real = self.real.load(std::sync::atomic::Ordering::SeqCst);
        let mut held = self.held.lock().unwrap();
        held.retain(|_, until| *until >= real);
        let ttl = claim
            .until()
            .unix_secs()
            .saturating_sub(claim.now().unix_secs());
        let outcome = match held.entry(claim.store_key()) {
            std::collections::hash_map::Entry::Occupied(_) => ClaimOutcome::AlreadyClaimed,
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(real + ttl);
                ClaimOutcome::Claimed
            }
        };
        Box::pin(std::future::ready(outcome))
    }
}

/// Two instances with the same keys and one shared store; B's clock is 3 s
/// behind A's. TTL 2 s, skew 3 s. `flow_lifetime` sets the flow's deadline.
fn two_clocks(flow_lifetime: u64) {
    let config = SealConfig::default()
        .with_ttl(Duration::from_secs(2))
        .unwrap()
        .with_flow_lifetime(Duration::from_secs(flow_lifetime))
        .unwrap()
        .with_clock_skew(Duration::from_secs(3));
    let store = Arc::new(RealClockStore::default());
    let a = with_guard(store.clone()).with_seal_config(config.clone());
    let b = with_guard(store.clone()).with_seal_config(config);
    // Real time r: A's clock reads T0 + r, B's T0 + r - 3.
    let (at_a, at_b) = (|r: u64| T0.add_secs(r), |r: u64| T0.add_secs(r).sub_secs(3));
    let runs = Counter::new(0);
    store.set_real(0);
    let r1 = irr(run(&a, &tool("deploy"), at_a(0), deploy_sync(&runs)));
    let last = tool("deploy").reply(&r1, json!({"confirm": accept(json!({"confirm": true}))}));
    assert_eq!(
        text(&complete(run(&a, &last, at_a(0), deploy_sync(&runs)))),
        "deployment #1"
    );
    let (refused, _) = tool_error(run(&b, &last, at_b(0), deploy_sync(&runs)));
    assert!(text(&refused).contains("already carried out"), "{refused}");
    // r = 6: A no longer opens the state (exp T0+2 + skew 3 < T0+6); B, at T0+3,
    // still does, and does until r = 8 (B at T0+5): the claim must still be held.
    for r in [6, 7, 8] {
        store.set_real(r);
        let (expired, _) = tool_error(run(&a, &last, at_a(r), deploy_sync(&runs)));
        assert!(text(&expired).contains("lapsed"), "A at r={r}: {expired}");
        let (refused, _) = tool_error(run(&b, &last, at_b(r), deploy_sync(&runs)));
        assert!(
            text(&refused).contains("already carried out"),
            "B at r={r}: {refused}"
        );
    }
    // r = 9: no instance within the skew opens the state any more.
    store.set_real(9);
    let (expired, _) = tool_error(run(&b, &last, at_b(9), deploy_sync(&runs)));
    assert!(text(&expired).contains("lapsed"), "{expired}");
    assert_eq!(runs.get(), 1, "deployed once, not twice");
}

#[test]
fn an_instance_whose_clock_lags_by_the_skew_cannot_run_the_step_again() {
    // The review's reproduction: the default flow lifetime, TTL 2 s, skew 3 s.
    two_clocks(3600);
}

#[test]
fn the_second_skew_covers_a_lagging_instance_at_the_flow_deadline() {
    // A flow whose deadline is its first state's expiry: only the second skew in
    // the claim's hold keeps B from running the step again.
    two_clocks(2);
}

/// One round of the deploy flow as an anonymous caller at `peer`.
fn run_from(e: &Engine, req: &Req, now: mrtr::Timestamp, peer: &str, runs: &Counter) -> Outcome {
    let peer: IpAddr = peer.parse().unwrap();
    e.run_from(
        req.build(),
        &Principal::anonymous(),
        Some(peer),
        now,
        |round| deploy_on(&round, runs),
    )
    .into_json()
}

/// A whole deploy flow from `peer`: true if it deployed, false if its `once`
/// step was refused because the guard would not take the claim.
fn deploy_from(e: &Engine, peer: &str, runs: &Counter) -> bool {
    let r1 = irr(run_from(e, &tool("deploy"), T0, peer, runs));
    let last = tool("deploy").reply(&r1, json!({"confirm": accept(json!({"confirm": true}))}));
    match run_from(e, &last, T0.add_secs(1), peer, runs) {
        Outcome::Complete(_) => true,
        other => {
            let (result, error) = tool_error(other);
            assert!(text(&result).contains("could not record"), "{result}");
            assert_eq!(error.diagnostic().category, "replay_unavailable");
            false
        }
    }
}

#[test]
fn one_anonymous_peer_fills_its_own_quota_not_everyone_elses() {
    // Every anonymous caller is one principal; the quota is keyed on the peer
    // address too (an IPv4 address, an IPv6 /64). The global cap is a hundred
    // quotas, as by default.
    let guard = MemoryReplayGuard::new(T0)
        .with_max_claims(300)
        .with_max_claims_per_principal(3);
    let e = with_guard(Arc::new(guard));
    let runs = Counter::new(0);
    for _ in 0..3 {
        assert!(deploy_from(&e, "203.0.113.7", &runs));
    }
    assert!(!deploy_from(&e, "203.0.113.7", &runs), "its quota is full");
    assert!(
        !deploy_from(&e, "::ffff:203.0.113.7", &runs),
        "the same address, IPv4-mapped"
    );
    assert!(
        deploy_from(&e, "198.51.100.2", &runs),
        "another address claims"
    );
    // IPv6: one /64 is one quota, whatever its interface identifiers.
    for host in ["2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:2:abcd::9"] {
        assert!(deploy_from(&e, host, &runs), "{host}");
    }
    assert!(
        !deploy_from(&e, "2001:db8:1:2:ffff::1", &runs),
        "that /64 is full"
    );
    assert!(
        deploy_from(&e, "2001:db8:1:3::1", &runs),
        "the next /64 is not"
    );
    assert_eq!(runs.get(), 8);
}
