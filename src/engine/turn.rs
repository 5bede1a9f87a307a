//! The one carrier path: a parsed carrier request, its principal, the time and a
//! handler in; exactly one [`Outcome`] out. [`Service`](crate::service::Service),
//! the `rmcp` adapter and [`Engine::run`] all run a round through [`run`].
//!
//! In order: the request's params must have parsed; its target must have a
//! handler (none: the "unknown target" -32602); the round begins on the engine
//! (its state opens, or the request is refused); the handler is called with
//! panics caught; a synchronous handler's result ends the round at once (no
//! future, no timer), an async handler's future is raced against the deadline;
//! and the round ends (sealed if it asks, abandoned if the handler panicked or
//! overran).

use std::future::Future;
use std::net::IpAddr;
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt as _;
use futures_util::future::{Either, select};

use super::TaskFlow;
use super::finish::FlowTrace;
use super::handler::{CarrierResult, Run};
use super::{Engine, Flow, NotificationSink, Notifier, Outcome, Round};
use crate::error::{Error, Fallback, Retry, ToolAdvice};
use crate::principal::Principal;
use crate::time::Timestamp;
use crate::wire::TraceParent;
use crate::wire::{CarrierMethod, CarrierRequest, RequestError};

/// What one round of a carrier request starts from.
#[derive(Debug)]
pub struct Turn<'a> {
    /// The engine the round runs on.
    pub engine: &'a Engine,
    /// The request's params, parsed (or why they did not parse).
    pub request: Result<CarrierRequest, RequestError>,
    /// Who is asking.
    pub principal: &'a Principal,
    /// The transport's peer address, for an anonymous principal's replay quota
    /// (`Engine::begin_from`).
    pub peer: Option<IpAddr>,
    /// The time, read by the transport.
    pub now: Timestamp,
    /// The handler deadline, as the overdue error reports it.
    pub timeout: Duration,
    /// Where the round's notifications go (progress, log messages), when the
    /// transport can carry them; the round uses it only if the request asked
    /// ([`NotificationSink`]).
    pub notifications: Option<Arc<dyn NotificationSink>>,
    /// The span the round runs in, as the transport's tracer has it: sealed
    /// into a first round's state, for later rounds to link to.
    pub trace: Option<TraceParent>,
}

/// How a round ended, and which round of its flow it was (`None` when it never
/// began: the request was refused before its handler).
#[derive(Debug)]
#[must_use]
pub struct Ran<T> {
    /// The round's outcome.
    pub outcome: Outcome<T>,
    /// Which round of its flow it was.
    pub round: Option<u32>,
    /// Where its flow is in the trace, for a round of a flow of two or more.
    pub flow: Option<FlowTrace>,
}

impl<T> Ran<T> {
    fn refused(outcome: Outcome<T>) -> Self {
        Self {
            outcome,
            round: None,
            flow: None,
        }
    }
}

/// Runs one round of a carrier request whose result is `T` (so whose method is
/// `T::METHOD`). `handler_for` finds the handler for the parsed request (`None`:
/// the target is unknown); `deadline` abandons an async handler still running
/// when it completes (a synchronous one is never raced against it, and the
/// future is not polled for one).
pub async fn run<T, H, L, D>(
    turn: Turn<'_>,
    handler_for: impl FnOnce(&CarrierRequest) -> Option<H>,
    deadline: D,
) -> Ran<T>
where
    T: CarrierResult,
    H: FnOnce(Round) -> Run<T, L>,
    L: Future<Output = Result<T, Flow>>,
    D: Future<Output = ()>,
{
    run_in(turn, None, handler_for, deadline).await
}

/// [`run`], for a round of a task's flow when `task` is given
/// ([`TaskFlow`]: its `once` steps keyed on the task, its state held until
/// the task's end).
pub(crate) async fn run_in<T, H, L, D>(
    turn: Turn<'_>,
    task: Option<TaskFlow>,
    handler_for: impl FnOnce(&CarrierRequest) -> Option<H>,
    deadline: D,
) -> Ran<T>
where
    T: CarrierResult,
    H: FnOnce(Round) -> Run<T, L>,
    L: Future<Output = Result<T, Flow>>,
    D: Future<Output = ()>,
{
    let method = T::METHOD;
    let request = match turn.request {
        Ok(r) => r,
        Err(e) => return Ran::refused(Outcome::Protocol(e.into())),
    };
    if request.method() != method {
        // A caller's mistake, never the client's: the result type decides what
        // goes out, so an InputRequiredResult or a result of another carrier can
        // never answer this request.
        return Ran::refused(Outcome::Protocol(Error::internal(format!(
            "a {} request run for a {} handler",
            request.method().as_str(),
            method.as_str()
        ))));
    }
    let Some(handler) = handler_for(&request) else {
        return Ran::refused(Outcome::Protocol(unknown_target(&request)));
    };
    let notifier = Notifier::for_request(request.meta(), turn.notifications);
    let (round, finisher) = match turn.engine.begin_from(
        request,
        turn.principal,
        turn.peer,
        turn.now,
        notifier,
        task,
        turn.trace,
    ) {
        Ok(round) => round.hand_over(),
        Err(e) => return Ran::refused(Outcome::from_error(Some(method), e)),
    };
    let number = round.number();
    // The handler is called with panics caught: a synchronous one runs here, an
    // async one's code before its first `.await` runs when its future is made.
    let (outcome, flow) = match std::panic::catch_unwind(AssertUnwindSafe(move || handler(round))) {
        Ok(Run::Now(result)) => finisher.finish(result),
        Ok(Run::Later(future)) => match await_within(future, deadline).await {
            Awaited::Done(result) => finisher.finish(result),
            Awaited::Panicked => {
                finisher.abandon();
                (panicked(), None)
            }
            Awaited::Overdue => {
                finisher.abandon();
                (
                    Outcome::from_error(Some(method), overdue(turn.timeout)),
                    None,
                )
            }
        },
        Err(_panic) => {
            finisher.abandon();
            (panicked(), None)
        }
    };
    Ran {
        outcome,
        round: Some(number),
        flow,
    }
}

