//! One run of a handler: answers in, questions out.

use std::collections::HashMap;

use indexmap::IndexMap;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::ask::{Elicited, Fields, Form, RootsAsk, Sampling, UrlVisit};
use super::state::{Asked, FlowState, SealedAnswer, question_digest};
use super::{AnswerPolicy, Engine, Outcome};
use crate::answers::validate_content;
use crate::capability::{self, Necessity};
use crate::carrier::{CarrierMethod, CarrierRequest};
use crate::error::{Error, Retry, ToolAdvice, code};
use crate::seal::{Binding, Claims, SealError, Verified};
use crate::time::Timestamp;
use crate::wire::input::{ElicitAction, ElicitParams, InputResponse};
use crate::wire::{
    ClientCapabilities, CreateMessageResult, InputKind, InputRequest, InputRequests,
    InputRequiredResult, JsonObject, Root,
};

/// Why a handler stopped before producing a result. Handlers return it with `?`.
#[derive(Debug, Clone)]
pub enum Flow {
    /// Some answer is missing: the questions recorded so far go out in one
    /// `InputRequiredResult`. Produced by the ask methods of [`Round`].
    Suspend,
    /// Ask for a retry without questions (a state-only `InputRequiredResult`, e.g.
    /// to shed load); the answers so far are sealed into the state.
    StateOnly,
    /// The request fails (a tool error on `tools/call` when the error carries
    /// model-facing advice, else a JSON-RPC error).
    Fail(Error),
}

impl From<Error> for Flow {
    fn from(e: Error) -> Self {
        Self::Fail(e)
    }
}

impl Flow {
    /// A failure the model can act on: a tool error on `tools/call`, a -32602
    /// JSON-RPC error on the other carriers. `what` must not hold secrets.
    pub fn failed(advice: ToolAdvice) -> Self {
        let detail = format!("handler failure: {}", advice.text());
        Self::Fail(Error::tool_failure(
            advice,
            code::INVALID_PARAMS,
            "handler",
            detail,
        ))
    }
}

#[derive(Debug, Clone)]
struct PendingAsk {
    request: InputRequest,
    digest: String,
    note: Option<String>,
}

/// One run of a handler. Ask with [`Round::elicit`], [`Round::sample`],
/// [`Round::roots`] and friends; each returns the answer when there is one and
/// `Err(Flow::Suspend)` otherwise, after recording the question. Call several
/// before the first `?` to batch them into one round.
#[derive(Debug)]
pub struct Round<'e> {
    engine: &'e Engine,
    request: CarrierRequest,
    binding: Binding,
    now: Timestamp,
    prior: Option<Verified<Claims<FlowState>>>,
    carry: FlowState,
    seen: HashMap<String, String>,
    pending: IndexMap<String, PendingAsk>,
    missing_caps: Option<ClientCapabilities>,
}

impl<'e> Round<'e> {
    pub(super) fn new(
        engine: &'e Engine,
        request: CarrierRequest,
        binding: Binding,
        prior: Option<Verified<Claims<FlowState>>>,
        now: Timestamp,
    ) -> Self {
        let carry = FlowState {
            data: prior.as_ref().and_then(|p| p.state().data.clone()),
            ..FlowState::default()
        };
        Self {
            engine,
            request,
            binding,
            now,
            prior,
            carry,
            seen: HashMap::new(),
            pending: IndexMap::new(),
            missing_caps: None,
        }
    }

    /// The carrier method.
    pub fn method(&self) -> CarrierMethod {
        self.request.method
    }

    /// The tool or prompt name, or the resource URI.
    pub fn target(&self) -> &str {
        &self.request.target
    }

    /// The request's arguments (empty when none were sent).
    pub fn arguments(&self) -> JsonObject {
        self.request.arguments.clone().unwrap_or_default()
    }

    /// One argument.
    pub fn argument(&self, name: &str) -> Option<&Value> {
        self.request.arguments.as_ref()?.get(name)
    }

