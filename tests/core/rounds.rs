//! Round engine flows with a fake clock: single and multi-round flows, batching,
//! state-only rounds, limits, the flow deadline, guarded side effects, key rings,
//! and requestState that is tampered with or presented on another request.

use mrtr_testkit as common;

use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use mrtr::ToolResult;
use mrtr::engine::{Elicited, Engine, Flow, Form, Outcome, RootsAsk, Round, Sampling};
use mrtr::principal::Principal;
use mrtr::replay::MemoryReplayGuard;
use mrtr::seal::{SealConfig, UntrustedState};
use mrtr::streamable_http::error_status;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

fn inspect(engine: &Engine, token: &str) -> Value {
    engine
        .sealer()
        .inspect(&UntrustedState::new(token))
        .expect("a token this engine sealed opens for inspection")
}

/// A tool that asks for a name, then greets.
fn greet(r: Round) -> Result<mrtr::ToolResult, Flow> {
    ask_name(&r)
}

#[test]
fn single_elicitation_round_asks_then_completes() {
    let e = engine();
    let req = tool("greet");
    let first = irr(run(&e, &req, T0, greet));
    assert_eq!(keys(&first), ["user_name"]);
    let ask = request_json(&first, "user_name");
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(
        ask["params"]["requestedSchema"],
        json!({"type": "object", "properties": {"name": {"type": "string", "title": "Name"}},
               "required": ["name"]})
    );
    let wire = first.to_value();
    assert_eq!(wire["resultType"], "input_required");
    let state = first.request_state().expect("the round is sealed");
    assert!(!state.is_empty());

    let retry = req
        .clone()
        .state(state)
        .answers(json!({"user_name": accept(json!({"name": "Alice"}))}));
    let done = complete(run(&e, &retry, T0.add_secs(5), greet));
    assert_eq!(done["resultType"], "complete");
    assert_eq!(text(&done), "Hello, Alice!");
    assert!(done.get("isError").is_none_or(|v| v == false));
}

/// spec.md §4.2: `update_work_item` asks the resolution, then, only for a
/// duplicate, which item it duplicates.
fn update_work_item(r: Round) -> Result<mrtr::ToolResult, Flow> {
    let resolution = r.elicit(
        "resolution",
        Form::new("Resolving requires a resolution. How was it resolved?").one_of(
            "resolution",
            ["Fixed", "Won't Fix", "Duplicate", "By Design"],
        ),
    )?;
    let Some(resolution) = resolution
        .accepted()
        .and_then(|f| f.str("resolution"))
        .map(str::to_owned)
    else {
        return Ok(ToolResult::text("Work item left unchanged."));
    };
    if resolution == "Duplicate" {
        let dup = r.elicit(
            "duplicate_of",
            Form::new("Which work item does it duplicate?").number(
                "duplicateOfId",
                "Work item id",
                Some(1.0),
                None,
            ),
        )?;
        let id = dup
            .accepted()
            .and_then(|f| f.i64("duplicateOfId"))
            .unwrap_or_default();
        return Ok(ToolResult::text(format!(
            "Work item 4522 resolved as Duplicate of {id}."
        )));
    }
    Ok(ToolResult::text(format!(
        "Work item 4522 resolved as {resolution}."
    )))
}

fn work_item() -> Req {
    tool("update_work_item")
        .args(json!({"workItemId": 4522, "fields": {"System.State": "Resolved"}}))
}

