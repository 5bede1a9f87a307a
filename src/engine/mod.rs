//! The round engine: resume a stateless handler across rounds (see [`crate::manual::handler_model`]).
//!
//! A stateless server re-runs its handler from the top on every retry. The engine
//! hands the handler the answers it already has (sealed in `requestState` from
//! earlier rounds, or arriving in this retry's `inputResponses`), records every
//! question it still needs, and finishes the round with exactly one [`Outcome`].
//!
//! ```
//! use mrtr::engine::{Engine, Elicited, Flow, Form, Outcome, Round};
//! use mrtr::wire::{CarrierMethod, CarrierRequest};
//! use mrtr::{Principal, Keyring, Timestamp, ToolResult};
//! use serde_json::json;
//!
//! let engine = Engine::new(Keyring::ephemeral(), "https://tools.example");
//! let handler = |round: Round| -> Result<ToolResult, Flow> {
//!     match round.elicit("confirm", Form::confirm("Deploy to production?"))? {
//!         Elicited::Accepted(f) if f.bool("confirm") == Some(true) => Ok(ToolResult::text("deployed")),
//!         _ => Ok(ToolResult::text("not deployed")),
//!     }
//! };
//! let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
//!                   "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
//! let now = Timestamp::from_unix_secs(1_800_000_000);
//! let first = CarrierRequest::from_params(CarrierMethod::ToolsCall,
//!     Some(&json!({"_meta": meta, "name": "deploy"}))).unwrap();
//! let Outcome::InputRequired(irr) = engine.run(first, &Principal::anonymous(), now, handler) else { panic!() };
//! let state = irr.request_state().unwrap().to_owned();
//! let retry = CarrierRequest::from_params(CarrierMethod::ToolsCall, Some(&json!({
//!     "_meta": meta, "name": "deploy", "requestState": state,
//!     "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}}}))).unwrap();
//! let done = engine.run(retry, &Principal::anonymous(), now.add_secs(5), handler).into_json();
//! let Outcome::Complete(done) = done else { panic!() };
//! assert_eq!(done["content"][0]["text"], "deployed");
//! assert_eq!(done["resultType"], "complete");
//! ```

mod ask;
mod finish;
pub mod form_type;
pub(crate) mod handler;
mod notify;
mod once;
mod round;
mod state;
pub(crate) mod turn;

use std::net::IpAddr;
use std::sync::Arc;

use serde_json::Value;

pub use ask::{Confirmation, FormAnswer};
pub use ask::{Elicited, Fields, Form, Roots, RootsAsk, Sampling, UrlVisit};
pub use finish::FlowTrace;
pub use handler::{CarrierResult, Later, Now, Output};
pub(crate) use handler::{Handler, register};
pub(crate) use notify::Notifier;
pub use notify::{LogLevel, NotificationSink};
pub(crate) use round::TaskFlow;
pub use round::{Flow, Round, Unanswered};

use crate::defaults;
use crate::error::{self, Channel, Error, Fallback, Retry, ToolAdvice};
use crate::memo::AskMemo;
use crate::principal::Principal;
use crate::replay::ReplayGuard;
use crate::seal::{AudienceDigest, Binding, BindingInput, Keyring, SealConfig, Sealer};
use crate::time::Timestamp;
use crate::wire::InputRequiredResult;
use crate::wire::jsonrpc::{self, RequestId};
use crate::wire::meta::MetaMemo;
use crate::wire::{CarrierMethod, CarrierRequest};
use state::FlowState;

/// Which fresh answers the engine accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum AnswerPolicy {
    /// Accept an answer that validates against the question the handler asks now,
    /// even without a sealed earlier round that asked it ("cold" retries, which the
    /// conformance suite sends). The default.
    #[default]
    Lenient,
    /// Accept only answers to questions issued in an earlier sealed round.
    Strict,
}

/// The engine, configured once and shared across requests (`Send + Sync`; a clone
/// is one reference count).
#[derive(Debug, Clone)]
pub struct Engine {
    inner: Arc<EngineConfig>,
}

#[derive(Debug, Clone)]
struct EngineConfig {
    sealer: Sealer,
    audience: String,
    /// The audience's binding component, digested once.
    audience_digest: AudienceDigest,
    max_rounds: u32,
    max_asks: usize,
    policy: AnswerPolicy,
    replay: Option<Arc<dyn ReplayGuard>>,
    /// The question digests of asks seen before (a handler asks the same
    /// questions every round): shared by the engine's clones, as the digest of an
    /// ask never changes.
    questions: Arc<AskMemo<state::QuestionDigest>>,
    /// The typed `_meta` of the objects parsed last: shared likewise.
    metas: Arc<MetaMemo>,
}

