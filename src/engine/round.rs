//! One run of a handler: answers in, questions out.

use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::ask::{Confirmation, Elicited, Fields, Form, FormAnswer, RootsAsk, Sampling, UrlVisit};
use super::state::{FlowState, QuestionDigest};
use super::{AnswerPolicy, Engine, LogLevel, Notifier};
use crate::answers::validate_content;
use crate::capability::{self, Decision, Necessity};
use crate::error::{Error, Fallback, Retry, ToolAdvice};
use crate::seal::{Binding, Claims, Verified};
use crate::time::Timestamp;
use crate::wire::TraceParent;
use crate::wire::input::{ElicitAction, ElicitParams, ElicitResult, InputResponse};
use crate::wire::{CarrierMethod, CarrierRequest};
use crate::wire::{
    ClientCapabilities, CreateMessageResult, InputKind, InputRequest, JsonObject, Root,
};

/// Why a handler stopped before producing a result. Handlers return it with `?`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Flow {
    /// Some answer is missing: the questions recorded so far go out in one
    /// `InputRequiredResult`. Only the ask methods of [`Round`] produce it (the
    /// [`Unanswered`] inside cannot be made elsewhere), so a handler cannot
    /// suspend a round that asked nothing:
    ///
    /// ```compile_fail,E0423
    /// # use mrtr::{Flow, Round, ToolResult};
    /// fn handler(_round: Round) -> Result<ToolResult, Flow> {
    ///     // The proof's field is private: only an ask makes one.
    ///     Err(Flow::Suspend(mrtr::engine::Unanswered(())))
    /// }
    /// ```
    Suspend(Unanswered),
    /// Ask for a retry without questions (a state-only `InputRequiredResult`, e.g.
    /// to shed load); the answers so far are sealed into the state.
    StateOnly,
    /// The request fails, on the channel [`crate::error::channel`] picks (a tool
    /// error on `tools/call` when the error carries model-facing advice, else a
    /// JSON-RPC error).
    Fail(Error),
}

/// The proof inside [`Flow::Suspend`] that the round recorded a question it has
/// no answer for. Only the crate's asks make one.
#[derive(Debug, Clone)]
pub struct Unanswered(());

impl Unanswered {
    /// A question was just recorded.
    fn recorded() -> Flow {
        Flow::Suspend(Self(()))
    }
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
            Fallback::InvalidParams,
            "handler",
            detail,
        ))
    }
}

#[derive(Debug, Clone)]
pub(super) struct PendingAsk {
    pub(super) request: InputRequest,
    pub(super) necessity: Necessity,
    pub(super) digest: QuestionDigest,
    pub(super) note: Option<String>,
}

/// An answer a round took, to seal into the next state if there is one. Its key
/// is the round's `seen` entry at `at`.
#[derive(Debug)]
pub(super) enum Answered {
    /// As the previous round's state sealed it under this key.
    Sealed { at: usize },
    /// From this retry's `inputResponses`, accepted for this question.
    Fresh {
        at: usize,
        kind: InputKind,
        digest: QuestionDigest,
        request: Box<InputRequest>,
    },
}

/// What a round knows from the start and never changes: the engine, the request,
/// its binding, the time, and the verified state of the previous round.
#[derive(Debug)]
pub(super) struct Fixed {
    pub(super) engine: Engine,
    pub(super) request: CarrierRequest,
    pub(super) binding: Binding,
    pub(super) now: Timestamp,
    pub(super) prior: Option<Verified<Claims<FlowState>>>,
    /// The caller's network address, when the principal is anonymous and the
    /// transport knew the peer: the replay guard's quota is keyed on it
    /// ([`PrincipalKey::of_peer`]). `None` for an authenticated principal.
    pub(super) quota_peer: Option<IpAddr>,
    /// Where progress and log messages go, when the request asked for either
    /// and the transport can carry them.
    pub(super) notifier: Option<Notifier>,
    /// The task this round is a run of, if any.
    pub(super) task: Option<TaskFlow>,
    /// The span this round runs in, as the transport's tracer has it.
    pub(super) trace: Option<TraceParent>,
}

