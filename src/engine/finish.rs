//! The engine's end of a round: the handler has returned (or its future has
//! completed), and the round ends in exactly one [`Outcome`]. The capability
//! gate runs over the round's questions, and a round that asks seals its state.
//! Nothing here is the handler's: it holds only its [`Round`], which cannot end
//! the round.

use crate::wire::TraceParent;
use std::sync::{Arc, Mutex};

use super::Outcome;
use super::round::{Answered, Fixed, Flow, Live, Round, Shared, accept, lock};
use super::state::{Asked, SealedAnswer};
use crate::capability;
use crate::error::Error;
use crate::seal::{Claims, SealError};
use crate::wire::input::{ElicitParams, InputRequest};
use crate::wire::{CarrierMethod, InputRequests, InputRequiredResult};

/// The engine's side of a round handed to a handler: it finishes the round once
/// the handler has returned (or its future has completed).
#[derive(Debug)]
pub(crate) struct Finisher {
    shared: Arc<Shared>,
}

impl Round {
    /// Splits off the engine's handle, so the handler can own the `Round`.
    pub(crate) fn hand_over(self) -> (Round, Finisher) {
        let finisher = Finisher {
            shared: Arc::clone(self.shared()),
        };
        (self, finisher)
    }
}

impl Finisher {
    /// Ends the round with the handler's result, and says where its flow is
    /// in the trace.
    pub(crate) fn finish<T>(self, result: Result<T, Flow>) -> (Outcome<T>, Option<FlowTrace>) {
        let outcome = finish(&self.shared.fixed, &self.shared.live, result);
        (outcome, self.flow_trace())
    }

    /// The flow's place in the trace: a round that resumes a flow, or one
    /// that sealed a state (the first of a flow); `None` for a request that
    /// completed in one round, and for one the transport does not trace (no
    /// digest is computed then).
    fn flow_trace(&self) -> Option<FlowTrace> {
        let fixed = &self.shared.fixed;
        fixed.trace?;
        match &fixed.prior {
            Some(p) => Some(FlowTrace {
                flow: flow_digest(&p.flow_id()),
                first: p.state().trace.as_deref().and_then(TraceParent::parse),
            }),
            None => lock(&self.shared.live).sealed_flow.map(|id| FlowTrace {
                flow: flow_digest(&id),
                first: None,
            }),
        }
    }

    /// Ends the round without sealing anything (the handler was abandoned: overdue or
    /// panicked): later uses of its `Round` fail, and no `once` result it recorded
    /// is kept.
    pub(crate) fn abandon(self) {
        lock(&self.shared.live).finished = true;
    }
}

/// Where a round's flow is in the trace: what a transport's span records and
/// links to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowTrace {
    /// The flow's id as a trace attribute: 16 hex digits of a digest of it,
    /// the same in every round of the flow, on any instance (never the state,
    /// never the id itself, which keys the replay guard's claims).
    pub flow: String,
    /// The span of the flow's first round, which this round's span links to
    /// (from the sealed state, so a client cannot forge it); `None` on the
    /// first round, or when that round's transport traced nothing.
    pub first: Option<TraceParent>,
}

/// Domain label of [`FlowTrace::flow`].
const FLOW_TRACE_LABEL: &[u8] = b"mrtr/trace/v1/flow";

