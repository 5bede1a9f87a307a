//! mrtr handlers on an [rmcp](https://docs.rs/rmcp) server.
//!
//! rmcp, the official Rust MCP SDK, has the MRTR wire types but no round engine:
//! a tool that returns its own `InputRequiredResult` must seal, bind, gate and
//! validate by hand. This module runs an mrtr handler (a closure over a
//! [`Round`], sync or async, with typed arguments if you like) from rmcp and
//! returns what rmcp expects, with everything [`Service`] does: the capability
//! gate from the request's `_meta`, the sealed `requestState` bound to
//! method, target, arguments, principal, audience and protocol version, answer
//! validation and re-asks, the engine's limits, `once`, and the two error
//! channels, each refusal's private diagnostic in the log (`tracing`, target
//! `mrtr::diag`) and the metrics.
//!
//! ```text
//!  rmcp ServerHandler::call_tool ──► Mrtr::call_tool ──► rmcp ToolRouter ──► #[tool] fn(call: ToolCall)
//!    (keeps the call's params, parsed,                          call.run(|round| …)
//!     for ToolCall, whatever the                                       │
//!     extractor order)                                                 ▼
//!  rmcp ServerHandler::get_prompt ──► Mrtr::get_prompt(…, |round| …) ─► the engine (the same
//!  rmcp ServerHandler::read_resource ► Mrtr::read_resource(…, |round| …)   path as Service::handle)
//!                                                                      │
//!  2026-07-28 client ◄── CallToolResult / InputRequiredResult / ErrorData (serde, the MCP wire shapes)
//!  2025-11-25 client ◄── the same handler re-run in the request; its asks sent through rmcp's Peer
//! ```
//!
//! # The pieces
//! - [`Mrtr`]: the engine, who the caller is ([`Principals`]: a resolver over
//!   the HTTP request parts rmcp hands the handler, or anonymous on purpose),
//!   and the handler deadline.
//! - Tools: route `ServerHandler::call_tool` through [`Mrtr::call_tool`] and take
//!   a [`ToolCall`] in the `#[tool]` function; [`ToolCall::run`] (or
//!   [`ToolCall::run_typed`], with the arguments decoded) runs the handler, a
//!   sync or an async closure that returns a [`ToolResult`]. [`input_schema`]
//!   gives the `#[tool(input_schema = …)]` of a typed tool.
//! - Prompts and resources (rmcp has no router for them): call
//!   [`Mrtr::get_prompt`] (a handler returning a
//!   [`PromptResult`]) and [`Mrtr::read_resource`] (a
//!   [`ResourceResult`]) from
//!   `ServerHandler::get_prompt` and `read_resource`.
//! - A whole [`Service`] (its tools, prompts and resources) on rmcp:
//!   [`Mrtr::call_service_tool`], [`Mrtr::get_service_prompt`],
//!   [`Mrtr::read_service_resource`] and [`service_tools`],
//!   [`service_prompts`], [`service_resources`] for the lists.
//!
//! # Extractor order cannot weaken the binding
//! rmcp's extractors take fields out of the tool call in declaration order: a
//! `Parameters<T>` before another extractor leaves it no arguments, a
//! `RequestState` no state. A [`ToolCall`] does not read those leftovers: it
//! reads the call's params that [`Mrtr::call_tool`] parsed and kept aside
//! before routing, so it binds the arguments the client sent whatever the
//! order. ([`Mrtr::call_tool`] moves `requestState` and `inputResponses` out
//! of the call, so rmcp's own `RequestState` and `InputResponses` extractors on
//! such a tool see none.) A
//! [`ToolCall`] on a tool not routed through [`Mrtr::call_tool`] (the
//! `call_tool` that `#[tool_handler]` generates) has nothing to bind to and
//! fails closed: -32603, and the log says why.
//!
//! Never stack rmcp's `RequestStateCodec` on an mrtr tool: the `requestState`
//! is mrtr's, sealed (XAES-256-GCM) and bound; a second codec would sign a token
//! it cannot read and add nothing.
//!
//! # 2025-11-25 clients
//! A client that negotiated 2025-11-25 (an `initialize` handshake, a session)
//! cannot take an `InputRequiredResult`. For it the same handler runs to
//! completion inside the one request: each round's asks go to the client as
//! server-to-client requests through rmcp's [`Peer`](::rmcp::Peer)
//! (`elicitation/create`, `sampling/createMessage`, `roots/list`, one at a
//! time, in the order asked), their results feed the next run of the handler,
//! and the gate reads the capabilities the client declared at `initialize`.
//! This is the core's bridge ([`mrtr::legacy::run`]), the one `mrtr-server`'s
//! own transports use for their 2025-era sessions, with rmcp's peer as its way
//! of asking.
//! What differs:
//! - the state never leaves the server: it is sealed and opened as usual, but
//!   in memory, between the runs of one request (no client echo, so nothing to
//!   tamper with or replay from outside);
//! - the whole flow lives in one open request, so it gets the bounds of one:
//!   each ask waits at most [`Mrtr::with_ask_timeout`] (default 2 minutes,
//!   [`DEFAULT_ASK_TIMEOUT`]) and the whole flow, asks and handler runs
//!   included, at most [`Mrtr::with_legacy_flow_timeout`] (default 5 minutes,
//!   [`DEFAULT_LEGACY_FLOW_TIMEOUT`]), not the hour a 2026-07-28 flow may take
//!   across requests; the round limit, answer validation, re-asks and `once`
//!   are the engine's, as for a 2026-07-28 client;
//! - a client that answers an ask with an error, or not in time, ends the
//!   flow, as does the flow bound: a retryable tool error on `tools/call`,
//!   -32603 elsewhere;
//! - rmcp takes the answer to an ask from whoever holds the session id
//!   (`Mcp-Session-Id`), not from the principal that made the call. Over HTTP
//!   with principals from a resolver, serve rmcp behind `HttpGuard` (below),
//!   which binds each session to the principal that opened it; a flow on a
//!   session nothing bound sends no ask (-32603, the log says why) unless
//!   [`Mrtr::allow_unbound_sessions`] says something else binds them.
//!
//! # Over HTTP: `HttpGuard` (feature `http`)
//! `mrtr serve` checks things at the HTTP layer that rmcp's Streamable HTTP
//! service does not. `HttpGuard::new(&mrtr, sessions)` and
//! `guard.wrap(service)` put them in front of rmcp's service (`sessions` is the
//! session manager that service uses), with rmcp's own crates only (tower-service,
//! http-body, http-body-util, bytes):
//! - a body whose objects name a member twice, at any depth (inside `arguments`,
//!   `inputResponses`, `_meta`, the envelope), is refused exactly as `mrtr
//!   serve` refuses it: HTTP 400 and `{"jsonrpc":"2.0","error":{"code":-32700,
//!   "message":"Parse error"}}`, with the core's detection and diagnostic. rmcp
//!   alone keeps the last of the two, which a proxy that reads the first would
//!   not see;
//! - the body is read at most 256 KiB ([`mrtr::defaults::MAX_BODY`], 413 past
//!   it) within 10 s (408), both settable;
//! - each 2025-11-25 session is bound to the principal of the `initialize` that
//!   opened it (resolved by this [`Mrtr`]'s resolver over the HTTP parts, kept as
//!   a digest); a later `POST`, `GET` or `DELETE` on it from another principal
//!   gets what a session that does not exist gets (404). At most 10 000 sessions
//!   are bound at once (settable); a binding goes when its session ends.
//!
//! The guard parses every JSON body once before rmcp parses it again: the cost
//! of the strictness.
//!
//! # Cost
//! A 2026-07-28 `tools/call` is parsed once, from rmcp's typed params
//! ([`CarrierRequest::from_fields`], the rules of the JSON parser), runs on the
//! same carrier path as [`Service`] (a synchronous handler with no future
//! around it), and a [`ToolResult`] of text goes back as rmcp's
//! `CallToolResult` without an intermediate JSON value. rmcp's
//! ask types deserialize through its untagged enums, so each [`Mrtr`] keeps
//! the converted form of the asks it has seen (at most 256, each at most 4 KiB
//! of text), and the engine the question digest of each: a handler asks the
//! same question on every run, and a hit is returned only for an equal ask.
//! `benches/peers` (`cargo bench --bench e2e`) measures the whole flow beside
//! rmcp's own `RequestStateCodec`.
//!
//! # Versions
//! rmcp 3.2 and newer: 3.2 is the first whose `#[tool]` functions may return a
//! `CallToolResponse`. `scripts/rmcp-versions.sh` checks the library and runs
//! the rmcp tests on 3.2; everything else in CI builds the newest.
//!
//! # Security
//! The principal comes from [`Principals`], chosen when the [`Mrtr`] is built:
//! a resolver that reads what your authentication layer put into the HTTP
//! request (its `http::request::Parts`, which rmcp's Streamable HTTP service puts
//! into the request's extensions), or [`Principals::anonymous`] on purpose. A
//! resolver that finds no principal refuses the request (-32603: the
//! authentication layer should have refused it first). A 2025-11-25 flow's
//! answers come from the principal that made the call only on a session bound
//! to it (`HttpGuard`, above). The metrics never carry a string the client
//! chose: a prompt name or resource URI handed to [`Mrtr::get_prompt`] or
//! [`Mrtr::read_resource`] is no `name` label, as
//! [`mrtr::metrics`] requires. Nothing of a token, key, plaintext state,
//! principal or argument value is in an error message or log line.
use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use ::rmcp::handler::server::tool::{ToolCallContext, ToolRouter};
use ::rmcp::model::{
    CallToolRequestParams, CallToolResponse, GetPromptRequestParams, GetPromptResponse,
    ReadResourceRequestParams, ReadResourceResponse,
};
use ::rmcp::service::RequestContext as RmcpContext;
use ::rmcp::{ErrorData, RoleServer};