#[test]
fn multi_round_accumulates_answers_in_the_sealed_state() {
    let e = engine();
    let r1 = irr(run(&e, &work_item(), T0, update_work_item));
    assert_eq!(keys(&r1), ["resolution"]);
    let ask = request_json(&r1, "resolution");
    assert!(
        ask["params"].get("mode").is_none(),
        "form mode is written without mode"
    );
    assert_eq!(
        ask["params"]["requestedSchema"]["properties"]["resolution"]["enum"],
        json!(["Fixed", "Won't Fix", "Duplicate", "By Design"])
    );

    // Round 2: the resolution answered, so the duplicate question comes.
    let retry2 = work_item()
        .resume(&r1)
        .answers(json!({"resolution": accept(json!({"resolution": "Duplicate"}))}));
    let r2 = irr(run(&e, &retry2, T0.add_secs(10), update_work_item));
    assert_eq!(keys(&r2), ["duplicate_of"]);
    assert_eq!(
        request_json(&r2, "duplicate_of")["params"]["requestedSchema"]["properties"]["duplicateOfId"]
            ["type"],
        "number"
    );
    let s2 = r2.request_state().unwrap();
    assert_ne!(Some(s2), r1.request_state(), "a new state every round");
    let sealed = inspect(&e, s2);
    assert_eq!(sealed["round"], 2);
    assert_eq!(
        sealed["state"]["a"]["resolution"]["v"],
        json!({"action": "accept", "content": {"resolution": "Duplicate"}}),
        "round 2's state carries round 1's answer"
    );

    // Round 3 answers only the latest question; the resolution comes from the state.
    let retry3 = work_item()
        .resume(&r2)
        .answers(json!({"duplicate_of": accept(json!({"duplicateOfId": 4301}))}));
    let done = complete(run(&e, &retry3, T0.add_secs(20), update_work_item));
    assert_eq!(text(&done), "Work item 4522 resolved as Duplicate of 4301.");
}

#[test]
fn multi_round_branch_that_needs_no_second_question_completes_in_round_two() {
    let e = engine();
    let r1 = irr(run(&e, &work_item(), T0, update_work_item));
    let retry = work_item()
        .resume(&r1)
        .answers(json!({"resolution": accept(json!({"resolution": "Fixed"}))}));
    let done = complete(run(&e, &retry, T0.add_secs(3), update_work_item));
    assert_eq!(text(&done), "Work item 4522 resolved as Fixed.");
}

#[test]
fn round_three_cannot_replace_an_answer_sealed_in_round_two() {
    let e = engine();
    let r1 = irr(run(&e, &work_item(), T0, update_work_item));
    let r2 = irr(run(
        &e,
        &work_item()
            .resume(&r1)
            .answers(json!({"resolution": accept(json!({"resolution": "Duplicate"}))})),
        T0.add_secs(1),
        update_work_item,
    ));
    // The client tries to change the sealed resolution while answering round 2.
    let retry = work_item().resume(&r2).answers(json!({
        "resolution": accept(json!({"resolution": "Fixed"})),
        "duplicate_of": accept(json!({"duplicateOfId": 7})),
    }));
    let done = complete(run(&e, &retry, T0.add_secs(2), update_work_item));
    assert_eq!(text(&done), "Work item 4522 resolved as Duplicate of 7.");
}

fn three_kinds(r: Round) -> Result<mrtr::ToolResult, Flow> {
    let name = r.elicit(
        "user_name",
        Form::new("What is your name?").string("name", "Name"),
    );
    let greeting = r.sample("greeting", Sampling::prompt("Say hello.", 50));
    let roots = r.roots("client_roots", RootsAsk::new());
    let (name, greeting, roots) = (name?, greeting?, roots?);
    Ok(ToolResult::text(format!(
        "{} / {} / {}",
        name.accepted()
            .and_then(|f| f.str("name"))
            .unwrap_or_default(),
        greeting.map(|g| g.text()).unwrap_or_default(),
        roots.map(|r| r[0].uri.clone()).unwrap_or_default()
    )))
}

#[test]
fn elicitation_sampling_and_roots_batch_into_one_round() {
    let e = engine();
    let req = tool("three");
    let r1 = irr(run(&e, &req, T0, three_kinds));
    assert_eq!(keys(&r1), ["user_name", "greeting", "client_roots"]);
    assert_eq!(
        request_json(&r1, "user_name")["method"],
        "elicitation/create"
    );
    assert_eq!(
        request_json(&r1, "greeting")["method"],
        "sampling/createMessage"
    );
    assert_eq!(request_json(&r1, "greeting")["params"]["maxTokens"], 50);
    assert_eq!(
        request_json(&r1, "client_roots"),
        json!({"method": "roots/list"})
    );
    let retry = req.reply(
        &r1,
        json!({
            "user_name": accept(json!({"name": "Alice"})),
            "greeting": sampled("Hello there!"),
            "client_roots": roots_answer(),
        }),
    );
    let done = complete(run(&e, &retry, T0.add_secs(1), three_kinds));
    assert_eq!(text(&done), "Alice / Hello there! / file:///test/root");
}

