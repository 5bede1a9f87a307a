//! The flow as values (sans IO): what to send, what came back, what it asks.
//!
//! A flow is in one of three states, each a type whose methods are the only
//! legal next step:
//!
//! ```text
//!  Flow::start ──► Ready ──request(id)──► (Sent, the request to send)
//!                    ▲                      │ on_response(the response)
//!                    │                      ▼
//!                    ├──── Turn::Retry { after, ready }   a state-only round: wait, then send again
//!                    │     Turn::Complete(Completion)     done
//!                    └──── Turn::Ask(Asked) ──answer(responses)──► Ready
//!                                  │
//!                                  └── into_pending() ──► PendingFlow ──Asked::resume──► Asked
//! ```
//!
//! [`Sent::on_response`] checks a round before anything is answered: the id,
//! the `resultType`, the kinds asked against what the client declared, the
//! round cap, the questions per round, the sampling requests per flow and the
//! length of the `requestState`. [`Asked::answer`] checks the answers against
//! what was asked and counts their bytes; [`Ready::request`] counts the bytes
//! of every request. A cap reached ends the flow with a typed
//! [`FlowError`], before anything is answered or sent for the round at fault.
//! Nothing here waits, sends or reads: `mrtr-client`'s `Client` is one loop
//! over these states, and any other runtime can be another.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::capability;
use crate::defaults;
use crate::wire::input::{InputKind, InputResponse, InputResponses};
use crate::wire::jsonrpc::{self, RequestId};
use crate::wire::meta::{ClientCapabilities, Implementation, RequestMeta};
use crate::wire::result::InputRequiredResult;
use crate::wire::{CarrierMethod, InputRequests, JsonObject};

use super::error::{Cap, FlowError};
use super::flow::{CarrierCall, Completion, PendingFlow};

/// What every flow of one client may do, and what it declares: the
/// capabilities and `clientInfo` of its `_meta`, and the caps (each with the
/// default of `mrtr-client`'s `ClientBuilder` setter of that name).
#[derive(Debug, Clone)]
pub struct FlowRules {
    capabilities: ClientCapabilities,
    client_info: Implementation,
    /// `_meta` as sent: made once from the two above.
    meta: Value,
    pub(super) max_rounds: u32,
    pub(super) limits: Limits,
}

/// The caps other than rounds (see [`FlowRules`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    pub(super) questions_per_round: usize,
    pub(super) sampling_per_flow: u32,
    pub(super) answer_bytes: u64,
    pub(super) state_bytes: usize,
    pub(super) upload_bytes: u64,
}

impl FlowRules {
    /// Rules that declare `capabilities`, with `clientInfo` `{name: "mrtr",
    /// version: <crate version>}` and every cap at its default.
    pub fn new(capabilities: ClientCapabilities) -> Self {
        let client_info = Implementation {
            name: "mrtr".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            extra: JsonObject::new(),
        };
        let meta = Self::meta_of(&capabilities, &client_info);
        Self {
            capabilities,
            client_info,
            meta,
            max_rounds: defaults::CLIENT_MAX_ROUNDS,
            limits: Limits {
                questions_per_round: defaults::CLIENT_MAX_QUESTIONS_PER_ROUND,
                sampling_per_flow: defaults::CLIENT_MAX_SAMPLING_PER_FLOW,
                answer_bytes: defaults::CLIENT_MAX_ANSWER_BYTES,
                state_bytes: defaults::CLIENT_MAX_STATE_BYTES,
                upload_bytes: defaults::CLIENT_MAX_UPLOAD_BYTES,
            },
        }
    }

    fn meta_of(capabilities: &ClientCapabilities, client_info: &Implementation) -> Value {
        let mut meta = RequestMeta::new(capabilities.clone());
        meta.client_info = Some(client_info.clone());
        meta.to_value()
    }

