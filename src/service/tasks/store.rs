//! Where tasks are kept: the [`TaskStore`] a service writes its task records
//! to, and the in-memory one ([`MemoryTaskStore`]).
//!
//! A store is a table of versioned records with three indexes, and nothing
//! more: the rules of a task (its statuses, who may see it, which answers it
//! takes, who runs it) are the service's, in one place, applied to the record
//! it reads and written back with a compare-and-set
//! ([`TaskStore::replace`]). So every instance of a fleet sharing one store
//! (`mrtr-redis`'s `RedisTaskStore`) serves every task: one creates it,
//! another takes its answers, a third reads its result, and a run another
//! instance lost (its lease lapsed) is taken over ([`TaskStore::due`]).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, MutexGuard, PoisonError};

pub use crate::replay::BoxFuture;
use crate::time::Timestamp;

/// One task as a store keeps it: the service's record (opaque to the store)
/// and the three things the store indexes it by.
#[derive(Clone, PartialEq, Eq)]
pub struct StoredTask {
    /// The record, as the service wrote it (JSON; the store never reads it).
    pub record: String,
    /// Whose task it is: a digest of the caller that created it (64 hex
    /// digits), counted against the per-caller cap.
    pub owner: String,
    /// When the store may forget it (its time to live).
    pub expires_at: Timestamp,
    /// When it is due to be run (a new task, one whose answers are all in,
    /// one whose runner's lease lapses then); `None` while it waits for its
    /// client or has ended.
    pub due_at: Option<Timestamp>,
}

impl fmt::Debug for StoredTask {
    // The record holds the task's arguments and answers: never printed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredTask")
            .field("record", &format_args!("<{} bytes>", self.record.len()))
            .field("expires_at", &self.expires_at)
            .field("due_at", &self.due_at)
            .finish_non_exhaustive()
    }
}

/// A task's record and the version it was read at, for [`TaskStore::replace`].
#[derive(Clone, PartialEq, Eq)]
pub struct Versioned {
    /// The record, as [`StoredTask::record`] has it.
    pub record: String,
    /// Its version: 1 when created, one more at each replacement.
    pub version: u64,
}

impl fmt::Debug for Versioned {
    // As a StoredTask's: the record is never printed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Versioned")
            .field("record", &format_args!("<{} bytes>", self.record.len()))
            .field("version", &self.version)
            .finish()
    }
}

/// The caps a store enforces when it creates a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskLimits {
    /// Live tasks in all.
    pub total: usize,
    /// Live tasks of one owner.
    pub per_owner: usize,
}

/// Why a store did not do what it was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TaskStoreError {
    /// A cap was reached ([`TaskLimits`]): `per_owner` when it was the owner's.
    #[error("too many tasks{}", if *per_owner { " for this owner" } else { "" })]
    Full {
        /// Whether the owner's own cap was reached (else the total).
        per_owner: bool,
    },
    /// A task with this id exists already (ids are random: never expected).
    #[error("a task with this id exists")]
    Exists,
    /// The store could not answer (unreachable, timed out, refused); the
    /// reason goes to the store's own log, never here.
    #[error("the task store is unavailable")]
    Unavailable,
}

