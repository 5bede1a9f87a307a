//! The two-channel error model (design.md §6, spec.md §3): every code through
//! its constructor, the JSON-RPC and HTTP mapping, the tool-result channel
//! (tools/call only), the frozen requestState error, and the private
//! diagnostic record, which goes through `tracing` and is a different string
//! from the public text. No public message, `data` or tool text may carry a
//! secret, token or argument value that was put into the failure.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use mrtr::error::{
    Channel, DiagContext, Error, ErrorKind, Fallback, INVALID_REQUEST_STATE_MESSAGE, Retry,
    ToolAdvice, channel, code,
};
use mrtr::streamable_http::error_status;
use mrtr::wire::{CarrierMethod, CarrierRequest, RequestId};
use serde_json::{Value, json};

const SECRET: &str = "SECRET-123";

/// -32021 as the engine builds it: a client that declared nothing is asked, in
/// one round, what needs `required` (a URL visit for `elicitation.url`, a form
/// for plain `elicitation`, the roots for `roots`).
fn missing_error(required: &Value) -> Error {
    use mrtr::{
        Engine, Form, Keyring, Outcome, Principal, RootsAsk, Timestamp, ToolResult, UrlVisit,
    };
    let engine = Engine::new(Keyring::ephemeral(), "errors");
    let request = CarrierRequest::from_params(
        CarrierMethod::ToolsCall,
        Some(&json!({"name": "t", "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}})),
    )
    .unwrap();
    let now = Timestamp::from_unix_secs(1_800_000_000);
    let outcome = engine.run(request, &Principal::anonymous(), now, |round| {
        let elicitation = &required["elicitation"];
        let url = elicitation
            .get("url")
            .map(|_| round.visit("url", UrlVisit::new("Sign in", "https://example.com/in")));
        let form = (elicitation.is_object() && elicitation.get("url").is_none())
            .then(|| round.elicit("form", Form::new("Name?").string("name", "Name")));
        let roots = required
            .get("roots")
            .map(|_| round.roots("roots", RootsAsk::new()));
        // Unreachable past these: the round ends with -32021 for the client.
        if let Some(r) = url {
            let _: mrtr::Elicited = r?;
        }
        if let Some(r) = form {
            let _: mrtr::Elicited = r?;
        }
        if let Some(r) = roots {
            r?;
        }
        Ok(ToolResult::text("not reached"))
    });
    match outcome {
        Outcome::Protocol(e) => e,
        other => panic!("expected -32021, got {other:?}"),
    }
}

fn advice() -> ToolAdvice {
    ToolAdvice::new(
        "The user declined to confirm the transfer",
        Retry::DoesNotHelp,
    )
    .input("confirmation")
    .instead("Ask the user whether they still want to transfer, then call the tool again")
}

/// One instance of every constructor, named.
fn every_error() -> Vec<(&'static str, Error)> {
    vec![
        ("parse", Error::parse("expected value at line 1 column 1")),
        (
            "invalid_request",
            Error::invalid_request("jsonrpc must be \"2.0\""),
        ),
        ("method_not_found", Error::method_not_found("tools/unknown")),
        (
            "invalid_params",
            Error::invalid_params("params.name is required"),
        ),
        (
            "invalid_meta",
            Error::invalid_meta("params._meta is required"),
        ),
        ("invalid_request_state", Error::invalid_request_state("tag")),
        (
            "expired_request_state",
            Error::expired_request_state("expired"),
        ),
        ("internal", Error::internal("handler panicked")),
        (
            "header_mismatch",
            Error::header_mismatch("Mcp-Name", "header says foo, body says bar"),
        ),
        (
            "missing_capabilities",
            missing_error(&json!({"elicitation": {"url": {}}})),
        ),
        (
            "unsupported_version",
            Error::unsupported_version("1900-01-01"),
        ),
        (
            "tool_failure",
            Error::tool_failure(
                advice(),
                Fallback::InvalidParams,
                "declined",
                "user declined key confirm",
            ),
        ),
    ]
}

// ---------------------------------------------------------------------------
// Codes, messages, data, HTTP status
// ---------------------------------------------------------------------------

#[test]
fn standard_json_rpc_codes() {
    let e = Error::parse("bad json");
    assert_eq!(
        (e.kind(), e.code(), e.public_message()),
        (ErrorKind::Parse, -32700, "Parse error")
    );
    assert!(e.data().is_none());

    let e = Error::invalid_request("method must be a string");
    assert_eq!((e.kind(), e.code()), (ErrorKind::InvalidRequest, -32600));
    assert_eq!(e.public_message(), "method must be a string");
    assert!(e.data().is_none());

    let e = Error::method_not_found("tasks/result");
    assert_eq!(
        (e.kind(), e.code(), e.public_message()),
        (ErrorKind::MethodNotFound, -32601, "Method not found")
    );
    assert_eq!(error_status(&e), 404, "-32601 is HTTP 404 (MUST)");

    let e = Error::invalid_params("params.name is required");
    assert_eq!((e.kind(), e.code()), (ErrorKind::InvalidParams, -32602));
    assert_eq!(error_status(&e), 400);

    let e = Error::invalid_meta("params._meta is required");
    assert_eq!((e.kind(), e.code()), (ErrorKind::InvalidParams, -32602));
    assert_eq!(error_status(&e), 400, "missing _meta is HTTP 400 (MUST)");

    let e = Error::internal("boom");
    assert_eq!(
        (e.kind(), e.code(), e.public_message()),
        (ErrorKind::Internal, -32603, "Internal error")
    );
    assert!(e.data().is_none());
}

#[test]
fn http_status_for_unspecified_codes() {
    // spec.md §3.1 leaves these open; mrtr's choice: client faults 400, own faults 500.
    assert_eq!(error_status(&Error::parse("x")), 400);
    assert_eq!(error_status(&Error::invalid_request("x")), 400);
    assert_eq!(error_status(&Error::invalid_request_state("tag")), 400);
    assert_eq!(error_status(&Error::internal("x")), 500);
}

#[test]
fn header_mismatch_is_32020_400_without_data() {
    let e = Error::header_mismatch("MCP-Protocol-Version", "header 2025-11-25, body 2026-07-28");
    assert_eq!(
        (e.kind(), e.code()),
        (ErrorKind::HeaderMismatch, code::HEADER_MISMATCH)
    );
    assert_eq!(e.code(), -32020);
    assert_eq!(error_status(&e), 400);
    assert!(e.data().is_none(), "-32020 defines no data");
    assert!(
        e.public_message().starts_with("Header mismatch"),
        "{}",
        e.public_message()
    );
    assert!(e.public_message().contains("MCP-Protocol-Version"));
}

#[test]
fn missing_capability_is_32021_400_with_required_capabilities() {
    let required = json!({"elicitation": {"url": {}}, "roots": {}});
    let e = missing_error(&required);
    assert_eq!((e.kind(), e.code()), (ErrorKind::MissingCapability, -32021));
    assert_eq!(error_status(&e), 400);
    assert_eq!(e.data(), Some(&json!({"requiredCapabilities": required})));
    // The spec's example shape (its message wording is illustrative, not normative).
    let e = missing_error(&json!({"elicitation": {}}));
    let wire = e.to_jsonrpc(Some(&1.into()));
    assert_eq!(wire["jsonrpc"], "2.0");
    assert_eq!(wire["id"], 1);
    assert_eq!(wire["error"]["code"], -32021);
    assert_eq!(
        wire["error"]["data"],
        json!({"requiredCapabilities": {"elicitation": {}}})
    );
    let msg = wire["error"]["message"].as_str().unwrap();
    assert!(msg.starts_with("Server requires the elicitation"), "{msg}");
}

#[test]
fn unsupported_version_is_32022_400_with_supported_and_requested() {
    let e = Error::unsupported_version("1900-01-01");
    assert_eq!(
        (e.kind(), e.code()),
        (ErrorKind::UnsupportedVersion, -32022)
    );
    assert_eq!(error_status(&e), 400);
    assert_eq!(
        e.to_jsonrpc(Some(&1.into())),
        json!({"jsonrpc": "2.0", "id": 1, "error": {
            "code": -32022,
            "message": "Unsupported protocol version",
            "data": {"supported": ["2026-07-28"], "requested": "1900-01-01"}}})
    );
}

#[test]
fn the_32022_data_echoes_a_bounded_prefix_of_the_requested_version() {
    // A client may send any string as its version; the error must not grow with it.
    let sent = format!("2026-{}", "\u{1F980}".repeat(100_000));
    let e = Error::unsupported_version(&sent);
    let wire = e.to_jsonrpc(Some(&1.into()));
    let echoed = wire["error"]["data"]["requested"].as_str().unwrap();
    assert_eq!(
        echoed.chars().count(),
        mrtr::error::REQUESTED_VERSION_ECHO_MAX
    );
    assert!(sent.starts_with(echoed), "a prefix, cut between characters");
    assert!(wire.to_string().len() < 512, "{}", wire.to_string().len());
}

#[test]
fn no_code_in_the_reserved_range_other_than_the_three() {
    for (name, e) in every_error() {
        let c = e.code();
        assert_ne!(c, -32042, "{name}: -32042 is retired");
        assert_ne!(c, -32002, "{name}: -32002 is retired");
        if (-32099..=-32000).contains(&c) {
            assert!(
                [-32020, -32021, -32022].contains(&c),
                "{name}: undefined MCP code {c}"
            );
        }
        assert!(
            [
                -32700, -32600, -32601, -32602, -32603, -32020, -32021, -32022
            ]
            .contains(&c),
            "{name}: {c}"
        );
    }
}

// ---------------------------------------------------------------------------
// The JSON-RPC channel
// ---------------------------------------------------------------------------

#[test]
fn to_jsonrpc_shape_with_and_without_id() {
    let e = Error::invalid_params("params.name is required");
    assert_eq!(
        e.to_jsonrpc(Some(&RequestId::from(7))),
        json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32602, "message": "params.name is required"}})
    );
    assert_eq!(
        e.to_jsonrpc(Some(&RequestId::String("req-7".into()))),
        json!({"jsonrpc": "2.0", "id": "req-7", "error": {"code": -32602, "message": "params.name is required"}})
    );
    // Unknown id: the member is left out (the schema makes it optional on errors).
    let v = e.to_jsonrpc(None);
    assert_eq!(
        v,
        json!({"jsonrpc": "2.0", "error": {"code": -32602, "message": "params.name is required"}})
    );
    assert!(v.get("id").is_none());
    // An error without data has no data member at all (not null).
    assert!(v["error"].get("data").is_none());
}

