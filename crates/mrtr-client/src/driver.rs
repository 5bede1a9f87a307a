//! [`Client`]: drives a carrier request through its `InputRequiredResult` rounds.
//!
//! The client and its entry points are here; [`builder`] has its options,
//! [`round`] the round loops over the flow's states
//! ([`mrtr::client::Flow`], where every check and cap is), and [`answer`]
//! the answers from the handler.

mod answer;
mod builder;
mod legacy;
mod round;

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use futures_util::future::{Either, select};
use serde_json::Value;

use mrtr::defaults;
use mrtr::wire::ClientCapabilities;
use mrtr::wire::InputResponses;
use mrtr::wire::JsonObject;
use mrtr::wire::jsonrpc::{self, RequestId};

use crate::ClientError;
use crate::Timer;
use crate::handler::{InputHandler, NoInput};
use crate::legacy::{Era, EraCache, EraMode, Session};
use crate::transport::Transport;
use mrtr::client::{Asked, Flow, FlowRules, result_of};
use mrtr::client::{CarrierCall, Completion, PendingFlow};

pub use builder::ClientBuilder;

/// Where a manually stepped flow stands.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // one value per flow step; boxing would only add noise
#[non_exhaustive]
pub enum Step {
    /// The flow finished.
    Complete(Completion),
    /// The server asked for input; answer it and [`resume`](Client::resume).
    NeedsInput(PendingFlow),
}

#[derive(Debug)]
struct Inner {
    transport: Arc<dyn Transport>,
    handler: Arc<dyn InputHandler>,
    rules: Arc<FlowRules>,
    total_timeout: Option<Duration>,
    request_timeout: Option<Duration>,
    concurrent_answers: usize,
    timer: Option<Arc<dyn Timer>>,
    next_id: AtomicI64,
    /// How the era of the server is picked.
    era_mode: EraMode,
    /// The eras learned, by server.
    eras: Arc<EraCache>,
    /// The 2025-era session, once opened.
    session: tokio::sync::Mutex<Option<Arc<Session>>>,
    /// The most server requests answered per 2025-era call.
    max_server_requests: usize,
    /// The most sampling requests per flow (a 2025-era call counts its own).
    max_sampling: u32,
}