#[test]
fn partial_answers_are_kept_and_only_the_missing_one_is_asked_again() {
    let e = engine();
    let req = tool("three");
    let r1 = irr(run(&e, &req, T0, three_kinds));
    let r2 = irr(run(
        &e,
        &req.reply(
            &r1,
            json!({
                "user_name": accept(json!({"name": "Alice"})),
                "greeting": sampled("Hi"),
            }),
        ),
        T0.add_secs(1),
        three_kinds,
    ));
    assert_eq!(keys(&r2), ["client_roots"]);
    let done = complete(run(
        &e,
        &req.reply(&r2, json!({"client_roots": roots_answer()})),
        T0.add_secs(2),
        three_kinds,
    ));
    assert_eq!(text(&done), "Alice / Hi / file:///test/root");
}

#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Progress {
    percent: u32,
    note: String,
}

fn shed_load(r: Round) -> Result<mrtr::ToolResult, Flow> {
    match r.data::<Progress>()? {
        None => {
            r.set_data(&Progress {
                percent: 50,
                note: "half way".into(),
            })?;
            Err(Flow::StateOnly)
        }
        Some(p) => Ok(ToolResult::text(format!(
            "resumed at {}% ({})",
            p.percent, p.note
        ))),
    }
}

#[test]
fn state_only_round_carries_typed_data_and_the_retry_completes() {
    let e = engine();
    let req = tool("slow");
    let r1 = irr(run(&e, &req, T0, shed_load));
    assert!(r1.input_requests().is_none());
    let wire = r1.to_value();
    assert_eq!(wire["resultType"], "input_required");
    assert!(
        wire.get("inputRequests").is_none(),
        "state-only: no inputRequests at all"
    );
    assert!(wire["requestState"].as_str().is_some_and(|s| !s.is_empty()));
    // Retry immediately, as a client may, on another engine holding the key.
    let other = Engine::new(ring(SECRET_A), AUDIENCE);
    let done = complete(run(&other, &req.clone().resume(&r1), T0, shed_load));
    assert_eq!(text(&done), "resumed at 50% (half way)");
}

fn three_questions(r: Round) -> Result<mrtr::ToolResult, Flow> {
    for k in ["q1", "q2", "q3"] {
        let _ = r.elicit(k, Form::new(format!("Question {k}?")).string("a", "Answer"))?;
    }
    Ok(ToolResult::text("all answered"))
}

fn three_questions_prompt(r: Round) -> Result<mrtr::PromptResult, Flow> {
    three_questions(r)?;
    Ok(mrtr::PromptResult::new()
        .description("p")
        .user_text("all answered"))
}

#[test]
fn max_rounds_turns_the_next_input_required_into_a_tool_error_on_tools_call() {
    let e = engine().with_max_rounds(2);
    let req = tool("quiz");
    let r1 = irr(run(&e, &req, T0, three_questions));
    let r2 = irr(run(
        &e,
        &req.reply(&r1, json!({"q1": accept(json!({"a": "x"}))})),
        T0.add_secs(1),
        three_questions,
    ));
    assert_eq!(keys(&r2), ["q2"]);
    let third = run(
        &e,
        &req.reply(&r2, json!({"q2": accept(json!({"a": "y"}))})),
        T0.add_secs(2),
        three_questions,
    );
    let (result, error) = tool_error(third);
    let t = text(&result);
    assert!(t.contains("more rounds"), "{t}");
    assert!(t.contains("call the tool again"), "{t}");
    assert_eq!(error.diagnostic().category, "limit");
}

#[test]
fn max_rounds_is_a_json_rpc_invalid_params_on_prompts_get() {
    let e = engine().with_max_rounds(2);
    let req = prompt("quiz");
    let r1 = irr(run(&e, &req, T0, three_questions_prompt));
    let r2 = irr(run(
        &e,
        &req.reply(&r1, json!({"q1": accept(json!({"a": "x"}))})),
        T0.add_secs(1),
        three_questions_prompt,
    ));
    let e3 = protocol(run(
        &e,
        &req.reply(&r2, json!({"q2": accept(json!({"a": "y"}))})),
        T0.add_secs(2),
        three_questions_prompt,
    ));
    assert_eq!(e3.code(), -32602);
    assert_eq!(e3.to_jsonrpc(None)["error"]["code"], -32602);
}

