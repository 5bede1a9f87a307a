//! Subscriptions (SEP-2575): `subscriptions/listen` opens a long-lived stream on
//! which the server sends the notifications the client opted in to, each
//! tagged with the listen request's id, the first of them the acknowledgement.
//!
//! The application announces changes through [`Changes`], the handle it gives
//! the service with [`Service::with_changes`](super::Service::with_changes) and
//! keeps a clone of: [`Changes::resource_updated`] for a resource whose content
//! changed, and [`Changes::hide`] / [`Changes::show`] to take a registered tool,
//! prompt or resource out of its list (and out of reach: calling it is then
//! "Unknown tool", as for one never registered) or put it back, which tells the
//! clients listening for that list. A transport asks [`Service::listen`](super::Service::listen) to open a
//! [`Subscription`] for a listen request, writes its acknowledgement, then each
//! notification [`Subscription::next`] gives, and, when it ends gracefully (the
//! application or the server called [`Changes::close_all`]), the final result.
//!
//! What a service with changes honours, and declares in `server/discover`:
//! `toolsListChanged` when it has tools (`tools.listChanged`),
//! `promptsListChanged` when it has prompts (`prompts.listChanged`), and
//! `resourcesListChanged` and `resourceSubscriptions` when it has resources or
//! resource templates (`resources.listChanged`, `resources.subscribe`); a filter
//! field it cannot honour is left out of the acknowledgement, as the revision
//! says. A list change waiting for a reader is one flag, however often the list
//! changes before it is read.
//!
//! # Bounds
//!
//! Every table a client can grow has a cap: at most
//! [`SUBSCRIPTIONS_MAX`](crate::defaults::SUBSCRIPTIONS_MAX) open subscriptions in
//! all and [`SUBSCRIPTIONS_PER_PRINCIPAL_MAX`](crate::defaults::SUBSCRIPTIONS_PER_PRINCIPAL_MAX)
//! per principal (another listen is refused, -32600), at most
//! [`SUBSCRIPTION_URIS_MAX`](crate::defaults::SUBSCRIPTION_URIS_MAX) URIs of at most
//! [`TEMPLATE_URI_MAX_BYTES`](crate::defaults::TEMPLATE_URI_MAX_BYTES) each in one
//! filter (-32602 beyond), and at most
//! [`SUBSCRIPTION_QUEUE_MAX`](crate::defaults::SUBSCRIPTION_QUEUE_MAX) notifications
//! waiting on one subscription. An update for a URI already waiting is not
//! queued again; a subscription whose reader falls further behind is ended
//! without a result (an abrupt end: the client listens again and reads what it
//! cares about afresh), never grown.

use std::collections::{BTreeSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::{Context, Poll, Waker};

use serde_json::{Map, Value, json};

use crate::defaults::{
    SUBSCRIPTION_QUEUE_MAX, SUBSCRIPTION_URIS_MAX, SUBSCRIPTIONS_MAX,
    SUBSCRIPTIONS_PER_PRINCIPAL_MAX, TEMPLATE_URI_MAX_BYTES,
};
use crate::error::Error;
use crate::wire::jsonrpc::RequestId;
use crate::wire::meta::RequestMeta;
use crate::wire::type_name;

/// The method that opens a subscription stream.
pub(super) const LISTEN: &str = "subscriptions/listen";

/// Whose quota a subscription counts against: [`RequestContext::caller_key`](super::RequestContext::caller_key).
pub(super) fn quota_key(ctx: &super::RequestContext) -> String {
    ctx.caller_key()
}

/// The `_meta` key naming the subscription a notification belongs to.
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The application's handle for announcing changes to the clients listening
/// (`subscriptions/listen`). Cheap to clone; every clone is the same hub.
///
/// ```
/// use mrtr::service::Changes;
/// let changes = Changes::new();
/// // ... give `changes.clone()` to the Service (`Service::with_changes`), then,
/// // when a resource's content changes:
/// changes.resource_updated("file:///notes/today.md");
/// assert_eq!(changes.open_subscriptions(), 0);
/// ```
#[derive(Clone, Default)]
pub struct Changes {
    hub: Arc<Hub>,
}

impl std::fmt::Debug for Changes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Changes")
            .field("open_subscriptions", &self.open_subscriptions())
            .finish()
    }
}

#[derive(Default)]
struct Hub {
    subscribers: Mutex<Vec<Weak<Shared>>>,
    /// The keys taken out of each list ([`List::index`]).
    hidden: Mutex<[BTreeSet<String>; 3]>,
    /// Whether any key is hidden: the carriers' check costs one load until one is.
    any_hidden: AtomicBool,
}

