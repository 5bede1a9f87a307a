//! `--replay-store`: where `mrtr serve` keeps the claims of `once` steps.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mrtr::Timestamp;
use mrtr::defaults;
use mrtr::replay::{MemoryReplayGuard, ReplayGuard};
use mrtr::service::tasks::TaskStore;
use mrtr_server::ServerConfigError;

/// The replay guard of `mrtr serve` (`--replay-store`, `MRTR_REPLAY_STORE`).
#[derive(Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ReplayStore {
    /// `memory` (the default): a [`MemoryReplayGuard`] for this process only.
    /// Enough for one instance; a restart refuses the flows in flight.
    #[default]
    Memory,
    /// `redis://HOST:PORT[/DB]` or `rediss://…`: a store the
    /// fleet shares. The URL may carry a password; `Debug` hides it.
    Redis(String),
}

impl fmt::Debug for ReplayStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Memory => f.write_str("Memory"),
            Self::Redis(url) => f.debug_tuple("Redis").field(&redacted(url)).finish(),
        }
    }
}

impl ReplayStore {
    /// Parses `--replay-store`: `memory`, or a `redis://` or `rediss://` URL.
    ///
    /// # Errors
    /// [`ServerConfigError`] for anything else, or a URL the Redis client refuses.
    /// The URL is never quoted.
    pub fn parse(value: &str) -> Result<Self, ServerConfigError> {
        let value = value.trim();
        if value.eq_ignore_ascii_case("memory") {
            return Ok(Self::Memory);
        }
        let lower = value.to_ascii_lowercase();
        if !(lower.starts_with("redis://") || lower.starts_with("rediss://")) {
            return Err(ServerConfigError(
                "--replay-store: expected memory, redis://HOST:PORT[/DB] or rediss://HOST:PORT[/DB]"
                    .into(),
            ));
        }
        mrtr_redis::RedisReplayGuard::new(value, "")
            .map_err(|e| ServerConfigError(format!("--replay-store: {e}")))?;
        Ok(Self::Redis(value.to_owned()))
    }
}

/// The replay settings of a `ServeConfig`, as the functions below read them
/// (`ServeConfig::replay`), so that this module does not import the
/// configuration that holds it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Replay<'a> {
    /// `--replay-store`.
    pub(super) store: &'a ReplayStore,
    /// `--replay-max-claims`.
    pub(super) max_claims: Option<usize>,
    /// `--replay-max-claims-per-principal`.
    pub(super) max_claims_per_principal: Option<usize>,
    /// `--replay-store-allow-eviction`.
    pub(super) allow_eviction: bool,
    /// The audience the claims are kept under.
    pub(super) audience: &'a str,
}

/// Checks the replay settings of `cfg` together: the in-memory caps are in range
/// and apply to the in-memory store, the eviction opt-in to a Redis one.
pub(super) fn validate(cfg: &Replay<'_>) -> Result<(), ServerConfigError> {
    let caps = cfg.max_claims.is_some() || cfg.max_claims_per_principal.is_some();
    match cfg.store {
        ReplayStore::Redis(_) if caps => {
            return Err(ServerConfigError(
                "--replay-max-claims and --replay-max-claims-per-principal bound the in-memory \
                 replay store; a Redis store is bounded by its own maxmemory"
                    .into(),
            ));
        }
        ReplayStore::Memory if cfg.allow_eviction => {
            return Err(ServerConfigError(
                "--replay-store-allow-eviction is for a Redis replay store (--replay-store \
                 redis://…)"
                    .into(),
            ));
        }
        _ => {}
    }
    let ceiling = crate::defaults::REPLAY_MAX_CLAIMS_CEILING;
    let max = cfg.max_claims.unwrap_or(defaults::REPLAY_MAX_CLAIMS);
    if max == 0 || max > ceiling {
        return Err(ServerConfigError(format!(
            "--replay-max-claims must be between 1 and {ceiling}"
        )));
    }
    let per = cfg
        .max_claims_per_principal
        .unwrap_or(defaults::REPLAY_MAX_CLAIMS_PER_PRINCIPAL);
    if per == 0 || per > max {
        return Err(ServerConfigError(format!(
            "--replay-max-claims-per-principal must be between 1 and --replay-max-claims \
             (default {})",
            defaults::REPLAY_MAX_CLAIMS
        )));
    }
    Ok(())
}

/// The replay guard, and the task store that goes with it (`None`: the
/// service's own memory).
type Stores = (Arc<dyn ReplayGuard>, Option<Arc<dyn TaskStore>>);

