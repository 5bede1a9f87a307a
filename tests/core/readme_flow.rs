//! The README's handler, run through every way a confirmation can go: accept,
//! decline, cancel, and an accept the client sends before it was asked. The
//! handler below is the README's, line for line (the first test checks that), so
//! the README cannot drift into an example that deploys without consent.

use mrtr_testkit as common;

use std::cell::Cell;

use common::*;
use mrtr::{Confirmation, Engine, Service, ToolResult};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize)]
struct Deploy {
    service: String,
}

thread_local! {
    /// Deployments made on this test's thread (`handle_sync` runs handlers on the
    /// caller's thread, and each test has its own).
    static DEPLOYED: Cell<u64> = const { Cell::new(0) };
}

/// The README's side effect, counting what ran.
async fn deploy(_service: &str) -> Result<u64, mrtr::Error> {
    DEPLOYED.with(|d| d.set(d.get() + 1));
    Ok(DEPLOYED.with(Cell::get))
}

fn deployed() -> u64 {
    DEPLOYED.with(Cell::get)
}

/// Builds the README's service.
fn readme_service(engine: Engine) -> Service {
    // README BEGIN
    let service = Service::new(engine, "example", "1.0.0").tool(
        "deploy",
        "Deploys a service after the user confirms.",
        json!({"type": "object", "properties": {"service": {"type": "string"}}, "required": ["service"]}),
        move |round| async move {
            let args: Deploy = round.arguments()?; // typed: a mismatch is an isError result
            let question = format!("Deploy {} to production?", args.service);
            if round.confirm("confirm", question)? != Confirmation::Accepted {
                return Ok(ToolResult::text("Nothing was deployed."));
            }
            let id = round.once_async("deploy", || deploy(&args.service)).await?;
            Ok(ToolResult::text(format!("Deployed {} (deployment {id}).", args.service)))
        },
    );
    // README END
    service
}

fn readme_snippet(text: &str) -> Vec<String> {
    let start = text
        .find("let service = Service::new(engine")
        .expect("the README builds the service");
    let rest = &text[start..];
    let end = rest
        .find("\n);")
        .expect("the service expression ends with `);`")
        + 3;
    rest[..end].lines().map(|l| l.trim().to_owned()).collect()
}

#[test]
fn the_handler_here_is_the_readme_handler() {
    let readme = include_str!("../../README.md");
    let me = include_str!("readme_flow.rs");
    let begin = "// README BEGIN\n";
    let mine = &me[me.find(begin).unwrap() + begin.len()..me.find("    // README END").unwrap()];
    let mine: Vec<String> = mine.lines().map(|l| l.trim().to_owned()).collect();
    assert_eq!(
        readme_snippet(readme),
        mine,
        "README.md and tests/readme_flow.rs differ"
    );
}

fn first_round(s: &Service) -> Value {
    call(
        s,
        &tool("deploy").args(json!({"service": "web"})).body(1),
        T0,
    )
}

fn retry(s: &Service, first: &Value, answer: Value) -> Value {
    let state = first["result"]["requestState"]
        .as_str()
        .expect("a sealed state");
    let req = tool("deploy")
        .args(json!({"service": "web"}))
        .state(state)
        .answers(json!({"confirm": answer}));
    call(s, &req.body(2), T0.add_secs(5))
}

fn result_text(v: &Value) -> &str {
    v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {v}"))
}

#[test]
fn accept_deploys_once() {
    let s = readme_service(engine());
    let r1 = first_round(&s);
    assert_eq!(r1["result"]["resultType"], "input_required");
    assert_eq!(
        r1["result"]["inputRequests"]["confirm"]["method"],
        "elicitation/create"
    );
    assert_eq!(deployed(), 0, "nothing runs before the answer");
    let done = retry(&s, &r1, accept(json!({"confirm": true})));
    assert_eq!(result_text(&done), "Deployed web (deployment 1).");
    assert_eq!(deployed(), 1);
}

