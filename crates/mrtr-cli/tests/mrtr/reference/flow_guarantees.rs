//! What a flow guarantees on the wire, in process (the reference service behind
//! `client::InProcess`, as `mrtr serve` assembles it, on a fake clock): a
//! requestState opens only for its own request and audience and before it
//! lapses, a confirmed act happens once, the round cap and the capability gate
//! hold, and retries are stateless. The private log record each request leaves
//! is checked where the server's log line was.

use crate::support as common;

use std::time::Duration;

use common::*;
use mrtr::engine::Engine;
use mrtr::seal::SealConfig;
use serde_json::json;

#[test]
fn request_state_replayed_on_another_tool_or_other_arguments_is_refused() {
    let s = LocalServer::start();
    // From one tool onto another (with the answer the first asked for).
    let first = tool_call(80, ELICIT, None);
    let state = state_of(&s.call(&first, 200));
    let other = tool_call(81, "test_input_required_result_request_state", None);
    let v = s.call(&retry(&other, 81, Some(name_answer("Ada")), &state), 400);
    assert_frozen_state_response(&v);
    // ... onto a prompt and a resource.
    let prompt = carrier(82, "prompts/get", PROMPT, None);
    assert_frozen_state_response(&s.call(&retry(&prompt, 82, None, &state), 400));
    let read = carrier(83, "resources/read", VAULT, None);
    assert_frozen_state_response(&s.call(&retry(&read, 83, None, &state), 400));

    // The same tool with other arguments.
    let a = tool_call(84, "deploy", Some(json!({"service": "a"})));
    let deploy_state = state_of(&s.call(&a, 200));
    let b = tool_call(85, "deploy", Some(json!({"service": "b"})));
    let v = s.call(
        &retry(&b, 85, Some(confirm_answer(true)), &deploy_state),
        400,
    );
    assert_frozen_state_response(&v);
    // ... or with the arguments dropped.
    let none = tool_call(86, "deploy", None);
    assert_frozen_state_response(&s.call(
        &retry(&none, 86, Some(confirm_answer(true)), &deploy_state),
        400,
    ));
    // ... or tampered with.
    let mut tampered = deploy_state.clone().into_bytes();
    let mid = tampered.len() / 2;
    tampered[mid] = if tampered[mid] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    assert_frozen_state_response(
        &s.call(&retry(&a, 87, Some(confirm_answer(true)), &tampered), 400),
    );

    // Nothing was deployed by the refused retries: the genuine one is #1.
    let done = s.call(
        &retry(&a, 88, Some(confirm_answer(true)), &deploy_state),
        200,
    );
    assert_eq!(complete_text(&done), "Deployed a (deployment #1).");

    // The private log record names the reason, never the token (the HTTP status
    // 400 was checked by each call; tests/server_flows.rs checks the log lines).
    for id in [81, 85, 86] {
        let log = s.log_for(id);
        assert_eq!(log.outcome, "error:-32602", "{log:?}");
        assert_eq!(log.reject_reason, Some("binding"), "{log:?}");
    }
    let log = s.log_for(87);
    assert!(log.reject_reason.is_some(), "{log:?}");
    assert_ne!(log.reject_reason, Some("binding"), "{log:?}");
    let all = format!("{:?}", s.logs());
    for token in [&state, &deploy_state, &tampered] {
        assert!(!all.contains(token.as_str()), "a token reached the log");
        // Not even a recognisable slice of it.
        assert!(
            !all.contains(&token[10..40]),
            "a token slice reached the log"
        );
    }
}

