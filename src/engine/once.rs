//! `once`: a handler's side effect run at most once per flow, its result sealed
//! for later rounds, and (with the engine's replay guard) never twice for a
//! replayed state.

use std::future::Future;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::round::{Flow, Round, finished_error, lock};
use crate::error::{Error, Fallback, Retry, ToolAdvice};
use crate::metrics::OnceResult;
use crate::replay::{self, Claim, ClaimOutcome, PrincipalKey, ReplayGuard};

/// Where a `once` step stands before it runs.
enum Begin<'a, T> {
    /// It ran in an earlier round of this flow: its sealed result.
    Done(T),
    /// It runs in this round, after the guard granted this claim (if any).
    Run(Option<(&'a dyn ReplayGuard, Claim)>),
}

/// Counts what became of a `once` step, and tells the request's span (an
/// event, target `mrtr::mcp`, with the step's name and the result: what a
/// tracer shows; the log leaves it out).
fn noted(step: &str, result: OnceResult) {
    crate::metrics::once_result(result);
    tracing::event!(
        name: "mrtr.once",
        target: "mrtr::mcp",
        tracing::Level::INFO,
        mrtr.once.step = step,
        mrtr.once.result = result.as_str()
    );
}

/// Whether a step may run after the guard's answer: only when it was claimed.
fn claim_verdict(step: &str, outcome: ClaimOutcome) -> Result<(), Flow> {
    noted(
        step,
        match outcome {
            ClaimOutcome::Claimed => OnceResult::Claimed,
            ClaimOutcome::AlreadyClaimed => OnceResult::Replayed,
            _ => OnceResult::Unavailable,
        },
    );
    let error = match outcome {
        ClaimOutcome::Claimed => return Ok(()),
        ClaimOutcome::AlreadyClaimed => Error::tool_failure(
            ToolAdvice::new(
                "This step was already carried out for this request (or an earlier attempt \
                 at it was cut short), so it was not carried out again",
                Retry::DoesNotHelp,
            )
            .instead("Call the tool again to start a new request if the action should really be carried out"),
            Fallback::InvalidParams,
            "replay",
            format!("once-step {step:?} claimed before: replayed requestState"),
        ),
        // Unavailable, and any answer added later: never run on a guess.
        _ => Error::tool_failure(
            ToolAdvice::new(
                "The server could not record this step in its replay store, so it was not \
                 carried out",
                Retry::Helps,
            )
            .instead(
                "Retry in a moment; if the step is then reported as already carried out, it \
                 was not: call the tool again to start a new request",
            ),
            Fallback::Internal,
            "replay_unavailable",
            format!("once-step {step:?} not run: the replay guard did not grant its claim ({outcome:?})"),
        ),
    };
    Err(Flow::Fail(error))
}

impl Round {
    /// Runs a side effect at most once per flow: on later rounds its sealed result
    /// is returned without running it again. With an engine replay guard, a
    /// replayed `requestState` cannot run it a second time either (the replay
    /// gets a tool error instead).
    ///
    /// The guard's claim is taken synchronously: its future is polled once, and a
    /// claim that is not answered then counts as unavailable (the step does not
    /// run). That suits an in-memory guard; a guard that goes over the network
    /// (Redis) needs [`Round::once_async`].
    ///
    /// # Errors
    /// The step's own error, or a refusal of the guard: the step was already
    /// claimed (a tool error that retrying does not help), or the guard could not
    /// answer (a retryable tool error; -32603 on the other carriers). See
    /// [`crate::replay`].
    pub fn once<T, F>(&self, step: &str, f: F) -> Result<T, Flow>
    where
        T: Serialize + DeserializeOwned,
        F: FnOnce() -> Result<T, Error>,
    {
        match self.once_begin(step)? {
            Begin::Done(t) => return Ok(t),
            Begin::Run(None) => {}
            Begin::Run(Some((guard, claim))) => {
                claim_verdict(step, replay::claim_now(guard, &claim))?;
            }
        }
        let t = f().map_err(Flow::Fail)?;
        self.once_end(step, &t)?;
        Ok(t)
    }

    /// [`Round::once`] for a step that awaits (an API call, a database write): the
    /// future `f` makes runs at most once per flow, and only when this round gets
    /// to run it (nothing runs when the step is already done or the guard refuses).
    /// The guard's claim is awaited, so a network guard works here.
    /// If the handler is abandoned while the step runs (its deadline passed), the
    /// step's result is not recorded.
    ///
    /// # Errors
    /// As for [`Round::once`].
    pub async fn once_async<T, F, Fut>(&self, step: &str, f: F) -> Result<T, Flow>
    where
        T: Serialize + DeserializeOwned,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        match self.once_begin(step)? {
            Begin::Done(t) => return Ok(t),
            Begin::Run(None) => {}
            Begin::Run(Some((guard, claim))) => {
                claim_verdict(step, guard.claim(&claim).await)?;
            }
        }
        let t = f().await.map_err(Flow::Fail)?;
        self.once_end(step, &t)?;
        Ok(t)
    }

    /// The sealed result of `step` if it already ran in this flow; else the claim
    /// to make first, when the engine has a replay guard and this round resumes a
    /// flow (a first round presents no state, so there is nothing to replay).
    fn once_begin<T: DeserializeOwned>(&self, step: &str) -> Result<Begin<'_, T>, Flow> {
        if lock(&self.shared().live).finished {
            return Err(finished_error());
        }
        let fixed = &self.shared().fixed;
        if let Some(v) = fixed
            .prior
            .as_ref()
            .and_then(|p| p.state().once.get(step))
            .cloned()
        {
            let t = serde_json::from_value(v.clone()).map_err(|_| {
                Error::internal(format!(
                    "sealed result of step {step:?} does not fit its type"
                ))
            })?;
            lock(&self.shared().live)
                .carry
                .once
                .insert(step.to_owned(), v);
            noted(step, OnceResult::Sealed);
            return Ok(Begin::Done(t));
        }
        let Some(guard) = fixed.engine.replay_guard() else {
            return Ok(Begin::Run(None));
        };
        let skew = fixed.engine.sealer().config().clock_skew().as_secs();
        let Some(prior) = fixed.prior.as_ref() else {
            // A task's first run has no state yet, but a run that takes over a
            // lost one is a first run too: its steps are claimed on the task.
            let Some(task) = fixed.task else {
                return Ok(Begin::Run(None));
            };
            let quota = match fixed.quota_peer {
                Some(peer) => PrincipalKey::of_peer(&fixed.binding, peer),
                None => PrincipalKey::of(&fixed.binding),
            };
            let until = task.deadline.add_secs(skew.saturating_mul(2));
            let claim = Claim::new(task.flow_id, step, fixed.now, until, fixed.now, quota);
            return Ok(Begin::Run(Some((&**guard, claim))));
        };
        // Held for as long as ANY state of this flow can open on ANY instance whose
        // clock is within the tolerated skew of this one's, not only the presented
        // state: a round that presented an earlier state without reaching this step
        // sealed a sibling (same flow, later expiry, no result for the step), and the
        // sibling may be presented after the presented state has expired. Every state
        // of the flow opens only while `now <= deadline + skew` on the instance that
        // opens it, and that instance's clock may lag this one's by up to the skew:
        // hence the flow deadline plus twice the skew, on this instance's clock.
        let quota = match fixed.quota_peer {
            Some(peer) => PrincipalKey::of_peer(prior.binding(), peer),
            None => PrincipalKey::of(prior.binding()),
        };
        let claim = Claim::new(
            prior.flow_id(),
            step,
            prior.issued_at(),
            prior.deadline().add_secs(skew.saturating_mul(2)),
            fixed.now,
            quota,
        );
        Ok(Begin::Run(Some((&**guard, claim))))
    }

    fn once_end<T: Serialize>(&self, step: &str, t: &T) -> Result<(), Flow> {
        let v =
            serde_json::to_value(t).map_err(|e| Error::internal(format!("step result: {e}")))?;
        let mut live = lock(&self.shared().live);
        if live.finished {
            return Err(finished_error());
        }
        live.carry.once.insert(step.to_owned(), v);
        Ok(())
    }
}
