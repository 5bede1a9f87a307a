//! `mrtr serve` binds every flow to the caller's principal: from a trusted proxy
//! header over HTTP (`--principal-header`), from configuration on stdio
//! (`--principal`, `MRTR_PRINCIPAL`). A state issued to one principal is the
//! frozen -32602 for another, across processes sharing the keys.

use crate::support as server_support;

use serde_json::{Value, json};

use server_support::{
    Server, StdioServer, accept, asked_keys, assert_frozen_state_response, carrier, complete_text,
    retry, state_of, tool_error_text,
};

fn deploy(id: u64) -> Value {
    carrier(id, "tools/call", "deploy", Some(json!({"service": "web"})))
}

fn confirmed() -> Option<Value> {
    Some(json!({"confirm": accept(json!({"confirm": true}))}))
}

#[test]
fn stdio_flow_of_alice_is_refused_to_bob() {
    let key = mrtr::seal::generate_key_string();
    let keys = [("MRTR_KEYS", key.as_str())];
    let first = deploy(1);

    let mut alice = StdioServer::launch(&["--principal", "alice"], &keys);
    let v = alice.call(&first);
    assert_eq!(asked_keys(&v), ["confirm"], "{v}");
    let state = state_of(&v);
    alice.finish();

    // Another process with the same keys, configured as bob (flag or environment).
    let mut bob = StdioServer::launch(&["--principal", "bob"], &keys);
    assert_frozen_state_response(&bob.call(&retry(&first, 2, confirmed(), &state)));
    bob.finish();
    let mut bob = StdioServer::launch(&[], &[keys[0], ("MRTR_PRINCIPAL", "bob")]);
    assert_frozen_state_response(&bob.call(&retry(&first, 3, confirmed(), &state)));
    bob.finish();
    let mut anyone = StdioServer::launch(&["--anonymous"], &keys);
    assert_frozen_state_response(&anyone.call(&retry(&first, 4, confirmed(), &state)));
    anyone.finish();

    // The same retry in a third process configured as alice opens: no frozen
    // -32602. Its deploy step is refused all the same, not run: the flow was sealed
    // before this process started, and its in-memory replay guard cannot rule out
    // that the step ran in an earlier one (tests/replay_restart.rs).
    let mut alice = StdioServer::launch(&[], &[keys[0], ("MRTR_PRINCIPAL", "alice")]);
    let text = tool_error_text(&alice.call(&retry(&first, 5, confirmed(), &state)));
    assert!(text.contains("already carried out"), "{text}");
    alice.finish();
}

#[test]
fn http_principal_header_binds_flows_and_its_absence_is_401() {
    let s = Server::launch(
        &["--principal-header", "X-Forwarded-User"],
        &[("MRTR_KEYS", &mrtr::seal::generate_key_string())],
    );
    assert!(
        !s.wait_for_lines("x-forwarded-user", 1).is_empty(),
        "{:?}",
        s.stderr_lines()
    );
    let first = deploy(1);

    // Without the header, or with a value that cannot be a subject: 401, a
    // JSON-RPC error without id, and the reason in the log only.
    for bad in [
        vec![],
        vec![("X-Forwarded-User", "")],
        vec![("X-Forwarded-User", "alice smith")],
        vec![("X-Forwarded-User", "alice"), ("X-Forwarded-User", "bob")],
    ] {
        let r = s.rpc_with(&first, &bad);
        assert_eq!(r.status, 401, "{bad:?}: {}", r.text());
        let v = r.json();
        assert_eq!(v["error"]["code"], -32600, "{v}");
        assert_eq!(v["error"]["message"], "Unauthorized", "{v}");
        assert!(v.get("id").is_none(), "{v}");
        assert!(!r.text().contains("alice"), "{}", r.text());
    }
    let logged = s.wait_for_lines("unauthenticated", 4);
    assert_eq!(logged.len(), 4, "{logged:?}");
    assert!(
        logged.iter().all(|l| !l.contains("alice smith")),
        "{logged:?}"
    );

    let r = s.rpc_with(&first, &[("X-Forwarded-User", "alice")]);
    assert_eq!(r.status, 200, "{}", r.text());
    let state = state_of(&r.json());
    let resume = retry(&first, 2, confirmed(), &state);
    let r = s.rpc_with(&resume, &[("X-Forwarded-User", "bob")]);
    assert_eq!(r.status, 400, "{}", r.text());
    assert_frozen_state_response(&r.json());
    let r = s.rpc_with(&resume, &[("X-Forwarded-User", "alice")]);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(complete_text(&r.json()).starts_with("Deployed web"));
}