use mrtr::__private::Run;
use mrtr::__private::turn::{self, Turn};
use mrtr::__private::{Named, record};
use mrtr::Timestamp;
use mrtr::engine::{CarrierResult, Engine, Flow, Outcome, Output, Round};
use mrtr::error::Error;
use mrtr::principal::Principal;
use mrtr::result::{PromptResult, ResourceResult};
use mrtr::wire::jsonrpc::RequestId;
use mrtr::wire::{CarrierMethod, CarrierRequest, RequestError};
#[cfg(doc)]
use mrtr::{ToolResult, service::Service};

mod convert;
#[cfg(feature = "http")]
mod guard;
mod legacy;
mod params;
mod principals;
mod registry;
mod tool;

use convert::{AskCache, prompt_response, resource_response};
#[cfg(feature = "http")]
pub use guard::{DEFAULT_BODY_TIMEOUT, DEFAULT_MAX_SESSIONS, Guarded, HttpGuard, HttpGuardError};
use params::Params;
pub use principals::{FromContext, Principals};
pub use registry::{service_prompts, service_resources, service_tools};
pub use tool::{ToolCall, input_schema};

/// The default deadline of one run of a handler (as [`Service::handler_timeout`]).
const DEFAULT_HANDLER_TIMEOUT: Duration = mrtr::defaults::HANDLER_TIMEOUT;