/// One of the lists a client can be told has changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum List {
    /// `tools/list`, keyed by tool name.
    Tools,
    /// `prompts/list`, keyed by prompt name.
    Prompts,
    /// `resources/list`, keyed by resource URI.
    Resources,
}

impl List {
    fn index(self) -> usize {
        match self {
            Self::Tools => 0,
            Self::Prompts => 1,
            Self::Resources => 2,
        }
    }

    /// The filter field that opts in to this list's changes.
    fn filter_field(self) -> &'static str {
        match self {
            Self::Tools => "toolsListChanged",
            Self::Prompts => "promptsListChanged",
            Self::Resources => "resourcesListChanged",
        }
    }

    fn notification(self) -> &'static str {
        match self {
            Self::Tools => "notifications/tools/list_changed",
            Self::Prompts => "notifications/prompts/list_changed",
            Self::Resources => "notifications/resources/list_changed",
        }
    }

    const ALL: [List; 3] = [List::Tools, List::Prompts, List::Resources];
}

/// One subscription's side the hub writes into.
struct Shared {
    /// The URIs whose updates it wants (a 2025-era session's grow and shrink
    /// with `resources/subscribe` and `unsubscribe`).
    uris: Mutex<BTreeSet<String>>,
    /// A 2025-era session's: past [`SUBSCRIPTION_QUEUE_MAX`] waiting updates the
    /// oldest is dropped (the session outlives any one stream), where a
    /// `subscriptions/listen` stream is ended.
    lossy: bool,
    /// The lists whose changes it wants ([`List::index`]).
    lists: [bool; 3],
    /// Whom it was opened by (its quota key).
    principal: String,
    /// The tasks whose status it follows (the tasks extension), each with
    /// the fingerprint of the status last told; a task leaves when it ends.
    tasks: Mutex<Vec<(String, Option<String>)>>,
    queue: Mutex<Queue>,
}

#[derive(Default)]
struct Queue {
    /// The lists changed and not yet told ([`List::index`]).
    changed: [bool; 3],
    /// The URIs updated and not yet read, oldest first.
    updated: VecDeque<Arc<str>>,
    /// The task statuses not yet read, by task: a newer one replaces the one
    /// waiting, so it holds at most one a followed task.
    task_status: VecDeque<(String, Map<String, Value>)>,
    waker: Option<Waker>,
    end: Option<End>,
}

/// Why a subscription ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// [`Changes::close_all`]: answered with the listen result.
    Closed,
    /// Its reader fell more than [`SUBSCRIPTION_QUEUE_MAX`] behind: no result.
    Overflowed,
}

impl Changes {
    /// A hub with no subscription yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Announces that the resource at `uri` changed: each subscription that
    /// named exactly this URI in `resourceSubscriptions` gets
    /// `notifications/resources/updated` (once, however often it changes before
    /// the subscriber reads it).
    pub fn resource_updated(&self, uri: &str) {
        let uri: Arc<str> = Arc::from(uri);
        self.each_live(|s| {
            if !lock(&s.uris).contains(&*uri) {
                return;
            }
            let mut q = lock(&s.queue);
            if q.end.is_some() || q.updated.iter().any(|u| **u == *uri) {
                return;
            }
            if q.updated.len() >= SUBSCRIPTION_QUEUE_MAX && s.lossy {
                q.updated.pop_front();
                q.updated.push_back(Arc::clone(&uri));
            } else if q.updated.len() >= SUBSCRIPTION_QUEUE_MAX {
                q.updated.clear();
                q.end = Some(End::Overflowed);
            } else {
                q.updated.push_back(Arc::clone(&uri));
            }
            if let Some(w) = q.waker.take() {
                w.wake();
            }
        });
    }

    /// Takes `key` (a tool or prompt name, a resource URI) out of `list`: it is
    /// no longer listed, and a request for it is refused as for an unknown one.
    /// The clients listening for that list's changes are told, when it was
    /// listed. Returns whether it was.
    pub fn hide(&self, list: List, key: &str) -> bool {
        self.set_hidden(list, key, true)
    }

    /// Puts `key` back into `list` (after [`Changes::hide`]), telling the
    /// clients listening for that list's changes. Returns whether it was hidden.
    pub fn show(&self, list: List, key: &str) -> bool {
        self.set_hidden(list, key, false)
    }

