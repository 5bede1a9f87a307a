//! The recording of a request once it has an outcome: its count and labels in
//! [`crate::metrics`], a refusal's private diagnostic (through `tracing`, target
//! `mrtr::diag`), and the fields of the transport's access-log line
//! ([`RequestLog`]). [`Service`](crate::service::Service) and the `rmcp` adapter
//! record every request here, and nowhere else.
//!
//! Every metric label comes from a closed set: the methods routed, the outcomes,
//! the error codes, and names the application registered (never a string a
//! client chose for an unknown target). What a log carries of the client's
//! strings (the id, the method, the target) is shortened.

use crate::engine::Outcome;
use crate::error::DiagContext;
use crate::metrics::{self, RequestOutcome};
use crate::seal::RejectReason;
use crate::wire::jsonrpc::RequestId;

/// The private, per-request log record (never sent to the client).
#[derive(Debug, Clone, Default)]
pub struct RequestLog {
    /// The JSON-RPC id, rendered as JSON text.
    pub jsonrpc_id: Option<String>,
    /// The method, if one was read.
    pub method: Option<String>,
    /// The tool or prompt name or resource URI.
    pub target: Option<String>,
    /// `complete`, `input_required`, `tool_error`, `notification`, or `error:<code>`.
    pub outcome: String,
    /// The round of an MRTR flow, when known (1 = first round).
    pub round: Option<u32>,
    /// The private reason a requestState was rejected, when it was.
    pub reject_reason: Option<&'static str>,
    /// A private diagnostic detail (never a token, key, plaintext state or argument value).
    pub detail: Option<String>,
    /// The client's era: 2026-07-28, or the 2025 era of a session.
    pub era: crate::wire::Era,
    /// The MRTR flow's id as a trace attribute (16 hex digits of a digest of
    /// it), for a round of a flow of two or more rounds.
    pub flow: Option<String>,
    /// The span of the flow's first round, for a later round's span to link
    /// to (read from the sealed state).
    pub flow_link: Option<crate::wire::TraceParent>,
}

/// What a request's diagnostic and metrics name it by: its method, its target
/// (the tool or prompt name, or the resource URI, at most 128
/// characters) and its round, when known.
#[derive(Debug, Clone, Copy, Default)]
pub struct Named<'a> {
    /// The JSON-RPC method.
    pub method: Option<&'a str>,
    /// The tool or prompt name, or the resource URI.
    pub target: Option<&'a str>,
    /// The round of the flow.
    pub round: Option<u32>,
    /// The client's era.
    pub era: crate::wire::Era,
}

/// The longest JSON-RPC string id written to the log, in characters (like the
/// method and target, a client-chosen id is shortened so it cannot bloat a line).
const ID_MAX: usize = 128;

/// The longest target (tool or prompt name, resource URI) a log line or metric
/// label carries, in characters.
pub(crate) const TARGET_MAX: usize = 128;

/// The longest method a log line carries, in characters.
pub(crate) const METHOD_MAX: usize = 64;

/// `target` as a log names it: at most 128 characters (`TARGET_MAX`).
pub fn target(target: &str) -> &str {
    crate::wire::truncate(target, TARGET_MAX)
}

/// The request id as the log shows it: a long string id is shortened.
pub(crate) fn log_id(id: &RequestId) -> RequestId {
    match id {
        RequestId::String(s) => RequestId::String(crate::wire::truncate(s, ID_MAX).to_owned()),
        other => other.clone(),
    }
}

/// Ends a request in the metrics and, for a refusal, its private diagnostic
/// (with `correlation_id` and the JSON-RPC `id`). `outcome` is `None` for a
/// notification; `name` is the registered name of the tool or prompt, if it is
/// one. The one place every request is recorded.
pub fn report<T>(
    outcome: Option<&Outcome<T>>,
    id: Option<&RequestId>,
    correlation_id: &str,
    named: Named<'_>,
    name: Option<&str>,
) {
    count(named, outcome, name);
    if let Some(e) = outcome.and_then(Outcome::error) {
        let logged_id = id.map(log_id);
        e.log(&DiagContext {
            correlation_id,
            jsonrpc_id: logged_id.as_ref(),
            method: named.method,
            target: named.target,
            round: named.round,
        });
    }
}

/// [`report`], and the outcome's fields of the access-log line `log`: its
/// label, and a refusal's private reason and detail.
pub(crate) fn conclude<T>(
    outcome: Option<&Outcome<T>>,
    id: Option<&RequestId>,
    correlation_id: &str,
    log: &mut RequestLog,
    name: Option<&str>,
) {
    let named = Named {
        method: log.method.as_deref(),
        target: log.target.as_deref(),
        round: log.round,
        era: log.era,
    };
    report(outcome, id, correlation_id, named, name);
    let Some(outcome) = outcome else {
        log.outcome = "notification".into();
        return;
    };
    log.outcome = outcome.label();
    if let Some(e) = outcome.error() {
        log.reject_reason = e.diagnostic().reject_reason;
        log.detail = Some(e.diagnostic().detail.clone());
    }
}

/// Records the request in [`crate::metrics`]: its count, a refused state's
/// reason, and the round it was.
fn count<T>(named: Named<'_>, outcome: Option<&Outcome<T>>, name: Option<&str>) {
    let method = metrics::method_label(named.method);
    let result = match outcome {
        None => RequestOutcome::Notification,
        Some(Outcome::Complete(_)) => RequestOutcome::Complete,
        Some(Outcome::InputRequired(_)) => RequestOutcome::InputRequired,
        Some(Outcome::ToolError { .. }) => RequestOutcome::ToolError,
        Some(Outcome::Protocol(e)) => RequestOutcome::Error(e.code()),
    };
    metrics::request(method, name, result, named.era);
    if let Some(reason) = outcome
        .and_then(Outcome::error)
        .and_then(|e| e.diagnostic().reject_reason)
        .and_then(RejectReason::from_name)
    {
        metrics::state_rejected(reason);
    }
    if let Some(n) = named.round {
        metrics::round(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_string_ids_and_targets_are_shortened_for_the_log() {
        let long = "i".repeat(10_000);
        let RequestId::String(s) = log_id(&RequestId::String(long.clone())) else {
            panic!("not a string id")
        };
        assert_eq!(s.chars().count(), ID_MAX);
        assert_eq!(
            log_id(&RequestId::Number(7.into())),
            RequestId::Number(7.into())
        );
        assert_eq!(target(&long).chars().count(), TARGET_MAX);
        assert_eq!(target("greet"), "greet");
    }
}