    /// `clientInfo` sent in `_meta`.
    pub fn with_client_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.client_info = Implementation {
            name: name.into(),
            version: version.into(),
            extra: JsonObject::new(),
        };
        self.meta = Self::meta_of(&self.capabilities, &self.client_info);
        self
    }

    /// Declares the tasks extension (`io.modelcontextprotocol/tasks`): a
    /// server may then make a `tools/call` a task, which the flow follows
    /// ([`Turn::Task`]).
    #[must_use]
    pub fn with_tasks(self) -> Self {
        let mut capabilities = self.capabilities.clone();
        capabilities
            .extensions
            .get_or_insert_with(JsonObject::new)
            .insert(
                crate::service::TASKS_EXTENSION.into(),
                serde_json::json!({}),
            );
        self.with_capabilities(capabilities)
    }

    /// Whether the rules declare the tasks extension.
    fn declares_tasks(&self) -> bool {
        self.capabilities
            .extensions
            .as_ref()
            .is_some_and(|e| e.contains_key(crate::service::TASKS_EXTENSION))
    }

    /// The capabilities declared (what the flow may be asked).
    pub fn with_capabilities(mut self, capabilities: ClientCapabilities) -> Self {
        self.meta = Self::meta_of(&capabilities, &self.client_info);
        self.capabilities = capabilities;
        self
    }

    /// The most requests one flow may send (values below 1 count as 1).
    pub fn with_max_rounds(mut self, n: u32) -> Self {
        self.max_rounds = n.max(1);
        self
    }

    /// The most questions one round may ask (values below 1 count as 1).
    pub fn with_max_questions_per_round(mut self, n: usize) -> Self {
        self.limits.questions_per_round = n.max(1);
        self
    }

    /// The most sampling requests one flow may ask (0 refuses every one).
    pub fn with_max_sampling_per_flow(mut self, n: u32) -> Self {
        self.limits.sampling_per_flow = n;
        self
    }

    /// The most bytes of answers one flow may send.
    pub fn with_max_answer_bytes(mut self, n: u64) -> Self {
        self.limits.answer_bytes = n;
        self
    }

    /// The longest `requestState` (bytes) echoed.
    pub fn with_max_state_bytes(mut self, n: usize) -> Self {
        self.limits.state_bytes = n;
        self
    }

    /// The most bytes of requests one flow may send.
    pub fn with_max_upload_bytes(mut self, n: u64) -> Self {
        self.limits.upload_bytes = n;
        self
    }

    /// The capabilities every request declares.
    pub fn capabilities(&self) -> &ClientCapabilities {
        &self.capabilities
    }

    /// The `_meta` object every request carries.
    pub fn meta(&self) -> &Value {
        &self.meta
    }

    /// Checks that every input request of `asks` is of a kind the rules
    /// declare ([`Sent::on_response`] runs it on every round; a client that
    /// answers a stored [`PendingFlow`] runs it again).
    ///
    /// # Errors
    /// [`FlowError::UndeclaredInput`] when `asks` holds a kind the rules do
    /// not declare.
    pub fn check_declared(&self, asks: &InputRequests) -> Result<(), FlowError> {
        for (key, ask) in asks {
            if let Some(missing) = capability::missing(&self.capabilities, ask) {
                return Err(FlowError::UndeclaredInput {
                    key: key.clone(),
                    kind: ask.kind(),
                    missing: Box::new(missing),
                });
            }
        }
        Ok(())
    }

    /// Checks [`Cap::QuestionsPerRound`]: how many questions one round may ask.
    ///
    /// # Errors
    /// [`FlowError::CapExceeded`] when `asks` holds more.
    pub fn check_questions(&self, asks: &InputRequests) -> Result<(), FlowError> {
        let limit = self.limits.questions_per_round;
        if asks.len() > limit {
            return Err(FlowError::CapExceeded {
                cap: Cap::QuestionsPerRound,
                limit: limit as u64,
            });
        }
        Ok(())
    }
}

/// What a flow has used so far, carried from round to round (and in a
/// [`PendingFlow`]).
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
    /// Polls of the flow's task.
    polls: u32,
}

/// What every state of a flow holds.
#[derive(Debug, Clone)]
struct Core {
    call: CarrierCall,
    rules: Arc<FlowRules>,
    tally: Tally,
    /// The `requestState` the next request echoes (the last one received).
    state: Option<String>,
    /// The pause before the next state-only retry.
    backoff: Duration,
}

/// The start of a flow: see [the module](crate::client).
#[derive(Debug)]
pub struct Flow(());

impl Flow {
    /// A new flow of `call` under `rules` (shared, e.g. by a client's flows).
    pub fn start(call: CarrierCall, rules: impl Into<Arc<FlowRules>>) -> Ready {
        Ready {
            core: Core {
                call,
                rules: rules.into(),
                tally: Tally::default(),
                state: None,
                backoff: defaults::BACKOFF_INITIAL,
            },
            answers: None,
        }
    }
}

/// A flow whose next request may be made.
#[derive(Debug)]
pub struct Ready {
    core: Core,
    /// The wire form of the answers the next request carries (counted already).
    answers: Option<Value>,
}

/// A flow whose request is out, waiting for the response.
#[derive(Debug)]
pub struct Sent {
    core: Core,
    id: RequestId,
}

/// A flow the server asked for input: answer [`asks`](Self::asks).
#[derive(Debug)]
pub struct Asked {
    core: Core,
    asks: InputRequests,
}