#[test]
fn every_error_has_the_json_rpc_shape() {
    for (name, e) in every_error() {
        for id in [
            None,
            Some(RequestId::from(1)),
            Some(RequestId::String("a".into())),
        ] {
            let v = e.to_jsonrpc(id.as_ref());
            let o = v.as_object().unwrap();
            let mut keys: Vec<_> = o.keys().map(String::as_str).collect();
            keys.sort_unstable();
            let expected: &[&str] = if id.is_some() {
                &["error", "id", "jsonrpc"]
            } else {
                &["error", "jsonrpc"]
            };
            assert_eq!(keys, expected, "{name}");
            assert_eq!(v["jsonrpc"], "2.0");
            assert_eq!(v["error"]["code"], e.code(), "{name}");
            assert_eq!(v["error"]["message"], e.public_message(), "{name}");
            assert_eq!(v["error"].get("data"), e.data(), "{name}");
            if let Some(id) = &id {
                assert_eq!(v["id"], id.to_value());
            }
        }
        assert!(!e.public_message().is_empty(), "{name}");
        assert!(
            e.to_string().contains(e.public_message()),
            "{name}: Display shows the public text"
        );
    }
}

// ---------------------------------------------------------------------------
// The tool-result channel
// ---------------------------------------------------------------------------

