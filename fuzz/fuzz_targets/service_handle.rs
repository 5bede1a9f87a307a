//! `service_handle`: any bytes as one message through `Service::handle_sync`, with a
//! fixed key, a fixed clock and a fixed entropy source (so every input replays
//! exactly).
//!
//! Invariants, for every input:
//! - nothing panics (a handler panic would abort here: libFuzzer's panic hook);
//! - the reply is none only for a notification (status 202), else exactly one
//!   JSON-RPC 2.0 response object: `jsonrpc: "2.0"`, the request's `id` (none
//!   or null on an error when it could not be read), exactly one of `result` and `error`, an
//!   error with an integer `code` from the error model and a string `message`;
//! - the status the Streamable HTTP mapping gives is never 5xx, and agrees with
//!   the body (200 a result, 404 -32601, 400 any other error);
//! - no plaintext state leaves: every handler stores [`MARKER`] in its sealed
//!   round data and `once` results, and the marker never appears in a reply
//!   unless the input itself carried it; every `requestState` in a reply opens
//!   (tag checked) under the service's key ring.
//!
//! Two input modes, chosen by the first byte:
//! - a JSON-ish first byte (anything but a control character other than
//!   whitespace): the whole input is the message body, sent as is (the seed
//!   corpus holds real requests, including second rounds with valid states);
//! - a control byte (0x00..=0x1f but `\t`, `\n`, `\r`): the rest is read with
//!   `arbitrary` into a structured message: a resume of a flow whose first round
//!   was sealed at start-up (its state exact, tampered, cut or swapped; answers
//!   good, wrong or malformed), or a free request over every method; with or
//!   without matching Streamable HTTP headers, as another principal, or later.
//!
//! `SERVICE_HANDLE_SEEDS=DIR` writes the seed requests to DIR (as JSON files) on
//! the first input: `SERVICE_HANDLE_SEEDS=fuzz/corpus/service_handle cargo +nightly
//! fuzz run service_handle -- -runs=1`.
#![no_main]

use mrtr::{PromptDefinition, ResourceDefinition};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use mrtr::Timestamp;
use mrtr::engine::{Elicited, Engine, Flow, Form, RootsAsk, Round, Sampling, UrlVisit};
use mrtr::error::{Retry, ToolAdvice};
use mrtr::principal::Principal;
use mrtr::seal::{Entropy, Keyring, UntrustedState};
use mrtr::service::{ParsedMessage, Reply, RequestContext, Service};
use mrtr::streamable_http::{McpHeaders, check_headers};
use mrtr::wire::CarrierMethod;
use mrtr::{PromptResult, ResourceResult, ToolResult};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

const SECRET: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";
const AUDIENCE: &str = "https://fuzz.example";
const PROTOCOL: &str = "2026-07-28";
/// The fixed clock.
const T0: Timestamp = Timestamp::from_unix_secs(1_800_000_000);
/// Stored in every handler's sealed data: never in a reply. Spaces and `!` are
/// outside base64url, so no token can contain it by chance.
const MARKER: &str = "mrtr fuzz plaintext state!";

// ------------------------------------------------------------------ fixed entropy

/// Draws so far in this input; reset to 0 before each input, so a replayed
/// input seals the same bytes.
static DRAWS: AtomicU64 = AtomicU64::new(0);

/// A counter through splitmix64: NOT random, for reproducible fuzzing only.
#[derive(Debug)]
struct FixedEntropy;

impl Entropy for FixedEntropy {
    fn fill(&self, dest: &mut [u8]) {
        for chunk in dest.chunks_mut(8) {
            let mut z = DRAWS
                .fetch_add(1, Ordering::Relaxed)
                .wrapping_add(0x9e37_79b9_7f4a_7c15);
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
        }
    }
}

// ------------------------------------------------------------------ the service

/// What every handler carries between rounds: the marker, sealed.
#[derive(Debug, Serialize, Deserialize)]
struct Carry {
    marker: String,
    step: u32,
}

fn carry(r: &Round, step: u32) -> Result<(), Flow> {
    r.set_data(&Carry {
        marker: MARKER.to_owned(),
        step,
    })
    .map_err(Flow::Fail)
}

/// The sealed data, when the round resumes a state: it must hold the marker.
fn carried(r: &Round) -> Result<Option<u32>, Flow> {
    let c = r.data::<Carry>()?;
    if let Some(c) = &c {
        assert_eq!(c.marker, MARKER, "sealed data came back changed");
    }
    Ok(c.map(|c| c.step))
}

/// A side effect whose sealed result is the marker.
fn effect(r: &Round) -> Result<(), Flow> {
    let m: String = r.once("effect", || Ok(MARKER.to_owned()))?;
    assert_eq!(m, MARKER, "sealed once result came back changed");
    Ok(())
}

