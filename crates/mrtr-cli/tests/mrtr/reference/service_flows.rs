//! The reference service through `Service::handle`, as JSON-RPC bodies.
//!
//! First the 14 server scenarios of the MRTR conformance suite
//! (reference/conformance.md §3, A1–A15, no A8), each asserting the pass
//! conditions the suite checks; then engine flows that only show on the wire.

use crate::support as common;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::*;
use mrtr::Timestamp;
use mrtr::engine::Engine;
use mrtr::replay::MemoryReplayGuard;
use mrtr::seal::SealConfig;
use mrtr::service::RequestContext;
use mrtr::streamable_http::McpHeaders;
use serde_json::{Map, Value, json};

/// The conformance harness's default `_meta` (conformance.md §2).
fn harness_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "conformance-test-client", "version": "1.0.0"},
        "io.modelcontextprotocol/clientCapabilities": {"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}},
    })
}

/// A client like the harness: a process-wide id counter, default `_meta` merged under the scenario's.
struct Harness {
    service: mrtr::service::Service,
    next_id: u64,
    now: Timestamp,
}

impl Harness {
    fn new() -> Self {
        Self {
            service: reference(engine()).0,
            next_id: 1,
            now: T0,
        }
    }

    /// Sends `method` with `params` (plus the default `_meta`); returns the whole response.
    fn send(&mut self, method: &str, mut params: Value) -> Value {
        let mut m = harness_meta();
        if let Some(own) = params.get("_meta").and_then(Value::as_object) {
            for (k, v) in own {
                m[k] = v.clone();
            }
        }
        params["_meta"] = m;
        let id = self.next_id;
        self.next_id += 1;
        self.now = self.now.add_secs(1);
        let v = call(&self.service, &rpc(id, method, params), self.now);
        assert_eq!(v["jsonrpc"], "2.0");
        assert_eq!(v["id"], id, "the response echoes the retry's own id");
        v
    }

    fn tool(&mut self, name: &str, extra: Value) -> Value {
        let mut p = json!({"name": name, "arguments": {}});
        merge(&mut p, extra);
        self.send("tools/call", p)
    }
}

fn merge(into: &mut Value, extra: Value) {
    if let Value::Object(e) = extra {
        for (k, v) in e {
            into[k] = v;
        }
    }
}

fn is_irr(v: &Value) -> bool {
    v["result"]["resultType"] == "input_required"
}

/// "Complete" as the suite checks it: a result whose resultType is not input_required.
/// Every complete result here must also carry resultType "complete" (wire-schema-valid).
fn is_complete(v: &Value) -> bool {
    v.get("result").is_some() && v["result"]["resultType"] == "complete"
}

fn first_key(v: &Value) -> String {
    v["result"]["inputRequests"]
        .as_object()
        .and_then(|m| m.keys().next().cloned())
        .expect("inputRequests has a first key")
}

