//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663): a
//! `tools/call` answered at once with a task the client polls (`tasks/get`),
//! answers the questions of (`tasks/update`) and may cancel (`tasks/cancel`).
//!
//! A task runs the tool's handler as an MRTR flow does, on the engine's one
//! path, but its rounds are driven by the server: each run ends where the
//! handler asks (the task is `input_required`, its outstanding `inputRequests`
//! listed by `tasks/get`, its sealed state kept with the task and never sent)
//! or where it completes (`completed`, with the result, a tool error
//! included) or fails (`failed`, with the JSON-RPC error). When every
//! outstanding question is answered, the next run starts with the answers and
//! the state, exactly as a client's MRTR retry would: the answers are
//! validated, `once` steps done before do not run again. Runs are the
//! transport's to start ([`Reply::task`](super::Reply::task),
//! [`Service::run_task`](super::Service::run_task)): the core does no IO.
//!
//! Which tools become tasks is the application's choice ([`TaskSupport`],
//! [`Service::task_support`](super::Service::task_support)); a client gets a
//! task only when the request declares the extension in its capabilities.
//! Tasks are bound to the caller that created them: another caller's
//! `tasks/*` gets what an unknown id gets (-32602). They are bounded: at most
//! [`TASKS_MAX`](crate::defaults::TASKS_MAX) live, and
//! [`TASKS_PER_PRINCIPAL_MAX`](crate::defaults::TASKS_PER_PRINCIPAL_MAX) a
//! caller; a task is forgotten [`TASK_TTL`](crate::defaults::TASK_TTL) after it
//! was created.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Poll, Waker};

use serde_json::{Map, Value, json};

use crate::defaults::{TASK_POLL_INTERVAL, TASK_TTL, TASKS_MAX, TASKS_PER_PRINCIPAL_MAX};
use crate::engine::Outcome;
use crate::error::Error;
use crate::time::Timestamp;
use crate::wire::{META_CLIENT_CAPABILITIES, type_name};

/// The extension's identifier, in `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Whether, and how, a tool runs as a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TaskSupport {
    /// Never: every call is answered in its request (the default).
    #[default]
    Forbidden,
    /// For a client that declares the extension; others get the result in
    /// the request, as from any tool.
    Optional,
    /// Only as a task: a client that does not declare the extension gets
    /// -32021 naming it, and the handler does not run.
    Required,
    /// Only as a task, after its first questions: a call without a
    /// `requestState` runs in its request (its questions an ordinary MRTR
    /// round, as the extension has a server resolve them before it creates
    /// the task); the retry that answers them becomes the task.
    AfterFirstRound,
}

/// A task's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The live tasks of a service.
#[derive(Debug, Default)]
pub(super) struct TaskTable {
    tasks: Mutex<HashMap<String, Arc<Task>>>,
}

/// One task.
#[derive(Debug)]
pub(super) struct Task {
    id: String,
    /// The caller key of whoever created it.
    owner: String,
    created: Timestamp,
    state: Mutex<State>,
    cancel: Cancel,
}

/// What changes over a task's life.
#[derive(Debug)]
struct State {
    status: Status,
    message: Option<String>,
    updated: Timestamp,
    /// The `tools/call` params the next run is made of: the name, the
    /// arguments and the creating request's `_meta`.
    params: Map<String, Value>,
    /// The sealed state of the last run that asked (never sent).
    request_state: Option<String>,
    /// The questions not answered yet, by key.
    outstanding: Map<String, Value>,
    /// The answers given to the last run's questions.
    answers: Map<String, Value>,
    result: Option<Value>,
    error: Option<Value>,
    /// A run is under way.
    running: bool,
}

