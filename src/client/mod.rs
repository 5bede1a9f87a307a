//! The client driver: call `tools/call`, `prompts/get` or `resources/read` and
//! drive every `InputRequiredResult` round to completion (MCP 2026-07-28, Multi
//! Round-Trip Requests §Client Requirements (Basic Workflow)).
//!
//! ```text
//!  Client::call ──► round n: request {id: fresh, params: original + _meta
//!       ▲                          + inputResponses? + requestState? (echoed exactly)}
//!       │                    ──► Transport::send ──► response (within the request timeout)
//!       │           another id                 ──► ClientError::IdMismatch
//!       │           resultType absent/complete ──► Completion
//!       │           unknown resultType         ──► ClientError::UnknownResultType
//!       │           input_required:
//!       │             undeclared kind?          ──► ClientError::UndeclaredInput (no retry)
//!       │             round cap reached?        ──► ClientError::MaxRounds
//!       │             too many questions, sampling
//!       │             over the flow cap, or a
//!       │             requestState over the cap? ──► ClientError::CapExceeded (nothing answered,
//!       │                                             nothing echoed)
//!       │             state only                ──► back off 50 ms → 250 ms, retry
//!       └──────────── inputRequests             ──► InputHandler (a few at a time), retry
//!                     (manual mode: stop here      unless the answers go over the
//!                      with Step::NeedsInput)      byte cap, or the request over the
//!                                                  upload cap: ClientError::CapExceeded
//! ```
//!
//! # Security
//! The server decides what it asks, so the client bounds what one flow can make
//! it do, each with a default in [`defaults`](crate::defaults) and a setter on
//! [`ClientBuilder`]: requests per flow (`max_rounds`), questions per round,
//! questions answered at once, sampling requests (model calls) per flow, bytes of
//! answers per flow, the length of the `requestState` it echoes, bytes of requests
//! per flow (so a server cannot make it upload a huge state round after round),
//! time per request and time per flow. A cap that is reached
//! ends the flow with a typed error, before anything is answered or sent for the
//! round at fault. What is *declared* is the handler's choice: declare only the
//! input kinds the user has agreed to serve.
//!
//! The flow itself is values, with no IO ([`Flow`]: each state a type whose
//! methods are the only legal next step, with every check and cap above);
//! [`Client`] is one loop over it. The client needs no runtime: a [`Transport`] sends one JSON-RPC
//! request, an [`InputHandler`] answers input requests, a [`Timer`] sleeps.
//! [`InProcess`] is a transport to a [`Service`](crate::Service) in the same
//! process (tests, embedding). The crate `mrtr-client` has the transports over
//! tokio: `HttpTransport` speaks Streamable HTTP (`http://` and `https://`),
//! `StdioTransport` spawns a server and speaks JSON-RPC on its stdin and stdout;
//! each gives the client tokio's timer ([`Transport::timer`]).
//!
//! # Example
//! ```
//! use mrtr::client::{BoxFuture, Client, Handlers, Transport, TransportError};
//! use mrtr::wire::{ElicitAction, ElicitResult};
//! use serde_json::{json, Value};
//!
//! // A server that asks once for confirmation, then completes.
//! #[derive(Debug)]
//! struct Fake;
//! impl Transport for Fake {
//!     fn send(&self, req: Value) -> BoxFuture<'_, Result<Value, TransportError>> {
//!         Box::pin(async move {
//!             let result = if req["params"].get("inputResponses").is_some() {
//!                 json!({"resultType": "complete", "content": [{"type": "text", "text": "done"}]})
//!             } else {
//!                 json!({"resultType": "input_required", "requestState": "s1", "inputRequests": {
//!                     "ok": {"method": "elicitation/create", "params": {"message": "Sure?",
//!                       "requestedSchema": {"type": "object", "properties": {"yes": {"type": "boolean"}}}}}}})
//!             };
//!             Ok(json!({"jsonrpc": "2.0", "id": req["id"], "result": result}))
//!         })
//!     }
//! }
//!
//! let handlers = Handlers::new().on_elicit(|_ctx, _form| async {
//!     Ok(ElicitResult { action: ElicitAction::Accept, content: json!({"yes": true}).as_object().cloned() })
//! });
//! // No runtime in this example, so no timer (no back-off pause, no time cap).
//! let client = Client::builder(Fake).with_handler(handlers).no_timer().build();
//! let done = futures_executor_block_on(client.call_tool("deploy", json!({})));
//! # fn futures_executor_block_on<F: std::future::Future>(f: F) -> F::Output {
//! #     // a minimal executor for the doctest (the fake transport never waits)
//! #     use std::task::{Context, Poll, Waker};
//! #     let mut f = std::pin::pin!(f);
//! #     let mut cx = Context::from_waker(Waker::noop());
//! #     loop { if let Poll::Ready(v) = f.as_mut().poll(&mut cx) { return v; } }
//! # }
//! let done = done.unwrap();
//! assert_eq!(done.text(), "done");
//! assert_eq!(done.rounds, 2);
//! ```

mod driver;
mod error;
mod flow;
mod handler;
mod in_process;
mod machine;
mod timer;
mod transport;

pub use driver::{Client, ClientBuilder};
pub use error::{Cap, ClientError};
pub use flow::{CarrierCall, Completion, PendingFlow, Step};
pub use handler::{HandlerError, Handlers, InputContext, InputHandler, NoInput};
pub use in_process::InProcess;
pub use machine::{Asked, Flow, FlowRules, Ready, Sent, Turn};
pub use timer::Timer;
pub use transport::{BoxFuture, Transport, TransportError};
