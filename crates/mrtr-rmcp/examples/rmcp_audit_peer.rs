//! An MRTR peer on rmcp alone, for `mrtr audit` (scripts/audit-peers.sh): no mrtr
//! here, only rmcp 3.11's Streamable HTTP service and its own `RequestStateCodec`
//! (the `request-state` feature), used as its documentation recommends.
//!
//! ```sh
//! cargo build -p mrtr-rmcp --example rmcp_audit_peer
//! PEER_STATE_KEY=secret PEER_PORT=0 target/debug/examples/rmcp_audit_peer
//! ```
//!
//! requestState: `RequestStateCodec::new_with_keyring("k1", [("k1", key)])`, so the
//! `rs2` format (key id `k1`, HMAC-SHA256, signed, not encrypted). Each state is
//! sealed with `SealOptions` carrying a TTL and associated data, the binding the
//! codec's docs suggest: the principal and the originating request
//! (`user:<principal>|<method>:<name>|<arguments JSON>`), authenticated but not
//! stored in the token. Every failure to open a state is answered with one
//! error, -32602 "Invalid requestState", as rmcp's docs ask of applications.
//!
//! Fixture surface (same on every audit peer):
//! - tool `confirm_action {item}`: form elicitation key `confirm` (boolean
//!   `confirm`), then `done: <item>` or `cancelled: <item>`;
//! - tool `ask_name {}`: key `name` (string `name`), then `Hello, <name>!`;
//! - prompt `review`: key `focus` (string `focus`), then one user message.
//!
//! An answer counts only when a state that opens says its question was asked;
//! a call without a state (or without the answer) is asked again.
//!
//! Toy authentication: `Authorization: Bearer alice-token` is alice, `Bearer
//! bob-token` is bob, anything else (or nothing) is anonymous (the empty
//! principal). rmcp has no server-side principal of its own; the handler reads
//! the header from the `http::request::Parts` rmcp's service puts in the
//! request context, and the principal goes into the associated data.
//!
//! Environment:
//! - `PEER_STATE_KEY`: the key is SHA-256(PEER_STATE_KEY) (32 bytes, the codec's
//!   minimum). Unset: a key from the process id and the clock (test peer only).
//! - `PEER_STATE_TTL`: the TTL in seconds (default 600; `0` = no TTL, rmcp's
//!   own default when `SealOptions::ttl` is not called).
//! - `PEER_PORT`: the port on 127.0.0.1 (default 0, a free port).
//!
//! Prints `listening on http://127.0.0.1:PORT/mcp` on stderr when ready.
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequest,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, Implementation, InputRequest,
    InputRequiredResult, JsonObject, ListPromptsResult, ListToolsResult, PaginatedRequestParams,
    Prompt, PromptMessage, RequestStateCodec, Role, SealOptions, ServerCapabilities, ServerConfig,
    Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// What a state says: which question was asked.
#[derive(serde::Serialize, serde::Deserialize)]
struct Asked {
    asked: String,
}

/// The peer: rmcp's codec and the state TTL.
#[derive(Clone)]
struct Peer {
    codec: Arc<RequestStateCodec>,
    ttl: Option<Duration>,
}

impl std::fmt::Debug for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peer")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

/// The toy principal of a request: `alice`, `bob`, or `""` (anonymous).
fn principal(context: &RequestContext<RoleServer>) -> &'static str {
    let header = context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|p| p.headers.get(http::header::AUTHORIZATION))
        .and_then(|v| v.to_str().ok());
    match header {
        Some("Bearer alice-token") => "alice",
        Some("Bearer bob-token") => "bob",
        _ => "",
    }
}

/// The associated data of a state: the principal and the originating request.
fn binding(
    context: &RequestContext<RoleServer>,
    method: &str,
    name: &str,
    arguments: Option<&JsonObject>,
) -> Vec<u8> {
    let mut aad = format!("user:{}|{method}:{name}|", principal(context)).into_bytes();
    let empty = JsonObject::new();
    serde_json::to_writer(&mut aad, arguments.unwrap_or(&empty)).expect("a JSON object serializes");
    aad
}

fn bad_state() -> ErrorData {
    ErrorData::invalid_params("Invalid requestState", None)
}

fn internal() -> ErrorData {
    ErrorData::internal_error("Internal error", None)
}

/// The one-field form asking `key`.
fn form(key: &str, message: &str, boolean: bool) -> Result<InputRequest, ErrorData> {
    let builder = ElicitationSchema::builder();
    let builder = if boolean {
        builder.required_bool_property(key, |s| s)
    } else {
        builder.required_string_property(key, |s| s)
    };
    let schema = builder.build().map_err(|_| internal())?;
    Ok(InputRequest::Elicitation(ElicitRequest::new(
        ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: message.into(),
            requested_schema: schema,
        },
    )))
}

impl Peer {
    /// Round 1 (or a re-ask): the form under `key`, with a state saying so.
    fn ask(
        &self,
        key: &str,
        message: &str,
        boolean: bool,
        aad: &[u8],
    ) -> Result<InputRequiredResult, ErrorData> {
        let mut opts = SealOptions::new().associated_data(aad);
        if let Some(ttl) = self.ttl {
            opts = opts.ttl(ttl);
        }
        let state = self
            .codec
            .seal_json_with(&Asked { asked: key.into() }, &opts)
            .map_err(|_| internal())?;
        let asks = [(key.to_owned(), form(key, message, boolean)?)]
            .into_iter()
            .collect();
        Ok(InputRequiredResult::new(Some(asks), Some(state)))
    }

