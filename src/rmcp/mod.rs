//! mrtr handlers on an [rmcp](https://docs.rs/rmcp) server (feature `rmcp`).
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
//!   a [`ToolCall`] in the `#[tool]` function; [`ToolCall::run`],
//!   [`ToolCall::run_async`], [`ToolCall::run_typed`] and
//!   [`ToolCall::run_typed_async`] run the handler. [`input_schema`] gives the
//!   `#[tool(input_schema = …)]` of a typed tool.
//! - Prompts and resources (rmcp has no router for them): call
//!   [`Mrtr::get_prompt`] / [`Mrtr::get_prompt_async`] and
//!   [`Mrtr::read_resource`] / [`Mrtr::read_resource_async`] from
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
//! server-to-client requests through rmcp's [`Peer`]
//! (`elicitation/create`, `sampling/createMessage`, `roots/list`, one at a
//! time, in the order asked), their results feed the next run of the handler,
//! and the gate reads the capabilities the client declared at `initialize`.
//! What differs:
//! - the state never leaves the server: it is sealed and opened as usual, but
//!   in memory, between the runs of one request (no client echo, so nothing to
//!   tamper with or replay from outside);
//! - the whole flow lives in one open request, so it gets the bounds of one:
//!   each ask waits at most [`Mrtr::ask_timeout`] (default 2 minutes,
//!   [`DEFAULT_ASK_TIMEOUT`]) and the whole flow, asks and handler runs
//!   included, at most [`Mrtr::legacy_flow_timeout`] (default 5 minutes,
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
//! # Over HTTP: `HttpGuard` (feature `rmcp-http`)
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
//! - the body is read at most 256 KiB ([`crate::defaults::MAX_BODY`], 413 past
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
//! ([`CarrierRequest::from_fields`], the rules of the JSON parser), and the
//! result goes back as rmcp's types without an intermediate JSON value. rmcp's
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
//! [`Mrtr::read_resource`] (or their `_async` forms) is no `name` label, as
//! [`crate::metrics`] requires. Nothing of a token, key, plaintext state,
//! principal or argument value is in an error message or log line.

use std::any::Any;
use std::convert::identity;
use std::fmt;
use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use ::rmcp::handler::server::common::{AsRequestContext, FromContextPart};
use ::rmcp::handler::server::tool::{ToolCallContext, ToolRouter};
use ::rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, GetPromptRequestParams,
    GetPromptResponse, JsonObject as RmcpObject, Prompt, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, Resource, Tool,
};
use ::rmcp::service::RequestContext as RmcpContext;
use ::rmcp::{ErrorData, Peer, RoleServer};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::engine::{Engine, Flow, Outcome, Round};

mod convert;
mod principals;
pub use principals::{FromContext, Principals};
#[cfg(feature = "rmcp-http")]
mod guard;
use crate::error::{Error, Fallback, Retry, ToolAdvice};
use crate::principal::Principal;
use crate::result::ToolResult;
use crate::service::{self, RequestContext, Service, Start};
use crate::time::Timestamp;
use crate::wire::jsonrpc::RequestId;
use crate::wire::meta::MetaMemo;
use crate::wire::{CarrierMethod, CarrierRequest, PROTOCOL_VERSION, RequestError};
use convert::{
    AskCache, Reply, error_data, prompt_response, resource_response, to_reply, tool_response,
};
#[cfg(feature = "rmcp-http")]
pub use guard::{DEFAULT_BODY_TIMEOUT, DEFAULT_MAX_SESSIONS, Guarded, HttpGuard, HttpGuardError};

/// The default deadline of one run of a handler (as [`Service::handler_timeout`]).
const DEFAULT_HANDLER_TIMEOUT: Duration = crate::defaults::HANDLER_TIMEOUT;

/// The default time a 2025-11-25 client has to answer one ask: 2 minutes, for a
/// person to read a form and answer it. The whole flow is bounded as well
/// ([`DEFAULT_LEGACY_FLOW_TIMEOUT`]).
pub const DEFAULT_ASK_TIMEOUT: Duration = Duration::from_secs(120);

/// The default bound of a whole 2025-11-25 flow, from the start of its request
/// to its answer, its asks and every run of its handler included: 5 minutes. The
/// flow lives in one open HTTP request (and a task and an SSE stream of rmcp's),
/// so it gets the bound of one request, not the hour a 2026-07-28 flow may take
/// across requests ([`crate::defaults::FLOW_LIFETIME`]): a few forms answered by
/// a person fit, a client that keeps answering a handler that keeps asking does not.
pub const DEFAULT_LEGACY_FLOW_TIMEOUT: Duration = Duration::from_secs(300);

/// The handler type of a request whose target is not registered (never called).
type NoHandler = fn(Round) -> std::future::Ready<Result<Value, Flow>>;

/// mrtr on rmcp: the round engine, who the caller is, and the deadlines. Cheap to
/// clone (one `Arc`); keep one in your rmcp server struct.
///
/// ```
/// use mrtr::{Engine, Keyring};
/// use mrtr::rmcp::{Mrtr, Principals};
/// let mrtr = Mrtr::new(Engine::new(Keyring::ephemeral(), "https://mcp.example.com"), Principals::anonymous())
///     .handler_timeout(std::time::Duration::from_secs(10));
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

/// A 2025-11-25 caller: where its asks go, what it declared at `initialize`, and
/// whether its answers could come from someone else.
#[derive(Clone)]
struct Legacy {
    peer: Peer<RoleServer>,
    capabilities: Value,
    /// The request came over HTTP, on a session no `HttpGuard`-style check
    /// bound to its principal: the answers to its asks are accepted from whoever
    /// holds the session id.
    unbound: bool,
}

/// The mark an HTTP layer of this crate puts into a request's extensions once it
/// has checked that the request's session belongs to the principal that sent it
/// (and so that every answer on that session comes from that principal too).
/// Private: nothing outside the crate can make one.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(not(feature = "rmcp-http"), allow(dead_code))] // why: only the HTTP layer makes one
struct SessionBound;

/// Who sent a request, as its rounds need it: the principal [`Principals`]
/// found (or why not), and the request's JSON-RPC id.
struct Caller {
    principal: Result<Principal, Error>,
    id: ::rmcp::model::RequestId,
}

/// What [`Mrtr::call_tool`] keeps aside for the [`ToolCall`] of this call: its
/// params as the client sent them. Private, so nothing else can put one into a
/// request's extensions.
#[derive(Clone)]
struct Kept {
    mrtr: Mrtr,
    params: Params,
    /// Whether the tool is a route of the router the call went to.
    label: Label,
}

