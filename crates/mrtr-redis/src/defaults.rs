//! The Redis replay guard's defaults: its timeouts and how often it reads the
//! store's eviction policy again. The core's defaults are in [`mrtr::defaults`].

use std::time::Duration;

/// How long the Redis replay guard waits for the answer to one
/// claim, reconnecting included, before it answers unavailable: 250 ms.
/// [`RedisReplayGuard::command_timeout`](crate::RedisReplayGuard::command_timeout).
pub const REDIS_COMMAND_TIMEOUT: Duration = Duration::from_millis(250);

/// How long one attempt of the Redis replay guard to connect
/// may take: 1 second. [`RedisReplayGuard::connect_timeout`](crate::RedisReplayGuard::connect_timeout).
pub const REDIS_CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// How often the Redis replay guard reads the store's
/// `maxmemory-policy` again on a connection that stays up (it reads it on every
/// connect too): 60 seconds. [`RedisReplayGuard::policy_recheck`](crate::RedisReplayGuard::policy_recheck).
pub const REDIS_POLICY_RECHECK: Duration = Duration::from_secs(60);

/// How long a claim waits for replicas to acknowledge it (`WAIT`) when the Redis
/// store URL asks for them with `?wait=N` and no `wait_timeout_ms`: 100 ms.
pub const REDIS_WAIT_TIMEOUT: Duration = Duration::from_millis(100);