#[test]
fn decline_cancel_and_an_unchecked_box_never_deploy() {
    for answer in [
        json!({"action": "decline"}),
        json!({"action": "cancel"}),
        accept(json!({"confirm": false})),
    ] {
        let before = deployed();
        let s = readme_service(engine());
        let r1 = first_round(&s);
        let done = retry(&s, &r1, answer.clone());
        assert_eq!(result_text(&done), "Nothing was deployed.", "{answer}");
        assert_eq!(done["result"].get("isError"), None);
        assert_eq!(deployed(), before, "{answer}: deployed without consent");
    }
}

#[test]
fn an_accept_sent_before_the_question_was_asked_is_asked_anyway() {
    let s = readme_service(engine());
    // The client answers `confirm` on its very first request, unasked.
    let eager = tool("deploy")
        .args(json!({"service": "web"}))
        .answers(json!({"confirm": accept(json!({"confirm": true}))}));
    let r1 = call(&s, &eager.body(1), T0);
    assert_eq!(r1["result"]["resultType"], "input_required", "{r1}");
    assert_eq!(deployed(), 0, "an unasked accept must not deploy");
    // Answering the question that was actually put to the user deploys.
    let done = retry(&s, &r1, accept(json!({"confirm": true})));
    assert_eq!(result_text(&done), "Deployed web (deployment 1).");
    assert_eq!(deployed(), 1);
}

/// A two-step flow: a form first, then a confirmation.
fn name_then_confirm(r: mrtr::Round) -> Result<mrtr::ToolResult, mrtr::Flow> {
    let name = r.elicit("name", mrtr::Form::new("Name?").string("name", "Name"))?;
    let name = name
        .accepted()
        .and_then(|f| f.str("name"))
        .unwrap_or("?")
        .to_owned();
    match r.confirm("confirm", format!("Create {name}?"))? {
        Confirmation::Accepted => Ok(mrtr::ToolResult::text(format!("created {name}"))),
        _ => Ok(mrtr::ToolResult::text("not created")),
    }
}

#[test]
fn a_confirmation_counts_only_after_an_earlier_round_issued_it() {
    let e = engine();
    let r1 = irr(run(&e, &tool("create"), T0, name_then_confirm));
    assert_eq!(keys(&r1), ["name"]);
    // Round 2: the client answers the name and, unasked, also sends `confirm: accept`.
    let r2 = irr(run(
        &e,
        &tool("create").reply(
            &r1,
            json!({"name": accept(json!({"name": "Ada"})), "confirm": accept(json!({"confirm": true}))}),
        ),
        T0.add_secs(1),
        name_then_confirm,
    ));
    assert_eq!(
        keys(&r2),
        ["confirm"],
        "the confirmation must be put to the user"
    );
    // Round 3: the answer to the question round 2 issued counts; the name carried over.
    let done = complete(run(
        &e,
        &tool("create").reply(&r2, json!({"confirm": accept(json!({"confirm": true}))})),
        T0.add_secs(2),
        name_then_confirm,
    ));
    assert_eq!(text(&done), "created Ada");
    // A decline in round 3 instead creates nothing.
    let declined = complete(run(
        &e,
        &tool("create").reply(&r2, json!({"confirm": {"action": "decline"}})),
        T0.add_secs(2),
        name_then_confirm,
    ));
    assert_eq!(text(&declined), "not created");
}

#[test]
fn a_wrong_argument_type_is_a_tool_error_naming_the_field_not_the_value() {
    let s = readme_service(engine());
    let v = call(
        &s,
        &tool("deploy").args(json!({"service": 4711})).body(1),
        T0,
    );
    assert_eq!(v["result"]["isError"], true, "{v}");
    let t = result_text(&v);
    assert!(t.contains("\"service\"") && t.contains("string"), "{t}");
    assert!(!t.contains("4711"), "{t}");
}
