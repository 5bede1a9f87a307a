//! A [`ReplayGuard`] a fleet shares through Redis (feature `redis`).

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use ::redis::aio::MultiplexedConnection;
use ::redis::{AsyncConnectionConfig, Client, RedisError, Value};
use sha2::{Digest, Sha256};
use tokio::sync::{Notify, watch};

use super::{BoxFuture, Claim, ClaimOutcome, ReplayGuard, hex};
use crate::defaults;

/// Domain label of the per-audience key prefix.
const AUDIENCE_LABEL: &[u8] = b"mrtr/replay/v1/audience";

/// The most replicas `?wait=N` may ask for.
const MAX_WAIT_REPLICAS: u32 = 64;

/// The longest `?wait_timeout_ms=T` may be: 10 seconds.
const MAX_WAIT_TIMEOUT_MS: u64 = 10_000;

/// The first pause between failed connection attempts; it doubles up to the
/// connect timeout.
const FIRST_RETRY_DELAY: Duration = Duration::from_millis(50);

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
///   (the flow's deadline plus twice the skew: see [`crate::replay`]), so
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
/// [`crate::manual::operations`] has the whole setup.
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
/// [`defaults::REDIS_COMMAND_TIMEOUT`]; plus the `WAIT` timeout when replicas are
/// asked for), waiting for a connection included; each connection attempt by the
/// connect timeout (default 1 s, [`defaults::REDIS_CONNECT_TIMEOUT`]). An error
/// or a timeout is [`ClaimOutcome::Unavailable`]: the step does not run. A `SET`
/// that timed out may still have reached Redis, in which case the step is
/// refused as already claimed for the rest of the flow (zero times rather than
/// twice; see [`crate::replay`]). Errors go to the log (target `mrtr::replay`),
/// never with key material or the URL.
///
/// Use it from [`Round::once_async`](crate::engine::Round::once_async): a
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

/// What the guard found on its store: the answer of [`RedisReplayGuard::check_store`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreCheck {
    /// Connected, and the store never evicts keys (`maxmemory-policy noeviction`):
    /// claims are made.
    NoEviction,
    /// Connected, and the store's `maxmemory-policy` (named here) may evict claims.
    /// Claims are refused, unless `allowed` ([`RedisReplayGuard::allow_eviction`]).
    Evicting {
        /// The policy the store reported (`allkeys-lru`, `volatile-ttl`, …).
        policy: String,
        /// Whether the operator opted in: claims are made anyway.
        allowed: bool,
    },
    /// Connected, but the store did not say its policy (`CONFIG GET` refused, as
    /// many managed services do). Claims are refused, unless `allowed`.
    Unverified {
        /// Why the policy could not be read (the store's error code, never a URL).
        reason: String,
        /// Whether the operator opted in: claims are made anyway.
        allowed: bool,
    },
    /// No connection could be made within the connect timeout; claims are
    /// unavailable until one is (and the policy is read then).
    Unreachable,
}

impl StoreCheck {
    /// Whether claims are refused on this store (an eviction policy, or one that
    /// cannot be read, without the operator's opt-in).
    pub fn refuses_claims(&self) -> bool {
        matches!(
            self,
            Self::Evicting { allowed: false, .. } | Self::Unverified { allowed: false, .. }
        )
    }
}