/// A task's cancellation: a flag and the waker of the run waiting on it.
#[derive(Debug, Default)]
struct Cancel {
    set: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Cancel {
    fn fire(&self) {
        self.set.store(true, Ordering::Release);
        if let Some(w) = lock(&self.waker).take() {
            w.wake();
        }
    }

    async fn wait(&self) {
        std::future::poll_fn(|cx| {
            if self.set.load(Ordering::Acquire) {
                return Poll::Ready(());
            }
            *lock(&self.waker) = Some(cx.waker().clone());
            if self.set.load(Ordering::Acquire) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
    }
}

/// A run of a task for the transport to start
/// ([`Service::run_task`](super::Service::run_task)); opaque.
#[derive(Debug, Clone)]
pub struct TaskRun {
    pub(super) id: String,
    pub(super) ctx: super::RequestContext,
}

/// Whether a request's `_meta` declares the extension.
pub(super) fn declares_extension(params: Option<&Value>) -> bool {
    params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(META_CLIENT_CAPABILITIES))
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(EXTENSION))
        .is_some()
}

/// -32021 naming the extension, as the extension has it.
pub(super) fn missing_extension() -> Error {
    let mut required = crate::wire::ClientCapabilities::none();
    let mut extensions = Map::new();
    extensions.insert(EXTENSION.into(), json!({}));
    required.extensions = Some(extensions);
    Error::missing_capabilities("tasks extension", &required)
}

impl TaskTable {
    /// Creates a task for `owner` from a `tools/call`'s `params`, within the
    /// caps (expired tasks go first); its id from `random`.
    pub(super) fn create(
        &self,
        owner: String,
        params: &Value,
        now: Timestamp,
        random: impl FnOnce(&mut [u8]),
    ) -> Result<Value, Error> {
        let Value::Object(p) = params else {
            return Err(Error::invalid_params(format!(
                "params must be an object, not {}",
                type_name(params)
            )));
        };
        let mut bytes = [0u8; 16];
        random(&mut bytes);
        let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let mut kept = Map::new();
        for key in [
            "name",
            "arguments",
            "_meta",
            "requestState",
            "inputResponses",
        ] {
            if let Some(v) = p.get(key) {
                kept.insert(key.into(), v.clone());
            }
        }
        let request_state = kept
            .remove("requestState")
            .and_then(|v| v.as_str().map(str::to_owned));
        let answers = match kept.remove("inputResponses") {
            Some(Value::Object(a)) => a,
            _ => Map::new(),
        };
        let task = Arc::new(Task {
            id: id.clone(),
            owner,
            created: now,
            state: Mutex::new(State {
                status: Status::Working,
                message: None,
                updated: now,
                params: kept,
                request_state,
                outstanding: Map::new(),
                answers,
                result: None,
                error: None,
                running: true,
            }),
            cancel: Cancel::default(),
        });
        let mut tasks = lock(&self.tasks);
        tasks.retain(|_, t| !expired(t, now));
        if tasks.len() >= TASKS_MAX {
            return Err(Error::invalid_request(
                "too many tasks on this server; try again later",
            ));
        }
        if tasks.values().filter(|t| t.owner == task.owner).count() >= TASKS_PER_PRINCIPAL_MAX {
            return Err(Error::invalid_request(format!(
                "too many tasks for this client (at most {TASKS_PER_PRINCIPAL_MAX}); wait for one to end"
            )));
        }
        let created = task_fields(&task, &lock(&task.state));
        tasks.insert(id, task);
        Ok(created)
    }

    /// The task `id` of `owner`, or the -32602 an unknown one gets.
    fn get(&self, id: &str, owner: &str, now: Timestamp) -> Result<Arc<Task>, Error> {
        let tasks = lock(&self.tasks);
        tasks
            .get(id)
            .filter(|t| t.owner == owner && !expired(t, now))
            .cloned()
            .ok_or_else(|| Error::invalid_params("Unknown task"))
    }

    /// `tasks/get`: the task, with its questions, result or error.
    pub(super) fn status(&self, params: Option<&Value>, owner: &str, now: Timestamp) -> Outcome {
        match task_id(params).and_then(|id| self.get(id, owner, now)) {
            Ok(task) => {
                let state = lock(&task.state);
                let mut fields = detailed(&task, &state);
                fields.insert("resultType".into(), "complete".into());
                Outcome::Complete(Value::Object(fields))
            }
            Err(e) => Outcome::Protocol(e),
        }
    }

    /// `tasks/update`: takes the answers to outstanding questions (others are
    /// ignored); when none is left, the next run is due (`Some`).
    pub(super) fn update(
        &self,
        params: Option<&Value>,
        owner: &str,
        now: Timestamp,
    ) -> Result<bool, Error> {
        let id = task_id(params)?;
        let responses = match params.and_then(|p| p.get("inputResponses")) {
            Some(Value::Object(r)) => r,
            Some(other) => {
                return Err(Error::invalid_params(format!(
                    "inputResponses must be an object, not {}",
                    type_name(other)
                )));
            }
            None => return Err(Error::invalid_params("inputResponses is required")),
        };
        let task = self.get(id, owner, now)?;
        let mut state = lock(&task.state);
        if state.status != Status::InputRequired {
            return Ok(false);
        }
        for (key, answer) in responses {
            if state.outstanding.remove(key).is_some() {
                state.answers.insert(key.clone(), answer.clone());
            }
        }
        state.updated = now;
        if !state.outstanding.is_empty() {
            return Ok(false);
        }
        state.status = Status::Working;
        state.running = true;
        Ok(true)
    }

    /// `tasks/cancel`: a task not ended yet is cancelled, its run stopped.
    pub(super) fn cancel(
        &self,
        params: Option<&Value>,
        owner: &str,
        now: Timestamp,
    ) -> Result<(), Error> {
        let task = task_id(params).and_then(|id| self.get(id, owner, now))?;
        let mut state = lock(&task.state);
        if !state.status.is_terminal() {
            state.status = Status::Cancelled;
            state.updated = now;
            state.outstanding.clear();
            task.cancel.fire();
        }
        Ok(())
    }

