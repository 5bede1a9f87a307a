//! The one line written per request, and correlation ids. (Installing a
//! subscriber is the application's job: the `mrtr` binary does it.)
//!
//! The request line carries only what [`RequestLog`] holds (ids, names,
//! outcome, round, private reject reason) plus the transport's status and
//! duration: never a body, a token, a key or an argument value.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mrtr::service::RequestLog;

/// The tracing target of the per-request line (`RUST_LOG=mrtr::request=info`).
pub(crate) const REQUEST_TARGET: &str = "mrtr::request";

/// A fresh correlation id: 16 lower-case hex characters.
///
/// Unique and unguessable enough for joining log lines (SipHash under the
/// process's random std hasher keys, over a counter and the clock); it is not a
/// secret and never leaves the process except in the SSE event id.
pub(crate) fn correlation_id() -> String {
    static KEYS: OnceLock<RandomState> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = KEYS.get_or_init(RandomState::new).build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    h.write_u128(nanos);
    h.write_u32(std::process::id());
    format!("{:016x}", h.finish())
}

/// Writes the one INFO line for a request.
///
/// `http_status` is `None` on stdio.
pub(crate) fn request(
    correlation_id: &str,
    transport: &'static str,
    log: &RequestLog,
    http_status: Option<u16>,
    elapsed: Duration,
) {
    // Milliseconds with microsecond resolution.
    let duration_ms = (elapsed.as_micros() as f64) / 1000.0;
    // The trace and span of the request's span (the `otel` feature), so a
    // line and a trace find each other.
    let (trace_id, span_id) = trace_ids();
    operation(transport, log, elapsed);
    tracing::info!(
        target: REQUEST_TARGET,
        correlation_id,
        transport,
        era = log.era.as_str(),
        jsonrpc_id = log.jsonrpc_id.as_deref(),
        method = log.method.as_deref(),
        target = log.target.as_deref(),
        outcome = log.outcome.as_str(),
        round = log.round,
        reject_reason = log.reject_reason,
        detail = log.detail.as_deref(),
        http_status,
        duration_ms,
        trace_id = trace_id.as_deref(),
        span_id = span_id.as_deref(),
        "request"
    );
}

/// The request as the conventions' `mcp.server.operation.duration` counts it
/// (an MCP request on HTTP or stdio; not a notification, nor a task's run).
fn operation(transport: &'static str, log: &RequestLog, elapsed: Duration) {
    use mrtr::metrics::OperationEnd;
    let network = match transport {
        "http" => "tcp",
        "stdio" => "pipe",
        _ => return,
    };
    let end = match (log.outcome.as_str(), crate::span::error_code(log)) {
        ("notification", _) => return,
        ("tool_error", _) => OperationEnd::ToolError,
        (_, Some(code)) => OperationEnd::Error(code),
        (o, None) if o.starts_with("http:") => return,
        _ => OperationEnd::Ok,
    };
    mrtr::metrics::server_operation(log.method.as_deref(), end, network, elapsed);
}

/// The ids of the current span's OpenTelemetry context, when it has one.
#[cfg(feature = "otel")]
fn trace_ids() -> (Option<String>, Option<String>) {
    use opentelemetry::trace::TraceContextExt;
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    let span = tracing::Span::current();
    if span.is_disabled() {
        return (None, None);
    }
    let cx = span.context();
    let sc = cx.span().span_context().clone();
    if sc.is_valid() {
        (
            Some(sc.trace_id().to_string()),
            Some(sc.span_id().to_string()),
        )
    } else {
        (None, None)
    }
}

#[cfg(not(feature = "otel"))]
fn trace_ids() -> (Option<String>, Option<String>) {
    (None, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn correlation_ids_are_16_hex_and_distinct() {
        let a = correlation_id();
        let b = correlation_id();
        assert_eq!(a.len(), 16);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_ne!(a, b);
    }
}
