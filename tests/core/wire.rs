//! Wire model: every MRTR shape of spec.md §1 and §4 round-trips (parse →
//! serialize → equal JSON), what the schema forbids is refused, and refusals
//! never echo the offending value. Also the carrier methods and the parsing of
//! a carrier request's params (`_meta`, retry fields).
//!
//! The JSON under `tests/data/wire/` is written from the spec's example shapes
//! (spec.md §1.2–1.6, §4); file names say which type each one is:
//! `irr-*` InputRequiredResult, `request-*` InputRequest, `response-*`
//! InputResponse, `responses-*` InputResponses, `meta-*` RequestMeta,
//! `retry-*` a full JSON-RPC retry request.

use std::path::{Path, PathBuf};

use mrtr::error::{ErrorKind, code};
use mrtr::streamable_http::error_status;
use mrtr::wire::MetaError;
use mrtr::wire::{
    CarrierMethod, CarrierRequest, ClientCapabilities, ElicitAction, ElicitParams, InputKind,
    InputRequest, InputRequests, InputRequiredResult, InputResponse, InputResponses, RequestMeta,
    ResultType, UntrustedState, WireError,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

const SECRET: &str = "SECRET-123";
/// A numeric "secret": some refusals are about numbers, and a number is a value too.
const SECRET_NUMBER: i64 = 987_654_321;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/wire")
}

fn load(name: &str) -> Value {
    let path = data_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Parses `v` as `T` through serde, serializes it again, and returns the result.
fn serde_round_trip<T: Serialize + DeserializeOwned>(v: &Value) -> Value {
    let t: T = serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("parse {v}: {e}"));
    // Parsing from text takes a different serde path than from a Value: check both.
    let from_text: T = serde_json::from_str(&v.to_string()).unwrap();
    assert_eq!(
        serde_json::to_value(&from_text).unwrap(),
        serde_json::to_value(&t).unwrap()
    );
    serde_json::to_value(&t).unwrap()
}

fn assert_round_trips<T: Serialize + DeserializeOwned>(file: &str) {
    let v = load(file);
    assert_eq!(serde_round_trip::<T>(&v), v, "{file} did not round-trip");
}

fn meta_round_trip(v: &Value) -> Value {
    RequestMeta::from_meta(Some(v))
        .unwrap_or_else(|e| panic!("{v}: {e:?}"))
        .to_value()
}

/// The JSON file names in the data directory with the given prefix.
fn files_with_prefix(prefix: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(data_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with(prefix) && n.ends_with(".json"))
        .collect();
    names.sort();
    names
}

fn assert_no_secret(msg: &str, what: &str) {
    assert!(
        !msg.contains(SECRET),
        "{what}: message echoes the value: {msg}"
    );
    assert!(
        !msg.contains(&SECRET_NUMBER.to_string()),
        "{what}: message echoes the numeric value: {msg}"
    );
}

// ---------------------------------------------------------------------------
// Round trips, one data file at a time
// ---------------------------------------------------------------------------

#[test]
fn every_data_file_round_trips() {
    let mut seen = 0;
    for f in files_with_prefix("irr-") {
        // No Deserialize: a parsed InputRequiredResult needs the method it answers.
        let v = load(&f);
        let irr = InputRequiredResult::from_value(CarrierMethod::ToolsCall, &v)
            .unwrap_or_else(|e| panic!("{f}: {e}"));
        assert_eq!(
            serde_json::to_value(&irr).unwrap(),
            v,
            "{f} did not round-trip"
        );
        seen += 1;
    }
    for f in files_with_prefix("request-") {
        assert_round_trips::<InputRequest>(&f);
        seen += 1;
    }
    for f in files_with_prefix("response-") {
        assert_round_trips::<InputResponse>(&f);
        seen += 1;
    }
    for f in files_with_prefix("responses-") {
        assert_round_trips::<InputResponses>(&f);
        seen += 1;
    }
    for f in files_with_prefix("meta-") {
        let v = load(&f);
        assert_eq!(meta_round_trip(&v), v, "{f} did not round-trip");
        seen += 1;
    }
    for f in files_with_prefix("retry-") {
        let v = load(&f);
        let m = CarrierMethod::from_method(v["method"].as_str().unwrap()).unwrap();
        CarrierRequest::from_params(m, v.get("params")).unwrap();
        seen += 1;
    }
    let total = std::fs::read_dir(data_dir()).unwrap().count();
    assert_eq!(seen, total, "a data file has a prefix no test reads");
}

#[test]
fn irr_with_elicitation_sampling_and_state() {
    let v = load("irr-elicitation-sampling-state.json");
    let irr = InputRequiredResult::from_value(CarrierMethod::ToolsCall, &v).unwrap();
    assert_eq!(irr.method(), CarrierMethod::ToolsCall);
    let asks = irr.input_requests().unwrap();
    assert_eq!(asks.len(), 2);
    assert_eq!(asks["github_login"].kind(), InputKind::ElicitForm);
    assert_eq!(asks["capital_of_france"].kind(), InputKind::Sampling);
    assert_eq!(irr.request_state(), Some("eyJsb2NhdGlvbiI6Ik5ldyBZb3JrIn0"));
    assert_eq!(irr.to_value(), v);
    // Input requests are bare {method, params}: no JSON-RPC envelope fields.
    for ask in irr.to_value()["inputRequests"]
        .as_object()
        .unwrap()
        .values()
    {
        assert!(
            ask.get("jsonrpc").is_none() && ask.get("id").is_none(),
            "{ask}"
        );
    }
}

#[test]
fn irr_state_only() {
    let v = load("irr-state-only.json");
    let irr = InputRequiredResult::from_value(CarrierMethod::ToolsCall, &v).unwrap();
    assert!(irr.input_requests().is_none());
    assert_eq!(
        irr.request_state(),
        Some("eyJwcm9ncmVzcyI6IjUwJSIsInN0YXRlIjoicHJvY2Vzc2luZyJ9")
    );
    assert_eq!(irr.to_value(), v);
}

#[test]
fn irr_without_state_keeps_no_state() {
    let v = load("irr-ado-round1-no-state.json");
    let irr = InputRequiredResult::from_value(CarrierMethod::ToolsCall, &v).unwrap();
    assert!(irr.request_state().is_none());
    assert!(irr.to_value().get("requestState").is_none());
}

