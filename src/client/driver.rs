//! [`Client`]: drives a carrier request through its `InputRequiredResult` rounds.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use futures_util::future::{Either, select, try_join_all};
use serde_json::{Map, Value};

use crate::capability;
use crate::defaults;
use crate::wire::input::{InputKind, InputRequest, InputResponse, InputResponses};
use crate::wire::jsonrpc::{self, RequestId};
use crate::wire::meta::{ClientCapabilities, Implementation, RequestMeta};
use crate::wire::result::InputRequiredResult;
use crate::wire::{CarrierMethod, InputRequests, JsonObject};

use super::error::ClientError;
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
    timer: Option<Arc<dyn Timer>>,
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

    /// The timer for back-off and the time cap. Default: `TokioTimer` with the
    /// `client-http` feature (the client must then run inside a tokio runtime),
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
        let step = self.capped(self.drive(&call, 0, None, None, false)).await?;
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
        self.capped(self.drive(&call, 0, None, None, true)).await
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
            pending.round,
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
                pending.round,
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

    /// Answers a pending flow's input requests through the handler (concurrently),
    /// e.g. to resume it later with [`resume`](Self::resume).
    ///
    /// # Errors
    /// [`ClientError::UndeclaredInput`] or [`ClientError::Handler`].
    pub async fn fulfil(&self, pending: &PendingFlow) -> Result<InputResponses, ClientError> {
        self.check_declared(&pending.input_requests)?;
        self.answer(&pending.call(), pending.round, &pending.input_requests)
            .await
    }

    /// Sends any other request (e.g. `tools/list`) with the full `_meta` and a
    /// fresh id, and returns its `result`. No MRTR handling: an
    /// `InputRequiredResult` is returned as is.
    ///
    /// # Errors
    /// [`ClientError::Transport`], [`ClientError::JsonRpc`] or [`ClientError::Malformed`].
    pub async fn request(&self, method: &str, params: JsonObject) -> Result<Value, ClientError> {
        let mut params = params;
        params.insert("_meta".into(), self.meta());
        let id = self.next_id();
        let response = self
            .inner
            .transport
            .send(jsonrpc::request(&id, method, Value::Object(params)))
            .await?;
        result_of(response, &id)
    }

    fn next_id(&self) -> RequestId {
        RequestId::from(self.inner.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Races `fut` against the total time cap, when there is a timer and a cap.
    async fn capped<T>(
        &self,
        fut: impl std::future::Future<Output = Result<T, ClientError>> + Send,
    ) -> Result<T, ClientError> {
        match (&self.inner.timer, self.inner.total_timeout) {
            (Some(timer), Some(after)) => {
                let fut = Box::pin(fut);
                match select(fut, timer.sleep(after)).await {
                    Either::Left((r, _)) => r,
                    Either::Right(((), _)) => Err(ClientError::Timeout { after }),
                }
            }
            _ => fut.await,
        }
    }

    /// The round loop. `round` is the number of requests already sent; `state`
    /// and `responses` are what the next request carries. All of it is local to
    /// this call.
    async fn drive(
        &self,
        call: &CarrierCall,
        mut round: u32,
        mut state: Option<String>,
        mut responses: Option<InputResponses>,
        manual: bool,
    ) -> Result<Step, ClientError> {
        let mut backoff = defaults::BACKOFF_INITIAL;
        loop {
            round += 1;
            let outcome = self
                .send_round(call, state.as_deref(), responses.take().as_ref())
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

    /// Asks the handler for every input request at once; the first failure wins.
    async fn answer(
        &self,
        call: &CarrierCall,
        round: u32,
        asks: &InputRequests,
    ) -> Result<InputResponses, ClientError> {
        let handler = &self.inner.handler;
        let futures = asks.iter().map(|(key, ask)| {
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
                    Ok(a) => Ok((key, a)),
                    Err(source) => Err(ClientError::Handler { key, kind, source }),
                }
            }
        });
        Ok(try_join_all(futures).await?.into_iter().collect())
    }

    async fn send_round(
        &self,
        call: &CarrierCall,
        state: Option<&str>,
        responses: Option<&InputResponses>,
    ) -> Result<Outcome, ClientError> {
        let mut params = call.params().clone();
        params.insert("_meta".into(), self.meta());
        if let Some(r) = responses {
            let m: Map<String, Value> = r.iter().map(|(k, v)| (k.clone(), v.to_value())).collect();
            params.insert("inputResponses".into(), Value::Object(m));
        }
        if let Some(s) = state {
            params.insert("requestState".into(), Value::String(s.to_owned()));
        }
        let id = self.next_id();
        let request = jsonrpc::request(&id, call.method().as_str(), Value::Object(params));
        let response = self.inner.transport.send(request).await?;
        classify(call.method(), result_of(response, &id)?)
    }
}

/// Extracts `result` from a response to the request with `id`.
fn result_of(response: Value, id: &RequestId) -> Result<Value, ClientError> {
    let Value::Object(mut o) = response else {
        return Err(ClientError::Malformed(
            "a JSON-RPC response must be an object".into(),
        ));
    };
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
    if o.get("id") != Some(&id.to_value()) {
        return Err(ClientError::Malformed(
            "the response id does not match the request id".into(),
        ));
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

#[cfg(feature = "client-http")]
fn default_timer() -> Option<Arc<dyn Timer>> {
    Some(Arc::new(super::timer::TokioTimer))
}

#[cfg(not(feature = "client-http"))]
fn default_timer() -> Option<Arc<dyn Timer>> {
    None
}