    /// Hides or shows `key` in `list`; tells the listeners when that changed it.
    fn set_hidden(&self, list: List, key: &str, hide: bool) -> bool {
        let changed = {
            let mut hidden = lock(&self.hub.hidden);
            let set = &mut hidden[list.index()];
            let changed = if hide {
                set.insert(key.to_owned())
            } else {
                set.remove(key)
            };
            let any = hidden.iter().any(|h| !h.is_empty());
            self.hub.any_hidden.store(any, Ordering::Release);
            changed
        };
        if changed {
            self.list_changed(list);
        }
        changed
    }

    /// Whether `key` is out of `list` ([`Changes::hide`]).
    pub fn is_hidden(&self, list: List, key: &str) -> bool {
        self.hub.any_hidden.load(Ordering::Acquire)
            && lock(&self.hub.hidden)[list.index()].contains(key)
    }

    /// Announces that `list` changed for a reason of the application's own (a
    /// definition it serves differently now): each subscription that asked
    /// for that list's changes is told once, however often it changes before
    /// the subscriber reads it. [`Changes::hide`] and [`Changes::show`] call it.
    pub fn list_changed(&self, list: List) {
        let i = list.index();
        self.each_live(|s| {
            if !s.lists[i] {
                return;
            }
            let mut q = lock(&s.queue);
            if q.end.is_some() || q.changed[i] {
                return;
            }
            q.changed[i] = true;
            if let Some(w) = q.waker.take() {
                w.wake();
            }
        });
    }

    /// Ends every open subscription gracefully (a server shutting down): each
    /// gives its waiting notifications, then its final result.
    pub fn close_all(&self) {
        self.each_live(|s| {
            let mut q = lock(&s.queue);
            q.end.get_or_insert(End::Closed);
            if let Some(w) = q.waker.take() {
                w.wake();
            }
        });
    }

    /// How many subscriptions are open now.
    pub fn open_subscriptions(&self) -> usize {
        lock(&self.hub.subscribers)
            .iter()
            .filter(|w| w.strong_count() > 0)
            .count()
    }

    /// Runs `f` on each live subscription, dropping the dead ones from the table.
    fn each_live(&self, mut f: impl FnMut(&Shared)) {
        let live: Vec<Arc<Shared>> = {
            let mut subs = lock(&self.hub.subscribers);
            subs.retain(|w| w.strong_count() > 0);
            subs.iter().filter_map(Weak::upgrade).collect()
        };
        for s in &live {
            f(s);
        }
    }

    /// Opens a subscription for `principal` on `uris`, within the caps.
    fn subscribe(
        &self,
        principal: String,
        uris: BTreeSet<String>,
        lists: [bool; 3],
        lossy: bool,
        tasks: Vec<String>,
    ) -> Result<Arc<Shared>, Error> {
        let mut subs = lock(&self.hub.subscribers);
        subs.retain(|w| w.strong_count() > 0);
        if subs.len() >= SUBSCRIPTIONS_MAX {
            return Err(Error::invalid_request(
                "too many open subscriptions on this server; try again later",
            ));
        }
        let mine = subs
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|s| s.principal == principal)
            .count();
        // A 2025-era session's counts against the total only: the transport's
        // table of sessions bounds each principal's.
        if mine >= SUBSCRIPTIONS_PER_PRINCIPAL_MAX && !lossy {
            return Err(Error::invalid_request(format!(
                "too many open subscriptions for this client (at most {SUBSCRIPTIONS_PER_PRINCIPAL_MAX}); close one first"
            )));
        }
        let shared = Arc::new(Shared {
            uris: Mutex::new(uris),
            lossy,
            lists,
            principal,
            tasks: Mutex::new(tasks.into_iter().map(|id| (id, None)).collect()),
            queue: Mutex::new(Queue::default()),
        });
        subs.push(Arc::downgrade(&shared));
        Ok(shared)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An open `subscriptions/listen` stream: its acknowledgement, its
/// notifications as they come, and its end. Dropping it closes it.
pub struct Subscription {
    id: RequestId,
    shared: Arc<Shared>,
    /// Whether its messages carry `_meta[META_SUBSCRIPTION_ID]`: a
    /// `subscriptions/listen` stream's do, a 2025-era session's do not.
    tagged: bool,
    /// The acknowledgement's `notifications`: what this server honours of the filter.
    honoured: Value,
    server_info: Value,
    log: super::RequestLog,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("uris", &lock(&self.shared.uris).len())
            .finish_non_exhaustive()
    }
}

impl Subscription {
    /// What the transport logs for the listen request that opened it.
    pub fn log(&self) -> &super::RequestLog {
        &self.log
    }

    pub(super) fn set_log(&mut self, log: super::RequestLog) {
        self.log = log;
    }

