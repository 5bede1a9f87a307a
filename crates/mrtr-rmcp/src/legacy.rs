//! 2025-11-25 clients: the core's bridge ([`mrtr::legacy::run`]), the same
//! one `mrtr-server`'s transports use, with rmcp's [`Peer`](::rmcp::Peer) as
//! its way of asking: each round's asks go out as server-to-client requests,
//! their results feed the next run of the handler, all within
//! [`Mrtr::with_legacy_flow_timeout`].

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::params::{Legacy, parse_wire};
use super::{Caller, Label, Mrtr};
use mrtr::__private::Run;
use mrtr::__private::{Named, record};
use mrtr::engine::{CarrierResult, Flow, Outcome, Round};
use mrtr::error::Error;
use mrtr::legacy::{Bounds, BoxFuture, RequestFailed, ServerRequests, Session};

/// A 2025-11-25 client: a fresh flow in this request, its capabilities from
/// initialize, rounds re-run here until the handler completes, all within
/// [`Mrtr::with_legacy_flow_timeout`].
pub(super) async fn flow<T, H, L>(
    mrtr: &Mrtr,
    params: Map<String, Value>,
    legacy: Legacy,
    caller: Caller,
    label: Label,
    handler: Option<&H>,
) -> Outcome<T>
where
    T: CarrierResult,
    H: Fn(Round) -> Run<T, L> + Sync,
    L: Future<Output = Result<T, Flow>>,
{
    let version = legacy
        .peer
        .peer_info()
        .map(|i| i.protocol_version.to_string())
        .unwrap_or_default();
    let session = Session::from_handshake(&version, legacy.capabilities.clone());
    let requests = Asks {
        mrtr,
        legacy: &legacy,
    };
    let bounds = Bounds {
        ask_timeout: mrtr.inner.ask_timeout,
        flow_timeout: mrtr.inner.legacy_flow_timeout,
    };
    let params = Value::Object(params);
    // Whether the outcome is a round's (recorded by the round) or the bridge's.
    let from_round = AtomicBool::new(false);
    let outcome = mrtr::legacy::run(
        T::METHOD,
        Some(&params),
        &session,
        &requests,
        bounds,
        mrtr.inner.engine.max_rounds(),
        |p: Value| {
            let (caller, from_round) = (&caller, &from_round);
            async move {
                let (target, request) =
                    parse_wire(T::METHOD, &p, mrtr::__private::metas(&mrtr.inner.engine));
                let outcome = mrtr
                    .round(target.as_deref(), request, caller, label, handler)
                    .await;
                from_round.store(
                    !matches!(outcome, Outcome::InputRequired(_)),
                    Ordering::Release,
                );
                outcome
            }
        },
    )
    .await;
    if !from_round.load(Ordering::Acquire) {
        log_only(&params, &caller, &outcome);
    }
    outcome
}

/// rmcp's peer as the bridge's way of asking.
struct Asks<'a> {
    mrtr: &'a Mrtr,
    legacy: &'a Legacy,
}

impl ServerRequests for Asks<'_> {
    fn request<'a>(
        &'a self,
        method: &'a str,
        params: &'a Value,
    ) -> BoxFuture<'a, Result<Value, RequestFailed>> {
        Box::pin(async move {
            if let Some(e) = unbound_refusal(self.mrtr, self.legacy) {
                return Err(RequestFailed::Refused(e));
            }
            let ask = json!({"method": method, "params": params});
            let request = self
                .mrtr
                .inner
                .asks
                .server_request_of(&ask)
                .ok_or_else(|| {
                    RequestFailed::Refused(Error::internal(format!(
                        "ask {:?} does not fit rmcp's server request types",
                        mrtr::wire::truncate(method, 64)
                    )))
                })?;
            match self.legacy.peer.send_request(request).await {
                Ok(result) => serde_json::to_value(result).map_err(|_| {
                    RequestFailed::Refused(Error::internal("a client result does not serialize"))
                }),
                Err(::rmcp::ServiceError::McpError(d)) => Err(RequestFailed::Answered {
                    code: i64::from(d.code.0),
                }),
                Err(_) => Err(RequestFailed::Closed),
            }
        })
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
}

/// Records an outcome that did not come from a round.
fn log_only<T: CarrierResult>(params: &Value, caller: &Caller, outcome: &Outcome<T>) {
    let target = params
        .get(T::METHOD.target_param())
        .and_then(Value::as_str)
        .map(record::target);
    let named = Named {
        method: Some(T::METHOD.as_str()),
        target,
        round: None,
        era: caller.era,
    };
    super::conclude(outcome, named, None, &caller.id);
}

/// Why a 2025-11-25 flow must not send its asks: it came over HTTP on a
/// session nothing bound to its principal, its principal comes from a
/// resolver, and [`Mrtr::allow_unbound_sessions`] was not called.
fn unbound_refusal(mrtr: &Mrtr, legacy: &Legacy) -> Option<Error> {
    let anonymous = mrtr.inner.principals.is_anonymous();
    (legacy.unbound && !anonymous && !mrtr.inner.allow_unbound_sessions).then(|| {
        Error::internal(
            "2025-11-25 asks refused: the session is not bound to its principal, so \
             anyone holding its Mcp-Session-Id could answer them; serve rmcp behind \
             mrtr_rmcp::HttpGuard (feature http), or call \
             Mrtr::allow_unbound_sessions if something else binds sessions",
        )
    })
}
