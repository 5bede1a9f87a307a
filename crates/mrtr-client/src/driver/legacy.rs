//! The client's two eras: which one its server speaks ([`Client::era`], told
//! by the first request and remembered per server), and a call to a 2025-era
//! server: `initialize` once, then each call as one request whose server
//! requests are answered by the same handler code as an `InputRequiredResult`'s
//! input requests ([`Client::answer_one`]).

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};

use mrtr::client::{Cap, CarrierCall, Completion, Flow, FlowError, Turn, result_of};
use mrtr::wire::jsonrpc;
use mrtr::wire::{InputKind, InputRequest, InputRequests, JsonObject, META_CLIENT_INFO};

use super::{Answer, Client};
use crate::handler::{HandlerError, InputContext};
use crate::legacy::{
    Era, EraMode, Exchanged, LEGACY_PROTOCOL_VERSIONS, LegacyTransport, Probe, ServeRequest,
    Served, Session,
};
use crate::{BoxFuture, ClientError, TransportError};

/// What the first request to a server of unknown era came to.
#[allow(clippy::large_enum_variant)] // one value per call; boxing would only add noise
pub(super) enum Probed {
    /// A modern server: what its response means for the flow.
    Modern(Turn),
    /// A 2025-era server: the call is to be made in a session.
    Legacy,
}

impl Client {
    /// The era of this client's server, when it is known: set by
    /// [`ClientBuilder::with_era`](super::ClientBuilder::with_era), learned by an
    /// earlier request, or remembered by the [`EraCache`](crate::EraCache). A
    /// transport that cannot carry the 2025 era is always modern.
    pub fn era(&self) -> Option<Era> {
        let legacy = self.inner.transport.legacy();
        match (self.inner.era_mode, legacy) {
            (EraMode::Legacy, _) => Some(Era::Legacy),
            (_, None) | (EraMode::Modern, _) => Some(Era::Modern),
            (_, Some(l)) => self.inner.eras.get(&l.server()),
        }
    }

    /// The era to use for the next request: [`era`](Self::era), except that a
    /// 2025 era remembered (not forced) whose session cannot be opened (the
    /// server was upgraded, or the entry came from an old file) is forgotten,
    /// for the next request to tell the era afresh.
    pub(super) async fn known_era(&self) -> Option<Era> {
        let era = self.era();
        if era != Some(Era::Legacy) || self.inner.era_mode != EraMode::Auto {
            return era;
        }
        let Ok(legacy) = self.legacy_transport() else {
            return era;
        };
        match self.session(legacy).await {
            Ok(_) => era,
            Err(e) => {
                tracing::debug!(error = %e, "no 2025-era session: telling the era again");
                self.inner.eras.forget(&legacy.server());
                None
            }
        }
    }

    /// Ends the 2025-era session, if one was opened (over HTTP a `DELETE` with
    /// its `Mcp-Session-Id`); the next call to a 2025-era server opens another.
    pub async fn close(&self) {
        let session = self.inner.session.lock().await.take();
        if let (Some(session), Some(legacy)) = (session, self.inner.transport.legacy()) {
            legacy.end(&session).await;
            // The conventions' mcp.client.session.duration, labelled by a
            // version of the era's (the server's string is not a label).
            if let (Some(version), Some(age)) = (session.version(), session.age()) {
                let version = mrtr::legacy::VERSIONS
                    .into_iter()
                    .find(|v| *v == version)
                    .unwrap_or(mrtr::metrics::OTHER);
                let network = self.inner.transport.network_transport();
                mrtr::metrics::client_session(version, network, age);
            }
        }
    }

    /// The transport as a carrier of the 2025 era.
    fn legacy_transport(&self) -> Result<&dyn LegacyTransport, ClientError> {
        self.inner.transport.legacy().ok_or_else(|| {
            ClientError::Transport(TransportError::InvalidRequest(
                "this transport cannot speak the 2025 era (no initialize, no server requests)"
                    .into(),
            ))
        })
    }

