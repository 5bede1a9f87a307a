//! End to end over loopback HTTP, in one run: the same rmcp server (rmcp's
//! Streamable HTTP service, stateless 2026-07-28, JSON responses, served by axum)
//! with one elicitation tool written two ways (three with `E2E_FLOOR=1`):
//!
//! - **rmcp**: a `#[tool]` that does the flow by hand with rmcp's own
//!   `RequestStateCodec` (rs2, HMAC-SHA256): round 1 returns an
//!   `InputRequiredResult` with one form elicitation and a signed `requestState`
//!   (bound to the tool and its arguments, 600 s TTL); round 2 verifies the echoed
//!   state and reads the answer. What an rmcp user writes today with rmcp alone.
//! - **mrtr**: the same tool as an mrtr handler through `mrtr_rmcp` (`Mrtr`,
//!   `ToolCall::run`): capability gate, XAES-256-GCM sealed and bound state,
//!   answer validation against the form.
//! - **floor** (only with `E2E_FLOOR=1`): the rmcp tool with the security work
//!   mrtr does and nothing else, by hand: the form capability checked in
//!   `_meta`, the state sealed with mrtr's `Sealer` (XAES-256-GCM) and bound with
//!   its `Binding` (method, tool, arguments, principal, audience, protocol
//!   version), the answer checked against the form. Not a way to write a tool (no
//!   question digest, re-ask, limits, `once`, log or metrics): a lower bound for
//!   what encrypting, gating and validating cost on this server, so the rest of
//!   mrtr's cost is its engine's.
//!
//! A load driver on a runtime of its own (one thread) runs two-round flows on
//! keep-alive HTTP/1.1 connections against one variant at a time, alternating
//! rmcp, (floor,) mrtr, rmcp, ...; the servers share one runtime (one worker thread).
//! A flow counts when its second round returns the greeting. Each run also reports
//! the CPU time per flow of the servers' threads and of the driver's (from
//! `/proc/self/task/*/schedstat`), which the load on a shared host disturbs less
//! than flows per second.
//!
//! ```text
//! cd benches/peers && cargo bench --bench e2e
//! ```
//!
//! The verdict is the median of the paired costs: each run of mrtr against the
//! rmcp runs just before and after it (their mean), so the host's drift over
//! minutes (on the 2-vCPU host of the README's figures, the same build's rmcp
//! runs range from 66 to 98 µs a flow within an hour) cancels out of each cost;
//! the cost from the medians of all runs of each variant, which mixes periods,
//! is printed beside it. Many short runs rather than a few long ones, for the
//! same reason.
//!
//! Settings (environment): `E2E_SECONDS` per run (default 3, 1 to 60),
//! `E2E_PAIRS` of runs (default 10, 1 to 60), `E2E_CONNECTIONS` (default 8, 1 to 64);
//! `E2E_ONLY=rmcp`, `mrtr` or `floor` runs one variant alone (for a profiler,
//! e.g. `perf record --call-graph dwarf` on the bench binary), without the
//! comparison; `E2E_FLOOR=1` adds the floor variant to the comparison;
//! `E2E_SPIN=1` makes the driver poll its sockets instead of sleeping on them.
//! `scripts/e2e-cache-sim.sh` (from the repository's root) runs each variant alone
//! under callgrind with this host's caches simulated and prints instructions, cache
//! misses and `malloc` calls per flow: where the time goes, in counts that repeat.
//!
//! Why `E2E_SPIN`: over loopback, the server's `writev` delivers the reply in
//! its own thread and wakes the driver if it sleeps. On a virtual machine that
//! wake-up is an inter-processor interrupt, several µs charged to the server's
//! thread, and it happens more often the longer the server takes per request
//! (`perf stat`: 0.66 context switches per flow against rmcp, 1.5 against mrtr,
//! on the 2-vCPU host of the README's figures). A spinning driver never
//! sleeps, so the servers' CPU per flow is theirs alone; the driver then uses a
//! whole CPU. The default (sleeping) run is the headline figure; the spinning one
//! shows how much of the gap is that wake-up.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mrtr::Timestamp;
use mrtr::engine::{Elicited, Form};
use mrtr::principal::Principal;
use mrtr::result::ToolResult;
use mrtr::seal::{Binding, BindingInput, Claims, Key, SealConfig, Sealer, UntrustedState};
use mrtr::{Engine, Keyring};
use mrtr_rmcp::{Mrtr, Principals, ToolCall};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::{InputResponses, RequestState};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequest,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, ErrorCode,
    InputRequest, InputRequiredResult, JsonObject, RequestMetaObject, RequestStateCodec,
    SealOptions, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, tool, tool_handler, tool_router};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The tool both servers serve.
