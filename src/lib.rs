//! # mrtr: Multi Round-Trip Requests for MCP servers, correctly and safely
//!
//! Since MCP 2026-07-28 a server may not send requests to the client. When a
//! `tools/call`, `resources/read` or `prompts/get` needs something from the user
//! or the client's model, the server answers with an `InputRequiredResult`; the
//! client gathers the answers and retries under a new id with `inputResponses`,
//! echoing an opaque `requestState`. mrtr is the state engine for that: a
//! **sans-IO core** (no tokio, no clock, no I/O: time and bytes are passed in, and
//! randomness through one seam, [`seal::Entropy`]; it builds for
//! `wasm32-unknown-unknown`). The transports, the rmcp adapter, the Redis replay
//! guard, the client transports and the `mrtr` binary are crates of their own
//! (`mrtr-server`, `mrtr-rmcp`, `mrtr-redis`, `mrtr-client`, `mrtr-cli`), so an
//! embedder builds only what it uses. The default `os-rng` feature supplies the
//! operating system's randomness ([`seal::Sealer::new`], [`seal::Keyring::ephemeral`]).
//!
//! ```text
//!  HTTP / stdio adapter (mrtr-server)          sans-IO core
//!  ────────────────────────────────────        ───────────────────────────────────────────────
//!  bytes → ParsedMessage::parse ─────────────►  JSON-RPC envelope (-32700/-32600)
//!    .check(streamable_http headers, -32020)    CarrierMethod::from_method        (else -32601)
//!  Service::handle_parsed_until ─────────────►  CarrierRequest: _meta             (-32602, -32022)
//!                                               the one carrier path (engine::turn):
//!                                                 requestState → seal::open → Verified<Claims>
//!                                                 handler(Round) → result, or Flow::Suspend
//!                                                 from an ask (round.elicit / sample / roots:
//!                                                 capability gate, -32021 or dropped; answers
//!                                                 validated, re-asked); sync now, async raced
//!                                                 against the deadline
//!                                                 the engine ends the round: seal next state
//!                                                 (round+1, same flow deadline)
//!  JSON-RPC response ◄──────────────────────── Outcome: Complete | InputRequired | ToolError | Protocol
//!   HTTP status: streamable_http::reply_status   recorded once (metrics, private diagnostic)
//! ```
//!
//! Building an `InputRequiredResult` for a `tools/call`, filtered by what the
//! client declared in *this* request:
//!
//! ```
//! use mrtr::wire::{CarrierMethod, CarrierRequest};
//! use mrtr::{Elicited, Engine, Form, Keyring, Outcome, Principal, Sampling, Timestamp, ToolResult};
//! use serde_json::json;
//!
//! let engine = Engine::new(Keyring::ephemeral(), "https://mcp.example.com");
//! // The client declares sampling but no elicitation.
//! let request = CarrierRequest::from_params(CarrierMethod::ToolsCall, Some(&json!({
//!     "name": "weather",
//!     "arguments": {"city": "Paris"},
//!     "_meta": {
//!         "io.modelcontextprotocol/protocolVersion": "2026-07-28",
//!         "io.modelcontextprotocol/clientCapabilities": {"sampling": {}}
//!     }
//! }))).unwrap();
//! let outcome = engine.run(request, &Principal::anonymous(), Timestamp::from_unix_secs(1_800_000_000), |round| {
//!     // An optional form (dropped for this client) and a required sampling call, batched.
//!     let units = round.elicit("units", Form::new("Units?").one_of("units", ["metric", "imperial"]).optional());
//!     let forecast = round.sample("forecast", Sampling::prompt("One-line forecast for Paris?", 60));
//!     let (units, forecast) = (units?, forecast?);
//!     let units = match units { Elicited::Accepted(f) => f.str("units").unwrap_or("metric").to_owned(), _ => "metric".into() };
//!     Ok(ToolResult::text(format!("{} ({units})", forecast.map(|m| m.text()).unwrap_or_default())))
//! });
//! let Outcome::InputRequired(irr) = outcome else { panic!("expected input_required") };
//! let asks = irr.input_requests().unwrap();
//! assert_eq!(asks.keys().collect::<Vec<_>>(), ["forecast"]); // no undeclared elicitation
//! assert!(irr.request_state().is_some()); // sealed: XAES-256-GCM, bound to this call
//! assert_eq!(irr.to_value()["resultType"], "input_required");
//! ```
//!
//! # What of MCP 2026-07-28 it serves
//! Beyond the rounds, a [`Service`] serves the rest of the revision through the
//! same handler shape and carrier path: every content kind ([`result`]),
//! progress and log notifications ([`engine::Round::progress`],
//! [`engine::Round::log`]), paged lists ([`Service::with_page_size`]), resource
//! templates ([`Service::resource_template`]), completions
//! ([`Service::prompt_completion`]), subscriptions and lists that change
//! ([`Service::with_changes`], [`service::Changes`]), parameters carried in
//! custom headers ([`streamable_http::ParamHeaders`]), and the methods the
//! revision removed answered -32601 to a 2026-07-28 client. Clients of the
//! 2025 era, which open with `initialize`, are served by the same handlers
//! ([`legacy`]: [`Service::initialize`], [`Service::handle_legacy`]); and tools
//! that take long become tasks of the tasks extension for the clients that
//! declare it ([`Service::with_tasks`], [`service::TaskSupport`]).
//!
//! # Security
//! - **What is secret**: the keys of the [`seal::Keyring`] (never printed; zeroized
//!   on drop) and the plaintext of a sealed state (encrypted, not only signed).
//! - **What is bound**: a `requestState` opens only for the same method, target,
//!   canonical arguments, principal, audience and protocol version, before its
//!   round expiry and the flow's absolute deadline fixed in round 1 (see [`seal`]).
//!   Every failure is one frozen `-32602`; the precise reason goes to the private log.
//! - **Replay**: binding bounds replay to the same principal repeating the same
//!   step within the window; it does not make a step single-use. For that, use
//!   [`engine::Round::once`] with a [`replay::ReplayGuard`] (shared across a fleet);
//!   a step whose claim the guard cannot record does not run.
//!
//! The whole model, and what is left to the application, is in
//! [`manual::security_model`].
//!
//! # Modules
//! Bottom to top (each imports only modules named before it):
//! [`wire`] (the 2026-07-28 shapes, the carrier methods and requests; it imports
//! nothing else of the crate), [`defaults`] (every default, in one place),
//! `time` ([`Timestamp`]), [`principal`], [`error`] (the two channels and the rule between
//! them), `param_headers` (crate-private: `x-mcp-header` parameters, re-exported by
//! [`streamable_http`]), `capability` (the gate, crate-private), [`seal`], [`metrics`] (what
//! the core counts, through the `metrics` facade), [`replay`], `typed` (arguments decoded, a mismatch named by field, a [`Refusal`]),
//! [`result`] (the three carriers' typed results), [`engine`] (the round, the
//! handler shape, and the one carrier path), `record` (how a request is
//! recorded, crate-private), [`service`] (the JSON-RPC router),
//! [`streamable_http`] (the transport's rules, sans-IO), [`legacy`] (2025-era clients: their
//! sessions' state and the bridge that asks them with server-to-client requests), `lines` (crate-private, the stdio
//! transports' bounded line splitter, sans-IO) and [`client`] (the client's flow as
//! values, sans-IO). The crate `mrtr-server` holds the transports, `mrtr-rmcp` runs the
//! same handlers on an rmcp (official Rust SDK) server, `mrtr-client` the async
//! client and its transports. [`manual`] holds the prose: token format, security model, handler
//! model. The reference server's tools, the `mrtr call` terminal client and the
//! operator's chapters (key rotation, operations) belong to the `mrtr` binary
//! (`mrtr-cli`), not to this API.
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]
#![cfg_attr(docsrs, feature(doc_cfg))]

