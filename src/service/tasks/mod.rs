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
//! [`Service::run_task`](super::Service::run_task),
//! [`Service::due_tasks`](super::Service::due_tasks)): the core does no IO.
//!
//! Tasks are kept in a [`TaskStore`]: in this process's memory
//! ([`Service::with_tasks`](super::Service::with_tasks)), or in a store a
//! fleet shares ([`Service::with_task_store`](super::Service::with_task_store);
//! `mrtr-redis` has one on Redis), where any instance serves any task. A run
//! holds a lease on its task, renewed as it goes; a run whose instance died
//! is taken over by another once the lease lapses, from the task's record:
//! the same handler with the same answers and sealed state, its `once` steps
//! keyed on the task (so one a run completed never runs again, on any
//! instance, with a shared replay guard).
//!
//! A client follows tasks on a `subscriptions/listen` stream that names them
//! (`notifications.taskIds`, with the extension declared; with
//! [`Service::with_changes`](super::Service::with_changes)): it is told each
//! status (`notifications/tasks`, the task as `tasks/get` gives it), read
//! from the store by the instance the stream is on
//! ([`Service::tell_task_status`](super::Service::tell_task_status)), so a
//! change any instance makes is told.
//!
//! Which tools become tasks is the application's choice ([`TaskSupport`],
//! [`Service::task_support`](super::Service::task_support)); a client gets a
//! task only when the request declares the extension in its capabilities.
//! Tasks are bound to the caller that created them: another caller's
//! `tasks/*` gets what an unknown id gets (-32602). They are bounded: at most
//! [`TASKS_MAX`] live, and
//! [`TASKS_PER_PRINCIPAL_MAX`] a
//! caller; a task is forgotten [`TASK_TTL`](crate::defaults::TASK_TTL) after it
//! was created.

mod record;
mod store;

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Poll, Waker};
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::defaults::{TASKS_MAX, TASKS_PER_PRINCIPAL_MAX};
use crate::engine::Outcome;
use crate::error::Error;
use crate::time::Timestamp;
use crate::wire::{META_CLIENT_CAPABILITIES, type_name};
use record::{Change, Creator, Record};
pub use store::{
    BoxFuture, MemoryTaskStore, StoredTask, TaskLimits, TaskStore, TaskStoreError, Versioned,
};

/// The extension's identifier, in `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// How many times a change to a task is tried against concurrent ones.
const WRITE_ATTEMPTS: usize = 16;

/// The most due tasks one [`Service::due_tasks`](super::Service::due_tasks) hands out.
const DUE_BATCH: usize = 64;

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

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The tasks extension of a service: where its tasks are, and its runs.
pub(super) struct Tasks {
    store: Arc<dyn TaskStore>,
    /// This service's runner id, in the leases it holds.
    holder: String,
    /// How long a lease lasts unless renewed.
    lease: Duration,
    /// The runs under way here, by task id: a `tasks/cancel` here stops one
    /// at once (one made elsewhere, at its next renewal).
    running: Mutex<HashMap<String, Arc<Cancel>>>,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks")
            .field("store", &self.store)
            .field("lease", &self.lease)
            .finish_non_exhaustive()
    }
}

/// A run's cancellation: a flag and the waker of the run waiting on it.
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
    id: String,
    correlation_id: String,
    /// The span of the request that made the run due, if traced.
    parent: Option<crate::wire::TraceParent>,
    /// The span the run runs in, as the transport's tracer has it.
    span: Option<crate::wire::TraceParent>,
}

impl TaskRun {
    /// The span of the request that made this run due (it created the task,
    /// or took its last answer), when the transport traced it: the parent of
    /// the run's own span. `None` for a run taken over from a lapsed lease.
    pub fn parent(&self) -> Option<crate::wire::TraceParent> {
        self.parent
    }