const TOOL: &str = "greet";
/// The one ask of its first round.
const ASK: &str = "user_name";
/// The answer the driver gives, and the result it expects.
const NAME: &str = "load";
const GREETING: &str = "Hello, load!";
/// The audience mrtr's engine and the floor bind their states to.
const AUDIENCE: &str = "http://127.0.0.1";
/// The state's lifetime (mrtr's default too).
const TTL: Duration = Duration::from_secs(600);
/// How long one read of the driver waits for more of a reply before the flow counts as failed.
const REPLY_WAIT: Duration = Duration::from_secs(10);
/// Whether the driver polls its sockets instead of sleeping on them (`E2E_SPIN=1`).
static SPIN: AtomicBool = AtomicBool::new(false);

// ---------------------------------------------------------------------------
// Variant rmcp: the flow by hand with rmcp's RequestStateCodec.

/// What the rmcp tool keeps in its signed state: the key it asked.
#[derive(serde::Serialize, serde::Deserialize)]
struct Step {
    ask: String,
}

/// The rmcp server: its codec and its tool router.
#[derive(Clone)]
struct PlainServer {
    codec: Arc<RequestStateCodec>,
    tool_router: ToolRouter<Self>,
}

/// The associated data of the rmcp tool's state: the call it belongs to (method,
/// tool, arguments), so a state cannot be replayed against another call.
fn call_binding(tool: &str, arguments: &JsonObject) -> Vec<u8> {
    let mut aad = format!("tools/call\n{tool}\n").into_bytes();
    serde_json::to_writer(&mut aad, arguments).expect("a JSON object serializes");
    aad
}

fn bad_state() -> ErrorData {
    ErrorData::invalid_params("Invalid requestState", None)
}

/// Round 1 of the hand-written variants: the form asking the user's name, with
/// the state `sealed` for it.
fn asking_name(sealed: String) -> Result<CallToolResponse, ErrorData> {
    let schema = ElicitationSchema::builder()
        .required_string_property("name", |s| s.title("Name"))
        .build()
        .map_err(|_| ErrorData::internal_error("Internal error", None))?;
    let ask = ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: "What is your name?".into(),
        requested_schema: schema,
    });
    let asks = BTreeMap::from([(ASK.to_owned(), InputRequest::Elicitation(ask))]);
    Ok(InputRequiredResult::new(Some(asks), Some(sealed)).into())
}

/// Round 2 of the hand-written variants: the answer under `ask`, as an
/// elicitation result.
fn answer_to(
    answers: Option<&rmcp::model::InputResponses>,
    ask: &str,
) -> Result<ElicitResult, ErrorData> {
    let answer = answers
        .and_then(|a| a.get(ask))
        .ok_or_else(|| ErrorData::invalid_params("Missing answer", None))?;
    serde_json::from_value(answer.clone())
        .map_err(|_| ErrorData::invalid_params("Invalid answer", None))
}

#[tool_router]
impl PlainServer {
    fn new() -> Self {
        let codec = RequestStateCodec::new_with_keyring("k1", [("k1", vec![7u8; 32])])
            .expect("a 32-byte key");
        Self {
            codec: Arc::new(codec),
            tool_router: Self::tool_router(),
        }
    }