fn methods(v: &Value) -> Vec<String> {
    v["result"]["inputRequests"]
        .as_object()
        .map(|m| {
            m.values()
                .map(|r| r["method"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// `requestState` if the IRR carried one (the harness echoes it when present).
fn state_of(v: &Value) -> Map<String, Value> {
    let mut m = Map::new();
    if let Some(s) = v["result"]["requestState"].as_str() {
        m.insert("requestState".into(), s.into());
    }
    m
}

fn with(responses: Value, state: Map<String, Value>) -> Value {
    let mut p = json!({"inputResponses": responses});
    for (k, v) in state {
        p[k] = v;
    }
    p
}

fn has_content(v: &Value) -> bool {
    v["result"]["content"]
        .as_array()
        .is_some_and(|a| !a.is_empty())
}

#[test]
fn a1_basic_elicitation() {
    let mut h = Harness::new();
    let r1 = h.tool("test_input_required_result_elicitation", json!({}));
    assert!(is_irr(&r1), "{r1}");
    assert_eq!(
        r1["result"]["inputRequests"]["user_name"]["method"],
        "elicitation/create"
    );
    let r2 = h.tool(
        "test_input_required_result_elicitation",
        with(
            json!({"user_name": accept(json!({"name": "Alice"}))}),
            state_of(&r1),
        ),
    );
    assert!(is_complete(&r2), "{r2}");
    assert!(has_content(&r2));
    assert_eq!(r2["result"]["content"][0]["text"], "Hello, Alice!");
}

#[test]
fn a2_basic_sampling() {
    let mut h = Harness::new();
    let r1 = h.tool("test_input_required_result_sampling", json!({}));
    assert!(is_irr(&r1), "{r1}");
    assert_eq!(methods(&r1)[0], "sampling/createMessage");
    let key = first_key(&r1);
    let r2 = h.tool(
        "test_input_required_result_sampling",
        with(
            json!({key: sampled("Paris is the capital of France.")}),
            state_of(&r1),
        ),
    );
    assert!(is_complete(&r2), "{r2}");
    assert!(has_content(&r2));
}

#[test]
fn a3_basic_list_roots() {
    let mut h = Harness::new();
    let r1 = h.tool("test_input_required_result_list_roots", json!({}));
    assert!(is_irr(&r1), "{r1}");
    assert_eq!(methods(&r1)[0], "roots/list");
    let key = first_key(&r1);
    let r2 = h.tool(
        "test_input_required_result_list_roots",
        with(json!({key: roots_answer()}), state_of(&r1)),
    );
    assert!(is_complete(&r2), "{r2}");
    assert!(text(&r2["result"]).contains("file:///test/root"));
}

#[test]
fn a4_request_state() {
    let mut h = Harness::new();
    let r1 = h.tool("test_input_required_result_request_state", json!({}));
    assert!(is_irr(&r1));
    assert!(
        r1["result"]["requestState"]
            .as_str()
            .is_some_and(|s| !s.is_empty())
    );
    assert!(r1["result"]["inputRequests"].is_object());
    let key = first_key(&r1);
    let r2 = h.tool(
        "test_input_required_result_request_state",
        with(json!({key: accept(json!({"ok": true}))}), state_of(&r1)),
    );
    assert!(is_complete(&r2), "{r2}");
    assert!(text(&r2["result"]).contains("state-ok"));
}

#[test]
fn a5_multiple_input_requests() {
    let mut h = Harness::new();
    let r1 = h.tool("test_input_required_result_multiple_inputs", json!({}));
    assert!(is_irr(&r1));
    assert!(
        r1["result"]["requestState"]
            .as_str()
            .is_some_and(|s| !s.is_empty())
    );
    let ms = methods(&r1);
    assert!(ms.len() >= 3);
    for m in ["elicitation/create", "sampling/createMessage", "roots/list"] {
        assert!(ms.iter().any(|x| x == m), "{m} in {ms:?}");
    }
    // The harness answers every key by its method.
    let mut responses = Map::new();
    for (k, r) in r1["result"]["inputRequests"].as_object().unwrap() {
        let a = match r["method"].as_str().unwrap() {
            "elicitation/create" => accept(json!({"name": "Alice"})),
            "sampling/createMessage" => sampled("Hello there!"),
            _ => roots_answer(),
        };
        responses.insert(k.clone(), a);
    }
    let r2 = h.tool(
        "test_input_required_result_multiple_inputs",
        with(Value::Object(responses), state_of(&r1)),
    );
    assert!(is_complete(&r2), "{r2}");
    assert_eq!(
        text(&r2["result"]),
        "name=Alice; greeting=Hello there!; roots=1"
    );
}

#[test]
fn a6_multi_round() {
    let mut h = Harness::new();
    let tool = "test_input_required_result_multi_round";
    let r1 = h.tool(tool, json!({}));
    assert!(is_irr(&r1) && r1["result"]["inputRequests"].is_object());
    let s1 = r1["result"]["requestState"].as_str().unwrap().to_owned();
    let r2 = h.tool(
        tool,
        with(
            json!({first_key(&r1): accept(json!({"name": "Alice"}))}),
            state_of(&r1),
        ),
    );
    assert!(
        is_irr(&r2) && r2["result"]["inputRequests"].is_object(),
        "{r2}"
    );
    let s2 = r2["result"]["requestState"].as_str().unwrap().to_owned();
    assert!(!s2.is_empty());
    assert_ne!(s1, s2, "R2's state differs from R1's");
    let r3 = h.tool(
        tool,
        with(
            json!({first_key(&r2): accept(json!({"color": "blue"}))}),
            state_of(&r2),
        ),
    );
    assert!(is_complete(&r3), "{r3}");
    assert_eq!(text(&r3["result"]), "Alice likes blue");
}

#[test]
fn a7_missing_input_response_is_re_requested() {
    let mut h = Harness::new();
    let r = h.tool(
        "test_input_required_result_elicitation",
        json!({"inputResponses": {"wrong_key": {"action": "accept", "content": {"data": "wrong"}}}}),
    );
    assert!(is_irr(&r), "an IRR, not an error or complete: {r}");
    assert!(r["result"]["inputRequests"]["user_name"].is_object());
}

#[test]
fn a9_non_tool_request() {
    let mut h = Harness::new();
    let r1 = h.send(
        "prompts/get",
        json!({"name": "test_input_required_result_prompt"}),
    );
    assert!(
        is_irr(&r1) && r1["result"]["inputRequests"].is_object(),
        "{r1}"
    );
    let r2 = h.send(
        "prompts/get",
        with(
            json!({first_key(&r1): accept(json!({"context": "test context"}))}),
            state_of(&r1),
        )
        .as_object()
        .map(|o| {
            let mut p = json!({"name": "test_input_required_result_prompt"});
            merge(&mut p, Value::Object(o.clone()));
            p
        })
        .unwrap(),
    );
    assert!(is_complete(&r2), "{r2}");
    assert!(
        r2["result"]["messages"]
            .as_array()
            .is_some_and(|m| !m.is_empty())
    );
    assert!(r2["result"].get("isError").is_none());
}

#[test]
fn a10_result_type_included() {
    let mut h = Harness::new();
    let r1 = h.tool("test_input_required_result_elicitation", json!({}));
    assert_eq!(r1["result"]["resultType"], "input_required");
}

#[test]
fn a11_unsupported_methods_never_answer_input_required() {
    let mut h = Harness::new();
    for (method, list) in [("tools/list", "tools"), ("prompts/list", "prompts")] {
        let r = h.send(method, json!({}));
        assert_ne!(r["result"]["resultType"], "input_required");
        // and schema-valid: resultType, ttlMs >= 0, cacheScope, the list
        assert_eq!(r["result"]["resultType"], "complete");
        assert!(r["result"]["ttlMs"].is_u64());
        assert!(matches!(
            r["result"]["cacheScope"].as_str(),
            Some("public" | "private")
        ));
        assert!(r["result"][list].is_array());
    }
    let tools = h.send("tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for fixture in [
        "test_input_required_result_elicitation",
        "test_input_required_result_sampling",
        "test_input_required_result_list_roots",
        "test_input_required_result_request_state",
        "test_input_required_result_multiple_inputs",
        "test_input_required_result_multi_round",
        "test_input_required_result_tampered_state",
        "test_input_required_result_capabilities",
    ] {
        assert!(names.contains(&fixture), "{fixture}");
    }
}

#[test]
fn a12_tampered_state_is_an_error() {
    let mut h = Harness::new();
    let r1 = h.tool("test_input_required_result_tampered_state", json!({}));
    assert!(is_irr(&r1));
    let s = r1["result"]["requestState"]
        .as_str()
        .expect("prerequisite: R1 has requestState");
    let r2 = h.tool(
        "test_input_required_result_tampered_state",
        json!({"inputResponses": {first_key(&r1): {"action": "accept", "content": {"ok": true}}},
               "requestState": format!("{s}-TAMPERED")}),
    );
    assert!(r2.get("result").is_none(), "never a result: {r2}");
    assert_frozen_state_response(&r2);
}

#[test]
fn a13_capability_check_asks_only_declared_inputs() {
    let mut h = Harness::new();
    let r = h.tool(
        "test_input_required_result_capabilities",
        json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {"sampling": {}}}}),
    );
    assert!(r.get("error").is_none(), "{r}");
    assert!(is_irr(&r), "{r}");
    let ms = methods(&r);
    assert!(!ms.is_empty(), "alpha.12: an IRR needs >= 1 input request");
    assert!(ms.iter().all(|m| m == "sampling/createMessage"), "{ms:?}");
    // Finishing it with the sampling answer alone completes.
    let r2 = h.tool(
        "test_input_required_result_capabilities",
        json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {"sampling": {}}},
               "inputResponses": {first_key(&r): sampled("Paris")},
               "requestState": r["result"]["requestState"]}),
    );
    assert!(is_complete(&r2), "{r2}");
}