impl Engine {
    /// An engine sealing with `keyring`, for the service named `audience` (a state
    /// sealed for another audience never opens here). Defaults (all in
    /// [`crate::defaults`]): seal defaults (10 min per round, 1 h per flow, 60 s
    /// skew), 16 rounds, 16 asks per round, lenient answers, no replay guard.
    #[cfg(feature = "os-rng")]
    pub fn new(keyring: Keyring, audience: impl Into<String>) -> Self {
        Self::with_sealer(Sealer::new(keyring, SealConfig::default()), audience)
    }

    /// An engine whose randomness (nonces, flow ids) comes from `entropy`: the
    /// constructor for builds without the `os-rng` feature (wasm, edge runtimes).
    /// Other defaults as in [`Engine::new`].
    pub fn with_entropy(
        keyring: Keyring,
        audience: impl Into<String>,
        entropy: Arc<dyn crate::seal::Entropy>,
    ) -> Self {
        Self::with_sealer(
            Sealer::with_entropy(keyring, SealConfig::default(), entropy),
            audience,
        )
    }

    /// An engine sealing with `sealer` (its key ring, limits and randomness), for
    /// the service named `audience`. Other defaults as in [`Engine::new`].
    fn with_sealer(sealer: Sealer, audience: impl Into<String>) -> Self {
        let audience = audience.into();
        Self {
            inner: Arc::new(EngineConfig {
                sealer,
                audience_digest: AudienceDigest::of(&audience),
                audience,
                max_rounds: defaults::MAX_ROUNDS,
                max_asks: defaults::MAX_ASKS_PER_ROUND,
                policy: AnswerPolicy::Lenient,
                replay: None,
                questions: Arc::default(),
                metas: Arc::default(),
            }),
        }
    }

    fn config_mut(&mut self) -> &mut EngineConfig {
        Arc::make_mut(&mut self.inner)
    }

    /// Replaces the seal configuration (TTL, flow lifetime, skew, size limits).
    #[must_use]
    pub fn with_seal_config(mut self, config: SealConfig) -> Self {
        let c = self.config_mut();
        c.sealer = c.sealer.with_config(config);
        self
    }

    /// The most `InputRequiredResult`s one flow may issue (default 16,
    /// [`defaults::MAX_ROUNDS`]).
    #[must_use]
    pub fn with_max_rounds(mut self, n: u32) -> Self {
        self.config_mut().max_rounds = n.max(1);
        self
    }

    /// The most questions one round may ask (default 16,
    /// [`defaults::MAX_ASKS_PER_ROUND`]).
    #[must_use]
    pub fn with_max_asks_per_round(mut self, n: usize) -> Self {
        self.config_mut().max_asks = n.max(1);
        self
    }

    /// The answer policy (default [`AnswerPolicy::Lenient`]).
    #[must_use]
    pub fn with_policy(mut self, policy: AnswerPolicy) -> Self {
        self.config_mut().policy = policy;
        self
    }

    /// A store that makes [`Round::once`] steps single-use even when a client
    /// replays a round's `requestState` (default: none, so `once` protects
    /// re-runs within one flow but not a replayed final round).
    ///
    /// A step runs only when the guard grants its claim; a guard that cannot
    /// answer fails the step closed (see [`crate::replay`]). A network guard
    /// needs handlers that use [`Round::once_async`].
    #[must_use]
    pub fn with_replay_guard(mut self, guard: Arc<dyn ReplayGuard>) -> Self {
        self.config_mut().replay = Some(guard);
        self
    }

    /// The sealer (for `mrtr inspect` and counters). It is shared by every clone of
    /// this engine, so `engine.sealer().replace_keyring(ring)` rotates the keys of
    /// a running service ([`Sealer::replace_keyring`]).
    pub fn sealer(&self) -> &Sealer {
        &self.inner.sealer
    }

    /// The digest of `request`'s question ([`state::QuestionDigest::of`]), from the
    /// memo when the same ask was seen before.
    pub(crate) fn question_digest(
        &self,
        request: &crate::wire::InputRequest,
    ) -> state::QuestionDigest {
        self.inner
            .questions
            .get_or(request, state::QuestionDigest::of)
    }

    /// The memo a carrier request's `_meta` is parsed through
    /// ([`CarrierRequest::from_params_memo`](crate::wire::CarrierRequest)).
    pub(crate) fn metas(&self) -> &MetaMemo {
        &self.inner.metas
    }

    /// The audience.
    pub fn audience(&self) -> &str {
        &self.inner.audience
    }

    /// The most `InputRequiredResult`s one flow may issue.
    pub fn max_rounds(&self) -> u32 {
        self.inner.max_rounds
    }