/// The guard `cfg` asks for, and the store of the tasks extension's tasks
/// that goes with it: the same Redis, on the guard's connection (a fleet that
/// shares its claims shares its tasks), or `None` (the service's own memory).
/// An in-memory guard refuses states sealed before `started_at` and holds the
/// configured caps.
pub(super) fn stores(cfg: &Replay<'_>, started_at: Timestamp) -> Result<Stores, ServerConfigError> {
    match cfg.store {
        ReplayStore::Memory => Ok((
            Arc::new(
                MemoryReplayGuard::new(started_at)
                    .with_max_claims(cfg.max_claims.unwrap_or(defaults::REPLAY_MAX_CLAIMS))
                    .with_max_claims_per_principal(
                        cfg.max_claims_per_principal
                            .unwrap_or(defaults::REPLAY_MAX_CLAIMS_PER_PRINCIPAL),
                    ),
            ),
            None,
        )),
        ReplayStore::Redis(url) => {
            let guard = mrtr_redis::RedisReplayGuard::new(url, cfg.audience)
                .map_err(|e| ServerConfigError(format!("--replay-store: {e}")))?
                .allow_eviction(cfg.allow_eviction);
            let guard = Arc::new(guard);
            let tasks = mrtr_redis::RedisTaskStore::new(Arc::clone(&guard));
            Ok((guard, Some(Arc::new(tasks))))
        }
    }
}

/// Before serving with a Redis store: connects and reads its eviction policy.
/// A store that may evict claims (or whose policy cannot be read) stops the
/// start, unless `--replay-store-allow-eviction`; one that does not answer is
/// served anyway (its claims fail closed until it answers, and the policy is read
/// then).
///
/// # Errors
/// [`ServerConfigError`] (exit 2) naming the policy found, never the URL.
pub(super) async fn check_at_start(cfg: &Replay<'_>) -> Result<(), ServerConfigError> {
    if let ReplayStore::Redis(url) = cfg.store {
        use mrtr_redis::{RedisReplayGuard, StoreCheck};
        let probe = RedisReplayGuard::new(url, cfg.audience)
            .map_err(|e| ServerConfigError(format!("--replay-store: {e}")))?
            .allow_eviction(cfg.allow_eviction);
        match probe.check_store().await {
            found if found.refuses_claims() => {
                return Err(ServerConfigError(format!(
                    "--replay-store: the Redis replay store's {found}. Not starting: use a Redis \
                     (or Valkey) dedicated to mrtr with maxmemory-policy noeviction and \
                     appendonly yes, or pass --replay-store-allow-eviction to accept the risk \
                     (a replay after an eviction runs a once step again)"
                )));
            }
            StoreCheck::Unreachable => tracing::warn!(
                target: "mrtr::replay",
                "Redis replay store did not answer at start: serving anyway; once steps fail \
                 closed until it answers, and its maxmemory-policy is checked then"
            ),
            _ => {}
        }
    }
    Ok(())
}

/// Waits for the start of the next whole second and returns it. A server that
/// builds its in-memory guard then never takes a state sealed by the process
/// before it, even in the second of the restart, for its own.
pub(super) async fn fresh_second() -> Timestamp {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let next = Timestamp::from_unix_secs(since_epoch.as_secs().saturating_add(1));
    let rest = Duration::from_secs(1)
        .saturating_sub(Duration::from_nanos(u64::from(since_epoch.subsec_nanos())));
    tokio::time::sleep(rest).await;
    // Timers do not fire early, but the clock may be stepped: check it.
    while Timestamp::now() < next {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    next
}

/// The URL without its user, password and query: scheme, host, port and database.
fn redacted(url: &str) -> String {
    let url = url.split(['?', '#']).next().unwrap_or_default();
    match (url.split_once("://"), url.rfind('@')) {
        (Some((scheme, _)), Some(at)) => format!("{scheme}://…@{}", &url[at + 1..]),
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_memory_and_redis_urls_only() {
        assert_eq!(ReplayStore::parse("memory").unwrap(), ReplayStore::Memory);
        assert_eq!(ReplayStore::parse(" Memory ").unwrap(), ReplayStore::Memory);
        for bad in ["", "redis", "http://127.0.0.1:6379", "memcached://x"] {
            assert!(ReplayStore::parse(bad).is_err(), "{bad:?}");
        }
        let e = ReplayStore::parse("redis://:hunter2@[::1").unwrap_err();
        assert!(!e.0.contains("hunter2"), "{e}");
        {
            let s = ReplayStore::parse("redis://:hunter2@127.0.0.1:6379/3").unwrap();
            assert!(!format!("{s:?}").contains("hunter2"), "{s:?}");
            assert!(format!("{s:?}").contains("127.0.0.1:6379/3"), "{s:?}");
            assert!(ReplayStore::parse("rediss://redis.example:6380").is_ok());
            let s = ReplayStore::Redis("redis://h:1/0?password=hunter2".into());
            assert_eq!(format!("{s:?}"), r#"Redis("redis://h:1/0")"#);
        }
    }

    #[tokio::test]
    async fn a_fresh_second_has_begun_when_it_returns() {
        let before = Timestamp::now();
        let second = fresh_second().await;
        assert!(second > before);
        assert!(Timestamp::now() >= second);
    }
}
