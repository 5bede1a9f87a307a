//! mrtr's outcomes as rmcp's types: the result bodies, the `InputRequiredResult`
//! with its asks, the JSON-RPC errors, and the asks of a 2025-11-25 flow as
//! rmcp's server-to-client requests.
//!
//! rmcp's ask types deserialize through its untagged and internally tagged enums
//! (the request envelope, the elicitation mode, each schema property), several
//! microseconds per ask, while a handler asks the same question on every first
//! round of a tool. [`AskCache`] keeps the converted form of the asks it has seen
//! ([`AskMemo`]: a hit only for an equal ask), so a repeated ask costs one clone.

use std::collections::BTreeMap;

use ::rmcp::ErrorData;
use ::rmcp::model::{
    CallToolResponse, CallToolResult, ContentBlock, ElicitRequest, GetPromptResponse,
    InputRequest as RmcpInputRequest, InputRequiredResult as RmcpInputRequired,
    ReadResourceResponse, ServerRequest,
};
// rmcp deprecates sampling and roots (SEP-2577); mrtr still carries them.
#[allow(deprecated)]
use ::rmcp::model::{CreateMessageRequest, ListRootsRequest};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use mrtr::__private::AskMemo;
use mrtr::engine::{CarrierResult, Outcome};
use mrtr::error::Error;
use mrtr::result::{PromptResult, ResourceResult, ToolResult};
use mrtr::wire::{InputRequest, InputRequiredResult};

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

/// rmcp's typed form of the asks already converted ([`AskMemo`]).
#[derive(Debug, Default)]
pub(super) struct AskCache(AskMemo<RmcpInputRequest>);

impl AskCache {
    /// `ask` as rmcp's `InputRequest`; `None` when it does not fit rmcp's type
    /// for its kind.
    pub(super) fn request(&self, ask: &InputRequest) -> Option<RmcpInputRequest> {
        self.0.get_or_try(ask, input_request)
    }

    /// The rmcp server request for an ask in its wire shape (`{method, params}`,
    /// as the core's bridge hands it over): one of the three kinds an
    /// `InputRequiredResult` may carry.
    // rmcp deprecates sampling and roots (SEP-2577); mrtr still carries them.
    #[allow(deprecated)]
    pub(super) fn server_request_of(&self, ask: &Value) -> Option<ServerRequest> {
        Self::as_server_request(input_request(ask)?)
    }