/// The default time a 2025-11-25 client has to answer one ask: 2 minutes, for a
/// person to read a form and answer it. The whole flow is bounded as well
/// ([`DEFAULT_LEGACY_FLOW_TIMEOUT`]).
pub const DEFAULT_ASK_TIMEOUT: Duration = Duration::from_secs(120);

/// The default bound of a whole 2025-11-25 flow, from the start of its request
/// to its answer, its asks and every run of its handler included: 5 minutes. The
/// flow lives in one open HTTP request (and a task and an SSE stream of rmcp's),
/// so it gets the bound of one request, not the hour a 2026-07-28 flow may take
/// across requests ([`mrtr::defaults::FLOW_LIFETIME`]): a few forms answered by
/// a person fit, a client that keeps answering a handler that keeps asking does not.
pub const DEFAULT_LEGACY_FLOW_TIMEOUT: Duration = Duration::from_secs(300);

/// mrtr on rmcp: the round engine, who the caller is, and the deadlines. Cheap to
/// clone (one `Arc`); keep one in your rmcp server struct.
///
/// ```
/// use mrtr::{Engine, Keyring};
/// use mrtr_rmcp::{Mrtr, Principals};
/// let mrtr = Mrtr::new(Engine::new(Keyring::ephemeral(), "https://mcp.example.com"), Principals::anonymous())
///     .with_handler_timeout(std::time::Duration::from_secs(10));
/// assert_eq!(mrtr.engine().audience(), "https://mcp.example.com");
/// ```
#[derive(Clone, Debug)]
pub struct Mrtr {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    engine: Engine,
    principals: Principals,
    handler_timeout: Duration,
    ask_timeout: Duration,
    legacy_flow_timeout: Duration,
    allow_unbound_sessions: bool,
    asks: AskCache,
}

/// The mark an HTTP layer of this crate puts into a request's extensions once it
/// has checked that the request's session belongs to the principal that sent it
/// (and so that every answer on that session comes from that principal too).
/// Private: nothing outside the crate can make one.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(not(feature = "http"), allow(dead_code))] // why: only the HTTP layer makes one
struct SessionBound;

