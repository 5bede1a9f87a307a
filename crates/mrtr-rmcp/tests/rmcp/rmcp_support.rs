//! An rmcp server whose tools, prompt and resource are mrtr handlers
//! (`mrtr_rmcp`), served by rmcp's own Streamable HTTP service on a loopback
//! port and a Unix socket, in a runtime of its own; and a tracing capture, so
//! tests can read what reached the log.
#![allow(dead_code, unreachable_pub)] // each test crate uses a subset

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use mrtr::engine::{Elicited, Form, RootsAsk, Sampling};
use mrtr::error::{Retry, ToolAdvice};
use mrtr::{Flow, Principal, ToolResult};
use mrtr::{PromptResult, ResourceResult};
#[cfg(feature = "http")]
use mrtr_rmcp::HttpGuard;
use mrtr_rmcp::{Mrtr, Principals, ToolCall};
use rmcp::handler::server::common::FromContextPart;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, GetPromptRequestParams, GetPromptResponse,
    InitializeResult, ListPromptsResult, ListResourcesResult, PaginatedRequestParams, Prompt,
    ReadResourceRequestParams, ReadResourceResponse, Resource, ServerCapabilities,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::Value;

/// The arguments of the extractor-order tools.
#[derive(Debug, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct Echo {
    /// A value the result repeats.
    pub value: String,
}

/// The arguments of `slow`.
#[derive(Debug, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct Pause {
    /// How long it sleeps.
    pub ms: u64,
}

/// The arguments of `deploy`.
#[derive(Debug, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct Deploy {
    /// The service to deploy.
    pub service: String,
}

/// The test server: every tool an mrtr handler on rmcp's tool router.
#[derive(Clone)]
pub struct TestServer {
    mrtr: Mrtr,
    tool_router: ToolRouter<Self>,
    /// How many times `deploy`'s `once` step ran.
    pub deployments: Arc<AtomicU64>,
}

fn name_of(e: &Elicited, field: &str) -> String {
    e.accepted()
        .and_then(|f| f.str(field).map(str::to_owned))
        .unwrap_or_default()
}

#[tool_router]
impl TestServer {
    pub fn new(mrtr: Mrtr) -> Self {
        Self {
            mrtr,
            tool_router: Self::tool_router(),
            deployments: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Asks the user's name (sync handler). It and `deploy` return a
    /// `ToolResult`, which reaches rmcp in its own type; the other tools return
    /// `tool_text`'s JSON value, which takes the JSON path.
    #[tool(description = "Asks your name, then greets you.")]
    async fn greet(&self, call: ToolCall) -> Result<CallToolResponse, ErrorData> {
        call.run(|r| {
            let name = r.elicit(
                "user_name",
                Form::new("What is your name?").string("name", "Name"),
            )?;
            Ok(ToolResult::text(format!(
                "Hello, {}!",
                name_of(&name, "name")
            )))
        })
        .await
    }

    /// Confirm, then act once (typed async handler).
    #[tool(
        description = "Deploys a service after confirmation.",
        input_schema = mrtr_rmcp::input_schema::<Deploy>()
    )]
    async fn deploy(&self, call: ToolCall) -> Result<CallToolResponse, ErrorData> {
        let deployments = self.deployments.clone();
        call.run_typed(move |r, args: Deploy| {
            let deployments = deployments.clone();
            async move {
                let answer = r.elicit(
                    "confirm",
                    Form::confirm(format!("Deploy {}?", args.service)).issued_only(),
                )?;
                match answer {
                    Elicited::Accepted(f) if f.bool("confirm") == Some(true) => {
                        let n: u64 = r
                            .once_async("deploy", || async move {
                                Ok(deployments.fetch_add(1, Ordering::SeqCst) + 1)
                            })
                            .await?;
                        Ok(ToolResult::text(format!(
                            "Deployed {} (deployment #{n}).",
                            args.service
                        )))
                    }
                    _ => Err(Flow::failed(ToolAdvice::new(
                        "The user did not confirm the deployment",
                        Retry::DoesNotHelp,
                    ))),
                }
            }
        })
        .await
    }

