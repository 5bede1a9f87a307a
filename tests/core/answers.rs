//! Answers: which are used, which are asked again, and what the user is told.
//!
//! A missing, wrong-key, wrong-kind or schema-invalid answer is never accepted:
//! the engine asks again in a fresh InputRequiredResult (spec §2.5), whose
//! message says what was wrong without echoing the value. Extra keys are ignored;
//! decline and cancel are answers; a reworded question is a new question.

use mrtr_testkit as common;

use std::cell::RefCell;

use common::*;
use mrtr::ToolResult;
use mrtr::engine::{AnswerPolicy, Elicited, Flow, Form, RootsAsk, Round, Sampling, UrlVisit};
use mrtr::wire::{PrimitiveSchema, RequestedSchema};
use serde_json::{Value, json};

/// A marker that must never appear in a re-ask message.
const MARKER: &str = "S3CRET-VALUE-77";

fn profile_form() -> Form {
    let p = |v: Value| PrimitiveSchema::from_value(&v).unwrap();
    Form::new("Tell us about you.")
        .field(
            "name",
            p(json!({"type": "string", "minLength": 2, "maxLength": 20})),
            true,
        )
        .field(
            "age",
            p(json!({"type": "integer", "minimum": 0, "maximum": 150})),
            true,
        )
        .field(
            "email",
            p(json!({"type": "string", "format": "email"})),
            false,
        )
        .field(
            "plan",
            p(json!({"type": "string", "oneOf": [{"const": "free", "title": "Free"},
                                                  {"const": "pro", "title": "Pro"}]})),
            true,
        )
        .field(
            "size",
            p(json!({"type": "string", "enum": ["s", "m", "l"], "enumNames": ["Small", "Medium", "Large"]})),
            false,
        )
        .field(
            "topics",
            p(json!({"type": "array", "items": {"type": "string", "enum": ["rust", "mcp", "crypto"]},
                     "minItems": 1, "maxItems": 2})),
            false,
        )
        .field(
            "ratio",
            p(json!({"type": "number", "minimum": 0.5, "maximum": 1.5})),
            false,
        )
        .field("agree", p(json!({"type": "boolean"})), false)
        .field("since", p(json!({"type": "string", "format": "date"})), false)
        .field("site", p(json!({"type": "string", "format": "uri"})), false)
}

fn valid_profile() -> Value {
    json!({"name": "Alice", "age": 30, "email": "alice@example.com", "plan": "pro", "size": "m",
           "topics": ["rust", "mcp"], "ratio": 1.0, "agree": true, "since": "2024-02-29",
           "site": "https://example.com"})
}

/// What the handler was handed, so tests can assert it never saw a bad answer.
type Seen = RefCell<Vec<Elicited>>;

fn profile_handler(seen: &Seen) -> impl Fn(Round) -> Result<mrtr::ToolResult, Flow> + Copy + '_ {
    move |r| {
        let e = r.elicit("profile", profile_form())?;
        seen.borrow_mut().push(e.clone());
        Ok(ToolResult::text("thanks"))
    }
}

#[test]
fn a_valid_answer_is_accepted_and_undeclared_fields_are_dropped() {
    let seen = Seen::default();
    let e = engine();
    let r1 = irr(run(&e, &tool("profile"), T0, profile_handler(&seen)));
    let mut content = valid_profile();
    content["isAdmin"] = true.into();
    let retry = tool("profile")
        .resume(&r1)
        .answers(json!({"profile": accept(content)}));
    complete(run(&e, &retry, T0.add_secs(1), profile_handler(&seen)));
    let got = seen.borrow();
    let fields = got[0].accepted().expect("accepted");
    assert!(fields.as_map().get("isAdmin").is_none());
    assert_eq!(fields.str("name"), Some("Alice"));
    assert_eq!(fields.i64("age"), Some(30));
    assert_eq!(fields.strings("topics"), Some(vec!["rust", "mcp"]));
    // What reached the handler validates against the very schema asked.
    let kept = profile_form()
        .schema()
        .validate_content(fields.as_map())
        .unwrap();
    assert_eq!(&kept, fields.as_map());
}