/// Whether a round's metrics name its target (the `name` label of
/// `mrtr_requests_total`). Labels are a closed set ([`crate::metrics`]): only a
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
    /// ([`Mrtr::get_prompt`], [`Mrtr::read_resource`] and their `_async` forms:
    /// the adapter cannot tell whether the application knows it), an unknown
    /// target, and every resource URI (as on [`Service`]).
    Unlisted,
}

impl Label {
    /// The label of a request for `method` whose target `service` has a handler for.
    fn of_service(method: CarrierMethod, registered: bool) -> Self {
        match method {
            CarrierMethod::ToolsCall | CarrierMethod::PromptsGet if registered => Self::Registered,
            _ => Self::Unlisted,
        }
    }

    /// `target` as the `name` label, if this label allows one.
    fn name(self, target: Option<&str>) -> Option<&str> {
        target.filter(|_| self == Self::Registered)
    }
}

/// A carrier request's params as a flow takes them.
#[derive(Clone)]
enum Params {
    /// A 2026-07-28 request, parsed (or why not), and its target for the log if
    /// the request does not name it (it did not parse): a `tools/call` from rmcp's
    /// typed params, the others from their wire shape as [`Service::handle`]
    /// parses a body's params.
    Parsed {
        target: Option<String>,
        request: Result<CarrierRequest, RequestError>,
    },
    /// A 2025-11-25 caller's request in its wire shape, rewritten every round.
    Legacy(Map<String, Value>, Legacy),
}

impl Params {
    /// The params of `request`, a carrier request rmcp parsed, by the protocol
    /// the caller negotiated.
    fn of<P: serde::Serialize>(
        method: CarrierMethod,
        request: &P,
        context: &RmcpContext<RoleServer>,
        metas: &MetaMemo,
    ) -> Self {
        Self::of_wire(method, request, context, legacy_of(context), metas)
    }

    /// [`Params::of`] with the caller's protocol already decided: `legacy` is
    /// [`legacy_of`] the context.
    fn of_wire<P: serde::Serialize>(
        method: CarrierMethod,
        request: &P,
        context: &RmcpContext<RoleServer>,
        legacy: Option<Legacy>,
        metas: &MetaMemo,
    ) -> Self {
        let params = wire_params(request, context);
        match legacy {
            Some(legacy) => Self::Legacy(params, legacy),
            None => {
                let (target, request) = parse_wire(method, &Value::Object(params), metas);
                Self::Parsed { target, request }
            }
        }
    }

    /// The params of a `tools/call`: for a 2026-07-28 caller, parsed straight
    /// from rmcp's typed fields, its `_meta` from the context where rmcp moved it.
    /// `requestState` and `inputResponses` are moved out of `request` (only the
    /// flow reads them: rmcp's own `RequestState`/`InputResponses` extractors on
    /// an mrtr tool then see none, which is right, as they must never be stacked
    /// on one); the arguments are copied, since a `Parameters<T>` beside the
    /// [`ToolCall`] still reads them from `request`.
    fn of_tool(
        request: &mut CallToolRequestParams,
        context: &RmcpContext<RoleServer>,
        metas: &MetaMemo,
    ) -> Self {
        let legacy = legacy_of(context);
        if legacy.is_some() || request.meta.is_some() {
            return Self::of_wire(CarrierMethod::ToolsCall, &*request, context, legacy, metas);
        }
        let meta = &context.meta.0.0;
        let parsed = CarrierRequest::from_fields_memo(
            CarrierMethod::ToolsCall,
            (!meta.is_empty()).then_some(meta),
            metas,
            request.name.to_string(),
            request.arguments.clone(),
            request
                .input_responses
                .take()
                .map(|r| r.into_iter().collect()),
            request.request_state.take(),
        );
        // A parsed request names its target; only a refused one needs a copy.
        let target = parsed.is_err().then(|| request.name.to_string());
        Self::Parsed {
            target,
            request: parsed,
        }
    }

    /// The target named, for the log and a [`Service`]'s registry.
    fn target(&self, method: CarrierMethod) -> Option<&str> {
        match self {
            Self::Parsed { target, request } => log_target(target.as_deref(), request),
            Self::Legacy(p, _) => p.get(method.target_param()).and_then(Value::as_str),
        }
    }
}

impl Mrtr {
    /// mrtr on `engine`, binding every state to the principal `principals` finds:
    /// any [`PrincipalSource`](crate::principal::PrincipalSource) (the trait
    /// `mrtr::server::http` takes too: `Anonymous`, `FromExtension`, `FromHeader`,
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
    /// [`defaults::HANDLER_TIMEOUT`](crate::defaults::HANDLER_TIMEOUT)): a handler
    /// still running then is abandoned, nothing it did in that run is sealed, and
    /// the request gets a retryable tool error on `tools/call`, -32603 elsewhere.
    /// Only an async handler can be abandoned, at an `.await`: a synchronous one
    /// runs to its end, so give work that may take long an async handler.
    #[must_use]
    pub fn handler_timeout(self, timeout: Duration) -> Self {
        self.with(|i| i.handler_timeout = timeout)
    }

    /// How long a 2025-11-25 client has to answer one ask sent through rmcp's peer
    /// (default 120 s, [`DEFAULT_ASK_TIMEOUT`]); then the flow ends: a retryable
    /// tool error on `tools/call`, -32603 elsewhere. The whole flow is bounded by
    /// [`Mrtr::legacy_flow_timeout`] too, whichever ends first.
    #[must_use]
    pub fn ask_timeout(self, timeout: Duration) -> Self {
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
    pub fn legacy_flow_timeout(self, timeout: Duration) -> Self {
        self.with(|i| i.legacy_flow_timeout = timeout)
    }

    /// Sends the asks of 2025-11-25 flows on sessions no `HttpGuard` (feature
    /// `rmcp-http`) bound to their principal. By default such a flow ends at its
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
        let params = Params::of_tool(&mut request, &context, self.inner.engine.metas());
        // The router runs a tool function (and so its ToolCall) only for one of
        // its routes; checked here all the same, so the label never rests on it.
        let label = if router.has_route(&request.name) {
            Label::Registered
        } else {
            Label::Unlisted
        };
        context.extensions.insert(Kept {
            mrtr: self.clone(),
            params,
            label,
        });
        router
            .call(ToolCallContext::new(server, request, context))
            .await
    }

