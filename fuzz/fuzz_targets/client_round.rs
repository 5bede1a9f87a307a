//! `client_round`: the client driver against any server responses, through a
//! scripted in-memory transport (no sockets, no timer, no runtime), either
//! through [`Client`] or by driving the sans-IO flow's states ([`Flow`]) by
//! hand, with the same handlers.
//!
//! Invariants, for every input:
//! - nothing panics, and the flow ends (every future is ready at its first polls);
//! - no handler is ever called for an input kind the client did not declare
//!   (form, url, sampling, sampling with tools or context, roots), and the
//!   declared capabilities are exactly the handlers given;
//! - the caps hold: requests per flow, questions answered per round, sampling
//!   requests per flow, bytes of `inputResponses` sent per flow; a round over a
//!   cap (or asking an undeclared kind, or at the round cap) gets no handler call
//!   and no retry;
//! - every retry answers exactly the keys the previous response asked, each with
//!   the asked kind, and echoes its `requestState` exactly (or none when none
//!   came); every request carries the call's method, target and `_meta`, under
//!   a fresh id;
//! - a completion comes only from a `complete` (or untyped) result, after as
//!   many requests as it says.
//!
//! Input: an 8-byte header, then one server response per line:
//!
//! | byte | meaning |
//! |---|---|
//! | 0 | declared: 0x01 form, 0x02 url, 0x04 sampling, 0x08 roots, 0x10 sampling.tools, 0x20 sampling.context; 0x40 manual mode (start/fulfil/resume) |
//! | 1 | questions per round (low 5 bits), answered at once (high 3 bits + 1) |
//! | 2 | sampling per flow (low 5 bits); carrier (bits 5-6: tool, prompt, resource) |
//! | 3 | answer bytes per flow, in units of 32 |
//! | 4 | requests per flow (low 5 bits) |
//! | 5 | answers: bits 0-1 elicitation (accept, decline, cancel, fail), bit 2 sampling fails, bit 3 roots fail, bits 4-7 how many roots |
//! | 6 | answer size: characters of text in each answer, in units of 8 |
//! | 7 | bit 0: drive the flow's states directly (`Flow`, `Sent::on_response`, `Asked::answer`) instead of through `Client` |
//!
//! A line `!JSON` is a result, sent under the request's id; `?` is a transport
//! error; any other line is the whole response (unparsable JSON is a transport
//! error too); when the lines run out, the connection fails.
#![no_main]

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use libfuzzer_sys::fuzz_target;
use mrtr::client::{Flow, Turn};
use mrtr::wire::jsonrpc::RequestId;
use mrtr::wire::{
    CreateMessageResult, ElicitAction, ElicitParams, ElicitResult, ListRootsResult, Root,
};
use mrtr::wire::{InputRequest, InputResponse, InputResponses};
use mrtr_client::{
    BoxFuture, Cap, CarrierCall, Client, ClientError, FlowError, HandlerError, Handlers,
    InputContext, InputHandler, Step, Transport, TransportError,
};
use serde_json::{Value, json};

const FORM: u8 = 0x01;
const URL: u8 = 0x02;
const SAMPLING: u8 = 0x04;
const ROOTS: u8 = 0x08;
const SAMPLING_TOOLS: u8 = 0x10;
const SAMPLING_CONTEXT: u8 = 0x20;
const MANUAL: u8 = 0x40;

/// The configuration the header bytes give.
#[derive(Debug, Clone, Copy)]
struct Config {
    declared: u8,
    manual: bool,
    sans_io: bool,
    questions: usize,
    concurrent: usize,
    sampling: u32,
    carrier: u8,
    answer_bytes: u64,
    rounds: u32,
    behaviour: u8,
    size: usize,
}

