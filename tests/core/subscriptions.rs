//! `subscriptions/listen` and changing lists through the service, transport
//! aside: what `server/discover` declares, what `Service::listen` opens or
//! refuses, and a hidden target gone from its list and out of reach.

use mrtr_testkit as common;

use common::*;
use mrtr::service::{Changes, List, ParsedMessage};
use mrtr::{PromptDefinition, PromptResult, Service, ToolResult};
use serde_json::{Value, json};

fn service(changes: Option<&Changes>) -> Service {
    let s = Service::new(engine(), "subs", "0")
        .tool("a", "A.", json!({"type": "object"}), |_| {
            Ok(ToolResult::text("a"))
        })
        .tool("b", "B.", json!({"type": "object"}), |_| {
            Ok(ToolResult::text("b"))
        })
        .prompt(PromptDefinition::new("p"), |_| {
            Ok(PromptResult::new().user_text("p"))
        });
    match changes {
        Some(c) => s.with_changes(c.clone()),
        None => s,
    }
}

fn listen_body(id: u64, notifications: Value) -> Vec<u8> {
    rpc(
        id,
        "subscriptions/listen",
        json!({"_meta": meta(&json!({})), "notifications": notifications}),
    )
}

fn reply_json(body: Option<String>) -> Value {
    serde_json::from_str(&body.expect("a reply")).unwrap()
}

#[test]
fn discover_declares_list_changes_only_with_a_changes_hub() {
    let discover = rpc(1, "server/discover", json!({"_meta": meta(&json!({}))}));
    let v = call(&service(None), &discover, T0);
    assert_eq!(v["result"]["capabilities"]["tools"], json!({}), "{v}");
    let v = call(&service(Some(&Changes::new())), &discover, T0);
    assert_eq!(
        v["result"]["capabilities"]["tools"],
        json!({"listChanged": true}),
        "{v}"
    );
    assert_eq!(
        v["result"]["capabilities"]["prompts"],
        json!({"listChanged": true}),
        "{v}"
    );
    // No resources: nothing to subscribe to, no resources capability.
    assert!(
        v["result"]["capabilities"].get("resources").is_none(),
        "{v}"
    );
}

#[test]
fn listen_opens_or_refuses_as_the_envelope_and_filter_say() {
    let ctx = ctx(T0);
    // Without a hub: -32601, as any method the service does not serve.
    let body = listen_body(1, json!({"toolsListChanged": true}));
    let refused = service(None)
        .listen(ParsedMessage::parse(&body), &ctx)
        .unwrap_err();
    assert_eq!(reply_json(refused.body)["error"]["code"], -32601);

    let changes = Changes::new();
    let s = service(Some(&changes));
    let opened = s.listen(ParsedMessage::parse(&body), &ctx).expect("opened");
    let ack: Value = serde_json::from_str(&opened.acknowledgement()).unwrap();
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true})
    );
    assert_eq!(opened.log().outcome, "subscribed");
    assert_eq!(changes.open_subscriptions(), 1);
    // The resource filter is not honoured without resources.
    let body = listen_body(
        2,
        json!({"resourceSubscriptions": ["file:///x"], "promptsListChanged": true}),
    );
    let opened2 = s.listen(ParsedMessage::parse(&body), &ctx).expect("opened");
    let ack: Value = serde_json::from_str(&opened2.acknowledgement()).unwrap();
    assert_eq!(
        ack["params"]["notifications"],
        json!({"promptsListChanged": true})
    );
    // A bad filter, no filter, no _meta: -32602 with the request's id.
    for (id, params) in [
        (
            3,
            json!({"_meta": meta(&json!({})), "notifications": {"toolsListChanged": 1}}),
        ),
        (4, json!({"_meta": meta(&json!({}))})),
        (5, json!({"notifications": {}})),
    ] {
        let body = rpc(id, "subscriptions/listen", params);
        let r = s.listen(ParsedMessage::parse(&body), &ctx).unwrap_err();
        let v = reply_json(r.body);
        assert_eq!(
            (v["id"].clone(), v["error"]["code"].clone()),
            (json!(id), json!(-32602)),
            "{v}"
        );
    }
    // A listen sent as a notification (no id) gets no reply at all.
    let note = br#"{"jsonrpc":"2.0","method":"subscriptions/listen","params":{}}"#;
    assert!(ParsedMessage::parse(note).is_listen());
    assert!(
        s.listen(ParsedMessage::parse(note), &ctx)
            .unwrap_err()
            .body
            .is_none()
    );
    // Only a message naming the method is a listen.
    assert!(!ParsedMessage::parse(&rpc(6, "tools/list", json!({}))).is_listen());
    assert!(!ParsedMessage::parse(b"[]").is_listen());
    drop((opened, opened2));
    assert_eq!(changes.open_subscriptions(), 0);
}

#[test]
fn a_hidden_target_is_neither_listed_nor_served_until_shown() {
    let changes = Changes::new();
    let s = service(Some(&changes));
    let list = rpc(1, "tools/list", json!({"_meta": meta(&json!({}))}));
    let call_b = rpc(
        2,
        "tools/call",
        json!({"name": "b", "_meta": meta(&json!({}))}),
    );
    assert!(changes.hide(List::Tools, "b"));
    let v = call(&s, &list, T0);
    let names: Vec<&str> = v["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a"]);
    let v = call(&s, &call_b, T0);
    assert_eq!(v["error"]["message"], "Unknown tool", "{v}");
    // Hiding a tool leaves a prompt of the same name alone.
    assert!(changes.hide(List::Tools, "p"));
    let get_p = rpc(
        3,
        "prompts/get",
        json!({"name": "p", "_meta": meta(&json!({}))}),
    );
    assert_eq!(
        call(&s, &get_p, T0)["result"]["messages"][0]["role"],
        "user"
    );
    assert!(changes.show(List::Tools, "b"));
    assert_eq!(call(&s, &call_b, T0)["result"]["content"][0]["text"], "b");
}