/// What a round of a task's flow (the tasks extension) keys on the task
/// rather than on the request: its flow id (so a `once` step of a task's first
/// run, which has no sealed state yet, is claimed all the same, and a run
/// that takes over another's claims the same step) and its deadline (the
/// task's end: its sealed state, which never leaves the server, is held that
/// long rather than a client-held state's few minutes).
#[derive(Debug, Clone, Copy)]
pub(crate) struct TaskFlow {
    pub(crate) flow_id: [u8; 16],
    pub(crate) deadline: Timestamp,
}

/// What the handler's asks change as it runs.
#[derive(Debug, Default)]
pub(super) struct Live {
    pub(super) carry: FlowState,
    /// The answers this round took, in `carry.answers` only if the round suspends
    /// (a round that completes seals nothing, so they are not converted for it).
    pub(super) answered: Vec<Answered>,
    /// Every key the handler asked this round, first ask first, with its
    /// question's digest: one question per key. A round asks a handful of keys,
    /// so a list searched in order beats a map, and the other lists below name a
    /// key by its place here rather than by a copy of it.
    pub(super) seen: Vec<(String, QuestionDigest)>,
    /// The questions to send, in the order first asked (a key asked again keeps its
    /// place), by their key's place in `seen`; the capability gate runs over them
    /// when the round ends.
    pub(super) pending: Vec<(usize, PendingAsk)>,
    /// Set when the round was finished: a `Round` kept past its handler (moved into a
    /// spawned task, say) can no longer record questions or results.
    pub(super) finished: bool,
    /// The flow id the round's sealed state carries, once sealed.
    pub(super) sealed_flow: Option<[u8; 16]>,
}

/// One run of a handler. Ask with [`Round::elicit`], [`Round::sample`],
/// [`Round::roots`] and friends; each returns the answer when there is one and
/// `Err(Unanswered::recorded())` otherwise, after recording the question. Call several
/// before the first `?` to batch them into one round.
///
/// A handler takes its `Round` by value (`|round: Round| async move { … }`), so an
/// async handler's future owns it and can hold it across `.await`; every method
/// takes `&self`, so helper functions take `&Round`. It is `Send`.
///
/// A `Round` is the handler's view only: it cannot end its round (the engine
/// does, once the handler has returned), so a handler that tries does not
/// compile:
///
/// ```compile_fail,E0599
/// # use mrtr::{Flow, Round, ToolResult};
/// fn handler(round: Round) -> Result<ToolResult, Flow> {
///     let _ = round.finish(Ok(ToolResult::text("done")));
///     Ok(ToolResult::text("done"))
/// }
/// ```
#[derive(Debug)]
pub struct Round {
    shared: Arc<Shared>,
}

/// What a [`Round`] and its [`Finisher`] share: one allocation per round.
#[derive(Debug)]
pub(super) struct Shared {
    pub(super) fixed: Fixed,
    pub(super) live: Mutex<Live>,
}

pub(super) fn lock(live: &Mutex<Live>) -> MutexGuard<'_, Live> {
    // No user code runs while the lock is held, so a poisoned lock holds consistent data.
    live.lock().unwrap_or_else(PoisonError::into_inner)
}

pub(super) fn finished_error() -> Flow {
    Flow::Fail(Error::internal(
        "a Round was used after its round had finished",
    ))
}

impl Round {
    /// The round that `fixed` begins: it carries the sealed data of the
    /// state it presents, if any.
    pub(super) fn new(fixed: Fixed) -> Self {
        // The first round's span, carried from round to round.
        let trace = match &fixed.prior {
            Some(p) => p.state().trace.clone(),
            None => fixed.trace.map(|t| t.to_string()),
        };
        let carry = FlowState {
            data: fixed.prior.as_ref().and_then(|p| p.state().data.clone()),
            trace,
            ..FlowState::default()
        };
        Self {
            shared: Arc::new(Shared {
                fixed,
                live: Mutex::new(Live {
                    carry,
                    ..Live::default()
                }),
            }),
        }
    }