#[test]
fn irr_never_carries_caching_hints() {
    // Interim results are not cacheable (spec.md §1.2, §2.7): hints on a parsed
    // IRR are not written back, and the builder has no way to add them.
    let v = json!({"resultType": "input_required", "requestState": "s", "ttlMs": 60000, "cacheScope": "public"});
    let out = InputRequiredResult::from_value(CarrierMethod::ToolsCall, &v)
        .unwrap()
        .to_value();
    assert_eq!(
        out,
        json!({"resultType": "input_required", "requestState": "s"})
    );
}

#[test]
fn irr_result_meta_is_kept() {
    let v = load("irr-url-mode.json");
    let irr = InputRequiredResult::from_value(CarrierMethod::ToolsCall, &v).unwrap();
    assert_eq!(
        irr.meta().unwrap()["io.modelcontextprotocol/serverInfo"]["name"],
        "example-server"
    );
    assert_eq!(irr.to_value(), v);
}

#[test]
fn elicitation_form_with_and_without_mode() {
    let without = InputRequest::from_value(&load("request-elicit-form-no-mode.json")).unwrap();
    let with = InputRequest::from_value(&load("request-elicit-form-mode.json")).unwrap();
    for (r, explicit) in [(&without, false), (&with, true)] {
        assert_eq!(r.kind(), InputKind::ElicitForm);
        assert_eq!(r.kind().method(), "elicitation/create");
        match r {
            InputRequest::Elicit(ElicitParams::Form(f)) => assert_eq!(f.explicit_mode, explicit),
            other => panic!("not a form: {other:?}"),
        }
    }
    // Absent mode stays absent; "form" stays written out.
    assert!(without.to_value()["params"].get("mode").is_none());
    assert_eq!(with.to_value()["params"]["mode"], "form");
    // Every primitive schema shape survives (order: see `form_fields_keep_declared_order`).
    let InputRequest::Elicit(ElicitParams::Form(f)) = &without else {
        unreachable!()
    };
    assert_eq!(f.requested_schema.properties.len(), 11);
    assert!(f.requested_schema.is_required("email"));
    assert!(!f.requested_schema.is_required("age"));
    assert_eq!(
        f.requested_schema.schema_uri.as_deref(),
        Some("https://json-schema.org/draft/2020-12/schema")
    );
}

/// A form's fields are shown to the user in the order the server declared them:
/// `RequestedSchema::properties` and `InputRequests` are `IndexMap`s, and serde_json
/// is built with `preserve_order`, so the order survives the wire both ways.
#[test]
fn form_fields_keep_declared_order() {
    use mrtr::wire::{ElicitFormParams, PrimitiveSchema, RequestedSchema};
    let mut schema = RequestedSchema::new();
    for name in ["name", "email", "age"] {
        schema
            .properties
            .insert(name.into(), PrimitiveSchema::string());
    }
    let ask = InputRequest::Elicit(ElicitParams::Form(ElicitFormParams {
        message: "m".into(),
        requested_schema: schema,
        explicit_mode: false,
    }));
    let text = serde_json::to_string(&ask).unwrap();
    let (n, e, a) = (
        text.find("\"name\"").unwrap(),
        text.find("\"email\"").unwrap(),
        text.find("\"age\"").unwrap(),
    );
    assert!(n < e && e < a, "declared order lost on the wire: {text}");

    let parsed: InputRequest = serde_json::from_str(&text).unwrap();
    let InputRequest::Elicit(ElicitParams::Form(f)) = &parsed else {
        unreachable!()
    };
    assert_eq!(
        f.requested_schema.properties.keys().collect::<Vec<_>>(),
        ["name", "email", "age"]
    );

    let irr = InputRequiredResult::from_value(
        CarrierMethod::ToolsCall,
        &load("irr-elicitation-sampling-state.json"),
    )
    .unwrap();
    let keys: Vec<_> = irr.input_requests().unwrap().keys().collect();
    assert_eq!(keys, ["github_login", "capital_of_france"]);
}

#[test]
fn elicitation_url_mode() {
    let r = InputRequest::from_value(&load("request-elicit-url.json")).unwrap();
    assert_eq!(r.kind(), InputKind::ElicitUrl);
    match &r {
        InputRequest::Elicit(ElicitParams::Url(u)) => {
            assert_eq!(u.url, "https://mcp.example.com/ui/set_api_key");
            assert_eq!(u.message, "Please provide your API key to continue.");
        }
        other => panic!("not url mode: {other:?}"),
    }
    // 2026-07-28 removed elicitationId: it is never emitted.
    assert!(r.to_value()["params"].get("elicitationId").is_none());
}

#[test]
fn sampling_with_every_param() {
    let v = load("request-sampling-full.json");
    let r = InputRequest::from_value(&v).unwrap();
    let InputRequest::CreateMessage(p) = &r else {
        panic!("not sampling: {r:?}")
    };
    assert_eq!(p.max_tokens, 100);
    assert_eq!(p.messages.len(), 2);
    assert_eq!(
        p.system_prompt.as_deref(),
        Some("You are a helpful assistant.")
    );
    assert_eq!(p.include_context.as_deref(), Some("thisServer"));
    assert_eq!(p.temperature, Some(0.7));
    assert_eq!(
        p.stop_sequences.as_deref(),
        Some(&["\n\nHuman:".to_owned(), "END".to_owned()][..])
    );
    assert_eq!(
        p.model_preferences.as_ref().unwrap()["hints"][0]["name"],
        "claude-3-sonnet"
    );
    assert_eq!(p.metadata.as_ref().unwrap()["requestKind"], "capital");
    assert_eq!(p.tools.as_ref().unwrap().len(), 1);
    assert_eq!(p.tool_choice.as_ref().unwrap()["mode"], "required");
    assert!(p.extra.is_empty(), "every field is known: {:?}", p.extra);
    assert_eq!(r.to_value(), v);
}

#[test]
fn sampling_unknown_params_are_kept() {
    let v = json!({"method": "sampling/createMessage", "params": {
        "messages": [], "maxTokens": 1, "com.example/extra": {"k": [true]}}});
    assert_eq!(serde_round_trip::<InputRequest>(&v), v);
}

#[test]
fn roots_bare_and_with_meta() {
    let bare = InputRequest::from_value(&load("request-roots-bare.json")).unwrap();
    assert_eq!(bare, InputRequest::ListRoots { meta: None });
    assert_eq!(bare.to_value(), json!({"method": "roots/list"}));
    let with_meta = InputRequest::from_value(&load("request-roots-meta.json")).unwrap();
    let InputRequest::ListRoots { meta: Some(m) } = &with_meta else {
        panic!("{with_meta:?}")
    };
    assert_eq!(m["com.example/hint"], "workspace");
    // params without _meta carries nothing: it is written as the bare form.
    let empty = InputRequest::from_value(&json!({"method": "roots/list", "params": {}})).unwrap();
    assert_eq!(empty.to_value(), json!({"method": "roots/list"}));
}