    /// Asks the user's name, then greets them.
    #[tool(description = "Asks your name, then greets you.")]
    async fn greet(
        &self,
        RequestState(state): RequestState,
        InputResponses(answers): InputResponses,
        arguments: JsonObject,
    ) -> Result<CallToolResponse, ErrorData> {
        let aad = call_binding(TOOL, &arguments);
        let Some(state) = state else {
            // Round 1: ask, and sign what was asked.
            let step = Step { ask: ASK.into() };
            let opts = SealOptions::new().associated_data(&aad).ttl(TTL);
            let sealed = self
                .codec
                .seal_json_with(&step, &opts)
                .map_err(|_| ErrorData::internal_error("Internal error", None))?;
            return asking_name(sealed);
        };
        // Round 2: verify the state, then read the answer to what it says was asked.
        let step: Step = self
            .codec
            .open_json_with(&state, &aad)
            .map_err(|_| bad_state())?;
        let answer = answer_to(answers.as_ref(), &step.ask)?;
        let name = match answer.action {
            ElicitationAction::Accept => answer
                .content
                .as_ref()
                .and_then(|c| c.get("name"))
                .and_then(Value::as_str),
            _ => None,
        };
        let text = match name {
            Some(n) => format!("Hello, {n}!"),
            None => "No name given.".to_owned(),
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for PlainServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

// ---------------------------------------------------------------------------
// Variant mrtr: the same tool as an mrtr handler.

/// The mrtr server: mrtr on rmcp, and its tool router.
#[derive(Clone)]
struct MrtrServer {
    mrtr: Mrtr,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl MrtrServer {
    fn new() -> Self {
        let engine = Engine::new(Keyring::ephemeral(), AUDIENCE);
        Self {
            mrtr: Mrtr::new(engine, Principals::anonymous()),
            tool_router: Self::tool_router(),
        }
    }

    /// Asks the user's name, then greets them.
    #[tool(description = "Asks your name, then greets you.")]
    async fn greet(&self, call: ToolCall) -> Result<CallToolResponse, ErrorData> {
        call.run(|r| {
            match r.elicit(ASK, Form::new("What is your name?").string("name", "Name"))? {
                Elicited::Accepted(f) => Ok(ToolResult::text(format!(
                    "Hello, {}!",
                    f.str("name").unwrap_or_default()
                ))),
                _ => Ok(ToolResult::text("No name given.")),
            }
        })
        .await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for MrtrServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.mrtr
            .call_tool(self, &self.tool_router, request, context)
            .await
    }
}

// ---------------------------------------------------------------------------
// Variant floor (`E2E_FLOOR=1`): the flow by hand with the security work mrtr
// does, and nothing else. Not a way to write a tool: a lower bound for what
// encrypting, gating and validating cost on this server.

/// The floor server: mrtr's sealer used directly, and its tool router.
#[derive(Clone)]
struct FloorServer {
    sealer: Arc<Sealer>,
    tool_router: ToolRouter<Self>,
}

/// Whether the request's `_meta` declares form elicitation (an `elicitation`
/// object with `form`, or an empty one, which means form).
fn declares_forms(meta: &RequestMetaObject) -> bool {
    meta.0
        .get("io.modelcontextprotocol/clientCapabilities")
        .and_then(|c| c.get("elicitation"))
        .and_then(Value::as_object)
        .is_some_and(|e| e.is_empty() || e.get("form").is_some_and(Value::is_object))
}

#[tool_router]
impl FloorServer {
    fn new() -> Self {
        let ring = Keyring::new(Key::from_secret(&[7u8; 32]).expect("a 32-byte key"));
        Self {
            sealer: Arc::new(Sealer::new(ring, SealConfig::default())),
            tool_router: Self::tool_router(),
        }
    }

    /// Asks the user's name, then greets them.
    #[tool(description = "Asks your name, then greets you.")]
    async fn greet(
        &self,
        RequestState(state): RequestState,
        InputResponses(answers): InputResponses,
        meta: RequestMetaObject,
        arguments: JsonObject,
    ) -> Result<CallToolResponse, ErrorData> {
        // Gate: the client must take forms (-32021 otherwise, as mrtr answers).
        if !declares_forms(&meta) {
            return Err(ErrorData::new(
                ErrorCode(-32021),
                "Missing client capability: elicitation.form",
                None,
            ));
        }
        let version = meta
            .0
            .get("io.modelcontextprotocol/protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let arguments = Value::Object(arguments);
        // Bound to method, tool, arguments, principal, audience and protocol version.
        let binding = Binding::new(&BindingInput {
            method: "tools/call",
            target: TOOL,
            arguments: Some(&arguments),
            principal: &Principal::anonymous(),
            audience: AUDIENCE,
            protocol_version: &version,
        });
        let now = Timestamp::now();
        let Some(state) = state else {
            // Round 1: ask, and seal what was asked.
            let claims =
                Claims::first_round(binding, now, self.sealer.config(), Step { ask: ASK.into() });
            let sealed = self
                .sealer
                .seal(&claims)
                .map_err(|_| ErrorData::internal_error("Internal error", None))?;
            return asking_name(sealed);
        };
        // Round 2: open the state for this very request, then validate the answer
        // against the form: an accepted form holds `name`, a string, and no more.
        let step = self
            .sealer
            .open::<Step>(&UntrustedState::new(state), &binding, now)
            .map_err(|_| bad_state())?
            .into_inner()
            .into_state();
        let answer = answer_to(answers.as_ref(), &step.ask)?;
        let text = match answer.action {
            ElicitationAction::Accept => {
                let content = answer.content.as_ref();
                let name = content
                    .and_then(Value::as_object)
                    .filter(|c| c.len() == 1)
                    .and_then(|c| c.get("name"))
                    .and_then(Value::as_str)
                    .ok_or_else(|| ErrorData::invalid_params("Invalid answer", None))?;
                format!("Hello, {name}!")
            }
            _ => "No name given.".to_owned(),
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for FloorServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

// ---------------------------------------------------------------------------
// The servers: both on one runtime with one worker thread.

/// rmcp's Streamable HTTP service for `server`, as axum serves it on `/mcp`.
fn router<S>(server: S) -> axum::Router
where
    S: ServerHandler + Clone + Send + Sync + 'static,
{
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true);
    let service: StreamableHttpService<S, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(server.clone()), Default::default(), config);
    axum::Router::new().nest_service("/mcp", service)
}

/// Starts the servers on a thread of their own; returns (rmcp's, mrtr's, the
/// floor's) address.
fn start_servers() -> (SocketAddr, SocketAddr, SocketAddr) {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("servers".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("server-worker")
                .enable_all()
                .build()
                .expect("the server runtime");
            rt.block_on(async move {
                let plain = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                let with_mrtr = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                let floor = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send((
                    plain.local_addr().unwrap(),
                    with_mrtr.local_addr().unwrap(),
                    floor.local_addr().unwrap(),
                ))
                .unwrap();
                let a = tokio::spawn(axum::serve(plain, router(PlainServer::new())).into_future());
                let b =
                    tokio::spawn(axum::serve(with_mrtr, router(MrtrServer::new())).into_future());
                let c = tokio::spawn(axum::serve(floor, router(FloorServer::new())).into_future());
                let _ = tokio::join!(a, b, c);
            });
        })
        .expect("the server thread");
    rx.recv().expect("the servers' addresses")
}

// ---------------------------------------------------------------------------
// The load driver.

/// One kept-alive HTTP/1.1 connection to `/mcp`.
struct Conn {
    stream: TcpStream,
    host: String,
    buf: Vec<u8>,
    chunk: Box<[u8]>,
}

impl Conn {
    async fn open(addr: SocketAddr) -> std::io::Result<Self> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Self {
            stream,
            host: addr.to_string(),
            buf: Vec::with_capacity(8192),
            chunk: vec![0u8; 16 * 1024].into_boxed_slice(),
        })
    }

    /// POSTs one JSON-RPC `tools/call` and returns the JSON reply (status 200 and
    /// `Content-Length` required).
    async fn call(&mut self, body: &Value) -> Result<Value, String> {
        let body = body.to_string();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n\
             MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {TOOL}\r\n\
             Content-Length: {}\r\n\r\n",
            self.host,
            body.len()
        );
        let mut out = head.into_bytes();
        out.extend_from_slice(body.as_bytes());
        self.stream
            .write_all(&out)
            .await
            .map_err(|e| e.to_string())?;
        // The head.
        let (body_at, len) = loop {
            if let Some(end) = find(&self.buf, b"\r\n\r\n") {
                let head = std::str::from_utf8(&self.buf[..end]).map_err(|e| e.to_string())?;
                let mut lines = head.split("\r\n");
                let status = lines.next().unwrap_or_default();
                if !status.starts_with("HTTP/1.1 200 ") {
                    return Err(format!("status: {status}"));
                }
                let len = lines
                    .filter_map(|l| l.split_once(':'))
                    .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
                    .and_then(|(_, v)| v.trim().parse::<usize>().ok())
                    .ok_or("a reply without Content-Length")?;
                break (end + 4, len);
            }
            self.fill().await?;
        };
        while self.buf.len() < body_at + len {
            self.fill().await?;
        }
        let reply = serde_json::from_slice(&self.buf[body_at..body_at + len])
            .map_err(|e| format!("reply body: {e}"));
        self.buf.drain(..body_at + len);
        reply
    }

    /// Reads what has arrived, waiting at most [`REPLY_WAIT`]: asleep on the
    /// socket, or polling it when the driver spins (`E2E_SPIN=1`).
    async fn fill(&mut self) -> Result<(), String> {
        let until = Instant::now() + REPLY_WAIT;
        let n = if SPIN.load(Ordering::Relaxed) {
            loop {
                match self.stream.try_read(&mut self.chunk) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        if Instant::now() > until {
                            return Err("no reply in time".into());
                        }
                        tokio::task::yield_now().await;
                    }
                    Err(e) => return Err(e.to_string()),
                }
            }
        } else {
            tokio::time::timeout_at(until.into(), self.stream.read(&mut self.chunk))
                .await
                .map_err(|_| "no reply in time".to_owned())?
                .map_err(|e| e.to_string())?
        };
        if n == 0 {
            return Err("connection closed".into());
        }
        self.buf.extend_from_slice(&self.chunk[..n]);
        Ok(())
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Round 1 of a flow: a 2026-07-28 `tools/call` whose client can take forms.
fn first_round(id: u64) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "e2e", "version": "0"},
                "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}
            },
            "name": TOOL
        }
    })
}

