//! The span of one MCP request, named and attributed as the OpenTelemetry
//! semantic conventions for MCP have it: `{mcp.method.name} {target}`, kind
//! SERVER, `mcp.method.name`, the tool or prompt name or resource URI,
//! `gen_ai.operation.name` (`execute_tool` on a tool call),
//! `jsonrpc.request.id`, `mcp.protocol.version`, `error.type` (the JSON-RPC
//! code, or `tool_error` for an `isError` result) and
//! `rpc.response.status_code` (the code), `network.transport`,
//! `network.protocol.*`, `client.address` and `client.port` (the peer's); and
//! the MRTR flow's: `mrtr.round`, `mrtr.outcome` and `mrtr.flow` (a digest of
//! the flow's id, never the state).
//!
//! The spans are `tracing` spans (target `mrtr::mcp`), so any subscriber
//! sees them. With the `otel` feature and a `tracing-opentelemetry` layer
//! installed, a request's span takes the `traceparent` its client sent in
//! `params._meta` as its parent, its context is sealed into a flow's first
//! round, and each later round's span links to the first round's, whichever
//! instance served it.

use mrtr::service::{ParsedMessage, RequestContext, RequestLog};
use mrtr::wire::CarrierMethod;
use tracing::field::Empty;

/// The target of the request spans.
pub(crate) const TARGET: &str = "mrtr::mcp";

/// A request's span, in the request's extensions until its body is read.
#[derive(Clone)]
pub(crate) struct RequestSpan(pub(crate) tracing::Span);

impl RequestSpan {
    /// The span the request's extensions hold, or a disabled one.
    pub(crate) fn of(parts: &http::request::Parts) -> tracing::Span {
        parts
            .extensions
            .get::<Self>()
            .map_or_else(tracing::Span::none, |s| s.0.clone())
    }
}

/// A request's span, not yet named (its method and target are read later).
pub(crate) fn request(transport: &'static str) -> tracing::Span {
    let span = tracing::info_span!(
        target: TARGET,
        "mcp",
        otel.name = Empty,
        otel.kind = "server",
        otel.status_code = Empty,
        "mcp.method.name" = Empty,
        "gen_ai.tool.name" = Empty,
        "gen_ai.prompt.name" = Empty,
        "mcp.resource.uri" = Empty,
        "gen_ai.operation.name" = Empty,
        "jsonrpc.request.id" = Empty,
        "mcp.protocol.version" = Empty,
        "error.type" = Empty,
        "rpc.response.status_code" = Empty,
        "network.transport" = if transport == "stdio" { "pipe" } else { "tcp" },
        "network.protocol.name" = Empty,
        "network.protocol.version" = Empty,
        "client.address" = Empty,
        "client.port" = Empty,
        "mrtr.round" = Empty,
        "mrtr.outcome" = Empty,
        "mrtr.flow" = Empty,
    );
    if transport == "http" {
        span.record("network.protocol.name", "http");
    }
    span
}

/// The span of a task's run (the tasks extension): kind INTERNAL, the child
/// of the request that made it due when that one was traced (the `otel`
/// feature); the run goes on in it, and its own context for the run to seal.
pub(crate) fn task_run(
    parent: Option<mrtr::wire::TraceParent>,
) -> (tracing::Span, Option<mrtr::wire::TraceParent>) {
    let span = tracing::info_span!(
        target: TARGET,
        "mrtr task run",
        otel.kind = "internal",
        otel.status_code = Empty,
        "mcp.method.name" = "tools/call",
        "gen_ai.tool.name" = Empty,
        "gen_ai.prompt.name" = Empty,
        "mcp.resource.uri" = Empty,
        "jsonrpc.request.id" = Empty,
        "error.type" = Empty,
        "mrtr.round" = Empty,
        "mrtr.outcome" = Empty,
        "mrtr.flow" = Empty,
    );
    if span.is_disabled() {
        return (span, None);
    }
    #[cfg(feature = "otel")]
    let own = otel::within(&span, parent);
    #[cfg(not(feature = "otel"))]
    let own = {
        let _ = parent;
        None
    };
    (span, own)
}

/// Names `span` after the request `message` ([`name`]), makes it a child of
/// the trace context `message` carries in `params._meta` (with the `otel`
/// feature), and puts the span's own context into `ctx`, for a first round to
/// seal. Before the span is first entered: a started span keeps its name and
/// parent.
pub(crate) fn adopt(span: &tracing::Span, message: &ParsedMessage, ctx: &mut RequestContext) {
    if span.is_disabled() {
        return;
    }
    if let Some(version) = message.protocol_version() {
        span.record("mcp.protocol.version", version);
    }
    let method = message.method_name().unwrap_or("unknown");
    span.record("mcp.method.name", method);
    span.record("otel.name", name(method, message.target()));
    if method == "tools/call" {
        span.record("gen_ai.operation.name", "execute_tool");
    }
    #[cfg(feature = "otel")]
    otel::adopt(span, message, ctx);
    #[cfg(not(feature = "otel"))]
    let _ = (message, ctx);
}

/// Records on `span` the protocol version a 2025-era session negotiated (its
/// requests carry none in `_meta`).
pub(crate) fn session_version(span: &tracing::Span, version: &str) {
    if !span.is_disabled() {
        span.record("mcp.protocol.version", version);
    }
}