#[test]
fn elicit_answers() {
    let accept = InputResponse::from_value(&load("response-elicit-accept.json")).unwrap();
    let InputResponse::Elicit(e) = &accept else {
        panic!("{accept:?}")
    };
    assert_eq!(e.action, ElicitAction::Accept);
    let c = e.content.as_ref().unwrap();
    assert_eq!(c["tags"], json!(["x", "z"]));
    assert_eq!(c["rating"], json!(4.5));
    for (file, action) in [
        ("response-elicit-decline.json", ElicitAction::Decline),
        ("response-elicit-cancel.json", ElicitAction::Cancel),
        ("response-elicit-url-accept.json", ElicitAction::Accept),
    ] {
        let v = load(file);
        for kind in [InputKind::ElicitForm, InputKind::ElicitUrl] {
            let r = InputResponse::parse_as(kind, &v).unwrap();
            let InputResponse::Elicit(e) = &r else {
                panic!("{r:?}")
            };
            assert_eq!(e.action, action);
            assert!(e.content.is_none(), "{file}: no content");
            assert_eq!(r.to_value(), v);
        }
    }
}

#[test]
fn sampling_answers_single_block_and_array() {
    let single =
        InputResponse::parse_as(InputKind::Sampling, &load("response-sampling-single.json"))
            .unwrap();
    let InputResponse::CreateMessage(m) = &single else {
        panic!("{single:?}")
    };
    assert_eq!(m.text(), "The capital of France is Paris.");
    assert_eq!(m.stop_reason.as_deref(), Some("endTurn"));
    assert_eq!(m.role, "assistant");

    let blocks =
        InputResponse::parse_as(InputKind::Sampling, &load("response-sampling-blocks.json"))
            .unwrap();
    let InputResponse::CreateMessage(m) = &blocks else {
        panic!("{blocks:?}")
    };
    assert_eq!(m.content.as_array().unwrap().len(), 2);
    assert_eq!(m.stop_reason.as_deref(), Some("toolUse"));
    assert_eq!(m.meta.as_ref().unwrap()["com.example/latencyMs"], 812);
    assert_eq!(m.text(), "", "tool_use blocks have no text");

    // stopReason is an open string.
    let v = load("response-sampling-provider-stop.json");
    assert_eq!(
        InputResponse::parse_as(InputKind::Sampling, &v)
            .unwrap()
            .to_value(),
        v
    );
}

#[test]
fn roots_answer() {
    let v = load("response-roots.json");
    let r = InputResponse::parse_as(InputKind::Roots, &v).unwrap();
    let InputResponse::ListRoots(l) = &r else {
        panic!("{r:?}")
    };
    assert_eq!(l.roots.len(), 3);
    assert_eq!(l.roots[0].name.as_deref(), Some("My Project"));
    assert!(l.roots[2].name.is_none());
    assert_eq!(r.to_value(), v);
}

#[test]
fn input_responses_have_no_result_type() {
    let v = load("responses-elicitation-and-sampling.json");
    let r: InputResponses = serde_json::from_value(v.clone()).unwrap();
    assert!(matches!(r["github_login"], InputResponse::Elicit(_)));
    assert!(matches!(
        r["capital_of_france"],
        InputResponse::CreateMessage(_)
    ));
    for (_, resp) in &r {
        assert!(resp.to_value().get("resultType").is_none());
    }
    assert_eq!(serde_json::to_value(&r).unwrap(), v);
}

#[test]
fn answers_of_the_wrong_kind_are_refused() {
    let elicit = load("response-elicit-accept.json");
    let sampling = load("response-sampling-single.json");
    let roots = load("response-roots.json");
    assert!(InputResponse::parse_as(InputKind::Sampling, &elicit).is_err());
    assert!(InputResponse::parse_as(InputKind::Roots, &elicit).is_err());
    assert!(InputResponse::parse_as(InputKind::ElicitForm, &sampling).is_err());
    assert!(InputResponse::parse_as(InputKind::Roots, &sampling).is_err());
    assert!(InputResponse::parse_as(InputKind::ElicitUrl, &roots).is_err());
    assert!(InputResponse::parse_as(InputKind::Sampling, &roots).is_err());
}

#[test]
fn request_meta_full() {
    let v = load("meta-full.json");
    let m = RequestMeta::from_meta(Some(&v)).unwrap();
    assert_eq!(m.protocol_version, "2026-07-28");
    let ci = m.client_info.as_ref().unwrap();
    assert_eq!(
        (ci.name.as_str(), ci.version.as_str()),
        ("ExampleClient", "1.0.0")
    );
    assert_eq!(ci.extra["title"], "Example Client");
    let caps = &m.client_capabilities;
    let e = caps.elicitation.as_ref().unwrap();
    assert!(e.supports_form() && e.supports_url());
    let s = caps.sampling.as_ref().unwrap();
    assert!(s.context.is_some() && s.tools.is_some());
    assert!(caps.roots.is_some());
    assert_eq!(
        caps.experimental.as_ref().unwrap()["com.example/feature"]["level"],
        2
    );
    assert!(
        caps.extensions
            .as_ref()
            .unwrap()
            .contains_key("io.modelcontextprotocol/tasks")
    );
    assert_eq!(m.progress_token, Some(json!("progress-7")));
    // The log level is typed (it decides which log messages go out) ...
    assert_eq!(
        m.log_level.map(mrtr::LogLevel::as_str),
        v["io.modelcontextprotocol/logLevel"].as_str()
    );
    assert!(!m.other.contains_key("io.modelcontextprotocol/logLevel"));
    // ... trace fields and unknown keys are passed through.
    for k in ["traceparent", "tracestate", "baggage", "com.example/custom"] {
        assert_eq!(m.other.get(k), v.get(k), "{k}");
    }
    assert_eq!(m.to_value(), v);
}

#[test]
fn request_meta_numeric_progress_token_and_minimal() {
    let v = load("meta-numeric-progress.json");
    let m = RequestMeta::from_meta(Some(&v)).unwrap();
    assert_eq!(m.progress_token, Some(json!(42)));
    assert_eq!(m.to_value(), v);

    let v = load("meta-minimal.json");
    let m = RequestMeta::from_meta(Some(&v)).unwrap();
    assert!(m.client_info.is_none());
    assert!(m.client_capabilities.is_empty());
    assert_eq!(m.to_value(), v);
}

