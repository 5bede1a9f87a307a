//! A principal is its issuer and its subject: a state sealed for `alice` from one
//! issuer is the frozen -32602 for `alice` from another, and for a bare `alice`,
//! through the router (`Service`) on the reference server's elicitation fixture
//! (`mrtr_cli::reference`, so it stays with the binary's tests). The anonymous
//! principal and the subject-only form keep working. The engine alone binds the
//! issuer too: the core's `tests/core/principal_issuer.rs`.

use crate::support as common;

use common::*;
use mrtr::{Principal, RequestContext, Service};
use serde_json::Value;

const IDP_A: &str = "https://idp-a.example";
const IDP_B: &str = "https://idp-b.example";

/// One body through `Service::handle` as `principal`, parsed.
fn call_as(service: &Service, body: &Value, principal: &Principal) -> Value {
    let ctx = RequestContext {
        principal: principal.clone(),
        ..ctx(T0)
    };
    let reply = service.handle_sync(body.to_string().as_bytes(), &ctx);
    serde_json::from_str(&reply.body.expect("a response")).expect("JSON")
}

#[test]
fn the_same_subject_from_another_issuer_cannot_open_the_state() {
    let (service, _) = reference(engine());
    let alice_a = Principal::new(IDP_A, "alice");
    let first = tool_call(1, ELICIT, None);
    let state = state_of(&call_as(&service, &first, &alice_a));
    let retry = retry(&first, 2, Some(name_answer("Ada")), &state);

    // Another issuer's alice, and an alice without issuer: the frozen error.
    for other in [Principal::new(IDP_B, "alice"), Principal::subject("alice")] {
        assert_frozen_state_response(&call_as(&service, &retry, &other));
    }
    // The issuer's own alice completes.
    let done = call_as(&service, &retry, &alice_a);
    assert!(complete_text(&done).contains("Ada"), "{done}");
}

#[test]
fn anonymous_and_subject_only_principals_keep_working() {
    let (service, _) = reference(engine());
    for who in [Principal::anonymous(), Principal::subject("alice")] {
        let first = tool_call(1, ELICIT, None);
        let state = state_of(&call_as(&service, &first, &who));
        let retry = retry(&first, 2, Some(name_answer("Ada")), &state);
        let done = call_as(&service, &retry, &who);
        assert!(complete_text(&done).contains("Ada"), "{who:?}: {done}");
        // Neither opens for the other, nor for an issued principal.
        let stranger = if who.is_anonymous() {
            Principal::subject("alice")
        } else {
            Principal::new(IDP_A, "alice")
        };
        assert_frozen_state_response(&call_as(&service, &retry, &stranger));
    }
}
