//! mrtr handlers on an rmcp server: rmcp's Streamable HTTP service on `POST /mcp`,
//! serving the same conformance fixtures and demos as `mrtr serve` (its tools,
//! prompt and resource, from src/bin/mrtr/reference.rs), with `deploy` written as
//! an rmcp `#[tool]` function that runs the mrtr handler.
//!
//! ```sh
//! export MRTR_KEYS=$(cargo run -q -- keygen)   # unset: an ephemeral key, with a warning
//! cargo run --release --example rmcp_server --features rmcp -- --listen 127.0.0.1:3000 \
//!     [--state-ttl SECONDS] [--clock-skew SECONDS]
//! ```
//!
//! One endpoint serves both protocol generations: rmcp routes a request by the
//! version it negotiates. A 2026-07-28 client is served statelessly (every flow
//! rides the sealed `requestState`); a 2025-11-25 client initializes a session,
//! and the same handlers run to completion inside each of its requests, their
//! questions sent to it as `elicitation/create`, `sampling/createMessage` and
//! `roots/list` requests. Every caller is anonymous (as `mrtr serve --anonymous`);
//! a real server resolves the principal from what its authentication layer put
//! into the request (`mrtr::rmcp::Principals::from_http`).
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use clap::Parser;
use mrtr::Service;
use mrtr::rmcp::{Mrtr, Principals, ToolCall, service_prompts, service_resources, service_tools};
use mrtr::server::{KEYS_ENV, KeySource, ServeConfig, build_service};
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

#[path = "../src/bin/mrtr/reference.rs"]
mod reference;

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
        call.run_async(reference::deploy(self.deployments.clone()))
            .await
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
    let keys = KeySource::resolve(None, std::env::var_os(KEYS_ENV))?;
    if keys == KeySource::Ephemeral {
        tracing::warn!(
            "{KEYS_ENV} is not set: using an ephemeral key, so a flow does not survive a \
             restart or move to another instance; set {KEYS_ENV} (`mrtr keygen`)"
        );
    }
    // The same engine as `mrtr serve` (TTL, skew, round limit, in-memory replay guard).
    let mut cfg = ServeConfig::default();
    cfg.keys = keys;
    cfg.state_ttl_secs = args.state_ttl;
    cfg.clock_skew_secs = args.clock_skew;
    cfg.principal = mrtr::server::PrincipalConfig::Anonymous;
    let cfg = cfg.validate()?;
    let deployments = Arc::new(AtomicU64::new(0));
    let counter = deployments.clone();
    let service = Arc::new(build_service(&cfg, move |engine| {
        reference::service(engine, counter)
    })?);
    let server = Server {
        mrtr: Mrtr::new(service.engine().clone(), Principals::anonymous()),
        service,
        deployments,
        tool_router: Server::tool_router(),
    };
    // Both generations on POST /mcp: rmcp serves 2026-07-28 requests statelessly
    // and keeps sessions for clients that initialize (2025-11-25).
    let config = StreamableHttpServerConfig::default().with_json_response(true);
    let mcp: StreamableHttpService<Server, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(server.clone()), Default::default(), config);
    let app = axum::Router::new().nest_service("/mcp", mcp);
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