#[test]
fn max_rounds_still_lets_the_last_allowed_round_complete() {
    let e = engine().with_max_rounds(3);
    let req = tool("quiz");
    let mut last = irr(run(&e, &req, T0, three_questions));
    for (i, k) in ["q1", "q2"].into_iter().enumerate() {
        last = irr(run(
            &e,
            &req.reply(&last, json!({k: accept(json!({"a": "x"}))})),
            T0.add_secs(i as u64 + 1),
            three_questions,
        ));
    }
    let done = complete(run(
        &e,
        &req.reply(&last, json!({"q3": accept(json!({"a": "z"}))})),
        T0.add_secs(9),
        three_questions,
    ));
    assert_eq!(text(&done), "all answered");
}

fn short_flow_engine() -> Engine {
    engine().with_seal_config(
        SealConfig::default()
            .with_flow_lifetime(Duration::from_secs(120))
            .unwrap(),
    )
}

#[test]
fn flow_deadline_is_fixed_in_round_one_and_never_extended() {
    let e = short_flow_engine();
    let req = tool("quiz");
    let r1 = irr(run(&e, &req, T0, three_questions));
    let c1 = inspect(&e, r1.request_state().unwrap());
    assert_eq!(c1["deadline"], T0.add_secs(120).unix_secs());
    let r2 = irr(run(
        &e,
        &req.reply(&r1, json!({"q1": accept(json!({"a": "x"}))})),
        T0.add_secs(100),
        three_questions,
    ));
    let c2 = inspect(&e, r2.request_state().unwrap());
    assert_eq!(c2["round"], 2);
    assert_eq!(
        c2["deadline"],
        T0.add_secs(120).unix_secs(),
        "re-sealing keeps the deadline"
    );
    assert!(c2["exp"].as_u64().unwrap() <= T0.add_secs(120).unix_secs());
}

#[test]
fn past_the_flow_deadline_tools_call_gets_a_tool_error_saying_the_window_lapsed() {
    let e = short_flow_engine();
    let req = tool("quiz");
    let r1 = irr(run(&e, &req, T0, three_questions));
    let r2 = irr(run(
        &e,
        &req.reply(&r1, json!({"q1": accept(json!({"a": "x"}))})),
        T0.add_secs(100),
        three_questions,
    ));
    let retry = req
        .clone()
        .resume(&r2)
        .answers(json!({"q2": accept(json!({"a": "y"}))}));
    // Within the clock skew (60 s by default) the flow still goes on.
    irr(run(&e, &retry, T0.add_secs(120 + 60), three_questions));
    // Past it: the handler never runs, and the model learns the window lapsed.
    let ran = Cell::new(false);
    let late = run(&e, &retry, T0.add_secs(120 + 61), |r| {
        ran.set(true);
        three_questions(r)
    });
    let (result, error) = tool_error(late);
    assert!(!ran.get(), "nothing is done with a lapsed state");
    let t = text(&result);
    assert!(t.contains("lapsed"), "{t}");
    assert!(t.contains("call the tool again"), "{t}");
    assert!(matches!(
        error.diagnostic().reject_reason,
        Some("expired" | "deadline")
    ));
}

#[test]
fn past_the_flow_deadline_prompts_get_gets_the_frozen_invalid_params() {
    let e = short_flow_engine();
    let req = prompt("quiz");
    let r1 = irr(run(&e, &req, T0, three_questions_prompt));
    let late = run(
        &e,
        &req.reply(&r1, json!({"q1": accept(json!({"a": "x"}))})),
        T0.add_secs(120 + 61),
        three_questions_prompt,
    );
    let err = protocol(late);
    assert_frozen_state_error(&err);
    assert_eq!(error_status(&err), 400);
}

#[test]
fn a_round_expires_after_its_ttl_even_inside_the_flow_lifetime() {
    let e = engine().with_seal_config(
        SealConfig::default()
            .with_ttl(Duration::from_secs(30))
            .unwrap(),
    );
    let req = tool("greet");
    let r1 = irr(run(&e, &req, T0, greet));
    let retry = req
        .clone()
        .resume(&r1)
        .answers(json!({"user_name": accept(json!({"name": "A"}))}));
    complete(run(&e, &retry, T0.add_secs(30 + 60), greet));
    let (result, _) = tool_error(run(&e, &retry, T0.add_secs(30 + 61), greet));
    assert!(text(&result).contains("lapsed"));
}