/// Records on `span` the address the request came from.
pub(crate) fn client(span: &tracing::Span, peer: std::net::SocketAddr) {
    if !span.is_disabled() {
        span.record("client.address", tracing::field::display(peer.ip()));
        span.record("client.port", i64::from(peer.port()));
    }
}

/// Records on `span` the HTTP version the request came in.
pub(crate) fn http_version(span: &tracing::Span, version: http::Version) {
    let v = match version {
        http::Version::HTTP_09 => "0.9",
        http::Version::HTTP_10 => "1.0",
        http::Version::HTTP_11 => "1.1",
        http::Version::HTTP_2 => "2",
        http::Version::HTTP_3 => "3",
        _ => return,
    };
    if !span.is_disabled() {
        span.record("network.protocol.version", v);
    }
}

/// Links `span` to the trace context of the HTTP request that carried it (a
/// `traceparent` header an instrumented HTTP client or proxy set), as the
/// conventions ask: the MCP context (`_meta`) is the parent, the transport's
/// is linked. With the `otel` feature; nothing otherwise.
pub(crate) fn link_transport(span: &tracing::Span, headers: &http::HeaderMap) {
    if span.is_disabled() {
        return;
    }
    #[cfg(feature = "otel")]
    if let Some(t) = headers
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
        .and_then(mrtr::wire::TraceParent::parse)
    {
        otel::link(span, t);
    }
    #[cfg(not(feature = "otel"))]
    let _ = headers;
}

/// Records how the request ended on `span`: its name and attributes from
/// `log` (and the error code of the reply), and, for a later round of a
/// flow, the link to the first round's span.
pub(crate) fn conclude(span: &tracing::Span, log: &RequestLog, error_code: Option<i64>) {
    if span.is_disabled() {
        return;
    }
    let method = log.method.as_deref().unwrap_or("unknown");
    let field = CarrierMethod::from_method(method).map(CarrierMethod::target_attribute);
    if let (Some(field), Some(target)) = (field, &log.target) {
        span.record(field, target.as_str());
    }
    if let Some(id) = &log.jsonrpc_id {
        span.record("jsonrpc.request.id", id.trim_matches('"'));
    }
    span.record("mrtr.outcome", log.outcome.as_str());
    if let Some(round) = log.round {
        span.record("mrtr.round", i64::from(round));
    }
    if let Some(flow) = &log.flow {
        span.record("mrtr.flow", flow.as_str());
    }
    if let Some(code) = error_code {
        span.record("rpc.response.status_code", code.to_string());
    }
    let error = match error_code {
        Some(code) => Some(code.to_string()),
        None if log.outcome == "tool_error" => Some("tool_error".to_owned()),
        None => None,
    };
    if let Some(error) = error {
        span.record("error.type", error.as_str());
        span.record("otel.status_code", "ERROR");
    }
    #[cfg(feature = "otel")]
    if let Some(first) = log.flow_link {
        otel::link(span, first);
    }
}

/// The JSON-RPC error code a request ended with, from its log's outcome
/// (`error:<code>`).
pub(crate) fn error_code(entry: &RequestLog) -> Option<i64> {
    entry.outcome.strip_prefix("error:")?.parse().ok()
}

/// The conventions' span name: `{method} {target}`, or the method alone.
fn name(method: &str, target: Option<&str>) -> String {
    match target {
        Some(t) => format!("{method} {}", mrtr::__private::record::target(t)),
        None => method.to_owned(),
    }
}

#[cfg(feature = "otel")]
mod otel {
    use mrtr::service::{ParsedMessage, RequestContext};
    use mrtr::wire::TraceParent;
    use opentelemetry::trace::{
        SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState,
    };
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    fn span_context(t: TraceParent, state: Option<&str>) -> SpanContext {
        let state = state
            .and_then(|s| s.parse::<TraceState>().ok())
            .unwrap_or_default();
        SpanContext::new(
            TraceId::from_bytes(t.trace_id()),
            SpanId::from_bytes(t.span_id()),
            TraceFlags::new(t.flags()),
            true,
            state,
        )
    }

    pub(super) fn adopt(span: &tracing::Span, message: &ParsedMessage, ctx: &mut RequestContext) {
        let parent = message.trace_context();
        ctx.trace = parented(span, parent.map(|(p, _)| p), parent.and_then(|(_, s)| s));
    }

    /// Parents `span` with `parent`, and says its own context.
    pub(super) fn within(span: &tracing::Span, parent: Option<TraceParent>) -> Option<TraceParent> {
        parented(span, parent, None)
    }

    /// Makes `span` the child of the remote `parent` (with its trace `state`),
    /// if any, and says the span's own context (`None` when no OpenTelemetry
    /// layer gave it one). Before the span starts: a started span keeps its
    /// parent.
    fn parented(
        span: &tracing::Span,
        parent: Option<TraceParent>,
        state: Option<&str>,
    ) -> Option<TraceParent> {
        if let Some(parent) = parent {
            let remote =
                opentelemetry::Context::new().with_remote_span_context(span_context(parent, state));
            // Fails only when no OpenTelemetry layer is installed: nothing to parent.
            let _ = span.set_parent(remote);
        }
        let own = span.context();
        let own = own.span();
        let own = own.span_context();
        if !own.is_valid() {
            return None;
        }
        TraceParent::new(
            own.trace_id().to_bytes(),
            own.span_id().to_bytes(),
            own.trace_flags().to_u8(),
        )
    }

    pub(super) fn link(span: &tracing::Span, first: TraceParent) {
        span.add_link(span_context(first, None));
    }
}