#[test]
fn request_meta_new_is_this_version() {
    let m = RequestMeta::new(ClientCapabilities::none());
    assert_eq!(
        m.to_value(),
        json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {}})
    );
}

#[test]
fn client_capabilities_unknown_fields_are_kept() {
    let v = json!({
        "elicitation": {"form": {"x": 1}, "com.example/mode": {}},
        "sampling": {"com.example/s": true},
        "roots": {"listChanged": true},
        "com.example/top": {"a": "b"}
    });
    assert_eq!(serde_round_trip::<ClientCapabilities>(&v), v);
}

#[test]
fn result_type_is_open() {
    for (s, rt) in [
        ("complete", ResultType::Complete),
        ("input_required", ResultType::InputRequired),
        ("task", ResultType::Other("task".into())),
        (
            "com.example/whatever",
            ResultType::Other("com.example/whatever".into()),
        ),
    ] {
        let parsed: ResultType = serde_json::from_value(json!(s)).unwrap();
        assert_eq!(parsed, rt);
        assert_eq!(parsed.as_str(), s);
        assert_eq!(serde_json::to_value(&parsed).unwrap(), json!(s));
        assert_eq!(ResultType::from_wire(s), rt);
    }
    // A non-string resultType is not a ResultType.
    assert!(serde_json::from_value::<ResultType>(json!(1)).is_err());
}

// ---------------------------------------------------------------------------
// InputRequiredResult construction
// ---------------------------------------------------------------------------

fn one_ask() -> InputRequests {
    let mut asks = InputRequests::new();
    asks.insert("roots".into(), InputRequest::ListRoots { meta: None });
    asks
}

#[test]
fn irr_new_needs_requests_or_state() {
    for m in [
        CarrierMethod::ToolsCall,
        CarrierMethod::ResourcesRead,
        CarrierMethod::PromptsGet,
    ] {
        assert!(InputRequiredResult::new(m, InputRequests::new(), None).is_err());
        assert!(InputRequiredResult::new(m, InputRequests::new(), Some(String::new())).is_err());

        let state_only =
            InputRequiredResult::new(m, InputRequests::new(), Some("s".into())).unwrap();
        assert_eq!(
            state_only.method(),
            m,
            "the result keeps the carrier it answers"
        );
        assert_eq!(
            state_only.to_value(),
            json!({"resultType": "input_required", "requestState": "s"})
        );

        let asks_only = InputRequiredResult::new(m, one_ask(), None).unwrap();
        assert_eq!(
            asks_only.to_value(),
            json!({"resultType": "input_required", "inputRequests": {"roots": {"method": "roots/list"}}})
        );
        // An empty state next to real asks is simply not written.
        let empty_state = InputRequiredResult::new(m, one_ask(), Some(String::new())).unwrap();
        assert!(empty_state.request_state().is_none());
        assert!(empty_state.to_value().get("requestState").is_none());
    }
}

#[test]
fn irr_new_with_meta() {
    let mut meta = serde_json::Map::new();
    meta.insert(
        "io.modelcontextprotocol/serverInfo".into(),
        json!({"name": "s", "version": "1"}),
    );
    let irr = InputRequiredResult::new(CarrierMethod::ToolsCall, one_ask(), Some("st".into()))
        .unwrap()
        .with_meta(meta.clone());
    let v = irr.to_value();
    assert_eq!(v["_meta"], json!(meta));
    assert_eq!(v["resultType"], "input_required");
    assert_eq!(
        InputRequiredResult::from_value(CarrierMethod::ToolsCall, &v).unwrap(),
        irr
    );
    // The method is part of the value, not of the wire shape.
    let other = InputRequiredResult::from_value(CarrierMethod::PromptsGet, &v).unwrap();
    assert_ne!(other, irr);
    assert_eq!(other.to_value(), v);
}

// ---------------------------------------------------------------------------
// Rejections
// ---------------------------------------------------------------------------

fn form_request(schema: Value) -> Value {
    json!({"method": "elicitation/create", "params": {"message": "m", "requestedSchema": schema}})
}

fn form_with_property(prop: Value) -> Value {
    form_request(json!({"type": "object", "properties": {"p": prop}}))
}

fn rejected_request(v: &Value) -> WireError {
    let e = InputRequest::from_value(v).expect_err(&format!("accepted: {v}"));
    // The serde path refuses too.
    assert!(
        serde_json::from_value::<InputRequest>(v.clone()).is_err(),
        "serde accepted {v}"
    );
    e
}

#[test]
fn form_elicitation_without_requested_schema_is_refused() {
    rejected_request(&json!({"method": "elicitation/create", "params": {"message": "m"}}));
    rejected_request(
        &json!({"method": "elicitation/create", "params": {"mode": "form", "message": "m"}}),
    );
    rejected_request(
        &json!({"method": "elicitation/create", "params": {"message": "m", "requestedSchema": null}}),
    );
    // and without message, or without params at all
    rejected_request(&json!({"method": "elicitation/create", "params": {
        "requestedSchema": {"type": "object", "properties": {}}}}));
    rejected_request(&json!({"method": "elicitation/create"}));
}

#[test]
fn requested_schema_must_be_a_flat_object() {
    rejected_request(&form_request(json!({"type": "object"})));
    rejected_request(&form_request(json!({"type": "array", "properties": {}})));
    rejected_request(&form_request(json!({"properties": {}})));
    rejected_request(&form_request(json!("object")));
}

#[test]
fn non_primitive_properties_are_refused() {
    for prop in [
        json!({"type": "object", "properties": {"inner": {"type": "string"}}}),
        json!({"type": "array", "items": {"type": "number"}}),
        json!({"type": "array", "items": {"type": "string"}}),
        json!({"type": "array", "items": {"type": "number", "enum": [1, 2]}}),
        json!({"type": "array"}),
        json!({"title": "no type"}),
        json!({}),
        json!({"type": "null"}),
        json!({"type": ["string", "null"]}),
        json!("string"),
    ] {
        rejected_request(&form_with_property(prop));
    }
}

#[test]
fn url_elicitation_without_url_is_refused() {
    rejected_request(
        &json!({"method": "elicitation/create", "params": {"mode": "url", "message": "m"}}),
    );
    rejected_request(
        &json!({"method": "elicitation/create", "params": {"mode": "url", "message": "m", "url": 7}}),
    );
    rejected_request(
        &json!({"method": "elicitation/create", "params": {"mode": "url", "message": "m", "url": "not a url"}}),
    );
    rejected_request(
        &json!({"method": "elicitation/create", "params": {"mode": "url", "url": "https://example.com"}}),
    );
}

