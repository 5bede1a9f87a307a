//! The capability gate as the engine applies it: a required ask the client did
//! not declare fails with -32021 naming exactly what is missing; an optional one
//! is dropped and never sent; only the three carrier methods can ask at all.

use mrtr_testkit as common;

use mrtr::{PromptDefinition, ResourceDefinition};
use std::cell::RefCell;

use common::*;
use mrtr::engine::{Elicited, Engine, Flow, Form, Outcome, RootsAsk, Round, Sampling, UrlVisit};
use mrtr::service::Service;
use mrtr::streamable_http::error_status;
use mrtr::wire::CarrierMethod;
use mrtr::wire::{CreateMessageParams, InputRequests, InputRequiredResult};
use mrtr::{PromptResult, ToolResult};
use serde_json::{Value, json};

fn name_form() -> Form {
    Form::new("What is your name?").string("name", "Name")
}

/// Asks a form, a sampling call and the roots, all required, in one batch.
fn batch(r: Round) -> Result<mrtr::ToolResult, Flow> {
    let a = r.elicit("user_name", name_form());
    let b = r.sample("greeting", Sampling::prompt("Say hello.", 50));
    let c = r.roots("client_roots", RootsAsk::new());
    let _ = a?;
    b?;
    c?;
    Ok(ToolResult::text("done"))
}