#[test]
fn tool_results_only_for_tool_failures_and_expired_state() {
    for (name, e) in every_error() {
        let has_tool_result = matches!(name, "tool_failure" | "expired_request_state");
        assert_eq!(e.to_tool_result().is_some(), has_tool_result, "{name}");
        assert_eq!(e.advice().is_some(), has_tool_result, "{name}");
        assert_eq!(
            channel(Some(CarrierMethod::ToolsCall), &e) == Channel::ToolResult,
            has_tool_result,
            "{name}"
        );
        // prompts/get and resources/read have no isError: always JSON-RPC errors.
        assert!(
            channel(Some(CarrierMethod::PromptsGet), &e) == Channel::JsonRpc,
            "{name}"
        );
        assert!(
            channel(Some(CarrierMethod::ResourcesRead), &e) == Channel::JsonRpc,
            "{name}"
        );
        assert!(channel(None, &e) == Channel::JsonRpc, "{name}");
    }
}

#[test]
fn tool_result_shape() {
    let e = Error::tool_failure(advice(), Fallback::InvalidParams, "declined", "detail");
    assert_eq!(e.kind(), ErrorKind::ToolFailure);
    let r = e.to_tool_result().unwrap();
    let text = advice().text();
    assert_eq!(
        r,
        json!({"resultType": "complete", "content": [{"type": "text", "text": text}], "isError": true})
    );
    // what failed, which input, whether retrying helps, what to do instead
    assert!(
        text.contains("The user declined to confirm the transfer"),
        "{text}"
    );
    assert!(text.contains("confirmation"), "{text}");
    assert!(
        text.contains("Retrying the same call will not help"),
        "{text}"
    );
    assert!(
        text.contains("Ask the user whether they still want to transfer"),
        "{text}"
    );
    // On the other carriers the same failure is a JSON-RPC error with the fallback code.
    let wire = e.to_jsonrpc(Some(&1.into()));
    assert_eq!(wire["error"]["code"], -32602);
    assert_eq!(
        wire["error"]["message"],
        "The user declined to confirm the transfer"
    );
    let e = Error::tool_failure(advice(), Fallback::Internal, "backend", "detail");
    assert_eq!(e.to_jsonrpc(None)["error"]["code"], -32603);
}