#[test]
fn optional_fields_may_be_left_out() {
    let seen = Seen::default();
    let e = engine();
    let retry = tool("profile")
        .answers(json!({"profile": accept(json!({"name": "Bo", "age": 0, "plan": "free"}))}));
    complete(run(&e, &retry, T0, profile_handler(&seen)));
    assert_eq!(seen.borrow().len(), 1);
}

#[test]
fn schema_invalid_answers_are_asked_again_with_what_was_wrong_and_never_the_value() {
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "missing required",
            json!({"age": 30, "plan": "pro"}),
            "name: is required",
        ),
        (
            "too short",
            json!({"name": "A", "age": 30, "plan": "pro"}),
            "name: must be at least 2 characters",
        ),
        (
            "too long",
            json!({"name": format!("{MARKER}{MARKER}"), "age": 30, "plan": "pro"}),
            "name: must be at most 20 characters",
        ),
        (
            "wrong type",
            json!({"name": 12345, "age": 30, "plan": "pro"}),
            "name: must be text",
        ),
        (
            "not whole",
            json!({"name": "Al", "age": 30.5, "plan": "pro"}),
            "age: must be a whole number",
        ),
        (
            "below minimum",
            json!({"name": "Al", "age": -1, "plan": "pro"}),
            "age: must be at least 0",
        ),
        (
            "above maximum",
            json!({"name": "Al", "age": 151, "plan": "pro"}),
            "age: must be at most 150",
        ),
        (
            "number as text",
            json!({"name": "Al", "age": "30", "plan": "pro"}),
            "age: must be a whole number",
        ),
        (
            "bad email",
            json!({"name": "Al", "age": 3, "plan": "pro", "email": MARKER}),
            "email: must be a valid email",
        ),
        (
            "title is not a value",
            json!({"name": "Al", "age": 3, "plan": "Pro"}),
            "plan: must be one of: free, pro",
        ),
        (
            "enumNames is not a value",
            json!({"name": "Al", "age": 3, "plan": "pro", "size": "Small"}),
            "size: must be one of: s, m, l",
        ),
        (
            "unknown choice",
            json!({"name": "Al", "age": 3, "plan": MARKER}),
            "plan: must be one of",
        ),
        (
            "multi unknown",
            json!({"name": "Al", "age": 3, "plan": "pro", "topics": [MARKER]}),
            "topics: may only contain",
        ),
        (
            "multi too many",
            json!({"name": "Al", "age": 3, "plan": "pro", "topics": ["rust", "mcp", "crypto"]}),
            "topics: allows at most 2",
        ),
        (
            "multi too few",
            json!({"name": "Al", "age": 3, "plan": "pro", "topics": []}),
            "topics: needs at least 1",
        ),
        (
            "multi twice",
            json!({"name": "Al", "age": 3, "plan": "pro", "topics": ["rust", "rust"]}),
            "topics: must not list a choice twice",
        ),
        (
            "ratio bound",
            json!({"name": "Al", "age": 3, "plan": "pro", "ratio": 2}),
            "ratio: must be at most 1.5",
        ),
        (
            "bool as text",
            json!({"name": "Al", "age": 3, "plan": "pro", "agree": "true"}),
            "agree: must be true or false",
        ),
        (
            "bad date",
            json!({"name": "Al", "age": 3, "plan": "pro", "since": "2023-02-29"}),
            "since: must be a valid date",
        ),
        (
            "bad uri",
            json!({"name": "Al", "age": 3, "plan": "pro", "site": format!("no scheme {MARKER}")}),
            "site: must be a valid uri",
        ),
    ];
    let e = engine();
    let r1 = irr(run(
        &e,
        &tool("profile"),
        T0,
        profile_handler(&Seen::default()),
    ));
    let original = message(&r1, "profile");
    for (what, content, expected) in cases {
        let seen = Seen::default();
        for req in [
            // with the state of round 1, and cold (no state)
            tool("profile").resume(&r1),
            tool("profile"),
        ] {
            let retry = req.answers(json!({"profile": accept(content.clone())}));
            let again = irr(run(&e, &retry, T0.add_secs(1), profile_handler(&seen)));
            assert_eq!(keys(&again), ["profile"], "{what}");
            let m = message(&again, "profile");
            assert!(m.starts_with(&original), "{what}: {m}");
            assert!(m.contains("Please correct"), "{what}: {m}");
            assert!(m.contains(expected), "{what}: {m}");
            assert!(!m.contains(MARKER), "{what}: the value is echoed: {m}");
            assert!(!m.contains("30.5") && !m.contains("12345"), "{what}: {m}");
            assert!(again.request_state().is_some());
        }
        assert!(
            seen.borrow().is_empty(),
            "{what}: never handed to the handler"
        );
    }
}