impl Config {
    fn parse(h: &[u8; 8]) -> Self {
        let mut declared = h[0] & 0x3f;
        if declared & SAMPLING == 0 {
            // Sub-capabilities of sampling exist only with sampling.
            declared &= !(SAMPLING_TOOLS | SAMPLING_CONTEXT);
        }
        Self {
            declared,
            manual: h[0] & MANUAL != 0,
            sans_io: h[7] & 1 != 0,
            questions: usize::from(h[1] & 0x1f).max(1),
            concurrent: usize::from(h[1] >> 5) + 1,
            sampling: u32::from(h[2] & 0x1f),
            carrier: (h[2] >> 5) & 0b11,
            answer_bytes: u64::from(h[3]) * 32,
            rounds: u32::from(h[4] & 0x1f).max(1),
            behaviour: h[5],
            size: usize::from(h[6]) * 8,
        }
    }

    fn has(&self, bit: u8) -> bool {
        self.declared & bit != 0
    }
}

// ------------------------------------------------------------------ the scripted server

/// Answers request n with line n of the script; records every request.
#[derive(Debug)]
struct Scripted {
    lines: Vec<Vec<u8>>,
    sent: Mutex<Vec<Value>>,
    /// What each request got: the response, or `None` for a transport error.
    got: Mutex<Vec<Option<Value>>>,
}

impl Scripted {
    fn respond(&self, request: &Value) -> Result<Value, TransportError> {
        let n = {
            let mut sent = self.sent.lock().unwrap();
            sent.push(request.clone());
            sent.len() - 1
        };
        let response = match self.lines.get(n).map(Vec::as_slice) {
            None => Err(TransportError::Connection("the script ended".into())),
            Some([b'?', ..]) => Err(TransportError::Connection("scripted failure".into())),
            Some([b'!', rest @ ..]) => serde_json::from_slice::<Value>(rest)
                .map(|result| json!({"jsonrpc": "2.0", "id": request["id"], "result": result}))
                .map_err(|e| TransportError::InvalidResponse(e.to_string())),
            Some(line) => serde_json::from_slice::<Value>(line)
                .map_err(|e| TransportError::InvalidResponse(e.to_string())),
        };
        self.got
            .lock()
            .unwrap()
            .push(response.as_ref().ok().cloned());
        response
    }
}

/// Shared so the checks can read what was sent after the client is done.
#[derive(Debug, Clone)]
struct Transporter(Arc<Scripted>);

impl Transport for Transporter {
    fn send(&self, request: Value) -> BoxFuture<'_, Result<Value, TransportError>> {
        let r = self.0.respond(&request);
        Box::pin(async move { r })
    }
}

// ------------------------------------------------------------------ the counting handlers

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Form,
    Url,
    Sampling,
    Roots,
}

/// One handler call: the round that asked, the key, the kind.
type Calls = Arc<Mutex<Vec<(u32, String, Kind)>>>;