/// What a response means for the flow.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // one value per round; boxing would only add noise
pub enum Turn {
    /// The flow finished.
    Complete(Completion),
    /// A round with a state and no question (load shedding): wait `after`,
    /// then send `ready`'s request.
    Retry {
        /// The pause (it grows from one state-only round to the next).
        after: Duration,
        /// The flow, ready to send again.
        ready: Ready,
    },
    /// The server asks for input.
    Ask(Asked),
    /// The server made the call a task (the tasks extension, when the rules
    /// declare it: [`FlowRules::with_tasks`]): wait [`TaskWait::after`], then
    /// send its request (`tasks/get`, or `tasks/update` with answers).
    Task(TaskWait),
    /// The task asks for input: answer [`TaskAsked::asks`].
    TaskAsk(TaskAsked),
}

/// A task to poll (or to send the answers of): see [`Turn::Task`].
#[derive(Debug)]
pub struct TaskWait {
    core: Core,
    task: String,
    /// The task's poll interval.
    after: Duration,
    /// The answers the next request (`tasks/update`) carries.
    answers: Option<Value>,
    /// Poll at once (the answers were just taken).
    now: bool,
}

/// A task's request out, waiting for the response.
#[derive(Debug)]
pub struct TaskSent {
    core: Core,
    task: String,
    id: RequestId,
    /// Whether it was `tasks/update` (answered by an acknowledgement).
    updating: bool,
    after: Duration,
}

/// A task that asks for input: answer [`asks`](Self::asks), through
/// `tasks/update`.
#[derive(Debug)]
pub struct TaskAsked {
    core: Core,
    task: String,
    asks: InputRequests,
    after: Duration,
}

impl Ready {
    /// The next request, under the JSON-RPC id `id` (unique among the
    /// client's requests): the call's params, `_meta`, the answers (if any) and
    /// the state received last (exactly as received; none when none came).
    ///
    /// # Errors
    /// [`FlowError::CapExceeded`] ([`Cap::UploadBytes`]) when the request
    /// would take the flow over its upload cap: it is not to be sent.
    pub fn request(self, id: RequestId) -> Result<(Sent, Value), FlowError> {
        let Self { mut core, answers } = self;
        let mut params = core.call.params().clone();
        params.insert("_meta".into(), core.rules.meta.clone());
        if let Some(a) = answers {
            params.insert("inputResponses".into(), a);
        }
        if let Some(s) = &core.state {
            params.insert("requestState".into(), Value::String(s.clone()));
        }
        let request = jsonrpc::request(&id, core.call.method().as_str(), Value::Object(params));
        core.count_upload(&request)?;
        core.tally.round += 1;
        Ok((Sent { core, id }, request))
    }

    /// The call this flow drives.
    pub fn call(&self) -> &CarrierCall {
        &self.core.call
    }
}

impl Sent {
    /// The id the request was sent under.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// What `response` (the whole JSON-RPC response to the request) means: the
    /// flow's end, a retry after a pause, or questions to answer. Every check of
    /// the round comes first.
    ///
    /// # Errors
    /// [`FlowError::IdMismatch`], [`FlowError::JsonRpc`],
    /// [`FlowError::Malformed`], [`FlowError::UnknownResultType`],
    /// [`FlowError::UndeclaredInput`], [`FlowError::MaxRounds`] and
    /// [`FlowError::CapExceeded`] (questions, sampling, state).
    pub fn on_response(self, response: Value) -> Result<Turn, FlowError> {
        let Self { mut core, id } = self;
        let round = core.tally.round;
        let irr = match classify(core.call.method(), result_of(response, &id)?)? {
            Outcome::Complete(result) => {
                return Ok(Turn::Complete(Completion {
                    result,
                    rounds: round,
                }));
            }
            // A task only to a client that declared the extension: to any other
            // it is a result type it does not know.
            Outcome::Task(_) if !core.rules.declares_tasks() => {
                return Err(FlowError::UnknownResultType {
                    result_type: "task".into(),
                });
            }
            Outcome::Task(created) => {
                let task = created
                    .get("taskId")
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty() && t.len() <= 256)
                    .ok_or_else(|| FlowError::Malformed("a task without a taskId".into()))?
                    .to_owned();
                let after = created
                    .get("pollIntervalMs")
                    .and_then(Value::as_u64)
                    .map_or(defaults::TASK_POLL_DEFAULT, Duration::from_millis)
                    .clamp(defaults::TASK_POLL_MIN, defaults::TASK_POLL_MAX);
                return Ok(Turn::Task(TaskWait {
                    core,
                    task,
                    after,
                    answers: None,
                    now: false,
                }));
            }
            Outcome::InputRequired(irr) => irr,
        };
        let rules = &core.rules;
        // An undeclared kind first: the server broke Server Requirement 7, and
        // nothing is asked or retried.
        if let Some(asks) = irr.input_requests() {
            rules.check_declared(asks)?;
        }
        if round >= rules.max_rounds {
            return Err(FlowError::MaxRounds { rounds: round });
        }
        // The caps on what a round may ask come before any handler runs (and
        // before a manual caller is shown anything).
        if let Some(asks) = irr.input_requests() {
            rules.check_questions(asks)?;
            core.count_sampling(asks)?;
        }
        if let Some(s) = irr.request_state() {
            core.check_state(s)?;
        }
        // Echo exactly what came this round; nothing when nothing came.
        core.state = irr.request_state().map(str::to_owned);
        match irr.input_requests() {
            None => {
                let after = core.backoff;
                core.backoff = (core.backoff * 2).min(defaults::BACKOFF_MAX);
                Ok(Turn::Retry {
                    after,
                    ready: Ready {
                        core,
                        answers: None,
                    },
                })
            }
            Some(asks) => {
                core.backoff = defaults::BACKOFF_INITIAL;
                let asks = asks.clone();
                Ok(Turn::Ask(Asked { core, asks }))
            }
        }
    }
}

