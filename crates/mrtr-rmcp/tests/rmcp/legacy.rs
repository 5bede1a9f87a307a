//! The same mrtr handlers for a client that negotiated 2025-11-25 (no MRTR):
//! rmcp's own client, over HTTP (rmcp's Unix-socket client transport, so no
//! reqwest), answering the server's `elicitation/create`,
//! `sampling/createMessage` and `roots/list` requests; the handlers run to
//! completion inside each request, gated on the capabilities declared at
//! `initialize`.
// why: rmcp marks sampling and roots deprecated (SEP-2577), but a 2025-11-25 client
// is exactly the one that still answers them.
#![allow(deprecated)]

use crate::rmcp_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mrtr::{Engine, Keyring};
use mrtr_rmcp::{Mrtr, Principals};
use rmcp::model::{
    CallToolRequestParams, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, GetPromptRequestParams, InitializeRequestParams, ListRootsResult,
    ReadResourceRequestParams,
};
use rmcp::service::{RequestContext, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData, ServiceError, ServiceExt};
use rmcp_support::{NOTE, PROMPT};
use serde_json::{Value, json};

/// A 2025-11-25 client that answers every question the way a test user would.
#[derive(Clone)]
struct User {
    config: InitializeRequestParams,
    /// How many server-to-client requests it answered.
    asked: Arc<AtomicUsize>,
    /// Answer sampling requests with a JSON-RPC error.
    fail_sampling: bool,
    /// How long the user takes to answer a form.
    delay: std::time::Duration,
}

impl User {
    fn new(capabilities: Value) -> Self {
        let config = serde_json::from_value(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities,
            "clientInfo": {"name": "legacy-test-client", "version": "0.0.0"},
        }))
        .unwrap();
        Self {
            config,
            asked: Arc::new(AtomicUsize::new(0)),
            fail_sampling: false,
            delay: std::time::Duration::ZERO,
        }
    }
}

/// What the test user types into a field, by name.
fn field(name: &str) -> Value {
    match name {
        "name" => json!("Ada"),
        "color" => json!("red"),
        "context" => json!("rust"),
        "confirm" => json!(true),
        other => json!(other),
    }
}

impl ClientHandler for User {
    fn get_info(&self) -> InitializeRequestParams {
        self.config.clone()
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(self.delay).await;
        let params = serde_json::to_value(&request).unwrap();
        let mut content = serde_json::Map::new();
        if let Some(props) = params["requestedSchema"]["properties"].as_object() {
            for name in props.keys() {
                content.insert(name.clone(), field(name));
            }
        }
        Ok(serde_json::from_value(json!({"action": "accept", "content": content})).unwrap())
    }

    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        if self.fail_sampling {
            return Err(ErrorData::internal_error("no model today", None));
        }
        Ok(serde_json::from_value(json!({
            "role": "assistant",
            "content": {"type": "text", "text": "Paris"},
            "model": "test-model",
            "stopReason": "endTurn",
        }))
        .unwrap())
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        Ok(serde_json::from_value(json!({"roots": [{"uri": "file:///w", "name": "w"}]})).unwrap())
    }
}

fn all_caps() -> Value {
    json!({"elicitation": {"form": {}}, "sampling": {}, "roots": {"listChanged": true}})
}

async fn connect(s: &rmcp_support::Running, user: User) -> RunningService<RoleClient, User> {
    connect_as(s, user, None).await
}

/// [`connect`], sending the principal header on every request when `principal`
/// is given (as an authenticating proxy in front of the server would).
async fn connect_as(
    s: &rmcp_support::Running,
    user: User,
    principal: Option<&str>,
) -> RunningService<RoleClient, User> {
    let mut config = StreamableHttpClientTransportConfig::with_uri("http://localhost/mcp");
    if let Some(p) = principal {
        config.custom_headers.insert(
            http::HeaderName::from_static(rmcp_support::USER_HEADER),
            http::HeaderValue::from_str(p).unwrap(),
        );
    }
    let transport = StreamableHttpClientTransport::from_unix_socket_with_config(
        s.socket.to_str().unwrap(),
        config,
    );
    let client = user.serve(transport).await.expect("initialize");
    let negotiated = client.peer_info().unwrap().protocol_version.clone();
    assert_eq!(negotiated.as_str(), "2025-11-25");
    client
}