fn handlers(c: Config, calls: &Calls) -> Handlers {
    let mut h = Handlers::new();
    let text = "x".repeat(c.size);
    if c.has(FORM) || c.has(URL) {
        let calls = calls.clone();
        let text = text.clone();
        h = h.on_elicit(move |ctx, params| {
            // Every mode but url is form (the enum is non-exhaustive).
            let kind = match &params {
                ElicitParams::Url(_) => Kind::Url,
                _ => Kind::Form,
            };
            match kind {
                Kind::Form => assert!(c.has(FORM), "a form elicitation reached a url-only client"),
                _ => assert!(
                    c.has(URL),
                    "a url elicitation reached a client without url mode"
                ),
            }
            calls.lock().unwrap().push((ctx.round, ctx.key, kind));
            let action = match c.behaviour & 0b11 {
                0 => ElicitAction::Accept,
                1 => ElicitAction::Decline,
                2 => ElicitAction::Cancel,
                _ => return boxed(Err(HandlerError::Declined)),
            };
            let content = (action == ElicitAction::Accept && kind == Kind::Form)
                .then(|| json!({"note": text}).as_object().cloned())
                .flatten();
            boxed(Ok(ElicitResult { action, content }))
        });
        if c.has(URL) {
            h = if c.has(FORM) {
                h.with_url_mode()
            } else {
                h.without_form_mode()
            };
        }
    }
    if c.has(SAMPLING) {
        let calls = calls.clone();
        let text = text.clone();
        h = h.on_sampling(move |ctx, params| {
            if params.tools.is_some() || params.tool_choice.is_some() {
                assert!(
                    c.has(SAMPLING_TOOLS),
                    "tool sampling reached a client without sampling.tools"
                );
            }
            if params
                .include_context
                .as_deref()
                .is_some_and(|x| x != "none")
            {
                assert!(
                    c.has(SAMPLING_CONTEXT),
                    "includeContext reached a client without sampling.context"
                );
            }
            calls
                .lock()
                .unwrap()
                .push((ctx.round, ctx.key, Kind::Sampling));
            if c.behaviour & 0b100 != 0 {
                return boxed(Err(HandlerError::Failed("model down".into())));
            }
            boxed(Ok(CreateMessageResult {
                role: "assistant".into(),
                content: json!({"type": "text", "text": text}),
                model: "m".into(),
                stop_reason: None,
                meta: None,
            }))
        });
        if c.has(SAMPLING_TOOLS) {
            h = h.with_sampling_tools();
        }
        if c.has(SAMPLING_CONTEXT) {
            h = h.with_sampling_context();
        }
    }
    if c.has(ROOTS) {
        let calls = calls.clone();
        h = h.on_roots(move |ctx| {
            calls
                .lock()
                .unwrap()
                .push((ctx.round, ctx.key, Kind::Roots));
            if c.behaviour & 0b1000 != 0 {
                return boxed(Err(HandlerError::Declined));
            }
            let roots = (0..c.behaviour >> 4)
                .map(|i| Root {
                    uri: format!("file:///r{i}"),
                    name: Some(text.clone()),
                    meta: None,
                })
                .collect();
            boxed(Ok(ListRootsResult { roots }))
        });
    }
    h
}

fn boxed<T: Send + 'static>(v: T) -> std::future::Ready<T> {
    std::future::ready(v)
}

// ------------------------------------------------------------------ driving

/// Polls `f` to completion: nothing here waits on anything (no timer, a transport
/// and handlers that answer at once), so a future still pending after many polls
/// is a hang.
fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..10_000 {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
    panic!("the flow did not finish: a future is pending with nothing to wait for");
}

fn drive(client: &Client, call: CarrierCall, manual: bool) -> Result<u32, ClientError> {
    if !manual {
        return block_on(client.call(call)).map(|c| c.rounds);
    }
    let mut step = block_on(client.start(call))?;
    for _ in 0..64 {
        match step {
            Step::Complete(c) => return Ok(c.rounds),
            Step::NeedsInput(p) => {
                let answers = block_on(client.fulfil(&p))?;
                step = block_on(client.resume(p, answers))?;
            }
            other => panic!("an unknown step {other:?}"),
        }
    }
    panic!("manual flow longer than 64 steps");
}

/// The same flow driven by hand over the flow's states: each request built by
/// [`Ready::request`](mrtr::client::Ready::request) and answered by the script,
/// each question answered by the handlers one at a time.
fn drive_flow(
    client: &Client,
    handler: &Handlers,
    call: CarrierCall,
    script: &Scripted,
) -> Result<u32, ClientError> {
    let mut ready = Flow::start(call, Arc::clone(client.rules()));
    for id in 1..=64 {
        let (sent, request) = ready.request(RequestId::from(id))?;
        let response = script.respond(&request)?;
        ready = match sent.on_response(response)? {
            Turn::Complete(c) => return Ok(c.rounds),
            Turn::Retry { ready, .. } => ready,
            Turn::Ask(asked) => {
                let mut answers = InputResponses::new();
                for (key, ask) in asked.asks() {
                    let ctx = InputContext {
                        key: key.clone(),
                        method: asked.call().method(),
                        target: asked.call().target().to_owned(),
                        round: asked.round(),
                    };
                    let answer = match ask.clone() {
                        InputRequest::Elicit(p) => {
                            block_on(handler.elicit(ctx, p)).map(InputResponse::Elicit)
                        }
                        InputRequest::CreateMessage(p) => block_on(handler.create_message(ctx, p))
                            .map(InputResponse::CreateMessage),
                        InputRequest::ListRoots { .. } => {
                            block_on(handler.list_roots(ctx)).map(InputResponse::ListRoots)
                        }
                        other => panic!("an unknown input request {other:?}"),
                    };
                    let answer = answer.map_err(|source| ClientError::Handler {
                        key: key.clone(),
                        kind: ask.kind(),
                        source,
                    })?;
                    answers.insert(key.clone(), answer);
                }
                asked.answer(answers)?
            }
            // The rules declare no tasks extension: a task is an unknown result type.
            Turn::Task(_) | Turn::TaskAsk(_) => {
                panic!("a task followed by rules without the extension")
            }
        };
    }
    panic!("a flow longer than 64 rounds");
}