#[track_caller]
fn assert_missing(o: Outcome, expected: Value) {
    let e = protocol(o);
    assert_eq!(e.code(), -32021, "{e:?}");
    assert_eq!(error_status(&e), 400);
    let wire = e.to_jsonrpc(Some(&mrtr::wire::RequestId::Number(1.into())));
    assert_eq!(wire["error"]["code"], -32021);
    assert!(
        wire["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty())
    );
    assert_eq!(
        wire["error"]["data"],
        json!({"requiredCapabilities": expected}),
        "data holds exactly the missing capabilities"
    );
}

#[test]
fn a_required_elicitation_without_the_capability_is_32021_in_the_spec_shape() {
    let e = engine();
    let handler = |r: Round| -> Result<mrtr::ToolResult, Flow> {
        let _ = r.elicit("user_name", name_form())?;
        Ok(ToolResult::text("hi"))
    };
    let o = run(&e, &tool("t").caps(json!({})), T0, handler);
    let err = protocol(o.clone());
    // spec.md §3 example: {"requiredCapabilities": {"elicitation": {}}}
    assert_missing(o, json!({"elicitation": {}}));
    assert!(err.public_message().contains("elicitation"));
    // Never a tool error, even on tools/call: the request cannot be processed.
    assert!(!matches!(
        run(&e, &tool("t").caps(json!({})), T0, handler),
        Outcome::ToolError { .. }
    ));
}

#[test]
fn missing_capabilities_are_merged_across_the_asks_of_one_run() {
    let e = engine();
    assert_missing(
        run(&e, &tool("t").caps(json!({"sampling": {}})), T0, batch),
        json!({"elicitation": {}, "roots": {}}),
    );
    assert_missing(
        run(&e, &tool("t").caps(json!({})), T0, batch),
        json!({"elicitation": {}, "sampling": {}, "roots": {}}),
    );
    assert_missing(
        run(
            &e,
            &tool("t").caps(json!({"elicitation": {}, "roots": {}})),
            T0,
            batch,
        ),
        json!({"sampling": {}}),
    );
    // All declared: one IRR with the three.
    let i = irr(run(&e, &tool("t"), T0, batch));
    assert_eq!(keys(&i).len(), 3);
}

#[test]
fn sub_capabilities_are_named_exactly() {
    let e = engine();
    let url = |r: Round| -> Result<mrtr::ToolResult, Flow> {
        let _ = r.visit(
            "sign_in",
            UrlVisit::new("Sign in", "https://auth.example/x"),
        )?;
        Ok(ToolResult::text("ok"))
    };
    assert_missing(
        run(&e, &tool("t").caps(json!({"elicitation": {}})), T0, url),
        json!({"elicitation": {"url": {}}}),
    );
    let form = |r: Round| -> Result<mrtr::ToolResult, Flow> {
        let _ = r.elicit("f", name_form())?;
        Ok(ToolResult::text("ok"))
    };
    assert_missing(
        run(
            &e,
            &tool("t").caps(json!({"elicitation": {"url": {}}})),
            T0,
            form,
        ),
        json!({"elicitation": {"form": {}}}),
    );
    irr(run(
        &e,
        &tool("t").caps(json!({"elicitation": {"form": {}}})),
        T0,
        form,
    ));
    let with_tools = |r: Round| -> Result<mrtr::ToolResult, Flow> {
        let s = Sampling::prompt("Weather?", 100).tools(vec![
            json!({"name": "get_weather", "inputSchema": {"type": "object"}}),
        ]);
        r.sample("s", s)?;
        Ok(ToolResult::text("ok"))
    };
    assert_missing(
        run(&e, &tool("t").caps(json!({"sampling": {}})), T0, with_tools),
        json!({"sampling": {"tools": {}}}),
    );
    irr(run(
        &e,
        &tool("t").caps(json!({"sampling": {"tools": {}}})),
        T0,
        with_tools,
    ));
    let with_context = |r: Round| -> Result<mrtr::ToolResult, Flow> {
        let mut p = CreateMessageParams::user_text("Summarize", 100);
        p.include_context = Some("thisServer".into());
        r.sample("s", Sampling::from_params(p))?;
        Ok(ToolResult::text("ok"))
    };
    assert_missing(
        run(
            &e,
            &tool("t").caps(json!({"sampling": {}})),
            T0,
            with_context,
        ),
        json!({"sampling": {"context": {}}}),
    );
}

#[test]
fn a_form_and_a_url_ask_without_elicitation_name_both_modes() {
    let e = engine();
    let both = |r: Round| -> Result<mrtr::ToolResult, Flow> {
        let a = r.elicit("f", name_form());
        let b = r.visit("u", UrlVisit::new("Sign in", "https://auth.example/x"));
        let _ = a?;
        let _ = b?;
        Ok(ToolResult::text("ok"))
    };
    let err = protocol(run(&e, &tool("t").caps(json!({"sampling": {}})), T0, both));
    assert_eq!(
        err.data().unwrap(),
        &json!({"requiredCapabilities": {"elicitation": {"form": {}, "url": {}}}})
    );
    let req = &err.data().unwrap()["requiredCapabilities"]["elicitation"];
    // Declaring what the error names must be enough to get past the gate.
    let declared = json!({"sampling": {}, "elicitation": req.clone()});
    irr(run(&e, &tool("t").caps(declared), T0, both));
}

#[test]
fn the_gate_reads_the_capabilities_of_the_current_request_only() {
    let e = engine();
    let handler = |r: Round| -> Result<mrtr::ToolResult, Flow> {
        let _ = r.elicit("a", name_form())?;
        let _ = r.elicit("b", Form::confirm("Sure?"))?;
        Ok(ToolResult::text("ok"))
    };
    let r1 = irr(run(&e, &tool("t"), T0, handler));
    let r2 = irr(run(
        &e,
        &tool("t")
            .resume(&r1)
            .answers(json!({"a": accept(json!({"name": "Al"}))})),
        T0.add_secs(1),
        handler,
    ));
    // The retry no longer declares elicitation: the next question cannot be sent.
    assert_missing(
        run(
            &e,
            &tool("t").caps(json!({})).resume(&r2),
            T0.add_secs(2),
            handler,
        ),
        json!({"elicitation": {}}),
    );
}

#[test]
fn an_optional_ask_the_client_cannot_serve_is_dropped_and_never_sent() {
    let e = engine();
    let seen = RefCell::new(Vec::new());
    let handler = |r: Round| -> Result<mrtr::ToolResult, Flow> {
        let form = r.elicit("user_name", name_form().optional());
        let roots = r.roots("roots", RootsAsk::new().optional());
        let sampled = r.sample(
            "capital_question",
            Sampling::prompt("What is the capital of France?", 100),
        );
        let (form, roots, sampled) = (form?, roots?, sampled?);
        seen.borrow_mut().push((form, roots.is_none()));
        Ok(ToolResult::text(
            sampled.map(|m| m.text()).unwrap_or_default(),
        ))
    };
    let caps = json!({"sampling": {}});
    let r1 = irr(run(&e, &tool("t").caps(caps.clone()), T0, handler));
    assert_eq!(keys(&r1), ["capital_question"], "only what was declared");
    let wire = r1.to_value().to_string();
    assert!(!wire.contains("elicitation/create") && !wire.contains("roots/list"));
    let retry = tool("t")
        .caps(caps)
        .resume(&r1)
        .answers(json!({"capital_question": sampled("Paris")}));
    let done = complete(run(&e, &retry, T0.add_secs(1), handler));
    assert_eq!(text(&done), "Paris");
    assert_eq!(seen.borrow().as_slice(), [(Elicited::Unavailable, true)]);
}

#[test]
fn optional_asks_are_sent_when_declared() {
    let e = engine();
    let handler = |r: Round| -> Result<mrtr::ToolResult, Flow> {
        let a = r.elicit("f", name_form().optional());
        let b = r.roots("r", RootsAsk::new().optional());
        let c = r.sample("s", Sampling::prompt("hi", 5).optional());
        let _ = a?;
        b?;
        c?;
        Ok(ToolResult::text("ok"))
    };
    assert_eq!(
        keys(&irr(run(&e, &tool("t"), T0, handler))),
        ["f", "r", "s"]
    );
    // Nothing declared and everything optional: the handler goes on without asking.
    let seen = RefCell::new(None);
    let all_optional = |r: Round| -> Result<mrtr::ToolResult, Flow> {
        let a = r.elicit("f", name_form().optional())?;
        let b = r.roots("r", RootsAsk::new().optional())?;
        let c = r.sample("s", Sampling::prompt("hi", 5).optional())?;
        *seen.borrow_mut() = Some((a, b.is_none(), c.is_none()));
        Ok(ToolResult::text("went on"))
    };
    complete(run(&e, &tool("t").caps(json!({})), T0, all_optional));
    assert_eq!(*seen.borrow(), Some((Elicited::Unavailable, true, true)));
}

fn always_asks(r: Round) -> Result<mrtr::ToolResult, Flow> {
    let _ = r.elicit("user_name", name_form())?;
    Ok(ToolResult::text("hi"))
}

fn asking_service() -> Service {
    Service::new(engine(), "caps", "0")
        .tool("ask", "always asks", json!({"type": "object"}), always_asks)
        .prompt(
            PromptDefinition::new("ask").description("always asks"),
            |r| {
                always_asks(r)?;
                Ok(PromptResult::new().description("p").user_text("t"))
            },
        )
        .resource(
            ResourceDefinition::new("mrtr://ask", "ask")
                .description("always asks")
                .mime_type("text/plain"),
            |r| {
                always_asks(r)?;
                Ok(mrtr::ResourceResult::text("mrtr://ask", "text/plain", "t"))
            },
        )
}

#[test]
fn a_non_carrier_method_cannot_ask() {
    let s = asking_service();
    let extras = json!({
        "inputResponses": {"user_name": accept(json!({"name": "A"}))},
        "requestState": "AAAA",
    });
    for method in [
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "server/discover",
    ] {
        assert_eq!(CarrierMethod::from_method(method), None, "{method}");
        for params in [json!({"_meta": meta(&all_caps())}), {
            let mut p = extras.clone();
            p["_meta"] = meta(&all_caps());
            p
        }] {
            let v = call(&s, &rpc(1, method, params), T0);
            let result = &v["result"];
            assert!(result.is_object(), "{method}: {v}");
            assert_eq!(result["resultType"], "complete", "{method}: {v}");
            assert!(result.get("inputRequests").is_none());
            assert!(result.get("requestState").is_none());
        }
    }
    // The three carriers can.
    for (method, params) in [
        ("tools/call", json!({"name": "ask"})),
        ("prompts/get", json!({"name": "ask"})),
        ("resources/read", json!({"uri": "mrtr://ask"})),
    ] {
        let mut p = params;
        p["_meta"] = meta(&all_caps());
        let v = call(&s, &rpc(2, method, p), T0);
        assert_eq!(v["result"]["resultType"], "input_required", "{method}: {v}");
    }
}

#[test]
fn the_methods_2026_07_28_removed_are_not_found_with_404() {
    // SEP-2575: initialize, ping, logging/setLevel and resources/(un)subscribe are
    // gone from the revision; a request for one is any unknown method's -32601,
    // which Streamable HTTP carries with 404.
    let s = asking_service();
    for method in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
    ] {
        let reply = s.handle_sync(
            &rpc(7, method, json!({"_meta": meta(&all_caps())})),
            &ctx(T0),
        );
        let v: Value = serde_json::from_str(reply.body.as_deref().unwrap()).unwrap();
        assert_eq!(v["error"]["code"], -32601, "{method}: {v}");
        assert_eq!(v["id"], 7, "{method}: {v}");
        assert_eq!(mrtr::streamable_http::reply_status(&reply), 404, "{method}");
    }
}