#[test]
fn a_guarded_side_effect_runs_exactly_once_across_re_runs() {
    let e = engine();
    let runs = Cell::new(0_u32);
    let handler = |r: Round| -> Result<mrtr::ToolResult, Flow> {
        let _ = r.elicit("item", Form::new("Which item?").string("item", "Item"))?;
        let receipt: String = r.once("charge", || {
            runs.set(runs.get() + 1);
            Ok(format!("receipt-{}", runs.get()))
        })?;
        let _ = r.elicit("confirm", Form::confirm("Ship it?"))?;
        Ok(ToolResult::text(receipt))
    };
    let req = tool("buy");
    let r1 = irr(run(&e, &req, T0, handler));
    assert_eq!(runs.get(), 0);
    let r2 = irr(run(
        &e,
        &req.reply(&r1, json!({"item": accept(json!({"item": "book"}))})),
        T0.add_secs(1),
        handler,
    ));
    assert_eq!(keys(&r2), ["confirm"]);
    assert_eq!(runs.get(), 1);
    // A wrong answer makes round 3 ask again; the step is not repeated.
    let r3 = irr(run(
        &e,
        &req.reply(&r2, json!({"confirm": accept(json!({"confirm": "yes"}))})),
        T0.add_secs(2),
        handler,
    ));
    assert_eq!(runs.get(), 1);
    let done = complete(run(
        &e,
        &req.reply(&r3, json!({"confirm": accept(json!({"confirm": true}))})),
        T0.add_secs(3),
        handler,
    ));
    assert_eq!(runs.get(), 1);
    assert_eq!(text(&done), "receipt-1", "the sealed result is returned");
}

#[test]
fn with_a_replay_guard_a_replayed_final_round_gets_a_tool_error() {
    let e = engine().with_replay_guard(Arc::new(MemoryReplayGuard::new(T0)));
    let runs = Cell::new(0_u32);
    let handler = |r: Round| -> Result<mrtr::ToolResult, Flow> {
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
    };
    let req = tool("deploy");
    let r1 = irr(run(&e, &req, T0, handler));
    let final_round = req
        .clone()
        .resume(&r1)
        .answers(json!({"confirm": accept(json!({"confirm": true}))}));
    let done = complete(run(&e, &final_round, T0.add_secs(1), handler));
    assert_eq!(text(&done), "deployment #1");
    let (replayed, error) = tool_error(run(&e, &final_round, T0.add_secs(2), handler));
    assert_eq!(runs.get(), 1, "the side effect did not run again");
    assert!(text(&replayed).contains("already carried out"));
    assert_eq!(error.diagnostic().category, "replay");
}

#[test]
fn without_a_replay_guard_once_only_protects_re_runs_within_the_flow() {
    // Documented limit: the sealed state alone cannot make a step single-use.
    let e = engine();
    let runs = Cell::new(0_u32);
    let handler = |r: Round| -> Result<mrtr::ToolResult, Flow> {
        let _ = r.elicit("confirm", Form::confirm("Deploy?"))?;
        let n: u32 = r.once("deploy", || {
            runs.set(runs.get() + 1);
            Ok(runs.get())
        })?;
        Ok(ToolResult::text(format!("deployment #{n}")))
    };
    let req = tool("deploy");
    let r1 = irr(run(&e, &req, T0, handler));
    let final_round = req
        .clone()
        .resume(&r1)
        .answers(json!({"confirm": accept(json!({"confirm": true}))}));
    complete(run(&e, &final_round, T0.add_secs(1), handler));
    complete(run(&e, &final_round, T0.add_secs(2), handler));
    assert_eq!(runs.get(), 2);
}

#[test]
fn request_state_differs_between_rounds_and_between_flows() {
    let e = engine();
    let req = tool("quiz");
    let a = irr(run(&e, &req, T0, three_questions));
    let b = irr(run(&e, &req, T0, three_questions));
    assert_ne!(
        a.request_state(),
        b.request_state(),
        "fresh nonce and flow id"
    );
    let mut seen = vec![a.request_state().unwrap().to_owned()];
    let mut last = a;
    for (i, k) in ["q1", "q2"].into_iter().enumerate() {
        last = irr(run(
            &e,
            &req.reply(&last, json!({k: accept(json!({"a": "x"}))})),
            T0.add_secs(i as u64 + 1),
            three_questions,
        ));
        let s = last.request_state().unwrap().to_owned();
        assert!(!seen.contains(&s));
        seen.push(s);
    }
}

