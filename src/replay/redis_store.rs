//! A [`ReplayGuard`] a fleet shares through Redis (feature `redis`).

use std::fmt;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use ::redis::aio::{ConnectionManager, ConnectionManagerConfig};
use ::redis::{Client, RedisError, Value};
use sha2::{Digest, Sha256};

use super::{BoxFuture, Claim, ClaimOutcome, ReplayGuard, hex};
use crate::defaults;

/// Domain label of the per-audience key prefix.
const AUDIENCE_LABEL: &[u8] = b"mrtr/replay/v1/audience";

/// A replay guard on a Redis server (or a compatible one: Valkey, KeyDB), shared
/// by every instance of a fleet.
///
/// Each claim is one `SET key 1 NX PX ttl`:
///
/// - **key**: `mrtr:<audience>:<claim>`, where `<audience>` is 32 hex digits of a
///   SHA-256 of the audience (so services sharing a Redis never collide) and
///   `<claim>` the 64 hex digits of [`Claim::store_key`], a digest of the flow id
///   and the step. No token, flow id or step name reaches Redis.
/// - **ttl**: from the request's `now` to [`Claim::until`] (the presented state's
///   round expiry plus skew), at least one second; Redis drops the key itself.
///
/// The connection is a [`ConnectionManager`]: one multiplexed, pipelined
/// connection shared by all claims, reconnecting in the background after a
/// failure. It is opened lazily, on the first claim (inside a tokio runtime),
/// so a server starts while Redis is down; its claims are unavailable until
/// Redis answers.
///
/// Every claim is bounded by the command timeout (default 250 ms,
/// [`defaults::REDIS_COMMAND_TIMEOUT`]), reconnecting included; each connection
/// attempt by the connect timeout (default 1 s, [`defaults::REDIS_CONNECT_TIMEOUT`]).
/// An error or a timeout is [`ClaimOutcome::Unavailable`]: the step does not run.
/// A `SET` that timed out may still have reached Redis, in which case the step
/// is refused as already claimed for the rest of the flow (zero times rather
/// than twice; see [`crate::replay`]). Errors go to the log (target
/// `mrtr::replay`), never with key material.
///
/// Use it from [`Round::once_async`](crate::engine::Round::once_async): a
/// synchronous `once` polls a claim only once, and a network round trip is never
/// ready then.
///
/// `rediss://` connects over TLS (rustls with the ring provider, the system's
/// root certificates). Claims are only as durable as Redis keeps them: a Redis
/// restarted without persistence forgets the claims of open flows.
pub struct RedisReplayGuard {
    client: Client,
    prefix: String,
    command_timeout: Duration,
    connect_timeout: Duration,
    /// Opened on the first claim, inside a runtime.
    manager: Mutex<Option<ConnectionManager>>,
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
    /// # Errors
    /// [`StoreUrlError`] when `url` is not a `redis://` or `rediss://` URL the
    /// client accepts.
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
        if tls {
            // rustls needs a process-wide crypto provider; keep one already installed.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        // The client's own error may quote the URL, password included: not passed on.
        let client = Client::open(url).map_err(|e| {
            StoreUrlError(format!(
                "not a usable Redis URL ({:?}); expected redis://HOST:PORT[/DB] or rediss://",
                e.kind()
            ))
        })?;
        Ok(Self {
            client,
            prefix: key_prefix(audience),
            command_timeout: defaults::REDIS_COMMAND_TIMEOUT,
            connect_timeout: defaults::REDIS_CONNECT_TIMEOUT,
            manager: Mutex::new(None),
        })
    }

    /// How long one claim may take, reconnecting included, before it is
    /// unavailable (default 250 ms, [`defaults::REDIS_COMMAND_TIMEOUT`]).
    #[must_use]
    pub fn command_timeout(mut self, timeout: Duration) -> Self {
        self.command_timeout = timeout;
        self
    }

    /// How long one connection attempt may take (default 1 s,
    /// [`defaults::REDIS_CONNECT_TIMEOUT`]).
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
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

    /// The shared connection, opened (lazily) on first use. Must run inside a
    /// tokio runtime: the manager spawns its reconnection tasks there.
    fn connection(&self) -> Result<ConnectionManager, RedisError> {
        let mut slot = self.manager.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(m) = slot.as_ref() {
            return Ok(m.clone());
        }
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(self.connect_timeout))
            .set_response_timeout(Some(self.command_timeout))
            // Reconnect quickly once Redis is back: no backoff beyond the connect timeout.
            .set_max_delay(self.connect_timeout);
        let manager = ConnectionManager::new_lazy_with_config(self.client.clone(), config)?;
        // Drive the first connection in the background, so it progresses between
        // claims (a claim stops waiting after the command timeout).
        let mut warm = manager.clone();
        tokio::spawn(async move {
            if let Err(e) = ::redis::cmd("PING").query_async::<()>(&mut warm).await {
                log_error("connecting", &e);
            }
        });
        *slot = Some(manager.clone());
        Ok(manager)
    }

    async fn set_nx(&self, claim: &Claim) -> Result<bool, RedisError> {
        let mut conn = self.connection()?;
        let ttl = claim
            .until()
            .unix_secs()
            .saturating_sub(claim.now().unix_secs());
        let ttl_ms = ttl.max(1).saturating_mul(1000);
        let reply: Value = ::redis::cmd("SET")
            .arg(self.key(claim))
            .arg(1)
            .arg("NX")
            .arg("PX")
            .arg(ttl_ms)
            .query_async(&mut conn)
            .await?;
        match reply {
            Value::Okay => Ok(true),
            Value::SimpleString(s) if s == "OK" => Ok(true),
            Value::Nil => Ok(false),
            _ => Err(RedisError::from((
                ::redis::ErrorKind::Client,
                "unexpected reply to SET NX",
            ))),
        }
    }
}