#[test]
fn an_input_required_result_can_only_be_built_for_a_carrier() {
    // The constructor takes a CarrierMethod, and no other method name maps to one.
    let mut asks = InputRequests::new();
    asks.insert("r".into(), RootsAsk::new().to_request());
    for m in [
        CarrierMethod::ToolsCall,
        CarrierMethod::PromptsGet,
        CarrierMethod::ResourcesRead,
    ] {
        let irr = InputRequiredResult::new(m, asks.clone(), None).unwrap();
        assert_eq!(irr.method(), m, "the result keeps the carrier it answers");
        assert_eq!(CarrierMethod::from_method(m.as_str()), Some(m));
        // and never an empty one
        assert!(InputRequiredResult::new(m, InputRequests::new(), Some(String::new())).is_err());
    }
    for other in [
        "tools/list",
        "completion/complete",
        "subscriptions/listen",
        "sampling/createMessage",
        "elicitation/create",
        "roots/list",
        "",
        "TOOLS/CALL",
    ] {
        assert_eq!(CarrierMethod::from_method(other), None, "{other}");
    }
}

#[test]
fn the_capability_error_goes_out_as_json_rpc_through_the_service() {
    let s = asking_service();
    for (method, params) in [
        ("tools/call", json!({"name": "ask"})),
        ("prompts/get", json!({"name": "ask"})),
        ("resources/read", json!({"uri": "mrtr://ask"})),
    ] {
        let mut p = params;
        p["_meta"] = meta(&json!({"sampling": {}}));
        let reply = s.handle_sync(&rpc(9, method, p), &ctx(T0));
        assert_eq!(mrtr::streamable_http::reply_status(&reply), 400);
        let v: Value = serde_json::from_str(reply.body.as_deref().unwrap()).unwrap();
        assert_eq!(v["id"], 9);
        assert_eq!(v["error"]["code"], -32021, "{method}: {v}");
        assert_eq!(
            v["error"]["data"],
            json!({"requiredCapabilities": {"elicitation": {}}})
        );
        assert!(v.get("result").is_none());
    }
}