/// A form of the four string formats, through the builder's helpers.
fn formats_handler(seen: &Seen) -> impl Fn(Round) -> Result<mrtr::ToolResult, Flow> + Copy + '_ {
    move |r| {
        let form = Form::new("Contact and appointment")
            .email("mail", "Email")
            .uri("site", "Web site")
            .date("day", "Day")
            .date_time("at", "Start");
        let e = r.elicit("when", form)?;
        seen.borrow_mut().push(e.clone());
        Ok(ToolResult::text("booked"))
    }
}

#[test]
fn a_wrong_format_from_a_builder_helper_is_asked_again_and_a_right_one_taken() {
    let seen = Seen::default();
    let e = engine();
    let r1 = irr(run(&e, &tool("f"), T0, formats_handler(&seen)));
    let props = &request_json(&r1, "when")["params"]["requestedSchema"]["properties"];
    assert_eq!(
        props["day"],
        json!({"type": "string", "title": "Day", "format": "date"})
    );
    assert_eq!(props["at"]["format"], "date-time");
    let wrong = json!({"mail": format!("{MARKER}@localhost"), "site": "example.com",
                       "day": "2023-02-29", "at": "2026-07-28T24:00:00Z"});
    let again = irr(run(
        &e,
        &tool("f")
            .resume(&r1)
            .answers(json!({"when": accept(wrong)})),
        T0.add_secs(1),
        formats_handler(&seen),
    ));
    let m = message(&again, "when");
    for part in [
        "mail: must be a valid email",
        "site: must be a valid uri",
        "day: must be a valid date",
        "at: must be a valid date-time",
    ] {
        assert!(m.contains(part), "{m}");
    }
    assert!(!m.contains(MARKER), "{m}");
    assert!(seen.borrow().is_empty(), "never handed to the handler");
    let right = json!({"mail": "ada@example.com", "site": "https://example.com",
                       "day": "2024-02-29", "at": "2026-07-28T10:00:00+02:00"});
    complete(run(
        &e,
        &tool("f")
            .resume(&again)
            .answers(json!({"when": accept(right)})),
        T0.add_secs(2),
        formats_handler(&seen),
    ));
    assert_eq!(
        seen.borrow()[0].accepted().unwrap().str("day"),
        Some("2024-02-29")
    );
}

#[test]
fn every_problem_is_listed_in_one_re_ask() {
    let e = engine();
    let retry =
        tool("profile").answers(json!({"profile": accept(json!({"name": 1, "plan": "x"}))}));
    let again = irr(run(&e, &retry, T0, profile_handler(&Seen::default())));
    let m = message(&again, "profile");
    for part in [
        "name: must be text",
        "age: is required",
        "plan: must be one of",
    ] {
        assert!(m.contains(part), "{m}");
    }
}

fn name_handler(seen: &Seen) -> impl Fn(Round) -> Result<mrtr::ToolResult, Flow> + Copy + '_ {
    move |r| {
        let e = r.elicit(
            "user_name",
            Form::new("What is your name?").string("name", "Name"),
        )?;
        seen.borrow_mut().push(e.clone());
        Ok(ToolResult::text("ok"))
    }
}

#[test]
fn an_answer_under_the_wrong_key_is_ignored_and_the_question_asked_again() {
    let seen = Seen::default();
    let e = engine();
    let r1 = irr(run(&e, &tool("n"), T0, name_handler(&seen)));
    for req in [tool("n").resume(&r1), tool("n")] {
        let retry = req.answers(json!({"wrong_key": accept(json!({"name": "Alice"}))}));
        let again = irr(run(&e, &retry, T0.add_secs(1), name_handler(&seen)));
        assert_eq!(keys(&again), ["user_name"]);
        assert_eq!(message(&again, "user_name"), "What is your name?");
    }
    assert!(seen.borrow().is_empty());
}