    /// The answer to `key`, when a state that opens says it was asked and the
    /// retry carries an elicitation result for it. A state that does not open is an
    /// error; no state or no answer is `None` (ask again).
    fn answer(
        &self,
        key: &str,
        state: Option<&str>,
        responses: Option<&rmcp::model::InputResponses>,
        aad: &[u8],
    ) -> Result<Option<ElicitResult>, ErrorData> {
        let Some(state) = state else { return Ok(None) };
        let asked: Asked = self
            .codec
            .open_json_with(state, aad)
            .map_err(|_| bad_state())?;
        if asked.asked != key {
            return Ok(None);
        }
        Ok(responses
            .and_then(|r| r.get(key))
            .and_then(|v| serde_json::from_value::<ElicitResult>(v.clone()).ok()))
    }
}

/// The accepted content's `field`, if the user accepted.
fn accepted<'a>(answer: &'a ElicitResult, field: &str) -> Option<&'a Value> {
    match answer.action {
        ElicitationAction::Accept => answer.content.as_ref().and_then(|c| c.get(field)),
        _ => None,
    }
}

fn text(t: String) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(t)]).into()
}

fn schema(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(JsonObject::new()),
    }
}

impl ServerHandler for Peer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .build(),
        )
        .with_server_info(Implementation::new("mrtr-audit-peer-rmcp", "1.0.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![
            Tool::new(
                "confirm_action",
                "Ask the user to confirm an action on item.",
                schema(json!({
                    "type": "object",
                    "properties": {"item": {"type": "string"}},
                    "required": ["item"]
                })),
            ),
            Tool::new(
                "ask_name",
                "Ask the user name and greet them.",
                schema(json!({"type": "object", "properties": {}})),
            ),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let aad = binding(
            &context,
            "tools/call",
            &request.name,
            request.arguments.as_ref(),
        );
        let state = request.request_state.as_deref();
        let responses = request.input_responses.as_ref();
        match &*request.name {
            "confirm_action" => {
                let item = request
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("item"))
                    .and_then(Value::as_str)
                    .ok_or_else(|| ErrorData::invalid_params("item: a string is required", None))?
                    .to_owned();
                let Some(answer) = self.answer("confirm", state, responses, &aad)? else {
                    let message = format!("Confirm the action on {item}?");
                    return Ok(self.ask("confirm", &message, true, &aad)?.into());
                };
                Ok(text(match accepted(&answer, "confirm") {
                    Some(Value::Bool(true)) => format!("done: {item}"),
                    _ => format!("cancelled: {item}"),
                }))
            }
            "ask_name" => {
                let answer = self.answer("name", state, responses, &aad)?;
                match answer
                    .as_ref()
                    .and_then(|a| accepted(a, "name"))
                    .and_then(Value::as_str)
                {
                    Some(name) => Ok(text(format!("Hello, {name}!"))),
                    None => Ok(self.ask("name", "What is your name?", false, &aad)?.into()),
                }
            }
            other => Err(ErrorData::invalid_params(
                format!("unknown tool: {other}"),
                None,
            )),
        }
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(vec![Prompt::new(
            "review",
            Some("A review prompt that asks what to focus on."),
            None,
        )]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if request.name != "review" {
            return Err(ErrorData::invalid_params(
                format!("unknown prompt: {}", request.name),
                None,
            ));
        }
        let aad = binding(
            &context,
            "prompts/get",
            &request.name,
            request.arguments.as_ref(),
        );
        let answer = self.answer(
            "focus",
            request.request_state.as_deref(),
            request.input_responses.as_ref(),
            &aad,
        )?;
        match answer
            .as_ref()
            .and_then(|a| accepted(a, "focus"))
            .and_then(Value::as_str)
        {
            Some(focus) => Ok(GetPromptResult::new(vec![PromptMessage::new_text(
                Role::User,
                format!("Please review the code, focusing on {focus}."),
            )])
            .into()),
            None => {
                let ask = self.ask("focus", "What should the review focus on?", false, &aad)?;
                Ok(GetPromptResponse::InputRequired(ask))
            }
        }
    }
}

/// The 32-byte key: SHA-256(PEER_STATE_KEY), or of the pid and clock when unset.
fn key() -> Vec<u8> {
    let seed = std::env::var("PEER_STATE_KEY")
        .ok()
        .filter(|k| !k.is_empty())
        .unwrap_or_else(|| {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default();
            format!("ephemeral:{}:{}", std::process::id(), now.as_nanos())
        });
    Sha256::digest(seed.as_bytes()).to_vec()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ttl_secs: u64 = match std::env::var("PEER_STATE_TTL") {
        Ok(v) if !v.is_empty() => v.parse()?,
        _ => 600,
    };
    let codec = RequestStateCodec::new_with_keyring("k1", [("k1", key())])?;
    let peer = Peer {
        codec: Arc::new(codec),
        ttl: (ttl_secs > 0).then(|| Duration::from_secs(ttl_secs)),
    };
    let config = StreamableHttpServerConfig::default().with_json_response(true);
    let service: StreamableHttpService<Peer, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(peer.clone()), Default::default(), config);
    let app = axum::Router::new().nest_service("/mcp", service);
    let port: u16 = match std::env::var("PEER_PORT") {
        Ok(v) if !v.is_empty() => v.parse()?,
        _ => 0,
    };
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    eprintln!("listening on http://{}/mcp", listener.local_addr()?);
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
