//! [`Client`]: drives a carrier request through its `InputRequiredResult` rounds.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use futures_util::future::{Either, select};
use futures_util::stream::{self, StreamExt, TryStreamExt};
use serde_json::{Map, Value};

use crate::capability;
use crate::defaults;
use crate::wire::input::{InputKind, InputRequest, InputResponse, InputResponses};
use crate::wire::jsonrpc::{self, RequestId};
use crate::wire::meta::{ClientCapabilities, Implementation, RequestMeta};
use crate::wire::result::InputRequiredResult;
use crate::wire::{CarrierMethod, InputRequests, JsonObject};

use super::error::{Cap, ClientError};
use super::flow::{CarrierCall, Completion, PendingFlow, Step};
use super::handler::{InputContext, InputHandler, NoInput};
use super::timer::Timer;
use super::transport::Transport;

/// Builds a [`Client`]. Mandatory things are arguments of [`Client::builder`];
/// everything here has a default, stated on its setter.
#[derive(Debug)]
pub struct ClientBuilder {
    transport: Arc<dyn Transport>,
    handler: Arc<dyn InputHandler>,
    client_info: Implementation,
    max_rounds: u32,
    total_timeout: Option<Duration>,
    request_timeout: Option<Duration>,
    limits: Limits,
    timer: Option<Arc<dyn Timer>>,
}

/// What one flow may make the client do (the caps other than rounds and time).
#[derive(Debug, Clone, Copy)]
struct Limits {
    questions_per_round: usize,
    concurrent_answers: usize,
    sampling_per_flow: u32,
    answer_bytes: u64,
    state_bytes: usize,
    upload_bytes: u64,
}

/// What a flow has used so far, carried from round to round (and in a [`PendingFlow`]).
#[derive(Debug, Clone, Copy, Default)]
struct Tally {
    /// Requests sent.
    round: u32,
    /// Sampling requests asked.
    sampling: u32,
    /// Bytes of answers sent.
    bytes: u64,
    /// Bytes of requests sent.
    uploaded: u64,
}

impl Tally {
    fn of(p: &PendingFlow) -> Self {
        Self {
            round: p.round,
            sampling: p.sampling_asked,
            bytes: p.bytes_answered,
            uploaded: p.bytes_uploaded,
        }
    }
}

impl ClientBuilder {
    /// The handler that answers input requests. Default: [`NoInput`] (declares
    /// nothing, so any input request ends the flow with `UndeclaredInput`).
    pub fn handler(mut self, handler: impl InputHandler + 'static) -> Self {
        self.handler = Arc::new(handler);
        self
    }

    /// The handler, shared.
    pub fn shared_handler(mut self, handler: Arc<dyn InputHandler>) -> Self {
        self.handler = handler;
        self
    }