#[test]
fn a_missing_answer_is_asked_again_never_an_error() {
    let seen = Seen::default();
    let e = engine();
    let r1 = irr(run(&e, &tool("n"), T0, name_handler(&seen)));
    for req in [
        tool("n").resume(&r1),
        tool("n").resume(&r1).answers(json!({})),
    ] {
        let again = irr(run(&e, &req, T0.add_secs(1), name_handler(&seen)));
        assert_eq!(keys(&again), ["user_name"]);
        assert_ne!(again.request_state(), r1.request_state());
    }
    assert!(seen.borrow().is_empty());
}

#[test]
fn extra_answers_are_ignored() {
    let seen = Seen::default();
    let e = engine();
    let r1 = irr(run(&e, &tool("n"), T0, name_handler(&seen)));
    let retry = tool("n").resume(&r1).answers(json!({
        "user_name": accept(json!({"name": "Alice"})),
        "unknown_extra_key": accept(json!({"foo": "bar"})),
        "another_unexpected": {"whatever": [1, 2, 3]},
        "junk": null,
    }));
    complete(run(&e, &retry, T0.add_secs(1), name_handler(&seen)));
    assert_eq!(
        seen.borrow()[0].accepted().unwrap().str("name"),
        Some("Alice")
    );
}

#[test]
fn an_answer_of_the_wrong_kind_is_never_taken_for_the_one_asked() {
    let e = engine();
    let elicit = accept(json!({"name": "Alice"}));
    // An answer of each other kind, and garbage, for each kind of question.
    let wrong_for_form = [
        roots_answer(),
        sampled("Alice"),
        json!(12345),
        json!("accept"),
        json!({"action": "maybe"}),
        json!({"action": "accept", "content": {"name": {"nested": 1}}}),
    ];
    let seen = Seen::default();
    for bad in wrong_for_form {
        let again = irr(run(
            &e,
            &tool("n").answers(json!({"user_name": bad.clone()})),
            T0,
            name_handler(&seen),
        ));
        let m = message(&again, "user_name");
        assert!(m.contains("not in the expected format"), "{bad}: {m}");
    }
    assert!(seen.borrow().is_empty());

    let sampler = |r: Round| -> Result<mrtr::ToolResult, Flow> {
        let m = r.sample("capital", Sampling::prompt("Capital of France?", 10))?;
        Ok(ToolResult::text(m.map(|m| m.text()).unwrap_or_default()))
    };
    for bad in [
        elicit.clone(),
        roots_answer(),
        json!({"role": "assistant", "content": "Paris", "model": "m"}),
        json!({"role": "system", "content": {"type": "text", "text": "x"}, "model": "m"}),
    ] {
        let again = irr(run(
            &e,
            &tool("s").answers(json!({"capital": bad.clone()})),
            T0,
            sampler,
        ));
        assert_eq!(keys(&again), ["capital"], "{bad}");
    }
    let rooter = |r: Round| -> Result<mrtr::ToolResult, Flow> {
        let roots = r.roots("roots", RootsAsk::new())?;
        Ok(ToolResult::text(format!(
            "{}",
            roots.map_or(0, |r| r.len())
        )))
    };
    for bad in [
        elicit,
        sampled("x"),
        json!({"roots": [{"uri": "https://not-a-file"}]}),
        json!({"roots": "file:///x"}),
    ] {
        let again = irr(run(
            &e,
            &tool("r").answers(json!({"roots": bad.clone()})),
            T0,
            rooter,
        ));
        assert_eq!(keys(&again), ["roots"], "{bad}");
    }
    // The right kinds are accepted.
    complete(run(
        &e,
        &tool("s").answers(json!({"capital": sampled("Paris")})),
        T0,
        sampler,
    ));
    complete(run(
        &e,
        &tool("r").answers(json!({"roots": roots_answer()})),
        T0,
        rooter,
    ));
}