fn server() -> rmcp_support::Running {
    let engine = Engine::new(Keyring::ephemeral(), "https://rmcp.test.example");
    rmcp_support::start(Mrtr::new(engine, Principals::anonymous()))
}

async fn call(
    client: &RunningService<RoleClient, User>,
    name: &str,
    args: Option<Value>,
) -> String {
    let mut params = CallToolRequestParams::new(name.to_owned());
    if let Some(Value::Object(a)) = args {
        params = params.with_arguments(a);
    }
    let result = client.call_tool(params).await.expect("tools/call");
    let v = serde_json::to_value(&result).unwrap();
    assert_ne!(v["isError"], true, "{v}");
    v["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The JSON-RPC error a `tools/call` of `name` without arguments gets (`why` it
/// should fail).
async fn call_error(client: &RunningService<RoleClient, User>, name: &str, why: &str) -> ErrorData {
    let err = client
        .call_tool(CallToolRequestParams::new(name.to_owned()))
        .await
        .expect_err(why);
    let ServiceError::McpError(e) = err else {
        panic!("expected a JSON-RPC error, got {err:?}");
    };
    e
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elicitation_sampling_roots_and_two_rounds_through_the_same_handlers() {
    let s = server();
    let user = User::new(all_caps());
    let asked = user.asked.clone();
    let client = connect(&s, user).await;
    assert_eq!(call(&client, "greet", None).await, "Hello, Ada!");
    assert_eq!(
        call(&client, "ask_model", None).await,
        "model=Paris name=Ada"
    );
    assert_eq!(call(&client, "list_roots", None).await, "roots=file:///w");
    assert_eq!(call(&client, "two_rounds", None).await, "Ada likes red");
    // greet 1, ask_model 2 (one round, both asks), list_roots 1, two_rounds 2.
    assert_eq!(asked.load(Ordering::SeqCst), 6);
    // Typed arguments and `once`.
    let text = call(&client, "deploy", Some(json!({"service": "svc"}))).await;
    assert_eq!(text, "Deployed svc (deployment #1).");
    assert_eq!(s.server.deployments.load(Ordering::SeqCst), 1);
    // The extractor-order tools see the arguments the client sent.
    let text = call(&client, "order_params_first", Some(json!({"value": "x"}))).await;
    assert_eq!(text, "params=x bound=\"x\"");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_and_a_resource_for_a_legacy_client() {
    let s = server();
    let client = connect(&s, User::new(all_caps())).await;
    let prompt = client
        .get_prompt(GetPromptRequestParams::new(PROMPT))
        .await
        .expect("prompts/get");
    let v = serde_json::to_value(&prompt).unwrap();
    assert_eq!(
        v["messages"][0]["content"]["text"], "Use this context: rust",
        "{v}"
    );
    let note = client
        .read_resource(ReadResourceRequestParams::new(NOTE))
        .await
        .expect("resources/read");
    let v = serde_json::to_value(&note).unwrap();
    assert_eq!(v["contents"][0]["text"], "the note", "{v}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_client_without_elicitation_gets_32021_or_the_optional_path() {
    let s = server();
    let user = User::new(json!({"sampling": {}}));
    let asked = user.asked.clone();
    let client = connect(&s, user).await;
    // The optional form is dropped; the required sampling call goes out.
    assert_eq!(call(&client, "ask_model", None).await, "model=Paris name=");
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    // A required form: -32021 naming elicitation, as for a 2026-07-28 client.
    let e = call_error(&client, "greet", "no elicitation capability").await;
    assert_eq!(e.code.0, -32021, "{e:?}");
    assert!(e.message.contains("elicitation"), "{e:?}");
    assert_eq!(
        e.data.unwrap()["requiredCapabilities"],
        json!({"elicitation": {}})
    );
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_principal_is_resolved_from_each_request_of_a_legacy_session() {
    let engine = Engine::new(Keyring::ephemeral(), "https://rmcp.test.example");
    let s = rmcp_support::start_guarded(Mrtr::new(engine, rmcp_support::header_principals()));
    // With the header on its requests, the flow runs, its asks included.
    let client = connect_as(&s, User::new(all_caps()), Some("alice")).await;
    assert_eq!(call(&client, "greet", None).await, "Hello, Ada!");
    assert_eq!(call(&client, "two_rounds", None).await, "Ada likes red");
    client.cancel().await.unwrap();
    // Without it the resolver finds no principal: -32603, and nothing is asked.
    let user = User::new(all_caps());
    let asked = user.asked.clone();
    let client = connect_as(&s, user, None).await;
    let e = call_error(&client, "greet", "no principal").await;
    assert_eq!(e.code.0, -32603, "{e:?}");
    assert_eq!(asked.load(Ordering::SeqCst), 0);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_ask_ends_the_flow_with_a_retryable_tool_error() {
    let s = server();
    let mut user = User::new(json!({"sampling": {}}));
    user.fail_sampling = true;
    let client = connect(&s, user).await;
    let result = client
        .call_tool(CallToolRequestParams::new("ask_model"))
        .await
        .expect("a tool error, not a JSON-RPC one");
    let v = serde_json::to_value(&result).unwrap();
    assert_eq!(v["isError"], true, "{v}");
    let text = v["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("did not answer a request for input"), "{v}");
    // The client's own message is not repeated to the model.
    assert!(!text.contains("no model today"), "{v}");
    client.cancel().await.unwrap();
}

/// The shared helpers (this file uses the reference service, and a raw HTTP
/// request from outside a session's client).
use crate::support as server_support;
use server_support::common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_fixtures_served_from_a_service_for_a_legacy_client() {
    let (service, deployments) = common::reference(common::engine());
    let s = rmcp_support::start_bridged(service);
    let client = connect(&s, User::new(all_caps())).await;
    assert_eq!(
        call(&client, "test_input_required_result_multi_round", None).await,
        "Ada likes red"
    );
    assert_eq!(
        call(&client, "test_input_required_result_multiple_inputs", None).await,
        "name=Ada; greeting=Paris; roots=1"
    );
    let text = call(&client, "deploy", Some(json!({"service": "web"}))).await;
    assert_eq!(text, "Deployed web (deployment #1).");
    assert_eq!(deployments.load(Ordering::SeqCst), 1);
    let prompt = client
        .get_prompt(GetPromptRequestParams::new(
            "test_input_required_result_prompt",
        ))
        .await
        .expect("prompts/get");
    let v = serde_json::to_value(&prompt).unwrap();
    assert_eq!(
        v["messages"][0]["content"]["text"], "Use this context: rust",
        "{v}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_round_limit_holds_for_a_legacy_client() {
    let engine = Engine::new(Keyring::ephemeral(), "https://rmcp.test.example").with_max_rounds(1);
    let s = rmcp_support::start(Mrtr::new(engine, Principals::anonymous()));
    let user = User::new(all_caps());
    let asked = user.asked.clone();
    let client = connect(&s, user).await;
    // Two rounds of questions with a limit of one: a tool error, the second question never asked.
    let result = client
        .call_tool(CallToolRequestParams::new("two_rounds"))
        .await
        .expect("a tool error");
    let v = serde_json::to_value(&result).unwrap();
    assert_eq!(v["isError"], true, "{v}");
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flow_on_a_session_nothing_bound_sends_no_asks() {
    // Principals from a resolver, rmcp's service without the guard: rmcp would
    // take the answers from whoever holds the session id, so nothing is asked.
    let engine = Engine::new(Keyring::ephemeral(), "https://rmcp.test.example");
    let s = rmcp_support::start(Mrtr::new(engine, rmcp_support::header_principals()));
    let user = User::new(all_caps());
    let asked = user.asked.clone();
    let client = connect_as(&s, user, Some("alice")).await;
    let e = call_error(&client, "greet", "an unbound session").await;
    assert_eq!(e.code.0, -32603, "{e:?}");
    assert_eq!(asked.load(Ordering::SeqCst), 0);
    client.cancel().await.unwrap();
    // The named opt-out (something else binds the sessions) sends them.
    let engine = Engine::new(Keyring::ephemeral(), "https://rmcp.test.example");
    let mrtr = Mrtr::new(engine, rmcp_support::header_principals()).allow_unbound_sessions();
    let s = rmcp_support::start(mrtr);
    let client = connect_as(&s, User::new(all_caps()), Some("alice")).await;
    assert_eq!(call(&client, "greet", None).await, "Hello, Ada!");
    client.cancel().await.unwrap();
}

/// Principals from [`rmcp_support::USER_HEADER`], remembering the last
/// `Mcp-Session-Id` seen (what an eavesdropper on the session would learn).
fn principals_seeing_sessions(seen: Arc<std::sync::Mutex<Option<String>>>) -> Principals {
    Principals::from_http(move |parts| {
        if let Some(id) = parts.headers.get("mcp-session-id") {
            *seen.lock().unwrap() = id.to_str().ok().map(str::to_owned);
        }
        let user = parts
            .headers
            .get(rmcp_support::USER_HEADER)?
            .to_str()
            .ok()?;
        Some(mrtr::Principal::subject(user))
    })
}

/// A raw HTTP request on `session` as `user`, from outside the session's client.
async fn intrude(
    addr: std::net::SocketAddr,
    method: &'static str,
    session: String,
    user: &'static str,
    body: String,
) -> u16 {
    tokio::task::spawn_blocking(move || {
        let headers = [
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2025-11-25"),
            ("Mcp-Session-Id", session.as_str()),
            (rmcp_support::USER_HEADER, user),
        ];
        server_support::request(addr, method, "/mcp", &headers, body.as_bytes()).status
    })
    .await
    .unwrap()
}

/// Alice's client: when the server asks her to confirm, Bob (another principal
/// who learned her session id) answers first with "accept"; Alice declines.
#[derive(Clone)]
struct Alice {
    config: InitializeRequestParams,
    addr: std::net::SocketAddr,
    seen: Arc<std::sync::Mutex<Option<String>>>,
    /// The HTTP status Bob's answer got.
    bob: Arc<std::sync::Mutex<Option<u16>>>,
}

impl ClientHandler for Alice {
    fn get_info(&self) -> InitializeRequestParams {
        self.config.clone()
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let session = self.seen.lock().unwrap().clone().expect("a session id");
        let answer = json!({
            "jsonrpc": "2.0",
            "id": serde_json::to_value(&context.id).unwrap(),
            "result": {"action": "accept", "content": {"confirm": true}},
        });
        let status = intrude(self.addr, "POST", session, "bob", answer.to_string()).await;
        *self.bob.lock().unwrap() = Some(status);
        Ok(serde_json::from_value(json!({"action": "decline"})).unwrap())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_answer_from_another_principal_is_refused_and_the_step_does_not_run() {
    let seen = Arc::new(std::sync::Mutex::new(None));
    let engine = Engine::new(Keyring::ephemeral(), "https://rmcp.test.example");
    let s =
        rmcp_support::start_guarded(Mrtr::new(engine, principals_seeing_sessions(seen.clone())));
    let alice = Alice {
        config: User::new(all_caps()).config,
        addr: s.addr,
        seen,
        bob: Arc::new(std::sync::Mutex::new(None)),
    };
    let bob = alice.bob.clone();
    let mut config = StreamableHttpClientTransportConfig::with_uri("http://localhost/mcp");
    config.custom_headers.insert(
        http::HeaderName::from_static(rmcp_support::USER_HEADER),
        http::HeaderValue::from_static("alice"),
    );
    let transport = StreamableHttpClientTransport::from_unix_socket_with_config(
        s.socket.to_str().unwrap(),
        config,
    );
    let client = alice.serve(transport).await.expect("initialize");
    let result = client
        .call_tool(
            CallToolRequestParams::new("deploy")
                .with_arguments(json!({"service": "prod"}).as_object().unwrap().clone()),
        )
        .await
        .expect("a tool result");
    let v = serde_json::to_value(&result).unwrap();
    // The step did not run: Bob's "accept" was answered as for no such
    // session, and Alice's "decline" counted.
    assert_eq!(s.server.deployments.load(Ordering::SeqCst), 0, "{v}");
    assert_eq!(*bob.lock().unwrap(), Some(404));
    assert_eq!(v["isError"], true, "{v}");
    assert!(
        v["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("did not confirm"),
        "{v}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_principal_can_neither_use_nor_read_nor_end_a_session() {
    let seen = Arc::new(std::sync::Mutex::new(None));
    let engine = Engine::new(Keyring::ephemeral(), "https://rmcp.test.example");
    let s =
        rmcp_support::start_guarded(Mrtr::new(engine, principals_seeing_sessions(seen.clone())));
    let client = connect_as(&s, User::new(all_caps()), Some("alice")).await;
    assert_eq!(call(&client, "greet", None).await, "Hello, Ada!");
    let session = seen.lock().unwrap().clone().expect("a session id");
    let ping = json!({"jsonrpc": "2.0", "id": 99, "method": "ping"}).to_string();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                      "params": {"requestId": 1}})
    .to_string();
    for (method, body) in [
        ("POST", ping),
        ("POST", note),
        ("GET", String::new()),
        ("DELETE", String::new()),
    ] {
        let status = intrude(s.addr, method, session.clone(), "bob", body).await;
        assert_eq!(status, 404, "{method}");
    }
    // Alice's session is still hers, and works.
    assert_eq!(call(&client, "two_rounds", None).await, "Ada likes red");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_flow_bound_ends_a_flow_that_keeps_asking() {
    let engine = Engine::new(Keyring::ephemeral(), "https://rmcp.test.example");
    let mrtr = Mrtr::new(engine, Principals::anonymous())
        .with_legacy_flow_timeout(std::time::Duration::from_millis(800));
    let s = rmcp_support::start(mrtr);
    let mut user = User::new(all_caps());
    user.delay = std::time::Duration::from_millis(100);
    let asked = user.asked.clone();
    let client = connect(&s, user).await;
    let result = client
        .call_tool(CallToolRequestParams::new("forever"))
        .await
        .expect("a tool error, not a JSON-RPC one");
    let v = serde_json::to_value(&result).unwrap();
    assert_eq!(v["isError"], true, "{v}");
    let text = v["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("did not answer the server's questions in time"),
        "{v}"
    );
    // Ended by the flow bound, before the round limit (16) would have.
    let n = asked.load(Ordering::SeqCst);
    assert!((1..16).contains(&n), "{n} asks");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_the_application_hides_is_neither_listed_nor_served_through_rmcp() {
    let changes = mrtr::service::Changes::new();
    let service = mrtr::Service::new(common::engine(), "hide", "0")
        .tool("shown", "Shown.", json!({"type": "object"}), |_| {
            Ok(mrtr::ToolResult::text("shown"))
        })
        .tool("hidden", "Hidden.", json!({"type": "object"}), |_| {
            Ok(mrtr::ToolResult::text("hidden"))
        })
        .with_changes(changes.clone());
    assert!(changes.hide(mrtr::service::List::Tools, "hidden"));
    let s = rmcp_support::start_bridged(service);
    let client = connect(&s, User::new(all_caps())).await;
    let listed = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = listed.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["shown"]);
    let e = call_error(&client, "hidden", "a hidden tool is unknown").await;
    assert_eq!(e.message, "Unknown tool", "{e:?}");
    // Shown again, it is listed and served.
    assert!(changes.show(mrtr::service::List::Tools, "hidden"));
    assert_eq!(call(&client, "hidden", None).await, "hidden");
    client.cancel().await.unwrap();
}
