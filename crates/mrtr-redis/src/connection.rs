//! The connection task: connects, reads the eviction policy, publishes the
//! connection to the claims, and reconnects when it is lost.

use std::sync::{Arc, PoisonError};
use std::time::Duration;

use ::redis::aio::MultiplexedConnection;
use ::redis::{AsyncConnectionConfig, Client, RedisError, Value};
use tokio::sync::{Notify, watch};

use super::policy::{StoreCheck, announce, policy_of, refusal};
use super::{RedisReplayGuard, log_error};

/// The first pause between failed connection attempts; it doubles up to the
/// connect timeout.
const FIRST_RETRY_DELAY: Duration = Duration::from_millis(50);

impl RedisReplayGuard {
    /// The link to the connection task, started on first use. `None` outside a
    /// tokio runtime. A task whose runtime has gone is started again on this one.
    pub(super) fn link(&self) -> Option<Link> {
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
}

/// Where the connection stands, as the connection task publishes it.
#[derive(Clone)]
pub(super) enum State {
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
pub(super) struct Link {
    pub(super) state: watch::Receiver<State>,
    /// Woken when a claim failed in a way that may mean the connection is gone.
    pub(super) suspect: Arc<Notify>,
}

/// Why [`Link::ready`] gave no connection.
pub(super) enum NotReady {
    /// Connected, but the store may evict what is written (the check it failed).
    Refused(StoreCheck),
    /// The connection task has gone (its runtime shut down).
    Gone,
}

impl Link {
    /// The connection, once the connection task has one (waiting while it is
    /// starting or down); what stands in the way otherwise. The caller bounds
    /// the wait.
    pub(super) async fn ready(&self) -> Result<MultiplexedConnection, NotReady> {
        let mut state = self.state.clone();
        let ready = state
            .wait_for(|s| matches!(s, State::Ready(..) | State::Refused(_)))
            .await
            .map(|s| s.clone());
        match ready {
            Ok(State::Ready(conn, _)) => Ok(conn),
            Ok(State::Refused(check)) => Err(NotReady::Refused(check)),
            _ => Err(NotReady::Gone),
        }
    }
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