    /// The body of `ServerHandler::get_prompt`, with a synchronous handler.
    ///
    /// The request is counted in [`crate::metrics`] without a `name` label: the
    /// prompt name is the client's string, and this method cannot tell a prompt
    /// the application knows from any other (the `*_service_*` methods label the
    /// names a [`Service`] registered). The same holds for
    /// [`Mrtr::get_prompt_async`], [`Mrtr::read_resource`] and
    /// [`Mrtr::read_resource_async`].
    ///
    /// # Errors
    /// The JSON-RPC errors of the flow (-32602 for a state that does not open,
    /// -32021 for a capability the client lacks, ...).
    pub async fn get_prompt<F, R>(
        &self,
        request: GetPromptRequestParams,
        context: RmcpContext<RoleServer>,
        handler: F,
    ) -> Result<GetPromptResponse, ErrorData>
    where
        F: Fn(Round) -> Result<R, Flow> + Send + Sync,
        R: Into<Value>,
    {
        let v = self
            .carrier_sync(CarrierMethod::PromptsGet, &request, &context, &handler)
            .await?;
        prompt_response(v, &self.inner.asks)
    }

    /// The body of `ServerHandler::get_prompt`, with an async handler.
    ///
    /// # Errors
    /// As [`Mrtr::get_prompt`].
    pub async fn get_prompt_async<F, Fut, R>(
        &self,
        request: GetPromptRequestParams,
        context: RmcpContext<RoleServer>,
        handler: F,
    ) -> Result<GetPromptResponse, ErrorData>
    where
        F: Fn(Round) -> Fut + Send + Sync,
        Fut: Future<Output = Result<R, Flow>> + Send,
        R: Into<Value>,
    {
        let v = self
            .carrier(CarrierMethod::PromptsGet, &request, &context, &handler)
            .await?;
        prompt_response(v, &self.inner.asks)
    }

    /// The body of `ServerHandler::read_resource`, with a synchronous handler.
    ///
    /// # Errors
    /// As [`Mrtr::get_prompt`].
    pub async fn read_resource<F, R>(
        &self,
        request: ReadResourceRequestParams,
        context: RmcpContext<RoleServer>,
        handler: F,
    ) -> Result<ReadResourceResponse, ErrorData>
    where
        F: Fn(Round) -> Result<R, Flow> + Send + Sync,
        R: Into<Value>,
    {
        let v = self
            .carrier_sync(CarrierMethod::ResourcesRead, &request, &context, &handler)
            .await?;
        resource_response(v, &self.inner.asks)
    }

    /// The body of `ServerHandler::read_resource`, with an async handler.
    ///
    /// # Errors
    /// As [`Mrtr::get_prompt`].
    pub async fn read_resource_async<F, Fut, R>(
        &self,
        request: ReadResourceRequestParams,
        context: RmcpContext<RoleServer>,
        handler: F,
    ) -> Result<ReadResourceResponse, ErrorData>
    where
        F: Fn(Round) -> Fut + Send + Sync,
        Fut: Future<Output = Result<R, Flow>> + Send,
        R: Into<Value>,
    {
        let v = self
            .carrier(CarrierMethod::ResourcesRead, &request, &context, &handler)
            .await?;
        resource_response(v, &self.inner.asks)
    }

    /// `tools/call` of a tool registered on `service` (its handler, on this
    /// [`Mrtr`]'s engine and principal): for serving a whole [`Service`] on rmcp.
    /// An unknown tool is -32602, as on [`Service::handle`].
    ///
    /// # Errors
    /// As [`Mrtr::get_prompt`].
    pub async fn call_service_tool(
        &self,
        service: &Service,
        request: CallToolRequestParams,
        context: RmcpContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let method = CarrierMethod::ToolsCall;
        let params = Params::of(method, &request, &context, self.inner.engine.metas());
        let v = self
            .execute_registered(service, method, params, &context)
            .await?;
        tool_response(v, None, &self.inner.asks)
    }

    /// `prompts/get` of a prompt registered on `service`.
    ///
    /// # Errors
    /// As [`Mrtr::get_prompt`].
    pub async fn get_service_prompt(
        &self,
        service: &Service,
        request: GetPromptRequestParams,
        context: RmcpContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let method = CarrierMethod::PromptsGet;
        let params = Params::of(method, &request, &context, self.inner.engine.metas());
        let v = self
            .execute_registered(service, method, params, &context)
            .await?;
        prompt_response(v, &self.inner.asks)
    }

    /// `resources/read` of a resource registered on `service`.
    ///
    /// # Errors
    /// As [`Mrtr::get_prompt`].
    pub async fn read_service_resource(
        &self,
        service: &Service,
        request: ReadResourceRequestParams,
        context: RmcpContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let method = CarrierMethod::ResourcesRead;
        let params = Params::of(method, &request, &context, self.inner.engine.metas());
        let v = self
            .execute_registered(service, method, params, &context)
            .await?;
        resource_response(v, &self.inner.asks)
    }

    /// A prompt or resource read with the caller's handler: the wire params,
    /// the caller, and the legacy path if the client negotiated 2025-11-25.
    async fn carrier<P, F, Fut, R>(
        &self,
        method: CarrierMethod,
        request: &P,
        context: &RmcpContext<RoleServer>,
        handler: &F,
    ) -> Result<Reply, ErrorData>
    where
        P: serde::Serialize,
        F: Fn(Round) -> Fut + Sync,
        Fut: Future<Output = Result<R, Flow>> + Send,
        R: Into<Value>,
    {
        let params = Params::of(method, request, context, self.inner.engine.metas());
        let caller = self.caller(context);
        // The prompt name or URI is the client's: no label (see `Label::Unlisted`).
        self.execute(method, params, caller, Label::Unlisted, handler, &R::into)
            .await
    }

    /// [`Mrtr::carrier`] with a synchronous handler ([`Mrtr::execute_sync`]).
    async fn carrier_sync<P, F, R>(
        &self,
        method: CarrierMethod,
        request: &P,
        context: &RmcpContext<RoleServer>,
        handler: &F,
    ) -> Result<Reply, ErrorData>
    where
        P: serde::Serialize,
        F: Fn(Round) -> Result<R, Flow> + Sync,
        R: Into<Value>,
    {
        let params = Params::of(method, request, context, self.inner.engine.metas());
        let caller = self.caller(context);
        self.execute_sync(method, params, caller, Label::Unlisted, handler, &R::into)
            .await
    }