fn greet(r: Round) -> Result<mrtr::ToolResult, Flow> {
    carried(&r)?;
    carry(&r, 1)?;
    let name = r.elicit(
        "name",
        Form::new("Your name?")
            .field(
                "name",
                mrtr::wire::PrimitiveSchema::from_value(
                    &json!({"type": "string", "minLength": 1, "maxLength": 16}),
                )
                .expect("valid schema"),
                true,
            )
            .integer("age", "Age", Some(0), Some(130)),
    )?;
    effect(&r)?;
    Ok(ToolResult::text(
        match name.accepted().and_then(|f| f.str("name")) {
            Some(n) => format!("Hello, {n}!"),
            None => "Hello!".to_owned(),
        },
    ))
}

fn plan(r: Round) -> Result<mrtr::ToolResult, Flow> {
    let before = carried(&r)?;
    let first = r.elicit(
        "kind",
        Form::new("What kind of trip?")
            .titled_one_of(
                "kind",
                [
                    ("city", "City"),
                    ("beach", "Beach"),
                    ("mountains", "Mountains"),
                ],
            )
            .integer("travellers", "Travellers", Some(1), Some(12)),
    )?;
    let Some(f) = first.accepted() else {
        return Ok(ToolResult::text("No trip."));
    };
    let kind = f.str("kind").unwrap_or("city").to_owned();
    if before.is_some_and(|step| step != 2) {
        panic!("plan resumed from another step: {before:?}");
    }
    carry(&r, 2)?;
    // Run before the last question, so its result is sealed into the state too.
    effect(&r)?;
    let detail = match kind.as_str() {
        "beach" => r.elicit("surf", Form::new("Surfboard?").boolean("surf", "Surf"))?,
        "mountains" => r.elicit(
            "activity",
            Form::new("Ski or hike?").one_of("activity", ["ski", "hike"]),
        )?,
        _ => r.elicit("city", Form::new("Which city?").string("city", "City"))?,
    };
    Ok(ToolResult::text(format!(
        "{kind}: {}",
        detail.accepted().is_some()
    )))
}

fn ask_all(r: Round) -> Result<mrtr::ToolResult, Flow> {
    carried(&r)?;
    carry(&r, 1)?;
    let form = r.elicit(
        "form",
        Form::new("A note?").string("note", "Note").optional(),
    );
    let model = r.sample(
        "model",
        Sampling::prompt("Say hello.", 20).system("Be brief."),
    );
    let roots = r.roots("roots", RootsAsk::new().optional());
    let (form, model, roots) = (form?, model?, roots?);
    Ok(ToolResult::text(format!(
        "{} {} {}",
        form.accepted().is_some(),
        model.map(|m| m.text().len()).unwrap_or_default(),
        roots.map_or(0, |x| x.len())
    )))
}

fn sign_in(r: Round) -> Result<mrtr::ToolResult, Flow> {
    carried(&r)?;
    carry(&r, 1)?;
    match r.visit(
        "sign_in",
        UrlVisit::new("Sign in.", "https://auth.example/connect"),
    )? {
        Elicited::Accepted(_) => Ok(ToolResult::text("signed in")),
        _ => Err(Flow::failed(ToolAdvice::new(
            "The user did not sign in",
            Retry::DoesNotHelp,
        ))),
    }
}

fn slow(r: Round) -> Result<mrtr::ToolResult, Flow> {
    if carried(&r)?.is_none() {
        carry(&r, 1)?;
        return Err(Flow::StateOnly);
    }
    Ok(ToolResult::text("ready"))
}

#[derive(Deserialize)]
struct DeployArgs {
    service: String,
    #[serde(default)]
    replicas: Option<u8>,
}

fn deploy(r: Round) -> Result<mrtr::ToolResult, Flow> {
    let args: DeployArgs = r.arguments()?;
    carried(&r)?;
    carry(&r, 1)?;
    let ok = r.confirm(
        "confirm",
        format!("Deploy {} x{}?", args.service, args.replicas.unwrap_or(1)),
    )?;
    if ok != mrtr::engine::Confirmation::Accepted {
        return Err(Flow::failed(ToolAdvice::new(
            "Not confirmed",
            Retry::DoesNotHelp,
        )));
    }
    effect(&r)?;
    Ok(ToolResult::text(format!("deployed {}", args.service)))
}

fn brief(r: Round) -> Result<mrtr::PromptResult, Flow> {
    carried(&r)?;
    carry(&r, 1)?;
    let c = r.elicit(
        "context",
        Form::new("Context?").string("context", "Context"),
    )?;
    Ok(PromptResult::new().description("brief").user_text(
        c.accepted()
            .and_then(|f| f.str("context"))
            .unwrap_or("none")
            .to_owned(),
    ))
}

fn note(r: Round) -> Result<mrtr::ResourceResult, Flow> {
    carried(&r)?;
    carry(&r, 1)?;
    match r.confirm("reveal", "Reveal the note?")? {
        mrtr::engine::Confirmation::Accepted => {
            Ok(ResourceResult::text("fz://note", "text/plain", "the note"))
        }
        _ => Err(Flow::failed(ToolAdvice::new(
            "Not revealed",
            Retry::DoesNotHelp,
        ))),
    }
}

