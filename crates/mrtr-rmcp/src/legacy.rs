//! 2025-11-25 clients: the same handler re-run inside the one request until it
//! completes, each round's asks sent through rmcp's [`Peer`](::rmcp::Peer) and
//! answered into the next round, all within [`Mrtr::with_legacy_flow_timeout`].

use std::future::Future;
use std::time::Duration;

use serde_json::{Map, Value};

use super::params::{Legacy, parse_wire};
use super::{Caller, Label, Mrtr};
use mrtr::__private::Run;
use mrtr::__private::{Named, record};
use mrtr::engine::{CarrierResult, Flow, Outcome, Round};
use mrtr::error::{Error, Fallback, Retry, ToolAdvice};
use mrtr::wire::PROTOCOL_VERSION;

/// A 2025-11-25 client: a fresh flow in this request, its capabilities from
/// initialize, rounds re-run here until the handler completes, all within
/// [`Mrtr::with_legacy_flow_timeout`].
pub(super) async fn flow<T, H, L>(
    mrtr: &Mrtr,
    mut params: Map<String, Value>,
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
    legacy_params(&mut params, &legacy.capabilities);
    let mut params = Value::Object(params);
    let limit = mrtr.inner.legacy_flow_timeout;
    let rounds = rounds(mrtr, &mut params, &legacy, &caller, label, handler);
    let outcome = match tokio::time::timeout(limit, rounds).await {
        Ok(Some(outcome)) => return outcome,
        Ok(None) => Outcome::Protocol(Error::internal(
            "2025-11-25 flow did not complete within the round bound",
        )),
        Err(_) => Outcome::from_error(Some(T::METHOD), flow_timed_out(limit)),
    };
    log_only(&params, &caller, &outcome);
    outcome
}

/// The rounds of a 2025-11-25 flow: the outcome that ends it (recorded), or
/// `None` past the round bound (not recorded yet). `params` is rewritten every
/// round.
async fn rounds<T, H, L>(
    mrtr: &Mrtr,
    params: &mut Value,
    legacy: &Legacy,
    caller: &Caller,
    label: Label,
    handler: Option<&H>,
) -> Option<Outcome<T>>
where
    T: CarrierResult,
    H: Fn(Round) -> Run<T, L> + Sync,
    L: Future<Output = Result<T, Flow>>,
{
    // The engine ends a flow past its round limit; this bound is a backstop.
    let bound = mrtr.inner.engine.max_rounds().saturating_add(2);
    for _ in 0..bound {
        let (target, request) = parse_wire(
            T::METHOD,
            params,
            mrtr::__private::metas(&mrtr.inner.engine),
        );
        let outcome = mrtr
            .round(target.as_deref(), request, caller, label, handler)
            .await;
        let Outcome::InputRequired(irr) = outcome else {
            return Some(outcome);
        };
        let asks = irr.input_requests().is_some_and(|a| !a.is_empty());
        let answers = match unbound_refusal(mrtr, legacy, asks) {
            Some(e) => Err(e),
            None => ask(mrtr, legacy, &irr).await,
        };
        let answers = match answers {
            Ok(a) => a,
            Err(e) => {
                let outcome = Outcome::from_error(Some(T::METHOD), e);
                log_only(params, caller, &outcome);
                return Some(outcome);
            }
        };
        let Value::Object(map) = params else {
            unreachable!("the params are an object")
        };
        map.remove("inputResponses");
        map.remove("requestState");
        if !answers.is_empty() {
            map.insert("inputResponses".into(), Value::Object(answers));
        }
        if let Some(state) = irr.request_state() {
            map.insert("requestState".into(), state.into());
        }
    }
    None
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
    };
    super::conclude(outcome, named, None, &caller.id);
}

/// Why a 2025-11-25 flow must not send its asks (`asks`: it has some): it came
/// over HTTP on a session nothing bound to its principal, its principal comes
/// from a resolver, and [`Mrtr::allow_unbound_sessions`] was not called.
fn unbound_refusal(mrtr: &Mrtr, legacy: &Legacy, asks: bool) -> Option<Error> {
    let anonymous = mrtr.inner.principals.is_anonymous();
    (asks && legacy.unbound && !anonymous && !mrtr.inner.allow_unbound_sessions).then(|| {
        Error::internal(
            "2025-11-25 asks refused: the session is not bound to its principal, so \
             anyone holding its Mcp-Session-Id could answer them; serve rmcp behind \
             mrtr_rmcp::HttpGuard (feature http), or call \
             Mrtr::allow_unbound_sessions if something else binds sessions",
        )
    })
}