    /// The params of task `id`'s next run and the task (to wait on its
    /// cancellation), unless it ended (or is gone).
    pub(super) fn next_run(&self, id: &str) -> Option<(Value, Arc<Task>)> {
        let task = lock(&self.tasks).get(id).cloned()?;
        let state = lock(&task.state);
        if state.status.is_terminal() {
            return None;
        }
        let mut params = state.params.clone();
        if let Some(s) = &state.request_state {
            params.insert("requestState".into(), s.as_str().into());
        }
        if !state.answers.is_empty() {
            params.insert(
                "inputResponses".into(),
                Value::Object(state.answers.clone()),
            );
        }
        drop(state);
        Some((Value::Object(params), task))
    }

    /// Records how task `id`'s run ended (`None`: it was cancelled or
    /// stopped): its questions, its result or its error.
    pub(super) fn finish(&self, id: &str, outcome: Option<Outcome>, now: Timestamp) {
        let Some(task) = lock(&self.tasks).get(id).cloned() else {
            return;
        };
        let mut state = lock(&task.state);
        state.running = false;
        if state.status.is_terminal() {
            return;
        }
        state.updated = now;
        state.answers.clear();
        match outcome {
            Some(Outcome::InputRequired(irr)) => {
                state.status = Status::InputRequired;
                state.request_state = irr.request_state().map(str::to_owned);
                state.outstanding = irr
                    .input_requests()
                    .into_iter()
                    .flatten()
                    .map(|(k, r)| (k.clone(), r.to_value()))
                    .collect();
            }
            Some(Outcome::Complete(mut v) | Outcome::ToolError { result: mut v, .. }) => {
                if let Value::Object(o) = &mut v {
                    o.remove("resultType");
                }
                state.status = Status::Completed;
                state.result = Some(v);
            }
            Some(Outcome::Protocol(e)) => {
                state.status = Status::Failed;
                state.message = Some(e.public_message().to_owned());
                state.error = Some(e.to_jsonrpc(None)["error"].clone());
            }
            None => {
                state.status = Status::Failed;
                state.message = Some("The task stopped before it ended".into());
                state.error =
                    Some(Error::internal("task run stopped").to_jsonrpc(None)["error"].clone());
            }
        }
    }
}

impl Task {
    /// Completes when the task is cancelled.
    pub(super) async fn cancelled(&self) {
        self.cancel.wait().await;
    }
}

impl super::Service {
    /// Serve the tasks extension: tools marked with
    /// [`Service::task_support`](super::Service::task_support) become tasks for
    /// the clients that declare it, `tasks/get`, `tasks/update` and
    /// `tasks/cancel` are answered, and `server/discover` declares it. The
    /// tasks are kept in this service's memory: a task is served by the
    /// instance that created it. Its runs are the transport's to start, off the
    /// request ([`Reply::task`](super::Reply::task),
    /// [`Service::run_task`](super::Service::run_task)): `mrtr-server`'s do; a
    /// transport of your own that drops them leaves its tasks `working`. The
    /// rmcp adapter runs every tool in its request.
    #[must_use]
    pub fn with_tasks(mut self) -> Self {
        self.tasks = Some(TaskTable::default());
        self
    }

    /// How the tool `name` runs as a task ([`TaskSupport`]; the default is
    /// [`TaskSupport::Forbidden`]). Takes effect with
    /// [`Service::with_tasks`](super::Service::with_tasks).
    #[must_use]
    pub fn task_support(mut self, name: &str, support: TaskSupport) -> Self {
        self.task_support.insert(name.to_owned(), support);
        self
    }

    /// Whether the tasks extension is served.
    pub(super) fn serves_tasks(&self) -> bool {
        self.tasks.is_some()
    }