    pub(super) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The carrier method.
    pub fn method(&self) -> CarrierMethod {
        self.shared.fixed.request.method()
    }

    /// The tool or prompt name, or the resource URI.
    pub fn target(&self) -> &str {
        self.shared.fixed.request.target()
    }

    /// The request's arguments decoded into the handler's own type.
    ///
    /// Absent arguments decode as an empty object, so a type whose fields all have
    /// defaults (or are `Option`s) decodes from a call without arguments. On a
    /// `resources/read` routed through a resource template, the arguments are the
    /// template's variables, as strings
    /// ([`Service::resource_template`](crate::Service::resource_template)).
    ///
    /// # Errors
    /// When the arguments do not fit `T`: on `tools/call` a tool error (`isError`)
    /// naming the field and the type it expects (never the value that was sent), so
    /// the model can correct its call, or the text of the [`Refusal`](crate::Refusal)
    /// `T` returned; -32602 on the other carriers.
    pub fn arguments<T: DeserializeOwned>(&self) -> Result<T, Flow> {
        let empty = Value::Object(JsonObject::new());
        let value = self
            .shared
            .fixed
            .request
            .arguments()
            .map_or(empty, |a| Value::Object(a.clone()));
        crate::typed::decode(&value).map_err(|m| {
            // The text names the field and the expected type, never the value.
            let advice = ToolAdvice::new(m.describe("Argument"), Retry::DoesNotHelp);
            Flow::Fail(Error::tool_failure(
                advice,
                Fallback::InvalidParams,
                "arguments",
                format!("arguments do not fit the handler's type: {m}"),
            ))
        })
    }

    /// One argument, as sent.
    pub fn argument(&self, name: &str) -> Option<&Value> {
        self.shared.fixed.request.arguments()?.get(name)
    }