fn object(props: Value) -> Value {
    json!({"type": "object", "properties": props})
}

fn build() -> Service {
    let ring = Keyring::parse_keys(SECRET).expect("valid key");
    let engine = Engine::with_entropy(ring, AUDIENCE, std::sync::Arc::new(FixedEntropy));
    Service::new(engine, "fuzz", "0")
        .with_instructions("A service for fuzzing.")
        .tool("echo", "Echoes.", object(json!({})), |r| {
            let t = r.argument("text").and_then(Value::as_str).unwrap_or("");
            Ok(ToolResult::text(t.to_owned()))
        })
        .tool("greet", "Asks a name.", object(json!({})), greet)
        .tool("plan", "Two rounds.", object(json!({})), plan)
        .tool("ask_all", "Form, sampling, roots.", object(json!({})), ask_all)
        .tool("sign_in", "URL mode.", object(json!({})), sign_in)
        .tool("slow", "State only.", object(json!({})), slow)
        .tool(
            "deploy",
            "Typed arguments, confirm.",
            json!({"type": "object", "properties": {"service": {"type": "string"}}, "required": ["service"]}),
            deploy,
        )
        .prompt(
PromptDefinition::new("brief").description("Asks context.").argument("topic", "Topic", false), brief)
        .resource(
ResourceDefinition::new("fz://note", "note").description("Confirm first.").mime_type("text/plain"), note)
}

/// One flow sealed at start-up: the request and the state its round came with.
#[derive(Debug)]
struct Scenario {
    method: &'static str,
    params: Map<String, Value>,
    token: String,
    keys: Vec<String>,
}

struct World {
    service: Service,
    scenarios: Vec<Scenario>,
    /// Seed bodies (JSON) for the corpus.
    seeds: Vec<(String, Vec<u8>)>,
}

fn ctx(principal: bool, now: Timestamp) -> RequestContext {
    RequestContext {
        principal: if principal {
            Principal::subject("alice")
        } else {
            Principal::anonymous()
        },
        now,
        correlation_id: "fuzz".into(),
        peer: None,
        trace: None,
    }
}

fn caps_value(bits: u8) -> Value {
    let mut c = Map::new();
    if bits & 0b11 != 0 {
        let mut e = Map::new();
        if bits & 0b01 != 0 {
            e.insert("form".into(), json!({}));
        }
        if bits & 0b10 != 0 {
            e.insert("url".into(), json!({}));
        }
        c.insert("elicitation".into(), Value::Object(e));
    }
    if bits & 0b100 != 0 {
        c.insert("sampling".into(), json!({}));
    }
    if bits & 0b1000 != 0 {
        c.insert("roots".into(), json!({}));
    }
    Value::Object(c)
}

const ALL_CAPS: u8 = 0b1111;
const VERSIONS: [&str; 4] = [PROTOCOL, "2025-11-25", "", "2026-07-29"];

fn meta(caps: u8, version: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": caps_value(caps),
    })
}

fn request(id: Value, method: &str, params: Option<Value>) -> Value {
    let mut o = Map::new();
    o.insert("jsonrpc".into(), "2.0".into());
    if !id.is_null() {
        o.insert("id".into(), id);
    }
    o.insert("method".into(), method.into());
    if let Some(p) = params {
        o.insert("params".into(), p);
    }
    Value::Object(o)
}

/// A well-formed answer under `key`: variant `n` picks valid, edge and invalid values.
fn good_answer(key: &str, n: u8) -> Value {
    let accept = |c: Value| json!({"action": "accept", "content": c});
    if n & 0xc0 == 0xc0 {
        return json!({"action": if n & 1 == 0 { "decline" } else { "cancel" }});
    }
    let i = usize::from(n);
    match key {
        "name" => accept(
            json!({"name": (["Ada", "Bo", "", "a name far too long"][i % 4]),
                                "age": ([30, 0, 131, -1][(i / 4) % 4])}),
        ),
        "kind" => accept(
            json!({"kind": (["beach", "mountains", "city", "moon"][i % 4]),
                                "travellers": ([1, 12, 13, 0][(i / 4) % 4])}),
        ),
        "surf" => accept(json!({"surf": n & 1 == 0})),
        "activity" => accept(json!({"activity": (["ski", "hike", "swim"][i % 3])})),
        "city" => accept(json!({"city": "Oslo"})),
        "form" => accept(json!({"note": "hi"})),
        "model" => {
            json!({"role": (["assistant", "user", "system"][i % 3]), "content": {"type": "text", "text": "hello"}, "model": "m"})
        }
        "roots" => json!({"roots": [{"uri": (["file:///w", "https://x"][i % 2]), "name": "w"}]}),
        "sign_in" => json!({"action": "accept"}),
        "confirm" | "reveal" => accept(json!({"confirm": n & 1 == 0})),
        "context" => accept(json!({"context": "c"})),
        _ => json!({"action": "decline"}),
    }
}