    /// The tasks extension's part of routing: `tasks/*`, and a `tools/call` of
    /// a tool that may run as a task; `None` for what the rest of routing
    /// answers.
    pub(super) fn tasks_route(
        &self,
        tasks: &TaskTable,
        method: &str,
        params: Option<&Value>,
        ctx: &super::RequestContext,
    ) -> Option<(Outcome, Option<TaskRun>)> {
        let ack = || Outcome::Complete(json!({"resultType": "complete"}));
        let run = |id: &str| TaskRun {
            id: id.to_owned(),
            ctx: ctx.clone(),
        };
        let owner = ctx.caller_key();
        match method {
            "tasks/get" | "tasks/update" | "tasks/cancel" => {
                if let Err(e) =
                    crate::wire::meta::RequestMeta::from_meta(params.and_then(|p| p.get("_meta")))
                {
                    return Some((Outcome::Protocol(e.into()), None));
                }
                if !declares_extension(params) {
                    return Some((Outcome::Protocol(missing_extension()), None));
                }
                Some(match method {
                    "tasks/get" => (tasks.status(params, &owner, ctx.now), None),
                    "tasks/update" => match tasks.update(params, &owner, ctx.now) {
                        Ok(due) => (ack(), due.then(|| run(task_id(params).unwrap_or("")))),
                        Err(e) => (Outcome::Protocol(e), None),
                    },
                    _ => match tasks.cancel(params, &owner, ctx.now) {
                        Ok(()) => (ack(), None),
                        Err(e) => (Outcome::Protocol(e), None),
                    },
                })
            }
            "tools/call" => {
                let name = params.and_then(|p| p.get("name")).and_then(Value::as_str)?;
                let support = *self.task_support.get(name)?;
                if self.is_hidden::<crate::result::ToolResult>(name)
                    || self
                        .registry::<crate::result::ToolResult>()
                        .registered(name)
                        .is_none()
                {
                    return None;
                }
                let declared = declares_extension(params);
                let first_round = params.and_then(|p| p.get("requestState")).is_none();
                match support {
                    TaskSupport::Forbidden => return None,
                    TaskSupport::Optional if !declared => return None,
                    TaskSupport::Required | TaskSupport::AfterFirstRound if !declared => {
                        return Some((Outcome::Protocol(missing_extension()), None));
                    }
                    TaskSupport::AfterFirstRound if first_round => return None,
                    _ => {}
                }
                if let Err(e) =
                    crate::wire::meta::RequestMeta::from_meta(params.and_then(|p| p.get("_meta")))
                {
                    return Some((Outcome::Protocol(e.into()), None));
                }
                let created = tasks.create(owner, params?, ctx.now, |b| {
                    self.engine.sealer().fill_random(b);
                });
                Some(match created {
                    Ok(fields) => {
                        let id = fields["taskId"].as_str().unwrap_or("").to_owned();
                        (Outcome::Complete(create_result(fields)), Some(run(&id)))
                    }
                    Err(e) => (Outcome::Protocol(e), None),
                })
            }
            _ => None,
        }
    }