    /// The id of the listen request, which tags every message of the stream.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// `notifications/subscriptions/acknowledged`, the stream's first message.
    pub fn acknowledgement(&self) -> String {
        json!({
            "jsonrpc": "2.0",
            "method": "notifications/subscriptions/acknowledged",
            "params": {
                "notifications": self.honoured,
                "_meta": {META_SUBSCRIPTION_ID: self.id},
            },
        })
        .to_string()
    }

    /// The next notification (a JSON-RPC message), or `None` when the stream has
    /// ended: then [`Subscription::final_result`] says what, if anything, ends it.
    pub fn poll_next(&self, cx: &mut Context<'_>) -> Poll<Option<String>> {
        let mut q = lock(&self.shared.queue);
        if let Some(list) = List::ALL.into_iter().find(|l| q.changed[l.index()]) {
            q.changed[list.index()] = false;
            return Poll::Ready(Some(self.notification(list.notification(), Map::new())));
        }
        if let Some(uri) = q.updated.pop_front() {
            let mut params = Map::new();
            params.insert("uri".into(), Value::from(&*uri));
            return Poll::Ready(Some(
                self.notification("notifications/resources/updated", params),
            ));
        }
        if let Some((_, task)) = q.task_status.pop_front() {
            return Poll::Ready(Some(self.notification(TASK_STATUS, task)));
        }
        if q.end.is_some() {
            return Poll::Ready(None);
        }
        q.waker = Some(cx.waker().clone());
        Poll::Pending
    }

    /// The notification `method` with `params`, tagged with the listen id
    /// when this is a `subscriptions/listen` stream.
    fn notification(&self, method: &str, mut params: Map<String, Value>) -> String {
        if self.tagged {
            params.insert("_meta".into(), json!({META_SUBSCRIPTION_ID: self.id}));
        }
        json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string()
    }

    /// Adds `uri` to what a 2025-era session is told about
    /// (`resources/subscribe`), at most [`SUBSCRIPTION_URIS_MAX`] URIs.
    pub(crate) fn watch(&self, uri: &str) -> Result<(), Error> {
        if uri.is_empty() || uri.len() > TEMPLATE_URI_MAX_BYTES {
            return Err(Error::invalid_params(format!(
                "uri is empty or longer than {TEMPLATE_URI_MAX_BYTES} bytes"
            )));
        }
        let mut uris = lock(&self.shared.uris);
        if uris.len() >= SUBSCRIPTION_URIS_MAX && !uris.contains(uri) {
            return Err(Error::invalid_params(format!(
                "this session is subscribed to {SUBSCRIPTION_URIS_MAX} resources already; unsubscribe from one first"
            )));
        }
        uris.insert(uri.to_owned());
        Ok(())
    }

    /// Takes `uri` out of what a 2025-era session is told about
    /// (`resources/unsubscribe`); its updates still waiting are dropped.
    pub(crate) fn unwatch(&self, uri: &str) {
        lock(&self.shared.uris).remove(uri);
        lock(&self.shared.queue).updated.retain(|u| **u != *uri);
    }

    /// [`Subscription::poll_next`] as a future.
    pub async fn next(&self) -> Option<String> {
        std::future::poll_fn(|cx| self.poll_next(cx)).await
    }

    /// `notifications/cancelled` naming the listen request: how a server ends a
    /// subscription on stdio, where no stream closes (the transport sends it
    /// when [`Subscription::final_result`] is `None` at the end).
    pub fn cancellation(&self) -> String {
        json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {
                "requestId": self.id,
                "reason": "subscription ended: too many notifications waiting",
            },
        })
        .to_string()
    }

    /// Once the stream has ended: the listen request's result when it ended
    /// gracefully ([`Changes::close_all`]), `None` when it was cut short (its
    /// reader fell behind), or while it is still open.
    pub fn final_result(&self) -> Option<String> {
        match lock(&self.shared.queue).end {
            Some(End::Closed) => Some(
                json!({
                    "jsonrpc": "2.0",
                    "id": self.id,
                    "result": {
                        "resultType": "complete",
                        "_meta": {
                            META_SUBSCRIPTION_ID: self.id,
                            "io.modelcontextprotocol/serverInfo": self.server_info,
                        },
                    },
                })
                .to_string(),
            ),
            _ => None,
        }
    }
}

/// What a listen request asks for, checked.
#[derive(Debug)]
pub(super) struct Filter {
    pub(super) uris: BTreeSet<String>,
    lists: [bool; 3],
    tasks: Vec<String>,
    honoured: Map<String, Value>,
}