/// [`run`] for a handler that returns at once: the same path, here and now (the
/// future of a synchronous handler's round is ready on its first poll).
pub(crate) fn run_now<T, H>(turn: Turn<'_>, handler: H) -> Ran<T>
where
    T: CarrierResult,
    H: FnOnce(Round) -> Result<T, Flow>,
{
    let future = run(
        turn,
        |_| Some(|round| Run::<T, std::future::Pending<_>>::Now(handler(round))),
        std::future::ready(()),
    );
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match pin!(future).poll(&mut cx) {
        std::task::Poll::Ready(ran) => ran,
        // Not reached: nothing in the path awaits for a synchronous handler.
        std::task::Poll::Pending => Ran::refused(Outcome::Protocol(Error::internal(
            "a synchronous round did not complete",
        ))),
    }
}

/// How an async handler's future ended ([`await_within`]).
pub(crate) enum Awaited<R> {
    /// It finished with `R`.
    Done(R),
    /// It panicked.
    Panicked,
    /// The deadline came first; the future was dropped.
    Overdue,
}

/// Awaits an async handler's `future` with panics caught, abandoned (dropped)
/// when `deadline` is ready first: the one rule for every async handler, the
/// carriers' here and the completion sources' in the service.
pub(crate) async fn await_within<F, D>(future: F, deadline: D) -> Awaited<F::Output>
where
    F: Future,
    D: Future<Output = ()>,
{
    let ran = AssertUnwindSafe(future).catch_unwind();
    match select(pin!(ran), pin!(deadline)).await {
        Either::Left((Ok(result), _)) => Awaited::Done(result),
        Either::Left((Err(_panic), _)) => Awaited::Panicked,
        Either::Right(((), _)) => Awaited::Overdue,
    }
}

/// The refusal of a request whose target has no handler: -32602, and for a
/// resource the URI in `data` (SEP-2164).
fn unknown_target(request: &CarrierRequest) -> Error {
    match request.method() {
        CarrierMethod::ToolsCall => Error::invalid_params("Unknown tool"),
        CarrierMethod::PromptsGet => Error::invalid_params("Unknown prompt"),
        CarrierMethod::ResourcesRead => Error::resource_not_found(request.target()),
    }
}

fn panicked<T>() -> Outcome<T> {
    Outcome::Protocol(Error::internal("handler panicked"))
}

/// The failure of a handler that outlived its deadline: retryable (nothing it did
/// in that run was recorded), a tool error on `tools/call`, -32603 elsewhere.
fn overdue(timeout: Duration) -> Error {
    Error::tool_failure(
        ToolAdvice::new("The tool did not finish in time", Retry::Helps)
            .instead("Call the tool again; if it keeps timing out, try again later"),
        Fallback::Internal,
        "deadline",
        format!(
            "handler still running after {} ms: abandoned",
            timeout.as_millis()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{PromptResult, ToolResult};
    use crate::seal::Keyring;
    use serde_json::json;

    static ANONYMOUS: Principal = Principal::anonymous();

    fn turn(engine: &Engine, method: CarrierMethod) -> Turn<'_> {
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                          "io.modelcontextprotocol/clientCapabilities": {}});
        Turn {
            engine,
            request: CarrierRequest::from_params(
                method,
                Some(&json!({"name": "t", "_meta": meta})),
            ),
            principal: &ANONYMOUS,
            peer: None,
            now: Timestamp::from_unix_secs(1_800_000_000),
            timeout: Duration::from_secs(1),
            notifications: None,
            trace: None,
        }
    }

    #[test]
    fn a_request_of_another_carrier_than_the_result_is_refused_before_its_handler() {
        let engine = Engine::new(Keyring::ephemeral(), "t");
        let ran = run_now(turn(&engine, CarrierMethod::PromptsGet), |_| {
            Ok(ToolResult::text("never"))
        });
        assert!(ran.round.is_none());
        assert!(
            matches!(&ran.outcome, Outcome::Protocol(e) if e.code() == -32603),
            "{:?}",
            ran.outcome
        );
        let ran = run_now(turn(&engine, CarrierMethod::PromptsGet), |_| {
            Ok(PromptResult::new())
        });
        assert!(matches!(ran.outcome, Outcome::Complete(_)));
        assert_eq!(ran.round, Some(1));
    }

    #[test]
    fn a_panicking_or_overdue_handler_ends_its_round_abandoned() {
        let engine = Engine::new(Keyring::ephemeral(), "t");
        let ran =
            run_now::<ToolResult, _>(turn(&engine, CarrierMethod::ToolsCall), |_| panic!("boom"));
        assert!(matches!(&ran.outcome, Outcome::Protocol(e) if e.code() == -32603));
        // An async handler still pending when the deadline is ready is abandoned
        // as overdue: a tool error the model is told to retry.
        let future = run(
            turn(&engine, CarrierMethod::ToolsCall),
            |_| Some(|_round| Run::Later(std::future::pending::<Result<ToolResult, Flow>>())),
            std::future::ready(()),
        );
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let std::task::Poll::Ready(ran) = pin!(future).poll(&mut cx) else {
            panic!("the round waited")
        };
        assert!(
            matches!(ran.outcome, Outcome::ToolError { .. }),
            "{:?}",
            ran.outcome
        );
    }
}