    /// The most questions one round may ask.
    pub fn max_asks_per_round(&self) -> usize {
        self.inner.max_asks
    }

    /// The answer policy.
    pub fn policy(&self) -> AnswerPolicy {
        self.inner.policy
    }

    /// The replay guard, if one was set.
    pub fn replay_guard(&self) -> Option<&Arc<dyn ReplayGuard>> {
        self.inner.replay.as_ref()
    }

    /// Starts a round (binds the request, opens its `requestState` if present)
    /// for a request that came from the network address `peer`
    /// (the transport's TCP peer; `None` when it has none, as on stdio).
    ///
    /// The peer is never sealed, logged or answered. It serves one purpose: when
    /// `principal` is [anonymous](Principal::is_anonymous), every caller shares one
    /// principal, so the replay guard's per-principal quota would be one quota for
    /// everyone; with a peer, the claims of a `once` step count against that
    /// address's quota instead ([`PrincipalKey::of_peer`](crate::replay::PrincipalKey::of_peer):
    /// an IPv4 address, or the /64 of an IPv6 one). For an authenticated principal
    /// the peer is ignored.
    ///
    /// # Errors
    /// The frozen -32602 for a state that does not open (the precise reason is in
    /// [`Error::diagnostic`]); for an authentic but expired state, an error that
    /// renders as a tool error on `tools/call` ([`Outcome::from_error`]).
    #[allow(clippy::too_many_arguments)] // why: the request and its whole context
    pub(crate) fn begin_from(
        &self,
        request: CarrierRequest,
        principal: &Principal,
        peer: Option<IpAddr>,
        now: Timestamp,
        notifier: Option<Notifier>,
        task: Option<TaskFlow>,
        trace: Option<crate::wire::TraceParent>,
    ) -> Result<Round, Error> {
        let quota_peer = peer.filter(|_| principal.is_anonymous());
        let arguments = request.arguments_value();
        let binding = Binding::with_audience(
            &BindingInput {
                method: request.method().as_str(),
                target: request.target(),
                arguments: arguments.as_ref(),
                principal,
                audience: &self.inner.audience,
                protocol_version: &request.meta().protocol_version,
            },
            &self.inner.audience_digest,
        );
        let prior = match request.request_state() {
            None => None,
            Some(token) => match self.inner.sealer.open::<FlowState>(token, &binding, now) {
                Ok(v) => Some(v),
                Err(e) if e.is_expired_but_authentic() => {
                    return Err(Error::expired_request_state(e.reason().as_str()));
                }
                Err(e) => return Err(Error::invalid_request_state(e.reason().as_str())),
            },
        };
        Ok(Round::new(round::Fixed {
            engine: self.clone(),
            request,
            binding,
            now,
            prior,
            quota_peer,
            notifier,
            task,
            trace,
        }))
    }

    /// Runs one round with a synchronous handler: the round begins (the state
    /// opens, or the request is refused), the handler runs with panics caught,
    /// and the round ends. The result type is the carrier: a `tools/call`
    /// request needs a handler returning [`ToolResult`](crate::ToolResult), and
    /// one of another carrier is refused (-32603) before its handler. Async
    /// handlers run on [`Service`](crate::Service) or the `rmcp` adapter, which
    /// race them against a deadline.
    pub fn run<T, F>(
        &self,
        request: CarrierRequest,
        principal: &Principal,
        now: Timestamp,
        handler: F,
    ) -> Outcome<T>
    where
        T: CarrierResult,
        F: FnOnce(Round) -> Result<T, Flow>,
    {
        self.run_from(request, principal, None, now, handler)
    }

    /// Runs one round with a handler that may be async (or sync), abandoning
    /// an async one when `deadline` completes first, as [`Service::handle_until`](crate::Service::handle_until)
    /// does: the round's end is the same, on the same path as [`Engine::run`].
    /// For callers that drive the engine themselves; a server registers its
    /// handlers on a [`Service`](crate::Service) or runs them on rmcp.
    pub async fn run_until<T, F, O, M, D>(
        &self,
        request: CarrierRequest,
        principal: &Principal,
        now: Timestamp,
        handler: F,
        deadline: D,
    ) -> Outcome<T>
    where
        T: CarrierResult,
        F: FnOnce(Round) -> O,
        O: Output<T, M>,
        D: std::future::Future<Output = ()>,
    {
        let turn = turn::Turn {
            engine: self,
            request: Ok(request),
            principal,
            peer: None,
            now,
            timeout: defaults::HANDLER_TIMEOUT,
            notifications: None,
            trace: None,
        };
        let handler_for = |_: &CarrierRequest| Some(move |round| handler(round).into_run());
        turn::run(turn, handler_for, deadline).await.outcome
    }