#[test]
fn unknown_elicitation_mode_is_refused() {
    for mode in [json!("Form"), json!("oauth"), json!(1), json!(null)] {
        rejected_request(&json!({"method": "elicitation/create", "params": {
            "mode": mode, "message": "m", "url": "https://example.com",
            "requestedSchema": {"type": "object", "properties": {}}}}));
    }
}

#[test]
fn sampling_without_max_tokens_is_refused() {
    let msgs = json!([{"role": "user", "content": {"type": "text", "text": "hi"}}]);
    rejected_request(&json!({"method": "sampling/createMessage", "params": {"messages": msgs}}));
    rejected_request(
        &json!({"method": "sampling/createMessage", "params": {"messages": msgs, "maxTokens": "100"}}),
    );
    rejected_request(
        &json!({"method": "sampling/createMessage", "params": {"messages": msgs, "maxTokens": -1}}),
    );
    rejected_request(
        &json!({"method": "sampling/createMessage", "params": {"messages": msgs, "maxTokens": 1.5}}),
    );
    rejected_request(&json!({"method": "sampling/createMessage", "params": {"maxTokens": 100}}));
    rejected_request(&json!({"method": "sampling/createMessage"}));
}

#[test]
fn sampling_with_malformed_params_is_refused() {
    let msgs = json!([{"role": "user", "content": {"type": "text", "text": "hi"}}]);
    let base = |extra: Value| {
        let mut p = json!({"messages": msgs, "maxTokens": 10});
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        json!({"method": "sampling/createMessage", "params": p})
    };
    rejected_request(&base(json!({"includeContext": "everything"})));
    rejected_request(&base(json!({"temperature": "hot"})));
    rejected_request(&base(json!({"stopSequences": [1]})));
    rejected_request(&base(json!({"metadata": "x"})));
    rejected_request(&base(json!({"tools": {}})));
    rejected_request(&json!({"method": "sampling/createMessage", "params": {
        "messages": [{"role": "system", "content": {"type": "text", "text": "x"}}], "maxTokens": 1}}));
    rejected_request(&json!({"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user"}], "maxTokens": 1}}));
}

#[test]
fn unknown_input_request_methods_are_refused() {
    for m in [
        "tools/call",
        "ping",
        "elicitation/complete",
        "notifications/elicitation/complete",
        "roots/list_changed",
        "Elicitation/Create",
        "",
    ] {
        rejected_request(&json!({"method": m, "params": {}}));
    }
    rejected_request(&json!({"params": {}}));
    rejected_request(&json!({"method": 1}));
    rejected_request(&json!(["roots/list"]));
    rejected_request(&json!({"method": "roots/list", "params": "x"}));
    rejected_request(&json!({"method": "roots/list", "params": {"_meta": 1}}));
}

fn rejected_response(kind: InputKind, v: &Value) -> WireError {
    let e = InputResponse::parse_as(kind, v).expect_err(&format!("accepted as {kind:?}: {v}"));
    assert!(
        InputResponse::from_value(v).is_err(),
        "from_value accepted {v}"
    );
    e
}

#[test]
fn elicit_action_must_be_accept_decline_or_cancel() {
    for action in [
        json!("ok"),
        json!("Accept"),
        json!("reject"),
        json!(true),
        json!(null),
    ] {
        rejected_response(InputKind::ElicitForm, &json!({"action": action}));
    }
    // a missing action is not an elicitation answer at all
    assert!(
        InputResponse::parse_as(InputKind::ElicitForm, &json!({"content": {"a": "b"}})).is_err()
    );
}

#[test]
fn elicit_content_values_must_be_primitive_or_string_arrays() {
    for value in [
        json!({"nested": "object"}),
        json!([1, 2]),
        json!(["a", 1]),
        json!([["a"]]),
        json!(null),
    ] {
        rejected_response(
            InputKind::ElicitForm,
            &json!({"action": "accept", "content": {"k": value}}),
        );
    }
    rejected_response(
        InputKind::ElicitForm,
        &json!({"action": "accept", "content": "text"}),
    );
    rejected_response(
        InputKind::ElicitForm,
        &json!({"action": "accept", "content": ["a"]}),
    );
}

#[test]
fn roots_must_be_file_uris() {
    for uri in [
        "https://example.com/repo",
        "/home/user",
        "file:/home/user",
        "",
    ] {
        rejected_response(InputKind::Roots, &json!({"roots": [{"uri": uri}]}));
    }
    rejected_response(InputKind::Roots, &json!({"roots": [{"name": "no uri"}]}));
    rejected_response(InputKind::Roots, &json!({"roots": "file:///x"}));
    assert!(InputResponse::parse_as(InputKind::Roots, &json!({})).is_err());
}

#[test]
fn sampling_answers_need_role_content_and_model() {
    for v in [
        json!({"role": "assistant", "content": {"type": "text", "text": "x"}}),
        json!({"role": "assistant", "model": "m"}),
        json!({"content": {"type": "text", "text": "x"}, "model": "m"}),
        json!({"role": "system", "content": {"type": "text", "text": "x"}, "model": "m"}),
        json!({"role": "assistant", "content": "plain text", "model": "m"}),
        json!({"role": "assistant", "content": [{"text": "no type"}], "model": "m"}),
        json!({"role": "assistant", "content": {"type": "text"}, "model": 5}),
    ] {
        assert!(
            InputResponse::parse_as(InputKind::Sampling, &v).is_err(),
            "accepted {v}"
        );
    }
}

#[test]
fn irr_needs_input_requests_or_state() {
    for v in [
        json!({"resultType": "input_required"}),
        json!({"resultType": "input_required", "inputRequests": {}}),
        json!({"resultType": "input_required", "inputRequests": {}, "requestState": ""}),
        json!({"resultType": "input_required", "requestState": ""}),
    ] {
        for m in [
            CarrierMethod::ToolsCall,
            CarrierMethod::ResourcesRead,
            CarrierMethod::PromptsGet,
        ] {
            assert!(
                InputRequiredResult::from_value(m, &v).is_err(),
                "accepted {v}"
            );
        }
    }
}

#[test]
fn irr_with_malformed_fields_is_refused() {
    let ok_ask = json!({"method": "roots/list"});
    for v in [
        json!({"resultType": "complete", "requestState": "s"}),
        json!({"requestState": "s"}),
        json!({"resultType": "input_required", "inputRequests": [ok_ask]}),
        json!({"resultType": "input_required", "requestState": 5}),
        json!({"resultType": "input_required", "requestState": null}),
        json!({"resultType": "input_required", "requestState": "s", "_meta": "m"}),
        json!({"resultType": "input_required", "inputRequests": {"a": ok_ask, "b": {"method": "ping"}}}),
        json!("input_required"),
    ] {
        assert!(
            InputRequiredResult::from_value(CarrierMethod::ToolsCall, &v).is_err(),
            "accepted {v}"
        );
    }
}