    /// Sends the first request of `call` to a server of unknown era, remembers
    /// the era it shows, and says what comes next.
    pub(super) async fn probe(&self, call: &CarrierCall) -> Result<Probed, ClientError> {
        let legacy = self.legacy_transport()?;
        let ready = Flow::start(call.clone(), Arc::clone(&self.inner.rules));
        let (sent, request) = ready.request(self.next_id())?;
        let probe = self
            .traced(request, |r| self.timed(legacy.probe(r)), modern_response)
            .await?;
        let server = legacy.server();
        match probe {
            Probe::Modern(response) => {
                self.inner.eras.insert(&server, Era::Modern);
                Ok(Probed::Modern(sent.on_response(response)?))
            }
            _ => {
                tracing::debug!("the server is of the 2025 era: initialize");
                self.inner.eras.insert(&server, Era::Legacy);
                Ok(Probed::Legacy)
            }
        }
    }

    /// Like [`probe`](Self::probe) for a request that is not a carrier.
    pub(super) async fn probe_request(
        &self,
        request: Value,
        id: &jsonrpc::RequestId,
    ) -> Result<Option<Value>, ClientError> {
        let legacy = self.legacy_transport()?;
        let probe = self
            .traced(request, |r| self.timed(legacy.probe(r)), modern_response)
            .await?;
        let server = legacy.server();
        match probe {
            Probe::Modern(response) => {
                self.inner.eras.insert(&server, Era::Modern);
                Ok(Some(result_of(response, id)?))
            }
            _ => {
                self.inner.eras.insert(&server, Era::Legacy);
                Ok(None)
            }
        }
    }

    /// The 2025-era session, opened with `initialize` and
    /// `notifications/initialized` the first time.
    async fn session(&self, legacy: &dyn LegacyTransport) -> Result<Arc<Session>, ClientError> {
        let mut slot = self.inner.session.lock().await;
        if let Some(session) = &*slot {
            return Ok(session.clone());
        }
        let session = Arc::new(Session::new());
        let id = self.next_id();
        let client_info = self
            .inner
            .rules
            .meta()
            .get(META_CLIENT_INFO)
            .cloned()
            .unwrap_or_else(|| json!({"name": "mrtr", "version": env!("CARGO_PKG_VERSION")}));
        let initialize = jsonrpc::request(
            &id,
            "initialize",
            json!({
                "protocolVersion": LEGACY_PROTOCOL_VERSIONS[0],
                "capabilities": self.capabilities().to_value(),
                "clientInfo": client_info,
            }),
        );
        let exchange = |r| self.timed(legacy.exchange(&session, r, &NoRequests));
        let response = match self
            .traced(initialize, exchange, exchanged_response)
            .await?
        {
            Exchanged::Response(r) => r,
            _ => {
                return Err(FlowError::Malformed("initialize got no response".into()).into());
            }
        };
        let result = result_of(response, &id)?;
        let version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !LEGACY_PROTOCOL_VERSIONS.contains(&version) {
            return Err(FlowError::Malformed(format!(
                "the server chose protocol version {:?} in initialize, which this client does \
                 not speak (it speaks {})",
                mrtr::wire::truncate(version, 32),
                LEGACY_PROTOCOL_VERSIONS.join(", ")
            ))
            .into());
        }
        session.set_version(version);
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        self.timed(legacy.exchange(&session, initialized, &NoRequests))
            .await?;
        *slot = Some(session.clone());
        Ok(session)
    }

    /// Calls `call` on a 2025-era server: one request in the session, every
    /// server request before its response answered through the handler.
    ///
    /// The per-request time cap bounds `initialize`; this request waits for the
    /// user's answers, so only the total cap bounds it.
    pub(super) async fn legacy_call(&self, call: &CarrierCall) -> Result<Completion, ClientError> {
        let legacy = self.legacy_transport()?;
        let mut retried = false;
        loop {
            let session = self.session(legacy).await?;
            let id = self.next_id();
            let request = jsonrpc::request(
                &id,
                call.method().as_str(),
                Value::Object(call.params().clone()),
            );
            let answering = Answering::new(self, call);
            let exchange = |r| async { Ok(legacy.exchange(&session, r, &answering).await) };
            let exchanged = self.traced(request, exchange, exchange_answer).await?;
            if !retried && self.session_gone(&session, exchanged.as_ref().err()).await {
                retried = true;
                continue;
            }
            return match exchanged? {
                Exchanged::Response(response) => Ok(Completion {
                    result: result_of(response, &id)?,
                    rounds: 1,
                }),
                Exchanged::Stopped => Err(answering.take_error()),
                _ => Err(FlowError::Malformed("the request got no response".into()).into()),
            };
        }
    }