// ------------------------------------------------------------------ the checks

fn kind_of(ask: &Value) -> Option<Kind> {
    match ask.get("method")?.as_str()? {
        "elicitation/create" => Some(if ask["params"]["mode"] == "url" {
            Kind::Url
        } else {
            Kind::Form
        }),
        "sampling/createMessage" => Some(Kind::Sampling),
        "roots/list" => Some(Kind::Roots),
        _ => None,
    }
}

/// The result of a response, when it is one.
fn result_of(response: &Option<Value>) -> Option<&Value> {
    response.as_ref()?.get("result")
}

fn check(
    c: Config,
    client: &Client,
    call: &CarrierCall,
    script: &Scripted,
    calls: &[(u32, String, Kind)],
    outcome: &Result<u32, ClientError>,
) {
    let sent = script.sent.lock().unwrap();
    let got = script.got.lock().unwrap();
    let n = sent.len();
    assert!(n >= 1, "nothing was sent");
    assert!(
        n as u64 <= u64::from(c.rounds),
        "{n} requests, cap {}",
        c.rounds
    );

    // What is declared is exactly what has a handler.
    let caps = client.capabilities().to_value();
    assert_eq!(
        caps.get("elicitation").is_some(),
        c.has(FORM) || c.has(URL),
        "{caps}"
    );
    assert_eq!(caps.get("sampling").is_some(), c.has(SAMPLING), "{caps}");
    assert_eq!(caps.get("roots").is_some(), c.has(ROOTS), "{caps}");

    let mut bytes = 0u64;
    for (i, req) in sent.iter().enumerate() {
        assert_eq!(req["jsonrpc"], "2.0");
        assert_eq!(req["id"], json!(i + 1), "ids are fresh and in order");
        assert_eq!(req["method"], call.method().as_str());
        let params = req["params"].as_object().expect("params object");
        for (k, v) in call.params() {
            assert_eq!(params.get(k), Some(v), "the call's params are re-sent");
        }
        assert_eq!(
            params["_meta"]["io.modelcontextprotocol/clientCapabilities"],
            caps
        );
        let answers = params.get("inputResponses");
        if let Some(a) = answers {
            bytes += serde_json::to_vec(a).expect("serializes").len() as u64;
        }
        if i == 0 {
            assert!(answers.is_none() && params.get("requestState").is_none());
            continue;
        }
        // A retry: the previous response was an InputRequiredResult.
        let prev = result_of(&got[i - 1]).expect("a retry follows a result");
        assert_eq!(prev["resultType"], "input_required", "retry after {prev}");
        assert_eq!(
            params.get("requestState"),
            prev.get("requestState"),
            "requestState echoed exactly"
        );
        let asked = prev
            .get("inputRequests")
            .and_then(Value::as_object)
            .filter(|m| !m.is_empty());
        match (asked, answers) {
            (None, None) => {}
            (Some(asked), Some(a)) => {
                let a = a.as_object().expect("inputResponses is an object");
                assert!(a.keys().eq(asked.keys()), "answered other keys than asked");
                for (k, ask) in asked {
                    let answer = &a[k];
                    let field = match kind_of(ask).expect("an accepted ask has a kind") {
                        Kind::Form | Kind::Url => "action",
                        Kind::Sampling => "role",
                        Kind::Roots => "roots",
                    };
                    assert!(answer.get(field).is_some(), "{k}: {answer} for {ask}");
                }
            }
            (asked, a) => panic!("asked {asked:?}, answered {a:?}"),
        }
    }
    assert!(
        bytes <= c.answer_bytes,
        "{bytes} answer bytes sent, cap {}",
        c.answer_bytes
    );

    // Handler calls: only for keys the round asked, of that kind, within the caps.
    let mut per_round: BTreeMap<u32, usize> = BTreeMap::new();
    let mut sampling = 0u32;
    for (round, key, kind) in calls {
        let r = *round as usize;
        assert!(r >= 1 && r <= n, "a call for round {round} of {n}");
        let asks = result_of(&got[r - 1])
            .and_then(|x| x.get("inputRequests"))
            .and_then(Value::as_object)
            .expect("a call answers a round that asked");
        let ask = asks.get(key).expect("a call answers a key that was asked");
        assert_eq!(kind_of(ask), Some(*kind), "{key}: {ask}");
        *per_round.entry(*round).or_default() += 1;
        if *kind == Kind::Sampling {
            sampling += 1;
        }
    }
    for (round, count) in &per_round {
        assert!(
            *count <= c.questions,
            "round {round}: {count} questions answered, cap {}",
            c.questions
        );
    }
    assert!(
        sampling <= c.sampling,
        "{sampling} sampling calls, cap {}",
        c.sampling
    );

    // The round that ended the flow: nothing answered when a cap refused it.
    let last = u32::try_from(n).unwrap();
    let answered_last = calls.iter().any(|(r, _, _)| *r == last);
    match outcome {
        Ok(rounds) => {
            assert_eq!(*rounds, last);
            let r = result_of(&got[n - 1]).expect("completed by a result");
            assert!(
                r.get("resultType").is_none() || r["resultType"] == "complete",
                "completed by {r}"
            );
        }
        Err(ClientError::Flow(FlowError::CapExceeded { cap, limit })) => match cap {
            Cap::QuestionsPerRound => {
                assert_eq!(*limit, c.questions as u64);
                assert!(!answered_last, "a round over the question cap was answered");
            }
            Cap::SamplingPerFlow => {
                assert_eq!(*limit, u64::from(c.sampling));
                assert!(!answered_last, "a round over the sampling cap was answered");
            }
            Cap::AnswerBytes => assert_eq!(*limit, c.answer_bytes),
            other => panic!("unexpected cap {other:?}"),
        },
        Err(ClientError::Flow(FlowError::UndeclaredInput { .. })) => {
            assert!(
                !answered_last,
                "a round asking an undeclared kind was answered"
            );
        }
        Err(ClientError::Flow(FlowError::MaxRounds { rounds })) => {
            assert_eq!(*rounds, c.rounds);
            assert_eq!(*rounds, last);
            assert!(!answered_last, "a round past the round cap was answered");
        }
        Err(_) => {}
    }
}