    /// `clientInfo` sent in `_meta`. Default: `{name: "mrtr", version: <crate version>}`.
    pub fn client_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.client_info = Implementation {
            name: name.into(),
            version: version.into(),
            extra: JsonObject::new(),
        };
        self
    }

    /// The most requests one flow may send (the first plus retries). Default: 17
    /// ([`defaults::CLIENT_MAX_ROUNDS`], a default server's 16 rounds plus the
    /// request that completes).
    /// A flow whose last allowed request is answered with another
    /// `InputRequiredResult` ends with [`ClientError::MaxRounds`] (its input
    /// requests are not shown to anyone). Values below 1 count as 1.
    pub fn max_rounds(mut self, n: u32) -> Self {
        self.max_rounds = n.max(1);
        self
    }

    /// The longest one flow may take (or one `start`/`resume` step), `None` for no
    /// cap. Default: 5 minutes ([`defaults::CLIENT_TOTAL_TIMEOUT`]).
    /// Needs a [`Timer`]; without one the cap is not enforced.
    pub fn total_timeout(mut self, t: Option<Duration>) -> Self {
        self.total_timeout = t;
        self
    }

    /// The longest one request may wait for its response, `None` for no cap.
    /// Default: 30 seconds ([`defaults::CLIENT_REQUEST_TIMEOUT`]). A request that
    /// gets no response in time ends the flow with [`ClientError::RequestTimeout`].
    /// A server that holds a retry open until the user has finished a URL-mode
    /// step needs a longer one. Needs a [`Timer`]; without one the cap is not enforced.
    pub fn request_timeout(mut self, t: Option<Duration>) -> Self {
        self.request_timeout = t;
        self
    }

    /// The most questions (input requests) one round may ask. Default: 16
    /// ([`defaults::CLIENT_MAX_QUESTIONS_PER_ROUND`], what a default server may
    /// ask). A round that asks more ends the flow with [`ClientError::CapExceeded`]
    /// ([`Cap::QuestionsPerRound`]) before any handler runs and without a retry.
    /// Values below 1 count as 1.
    pub fn max_questions_per_round(mut self, n: usize) -> Self {
        self.limits.questions_per_round = n.max(1);
        self
    }

    /// The most questions of one round the handler answers at the same time; the
    /// others wait their turn (a bound on concurrency, never an error). Default: 4
    /// ([`defaults::CLIENT_MAX_CONCURRENT_ANSWERS`]). Values below 1 count as 1
    /// (one at a time).
    pub fn max_concurrent_answers(mut self, n: usize) -> Self {
        self.limits.concurrent_answers = n.max(1);
        self
    }

    /// The most sampling requests one flow may ask, over all its rounds (each is a
    /// call to the client's model). Default: 16
    /// ([`defaults::CLIENT_MAX_SAMPLING_PER_FLOW`]). The round that would go over it
    /// ends the flow with [`ClientError::CapExceeded`] ([`Cap::SamplingPerFlow`])
    /// before any handler runs. 0 refuses every sampling request.
    pub fn max_sampling_per_flow(mut self, n: u32) -> Self {
        self.limits.sampling_per_flow = n;
        self
    }

    /// The most bytes of answers (`inputResponses`, as serialized JSON) one flow may
    /// send, over all its rounds. Default: 256 KiB ([`defaults::CLIENT_MAX_ANSWER_BYTES`]).
    /// Answers that would go over it are not sent: the flow ends with
    /// [`ClientError::CapExceeded`] ([`Cap::AnswerBytes`]).
    pub fn max_answer_bytes(mut self, n: u64) -> Self {
        self.limits.answer_bytes = n;
        self
    }

    /// The longest `requestState` (in bytes) the client echoes. Default: 64 KiB
    /// ([`defaults::CLIENT_MAX_STATE_BYTES`], four times the longest state a default
    /// server seals). A round whose state is longer ends the flow with
    /// [`ClientError::CapExceeded`] ([`Cap::StateBytes`]) before any handler runs
    /// and before the state is sent back; the error never holds the state.
    pub fn max_state_bytes(mut self, n: usize) -> Self {
        self.limits.state_bytes = n;
        self
    }

    /// The most bytes of requests (each JSON-RPC request as serialized JSON: the
    /// original params, `_meta`, the answers and the echoed state) one flow may
    /// send, over all its rounds. Default: 4.25 MiB
    /// ([`defaults::CLIENT_MAX_UPLOAD_BYTES`], 17 requests of a default server's
    /// largest body). A request that would go over it is not sent: the flow ends
    /// with [`ClientError::CapExceeded`] ([`Cap::UploadBytes`]).
    pub fn max_upload_bytes(mut self, n: u64) -> Self {
        self.limits.upload_bytes = n;
        self
    }

    /// The timer for back-off and the time cap. Default: `TokioTimer` with the
    /// `client-http` or `client-stdio` feature (the client must then run inside a tokio runtime),
    /// none otherwise (no back-off, no time cap).
    pub fn timer(mut self, timer: impl Timer + 'static) -> Self {
        self.timer = Some(Arc::new(timer));
        self
    }

    /// No timer: no back-off pause and no total time cap (rounds are still capped).
    /// For runtimes other than tokio, prefer [`timer`](Self::timer) with that runtime's sleep.
    pub fn no_timer(mut self) -> Self {
        self.timer = None;
        self
    }

    /// Builds the client. Its capabilities are read from the handler once, here.
    pub fn build(self) -> Client {
        let capabilities = self.handler.capabilities();
        Client {
            inner: Arc::new(Inner {
                transport: self.transport,
                handler: self.handler,
                capabilities,
                client_info: self.client_info,
                max_rounds: self.max_rounds,
                total_timeout: self.total_timeout,
                request_timeout: self.request_timeout,
                limits: self.limits,
                timer: self.timer,
                next_id: AtomicI64::new(1),
            }),
        }
    }
}

