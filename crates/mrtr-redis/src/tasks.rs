//! [`RedisTaskStore`]: the tasks extension's [`TaskStore`] on the Redis a
//! fleet's replay guard uses, on the guard's own connection.

use std::fmt;
use std::sync::Arc;

use ::redis::RedisError;
use ::redis::aio::MultiplexedConnection;

use mrtr::Timestamp;
use mrtr::service::tasks::{
    BoxFuture, StoredTask, TaskLimits, TaskStore, TaskStoreError, Versioned,
};

use super::connection::NotReady;
use super::{RedisReplayGuard, log_error};

/// Creates a task within the caps. KEYS: the task, every task, the owner's
/// tasks, the due tasks. ARGV: id, record, expiry (ms), due (ms, or empty),
/// now (ms), the total cap, the owner's cap. 0 created, 1 full, 2 the owner's
/// cap, 3 exists.
const CREATE: &str = r"
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[5])
if redis.call('EXISTS', KEYS[1]) == 1 then return 3 end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[6]) then return 1 end
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[7]) then return 2 end
redis.call('HSET', KEYS[1], 'v', 1, 'e', ARGV[3], 'r', ARGV[2])
redis.call('PEXPIREAT', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
redis.call('PEXPIREAT', KEYS[3], ARGV[3])
if ARGV[4] ~= '' then redis.call('ZADD', KEYS[4], ARGV[4], ARGV[1]) end
return 0
";

/// Replaces a task at a version. KEYS: the task, the due tasks. ARGV: id,
/// version, record, due (ms, or empty). 1 replaced, 0 not.
const REPLACE: &str = r"
local v = redis.call('HGET', KEYS[1], 'v')
if (not v) or v ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], 'v', tonumber(ARGV[2]) + 1, 'r', ARGV[3])
if ARGV[4] ~= '' then
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
else
  redis.call('ZREM', KEYS[2], ARGV[1])
end
return 1
";

/// The due tasks' ids. KEYS: the due tasks. ARGV: now (ms), the most, the
/// prefix of a task's key. Ids of tasks gone are dropped from the index.
const DUE: &str = r"
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
local out = {}
for _, id in ipairs(ids) do
  if redis.call('EXISTS', ARGV[3] .. id) == 1 then
    table.insert(out, id)
  else
    redis.call('ZREM', KEYS[1], id)
  end
end
return out
";

/// The tasks of a fleet, in the Redis its replay guard uses
/// ([`RedisReplayGuard`]), on the guard's connection and with its settings:
/// its URL, timeouts and eviction rule (on a store that may evict keys, tasks
/// are refused as claims are: a task evicted mid-flight would be lost).
///
/// Each task is one hash, `<prefix>task:<id>`, expiring with the task (its
/// record, version and expiry); three sorted sets index them: every task
/// (for the total cap), each owner's (`<prefix>tasks:owner:<digest>`, for the
/// per-caller cap) and the due ones (`<prefix>tasks:due`, for takeovers).
/// Each change is one Lua script, so a cap and a compare-and-set hold across
/// the fleet. The record holds the task's arguments and answers: keep the
/// store as private as the servers (an ACL, `rediss://`).
///
/// ```no_run
/// use std::sync::Arc;
/// use mrtr_redis::{RedisReplayGuard, RedisTaskStore};
///
/// # fn main() -> Result<(), mrtr_redis::StoreUrlError> {
/// let guard = Arc::new(RedisReplayGuard::new("redis://127.0.0.1:6379", "https://mcp.example")?);
/// let tasks = RedisTaskStore::new(Arc::clone(&guard));
/// let engine = mrtr::engine::Engine::new(mrtr::Keyring::ephemeral(), "https://mcp.example")
///     .with_replay_guard(guard);
/// let service = mrtr::Service::new(engine, "example", "1.0").with_task_store(Arc::new(tasks));
/// # let _ = service; Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisTaskStore {
    guard: Arc<RedisReplayGuard>,
}

impl fmt::Debug for RedisTaskStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisTaskStore")
            .field("guard", &self.guard)
            .finish()
    }
}

fn ms(t: Timestamp) -> u64 {
    t.unix_secs().saturating_mul(1000)
}

fn due_arg(due: Option<Timestamp>) -> String {
    due.map(|t| ms(t).to_string()).unwrap_or_default()
}

impl RedisTaskStore {
    /// The tasks on `guard`'s Redis, under its key prefix.
    pub fn new(guard: Arc<RedisReplayGuard>) -> Self {
        Self { guard }
    }

    fn task_key(&self, id: &str) -> String {
        format!("{}task:{id}", self.guard.key_prefix())
    }

    fn index_key(&self, which: &str) -> String {
        format!("{}tasks{which}", self.guard.key_prefix())
    }