// ------------------------------------------------------------------ seeds

const FORM_ASK: &str = r#"{"method":"elicitation/create","params":{"message":"Note?","requestedSchema":{"type":"object","properties":{"note":{"type":"string"}}}}}"#;
const URL_ASK: &str = r#"{"method":"elicitation/create","params":{"mode":"url","message":"Sign in","url":"https://auth.example/x"}}"#;
const SAMPLING_ASK: &str = r#"{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":5}}"#;
const TOOLS_ASK: &str = r#"{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":5,"tools":[{"name":"t","inputSchema":{"type":"object"}}],"includeContext":"thisServer"}}"#;
const ROOTS_ASK: &str = r#"{"method":"roots/list"}"#;
const DONE: &str = r#"!{"resultType":"complete","content":[{"type":"text","text":"done"}]}"#;

fn irr(state: Option<&str>, asks: &[(&str, &str)]) -> String {
    let mut s = String::from(r#"!{"resultType":"input_required""#);
    if let Some(t) = state {
        s += &format!(r#","requestState":"{t}""#);
    }
    if !asks.is_empty() {
        let body: Vec<String> = asks.iter().map(|(k, a)| format!(r#""{k}":{a}"#)).collect();
        s += &format!(r#","inputRequests":{{{}}}"#, body.join(","));
    }
    s + "}"
}

/// The seed corpus: a header (see the module docs) and response lines.
fn seed_inputs() -> Vec<(&'static str, Vec<u8>)> {
    // Every kind declared, default-like caps, accept, one root, 8-character answers.
    let all = [0x3f, 0x70, 0x10, 0xff, 0x11, 0x10, 0x01, 0];
    let seed = |header: [u8; 8], lines: &[String]| {
        let mut v = header.to_vec();
        v.extend_from_slice(lines.join("\n").as_bytes());
        v
    };
    let done = DONE.to_owned();
    let many: Vec<(String, &str)> = (0..20).map(|i| (format!("q{i}"), SAMPLING_ASK)).collect();
    let many: Vec<(&str, &str)> = many.iter().map(|(k, a)| (k.as_str(), *a)).collect();
    vec![
        ("all-kinds", seed(all, &[irr(Some("s1"), &[("f", FORM_ASK), ("s", SAMPLING_ASK), ("r", ROOTS_ASK)]), done.clone()])),
        ("url", seed(all, &[irr(Some("s1"), &[("u", URL_ASK)]), done.clone()])),
        ("state-only", seed(all, &[irr(Some("s1"), &[]), irr(Some("s2"), &[("f", FORM_ASK)]), done.clone()])),
        ("two-rounds-manual", seed([0x7f, 0x70, 0x10, 0xff, 0x11, 0x10, 0x01, 0], &[irr(Some("a"), &[("f", FORM_ASK)]), irr(None, &[("s", SAMPLING_ASK), ("r", ROOTS_ASK)]), done.clone()])),
        ("too-many-questions", seed(all, &[irr(Some("s"), &many), done.clone()])),
        ("sampling-cap", seed([0x3f, 0x70, 0x02, 0xff, 0x11, 0, 0, 0], &[irr(Some("a"), &[("s1", SAMPLING_ASK), ("s2", SAMPLING_ASK)]), irr(Some("b"), &[("s3", SAMPLING_ASK)]), done.clone()])),
        ("undeclared-roots", seed([0x01, 0x70, 0x10, 0xff, 0x11, 0, 0, 0], &[irr(Some("s"), &[("f", FORM_ASK), ("r", ROOTS_ASK)]), done.clone()])),
        ("url-only-gets-form", seed([0x02, 0x70, 0x10, 0xff, 0x11, 0, 0, 0], &[irr(Some("s"), &[("f", FORM_ASK)]), done.clone()])),
        ("tools-sampling-undeclared", seed([0x05, 0x70, 0x10, 0xff, 0x11, 0, 0, 0], &[irr(Some("s"), &[("t", TOOLS_ASK)]), done.clone()])),
        ("tools-sampling-declared", seed(all, &[irr(Some("s"), &[("t", TOOLS_ASK)]), done.clone()])),
        ("answer-bytes-cap", seed([0x3f, 0x70, 0x10, 0x02, 0x11, 0xf0, 0x20, 0], &[irr(Some("s"), &[("f", FORM_ASK), ("r", ROOTS_ASK)]), done.clone()])),
        ("round-cap", seed([0x3f, 0x70, 0x10, 0xff, 0x02, 0, 0, 0], &[irr(Some("a"), &[("f", FORM_ASK)]), irr(Some("b"), &[("f", FORM_ASK)]), done.clone()])),
        ("decline-and-fail", seed([0x3f, 0x70, 0x10, 0xff, 0x11, 0x0d, 0, 0], &[irr(Some("s"), &[("f", FORM_ASK), ("s", SAMPLING_ASK), ("r", ROOTS_ASK)]), done.clone()])),
        ("prompt", seed([0x3f, 0x70, 0x30, 0xff, 0x11, 0x10, 0x01, 0], &[irr(Some("s"), &[("f", FORM_ASK)]), r#"!{"description":"d","messages":[]}"#.to_owned()])),
        ("resource", seed([0x3f, 0x70, 0x50, 0xff, 0x11, 0x10, 0x01, 0], &[irr(Some("s"), &[("r", ROOTS_ASK)]), r#"!{"resultType":"complete","contents":[]}"#.to_owned()])),
        ("error", seed(all, &[r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}"#.to_owned()])),
        ("null-id-error", seed(all, &[irr(Some("s"), &[("f", FORM_ASK)]), r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#.to_owned()])),
        ("wrong-id", seed(all, &[r#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete"}}"#.to_owned()])),
        ("unknown-result-type", seed(all, &[r#"!{"resultType":"later"}"#.to_owned()])),
        ("empty-state", seed(all, &[irr(Some(""), &[("f", FORM_ASK)]), done.clone()])),
        ("transport-error", seed(all, &[irr(Some("s"), &[("f", FORM_ASK)]), "?".to_owned()])),
        ("not-json", seed(all, &["{\"jsonrpc\":".to_owned()])),
        ("sans-io-all-kinds", seed([0x3f, 0x70, 0x10, 0xff, 0x11, 0x10, 0x01, 1], &[irr(Some("s1"), &[("f", FORM_ASK), ("s", SAMPLING_ASK), ("r", ROOTS_ASK)]), irr(Some("s2"), &[]), done.clone()])),
        ("sans-io-caps", seed([0x3f, 0x70, 0x02, 0x02, 0x02, 0xf0, 0x20, 1], &[irr(Some("a"), &[("s1", SAMPLING_ASK), ("s2", SAMPLING_ASK), ("s3", SAMPLING_ASK)]), done.clone()])),
    ]
}

/// `CLIENT_ROUND_SEEDS=DIR` writes the seed corpus to DIR on the first input:
/// `CLIENT_ROUND_SEEDS=fuzz/corpus/client_round cargo +nightly fuzz run client_round -- -runs=1`.
fn write_seeds() {
    static DONE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        if let Some(dir) = std::env::var_os("CLIENT_ROUND_SEEDS") {
            let dir = std::path::PathBuf::from(dir);
            std::fs::create_dir_all(&dir).expect("seed directory");
            for (name, bytes) in seed_inputs() {
                std::fs::write(dir.join(format!("seed-{name}")), bytes).expect("seed written");
            }
        }
    });
}

/// `CLIENT_ROUND_PRINT=1` prints how each flow ended (to see what a corpus reaches).
fn print() -> bool {
    static P: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *P.get_or_init(|| std::env::var_os("CLIENT_ROUND_PRINT").is_some())
}

fuzz_target!(|data: &[u8]| {
    write_seeds();
    let Some((header, rest)) = data.split_first_chunk::<8>() else {
        return;
    };
    let c = Config::parse(header);
    let script = Arc::new(Scripted {
        lines: rest.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect(),
        sent: Mutex::default(),
        got: Mutex::default(),
    });
    let calls: Calls = Arc::default();
    let handler = handlers(c, &calls);
    let client = Client::builder(Transporter(script.clone()))
        .with_handler(handler.clone())
        .no_timer()
        .with_max_rounds(c.rounds)
        .with_max_questions_per_round(c.questions)
        .with_max_concurrent_answers(c.concurrent)
        .with_max_sampling_per_flow(c.sampling)
        .with_max_answer_bytes(c.answer_bytes)
        .build();
    let call = match c.carrier {
        0 | 3 => CarrierCall::tool("t", json!({"a": 1})),
        1 => CarrierCall::prompt("p", json!({"topic": "x"})),
        _ => CarrierCall::resource("r://x"),
    };
    let outcome = if c.sans_io {
        drive_flow(&client, &handler, call.clone(), &script)
    } else {
        drive(&client, call.clone(), c.manual)
    };
    let calls = calls.lock().unwrap().clone();
    if print() {
        eprintln!(
            "FLOW {} requests, {} handler calls: {outcome:?}",
            script.sent.lock().unwrap().len(),
            calls.len()
        );
    }
    check(c, &client, &call, &script, &calls, &outcome);
});