impl fmt::Display for StoreCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoEviction => f.write_str("maxmemory-policy is noeviction"),
            Self::Evicting { policy, .. } => write!(
                f,
                "maxmemory-policy is {policy}: Redis may evict claims, and the replay of an \
                 evicted claim's flow runs its step again"
            ),
            Self::Unverified { reason, .. } => write!(
                f,
                "its maxmemory-policy cannot be read ({reason}), so mrtr cannot rule out that \
                 it evicts claims"
            ),
            Self::Unreachable => f.write_str("it did not answer"),
        }
    }
}

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
    ///   [`defaults::REDIS_WAIT_TIMEOUT`]): how long `WAIT` waits. A claim may take
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
            command_timeout: defaults::REDIS_COMMAND_TIMEOUT,
            connect_timeout: defaults::REDIS_CONNECT_TIMEOUT,
            policy_recheck: defaults::REDIS_POLICY_RECHECK,
            allow_eviction: false,
            wait,
            link: Mutex::new(None),
        })
    }

    /// How long one claim may take, waiting for a connection included, before it
    /// is unavailable (default 250 ms, [`defaults::REDIS_COMMAND_TIMEOUT`]). With
    /// `?wait=N`, the `WAIT` timeout comes on top.
    #[must_use]
    pub fn command_timeout(mut self, timeout: Duration) -> Self {
        self.command_timeout = timeout;
        self
    }

    /// How long one connection attempt may take (default 1 s,
    /// [`defaults::REDIS_CONNECT_TIMEOUT`]); also the longest pause between
    /// attempts while Redis is down.
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How often the store's `maxmemory-policy` is read again on a connection that
    /// stays up (default 60 s, [`defaults::REDIS_POLICY_RECHECK`]), so an operator's
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

    /// The link to the connection task, started on first use. `None` outside a
    /// tokio runtime. A task whose runtime has gone is started again on this one.
    fn link(&self) -> Option<Link> {
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        let mut slot = self.link.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(link) = slot.as_ref()
            && link.state.has_changed().is_ok()
        {
            return Some(link.clone());
        }
        let (tx, rx) = watch::channel(State::Starting);
        let suspect = Arc::new(Notify::new());
        let keeper = Keeper {
            client: self.client.clone(),
            connect_timeout: self.connect_timeout,
            response_timeout: self.claim_timeout(),
            policy_recheck: self.policy_recheck,
            allow_eviction: self.allow_eviction,
            state: tx,
            suspect: Arc::clone(&suspect),
        };
        runtime.spawn(keeper.run());
        let link = Link { state: rx, suspect };
        *slot = Some(link.clone());
        Some(link)
    }

    /// The whole time a claim may take: the command timeout, plus `WAIT`'s.
    fn claim_timeout(&self) -> Duration {
        self.command_timeout + self.wait.map_or(Duration::ZERO, |w| w.timeout)
    }

    async fn claim_on(&self, link: &Link, claim: &Claim) -> ClaimOutcome {
        let mut state = link.state.clone();
        let ready = state
            .wait_for(|s| matches!(s, State::Ready(..) | State::Refused(_)))
            .await
            .map(|s| s.clone());
        let mut conn = match ready {
            Ok(State::Ready(conn, _)) => conn,
            Ok(State::Refused(check)) => {
                tracing::warn!(
                    target: "mrtr::replay",
                    "claim refused by the Redis replay guard: the store's {check} \
                     (set maxmemory-policy noeviction, or allow eviction explicitly)"
                );
                return ClaimOutcome::Unavailable;
            }
            // The connection task has gone (its runtime shut down).
            _ => return ClaimOutcome::Unavailable,
        };
        match self.set_nx(&mut conn, claim).await {
            Ok(Set::Claimed) => ClaimOutcome::Claimed,
            Ok(Set::Taken) => ClaimOutcome::AlreadyClaimed,
            Ok(Set::Unacknowledged { acks }) => {
                let wait = self.wait.unwrap_or(Replicas {
                    count: 0,
                    timeout: Duration::ZERO,
                });
                tracing::warn!(
                    target: "mrtr::replay",
                    acks,
                    asked = wait.count,
                    wait_timeout_ms = wait.timeout.as_millis(),
                    "Redis replay store: the claim reached the primary, but fewer replicas \
                     acknowledged it than asked (wait=N): claim unavailable, the step did not \
                     run (the claim stays, so this step of this flow is refused from now on)"
                );
                ClaimOutcome::Unavailable
            }
            Err(e) => {
                log_error("claiming", &e);
                if e.code().is_none() {
                    // Not the server's answer: the connection may be gone.
                    link.suspect.notify_one();
                }
                ClaimOutcome::Unavailable
            }
        }
    }

    async fn set_nx(
        &self,
        conn: &mut MultiplexedConnection,
        claim: &Claim,
    ) -> Result<Set, RedisError> {
        // Through the whole second `until` names: `now` is truncated to its second,
        // so the key is set up to a second after the instant `now` stands for.
        let ttl = claim
            .until()
            .unix_secs()
            .saturating_sub(claim.now().unix_secs())
            .saturating_add(1);
        let ttl_ms = ttl.saturating_mul(1000);
        let mut set = ::redis::cmd("SET");
        set.arg(self.key(claim))
            .arg(1)
            .arg("NX")
            .arg("PX")
            .arg(ttl_ms);
        let (reply, acks) = match self.wait {
            None => (set.query_async::<Value>(conn).await?, None),
            Some(w) => {
                let mut pipe = ::redis::pipe();
                pipe.add_command(set)
                    .cmd("WAIT")
                    .arg(w.count)
                    .arg(u64::try_from(w.timeout.as_millis()).unwrap_or(MAX_WAIT_TIMEOUT_MS));
                let (reply, acks): (Value, i64) = pipe.query_async(conn).await?;
                (reply, Some(acks))
            }
        };
        match reply {
            Value::Okay => {}
            Value::SimpleString(s) if s == "OK" => {}
            Value::Nil => return Ok(Set::Taken),
            _ => {
                return Err(RedisError::from((
                    ::redis::ErrorKind::Client,
                    "unexpected reply to SET NX",
                )));
            }
        }
        match (self.wait, acks) {
            (Some(w), Some(acks)) if acks < i64::from(w.count) => Ok(Set::Unacknowledged { acks }),
            _ => Ok(Set::Claimed),
        }
    }
}

