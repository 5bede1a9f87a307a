use std::sync::Arc;

use mrtr::engine::{Elicited, Form};
use mrtr::{Engine, Keyring, ToolResult};
use mrtr_rmcp::{Mrtr, Principals, ToolCall};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{CallToolRequestParams, CallToolResponse, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, tool, tool_handler, tool_router};

#[derive(Clone)]
pub struct Greeter {
    mrtr: Mrtr,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Greeter {
    #[tool(description = "Asks your name, then greets you.")]
    async fn greet(&self, call: ToolCall) -> Result<CallToolResponse, ErrorData> {
        call.run(|round| {
            match round.elicit("name", Form::new("Your name?").string("name", "Name"))? {
                Elicited::Accepted(f) => Ok(ToolResult::text(format!(
                    "Hello, {}!",
                    f.str("name").unwrap_or("you")
                ))),
                _ => Ok(ToolResult::text("Hello, whoever you are!")),
            }
        })
        .await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Greeter {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    // What mrtr adds to rmcp's own call_tool: the call's params, kept for its ToolCall.
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

/// `POST /mcp`: stateless for 2026-07-28 clients, sessions for 2025-11-25 ones.
pub fn app(keyring: Keyring) -> axum::Router {
    let engine = Engine::new(keyring, "https://mcp.example.com");
    let server = Greeter {
        mrtr: Mrtr::new(engine, Principals::anonymous()),
        tool_router: Greeter::tool_router(),
    };
    let config = StreamableHttpServerConfig::default();
    let sessions = LocalSessionManager::default();
    let mcp = StreamableHttpService::new(move || Ok(server.clone()), Arc::new(sessions), config);
    axum::Router::new().nest_service("/mcp", mcp)
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    axum::serve(listener, app(Keyring::ephemeral())).await
}