#[test]
fn expired_state_is_a_tool_error_on_tools_call_and_32602_on_prompts_get() {
    let ttl = SealConfig::default()
        .with_ttl(Duration::from_secs(1))
        .unwrap();
    let s = LocalServer::on(engine().with_seal_config(ttl.clone().with_clock_skew(Duration::ZERO)));
    // The same TTL with the default skew (60 s) tolerates the lapse.
    let tolerant = LocalServer::on(engine().with_seal_config(ttl));
    let call = tool_call(1, ELICIT, None);
    let call_state = state_of(&s.call(&call, 200));
    let prompt = carrier(2, "prompts/get", PROMPT, None);
    let prompt_state = state_of(&s.call(&prompt, 200));
    let read = carrier(6, "resources/read", VAULT, None);
    let read_state = state_of(&s.call(&read, 200));
    let tolerant_state = state_of(&tolerant.call(&call, 200));
    // Issued at T0; expiry is T0 + 1 s and the check is `now > exp`, so at T0 + 2
    // both have lapsed.
    s.advance(2);
    tolerant.advance(2);

    let v = s.call(
        &retry(&call, 3, Some(name_answer("Late")), &call_state),
        200,
    );
    let text = tool_error_text(&v);
    assert!(text.contains("lapsed"), "{text}");
    assert!(text.contains("call the tool again"), "{text}");
    let log = s.log_for(3);
    assert_eq!(log.outcome, "tool_error", "{log:?}");
    assert_eq!(log.reject_reason, Some("expired"), "{log:?}");

    let answer = json!({"user_context": accept(json!({"context": "late"}))});
    let v = s.call(&retry(&prompt, 4, Some(answer), &prompt_state), 400);
    assert_frozen_state_response(&v);
    let log = s.log_for(4);
    assert_eq!(log.outcome, "error:-32602", "{log:?}");
    assert_eq!(log.reject_reason, Some("expired"), "{log:?}");

    // resources/read has no tool-error channel either: the frozen -32602.
    let reveal = json!({"reveal": accept(json!({"confirm": true}))});
    assert_frozen_state_response(&s.call(&retry(&read, 7, Some(reveal), &read_state), 400));

    // Calling again, as the tool error says, starts a fresh flow.
    let fresh = tool_call(5, ELICIT, None);
    assert_eq!(asked_keys(&s.call(&fresh, 200)), ["user_name"]);

    let v = tolerant.call(
        &retry(&call, 8, Some(name_answer("Skew")), &tolerant_state),
        200,
    );
    assert_eq!(complete_text(&v), "Hello, Skew!");
}

#[test]
fn deploy_confirm_then_act_happens_exactly_once() {
    let s = LocalServer::start();
    let web = Some(json!({"service": "web"}));

    // Decline: a tool error, nothing deployed.
    let first = tool_call(1, "deploy", web.clone());
    let irr = s.call(&first, 200);
    let ask = &result(&irr)["inputRequests"]["confirm"];
    assert_eq!(ask["method"], "elicitation/create");
    assert!(
        ask["params"]["message"].as_str().unwrap().contains("web"),
        "{irr}"
    );
    let state = state_of(&irr);
    let declined = json!({"confirm": {"action": "decline"}});
    let v = s.call(&retry(&first, 2, Some(declined), &state), 200);
    assert!(tool_error_text(&v).contains("did not confirm"), "{v}");
    // Accepted but unticked: also a tool error.
    let v = s.call(&retry(&first, 3, Some(confirm_answer(false)), &state), 200);
    assert!(tool_error_text(&v).contains("did not confirm"), "{v}");

    // Accept: deployed once.
    let first = tool_call(4, "deploy", web.clone());
    let state = state_of(&s.call(&first, 200));
    let last = retry(&first, 5, Some(confirm_answer(true)), &state);
    let v = s.call(&last, 200);
    assert_eq!(complete_text(&v), "Deployed web (deployment #1).");

    // Replaying the final retry (same state, same answers, new id): refused as
    // already carried out, not deployment #2.
    for id in [6, 7] {
        let mut replay = last.clone();
        replay["id"] = json!(id);
        let v = s.call(&replay, 200);
        let text = tool_error_text(&v);
        assert!(text.contains("already carried out"), "{text}");
        assert!(!text.contains("#2"), "{text}");
    }
    let log = s.log_for(6);
    assert_eq!(log.outcome, "tool_error", "{log:?}");
    assert_eq!(s.deployments(), 1);

    // A fresh call is a new flow.
    let first = tool_call(8, "deploy", web.clone());
    let state = state_of(&s.call(&first, 200));
    let v = s.call(&retry(&first, 9, Some(confirm_answer(true)), &state), 200);
    assert_eq!(complete_text(&v), "Deployed web (deployment #2).");

    // A missing service is a tool error at once, before any question.
    let v = s.call(&tool_call(10, "deploy", Some(json!({}))), 200);
    assert!(tool_error_text(&v).contains("service"), "{v}");
}

