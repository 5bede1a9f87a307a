//! `redis`: one module per former test target.

mod replay_redis;
mod restart;
mod fleet;