#[test]
fn a_second_engine_with_the_same_key_ring_resumes_the_flow() {
    let a = Engine::new(ring(SECRET_A), AUDIENCE);
    let b = Engine::new(ring(SECRET_A), AUDIENCE);
    let r1 = irr(run(&a, &work_item(), T0, update_work_item));
    let r2 = irr(run(
        &b,
        &work_item()
            .resume(&r1)
            .answers(json!({"resolution": accept(json!({"resolution": "Duplicate"}))})),
        T0.add_secs(1),
        update_work_item,
    ));
    let done = complete(run(
        &a,
        &work_item()
            .resume(&r2)
            .answers(json!({"duplicate_of": accept(json!({"duplicateOfId": 4301}))})),
        T0.add_secs(2),
        update_work_item,
    ));
    assert_eq!(text(&done), "Work item 4522 resolved as Duplicate of 4301.");
}

#[test]
fn a_rotated_ring_that_still_holds_the_old_key_resumes_the_flow() {
    let old = Engine::new(ring(SECRET_A), AUDIENCE);
    let rotated = Engine::new(ring(&format!("{SECRET_B}, {SECRET_A}")), AUDIENCE);
    let r1 = irr(run(&old, &tool("greet"), T0, greet));
    let done = complete(run(
        &rotated,
        &tool("greet")
            .resume(&r1)
            .answers(json!({"user_name": accept(json!({"name": "Rot"}))})),
        T0.add_secs(1),
        greet,
    ));
    assert_eq!(text(&done), "Hello, Rot!");
}

#[test]
fn an_engine_with_another_key_refuses_the_state() {
    let a = Engine::new(ring(SECRET_A), AUDIENCE);
    let other = Engine::new(ring(SECRET_B), AUDIENCE);
    let r1 = irr(run(&a, &tool("greet"), T0, greet));
    let ran = Cell::new(false);
    let err = protocol(run(
        &other,
        &tool("greet")
            .resume(&r1)
            .answers(json!({"user_name": accept(json!({"name": "A"}))})),
        T0.add_secs(1),
        |r| {
            ran.set(true);
            greet(r)
        },
    ));
    assert_frozen_state_error(&err);
    assert_eq!(err.diagnostic().reject_reason, Some("unknown_key"));
    assert!(!ran.get());
}

/// Flips one character in the middle of a token (staying in the base64url alphabet).
fn tamper(token: &str) -> String {
    let mut b = token.as_bytes().to_vec();
    let i = b.len() / 2;
    b[i] = if b[i] == b'A' { b'B' } else { b'A' };
    String::from_utf8(b).unwrap()
}

#[test]
fn tampered_request_state_is_the_frozen_invalid_params_never_a_re_prompt() {
    let e = engine();
    for req in [tool("greet"), prompt("greet")] {
        let handler = |r: Round| -> Result<String, Flow> {
            greet(r)?;
            Ok("t".into())
        };
        let r1 = irr(run_text(&e, &req, T0, handler));
        let token = r1.request_state().unwrap();
        for bad in [
            tamper(token),
            format!("{token}-TAMPERED"),
            token[..token.len() - 1].to_owned(),
            String::new(),
            "not a token".to_owned(),
        ] {
            let o = run_text(
                &e,
                &req.clone()
                    .state(&bad)
                    .answers(json!({"user_name": accept(json!({"name": "A"}))})),
                T0.add_secs(1),
                handler,
            );
            let err = protocol(o);
            assert_frozen_state_error(&err);
            assert!(
                !err.to_jsonrpc(None).to_string().contains(&bad) || bad.is_empty(),
                "the token is never echoed"
            );
        }
    }
}

