//! `redis`: one module per former test target.

mod fleet;
mod replay_redis;
mod restart;
mod tasks_redis;