// The implementation: crate-private modules, reached through the interface below.
mod answers;
mod capability;
mod lines;
mod memo;
/// `x-mcp-header` parameters: declared in a tool's input schema (checked when it
/// is registered), carried in `Mcp-Param-*` headers (`streamable_http` re-exports them).
mod param_headers;
mod peer;
mod record;
mod registry;
mod time;
mod typed;

// The public interface, in one block: the spec's namespaces (each a module that
// re-exports its own private parts), then the names most code needs at the root.
// `api/mrtr.txt` lists every item this reaches; CI fails when it changes unseen.
pub mod client;
pub mod defaults;
pub mod engine;
pub mod error;
pub mod legacy;
/// The manual: prose chapters on the token format, the security model and the handler model.
pub mod manual;
pub mod metrics;
pub mod principal;
pub mod replay;
pub mod result;
pub mod seal;
pub mod service;
pub mod streamable_http;
pub mod wire;

pub use engine::{
    Confirmation, Elicited, Engine, Flow, Form, FormAnswer, LogLevel, NotificationSink, Outcome,
    RootsAsk, Round, Sampling, UrlVisit,
};
pub use error::{Error, Fallback, Retry, ToolAdvice};
pub use principal::Principal;
pub use result::{PromptResult, ResourceResult, ToolResult};
pub use seal::Keyring;
pub use service::{PromptDefinition, ResourceDefinition};
pub use service::{RequestContext, Service};
pub use time::Timestamp;
pub use typed::Refusal;