#[test]
fn a14_ignore_extra_params() {
    let mut h = Harness::new();
    let r = h.tool(
        "test_input_required_result_elicitation",
        json!({"inputResponses": {
            "user_name": {"action": "accept", "content": {"name": "Alice"}},
            "unknown_extra_key": {"action": "accept", "content": {"foo": "bar"}},
            "another_unexpected": {"action": "accept", "content": {"baz": 123}},
        }}),
    );
    assert!(is_complete(&r), "{r}");
    assert!(has_content(&r));
}

#[test]
fn a15_validate_input_responses() {
    let mut h = Harness::new();
    // (a) a non-object response: an error or an IRR, never complete
    let a = h.tool(
        "test_input_required_result_elicitation",
        json!({"inputResponses": {"user_name": 12345}}),
    );
    assert!(!is_complete(&a), "{a}");
    assert!(is_irr(&a), "re-requested: {a}");
    // (b) inputResponses null: a protocol error
    let b = h.tool(
        "test_input_required_result_elicitation",
        json!({"inputResponses": null}),
    );
    assert!(!is_complete(&b), "{b}");
    assert_eq!(b["error"]["code"], -32602, "{b}");
}

#[test]
fn every_response_of_the_scenarios_carries_result_type_or_is_an_error() {
    let (s, _) = reference(engine());
    for (i, (method, params)) in [
        (
            "tools/call",
            json!({"name": "test_input_required_result_elicitation"}),
        ),
        ("tools/call", json!({"name": "no_such_tool"})),
        (
            "prompts/get",
            json!({"name": "test_input_required_result_prompt"}),
        ),
        ("tools/list", json!({})),
        ("server/discover", json!({})),
    ]
    .into_iter()
    .enumerate()
    {
        let mut p = params;
        p["_meta"] = harness_meta();
        let v = call(&s, &rpc(i as u64 + 1, method, p), T0);
        match (v.get("result"), v.get("error")) {
            (Some(r), None) => assert!(r["resultType"].is_string(), "{v}"),
            (None, Some(e)) => assert!(e["code"].is_i64() && e["message"].is_string()),
            _ => panic!("not a JSON-RPC response: {v}"),
        }
    }
}