#[test]
fn tool_advice_text_says_whether_retrying_helps() {
    let helps = ToolAdvice::new("The weather service timed out.", Retry::Helps).text();
    assert_eq!(
        helps,
        "The weather service timed out. Retrying the same call may succeed."
    );
    let start_over = ToolAdvice::new("The window lapsed", Retry::StartOver).text();
    assert!(start_over.contains("call the tool again"), "{start_over}");
    let no = ToolAdvice::new("x", Retry::DoesNotHelp)
        .input("city")
        .instead("Use a city name.")
        .text();
    assert_eq!(
        no,
        "x. Input: city. Retrying the same call will not help. Use a city name."
    );
}

#[test]
fn expired_state_is_a_tool_error_on_tools_call_and_frozen_elsewhere() {
    let e = Error::expired_request_state("expired");
    let r = e.to_tool_result().unwrap();
    assert_eq!(r["resultType"], "complete");
    assert_eq!(r["isError"], true);
    let text = r["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("lapsed"), "{text}");
    assert!(text.contains("again"), "{text}");
    assert!(channel(Some(CarrierMethod::ToolsCall), &e) == Channel::ToolResult);
    assert!(e.diagnostic().retryable);
    // On prompts/get and resources/read: the frozen -32602, same as any invalid state.
    assert!(channel(Some(CarrierMethod::PromptsGet), &e) == Channel::JsonRpc);
    assert_eq!(
        e.to_jsonrpc(Some(&3.into())),
        Error::invalid_request_state("tag").to_jsonrpc(Some(&3.into()))
    );
}

// ---------------------------------------------------------------------------
// The frozen requestState error
// ---------------------------------------------------------------------------

#[test]
fn invalid_request_state_is_frozen_for_every_private_reason() {
    let expected = json!({"jsonrpc": "2.0", "id": 9, "error": {
        "code": -32602,
        "message": "Invalid or expired requestState",
        "data": {"reason": "invalid_request_state"}}});
    assert_eq!(
        INVALID_REQUEST_STATE_MESSAGE,
        "Invalid or expired requestState"
    );
    let reasons = [
        "malformed",
        "too_large",
        "unknown_kid",
        "tag",
        "bad_version",
        "binding",
        "principal",
        "audience",
        "expired",
        "deadline",
        "max_rounds",
        "replayed",
        SECRET,
    ];
    for reason in reasons {
        let e = Error::invalid_request_state(reason);
        assert_eq!(e.kind(), ErrorKind::InvalidRequestState);
        assert_eq!(e.to_jsonrpc(Some(&9.into())), expected, "{reason}");
        assert_eq!(error_status(&e), 400);
        assert!(
            e.to_tool_result().is_none(),
            "{reason}: never a tool result"
        );
        // The reason is private: in the diagnostic only.
        assert_eq!(e.diagnostic().reject_reason, Some(reason));
        assert_eq!(e.diagnostic().category, "request_state");
        assert!(e.diagnostic().detail.contains(reason));
        assert!(!e.to_string().contains(SECRET));
    }
    // Two rejections for different reasons are indistinguishable on the wire.
    let a = Error::invalid_request_state("tag");
    let b = Error::invalid_request_state("binding");
    assert_ne!(a, b, "the private records differ");
    assert_eq!(a.to_jsonrpc(None), b.to_jsonrpc(None));
    assert_eq!(a.public_message(), b.public_message());
    assert_eq!(a.data(), b.data());
}

// ---------------------------------------------------------------------------
// The private record, and what never leaks
// ---------------------------------------------------------------------------

#[test]
fn private_detail_is_a_different_string_from_the_public_text() {
    for (name, e) in every_error() {
        let d = e.diagnostic();
        assert_ne!(d.detail, e.public_message(), "{name}");
        assert!(!d.detail.is_empty(), "{name}");
        assert!(!d.category.is_empty(), "{name}");
    }
    // with_detail replaces the private text only.
    let e = Error::internal("a").with_detail("b");
    assert_eq!(e.diagnostic().detail, "b");
    assert_eq!(e.public_message(), "Internal error");
}

#[test]
fn retryable_is_recorded() {
    assert!(!Error::invalid_request_state("tag").diagnostic().retryable);
    assert!(
        Error::expired_request_state("expired")
            .diagnostic()
            .retryable
    );
    for (retry, retryable) in [
        (Retry::Helps, true),
        (Retry::StartOver, true),
        (Retry::DoesNotHelp, false),
    ] {
        let e = Error::tool_failure(ToolAdvice::new("x", retry), Fallback::Internal, "c", "d");
        assert_eq!(e.diagnostic().retryable, retryable, "{retry:?}");
    }
}

/// Every public output of `e`: the JSON-RPC error (with and without id), the tool
/// result if any, Display.
fn public_outputs(e: &Error) -> Vec<String> {
    let mut out = vec![
        e.to_jsonrpc(None).to_string(),
        e.to_jsonrpc(Some(&"id".to_owned().into_id())).to_string(),
        e.public_message().to_owned(),
        e.to_string(),
    ];
    if let Some(d) = e.data() {
        out.push(d.to_string());
    }
    if let Some(r) = e.to_tool_result() {
        out.push(r.to_string());
    }
    if let Some(a) = e.advice() {
        out.push(a.text());
    }
    out
}

trait IntoId {
    fn into_id(self) -> RequestId;
}
impl IntoId for String {
    fn into_id(self) -> RequestId {
        RequestId::String(self)
    }
}

fn assert_no_secret(e: &Error, what: &str) {
    for out in public_outputs(e) {
        assert!(
            !out.contains(SECRET),
            "{what}: public output carries the secret: {out}"
        );
    }
}

#[test]
fn no_public_output_carries_what_was_put_into_the_failure() {
    let token = format!("eyJ{SECRET}.sealed-token");
    let cases: Vec<(&str, Error)> = vec![
        (
            "parse detail",
            Error::parse(format!("unexpected byte in {SECRET}")),
        ),
        ("method name", Error::method_not_found(SECRET)),
        (
            "method name with a token",
            Error::method_not_found(&format!("tools/call?token={token}")),
        ),
        (
            "internal detail",
            Error::internal(format!("db password {SECRET} rejected")),
        ),
        (
            "header value",
            Error::header_mismatch("Mcp-Name", format!("header {SECRET} != body bar")),
        ),
        ("requestState reason", Error::invalid_request_state(SECRET)),
        ("expired reason", Error::expired_request_state(SECRET)),
        (
            "tool failure detail",
            Error::tool_failure(
                advice(),
                Fallback::InvalidParams,
                "declined",
                format!("argument amount={SECRET}"),
            ),
        ),
        (
            "with_detail on params",
            Error::invalid_params("params.arguments must be an object").with_detail(token.clone()),
        ),
        (
            "with_detail on meta",
            Error::invalid_meta("params._meta is required").with_detail(token.clone()),
        ),
        (
            "with_detail on state",
            Error::invalid_request_state("tag").with_detail(token.clone()),
        ),
        (
            "with_detail on capability",
            missing_error(&json!({"roots": {}})).with_detail(token.clone()),
        ),
        (
            "with_detail on version",
            Error::unsupported_version("2025-11-25").with_detail(token.clone()),
        ),
        (
            "with_detail on tool failure",
            Error::tool_failure(advice(), Fallback::Internal, "c", "d").with_detail(token.clone()),
        ),
    ];
    for (what, e) in &cases {
        assert_no_secret(e, what);
    }
}

#[test]
fn unsupported_version_echoes_only_the_requested_version_in_data() {
    // spec.md §3 requires data.requested: the version string the client sent is
    // echoed there, on purpose, and nowhere else (not in the message).
    let e = Error::unsupported_version(SECRET);
    assert_eq!(e.data().unwrap()["requested"], SECRET);
    assert!(!e.public_message().contains(SECRET));
    assert!(!e.to_string().contains(SECRET));
    let wire = e.to_jsonrpc(None);
    assert_eq!(wire.to_string().matches(SECRET).count(), 1, "{wire}");
    assert!(e.to_tool_result().is_none());
}

#[test]
fn request_failures_never_echo_argument_values() {
    // Failures built from real client params: argument values and state never
    // reach the public text nor the private detail.
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let cases = [
        (
            CarrierMethod::PromptsGet,
            json!({"_meta": meta, "name": "p", "arguments": {"q": {"secret": SECRET}}}),
        ),
        (
            CarrierMethod::PromptsGet,
            json!({"_meta": meta, "name": "p", "arguments": {"q": 123_456_789}}),
        ),
        (
            CarrierMethod::ToolsCall,
            json!({"_meta": meta, "name": "t", "arguments": [SECRET]}),
        ),
        (
            CarrierMethod::ToolsCall,
            json!({"_meta": meta, "name": "t", "requestState": {"s": SECRET}}),
        ),
        (
            CarrierMethod::ToolsCall,
            json!({"_meta": meta, "name": "t", "inputResponses": SECRET}),
        ),
        (
            CarrierMethod::ToolsCall,
            json!({"_meta": meta, "name": {"n": SECRET}}),
        ),
        (
            CarrierMethod::ResourcesRead,
            json!({"_meta": meta, "uri": "file:///x", "arguments": {"a": SECRET}}),
        ),
        (
            CarrierMethod::ToolsCall,
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": SECRET}}, "name": "t"}),
        ),
        (
            CarrierMethod::ToolsCall,
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": SECRET}}, "name": "t"}),
        ),
    ];
    for (m, p) in cases {
        let e = Error::from(CarrierRequest::from_params(m, Some(&p)).unwrap_err());
        assert_no_secret(&e, &p.to_string());
        assert!(
            !e.diagnostic().detail.contains(SECRET),
            "{p}: {}",
            e.diagnostic().detail
        );
        assert!(
            !e.diagnostic().detail.contains("123456789"),
            "{p}: {}",
            e.diagnostic().detail
        );
    }
}

// ---------------------------------------------------------------------------
// Error::log: the private record through tracing
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Recorded {
    target: String,
    level: tracing::Level,
    fields: BTreeMap<String, String>,
}

impl Recorded {
    /// Everything the event says, as one string.
    fn text(&self) -> String {
        self.fields
            .iter()
            .map(|(k, v)| format!("{k}={v} "))
            .collect()
    }
}

/// A subscriber that keeps every event's fields.
#[derive(Debug, Clone, Default)]
struct Collect(Arc<Mutex<Vec<Recorded>>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl tracing::Subscriber for Collect {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        self.0.lock().unwrap().push(Recorded {
            target: event.metadata().target().to_owned(),
            level: *event.metadata().level(),
            fields,
        });
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

fn logged(e: &Error, ctx: &DiagContext<'_>) -> Recorded {
    let c = Collect::default();
    tracing::subscriber::with_default(c.clone(), || e.log(ctx));
    let events = c.0.lock().unwrap().clone();
    assert_eq!(events.len(), 1, "one event per failure: {events:?}");
    events.into_iter().next().unwrap()
}

#[test]
fn log_emits_one_diagnostic_event_with_the_fields() {
    let id = RequestId::from(42);
    let ctx = DiagContext {
        correlation_id: "corr-1",
        jsonrpc_id: Some(&id),
        method: Some("tools/call"),
        target: Some("transfer"),
        round: Some(2),
    };
    let e = Error::tool_failure(
        advice(),
        Fallback::InvalidParams,
        "declined",
        "user declined key confirm",
    );
    let r = logged(&e, &ctx);
    assert_eq!(r.target, "mrtr::diag");
    assert_eq!(r.level, tracing::Level::WARN);
    let f = &r.fields;
    assert_eq!(f["correlation_id"], "corr-1");
    assert_eq!(f["jsonrpc_id"], "42");
    assert_eq!(f["method"], "tools/call");
    assert_eq!(f["target_name"], "transfer");
    assert_eq!(f["round"], "2");
    assert_eq!(f["category"], "declined");
    assert_eq!(f["code"], "-32602");
    assert_eq!(f["retryable"], "false");
    assert_eq!(f["detail"], "user declined key confirm");
    assert!(
        !f.contains_key("reject_reason"),
        "absent when not a requestState rejection"
    );

    let e = Error::invalid_request_state("binding");
    let r = logged(&e, &ctx);
    assert_eq!(r.fields["reject_reason"], "binding");
    assert_eq!(r.fields["category"], "request_state");
    assert_eq!(r.fields["retryable"], "false");
    assert!(
        !r.text().contains(INVALID_REQUEST_STATE_MESSAGE),
        "{}",
        r.text()
    );

    let e = Error::expired_request_state("expired");
    assert_eq!(logged(&e, &ctx).fields["retryable"], "true");
}

#[test]
fn log_with_an_empty_context() {
    let r = logged(&Error::parse("expected value"), &DiagContext::default());
    assert_eq!(r.fields["correlation_id"], "");
    for absent in ["jsonrpc_id", "method", "target_name", "round"] {
        assert!(!r.fields.contains_key(absent), "{absent}: {:?}", r.fields);
    }
    assert_eq!(r.fields["category"], "parse");
    assert_eq!(r.fields["code"], "-32700");
    // String ids are logged as JSON strings.
    let id = RequestId::String("abc".into());
    let ctx = DiagContext {
        jsonrpc_id: Some(&id),
        ..DiagContext::default()
    };
    assert_eq!(
        logged(&Error::parse("x"), &ctx).fields["jsonrpc_id"],
        "\"abc\""
    );
}

#[test]
fn log_event_is_not_the_public_text() {
    // Where the public message is fixed or built apart from the detail, the
    // private record never repeats it verbatim.
    //
    // invalid_params / invalid_meta / invalid_request are left out on purpose:
    // their public text *is* the field-level description ("params.name is
    // required", never a value), and their private detail prefixes it
    // ("params rejected: ...") so the log still says which field failed. The
    // detail differs from the public string (see
    // `private_detail_is_a_different_string_from_the_public_text`).
    let ctx = DiagContext {
        correlation_id: "c",
        ..DiagContext::default()
    };
    for (name, e) in every_error() {
        if matches!(name, "invalid_params" | "invalid_meta" | "invalid_request") {
            continue;
        }
        let text = logged(&e, &ctx).text();
        assert!(
            !text.contains(e.public_message()),
            "{name}: the log repeats the public message {:?}: {text}",
            e.public_message()
        );
        if let Some(a) = e.advice() {
            assert!(
                !text.contains(&a.text()),
                "{name}: the log repeats the tool text"
            );
        }
    }
}

#[test]
fn log_never_carries_argument_values() {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let p = json!({"_meta": meta, "name": "p", "arguments": {"q": {"secret": SECRET}}});
    let e =
        Error::from(CarrierRequest::from_params(CarrierMethod::PromptsGet, Some(&p)).unwrap_err());
    let r = logged(
        &e,
        &DiagContext {
            correlation_id: "c",
            method: Some("prompts/get"),
            target: Some("p"),
            ..Default::default()
        },
    );
    assert!(!r.text().contains(SECRET), "{}", r.text());
}
