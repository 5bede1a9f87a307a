//! A principal is its issuer and its subject, in the engine: a state sealed for
//! `alice` from one issuer is the frozen -32602 for `alice` from another, and
//! for a bare `alice`. The same through the router, on the reference server's
//! fixtures, is in the binary's tests (`reference/principal_issuer.rs`).

use mrtr_testkit as common;

use common::*;
use mrtr::Principal;
use mrtr::engine::{Flow, Round};
use serde_json::json;

const IDP_A: &str = "https://idp-a.example";
const IDP_B: &str = "https://idp-b.example";

/// A tool that asks for a name, then greets.
fn greet(r: Round) -> Result<mrtr::ToolResult, Flow> {
    ask_name(&r)
}

#[test]
fn the_engine_binds_the_issuer_too() {
    let e = engine();
    let alice_a = Principal::new(IDP_A, "alice");
    let first = irr(e.run(tool("greet").build(), &alice_a, T0, greet));
    let retry = tool("greet").reply(&first, json!({"user_name": accept(json!({"name": "Ada"}))}));
    for other in [Principal::new(IDP_B, "alice"), Principal::subject("alice")] {
        assert_frozen_state_error(&protocol(e.run(retry.build(), &other, T0, greet)));
    }
    let done = complete(e.run(retry.build(), &alice_a, T0, greet));
    assert_eq!(text(&done), "Hello, Ada!");
}