    async fn execute_registered(
        &self,
        service: &Service,
        method: CarrierMethod,
        params: Params,
        context: &RmcpContext<RoleServer>,
    ) -> Result<Reply, ErrorData> {
        let target = params.target(method).unwrap_or_default();
        let registered = service.registered(method, target);
        let label = Label::of_service(method, registered.is_some());
        let caller = self.caller(context);
        match registered {
            Some(h) => {
                self.execute(method, params, caller, label, &move |r| h(r), &identity)
                    .await
            }
            None => {
                // The same refusal as `Service::handle` (start_carrier finds no handler).
                let none: Option<NoHandler> = None;
                self.execute_with(method, params, caller, label, || none)
                    .await
            }
        }
    }

    /// Runs a flow to the value rmcp deserializes: one round for a 2026-07-28
    /// client, every round in this request for a 2025-11-25 one. `complete`
    /// turns the handler's result into what the engine takes.
    ///
    /// Not an `async fn`: it adds no state of its own, so it returns
    /// [`Mrtr::execute_with`]'s future rather than one that holds a copy of the
    /// params beside it.
    fn execute<'a, F, Fut, R, C>(
        &'a self,
        method: CarrierMethod,
        params: Params,
        caller: Caller,
        label: Label,
        handler: &'a F,
        complete: &'a C,
    ) -> impl Future<Output = Result<Reply, ErrorData>> + 'a
    where
        F: Fn(Round) -> Fut + Sync,
        Fut: Future<Output = Result<R, Flow>> + Send + 'a,
        C: Fn(R) -> Value + Sync,
    {
        self.execute_with(method, params, caller, label, move || {
            Some(move |round| async move { handler(round).await.map(complete) })
        })
    }

    /// [`Mrtr::execute`] for a synchronous handler. A 2026-07-28 round runs on
    /// this future's first poll with no future around the handler: its future
    /// would be ready on its first poll, so the deadline could never be reached
    /// first, and a future would only add its state to the tool's. A 2025-11-25
    /// flow, which awaits its client between rounds, runs boxed.
    async fn execute_sync<F, R, C>(
        &self,
        method: CarrierMethod,
        params: Params,
        caller: Caller,
        label: Label,
        handler: &F,
        complete: &C,
    ) -> Result<Reply, ErrorData>
    where
        F: Fn(Round) -> Result<R, Flow> + Sync,
        C: Fn(R) -> Value + Sync,
    {
        match params {
            Params::Parsed { target, request } => {
                let Caller { principal, id } = caller;
                let run = |round| handler(round).map(complete);
                let outcome = self.round_sync(
                    method,
                    target.as_deref(),
                    request,
                    &id,
                    principal,
                    label,
                    run,
                );
                to_reply(outcome)
            }
            Params::Legacy(params, legacy) => {
                let handler_for = || Some(|round| std::future::ready(handler(round).map(complete)));
                Box::pin(self.legacy_flow(method, params, legacy, caller, label, &handler_for))
                    .await
            }
        }
    }

    async fn execute_with<H, G, Fut>(
        &self,
        method: CarrierMethod,
        params: Params,
        caller: Caller,
        label: Label,
        handler_for: H,
    ) -> Result<Reply, ErrorData>
    where
        H: Fn() -> Option<G>,
        G: FnOnce(Round) -> Fut,
        Fut: Future<Output = Result<Value, Flow>>,
    {
        let (params, legacy) = match params {
            Params::Parsed { target, request } => {
                let Caller { principal, id } = caller;
                let outcome = self
                    .round(
                        method,
                        target.as_deref(),
                        request,
                        &id,
                        principal,
                        label,
                        &handler_for,
                    )
                    .await;
                return to_reply(outcome);
            }
            Params::Legacy(params, legacy) => (params, legacy),
        };
        // Boxed: its asks through rmcp's peer make this future kilobytes larger,
        // which a 2026-07-28 request would otherwise carry (and move) too.
        Box::pin(self.legacy_flow(method, params, legacy, caller, label, &handler_for)).await
    }

    /// A 2025-11-25 client: a fresh flow in this request, its capabilities from
    /// initialize, rounds re-run here until the handler completes, all within
    /// [`Mrtr::legacy_flow_timeout`].
    async fn legacy_flow<H, G, Fut>(
        &self,
        method: CarrierMethod,
        mut params: Map<String, Value>,
        legacy: Legacy,
        caller: Caller,
        label: Label,
        handler_for: &H,
    ) -> Result<Reply, ErrorData>
    where
        H: Fn() -> Option<G>,
        G: FnOnce(Round) -> Fut,
        Fut: Future<Output = Result<Value, Flow>>,
    {
        let Caller { principal, id } = caller;
        legacy_params(&mut params, &legacy.capabilities);
        let mut params = Value::Object(params);
        let limit = self.inner.legacy_flow_timeout;
        let rounds = self.legacy_rounds(
            method,
            &mut params,
            &legacy,
            &id,
            principal,
            label,
            handler_for,
        );
        let outcome = match tokio::time::timeout(limit, rounds).await {
            Ok(Some(outcome)) => return to_reply(outcome),
            Ok(None) => Outcome::Protocol(Error::internal(
                "2025-11-25 flow did not complete within the round bound",
            )),
            Err(_) => Outcome::from_error(Some(method), flow_timed_out(limit)),
        };
        self.log_only(method, &params, &id, &outcome);
        to_reply(outcome)
    }

    /// The rounds of a 2025-11-25 flow: the outcome that ends it (logged and
    /// counted), or `None` past the round bound (not logged yet). `params` is
    /// rewritten every round.
    #[allow(clippy::too_many_arguments)] // why: the private core of the 2025-11-25 path
    async fn legacy_rounds<H, G, Fut>(
        &self,
        method: CarrierMethod,
        params: &mut Value,
        legacy: &Legacy,
        id: &::rmcp::model::RequestId,
        principal: Result<Principal, Error>,
        label: Label,
        handler_for: &H,
    ) -> Option<Outcome>
    where
        H: Fn() -> Option<G>,
        G: FnOnce(Round) -> Fut,
        Fut: Future<Output = Result<Value, Flow>>,
    {
        // The engine ends a flow past its round limit; this bound is a backstop.
        let bound = self.inner.engine.max_rounds_value().saturating_add(2);
        for _ in 0..bound {
            let (target, request) = parse_wire(method, params, self.inner.engine.metas());
            let outcome = self
                .round(
                    method,
                    target.as_deref(),
                    request,
                    id,
                    principal.clone(),
                    label,
                    &handler_for,
                )
                .await;
            let Outcome::InputRequired(irr) = outcome else {
                return Some(outcome);
            };
            let asks = irr.input_requests().is_some_and(|a| !a.is_empty());
            let answers = match self.unbound_refusal(legacy, asks) {
                Some(e) => Err(e),
                None => self.ask(legacy, &irr).await,
            };
            let answers = match answers {
                Ok(a) => a,
                Err(e) => {
                    let outcome = Outcome::from_error(Some(method), e);
                    self.log_only(method, params, id, &outcome);
                    return Some(outcome);
                }
            };
            let Value::Object(map) = params else {
                unreachable!("the params are an object")
            };
            map.remove("inputResponses");
            map.remove("requestState");
            if !answers.is_empty() {
                map.insert("inputResponses".into(), Value::Object(answers));
            }
            if let Some(state) = irr.request_state() {
                map.insert("requestState".into(), state.into());
            }
        }
        None
    }

    /// Why a 2025-11-25 flow must not send its asks (`asks`: it has some): it came
    /// over HTTP on a session nothing bound to its principal, its principal comes
    /// from a resolver, and [`Mrtr::allow_unbound_sessions`] was not called.
    fn unbound_refusal(&self, legacy: &Legacy, asks: bool) -> Option<Error> {
        let anonymous = self.inner.principals.is_anonymous();
        (asks && legacy.unbound && !anonymous && !self.inner.allow_unbound_sessions).then(|| {
            Error::internal(
                "2025-11-25 asks refused: the session is not bound to its principal, so \
                 anyone holding its Mcp-Session-Id could answer them; serve rmcp behind \
                 mrtr::rmcp::HttpGuard (feature rmcp-http), or call \
                 Mrtr::allow_unbound_sessions if something else binds sessions",
            )
        })
    }

    /// One round on the engine, the same path as [`Service::handle`]'s, logged and
    /// counted there too. `target` names the target for the log when `request`
    /// does not (it did not parse).
    #[allow(clippy::too_many_arguments)] // why: the private core of every carrier path
    async fn round<H, G, Fut>(
        &self,
        method: CarrierMethod,
        target: Option<&str>,
        request: Result<CarrierRequest, RequestError>,
        id: &::rmcp::model::RequestId,
        principal: Result<Principal, Error>,
        label: Label,
        handler_for: &H,
    ) -> Outcome
    where
        H: Fn() -> Option<G>,
        G: FnOnce(Round) -> Fut,
        Fut: Future<Output = Result<Value, Flow>>,
    {
        // The sync part first: what the future holds across the handler's await is
        // the begun round, not the request it came from.
        let (start, target) = self.begin(method, target, request, principal, handler_for);
        let round = start.round_number();
        let outcome = match start {
            Start::Done(outcome) => outcome,
            Start::Run(started) => {
                let timeout = self.inner.handler_timeout;
                // The timer is made only if the handler does not finish on its first
                // poll (a synchronous handler never needs one); it runs from now.
                let at = tokio::time::Instant::now() + timeout;
                started
                    .run(timeout, async move { tokio::time::sleep_until(at).await })
                    .await
            }
        };
        let name = label.name(target.as_deref());
        conclude(&outcome, method, target.as_deref(), round, name, id);
        outcome
    }

    /// [`Mrtr::round`] with a synchronous handler, run here ([`Mrtr::execute_sync`]).
    #[allow(clippy::too_many_arguments)] // why: the private core of the synchronous paths
    fn round_sync<G>(
        &self,
        method: CarrierMethod,
        target: Option<&str>,
        request: Result<CarrierRequest, RequestError>,
        id: &::rmcp::model::RequestId,
        principal: Result<Principal, Error>,
        label: Label,
        handler: G,
    ) -> Outcome
    where
        G: FnOnce(Round) -> Result<Value, Flow>,
    {
        let (start, target) = self.begin(method, target, request, principal, || Some(handler));
        let round = start.round_number();
        let outcome = match start {
            Start::Done(outcome) => outcome,
            Start::Run(started) => started.run_sync(),
        };
        let target = target.as_deref();
        conclude(&outcome, method, target, round, label.name(target), id);
        outcome
    }

    /// A round up to its handler: the principal, and the round begun on the
    /// engine (or refused before it); with the target for [`conclude`] (`target`
    /// names it when `request` does not: it did not parse).
    fn begin<G>(
        &self,
        method: CarrierMethod,
        target: Option<&str>,
        request: Result<CarrierRequest, RequestError>,
        principal: Result<Principal, Error>,
        handler_for: impl FnOnce() -> Option<G>,
    ) -> (Start<G>, Option<String>) {
        let target = log_target(target, &request).map(log_target_owned);
        let start = match principal {
            Err(e) => Start::Done(Outcome::Protocol(e)),
            Ok(principal) => {
                let ctx = RequestContext {
                    principal,
                    now: Timestamp::now(),
                    correlation_id: String::new(),
                    http_headers: None,
                    peer: None,
                };
                service::start_carrier(&self.inner.engine, method, request, &ctx, |_| handler_for())
            }
        };
        (start, target)
    }

    /// Logs and counts an outcome that did not come from a round.
    fn log_only(
        &self,
        method: CarrierMethod,
        params: &Value,
        id: &::rmcp::model::RequestId,
        outcome: &Outcome,
    ) {
        let target = params.get(method.target_param()).and_then(Value::as_str);
        conclude(outcome, method, target.map(log_target_str), None, None, id);
    }

    /// Sends one round's asks to a 2025-11-25 client, one at a time, and returns
    /// its answers keyed as asked.
    async fn ask(
        &self,
        legacy: &Legacy,
        irr: &crate::wire::InputRequiredResult,
    ) -> Result<Map<String, Value>, Error> {
        let mut answers = Map::new();
        let Some(asks) = irr.input_requests() else {
            return Ok(answers);
        };
        for (key, ask) in asks {
            let request = self.inner.asks.server_request(ask).ok_or_else(|| {
                Error::internal(format!(
                    "ask {:?} does not fit rmcp's server request types",
                    crate::wire::truncate(key, 64)
                ))
            })?;
            let sent =
                tokio::time::timeout(self.inner.ask_timeout, legacy.peer.send_request(request))
                    .await;
            let answer = match sent {
                Ok(Ok(result)) => serde_json::to_value(result)
                    .map_err(|_| Error::internal("a client result does not serialize"))?,
                Ok(Err(e)) => {
                    let why = match &e {
                        ::rmcp::ServiceError::McpError(d) => format!("error {}", d.code.0),
                        ::rmcp::ServiceError::TransportClosed => "transport closed".into(),
                        ::rmcp::ServiceError::Cancelled { .. } => "cancelled".into(),
                        _ => "a transport failure".into(),
                    };
                    return Err(ask_failed(format!(
                        "2025-11-25 client answered ask {:?} with {why}",
                        crate::wire::truncate(key, 64)
                    )));
                }
                Err(_) => {
                    return Err(ask_failed(format!(
                        "2025-11-25 client did not answer ask {:?} within {} s",
                        crate::wire::truncate(key, 64),
                        self.inner.ask_timeout.as_secs()
                    )));
                }
            };
            answers.insert(key.clone(), answer);
        }
        Ok(answers)
    }
}