#[test]
fn request_state_replayed_on_another_request_is_refused() {
    let e = engine();
    let args = json!({"workItemId": 4522});
    let base = tool("update_work_item").args(args.clone());
    let r1 = irr(run(&e, &base, T0, update_work_item));
    let token = r1.request_state().unwrap();
    let answers = json!({"resolution": accept(json!({"resolution": "Fixed"}))});
    let cases: Vec<(&str, Req, Principal, Engine)> = vec![
        (
            "another tool",
            tool("close_work_item").args(args.clone()),
            Principal::anonymous(),
            engine(),
        ),
        (
            "other arguments",
            tool("update_work_item").args(json!({"workItemId": 4523})),
            Principal::anonymous(),
            engine(),
        ),
        (
            "no arguments",
            tool("update_work_item"),
            Principal::anonymous(),
            engine(),
        ),
        (
            "another carrier",
            prompt("update_work_item"),
            Principal::anonymous(),
            engine(),
        ),
        (
            "another principal",
            base.clone(),
            Principal::subject("mallory"),
            engine(),
        ),
        (
            "another audience",
            base.clone(),
            Principal::anonymous(),
            Engine::new(ring(SECRET_A), "https://other.example"),
        ),
    ];
    for (what, req, who, eng) in cases {
        let req = req.state(token).answers(answers.clone());
        let o = run_as(&eng, &req, &who, T0.add_secs(1), |r| {
            update_work_item(r).map(|_| String::new())
        });
        let err = match o {
            Outcome::Protocol(e) => e,
            other => panic!("{what}: expected -32602, got {}", other.label()),
        };
        assert_frozen_state_error(&err);
        assert!(
            matches!(
                err.diagnostic().reject_reason,
                Some("binding" | "principal" | "audience")
            ),
            "{what}: {:?}",
            err.diagnostic().reject_reason
        );
    }
    // The right request still resumes.
    complete(run(
        &e,
        &base.clone().state(token).answers(answers),
        T0.add_secs(1),
        update_work_item,
    ));
}

#[test]
fn a_state_bound_to_a_principal_opens_only_for_that_principal() {
    let e = engine();
    let alice = Principal::subject("alice").with_issuer("https://idp.example");
    let r1 = irr(e.run(tool("greet").build(), &alice, T0, greet));
    let retry = tool("greet")
        .resume(&r1)
        .answers(json!({"user_name": accept(json!({"name": "Alice"}))}));
    let anon = protocol(e.run(retry.build(), &Principal::anonymous(), T0, greet));
    assert_frozen_state_error(&anon);
    let done = complete(e.run(retry.build(), &alice, T0, greet));
    assert_eq!(text(&done), "Hello, Alice!");
}

#[test]
fn input_responses_that_are_not_an_object_are_invalid_params() {
    for bad in [
        Value::Null,
        json!([]),
        json!([{"user_name": accept(json!({"name": "A"}))}]),
        json!("user_name"),
        json!(12345),
    ] {
        let err = tool("greet")
            .answers(bad.clone())
            .try_build()
            .expect_err("inputResponses must be an object");
        assert_eq!(err.code(), -32602, "{bad}");
        assert!(err.public_message().contains("inputResponses"));
    }
}

#[test]
fn round_number_counts_up_and_the_handler_sees_it() {
    let e = engine();
    let seen = RefCell::new(Vec::new());
    let handler = |r: Round| -> Result<mrtr::ToolResult, Flow> {
        seen.borrow_mut().push(r.number());
        three_questions(r)
    };
    let req = tool("quiz");
    let mut last = irr(run(&e, &req, T0, handler));
    for (i, k) in ["q1", "q2", "q3"].into_iter().enumerate() {
        let o = run(
            &e,
            &req.reply(&last, json!({k: accept(json!({"a": "x"}))})),
            T0.add_secs(i as u64 + 1),
            handler,
        );
        if i < 2 {
            last = irr(o);
        } else {
            complete(o);
        }
    }
    assert_eq!(*seen.borrow(), [1, 2, 3, 4]);
}

#[test]
fn too_many_asks_in_one_round_is_a_tool_error_on_tools_call_and_invalid_params_elsewhere() {
    let e = engine().with_max_asks_per_round(2);
    let handler = |r: Round| -> Result<String, Flow> {
        let a = r.elicit("a", Form::confirm("A?"));
        let b = r.elicit("b", Form::confirm("B?"));
        let c = r.elicit("c", Form::confirm("C?"));
        let _ = a?;
        let _ = b?;
        let _ = c?;
        Ok("t".into())
    };
    let (result, error) = tool_error(run_text(&e, &tool("t"), T0, handler));
    assert!(text(&result).contains("more questions at once"));
    assert_eq!(error.diagnostic().category, "limit");
    assert_eq!(
        protocol(run_text(&e, &prompt("t"), T0, handler)).code(),
        -32602
    );
    // Two are fine.
    let two = |r: Round| -> Result<mrtr::ToolResult, Flow> {
        let a = r.elicit("a", Form::confirm("A?"));
        let b = r.elicit("b", Form::confirm("B?"));
        let _ = a?;
        let _ = b?;
        Ok(ToolResult::text("ok"))
    };
    assert_eq!(keys(&irr(run(&e, &tool("t"), T0, two))), ["a", "b"]);
}

