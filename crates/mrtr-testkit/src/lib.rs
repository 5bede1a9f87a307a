//! The helpers the workspace's tests share; never published (`publish = false`,
//! a path-only dev-dependency of every crate, which `cargo package` drops).
//!
//! At the root: a fake clock (explicit [`Timestamp`]s from [`T0`], never the
//! system clock), fixed key rings, request builders, outcome matchers, and the
//! JSON-RPC messages as values. [`fixtures`] names the reference server's
//! fixtures (their handlers ship in `mrtr_cli::reference`, which `mrtr serve`
//! runs), [`http`] is raw HTTP/1.1 (no client library, so tests can send
//! malformed or unusual headers), and [`process`] holds what the tests that spawn
//! a server read from the process. Every module is also re-exported at the root,
//! so `use mrtr_testkit::*` brings all of it.
//!
//! Tests only: helpers panic on what they do not expect.
#![forbid(unsafe_code)]
#![allow(clippy::unwrap_used, clippy::missing_panics_doc)]
// why: test helpers; a panic is how they report what they did not expect.

pub mod fixtures;
pub mod http;
pub mod process;

pub use fixtures::*;
pub use http::*;
pub use process::*;

use std::future::Future;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll, Waker};

use mrtr::Timestamp;
use mrtr::engine::{Engine, Flow, Outcome, Round};
use mrtr::error::Error;
use mrtr::principal::Principal;
use mrtr::seal::Keyring;
use mrtr::service::{RequestContext, Service};
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

/// The protocol version every request here speaks.
pub const PROTOCOL: &str = "2026-07-28";

/// Every input capability: form and url elicitation, sampling and roots, so every
/// fixture and demo can ask what it asks.
pub fn all_caps() -> Value {
    json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {"listChanged": true}})
}

/// The per-request `_meta`: the protocol version, `clientInfo`, and `caps`.
pub fn meta(caps: &Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": PROTOCOL,
        "io.modelcontextprotocol/clientInfo": {"name": "mrtr-tests", "version": "0.0.0"},
        "io.modelcontextprotocol/clientCapabilities": caps,
    })
}