    /// Reports what rmcp's own `RequestState`/`InputResponses` extractors would
    /// find beside a `ToolCall` (they must find nothing: the flow took both).
    #[tool(description = "Confirms, then reports the leftovers rmcp's extractors see.")]
    async fn leftovers(
        &self,
        call: ToolCall,
        Leftovers(state, answers): Leftovers,
    ) -> Result<CallToolResponse, ErrorData> {
        call.run(move |r| {
            let _ = r.elicit("confirm", Form::confirm("Go?"))?;
            Ok(ToolResult::text(format!("state={state} answers={answers}")))
        })
        .await
    }

    /// The mrtr extractor before rmcp's `Parameters`.
    #[tool(description = "Echoes after a confirmation (ToolCall first).")]
    async fn order_mrtr_first(
        &self,
        call: ToolCall,
        Parameters(args): Parameters<Echo>,
    ) -> Result<CallToolResponse, ErrorData> {
        call.run(move |r| {
            let _ = r.elicit("confirm", Form::confirm("Echo?"))?;
            let bound = r.argument("value").cloned().unwrap_or(Value::Null);
            Ok(ToolResult::text(format!(
                "params={} bound={bound}",
                args.value
            )))
        })
        .await
    }

    /// rmcp's `Parameters` before the mrtr extractor.
    #[tool(description = "Echoes after a confirmation (Parameters first).")]
    async fn order_params_first(
        &self,
        Parameters(args): Parameters<Echo>,
        call: ToolCall,
    ) -> Result<CallToolResponse, ErrorData> {
        call.run(move |r| {
            let _ = r.elicit("confirm", Form::confirm("Echo?"))?;
            let bound = r.argument("value").cloned().unwrap_or(Value::Null);
            Ok(ToolResult::text(format!(
                "params={} bound={bound}",
                args.value
            )))
        })
        .await
    }

    /// A required sampling call and an optional form.
    #[tool(description = "Asks the client's model (required) and the user (optional).")]
    async fn ask_model(&self, call: ToolCall) -> Result<CallToolResponse, ErrorData> {
        call.run(|r| {
            let form = r.elicit(
                "user_name",
                Form::new("Your name?").string("name", "Name").optional(),
            );
            let sampled = r.sample(
                "capital",
                Sampling::prompt("What is the capital of France?", 50),
            );
            let (form, sampled) = (form?, sampled?);
            Ok(ToolResult::text(format!(
                "model={} name={}",
                sampled.map(|m| m.text()).unwrap_or_default(),
                name_of(&form, "name")
            )))
        })
        .await
    }

    /// The client's roots.
    #[tool(description = "Lists the client's roots.")]
    async fn list_roots(&self, call: ToolCall) -> Result<CallToolResponse, ErrorData> {
        call.run(|r| {
            let roots = r.roots("roots", RootsAsk::new())?.unwrap_or_default();
            let uris: Vec<&str> = roots.iter().map(|x| x.uri.as_str()).collect();
            Ok(ToolResult::text(format!("roots={}", uris.join(","))))
        })
        .await
    }

    /// Sleeps `ms` milliseconds (an async handler that is not ready on its first
    /// poll), then answers.
    #[tool(description = "Sleeps, then answers.")]
    async fn slow(
        &self,
        call: ToolCall,
        Parameters(Pause { ms }): Parameters<Pause>,
    ) -> Result<CallToolResponse, ErrorData> {
        call.run(move |_r| async move {
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
            Ok(ToolResult::text(format!("slept {ms} ms")))
        })
        .await
    }

    /// Panics in its synchronous handler (which runs with no future around it).
    #[tool(description = "Panics (sync handler).")]
    async fn panics_sync(&self, call: ToolCall) -> Result<CallToolResponse, ErrorData> {
        call.run(|_r| -> Result<ToolResult, Flow> { panic!("a sync handler's bug") })
            .await
    }