/// Sends one round's asks to a 2025-11-25 client, one at a time, and returns
/// its answers keyed as asked.
async fn ask(
    mrtr: &Mrtr,
    legacy: &Legacy,
    irr: &mrtr::wire::InputRequiredResult,
) -> Result<Map<String, Value>, Error> {
    let mut answers = Map::new();
    let Some(asks) = irr.input_requests() else {
        return Ok(answers);
    };
    for (key, ask) in asks {
        let request = mrtr.inner.asks.server_request(ask).ok_or_else(|| {
            Error::internal(format!(
                "ask {:?} does not fit rmcp's server request types",
                mrtr::wire::truncate(key, 64)
            ))
        })?;
        let sent =
            tokio::time::timeout(mrtr.inner.ask_timeout, legacy.peer.send_request(request)).await;
        let answer = match sent {
            Ok(Ok(result)) => serde_json::to_value(result)
                .map_err(|_| Error::internal("a client result does not serialize"))?,
            Ok(Err(e)) => {
                let why = match &e {
                    ::rmcp::ServiceError::McpError(d) => format!("error {}", d.code.0),
                    ::rmcp::ServiceError::TransportClosed => "transport closed".into(),
                    ::rmcp::ServiceError::Cancelled { .. } => "cancelled".into(),
                    _ => "a transport failure".into(),
                };
                return Err(ask_failed(format!(
                    "2025-11-25 client answered ask {:?} with {why}",
                    mrtr::wire::truncate(key, 64)
                )));
            }
            Err(_) => {
                return Err(ask_failed(format!(
                    "2025-11-25 client did not answer ask {:?} within {} s",
                    mrtr::wire::truncate(key, 64),
                    mrtr.inner.ask_timeout.as_secs()
                )));
            }
        };
        answers.insert(key.clone(), answer);
    }
    Ok(answers)
}

/// A 2025-11-25 flow past [`Mrtr::with_legacy_flow_timeout`]: retryable, as a failed
/// ask is.
fn flow_timed_out(limit: Duration) -> Error {
    Error::tool_failure(
        ToolAdvice::new(
            "The client did not answer the server's questions in time",
            Retry::Helps,
        )
        .instead("Call the tool again when the questions can be answered sooner"),
        Fallback::Internal,
        "legacy_flow_timeout",
        format!(
            "2025-11-25 flow did not complete within {} s",
            limit.as_secs_f64()
        ),
    )
}

/// A failed ask of a 2025-11-25 flow: retryable (nothing of it was sealed), a
/// tool error on `tools/call`, -32603 elsewhere.
fn ask_failed(detail: String) -> Error {
    Error::tool_failure(
        ToolAdvice::new(
            "The client did not answer a request for input",
            Retry::Helps,
        )
        .instead("Call the tool again when the client can answer"),
        Fallback::Internal,
        "legacy_ask",
        detail,
    )
}

/// A 2025-11-25 request's params as the engine reads them: this crate's protocol
/// version and the capabilities declared at `initialize` in `_meta` (the state
/// never leaves the server, so the version only keys it), and no client-sent
/// `requestState` or `inputResponses` (the flow starts in this request).
fn legacy_params(params: &mut Map<String, Value>, capabilities: &Value) {
    let mut meta = match params.remove("_meta") {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    meta.insert(
        mrtr::wire::META_PROTOCOL_VERSION.into(),
        PROTOCOL_VERSION.into(),
    );
    meta.insert(
        mrtr::wire::META_CLIENT_CAPABILITIES.into(),
        capabilities.clone(),
    );
    params.insert("_meta".into(), Value::Object(meta));
    params.remove("requestState");
    params.remove("inputResponses");
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_legacy_request_starts_a_fresh_flow_with_the_handshake_capabilities() {
        let mut params = json!({
            "name": "t",
            "requestState": "client-sent",
            "inputResponses": {"k": {}},
            "_meta": {"progressToken": 7},
        })
        .as_object()
        .unwrap()
        .clone();
        legacy_params(&mut params, &json!({"sampling": {}}));
        assert!(params.get("requestState").is_none());
        assert!(params.get("inputResponses").is_none());
        let meta = &params["_meta"];
        assert_eq!(meta["progressToken"], 7);
        assert_eq!(meta[mrtr::wire::META_PROTOCOL_VERSION], PROTOCOL_VERSION);
        assert_eq!(
            meta[mrtr::wire::META_CLIENT_CAPABILITIES],
            json!({"sampling": {}})
        );
    }
}
