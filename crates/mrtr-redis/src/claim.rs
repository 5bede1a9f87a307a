//! The claims: one `SET key 1 NX PX ttl` (then `WAIT`, with `?wait=N`) on the
//! shared connection, within the claim timeout.

use std::time::Duration;

use ::redis::aio::MultiplexedConnection;
use ::redis::{RedisError, Value};

use mrtr::replay::{BoxFuture, Claim, ClaimOutcome, ReplayGuard};

use super::connection::{Link, NotReady};
use super::{MAX_WAIT_TIMEOUT_MS, RedisReplayGuard, Replicas, log_error};

impl RedisReplayGuard {
    async fn claim_on(&self, link: &Link, claim: &Claim) -> ClaimOutcome {
        let mut conn = match link.ready().await {
            Ok(conn) => conn,
            Err(NotReady::Refused(check)) => {
                tracing::warn!(
                    target: "mrtr::replay",
                    "claim refused by the Redis replay guard: the store's {check} \
                     (set maxmemory-policy noeviction, or allow eviction explicitly)"
                );
                return ClaimOutcome::Unavailable;
            }
            Err(NotReady::Gone) => return ClaimOutcome::Unavailable,
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
            mrtr::metrics::replay_store_latency(started.elapsed());
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