// ---- engine flows on the wire ----

fn deploy(service: &str) -> Req {
    tool("deploy").args(json!({"service": service}))
}

#[test]
fn deploy_runs_once_and_a_replayed_final_round_is_a_tool_error() {
    let (s, deployments) =
        reference(engine().with_replay_guard(Arc::new(MemoryReplayGuard::new(T0))));
    let r1 = call(&s, &deploy("api").body(1), T0);
    assert!(is_irr(&r1));
    let token = r1["result"]["requestState"].as_str().unwrap();
    let final_round = deploy("api")
        .state(token)
        .answers(json!({"confirm": accept(json!({"confirm": true}))}));
    let done = call(&s, &final_round.body(2), T0.add_secs(1));
    assert_eq!(
        done["result"]["content"][0]["text"],
        "Deployed api (deployment #1)."
    );
    let replay = call(&s, &final_round.body(3), T0.add_secs(2));
    assert_eq!(replay["result"]["isError"], true, "{replay}");
    assert_eq!(deployments.load(Ordering::SeqCst), 1);
}

#[test]
fn deploy_takes_no_confirmation_it_did_not_ask_for() {
    let (s, deployments) = reference(engine());
    let yes = json!({"confirm": accept(json!({"confirm": true}))});
    // A cold confirmation is not taken: the question goes out instead.
    let r1 = call(&s, &deploy("web").answers(yes.clone()).body(1), T0);
    assert_eq!(r1["result"]["resultType"], "input_required", "{r1}");
    assert_eq!(deployments.load(Ordering::SeqCst), 0);
    // The same answer to the question as issued is.
    let state = r1["result"]["requestState"].as_str().unwrap();
    let r2 = call(&s, &deploy("web").state(state).answers(yes).body(2), T0);
    assert_eq!(
        r2["result"]["content"][0]["text"], "Deployed web (deployment #1).",
        "{r2}"
    );
    assert_eq!(deployments.load(Ordering::SeqCst), 1);
}