    /// Panics in its async handler, after its first poll.
    #[tool(description = "Panics (async handler).")]
    async fn panics_async(&self, call: ToolCall) -> Result<CallToolResponse, ErrorData> {
        call.run(|_r| async move {
            tokio::task::yield_now().await;
            panic!("an async handler's bug");
            #[allow(unreachable_code)]
            Ok(ToolResult::text("unreachable"))
        })
        .await
    }

    /// One more question every round, for ever (until a limit ends the flow).
    #[tool(description = "Asks one more question every round.")]
    async fn forever(&self, call: ToolCall) -> Result<CallToolResponse, ErrorData> {
        call.run(|r| -> Result<ToolResult, Flow> {
            let mut i = 0u32;
            loop {
                let _ = r.elicit(&format!("q{i}"), Form::new("Again?").string("name", "Name"))?;
                i += 1;
            }
        })
        .await
    }

    /// Two rounds: the second question is asked after the first is answered.
    #[tool(description = "Two rounds of questions.")]
    async fn two_rounds(&self, call: ToolCall) -> Result<CallToolResponse, ErrorData> {
        call.run(|r| async move {
            let name = r.elicit("step1", Form::new("Name?").string("name", "Name"))?;
            let color = r.elicit("step2", Form::new("Color?").string("color", "Color"))?;
            Ok(ToolResult::text(format!(
                "{} likes {}",
                name_of(&name, "name"),
                name_of(&color, "color")
            )))
        })
        .await
    }
}

/// The prompt and resource URIs.
pub const PROMPT: &str = "intro";
pub const NOTE: &str = "mrtr://test/note";

#[tool_handler(router = self.tool_router)]
impl ServerHandler for TestServer {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .enable_resources()
                .build(),
        )
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

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(vec![Prompt::new(
            PROMPT,
            Some("Asks for context first."),
            None,
        )]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if request.name != PROMPT {
            return Err(ErrorData::invalid_params("Unknown prompt", None));
        }
        self.mrtr
            .get_prompt(request, context, |r| {
                let ctx = r.elicit(
                    "user_context",
                    Form::new("What context?").string("context", "Context"),
                )?;
                Ok(PromptResult::new()
                    .description("A prompt from your context")
                    .user_text(format!("Use this context: {}", name_of(&ctx, "context"))))
            })
            .await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![Resource::new(
            NOTE, "note",
        )]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.mrtr
            .read_resource(request, context, |r| async move {
                match r.elicit("reveal", Form::confirm("Reveal the note?"))? {
                    Elicited::Accepted(f) if f.bool("confirm") == Some(true) => {
                        Ok(ResourceResult::text(NOTE, "text/plain", "the note"))
                    }
                    _ => Err(Flow::failed(ToolAdvice::new(
                        "The user chose not to reveal the note",
                        Retry::DoesNotHelp,
                    ))),
                }
            })
            .await
    }
}

/// A server whose `call_tool` is the one `#[tool_handler]` generates: its
/// `ToolCall` has nothing kept to bind to, and must fail closed.
#[derive(Clone)]
pub struct Unrouted {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Unrouted {
    pub fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = "Echoes (Parameters first, rmcp's own call_tool).")]
    async fn order_params_first(
        &self,
        Parameters(args): Parameters<Echo>,
        call: ToolCall,
    ) -> Result<CallToolResponse, ErrorData> {
        call.run(move |r| {
            let _ = r.elicit("confirm", Form::confirm("Echo?"))?;
            Ok(ToolResult::text(args.value.clone()))
        })
        .await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Unrouted {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
    }
}

/// The principal header the tests' resolver reads (an authenticating proxy's).
pub const USER_HEADER: &str = "x-test-user";

/// Principals from [`USER_HEADER`]; a request without it is refused.
pub fn header_principals() -> Principals {
    Principals::from_http(|parts| {
        let user = parts.headers.get(USER_HEADER)?.to_str().ok()?;
        Some(Principal::subject(user))
    })
}

