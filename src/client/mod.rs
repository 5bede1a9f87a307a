//! The client side of a flow, as values: call `tools/call`, `prompts/get` or
//! `resources/read` and carry every `InputRequiredResult` round to completion
//! (MCP 2026-07-28, Multi Round-Trip Requests §Client Requirements (Basic
//! Workflow)), with no IO.
//!
//! ```text
//!  Flow::start ──► Ready::request(id) ──► (Sent, request {id, params: original + _meta
//!       ▲                                   + inputResponses? + requestState? (echoed exactly)})
//!       │          Sent::on_response(response):
//!       │           another id                 ──► FlowError::IdMismatch
//!       │           resultType absent/complete ──► Turn::Complete(Completion)
//!       │           unknown resultType         ──► FlowError::UnknownResultType
//!       │           input_required:
//!       │             undeclared kind?          ──► FlowError::UndeclaredInput (no retry)
//!       │             round cap reached?        ──► FlowError::MaxRounds
//!       │             too many questions, sampling
//!       │             over the flow cap, or a
//!       │             requestState over the cap? ──► FlowError::CapExceeded (nothing answered,
//!       │                                             nothing echoed)
//!       │             state only                ──► Turn::Retry { after: 50 ms → 250 ms }
//!       └──────────── inputRequests             ──► Turn::Ask(Asked): Asked::answer(responses)
//!                     (or Asked::into_pending:      unless the answers go over the byte cap,
//!                      a PendingFlow to keep)       or the request over the upload cap:
//!                                                   FlowError::CapExceeded
//! ```
//!
//! # Security
//! The server decides what it asks, so the client bounds what one flow can make
//! it do, each with a default in [`defaults`](crate::defaults) and a setter on
//! [`FlowRules`]: requests per flow (`max_rounds`), questions per round,
//! sampling requests (model calls) per flow, bytes of answers per flow, the
//! length of the `requestState` it echoes and bytes of requests per flow (so a
//! server cannot make it upload a huge state round after round). A cap that is
//! reached ends the flow with a typed error, before anything is answered or
//! sent for the round at fault. What is *declared* is the caller's choice:
//! declare only the input kinds the user has agreed to serve.
//!
//! Each state of the flow is a type whose methods are the only legal next step
//! ([`Flow`], [`Ready`], [`Sent`], [`Asked`]). The async client that sends,
//! answers through handlers, sleeps between retries and caps time per request
//! and per flow is `mrtr-client`'s `Client`, one loop over these states, with
//! its transports (Streamable HTTP, stdio, and an in-process one for tests).
//!
//! ```
//! use mrtr::client::{CarrierCall, Flow, FlowRules, Turn};
//! use mrtr::wire::jsonrpc::RequestId;
//! use mrtr::wire::ClientCapabilities;
//! use serde_json::json;
//!
//! let rules = FlowRules::new(ClientCapabilities::default());
//! let ready = Flow::start(CarrierCall::tool("deploy", json!({})), rules);
//! let (sent, request) = ready.request(RequestId::from(1)).unwrap();
//! assert_eq!(request["method"], "tools/call");
//! // ... send `request` however you like, then:
//! let response = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": []}});
//! let Turn::Complete(done) = sent.on_response(response).unwrap() else { panic!() };
//! assert_eq!(done.rounds, 1);
//! ```

mod error;
mod flow;
mod machine;

pub use error::{Cap, FlowError};
pub use flow::{CarrierCall, Completion, PendingFlow};
pub use machine::{
    Asked, Flow, FlowRules, Ready, Sent, TaskAsked, TaskSent, TaskWait, Turn, result_of,
};