#[test]
fn decline_and_cancel_reach_the_handler_as_answers() {
    let e = engine();
    for (action, expected) in [
        ("decline", Elicited::Declined),
        ("cancel", Elicited::Cancelled),
    ] {
        let seen = Seen::default();
        let r1 = irr(run(&e, &tool("n"), T0, name_handler(&seen)));
        // Even with content, which is dropped.
        let retry = tool("n")
            .resume(&r1)
            .answers(json!({"user_name": {"action": action, "content": {"name": MARKER}}}));
        complete(run(&e, &retry, T0.add_secs(1), name_handler(&seen)));
        assert_eq!(seen.borrow().as_slice(), std::slice::from_ref(&expected));
        // And a declined answer is sealed like any other: a later round sees it again.
        let seen2 = Seen::default();
        let two = |r: Round| -> Result<mrtr::ToolResult, Flow> {
            let e = r.elicit(
                "user_name",
                Form::new("What is your name?").string("name", "Name"),
            )?;
            seen2.borrow_mut().push(e);
            let _ = r.elicit("more", Form::confirm("More?"))?;
            Ok(ToolResult::text("ok"))
        };
        let r2 = irr(run(
            &e,
            &tool("n")
                .resume(&r1)
                .answers(json!({"user_name": {"action": action}})),
            T0.add_secs(1),
            two,
        ));
        complete(run(
            &e,
            &tool("n")
                .resume(&r2)
                .answers(json!({"more": accept(json!({"confirm": true}))})),
            T0.add_secs(2),
            two,
        ));
        assert_eq!(seen2.borrow().as_slice(), [expected.clone(), expected]);
    }
}

#[test]
fn a_url_elicitation_accept_carries_no_content() {
    let e = engine();
    let got = RefCell::new(None);
    let handler = |r: Round| -> Result<mrtr::ToolResult, Flow> {
        let v = r.visit(
            "sign_in",
            UrlVisit::new("Sign in", "https://auth.example/connect"),
        )?;
        *got.borrow_mut() = Some(v);
        Ok(ToolResult::text("ok"))
    };
    let caps = json!({"elicitation": {"form": {}, "url": {}}});
    let r1 = irr(run(&e, &tool("c").caps(caps.clone()), T0, handler));
    assert_eq!(
        request_json(&r1, "sign_in")["params"],
        json!({"mode": "url", "message": "Sign in", "url": "https://auth.example/connect"})
    );
    let retry = tool("c")
        .caps(caps)
        .resume(&r1)
        .answers(json!({"sign_in": {"action": "accept", "content": {"x": "y"}}}));
    complete(run(&e, &retry, T0.add_secs(1), handler));
    let got = got.borrow();
    assert!(
        got.as_ref()
            .unwrap()
            .accepted()
            .unwrap()
            .as_map()
            .is_empty()
    );
}

#[test]
fn a_form_accept_without_content_is_asked_again() {
    let seen = Seen::default();
    let e = engine();
    let again = irr(run(
        &e,
        &tool("n").answers(json!({"user_name": {"action": "accept"}})),
        T0,
        name_handler(&seen),
    ));
    assert!(message(&again, "user_name").contains("name: is required"));
    assert!(seen.borrow().is_empty());
}

#[test]
fn an_answer_to_a_question_reworded_since_it_was_asked_is_stale_and_asked_again() {
    // Instance v1 asks; the retry lands on v2, which words the question differently.
    let e = engine();
    let v1 = |r: Round| -> Result<mrtr::ToolResult, Flow> {
        let _ = r.elicit(
            "k",
            Form::new("Which environment?").one_of("env", ["staging", "production"]),
        )?;
        Ok(ToolResult::text("v1"))
    };
    let seen = Seen::default();
    let v2 = |r: Round| -> Result<mrtr::ToolResult, Flow> {
        let a = r.elicit(
            "k",
            Form::new("Which environment?").one_of("env", ["staging", "production", "canary"]),
        )?;
        seen.borrow_mut().push(a);
        Ok(ToolResult::text("v2"))
    };
    let r1 = irr(run(&e, &tool("d"), T0, v1));
    let retry = tool("d")
        .resume(&r1)
        .answers(json!({"k": accept(json!({"env": "staging"}))}));
    let again = irr(run(&e, &retry, T0.add_secs(1), v2));
    assert_eq!(keys(&again), ["k"]);
    let m = message(&again, "k");
    assert!(m.contains("question changed"), "{m}");
    assert!(seen.borrow().is_empty(), "the stale answer was not used");
    // Answering the new question works.
    let retry = tool("d")
        .resume(&again)
        .answers(json!({"k": accept(json!({"env": "canary"}))}));
    complete(run(&e, &retry, T0.add_secs(2), v2));
    assert_eq!(
        seen.borrow()[0].accepted().unwrap().str("env"),
        Some("canary")
    );
}

