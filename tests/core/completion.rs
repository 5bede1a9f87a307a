//! `completion/complete` through the `Service` (spec 2026-07-28,
//! server/utilities/completion): a source's values come back in a
//! `CompleteResult` with `resultType: complete`, cut at 100 with `hasMore`; the
//! source sees the partial value and the resolved arguments; an unknown
//! reference is -32602; the `completions` capability is advertised only with a
//! source, and without one the method is -32601.

use std::sync::{Arc, Mutex};

use mrtr::service::{Completion, PromptDefinition};
use mrtr::{Engine, Keyring, Principal, PromptResult, RequestContext, Service, Timestamp};
use serde_json::{Value, json};

fn bare() -> Service {
    Service::new(Engine::new(Keyring::ephemeral(), "t"), "t", "0").prompt(
        PromptDefinition::new("code_review").argument("language", "The language", true),
        |_| Ok(PromptResult::new().user_text("review")),
    )
}

fn ctx() -> RequestContext {
    RequestContext::new(
        Principal::anonymous(),
        Timestamp::from_unix_secs(1_800_000_000),
        "c",
    )
}

fn call(s: &Service, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let reply = s.handle_sync(body.to_string().as_bytes(), &ctx());
    serde_json::from_str(reply.body.as_deref().unwrap()).unwrap()
}

fn complete(s: &Service, reference: Value, argument: &str, value: &str) -> Value {
    call(
        s,
        "completion/complete",
        json!({"ref": reference, "argument": {"name": argument, "value": value}}),
    )
}

fn prompt_ref(name: &str) -> Value {
    json!({"type": "ref/prompt", "name": name})
}

#[test]
fn values_come_back_as_a_complete_result() {
    let s = bare().prompt_completion("code_review", "language", |q| {
        Ok(
            Completion::starting_with(["python", "pytorch", "pyside", "rust"], q.value())
                .total(10)
                .has_more(true),
        )
    });
    let v = complete(&s, prompt_ref("code_review"), "language", "py");
    assert_eq!(
        v["result"],
        json!({"resultType": "complete", "completion": {
            "values": ["python", "pytorch", "pyside"], "total": 10, "hasMore": true}})
    );
}

#[test]
fn more_than_100_values_are_cut_with_has_more() {
    let s = bare().prompt_completion("code_review", "language", |_| {
        Ok((0..1000).map(|i| format!("v{i}")).collect::<Vec<_>>())
    });
    let v = complete(&s, prompt_ref("code_review"), "language", "");
    let c = &v["result"]["completion"];
    let values = c["values"].as_array().unwrap();
    assert_eq!(values.len(), 100);
    assert_eq!(values[0], "v0");
    assert_eq!(values[99], "v99");
    assert_eq!(c["hasMore"], true);
    assert_eq!(c["total"], 1000);
    assert_eq!(v["result"]["resultType"], "complete");
}

#[test]
fn the_source_sees_the_partial_value_and_the_context() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let s = bare().prompt_completion("code_review", "framework", move |q| {
        log.lock().unwrap().push((
            q.argument().to_owned(),
            q.value().to_owned(),
            q.context("language").map(str::to_owned),
        ));
        let async_value = format!("{}sk", q.value());
        async move { Ok(vec![async_value]) }
    });
    let v = call(
        &s,
        "completion/complete",
        json!({"ref": prompt_ref("code_review"),
               "argument": {"name": "framework", "value": "fla"},
               "context": {"arguments": {"language": "python"}}}),
    );
    assert_eq!(v["result"]["completion"]["values"], json!(["flask"]));
    assert_eq!(v["result"]["completion"]["hasMore"], false);
    assert_eq!(
        *seen.lock().unwrap(),
        vec![(
            "framework".to_owned(),
            "fla".to_owned(),
            Some("python".to_owned())
        )]
    );
}

#[test]
fn a_resource_template_source_is_keyed_by_its_uri() {
    let s = bare().resource_template_completion("file:///{path}", "path", |q| {
        Ok(Completion::starting_with(
            ["src/", "tests/", "README.md"],
            q.value(),
        ))
    });
    let r = json!({"type": "ref/resource", "uri": "file:///{path}"});
    let v = complete(&s, r, "path", "t");
    assert_eq!(v["result"]["completion"]["values"], json!(["tests/"]));
    let other = json!({"type": "ref/resource", "uri": "file:///{other}"});
    assert_eq!(complete(&s, other, "path", "t")["error"]["code"], -32602);
}

#[test]
fn an_unknown_reference_is_invalid_params() {
    let s = bare().prompt_completion("code_review", "language", |_| {
        Ok(Completion::new(["python"]))
    });
    for (reference, argument) in [
        (prompt_ref("nope"), "language"),
        (prompt_ref("code_review"), "nope"),
        (
            json!({"type": "ref/resource", "uri": "code_review"}),
            "language",
        ),
        (
            json!({"type": "ref/tool", "name": "code_review"}),
            "language",
        ),
    ] {
        let v = complete(&s, reference, argument, "p");
        assert_eq!(v["error"]["code"], -32602, "{v}");
        assert!(v.get("result").is_none());
    }
    let v = call(
        &s,
        "completion/complete",
        json!({"ref": prompt_ref("code_review")}),
    );
    assert_eq!(v["error"]["code"], -32602);
}

#[test]
fn the_capability_is_advertised_only_with_a_source() {
    let without = bare();
    let caps = &call(&without, "server/discover", json!({}))["result"]["capabilities"];
    assert!(caps.get("completions").is_none(), "{caps}");
    assert_eq!(caps["prompts"], json!({}));
    // Not advertised, so not served: the method is unknown.
    let v = complete(&without, prompt_ref("code_review"), "language", "p");
    assert_eq!(v["error"]["code"], -32601);

    let with = bare().prompt_completion("code_review", "language", |_| Ok(Completion::empty()));
    let caps = &call(&with, "server/discover", json!({}))["result"]["capabilities"];
    assert_eq!(caps["completions"], json!({}));
    let v = complete(&with, prompt_ref("code_review"), "language", "p");
    assert_eq!(
        v["result"],
        json!({"resultType": "complete", "completion": {"values": [], "hasMore": false}})
    );
}

#[test]
fn a_failing_source_is_an_error_never_an_input_required_result() {
    let s = bare()
        .prompt_completion("code_review", "language", |_| {
            Err::<Completion, _>(mrtr::Error::internal("index unavailable"))
        })
        .prompt_completion(
            "code_review",
            "style",
            |_| -> Result<Completion, mrtr::Error> { panic!("source bug") },
        );
    for argument in ["language", "style"] {
        let v = complete(&s, prompt_ref("code_review"), argument, "p");
        assert_eq!(v["error"]["code"], -32603, "{v}");
        assert!(!v.to_string().contains("index unavailable"));
        assert!(!v.to_string().contains("input_required"));
    }
}