/// What one `SET NX` (and `WAIT`) came back with.
enum Set {
    Claimed,
    Taken,
    /// Written on the primary, acknowledged by fewer replicas than asked.
    Unacknowledged {
        acks: i64,
    },
}

impl ReplayGuard for RedisReplayGuard {
    fn claim<'a>(&'a self, claim: &'a Claim) -> BoxFuture<'a, ClaimOutcome> {
        Box::pin(async move {
            let Some(link) = self.link() else {
                tracing::warn!(
                    target: "mrtr::replay",
                    "the Redis replay guard needs a tokio runtime: claim refused"
                );
                return ClaimOutcome::Unavailable;
            };
            let started = std::time::Instant::now();
            let timeout = self.claim_timeout();
            let answer = tokio::time::timeout(timeout, self.claim_on(&link, claim)).await;
            crate::metrics::replay_store_latency(started.elapsed());
            match answer {
                Ok(outcome) => outcome,
                Err(_) => {
                    // A connection that silently died answers nothing: have it checked.
                    link.suspect.notify_one();
                    tracing::warn!(
                        target: "mrtr::replay",
                        timeout_ms = timeout.as_millis(),
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
            .field("policy_recheck", &self.policy_recheck)
            .field("allow_eviction", &self.allow_eviction)
            .field("wait", &self.wait)
            .finish_non_exhaustive()
    }
}

/// Where the connection stands, as the connection task publishes it.
#[derive(Clone)]
enum State {
    /// No attempt has finished yet.
    Starting,
    /// The last attempt failed, or the connection was lost; retrying.
    Down,
    /// Connected, and claims are made on this connection.
    Ready(MultiplexedConnection, StoreCheck),
    /// Connected, and claims are refused: the store may evict them.
    Refused(StoreCheck),
}

/// A claim's side of the connection task.
#[derive(Clone)]
struct Link {
    state: watch::Receiver<State>,
    /// Woken when a claim failed in a way that may mean the connection is gone.
    suspect: Arc<Notify>,
}

/// The connection task: connects, reads the eviction policy, publishes the
/// connection, and starts over when it is lost. Ends when the guard is dropped
/// (every receiver of `state` is).
struct Keeper {
    client: Client,
    connect_timeout: Duration,
    response_timeout: Duration,
    policy_recheck: Duration,
    allow_eviction: bool,
    state: watch::Sender<State>,
    suspect: Arc<Notify>,
}

impl Keeper {
    async fn run(self) {
        tokio::select! {
            () = self.state.closed() => {}
            () = self.keep() => {}
        }
    }

    async fn keep(&self) {
        let mut delay = FIRST_RETRY_DELAY;
        let mut quiet = false;
        loop {
            let conn = match self.connect().await {
                Ok(conn) => conn,
                Err(e) => {
                    // One line per outage, not one per attempt.
                    if !quiet {
                        log_error("connecting", &e);
                        quiet = true;
                    }
                    self.state.send_replace(State::Down);
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(self.connect_timeout.max(FIRST_RETRY_DELAY));
                    continue;
                }
            };
            let mut conn = conn;
            let mut check = match self.read_policy(&mut conn).await {
                Ok(check) => check,
                Err(e) => {
                    if !quiet {
                        log_error("reading maxmemory-policy", &e);
                        quiet = true;
                    }
                    self.state.send_replace(State::Down);
                    tokio::time::sleep(delay).await;
                    continue;
                }
            };
            delay = FIRST_RETRY_DELAY;
            quiet = false;
            announce(&check);
            self.publish(&conn, &check);
            // Hold the connection until it fails a check.
            loop {
                tokio::select! {
                    () = self.suspect.notified() => {
                        let ping_cmd = ::redis::cmd("PING");
                        let ping = ping_cmd.query_async::<()>(&mut conn);
                        match tokio::time::timeout(self.connect_timeout, ping).await {
                            Ok(Ok(())) => continue,
                            Ok(Err(e)) => log_error("checking the connection", &e),
                            Err(_) => tracing::warn!(
                                target: "mrtr::replay",
                                "Redis replay store did not answer PING in time: reconnecting"
                            ),
                        }
                        break;
                    }
                    () = tokio::time::sleep(self.policy_recheck) => {
                        match self.read_policy(&mut conn).await {
                            Ok(now) if now == check => {}
                            Ok(now) => {
                                announce(&now);
                                self.publish(&conn, &now);
                                check = now;
                            }
                            Err(e) => {
                                log_error("reading maxmemory-policy", &e);
                                break;
                            }
                        }
                    }
                }
            }
            tracing::warn!(
                target: "mrtr::replay",
                "Redis replay store connection lost: reconnecting (claims unavailable meanwhile)"
            );
            self.state.send_replace(State::Down);
        }
    }

    async fn connect(&self) -> Result<MultiplexedConnection, RedisError> {
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.connect_timeout))
            .set_response_timeout(Some(self.response_timeout));
        let connect = self
            .client
            .get_multiplexed_async_connection_with_config(&config);
        // The handshake (AUTH, SELECT, client info) is bounded too.
        match tokio::time::timeout(self.connect_timeout * 2, connect).await {
            Ok(result) => result,
            Err(_) => Err(RedisError::from((
                ::redis::ErrorKind::Io,
                "connecting timed out",
            ))),
        }
    }

    /// `CONFIG GET maxmemory-policy`, and what it means for claims. An error of
    /// the server (refused, unknown command) is an answer; a failed connection is
    /// an error.
    async fn read_policy(
        &self,
        conn: &mut MultiplexedConnection,
    ) -> Result<StoreCheck, RedisError> {
        let mut config_get = ::redis::cmd("CONFIG");
        config_get.arg("GET").arg("maxmemory-policy");
        let query = config_get.query_async::<Value>(conn);
        let reply = match tokio::time::timeout(self.connect_timeout, query).await {
            Ok(reply) => reply,
            Err(_) => {
                return Err(RedisError::from((
                    ::redis::ErrorKind::Io,
                    "CONFIG GET timed out",
                )));
            }
        };
        let allowed = self.allow_eviction;
        Ok(match reply {
            Ok(value) => match policy_of(value) {
                Some(p) if p == "noeviction" => StoreCheck::NoEviction,
                Some(p) => StoreCheck::Evicting { policy: p, allowed },
                None => StoreCheck::Unverified {
                    reason: "CONFIG GET returned no maxmemory-policy".into(),
                    allowed,
                },
            },
            Err(e) => match e.code() {
                Some(code) => StoreCheck::Unverified {
                    reason: refusal(code, &e),
                    allowed,
                },
                None => return Err(e),
            },
        })
    }

    fn publish(&self, conn: &MultiplexedConnection, check: &StoreCheck) {
        self.state.send_replace(if check.refuses_claims() {
            State::Refused(check.clone())
        } else {
            State::Ready(conn.clone(), check.clone())
        });
    }
}

/// Logs what a (re)connect found: INFO when claims are safe, WARN when they are
/// made on the operator's say-so, ERROR when they are refused.
fn announce(check: &StoreCheck) {
    match check {
        StoreCheck::NoEviction => tracing::info!(
            target: "mrtr::replay",
            "Redis replay store connected: maxmemory-policy is noeviction, claims are kept \
             until they expire"
        ),
        StoreCheck::Evicting { allowed: true, .. }
        | StoreCheck::Unverified { allowed: true, .. } => {
            tracing::warn!(
                target: "mrtr::replay",
                "Redis replay store connected, but the store's {check}; claims are made \
                 anyway, since eviction was allowed explicitly (--replay-store-allow-eviction)"
            );
        }
        StoreCheck::Evicting { .. } | StoreCheck::Unverified { .. } => tracing::error!(
            target: "mrtr::replay",
            "Redis replay store connected, but the store's {check}: every claim is refused \
             (fail closed: once steps do not run) until it reports maxmemory-policy noeviction. \
             Use a Redis dedicated to mrtr with maxmemory-policy noeviction; if the policy \
             cannot be read there (a managed service) and you have checked it, or you accept \
             the risk, allow eviction explicitly (--replay-store-allow-eviction)"
        ),
        StoreCheck::Unreachable => {}
    }
}

/// The policy in a `CONFIG GET maxmemory-policy` reply (a RESP2 array of name and
/// value, or a RESP3 map), if it is a plausible policy name.
fn policy_of(value: Value) -> Option<String> {
    let pairs: Vec<(Value, Value)> = match value {
        Value::Map(pairs) => pairs,
        Value::Array(items) => {
            let mut items = items.into_iter();
            let mut pairs = Vec::new();
            while let (Some(k), Some(v)) = (items.next(), items.next()) {
                pairs.push((k, v));
            }
            pairs
        }
        _ => return None,
    };
    pairs.into_iter().find_map(|(k, v)| {
        let k: String = ::redis::from_redis_value(k).ok()?;
        if !k.eq_ignore_ascii_case("maxmemory-policy") {
            return None;
        }
        let v: String = ::redis::from_redis_value(v).ok()?;
        let v = v.to_ascii_lowercase();
        // Only a name goes to the log: lower-case letters, digits and dashes.
        let plausible = !v.is_empty()
            && v.len() <= 32
            && v.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        Some(if plausible {
            v
        } else {
            "an unrecognized policy".into()
        })
    })
}

/// Why the server refused `CONFIG GET`, from its error code (never its whole text).
fn refusal(code: &str, e: &RedisError) -> String {
    let unknown = e
        .detail()
        .is_some_and(|d| d.to_ascii_lowercase().contains("unknown command"));
    match code {
        "NOPERM" => "CONFIG GET is not permitted to this user: NOPERM".into(),
        "ERR" if unknown => "CONFIG is not a command on this server: ERR unknown command".into(),
        _ => {
            let code: String = code
                .chars()
                .filter(char::is_ascii_alphanumeric)
                .take(16)
                .collect();
            format!("CONFIG GET was refused: {code}")
        }
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
        None => defaults::REDIS_WAIT_TIMEOUT,
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
    fn wait_options_are_the_guards_and_checked() {
        let (url, wait) = take_wait_options("redis://:pw@h:1/2?wait=2&wait_timeout_ms=30").unwrap();
        assert_eq!(url, "redis://:pw@h:1/2");
        assert_eq!(
            wait,
            Some(Replicas {
                count: 2,
                timeout: Duration::from_millis(30)
            })
        );
        // The client's own options stay; the default WAIT timeout applies.
        let (url, wait) = take_wait_options("redis://h/0?protocol=resp3&wait=1").unwrap();
        assert_eq!(url, "redis://h/0?protocol=resp3");
        assert_eq!(wait.unwrap().timeout, defaults::REDIS_WAIT_TIMEOUT);
        assert_eq!(
            take_wait_options("redis://h").unwrap(),
            ("redis://h".into(), None)
        );
        for bad in [
            "redis://:hunter2@h?wait=0",
            "redis://:hunter2@h?wait=65",
            "redis://:hunter2@h?wait=two",
            "redis://:hunter2@h?wait=",
            "redis://:hunter2@h?wait=1&wait=2",
            "redis://:hunter2@h?wait=1&wait_timeout_ms=0",
            "redis://:hunter2@h?wait=1&wait_timeout_ms=10001",
            "redis://:hunter2@h?wait_timeout_ms=50",
        ] {
            let e = RedisReplayGuard::new(bad, "aud").unwrap_err().to_string();
            assert!(e.contains("wait"), "{bad}: {e}");
            assert!(!e.contains("hunter2") && !e.contains("two"), "{e}");
        }
        let g = RedisReplayGuard::new("redis://h?wait=1&wait_timeout_ms=40", "aud").unwrap();
        assert_eq!(
            g.claim_timeout(),
            defaults::REDIS_COMMAND_TIMEOUT + Duration::from_millis(40)
        );
    }

    #[test]
    fn the_policy_is_read_from_either_reply_shape() {
        let bulk = |s: &str| Value::BulkString(s.as_bytes().to_vec());
        let resp2 = Value::Array(vec![bulk("maxmemory-policy"), bulk("allkeys-lru")]);
        assert_eq!(policy_of(resp2).as_deref(), Some("allkeys-lru"));
        let resp3 = Value::Map(vec![(bulk("maxmemory-policy"), bulk("noeviction"))]);
        assert_eq!(policy_of(resp3).as_deref(), Some("noeviction"));
        assert_eq!(policy_of(Value::Array(vec![])), None);
        let odd = Value::Array(vec![bulk("maxmemory-policy"), bulk("evil\nline")]);
        assert_eq!(policy_of(odd).as_deref(), Some("an unrecognized policy"));
    }

    #[test]
    fn only_an_opt_in_lets_an_evicting_store_take_claims() {
        let evicting = |allowed| StoreCheck::Evicting {
            policy: "volatile-lru".into(),
            allowed,
        };
        assert!(evicting(false).refuses_claims());
        assert!(!evicting(true).refuses_claims());
        let unverified = |allowed| StoreCheck::Unverified {
            reason: "NOPERM".into(),
            allowed,
        };
        assert!(unverified(false).refuses_claims());
        assert!(!unverified(true).refuses_claims());
        assert!(!StoreCheck::NoEviction.refuses_claims());
        assert!(evicting(false).to_string().contains("volatile-lru"));
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