#[test]
fn declining_the_deploy_is_a_tool_error_and_deploys_nothing() {
    let (s, deployments) = reference(engine());
    let r1 = call(&s, &deploy("api").body(1), T0);
    let token = r1["result"]["requestState"].as_str().unwrap();
    for (i, action) in ["decline", "cancel"].into_iter().enumerate() {
        let v = call(
            &s,
            &deploy("api")
                .state(token)
                .answers(json!({"confirm": {"action": action}}))
                .body(i as u64 + 2),
            T0.add_secs(1),
        );
        assert_eq!(v["result"]["isError"], true, "{v}");
        assert!(text(&v["result"]).contains("nothing was deployed"));
    }
    assert_eq!(deployments.load(Ordering::SeqCst), 0);
}

#[test]
fn plan_trip_carries_typed_data_and_branches_on_earlier_answers() {
    let (s, _) = reference(engine());
    let r1 = call(&s, &tool("plan_trip").body(1), T0);
    let k = first_key(&r1);
    assert_eq!(k, "kind");
    let r2 = call(
        &s,
        &tool("plan_trip")
            .state(r1["result"]["requestState"].as_str().unwrap())
            .answers(json!({"kind": accept(json!({"kind": "mountains", "travellers": 3}))}))
            .body(2),
        T0.add_secs(1),
    );
    assert_eq!(first_key(&r2), "activity");
    let r3 = call(
        &s,
        &tool("plan_trip")
            .state(r2["result"]["requestState"].as_str().unwrap())
            .answers(json!({"activity": accept(json!({"activity": "ski"}))}))
            .body(3),
        T0.add_secs(2),
    );
    assert!(is_complete(&r3), "{r3}");
    assert!(text(&r3["result"]).starts_with("Planned a mountains trip for 3"));
}

#[test]
fn slow_report_sheds_load_with_a_state_only_result() {
    let (s, _) = reference(engine());
    let r1 = call(&s, &tool("slow_report").body(1), T0);
    assert!(is_irr(&r1));
    assert!(r1["result"].get("inputRequests").is_none());
    // Another instance with the same key finishes it.
    let (other, _) = reference(Engine::new(ring(SECRET_A), AUDIENCE));
    let r2 = call(
        &other,
        &tool("slow_report")
            .state(r1["result"]["requestState"].as_str().unwrap())
            .body(2),
        T0,
    );
    assert!(is_complete(&r2), "{r2}");
}

#[test]
fn resources_read_can_ask_and_fails_as_json_rpc() {
    let (s, _) = reference(engine());
    let r = resource("mrtr://demo/vault-note");
    let r1 = call(&s, &r.body(1), T0);
    assert!(is_irr(&r1), "{r1}");
    let token = r1["result"]["requestState"].as_str().unwrap();
    let yes = call(
        &s,
        &r.clone()
            .state(token)
            .answers(json!({"reveal": accept(json!({"confirm": true}))}))
            .body(2),
        T0.add_secs(1),
    );
    assert!(yes["result"]["contents"][0]["text"].is_string(), "{yes}");
    let no = call(
        &s,
        &r.clone()
            .state(token)
            .answers(json!({"reveal": {"action": "decline"}}))
            .body(3),
        T0.add_secs(1),
    );
    assert_eq!(no["error"]["code"], -32602, "{no}");
    assert!(no.get("result").is_none());
}

#[test]
fn past_the_deadline_tools_call_is_a_tool_error_and_prompts_get_the_frozen_error() {
    let short = || {
        engine().with_seal_config(
            SealConfig::default()
                .with_flow_lifetime(Duration::from_secs(60))
                .unwrap(),
        )
    };
    let (s, _) = reference(short());
    let late = T0.add_secs(60 + 61);
    let t1 = call(
        &s,
        &tool("test_input_required_result_elicitation").body(1),
        T0,
    );
    let t2 = call(
        &s,
        &tool("test_input_required_result_elicitation")
            .state(t1["result"]["requestState"].as_str().unwrap())
            .answers(json!({"user_name": accept(json!({"name": "A"}))}))
            .body(2),
        late,
    );
    assert_eq!(t2["result"]["isError"], true, "{t2}");
    assert!(text(&t2["result"]).contains("lapsed"));
    let p1 = call(&s, &prompt("test_input_required_result_prompt").body(3), T0);
    let p2 = call(
        &s,
        &prompt("test_input_required_result_prompt")
            .state(p1["result"]["requestState"].as_str().unwrap())
            .answers(json!({"user_context": accept(json!({"context": "c"}))}))
            .body(4),
        late,
    );
    assert_frozen_state_response(&p2);
}