impl TaskWait {
    /// The task's id.
    pub fn task_id(&self) -> &str {
        &self.task
    }

    /// The pause before the next request (none before `tasks/update`, the
    /// task's `pollIntervalMs` before a poll).
    pub fn after(&self) -> Duration {
        if self.answers.is_some() || self.now {
            Duration::ZERO
        } else {
            self.after
        }
    }

    /// The next request, under `id`: `tasks/update` with the answers given,
    /// else `tasks/get`; `_meta` as every request of the flow.
    ///
    /// # Errors
    /// [`FlowError::CapExceeded`] ([`Cap::UploadBytes`]), as [`Ready::request`].
    pub fn request(self, id: RequestId) -> Result<(TaskSent, Value), FlowError> {
        let Self {
            mut core,
            task,
            after,
            answers,
            ..
        } = self;
        let mut params = Map::new();
        params.insert("taskId".into(), task.as_str().into());
        params.insert("_meta".into(), core.rules.meta.clone());
        let updating = answers.is_some();
        if let Some(a) = answers {
            params.insert("inputResponses".into(), a);
        }
        if !updating {
            core.tally.polls += 1;
            if core.tally.polls > defaults::CLIENT_MAX_TASK_POLLS {
                return Err(FlowError::CapExceeded {
                    cap: Cap::TaskPolls,
                    limit: u64::from(defaults::CLIENT_MAX_TASK_POLLS),
                });
            }
        }
        let method = if updating {
            "tasks/update"
        } else {
            "tasks/get"
        };
        let request = jsonrpc::request(&id, method, Value::Object(params));
        core.count_upload(&request)?;
        Ok((
            TaskSent {
                core,
                task,
                id,
                updating,
                after,
            },
            request,
        ))
    }
}

impl TaskSent {
    /// What the response to the task's request means: poll again (the task
    /// works, or the answers were taken), its questions, or its end: its
    /// result, or its error.
    ///
    /// # Errors
    /// As [`Sent::on_response`]; a failed task is its [`FlowError::JsonRpc`];
    /// a cancelled one [`FlowError::TaskCancelled`].
    pub fn on_response(self, response: Value) -> Result<Turn, FlowError> {
        let Self {
            mut core,
            task,
            id,
            updating,
            after,
        } = self;
        let result = result_of(response, &id)?;
        let wait = |core, now| {
            Ok(Turn::Task(TaskWait {
                core,
                task: task.clone(),
                after,
                answers: None,
                now,
            }))
        };
        if updating {
            return wait(core, true);
        }
        match result.get("status").and_then(Value::as_str) {
            Some("working") => wait(core, false),
            Some("input_required") => {
                let asks = result
                    .get("inputRequests")
                    .ok_or_else(|| {
                        FlowError::Malformed("input_required without inputRequests".into())
                    })
                    .and_then(|v| {
                        serde_json::from_value::<InputRequests>(v.clone())
                            .map_err(|e| FlowError::Malformed(format!("inputRequests: {e}")))
                    })?;
                let rules = &core.rules;
                rules.check_declared(&asks)?;
                rules.check_questions(&asks)?;
                core.count_sampling(&asks)?;
                core.tally.round += 1;
                Ok(Turn::TaskAsk(TaskAsked {
                    core,
                    task,
                    asks,
                    after,
                }))
            }
            Some("completed") => match result.get("result") {
                Some(r @ Value::Object(_)) => Ok(Turn::Complete(Completion {
                    result: r.clone(),
                    rounds: core.tally.round,
                })),
                _ => Err(FlowError::Malformed(
                    "a completed task without its result".into(),
                )),
            },
            Some("failed") => {
                let err = result.get("error");
                let code = err.and_then(|e| e.get("code")).and_then(Value::as_i64);
                let message = err.and_then(|e| e.get("message")).and_then(Value::as_str);
                match (code, message) {
                    (Some(code), Some(message)) => Err(FlowError::JsonRpc {
                        code,
                        message: message.to_owned(),
                        data: err.and_then(|e| e.get("data")).cloned(),
                    }),
                    _ => Err(FlowError::Malformed(
                        "a failed task without its error".into(),
                    )),
                }
            }
            Some("cancelled") => Err(FlowError::TaskCancelled),
            _ => Err(FlowError::Malformed(
                "a task's status is missing or unknown".into(),
            )),
        }
    }
}