#[test]
fn a_sealed_answer_to_a_question_reworded_later_is_stale_and_asked_again() {
    // Rolling upgrade after the answer was sealed (spec.md §4.4).
    let e = engine();
    let v1 = |r: Round| -> Result<mrtr::ToolResult, Flow> {
        let _ = r.elicit(
            "github_login",
            Form::new("GitHub user?").string("name", "Name"),
        )?;
        let _ = r.elicit(
            "google_login",
            Form::new("Google user?").string("name", "Name"),
        )?;
        Ok(ToolResult::text("v1"))
    };
    let seen = Seen::default();
    let v2 = |r: Round| -> Result<mrtr::ToolResult, Flow> {
        let a = r.elicit(
            "github_login",
            Form::new("Your GitHub username?").string("name", "Name"),
        )?;
        seen.borrow_mut().push(a);
        Ok(ToolResult::text("v2"))
    };
    let r1 = irr(run(&e, &tool("l"), T0, v1));
    let r2 = irr(run(
        &e,
        &tool("l")
            .resume(&r1)
            .answers(json!({"github_login": accept(json!({"name": "octocat"}))})),
        T0.add_secs(1),
        v1,
    ));
    assert_eq!(keys(&r2), ["google_login"]);
    let again = irr(run(
        &e,
        &tool("l")
            .resume(&r2)
            .answers(json!({"google_login": accept(json!({"name": "x"}))})),
        T0.add_secs(2),
        v2,
    ));
    assert_eq!(keys(&again), ["github_login"]);
    assert!(message(&again, "github_login").contains("question changed"));
    assert!(seen.borrow().is_empty());
}

#[test]
fn the_same_question_asked_again_on_another_instance_keeps_its_answer() {
    // spec.md §4.4: the new instance keeps github_login, ignores google_login, asks microsoft_login.
    let e = engine();
    let v1 = |r: Round| -> Result<mrtr::ToolResult, Flow> {
        let a = r.elicit(
            "github_login",
            Form::new("GitHub user?").string("name", "Name"),
        );
        let b = r.elicit(
            "google_login",
            Form::new("Google user?").string("name", "Name"),
        );
        let _ = a?;
        let _ = b?;
        Ok(ToolResult::text("v1"))
    };
    let v2 = |r: Round| -> Result<mrtr::ToolResult, Flow> {
        let a = r.elicit(
            "github_login",
            Form::new("GitHub user?").string("name", "Name"),
        );
        let b = r.elicit(
            "microsoft_login",
            Form::new("Microsoft user?").string("name", "Name"),
        );
        let (a, _) = (a?, b?);
        Ok(ToolResult::text(
            a.accepted().and_then(|f| f.str("name")).unwrap_or_default(),
        ))
    };
    let r1 = irr(run(&e, &tool("l"), T0, v1));
    let r2 = irr(run(
        &e,
        &tool("l").resume(&r1).answers(json!({
            "github_login": accept(json!({"name": "octocat"})),
            "google_login": accept(json!({"name": "g"})),
        })),
        T0.add_secs(1),
        v2,
    ));
    assert_eq!(keys(&r2), ["microsoft_login"]);
    let done = complete(run(
        &e,
        &tool("l")
            .resume(&r2)
            .answers(json!({"microsoft_login": accept(json!({"name": "m"}))})),
        T0.add_secs(2),
        v2,
    ));
    assert_eq!(text(&done), "octocat");
}