/// Who sent a request, as its rounds need it: the principal [`Principals`]
/// found (or why not), and the request's JSON-RPC id.
struct Caller {
    principal: Result<Principal, Error>,
    id: ::rmcp::model::RequestId,
    /// The client's era, for the metrics and the log.
    era: mrtr::legacy::Era,
}

/// Whether a round's metrics name its target (the `name` label of
/// `mrtr_requests_total`). Labels are a closed set ([`mrtr::metrics`]): only a
/// name the application registered may become one, never a string a client
/// chose, so a client sending a million prompt names or resource URIs adds no
/// series.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Label {
    /// A name the application registered: a route of the rmcp tool router
    /// [`Mrtr::call_tool`] routed the call to, or a tool or prompt of the
    /// [`Service`] a `*_service_*` method serves.
    Registered,
    /// Anything else: a prompt name or resource URI handed to a handler closure
    /// ([`Mrtr::get_prompt`], [`Mrtr::read_resource`]: the adapter cannot tell
    /// whether the application knows it), an unknown target, and every resource
    /// URI (as on [`Service`]).
    Unlisted,
}

impl Label {
    /// `target` as the `name` label, if this label allows one.
    fn name(self, target: Option<&str>) -> Option<&str> {
        target.filter(|_| self == Self::Registered)
    }
}

impl Mrtr {
    /// mrtr on `engine`, binding every state to the principal `principals` finds:
    /// any [`PrincipalSource`](mrtr::principal::PrincipalSource) (the trait
    /// `mrtr_server::http` takes too: `Anonymous`, `FromExtension`, `FromHeader`,
    /// a closure over `http::request::Parts`), or a [`Principals`].
    pub fn new(engine: Engine, principals: impl Into<Principals>) -> Self {
        Self {
            inner: Arc::new(Inner {
                engine,
                principals: principals.into(),
                handler_timeout: DEFAULT_HANDLER_TIMEOUT,
                ask_timeout: DEFAULT_ASK_TIMEOUT,
                legacy_flow_timeout: DEFAULT_LEGACY_FLOW_TIMEOUT,
                allow_unbound_sessions: false,
                asks: AskCache::default(),
            }),
        }
    }