    /// The capabilities the client declared in this request.
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.request.meta.client_capabilities
    }

    /// Which round this is: 1 for a request without state, then 2, 3, ...
    pub fn number(&self) -> u32 {
        self.prior
            .as_ref()
            .map_or(1, |p| p.round().saturating_add(1))
    }

    /// The current time, as passed to [`Engine::begin`].
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// Asks a form elicitation (or returns its answer).
    ///
    /// # Errors
    /// `Flow::Suspend` when the answer is not there yet (the question is recorded).
    pub fn elicit(&mut self, key: &str, form: Form) -> Result<Elicited, Flow> {
        let req = form.to_request();
        self.elicitation(key, req, form.necessity(), form.is_issued_only())
    }

    /// Asks a URL-mode elicitation (or returns its answer). `Accepted` means the
    /// user agreed to open the page, not that they finished there.
    ///
    /// # Errors
    /// `Flow::Suspend` when the answer is not there yet.
    pub fn visit(&mut self, key: &str, visit: UrlVisit) -> Result<Elicited, Flow> {
        let req = visit.to_request();
        self.elicitation(key, req, visit.necessity(), false)
    }

    fn elicitation(
        &mut self,
        key: &str,
        req: InputRequest,
        necessity: Necessity,
        issued_only: bool,
    ) -> Result<Elicited, Flow> {
        match self.answer(key, req, necessity, issued_only)? {
            None => Ok(Elicited::Unavailable),
            Some(InputResponse::Elicit(e)) => Ok(match e.action {
                ElicitAction::Accept => {
                    Elicited::Accepted(Fields::new(e.content.unwrap_or_default()))
                }
                ElicitAction::Decline => Elicited::Declined,
                ElicitAction::Cancel => Elicited::Cancelled,
            }),
            Some(_) => Err(Flow::Fail(Error::internal(
                "answer of another kind passed the kind check",
            ))),
        }
    }

    /// Asks the client's model (or returns its answer). `None` only for an
    /// optional ask the client cannot serve.
    ///
    /// # Errors
    /// `Flow::Suspend` when the answer is not there yet.
    pub fn sample(
        &mut self,
        key: &str,
        sampling: Sampling,
    ) -> Result<Option<CreateMessageResult>, Flow> {
        let req = sampling.to_request();
        match self.answer(key, req, sampling.necessity(), false)? {
            None => Ok(None),
            Some(InputResponse::CreateMessage(m)) => Ok(Some(m)),
            Some(_) => Err(Flow::Fail(Error::internal(
                "answer of another kind passed the kind check",
            ))),
        }
    }

    /// Asks for the client's roots (or returns them). `None` only for an optional
    /// ask the client cannot serve.
    ///
    /// # Errors
    /// `Flow::Suspend` when the answer is not there yet.
    pub fn roots(&mut self, key: &str, ask: RootsAsk) -> Result<Option<Vec<Root>>, Flow> {
        match self.answer(key, ask.to_request(), ask.necessity(), false)? {
            None => Ok(None),
            Some(InputResponse::ListRoots(r)) => Ok(Some(r.roots)),
            Some(_) => Err(Flow::Fail(Error::internal(
                "answer of another kind passed the kind check",
            ))),
        }
    }

    /// The handler's data carried from the previous round, if any.
    pub fn data<T: DeserializeOwned>(&self) -> Option<T> {
        self.carry
            .data
            .clone()
            .and_then(|v| serde_json::from_value(v).ok())
    }

    /// Stores data to carry into the next round (sealed with the state).
    ///
    /// # Errors
    /// -32603 when `value` cannot be serialized.
    pub fn set_data<T: Serialize>(&mut self, value: &T) -> Result<(), Error> {
        let v = serde_json::to_value(value)
            .map_err(|e| Error::internal(format!("handler data: {e}")))?;
        self.carry.data = Some(v);
        Ok(())
    }

    /// Runs a side effect at most once per flow: on later rounds its sealed result
    /// is returned without running it again. With an engine replay guard, a
    /// replayed `requestState` cannot run it a second time either (the replay
    /// gets a tool error instead).
    ///
    /// # Errors
    /// The step's own error, or a replay refusal.
    pub fn once<T, F>(&mut self, step: &str, f: F) -> Result<T, Flow>
    where
        T: Serialize + DeserializeOwned,
        F: FnOnce() -> Result<T, Error>,
    {
        if let Some(v) = self
            .prior
            .as_ref()
            .and_then(|p| p.state().once.get(step))
            .cloned()
        {
            let t = serde_json::from_value(v.clone()).map_err(|_| {
                Error::internal(format!(
                    "sealed result of step {step:?} does not fit its type"
                ))
            })?;
            self.carry.once.insert(step.to_owned(), v);
            return Ok(t);
        }
        if let (Some(prior), Some(guard)) = (self.prior.as_ref(), self.engine.replay.as_ref()) {
            let skew = self.engine.sealer.config().clock_skew_value().as_secs();
            if !guard.claim(
                prior.flow_id(),
                step,
                prior.deadline().add_secs(skew),
                self.now,
            ) {
                return Err(Flow::Fail(Error::tool_failure(
                    ToolAdvice::new("This step was already carried out for this request", Retry::DoesNotHelp)
                        .instead("Call the tool again to start a new request if the action should really be repeated"),
                    code::INVALID_PARAMS,
                    "replay",
                    format!("once-step {step:?} claimed before: replayed requestState"),
                )));
            }
        }
        let t = f().map_err(Flow::Fail)?;
        let v =
            serde_json::to_value(&t).map_err(|e| Error::internal(format!("step result: {e}")))?;
        self.carry.once.insert(step.to_owned(), v);
        Ok(t)
    }

    /// Looks up the answer for `key`, or records the question.
    fn answer(
        &mut self,
        key: &str,
        request: InputRequest,
        necessity: Necessity,
        issued_only: bool,
    ) -> Result<Option<InputResponse>, Flow> {
        let digest = question_digest(&request);
        match self.seen.get(key) {
            Some(d) if *d != digest => {
                return Err(Flow::Fail(Error::internal(format!(
                    "handler asked key {key:?} twice with different questions in one round"
                ))));
            }
            _ => {
                self.seen.insert(key.to_owned(), digest.clone());
            }
        }
        let kind = request.kind();
        let mut note = None;
        // 1. an answer sealed by an earlier round, for this very question
        if let Some(a) = self.prior.as_ref().and_then(|p| p.state().answers.get(key)) {
            if a.kind == kind
                && a.digest == digest
                && let Ok(resp) = InputResponse::parse_as(kind, &a.value)
            {
                self.carry.answers.insert(key.to_owned(), a.clone());
                return Ok(Some(resp));
            }
            note =
                Some("The question changed since it was answered; please answer again.".to_owned());
        }
        // 2. an answer in this retry's inputResponses
        if let Some(v) = self
            .request
            .input_responses
            .as_ref()
            .and_then(|r| r.get(key))
        {
            let asked = self.prior.as_ref().and_then(|p| p.state().asked.get(key));
            let eligible = match asked {
                Some(q) => q.kind == kind && q.digest == digest,
                None => self.engine.policy == AnswerPolicy::Lenient && !issued_only,
            };
            if asked.is_some() && !eligible {
                note = Some(
                    "The question changed since it was asked; please answer again.".to_owned(),
                );
            }
            if eligible {
                match accept(kind, &request, v) {
                    Ok((resp, value)) => {
                        self.carry.answers.insert(
                            key.to_owned(),
                            SealedAnswer {
                                kind,
                                digest,
                                value,
                            },
                        );
                        return Ok(Some(resp));
                    }
                    Err(n) => note = Some(n),
                }
            }
        }
        // 3. no usable answer: the question must go out, if this request's declared
        // capabilities allow it (an answer already in hand needs no capability: nothing
        // is sent for it).
        if let Some(m) = capability::missing(&self.request.meta.client_capabilities, &request) {
            return match necessity {
                Necessity::Optional => Ok(None),
                Necessity::Required => {
                    let acc = self
                        .missing_caps
                        .get_or_insert_with(ClientCapabilities::default);
                    capability::merge(acc, m);
                    Err(Flow::Suspend)
                }
            };
        }
        self.pending.insert(
            key.to_owned(),
            PendingAsk {
                request,
                digest,
                note,
            },
        );
        Err(Flow::Suspend)
    }

    /// Ends the round with the handler's result.
    pub fn finish(self, result: Result<Value, Flow>) -> Outcome {
        let method = self.request.method;
        if let Some(m) = &self.missing_caps {
            return Outcome::Protocol(Error::missing_capabilities(m));
        }
        match result {
            Ok(Value::Object(mut o)) => {
                o.insert("resultType".into(), "complete".into());
                Outcome::Complete(Value::Object(o))
            }
            Ok(_) => Outcome::Protocol(Error::internal("handler result is not a JSON object")),
            Err(Flow::Fail(e)) => Outcome::from_error(Some(method), e),
            Err(Flow::Suspend) if self.pending.is_empty() => {
                Outcome::Protocol(Error::internal("handler suspended without asking anything"))
            }
            Err(Flow::Suspend | Flow::StateOnly) => self.suspend(method),
        }
    }

    fn suspend(mut self, method: CarrierMethod) -> Outcome {
        let engine = self.engine;
        let issued = self.prior.as_ref().map_or(0, |p| p.round());
        if issued >= engine.max_rounds {
            let e = engine.limit_error(
                "This request needed more rounds of questions than the server allows",
                format!("max rounds {} reached", engine.max_rounds),
            );
            return Outcome::from_error(Some(method), e);
        }
        if self.pending.len() > engine.max_asks {
            let e = engine.limit_error(
                "This request asked more questions at once than the server allows",
                format!(
                    "{} asks in one round, max {}",
                    self.pending.len(),
                    engine.max_asks
                ),
            );
            return Outcome::from_error(Some(method), e);
        }
        let mut requests = InputRequests::new();
        for (key, ask) in &self.pending {
            self.carry.asked.insert(
                key.clone(),
                Asked {
                    kind: ask.request.kind(),
                    digest: ask.digest.clone(),
                },
            );
            let mut req = ask.request.clone();
            if let (Some(note), InputRequest::Elicit(p)) = (&ask.note, &mut req) {
                let msg = match p {
                    ElicitParams::Form(f) => &mut f.message,
                    ElicitParams::Url(u) => &mut u.message,
                };
                msg.push_str("\n\n");
                msg.push_str(note);
            }
            requests.insert(key.clone(), req);
        }
        let config = engine.sealer.config();
        let state = std::mem::take(&mut self.carry);
        let claims = match &self.prior {
            None => Claims::first_round(self.binding, self.now, config, state),
            Some(p) => Claims::next_round(p, self.now, config, state),
        };
        let token = match engine.sealer.seal(&claims) {
            Ok(t) => t,
            // The state holds the client's answers, so a client can push it over the size
            // limit (a long free-text field): a limit like max rounds, not a server fault.
            Err(e @ (SealError::TooLarge { .. } | SealError::TokenTooLong { .. })) => {
                let e = engine.limit_error(
                    "The answers gathered so far are too large to carry into the next round",
                    format!("sealing requestState: {e}"),
                );
                return Outcome::from_error(Some(method), e);
            }
            Err(e) => {
                return Outcome::Protocol(Error::internal(format!(
                    "sealing requestState failed: {e}"
                )));
            }
        };
        match InputRequiredResult::new(method, requests, Some(token)) {
            Ok(irr) => Outcome::InputRequired(irr),
            Err(e) => Outcome::Protocol(Error::internal(format!(
                "building InputRequiredResult: {e}"
            ))),
        }
    }
}

