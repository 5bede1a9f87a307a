//! mrtr's outcomes as rmcp's types: the result bodies, the `InputRequiredResult`
//! with its asks, the JSON-RPC errors, and the asks of a 2025-11-25 flow as
//! rmcp's server-to-client requests.
//!
//! rmcp's ask types deserialize through its untagged and internally tagged enums
//! (the request envelope, the elicitation mode, each schema property), several
//! microseconds per ask, while a handler asks the same question on every first
//! round of a tool. [`AskCache`] keeps the converted form of the asks it has seen,
//! keyed by their JSON and checked against it on every hit, so a repeated ask
//! costs one clone.

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::{PoisonError, RwLock};

use ::rmcp::ErrorData;
// rmcp deprecates sampling and roots (SEP-2577); mrtr still carries them.
use ::rmcp::model::{
    CallToolResponse, CallToolResult, ElicitRequest, GetPromptResponse, GetPromptResult,
    InputRequest as RmcpInputRequest, InputRequiredResult as RmcpInputRequired,
    ReadResourceResponse, ReadResourceResult, ServerRequest,
};
#[allow(deprecated)]
use ::rmcp::model::{CreateMessageRequest, ListRootsRequest};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::engine::Outcome;
use crate::error::Error;
use crate::wire::InputRequiredResult;

/// What a round gives the adapter: a result body (complete, or a tool error), or
/// an `input_required` result still in mrtr's typed form.
pub(super) enum Reply {
    Value(Value),
    InputRequired(InputRequiredResult),
}

/// The reply for an outcome, or its JSON-RPC error as rmcp's `ErrorData`.
pub(super) fn to_reply(outcome: Outcome) -> Result<Reply, ErrorData> {
    match outcome {
        Outcome::Complete(v) | Outcome::ToolError { result: v, .. } => Ok(Reply::Value(v)),
        Outcome::InputRequired(irr) => Ok(Reply::InputRequired(irr)),
        Outcome::Protocol(e) => Err(error_data(&e)),
    }
}

/// An mrtr error as rmcp's `ErrorData` (code, public message, data): the JSON-RPC
/// error object of [`Error::to_jsonrpc`], one rendering for both crates.
pub(super) fn error_data(e: &Error) -> ErrorData {
    let mut v = e.to_jsonrpc(None);
    serde_json::from_value(v["error"].take())
        .unwrap_or_else(|_| ErrorData::internal_error("Internal error", None))
}

/// A result the handler built that rmcp cannot take: -32603, and why in the log.
fn unfit(what: &str) -> ErrorData {
    tracing::warn!(
        target: "mrtr::diag",
        category = "internal",
        detail = %format!("the result does not fit rmcp's {what}"),
        "request failed"
    );
    ErrorData::internal_error("Internal error", None)
}

/// The ask cache's bounds: at most this many asks, each at most this many bytes
/// of strings (an ask is the server's own text, but it may quote a client's
/// arguments). A full cache starts again empty.
const CACHE_ENTRIES: usize = 256;
const CACHE_ASK_BYTES: usize = 4096;

/// rmcp's typed form of the asks already converted (see the module docs).
/// Never printed: an ask may quote a client's arguments.
pub(super) struct AskCache {
    keys: RandomState,
    slots: RwLock<HashMap<u64, (Value, RmcpInputRequest)>>,
}

impl fmt::Debug for AskCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self
            .slots
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        f.debug_struct("AskCache").field("entries", &n).finish()
    }
}

impl AskCache {
    pub(super) fn new() -> Self {
        Self {
            keys: RandomState::new(),
            slots: RwLock::new(HashMap::new()),
        }
    }

    /// `ask` (`{"method", "params"}`) as rmcp's `InputRequest`; `None` when it is
    /// not one of the three kinds or does not fit rmcp's type for its kind.
    pub(super) fn request(&self, ask: &Value) -> Option<RmcpInputRequest> {
        let mut h = self.keys.build_hasher();
        let mut bytes = 0;
        fingerprint(ask, &mut h, &mut bytes);
        let key = h.finish();
        {
            let slots = self.slots.read().unwrap_or_else(PoisonError::into_inner);
            if let Some((seen, request)) = slots.get(&key)
                && seen == ask
            {
                return Some(request.clone());
            }
        }
        let request = input_request(ask)?;
        if bytes <= CACHE_ASK_BYTES {
            let mut slots = self.slots.write().unwrap_or_else(PoisonError::into_inner);
            if slots.len() >= CACHE_ENTRIES {
                slots.clear();
            }
            slots.insert(key, (ask.clone(), request.clone()));
        }
        Some(request)
    }