#[test]
fn wire_errors_never_echo_the_value() {
    let s = SECRET;
    let n = SECRET_NUMBER;
    let msgs = json!([{"role": "user", "content": {"type": "text", "text": "hi"}}]);
    let bad_requests = [
        json!({"method": s}),
        json!({"method": "elicitation/create", "params": {"mode": s, "message": "m"}}),
        json!({"method": "elicitation/create", "params": {"message": "m", "url": s}}),
        json!({"method": "elicitation/create", "params": {"mode": "url", "message": "m", "url": s}}),
        json!({"method": "elicitation/create", "params": {"message": n, "requestedSchema": {}}}),
        json!({"method": "elicitation/create", "params": {"message": "m", "requestedSchema": s}}),
        json!({"method": "elicitation/create", "params": {"message": "m", "requestedSchema": {"type": s, "properties": {}}}}),
        form_with_property(json!({"type": s})),
        form_with_property(json!({"type": "string", "format": s})),
        form_with_property(json!({"type": "string", "title": n})),
        form_with_property(json!({"type": "string", "minLength": -n})),
        form_with_property(json!({"type": "string", "minLength": s})),
        form_with_property(json!({"type": "number", "minimum": s})),
        form_with_property(json!({"type": "boolean", "default": s})),
        form_with_property(json!({"type": "string", "enum": [s, n]})),
        form_with_property(json!({"type": "string", "enum": [s], "enumNames": [s, s]})),
        form_with_property(json!({"type": "string", "oneOf": [{"const": n, "title": s}]})),
        form_with_property(json!({"type": "array", "items": {"type": s, "enum": [s]}})),
        json!({"method": "sampling/createMessage", "params": {"messages": msgs, "maxTokens": s}}),
        json!({"method": "sampling/createMessage", "params": {"messages": msgs, "maxTokens": -n}}),
        json!({"method": "sampling/createMessage", "params": {"messages": msgs, "maxTokens": (n as f64) + 0.5}}),
        json!({"method": "sampling/createMessage", "params": {"messages": msgs, "maxTokens": 1, "includeContext": s}}),
        json!({"method": "sampling/createMessage", "params": {"messages": msgs, "maxTokens": 1, "temperature": s}}),
        json!({"method": "sampling/createMessage", "params": {"messages": msgs, "maxTokens": 1, "stopSequences": [n]}}),
        json!({"method": "sampling/createMessage", "params": {"messages": msgs, "maxTokens": 1, "systemPrompt": n}}),
        json!({"method": "sampling/createMessage", "params": {"messages": [{"role": s, "content": {}}], "maxTokens": 1}}),
        json!({"method": "sampling/createMessage", "params": {"messages": s, "maxTokens": 1}}),
        json!({"method": "roots/list", "params": s}),
    ];
    for v in &bad_requests {
        let e = InputRequest::from_value(v).expect_err(&format!("accepted {v}"));
        assert_no_secret(e.message(), &v.to_string());
        assert_no_secret(&e.to_string(), &v.to_string());
        let serde_err = serde_json::from_value::<InputRequest>(v.clone()).unwrap_err();
        assert_no_secret(&serde_err.to_string(), &v.to_string());
    }

    let bad_responses = [
        (InputKind::ElicitForm, json!({"action": s})),
        (
            InputKind::ElicitForm,
            json!({"action": "accept", "content": {"k": {"v": s}}}),
        ),
        (
            InputKind::ElicitForm,
            json!({"action": "accept", "content": {"k": [s, n]}}),
        ),
        (
            InputKind::ElicitForm,
            json!({"action": "accept", "content": s}),
        ),
        (
            InputKind::Sampling,
            json!({"role": s, "content": {"type": "text", "text": "x"}, "model": "m"}),
        ),
        (
            InputKind::Sampling,
            json!({"role": "assistant", "content": {"type": "text", "text": "x"}, "model": n}),
        ),
        (
            InputKind::Sampling,
            json!({"role": "assistant", "content": s, "model": "m"}),
        ),
        (
            InputKind::Sampling,
            json!({"role": "assistant", "content": {"type": n}, "model": "m"}),
        ),
        (
            InputKind::Sampling,
            json!({"role": "assistant", "content": {"type": "text"}, "model": "m", "stopReason": n}),
        ),
        (
            InputKind::Roots,
            json!({"roots": [{"uri": format!("https://{s}.example.com")}]}),
        ),
        (InputKind::Roots, json!({"roots": [{"uri": n}]})),
        (
            InputKind::Roots,
            json!({"roots": [{"uri": "file:///x", "name": n}]}),
        ),
        (InputKind::Roots, json!({"roots": s})),
    ];
    for (kind, v) in &bad_responses {
        let e = InputResponse::parse_as(*kind, v).expect_err(&format!("accepted {v}"));
        assert_no_secret(e.message(), &v.to_string());
        if let Err(e) = InputResponse::from_value(v) {
            assert_no_secret(e.message(), &v.to_string());
        }
    }

    let bad_results = [
        json!({"resultType": s}),
        json!({"resultType": "input_required", "requestState": n}),
        json!({"resultType": "input_required", "_meta": s, "requestState": "x"}),
        json!({"resultType": "input_required", "inputRequests": {"k": {"method": s}}}),
        json!({"resultType": "input_required", "inputRequests": s}),
    ];
    for v in &bad_results {
        let e = InputRequiredResult::from_value(CarrierMethod::ToolsCall, v)
            .expect_err(&format!("accepted {v}"));
        assert_no_secret(e.message(), &v.to_string());
    }
}

#[test]
fn meta_errors_never_echo_the_value() {
    let s = SECRET;
    let n = SECRET_NUMBER;
    let pv = "io.modelcontextprotocol/protocolVersion";
    let cc = "io.modelcontextprotocol/clientCapabilities";
    let ci = "io.modelcontextprotocol/clientInfo";
    for v in [
        json!(s),
        json!({pv: n, cc: {}}),
        json!({pv: "2026-07-28", cc: s}),
        json!({pv: "2026-07-28", cc: {"elicitation": s}}),
        json!({pv: "2026-07-28", cc: {"roots": n}}),
        json!({pv: "2026-07-28", cc: {}, ci: s}),
        json!({pv: "2026-07-28", cc: {}, ci: {"name": s}}),
        json!({pv: "2026-07-28", cc: {}, ci: {"name": "x", "version": n}}),
        json!({pv: "2026-07-28", cc: {}, "progressToken": {"t": s}}),
    ] {
        match RequestMeta::from_meta(Some(&v)) {
            Err(MetaError::Invalid(e)) => assert_no_secret(e.message(), &v.to_string()),
            other => panic!("{v}: {other:?}"),
        }
    }
}