/// A 2025-11-25 flow past [`Mrtr::legacy_flow_timeout`]: retryable, as a failed
/// ask is.
fn flow_timed_out(limit: Duration) -> Error {
    Error::tool_failure(
        ToolAdvice::new(
            "The client did not answer the server's questions in time",
            Retry::Helps,
        )
        .instead("Call the tool again when the questions can be answered sooner"),
        Fallback::Internal,
        "legacy_flow_timeout",
        format!(
            "2025-11-25 flow did not complete within {} s",
            limit.as_secs_f64()
        ),
    )
}

/// A failed ask of a 2025-11-25 flow: retryable (nothing of it was sealed), a
/// tool error on `tools/call`, -32603 elsewhere.
fn ask_failed(detail: String) -> Error {
    Error::tool_failure(
        ToolAdvice::new(
            "The client did not answer a request for input",
            Retry::Helps,
        )
        .instead("Call the tool again when the client can answer"),
        Fallback::Internal,
        "legacy_ask",
        detail,
    )
}

/// The target a request names for the log: `target` when it was read beside the
/// request, else the parsed request's own (a `tools/call` from rmcp's params
/// keeps a copy only for a request that did not parse).
fn log_target<'a>(
    target: Option<&'a str>,
    request: &'a Result<CarrierRequest, RequestError>,
) -> Option<&'a str> {
    target.or_else(|| request.as_ref().ok().map(CarrierRequest::target))
}