#[test]
fn strict_policy_refuses_cold_answers_that_lenient_accepts() {
    let cold = tool("n").answers(json!({"user_name": accept(json!({"name": "Alice"}))}));
    let seen = Seen::default();
    complete(run(&engine(), &cold, T0, name_handler(&seen)));
    assert_eq!(seen.borrow().len(), 1, "lenient (the default) accepts");

    let strict = engine().with_policy(AnswerPolicy::Strict);
    let seen = Seen::default();
    let again = irr(run(&strict, &cold, T0, name_handler(&seen)));
    assert_eq!(keys(&again), ["user_name"]);
    assert!(seen.borrow().is_empty(), "strict refuses a cold answer");
    // Answering the question it issued is accepted.
    let retry = tool("n")
        .resume(&again)
        .answers(json!({"user_name": accept(json!({"name": "Alice"}))}));
    complete(run(&strict, &retry, T0.add_secs(1), name_handler(&seen)));
    assert_eq!(seen.borrow().len(), 1);
}

#[test]
fn strict_policy_refuses_an_answer_to_a_question_not_yet_issued() {
    let strict = engine().with_policy(AnswerPolicy::Strict);
    let two = |r: Round| -> Result<mrtr::ToolResult, Flow> {
        let _ = r.elicit("first", Form::confirm("First?"))?;
        let _ = r.elicit("second", Form::confirm("Second?"))?;
        Ok(ToolResult::text("done"))
    };
    let r1 = irr(run(&strict, &tool("t"), T0, two));
    // Answer both at once: only "first" was issued.
    let both = json!({"first": accept(json!({"confirm": true})), "second": accept(json!({"confirm": true}))});
    let r2 = irr(run(
        &strict,
        &tool("t").resume(&r1).answers(both.clone()),
        T0.add_secs(1),
        two,
    ));
    assert_eq!(keys(&r2), ["second"]);
    // The lenient default takes the pre-emptive answer since it validates.
    let lenient = engine();
    let l1 = irr(run(&lenient, &tool("t"), T0, two));
    complete(run(
        &lenient,
        &tool("t").resume(&l1).answers(both),
        T0.add_secs(1),
        two,
    ));
}

#[test]
fn validate_content_covers_the_primitive_schemas() {
    let schema = RequestedSchema::from_value(&json!({
        "type": "object",
        "properties": {
            "s": {"type": "string", "minLength": 1, "maxLength": 3},
            "n": {"type": "number", "minimum": -1.5, "maximum": 1.5},
            "i": {"type": "integer"},
            "b": {"type": "boolean"},
            "e": {"type": "string", "enum": ["a", "b"]},
            "t": {"type": "string", "oneOf": [{"const": "x", "title": "Ex"}]},
            "m": {"type": "array", "items": {"anyOf": [{"const": "p", "title": "P"}, {"const": "q", "title": "Q"}]}},
            "dt": {"type": "string", "format": "date-time"},
        },
        "required": ["s"],
    }))
    .unwrap();
    let ok = |v: Value| schema.validate_content(v.as_object().unwrap());
    assert!(ok(json!({"s": "abc"})).is_ok());
    assert!(
        ok(json!({"s": "日本語"})).is_ok(),
        "lengths count characters"
    );
    assert!(ok(json!({"s": "日本語!"})).is_err());
    assert!(ok(json!({"s": ""})).is_err());
    assert!(
        ok(
            json!({"s": "a", "n": -1.5, "i": 7, "b": false, "e": "b", "t": "x", "m": ["q", "p"],
                      "dt": "2026-07-28T12:00:00Z"})
        )
        .is_ok()
    );
    assert!(ok(json!({"s": "a", "n": 1.6})).is_err());
    assert!(ok(json!({"s": "a", "i": 1.5})).is_err());
    assert!(
        ok(json!({"s": "a", "i": 2.0})).is_ok(),
        "an integral number is a whole number"
    );
    assert!(
        ok(json!({"s": "a", "t": "Ex"})).is_err(),
        "a title is not a value"
    );
    assert!(ok(json!({"s": "a", "m": ["P"]})).is_err());
    assert!(ok(json!({"s": "a", "m": "p"})).is_err());
    assert!(ok(json!({"s": "a", "dt": "2026-07-28"})).is_err());
    let problems = ok(json!({"n": "x", "b": 1})).unwrap_err();
    let mut fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
    fields.sort_unstable();
    assert_eq!(fields, ["b", "n", "s"], "every problem is reported");
}