    /// Runs one round of a task (the transport starts it where a [`Reply`]
    /// says one is due, [`Reply::task`](super::Reply::task)): the handler of
    /// its tool on the engine's one path, with the answers and the sealed
    /// state the task holds, until it asks (the task waits for
    /// `tasks/update`), completes, fails, is cancelled (the handler's future
    /// is dropped) or `deadline` completes first (the task fails). `clock`
    /// reads the time. It records the outcome in the task, and counts and
    /// records the run as a request is ([`crate::metrics`], the diagnostic
    /// log): what it returns is the run's log line (`None` when no run was
    /// due: the task ended, or is gone).
    ///
    /// [`Reply`]: super::Reply
    pub async fn run_task<D>(
        &self,
        run: TaskRun,
        clock: impl Fn() -> Timestamp,
        deadline: D,
    ) -> Option<super::RequestLog>
    where
        D: std::future::Future<Output = ()>,
    {
        let tasks = self.tasks.as_ref()?;
        let (params, task) = tasks.next_run(&run.id)?;
        let mut ctx = run.ctx;
        ctx.now = clock();
        let request = crate::wire::CarrierRequest::from_params_memo(
            crate::wire::CarrierMethod::ToolsCall,
            Some(&params),
            self.engine.metas(),
        );
        let mut log = super::RequestLog {
            method: Some("tools/call".into()),
            ..super::RequestLog::default()
        };
        super::note_target(&mut log, "tools/call", Some(&params));
        let outcome = {
            let work = self.run_request::<crate::result::ToolResult, _>(
                request,
                None,
                &ctx,
                &mut log,
                std::future::pending(),
                None,
            );
            // Stopped by a cancellation or the deadline, whichever comes first.
            let stop = async {
                super::era::first(task.cancelled(), deadline).await;
            };
            super::era::first(work, stop).await.map(Outcome::into_json)
        };
        let name = log
            .target
            .as_deref()
            .and_then(|t| self.registry::<crate::result::ToolResult>().registered(t));
        crate::record::conclude(outcome.as_ref(), None, &ctx.correlation_id, &mut log, name);
        if outcome.is_none() {
            log.outcome = "stopped".into();
        }
        tasks.finish(&task.id, outcome, clock());
        Some(log)
    }
}

/// Whether `task` is past its time to live.
fn expired(task: &Task, now: Timestamp) -> bool {
    now.unix_secs() > task.created.unix_secs().saturating_add(TASK_TTL.as_secs())
}

/// The `taskId` of a `tasks/*` request.
fn task_id(params: Option<&Value>) -> Result<&str, Error> {
    params
        .and_then(|p| p.get("taskId"))
        .and_then(Value::as_str)
        .ok_or_else(|| Error::invalid_params("taskId must be a string"))
}

/// The fields of the task itself (`Task`): what a `CreateTaskResult` is made of.
fn task_fields(task: &Task, state: &State) -> Value {
    let mut o = Map::new();
    o.insert("taskId".into(), task.id.as_str().into());
    o.insert("status".into(), state.status.as_str().into());
    if let Some(m) = &state.message {
        o.insert("statusMessage".into(), m.as_str().into());
    }
    o.insert("createdAt".into(), iso8601(task.created).into());
    o.insert("lastUpdatedAt".into(), iso8601(state.updated).into());
    o.insert(
        "ttlMs".into(),
        u64::try_from(TASK_TTL.as_millis())
            .unwrap_or(u64::MAX)
            .into(),
    );
    o.insert(
        "pollIntervalMs".into(),
        u64::try_from(TASK_POLL_INTERVAL.as_millis())
            .unwrap_or(u64::MAX)
            .into(),
    );
    Value::Object(o)
}

/// `DetailedTask`: the task, with its outstanding questions, its result or its
/// error as its status has them.
fn detailed(task: &Task, state: &State) -> Map<String, Value> {
    let Value::Object(mut o) = task_fields(task, state) else {
        return Map::new();
    };
    match state.status {
        Status::InputRequired => {
            o.insert(
                "inputRequests".into(),
                Value::Object(state.outstanding.clone()),
            );
        }
        Status::Completed => {
            if let Some(r) = &state.result {
                o.insert("result".into(), r.clone());
            }
        }
        Status::Failed => {
            if let Some(e) = &state.error {
                o.insert("error".into(), e.clone());
            }
        }
        Status::Working | Status::Cancelled => {}
    }
    o
}

/// `CreateTaskResult` of a new task's fields.
pub(super) fn create_result(mut fields: Value) -> Value {
    if let Value::Object(o) = &mut fields {
        o.insert("resultType".into(), "task".into());
    }
    fields
}

/// `secs` as an RFC 3339 UTC date-time, `YYYY-MM-DDTHH:MM:SSZ`.
fn iso8601(t: Timestamp) -> String {
    let secs = t.unix_secs();
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Civil from days (H. Hinnant's algorithm), for the proleptic Gregorian calendar.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_rfc_3339() {
        assert_eq!(
            iso8601(Timestamp::from_unix_secs(0)),
            "1970-01-01T00:00:00Z"
        );
        assert_eq!(
            iso8601(Timestamp::from_unix_secs(1_796_442_684)),
            "2026-12-05T03:51:24Z"
        );
        assert_eq!(
            iso8601(Timestamp::from_unix_secs(951_782_400)),
            "2000-02-29T00:00:00Z"
        );
    }

    fn table_with(owner: &str) -> (TaskTable, String) {
        let table = TaskTable::default();
        let created = table
            .create(
                owner.into(),
                &json!({"name": "t", "arguments": {}}),
                Timestamp::from_unix_secs(100),
                |b| b.fill(7),
            )
            .unwrap();
        let id = created["taskId"].as_str().unwrap().to_owned();
        (table, id)
    }

    #[test]
    fn a_task_is_its_owner_s_alone_and_answers_only_what_it_asked() {
        let (table, id) = table_with("alice");
        let now = Timestamp::from_unix_secs(101);
        let p = json!({"taskId": id});
        assert!(matches!(
            table.status(Some(&p), "alice", now),
            Outcome::Complete(_)
        ));
        let Outcome::Protocol(e) = table.status(Some(&p), "mallory", now) else {
            panic!("another's task");
        };
        assert_eq!(e.code(), crate::error::code::INVALID_PARAMS);
        // Two questions; a partial answer keeps it waiting, an unknown key is ignored.
        {
            let task = table.get(&id, "alice", now).unwrap();
            let mut s = lock(&task.state);
            s.running = false;
            s.status = Status::InputRequired;
            s.outstanding
                .insert("a".into(), json!({"method": "roots/list"}));
            s.outstanding
                .insert("b".into(), json!({"method": "roots/list"}));
        }
        let answer = |keys: &[&str]| {
            let mut r = Map::new();
            for k in keys {
                r.insert((*k).into(), json!({"roots": []}));
            }
            json!({"taskId": id, "inputResponses": r})
        };
        assert_eq!(
            table.update(Some(&answer(&["a", "nope"])), "alice", now),
            Ok(false)
        );
        let Outcome::Complete(v) = table.status(Some(&p), "alice", now) else {
            panic!()
        };
        assert_eq!(v["status"], "input_required");
        assert_eq!(v["inputRequests"], json!({"b": {"method": "roots/list"}}));
        assert_eq!(table.update(Some(&answer(&["b"])), "alice", now), Ok(true));
        let (params, _) = table.next_run(&id).unwrap();
        assert_eq!(params["inputResponses"].as_object().unwrap().len(), 2);
        // Cancelled: it stays so, whatever its run says after.
        table.cancel(Some(&p), "alice", now).unwrap();
        table.finish(&id, Some(Outcome::Complete(json!({"content": []}))), now);
        let Outcome::Complete(v) = table.status(Some(&p), "alice", now) else {
            panic!()
        };
        assert_eq!(v["status"], "cancelled");
        assert!(table.next_run(&id).is_none());
        assert!(v.get("requestState").is_none());
    }

    #[test]
    fn the_missing_extension_error_names_it() {
        let e = missing_extension();
        assert_eq!(
            e.code(),
            crate::error::code::MISSING_REQUIRED_CLIENT_CAPABILITY
        );
        let body = e.to_jsonrpc(None);
        assert_eq!(
            body["error"]["data"]["requiredCapabilities"]["extensions"][EXTENSION],
            json!({})
        );
    }

    mod state_machine {
        use super::super::*;
        use proptest::prelude::*;

        /// One thing that can happen to a task.
        #[derive(Debug, Clone)]
        enum Op {
            Get {
                owner_is_alice: bool,
            },
            Update {
                keys: Vec<u8>,
                owner_is_alice: bool,
            },
            Cancel {
                owner_is_alice: bool,
            },
            /// Its run ends: asking keys numbered from `first`, completing, or failing.
            Finish(u8, u8),
            Later(u64),
        }

        fn op() -> impl Strategy<Value = Op> {
            prop_oneof![
                any::<bool>().prop_map(|a| Op::Get { owner_is_alice: a }),
                (proptest::collection::vec(0u8..8, 0..4), any::<bool>()).prop_map(|(keys, a)| {
                    Op::Update {
                        keys,
                        owner_is_alice: a,
                    }
                }),
                any::<bool>().prop_map(|a| Op::Cancel { owner_is_alice: a }),
                (0u8..3, 0u8..6).prop_map(|(kind, first)| Op::Finish(kind, first)),
                (0u64..4000).prop_map(Op::Later),
            ]
        }

        proptest! {
            /// Whatever happens, in any order: no panic; an ended task never
            /// changes again; an answer is taken only for a question outstanding
            /// then; another caller never sees the task; nothing is answered
            /// after the task's time to live.
            #[test]
            fn any_sequence_keeps_the_task_s_rules(ops in proptest::collection::vec(op(), 0..40)) {
                let table = TaskTable::default();
                let mut now = 1_000u64;
                let created = table
                    .create("alice".into(), &json!({"name": "t"}), Timestamp::from_unix_secs(now), |b| b.fill(1))
                    .unwrap();
                let id = created["taskId"].as_str().unwrap().to_owned();
                let mut ended: Option<Value> = None;
                // Every key the task ever asked.
                let mut asked: Vec<String> = Vec::new();
                for op in ops {
                    let t = Timestamp::from_unix_secs(now);
                    let who = |alice: bool| if alice { "alice" } else { "mallory" };
                    let live = now <= 1_000 + TASK_TTL.as_secs();
                    match op {
                        Op::Get { owner_is_alice } => {
                            let got = table.status(Some(&json!({"taskId": id})), who(owner_is_alice), t);
                            let visible = owner_is_alice && live;
                            prop_assert_eq!(matches!(got, Outcome::Complete(_)), visible);
                            if let (Outcome::Complete(v), Some(end)) = (&got, &ended) {
                                prop_assert_eq!(&v["status"], &end["status"]);
                                prop_assert_eq!(&v["result"], &end["result"]);
                            }
                            if let Outcome::Complete(v) = &got {
                                prop_assert!(v.get("requestState").is_none());
                            }
                        }
                        Op::Update { keys, owner_is_alice } => {
                            let mut responses = Map::new();
                            for k in &keys {
                                responses.insert(format!("k{k}"), json!({"action": "accept"}));
                            }
                            let r = table.update(
                                Some(&json!({"taskId": id, "inputResponses": responses})),
                                who(owner_is_alice),
                                t,
                            );
                            prop_assert_eq!(r.is_ok(), owner_is_alice && live);
                            if let Ok(task) = table.get(&id, "alice", t) {
                                let state = lock(&task.state);
                                for k in state.answers.keys() {
                                    prop_assert!(asked.contains(k), "answer {} never asked", k);
                                }
                            }
                        }
                        Op::Cancel { owner_is_alice } => {
                            let r = table.cancel(Some(&json!({"taskId": id})), who(owner_is_alice), t);
                            prop_assert_eq!(r.is_ok(), owner_is_alice && live);
                            if r.is_ok() && ended.is_none() {
                                ended = Some(json!({"status": "cancelled", "result": null}));
                            }
                        }
                        Op::Finish(kind, first) => {
                            let outcome = match kind {
                                0 => {
                                    let mut asks = crate::wire::InputRequests::new();
                                    for k in first..first + 2 {
                                        if ended.is_none() {
                                            asked.push(format!("k{k}"));
                                        }
                                        asks.insert(
                                            format!("k{k}"),
                                            crate::wire::InputRequest::ListRoots { meta: None },
                                        );
                                    }
                                    Outcome::InputRequired(
                                        crate::wire::InputRequiredResult::new(
                                            crate::wire::CarrierMethod::ToolsCall,
                                            asks,
                                            Some("sealed".into()),
                                        )
                                        .unwrap(),
                                    )
                                }
                                1 => Outcome::Complete(json!({"content": [], "resultType": "complete"})),
                                _ => Outcome::Protocol(Error::internal("x")),
                            };
                            table.finish(&id, Some(outcome), t);
                            if ended.is_none() && kind > 0 {
                                let status = if kind == 1 { "completed" } else { "failed" };
                                let result = if kind == 1 { json!({"content": []}) } else { Value::Null };
                                ended = Some(json!({"status": status, "result": result}));
                            }
                        }
                        Op::Later(secs) => now += secs,
                    }
                }
            }
        }
    }

    mod on_the_service {
        use super::super::*;
        use crate::engine::{Confirmation, Engine};
        use crate::principal::Principal;
        use crate::result::ToolResult;
        use crate::seal::Keyring;
        use crate::service::{RequestContext, Service};
        use std::sync::atomic::AtomicU32;

        static DELETIONS: AtomicU32 = AtomicU32::new(0);

        fn service() -> Service {
            Service::new(Engine::new(Keyring::ephemeral(), "t"), "t", "0")
                .tool("quick", "answers", json!({"type": "object"}), |_| {
                    Ok(ToolResult::text("done"))
                })
                .tool(
                    "delete",
                    "asks, then deletes once",
                    json!({"type": "object"}),
                    |r| {
                        Ok(match r.confirm("confirm", "Delete?")? {
                            Confirmation::Accepted => {
                                r.once("delete", || {
                                    DELETIONS.fetch_add(1, Ordering::SeqCst);
                                    Ok(())
                                })?;
                                ToolResult::text("deleted")
                            }
                            _ => ToolResult::text("kept"),
                        })
                    },
                )
                .tool(
                    "ask_first",
                    "asks, then a task",
                    json!({"type": "object"}),
                    |r| {
                        let _ = r.confirm("go", "Go?")?;
                        Ok(ToolResult::text("went"))
                    },
                )
                .task_support("quick", TaskSupport::Optional)
                .task_support("delete", TaskSupport::Required)
                .task_support("ask_first", TaskSupport::AfterFirstRound)
                .with_tasks()
        }

        fn ctx(who: &str) -> RequestContext {
            RequestContext::new(
                Principal::subject(who),
                Timestamp::from_unix_secs(1_800_000_000),
                "c",
            )
        }

        fn meta(ext: bool) -> Value {
            let mut caps = json!({"elicitation": {}});
            if ext {
                caps["extensions"] = json!({EXTENSION: {}});
            }
            json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                   "io.modelcontextprotocol/clientCapabilities": caps})
        }