/// Round 2: the same call with the answer and the echoed state.
fn second_round(mut request: Value, id: u64, state: &str) -> Value {
    request["id"] = json!(id);
    let params = &mut request["params"];
    params["inputResponses"] = json!({ASK: {"action": "accept", "content": {"name": NAME}}});
    params["requestState"] = json!(state);
    request
}

/// One two-round flow on `conn`.
async fn flow(conn: &mut Conn, id: u64) -> Result<(), String> {
    let request = first_round(id);
    let reply = conn.call(&request).await?;
    let result = &reply["result"];
    if result["resultType"] != "input_required" || result["inputRequests"][ASK].is_null() {
        return Err(format!("round 1 did not ask {ASK}: {reply}"));
    }
    let state = result["requestState"]
        .as_str()
        .ok_or_else(|| format!("round 1 without requestState: {reply}"))?
        .to_owned();
    let reply = conn.call(&second_round(request, id + 1, &state)).await?;
    let text = reply["result"]["content"][0]["text"].as_str();
    if reply["result"]["resultType"] != "complete" || text != Some(GREETING) {
        return Err(format!("round 2 did not greet: {reply}"));
    }
    Ok(())
}

/// Flows completed and failed on `connections` connections to `addr` for `length`.
async fn drive(addr: SocketAddr, connections: usize, length: Duration) -> (u64, u64, Duration) {
    let done = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let until = started + length;
    let tasks: Vec<_> = (0..connections as u64)
        .map(|n| {
            let (done, failed) = (Arc::clone(&done), Arc::clone(&failed));
            tokio::spawn(async move {
                let mut conn: Option<Conn> = None;
                let mut id = n << 40;
                while Instant::now() < until {
                    let c = match conn.as_mut() {
                        Some(c) => c,
                        None => match Conn::open(addr).await {
                            Ok(c) => conn.insert(c),
                            Err(e) => {
                                eprintln!("connect: {e}");
                                failed.fetch_add(1, Ordering::Relaxed);
                                tokio::time::sleep(Duration::from_millis(50)).await;
                                continue;
                            }
                        },
                    };
                    id += 2;
                    match flow(c, id).await {
                        Ok(()) => done.fetch_add(1, Ordering::Relaxed),
                        Err(e) => {
                            eprintln!("flow failed: {e}");
                            conn = None;
                            failed.fetch_add(1, Ordering::Relaxed)
                        }
                    };
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("a driver task");
    }
    (
        done.load(Ordering::Relaxed),
        failed.load(Ordering::Relaxed),
        started.elapsed(),
    )
}

/// Both variants answer alike, and both refuse a tampered state.
async fn check(addr: SocketAddr, name: &str) {
    let mut conn = Conn::open(addr).await.expect("connect");
    flow(&mut conn, 1)
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let request = first_round(3);
    let reply = conn.call(&request).await.expect("round 1");
    let state = reply["result"]["requestState"].as_str().unwrap();
    println!(
        "{name}: round 1 reply {} bytes of JSON, its requestState {} chars",
        reply.to_string().len(),
        state.len()
    );
    // Flip one character in the middle of the token.
    let mut bytes = state.as_bytes().to_vec();
    let i = bytes.len() / 2;
    bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(bytes).unwrap();
    let reply = Conn::open(addr)
        .await
        .expect("connect")
        .call(&second_round(request, 4, &tampered))
        .await;
    // rmcp picks the HTTP status of an error reply; either way, no greeting.
    if let Ok(v) = &reply {
        assert!(
            v["error"]["code"] == -32602,
            "{name}: a tampered state was not refused: {v}"
        );
    }
}

fn setting(name: &str, default: u64, range: std::ops::RangeInclusive<u64>) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
        .clamp(*range.start(), *range.end())
}

/// CPU time (ns) of this process's threads so far: (the servers' threads, the rest).
fn cpu_ns() -> (u64, u64) {
    let (mut servers, mut rest) = (0, 0);
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return (0, 0);
    };
    for task in tasks.flatten() {
        let path = task.path();
        let comm = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
        let ns: u64 = std::fs::read_to_string(path.join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse().ok())
            .unwrap_or(0);
        if comm.starts_with("server") {
            servers += ns;
        } else {
            rest += ns;
        }
    }
    (servers, rest)
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// `q` of `v` (0 to 1), interpolated between the two nearest values.
fn quantile(v: &[f64], q: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let at = q * (v.len() - 1) as f64;
    let (lo, hi) = (at.floor() as usize, at.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (at - lo as f64)
}

/// The cost (% fewer flows/s) of each run of a variant against the rmcp runs
/// beside it: the one just before and, when there is one, the one just after
/// (their mean). This host's speed drifts over minutes; runs seconds apart see
/// about the same host, so the drift cancels out of each cost, where the medians
/// of all runs of each variant mix periods.
fn paired_costs(rmcp: &[f64], other: &[f64]) -> Vec<f64> {
    other
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let a = match rmcp.get(i + 1) {
                Some(next) => (rmcp[i] + next) / 2.0,
                None => rmcp[i],
            };
            (a - b) / a * 100.0
        })
        .collect()
}

fn main() {
    let seconds = setting("E2E_SECONDS", 3, 1..=60);
    let pairs = setting("E2E_PAIRS", 10, 1..=60) as usize;
    let connections = setting("E2E_CONNECTIONS", 8, 1..=64) as usize;
    // For profiling one side: E2E_ONLY=rmcp, mrtr or floor (no comparison then).
    let only = std::env::var("E2E_ONLY").ok();
    let spin = std::env::var("E2E_SPIN").is_ok_and(|v| v == "1");
    let floor =
        std::env::var("E2E_FLOOR").is_ok_and(|v| v == "1") || only.as_deref() == Some("floor");
    SPIN.store(spin, Ordering::Relaxed);
    let (plain, with_mrtr, floor_addr) = start_servers();
    let client = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("the client runtime");
    let mut variants = vec![("rmcp", plain), ("mrtr", with_mrtr)];
    if floor {
        variants.insert(1, ("floor", floor_addr));
    }
    let names: Vec<&str> = variants.iter().map(|(n, _)| *n).collect();
    println!(
        "e2e: {pairs} x ({}), {seconds} s each, {connections} connections; \
         servers: 1 worker thread, driver: 1 thread ({}); {} CPUs",
        names.join(", "),
        if spin { "spinning" } else { "sleeping" },
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let wanted = |name: &str| only.as_deref().is_none_or(|o| o == name);
    client.block_on(async {
        for &(name, addr) in &variants {
            if wanted(name) {
                check(addr, name).await;
            }
        }
        // Warm-up: 1 s each, not counted.
        for &(name, addr) in &variants {
            if wanted(name) {
                let (done, _, _) = drive(addr, connections, Duration::from_secs(1)).await;
                println!("{name}: warm-up {done} flows");
            }
        }
    });
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); variants.len()];
    let mut costs: Vec<Vec<f64>> = vec![Vec::new(); variants.len()];
    println!(
        "run  variant  flows/s   flows  failed  server µs/flow  driver µs/flow  loadavg (before)"
    );
    for run in 0..pairs * variants.len() {
        let v = run % variants.len();
        let (name, addr) = variants[v];
        if !wanted(name) {
            continue;
        }
        let before = loadavg();
        let cpu = cpu_ns();
        let (done, failed, took) =
            client.block_on(drive(addr, connections, Duration::from_secs(seconds)));
        let after = cpu_ns();
        let rate = done as f64 / took.as_secs_f64();
        let per_flow = |a: u64, b: u64| (a - b) as f64 / 1000.0 / done.max(1) as f64;
        let (server, driver) = (per_flow(after.0, cpu.0), per_flow(after.1, cpu.1));
        rates[v].push(rate);
        costs[v].push(server);
        println!(
            "{:>3}  {name:<7}  {rate:>7.0}  {done:>6}  {failed:>6}  {server:>14.1}  {driver:>14.1}  {before}",
            run + 1
        );
        assert_eq!(failed, 0, "{name}: {failed} flows failed");
    }
    if only.is_some() {
        return;
    }
    let fmt = |v: &[f64]| {
        v.iter()
            .map(|r| format!("{r:.0}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for (v, name) in names.iter().enumerate() {
        println!(
            "{name}: {} flows/s, median {:.0}",
            fmt(&rates[v]),
            median(&rates[v])
        );
    }
    let (a, ca) = (median(&rates[0]), median(&costs[0]));
    for (v, name) in names.iter().enumerate().skip(1) {
        let (b, cb) = (median(&rates[v]), median(&costs[v]));
        println!(
            "server CPU per flow, median: rmcp {ca:.1} µs, {name} {cb:.1} µs (+{:.1} µs, +{:.0}%)",
            cb - ca,
            (cb - ca) / ca * 100.0
        );
        let paired = paired_costs(&rates[0], &rates[v]);
        let target = if *name == "mrtr" {
            " (target: at most 10%)"
        } else {
            ""
        };
        println!(
            "{name}'s cost vs rmcp: {:.1}% fewer flows/s{target}: the median of {} paired runs \
             (quartiles {:.1}% and {:.1}%); from the medians of all runs, {:.1}%",
            median(&paired),
            paired.len(),
            quantile(&paired, 0.25),
            quantile(&paired, 0.75),
            (a - b) / a * 100.0,
        );
    }
    println!("loadavg after: {}", loadavg());
}