/// The caller when it negotiated a protocol without MRTR (before 2026-07-28).
fn legacy_of(context: &RmcpContext<RoleServer>) -> Option<Legacy> {
    // As `RequestContext::protocol_version` decides (the request's `_meta`, else
    // what initialize negotiated; versions order as strings), with the request's
    // version read in place rather than decoded into a copy, and found by a walk
    // over `_meta`'s few keys rather than by hashing the long one.
    let current = ProtocolVersion::V_2026_07_28;
    let meta_version = context
        .meta
        .0
        .0
        .iter()
        .find(|(k, _)| k.as_str() == crate::wire::meta::META_PROTOCOL_VERSION)
        .and_then(|(_, v)| v.as_str());
    let legacy = match meta_version {
        Some(v) => v < current.as_str(),
        None => context.peer.peer_info()?.protocol_version < current,
    };
    if !legacy {
        return None;
    }
    let capabilities = context
        .peer
        .peer_info()
        .and_then(|info| serde_json::to_value(&info.capabilities).ok())
        .unwrap_or_else(|| Value::Object(Map::new()));
    // Over HTTP (rmcp put the request parts in), the session is bound only if
    // the crate's HTTP layer checked this request's principal against it.
    let unbound = context
        .extensions
        .get::<http::request::Parts>()
        .is_some_and(|parts| parts.extensions.get::<SessionBound>().is_none());
    Some(Legacy {
        peer: context.peer.clone(),
        capabilities,
        unbound,
    })
}

/// A 2025-11-25 request's params as the engine reads them: this crate's protocol
/// version and the capabilities declared at `initialize` in `_meta` (the state
/// never leaves the server, so the version only keys it), and no client-sent
/// `requestState` or `inputResponses` (the flow starts in this request).
fn legacy_params(params: &mut Map<String, Value>, capabilities: &Value) {
    let mut meta = match params.remove("_meta") {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    meta.insert(
        crate::wire::meta::META_PROTOCOL_VERSION.into(),
        PROTOCOL_VERSION.into(),
    );
    meta.insert(
        crate::wire::meta::META_CLIENT_CAPABILITIES.into(),
        capabilities.clone(),
    );
    params.insert("_meta".into(), Value::Object(meta));
    params.remove("requestState");
    params.remove("inputResponses");
}

/// Params in their wire shape, parsed as [`Service::handle`] parses them, and the
/// target they name (for the log, even when they do not parse).
fn parse_wire(
    method: CarrierMethod,
    params: &Value,
    metas: &MetaMemo,
) -> (Option<String>, Result<CarrierRequest, RequestError>) {
    let target = params
        .get(method.target_param())
        .and_then(Value::as_str)
        .map(str::to_owned);
    (
        target,
        CarrierRequest::from_params_memo(method, Some(params), metas),
    )
}

/// The request's params in their wire shape (rmcp moved `_meta` into the
/// context; it goes back in).
fn wire_params<P: serde::Serialize>(
    request: &P,
    context: &RmcpContext<RoleServer>,
) -> Map<String, Value> {
    let mut params = match serde_json::to_value(request) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    if !context.meta.is_empty() {
        let meta = serde_json::to_value(&context.meta).unwrap_or(Value::Null);
        if let Value::Object(m) = meta {
            let entry = params
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(existing) = entry {
                existing.extend(m);
            }
        }
    }
    params
}

/// A tool handler's result, kept aside in rmcp's type while its round ends.
#[derive(Default)]
struct KeptResult(Mutex<Option<CallToolResult>>);

impl KeptResult {
    /// A tool handler's result as the engine takes it. A [`ToolResult`] that
    /// [`convert::tool_result`] takes is kept aside, already in rmcp's type, and
    /// the engine gets an empty object in its place: the round ends as it would
    /// with the result (complete, or refused for an ask the client cannot serve),
    /// and [`KeptResult::respond`] answers with the kept one when it completed.
    /// Anything else goes to the engine as its JSON form.
    fn keep<R: Into<Value> + 'static>(&self, result: R) -> Value {
        let mut result = Some(result);
        if let Some(tool) = (&mut result as &mut dyn Any)
            .downcast_mut::<Option<ToolResult>>()
            .and_then(Option::take)
        {
            return match convert::tool_result(tool) {
                Ok(typed) => {
                    *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(typed);
                    Value::Object(Map::new())
                }
                Err(tool) => tool.into(),
            };
        }
        result.map_or(Value::Null, Into::into)
    }

    /// The response to the `tools/call` whose round gave `reply`.
    fn respond(self, reply: Reply, asks: &AskCache) -> Result<CallToolResponse, ErrorData> {
        let typed = self.0.into_inner().unwrap_or_else(PoisonError::into_inner);
        tool_response(reply, typed, asks)
    }
}