    fn with(mut self, f: impl FnOnce(&mut Inner)) -> Self {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => f(inner),
            None => {
                let mut inner = Inner {
                    engine: self.inner.engine.clone(),
                    principals: self.inner.principals.clone(),
                    handler_timeout: self.inner.handler_timeout,
                    ask_timeout: self.inner.ask_timeout,
                    legacy_flow_timeout: self.inner.legacy_flow_timeout,
                    allow_unbound_sessions: self.inner.allow_unbound_sessions,
                    asks: AskCache::default(),
                };
                f(&mut inner);
                self.inner = Arc::new(inner);
            }
        }
        self
    }

    /// The deadline of one run of a handler (default 30 s,
    /// [`defaults::HANDLER_TIMEOUT`](mrtr::defaults::HANDLER_TIMEOUT)): a handler
    /// still running then is abandoned, nothing it did in that run is sealed, and
    /// the request gets a retryable tool error on `tools/call`, -32603 elsewhere.
    /// Only an async handler can be abandoned, at an `.await`: a synchronous one
    /// runs to its end, so give work that may take long an async handler.
    #[must_use]
    pub fn with_handler_timeout(self, timeout: Duration) -> Self {
        self.with(|i| i.handler_timeout = timeout)
    }

    /// How long a 2025-11-25 client has to answer one ask sent through rmcp's peer
    /// (default 120 s, [`DEFAULT_ASK_TIMEOUT`]); then the flow ends: a retryable
    /// tool error on `tools/call`, -32603 elsewhere. The whole flow is bounded by
    /// [`Mrtr::with_legacy_flow_timeout`] too, whichever ends first.
    #[must_use]
    pub fn with_ask_timeout(self, timeout: Duration) -> Self {
        self.with(|i| i.ask_timeout = timeout)
    }

    /// The bound of a whole 2025-11-25 flow, which runs inside one HTTP request:
    /// its asks, the client's answers and every run of the handler (default
    /// 300 s, [`DEFAULT_LEGACY_FLOW_TIMEOUT`]). A flow still running then is
    /// abandoned as a handler past its deadline is (nothing of the unfinished
    /// round is sealed or kept) and the request gets a retryable tool error on
    /// `tools/call`, -32603 elsewhere. Keep it under the request timeouts of the
    /// clients and proxies in front of the server.
    #[must_use]
    pub fn with_legacy_flow_timeout(self, timeout: Duration) -> Self {
        self.with(|i| i.legacy_flow_timeout = timeout)
    }

    /// Sends the asks of 2025-11-25 flows on sessions no `HttpGuard` (feature
    /// `http`) bound to their principal. By default such a flow ends at its
    /// first ask (-32603; the log says why) when its principal comes from a
    /// resolver and the request came over HTTP: rmcp takes the answer to an ask
    /// from whoever holds the session id (`Mcp-Session-Id`), so without the
    /// binding another principal who learned the id could answer it (confirm a
    /// deploy). Opt out only when something else in front of rmcp binds each
    /// session to one principal. Not needed for [`Principals::anonymous`] (every
    /// caller is the same principal) or for transports without HTTP parts
    /// (stdio: the connection is the caller).
    #[must_use]
    pub fn allow_unbound_sessions(self) -> Self {
        self.with(|i| i.allow_unbound_sessions = true)
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    fn caller(&self, context: &RmcpContext<RoleServer>) -> Caller {
        Caller {
            principal: self.inner.principals.resolve(context),
            id: context.id.clone(),
            era: mrtr::legacy::Era::Modern,
        }
    }

    /// The body of `ServerHandler::call_tool`: keeps the call's params aside
    /// (parsed) for its [`ToolCall`], then routes the call on `router` as rmcp does.
    ///
    /// See [`ToolCall`] for a whole server; the method is
    /// `self.mrtr.call_tool(self, &self.tool_router, request, context).await` in
    /// your `ServerHandler::call_tool` (which `#[tool_handler]` then leaves alone).
    ///
    /// # Errors
    /// What the routed tool returns, or rmcp's "tool not found".
    pub async fn call_tool<S>(
        &self,
        server: &S,
        router: &ToolRouter<S>,
        mut request: CallToolRequestParams,
        mut context: RmcpContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData>
    where
        S: Send + Sync + 'static,
    {
        let params = Params::of_tool(
            &mut request,
            &context,
            mrtr::__private::metas(&self.inner.engine),
        );
        // The router runs a tool function (and so its ToolCall) only for one of
        // its routes; checked here all the same, so the label never rests on it.
        let label = if router.has_route(&request.name) {
            Label::Registered
        } else {
            Label::Unlisted
        };
        tool::keep(&mut context, self.clone(), params, label);
        router
            .call(ToolCallContext::new(server, request, context))
            .await
    }

    /// The body of `ServerHandler::get_prompt`: `handler`, sync or async,
    /// returns the [`PromptResult`].
    ///
    /// The request is counted in [`mrtr::metrics`] without a `name` label: the
    /// prompt name is the client's string, and this method cannot tell a prompt
    /// the application knows from any other (the `*_service_*` methods label the
    /// names a [`Service`] registered). The same holds for [`Mrtr::read_resource`].
    ///
    /// # Errors
    /// The JSON-RPC errors of the flow (-32602 for a state that does not open,
    /// -32021 for a capability the client lacks, ...).
    pub async fn get_prompt<F, O, M>(
        &self,
        request: GetPromptRequestParams,
        context: RmcpContext<RoleServer>,
        handler: F,
    ) -> Result<GetPromptResponse, ErrorData>
    where
        F: Fn(Round) -> O + Send + Sync,
        O: Output<PromptResult, M>,
    {
        let params = Params::of(CarrierMethod::PromptsGet, &request, &context, self.metas());
        let caller = self.caller(&context);
        let run = |round| handler(round).into_run();
        let outcome = self.flow(params, caller, Label::Unlisted, Some(&run)).await;
        prompt_response(outcome, &self.inner.asks)
    }

    /// The body of `ServerHandler::read_resource`: `handler`, sync or async,
    /// returns the [`ResourceResult`].
    ///
    /// # Errors
    /// As [`Mrtr::get_prompt`].
    pub async fn read_resource<F, O, M>(
        &self,
        request: ReadResourceRequestParams,
        context: RmcpContext<RoleServer>,
        handler: F,
    ) -> Result<ReadResourceResponse, ErrorData>
    where
        F: Fn(Round) -> O + Send + Sync,
        O: Output<ResourceResult, M>,
    {
        let method = CarrierMethod::ResourcesRead;
        let params = Params::of(method, &request, &context, self.metas());
        let caller = self.caller(&context);
        let run = |round| handler(round).into_run();
        let outcome = self.flow(params, caller, Label::Unlisted, Some(&run)).await;
        resource_response(outcome, &self.inner.asks)
    }

    fn metas(&self) -> &mrtr::__private::MetaMemo {
        mrtr::__private::metas(&self.inner.engine)
    }

    /// Runs a flow on the carrier path: one round for a 2026-07-28 client,
    /// every round in this request for a 2025-11-25 one. `handler` is `None`
    /// for a target nothing handles (the carrier's "unknown target" -32602).
    async fn flow<T, H, L>(
        &self,
        params: Params,
        caller: Caller,
        label: Label,
        handler: Option<&H>,
    ) -> Outcome<T>
    where
        T: CarrierResult,
        H: Fn(Round) -> Run<T, L> + Sync,
        L: Future<Output = Result<T, Flow>>,
    {
        match params {
            Params::Parsed { target, request } => {
                self.round(target.as_deref(), request, &caller, label, handler)
                    .await
            }
            // Boxed: its asks through rmcp's peer make this future kilobytes
            // larger, which a 2026-07-28 request would otherwise carry (and move) too.
            Params::Legacy(params, legacy) => {
                let caller = Caller {
                    era: mrtr::legacy::Era::Legacy,
                    ..caller
                };
                Box::pin(legacy::flow(self, params, legacy, caller, label, handler)).await
            }
        }
    }

    /// One round on the carrier path (the same as [`Service::handle`]'s),
    /// recorded. `target` names the target for the log when `request` does not
    /// (it did not parse).
    async fn round<T, H, L>(
        &self,
        target: Option<&str>,
        request: Result<CarrierRequest, RequestError>,
        caller: &Caller,
        label: Label,
        handler: Option<&H>,
    ) -> Outcome<T>
    where
        T: CarrierResult,
        H: Fn(Round) -> Run<T, L> + Sync,
        L: Future<Output = Result<T, Flow>>,
    {
        let target = params::log_target(target, &request).map(|t| record::target(t).to_owned());
        let ran = match &caller.principal {
            Err(e) => turn::Ran {
                outcome: Outcome::Protocol(e.clone()),
                round: None,
                flow: None,
            },
            Ok(principal) => {
                let timeout = self.inner.handler_timeout;
                // The timer is made only if an async handler does not finish on
                // its first poll (a synchronous one never needs one); it runs from now.
                let at = tokio::time::Instant::now() + timeout;
                let turn = Turn {
                    engine: &self.inner.engine,
                    request,
                    principal,
                    peer: None,
                    now: Timestamp::now(),
                    timeout,
                    // rmcp carries its own notifications; a handler's progress
                    // and log messages go nowhere here.
                    notifications: None,
                    // rmcp traces nothing of its own.
                    trace: None,
                };
                let handler_for = |_: &CarrierRequest| handler.map(|h| move |round| h(round));
                turn::run(turn, handler_for, async move {
                    tokio::time::sleep_until(at).await;
                })
                .await
            }
        };
        let target = target.as_deref();
        let named = Named {
            method: Some(T::METHOD.as_str()),
            target,
            round: ran.round,
            era: caller.era,
        };
        conclude(&ran.outcome, named, label.name(target), &caller.id);
        ran.outcome
    }
}

/// Records one outcome ([`record::report`]), with `name` when the handler is a
/// registered one. No access log reads a round on rmcp, so nothing else is kept
/// of it; the correlation id and the JSON-RPC id go only into a refusal's
/// diagnostic, so they are made only for one.
fn conclude<T>(
    outcome: &Outcome<T>,
    named: Named<'_>,
    name: Option<&str>,
    id: &::rmcp::model::RequestId,
) {
    if outcome.error().is_none() {
        record::report(Some(outcome), None, "", named, name);
        return;
    }
    let id = serde_json::to_value(id)
        .ok()
        .and_then(|v| RequestId::from_value(&v));
    record::report(Some(outcome), id.as_ref(), &correlation_id(), named, name);
}

/// A correlation id for the log lines of one round (16 hex digits).
fn correlation_id() -> String {
    static KEYS: OnceLock<std::collections::hash_map::RandomState> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mut h = KEYS.get_or_init(Default::default).build_hasher();
    h.write_u64(NEXT.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    format!("{:016x}", h.finish())
}

/// This crate's README, its Rust blocks compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