fn flow_digest(id: &[u8; 16]) -> String {
    use sha2::{Digest, Sha256};
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut h = Sha256::new();
    h.update(FLOW_TRACE_LABEL);
    h.update(id);
    let mut out = String::with_capacity(16);
    for b in &h.finalize()[..8] {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    out
}

/// Ends a round: the handler's result, a failure, or the questions it recorded.
fn finish<T>(fixed: &Fixed, live: &Mutex<Live>, result: Result<T, Flow>) -> Outcome<T> {
    let mut live = lock(live);
    if live.finished {
        return Outcome::Protocol(Error::internal("round finished twice"));
    }
    live.finished = true;
    let method = fixed.request.method();
    // The capability gate over every question of the round: a required one the
    // client did not declare fails the request, whatever the handler returned.
    let declared = &fixed.request.meta().client_capabilities;
    let asks = live.pending.iter().map(|(_, a)| (&a.request, a.necessity));
    if let Err(e) = capability::verdict(declared, asks, |_| {}) {
        return Outcome::Protocol(e);
    }
    match result {
        Ok(result) => {
            if let Some(prior) = &fixed.prior {
                let lifetime = fixed.engine.sealer().config().flow_lifetime();
                let age = crate::metrics::flow_age(prior.deadline(), lifetime, fixed.now);
                crate::metrics::flow_completed(age);
            }
            Outcome::Complete(result)
        }
        Err(Flow::Fail(e)) => Outcome::from_error(Some(method), e),
        // Only an ask makes a `Suspend`, and it records its question first; one
        // kept from another round (in a static, say) finds none here.
        Err(Flow::Suspend(_)) if live.pending.is_empty() => {
            Outcome::Protocol(Error::internal("handler suspended without asking anything"))
        }
        Err(Flow::Suspend(_) | Flow::StateOnly) => suspend(fixed, &mut live, method),
    }
}

fn suspend<T>(fixed: &Fixed, live: &mut Live, method: CarrierMethod) -> Outcome<T> {
    let engine = &fixed.engine;
    let issued = fixed.prior.as_ref().map_or(0, |p| p.round());
    if issued >= engine.max_rounds() {
        let e = engine.limit_error(
            "This request needed more rounds of questions than the server allows",
            format!("max rounds {} reached", engine.max_rounds()),
        );
        return Outcome::from_error(Some(method), e);
    }
    let max_asks = engine.max_asks_per_round();
    if live.pending.len() > max_asks {
        let e = engine.limit_error(
            "This request asked more questions at once than the server allows",
            format!("{} asks in one round, max {max_asks}", live.pending.len()),
        );
        return Outcome::from_error(Some(method), e);
    }
    // The answers first: they copy their keys, and the questions then take theirs
    // (the round is over, so `seen` is not read again; a key is pending once).
    carry_answers(fixed, live);
    let pending = std::mem::take(&mut live.pending);
    let mut requests = InputRequests::with_capacity(pending.len());
    for (at, ask) in pending {
        let key = std::mem::take(&mut live.seen[at].0);
        live.carry.asked.insert(
            key.clone(),
            Asked {
                kind: ask.request.kind(),
                digest: ask.digest,
            },
        );
        let mut req = ask.request;
        if let (Some(note), InputRequest::Elicit(p)) = (&ask.note, &mut req) {
            let msg = match p {
                ElicitParams::Form(f) => &mut f.message,
                ElicitParams::Url(u) => &mut u.message,
            };
            msg.push_str("\n\n");
            msg.push_str(note);
        }
        requests.insert(key, req);
    }
    let config = engine.sealer().config();
    let state = std::mem::take(&mut live.carry);
    let claims = match &fixed.prior {
        None => Claims::first_round(fixed.binding, fixed.now, config, state),
        Some(p) => Claims::next_round(p, fixed.now, config, state),
    };
    let claims = match fixed.task {
        Some(task) => claims.for_task(task.flow_id, task.deadline),
        None => claims,
    };
    let token = match engine.sealer().seal_flow(&claims) {
        Ok((t, flow)) => {
            live.sealed_flow = Some(flow);
            t
        }
        // The state holds the client's answers, so a client can push it over the size
        // limit (a long free-text field): a limit like max rounds, not a server fault.
        Err(e @ (SealError::TooLarge { .. } | SealError::TokenTooLong { .. })) => {
            let e = engine.limit_error(
                "The answers gathered so far are too large to carry into the next round",
                format!("sealing requestState: {e}"),
            );
            return Outcome::from_error(Some(method), e);
        }
        Err(e) => {
            return Outcome::Protocol(Error::internal(format!("sealing requestState failed: {e}")));
        }
    };
    match InputRequiredResult::new(method, requests, Some(token)) {
        Ok(irr) => Outcome::InputRequired(irr),
        Err(e) => Outcome::Protocol(Error::internal(format!(
            "building InputRequiredResult: {e}"
        ))),
    }
}

/// Puts the answers the round took into the state it seals: a sealed one as it
/// came, a fresh one in the form [`accept`] gives it (the same checks, which it
/// passed when the handler took it, so it passes again: the handler's own `fits`
/// only refuses, it never changes the answer).
fn carry_answers(fixed: &Fixed, live: &mut Live) {
    for answered in std::mem::take(&mut live.answered) {
        match answered {
            Answered::Sealed { at } => {
                let key = live.seen[at].0.clone();
                let sealed = fixed
                    .prior
                    .as_ref()
                    .and_then(|p| p.state().answers.get(&key));
                if let Some(a) = sealed {
                    live.carry.answers.insert(key, a.clone());
                }
            }
            Answered::Fresh {
                at,
                kind,
                digest,
                request,
            } => {
                let key = live.seen[at].0.clone();
                let given = fixed.request.input_responses().and_then(|r| r.get(&key));
                if let Some(Ok(resp)) = given.map(|v| accept(kind, &request, v, &|_| Ok(()))) {
                    let value = resp.to_value();
                    live.carry.answers.insert(
                        key,
                        SealedAnswer {
                            kind,
                            digest,
                            value,
                        },
                    );
                }
            }
        }
    }
}
