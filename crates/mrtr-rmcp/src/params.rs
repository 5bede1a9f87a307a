//! A carrier request's params, as rmcp hands them to the adapter: parsed once
//! for a 2026-07-28 caller (a `tools/call` straight from rmcp's typed fields),
//! kept in their wire shape for a 2025-11-25 one, whose flow rewrites them
//! every round.

use ::rmcp::model::{CallToolRequestParams, ProtocolVersion};
use ::rmcp::service::RequestContext as RmcpContext;
use ::rmcp::{Peer, RoleServer};
use serde_json::{Map, Value};

use super::SessionBound;
use mrtr::__private::MetaMemo;
use mrtr::wire::{CarrierMethod, CarrierRequest, RequestError};

/// A 2025-11-25 caller: where its asks go, what it declared at `initialize`, and
/// whether its answers could come from someone else.
#[derive(Clone)]
pub(super) struct Legacy {
    pub(super) peer: Peer<RoleServer>,
    pub(super) capabilities: Value,
    /// The request came over HTTP, on a session no `HttpGuard`-style check
    /// bound to its principal: the answers to its asks are accepted from whoever
    /// holds the session id.
    pub(super) unbound: bool,
}

/// A carrier request's params as a flow takes them.
#[derive(Clone)]
pub(super) enum Params {
    /// A 2026-07-28 request, parsed (or why not), and its target for the log if
    /// the request does not name it (it did not parse): a `tools/call` from rmcp's
    /// typed params, the others from their wire shape as [`Service::handle`](mrtr::Service::handle)
    /// parses a body's params.
    Parsed {
        target: Option<String>,
        request: Result<CarrierRequest, RequestError>,
    },
    /// A 2025-11-25 caller's request in its wire shape, rewritten every round.
    Legacy(Map<String, Value>, Legacy),
}

impl Params {
    /// The params of `request`, a carrier request rmcp parsed, by the protocol
    /// the caller negotiated.
    pub(super) fn of<P: serde::Serialize>(
        method: CarrierMethod,
        request: &P,
        context: &RmcpContext<RoleServer>,
        metas: &MetaMemo,
    ) -> Self {
        Self::of_wire(method, request, context, legacy_of(context), metas)
    }

    /// [`Params::of`] with the caller's protocol already decided: `legacy` is
    /// [`legacy_of`] the context.
    fn of_wire<P: serde::Serialize>(
        method: CarrierMethod,
        request: &P,
        context: &RmcpContext<RoleServer>,
        legacy: Option<Legacy>,
        metas: &MetaMemo,
    ) -> Self {
        let params = wire_params(request, context);
        match legacy {
            Some(legacy) => Self::Legacy(params, legacy),
            None => {
                let (target, request) = parse_wire(method, &Value::Object(params), metas);
                Self::Parsed { target, request }
            }
        }
    }

    /// The params of a `tools/call`: for a 2026-07-28 caller, parsed straight
    /// from rmcp's typed fields, its `_meta` from the context where rmcp moved it.
    /// `requestState` and `inputResponses` are moved out of `request` (only the
    /// flow reads them: rmcp's own `RequestState`/`InputResponses` extractors on
    /// an mrtr tool then see none, which is right, as they must never be stacked
    /// on one); the arguments are copied, since a `Parameters<T>` beside the
    /// [`ToolCall`] still reads them from `request`.
    pub(super) fn of_tool(
        request: &mut CallToolRequestParams,
        context: &RmcpContext<RoleServer>,
        metas: &MetaMemo,
    ) -> Self {
        let legacy = legacy_of(context);
        if legacy.is_some() || request.meta.is_some() {
            return Self::of_wire(CarrierMethod::ToolsCall, &*request, context, legacy, metas);
        }
        let meta = &context.meta.0.0;
        let parsed = mrtr::__private::from_fields_memo(
            CarrierMethod::ToolsCall,
            (!meta.is_empty()).then_some(meta),
            metas,
            request.name.to_string(),
            request.arguments.clone(),
            request
                .input_responses
                .take()
                .map(|r| r.into_iter().collect()),
            request.request_state.take(),
        );
        // A parsed request names its target; only a refused one needs a copy.
        let target = parsed.is_err().then(|| request.name.to_string());
        Self::Parsed {
            target,
            request: parsed,
        }
    }

    /// The target named, for the log and a [`Service`](mrtr::Service)'s registry.
    pub(super) fn target(&self, method: CarrierMethod) -> Option<&str> {
        match self {
            Self::Parsed { target, request } => log_target(target.as_deref(), request),
            Self::Legacy(p, _) => p.get(method.target_param()).and_then(Value::as_str),
        }
    }
}

/// The target a request names for the log: `target` when it was read beside the
/// request, else the parsed request's own (a `tools/call` from rmcp's params
/// keeps a copy only for a request that did not parse).
pub(super) fn log_target<'a>(
    target: Option<&'a str>,
    request: &'a Result<CarrierRequest, RequestError>,
) -> Option<&'a str> {
    target.or_else(|| request.as_ref().ok().map(CarrierRequest::target))
}

/// The caller when it negotiated a protocol without MRTR (before 2026-07-28).
pub(super) fn legacy_of(context: &RmcpContext<RoleServer>) -> Option<Legacy> {
    // As `RequestContext::protocol_version` decides (the request's `_meta`, else
    // what initialize negotiated; versions order as strings), with the request's
    // version read in place rather than decoded into a copy, and found by a walk
    // over `_meta`'s few keys rather than by hashing the long one.
    let current = ProtocolVersion::V_2026_07_28;
    let meta_version = context
        .meta
        .0
        .0
        .iter()
        .find(|(k, _)| k.as_str() == mrtr::wire::META_PROTOCOL_VERSION)
        .and_then(|(_, v)| v.as_str());
    let legacy = match meta_version {
        Some(v) => v < current.as_str(),
        None => context.peer.peer_info()?.protocol_version < current,
    };
    if !legacy {
        return None;
    }
    let capabilities = context
        .peer
        .peer_info()
        .and_then(|info| serde_json::to_value(&info.capabilities).ok())
        .unwrap_or_else(|| Value::Object(Map::new()));
    // Over HTTP (rmcp put the request parts in), the session is bound only if
    // the crate's HTTP layer checked this request's principal against it.
    let unbound = context
        .extensions
        .get::<http::request::Parts>()
        .is_some_and(|parts| parts.extensions.get::<SessionBound>().is_none());
    Some(Legacy {
        peer: context.peer.clone(),
        capabilities,
        unbound,
    })
}

/// Params in their wire shape, parsed as [`Service::handle`](mrtr::Service::handle) parses them, and the
/// target they name (for the log, even when they do not parse).
pub(super) fn parse_wire(
    method: CarrierMethod,
    params: &Value,
    metas: &MetaMemo,
) -> (Option<String>, Result<CarrierRequest, RequestError>) {
    let target = params
        .get(method.target_param())
        .and_then(Value::as_str)
        .map(str::to_owned);
    (
        target,
        mrtr::__private::from_params_memo(method, Some(params), metas),
    )
}

/// The request's params in their wire shape (rmcp moved `_meta` into the
/// context; it goes back in).
fn wire_params<P: serde::Serialize>(
    request: &P,
    context: &RmcpContext<RoleServer>,
) -> Map<String, Value> {
    let mut params = match serde_json::to_value(request) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    if !context.meta.is_empty() {
        let meta = serde_json::to_value(&context.meta).unwrap_or(Value::Null);
        if let Value::Object(m) = meta {
            let entry = params
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(existing) = entry {
                existing.extend(m);
            }
        }
    }
    params
}
