//! The rounds of one MRTR flow in a trace: each round's log (what a
//! transport's span records) names the flow by a digest, the same in every
//! round, and every round after the first links to the first round's span,
//! whose context the first round sealed into the state.

use mrtr::engine::{Engine, Form, Round};
use mrtr::wire::TraceParent;
use mrtr::{Keyring, Principal, RequestContext, Service, Timestamp, ToolResult};
use serde_json::{Value, json};

fn service() -> Service {
    Service::new(Engine::new(Keyring::ephemeral(), "t"), "t", "0")
        .tool(
            "two",
            "asks twice",
            json!({"type": "object"}),
            |r: Round| {
                let a = r.elicit("a", Form::new("A?").string("v", "V"))?;
                let b = r.elicit("b", Form::new("B?").string("v", "V"))?;
                let _ = (a, b);
                Ok(ToolResult::text("done"))
            },
        )
        .tool("one", "answers", json!({"type": "object"}), |_| {
            Ok(ToolResult::text("done"))
        })
}

fn span(n: u8) -> TraceParent {
    TraceParent::new([7; 16], [n; 8], 1).unwrap()
}

fn ctx(trace: Option<TraceParent>) -> RequestContext {
    let mut c = RequestContext::new(
        Principal::anonymous(),
        Timestamp::from_unix_secs(1_800_000_000),
        "c",
    );
    c.trace = trace;
    c
}

fn call(
    s: &Service,
    name: &str,
    state: Option<&str>,
    answers: Value,
    trace: Option<TraceParent>,
) -> (Value, mrtr::service::RequestLog) {
    let mut params = json!({"name": name, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}});
    if let Some(state) = state {
        params["requestState"] = json!(state);
        params["inputResponses"] = answers;
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let reply = s.handle_sync(body.to_string().as_bytes(), &ctx(trace));
    (
        serde_json::from_str(reply.body.as_deref().unwrap()).unwrap(),
        reply.log,
    )
}

fn accept() -> Value {
    json!({"action": "accept", "content": {"v": "x"}})
}

#[test]
fn every_round_names_the_flow_and_links_to_the_first_round_s_span() {
    let s = service();
    let (r1, log1) = call(&s, "two", None, json!({}), Some(span(1)));
    let state1 = r1["result"]["requestState"].as_str().unwrap().to_owned();
    let flow = log1.flow.clone().expect("a flow of two rounds or more");
    assert_eq!(flow.len(), 16);
    assert!(log1.flow_link.is_none(), "the first round links to nothing");
    // The flow digest is not a piece of the state.
    assert!(!state1.contains(&flow));

    let (r2, log2) = call(
        &s,
        "two",
        Some(&state1),
        json!({"a": accept()}),
        Some(span(2)),
    );
    let state2 = r2["result"]["requestState"].as_str().unwrap().to_owned();
    assert_eq!(log2.flow.as_deref(), Some(flow.as_str()));
    assert_eq!(log2.flow_link, Some(span(1)));
    assert_eq!(log2.round, Some(2));

    // On another instance sharing the keys it would be the same: the link
    // travels in the state. Round 3 still links to round 1, not round 2.
    let (r3, log3) = call(
        &s,
        "two",
        Some(&state2),
        json!({"b": accept()}),
        Some(span(3)),
    );
    assert_eq!(r3["result"]["content"][0]["text"], "done", "{r3}");
    assert_eq!(log3.flow.as_deref(), Some(flow.as_str()));
    assert_eq!(log3.flow_link, Some(span(1)));

    // A request answered in one round is no flow.
    let (_, single) = call(&s, "one", None, json!({}), Some(span(4)));
    assert!(single.flow.is_none() && single.flow_link.is_none());
    // An untraced round is not named (nothing is computed for it); a traced
    // round after an untraced first one is, with nothing to link to.
    let (u1, ulog1) = call(&s, "two", None, json!({}), None);
    assert!(ulog1.flow.is_none() && ulog1.flow_link.is_none());
    let u = u1["result"]["requestState"].as_str().unwrap().to_owned();
    let (_, ulog) = call(&s, "two", Some(&u), json!({"a": accept()}), Some(span(5)));
    assert!(ulog.flow.is_some() && ulog.flow_link.is_none());
    // A tampered state: refused, and neither named nor linked.
    let mut bad = state2.into_bytes();
    let i = bad.len() / 2;
    bad[i] = if bad[i] == b'A' { b'B' } else { b'A' };
    let bad = String::from_utf8(bad).unwrap();
    let (refused, rlog) = call(&s, "two", Some(&bad), json!({"b": accept()}), Some(span(6)));
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(rlog.flow.is_none() && rlog.flow_link.is_none());
}