impl TaskAsked {
    /// The questions, by key, in the server's order.
    pub fn asks(&self) -> &InputRequests {
        &self.asks
    }

    /// How many times the task asked, this time included.
    pub fn round(&self) -> u32 {
        self.core.tally.round
    }

    /// The call this flow drives.
    pub fn call(&self) -> &CarrierCall {
        &self.core.call
    }

    /// The task's id.
    pub fn task_id(&self) -> &str {
        &self.task
    }

    /// The task with `responses` to send (`tasks/update`), as
    /// [`Asked::answer`] checks them.
    ///
    /// # Errors
    /// As [`Asked::answer`].
    pub fn answer(self, responses: InputResponses) -> Result<TaskWait, FlowError> {
        check_answers(&self.asks, &responses)?;
        let Self {
            mut core,
            task,
            after,
            ..
        } = self;
        let answers = core.count_bytes(&responses)?;
        Ok(TaskWait {
            core,
            task,
            after,
            answers: Some(answers),
            now: false,
        })
    }
}

impl Asked {
    /// A flow stopped between rounds (kept, perhaps in another process), under
    /// `rules`: its caps go on from where the pending flow left them.
    pub fn resume(pending: PendingFlow, rules: impl Into<Arc<FlowRules>>) -> Self {
        let call = pending.call();
        Self {
            core: Core {
                call,
                rules: rules.into(),
                tally: Tally {
                    round: pending.round,
                    sampling: pending.sampling_asked,
                    bytes: pending.bytes_answered,
                    uploaded: pending.bytes_uploaded,
                    polls: 0,
                },
                state: pending.request_state,
                backoff: defaults::BACKOFF_INITIAL,
            },
            asks: pending.input_requests,
        }
    }

    /// The questions, by key, in the server's order.
    pub fn asks(&self) -> &InputRequests {
        &self.asks
    }

    /// The round that asked them (1 for the first request).
    pub fn round(&self) -> u32 {
        self.core.tally.round
    }

    /// The call this flow drives.
    pub fn call(&self) -> &CarrierCall {
        &self.core.call
    }

    /// The rules the flow runs under.
    pub fn rules(&self) -> &FlowRules {
        &self.core.rules
    }

    /// The flow as a value to keep and [`resume`](Self::resume) later.
    pub fn into_pending(self) -> PendingFlow {
        let Self { core, asks } = self;
        PendingFlow {
            method: core.call.method(),
            params: core.call.params().clone(),
            request_state: core.state,
            input_requests: asks,
            round: core.tally.round,
            sampling_asked: core.tally.sampling,
            bytes_answered: core.tally.bytes,
            bytes_uploaded: core.tally.uploaded,
        }
    }

    /// The flow with `responses` to send: one per question, of the kind asked.
    ///
    /// # Errors
    /// [`FlowError::AnswerMismatch`] when `responses` does not answer exactly
    /// the questions with the asked kinds; [`FlowError::CapExceeded`]
    /// ([`Cap::AnswerBytes`]) when they would take the flow over its answer cap.
    /// Nothing is to be sent then.
    pub fn answer(self, responses: InputResponses) -> Result<Ready, FlowError> {
        check_answers(&self.asks, &responses)?;
        let Self { mut core, .. } = self;
        let answers = core.count_bytes(&responses)?;
        Ok(Ready {
            core,
            answers: Some(answers),
        })
    }
}

impl Core {
    /// [`Cap::SamplingPerFlow`]: adds this round's sampling requests to the tally.
    fn count_sampling(&mut self, asks: &InputRequests) -> Result<(), FlowError> {
        let limit = self.rules.limits.sampling_per_flow;
        let asked = asks
            .values()
            .filter(|a| a.kind() == InputKind::Sampling)
            .count();
        let total = u32::try_from(asked)
            .ok()
            .and_then(|n| self.tally.sampling.checked_add(n))
            .filter(|&n| n <= limit);
        match total {
            Some(n) => {
                self.tally.sampling = n;
                Ok(())
            }
            None => Err(FlowError::CapExceeded {
                cap: Cap::SamplingPerFlow,
                limit: u64::from(limit),
            }),
        }
    }