        fn send(
            s: &Service,
            who: &str,
            method: &str,
            mut params: Value,
            ext: bool,
        ) -> (Value, Option<TaskRun>) {
            params["_meta"] = meta(ext);
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
            let reply = s.handle_sync(body.to_string().as_bytes(), &ctx(who));
            (
                serde_json::from_str(reply.body.as_deref().unwrap()).unwrap(),
                reply.task,
            )
        }

        fn run(s: &Service, run: TaskRun) {
            let mut fut = std::pin::pin!(s.run_task(
                run,
                || Timestamp::from_unix_secs(1_800_000_001),
                std::future::pending()
            ));
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            assert!(
                fut.as_mut().poll(&mut cx).is_ready(),
                "a synchronous handler's run ends at once"
            );
        }

        #[test]
        fn a_task_is_made_only_for_a_client_that_declares_the_extension() {
            let s = service();
            let (sync, run_due) = send(&s, "alice", "tools/call", json!({"name": "quick"}), false);
            assert_eq!(sync["result"]["content"][0]["text"], "done");
            assert!(run_due.is_none());
            let (created, run_due) =
                send(&s, "alice", "tools/call", json!({"name": "quick"}), true);
            let r = &created["result"];
            assert_eq!(r["resultType"], "task");
            assert_eq!(r["status"], "working");
            for gone in ["requestState", "inputRequests", "result", "error", "task"] {
                assert!(r.get(gone).is_none(), "{gone}: {r}");
            }
            assert!(r["ttlMs"].as_u64().unwrap() > 0 && r["pollIntervalMs"].as_u64().unwrap() > 0);
            let id = r["taskId"].as_str().unwrap().to_owned();
            assert_eq!(id.len(), 32);
            run(&s, run_due.expect("a run is due"));
            let (got, _) = send(&s, "alice", "tasks/get", json!({"taskId": id}), true);
            assert_eq!(got["result"]["status"], "completed", "{got}");
            assert_eq!(got["result"]["result"]["content"][0]["text"], "done");
            // Another caller, an unknown id, a client without the extension.
            let (other, _) = send(&s, "mallory", "tasks/get", json!({"taskId": id}), true);
            assert_eq!(other["error"]["code"], -32602);
            let (unknown, _) = send(&s, "alice", "tasks/get", json!({"taskId": "nope"}), true);
            assert_eq!(unknown["error"]["code"], -32602);
            let (gated, _) = send(&s, "alice", "tasks/get", json!({"taskId": id}), false);
            assert_eq!(gated["error"]["code"], -32021);
            assert_eq!(
                gated["error"]["data"]["requiredCapabilities"]["extensions"][EXTENSION],
                json!({})
            );
        }

