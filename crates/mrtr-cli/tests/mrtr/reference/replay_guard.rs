//! The in-memory replay guard's quota per anonymous peer address, reached
//! through the service as the HTTP transport sets `RequestContext::peer`, on the
//! reference server's deploy demo (`mrtr_cli::reference`, whose confirmed step is
//! a `once`): it needs the binary's reference service, so it stays here. The
//! replay guard's engine-level tests are the core's (`tests/core/replay_guard.rs`).

use crate::support as common;

use std::sync::Arc;

use common::*;
use mrtr::replay::MemoryReplayGuard;
use serde_json::{Value, json};

#[test]
fn the_transport_peer_reaches_the_quota_through_the_service() {
    // RequestContext::peer, as the HTTP transport sets it: two anonymous callers
    // with a quota of one claim each.
    let guard = MemoryReplayGuard::new(T0).with_max_claims_per_principal(1);
    let (s, deployments) = reference(engine().with_replay_guard(Arc::new(guard)));
    let from = |peer: &str, id: u64, body: &Value, now: mrtr::Timestamp| -> Value {
        let c = mrtr::service::RequestContext {
            peer: Some(peer.parse().unwrap()),
            ..ctx(now)
        };
        let reply = s.handle_sync(body.to_string().as_bytes(), &c);
        let v: Value = serde_json::from_str(reply.body.as_deref().unwrap()).unwrap();
        assert_eq!(v["id"], id);
        v
    };
    let deploy = |peer: &str, id: u64| -> Value {
        let first = tool_call(id, "deploy", Some(json!({"service": "web"})));
        let state = state_of(&from(peer, id, &first, T0));
        let last = retry(&first, id + 1, Some(confirm_answer(true)), &state);
        from(peer, id + 1, &last, T0.add_secs(1))
    };
    assert!(complete_text(&deploy("192.0.2.1", 1)).contains("deployment #1"));
    let refused = tool_error_text(&deploy("192.0.2.1", 3));
    assert!(refused.contains("could not record"), "{refused}");
    assert!(complete_text(&deploy("192.0.2.2", 5)).contains("deployment #2"));
    assert_eq!(deployments.load(std::sync::atomic::Ordering::SeqCst), 2);
}