    /// This run, in the span `span` of the transport's tracer: sealed into the
    /// state of the task's first round, as a request's is
    /// ([`RequestContext::trace`](super::RequestContext::trace)), so each later
    /// run's log names it to link to.
    #[must_use]
    pub fn in_span(mut self, span: crate::wire::TraceParent) -> Self {
        self.span = Some(span);
        self
    }
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

/// What an unknown task, another caller's and an expired one all get.
fn unknown_task() -> Error {
    Error::invalid_params("Unknown task")
}

/// What a request gets while the store cannot answer.
fn unavailable(e: &TaskStoreError) -> Error {
    match e {
        TaskStoreError::Full { per_owner: true } => Error::invalid_request(format!(
            "too many tasks for this client (at most {TASKS_PER_PRINCIPAL_MAX}); wait for one to end"
        )),
        TaskStoreError::Full { per_owner: false } => {
            Error::invalid_request("too many tasks on this server; try again later")
        }
        TaskStoreError::Exists | TaskStoreError::Unavailable => {
            Error::internal(format!("task store: {e}"))
        }
    }
}

impl Tasks {
    fn new(store: Arc<dyn TaskStore>, holder: String, lease: Duration) -> Self {
        Self {
            store,
            holder,
            lease,
            running: Mutex::new(HashMap::new()),
        }
    }

    /// A lease of this runner's from `now`: the run a request here made due
    /// is this instance's, unless it does not start it within a lease.
    fn reserve(&self, now: Timestamp) -> record::Lease {
        record::Lease {
            holder: self.holder.clone(),
            until: now.add(self.lease),
        }
    }

    /// Reads the task `id` (`owner`'s, when given), applies `f`, and writes
    /// the record back if `f` changed it, again from a fresh read if another
    /// change came first.
    async fn modify<R>(
        &self,
        id: &str,
        owner: Option<&str>,
        now: Timestamp,
        mut f: impl FnMut(&mut Record) -> Change<R>,
    ) -> Result<R, Error> {
        for _ in 0..WRITE_ATTEMPTS {
            let read = self
                .store
                .load(id, now)
                .await
                .map_err(|e| unavailable(&e))?;
            let Some(read) = read else {
                return Err(unknown_task());
            };
            let mut record = Record::read(&read.record)?;
            if owner.is_some_and(|o| !record.is_owned_by(o)) {
                return Err(unknown_task());
            }
            match f(&mut record) {
                Change::Keep(r) => return Ok(r),
                Change::Write(r) => {
                    let stored = record.stored()?;
                    let replaced = self
                        .store
                        .replace(id, read.version, &stored)
                        .await
                        .map_err(|e| unavailable(&e))?;
                    if replaced {
                        return Ok(r);
                    }
                }
            }
        }
        Err(Error::internal(
            "a task changed under every attempt to update it",
        ))
    }

    /// Creates a task for the caller of `ctx` from a `tools/call`'s `params`,
    /// its id from `random`: the `CreateTaskResult`'s fields and the run due.
    async fn create(
        &self,
        params: &Value,
        ctx: &super::RequestContext,
        random: impl FnOnce(&mut [u8]),
    ) -> Result<(Value, TaskRun), Error> {
        let Value::Object(p) = params else {
            return Err(Error::invalid_params(format!(
                "params must be an object, not {}",
                type_name(params)
            )));
        };
        let mut bytes = [0u8; 16];
        random(&mut bytes);
        let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let owner = record::owner_digest(&ctx.caller_key());
        let record = Record::new(p, Creator::of(ctx), owner, ctx.now, self.reserve(ctx.now));
        let limits = TaskLimits {
            total: TASKS_MAX,
            per_owner: TASKS_PER_PRINCIPAL_MAX,
        };
        self.store
            .create(&id, &record.stored()?, ctx.now, limits)
            .await
            .map_err(|e| unavailable(&e))?;
        let run = TaskRun {
            correlation_id: ctx.correlation_id.clone(),
            id: id.clone(),
            parent: ctx.trace,
            span: None,
        };
        Ok((Value::Object(record.fields(&id)), run))
    }

