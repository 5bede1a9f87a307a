//! Shared helpers for the engine flow tests: a fake clock (explicit
//! [`Timestamp`]s, never the system clock), fixed key rings, request builders
//! and outcome matchers.
#![allow(dead_code, unreachable_pub)] // each test binary uses a different subset

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use mrtr::engine::{Engine, Flow, Outcome, Round};
use mrtr::error::Error;
use mrtr::principal::Principal;
use mrtr::seal::Keyring;
use mrtr::service::{RequestContext, Service};
use mrtr::time::Timestamp;
use mrtr::wire::InputRequiredResult;
use mrtr::wire::{CarrierMethod, CarrierRequest};
use serde_json::{Value, json};

/// The fake clock's epoch: every test starts here and moves forward explicitly.
pub const T0: Timestamp = Timestamp::from_unix_secs(1_800_000_000);

/// A fixed sealing secret (32 bytes 0..31, base64url), so two engines can share a ring.
pub const SECRET_A: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";
/// Another fixed secret (32 bytes 100..131).
pub const SECRET_B: &str = "ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1-f4CBgoM";

/// The audience every test engine serves unless a test says otherwise.
pub const AUDIENCE: &str = "https://mcp.test.example";

/// A key ring from one of the fixed secrets.
pub fn ring(secret: &str) -> Keyring {
    Keyring::parse_keys(secret).expect("fixed test secret is a valid key")
}

/// An engine on [`SECRET_A`] for [`AUDIENCE`].
pub fn engine() -> Engine {
    Engine::new(ring(SECRET_A), AUDIENCE)
}

/// Every input capability: form elicitation, sampling and roots.
pub fn all_caps() -> Value {
    json!({"elicitation": {}, "sampling": {}, "roots": {"listChanged": true}})
}

/// The per-request `_meta` declaring `caps`.
pub fn meta(caps: &Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "mrtr-tests", "version": "0.0.0"},
        "io.modelcontextprotocol/clientCapabilities": caps,
    })
}

/// A carrier request under construction.
#[derive(Debug, Clone)]
pub struct Req {
    pub method: CarrierMethod,
    pub params: Value,
}

/// `tools/call name` with no arguments and every capability declared.
pub fn tool(name: &str) -> Req {
    Req {
        method: CarrierMethod::ToolsCall,
        params: json!({"_meta": meta(&all_caps()), "name": name}),
    }
}

/// `prompts/get name` with no arguments and every capability declared.
pub fn prompt(name: &str) -> Req {
    Req {
        method: CarrierMethod::PromptsGet,
        params: json!({"_meta": meta(&all_caps()), "name": name}),
    }
}

/// `resources/read uri` with every capability declared.
pub fn resource(uri: &str) -> Req {
    Req {
        method: CarrierMethod::ResourcesRead,
        params: json!({"_meta": meta(&all_caps()), "uri": uri}),
    }
}

impl Req {
    /// Sets `arguments`.
    pub fn args(mut self, args: Value) -> Self {
        self.params["arguments"] = args;
        self
    }

    /// Replaces the declared client capabilities.
    pub fn caps(mut self, caps: Value) -> Self {
        self.params["_meta"] = meta(&caps);
        self
    }

    /// Sets `inputResponses` (any JSON value, so malformed ones can be sent).
    pub fn answers(mut self, responses: Value) -> Self {
        self.params["inputResponses"] = responses;
        self
    }

    /// Sets `requestState`.
    pub fn state(mut self, token: &str) -> Self {
        self.params["requestState"] = token.into();
        self
    }

    /// Echoes the `requestState` of `irr`, if it has one.
    pub fn resume(self, irr: &InputRequiredResult) -> Self {
        match irr.request_state() {
            Some(s) => self.state(s),
            None => self,
        }
    }

    /// The retry of this request after `irr`: its `requestState` echoed, with `answers`
    /// as `inputResponses`.
    pub fn reply(&self, irr: &InputRequiredResult, answers: Value) -> Self {
        self.clone().resume(irr).answers(answers)
    }

    /// The parsed request.
    ///
    /// # Panics
    /// When the params do not parse (use [`Req::try_build`] to test that).
    pub fn build(&self) -> CarrierRequest {
        self.try_build().expect("test request parses")
    }

    /// The parsed request, or the -32602 the parser gives.
    pub fn try_build(&self) -> Result<CarrierRequest, Error> {
        CarrierRequest::from_params(self.method, Some(&self.params)).map_err(Error::from)
    }

    /// The JSON-RPC body with `id`.
    pub fn body(&self, id: u64) -> Vec<u8> {
        json!({"jsonrpc": "2.0", "id": id, "method": self.method.as_str(), "params": self.params})
            .to_string()
            .into_bytes()
    }
}

