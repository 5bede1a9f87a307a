//! A [`ReplayGuard`] a fleet shares through Redis, and the tasks extension's
//! [`RedisTaskStore`] beside it.
//!
//! The guard, its options and its keys are here; `claim` has the claims
//! (`SET NX`, and `WAIT`), `connection` the task that keeps the connection,
//! `policy` what the store's `maxmemory-policy` means for claims, and `tasks`
//! the task store on the guard's connection.

mod claim;
mod connection;
pub mod defaults;
mod policy;
mod tasks;
#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

use ::redis::{Client, RedisError};
use sha2::{Digest, Sha256};

use mrtr::replay::Claim;

use connection::{Link, State};
pub use policy::StoreCheck;
pub use tasks::RedisTaskStore;

// Named only in the docs.
#[cfg(doc)]
use mrtr::replay::{ClaimOutcome, ReplayGuard};

/// Lowercase hexadecimal, as the keys name digests.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Domain label of the per-audience key prefix.
const AUDIENCE_LABEL: &[u8] = b"mrtr/replay/v1/audience";

/// The most replicas `?wait=N` may ask for.
const MAX_WAIT_REPLICAS: u32 = 64;

/// The longest `?wait_timeout_ms=T` may be: 10 seconds.
const MAX_WAIT_TIMEOUT_MS: u64 = 10_000;

/// A replay guard on a Redis server (or a compatible one: Valkey, KeyDB), shared
/// by every instance of a fleet.
///
/// Each claim is one `SET key 1 NX PX ttl`:
///
/// - **key**: `mrtr:<audience>:<claim>`, where `<audience>` is 32 hex digits of a
///   SHA-256 of the audience (so services sharing a Redis never collide) and
///   `<claim>` the 64 hex digits of [`Claim::store_key`], a digest of the flow id
///   and the step. No token, flow id or step name reaches Redis.
/// - **ttl**: from the request's `now` through the second [`Claim::until`] names
///   (the flow's deadline plus twice the skew: see [`crate`]), so
///   `until - now + 1` seconds; Redis drops the key itself, by its own clock.
///
/// # The store must keep its keys
///
/// A claim Redis drops early is a step that can run twice. So, on every connect
/// and reconnect (and every [`policy_recheck`](RedisReplayGuard::policy_recheck),
/// 60 s by default, on a connection that stays up) the guard reads
/// `CONFIG GET maxmemory-policy`:
///
/// - `noeviction`: claims are made. A full Redis then refuses writes (`OOM`), and
///   claims fail closed.
/// - any other policy (`allkeys-*` evicts claims like any key; `volatile-*` evicts
///   keys with a TTL, and every claim has one, so on a Redis whose other data has
///   none the claims go first): claims are **refused** ([`ClaimOutcome::Unavailable`],
///   the step does not run), and an ERROR line says why, unless the operator
///   opted in with [`allow_eviction`](RedisReplayGuard::allow_eviction) (then a
///   WARN line, and claims are made).
/// - the policy cannot be read (managed services often forbid `CONFIG`: `ERR
///   unknown command`, or `NOPERM` under an ACL): the guard cannot rule eviction
///   out, so it refuses claims in the same way, unless the operator opted in with
///   [`allow_eviction`](RedisReplayGuard::allow_eviction) after checking the
///   policy in the service's own settings.
///
/// Use a Redis (or Valkey) dedicated to the guard, with `maxmemory-policy
/// noeviction` and an append-only file (`appendonly yes`): a Redis restarted
/// without persistence forgets the claims of open flows. With replicas, a claim
/// the primary acknowledged may not have reached a replica yet when a failover
/// promotes it: the claim is lost and a replay runs the step again. Ask for
/// replica acknowledgements with `?wait=N` on the URL (see [`RedisReplayGuard::new`]);
/// The `mrtr` binary's operations chapter (`mrtr_cli::manual::operations`) has
/// the whole setup.
///
/// # Connection
///
/// One multiplexed, pipelined connection shared by all claims, kept by a
/// background task that reconnects after a failure (and reads the policy again
/// before any claim goes over the new connection). It starts lazily, on the
/// first claim (inside a tokio runtime), so a server starts while Redis is down;
/// its claims are unavailable until Redis answers.
///
/// Every claim is bounded by the command timeout (default 250 ms,
/// [`crate::defaults::REDIS_COMMAND_TIMEOUT`]; plus the `WAIT` timeout when replicas are
/// asked for), waiting for a connection included; each connection attempt by the
/// connect timeout (default 1 s, [`crate::defaults::REDIS_CONNECT_TIMEOUT`]). An error
/// or a timeout is [`ClaimOutcome::Unavailable`]: the step does not run. A `SET`
/// that timed out may still have reached Redis, in which case the step is
/// refused as already claimed for the rest of the flow (zero times rather than
/// twice; see [`crate`]). Errors go to the log (target `mrtr::replay`),
/// never with key material or the URL.
///
/// Use it from [`Round::once_async`](mrtr::engine::Round::once_async): a
/// synchronous `once` polls a claim only once, and a network round trip is never
/// ready then.
///
/// `rediss://` connects over TLS (rustls with the ring provider, the system's
/// root certificates).
pub struct RedisReplayGuard {
    client: Client,
    prefix: String,
    command_timeout: Duration,
    connect_timeout: Duration,
    policy_recheck: Duration,
    allow_eviction: bool,
    wait: Option<Replicas>,
    /// The link to the background task that keeps the connection; made on the
    /// first claim, inside a runtime (again if that runtime has gone).
    link: Mutex<Option<Link>>,
}

