//! mrtr handlers on an rmcp server: rmcp's Streamable HTTP service on `POST /mcp`,
//! serving the same conformance fixtures and demos as `mrtr serve` (its tools,
//! prompt and resource, from src/bin/mrtr/reference.rs), with `deploy` written as
//! an rmcp `#[tool]` function that runs the mrtr handler.
//!
//! ```sh
//! export MRTR_KEYS=$(cargo run -q -- keygen)   # unset: an ephemeral key, with a warning
//! cargo run --release -p mrtr-rmcp --example rmcp_server --features http -- --listen 127.0.0.1:3000 \
//!     [--state-ttl SECONDS] [--clock-skew SECONDS] [--metrics-listen ADDR] \
//!     [--ask-timeout SECONDS] [--legacy-flow-timeout SECONDS]
//! ```
//!
//! One endpoint serves both protocol generations: rmcp routes a request by the
//! version it negotiates. A 2026-07-28 client is served statelessly (every flow
//! rides the sealed `requestState`); a 2025-11-25 client initializes a session,
//! and the same handlers run to completion inside each of its requests, their
//! questions sent to it as `elicitation/create`, `sampling/createMessage` and
//! `roots/list` requests. Every caller is anonymous (as `mrtr serve --anonymous`);
//! a real server resolves the principal from what its authentication layer put
//! into the request (`mrtr_rmcp::Principals::from_http`).
//!
//! rmcp's service sits behind `mrtr_rmcp::HttpGuard`, which refuses a body with
//! duplicate JSON keys as `mrtr serve` does (-32700) and binds each 2025-11-25
//! session to the principal that opened it. `--metrics-listen ADDR` installs the
//! Prometheus recorder and serves `GET /metrics` on a listener of its own, as
//! `mrtr serve --metrics-listen` does.
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use clap::Parser;
use mrtr::Service;
use mrtr::replay::MemoryReplayGuard;
use mrtr::seal::SealConfig;
use mrtr::{Engine, Keyring, Timestamp};
use mrtr_rmcp::{
    HttpGuard, Mrtr, Principals, ToolCall, service_prompts, service_resources, service_tools,
};
use mrtr_server::{KEYS_ENV, keyring_from_env};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, GetPromptRequestParams, GetPromptResponse,
    Implementation, JsonObject, ListPromptsResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, tool, tool_router};

use mrtr_cli::reference;

/// Serves the reference fixtures on rmcp's Streamable HTTP service.
#[derive(Debug, Parser)]
#[command(name = "rmcp_server")]
struct Args {
    /// Address to listen on; port 0 picks a free port (logged as `listening on http://ADDR/mcp`).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:3000")]
    listen: SocketAddr,
    /// How long one round's requestState stays valid, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = mrtr::defaults::STATE_TTL.as_secs())]
    state_ttl: u64,
    /// How far the clocks of a fleet may disagree, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = mrtr::defaults::CLOCK_SKEW.as_secs())]
    clock_skew: u64,
    /// Serve Prometheus metrics (GET /metrics) on ADDR, a listener of its own
    /// (loopback or scraper-only: it shows the private requestState rejection
    /// reasons). Port 0 picks a free port (logged as `metrics on http://ADDR/metrics`).
    /// Default: off.
    #[arg(long, value_name = "ADDR")]
    metrics_listen: Option<SocketAddr>,
    /// How long a 2025-11-25 client has to answer one question, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = mrtr_rmcp::DEFAULT_ASK_TIMEOUT.as_secs())]
    ask_timeout: u64,
    /// The bound of a whole 2025-11-25 flow (one open request), in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = mrtr_rmcp::DEFAULT_LEGACY_FLOW_TIMEOUT.as_secs())]
    legacy_flow_timeout: u64,
}

/// The rmcp server: `deploy` on rmcp's tool router, everything else from the
/// reference [`Service`], all on one [`Mrtr`].
#[derive(Clone)]
struct Server {
    mrtr: Mrtr,
    service: Arc<Service>,
    deployments: Arc<AtomicU64>,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Server {
    /// `deploy`, an rmcp tool whose body is the reference server's mrtr handler.
    #[tool(
        description = reference::DEPLOY_DESCRIPTION,
        input_schema = deploy_schema()
    )]
    async fn deploy(&self, call: ToolCall) -> Result<CallToolResponse, ErrorData> {
        call.run(reference::deploy(self.deployments.clone())).await
    }
}

