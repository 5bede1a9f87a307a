//! Every demo of the reference server through one full flow, in process (the
//! reference service behind `client::InProcess`, as `mrtr serve` assembles it):
//! what each asks, how its answers shape the next round, and how it ends.

use crate::support as common;

use common::*;
use serde_json::json;

#[test]
fn demos_are_listed_with_what_they_demonstrate() {
    let s = LocalServer::start();
    let v = s.call(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                "params": {"_meta": meta(&json!({}))}}),
        200,
    );
    let tools = result(&v)["tools"].as_array().unwrap();
    for name in [
        "deploy",
        "plan_trip",
        "summarize",
        "list_workspace",
        "connect_account",
        "slow_report",
    ] {
        let t = tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} not listed"));
        assert!(
            t["description"]
                .as_str()
                .is_some_and(|d| d.starts_with("Demonstrates")),
            "{t}"
        );
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
    }
    let v = s.call(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "resources/list",
                "params": {"_meta": meta(&json!({}))}}),
        200,
    );
    let r = result(&v);
    assert!(
        r["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["uri"] == VAULT),
        "{v}"
    );
    assert!(r["ttlMs"].is_u64() && r["cacheScope"].is_string(), "{v}");
}

#[test]
fn plan_trip_asks_what_depends_on_the_first_answer() {
    let s = LocalServer::start();
    for (i, (kind, key, answer, expect)) in [
        (
            "beach",
            "surf",
            json!({"surf": true}),
            r#"Planned a beach trip for 2 ({"surf":true})."#,
        ),
        (
            "mountains",
            "activity",
            json!({"activity": "ski"}),
            r#"Planned a mountains trip for 2 ({"activity":"ski"})."#,
        ),
        (
            "city",
            "city",
            json!({"city": "Lisbon"}),
            r#"Planned a city trip for 2 ({"city":"Lisbon"})."#,
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let id = 10 * (i as u64 + 1);
        let first = tool_call(id, "plan_trip", None);
        let r1 = s.call(&first, 200);
        assert_eq!(asked_keys(&r1), ["kind"], "{r1}");
        let r2 = s.call(
            &retry(
                &first,
                id + 1,
                Some(json!({"kind": accept(json!({"kind": kind, "travellers": 2}))})),
                &state_of(&r1),
            ),
            200,
        );
        assert_eq!(asked_keys(&r2), [key], "{r2}");
        let done = s.call(
            &retry(
                &first,
                id + 2,
                Some(json!({key: accept(answer)})),
                &state_of(&r2),
            ),
            200,
        );
        assert_eq!(complete_text(&done), expect);
        let log = s.log_for(id + 2);
        assert_eq!(log.round, Some(3), "{log:?}");
    }
    // An answer outside the schema (13 travellers, max 12) is asked again with a note.
    let first = tool_call(90, "plan_trip", None);
    let state = state_of(&s.call(&first, 200));
    let bad = json!({"kind": accept(json!({"kind": "beach", "travellers": 13}))});
    let again = s.call(&retry(&first, 91, Some(bad), &state), 200);
    assert_eq!(asked_keys(&again), ["kind"], "{again}");
    let msg = result(&again)["inputRequests"]["kind"]["params"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(msg.contains("Please correct"), "{msg}");
    // A decline ends the flow without a plan.
    let declined = json!({"kind": {"action": "decline"}});
    let v = s.call(&retry(&first, 92, Some(declined), &state_of(&again)), 200);
    assert_eq!(complete_text(&v), "No trip planned.");
}

#[test]
fn summarize_samples_the_clients_model() {
    let s = LocalServer::start();
    let first = tool_call(
        1,
        "summarize",
        Some(json!({"text": "A long story about Rust."})),
    );
    let irr = s.call(&first, 200);
    assert_eq!(asked_keys(&irr), ["summary"]);
    let ask = &result(&irr)["inputRequests"]["summary"];
    assert_eq!(ask["method"], "sampling/createMessage", "{irr}");
    assert!(
        ask["params"]
            .to_string()
            .contains("A long story about Rust."),
        "{irr}"
    );
    let v = s.call(
        &retry(
            &first,
            2,
            Some(json!({"summary": sampled("Rust, briefly.")})),
            &state_of(&irr),
        ),
        200,
    );
    assert_eq!(complete_text(&v), "Rust, briefly.");
    // Without the sampling capability: -32021 naming it.
    let mut bare = first.clone();
    bare["id"] = json!(3);
    bare["params"]["_meta"] = meta(&json!({"elicitation": {}}));
    let v = s.call(&bare, 400);
    let e = rpc_error(&v, -32021);
    assert!(
        e["data"]["requiredCapabilities"]["sampling"].is_object(),
        "{v}"
    );
}

#[test]
fn list_workspace_asks_for_roots() {
    let s = LocalServer::start();
    let first = tool_call(1, "list_workspace", None);
    let irr = s.call(&first, 200);
    assert_eq!(asked_keys(&irr), ["roots"]);
    assert_eq!(
        result(&irr)["inputRequests"]["roots"]["method"],
        "roots/list",
        "{irr}"
    );
    let list = json!([{"uri": "file:///work/a", "name": "A"}, {"uri": "file:///work/b"}]);
    let v = s.call(
        &retry(
            &first,
            2,
            Some(json!({"roots": roots(list)})),
            &state_of(&irr),
        ),
        200,
    );
    assert_eq!(complete_text(&v), "file:///work/a A\nfile:///work/b ");
    let v = s.call(
        &retry(
            &first,
            3,
            Some(json!({"roots": roots(json!([]))})),
            &state_of(&irr),
        ),
        200,
    );
    assert_eq!(complete_text(&v), "The client shares no roots.");
}

#[test]
fn connect_account_uses_url_mode() {
    let s = LocalServer::start();
    let first = tool_call(1, "connect_account", None);
    let irr = s.call(&first, 200);
    assert_eq!(asked_keys(&irr), ["sign_in"]);
    let p = &result(&irr)["inputRequests"]["sign_in"]["params"];
    assert_eq!(p["mode"], "url", "{irr}");
    assert_eq!(p["url"], "https://auth.example.com/connect", "{irr}");
    let state = state_of(&irr);
    let v = s.call(
        &retry(
            &first,
            2,
            Some(json!({"sign_in": {"action": "accept"}})),
            &state,
        ),
        200,
    );
    assert!(
        complete_text(&v).contains("agreed to open the sign-in page"),
        "{v}"
    );
    let v = s.call(
        &retry(
            &first,
            3,
            Some(json!({"sign_in": {"action": "decline"}})),
            &state,
        ),
        200,
    );
    assert!(
        tool_error_text(&v).contains("no account is connected"),
        "{v}"
    );
}

#[test]
fn slow_report_is_a_state_only_round() {
    let s = LocalServer::start();
    let first = tool_call(1, "slow_report", None);
    let irr = s.call(&first, 200);
    let r = result(&irr);
    assert_eq!(r["resultType"], "input_required");
    assert!(r.get("inputRequests").is_none(), "state only: {irr}");
    let state = state_of(&irr);
    let v = s.call(&retry(&first, 2, None, &state), 200);
    assert_eq!(
        complete_text(&v),
        "Report ready (resumed from sealed state)."
    );
    // On another instance with the same key too (what load shedding is for):
    // every LocalServer seals with the same fixed key.
    let a = LocalServer::start();
    let b = LocalServer::start();
    let state = state_of(&a.call(&first, 200));
    let v = b.call(&retry(&first, 3, None, &state), 200);
    assert_eq!(
        complete_text(&v),
        "Report ready (resumed from sealed state)."
    );
}

#[test]
fn vault_note_resource_needs_confirmation() {
    let s = LocalServer::start();
    let first = carrier(1, "resources/read", VAULT, None);
    let irr = s.call(&first, 200);
    assert_eq!(asked_keys(&irr), ["reveal"]);
    let state = state_of(&irr);
    let v = s.call(
        &retry(
            &first,
            2,
            Some(json!({"reveal": accept(json!({"confirm": true}))})),
            &state,
        ),
        200,
    );
    let r = result(&v);
    assert_eq!(r["resultType"], "complete", "{v}");
    assert_eq!(r["contents"][0]["uri"], VAULT, "{v}");
    assert!(
        r["contents"][0]["text"]
            .as_str()
            .unwrap()
            .contains("vault note"),
        "{v}"
    );
    // Declined: resources/read has no tool-error channel, so a -32602 error.
    let v = s.call(
        &retry(
            &first,
            3,
            Some(json!({"reveal": {"action": "decline"}})),
            &state,
        ),
        400,
    );
    rpc_error(&v, -32602);
}

#[test]
fn prompt_asks_for_context_first() {
    let s = LocalServer::start();
    let first = carrier(1, "prompts/get", PROMPT, None);
    let irr = s.call(&first, 200);
    assert_eq!(asked_keys(&irr), ["user_context"]);
    let answer = json!({"user_context": accept(json!({"context": "tests"}))});
    let v = s.call(&retry(&first, 2, Some(answer), &state_of(&irr)), 200);
    let r = result(&v);
    assert_eq!(r["resultType"], "complete");
    assert_eq!(
        r["messages"][0]["content"]["text"], "Use this context: tests",
        "{v}"
    );
}