    /// `tasks/get`: the task, with its questions, result or error.
    async fn status(&self, id: &str, owner: &str, now: Timestamp) -> Result<Value, Error> {
        let mut fields = self
            .modify(id, Some(owner), now, |r| Change::Keep(r.detailed(id)))
            .await?;
        fields.insert("resultType".into(), "complete".into());
        Ok(Value::Object(fields))
    }

    /// `tasks/update`: takes the answers to outstanding questions (others are
    /// ignored); `true` when none is left and the next run is due.
    async fn update(
        &self,
        id: &str,
        params: Option<&Value>,
        owner: &str,
        now: Timestamp,
    ) -> Result<bool, Error> {
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
        self.modify(id, Some(owner), now, |r| {
            r.answer(responses, now, self.reserve(now))
        })
        .await
    }

    /// `tasks/cancel`: a task not ended yet is cancelled, its run stopped (at
    /// once here; at its next lease renewal on another instance).
    async fn cancel(&self, id: &str, owner: &str, now: Timestamp) -> Result<(), Error> {
        self.modify(id, Some(owner), now, |r| r.cancel(now)).await?;
        if let Some(c) = lock(&self.running).get(id) {
            c.fire();
        }
        Ok(())
    }

    /// Keeps the lease on task `id` while its run goes on: renewed every
    /// third of its length; ends when the lease is lost (the task was
    /// cancelled, another runner took it, the store was out of reach past the
    /// lease's end) or at `deadline` (`Stop::Deadline`).
    async fn keep_lease<S, F>(
        &self,
        id: &str,
        clock: &impl Fn() -> Timestamp,
        sleep: &S,
        deadline: Timestamp,
    ) -> Stop
    where
        S: Fn(Duration) -> F,
        F: Future<Output = ()>,
    {
        let mut held_until = clock().add(self.lease);
        loop {
            sleep(self.lease / 3).await;
            let now = clock();
            if now >= deadline {
                return Stop::Deadline;
            }
            let until = now.add(self.lease);
            match self
                .modify(id, None, now, |r| r.renew(&self.holder, until))
                .await
            {
                Ok(true) => held_until = until,
                Ok(false) => return Stop::Lost,
                Err(_) if now >= held_until => return Stop::Lost,
                Err(_) => {}
            }
        }
    }
}

/// Why a run stopped before its handler ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// Cancelled here.
    Cancelled,
    /// The lease is no longer this runner's.
    Lost,
    /// The task's time to live ran out.
    Deadline,
}

impl super::Service {
    /// Serve the tasks extension, its tasks in this process's memory
    /// ([`MemoryTaskStore`]): tools marked with
    /// [`Service::task_support`](super::Service::task_support) become tasks for
    /// the clients that declare it, `tasks/get`, `tasks/update` and
    /// `tasks/cancel` are answered, and `server/discover` declares it. A task
    /// is then served by the instance that created it; a fleet shares a store
    /// ([`Service::with_task_store`](super::Service::with_task_store)).
    ///
    /// Its runs are the transport's to start, off the request
    /// ([`Reply::task`](super::Reply::task),
    /// [`Service::run_task`](super::Service::run_task)), with the runs a lapsed
    /// lease made due ([`Service::due_tasks`](super::Service::due_tasks)):
    /// `mrtr-server`'s do; a transport of your own that drops them leaves its
    /// tasks `working`. The rmcp adapter runs every tool in its request.
    #[must_use]
    pub fn with_tasks(self) -> Self {
        self.with_task_store(Arc::new(MemoryTaskStore::default()))
    }

    /// Serve the tasks extension ([`Service::with_tasks`](super::Service::with_tasks)),
    /// its tasks in `store`: every instance of a fleet that shares the store
    /// (and the keys, and a replay guard) serves every task.
    #[must_use]
    pub fn with_task_store(mut self, store: Arc<dyn TaskStore>) -> Self {
        let mut id = [0u8; 12];
        self.engine.sealer().fill_random(&mut id);
        let holder = id.iter().map(|b| format!("{b:02x}")).collect();
        self.tasks = Some(Tasks::new(store, holder, self.task_lease));
        self
    }