/// Logs and counts one outcome ([`service::report`]): `target` as the log
/// names it (at most [`service::LOG_TARGET_MAX`] characters), `round` when one began, `name`
/// when the handler is a registered one. No access log reads a round on rmcp,
/// so nothing else is kept of it; the correlation id and the JSON-RPC id go only
/// into a refusal's diagnostic, so they are made only for one.
fn conclude(
    outcome: &Outcome,
    method: CarrierMethod,
    target: Option<&str>,
    round: Option<u32>,
    name: Option<&str>,
    id: &::rmcp::model::RequestId,
) {
    let named = service::Named {
        method: Some(method.as_str()),
        target,
        round,
    };
    if outcome.error().is_none() {
        service::report(Some(outcome), None, "", named, name);
        return;
    }
    let id = serde_json::to_value(id)
        .ok()
        .and_then(|v| RequestId::from_value(&v));
    service::report(Some(outcome), id.as_ref(), &correlation_id(), named, name);
}

/// `target` cut to [`service::LOG_TARGET_MAX`] characters.
fn log_target_str(target: &str) -> &str {
    crate::wire::truncate(target, service::LOG_TARGET_MAX)
}

/// [`log_target_str`], owned: kept past the request it came from.
fn log_target_owned(target: &str) -> String {
    log_target_str(target).to_owned()
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

/// The tool call, for an mrtr handler in a `#[tool]` function: take it as an
/// argument and [`run`](ToolCall::run) the handler.
///
/// It binds the arguments, state and answers the client sent, as kept by
/// [`Mrtr::call_tool`], whatever extractors come before it. On a tool not
/// routed through [`Mrtr::call_tool`] it fails closed (-32603; the log says
/// why).
///
/// ```
/// use mrtr::rmcp::{Mrtr, Principals, ToolCall};
/// use mrtr::{Confirmation, Engine, Keyring, ToolResult};
/// use rmcp::handler::server::router::tool::ToolRouter;
/// use rmcp::model::{CallToolRequestParams, CallToolResponse};
/// use rmcp::service::RequestContext;
/// use rmcp::{ErrorData, RoleServer, ServerHandler, tool, tool_handler, tool_router};
///
/// #[derive(serde::Deserialize, rmcp::schemars::JsonSchema)]
/// struct Deploy {
///     service: String,
/// }
///
/// #[derive(Clone)]
/// struct Server {
///     mrtr: Mrtr,
///     tool_router: ToolRouter<Self>,
/// }
///
/// #[tool_router]
/// impl Server {
///     #[tool(description = "Deploys after confirmation", input_schema = mrtr::rmcp::input_schema::<Deploy>())]
///     async fn deploy(&self, call: ToolCall) -> Result<CallToolResponse, ErrorData> {
///         call.run_typed_async(|round, args: Deploy| async move {
///             if round.confirm("confirm", format!("Deploy {}?", args.service))? != Confirmation::Accepted {
///                 return Ok(ToolResult::text("Nothing was deployed."));
///             }
///             round.once_async("deploy", || async { Ok(()) }).await?;
///             Ok(ToolResult::text(format!("Deployed {}.", args.service)))
///         })
///         .await
///     }
/// }
///
/// #[tool_handler(router = self.tool_router)]
/// impl ServerHandler for Server {
///     async fn call_tool(&self, request: CallToolRequestParams, context: RequestContext<RoleServer>)
///         -> Result<CallToolResponse, ErrorData> {
///         self.mrtr.call_tool(self, &self.tool_router, request, context).await
///     }
/// }
///
/// let engine = Engine::new(Keyring::ephemeral(), "https://mcp.example.com");
/// let server = Server { mrtr: Mrtr::new(engine, Principals::anonymous()), tool_router: Server::tool_router() };
/// let tools = server.tool_router.list_all();
/// assert_eq!(tools[0].name, "deploy");
/// assert_eq!(tools[0].input_schema["required"], serde_json::json!(["service"]));
/// ```
pub struct ToolCall {
    /// What was kept, and the caller (resolved when the `ToolCall` is taken, so
    /// it keeps no copy of rmcp's whole request context).
    kept: Option<(Kept, Caller)>,
}

impl fmt::Debug for ToolCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolCall")
            .field("routed_by_mrtr", &self.kept.is_some())
            .finish_non_exhaustive()
    }
}

impl<S> FromContextPart<ToolCallContext<'_, S>> for ToolCall {
    fn from_context_part(context: &mut ToolCallContext<'_, S>) -> Result<Self, ErrorData> {
        let request = context.as_request_context_mut();
        // Taken, so a second ToolCall in one function cannot run the flow twice.
        let kept = request.extensions.remove::<Kept>();
        Ok(Self {
            kept: kept.map(|kept| {
                let caller = kept.mrtr.caller(request);
                (kept, caller)
            }),
        })
    }
}

impl ToolCall {
    /// Runs a synchronous handler (re-run from the top on every round).
    ///
    /// The handler's result is anything that turns into a result's JSON. A
    /// [`ToolResult`] of text blocks (structured content or not) is handed to
    /// rmcp as its `CallToolResult` directly, without going through JSON: the
    /// cheapest result to return.
    ///
    /// # Errors
    /// The JSON-RPC errors of the flow; failures the model can act on are tool
    /// errors (`isError: true`) in the `Ok` value.
    pub async fn run<F, R>(self, handler: F) -> Result<CallToolResponse, ErrorData>
    where
        F: Fn(Round) -> Result<R, Flow> + Send + Sync,
        R: Into<Value> + Send + 'static,
    {
        let Some((
            Kept {
                mrtr,
                params,
                label,
            },
            caller,
        )) = self.kept
        else {
            return Err(not_routed());
        };
        let kept = KeptResult::default();
        let keep = |result: R| kept.keep(result);
        let v = mrtr
            .execute_sync(
                CarrierMethod::ToolsCall,
                params,
                caller,
                label,
                &handler,
                &keep,
            )
            .await?;
        kept.respond(v, &mrtr.inner.asks)
    }