/// An MRTR client: sends carrier requests and drives them to completion.
///
/// Cheap to clone (shared inside); clones share the JSON-RPC id counter, so ids
/// stay unique across parallel calls. All per-flow state (the latest
/// `requestState`, the answers, the round count) lives in the call itself,
/// never in the client, so parallel calls cannot see each other's state
/// (MCP 2026-07-28, Multi Round-Trip Requests §Client Requirements (Basic
/// Workflow), item 4).
///
/// It speaks to 2025-era servers too (`initialize`, a session, server requests
/// answered by the same handler): see [`legacy`](crate::legacy) and
/// [`ClientBuilder::with_era`].
///
/// Every request carries the full `_meta` (protocol version, `clientInfo`,
/// `clientCapabilities`) and a fresh id. A retry re-sends the original params
/// with `inputResponses` (omitted on a state-only round) and `requestState`
/// exactly as received (omitted when the server sent none, never `null` or `""`).
#[derive(Debug, Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl Client {
    /// A builder over `transport`.
    pub fn builder(transport: impl Transport + 'static) -> ClientBuilder {
        Self::builder_shared(Arc::new(transport))
    }

    /// A builder over a shared transport.
    pub fn builder_shared(transport: Arc<dyn Transport>) -> ClientBuilder {
        let timer = transport.timer();
        ClientBuilder {
            transport,
            handler: Arc::new(NoInput),
            rules: FlowRules::new(ClientCapabilities::default()),
            total_timeout: Some(defaults::CLIENT_TOTAL_TIMEOUT),
            request_timeout: Some(defaults::CLIENT_REQUEST_TIMEOUT),
            concurrent_answers: defaults::CLIENT_MAX_CONCURRENT_ANSWERS,
            timer,
            era_mode: EraMode::Auto,
            eras: Arc::default(),
            max_server_requests: crate::legacy::MAX_SERVER_REQUESTS,
            max_sampling: defaults::CLIENT_MAX_SAMPLING_PER_FLOW,
            tasks: false,
        }
    }

    /// The capabilities this client declares on every request.
    pub fn capabilities(&self) -> &ClientCapabilities {
        self.inner.rules.capabilities()
    }

    /// The `_meta` object every request carries.
    pub fn meta(&self) -> Value {
        self.inner.rules.meta().clone()
    }

    /// The rules of this client's flows, for driving a [`Flow`] by hand.
    pub fn rules(&self) -> &Arc<FlowRules> {
        &self.inner.rules
    }

    /// Calls tool `name` and drives it to completion. `arguments`: an object, or `Value::Null` for none.
    ///
    /// # Errors
    /// Every way the flow can end without a result: see [`ClientError`].
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<Completion, ClientError> {
        self.call(CarrierCall::tool(name, arguments)).await
    }

    /// Gets prompt `name` and drives it to completion. `arguments`: an object of strings, or `Value::Null`.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<Completion, ClientError> {
        self.call(CarrierCall::prompt(name, arguments)).await
    }

    /// Reads resource `uri` and drives it to completion.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn read_resource(&self, uri: &str) -> Result<Completion, ClientError> {
        self.call(CarrierCall::resource(uri)).await
    }

    /// Drives `call` to completion, answering every round through the handler.
    ///
    /// The era of the server is told by the first request when not known yet
    /// (see [`legacy`](crate::legacy)); a 2025-era server is called in a session,
    /// its requests answered by the same handler.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn call(&self, call: CarrierCall) -> Result<Completion, ClientError> {
        self.capped(async {
            match self.known_era().await {
                Some(Era::Legacy) => self.legacy_call(&call).await,
                None => match self.probe(&call).await? {
                    legacy::Probed::Modern(turn) => self.complete_from(turn).await,
                    legacy::Probed::Legacy => self.legacy_call(&call).await,
                },
                _ => {
                    let ready = Flow::start(call, Arc::clone(&self.inner.rules));
                    self.complete(ready).await
                }
            }
        })
        .await
    }

    /// Sends the first request of `call` and stops at the first round that asks
    /// for input (manual mode). State-only rounds are retried (with back-off)
    /// without stopping, since they need nothing from the caller.
    ///
    /// A 2025-era server asks within the request, so there a call cannot stop
    /// between rounds: it is driven to completion through the handler.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn start(&self, call: CarrierCall) -> Result<Step, ClientError> {
        self.capped(async {
            match self.known_era().await {
                Some(Era::Legacy) => self.legacy_call(&call).await.map(Step::Complete),
                None => match self.probe(&call).await? {
                    legacy::Probed::Modern(turn) => self.step_from(turn).await,
                    legacy::Probed::Legacy => self.legacy_call(&call).await.map(Step::Complete),
                },
                _ => {
                    let ready = Flow::start(call, Arc::clone(&self.inner.rules));
                    self.step(ready).await
                }
            }
        })
        .await
    }

    /// Retries a pending flow with `responses` (one per outstanding input request,
    /// of the kind asked) and stops at the next round that asks for input.
    ///
    /// # Errors
    /// [`FlowError::AnswerMismatch`](crate::FlowError::AnswerMismatch) when `responses` does not answer exactly the
    /// outstanding keys with the asked kinds (nothing is sent then); otherwise see [`ClientError`].
    pub async fn resume(
        &self,
        pending: PendingFlow,
        responses: InputResponses,
    ) -> Result<Step, ClientError> {
        let ready = Asked::resume(pending, Arc::clone(&self.inner.rules)).answer(responses)?;
        self.capped(self.step(ready)).await
    }

    /// Like [`resume`](Self::resume), then drives any further rounds through the handler.
    ///
    /// # Errors
    /// See [`resume`](Self::resume).
    pub async fn resume_to_completion(
        &self,
        pending: PendingFlow,
        responses: InputResponses,
    ) -> Result<Completion, ClientError> {
        let ready = Asked::resume(pending, Arc::clone(&self.inner.rules)).answer(responses)?;
        self.capped(self.complete(ready)).await
    }

    /// Answers a pending flow's input requests through the handler (concurrently,
    /// up to [`max_concurrent_answers`](ClientBuilder::with_max_concurrent_answers) at a
    /// time), e.g. to resume it later with [`resume`](Self::resume). Bounded by the
    /// total time cap.
    ///
    /// # Errors
    /// [`FlowError::UndeclaredInput`](crate::FlowError::UndeclaredInput), [`FlowError::CapExceeded`](crate::FlowError::CapExceeded) (too many
    /// questions; nothing is asked), [`ClientError::Handler`] or [`ClientError::Timeout`].
    pub async fn fulfil(&self, pending: &PendingFlow) -> Result<InputResponses, ClientError> {
        let rules = &self.inner.rules;
        rules.check_declared(&pending.input_requests)?;
        rules.check_questions(&pending.input_requests)?;
        self.capped(self.answer(&pending.call(), pending.round, &pending.input_requests))
            .await
    }

    /// Sends any other request (e.g. `tools/list`) with the full `_meta` and a
    /// fresh id, and returns its `result`. No MRTR handling: an
    /// `InputRequiredResult` is returned as is. Bounded by the per-request and the
    /// total time caps. To a 2025-era server it goes in the session, without `_meta`.
    ///
    /// # Errors
    /// [`ClientError::Transport`], [`FlowError::JsonRpc`](crate::FlowError::JsonRpc), [`FlowError::IdMismatch`](crate::FlowError::IdMismatch),
    /// [`FlowError::Malformed`](crate::FlowError::Malformed), [`ClientError::RequestTimeout`] or [`ClientError::Timeout`].
    pub async fn request(&self, method: &str, params: JsonObject) -> Result<Value, ClientError> {
        let era = self.known_era().await;
        if era == Some(Era::Legacy) {
            return self.capped(self.legacy_request(method, params)).await;
        }
        let bare = params.clone();
        let mut params = params;
        params.insert("_meta".into(), self.meta());
        let id = self.next_id();
        let request = jsonrpc::request(&id, method, Value::Object(params));
        self.capped(async {
            if era.is_none() {
                return match self.probe_request(request, &id).await? {
                    Some(result) => Ok(result),
                    None => self.legacy_request(method, bare).await,
                };
            }
            let response = self.send(request).await?;
            Ok(result_of(response, &id)?)
        })
        .await
    }

    /// Sends one request, racing its response against the per-request time cap,
    /// in its span (`crate::span`: the MCP conventions' CLIENT span, whose
    /// context the request carries to the server with the `otel` feature).
    async fn send(&self, request: Value) -> Result<Value, ClientError> {
        let transport = &self.inner.transport;
        self.traced(
            request,
            |r| self.timed(transport.send(r)),
            |v| Answer::Response(v),
        )
        .await
    }

    /// Runs one request's `exchange` in the request's CLIENT span
    /// (`crate::span`; the request it is given carries the span's context),
    /// and counts its duration (`mcp.client.operation.duration`): every
    /// request goes through here, whatever the era. `answer` says what came
    /// back ([`Answer`]); a request not served ends its span as it is, and no
    /// duration is counted.
    pub(super) async fn traced<T, Fut>(
        &self,
        mut request: Value,
        exchange: impl FnOnce(Value) -> Fut,
        answer: impl FnOnce(&T) -> Answer<'_>,
    ) -> Result<T, ClientError>
    where
        Fut: std::future::Future<Output = Result<T, ClientError>>,
    {
        let started = std::time::Instant::now();
        let server = self.inner.transport.server_address();
        let span = crate::span::client(&mut request, server);
        let method = request["method"].as_str().map(str::to_owned);
        let result = tracing::Instrument::instrument(exchange(request), span.clone()).await;
        let answered = match result.as_ref().map(answer) {
            Ok(Answer::Response(v)) => Some(Some(v)),
            Ok(Answer::Failed) | Err(_) => Some(None),
            Ok(Answer::NotServed) => None,
        };
        if let Some(answered) = answered {
            let end = crate::span::conclude(&span, answered);
            let network = self.inner.transport.network_transport();
            mrtr::metrics::client_operation(method.as_deref(), end, network, started.elapsed());
        }
        result
    }

    /// Races `send` (one request's exchange) against the per-request time cap.
    async fn timed<T>(
        &self,
        send: crate::BoxFuture<'_, Result<T, crate::TransportError>>,
    ) -> Result<T, ClientError> {
        match (&self.inner.timer, self.inner.request_timeout) {
            (Some(timer), Some(after)) => match select(send, timer.sleep(after)).await {
                Either::Left((r, _)) => Ok(r?),
                Either::Right(((), _)) => Err(ClientError::RequestTimeout { after }),
            },
            _ => Ok(send.await?),
        }
    }

    fn next_id(&self) -> RequestId {
        RequestId::from(self.inner.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Races `fut` against the total time cap, when there is a timer and a cap.
    /// The cap is polled first, so a spent budget reports [`ClientError::Timeout`]
    /// even when a per-request cap runs out at the same moment.
    async fn capped<T>(
        &self,
        fut: impl std::future::Future<Output = Result<T, ClientError>> + Send,
    ) -> Result<T, ClientError> {
        match (&self.inner.timer, self.inner.total_timeout) {
            (Some(timer), Some(after)) => {
                let fut = Box::pin(fut);
                match select(timer.sleep(after), fut).await {
                    Either::Left(((), _)) => Err(ClientError::Timeout { after }),
                    Either::Right((r, _)) => r,
                }
            }
            _ => fut.await,
        }
    }
}

/// What one request's exchange came to, for its span and its duration
/// ([`Client::traced`]).
pub(super) enum Answer<'a> {
    /// The JSON-RPC response.
    Response(&'a Value),
    /// The transport failed.
    Failed,
    /// The request was not served: a first request a 2025-era server did not
    /// take, a call its handler stopped, a notification.
    NotServed,
}
