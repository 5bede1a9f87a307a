//! The span of each request the client sends, as the OpenTelemetry semantic
//! conventions for MCP have a client's: `{mcp.method.name} {target}`, kind
//! CLIENT, `mcp.method.name`, the tool or prompt name or resource URI,
//! `gen_ai.operation.name` (`execute_tool` on a tool call),
//! `jsonrpc.request.id`, `mcp.protocol.version`, `server.address` and
//! `server.port`, `error.type` and `rpc.response.status_code` (and the
//! JSON-RPC error's message as the status description). A `tracing`
//! span (target `mrtr::mcp`): any subscriber sees it. With the `otel` feature
//! and a `tracing-opentelemetry` layer, its context goes into the request's
//! `params._meta` as `traceparent` (and `tracestate`), so the server's span is
//! its child: every round of a flow is then one trace.

use mrtr::metrics::OperationEnd;
use serde_json::Value;
use tracing::field::Empty;

/// A request's span, named after `request`, to the server at `server` (host
/// and port); with the `otel` feature, its context injected into `request`'s
/// `params._meta` (unless the caller put a `traceparent` there).
pub(crate) fn client(request: &mut Value, server: Option<(&str, u16)>) -> tracing::Span {
    let method = request["method"].as_str().unwrap_or("unknown");
    let target_field = mrtr::wire::CarrierMethod::from_method(method)
        .map(|m| (m.target_param(), m.target_attribute()));
    let target = target_field.and_then(|(param, _)| request["params"][param].as_str());
    let span = tracing::info_span!(
        target: "mrtr::mcp",
        "mcp",
        otel.name = Empty,
        otel.kind = "client",
        otel.status_code = Empty,
        "mcp.method.name" = method,
        "gen_ai.tool.name" = Empty,
        "gen_ai.prompt.name" = Empty,
        "mcp.resource.uri" = Empty,
        "jsonrpc.request.id" = Empty,
        "mcp.protocol.version" = Empty,
        "gen_ai.operation.name" = Empty,
        "server.address" = Empty,
        "server.port" = Empty,
        "error.type" = Empty,
        "rpc.response.status_code" = Empty,
        otel.status_description = Empty,
    );
    if span.is_disabled() {
        return span;
    }
    if method == "tools/call" {
        span.record("gen_ai.operation.name", "execute_tool");
    }
    if let Some((host, port)) = server {
        span.record("server.address", host);
        span.record("server.port", i64::from(port));
    }
    match (target_field, target) {
        (Some((_, field)), Some(t)) => {
            span.record("otel.name", format!("{method} {t}"));
            span.record(field, t);
        }
        _ => {
            span.record("otel.name", method);
        }
    }
    match &request["id"] {
        Value::String(s) => {
            span.record("jsonrpc.request.id", s.as_str());
        }
        Value::Number(n) => {
            span.record("jsonrpc.request.id", n.to_string());
        }
        _ => {}
    }
    if let Some(v) = request["params"]["_meta"][mrtr::wire::META_PROTOCOL_VERSION].as_str() {
        span.record("mcp.protocol.version", v);
    }
    #[cfg(feature = "otel")]
    inject(&span, request);
    span
}

/// How the request ended, recorded on `span`: its JSON-RPC `response` (an
/// error's code, a tool error), or `None` when the transport failed.
pub(crate) fn conclude(span: &tracing::Span, response: Option<&Value>) -> OperationEnd {
    let end = match response {
        Some(v) => match (
            v["error"]["code"].as_i64(),
            v["result"]["isError"].as_bool(),
        ) {
            (Some(code), _) => OperationEnd::Error(code),
            (None, Some(true)) => OperationEnd::ToolError,
            _ => OperationEnd::Ok,
        },
        None => OperationEnd::Transport,
    };
    if span.is_disabled() {
        return end;
    }
    let error = match end {
        OperationEnd::Ok => None,
        OperationEnd::ToolError => Some("tool_error".to_owned()),
        OperationEnd::Error(code) => Some(code.to_string()),
        OperationEnd::Transport => Some("transport".to_owned()),
    };
    if let Some(error) = error {
        span.record("error.type", error.as_str());
        span.record("otel.status_code", "ERROR");
    }
    if let (OperationEnd::Error(code), Some(v)) = (end, response) {
        span.record("rpc.response.status_code", code.to_string());
        // What the server told us, bounded: the conventions' description.
        if let Some(message) = v["error"]["message"].as_str() {
            span.record(
                "otel.status_description",
                mrtr::wire::truncate(message, MAX_DESCRIPTION),
            );
        }
    }
    end
}

/// The longest status description recorded (characters): a server's error message
/// is the server's to choose.
const MAX_DESCRIPTION: usize = 256;

/// Puts the span's context into the request's `params._meta` (made when the
/// params have none, as a 2025-era request's).
#[cfg(feature = "otel")]
fn inject(span: &tracing::Span, request: &mut Value) {
    use opentelemetry::trace::TraceContextExt;
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    let Some(params) = request.get_mut("params").and_then(Value::as_object_mut) else {
        return;
    };
    if params
        .get("_meta")
        .is_some_and(|m| m.get(mrtr::wire::META_TRACEPARENT).is_some())
    {
        return;
    }
    let cx = span.context();
    let sc = cx.span().span_context().clone();
    let Some(parent) = mrtr::wire::TraceParent::new(
        sc.trace_id().to_bytes(),
        sc.span_id().to_bytes(),
        sc.trace_flags().to_u8(),
    ) else {
        return;
    };
    let Some(meta) = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(serde_json::Map::new()))
        .as_object_mut()
    else {
        return;
    };
    meta.insert(
        mrtr::wire::META_TRACEPARENT.into(),
        parent.to_string().into(),
    );
    let state = sc.trace_state().header();
    if !state.is_empty() {
        meta.insert(mrtr::wire::META_TRACESTATE.into(), state.into());
    }
}