#[test]
fn max_rounds_through_the_service() {
    let (s, _) = reference(engine().with_max_rounds(1));
    let tool_name = "test_input_required_result_multi_round";
    let r1 = call(&s, &tool(tool_name).body(1), T0);
    assert!(is_irr(&r1));
    let r2 = call(
        &s,
        &tool(tool_name)
            .state(r1["result"]["requestState"].as_str().unwrap())
            .answers(json!({"step1": accept(json!({"name": "A"}))}))
            .body(2),
        T0.add_secs(1),
    );
    assert_eq!(r2["result"]["isError"], true, "{r2}");
    assert!(text(&r2["result"]).contains("call the tool again"));
}

#[test]
fn request_state_from_one_tool_is_refused_on_another() {
    let (s, _) = reference(engine());
    let r1 = call(
        &s,
        &tool("test_input_required_result_tampered_state").body(1),
        T0,
    );
    let token = r1["result"]["requestState"].as_str().unwrap();
    let v = call(
        &s,
        &tool("test_input_required_result_request_state")
            .state(token)
            .answers(json!({"confirm": accept(json!({"ok": true}))}))
            .body(2),
        T0.add_secs(1),
    );
    assert_frozen_state_response(&v);
    let v = call(
        &s,
        &deploy("other")
            .state(token)
            .answers(json!({"confirm": accept(json!({"confirm": true}))}))
            .body(3),
        T0.add_secs(1),
    );
    assert_frozen_state_response(&v);
}

#[test]
fn request_state_of_one_principal_is_refused_for_another() {
    let (s, _) = reference(engine());
    let as_who = |who: mrtr::principal::Principal, body: &[u8]| -> Value {
        let c = RequestContext {
            principal: who,
            ..ctx(T0)
        };
        serde_json::from_str(s.handle_sync(body, &c).body.as_deref().unwrap()).unwrap()
    };
    let alice = mrtr::principal::Principal::subject("alice");
    let r1 = as_who(
        alice.clone(),
        &tool("test_input_required_result_elicitation").body(1),
    );
    let retry = tool("test_input_required_result_elicitation")
        .state(r1["result"]["requestState"].as_str().unwrap())
        .answers(json!({"user_name": accept(json!({"name": "A"}))}));
    assert_frozen_state_response(&as_who(
        mrtr::principal::Principal::subject("bob"),
        &retry.body(2),
    ));
    assert!(is_complete(&as_who(alice, &retry.body(3))));
}

#[test]
fn input_responses_null_or_array_is_invalid_params_on_every_carrier() {
    let (s, _) = reference(engine());
    for bad in [Value::Null, json!([]), json!("x")] {
        for req in [
            tool("test_input_required_result_elicitation"),
            prompt("test_input_required_result_prompt"),
            resource("mrtr://demo/vault-note"),
        ] {
            let reply = s.handle_sync(&req.answers(bad.clone()).body(1), &ctx(T0));
            assert_eq!(mrtr::streamable_http::reply_status(&reply), 400);
            let v: Value = serde_json::from_str(reply.body.as_deref().unwrap()).unwrap();
            assert_eq!(v["error"]["code"], -32602, "{bad}: {v}");
        }
    }
}

#[test]
fn the_http_headers_are_checked_on_every_round() {
    let (s, _) = reference(engine());
    let name = "test_input_required_result_elicitation";
    let headers = |n: &str| McpHeaders {
        protocol_version: Some("2026-07-28".into()),
        method: Some("tools/call".into()),
        name: Some(n.into()),
    };
    let with_headers = |h: McpHeaders, body: &[u8]| {
        let message = mrtr::service::ParsedMessage::parse(body).check(|method, params| {
            let carrier = mrtr::wire::CarrierMethod::from_method(method);
            mrtr::streamable_http::check_headers(&h, method, params, carrier)
        });
        s.handle_parsed_sync(message, &ctx(T0))
    };
    let r1 = with_headers(headers(name), &tool(name).body(1));
    assert_eq!(mrtr::streamable_http::reply_status(&r1), 200);
    assert_eq!(r1.log.outcome, "input_required");
    assert_eq!(r1.log.round, Some(1));
    let v: Value = serde_json::from_str(r1.body.as_deref().unwrap()).unwrap();
    let retry = tool(name)
        .state(v["result"]["requestState"].as_str().unwrap())
        .answers(json!({"user_name": accept(json!({"name": "A"}))}));
    let bad = with_headers(headers("other"), &retry.body(2));
    assert_eq!(mrtr::streamable_http::reply_status(&bad), 400);
    assert!(bad.body.unwrap().contains("-32020"));
    let ok = with_headers(headers(name), &retry.body(3));
    assert_eq!(ok.log.outcome, "complete");
    assert_eq!(ok.log.round, Some(2));
}