    /// The capabilities the client declared in this request.
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.shared.fixed.request.meta().client_capabilities
    }

    /// Which round this is: 1 for a request without state, then 2, 3, ...
    pub fn number(&self) -> u32 {
        self.shared
            .fixed
            .prior
            .as_ref()
            .map_or(1, |p| p.round().saturating_add(1))
    }

    /// The current time, as the transport read it for this request.
    pub fn now(&self) -> Timestamp {
        self.shared.fixed.now
    }

    /// Reports progress on this request (`notifications/progress`, MCP
    /// 2026-07-28 §Progress): `progress` so far, out of `total` if known, with
    /// an optional human-readable `message`. Returns whether the notification
    /// went to the transport.
    ///
    /// It goes out only when the request's `_meta` carries a `progressToken`
    /// (with that token), the transport can carry notifications, `progress` is
    /// finite and greater than the last value reported (the spec's "MUST
    /// increase"; a value that is not is dropped), and the round has not
    /// finished; a `total` that is not finite is left out. On Streamable HTTP
    /// it is an SSE event before the response, on stdio a line before the
    /// response line. A request that asked for nothing makes this one branch.
    ///
    /// ```
    /// # use mrtr::{Flow, Round, ToolResult};
    /// fn handler(round: Round) -> Result<ToolResult, Flow> {
    ///     for step in 1..=3 {
    ///         round.progress(f64::from(step), Some(3.0), Some("copying"));
    ///     }
    ///     Ok(ToolResult::text("copied"))
    /// }
    /// ```
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> bool {
        let Some(n) = &self.shared.fixed.notifier else {
            return false;
        };
        n.wants_progress() && !self.is_finished() && n.progress(progress, total, message)
    }

    /// Sends a log message (`notifications/message`) at `level` with `data`
    /// (any JSON: a string, an object). Returns whether it went to the
    /// transport.
    ///
    /// It goes out only when the request's `_meta` asked for a level
    /// (`io.modelcontextprotocol/logLevel`) and `level` is at or above it, the
    /// transport can carry notifications, and the round has not finished:
    /// without a requested level the server sends no log message for the
    /// request (MCP 2026-07-28). The client sees `data`: never put secrets,
    /// tokens or another user's data in it.
    pub fn log(&self, level: LogLevel, data: Value) -> bool {
        self.log_from(level, None, data)
    }

    /// [`Round::log`] naming the `logger` (the component that logs) too.
    pub fn log_from(&self, level: LogLevel, logger: Option<&str>, data: Value) -> bool {
        let Some(n) = &self.shared.fixed.notifier else {
            return false;
        };
        self.log_enabled(level) && !self.is_finished() && n.log(level, logger, data)
    }

    /// Whether a log message at `level` would go out ([`Round::log`]): for a
    /// handler that would rather not build a costly message for nothing.
    pub fn log_enabled(&self, level: LogLevel) -> bool {
        self.shared
            .fixed
            .notifier
            .as_ref()
            .and_then(Notifier::level)
            .is_some_and(|wanted| level >= wanted)
    }

    /// Whether progress would go out ([`Round::progress`]): the request carries a
    /// `progressToken` and the transport can carry notifications.
    pub fn progress_enabled(&self) -> bool {
        self.shared
            .fixed
            .notifier
            .as_ref()
            .is_some_and(Notifier::wants_progress)
    }

    /// Whether the round has finished: the response is the request's last
    /// message, so nothing more goes out for it.
    fn is_finished(&self) -> bool {
        lock(&self.shared.live).finished
    }

    /// Asks a form elicitation (or returns its answer).
    ///
    /// # Errors
    /// `Flow::Suspend` when the answer is not there yet (the question is recorded).
    pub fn elicit(&self, key: &str, form: Form) -> Result<Elicited, Flow> {
        let (req, necessity, issued_only) = form.into_parts();
        self.elicitation(key, req, necessity, issued_only)
    }

    /// Asks a form elicitation whose accepted content decodes into the handler's
    /// own type `T` (or returns its answer).
    ///
    /// An accepted answer that validates against the form but does not fit `T` is
    /// not taken: the question is asked again, with a note naming the field and the
    /// type expected (never the value), as for any invalid answer. When `T` turns
    /// the answer down with a [`Refusal`](crate::Refusal) (the error of its
    /// `TryFrom`, say), the note is the refusal's text.
    ///
    /// # Errors
    /// `Flow::Suspend` when the answer is not there yet.
    pub fn elicit_as<T: DeserializeOwned>(
        &self,
        key: &str,
        form: Form,
    ) -> Result<FormAnswer<T>, Flow> {
        let (req, necessity, issued_only) = form.into_parts();
        let fits = |content: &Value| {
            crate::typed::decode::<T>(content)
                .map(drop)
                .map_err(|m| m.re_ask_note())
        };
        let answer = self.answer_checked(key, req, necessity, issued_only, &fits)?;
        match answer {
            None => Ok(FormAnswer::Unavailable),
            Some(InputResponse::Elicit(e)) => match e.action {
                ElicitAction::Accept => {
                    let content = Value::Object(e.content.unwrap_or_default());
                    crate::typed::decode::<T>(&content)
                        .map(FormAnswer::Accepted)
                        .map_err(|m| {
                            Flow::Fail(Error::internal(format!(
                                "checked answer does not decode: {m}"
                            )))
                        })
                }
                ElicitAction::Decline => Ok(FormAnswer::Declined),
                ElicitAction::Cancel => Ok(FormAnswer::Cancelled),
            },
            Some(_) => Err(Flow::Fail(Error::internal(
                "answer of another kind passed the kind check",
            ))),
        }
    }

    /// Asks a form built from `T`'s JSON Schema ([`Form::from_type`]) and decodes the
    /// accepted content into `T` (feature `schemars`).
    ///
    /// # Errors
    /// `Flow::Suspend` when the answer is not there yet; -32603 when `T` cannot be
    /// a form (not a flat object of primitives): a server fault, found the first
    /// time the handler runs.
    #[cfg(feature = "schemars")]
    pub fn ask<T: DeserializeOwned + schemars::JsonSchema>(
        &self,
        key: &str,
        message: impl Into<String>,
    ) -> Result<FormAnswer<T>, Flow> {
        let form = Form::from_type::<T>(message)
            .map_err(|e| Flow::Fail(Error::internal(format!("form for key {key:?}: {e}"))))?;
        self.elicit_as(key, form)
    }

    /// Asks the user to confirm (a form with one boolean field `confirm`) and says
    /// whether they did.
    ///
    /// Only an answer to a question this flow put to the user in an earlier sealed
    /// round counts: a client that sends `confirm: accept` with its first request,
    /// unasked, is asked anyway. A decline, a cancel, or an accepted form with
    /// `confirm: false` is [`Confirmation::Declined`] or
    /// [`Confirmation::Cancelled`]: never run what it guards then.
    ///
    /// ```
    /// # use mrtr::{Confirmation, Flow, Round};
    /// fn guarded(round: &Round) -> Result<&'static str, Flow> {
    ///     match round.confirm("confirm", "Delete the backup?")? {
    ///         Confirmation::Accepted => Ok("deleted"),
    ///         _ => Ok("kept"),
    ///     }
    /// }
    /// ```
    ///
    /// # Errors
    /// `Flow::Suspend` until the user has answered; -32021 when the client declared
    /// no form elicitation.
    pub fn confirm(&self, key: &str, message: impl Into<String>) -> Result<Confirmation, Flow> {
        let form = Form::confirm(message).issued_only();
        Ok(match self.elicit(key, form)? {
            Elicited::Accepted(f) if f.bool("confirm") == Some(true) => Confirmation::Accepted,
            Elicited::Cancelled => Confirmation::Cancelled,
            _ => Confirmation::Declined,
        })
    }

    /// Asks a URL-mode elicitation (or returns its answer). `Accepted` means the
    /// user agreed to open the page, not that they finished there.
    ///
    /// # Errors
    /// `Flow::Suspend` when the answer is not there yet.
    pub fn visit(&self, key: &str, visit: UrlVisit) -> Result<Elicited, Flow> {
        let req = visit.to_request();
        self.elicitation(key, req, visit.necessity(), false)
    }

    fn elicitation(
        &self,
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
        &self,
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
    pub fn roots(&self, key: &str, ask: RootsAsk) -> Result<Option<Vec<Root>>, Flow> {
        match self.answer(key, ask.to_request(), ask.necessity(), false)? {
            None => Ok(None),
            Some(InputResponse::ListRoots(r)) => Ok(Some(r.roots)),
            Some(_) => Err(Flow::Fail(Error::internal(
                "answer of another kind passed the kind check",
            ))),
        }
    }

    /// The handler's data carried from the previous round, if any.
    ///
    /// # Errors
    /// -32603 when the carried data does not fit `T` (the handler changed the type
    /// it stores: a server fault, never silently `None`).
    pub fn data<T: DeserializeOwned>(&self) -> Result<Option<T>, Flow> {
        let data = lock(&self.shared.live).carry.data.clone();
        data.map(|v| {
            serde_json::from_value(v).map_err(|_| {
                Flow::Fail(Error::internal(format!(
                    "handler data does not fit {}",
                    std::any::type_name::<T>()
                )))
            })
        })
        .transpose()
    }

    /// Stores data to carry into the next round (sealed with the state).
    ///
    /// # Errors
    /// -32603 when `value` cannot be serialized.
    pub fn set_data<T: Serialize>(&self, value: &T) -> Result<(), Error> {
        let v = serde_json::to_value(value)
            .map_err(|e| Error::internal(format!("handler data: {e}")))?;
        lock(&self.shared.live).carry.data = Some(v);
        Ok(())
    }

    /// Looks up the answer for `key`, or records the question.
    fn answer(
        &self,
        key: &str,
        request: InputRequest,
        necessity: Necessity,
        issued_only: bool,
    ) -> Result<Option<InputResponse>, Flow> {
        self.answer_checked(key, request, necessity, issued_only, &|_| Ok(()))
    }

    /// [`Round::answer`] with a further check of an accepted form's content (the
    /// handler's type); a content that fails it is asked again with the note the
    /// check returns.
    ///
    /// The answer is looked for where it can be, in order: sealed by an earlier
    /// round, then in this retry's `inputResponses`; with neither, the question
    /// is recorded to go out.
    fn answer_checked(
        &self,
        key: &str,
        request: InputRequest,
        necessity: Necessity,
        issued_only: bool,
        fits: &dyn Fn(&Value) -> Result<(), String>,
    ) -> Result<Option<InputResponse>, Flow> {
        let digest = self.shared.fixed.engine.question_digest(&request);
        let mut live = lock(&self.shared.live);
        let at = question_at(&mut live, key, digest)?;
        let kind = request.kind();
        let sealed_note = match self.sealed_answer(key, kind, digest) {
            Ok(resp) => {
                live.answered.push(Answered::Sealed { at });
                return Ok(Some(resp));
            }
            Err(note) => note,
        };
        let note = match self.fresh_answer(key, &request, kind, digest, issued_only, fits) {
            Ok(resp) => {
                live.answered.push(Answered::Fresh {
                    at,
                    kind,
                    digest,
                    request: Box::new(request),
                });
                return Ok(Some(resp));
            }
            Err(note) => note.or(sealed_note),
        };
        let ask = PendingAsk {
            request,
            necessity,
            digest,
            note,
        };
        self.record_question(&mut live, at, ask)
    }

    /// An answer sealed by an earlier round, for this very question; else the
    /// note for the re-ask when the sealed answer was to another question (`None`
    /// when there is no sealed answer to `key`).
    fn sealed_answer(
        &self,
        key: &str,
        kind: InputKind,
        digest: QuestionDigest,
    ) -> Result<InputResponse, Option<String>> {
        let fixed = &self.shared.fixed;
        let Some(a) = fixed
            .prior
            .as_ref()
            .and_then(|p| p.state().answers.get(key))
        else {
            return Err(None);
        };
        if a.kind == kind
            && a.digest == digest
            && let Ok(resp) = InputResponse::parse_as(kind, &a.value)
        {
            return Ok(resp);
        }
        Err(Some(
            "The question changed since it was answered; please answer again.".to_owned(),
        ))
    }

    /// An answer in this retry's `inputResponses`, eligible when the earlier round
    /// asked this very question (or, under [`AnswerPolicy::Lenient`] and unless
    /// `issued_only`, when it asked nothing under `key`) and accepted by
    /// [`accept`]; else the note for the re-ask, if any.
    fn fresh_answer(
        &self,
        key: &str,
        request: &InputRequest,
        kind: InputKind,
        digest: QuestionDigest,
        issued_only: bool,
        fits: &dyn Fn(&Value) -> Result<(), String>,
    ) -> Result<InputResponse, Option<String>> {
        let fixed = &self.shared.fixed;
        let Some(v) = fixed.request.input_responses().and_then(|r| r.get(key)) else {
            return Err(None);
        };
        let asked = fixed.prior.as_ref().and_then(|p| p.state().asked.get(key));
        let eligible = match asked {
            Some(q) => q.kind == kind && q.digest == digest,
            None => fixed.engine.policy() == AnswerPolicy::Lenient && !issued_only,
        };
        if !eligible {
            return Err(asked.map(|_| {
                "The question changed since it was asked; please answer again.".to_owned()
            }));
        }
        accept(kind, request, v, fits).map_err(Some)
    }

    /// No usable answer: the question must go out, if this request's declared
    /// capabilities allow it (an answer already in hand needs no capability:
    /// nothing is sent for it). The gate drops an optional ask now, so the
    /// handler sees it as unavailable (`Ok(None)`); a required one the client
    /// cannot serve is recorded like any other, and the gate fails the round with
    /// -32021 when it ends.
    fn record_question(
        &self,
        live: &mut Live,
        at: usize,
        ask: PendingAsk,
    ) -> Result<Option<InputResponse>, Flow> {
        let declared = &self.shared.fixed.request.meta().client_capabilities;
        let mut dropped = false;
        let verdict = capability::verdict(declared, [(&ask.request, ask.necessity)], |d| {
            dropped = d == Decision::Drop;
        });
        if verdict.is_ok() && dropped {
            return Ok(None);
        }
        // Room for the first question alone: a first insert makes room for four, and
        // a question is large (an `InputRequest` is over 400 bytes).
        if live.pending.capacity() == 0 {
            live.pending.reserve_exact(1);
        }
        match live.pending.iter_mut().find(|(k, _)| *k == at) {
            Some((_, asked)) => *asked = ask,
            None => live.pending.push((at, ask)),
        }
        Err(Unanswered::recorded())
    }
}