    #[allow(deprecated)]
    fn as_server_request(request: RmcpInputRequest) -> Option<ServerRequest> {
        match request {
            RmcpInputRequest::Elicitation(r) => Some(ServerRequest::ElicitRequest(r)),
            RmcpInputRequest::CreateMessage(r) => Some(ServerRequest::CreateMessageRequest(r)),
            RmcpInputRequest::ListRoots(r) => Some(ServerRequest::ListRootsRequest(r)),
            _ => None,
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
    irr: InputRequiredResult,
    asks: &AskCache,
) -> Result<RmcpInputRequired, ErrorData> {
    if irr.meta().is_none() {
        let converted = match irr.input_requests() {
            None => Some(None),
            Some(requests) => {
                // Inserted one by one: collecting would sort through a buffer.
                let mut map = BTreeMap::new();
                requests
                    .iter()
                    .try_for_each(|(key, ask)| {
                        map.insert(key.clone(), asks.request(ask)?);
                        Some(())
                    })
                    .map(|()| Some(map))
            }
        };
        if let Some(requests) = converted {
            return Ok(RmcpInputRequired::new(
                requests,
                mrtr::__private::into_request_state(irr),
            ));
        }
    }
    serde_json::from_value(irr.to_value()).map_err(|_| unfit("InputRequiredResult"))
}

/// An outcome as one of rmcp's carrier responses: `input_required` through
/// [`input_required`], a complete result through `complete`, a tool error's body
/// as rmcp's complete result type `C`, a JSON-RPC error as rmcp's `ErrorData`.
fn response<T, C: DeserializeOwned, R>(
    outcome: Outcome<T>,
    asks: &AskCache,
    what: &str,
    input: fn(RmcpInputRequired) -> R,
    complete: impl FnOnce(T) -> Result<R, ErrorData>,
    wrap: fn(C) -> R,
) -> Result<R, ErrorData> {
    match outcome {
        Outcome::Complete(t) => complete(t),
        Outcome::InputRequired(irr) => input_required(irr, asks).map(input),
        Outcome::ToolError { result, .. } => serde_json::from_value(result)
            .map(wrap)
            .map_err(|_| unfit(what)),
        Outcome::Protocol(e) => Err(error_data(&e)),
        // Outcome is non-exhaustive; this crate is built against one core version,
        // whose every outcome is matched above.
        _ => Err(error_data(&Error::internal(
            "an outcome this adapter does not know",
        ))),
    }
}

/// A carrier's complete result, through its wire JSON, as rmcp's type `C`.
fn through_json<T: CarrierResult, C: DeserializeOwned>(
    result: T,
    what: &str,
) -> Result<C, ErrorData> {
    serde_json::from_value(result.into_complete()).map_err(|_| unfit(what))
}

/// A tool's complete [`ToolResult`] as rmcp's `CallToolResult`, built straight
/// from its text blocks: what rmcp's deserialization of the result's JSON form
/// gives (`resultType: complete`, no `isError`), without that detour. Any other
/// result comes back, for the JSON path.
pub(super) fn tool_result(result: ToolResult) -> Result<CallToolResult, ToolResult> {
    let (texts, structured) = mrtr::__private::into_texts(result)?;
    let mut typed = CallToolResult::success(texts.into_iter().map(ContentBlock::text).collect());
    typed.is_error = None;
    typed.structured_content = structured;
    Ok(typed)
}

/// The response to a `tools/call`.
pub(super) fn tool_response(
    outcome: Outcome<ToolResult>,
    asks: &AskCache,
) -> Result<CallToolResponse, ErrorData> {
    const WHAT: &str = "CallToolResult";
    response(
        outcome,
        asks,
        WHAT,
        CallToolResponse::InputRequired,
        |tool| match tool_result(tool) {
            Ok(typed) => Ok(CallToolResponse::Complete(typed)),
            Err(tool) => through_json(tool, WHAT).map(CallToolResponse::Complete),
        },
        CallToolResponse::Complete,
    )
}

/// The response to a `prompts/get`.
pub(super) fn prompt_response(
    outcome: Outcome<PromptResult>,
    asks: &AskCache,
) -> Result<GetPromptResponse, ErrorData> {
    const WHAT: &str = "GetPromptResult";
    response(
        outcome,
        asks,
        WHAT,
        GetPromptResponse::InputRequired,
        |p| through_json(p, WHAT).map(GetPromptResponse::Complete),
        GetPromptResponse::Complete,
    )
}

/// The response to a `resources/read`.
pub(super) fn resource_response(
    outcome: Outcome<ResourceResult>,
    asks: &AskCache,
) -> Result<ReadResourceResponse, ErrorData> {
    const WHAT: &str = "ReadResourceResult";
    response(
        outcome,
        asks,
        WHAT,
        ReadResourceResponse::InputRequired,
        |r| through_json(r, WHAT).map(ReadResourceResponse::Complete),
        ReadResourceResponse::Complete,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use mrtr::result::{Content, ResourceLink};
    use mrtr::wire::{CarrierMethod, InputRequests};
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

    fn ask(v: Value) -> InputRequest {
        InputRequest::from_value(&v).unwrap()
    }

    #[test]
    fn the_three_ask_kinds_become_server_requests() {
        let cache = AskCache::default();
        let elicit = ask(json!({"method": "elicitation/create", "params": {
            "message": "m", "requestedSchema": {"type": "object", "properties": {}}}}));
        assert!(matches!(
            cache.server_request_of(&elicit.to_value()),
            Some(ServerRequest::ElicitRequest(_))
        ));
        let roots = ask(json!({"method": "roots/list"}));
        assert!(matches!(
            cache.server_request_of(&roots.to_value()),
            Some(ServerRequest::ListRootsRequest(_))
        ));
        let sampling = ask(
            json!({"method": "sampling/createMessage", "params": {"maxTokens": 5,
            "messages": [{"role": "user", "content": {"type": "text", "text": "t"}}]}}),
        );
        assert!(matches!(
            cache.server_request_of(&sampling.to_value()),
            Some(ServerRequest::CreateMessageRequest(_))
        ));
    }

    /// Every ask kind, as the engine writes them.
    fn asks() -> Value {
        json!({
            "e": {"method": "elicitation/create", "params": {"message": "m",
                "requestedSchema": {"type": "object", "properties": {"n": {"type": "string"},
                    "a": {"type": "integer", "minimum": 0}}, "required": ["n"]}}},
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
        let cache = AskCache::default();
        let irr = irr_of(&asks(), Some("s"));
        let slow: RmcpInputRequired = serde_json::from_value(irr.to_value()).unwrap();
        // Twice: the second time every ask comes from the cache.
        for round in 0..2 {
            let fast = input_required(irr.clone(), &cache).unwrap();
            assert_eq!(
                serde_json::to_value(&fast).unwrap(),
                serde_json::to_value(&slow).unwrap(),
                "round {round}"
            );
            assert_eq!(cache.0.len(), 5);
        }
        // State only, no asks.
        let only = InputRequiredResult::new(
            CarrierMethod::ToolsCall,
            InputRequests::new(),
            Some("s".into()),
        )
        .unwrap();
        let r = input_required(only, &cache).unwrap();
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"resultType": "input_required", "requestState": "s"})
        );
    }

    #[test]
    fn a_cached_ask_is_returned_only_for_the_same_ask_with_its_fields_in_order() {
        let cache = AskCache::default();
        let form = |m: &str, fields: Value| {
            ask(
                json!({"method": "elicitation/create", "params": {"message": m,
                "requestedSchema": {"type": "object", "properties": fields}}}),
            )
        };
        let two = json!({"b": {"type": "string"}, "a": {"type": "boolean"}});
        let swapped = json!({"a": {"type": "boolean"}, "b": {"type": "string"}});
        let asks = [
            form("Deploy to prod?", two.clone()),
            form("Deploy to dev?", two),
            form("Deploy to prod?", swapped),
        ];
        for a in asks.iter().chain(asks.iter()) {
            let converted = serde_json::to_value(cache.request(a).unwrap()).unwrap();
            let direct = serde_json::to_value(input_request(&a.to_value()).unwrap()).unwrap();
            assert_eq!(converted, direct);
            // The same fields in the same order as asked.
            let order = |v: &Value| -> Vec<String> {
                v["params"]["requestedSchema"]["properties"]
                    .as_object()
                    .unwrap()
                    .keys()
                    .cloned()
                    .collect()
            };
            assert_eq!(order(&converted), order(&a.to_value()));
        }
        assert_eq!(cache.0.len(), 3);
    }

    #[test]
    fn results_are_told_apart_and_what_rmcp_cannot_take_is_internal() {
        let cache = AskCache::default();
        let irr = irr_of(&asks(), Some("s"));
        assert!(matches!(
            tool_response(Outcome::InputRequired(irr), &cache),
            Ok(CallToolResponse::InputRequired(_))
        ));
        assert!(matches!(
            tool_response(Outcome::Complete(ToolResult::text("x")), &cache),
            Ok(CallToolResponse::Complete(_))
        ));
        // A result with _meta takes rmcp's path, and keeps its _meta.
        let with_meta = InputRequiredResult::from_value(
            CarrierMethod::ToolsCall,
            &json!({"resultType": "input_required", "requestState": "s", "_meta": {"k": 1}}),
        )
        .unwrap();
        let r = input_required(with_meta, &cache).unwrap();
        assert_eq!(serde_json::to_value(&r).unwrap()["_meta"], json!({"k": 1}));
        // What rmcp cannot take is -32603, not a panic.
        let bad = json!({"resultType": "complete", "content": 3});
        let failed = Outcome::<ToolResult>::ToolError {
            result: bad,
            error: Error::internal("x"),
        };
        assert_eq!(tool_response(failed, &cache).unwrap_err().code.0, -32603);
        // A JSON-RPC error is rmcp's ErrorData.
        let refused = Outcome::<PromptResult>::Protocol(Error::invalid_request_state("tag"));
        assert_eq!(prompt_response(refused, &cache).unwrap_err().code.0, -32602);
    }

    /// rmcp's deserialization of a complete tool result's JSON form, as the
    /// engine ends the round with it.
    fn by_json(result: ToolResult) -> CallToolResult {
        let mut v = Value::from(result);
        v["resultType"] = json!("complete");
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_text_tool_result_is_built_as_rmcp_deserializes_its_json() {
        let structured = |v: Value| ToolResult::structured(&v).unwrap();
        let direct = [
            ToolResult::new(),
            ToolResult::text("Hello, load!"),
            ToolResult::text("a").with(Content::text("b \"quoted\"\n")),
            structured(json!({"city": "Paris", "celsius": 21})),
            structured(json!([1, "two"])),
            structured(json!("text")),
        ];
        for result in direct {
            let typed = tool_result(result.clone()).unwrap();
            assert_eq!(typed, by_json(result.clone()), "{result:?}");
            assert_eq!(
                serde_json::to_value(&typed).unwrap(),
                serde_json::to_value(by_json(result)).unwrap()
            );
            assert_eq!(typed.is_error, None);
        }
        // Other blocks, and a null structuredContent (which rmcp versions read
        // differently), take the JSON path.
        for result in [
            ToolResult::new().with(Content::audio_bytes(b"x", "audio/wav")),
            ToolResult::text("a").with(Content::link(ResourceLink::new("file:///a", "a"))),
            structured(Value::Null),
        ] {
            assert_eq!(tool_result(result.clone()), Err(result));
        }
    }

    #[test]
    fn a_complete_result_and_a_tool_error_each_answer_as_themselves() {
        let cache = AskCache::default();
        let text = |r: Result<CallToolResponse, ErrorData>| match r {
            Ok(CallToolResponse::Complete(c)) => serde_json::to_value(&c).unwrap(),
            other => panic!("not complete: {other:?}"),
        };
        let done = text(tool_response(
            Outcome::Complete(ToolResult::text("kept")),
            &cache,
        ));
        assert_eq!(done["content"][0]["text"], "kept");
        // A result the direct path does not take goes through its JSON.
        let link = ToolResult::text("a").with(Content::link(ResourceLink::new("file:///a", "a")));
        let linked = text(tool_response(Outcome::Complete(link), &cache));
        assert_eq!(linked["content"][1]["uri"], "file:///a");
        // A tool error is the error.
        let failed = json!({"resultType": "complete", "isError": true,
            "content": [{"type": "text", "text": "failed"}]});
        let failed = text(tool_response(
            Outcome::ToolError {
                result: failed,
                error: Error::internal("x"),
            },
            &cache,
        ));
        assert_eq!(failed["content"][0]["text"], "failed");
        assert_eq!(failed["isError"], true);
    }
}