// ---------------------------------------------------------------------------
// Carrier methods and carrier request params
// ---------------------------------------------------------------------------

#[test]
fn only_three_methods_are_carriers() {
    let carriers = [
        ("tools/call", CarrierMethod::ToolsCall, "name"),
        ("resources/read", CarrierMethod::ResourcesRead, "uri"),
        ("prompts/get", CarrierMethod::PromptsGet, "name"),
    ];
    for (name, m, target) in carriers {
        assert_eq!(CarrierMethod::from_method(name), Some(m));
        assert_eq!(m.as_str(), name);
        assert_eq!(m.target_param(), target);
    }
    // Every other 2026-07-28 client request (spec.md §2.1), the server-to-client
    // methods, and methods removed in this revision.
    for name in [
        "server/discover",
        "completion/complete",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "tools/list",
        "subscriptions/listen",
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "tasks/result",
        "tasks/get",
        "tasks/update",
        "elicitation/create",
        "sampling/createMessage",
        "roots/list",
        "notifications/cancelled",
        "Tools/Call",
        "tools/call ",
        "",
    ] {
        assert_eq!(CarrierMethod::from_method(name), None, "{name:?}");
    }
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}
    })
}

fn params_with(extra: Value) -> Value {
    let mut p = json!({"_meta": meta(), "name": "get_weather"});
    for (k, v) in extra.as_object().unwrap() {
        if v.is_null() && k.starts_with('-') {
            p.as_object_mut().unwrap().remove(&k[1..]);
        } else {
            p.as_object_mut().unwrap().insert(k.clone(), v.clone());
        }
    }
    p
}

fn carrier_err(method: CarrierMethod, params: Option<&Value>) -> mrtr::error::Error {
    CarrierRequest::from_params(method, params)
        .expect_err(&format!("accepted {params:?}"))
        .into()
}

fn assert_invalid_params(e: &mrtr::error::Error) {
    assert_eq!(e.code(), code::INVALID_PARAMS, "{e:?}");
    assert_eq!(error_status(e), 400, "{e:?}");
    assert_eq!(e.to_jsonrpc(None)["error"]["code"], -32602);
}

#[test]
fn retry_request_parses() {
    let v = load("retry-tools-call.json");
    let r = CarrierRequest::from_params(CarrierMethod::ToolsCall, v.get("params")).unwrap();
    assert_eq!(r.method(), CarrierMethod::ToolsCall);
    assert_eq!(r.target(), "get_weather");
    assert_eq!(r.arguments_value(), Some(json!({"location": "New York"})));
    assert_eq!(
        r.request_state().map(UntrustedState::as_str),
        Some("eyJsb2NhdGlvbiI6Ik5ldyBZb3JrIn0...")
    );
    let responses = r.input_responses().unwrap();
    assert_eq!(responses["github_login"]["content"]["name"], "octocat");
    assert!(
        r.meta()
            .client_capabilities
            .elicitation
            .as_ref()
            .unwrap()
            .supports_form()
    );
    assert_eq!(r.meta().to_value(), v["params"]["_meta"]);
}

#[test]
fn first_request_has_no_retry_fields() {
    let p = params_with(json!({"arguments": {"location": "New York"}}));
    let r = CarrierRequest::from_params(CarrierMethod::ToolsCall, Some(&p)).unwrap();
    assert!(r.input_responses().is_none());
    assert!(r.request_state().is_none());
    let p = params_with(json!({}));
    let r = CarrierRequest::from_params(CarrierMethod::ToolsCall, Some(&p)).unwrap();
    assert!(r.arguments().is_none());
    assert!(r.arguments_value().is_none());
}

#[test]
fn missing_meta_is_invalid_params_400() {
    // no params at all, params without _meta, _meta of the wrong type
    for p in [
        None,
        Some(json!({"name": "t"})),
        Some(json!({"_meta": null, "name": "t"})),
        Some(json!({"_meta": [], "name": "t"})),
    ] {
        let e = carrier_err(CarrierMethod::ToolsCall, p.as_ref());
        assert_invalid_params(&e);
    }
    // _meta without protocolVersion
    let p = json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}, "name": "t"});
    let e = carrier_err(CarrierMethod::ToolsCall, Some(&p));
    assert_invalid_params(&e);
    assert!(
        e.public_message().contains("protocolVersion"),
        "{}",
        e.public_message()
    );
    // _meta without clientCapabilities
    let p =
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}, "name": "t"});
    let e = carrier_err(CarrierMethod::ToolsCall, Some(&p));
    assert_invalid_params(&e);
    assert!(
        e.public_message().contains("clientCapabilities"),
        "{}",
        e.public_message()
    );
    // wrong types
    for m in [
        json!({"io.modelcontextprotocol/protocolVersion": 20260728, "io.modelcontextprotocol/clientCapabilities": {}}),
        json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": []}),
        json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": null}),
    ] {
        let p = json!({"_meta": m, "name": "t"});
        assert_invalid_params(&carrier_err(CarrierMethod::PromptsGet, Some(&p)));
    }
    // params that are not an object
    assert_invalid_params(&carrier_err(CarrierMethod::ToolsCall, Some(&json!(["t"]))));
}

#[test]
fn unsupported_version_is_32022_with_supported_and_requested() {
    for requested in ["2025-11-25", "1900-01-01", ""] {
        let mut m = meta();
        m["io.modelcontextprotocol/protocolVersion"] = json!(requested);
        let p = json!({"_meta": m, "name": "t"});
        let e = carrier_err(CarrierMethod::ToolsCall, Some(&p));
        assert_eq!(e.kind(), ErrorKind::UnsupportedVersion);
        assert_eq!(e.code(), -32022);
        assert_eq!(error_status(&e), 400);
        assert_eq!(
            e.data(),
            Some(&json!({"supported": ["2026-07-28"], "requested": requested}))
        );
        let wire = e.to_jsonrpc(Some(&1.into()));
        assert_eq!(wire["error"]["data"]["supported"], json!(["2026-07-28"]));
        assert_eq!(wire["error"]["data"]["requested"], json!(requested));
    }
}