    /// Whether `exchanged` says the server no longer knows `session` (HTTP 404
    /// to its `Mcp-Session-Id`, which it answers before taking the request):
    /// then the session is dropped, for the next request to open another.
    async fn session_gone(&self, session: &Arc<Session>, error: Option<&TransportError>) -> bool {
        let gone = matches!(error, Some(TransportError::Status { status: 404, .. }))
            && session.id().is_some();
        if gone {
            tracing::debug!("the server ended the 2025-era session: initialize again");
            let mut slot = self.inner.session.lock().await;
            if slot.as_ref().is_some_and(|s| Arc::ptr_eq(s, session)) {
                *slot = None;
            }
        }
        gone
    }

    /// Sends any other request (`tools/list`, ...) in the 2025-era session.
    pub(super) async fn legacy_request(
        &self,
        method: &str,
        mut params: JsonObject,
    ) -> Result<Value, ClientError> {
        let legacy = self.legacy_transport()?;
        params.remove("_meta");
        let mut retried = false;
        loop {
            let session = self.session(legacy).await?;
            let id = self.next_id();
            let request = jsonrpc::request(&id, method, Value::Object(params.clone()));
            let exchange = |r| self.timed(legacy.exchange(&session, r, &NoRequests));
            let exchanged = self.traced(request, exchange, exchanged_response).await;
            let error = match &exchanged {
                Err(ClientError::Transport(t)) => Some(t),
                _ => None,
            };
            if !retried && self.session_gone(&session, error).await {
                retried = true;
                continue;
            }
            return match exchanged? {
                Exchanged::Response(response) => Ok(result_of(response, &id)?),
                _ => Err(FlowError::Malformed("the request got no response".into()).into()),
            };
        }
    }
}