fn answers_for<S: AsRef<str>>(keys: &[S], n: u8) -> Value {
    Value::Object(
        keys.iter()
            .map(|k| (k.as_ref().to_owned(), good_answer(k.as_ref(), n)))
            .collect(),
    )
}

/// Handles `req` at T0 as the anonymous principal with every capability; the result.
fn round(service: &Service, req: &Value) -> Value {
    let body = serde_json::to_vec(req).expect("serializes");
    let reply = service.handle_sync(&body, &ctx(false, T0));
    let v: Value = serde_json::from_str(reply.body.as_deref().expect("a response")).expect("JSON");
    v["result"].clone()
}

fn scenario_of(method: &'static str, params: Map<String, Value>, result: &Value) -> Scenario {
    assert_eq!(
        result["resultType"], "input_required",
        "start-up flow {method} {params:?}: {result}"
    );
    Scenario {
        method,
        params,
        token: result["requestState"]
            .as_str()
            .expect("start-up flow has a state")
            .to_owned(),
        keys: result
            .get("inputRequests")
            .and_then(Value::as_object)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default(),
    }
}

fn world() -> &'static World {
    static W: OnceLock<World> = OnceLock::new();
    W.get_or_init(|| {
        let service = build();
        let starts: [(&'static str, Value); 8] = [
            ("tools/call", json!({"name": "greet"})),
            ("tools/call", json!({"name": "plan"})),
            ("tools/call", json!({"name": "ask_all"})),
            ("tools/call", json!({"name": "sign_in"})),
            ("tools/call", json!({"name": "slow"})),
            (
                "tools/call",
                json!({"name": "deploy", "arguments": {"service": "api"}}),
            ),
            (
                "prompts/get",
                json!({"name": "brief", "arguments": {"topic": "t"}}),
            ),
            ("resources/read", json!({"uri": "fz://note"})),
        ];
        let mut scenarios = Vec::new();
        let mut seeds = Vec::new();
        for (i, (method, params)) in starts.into_iter().enumerate() {
            let Value::Object(params) = params else {
                unreachable!()
            };
            let mut p = params.clone();
            p.insert("_meta".into(), meta(ALL_CAPS, PROTOCOL));
            let req = request(json!(i + 1), method, Some(Value::Object(p.clone())));
            let result = round(&service, &req);
            let s = scenario_of(method, params.clone(), &result);
            seeds.push((format!("r1-{i}"), serde_json::to_vec(&req).unwrap()));
            // The second round, answered well: a seed with a state that opens.
            p.insert("requestState".into(), s.token.clone().into());
            if !s.keys.is_empty() {
                p.insert("inputResponses".into(), answers_for(&s.keys, 0));
            }
            let req2 = request(json!(100 + i), method, Some(Value::Object(p.clone())));
            seeds.push((format!("r2-{i}"), serde_json::to_vec(&req2).unwrap()));
            // plan: its second round asks again; keep that state as a scenario too.
            if i == 1 {
                for n in [0u8, 1] {
                    p.insert("inputResponses".into(), answers_for(&s.keys, n));
                    let r2 = round(
                        &service,
                        &request(json!(200), method, Some(Value::Object(p.clone()))),
                    );
                    let s2 = scenario_of(method, params.clone(), &r2);
                    let mut p3 = p.clone();
                    p3.insert("requestState".into(), s2.token.clone().into());
                    p3.insert("inputResponses".into(), answers_for(&s2.keys, 0));
                    seeds.push((
                        format!("r3-plan-{n}"),
                        serde_json::to_vec(&request(json!(300), method, Some(Value::Object(p3))))
                            .unwrap(),
                    ));
                    scenarios.push(s2);
                }
            }
            scenarios.push(s);
        }
        let plain = |id: i64, m: &str| {
            serde_json::to_vec(&request(
                json!(id),
                m,
                Some(json!({"_meta": meta(0, PROTOCOL)})),
            ))
            .unwrap()
        };
        for (i, m) in [
            "server/discover",
            "ping",
            "tools/list",
            "prompts/list",
            "resources/list",
        ]
        .iter()
        .enumerate()
        {
            seeds.push((format!("plain-{i}"), plain(i as i64, m)));
        }
        seeds.push((
            "notification".into(),
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#
                .to_vec(),
        ));
        seeds.push((
            "echo".into(),
            serde_json::to_vec(&request(
                json!("e"),
                "tools/call",
                Some(
                    json!({"name": "echo", "arguments": {"text": "hi"}, "_meta": meta(0, PROTOCOL)}),
                ),
            ))
            .unwrap(),
        ));
        World {
            service,
            scenarios,
            seeds,
        }
    })
}

// ------------------------------------------------------------------ structured input

#[derive(Arbitrary, Debug)]
enum Leaf {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    /// A value some handler takes as valid somewhere.
    Known(u8),
}