        #[test]
        fn a_task_s_questions_are_answered_through_tasks_update_and_once_runs_once() {
            let s = service();
            let (refused, _) = send(&s, "alice", "tools/call", json!({"name": "delete"}), false);
            assert_eq!(refused["error"]["code"], -32021, "a required task");
            let (created, due) = send(&s, "alice", "tools/call", json!({"name": "delete"}), true);
            let id = created["result"]["taskId"].as_str().unwrap().to_owned();
            run(&s, due.unwrap());
            let (got, _) = send(&s, "alice", "tasks/get", json!({"taskId": id}), true);
            assert_eq!(got["result"]["status"], "input_required", "{got}");
            assert_eq!(
                got["result"]["inputRequests"]["confirm"]["method"],
                "elicitation/create"
            );
            assert!(got["result"].get("requestState").is_none());
            let before = DELETIONS.load(Ordering::SeqCst);
            let answer = json!({"taskId": id, "inputResponses": {
                "confirm": {"action": "accept", "content": {"confirm": true}},
                "never-asked": {"anything": 1}}});
            let (ack, due) = send(&s, "alice", "tasks/update", answer.clone(), true);
            assert_eq!(ack["result"], json!({"resultType": "complete"}));
            run(
                &s,
                due.expect("every question answered: the next run is due"),
            );
            let (got, _) = send(&s, "alice", "tasks/get", json!({"taskId": id}), true);
            assert_eq!(got["result"]["status"], "completed", "{got}");
            assert_eq!(got["result"]["result"]["content"][0]["text"], "deleted");
            assert_eq!(DELETIONS.load(Ordering::SeqCst), before + 1);
            // The same answers again: the task ended; nothing runs.
            let (_, due) = send(&s, "alice", "tasks/update", answer, true);
            assert!(due.is_none());
            // Cancelling an ended task is the same acknowledgement.
            let (ack, _) = send(&s, "alice", "tasks/cancel", json!({"taskId": id}), true);
            assert_eq!(ack["result"], json!({"resultType": "complete"}));
        }