    /// How long a task's runner holds its lease unless it renews it (it does,
    /// every third of it): how soon another instance takes over the run of an
    /// instance that died (default [`TASK_LEASE`](crate::defaults::TASK_LEASE), at least 3 s). Keep it well
    /// above the difference between the fleet's clocks.
    #[must_use]
    pub fn with_task_lease(mut self, lease: Duration) -> Self {
        self.task_lease = lease.max(Duration::from_secs(3));
        if let Some(t) = &mut self.tasks {
            t.lease = self.task_lease;
        }
        self
    }

    /// The task lease ([`Service::with_task_lease`](super::Service::with_task_lease)),
    /// when the tasks extension is served: a transport looks for due tasks
    /// ([`Service::due_tasks`](super::Service::due_tasks)) about twice in it.
    pub fn task_lease(&self) -> Option<Duration> {
        self.tasks.as_ref().map(|t| t.lease)
    }

    /// How the tool `name` runs as a task ([`TaskSupport`]; the default is
    /// [`TaskSupport::Forbidden`]). Takes effect with
    /// [`Service::with_tasks`](super::Service::with_tasks).
    #[must_use]
    pub fn task_support(mut self, name: &str, support: TaskSupport) -> Self {
        self.task_support.insert(name.to_owned(), support);
        self
    }

    /// Whether the tasks extension is served
    /// ([`Service::with_tasks`](super::Service::with_tasks)).
    pub fn serves_tasks(&self) -> bool {
        self.tasks.is_some()
    }