#[test]
fn max_rounds_turns_a_further_round_into_a_tool_error() {
    let s = LocalServer::on(engine().with_max_rounds(1));
    // plan_trip: round 1 asks the kind; answering it would need a second IRR.
    let first = tool_call(1, "plan_trip", None);
    let state = state_of(&s.call(&first, 200));
    let kind = json!({"kind": accept(json!({"kind": "beach", "travellers": 2}))});
    let v = s.call(&retry(&first, 2, Some(kind), &state), 200);
    let text = tool_error_text(&v);
    assert!(text.contains("more rounds"), "{text}");
    assert!(
        text.contains("start over") || text.contains("call the tool again"),
        "{text}"
    );
    // multi_round likewise.
    let first = tool_call(3, MULTI, None);
    let state = state_of(&s.call(&first, 200));
    let step1 = json!({"step1": accept(json!({"name": "Ada"}))});
    let v = s.call(&retry(&first, 4, Some(step1), &state), 200);
    assert!(tool_error_text(&v).contains("more rounds"), "{v}");
    let log = s.log_for(4);
    assert_eq!(log.outcome, "tool_error", "{log:?}");
    assert_eq!(log.round, Some(2), "{log:?}");
    // A one-round flow is unaffected.
    let first = tool_call(5, ELICIT, None);
    let state = state_of(&s.call(&first, 200));
    let v = s.call(&retry(&first, 6, Some(name_answer("One")), &state), 200);
    assert_eq!(complete_text(&v), "Hello, One!");
}

#[test]
fn undeclared_capability_is_32021_naming_it() {
    let s = LocalServer::start();
    let mut body = tool_call(1, ELICIT, None);
    body["params"]["_meta"] = meta(&json!({}));
    let v = s.call(&body, 400);
    let e = rpc_error(&v, -32021);
    assert!(
        e["data"]["requiredCapabilities"]["elicitation"].is_object(),
        "{v}"
    );
    // URL mode needs elicitation.url: form alone is not enough.
    let mut body = tool_call(2, "connect_account", None);
    body["params"]["_meta"] = meta(&json!({"elicitation": {"form": {}}}));
    let v = s.call(&body, 400);
    let e = rpc_error(&v, -32021);
    assert!(
        e["data"]["requiredCapabilities"]["elicitation"]["url"].is_object(),
        "{v}"
    );
    let log = s.log_for(2);
    assert_eq!(log.outcome, "error:-32021", "{log:?}");
}

#[test]
fn another_audience_refuses_state_sealed_with_the_same_key() {
    // All three seal with the same key.
    let a = LocalServer::on(Engine::new(ring(SECRET_A), "fleet-a"));
    let b = LocalServer::on(Engine::new(ring(SECRET_A), "fleet-b"));
    let a2 = LocalServer::on(Engine::new(ring(SECRET_A), "fleet-a"));
    let first = tool_call(1, ELICIT, None);
    let state = state_of(&a.call(&first, 200));
    let second = retry(&first, 2, Some(name_answer("Aud")), &state);
    assert_frozen_state_response(&b.call(&second, 400));
    let log = b.log_for(2);
    assert_eq!(log.reject_reason, Some("audience"), "{log:?}");
    assert_eq!(complete_text(&a2.call(&second, 200)), "Hello, Aud!");
}

#[test]
fn retries_are_stateless_and_idempotent_without_side_effects() {
    let s = LocalServer::start();
    let first = tool_call(1, MULTI, None);
    let s1 = state_of(&s.call(&first, 200));
    let step1 = json!({"step1": accept(json!({"name": "Ada"}))});
    // The same round-2 retry twice: the same questions both times.
    let r2a = s.call(&retry(&first, 2, Some(step1.clone()), &s1), 200);
    let r2b = s.call(&retry(&first, 3, Some(step1.clone()), &s1), 200);
    assert_eq!(asked_keys(&r2a), ["step2"]);
    assert_eq!(asked_keys(&r2b), ["step2"]);
    // A retry without answers asks again, in a later round.
    let again = s.call(&retry(&first, 4, None, &s1), 200);
    assert_eq!(asked_keys(&again), ["step1"]);
    assert_eq!(s.log_for(4).round, Some(2));
    // An answer of the wrong kind is asked again with a note, not accepted.
    let wrong = json!({"step1": roots(json!([]))});
    let v = s.call(&retry(&first, 5, Some(wrong), &s1), 200);
    assert_eq!(asked_keys(&v), ["step1"], "{v}");
    let msg = result(&v)["inputRequests"]["step1"]["params"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(msg.contains("again"), "{msg}");
    // Unknown answer keys are ignored.
    let mut extra = step1.clone();
    extra["nobody_asked"] = accept(json!({"x": 1}));
    let v = s.call(&retry(&first, 6, Some(extra), &s1), 200);
    assert_eq!(asked_keys(&v), ["step2"], "{v}");
    // That Mcp-Session-Id is ignored (sessions are gone) is a header matter:
    // tests/server_flows.rs, mcp_session_id_is_ignored.
}