        #[test]
        fn the_first_round_is_mrtr_and_the_retry_becomes_the_task() {
            let s = service();
            let (irr, due) = send(
                &s,
                "alice",
                "tools/call",
                json!({"name": "ask_first"}),
                true,
            );
            assert_eq!(irr["result"]["resultType"], "input_required", "{irr}");
            assert!(irr["result"].get("taskId").is_none() && due.is_none());
            let state = irr["result"]["requestState"].clone();
            let retry = json!({"name": "ask_first", "requestState": state,
                "inputResponses": {"go": {"action": "accept", "content": {"confirm": true}}}});
            let (created, due) = send(&s, "alice", "tools/call", retry, true);
            assert_eq!(created["result"]["resultType"], "task", "{created}");
            assert!(created["result"].get("requestState").is_none());
            let id = created["result"]["taskId"].as_str().unwrap().to_owned();
            run(&s, due.unwrap());
            let (got, _) = send(&s, "alice", "tasks/get", json!({"taskId": id}), true);
            assert_eq!(
                got["result"]["result"]["content"][0]["text"], "went",
                "{got}"
            );
        }

        #[test]
        fn a_cancelled_task_stays_cancelled_and_does_not_run() {
            let s = service();
            let (created, due) = send(&s, "alice", "tools/call", json!({"name": "quick"}), true);
            let id = created["result"]["taskId"].as_str().unwrap().to_owned();
            let (ack, _) = send(&s, "alice", "tasks/cancel", json!({"taskId": id}), true);
            assert_eq!(ack["result"], json!({"resultType": "complete"}));
            run(&s, due.unwrap());
            let (got, _) = send(&s, "alice", "tasks/get", json!({"taskId": id}), true);
            assert_eq!(got["result"]["status"], "cancelled");
            assert!(got["result"].get("result").is_none());
            let (discover, _) = send(&s, "alice", "server/discover", json!({}), true);
            assert_eq!(
                discover["result"]["capabilities"]["extensions"][EXTENSION],
                json!({})
            );
        }
    }
}