    /// The tasks extension's part of routing: `tasks/*`, and a `tools/call` of
    /// a tool that may run as a task; `None` for what the rest of routing
    /// answers.
    pub(super) async fn tasks_route(
        &self,
        tasks: &Tasks,
        method: &str,
        params: Option<&Value>,
        ctx: &super::RequestContext,
    ) -> Option<(Outcome, Option<TaskRun>)> {
        match method {
            "tasks/get" | "tasks/update" | "tasks/cancel" => {
                Some(match tasks_method(tasks, method, params, ctx).await {
                    Ok((v, run)) => (Outcome::Complete(v), run),
                    Err(e) => (Outcome::Protocol(e), None),
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
                let created = tasks
                    .create(params?, ctx, |b| self.engine.sealer().fill_random(b))
                    .await;
                Some(match created {
                    Ok((fields, run)) => (Outcome::Complete(create_result(fields)), Some(run)),
                    Err(e) => (Outcome::Protocol(e), None),
                })
            }
            _ => None,
        }
    }

    /// Runs one round of a task (the transport starts it where a [`Reply`]
    /// says one is due, [`Reply::task`](super::Reply::task), or where
    /// [`Service::due_tasks`](super::Service::due_tasks) finds one): takes the
    /// task's lease (`None` when it cannot: the task is not working, or
    /// another runner holds it, or it is gone), then runs the handler of its
    /// tool on the engine's one path, with the answers and the sealed state
    /// the task holds, until it asks (the task waits for `tasks/update`),
    /// completes, fails, or is stopped: cancelled (the handler's future is
    /// dropped), its lease lost, or its time to live over (the task fails).
    ///
    /// `clock` reads the time; `sleep` is the runtime's timer, by which the
    /// lease is renewed every third of its length. It records the outcome in
    /// the task, and counts and records the run as a request is
    /// ([`crate::metrics`], the diagnostic log): what it returns is the run's
    /// log line.
    ///
    /// [`Reply`]: super::Reply
    pub async fn run_task<S, F>(
        &self,
        run: TaskRun,
        clock: impl Fn() -> Timestamp,
        sleep: S,
    ) -> Option<super::RequestLog>
    where
        S: Fn(Duration) -> F,
        F: Future<Output = ()>,
    {
        let tasks = self.tasks.as_ref()?;
        let now = clock();
        let until = now.add(tasks.lease);
        let mut found = None;
        let params = tasks
            .modify(&run.id, None, now, |r| {
                found = Some((r.creator.clone(), r.expires_at()));
                r.acquire(&tasks.holder, now, until)
            })
            .await
            .ok()
            .flatten()?;
        let (creator, expires_at) = found?;
        let cancel = Arc::new(Cancel::default());
        lock(&tasks.running).insert(run.id.clone(), Arc::clone(&cancel));
        let mut ctx = super::RequestContext::new(creator.principal(), now, run.correlation_id);
        ctx.peer = creator.peer();
        ctx.trace = run.span;
        let mut log = super::RequestLog {
            method: Some("tools/call".into()),
            ..super::RequestLog::default()
        };
        super::note_target(&mut log, "tools/call", Some(&params));
        let flow = crate::engine::TaskFlow {
            flow_id: record::flow_id(&run.id),
            deadline: expires_at,
        };
        let request = crate::wire::CarrierRequest::from_params_memo(
            crate::wire::CarrierMethod::ToolsCall,
            Some(&params),
            self.engine.metas(),
        );
        let work = self.run_request::<crate::result::ToolResult, _>(
            request,
            None,
            &ctx,
            &mut log,
            std::future::pending(),
            None,
            Some(flow),
        );
        let stop = async {
            let cancelled = async {
                cancel.wait().await;
                Stop::Cancelled
            };
            let kept = tasks.keep_lease(&run.id, &clock, &sleep, expires_at);
            futures_util::future::select(std::pin::pin!(cancelled), std::pin::pin!(kept))
                .await
                .factor_first()
                .0
        };
        let (outcome, stopped) =
            match futures_util::future::select(std::pin::pin!(work), std::pin::pin!(stop)).await {
                futures_util::future::Either::Left((o, _)) => (Some(o.into_json()), None),
                futures_util::future::Either::Right((s, _)) => (None, Some(s)),
            };
        lock(&tasks.running).remove(&run.id);
        let finished_at = clock();
        let stopped = match stopped {
            Some(Stop::Lost) if finished_at >= expires_at => Some(Stop::Deadline),
            s => s,
        };
        let name = log
            .target
            .as_deref()
            .and_then(|t| self.registry::<crate::result::ToolResult>().registered(t));
        crate::record::conclude(outcome.as_ref(), None, &ctx.correlation_id, &mut log, name);
        if outcome.is_none() {
            log.outcome = "stopped".into();
        }
        if outcome.is_some() || stopped == Some(Stop::Deadline) {
            // A run that lost its lease writes nothing: the task is another's
            // (or cancelled) now.
            let _ = tasks
                .modify(&run.id, None, finished_at, |r| {
                    r.finish(&tasks.holder, outcome.clone(), finished_at)
                })
                .await;
        }
        Some(log)
    }

    /// The runs due at `now` that nobody holds: tasks whose runner's lease
    /// lapsed (its instance died or lost the store), or whose answers came in
    /// while no run could start. A transport calls it about twice in a lease
    /// ([`Service::task_lease`](super::Service::task_lease)) and starts each
    /// with [`Service::run_task`](super::Service::run_task), which takes the
    /// lease first (so two instances never run one task at once). Empty when
    /// the tasks extension is not served or the store is out of reach.
    pub async fn due_tasks(&self, now: Timestamp) -> Vec<TaskRun> {
        let Some(tasks) = &self.tasks else {
            return Vec::new();
        };
        let ids = tasks.store.due(now, DUE_BATCH).await.unwrap_or_default();
        ids.into_iter()
            .filter(|id| !lock(&tasks.running).contains_key(id))
            .map(|id| {
                let mut c = [0u8; 8];
                self.engine.sealer().fill_random(&mut c);
                TaskRun {
                    id,
                    correlation_id: c.iter().map(|b| format!("{b:02x}")).collect(),
                    parent: None,
                    span: None,
                }
            })
            .collect()
    }
}

impl super::Service {
    /// Tells each subscription that follows tasks (`subscriptions/listen`
    /// with `notifications.taskIds`, the extension's status notifications) the
    /// status of each of its tasks that changed since it was last told (the
    /// first time, the status it finds): `notifications/tasks`, the task as
    /// `tasks/get` gives it. A task that ended is followed no more; one that
    /// is unknown to the subscriber (or another caller's) is dropped. Read
    /// from the store, so a change made on any instance of a fleet is told.
    /// A transport calls it about every
    /// [`TASK_POLL_INTERVAL`](crate::defaults::TASK_POLL_INTERVAL) (`mrtr-server`'s
    /// do); it does nothing without [`Service::with_tasks`](super::Service::with_tasks)
    /// and [`Service::with_changes`](super::Service::with_changes).
    pub async fn tell_task_status(&self, now: Timestamp) {
        let (Some(tasks), Some(changes)) = (&self.tasks, &self.changes) else {
            return;
        };
        let mut read: HashMap<String, Option<Record>> = HashMap::new();
        for followed in changes.followed_tasks() {
            let owner = record::owner_digest(&followed.caller);
            for (id, _) in &followed.tasks {
                if !read.contains_key(id) {
                    let found = match tasks.store.load(id, now).await {
                        Ok(found) => found.and_then(|v| Record::read(&v.record).ok()),
                        // Out of reach: told at a later call.
                        Err(_) => continue,
                    };
                    read.insert(id.clone(), found);
                }
                let Some(Some(record)) = read
                    .get(id)
                    .filter(|r| r.as_ref().is_some_and(|r| r.is_owned_by(&owner)))
                else {
                    followed.forget(id);
                    continue;
                };
                let task = record.detailed(id);
                let fingerprint = serde_json::to_string(&task).unwrap_or_default();
                followed.tell(id, fingerprint, task, record.status.is_terminal());
            }
        }
    }
}

/// `tasks/get`, `tasks/update` and `tasks/cancel`: the result, and the run
/// the request made due.
async fn tasks_method(
    tasks: &Tasks,
    method: &str,
    params: Option<&Value>,
    ctx: &super::RequestContext,
) -> Result<(Value, Option<TaskRun>), Error> {
    crate::wire::meta::RequestMeta::from_meta(params.and_then(|p| p.get("_meta")))?;
    if !declares_extension(params) {
        return Err(missing_extension());
    }
    let id = task_id(params)?;
    let owner = record::owner_digest(&ctx.caller_key());
    let ack = || json!({"resultType": "complete"});
    match method {
        "tasks/get" => Ok((tasks.status(id, &owner, ctx.now).await?, None)),
        "tasks/update" => {
            let due = tasks.update(id, params, &owner, ctx.now).await?;
            let run = due.then(|| TaskRun {
                id: id.to_owned(),
                correlation_id: ctx.correlation_id.clone(),
                parent: ctx.trace,
                span: None,
            });
            Ok((ack(), run))
        }
        _ => {
            tasks.cancel(id, &owner, ctx.now).await?;
            Ok((ack(), None))
        }
    }
}

/// The `taskId` of a `tasks/*` request.
fn task_id(params: Option<&Value>) -> Result<&str, Error> {
    params
        .and_then(|p| p.get("taskId"))
        .and_then(Value::as_str)
        .ok_or_else(|| Error::invalid_params("taskId must be a string"))
}

/// `CreateTaskResult` of a new task's fields.
pub(super) fn create_result(mut fields: Value) -> Value {
    if let Value::Object(o) = &mut fields {
        o.insert("resultType".into(), "task".into());
    }
    fields
}

#[cfg(test)]
mod tests;