    /// Runs an async handler (re-run from the top on every round).
    ///
    /// # Errors
    /// As [`ToolCall::run`].
    pub async fn run_async<F, Fut, R>(self, handler: F) -> Result<CallToolResponse, ErrorData>
    where
        F: Fn(Round) -> Fut + Send + Sync,
        Fut: Future<Output = Result<R, Flow>> + Send,
        R: Into<Value> + 'static,
    {
        let Some((
            Kept {
                mrtr,
                params,
                label,
            },
            caller,
        )) = self.kept
        else {
            return Err(not_routed());
        };
        let kept = KeptResult::default();
        let keep = |result: R| kept.keep(result);
        // Taken from the extensions: moved, not copied.
        let v = mrtr
            .execute(
                CarrierMethod::ToolsCall,
                params,
                caller,
                label,
                &handler,
                &keep,
            )
            .await?;
        kept.respond(v, &mrtr.inner.asks)
    }

    /// Runs a synchronous handler with the arguments decoded into `A`; arguments
    /// that do not fit are a tool error naming the field (never its value).
    ///
    /// # Errors
    /// As [`ToolCall::run`].
    pub async fn run_typed<A, F, R>(self, handler: F) -> Result<CallToolResponse, ErrorData>
    where
        A: DeserializeOwned,
        F: Fn(Round, A) -> Result<R, Flow> + Send + Sync,
        R: Into<Value> + Send + 'static,
    {
        self.run(move |round| {
            let args = round.arguments::<A>()?;
            handler(round, args)
        })
        .await
    }

    /// Runs an async handler with the arguments decoded into `A`.
    ///
    /// # Errors
    /// As [`ToolCall::run`].
    pub async fn run_typed_async<A, F, Fut, R>(
        self,
        handler: F,
    ) -> Result<CallToolResponse, ErrorData>
    where
        A: DeserializeOwned + Send,
        F: Fn(Round, A) -> Fut + Send + Sync,
        Fut: Future<Output = Result<R, Flow>> + Send,
        R: Into<Value> + 'static,
    {
        let handler = &handler;
        self.run_async(move |round: Round| async move {
            let args = round.arguments::<A>()?;
            handler(round, args).await
        })
        .await
    }
}

/// The refusal of a [`ToolCall`] whose call was not routed through
/// [`Mrtr::call_tool`]: without the kept params, what rmcp's earlier extractors
/// left may lack the arguments or the state, and binding to that would be weaker
/// than the call. Fails closed.
fn not_routed() -> ErrorData {
    let e = Error::internal(
        "mrtr::rmcp::ToolCall on a tool call not routed through Mrtr::call_tool: \
         route ServerHandler::call_tool through Mrtr::call_tool (the call_tool \
         #[tool_handler] generates keeps nothing for ToolCall), and take one \
         ToolCall per tool function (the first takes what was kept)",
    );
    e.log(&crate::error::DiagContext {
        correlation_id: &correlation_id(),
        method: Some(CarrierMethod::ToolsCall.as_str()),
        ..Default::default()
    });
    error_data(&e)
}

/// The `inputSchema` of a tool whose arguments are `A`, for
/// `#[tool(input_schema = mrtr::rmcp::input_schema::<A>())]` (rmcp's own schema
/// settings, as for `Parameters<A>`).
///
/// # Panics
/// When `A`'s schema is not an object schema (a programming error, found when the
/// tool router is built).
pub fn input_schema<A: ::rmcp::schemars::JsonSchema + 'static>() -> Arc<RmcpObject> {
    ::rmcp::handler::server::common::schema_for_input::<A>()
        .unwrap_or_else(|e| panic!("input schema of {}: {e}", std::any::type_name::<A>()))
}

/// The tools registered on `service`, as rmcp's `Tool`s (for `list_tools`).
pub fn service_tools(service: &Service) -> Vec<Tool> {
    definitions(service, CarrierMethod::ToolsCall)
}

/// The prompts registered on `service`, as rmcp's `Prompt`s (for `list_prompts`).
pub fn service_prompts(service: &Service) -> Vec<Prompt> {
    definitions(service, CarrierMethod::PromptsGet)
}

/// The resources registered on `service`, as rmcp's `Resource`s (for
/// `list_resources`).
pub fn service_resources(service: &Service) -> Vec<Resource> {
    definitions(service, CarrierMethod::ResourcesRead)
}

fn definitions<T: DeserializeOwned>(service: &Service, method: CarrierMethod) -> Vec<T> {
    service
        .definitions(method)
        .into_iter()
        .filter_map(|d| serde_json::from_value(d).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_legacy_request_starts_a_fresh_flow_with_the_handshake_capabilities() {
        let mut params = json!({
            "name": "t",
            "requestState": "client-sent",
            "inputResponses": {"k": {}},
            "_meta": {"progressToken": 7},
        })
        .as_object()
        .unwrap()
        .clone();
        legacy_params(&mut params, &json!({"sampling": {}}));
        assert!(params.get("requestState").is_none());
        assert!(params.get("inputResponses").is_none());
        let meta = &params["_meta"];
        assert_eq!(meta["progressToken"], 7);
        assert_eq!(
            meta[crate::wire::meta::META_PROTOCOL_VERSION],
            PROTOCOL_VERSION
        );
        assert_eq!(
            meta[crate::wire::meta::META_CLIENT_CAPABILITIES],
            json!({"sampling": {}})
        );
    }

    #[test]
    fn only_a_text_tool_result_is_kept_aside() {
        let kept = KeptResult::default();
        let taken = |kept: &KeptResult| kept.0.lock().unwrap().take();
        // A ToolResult of text: an empty object for the engine, rmcp's type kept.
        assert_eq!(kept.keep(ToolResult::text("hi")), json!({}));
        let typed = serde_json::to_value(taken(&kept).unwrap()).unwrap();
        assert_eq!(typed["content"][0]["text"], "hi");
        // A JSON value, and a ToolResult the direct path does not take: their JSON.
        let value = crate::engine::tool_text("hi");
        assert_eq!(kept.keep(value.clone()), value);
        let link =
            ToolResult::text("a").with_link(crate::result::ResourceLink::new("file:///a", "a"));
        assert_eq!(kept.keep(link.clone()), Value::from(link));
        assert!(taken(&kept).is_none());
    }
}