    /// Runs `op` on the guard's connection within its command timeout.
    async fn on_connection<T, F, Fut>(
        &self,
        doing: &'static str,
        op: F,
    ) -> Result<T, TaskStoreError>
    where
        F: FnOnce(MultiplexedConnection) -> Fut,
        Fut: std::future::Future<Output = Result<T, RedisError>>,
    {
        let Some(link) = self.guard.link() else {
            tracing::warn!(target: "mrtr::tasks", "the Redis task store needs a tokio runtime");
            return Err(TaskStoreError::Unavailable);
        };
        let work = async {
            match link.ready().await {
                Ok(conn) => op(conn).await.map_err(|e| {
                    log_error(doing, &e);
                    if e.code().is_none() {
                        link.suspect.notify_one();
                    }
                    TaskStoreError::Unavailable
                }),
                Err(NotReady::Refused(check)) => {
                    tracing::warn!(
                        target: "mrtr::tasks",
                        "task store refused: the Redis store's {check} (set maxmemory-policy \
                         noeviction, or allow eviction explicitly)"
                    );
                    Err(TaskStoreError::Unavailable)
                }
                Err(NotReady::Gone) => Err(TaskStoreError::Unavailable),
            }
        };
        match tokio::time::timeout(self.guard.claim_timeout(), work).await {
            Ok(r) => r,
            Err(_) => {
                link.suspect.notify_one();
                tracing::warn!(target: "mrtr::tasks", doing, "Redis task store did not answer in time");
                Err(TaskStoreError::Unavailable)
            }
        }
    }
}

impl TaskStore for RedisTaskStore {
    fn create<'a>(
        &'a self,
        id: &'a str,
        task: &'a StoredTask,
        now: Timestamp,
        limits: TaskLimits,
    ) -> BoxFuture<'a, Result<(), TaskStoreError>> {
        Box::pin(async move {
            let mut cmd = ::redis::cmd("EVAL");
            cmd.arg(CREATE)
                .arg(4)
                .arg(self.task_key(id))
                .arg(self.index_key(""))
                .arg(self.index_key(&format!(":owner:{}", task.owner)))
                .arg(self.index_key(":due"))
                .arg(id)
                .arg(&task.record)
                .arg(ms(task.expires_at))
                .arg(due_arg(task.due_at))
                .arg(ms(now))
                .arg(limits.total)
                .arg(limits.per_owner);
            let code: i64 = self
                .on_connection("creating a task", |mut c| async move {
                    cmd.query_async(&mut c).await
                })
                .await?;
            match code {
                0 => Ok(()),
                1 => Err(TaskStoreError::Full { per_owner: false }),
                2 => Err(TaskStoreError::Full { per_owner: true }),
                _ => Err(TaskStoreError::Exists),
            }
        })
    }

    fn load<'a>(
        &'a self,
        id: &'a str,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<Option<Versioned>, TaskStoreError>> {
        Box::pin(async move {
            let key = self.task_key(id);
            let (version, expires, record): (Option<u64>, Option<u64>, Option<String>) = self
                .on_connection("reading a task", |mut c| async move {
                    ::redis::cmd("HMGET")
                        .arg(key)
                        .arg("v")
                        .arg("e")
                        .arg("r")
                        .query_async(&mut c)
                        .await
                })
                .await?;
            let (Some(version), Some(expires), Some(record)) = (version, expires, record) else {
                return Ok(None);
            };
            if ms(now) >= expires {
                return Ok(None);
            }
            Ok(Some(Versioned { record, version }))
        })
    }

    fn replace<'a>(
        &'a self,
        id: &'a str,
        version: u64,
        task: &'a StoredTask,
    ) -> BoxFuture<'a, Result<bool, TaskStoreError>> {
        Box::pin(async move {
            let mut cmd = ::redis::cmd("EVAL");
            cmd.arg(REPLACE)
                .arg(2)
                .arg(self.task_key(id))
                .arg(self.index_key(":due"))
                .arg(id)
                .arg(version)
                .arg(&task.record)
                .arg(due_arg(task.due_at));
            let replaced: i64 = self
                .on_connection("updating a task", |mut c| async move {
                    cmd.query_async(&mut c).await
                })
                .await?;
            Ok(replaced == 1)
        })
    }

    fn due<'a>(
        &'a self,
        now: Timestamp,
        max: usize,
    ) -> BoxFuture<'a, Result<Vec<String>, TaskStoreError>> {
        Box::pin(async move {
            let mut cmd = ::redis::cmd("EVAL");
            cmd.arg(DUE)
                .arg(1)
                .arg(self.index_key(":due"))
                .arg(ms(now))
                .arg(max)
                .arg(self.task_key(""));
            let ids: Vec<String> = self
                .on_connection("listing due tasks", |mut c| async move {
                    cmd.query_async(&mut c).await
                })
                .await?;
            Ok(ids)
        })
    }
}