/// The notification of a followed task's status (the tasks extension): its
/// params are the task as `tasks/get` gives it.
const TASK_STATUS: &str = "notifications/tasks";

/// The most tasks one subscription follows.
pub(super) const SUBSCRIPTION_TASKS_MAX: usize = 16;

/// Whether a listen request may follow tasks (`notifications.taskIds`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TaskFollow {
    /// The service serves no tasks: `taskIds` is not honoured.
    NotServed,
    /// The request does not declare the extension: `taskIds` is refused (-32021).
    Undeclared,
    /// Honoured.
    Declared,
}

/// The tasks one subscription follows, for the service to look up
/// ([`Changes::followed_tasks`]).
pub(super) struct Followed {
    shared: Arc<Shared>,
    /// Its quota key: the caller whose tasks it may follow.
    pub(super) caller: String,
    /// The task ids, each with the fingerprint last told.
    pub(super) tasks: Vec<(String, Option<String>)>,
}

impl Followed {
    /// Stops following task `id` (it is unknown to this subscriber).
    pub(super) fn forget(&self, id: &str) {
        lock(&self.shared.tasks).retain(|(t, _)| t != id);
    }

    /// Tells the subscriber task `id`'s status (`task`, as `tasks/get` has
    /// it), whose fingerprint is `fingerprint`, unless it was told that one;
    /// a task that `ended` is followed no more.
    pub(super) fn tell(
        &self,
        id: &str,
        fingerprint: String,
        task: Map<String, Value>,
        ended: bool,
    ) {
        {
            let mut tasks = lock(&self.shared.tasks);
            let Some(at) = tasks.iter().position(|(t, _)| t == id) else {
                return;
            };
            if tasks[at].1.as_deref() == Some(fingerprint.as_str()) {
                return;
            }
            if ended {
                tasks.remove(at);
            } else {
                tasks[at].1 = Some(fingerprint);
            }
        }
        let mut q = lock(&self.shared.queue);
        if q.end.is_some() {
            return;
        }
        q.task_status.retain(|(t, _)| t != id);
        q.task_status.push_back((id.to_owned(), task));
        if let Some(w) = q.waker.take() {
            w.wake();
        }
    }
}

impl Changes {
    /// The open subscriptions that follow tasks, and which.
    pub(super) fn followed_tasks(&self) -> Vec<Followed> {
        let live: Vec<Arc<Shared>> = {
            let mut subs = lock(&self.hub.subscribers);
            subs.retain(|w| w.strong_count() > 0);
            subs.iter().filter_map(Weak::upgrade).collect()
        };
        live.into_iter()
            .filter_map(|shared| {
                let tasks = lock(&shared.tasks).clone();
                (!tasks.is_empty()).then(|| Followed {
                    caller: shared.principal.clone(),
                    tasks,
                    shared,
                })
            })
            .collect()
    }
}

/// Reads `params` of `subscriptions/listen`: `_meta` as every request's, and
/// the `notifications` filter. `served` says which lists the server has
/// ([`List::index`]); resources (its third) can also be subscribed to.
pub(super) fn filter(
    params: Option<&Value>,
    served: [bool; 3],
    follow: TaskFollow,
) -> Result<Filter, Error> {
    let resources = served[List::Resources.index()];
    let Some(params) = params else {
        return Err(Error::invalid_params("params is required"));
    };
    let Value::Object(params) = params else {
        return Err(Error::invalid_params(format!(
            "params must be an object, not {}",
            type_name(params)
        )));
    };
    RequestMeta::from_meta(params.get("_meta"))?;
    let Some(notifications) = params.get("notifications") else {
        return Err(Error::invalid_params("notifications is required"));
    };
    let Value::Object(notifications) = notifications else {
        return Err(Error::invalid_params(format!(
            "notifications must be an object, not {}",
            type_name(notifications)
        )));
    };
    let mut honoured = Map::new();
    let mut uris = BTreeSet::new();
    let mut lists = [false; 3];
    let mut tasks = Vec::new();
    for (key, value) in notifications {
        match key.as_str() {
            "toolsListChanged" | "promptsListChanged" | "resourcesListChanged" => {
                let Some(wanted) = value.as_bool() else {
                    return Err(Error::invalid_params(format!(
                        "notifications.{key} must be a boolean"
                    )));
                };
                let list = List::ALL
                    .into_iter()
                    .find(|l| l.filter_field() == key)
                    .unwrap_or(List::Tools);
                if wanted && served[list.index()] {
                    lists[list.index()] = true;
                    honoured.insert(key.clone(), Value::Bool(true));
                }
            }
            "resourceSubscriptions" => {
                uris = resource_uris(value)?;
                if resources {
                    honoured.insert(
                        key.clone(),
                        Value::Array(uris.iter().map(|u| Value::from(u.as_str())).collect()),
                    );
                }
            }
            "taskIds" if follow != TaskFollow::NotServed => {
                if follow == TaskFollow::Undeclared {
                    return Err(super::tasks::missing_extension());
                }
                tasks = task_ids(value)?;
                honoured.insert(
                    key.clone(),
                    Value::Array(tasks.iter().map(|t| Value::from(t.as_str())).collect()),
                );
            }
            // Fields of later revisions or extensions: not honoured, not refused.
            _ => {}
        }
    }
    if !resources {
        uris.clear();
    }
    Ok(Filter {
        uris,
        lists,
        tasks,
        honoured,
    })
}