#[derive(Debug)]
struct Inner {
    transport: Arc<dyn Transport>,
    handler: Arc<dyn InputHandler>,
    capabilities: ClientCapabilities,
    client_info: Implementation,
    max_rounds: u32,
    total_timeout: Option<Duration>,
    request_timeout: Option<Duration>,
    limits: Limits,
    timer: Option<Arc<dyn Timer>>,
    next_id: AtomicI64,
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
/// Every request carries the full `_meta` (protocol version, `clientInfo`,
/// `clientCapabilities`) and a fresh id. A retry re-sends the original params
/// with `inputResponses` (omitted on a state-only round) and `requestState`
/// exactly as received (omitted when the server sent none, never `null` or `""`).
#[derive(Debug, Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

enum Outcome {
    Complete(Value),
    InputRequired(InputRequiredResult),
}

impl Client {
    /// A builder over `transport`.
    pub fn builder(transport: impl Transport + 'static) -> ClientBuilder {
        Self::builder_shared(Arc::new(transport))
    }

    /// A builder over a shared transport.
    pub fn builder_shared(transport: Arc<dyn Transport>) -> ClientBuilder {
        ClientBuilder {
            transport,
            handler: Arc::new(NoInput),
            client_info: Implementation {
                name: "mrtr".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                extra: JsonObject::new(),
            },
            max_rounds: defaults::CLIENT_MAX_ROUNDS,
            total_timeout: Some(defaults::CLIENT_TOTAL_TIMEOUT),
            request_timeout: Some(defaults::CLIENT_REQUEST_TIMEOUT),
            limits: Limits {
                questions_per_round: defaults::CLIENT_MAX_QUESTIONS_PER_ROUND,
                concurrent_answers: defaults::CLIENT_MAX_CONCURRENT_ANSWERS,
                sampling_per_flow: defaults::CLIENT_MAX_SAMPLING_PER_FLOW,
                answer_bytes: defaults::CLIENT_MAX_ANSWER_BYTES,
                state_bytes: defaults::CLIENT_MAX_STATE_BYTES,
                upload_bytes: defaults::CLIENT_MAX_UPLOAD_BYTES,
            },
            timer: default_timer(),
        }
    }

    /// The capabilities this client declares on every request.
    pub fn capabilities(&self) -> &ClientCapabilities {
        &self.inner.capabilities
    }

    /// The `_meta` object every request carries.
    pub fn meta(&self) -> Value {
        let mut meta = RequestMeta::new(self.inner.capabilities.clone());
        meta.client_info = Some(self.inner.client_info.clone());
        meta.to_value()
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
    /// # Errors
    /// See [`ClientError`].
    pub async fn call(&self, call: CarrierCall) -> Result<Completion, ClientError> {
        let step = self
            .capped(self.drive(&call, Tally::default(), None, None, false))
            .await?;
        match step {
            Step::Complete(c) => Ok(c),
            // `drive` with manual = false never stops for input.
            Step::NeedsInput(p) => Err(ClientError::Malformed(format!(
                "internal: flow stopped for input in automatic mode at round {}",
                p.round
            ))),
        }
    }

    /// Sends the first request of `call` and stops at the first round that asks
    /// for input (manual mode). State-only rounds are retried (with back-off)
    /// without stopping, since they need nothing from the caller.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn start(&self, call: CarrierCall) -> Result<Step, ClientError> {
        self.capped(self.drive(&call, Tally::default(), None, None, true))
            .await
    }