/// A running rmcp server: `POST /mcp` on `addr` (TCP) and on `socket` (Unix).
pub struct Running {
    pub addr: std::net::SocketAddr,
    pub socket: PathBuf,
    pub server: TestServer,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// rmcp's Streamable HTTP service for `make`'s servers: stateless for
/// 2026-07-28 requests, sessions for 2025-11-25 clients, JSON responses.
pub fn http_service<S, F>(make: F) -> StreamableHttpService<S, LocalSessionManager>
where
    S: ServerHandler + Send + 'static,
    F: Fn() -> S + Send + Sync + 'static,
{
    let config = StreamableHttpServerConfig::default().with_json_response(true);
    StreamableHttpService::new(move || Ok(make()), Default::default(), config)
}

/// Starts [`TestServer`] on `mrtr` behind `mrtr_rmcp::HttpGuard`: one guard and
/// one session manager behind both listeners, so a session opened on one is
/// the same session on the other.
#[cfg(feature = "http")]
pub fn start_guarded(mrtr: Mrtr) -> Running {
    let server = TestServer::new(mrtr.clone());
    let s = server.clone();
    let sessions = Arc::new(LocalSessionManager::default());
    let guard = HttpGuard::new(&mrtr, Arc::clone(&sessions)).expect("an HTTP resolver");
    let config = StreamableHttpServerConfig::default().with_json_response(true);
    let mcp = StreamableHttpService::new(move || Ok(s.clone()), sessions, config);
    let guarded = guard.wrap(mcp);
    start_router(server, move || {
        axum::Router::new().nest_service("/mcp", guarded.clone())
    })
}

/// Starts [`TestServer`] on `mrtr` in a runtime of its own.
pub fn start(mrtr: Mrtr) -> Running {
    let server = TestServer::new(mrtr);
    let s = server.clone();
    start_router(server, move || {
        let s = s.clone();
        axum::Router::new().nest_service("/mcp", http_service(move || s.clone()))
    })
}

/// A server whose `get_prompt` and `read_resource` run an mrtr handler for any
/// name or URI a client sends, as an application that routes them itself: the
/// synchronous forms for a name or URI ending in an odd digit, the async forms
/// otherwise. Every handler completes at once.
#[derive(Clone)]
pub struct AnyTarget {
    mrtr: Mrtr,
}

/// Whether `target` ends in an odd digit (it then takes the synchronous form).
fn odd(target: &str) -> bool {
    target
        .bytes()
        .last()
        .is_some_and(|b| b.is_ascii_digit() && (b - b'0') % 2 == 1)
}

impl ServerHandler for AnyTarget {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(
            ServerCapabilities::builder()
                .enable_prompts()
                .enable_resources()
                .build(),
        )
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if odd(&request.name) {
            self.mrtr
                .get_prompt(request, context, |_r| {
                    Ok(PromptResult::new()
                        .description("any")
                        .user_text("any prompt"))
                })
                .await
        } else {
            self.mrtr
                .get_prompt(request, context, |_r| async {
                    Ok(PromptResult::new()
                        .description("any")
                        .user_text("any prompt"))
                })
                .await
        }
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.clone();
        if odd(&uri) {
            self.mrtr
                .read_resource(request, context, move |_r| {
                    Ok(ResourceResult::text(&uri, "text/plain", "any"))
                })
                .await
        } else {
            self.mrtr
                .read_resource(request, context, move |_r| {
                    let uri = uri.clone();
                    async move { Ok(ResourceResult::text(&uri, "text/plain", "any")) }
                })
                .await
        }
    }
}

/// Starts [`AnyTarget`] on `mrtr`.
pub fn start_any_target(mrtr: Mrtr) -> Running {
    let any = AnyTarget { mrtr: mrtr.clone() };
    start_router(TestServer::new(mrtr), move || {
        let any = any.clone();
        axum::Router::new().nest_service("/mcp", http_service(move || any.clone()))
    })
}