    /// `ask` as the server-to-client request of a 2025-11-25 flow: only the three
    /// kinds an `InputRequiredResult` may carry.
    // rmcp deprecates sampling and roots (SEP-2577); mrtr still carries them.
    #[allow(deprecated)]
    pub(super) fn server_request(&self, ask: &Value) -> Option<ServerRequest> {
        match self.request(ask)? {
            RmcpInputRequest::Elicitation(r) => Some(ServerRequest::ElicitRequest(r)),
            RmcpInputRequest::CreateMessage(r) => Some(ServerRequest::CreateMessageRequest(r)),
            RmcpInputRequest::ListRoots(r) => Some(ServerRequest::ListRootsRequest(r)),
            _ => None,
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.slots
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

/// Feeds `v` to `h` (a map in its own order: two equal maps in different orders
/// only miss the cache) and adds its string bytes to `bytes`.
fn fingerprint(v: &Value, h: &mut impl Hasher, bytes: &mut usize) {
    match v {
        Value::Null => h.write_u8(0),
        Value::Bool(b) => h.write_u8(1 + u8::from(*b)),
        Value::Number(n) => {
            h.write_u8(3);
            if let Some(u) = n.as_u64() {
                h.write_u64(u);
            } else if let Some(i) = n.as_i64() {
                h.write_i64(i);
            } else {
                h.write_u64(n.as_f64().map_or(0, f64::to_bits));
            }
        }
        Value::String(s) => {
            h.write_u8(4);
            h.write(s.as_bytes());
            h.write_u8(0xff);
            *bytes += s.len();
        }
        Value::Array(items) => {
            h.write_u8(5);
            h.write_usize(items.len());
            for item in items {
                fingerprint(item, h, bytes);
            }
        }
        Value::Object(map) => {
            h.write_u8(6);
            h.write_usize(map.len());
            for (k, item) in map {
                h.write(k.as_bytes());
                h.write_u8(0xff);
                *bytes += k.len();
                fingerprint(item, h, bytes);
            }
        }
    }
}

/// One ask deserialized straight into the request type its `method` names: what
/// rmcp's untagged `InputRequest` ends up with (each of its variants takes only
/// its own method), without buffering the ask and trying the variants in turn.
// rmcp deprecates sampling and roots (SEP-2577); mrtr still carries them.
#[allow(deprecated)]
fn input_request(ask: &Value) -> Option<RmcpInputRequest> {
    let method = ask.get("method").and_then(Value::as_str)?;
    Some(match method {
        "elicitation/create" => {
            RmcpInputRequest::Elicitation(ElicitRequest::deserialize(ask).ok()?)
        }
        "sampling/createMessage" => {
            RmcpInputRequest::CreateMessage(CreateMessageRequest::deserialize(ask).ok()?)
        }
        "roots/list" => RmcpInputRequest::ListRoots(ListRootsRequest::deserialize(ask).ok()?),
        _ => return None,
    })
}

/// An mrtr `InputRequiredResult` as rmcp's: the asks through the cache; a result
/// with `_meta` or an ask the direct path does not take goes through rmcp's own
/// deserialization, its errors included.
fn input_required(
    irr: &InputRequiredResult,
    asks: &AskCache,
) -> Result<RmcpInputRequired, ErrorData> {
    if irr.meta().is_none() {
        let converted = match irr.input_requests() {
            None => Some(None),
            Some(requests) => requests
                .iter()
                .map(|(key, ask)| Some((key.clone(), asks.request(&ask.to_value())?)))
                .collect::<Option<_>>()
                .map(Some),
        };
        if let Some(requests) = converted {
            let state = irr.request_state().map(str::to_owned);
            return Ok(RmcpInputRequired::new(requests, state));
        }
    }
    serde_json::from_value(irr.to_value()).map_err(|_| unfit("InputRequiredResult"))
}

fn is_input_required(v: &Value) -> bool {
    v.get("resultType").and_then(Value::as_str) == Some("input_required")
}

/// A reply as one of rmcp's carrier responses: `input_required` (typed, or a body
/// that says so) through [`input_required`] or rmcp's deserialization, anything
/// else as the complete result type `C`.
fn response<C: DeserializeOwned, T>(
    reply: Reply,
    asks: &AskCache,
    what: &str,
    input: fn(RmcpInputRequired) -> T,
    complete: fn(C) -> T,
) -> Result<T, ErrorData> {
    match reply {
        Reply::InputRequired(irr) => input_required(&irr, asks).map(input),
        Reply::Value(v) if is_input_required(&v) => serde_json::from_value(v)
            .map(input)
            .map_err(|_| unfit("InputRequiredResult")),
        Reply::Value(v) => serde_json::from_value(v)
            .map(complete)
            .map_err(|_| unfit(what)),
    }
}

pub(super) fn tool_response(reply: Reply, asks: &AskCache) -> Result<CallToolResponse, ErrorData> {
    response::<CallToolResult, _>(
        reply,
        asks,
        "CallToolResult",
        CallToolResponse::InputRequired,
        CallToolResponse::Complete,
    )
}

pub(super) fn prompt_response(
    reply: Reply,
    asks: &AskCache,
) -> Result<GetPromptResponse, ErrorData> {
    response::<GetPromptResult, _>(
        reply,
        asks,
        "GetPromptResult",
        GetPromptResponse::InputRequired,
        GetPromptResponse::Complete,
    )
}

pub(super) fn resource_response(
    reply: Reply,
    asks: &AskCache,
) -> Result<ReadResourceResponse, ErrorData> {
    response::<ReadResourceResult, _>(
        reply,
        asks,
        "ReadResourceResult",
        ReadResourceResponse::InputRequired,
        ReadResourceResponse::Complete,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{CarrierMethod, InputRequests};
    use serde_json::json;

    #[test]
    fn an_mrtr_error_becomes_rmcp_error_data_with_code_message_and_data() {
        let e = Error::invalid_request_state("binding");
        let d = error_data(&e);
        assert_eq!(d.code.0, -32602);
        assert_eq!(d.message, "Invalid or expired requestState");
        assert_eq!(d.data, Some(json!({"reason": "invalid_request_state"})));
        // The private reason stays private.
        assert!(!format!("{d:?}").contains("binding"));
    }

    #[test]
    fn only_the_three_ask_kinds_become_server_requests() {
        let cache = AskCache::new();
        let elicit = json!({"method": "elicitation/create", "params": {
            "message": "m", "requestedSchema": {"type": "object", "properties": {}}}});
        assert!(matches!(
            cache.server_request(&elicit),
            Some(ServerRequest::ElicitRequest(_))
        ));
        let roots = json!({"method": "roots/list"});
        assert!(matches!(
            cache.server_request(&roots),
            Some(ServerRequest::ListRootsRequest(_))
        ));
        assert!(cache.server_request(&json!({"method": "ping"})).is_none());
        assert!(cache.server_request(&json!({"params": {}})).is_none());
    }

    /// Every ask kind, as the engine writes them.
    fn asks() -> Value {
        json!({
            "e": {"method": "elicitation/create", "params": {"message": "m",
                "requestedSchema": {"type": "object", "properties": {"n": {"type": "string"}}, "required": ["n"]}}},
            "u": {"method": "elicitation/create", "params": {"mode": "url", "message": "m",
                "url": "https://x.example"}},
            "s": {"method": "sampling/createMessage", "params": {"maxTokens": 5,
                "messages": [{"role": "user", "content": {"type": "text", "text": "t"}}]}},
            "r": {"method": "roots/list"},
            "rm": {"method": "roots/list", "params": {"_meta": {"k": 1}}}})
    }

    fn irr_of(asks: &Value, state: Option<&str>) -> InputRequiredResult {
        let mut v = json!({"resultType": "input_required", "inputRequests": asks});
        if let Some(s) = state {
            v["requestState"] = json!(s);
        }
        InputRequiredResult::from_value(CarrierMethod::ToolsCall, &v).unwrap()
    }

    #[test]
    fn the_direct_path_builds_what_rmcps_own_deserialization_builds() {
        let cache = AskCache::new();
        let irr = irr_of(&asks(), Some("s"));
        let slow: RmcpInputRequired = serde_json::from_value(irr.to_value()).unwrap();
        // Twice: the second time every ask comes from the cache.
        for round in 0..2 {
            let fast = input_required(&irr, &cache).unwrap();
            assert_eq!(
                serde_json::to_value(&fast).unwrap(),
                serde_json::to_value(&slow).unwrap(),
                "round {round}"
            );
            assert_eq!(cache.len(), 5);
        }
        // State only, no asks.
        let only = InputRequiredResult::new(
            CarrierMethod::ToolsCall,
            InputRequests::new(),
            Some("s".into()),
        )
        .unwrap();
        let r = input_required(&only, &cache).unwrap();
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"resultType": "input_required", "requestState": "s"})
        );
    }

    #[test]
    fn a_cached_ask_is_returned_only_for_the_same_json() {
        let cache = AskCache::new();
        let a = json!({"method": "elicitation/create", "params": {"message": "Deploy to prod?",
            "requestedSchema": {"type": "object", "properties": {}}}});
        let b = json!({"method": "elicitation/create", "params": {"message": "Deploy to dev?",
            "requestedSchema": {"type": "object", "properties": {}}}});
        let message =
            |r: RmcpInputRequest| serde_json::to_value(r).unwrap()["params"]["message"].clone();
        assert_eq!(message(cache.request(&a).unwrap()), "Deploy to prod?");
        assert_eq!(message(cache.request(&b).unwrap()), "Deploy to dev?");
        assert_eq!(message(cache.request(&a).unwrap()), "Deploy to prod?");
        assert_eq!(cache.len(), 2);
        // The cache never prints what it holds.
        assert_eq!(format!("{cache:?}"), "AskCache { entries: 2 }");
    }

    #[test]
    fn the_cache_is_bounded_in_entries_and_ask_size() {
        let cache = AskCache::new();
        let ask = |m: String| {
            json!({"method": "elicitation/create", "params": {"message": m,
                "requestedSchema": {"type": "object", "properties": {}}}})
        };
        for i in 0..CACHE_ENTRIES + 10 {
            assert!(cache.request(&ask(format!("question {i}"))).is_some());
            assert!(cache.len() <= CACHE_ENTRIES);
        }
        // A full cache started again: the last ten are what it holds.
        assert_eq!(cache.len(), 10);
        let big = ask("x".repeat(CACHE_ASK_BYTES));
        assert!(cache.request(&big).is_some(), "converted, just not kept");
        assert_eq!(cache.len(), 10);
    }

    #[test]
    fn results_are_told_apart_and_what_rmcp_cannot_take_is_internal() {
        let cache = AskCache::new();
        let irr = json!({"resultType": "input_required", "requestState": "s"});
        assert!(matches!(
            tool_response(Reply::Value(irr), &cache),
            Ok(CallToolResponse::InputRequired(_))
        ));
        let done = json!({"resultType": "complete", "content": [{"type": "text", "text": "x"}]});
        assert!(matches!(
            tool_response(Reply::Value(done), &cache),
            Ok(CallToolResponse::Complete(_))
        ));
        // A result with _meta takes rmcp's path, and keeps its _meta.
        let with_meta = InputRequiredResult::from_value(
            CarrierMethod::ToolsCall,
            &json!({"resultType": "input_required", "requestState": "s", "_meta": {"k": 1}}),
        )
        .unwrap();
        let r = input_required(&with_meta, &cache).unwrap();
        assert_eq!(serde_json::to_value(&r).unwrap()["_meta"], json!({"k": 1}));
        // What rmcp cannot take is -32603, not a panic.
        let bad = json!({"resultType": "complete", "messages": 3});
        assert_eq!(
            prompt_response(Reply::Value(bad), &cache)
                .unwrap_err()
                .code
                .0,
            -32603
        );
    }
}