#[test]
fn the_private_log_names_the_reject_reason_and_the_wire_does_not() {
    let (s, _) = reference(engine());
    let name = "test_input_required_result_tampered_state";
    let r1 = call(&s, &tool(name).body(1), T0);
    let token = r1["result"]["requestState"].as_str().unwrap();
    let reply = s.handle_sync(
        &tool(name)
            .state(&format!("{token}-TAMPERED"))
            .answers(json!({"confirm": accept(json!({"ok": true}))}))
            .body(2),
        &ctx(T0),
    );
    let body = reply.body.unwrap();
    assert!(reply.log.reject_reason.is_some());
    assert_eq!(reply.log.outcome, "error:-32602");
    let reason = reply.log.reject_reason.unwrap();
    assert!(!body.contains(&format!("\"{reason}\"")), "{body}");
    assert!(!body.contains(token));
}

#[test]
fn a_retry_whose_arguments_come_in_another_key_order_still_resumes() {
    // The binding digests canonical JSON, so key order (kept by preserve_order) is irrelevant.
    let (s, _) = reference(engine());
    let meta = meta(&all_caps()).to_string();
    let confirm = r#"{"confirm":{"action":"accept","content":{"confirm":true}}}"#;
    let r1 = call(
        &s,
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"_meta":{meta},"name":"deploy","arguments":{{"service":"api","region":"eu","replicas":3}}}}}}"#
        )
        .as_bytes(),
        T0,
    );
    let token = r1["result"]["requestState"].as_str().unwrap();
    let retry = |args: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"requestState":"{token}","inputResponses":{confirm},"arguments":{args},"name":"deploy","_meta":{meta}}}}}"#
        )
    };
    let r2 = call(
        &s,
        retry(r#"{"replicas":3,"region":"eu","service":"api"}"#).as_bytes(),
        T0.add_secs(1),
    );
    assert!(is_complete(&r2), "{r2}");
    // A changed value is another request.
    let r3 = call(
        &s,
        retry(r#"{"replicas":4,"region":"eu","service":"api"}"#).as_bytes(),
        T0.add_secs(1),
    );
    assert_frozen_state_response(&r3);
}

/// The suite's `completion-complete` scenario (run at 2026-07-28): arg1 of
/// `test_prompt_with_arguments` completed from "test", a `CompleteResult` with
/// an array of values; the `completions` capability is advertised, and the
/// prompt itself answers `prompts-get-with-args`.
#[test]
fn completion_complete_and_the_prompt_it_completes() {
    let mut h = Harness::new();
    let r = h.send(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
               "argument": {"name": "arg1", "value": "test"}}),
    );
    assert_eq!(
        r["result"],
        json!({"resultType": "complete",
               "completion": {"values": ["testValue1", "testValue2"], "hasMore": false}})
    );
    let r = h.send(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
               "argument": {"name": "arg2", "value": "testValue1p"},
               "context": {"arguments": {"arg1": "testValue1"}}}),
    );
    assert_eq!(
        r["result"]["completion"]["values"],
        json!(["testValue1paris", "testValue1park", "testValue1party"])
    );
    let d = h.send("server/discover", json!({}));
    assert_eq!(d["result"]["capabilities"]["completions"], json!({}));
    let p = h.send(
        "prompts/get",
        json!({"name": "test_prompt_with_arguments",
               "arguments": {"arg1": "testValue1", "arg2": "testValue2"}}),
    );
    assert_eq!(
        p["result"]["messages"][0]["content"]["text"],
        "Prompt with arguments: arg1='testValue1', arg2='testValue2'"
    );
}