impl Leaf {
    fn value(&self) -> Value {
        match self {
            Leaf::Null => Value::Null,
            Leaf::Bool(b) => (*b).into(),
            Leaf::Int(i) => (*i).into(),
            Leaf::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
            Leaf::Str(s) => s.as_str().into(),
            Leaf::Known(n) => match n % 10 {
                0 => "accept".into(),
                1 => "beach".into(),
                2 => 12.into(),
                3 => true.into(),
                4 => "api".into(),
                5 => "file:///w".into(),
                6 => json!({"type": "text", "text": "t"}),
                7 => "assistant".into(),
                8 => PROTOCOL.into(),
                _ => json!({}),
            },
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Json {
    Leaf(Leaf),
    Arr(Vec<Leaf>),
    Obj(Vec<(Name, Leaf)>),
    Nested(Vec<(Name, Vec<(Name, Leaf)>)>),
}

impl Json {
    fn value(&self) -> Value {
        let obj = |o: &[(Name, Leaf)]| {
            Value::Object(o.iter().map(|(k, v)| (k.name(), v.value())).collect())
        };
        match self {
            Json::Leaf(l) => l.value(),
            Json::Arr(a) => a.iter().map(Leaf::value).collect(),
            Json::Obj(o) => obj(o),
            Json::Nested(n) => Value::Object(n.iter().map(|(k, o)| (k.name(), obj(o))).collect()),
        }
    }
}

/// Every question key (the first [`QUESTION_KEYS`]) and field name the service knows.
const NAMES: [&str; 24] = [
    "name",
    "kind",
    "surf",
    "activity",
    "city",
    "form",
    "model",
    "roots",
    "sign_in",
    "confirm",
    "reveal",
    "context", // the last question key
    "age",
    "travellers",
    "note",
    "action",
    "content",
    "role",
    "text",
    "uri",
    "service",
    "replicas",
    "topic",
    "type",
];
const QUESTION_KEYS: usize = 12;

#[derive(Arbitrary, Debug)]
enum Name {
    Known(u8),
    Any(String),
}

impl Name {
    fn name(&self) -> String {
        match self {
            Name::Known(n) => NAMES[usize::from(*n) % NAMES.len()].to_owned(),
            Name::Any(s) => s.clone(),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Answer {
    Good(u8),
    Elicit {
        action: u8,
        content: Option<Vec<(Name, Leaf)>>,
    },
    Sampled {
        role: u8,
        text: String,
        model: bool,
    },
    Roots(Vec<(bool, String)>),
    Raw(Json),
}

impl Answer {
    fn value(&self, key: &str) -> Value {
        match self {
            Answer::Good(n) => good_answer(key, *n),
            Answer::Elicit { action, content } => {
                let mut o = Map::new();
                o.insert(
                    "action".into(),
                    ["accept", "decline", "cancel", "ACCEPT"][usize::from(*action) % 4].into(),
                );
                if let Some(c) = content {
                    o.insert(
                        "content".into(),
                        Value::Object(c.iter().map(|(k, v)| (k.name(), v.value())).collect()),
                    );
                }
                Value::Object(o)
            }
            Answer::Sampled { role, text, model } => {
                let mut o = json!({"role": (["assistant", "user", "tool"][usize::from(*role) % 3]),
                                   "content": {"type": "text", "text": text}});
                if *model {
                    o["model"] = "m".into();
                }
                o
            }
            Answer::Roots(list) => json!({"roots": list.iter().map(|(file, p)| {
                json!({"uri": if *file { format!("file:///{p}") } else { p.clone() }})
            }).collect::<Vec<_>>()}),
            Answer::Raw(j) => j.value(),
        }
    }
}

/// The first variant of each enum here is the well-formed choice, so a short
/// structured input (arbitrary fills what is missing with zeros) is a resume that
/// completes: `\x01\0\0\0\0N` resumes flow N with good answers.
#[derive(Arbitrary, Debug)]
enum Answers {
    /// The good answer under every key the flow was asked.
    Good(u8),
    Absent,
    /// Answers under chosen keys (the asked ones, or any).
    Some(Vec<(Option<Name>, Answer)>),
    NotAnObject(Json),
}

impl Answers {
    fn value<S: AsRef<str>>(&self, asked: &[S]) -> Option<Value> {
        match self {
            Answers::Absent => None,
            Answers::Good(n) => Some(answers_for(asked, *n)),
            Answers::Some(list) => Some(Value::Object(
                list.iter()
                    .enumerate()
                    .map(|(i, (k, a))| {
                        let key = match k {
                            Some(n) => n.name(),
                            None if !asked.is_empty() => asked[i % asked.len()].as_ref().to_owned(),
                            None => "name".to_owned(),
                        };
                        let v = a.value(&key);
                        (key, v)
                    })
                    .collect(),
            )),
            Answers::NotAnObject(j) => Some(j.value()),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum TokenPick {
    Exact,
    Absent,
    /// Another flow's state.
    Other(u8),
    Flip {
        at: u16,
        to: u8,
    },
    Cut(u16),
    Append(String),
    Any(String),
    NotAString(Leaf),
}

const B64URL: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

impl TokenPick {
    fn value(&self, own: &str, scenarios: &[Scenario]) -> Option<Value> {
        Some(match self {
            TokenPick::Exact => own.into(),
            TokenPick::Absent => return None,
            TokenPick::Other(n) => scenarios[usize::from(*n) % scenarios.len()]
                .token
                .as_str()
                .into(),
            TokenPick::Flip { at, to } => {
                let mut b = own.as_bytes().to_vec();
                let i = usize::from(*at) % b.len();
                b[i] = B64URL[usize::from(*to) % B64URL.len()];
                String::from_utf8(b).expect("ascii").into()
            }
            TokenPick::Cut(n) => own[..usize::from(*n) % own.len()].into(),
            TokenPick::Append(s) => format!("{own}{s}").into(),
            TokenPick::Any(s) => s.as_str().into(),
            TokenPick::NotAString(l) => l.value(),
        })
    }
}

#[derive(Arbitrary, Debug)]
enum Id {
    Int(i64),
    Str(String),
    Float(f64),
    /// No id: a notification.
    Absent,
    Invalid(bool),
}

impl Id {
    /// `None` for no `id` member.
    fn value(&self) -> Option<Value> {
        match self {
            Id::Int(i) => Some((*i).into()),
            Id::Str(s) => Some(s.as_str().into()),
            Id::Float(f) => {
                Some(serde_json::Number::from_f64(*f).map_or(json!(0.5), Value::Number))
            }
            Id::Absent => None,
            Id::Invalid(b) => Some(if *b { json!([1]) } else { json!({"id": 1}) }),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum MetaPick {
    /// `caps` bits clear the declared capabilities (0: all four declared).
    Good {
        caps: u8,
        version: u8,
    },
    Absent,
    Raw(Json),
}

impl MetaPick {
    fn value(&self) -> Option<Value> {
        match self {
            MetaPick::Good { caps, version } => Some(meta(
                ALL_CAPS ^ (*caps & ALL_CAPS),
                VERSIONS[usize::from(*version) % VERSIONS.len()],
            )),
            MetaPick::Absent => None,
            MetaPick::Raw(j) => Some(j.value()),
        }
    }
}

/// A retry of a flow sealed at start-up.
#[derive(Arbitrary, Debug)]
struct Resume {
    scenario: u8,
    meta: MetaPick,
    answers: Answers,
    token: TokenPick,
    id: Id,
    /// Replace the flow's arguments (its state is bound to them).
    arguments: Option<Json>,
}

#[derive(Arbitrary, Debug)]
enum MethodPick {
    ToolsCall,
    PromptsGet,
    ResourcesRead,
    Discover,
    Ping,
    ToolsList,
    PromptsList,
    ResourcesList,
    Templates,
    Other(String),
}

#[derive(Arbitrary, Debug)]
enum TargetPick {
    Registered(u8),
    Any(String),
    Absent,
    NotAString(Leaf),
}

const TARGETS: [&str; 9] = [
    "echo",
    "greet",
    "plan",
    "ask_all",
    "sign_in",
    "slow",
    "deploy",
    "brief",
    "fz://note",
];

/// A request over any method.
#[derive(Arbitrary, Debug)]
struct Free {
    id: Id,
    method: MethodPick,
    target: TargetPick,
    arguments: Option<Json>,
    meta: MetaPick,
    answers: Answers,
    token: Option<TokenPick>,
    extra: Option<(Name, Json)>,
    /// 0 (mostly): an object; else absent, an array, a string.
    params_shape: u8,
}

#[derive(Arbitrary, Debug)]
enum Message {
    Resume(Resume),
    Free(Free),
}

#[derive(Arbitrary, Debug)]
enum Clock {
    Fixed,
    Later(u16),
    MuchLater(u32),
    Earlier(u16),
}

#[derive(Arbitrary, Debug)]
enum Headers {
    None,
    /// The headers a conforming client sends for this body.
    Matching,
    /// One of them replaced (0: version, 1: method, 2: name) or dropped.
    Changed {
        which: u8,
        value: Option<String>,
    },
}

#[derive(Arbitrary, Debug)]
struct Structured {
    message: Message,
    principal: bool,
    clock: Clock,
    headers: Headers,
}

fn build_structured(s: &Structured, w: &World) -> (Value, RequestContext, Option<McpHeaders>) {
    let req = match &s.message {
        Message::Resume(r) => {
            let sc = &w.scenarios[usize::from(r.scenario) % w.scenarios.len()];
            let mut p = sc.params.clone();
            if let Some(a) = &r.arguments {
                p.insert("arguments".into(), a.value());
            }
            if let Some(m) = r.meta.value() {
                p.insert("_meta".into(), m);
            }
            if let Some(a) = r.answers.value(&sc.keys) {
                p.insert("inputResponses".into(), a);
            }
            if let Some(t) = r.token.value(&sc.token, &w.scenarios) {
                p.insert("requestState".into(), t);
            }
            let id = r.id.value().unwrap_or(Value::Null);
            request(id, sc.method, Some(Value::Object(p)))
        }
        Message::Free(f) => {
            let (method, target_key) = match &f.method {
                MethodPick::ToolsCall => ("tools/call", "name"),
                MethodPick::PromptsGet => ("prompts/get", "name"),
                MethodPick::ResourcesRead => ("resources/read", "uri"),
                MethodPick::Discover => ("server/discover", "name"),
                MethodPick::Ping => ("ping", "name"),
                MethodPick::ToolsList => ("tools/list", "cursor"),
                MethodPick::PromptsList => ("prompts/list", "cursor"),
                MethodPick::ResourcesList => ("resources/list", "cursor"),
                MethodPick::Templates => ("resources/templates/list", "cursor"),
                MethodPick::Other(m) => (m.as_str(), "name"),
            };
            let mut p = Map::new();
            match &f.target {
                TargetPick::Registered(n) => {
                    p.insert(
                        target_key.into(),
                        TARGETS[usize::from(*n) % TARGETS.len()].into(),
                    );
                }
                TargetPick::Any(t) => {
                    p.insert(target_key.into(), t.as_str().into());
                }
                TargetPick::Absent => {}
                TargetPick::NotAString(l) => {
                    p.insert(target_key.into(), l.value());
                }
            }
            if let Some(a) = &f.arguments {
                p.insert("arguments".into(), a.value());
            }
            if let Some(m) = f.meta.value() {
                p.insert("_meta".into(), m);
            }
            if let Some(a) = f.answers.value(&NAMES[..QUESTION_KEYS]) {
                p.insert("inputResponses".into(), a);
            }
            if let Some(t) = &f.token {
                let own = &w.scenarios[0].token;
                if let Some(t) = t.value(own, &w.scenarios) {
                    p.insert("requestState".into(), t);
                }
            }
            if let Some((k, v)) = &f.extra {
                p.insert(k.name(), v.value());
            }
            let params = match f.params_shape % 8 {
                1 => None,
                2 => Some(Value::Array(p.into_iter().map(|(_, v)| v).collect())),
                3 => Some("params".into()),
                _ => Some(Value::Object(p)),
            };
            let id = f.id.value().unwrap_or(Value::Null);
            request(id, method, params)
        }
    };
    let now = match s.clock {
        Clock::Fixed => T0,
        Clock::Later(n) => T0.add_secs(u64::from(n)),
        Clock::MuchLater(n) => T0.add_secs(u64::from(n)),
        Clock::Earlier(n) => T0.sub_secs(u64::from(n)),
    };
    let headers = match &s.headers {
        Headers::None => None,
        Headers::Matching => Some(McpHeaders::for_request(&req, PROTOCOL)),
        Headers::Changed { which, value } => {
            let mut h = McpHeaders::for_request(&req, PROTOCOL);
            let slot = match which % 3 {
                0 => &mut h.protocol_version,
                1 => &mut h.method,
                _ => &mut h.name,
            };
            *slot = value.clone();
            Some(h)
        }
    };
    (req, ctx(s.principal, now), headers)
}

// ------------------------------------------------------------------ the checks

/// Whether `needle` occurs in any string (or object key) of `v`.
fn holds(v: &Value, needle: &str) -> bool {
    match v {
        Value::String(s) => s.contains(needle),
        Value::Array(a) => a.iter().any(|x| holds(x, needle)),
        Value::Object(o) => o
            .iter()
            .any(|(k, x)| k.contains(needle) || holds(x, needle)),
        _ => false,
    }
}

/// Whether the input carried the marker itself (raw, or JSON-escaped in a string).
fn input_holds_marker(input: &[u8]) -> bool {
    input.windows(MARKER.len()).any(|w| w == MARKER.as_bytes())
        || serde_json::from_slice::<Value>(input).is_ok_and(|v| holds(&v, MARKER))
}

const CODES: [i64; 8] = [
    -32700, -32600, -32601, -32602, -32603, -32020, -32021, -32022,
];

/// `SERVICE_HANDLE_PRINT=1` prints every reply (to see what a corpus reaches).
fn print() -> bool {
    static P: OnceLock<bool> = OnceLock::new();
    *P.get_or_init(|| std::env::var_os("SERVICE_HANDLE_PRINT").is_some())
}

fn check(service: &Service, input: &[u8], sent_id: Option<&Value>, reply: &Reply) {
    if print() {
        eprintln!(
            "REPLY {} {} {}",
            mrtr::streamable_http::reply_status(&reply),
            reply.log.outcome,
            reply.body.as_deref().unwrap_or("-")
        );
    }
    let Some(body) = &reply.body else {
        assert_eq!(
            mrtr::streamable_http::reply_status(&reply),
            202,
            "no body, status {}",
            mrtr::streamable_http::reply_status(&reply)
        );
        // Only a notification goes unanswered: an object with a method and no id.
        let v: Value = serde_json::from_slice(input).expect("an unanswered message is JSON");
        let o = v.as_object().expect("an unanswered message is an object");
        assert!(!o.contains_key("id"), "a request went unanswered: {v}");
        assert!(o.get("method").is_some_and(Value::is_string));
        return;
    };
    assert!(
        mrtr::streamable_http::reply_status(&reply) < 500,
        "status {} for {body}",
        mrtr::streamable_http::reply_status(&reply)
    );
    let v: Value = serde_json::from_str(body).expect("the reply is JSON");
    let o = v.as_object().expect("the reply is an object");
    assert_eq!(o.get("jsonrpc"), Some(&json!("2.0")), "{body}");
    // An error whose request id could not be read has none: the MCP schema makes
    // `id` optional on errors (JSON-RPC 2.0 would have null; both are accepted).
    let id = o.get("id").unwrap_or(&Value::Null);
    assert!(
        id.is_null() || id.is_string() || id.is_number(),
        "bad id {id}"
    );
    assert!(
        o.keys()
            .all(|k| matches!(k.as_str(), "jsonrpc" | "id" | "result" | "error")),
        "{body}"
    );
    match (o.get("result"), o.get("error")) {
        (Some(r), None) => {
            assert_eq!(mrtr::streamable_http::reply_status(&reply), 200, "{body}");
            assert!(!id.is_null(), "a result without an id: {body}");
            if let Some(sent) = sent_id {
                assert_eq!(id, sent, "the reply answers another id");
            }
            let r = r.as_object().expect("result is an object");
            match r.get("resultType").and_then(Value::as_str) {
                Some("complete") => {}
                Some("input_required") => {
                    let asks = r.get("inputRequests").and_then(Value::as_object);
                    let state = r.get("requestState");
                    assert!(
                        asks.is_some_and(|a| !a.is_empty()) || state.is_some(),
                        "empty InputRequiredResult: {body}"
                    );
                    if let Some(s) = state {
                        let s = s.as_str().expect("requestState is a string");
                        let opened = service
                            .engine()
                            .sealer()
                            .inspect(&UntrustedState::new(s.to_owned()));
                        let opened = opened.unwrap_or_else(|e| {
                            panic!("a requestState that does not open: {e} {s}")
                        });
                        if print() {
                            eprintln!("STATE {}", opened["state"]);
                        }
                    }
                }
                other => panic!("resultType {other:?}: {body}"),
            }
        }
        (None, Some(e)) => {
            let code = e.get("code").and_then(Value::as_i64).expect("integer code");
            assert!(
                e.get("message").is_some_and(Value::is_string),
                "message: {body}"
            );
            assert!(CODES.contains(&code), "code {code}: {body}");
            let want = if code == -32601 { 404 } else { 400 };
            assert_eq!(mrtr::streamable_http::reply_status(&reply), want, "{body}");
            if let Some(sent) = sent_id {
                assert_eq!(id, sent, "the error answers another id");
            }
        }
        _ => panic!("not exactly one of result and error: {body}"),
    }
    if body.contains(MARKER) {
        assert!(
            input_holds_marker(input),
            "sealed plaintext left in a reply: {body}"
        );
    }
}

fn seeds(w: &World) {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        if let Some(dir) = std::env::var_os("SERVICE_HANDLE_SEEDS") {
            let dir = std::path::PathBuf::from(dir);
            std::fs::create_dir_all(&dir).expect("seed directory");
            for (name, body) in &w.seeds {
                std::fs::write(dir.join(format!("seed-{name}.json")), body).expect("seed written");
            }
        }
    });
}

fuzz_target!(|data: &[u8]| {
    let w = world();
    seeds(w);
    DRAWS.store(0, Ordering::Relaxed);
    match data.first() {
        Some(&b) if b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r') => {
            let Ok(s) = Structured::arbitrary_take_rest(Unstructured::new(&data[1..])) else {
                return;
            };
            let (req, ctx, headers) = build_structured(&s, w);
            let body = serde_json::to_vec(&req).expect("serializes");
            // The Streamable HTTP transport's check, as `mrtr serve` runs it.
            let message = ParsedMessage::parse(&body).check(|method, params| match &headers {
                Some(h) => check_headers(h, method, params, CarrierMethod::from_method(method)),
                None => Ok(()),
            });
            let reply = w.service.handle_parsed_sync(message, &ctx);
            // The id is echoed only when it is a string or a number.
            let sent = req.get("id").filter(|i| i.is_string() || i.is_number());
            check(&w.service, &body, sent, &reply);
        }
        _ => {
            let reply = w.service.handle_sync(data, &ctx(false, T0));
            check(&w.service, data, None, &reply);
        }
    }
});