/// `?wait=N&wait_timeout_ms=T`: after each claim, `WAIT N T`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Replicas {
    count: u32,
    timeout: Duration,
}

/// Why a replay store URL cannot be used. Never holds the URL (it may carry a password).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StoreUrlError(String);

impl RedisReplayGuard {
    /// A guard on the Redis at `url` (`redis://[:PASSWORD@]HOST[:PORT][/DB]`, or
    /// `rediss://` for TLS), for the service named `audience` (the engine's
    /// audience; it selects the key prefix). Connects on the first claim, not here.
    ///
    /// Two query options are the guard's own (any other is the Redis client's):
    ///
    /// - `wait=N` (1 to 64): after each claim, `WAIT N T`, and the claim counts only
    ///   if at least `N` replicas acknowledged it. Fewer is
    ///   [`ClaimOutcome::Unavailable`] (fail closed): the step does not run, yet the
    ///   claim is on the primary, so that step of that flow is refused from then on
    ///   (the user starts a new request). While replicas are missing, every `once`
    ///   step fails; and `WAIT` holds the shared connection until it returns, so
    ///   claims queue behind each other's waits.
    /// - `wait_timeout_ms=T` (1 to 10 000, default 100,
    ///   [`crate::defaults::REDIS_WAIT_TIMEOUT`]): how long `WAIT` waits. A claim may take
    ///   the command timeout plus `T`.
    ///
    /// # Errors
    /// [`StoreUrlError`] when `url` is not a `redis://` or `rediss://` URL the
    /// client accepts, or its `wait` options are malformed.
    pub fn new(url: &str, audience: &str) -> Result<Self, StoreUrlError> {
        let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
        let tls = match scheme.as_deref() {
            Some("redis") => false,
            Some("rediss") => true,
            _ => {
                return Err(StoreUrlError(
                    "a Redis replay store URL starts with redis:// or rediss://".into(),
                ));
            }
        };
        let (url, wait) = take_wait_options(url)?;
        if tls {
            // rustls needs a process-wide crypto provider; keep one already installed.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        // The client's own error may quote the URL, password included: not passed on.
        let client = Client::open(url.as_str()).map_err(|e| {
            StoreUrlError(format!(
                "not a usable Redis URL ({:?}); expected redis://HOST:PORT[/DB] or rediss://",
                e.kind()
            ))
        })?;
        Ok(Self {
            client,
            prefix: key_prefix(audience),
            command_timeout: crate::defaults::REDIS_COMMAND_TIMEOUT,
            connect_timeout: crate::defaults::REDIS_CONNECT_TIMEOUT,
            policy_recheck: crate::defaults::REDIS_POLICY_RECHECK,
            allow_eviction: false,
            wait,
            link: Mutex::new(None),
        })
    }

    /// How long one claim may take, waiting for a connection included, before it
    /// is unavailable (default 250 ms, [`crate::defaults::REDIS_COMMAND_TIMEOUT`]). With
    /// `?wait=N`, the `WAIT` timeout comes on top.
    #[must_use]
    pub fn command_timeout(mut self, timeout: Duration) -> Self {
        self.command_timeout = timeout;
        self
    }

    /// How long one connection attempt may take (default 1 s,
    /// [`crate::defaults::REDIS_CONNECT_TIMEOUT`]); also the longest pause between
    /// attempts while Redis is down.
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How often the store's `maxmemory-policy` is read again on a connection that
    /// stays up (default 60 s, [`crate::defaults::REDIS_POLICY_RECHECK`]), so an operator's
    /// `CONFIG SET maxmemory-policy allkeys-lru` is noticed without a reconnect.
    /// It is always read on connecting.
    #[must_use]
    pub fn policy_recheck(mut self, every: Duration) -> Self {
        self.policy_recheck = every.max(Duration::from_millis(10));
        self
    }

    /// Makes claims even on a store that may evict them (any `maxmemory-policy`
    /// but `noeviction`), or whose policy cannot be read (`CONFIG GET` refused).
    /// Default: `false`, and such a store's claims are refused (fail closed).
    ///
    /// The risk: an evicted claim is forgotten, and a replay of its flow runs the
    /// `once` step a second time. Opt in only for a store you know does not evict
    /// (a managed service configured with `noeviction` that forbids `CONFIG`), or
    /// whose memory can never fill. Each connect then logs a WARN saying so.
    #[must_use]
    pub fn allow_eviction(mut self, allow: bool) -> Self {
        self.allow_eviction = allow;
        self
    }

    /// The prefix of every key this guard writes: `mrtr:<32 hex digits>:`.
    pub fn key_prefix(&self) -> &str {
        &self.prefix
    }

    /// The Redis key of `claim`.
    pub fn key(&self, claim: &Claim) -> String {
        format!("{}{}", self.prefix, hex(&claim.store_key()))
    }

    /// Connects (if not yet connected) and says what the guard found on the store:
    /// whether it makes claims there. Waits up to the connect timeout plus the
    /// command timeout; must run inside a tokio runtime.
    ///
    /// `mrtr serve` calls it before serving, and refuses to start when the answer
    /// [refuses claims](StoreCheck::refuses_claims). The guard logs what it found
    /// either way.
    pub async fn check_store(&self) -> StoreCheck {
        let Some(link) = self.link() else {
            return StoreCheck::Unreachable;
        };
        let mut state = link.state.clone();
        let wait = self.connect_timeout + self.command_timeout;
        let found = tokio::time::timeout(wait, async {
            state
                .wait_for(|s| !matches!(s, State::Starting))
                .await
                .map(|s| s.clone())
        })
        .await;
        match found {
            Ok(Ok(State::Ready(_, check) | State::Refused(check))) => check,
            _ => StoreCheck::Unreachable,
        }
    }

    /// The whole time a claim may take: the command timeout, plus `WAIT`'s.
    fn claim_timeout(&self) -> Duration {
        self.command_timeout + self.wait.map_or(Duration::ZERO, |w| w.timeout)
    }
}

impl fmt::Debug for RedisReplayGuard {
    // Not the URL: it may carry a password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisReplayGuard")
            .field("prefix", &self.prefix)
            .field("command_timeout", &self.command_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("policy_recheck", &self.policy_recheck)
            .field("allow_eviction", &self.allow_eviction)
            .field("wait", &self.wait)
            .finish_non_exhaustive()
    }
}

/// Splits the guard's own options (`wait`, `wait_timeout_ms`) off the URL's query,
/// leaving the rest for the Redis client. Errors name the option, never its value.
fn take_wait_options(url: &str) -> Result<(String, Option<Replicas>), StoreUrlError> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_owned(), None));
    };
    let mut kept = Vec::new();
    let (mut count, mut timeout_ms) = (None, None);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let slot = match name {
            "wait" => &mut count,
            "wait_timeout_ms" => &mut timeout_ms,
            _ => {
                kept.push(pair);
                continue;
            }
        };
        if slot.is_some() {
            return Err(StoreUrlError(format!("the Redis URL gives `{name}` twice")));
        }
        *slot = Some(value.parse::<u64>().ok());
    }
    let count = match count {
        None => None,
        Some(Some(n)) if (1..=u64::from(MAX_WAIT_REPLICAS)).contains(&n) => Some(n as u32),
        Some(_) => {
            return Err(StoreUrlError(format!(
                "the Redis URL's `wait` must be a number of replicas from 1 to {MAX_WAIT_REPLICAS}"
            )));
        }
    };
    let timeout = match timeout_ms {
        None => crate::defaults::REDIS_WAIT_TIMEOUT,
        Some(Some(ms)) if (1..=MAX_WAIT_TIMEOUT_MS).contains(&ms) => Duration::from_millis(ms),
        Some(_) => {
            return Err(StoreUrlError(format!(
                "the Redis URL's `wait_timeout_ms` must be from 1 to {MAX_WAIT_TIMEOUT_MS} milliseconds"
            )));
        }
    };
    if count.is_none() && timeout_ms.is_some() {
        return Err(StoreUrlError(
            "the Redis URL gives `wait_timeout_ms` without `wait`".into(),
        ));
    }
    let url = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((url, count.map(|count| Replicas { count, timeout })))
}

/// `mrtr:` and 128 bits of SHA-256 over a label and the audience, in hex.
fn key_prefix(audience: &str) -> String {
    let mut h = Sha256::new();
    h.update(AUDIENCE_LABEL);
    h.update((audience.len() as u64).to_le_bytes());
    h.update(audience.as_bytes());
    format!("mrtr:{}:", hex(&h.finalize()[..16]))
}

/// Logs a Redis failure: its kind and text, which name the server, never a key.
fn log_error(doing: &'static str, e: &RedisError) {
    tracing::warn!(
        target: "mrtr::replay",
        doing,
        kind = ?e.kind(),
        timeout = e.is_timeout(),
        error = %e,
        "Redis replay store failed: claim unavailable"
    );
}

/// This crate's README, its Rust blocks compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