#[test]
fn an_expired_state_presented_elsewhere_is_the_frozen_error_not_the_lapsed_advice() {
    // The "window lapsed" tool error is only for the very request and principal the
    // state was sealed for; anything else must not learn the token was authentic.
    let e = short_flow_engine();
    let r1 = irr(run(&e, &tool("quiz"), T0, three_questions));
    let late = T0.add_secs(120 + 61);
    let answers = json!({"q1": accept(json!({"a": "x"}))});
    let other_tool = tool("other").resume(&r1).answers(answers.clone());
    assert_frozen_state_error(&protocol(run(&e, &other_tool, late, three_questions)));
    let same = tool("quiz").resume(&r1).answers(answers);
    let bob = Principal::subject("bob");
    assert_frozen_state_error(&protocol(e.run(same.build(), &bob, late, three_questions)));
    tool_error(run(&e, &same, late, three_questions));
}

#[test]
fn handler_data_is_carried_typed_across_question_rounds() {
    #[derive(Debug, Serialize, Deserialize, PartialEq)]
    struct Cart {
        items: Vec<String>,
        total_cents: u64,
    }
    let e = engine();
    let seen = RefCell::new(Vec::new());
    let handler = |r: Round| -> Result<mrtr::ToolResult, Flow> {
        seen.borrow_mut().push(r.data::<Cart>()?);
        if r.data::<Cart>()?.is_none() {
            r.set_data(&Cart {
                items: vec!["book".into(), "pen".into()],
                total_cents: 1250,
            })?;
        }
        let _ = r.elicit("pay", Form::confirm("Pay 12.50?"))?;
        let cart: Cart = r.data()?.expect("carried");
        Ok(ToolResult::text(format!("{} items", cart.items.len())))
    };
    let r1 = irr(run(&e, &tool("buy"), T0, handler));
    let done = complete(run(
        &e,
        &tool("buy")
            .resume(&r1)
            .answers(json!({"pay": accept(json!({"confirm": true}))})),
        T0.add_secs(1),
        handler,
    ));
    assert_eq!(text(&done), "2 items");
    let seen = seen.borrow();
    assert_eq!(seen[0], None);
    assert_eq!(
        seen[1],
        Some(Cart {
            items: vec!["book".into(), "pen".into()],
            total_cents: 1250
        })
    );
}

#[test]
fn the_sealed_state_never_holds_undeclared_answer_fields() {
    let e = engine();
    let r1 = irr(run(&e, &tool("greet"), T0, greet));
    let r2 = irr(run(
        &e,
        &tool("greet")
            .resume(&r1)
            .answers(json!({"user_name": accept(json!({"name": "Al", "password": "hunter2"}))})),
        T0.add_secs(1),
        |r| {
            ask_name(&r)?;
            let _ = r.elicit("more", Form::confirm("More?"))?;
            Ok(ToolResult::text("x"))
        },
    ));
    let sealed = inspect(&e, r2.request_state().unwrap());
    assert!(!sealed["state"].to_string().contains("hunter2"));
}

#[test]
fn answers_too_large_to_seal_are_a_limit_not_an_internal_error() {
    // A client can send a long free-text answer; carrying it into the next round
    // would exceed the sealed state's size limit (8 KiB by default).
    let e = engine();
    let handler = |r: Round| -> Result<String, Flow> {
        let _ = r.elicit(
            "essay",
            Form::new("Tell us everything.").string("text", "Text"),
        )?;
        let _ = r.elicit("more", Form::confirm("Anything else?"))?;
        Ok("t".into())
    };
    let long = "x".repeat(20_000);
    let answers = json!({"essay": accept(json!({"text": long}))});
    let (result, error) = tool_error(run_text(
        &e,
        &tool("t").answers(answers.clone()),
        T0,
        handler,
    ));
    assert!(text(&result).contains("too large"), "{}", text(&result));
    assert_ne!(error.code(), -32603);
    let err = protocol(run_text(&e, &prompt("t").answers(answers), T0, handler));
    assert_eq!(err.code(), -32602, "{err:?}");
    assert_eq!(error_status(&err), 400);
}