fn deploy_schema() -> Arc<JsonObject> {
    match reference::deploy_schema() {
        serde_json::Value::Object(m) => Arc::new(m),
        _ => Arc::new(JsonObject::new()),
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new(
            "mrtr-rmcp-example",
            env!("CARGO_PKG_VERSION"),
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = self.tool_router.list_all();
        tools.extend(
            service_tools(&self.service)
                .into_iter()
                .filter(|t| !self.tool_router.has_route(&t.name)),
        );
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if self.tool_router.has_route(&request.name) {
            self.mrtr
                .call_tool(self, &self.tool_router, request, context)
                .await
        } else {
            self.mrtr
                .call_service_tool(&self.service, request, context)
                .await
        }
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(service_prompts(
            &self.service,
        )))
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

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(service_resources(
            &self.service,
        )))
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

/// The path of the scrape endpoint.
const METRICS_PATH: &str = "/metrics";

/// How often the recorder folds histogram samples into its buckets between
/// scrapes (as `mrtr serve`), so memory stays bounded when nobody scrapes.
const METRICS_UPKEEP: Duration = Duration::from_secs(5);

/// Installs the Prometheus recorder with mrtr's histogram buckets, binds `listen`
/// and returns the task serving the recorder's text there: `GET /metrics` only,
/// on the accept loop `mrtr serve` uses, with a small connection cap and short
/// timeouts (a scraper needs no more).
async fn metrics_listener(
    listen: SocketAddr,
) -> Result<impl Future<Output = ()> + Send + 'static, Box<dyn std::error::Error>> {
    use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
    let builder = mrtr::metrics::HISTOGRAM_BUCKETS
        .iter()
        .try_fold(PrometheusBuilder::new(), |b, (name, bounds)| {
            b.set_buckets_for_metric(Matcher::Full((*name).to_owned()), bounds)
        })?;
    let handle = builder.install_recorder()?;
    mrtr::metrics::describe();
    let upkeep = handle.clone();
    std::thread::Builder::new()
        .name("metrics-upkeep".into())
        .spawn(move || {
            loop {
                std::thread::sleep(METRICS_UPKEEP);
                upkeep.run_upkeep();
            }
        })?;
    let scrape = move || {
        let text = handle.render();
        async move {
            (
                [(
                    axum::http::header::CONTENT_TYPE,
                    "text/plain; version=0.0.4; charset=utf-8",
                )],
                text,
            )
        }
    };
    let app = axum::Router::new().route(METRICS_PATH, axum::routing::get(scrape));
    let options = mrtr_server::http::ServeOptions::default()
        .with_max_connections(16)
        .with_header_read_timeout(Duration::from_secs(5))
        .with_idle_timeout(Duration::from_secs(5));
    let listener = tokio::net::TcpListener::bind(listen).await?;
    let local = listener.local_addr()?;
    tracing::info!(metrics_addr = %local, "metrics on http://{local}{METRICS_PATH}");
    Ok(async move {
        let stop = std::future::pending::<()>();
        if let Err(e) = mrtr_server::http::serve_with(listener, app, options, stop).await {
            tracing::error!(error = %e, "metrics listener stopped");
        }
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    // Logs (mrtr's private diagnostics included) go to stderr; RUST_LOG filters them
    // (default: info, and rmcp's own per-request lines only from warn up).
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
                tracing_subscriber::EnvFilter::new("info,rmcp::service=warn,rmcp::transport=warn")
            }),
        )
        .init();
    // The same key loading as `mrtr serve`: MRTR_KEYS, else a per-process key.
    let keyring = keyring_from_env()?.unwrap_or_else(|| {
        tracing::warn!(
            "{KEYS_ENV} is not set: using an ephemeral key, so a flow does not survive a \
             restart or move to another instance; set {KEYS_ENV} (`mrtr keygen`)"
        );
        Keyring::ephemeral()
    });
    // The engine `mrtr serve` builds: TTL, skew, the audience, the in-memory replay
    // guard (a side effect behind `Round::once` does not repeat on a replay).
    let seal = SealConfig::default()
        .with_ttl(Duration::from_secs(args.state_ttl))?
        .with_clock_skew(Duration::from_secs(args.clock_skew));
    let engine = Engine::new(keyring, mrtr::defaults::AUDIENCE)
        .with_seal_config(seal)
        .with_replay_guard(Arc::new(MemoryReplayGuard::new(Timestamp::now())));
    let deployments = Arc::new(AtomicU64::new(0));
    let service = Arc::new(reference::service(engine, deployments.clone()));
    let mrtr = Mrtr::new(service.engine().clone(), Principals::anonymous())
        .with_ask_timeout(Duration::from_secs(args.ask_timeout))
        .with_legacy_flow_timeout(Duration::from_secs(args.legacy_flow_timeout));
    let server = Server {
        mrtr: mrtr.clone(),
        service,
        deployments,
        tool_router: Server::tool_router(),
    };
    // Installed before the MCP listener is bound, so every request is counted.
    if let Some(listen) = args.metrics_listen {
        tokio::spawn(metrics_listener(listen).await?);
    }
    // Both generations on POST /mcp: rmcp serves 2026-07-28 requests statelessly
    // and keeps sessions for clients that initialize (2025-11-25); the guard sees
    // every request first, and the sessions rmcp's service keeps.
    let config = StreamableHttpServerConfig::default().with_json_response(true);
    let sessions = Arc::new(LocalSessionManager::default());
    let guard = HttpGuard::new(&mrtr, Arc::clone(&sessions))?;
    let mcp: StreamableHttpService<Server, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(server.clone()), sessions, config);
    let app = axum::Router::new().nest_service("/mcp", guard.wrap(mcp));
    let listener = tokio::net::TcpListener::bind(args.listen).await?;
    let local = listener.local_addr()?;
    tracing::info!("listening on http://{local}/mcp");
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