    /// [`Engine::run`] for a request that came from the network address `peer`
    /// (the transport's TCP peer; `None` when it has none, as on stdio).
    ///
    /// The peer is never sealed, logged or answered. It serves one purpose: when
    /// `principal` is [anonymous](Principal::is_anonymous), every caller shares one
    /// principal, so the replay guard's per-principal quota would be one quota for
    /// everyone; with a peer, the claims of a `once` step count against that
    /// address's quota instead ([`PrincipalKey::of_peer`](crate::replay::PrincipalKey::of_peer):
    /// an IPv4 address, or the /64 of an IPv6 one). For an authenticated principal
    /// the peer is ignored.
    pub fn run_from<T, F>(
        &self,
        request: CarrierRequest,
        principal: &Principal,
        peer: Option<IpAddr>,
        now: Timestamp,
        handler: F,
    ) -> Outcome<T>
    where
        T: CarrierResult,
        F: FnOnce(Round) -> Result<T, Flow>,
    {
        let turn = turn::Turn {
            engine: self,
            request: Ok(request),
            principal,
            peer,
            now,
            timeout: defaults::HANDLER_TIMEOUT,
            notifications: None,
            trace: None,
        };
        turn::run_now(turn, handler).outcome
    }

    pub(crate) fn limit_error(&self, what: &str, detail: String) -> Error {
        Error::tool_failure(
            ToolAdvice::new(what, Retry::StartOver)
                .instead("Call the tool again with the same arguments to start a fresh request"),
            Fallback::InvalidParams,
            "limit",
            detail,
        )
    }
}

/// How a round ends. `T` is the complete result: a carrier's typed result
/// ([`ToolResult`](crate::ToolResult), ...) where a round ran, the JSON-RPC
/// result object (`Value`, the default) once it is on its way to the wire.
#[derive(Debug, Clone)]
#[non_exhaustive]
#[must_use]
pub enum Outcome<T = Value> {
    /// The final result.
    Complete(T),
    /// The server needs input (or a state-only retry).
    InputRequired(InputRequiredResult),
    /// A `tools/call` failure the model can act on (`isError: true`), with its error for the log.
    ToolError {
        /// The `CallToolResult`.
        result: Value,
        /// The failure, for the private log.
        error: Error,
    },
    /// A JSON-RPC error.
    Protocol(Error),
}

impl<T> Outcome<T> {
    /// The outcome for a failure on `method`, on the channel [`error::channel`]
    /// picks: a tool error where the model can act on it on `tools/call`, else a
    /// JSON-RPC error.
    pub fn from_error(method: Option<CarrierMethod>, error: Error) -> Self {
        match (error::channel(method, &error), error.to_tool_result()) {
            (Channel::ToolResult, Some(result)) => Self::ToolError { result, error },
            _ => Self::Protocol(error),
        }
    }

    /// The same outcome with its complete result mapped by `f`.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Outcome<U> {
        match self {
            Self::Complete(t) => Outcome::Complete(f(t)),
            Self::InputRequired(irr) => Outcome::InputRequired(irr),
            Self::ToolError { result, error } => Outcome::ToolError { result, error },
            Self::Protocol(e) => Outcome::Protocol(e),
        }
    }

    /// `complete`, `input_required`, `tool_error` or `error:<code>`, for the log line.
    pub fn label(&self) -> String {
        match self {
            Self::Complete(_) => "complete".into(),
            Self::InputRequired(_) => "input_required".into(),
            Self::ToolError { .. } => "tool_error".into(),
            Self::Protocol(e) => format!("error:{}", e.code()),
        }
    }

    /// The failure behind this outcome, if any.
    pub fn error(&self) -> Option<&Error> {
        match self {
            Self::ToolError { error, .. } | Self::Protocol(error) => Some(error),
            _ => None,
        }
    }
}

impl<T: CarrierResult> Outcome<T> {
    /// The outcome with its result as the JSON-RPC result object (with
    /// `"resultType": "complete"`).
    pub fn into_json(self) -> Outcome {
        self.map(CarrierResult::into_complete)
    }
}

impl<T: CarrierResult> From<Outcome<T>> for Outcome {
    fn from(outcome: Outcome<T>) -> Self {
        outcome.into_json()
    }
}

impl Outcome {
    /// The JSON-RPC response for request `id`.
    pub fn to_response(&self, id: &RequestId) -> Value {
        match self {
            Self::Complete(v) | Self::ToolError { result: v, .. } => {
                jsonrpc::success(id, v.clone())
            }
            Self::InputRequired(irr) => jsonrpc::success(id, irr.to_value()),
            Self::Protocol(e) => e.to_jsonrpc(Some(id)),
        }
    }
}