/// Checks a fresh answer against the question: the kind must match and an
/// accepted form's content must validate. Returns the parsed answer and the
/// value to seal (content reduced to the declared fields), or a note for the re-ask.
fn accept(
    kind: InputKind,
    request: &InputRequest,
    v: &Value,
) -> Result<(InputResponse, Value), String> {
    let resp = InputResponse::parse_as(kind, v).map_err(|_| {
        "The previous answer was not in the expected format; please answer again.".to_owned()
    })?;
    let resp = match (resp, request) {
        (InputResponse::Elicit(mut e), InputRequest::Elicit(ElicitParams::Form(f))) => {
            if e.action == ElicitAction::Accept {
                let content = e.content.clone().unwrap_or_default();
                let kept = validate_content(&f.requested_schema, &content).map_err(|problems| {
                    let list: Vec<String> = problems.iter().map(ToString::to_string).collect();
                    format!("Please correct: {}.", list.join("; "))
                })?;
                e.content = Some(kept);
            } else {
                e.content = None;
            }
            InputResponse::Elicit(e)
        }
        (InputResponse::Elicit(mut e), InputRequest::Elicit(ElicitParams::Url(_))) => {
            e.content = None;
            InputResponse::Elicit(e)
        }
        (r, _) => r,
    };
    let value = resp.to_value();
    Ok((resp, value))
}