    /// Retries a pending flow with `responses` (one per outstanding input request,
    /// of the kind asked) and stops at the next round that asks for input.
    ///
    /// # Errors
    /// [`ClientError::AnswerMismatch`] when `responses` does not answer exactly the
    /// outstanding keys with the asked kinds (nothing is sent then); otherwise see [`ClientError`].
    pub async fn resume(
        &self,
        pending: PendingFlow,
        responses: InputResponses,
    ) -> Result<Step, ClientError> {
        check_answers(&pending.input_requests, &responses)?;
        let call = pending.call();
        self.capped(self.drive(
            &call,
            Tally::of(&pending),
            pending.request_state,
            Some(responses),
            true,
        ))
        .await
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
        check_answers(&pending.input_requests, &responses)?;
        let call = pending.call();
        match self
            .capped(self.drive(
                &call,
                Tally::of(&pending),
                pending.request_state,
                Some(responses),
                false,
            ))
            .await?
        {
            Step::Complete(c) => Ok(c),
            Step::NeedsInput(p) => Err(ClientError::Malformed(format!(
                "internal: flow stopped for input in automatic mode at round {}",
                p.round
            ))),
        }
    }

    /// Answers a pending flow's input requests through the handler (concurrently,
    /// up to [`max_concurrent_answers`](ClientBuilder::max_concurrent_answers) at a
    /// time), e.g. to resume it later with [`resume`](Self::resume). Bounded by the
    /// total time cap.
    ///
    /// # Errors
    /// [`ClientError::UndeclaredInput`], [`ClientError::CapExceeded`] (too many
    /// questions; nothing is asked), [`ClientError::Handler`] or [`ClientError::Timeout`].
    pub async fn fulfil(&self, pending: &PendingFlow) -> Result<InputResponses, ClientError> {
        self.check_declared(&pending.input_requests)?;
        self.check_questions(&pending.input_requests)?;
        self.capped(self.answer(&pending.call(), pending.round, &pending.input_requests))
            .await
    }

    /// Sends any other request (e.g. `tools/list`) with the full `_meta` and a
    /// fresh id, and returns its `result`. No MRTR handling: an
    /// `InputRequiredResult` is returned as is. Bounded by the per-request and the
    /// total time caps.
    ///
    /// # Errors
    /// [`ClientError::Transport`], [`ClientError::JsonRpc`], [`ClientError::IdMismatch`],
    /// [`ClientError::Malformed`], [`ClientError::RequestTimeout`] or [`ClientError::Timeout`].
    pub async fn request(&self, method: &str, params: JsonObject) -> Result<Value, ClientError> {
        let mut params = params;
        params.insert("_meta".into(), self.meta());
        let id = self.next_id();
        let request = jsonrpc::request(&id, method, Value::Object(params));
        self.capped(async {
            let response = self.send(request).await?;
            result_of(response, &id)
        })
        .await
    }