#[test]
fn engines_are_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Engine>();
    assert_send_sync::<Service>();
}

#[test]
fn an_answer_in_hand_needs_no_capability_but_a_question_to_send_does() {
    // The gate restricts what is *sent* (MRTR Server Requirement 7). A retry whose
    // capabilities no longer list elicitation still resumes from the answer it carries.
    let e = engine();
    let handler = |r: Round| -> Result<mrtr::ToolResult, Flow> {
        let name = r.elicit("user_name", name_form())?;
        let color = r.elicit(
            "color",
            Form::new("Favourite colour?").string("color", "Colour"),
        )?;
        let get = |x: &Elicited, k: &str| x.accepted().and_then(|f| f.str(k).map(str::to_owned));
        Ok(ToolResult::text(format!(
            "{:?} {:?}",
            get(&name, "name"),
            get(&color, "color")
        )))
    };
    let r1 = irr(run(&e, &tool("t"), T0, handler));
    // Round 2 declares nothing, answers user_name: the answer is used, and the next
    // question (color) cannot be sent, so -32021 names elicitation.
    let round2 = tool("t")
        .caps(json!({}))
        .resume(&r1)
        .answers(json!({"user_name": accept(json!({"name": "Ada"}))}));
    assert_missing(run(&e, &round2, T0, handler), json!({"elicitation": {}}));
    // Round 2 declaring elicitation again: user_name is taken, color is asked.
    let round2 = tool("t")
        .resume(&r1)
        .answers(json!({"user_name": accept(json!({"name": "Ada"}))}));
    let r2 = irr(run(&e, &round2, T0, handler));
    assert_eq!(keys(&r2), ["color"]);
    // Round 3 without any capability: both answers are in hand, so it completes.
    let round3 = tool("t")
        .caps(json!({}))
        .resume(&r2)
        .answers(json!({"color": accept(json!({"color": "teal"}))}));
    let done = complete(run(&e, &round3, T0, handler));
    assert_eq!(text(&done), r#"Some("Ada") Some("teal")"#);
}