/// Starts [`Unrouted`].
pub fn start_unrouted(mrtr: Mrtr) -> Running {
    start_router(TestServer::new(mrtr), || {
        axum::Router::new().nest_service("/mcp", http_service(Unrouted::new))
    })
}

fn start_router<F>(server: TestServer, router: F) -> Running
where
    F: Fn() -> axum::Router + Send + 'static,
{
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let socket = std::env::temp_dir().join(format!(
        "mrtr-rmcp-{}-{}.sock",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_file(&socket);
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (shutdown_tx, shutdown_rx) = tokio::sync::oneshot::channel::<()>();
    let path = socket.clone();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let unix = tokio::net::UnixListener::bind(&path).unwrap();
            addr_tx.send(tcp.local_addr().unwrap()).unwrap();
            let a = tokio::spawn(axum::serve(tcp, router()).into_future());
            let b = tokio::spawn(axum::serve(unix, router()).into_future());
            let _ = shutdown_rx.await;
            a.abort();
            b.abort();
        });
    });
    let addr = addr_rx.recv().unwrap();
    Running {
        addr,
        socket,
        server,
        shutdown: Some(shutdown_tx),
        thread: Some(thread),
    }
}

/// Everything written through `tracing` in this test process, for log checks.
pub fn captured_log() -> String {
    String::from_utf8_lossy(&log_buffer().lock().unwrap()).into_owned()
}

fn log_buffer() -> &'static Arc<Mutex<Vec<u8>>> {
    static BUF: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    BUF.get_or_init(|| Arc::new(Mutex::new(Vec::new())))
}

/// Installs the capture (once per test process).
pub fn capture_log() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let buf = Arc::clone(log_buffer());
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter("mrtr=info")
            .with_ansi(false)
            .with_writer(move || Writer(Arc::clone(&buf)))
            .finish();
        let _ = tracing::subscriber::set_global_default(subscriber);
    });
}

struct Writer(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Writer {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The text of a completed `CallToolResult` in a JSON-RPC reply.
pub fn text_of(v: &Value) -> &str {
    v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

/// A server that serves a whole mrtr [`mrtr::Service`] on rmcp (the bridge the
/// rmcp example uses): its tools, prompts and resources.
#[derive(Clone)]
pub struct Bridged {
    mrtr: Mrtr,
    service: Arc<mrtr::Service>,
}

impl ServerHandler for Bridged {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .enable_resources()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, ErrorData> {
        Ok(rmcp::model::ListToolsResult::with_all_items(
            mrtr_rmcp::service_tools(&self.service),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.mrtr
            .call_service_tool(&self.service, request, context)
            .await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.mrtr
            .get_service_prompt(&self.service, request, context)
            .await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.mrtr
            .read_service_resource(&self.service, request, context)
            .await
    }
}

/// Starts [`Bridged`] serving `service` (anonymous callers, the service's engine).
pub fn start_bridged(service: mrtr::Service) -> Running {
    let service = Arc::new(service);
    let bridged = Bridged {
        mrtr: Mrtr::new(service.engine().clone(), Principals::anonymous()),
        service,
    };
    let unused = TestServer::new(bridged.mrtr.clone());
    start_router(unused, move || {
        let b = bridged.clone();
        axum::Router::new().nest_service("/mcp", http_service(move || b.clone()))
    })
}

/// Whether a tool call still carries `requestState` and `inputResponses` where
/// rmcp's own extractors take them from (peeked, not taken).
pub struct Leftovers(pub bool, pub bool);

impl<S> FromContextPart<ToolCallContext<'_, S>> for Leftovers {
    fn from_context_part(context: &mut ToolCallContext<'_, S>) -> Result<Self, ErrorData> {
        Ok(Self(
            context.request_state.is_some(),
            context.input_responses.is_some(),
        ))
    }
}