/// A JSON-RPC response to `id`.
fn answer(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// A JSON-RPC error response to `id`: a fixed message, never what the handler said.
fn refusal(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Answers the server requests outside a call (during `initialize`, a
/// `tools/list`): `ping`, and `-32601` for anything else.
struct NoRequests;

impl ServeRequest for NoRequests {
    fn serve(&self, request: Value) -> BoxFuture<'_, Served> {
        Box::pin(async move {
            let id = request.get("id").cloned().unwrap_or(Value::Null);
            Served::Answer(match request.get("method").and_then(Value::as_str) {
                Some("ping") => answer(&id, json!({})),
                _ => refusal(
                    &id,
                    mrtr::error::code::METHOD_NOT_FOUND,
                    "not taken outside a call",
                ),
            })
        })
    }
}

/// Answers the server requests of one call through the client's handler, within
/// the caps (server requests per call, sampling requests per flow), and keeps the
/// error that ends the call when one does.
struct Answering<'c> {
    client: &'c Client,
    call: &'c CarrierCall,
    served: AtomicUsize,
    sampling: AtomicU32,
    error: Mutex<Option<ClientError>>,
}

impl<'c> Answering<'c> {
    fn new(client: &'c Client, call: &'c CarrierCall) -> Self {
        Self {
            client,
            call,
            served: AtomicUsize::new(0),
            sampling: AtomicU32::new(0),
            error: Mutex::new(None),
        }
    }

    /// Stops the call with `error`, answering the server with `response`.
    fn stop(&self, error: ClientError, response: Value) -> Served {
        *self.error.lock().unwrap_or_else(PoisonError::into_inner) = Some(error);
        Served::Stop(Some(response))
    }

    fn take_error(&self) -> ClientError {
        self.error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .unwrap_or_else(|| FlowError::Malformed("the call was stopped".into()).into())
    }

    async fn serve_one(&self, request: Value) -> Served {
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        let method = request
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let n = self.served.fetch_add(1, Ordering::Relaxed) + 1;
        let limit = self.client.inner.max_server_requests;
        if n > limit {
            return self.stop(
                ClientError::TooManyServerRequests { limit },
                refusal(&id, mrtr::error::code::INTERNAL_ERROR, "too many requests"),
            );
        }
        if method == "ping" {
            return Served::Answer(answer(&id, json!({})));
        }
        if !matches!(
            method.as_str(),
            "elicitation/create" | "sampling/createMessage" | "roots/list"
        ) {
            return Served::Answer(refusal(
                &id,
                mrtr::error::code::METHOD_NOT_FOUND,
                "method not found",
            ));
        }
        let mut shape = serde_json::Map::new();
        shape.insert("method".into(), Value::String(method.clone()));
        if let Some(params) = request.get("params") {
            shape.insert("params".into(), params.clone());
        }
        let ask = match InputRequest::from_value(&Value::Object(shape)) {
            Ok(ask) => ask,
            Err(e) => {
                return self.stop(
                    FlowError::Malformed(format!("the server's {method} request: {e}")).into(),
                    refusal(&id, mrtr::error::code::INVALID_PARAMS, "invalid params"),
                );
            }
        };
        let key = format!("{method}#{n}");
        let rules = &self.client.inner.rules;
        let mut one = InputRequests::new();
        one.insert(key.clone(), ask.clone());
        if let Err(e) = rules.check_declared(&one) {
            return self.stop(
                e.into(),
                refusal(
                    &id,
                    mrtr::error::code::METHOD_NOT_FOUND,
                    "not a declared capability",
                ),
            );
        }
        if ask.kind() == InputKind::Sampling {
            let limit = self.client.inner.max_sampling;
            if self.sampling.fetch_add(1, Ordering::Relaxed) >= limit {
                return self.stop(
                    FlowError::CapExceeded {
                        cap: Cap::SamplingPerFlow,
                        limit: u64::from(limit),
                    }
                    .into(),
                    refusal(&id, -1, "sampling refused: too many requests"),
                );
            }
        }
        let ctx = InputContext {
            key,
            method: self.call.method(),
            target: self.call.target().to_owned(),
            round: u32::try_from(n).unwrap_or(u32::MAX),
        };
        match self.client.answer_one(ctx, ask).await {
            Ok((_, response)) => Served::Answer(answer(&id, response.to_value())),
            Err(e) => {
                let (code, message) = match &e {
                    ClientError::Handler {
                        source: HandlerError::Unsupported,
                        ..
                    } => (mrtr::error::code::METHOD_NOT_FOUND, "not supported"),
                    ClientError::Handler {
                        source: HandlerError::Declined,
                        ..
                    } => (-1, "declined by the user"),
                    _ => (mrtr::error::code::INTERNAL_ERROR, "not answered"),
                };
                self.stop(e, refusal(&id, code, message))
            }
        }
    }
}

impl ServeRequest for Answering<'_> {
    fn serve(&self, request: Value) -> BoxFuture<'_, Served> {
        Box::pin(self.serve_one(request))
    }
}

/// What a first request came to: a 2026-07-28 server's response, or nothing
/// from a 2025-era one, which did not take it.
fn modern_response(probe: &Probe) -> Answer<'_> {
    match probe {
        Probe::Modern(response) => Answer::Response(response),
        _ => Answer::NotServed,
    }
}

/// What an exchange in a 2025-era session came to.
fn exchanged_response(exchanged: &Exchanged) -> Answer<'_> {
    match exchanged {
        Exchanged::Response(response) => Answer::Response(response),
        _ => Answer::NotServed,
    }
}

/// [`exchanged_response`], or a transport's failure.
fn exchange_answer(exchanged: &Result<Exchanged, TransportError>) -> Answer<'_> {
    match exchanged {
        Ok(e) => exchanged_response(e),
        Err(_) => Answer::Failed,
    }
}
