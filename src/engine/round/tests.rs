//! Unit tests of `round`.

use super::*;
use crate::engine::Outcome;
use crate::principal::Principal;
use crate::result::ToolResult;
use crate::seal::{Key, Keyring};
use serde_json::json;

fn request(state: Option<&str>, answers: Value) -> CarrierRequest {
    let mut p = json!({"name": "t", "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}});
    if let Some(s) = state {
        p["requestState"] = json!(s);
        p["inputResponses"] = answers;
    }
    CarrierRequest::from_params(CarrierMethod::ToolsCall, Some(&p)).unwrap()
}

/// The state a token seals, as the next round opens it.
fn sealed(engine: &Engine, token: &str, now: Timestamp) -> FlowState {
    let round = engine
        .begin_from(
            request(Some(token), json!({})),
            &Principal::anonymous(),
            None,
            now,
            None,
            None,
            None,
        )
        .unwrap();
    let prior = round.shared.fixed.prior.as_ref().unwrap();
    prior.state().clone()
}

fn token(outcome: Outcome<ToolResult>) -> String {
    match outcome {
        Outcome::InputRequired(irr) => irr.request_state().unwrap().to_owned(),
        other => panic!("not input_required: {other:?}"),
    }
}

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

#[test]
fn answers_are_sealed_only_by_a_round_that_suspends_and_as_checked() {
    let engine = Engine::new(
        Keyring::new(Key::from_secret(&[7; 32]).unwrap()),
        "https://mcp.example",
    );
    let handler = |r: Round| -> Result<ToolResult, Flow> {
        for key in ["a", "b", "c"] {
            let _ = r.elicit(key, Form::new("Who?").string("name", "Name"))?;
        }
        Ok(ToolResult::text("done"))
    };
    let (who, now) = (Principal::anonymous(), Timestamp::now());
    let run = |state: Option<&str>, answers: Value| {
        engine.run(request(state, answers), &who, now, handler)
    };
    let t1 = token(run(None, json!({})));
    assert!(sealed(&engine, &t1, now).answers.is_empty());
    // Round 2 takes `a` (its undeclared field dropped) and suspends on `b`: `a`
    // is sealed as the handler took it, under the digest it was asked with.
    let asked_a = sealed(&engine, &t1, now).asked["a"].clone();
    let t2 = token(run(
        Some(&t1),
        json!({"a": accept(json!({"name": "x", "extra": 1}))}),
    ));
    let s2 = sealed(&engine, &t2, now);
    assert_eq!(s2.answers.len(), 1);
    let a = &s2.answers["a"];
    assert_eq!((a.kind, a.digest), (asked_a.kind, asked_a.digest));
    assert_eq!(a.value, accept(json!({"name": "x"})));
    // Round 3 answers only `b`: `a` is carried from the state as it was sealed.
    let t3 = token(run(Some(&t2), json!({"b": accept(json!({"name": "y"}))})));
    let s3 = sealed(&engine, &t3, now);
    assert_eq!(s3.answers["a"], s2.answers["a"]);
    assert_eq!(s3.answers["b"].value, accept(json!({"name": "y"})));
    assert_eq!(s3.answers.len(), 2);
    // Round 4 completes from the two sealed answers and the fresh third.
    match run(Some(&t3), json!({"c": accept(json!({"name": "z"}))})) {
        Outcome::Complete(v) => assert_eq!(v, ToolResult::text("done")),
        other => panic!("not complete: {other:?}"),
    }
}

#[test]
fn a_key_asked_again_is_one_question_in_its_first_place_and_never_another() {
    let engine = Engine::new(
        Keyring::new(Key::from_secret(&[7; 32]).unwrap()),
        "https://mcp.example",
    );
    let (who, now) = (Principal::anonymous(), Timestamp::now());
    let who_form = || Form::new("Who?").string("name", "Name");
    // a, b, then a again with the same question: two asks, a in its first place.
    let outcome = engine.run(request(None, json!({})), &who, now, |r: Round| {
        let _ = r.elicit("a", who_form());
        let _ = r.elicit("b", Form::new("Where?").string("city", "City"));
        let _ = r.elicit("a", who_form())?;
        Ok(ToolResult::text("done"))
    });
    let Outcome::InputRequired(irr) = outcome else {
        panic!("not input_required: {outcome:?}")
    };
    let keys: Vec<&str> = irr
        .input_requests()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["a", "b"]);
    let t1 = irr.request_state().unwrap().to_owned();
    assert_eq!(sealed(&engine, &t1, now).asked.len(), 2);
    // Round 2: a taken twice and b, complete. Asking a again with another
    // question is refused: one key, one question, within a round too.
    let answers = json!({"a": accept(json!({"name": "x"})), "b": accept(json!({"city": "y"}))});
    let outcome = engine.run(
        request(Some(&t1), answers.clone()),
        &who,
        now,
        |r: Round| {
            let _ = r.elicit("a", who_form())?;
            let _ = r.elicit("a", who_form())?;
            let _ = r.elicit("b", Form::new("Where?").string("city", "City"))?;
            Ok(ToolResult::text("done"))
        },
    );
    assert!(matches!(outcome, Outcome::Complete(_)), "{outcome:?}");
    let outcome = engine.run(request(Some(&t1), answers), &who, now, |r: Round| {
        let _ = r.elicit("a", who_form())?;
        let _ = r.elicit("a", Form::new("Where?").string("city", "City"))?;
        Ok(ToolResult::text("done"))
    });
    match outcome {
        Outcome::Protocol(e) => {
            assert_eq!(e.code(), -32603);
            assert!(
                e.diagnostic()
                    .detail
                    .contains("twice with different questions")
            );
        }
        other => panic!("not refused: {other:?}"),
    }
}