/// Runs one round as the anonymous principal.
pub fn run<F>(engine: &Engine, req: &Req, now: Timestamp, handler: F) -> Outcome
where
    F: FnOnce(Round) -> Result<Value, Flow>,
{
    engine.run(req.build(), &Principal::anonymous(), now, handler)
}

/// An accepted form answer.
pub fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

/// A sampling answer with one text block.
pub fn sampled(text: &str) -> Value {
    json!({"role": "assistant", "content": {"type": "text", "text": text},
           "model": "test-model", "stopReason": "endTurn"})
}

/// A roots answer with one root.
pub fn roots_answer() -> Value {
    json!({"roots": [{"uri": "file:///test/root", "name": "Test Root"}]})
}

/// The InputRequiredResult, or a panic naming what came instead.
#[track_caller]
pub fn irr(o: Outcome) -> InputRequiredResult {
    match o {
        Outcome::InputRequired(i) => i,
        other => panic!("expected input_required, got {}: {other:?}", other.label()),
    }
}

/// The complete result, or a panic naming what came instead.
#[track_caller]
pub fn complete(o: Outcome) -> Value {
    match o {
        Outcome::Complete(v) => {
            assert_eq!(v["resultType"], "complete");
            v
        }
        other => panic!("expected complete, got {}: {other:?}", other.label()),
    }
}

/// The tool error result (`isError: true`), or a panic.
#[track_caller]
pub fn tool_error(o: Outcome) -> (Value, Error) {
    match o {
        Outcome::ToolError { result, error } => {
            assert_eq!(result["isError"], true);
            assert_eq!(result["resultType"], "complete");
            (result, error)
        }
        other => panic!("expected tool_error, got {}: {other:?}", other.label()),
    }
}

/// The JSON-RPC error, or a panic.
#[track_caller]
pub fn protocol(o: Outcome) -> Error {
    match o {
        Outcome::Protocol(e) => e,
        other => panic!(
            "expected a JSON-RPC error, got {}: {other:?}",
            other.label()
        ),
    }
}

/// The text of the first content block of a tool result.
pub fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// The keys of an InputRequiredResult's `inputRequests`, in order.
pub fn keys(irr: &InputRequiredResult) -> Vec<String> {
    irr.input_requests()
        .map(|r| r.keys().cloned().collect())
        .unwrap_or_default()
}

/// The JSON of one input request of `irr`.
#[track_caller]
pub fn request_json(irr: &InputRequiredResult, key: &str) -> Value {
    irr.input_requests()
        .and_then(|r| r.get(key))
        .unwrap_or_else(|| panic!("no input request {key:?}"))
        .to_value()
}

/// The elicitation message of one input request of `irr`.
#[track_caller]
pub fn message(irr: &InputRequiredResult, key: &str) -> String {
    request_json(irr, key)["params"]["message"]
        .as_str()
        .expect("an elicitation has a message")
        .to_owned()
}

/// Asserts the frozen requestState error: -32602, fixed message, `data.reason`.
#[track_caller]
pub fn assert_frozen_state_error(e: &Error) {
    assert_eq!(e.code(), -32602, "{e:?}");
    assert_eq!(e.public_message(), "Invalid or expired requestState");
    assert_eq!(
        e.data(),
        Some(&json!({"reason": "invalid_request_state"})),
        "{e:?}"
    );
}

/// The same frozen error as a JSON-RPC response body.
#[track_caller]
pub fn assert_frozen_state_response(v: &Value) {
    assert_eq!(v["error"]["code"], -32602, "{v}");
    assert_eq!(v["error"]["message"], "Invalid or expired requestState");
    assert_eq!(
        v["error"]["data"],
        json!({"reason": "invalid_request_state"})
    );
}

/// The reference server's tools, from the `mrtr` binary (not part of the library).
#[path = "../../src/bin/mrtr/reference.rs"]
mod reference_tools;

/// The reference service on an engine, with its deployment counter.
pub fn reference(engine: Engine) -> (Service, Arc<AtomicU64>) {
    let n = Arc::new(AtomicU64::new(0));
    (reference_tools::service(engine, n.clone()), n)
}

/// A transport context at `now` (stdio-like: no HTTP headers), anonymous.
pub fn ctx(now: Timestamp) -> RequestContext {
    RequestContext {
        principal: Principal::anonymous(),
        now,
        correlation_id: "test".into(),
        http_headers: None,
    }
}

/// Sends one body through `Service::handle` and parses the JSON-RPC response.
#[track_caller]
pub fn call(service: &Service, body: &[u8], now: Timestamp) -> Value {
    let reply = service.handle_sync(body, &ctx(now));
    let text = reply.body.expect("a request gets a response");
    serde_json::from_str(&text).expect("the response is JSON")
}

/// A raw JSON-RPC request body.
pub fn rpc(id: u64, method: &str, params: Value) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        .to_string()
        .into_bytes()
}