#[test]
fn unsupported_version_is_reported_before_fields_it_defines() {
    // A client of another revision may shape the rest of `_meta` differently:
    // it gets -32022 (with `supported`) rather than -32602 about a field.
    for m in [
        json!({"io.modelcontextprotocol/protocolVersion": "2099-01-01"}),
        json!({"io.modelcontextprotocol/protocolVersion": "2099-01-01",
               "io.modelcontextprotocol/clientCapabilities": ["new"]}),
    ] {
        let p = json!({"_meta": m, "name": "t"});
        let e = carrier_err(CarrierMethod::ToolsCall, Some(&p));
        assert_eq!(e.code(), -32022, "{p}");
        assert_eq!(e.data().unwrap()["supported"], json!(["2026-07-28"]));
    }
}

#[test]
fn meta_error_variants() {
    let mut m = meta();
    m["io.modelcontextprotocol/protocolVersion"] = json!("2025-11-25");
    assert_eq!(
        RequestMeta::from_meta(Some(&m)),
        Err(MetaError::UnsupportedVersion {
            requested: "2025-11-25".into()
        })
    );
    assert!(matches!(
        RequestMeta::from_meta(None),
        Err(MetaError::Invalid(_))
    ));
}

#[test]
fn input_responses_must_be_an_object() {
    for bad in [
        json!(null),
        json!([]),
        json!([{"action": "accept"}]),
        json!("x"),
        json!(1),
        json!(true),
    ] {
        let p = params_with(json!({"inputResponses": bad}));
        let e = carrier_err(CarrierMethod::ToolsCall, Some(&p));
        assert_invalid_params(&e);
        assert!(
            e.public_message().contains("inputResponses"),
            "{}",
            e.public_message()
        );
    }
    // An empty object is well-formed.
    let p = params_with(json!({"inputResponses": {}}));
    assert!(CarrierRequest::from_params(CarrierMethod::ToolsCall, Some(&p)).is_ok());
}

#[test]
fn request_state_must_be_a_string() {
    for bad in [json!(1), json!({}), json!(["s"]), json!(true), json!(null)] {
        let p = params_with(json!({"requestState": bad}));
        let e = carrier_err(CarrierMethod::ToolsCall, Some(&p));
        assert_invalid_params(&e);
        assert!(
            e.public_message().contains("requestState"),
            "{}",
            e.public_message()
        );
    }
    // Kept exactly as received, whitespace and all.
    let p = params_with(json!({"requestState": " a b\n"}));
    let r = CarrierRequest::from_params(CarrierMethod::ToolsCall, Some(&p)).unwrap();
    assert_eq!(
        r.request_state().map(UntrustedState::as_str),
        Some(" a b\n")
    );
}

#[test]
fn prompt_arguments_must_be_strings() {
    for bad in [
        json!(1),
        json!(true),
        json!(null),
        json!(["a"]),
        json!({"a": "b"}),
    ] {
        let p = params_with(json!({"arguments": {"topic": "rust", "depth": bad}}));
        let e = carrier_err(CarrierMethod::PromptsGet, Some(&p));
        assert_invalid_params(&e);
    }
    let p = params_with(json!({"arguments": {"topic": "rust"}}));
    let r = CarrierRequest::from_params(CarrierMethod::PromptsGet, Some(&p)).unwrap();
    assert_eq!(r.arguments().unwrap()["topic"], "rust");
    // Tools take any JSON object as arguments.
    let p = params_with(json!({"arguments": {"n": 1, "deep": {"x": [null]}}}));
    assert!(CarrierRequest::from_params(CarrierMethod::ToolsCall, Some(&p)).is_ok());
    // but not a non-object
    for m in [CarrierMethod::ToolsCall, CarrierMethod::PromptsGet] {
        let p = params_with(json!({"arguments": ["a"]}));
        assert_invalid_params(&carrier_err(m, Some(&p)));
    }
}

#[test]
fn resources_read_targets_the_uri() {
    let p = json!({"_meta": meta(), "uri": "file:///project/README.md"});
    let r = CarrierRequest::from_params(CarrierMethod::ResourcesRead, Some(&p)).unwrap();
    assert_eq!(r.target(), "file:///project/README.md");
    assert!(r.arguments().is_none());
    // `name` is not the target of resources/read
    let p = json!({"_meta": meta(), "name": "README"});
    assert_invalid_params(&carrier_err(CarrierMethod::ResourcesRead, Some(&p)));
    // and `uri` is not the target of tools/call or prompts/get
    for m in [CarrierMethod::ToolsCall, CarrierMethod::PromptsGet] {
        let p = json!({"_meta": meta(), "uri": "file:///x"});
        assert_invalid_params(&carrier_err(m, Some(&p)));
    }
}

#[test]
fn target_must_be_a_non_empty_string() {
    for bad in [json!(""), json!(1), json!(null), json!(["t"])] {
        let p = params_with(json!({"name": bad}));
        assert_invalid_params(&carrier_err(CarrierMethod::ToolsCall, Some(&p)));
    }
}

#[test]
fn carrier_errors_never_echo_values() {
    let s = SECRET;
    let cases = [
        (
            CarrierMethod::ToolsCall,
            params_with(json!({"name": {"x": s}})),
        ),
        (
            CarrierMethod::ToolsCall,
            params_with(json!({"arguments": s})),
        ),
        (
            CarrierMethod::ToolsCall,
            params_with(json!({"inputResponses": s})),
        ),
        (
            CarrierMethod::ToolsCall,
            params_with(json!({"inputResponses": [s]})),
        ),
        (
            CarrierMethod::ToolsCall,
            params_with(json!({"requestState": {"s": s}})),
        ),
        (
            CarrierMethod::ToolsCall,
            params_with(json!({"requestState": SECRET_NUMBER})),
        ),
        (
            CarrierMethod::PromptsGet,
            params_with(json!({"arguments": {"a": {"v": s}}})),
        ),
        (
            CarrierMethod::PromptsGet,
            params_with(json!({"arguments": {"a": SECRET_NUMBER}})),
        ),
        (
            CarrierMethod::ResourcesRead,
            json!({"_meta": meta(), "uri": "file:///x", "arguments": {"a": s}}),
        ),
        (CarrierMethod::ToolsCall, json!({"_meta": s, "name": "t"})),
        (CarrierMethod::ToolsCall, json!(s)),
    ];
    for (m, p) in cases {
        let e = carrier_err(m, Some(&p));
        assert_invalid_params(&e);
        for out in [
            e.to_jsonrpc(Some(&7.into())).to_string(),
            e.public_message().to_owned(),
            e.to_string(),
        ] {
            assert_no_secret(&out, &p.to_string());
        }
    }
}