/// `notifications.resourceSubscriptions`: at most [`SUBSCRIPTION_URIS_MAX`]
/// URIs of at most [`TEMPLATE_URI_MAX_BYTES`] each.
fn resource_uris(value: &Value) -> Result<BTreeSet<String>, Error> {
    let Value::Array(list) = value else {
        return Err(Error::invalid_params(
            "notifications.resourceSubscriptions must be an array of URIs",
        ));
    };
    if list.len() > SUBSCRIPTION_URIS_MAX {
        return Err(Error::invalid_params(format!(
            "notifications.resourceSubscriptions holds more than {SUBSCRIPTION_URIS_MAX} URIs"
        )));
    }
    let mut uris = BTreeSet::new();
    for uri in list {
        let Some(uri) = uri.as_str() else {
            return Err(Error::invalid_params(
                "notifications.resourceSubscriptions must be an array of URIs",
            ));
        };
        if uri.is_empty() || uri.len() > TEMPLATE_URI_MAX_BYTES {
            return Err(Error::invalid_params(format!(
                "a URI in notifications.resourceSubscriptions is empty or longer than {TEMPLATE_URI_MAX_BYTES} bytes"
            )));
        }
        uris.insert(uri.to_owned());
    }
    Ok(uris)
}

/// `notifications.taskIds`: at most [`SUBSCRIPTION_TASKS_MAX`] task ids.
fn task_ids(value: &Value) -> Result<Vec<String>, Error> {
    let invalid = || Error::invalid_params("notifications.taskIds must be an array of task ids");
    let Value::Array(list) = value else {
        return Err(invalid());
    };
    if list.len() > SUBSCRIPTION_TASKS_MAX {
        return Err(Error::invalid_params(format!(
            "notifications.taskIds holds more than {SUBSCRIPTION_TASKS_MAX} tasks"
        )));
    }
    let mut ids: Vec<String> = Vec::with_capacity(list.len());
    for id in list {
        let id = id
            .as_str()
            .filter(|i| !i.is_empty() && i.len() <= 256)
            .ok_or_else(invalid)?;
        if !ids.iter().any(|i| i == id) {
            ids.push(id.to_owned());
        }
    }
    Ok(ids)
}

/// Opens the subscription `filter` describes on `changes`.
pub(super) fn open(
    changes: &Changes,
    id: RequestId,
    principal: String,
    filter: Filter,
    server_info: Value,
) -> Result<Subscription, Error> {
    let shared = changes.subscribe(principal, filter.uris, filter.lists, false, filter.tasks)?;
    Ok(Subscription {
        id,
        shared,
        tagged: true,
        honoured: Value::Object(filter.honoured),
        server_info,
        log: super::RequestLog::default(),
    })
}