/// Not API: what mrtr's own crates (`mrtr-server`, `mrtr-rmcp`, `mrtr-redis`,
/// `mrtr-client`, `mrtr-cli`) share with the core, so each rule stays in one place
/// here: the one carrier path, the one place a request is recorded, the registry
/// the rmcp adapter serves a `Service`'s targets from, the memo of converted asks.
/// No semver guarantee: it changes with the core, and those crates pin the core's
/// exact version.
#[doc(hidden)]
pub mod __private {
    pub use crate::engine::handler::into_run;
    pub use crate::engine::handler::private::Run;
    /// The one carrier path (`mrtr::engine`'s turn), for the adapters.
    pub mod turn {
        pub use crate::engine::turn::{Ran, Turn, run};
    }
    /// The stdio transports' bounded line splitter.
    pub mod lines {
        pub use crate::lines::{Line, LineSplitter};
    }
    pub use crate::error::DiagContext;
    pub use crate::memo::AskMemo;
    pub use crate::peer::Peer;
    #[cfg(feature = "http")]
    pub use crate::principal::source::is_principal_name;
    /// The one place a request is recorded.
    pub mod record {
        pub use crate::record::{report, target};
    }
    pub use crate::record::Named;
    pub use crate::registry::{Registered, Registries, Registry};
    pub use crate::wire::meta::MetaMemo;
    pub use crate::wire::truncate;

    use crate::wire::RequestError;
    use crate::wire::{CarrierMethod, CarrierRequest, InputRequiredResult, JsonObject};

    /// The memo an engine parses carrier `_meta` through.
    pub fn metas(engine: &crate::Engine) -> &MetaMemo {
        engine.metas()
    }

    /// The targets `service` registered for the carrier whose result is `T`.
    pub fn registry<T: Registered>(service: &crate::Service) -> &Registry<T> {
        service.registry::<T>()
    }

    /// Whether the application took `target` out of `T`'s list
    /// (`Changes::hide`): it is then served as unknown, on every transport.
    pub fn is_hidden<T: Registered>(service: &crate::Service, target: &str) -> bool {
        service.is_hidden::<T>(target)
    }

    /// `T`'s list entries that are not hidden, in registration order.
    pub fn listed<T: Registered>(
        service: &crate::Service,
    ) -> impl Iterator<Item = &serde_json::Value> {
        service.listed::<T>()
    }

    /// The `requestState` of `result`, the result given up for it (moved, not copied).
    pub fn into_request_state(result: InputRequiredResult) -> Option<String> {
        result.into_request_state()
    }

    /// A tool result's texts and structured content, when every block is text
    /// and the structured content is not `null`; else the result, unchanged.
    #[allow(clippy::result_large_err)] // why: the result given back whole, as it came
    pub fn into_texts(
        result: crate::ToolResult,
    ) -> Result<(Vec<String>, Option<serde_json::Value>), crate::ToolResult> {
        result.into_texts()
    }

    /// [`CarrierRequest::from_params`] with `_meta` parsed through `metas`.
    pub fn from_params_memo(
        method: CarrierMethod,
        params: Option<&serde_json::Value>,
        metas: &MetaMemo,
    ) -> Result<CarrierRequest, RequestError> {
        CarrierRequest::from_params_memo(method, params, metas)
    }

    /// [`CarrierRequest::from_fields`] with `_meta` parsed through `metas`.
    #[allow(clippy::too_many_arguments)] // why: the fields of the request, each its own
    pub fn from_fields_memo(
        method: CarrierMethod,
        meta: Option<&JsonObject>,
        metas: &MetaMemo,
        target: String,
        arguments: Option<JsonObject>,
        input_responses: Option<JsonObject>,
        request_state: Option<String>,
    ) -> Result<CarrierRequest, RequestError> {
        CarrierRequest::from_fields_memo(
            method,
            meta,
            metas,
            target,
            arguments,
            input_responses,
            request_state,
        )
    }
}