    /// [`Cap::StateBytes`]: the longest `requestState` echoed.
    fn check_state(&self, state: &str) -> Result<(), FlowError> {
        let limit = self.rules.limits.state_bytes;
        if state.len() > limit {
            return Err(FlowError::CapExceeded {
                cap: Cap::StateBytes,
                limit: limit as u64,
            });
        }
        Ok(())
    }

    /// [`Cap::UploadBytes`]: adds the size of `request` (serialized) to the tally
    /// within the cap.
    fn count_upload(&mut self, request: &Value) -> Result<(), FlowError> {
        let limit = self.rules.limits.upload_bytes;
        let mut size = ByteCount(0);
        // Counted as serialized, without building the bytes (the transport does).
        let size = serde_json::to_writer(&mut size, request).map_or(u64::MAX, |()| size.0);
        match self
            .tally
            .uploaded
            .checked_add(size)
            .filter(|&n| n <= limit)
        {
            Some(n) => {
                self.tally.uploaded = n;
                Ok(())
            }
            None => Err(FlowError::CapExceeded {
                cap: Cap::UploadBytes,
                limit,
            }),
        }
    }

    /// [`Cap::AnswerBytes`]: the wire form of `responses`, once its size is added
    /// to the tally within the cap.
    fn count_bytes(&mut self, responses: &InputResponses) -> Result<Value, FlowError> {
        let limit = self.rules.limits.answer_bytes;
        let m: Map<String, Value> = responses
            .iter()
            .map(|(k, v)| (k.clone(), v.to_value()))
            .collect();
        let value = Value::Object(m);
        let size = serde_json::to_vec(&value).map_or(u64::MAX, |b| b.len() as u64);
        match self.tally.bytes.checked_add(size).filter(|&n| n <= limit) {
            Some(n) => {
                self.tally.bytes = n;
                Ok(value)
            }
            None => Err(FlowError::CapExceeded {
                cap: Cap::AnswerBytes,
                limit,
            }),
        }
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

/// `responses` must answer exactly the keys of `asks`, each with the asked kind.
fn check_answers(asks: &InputRequests, responses: &InputResponses) -> Result<(), FlowError> {
    for (key, ask) in asks {
        let Some(answer) = responses.get(key) else {
            return Err(FlowError::AnswerMismatch {
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
            return Err(FlowError::AnswerMismatch {
                key: key.clone(),
                reason: format!(
                    "the answer is not of the asked kind ({})",
                    ask.kind().as_str()
                ),
            });
        }
    }
    if let Some(extra) = responses.keys().find(|k| !asks.contains_key(*k)) {
        return Err(FlowError::AnswerMismatch {
            key: extra.clone(),
            reason: "no such input request".into(),
        });
    }
    Ok(())
}

enum Outcome {
    Complete(Value),
    InputRequired(InputRequiredResult),
    /// A `CreateTaskResult` (the tasks extension).
    Task(Value),
}

/// Extracts `result` from a JSON-RPC response to the request with `id`.
///
/// # Errors
/// [`FlowError::IdMismatch`] for a response to another id,
/// [`FlowError::JsonRpc`] for an error response, [`FlowError::Malformed`]
/// for anything that is not a JSON-RPC response.
pub fn result_of(response: Value, id: &RequestId) -> Result<Value, FlowError> {
    let Value::Object(mut o) = response else {
        return Err(FlowError::Malformed(
            "a JSON-RPC response must be an object".into(),
        ));
    };
    // An error response may carry `null` (or no id) when the server could not
    // read the request's id (JSON-RPC 2.0 §5); any other id is someone else's.
    let received = o.get("id").cloned().unwrap_or(Value::Null);
    let unread_id = o.contains_key("error") && received.is_null();
    if received != id.to_value() && !unread_id {
        return Err(FlowError::IdMismatch {
            expected: id.clone(),
            received,
        });
    }
    if let Some(err) = o.remove("error") {
        let code = err.get("code").and_then(Value::as_i64);
        let message = err.get("message").and_then(Value::as_str);
        return match (code, message) {
            (Some(code), Some(message)) => Err(FlowError::JsonRpc {
                code,
                message: message.to_owned(),
                data: err.get("data").cloned(),
            }),
            _ => Err(FlowError::Malformed(
                "a JSON-RPC error needs an integer code and a string message".into(),
            )),
        };
    }
    match o.remove("result") {
        Some(r @ Value::Object(_)) => Ok(r),
        Some(_) => Err(FlowError::Malformed("result must be an object".into())),
        None => Err(FlowError::Malformed(
            "a JSON-RPC response needs result or error".into(),
        )),
    }
}

fn classify(method: CarrierMethod, result: Value) -> Result<Outcome, FlowError> {
    match result.get("resultType") {
        // Absent means complete (servers of earlier versions; MCP 2026-07-28, Base Protocol §Result Responses).
        None => Ok(Outcome::Complete(result)),
        Some(Value::String(t)) => match t.as_str() {
            "complete" => Ok(Outcome::Complete(result)),
            "task" if method == CarrierMethod::ToolsCall => Ok(Outcome::Task(result)),
            "input_required" => InputRequiredResult::from_value(method, &result)
                .map(Outcome::InputRequired)
                .map_err(|e| FlowError::Malformed(format!("InputRequiredResult: {}", e.message()))),
            other => Err(FlowError::UnknownResultType {
                result_type: other.to_owned(),
            }),
        },
        Some(_) => Err(FlowError::Malformed("resultType must be a string".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rules() -> FlowRules {
        let caps: ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {"form": {}}})).unwrap();
        FlowRules::new(caps).with_max_rounds(3)
    }

    fn ask(state: &str) -> Value {
        json!({"resultType": "input_required", "requestState": state, "inputRequests": {
            "ok": {"method": "elicitation/create", "params": {"mode": "form", "message": "Sure?",
              "requestedSchema": {"type": "object", "properties": {"yes": {"type": "boolean"}}}}}}})
    }

    fn reply(id: i64, result: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "result": result})
    }

    fn yes() -> InputResponses {
        serde_json::from_value(json!({"ok": {"action": "accept", "content": {"yes": true}}}))
            .unwrap()
    }

    #[test]
    fn a_flow_is_driven_by_values_alone() {
        let ready = Flow::start(CarrierCall::tool("deploy", json!({"env": "prod"})), rules());
        let (sent, first) = ready.request(RequestId::from(1)).unwrap();
        assert_eq!(first["params"]["arguments"]["env"], "prod");
        assert!(first["params"].get("requestState").is_none());
        assert!(first["params"]["_meta"].is_object());
        let Turn::Ask(asked) = sent.on_response(reply(1, ask("s1"))).unwrap() else {
            panic!("no question")
        };
        assert_eq!(asked.round(), 1);
        assert_eq!(asked.asks().keys().collect::<Vec<_>>(), ["ok"]);
        // Kept and resumed as a value, in another "process".
        let pending = asked.into_pending();
        let asked = Asked::resume(pending, rules());
        let ready = asked.answer(yes()).unwrap();
        let (sent, retry) = ready.request(RequestId::from(2)).unwrap();
        assert_eq!(retry["params"]["requestState"], "s1");
        assert_eq!(retry["params"]["inputResponses"]["ok"]["action"], "accept");
        // A state-only round: a pause, then the same call with the new state.
        let Turn::Retry { after, ready } = sent
            .on_response(reply(
                2,
                json!({"resultType": "input_required", "requestState": "s2"}),
            ))
            .unwrap()
        else {
            panic!("no retry")
        };
        assert_eq!(after, defaults::BACKOFF_INITIAL);
        let (sent, third) = ready.request(RequestId::from(3)).unwrap();
        assert_eq!(third["params"]["requestState"], "s2");
        assert!(third["params"].get("inputResponses").is_none());
        // The round cap (3): a third round that asks again ends the flow.
        let e = sent.on_response(reply(3, ask("s3"))).unwrap_err();
        assert!(matches!(e, FlowError::MaxRounds { rounds: 3 }), "{e:?}");
    }

    #[test]
    fn every_check_comes_before_anything_is_answered() {
        let start = || Flow::start(CarrierCall::tool("t", Value::Null), rules());
        let sent = || start().request(RequestId::from(7)).unwrap().0;
        let e = sent().on_response(reply(8, json!({}))).unwrap_err();
        assert!(matches!(e, FlowError::IdMismatch { .. }), "{e:?}");
        let roots = json!({"resultType": "input_required", "inputRequests": {
            "r": {"method": "roots/list"}}});
        let e = sent().on_response(reply(7, roots)).unwrap_err();
        assert!(matches!(e, FlowError::UndeclaredInput { .. }), "{e:?}");
        let long = "x".repeat(defaults::CLIENT_MAX_STATE_BYTES + 1);
        let e = sent().on_response(reply(7, ask(&long))).unwrap_err();
        assert!(
            matches!(
                e,
                FlowError::CapExceeded {
                    cap: Cap::StateBytes,
                    ..
                }
            ),
            "{e:?}"
        );
        let e = sent()
            .on_response(reply(7, json!({"resultType": "later"})))
            .unwrap_err();
        assert!(matches!(e, FlowError::UnknownResultType { .. }), "{e:?}");
        // Answers must answer exactly what was asked.
        let Turn::Ask(asked) = sent().on_response(reply(7, ask("s"))).unwrap() else {
            panic!()
        };
        let wrong: InputResponses =
            serde_json::from_value(json!({"other": {"action": "cancel"}})).unwrap();
        let e = asked.answer(wrong).unwrap_err();
        assert!(matches!(e, FlowError::AnswerMismatch { .. }), "{e:?}");
        // An upload cap too small for the first request: nothing to send.
        let tiny = rules().with_max_upload_bytes(10);
        let e = Flow::start(CarrierCall::tool("t", Value::Null), tiny)
            .request(RequestId::from(1))
            .unwrap_err();
        assert!(
            matches!(
                e,
                FlowError::CapExceeded {
                    cap: Cap::UploadBytes,
                    ..
                }
            ),
            "{e:?}"
        );
    }

    #[test]
    fn a_task_is_followed_to_its_end_and_its_questions_answered_by_tasks_update() {
        let with_tasks = rules().with_tasks();
        assert!(
            with_tasks.meta()["io.modelcontextprotocol/clientCapabilities"]["extensions"]
                [crate::service::TASKS_EXTENSION]
                .is_object()
        );
        let (sent, _) = Flow::start(CarrierCall::tool("long", json!({})), with_tasks)
            .request(RequestId::from(1))
            .unwrap();
        let created = json!({"resultType": "task", "taskId": "t1", "status": "working",
            "pollIntervalMs": 5});
        let Turn::Task(wait) = sent.on_response(reply(1, created)).unwrap() else {
            panic!("a task")
        };
        // The server's interval, within the floor.
        assert_eq!(wait.after(), defaults::TASK_POLL_MIN);
        let (sent, poll) = wait.request(RequestId::from(2)).unwrap();
        assert_eq!(poll["method"], "tasks/get");
        assert_eq!(poll["params"]["taskId"], "t1");
        let asking = json!({"resultType": "complete", "taskId": "t1", "status": "input_required",
            "inputRequests": ask("unused")["inputRequests"].clone()});
        let Turn::TaskAsk(asked) = sent.on_response(reply(2, asking)).unwrap() else {
            panic!("its question")
        };
        assert_eq!(asked.asks().keys().collect::<Vec<_>>(), ["ok"]);
        let wait = asked.answer(yes()).unwrap();
        assert_eq!(wait.after(), Duration::ZERO);
        let (sent, update) = wait.request(RequestId::from(3)).unwrap();
        assert_eq!(update["method"], "tasks/update");
        assert_eq!(update["params"]["inputResponses"]["ok"]["action"], "accept");
        assert!(update["params"].get("requestState").is_none());
        let Turn::Task(wait) = sent
            .on_response(reply(3, json!({"resultType": "complete"})))
            .unwrap()
        else {
            panic!("poll again")
        };
        assert_eq!(wait.after(), Duration::ZERO, "at once after the answers");
        let (sent, _) = wait.request(RequestId::from(4)).unwrap();
        let working = json!({"resultType": "complete", "taskId": "t1", "status": "working"});
        let Turn::Task(wait) = sent.on_response(reply(4, working)).unwrap() else {
            panic!("still working")
        };
        assert_eq!(
            wait.after(),
            defaults::TASK_POLL_MIN,
            "then at the interval again"
        );
        let (sent, _) = wait.request(RequestId::from(5)).unwrap();
        let done = json!({"resultType": "complete", "taskId": "t1", "status": "completed",
            "result": {"content": [{"type": "text", "text": "done"}]}});
        let Turn::Complete(c) = sent.on_response(reply(5, done)).unwrap() else {
            panic!("the end")
        };
        assert_eq!(c.text(), "done");
        // A failed task is its error; a cancelled one says so; an unknown status is refused.
        for (status, extra, want) in [
            (
                "failed",
                json!({"error": {"code": -32603, "message": "boom"}}),
                "json-rpc error -32603: boom",
            ),
            ("cancelled", json!({}), "the task was cancelled"),
            ("lost", json!({}), "unknown"),
        ] {
            let (sent, _) = Flow::start(CarrierCall::tool("long", json!({})), rules().with_tasks())
                .request(RequestId::from(1))
                .unwrap();
            let Turn::Task(wait) = sent
                .on_response(reply(
                    1,
                    json!({"resultType": "task", "taskId": "t", "status": "working"}),
                ))
                .unwrap()
            else {
                panic!()
            };
            let (sent, _) = wait.request(RequestId::from(2)).unwrap();
            let mut r = json!({"resultType": "complete", "taskId": "t", "status": status});
            for (k, v) in extra.as_object().unwrap() {
                r[k] = v.clone();
            }
            let e = sent.on_response(reply(2, r)).unwrap_err();
            assert!(e.to_string().contains(want), "{status}: {e}");
        }
    }
}