impl ReplayGuard for RedisReplayGuard {
    fn claim<'a>(&'a self, claim: &'a Claim) -> BoxFuture<'a, ClaimOutcome> {
        Box::pin(async move {
            if tokio::runtime::Handle::try_current().is_err() {
                tracing::warn!(
                    target: "mrtr::replay",
                    "the Redis replay guard needs a tokio runtime: claim refused"
                );
                return ClaimOutcome::Unavailable;
            }
            let started = std::time::Instant::now();
            let answer = tokio::time::timeout(self.command_timeout, self.set_nx(claim)).await;
            crate::metrics::replay_store_latency(started.elapsed());
            match answer {
                Ok(Ok(true)) => ClaimOutcome::Claimed,
                Ok(Ok(false)) => ClaimOutcome::AlreadyClaimed,
                Ok(Err(e)) => {
                    log_error("claiming", &e);
                    ClaimOutcome::Unavailable
                }
                Err(_) => {
                    tracing::warn!(
                        target: "mrtr::replay",
                        timeout_ms = self.command_timeout.as_millis(),
                        "Redis replay store did not answer in time: claim unavailable \
                         (it may still land, refusing the step for the rest of its flow)"
                    );
                    ClaimOutcome::Unavailable
                }
            }
        })
    }
}

impl fmt::Debug for RedisReplayGuard {
    // Not the URL: it may carry a password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisReplayGuard")
            .field("prefix", &self.prefix)
            .field("command_timeout", &self.command_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .finish_non_exhaustive()
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::PrincipalKey;
    use crate::time::Timestamp;

    fn claim(step: &str) -> Claim {
        let t = Timestamp::from_unix_secs(1_800_000_000);
        Claim::new(
            [9; 16],
            step,
            t,
            t.add_secs(660),
            t,
            PrincipalKey::from_bytes([1; 16]),
        )
    }

    #[test]
    fn urls_are_checked_and_never_echoed() {
        for bad in [
            "http://x",
            "localhost:6379",
            "unix:///tmp/r.sock",
            "redis://:pw@[::1",
        ] {
            let e = RedisReplayGuard::new(bad, "aud").unwrap_err();
            assert!(!e.to_string().contains("pw"), "{e}");
        }
        assert!(RedisReplayGuard::new("redis://127.0.0.1:6379/2", "aud").is_ok());
        assert!(RedisReplayGuard::new("REDIS://127.0.0.1", "aud").is_ok());
        // TLS is compiled in: the client accepts the scheme.
        assert!(RedisReplayGuard::new("rediss://redis.example:6380", "aud").is_ok());
        let g = RedisReplayGuard::new("redis://:secret@127.0.0.1:6379", "aud").unwrap();
        assert!(!format!("{g:?}").contains("secret"));
    }

    #[test]
    fn keys_are_prefixed_by_audience_and_hashed() {
        let a = RedisReplayGuard::new("redis://127.0.0.1", "https://a.example").unwrap();
        let b = RedisReplayGuard::new("redis://127.0.0.1", "https://b.example").unwrap();
        assert_ne!(a.key_prefix(), b.key_prefix());
        let key = a.key(&claim("deploy-to-production"));
        let rest = key.strip_prefix(a.key_prefix()).unwrap();
        assert_eq!(a.key_prefix().len(), "mrtr:".len() + 32 + 1);
        assert_eq!(rest.len(), 64);
        assert!(rest.bytes().all(|c| c.is_ascii_hexdigit()));
        assert!(!key.contains("deploy"));
        assert!(!key.contains(&hex(&[9; 16])), "no flow id in clear");
    }

    #[test]
    fn outside_a_runtime_a_claim_is_unavailable() {
        let g = RedisReplayGuard::new("redis://127.0.0.1:1", "aud").unwrap();
        let outcome = futures_util::FutureExt::now_or_never(g.claim(&claim("s")));
        assert_eq!(outcome, Some(ClaimOutcome::Unavailable));
    }

    /// A server that accepts connections and never answers: the claim gives up
    /// after the command timeout. The clock is tokio's paused clock, so the
    /// check does not depend on the machine's speed.
    #[tokio::test(start_paused = true)]
    async fn a_silent_store_is_unavailable_after_the_command_timeout() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let hold = tokio::spawn(async move {
            let mut open = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                open.push(socket);
            }
        });
        let g = RedisReplayGuard::new(&format!("redis://{addr}"), "aud")
            .unwrap()
            .command_timeout(Duration::from_millis(250));
        let start = tokio::time::Instant::now();
        assert_eq!(g.claim(&claim("s")).await, ClaimOutcome::Unavailable);
        assert!(start.elapsed() <= Duration::from_millis(250) + Duration::from_millis(1));
        hold.abort();
    }
}