/// The subscription of a 2025-era session, opened at `initialize`: every list
/// the server has and, as `resources/subscribe` adds them, the URIs; untagged
/// messages, and a lossy queue. It counts against the caps as a listen stream.
pub(crate) fn session(
    changes: &Changes,
    principal: String,
    lists: [bool; 3],
    server_info: Value,
) -> Result<Subscription, Error> {
    let shared = changes.subscribe(principal, BTreeSet::new(), lists, true, Vec::new())?;
    Ok(Subscription {
        id: RequestId::Number(0.into()),
        shared,
        tagged: false,
        honoured: Value::Null,
        server_info,
        log: super::RequestLog::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> Value {
        json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {}})
    }

    fn open_on(changes: &Changes, who: &str, uris: &[&str]) -> Result<Subscription, Error> {
        let params = json!({"_meta": meta(), "notifications": {"resourceSubscriptions": uris}});
        let f = filter(Some(&params), [true; 3], TaskFollow::NotServed)?;
        open(
            changes,
            RequestId::from(7),
            who.into(),
            f,
            json!({"name": "t", "version": "1"}),
        )
    }

    fn poll(s: &Subscription) -> Poll<Option<String>> {
        s.poll_next(&mut Context::from_waker(Waker::noop()))
    }

    #[test]
    fn an_update_reaches_only_the_subscribers_of_its_uri_once_and_tagged() {
        let changes = Changes::new();
        let a = open_on(&changes, "alice", &["file:///a"]).unwrap();
        let b = open_on(&changes, "bob", &["file:///b"]).unwrap();
        assert!(poll(&a).is_pending());
        changes.resource_updated("file:///a");
        changes.resource_updated("file:///a"); // not queued twice
        changes.resource_updated("file:///c"); // nobody asked
        let Poll::Ready(Some(n)) = poll(&a) else {
            panic!("an update")
        };
        let n: Value = serde_json::from_str(&n).unwrap();
        assert_eq!(n["method"], "notifications/resources/updated");
        assert_eq!(n["params"]["uri"], "file:///a");
        assert_eq!(n["params"]["_meta"][META_SUBSCRIPTION_ID], 7);
        assert!(poll(&a).is_pending());
        assert!(poll(&b).is_pending());
    }

    #[test]
    fn the_acknowledgement_names_what_is_honoured() {
        let changes = Changes::new();
        let params = json!({"_meta": meta(), "notifications": {
            "toolsListChanged": true, "resourceSubscriptions": ["file:///a"], "futureThing": 1}});
        let s = open(
            &changes,
            RequestId::from(3),
            "p".into(),
            filter(Some(&params), [true; 3], TaskFollow::NotServed).unwrap(),
            json!({}),
        )
        .unwrap();
        let ack: Value = serde_json::from_str(&s.acknowledgement()).unwrap();
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
        assert_eq!(
            ack["params"]["notifications"],
            json!({"toolsListChanged": true, "resourceSubscriptions": ["file:///a"]})
        );
        assert_eq!(ack["params"]["_meta"][META_SUBSCRIPTION_ID], 3);
        // A server without tools does not honour toolsListChanged.
        let no_tools = filter(Some(&params), [false, true, true], TaskFollow::NotServed).unwrap();
        assert_eq!(
            Value::Object(no_tools.honoured),
            json!({"resourceSubscriptions": ["file:///a"]})
        );
        // Without resources nothing is honoured and no update is delivered.
        let none = filter(Some(&params), [false; 3], TaskFollow::NotServed).unwrap();
        assert!(none.uris.is_empty());
        assert_eq!(Value::Object(none.honoured), json!({}));
    }

    #[test]
    fn hiding_and_showing_tell_the_listeners_of_that_list_once() {
        let changes = Changes::new();
        let params = json!({"_meta": meta(), "notifications": {"promptsListChanged": true}});
        let prompts = open(
            &changes,
            RequestId::from(1),
            "p".into(),
            filter(Some(&params), [true; 3], TaskFollow::NotServed).unwrap(),
            json!({}),
        )
        .unwrap();
        let params = json!({"_meta": meta(), "notifications": {"toolsListChanged": true}});
        let tools = open(
            &changes,
            RequestId::from(2),
            "p".into(),
            filter(Some(&params), [true; 3], TaskFollow::NotServed).unwrap(),
            json!({}),
        )
        .unwrap();
        assert!(!changes.is_hidden(List::Tools, "a"));
        assert!(changes.hide(List::Tools, "a"));
        assert!(!changes.hide(List::Tools, "a"), "already hidden: no change");
        assert!(changes.is_hidden(List::Tools, "a"));
        assert!(!changes.is_hidden(List::Prompts, "a"), "another list");
        assert!(changes.show(List::Tools, "a"));
        assert!(!changes.is_hidden(List::Tools, "a"));
        // Two changes, one notification; none for the prompts listener.
        let Poll::Ready(Some(n)) = poll(&tools) else {
            panic!("a change")
        };
        let n: Value = serde_json::from_str(&n).unwrap();
        assert_eq!(n["method"], "notifications/tools/list_changed");
        assert_eq!(n["params"]["_meta"][META_SUBSCRIPTION_ID], 2);
        assert!(poll(&tools).is_pending());
        assert!(poll(&prompts).is_pending());
        changes.list_changed(List::Prompts);
        let Poll::Ready(Some(n)) = poll(&prompts) else {
            panic!("a change")
        };
        assert!(n.contains("notifications/prompts/list_changed"), "{n}");
        assert!(!changes.show(List::Resources, "never hidden"));
    }

    #[test]
    fn close_all_ends_with_the_result_after_what_was_waiting() {
        let changes = Changes::new();
        let s = open_on(&changes, "alice", &["file:///a"]).unwrap();
        assert_eq!(changes.open_subscriptions(), 1);
        assert!(s.final_result().is_none());
        changes.resource_updated("file:///a");
        changes.close_all();
        assert!(matches!(poll(&s), Poll::Ready(Some(_))));
        assert!(matches!(poll(&s), Poll::Ready(None)));
        let r: Value = serde_json::from_str(&s.final_result().unwrap()).unwrap();
        assert_eq!(r["id"], 7);
        assert_eq!(r["result"]["resultType"], "complete");
        assert_eq!(r["result"]["_meta"][META_SUBSCRIPTION_ID], 7);
        drop(s);
        assert_eq!(changes.open_subscriptions(), 0);
    }

    #[test]
    fn a_reader_that_falls_behind_is_cut_off_not_grown() {
        const { assert!(SUBSCRIPTION_URIS_MAX > SUBSCRIPTION_QUEUE_MAX) };
        let changes = Changes::new();
        let uris: Vec<String> = (0..SUBSCRIPTION_URIS_MAX)
            .map(|i| format!("file:///{i}"))
            .collect();
        let refs: Vec<&str> = uris.iter().map(String::as_str).collect();
        let s = open_on(&changes, "alice", &refs).unwrap();
        // Up to the cap, each update waits for the reader.
        for u in &refs[..SUBSCRIPTION_QUEUE_MAX] {
            changes.resource_updated(u);
        }
        assert_eq!(lock(&s.shared.queue).updated.len(), SUBSCRIPTION_QUEUE_MAX);
        // One more and the subscription ends, its queue dropped.
        changes.resource_updated(refs[SUBSCRIPTION_QUEUE_MAX]);
        assert!(lock(&s.shared.queue).updated.is_empty());
        assert!(matches!(poll(&s), Poll::Ready(None)));
        assert!(s.final_result().is_none(), "cut short: no result");
        let c: Value = serde_json::from_str(&s.cancellation()).unwrap();
        assert_eq!(c["method"], "notifications/cancelled");
        assert_eq!(c["params"]["requestId"], 7);
        assert!(c.get("id").is_none(), "a notification");
    }

    #[test]
    fn the_caps_refuse_more_subscriptions_and_uris() {
        let changes = Changes::new();
        let mut held = Vec::new();
        for _ in 0..SUBSCRIPTIONS_PER_PRINCIPAL_MAX {
            held.push(open_on(&changes, "alice", &["file:///a"]).unwrap());
        }
        let e = open_on(&changes, "alice", &["file:///a"]).unwrap_err();
        assert_eq!(e.code(), -32600);
        // Another principal still may; a closed one frees a place.
        assert!(open_on(&changes, "bob", &["file:///a"]).is_ok());
        held.pop();
        assert!(open_on(&changes, "alice", &["file:///a"]).is_ok());
        // Too many URIs, a non-string, a missing filter, a bad type.
        let many: Vec<String> = (0..=SUBSCRIPTION_URIS_MAX)
            .map(|i| format!("u:{i}"))
            .collect();
        let p = json!({"_meta": meta(), "notifications": {"resourceSubscriptions": many}});
        assert_eq!(
            filter(Some(&p), [true; 3], TaskFollow::NotServed)
                .unwrap_err()
                .code(),
            -32602
        );
        let p = json!({"_meta": meta(), "notifications": {"resourceSubscriptions": [1]}});
        assert_eq!(
            filter(Some(&p), [true; 3], TaskFollow::NotServed)
                .unwrap_err()
                .code(),
            -32602
        );
        let p = json!({"_meta": meta()});
        assert_eq!(
            filter(Some(&p), [true; 3], TaskFollow::NotServed)
                .unwrap_err()
                .code(),
            -32602
        );
        let p = json!({"_meta": meta(), "notifications": {"toolsListChanged": "yes"}});
        assert_eq!(
            filter(Some(&p), [true; 3], TaskFollow::NotServed)
                .unwrap_err()
                .code(),
            -32602
        );
        assert_eq!(
            filter(None, [true; 3], TaskFollow::NotServed)
                .unwrap_err()
                .code(),
            -32602
        );
        let p = json!({"notifications": {}});
        assert_eq!(
            filter(Some(&p), [true; 3], TaskFollow::NotServed)
                .unwrap_err()
                .code(),
            -32602
        );
    }
}