/// A carrier request under construction.
#[derive(Debug, Clone)]
pub struct Req {
    /// The carrier method (`tools/call`, `prompts/get`, `resources/read`).
    pub method: CarrierMethod,
    /// The request's `params`, `_meta` included.
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

/// A count an async handler can share (`Send`, unlike a `Cell`): how often a
/// step ran.
#[derive(Debug, Default)]
pub struct Counter(std::sync::atomic::AtomicU32);

impl Counter {
    /// A counter starting at `n`.
    pub fn new(n: u32) -> Self {
        Self(std::sync::atomic::AtomicU32::new(n))
    }
    /// The count now.
    pub fn get(&self) -> u32 {
        self.0.load(Ordering::SeqCst)
    }
    /// Sets the count to `n`.
    pub fn set(&self, n: u32) {
        self.0.store(n, Ordering::SeqCst);
    }
}

/// Runs one round as the anonymous principal; the outcome with its result as
/// the JSON-RPC result object.
pub fn run<T, F>(engine: &Engine, req: &Req, now: Timestamp, handler: F) -> Outcome
where
    T: mrtr::engine::CarrierResult,
    F: FnOnce(Round) -> Result<T, Flow>,
{
    engine
        .run(req.build(), &Principal::anonymous(), now, handler)
        .into_json()
}

/// Runs one round as `who` with a handler of the request's own carrier, made
/// from `f`'s text (a tool's text block, a prompt's user message, a resource's
/// text): for the tests that run one handler body on every carrier.
pub fn run_as<F>(engine: &Engine, req: &Req, who: &Principal, now: Timestamp, f: F) -> Outcome
where
    F: FnOnce(Round) -> Result<String, Flow>,
{
    let r = req.build();
    match req.method {
        CarrierMethod::ToolsCall => engine
            .run(r, who, now, |round| f(round).map(mrtr::ToolResult::text))
            .into_json(),
        CarrierMethod::PromptsGet => engine
            .run(r, who, now, |round| {
                f(round).map(|t| mrtr::PromptResult::new().user_text(t))
            })
            .into_json(),
        CarrierMethod::ResourcesRead => engine
            .run(r, who, now, |round| {
                f(round).map(|t| mrtr::ResourceResult::text("mrtr://r", "text/plain", t))
            })
            .into_json(),
    }
}

/// [`run_as`] as the anonymous principal.
pub fn run_text<F>(engine: &Engine, req: &Req, now: Timestamp, f: F) -> Outcome
where
    F: FnOnce(Round) -> Result<String, Flow>,
{
    run_as(engine, req, &Principal::anonymous(), now, f)
}

/// Asks the user's name (`user_name`), then greets them: the greeting flow
/// several tests run.
pub fn ask_name(r: &Round) -> Result<mrtr::ToolResult, Flow> {
    match r.elicit(
        "user_name",
        mrtr::Form::new("What is your name?").string("name", "Name"),
    )? {
        mrtr::Elicited::Accepted(f) => Ok(mrtr::ToolResult::text(format!(
            "Hello, {}!",
            f.str("name").unwrap_or_default()
        ))),
        _ => Ok(mrtr::ToolResult::text("No name given.")),
    }
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

/// A roots answer listing `list`.
pub fn roots(list: Value) -> Value {
    json!({"roots": list})
}

/// A roots answer with one root.
pub fn roots_answer() -> Value {
    roots(json!([{"uri": "file:///test/root", "name": "Test Root"}]))
}

/// The InputRequiredResult, or a panic naming what came instead.
#[track_caller]
pub fn irr(o: impl Into<Outcome>) -> InputRequiredResult {
    match o.into() {
        Outcome::InputRequired(i) => i,
        other => panic!("expected input_required, got {}: {other:?}", other.label()),
    }
}

/// The complete result, or a panic naming what came instead.
#[track_caller]
pub fn complete(o: impl Into<Outcome>) -> Value {
    match o.into() {
        Outcome::Complete(v) => {
            assert_eq!(v["resultType"], "complete");
            v
        }
        other => panic!("expected complete, got {}: {other:?}", other.label()),
    }
}

/// The tool error result (`isError: true`), or a panic.
#[track_caller]
pub fn tool_error(o: impl Into<Outcome>) -> (Value, Error) {
    match o.into() {
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
pub fn protocol(o: impl Into<Outcome>) -> Error {
    match o.into() {
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

/// The same frozen error as a JSON-RPC response: -32602, the fixed message and
/// exactly `{"reason": "invalid_request_state"}` as data.
#[track_caller]
pub fn assert_frozen_state_response(v: &Value) {
    let e = rpc_error(v, -32602);
    assert_eq!(e["message"], "Invalid or expired requestState", "{v}");
    assert_eq!(e["data"], json!({"reason": "invalid_request_state"}), "{v}");
}

/// A transport context at `now` (stdio-like: no HTTP headers), anonymous.
pub fn ctx(now: Timestamp) -> RequestContext {
    RequestContext {
        principal: Principal::anonymous(),
        now,
        correlation_id: "test".into(),
        peer: None,
        trace: None,
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

// ---------------------------------------------------------------------------
// JSON-RPC messages as values: the requests a client sends and what its replies
// hold, for the tests that speak the wire (in process or over a socket).
// ---------------------------------------------------------------------------

/// The parameter naming a carrier's target (`uri` for resources/read).
pub fn target_param(method: &str) -> &'static str {
    if method == "resources/read" {
        "uri"
    } else {
        "name"
    }
}

/// A first-round carrier request (`tools/call`, `prompts/get`, `resources/read`)
/// declaring [`all_caps`].
pub fn carrier(id: u64, method: &str, target: &str, arguments: Option<Value>) -> Value {
    let mut params = json!({"_meta": meta(&all_caps())});
    params[target_param(method)] = json!(target);
    if let Some(a) = arguments {
        params["arguments"] = a;
    }
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The retry of `first`: a new id, the same params plus `inputResponses`
/// (omitted when `None`) and the echoed `requestState`.
pub fn retry(first: &Value, id: u64, responses: Option<Value>, state: &str) -> Value {
    let mut r = first.clone();
    r["id"] = json!(id);
    match responses {
        Some(resp) => r["params"]["inputResponses"] = resp,
        None => {
            if let Some(p) = r["params"].as_object_mut() {
                p.remove("inputResponses");
            }
        }
    }
    r["params"]["requestState"] = json!(state);
    r
}

/// A first-round `tools/call` declaring [`all_caps`].
pub fn tool_call(id: u64, name: &str, arguments: Option<Value>) -> Value {
    carrier(id, "tools/call", name, arguments)
}

/// The `result` of a successful reply (panics on an error reply).
#[track_caller]
pub fn result(v: &Value) -> &Value {
    assert!(v.get("error").is_none(), "expected a result: {v}");
    &v["result"]
}

/// The `requestState` of an `InputRequiredResult` reply.
#[track_caller]
pub fn state_of(v: &Value) -> String {
    let r = result(v);
    assert_eq!(r["resultType"], "input_required", "{v}");
    r["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("no requestState: {v}"))
        .to_owned()
}

/// The keys of an `InputRequiredResult` reply's `inputRequests`, in order.
pub fn asked_keys(v: &Value) -> Vec<String> {
    result(v)["inputRequests"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

/// The text of the first content block of a tool result reply.
#[track_caller]
pub fn tool_text(v: &Value) -> String {
    result(v)["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text content: {v}"))
        .to_owned()
}

/// Asserts a complete, successful tool result reply and returns its text.
#[track_caller]
pub fn complete_text(v: &Value) -> String {
    let r = result(v);
    assert_eq!(r["resultType"], "complete", "{v}");
    assert_ne!(r["isError"], true, "{v}");
    tool_text(v)
}

/// Asserts a tool error reply (`isError: true`, resultType complete) and returns its text.
#[track_caller]
pub fn tool_error_text(v: &Value) -> String {
    let r = result(v);
    assert_eq!(r["resultType"], "complete", "{v}");
    assert_eq!(r["isError"], true, "{v}");
    tool_text(v)
}

/// Asserts a JSON-RPC error reply with `code` and returns the `error` object.
#[track_caller]
pub fn rpc_error(v: &Value, code: i64) -> &Value {
    assert_eq!(v["jsonrpc"], "2.0", "{v}");
    assert_eq!(v["error"]["code"], code, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{v}"
    );
    assert!(v.get("result").is_none(), "{v}");
    &v["error"]
}

/// The output of a future that completes on its first poll (the reference
/// handlers are synchronous and no deadline is set, so the service never waits).
#[track_caller]
pub fn ready<F: Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("the service waited, but no handler here ever does"),
    }
}