/// Where `key` stands among the questions of this round: a question asked again
/// keeps its place, a new one goes last. The same key asked with another
/// question, or any ask after the round finished, fails the flow.
fn question_at(live: &mut Live, key: &str, digest: QuestionDigest) -> Result<usize, Flow> {
    if live.finished {
        return Err(finished_error());
    }
    match live.seen.iter().position(|(k, _)| k == key) {
        Some(at) if live.seen[at].1 != digest => Err(Flow::Fail(Error::internal(format!(
            "handler asked key {key:?} twice with different questions in one round"
        )))),
        Some(at) => Ok(at),
        None => {
            live.seen.push((key.to_owned(), digest));
            Ok(live.seen.len() - 1)
        }
    }
}

/// Checks a fresh answer against the question: the kind must match and an
/// accepted form's content must validate, then pass `fits`. Returns the parsed
/// answer, content reduced to the declared fields (its `to_value` is what a
/// suspending round seals), or a note for the re-ask (from `fits`, its own).
pub(super) fn accept(
    kind: InputKind,
    request: &InputRequest,
    v: &Value,
    fits: &dyn Fn(&Value) -> Result<(), String>,
) -> Result<InputResponse, String> {
    let unreadable =
        || "The previous answer was not in the expected format; please answer again.".to_owned();
    // An elicitation's answer is read with its content borrowed: what is kept of
    // it (an accepted form's declared fields, and nothing for a URL) is copied once.
    let InputRequest::Elicit(params) = request else {
        return InputResponse::parse_as(kind, v).map_err(|_| unreadable());
    };
    let (action, content) = ElicitResult::parts(v).map_err(|_| unreadable())?;
    let content = match (params, action) {
        (ElicitParams::Form(f), ElicitAction::Accept) => {
            let empty = JsonObject::new();
            let kept = validate_content(&f.requested_schema, content.unwrap_or(&empty)).map_err(
                |problems| {
                    let list: Vec<String> = problems.iter().map(ToString::to_string).collect();
                    format!("Please correct: {}.", list.join("; "))
                },
            )?;
            let kept = Value::Object(kept);
            fits(&kept)?;
            // Always an object: it was made one just above.
            match kept {
                Value::Object(m) => Some(m),
                _ => None,
            }
        }
        _ => None,
    };
    Ok(InputResponse::Elicit(ElicitResult { action, content }))
}

#[cfg(test)]
mod tests;