/// A store of task records, shared by every instance that serves the same
/// tasks. Object-safe: the service holds an `Arc<dyn TaskStore>`
/// ([`Service::with_task_store`](crate::Service::with_task_store)).
///
/// A store must forget a task at its `expires_at`, and report a live one
/// whose `due_at` has come from [`due`](TaskStore::due); it never reads the
/// record itself.
///
/// ```
/// use futures_util::FutureExt;
/// use mrtr::Timestamp;
/// use mrtr::service::tasks::{MemoryTaskStore, StoredTask, TaskLimits, TaskStore};
///
/// // The memory store answers at once.
/// let store = MemoryTaskStore::default();
/// let now = Timestamp::from_unix_secs(1_800_000_000);
/// let task = StoredTask {
///     record: "{}".into(),
///     owner: "00".repeat(32),
///     expires_at: now.add_secs(3600),
///     due_at: Some(now),
/// };
/// let limits = TaskLimits { total: 10, per_owner: 1 };
/// store.create("t1", &task, now, limits).now_or_never().unwrap().unwrap();
/// assert!(store.create("t2", &task, now, limits).now_or_never().unwrap().is_err());
/// let read = store.load("t1", now).now_or_never().unwrap().unwrap().unwrap();
/// assert_eq!(read.version, 1);
/// assert_eq!(store.due(now, 10).now_or_never().unwrap().unwrap(), ["t1"]);
/// // A replacement made from a stale version is refused.
/// let ended = StoredTask { due_at: None, ..task };
/// assert!(store.replace("t1", 1, &ended).now_or_never().unwrap().unwrap());
/// assert!(!store.replace("t1", 1, &ended).now_or_never().unwrap().unwrap());
/// assert!(store.due(now, 10).now_or_never().unwrap().unwrap().is_empty());
/// // Gone at its expiry.
/// assert!(store.load("t1", now.add_secs(3600)).now_or_never().unwrap().unwrap().is_none());
/// ```
pub trait TaskStore: Send + Sync + fmt::Debug {
    /// Creates the task `id` at `now`, unless a cap of `limits` is reached
    /// (expired tasks not counted), at version 1.
    fn create<'a>(
        &'a self,
        id: &'a str,
        task: &'a StoredTask,
        now: Timestamp,
        limits: TaskLimits,
    ) -> BoxFuture<'a, Result<(), TaskStoreError>>;

    /// The task `id` and its version, unless it is unknown or expired at `now`.
    fn load<'a>(
        &'a self,
        id: &'a str,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<Option<Versioned>, TaskStoreError>>;

    /// Replaces the task `id` with `task` if it is still at `version` (then
    /// at `version + 1`): `Ok(false)` when it changed since (or is gone), and
    /// the caller reads it again. Its owner and expiry never change.
    fn replace<'a>(
        &'a self,
        id: &'a str,
        version: u64,
        task: &'a StoredTask,
    ) -> BoxFuture<'a, Result<bool, TaskStoreError>>;

    /// At most `max` ids of live tasks whose `due_at` is `now` or earlier.
    fn due<'a>(
        &'a self,
        now: Timestamp,
        max: usize,
    ) -> BoxFuture<'a, Result<Vec<String>, TaskStoreError>>;
}

/// The tasks of one process, in its memory: what
/// [`Service::with_tasks`](crate::Service::with_tasks) uses. A task is served
/// by the instance that created it, and lost with it.
#[derive(Debug, Default)]
pub struct MemoryTaskStore {
    tasks: Mutex<HashMap<String, (StoredTask, u64)>>,
}

impl MemoryTaskStore {
    fn tasks(&self) -> MutexGuard<'_, HashMap<String, (StoredTask, u64)>> {
        self.tasks.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn live(task: &StoredTask, now: Timestamp) -> bool {
    now < task.expires_at
}

impl TaskStore for MemoryTaskStore {
    fn create<'a>(
        &'a self,
        id: &'a str,
        task: &'a StoredTask,
        now: Timestamp,
        limits: TaskLimits,
    ) -> BoxFuture<'a, Result<(), TaskStoreError>> {
        let mut tasks = self.tasks();
        tasks.retain(|_, (t, _)| live(t, now));
        let result = if tasks.contains_key(id) {
            Err(TaskStoreError::Exists)
        } else if tasks.len() >= limits.total {
            Err(TaskStoreError::Full { per_owner: false })
        } else if tasks
            .values()
            .filter(|(t, _)| t.owner == task.owner)
            .count()
            >= limits.per_owner
        {
            Err(TaskStoreError::Full { per_owner: true })
        } else {
            tasks.insert(id.to_owned(), (task.clone(), 1));
            Ok(())
        };
        Box::pin(std::future::ready(result))
    }

    fn load<'a>(
        &'a self,
        id: &'a str,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<Option<Versioned>, TaskStoreError>> {
        let found = self
            .tasks()
            .get(id)
            .filter(|(t, _)| live(t, now))
            .map(|(t, version)| Versioned {
                record: t.record.clone(),
                version: *version,
            });
        Box::pin(std::future::ready(Ok(found)))
    }

    fn replace<'a>(
        &'a self,
        id: &'a str,
        version: u64,
        task: &'a StoredTask,
    ) -> BoxFuture<'a, Result<bool, TaskStoreError>> {
        let mut tasks = self.tasks();
        let replaced = match tasks.get_mut(id) {
            Some((t, v)) if *v == version => {
                t.record.clone_from(&task.record);
                t.due_at = task.due_at;
                *v += 1;
                true
            }
            _ => false,
        };
        Box::pin(std::future::ready(Ok(replaced)))
    }

    fn due<'a>(
        &'a self,
        now: Timestamp,
        max: usize,
    ) -> BoxFuture<'a, Result<Vec<String>, TaskStoreError>> {
        let ids = self
            .tasks()
            .iter()
            .filter(|(_, (t, _))| live(t, now) && t.due_at.is_some_and(|d| d <= now))
            .map(|(id, _)| id.clone())
            .take(max)
            .collect();
        Box::pin(std::future::ready(Ok(ids)))
    }
}