    /// Sends one request, racing its response against the per-request time cap.
    async fn send(&self, request: Value) -> Result<Value, ClientError> {
        let send = self.inner.transport.send(request);
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

    /// The round loop. `tally` is what the flow used before this call (requests
    /// sent, sampling asked, bytes answered); `state` and `responses` are what the
    /// next request carries. All of it is local to this call.
    async fn drive(
        &self,
        call: &CarrierCall,
        mut tally: Tally,
        mut state: Option<String>,
        mut responses: Option<InputResponses>,
        manual: bool,
    ) -> Result<Step, ClientError> {
        let mut backoff = defaults::BACKOFF_INITIAL;
        loop {
            let answers = match responses.take() {
                Some(r) => Some(self.count_bytes(&r, &mut tally)?),
                None => None,
            };
            tally.round += 1;
            let round = tally.round;
            let outcome = self
                .send_round(call, state.as_deref(), answers, &mut tally)
                .await?;
            let irr = match outcome {
                Outcome::Complete(result) => {
                    return Ok(Step::Complete(Completion {
                        result,
                        rounds: round,
                    }));
                }
                Outcome::InputRequired(irr) => irr,
            };
            // Refuse an undeclared kind before anything else: the server broke
            // Server Requirement 7, and nothing is asked or retried.
            if let Some(asks) = irr.input_requests() {
                self.check_declared(asks)?;
            }
            if round >= self.inner.max_rounds {
                return Err(ClientError::MaxRounds { rounds: round });
            }
            // The caps on what a round may ask come before any handler runs (and
            // before a manual caller is shown anything).
            if let Some(asks) = irr.input_requests() {
                self.check_questions(asks)?;
                self.count_sampling(asks, &mut tally)?;
            }
            if let Some(s) = irr.request_state() {
                self.check_state(s)?;
            }
            // Echo exactly what came this round; nothing when nothing came.
            state = irr.request_state().map(str::to_owned);
            match irr.input_requests() {
                None => {
                    // State-only round (load shedding): retry after a growing pause.
                    if let Some(timer) = &self.inner.timer {
                        timer.sleep(backoff).await;
                    }
                    backoff = (backoff * 2).min(defaults::BACKOFF_MAX);
                }
                Some(asks) => {
                    backoff = defaults::BACKOFF_INITIAL;
                    if manual {
                        return Ok(Step::NeedsInput(PendingFlow {
                            method: call.method(),
                            params: call.params().clone(),
                            request_state: state,
                            input_requests: asks.clone(),
                            round,
                            sampling_asked: tally.sampling,
                            bytes_answered: tally.bytes,
                            bytes_uploaded: tally.uploaded,
                        }));
                    }
                    responses = Some(self.answer(call, round, asks).await?);
                }
            }
        }
    }

    fn check_declared(&self, asks: &InputRequests) -> Result<(), ClientError> {
        for (key, ask) in asks {
            if let Some(missing) = capability::missing(&self.inner.capabilities, ask) {
                return Err(ClientError::UndeclaredInput {
                    key: key.clone(),
                    kind: ask.kind(),
                    missing: Box::new(missing),
                });
            }
        }
        Ok(())
    }

    /// [`Cap::QuestionsPerRound`]: how many questions one round may ask.
    fn check_questions(&self, asks: &InputRequests) -> Result<(), ClientError> {
        let limit = self.inner.limits.questions_per_round;
        if asks.len() > limit {
            return Err(ClientError::CapExceeded {
                cap: Cap::QuestionsPerRound,
                limit: limit as u64,
            });
        }
        Ok(())
    }

    /// [`Cap::SamplingPerFlow`]: adds this round's sampling requests to the tally.
    fn count_sampling(&self, asks: &InputRequests, tally: &mut Tally) -> Result<(), ClientError> {
        let limit = self.inner.limits.sampling_per_flow;
        let asked = asks
            .values()
            .filter(|a| a.kind() == InputKind::Sampling)
            .count();
        let total = u32::try_from(asked)
            .ok()
            .and_then(|n| tally.sampling.checked_add(n))
            .filter(|&n| n <= limit);
        match total {
            Some(n) => {
                tally.sampling = n;
                Ok(())
            }
            None => Err(ClientError::CapExceeded {
                cap: Cap::SamplingPerFlow,
                limit: u64::from(limit),
            }),
        }
    }

    /// [`Cap::StateBytes`]: the longest `requestState` this client echoes.
    fn check_state(&self, state: &str) -> Result<(), ClientError> {
        let limit = self.inner.limits.state_bytes;
        if state.len() > limit {
            return Err(ClientError::CapExceeded {
                cap: Cap::StateBytes,
                limit: limit as u64,
            });
        }
        Ok(())
    }

    /// [`Cap::UploadBytes`]: adds the size of `request` (serialized) to the tally
    /// within the cap.
    fn count_upload(&self, request: &Value, tally: &mut Tally) -> Result<(), ClientError> {
        let limit = self.inner.limits.upload_bytes;
        let mut size = ByteCount(0);
        // Counted as serialized, without building the bytes (the transport does).
        let size = serde_json::to_writer(&mut size, request).map_or(u64::MAX, |()| size.0);
        match tally.uploaded.checked_add(size).filter(|&n| n <= limit) {
            Some(n) => {
                tally.uploaded = n;
                Ok(())
            }
            None => Err(ClientError::CapExceeded {
                cap: Cap::UploadBytes,
                limit,
            }),
        }
    }

    /// [`Cap::AnswerBytes`]: the wire form of `responses`, once its size is added to
    /// the tally within the cap.
    fn count_bytes(
        &self,
        responses: &InputResponses,
        tally: &mut Tally,
    ) -> Result<Value, ClientError> {
        let limit = self.inner.limits.answer_bytes;
        let m: Map<String, Value> = responses
            .iter()
            .map(|(k, v)| (k.clone(), v.to_value()))
            .collect();
        let value = Value::Object(m);
        let size = serde_json::to_vec(&value).map_or(u64::MAX, |b| b.len() as u64);
        match tally.bytes.checked_add(size).filter(|&n| n <= limit) {
            Some(n) => {
                tally.bytes = n;
                Ok(value)
            }
            None => Err(ClientError::CapExceeded {
                cap: Cap::AnswerBytes,
                limit,
            }),
        }
    }

    /// Asks the handler for every input request, up to the concurrency cap at a
    /// time; the first failure wins. The answers keep the server's order.
    async fn answer(
        &self,
        call: &CarrierCall,
        round: u32,
        asks: &InputRequests,
    ) -> Result<InputResponses, ClientError> {
        let handler = &self.inner.handler;
        let futures = asks.iter().enumerate().map(|(i, (key, ask))| {
            let ctx = InputContext {
                key: key.clone(),
                method: call.method(),
                target: call.target().to_owned(),
                round,
            };
            let kind = ask.kind();
            let key = key.clone();
            let ask = ask.clone();
            async move {
                let answer = match ask {
                    InputRequest::Elicit(p) => {
                        handler.elicit(ctx, p).await.map(InputResponse::Elicit)
                    }
                    InputRequest::CreateMessage(p) => handler
                        .create_message(ctx, p)
                        .await
                        .map(InputResponse::CreateMessage),
                    InputRequest::ListRoots { .. } => {
                        handler.list_roots(ctx).await.map(InputResponse::ListRoots)
                    }
                };
                match answer {
                    Ok(a) => Ok((i, key, a)),
                    Err(source) => Err(ClientError::Handler { key, kind, source }),
                }
            }
        });
        // Collected first: a stream over a borrowing closure trips the `Send`
        // check of the caller's future (higher-ranked lifetimes).
        let futures: Vec<_> = futures.collect();
        let mut answered: Vec<(usize, String, InputResponse)> = stream::iter(futures)
            .buffer_unordered(self.inner.limits.concurrent_answers)
            .try_collect()
            .await?;
        answered.sort_unstable_by_key(|(i, _, _)| *i);
        Ok(answered.into_iter().map(|(_, k, a)| (k, a)).collect())
    }

    /// Sends one round: the original params, `_meta`, the answers (their wire
    /// form, already counted against the byte cap) and the state, unless the
    /// request would take the flow over its upload cap.
    async fn send_round(
        &self,
        call: &CarrierCall,
        state: Option<&str>,
        answers: Option<Value>,
        tally: &mut Tally,
    ) -> Result<Outcome, ClientError> {
        let mut params = call.params().clone();
        params.insert("_meta".into(), self.meta());
        if let Some(a) = answers {
            params.insert("inputResponses".into(), a);
        }
        if let Some(s) = state {
            params.insert("requestState".into(), Value::String(s.to_owned()));
        }
        let id = self.next_id();
        let request = jsonrpc::request(&id, call.method().as_str(), Value::Object(params));
        self.count_upload(&request, tally)?;
        let response = self.send(request).await?;
        classify(call.method(), result_of(response, &id)?)
    }
}

/// An `io::Write` that only counts the bytes written to it.
struct ByteCount(u64);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 = self.0.saturating_add(buf.len() as u64);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Extracts `result` from a response to the request with `id`.
fn result_of(response: Value, id: &RequestId) -> Result<Value, ClientError> {
    let Value::Object(mut o) = response else {
        return Err(ClientError::Malformed(
            "a JSON-RPC response must be an object".into(),
        ));
    };
    // An error response may carry `null` (or no id) when the server could not
    // read the request's id (JSON-RPC 2.0 §5); any other id is someone else's.
    let received = o.get("id").cloned().unwrap_or(Value::Null);
    let unread_id = o.contains_key("error") && received.is_null();
    if received != id.to_value() && !unread_id {
        return Err(ClientError::IdMismatch {
            expected: id.clone(),
            received,
        });
    }
    if let Some(err) = o.remove("error") {
        let code = err.get("code").and_then(Value::as_i64);
        let message = err.get("message").and_then(Value::as_str);
        return match (code, message) {
            (Some(code), Some(message)) => Err(ClientError::JsonRpc {
                code,
                message: message.to_owned(),
                data: err.get("data").cloned(),
            }),
            _ => Err(ClientError::Malformed(
                "a JSON-RPC error needs an integer code and a string message".into(),
            )),
        };
    }
    match o.remove("result") {
        Some(r @ Value::Object(_)) => Ok(r),
        Some(_) => Err(ClientError::Malformed("result must be an object".into())),
        None => Err(ClientError::Malformed(
            "a JSON-RPC response needs result or error".into(),
        )),
    }
}

fn classify(method: CarrierMethod, result: Value) -> Result<Outcome, ClientError> {
    match result.get("resultType") {
        // Absent means complete (servers of earlier versions; MCP 2026-07-28, Base Protocol §Result Responses).
        None => Ok(Outcome::Complete(result)),
        Some(Value::String(t)) => match t.as_str() {
            "complete" => Ok(Outcome::Complete(result)),
            "input_required" => InputRequiredResult::from_value(method, &result)
                .map(Outcome::InputRequired)
                .map_err(|e| {
                    ClientError::Malformed(format!("InputRequiredResult: {}", e.message()))
                }),
            other => Err(ClientError::UnknownResultType {
                result_type: other.to_owned(),
            }),
        },
        Some(_) => Err(ClientError::Malformed("resultType must be a string".into())),
    }
}

/// `responses` must answer exactly the keys of `asks`, each with the asked kind.
fn check_answers(asks: &InputRequests, responses: &InputResponses) -> Result<(), ClientError> {
    for (key, ask) in asks {
        let Some(answer) = responses.get(key) else {
            return Err(ClientError::AnswerMismatch {
                key: key.clone(),
                reason: "no answer given".into(),
            });
        };
        let fits = matches!(
            (ask.kind(), answer),
            (
                InputKind::ElicitForm | InputKind::ElicitUrl,
                InputResponse::Elicit(_)
            ) | (InputKind::Sampling, InputResponse::CreateMessage(_))
                | (InputKind::Roots, InputResponse::ListRoots(_))
        );
        if !fits {
            return Err(ClientError::AnswerMismatch {
                key: key.clone(),
                reason: format!(
                    "the answer is not of the asked kind ({})",
                    ask.kind().as_str()
                ),
            });
        }
    }
    if let Some(extra) = responses.keys().find(|k| !asks.contains_key(*k)) {
        return Err(ClientError::AnswerMismatch {
            key: extra.clone(),
            reason: "no such input request".into(),
        });
    }
    Ok(())
}

#[cfg(any(feature = "client-http", feature = "client-stdio"))]
fn default_timer() -> Option<Arc<dyn Timer>> {
    Some(Arc::new(super::timer::TokioTimer))
}

#[cfg(not(any(feature = "client-http", feature = "client-stdio")))]
fn default_timer() -> Option<Arc<dyn Timer>> {
    None
}
