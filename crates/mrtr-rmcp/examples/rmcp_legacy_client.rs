//! A 2025-11-25 client on rmcp alone (no mrtr): rmcp's own Streamable HTTP
//! client, which negotiates 2025-11-25 at `initialize`, opens a session and
//! answers the server's `elicitation/create`, `sampling/createMessage` and
//! `roots/list` requests with fixed answers, completing every fixture flow of
//! a reference server (`mrtr serve`, or the rmcp example `rmcp_server`) and
//! checking each final text exactly.
//!
//! ```sh
//! target/debug/examples/rmcp_server --listen 127.0.0.1:3000 &
//! cargo run -p mrtr-rmcp --example rmcp_legacy_client --features http -- http://127.0.0.1:3000/mcp
//! ```
//!
//! Prints one line per flow (`ok   NAME: TEXT` or `FAIL NAME: WHY`), then
//! `legacy-rmcp: N passed, M failed`; exits 1 on any failure.
//!
//! rmcp's HTTP client over TCP needs its reqwest transport, which this
//! workspace does not build; its Unix-socket transport (hyper) is built, so the
//! client talks HTTP/1.1 to a Unix socket of its own, whose connections are
//! copied byte for byte to the server's TCP address (the requests still carry
//! the URL's host and path).
// why: rmcp marks sampling and roots deprecated (SEP-2577), but a 2025-11-25 client
// is exactly the one that still answers them.
#![allow(deprecated)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use rmcp::model::{
    CallToolRequestParams, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, InitializeRequestParams, ListRootsResult, ReadResourceRequestParams,
};
use rmcp::service::{RequestContext, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use serde_json::{Value, json};
use tokio::net::{TcpStream, UnixListener};

/// What the user and the model answer.
const NAME: &str = "Alice";
const COLOR: &str = "blue";
const MODEL_TEXT: &str = "Paris";
const ROOT: &str = "file:///test/root";

/// The fixed form answers, by a field that only that form has.
fn form_answer(properties: &serde_json::Map<String, Value>) -> Option<Value> {
    let has = |k: &str| properties.contains_key(k);
    Some(if has("confirm") {
        json!({"confirm": true})
    } else if has("color") {
        json!({"color": COLOR})
    } else if has("username") {
        json!({"username": "testuser", "email": "test@example.com"})
    } else if has("untitledSingle") {
        enums_answer()
    } else if has("score") {
        defaults_answer()
    } else if has("name") {
        json!({"name": NAME})
    } else {
        return None;
    })
}

fn defaults_answer() -> Value {
    json!({"name": "Jane Smith", "age": 25, "score": 88.5, "status": "inactive", "verified": false})
}

fn enums_answer() -> Value {
    json!({"untitledSingle": "option1", "titledSingle": "value1", "legacyEnum": "opt1",
           "untitledMulti": ["option1", "option2"], "titledMulti": ["value1", "value2"]})
}

/// The 2025-11-25 client: every capability, the fixed answers.
#[derive(Clone)]
struct User(InitializeRequestParams);

impl ClientHandler for User {
    fn get_info(&self) -> InitializeRequestParams {
        self.0.clone()
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let params = serde_json::to_value(&request).map_err(internal)?;
        let answer = params["requestedSchema"]["properties"]
            .as_object()
            .and_then(form_answer)
            .map_or_else(
                || json!({"action": "decline"}),
                |content| json!({"action": "accept", "content": content}),
            );
        serde_json::from_value(answer).map_err(internal)
    }

    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        serde_json::from_value(json!({
            "role": "assistant",
            "content": {"type": "text", "text": MODEL_TEXT},
            "model": "test-model",
            "stopReason": "endTurn",
        }))
        .map_err(internal)
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        serde_json::from_value(json!({"roots": [{"uri": ROOT, "name": "Test Root"}]}))
            .map_err(internal)
    }
}

fn internal(e: serde_json::Error) -> ErrorData {
    ErrorData::internal_error(e.to_string(), None)
}

type Client = RunningService<RoleClient, User>;

/// Calls `tool` with `args`: the text of its result, or why not.
async fn call(client: &Client, tool: &str, args: Value) -> Result<String, String> {
    let mut params = CallToolRequestParams::new(tool.to_owned());
    if let Value::Object(a) = args {
        params = params.with_arguments(a);
    }
    let result = client.call_tool(params).await.map_err(|e| e.to_string())?;
    let v = serde_json::to_value(&result).map_err(|e| e.to_string())?;
    if v["isError"] == true {
        return Err(format!("tool error: {}", v["content"]));
    }
    Ok(v["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned())
}

/// `text` if it is `want`, else why not.
fn exactly(text: String, want: &str) -> Result<String, String> {
    if text == want {
        Ok(text)
    } else {
        Err(format!("got {text:?}, want {want:?}"))
    }
}

/// `text` if it is `prefix` followed by JSON equal to `want`, else why not.
fn prefixed_json(text: String, prefix: &str, want: &Value) -> Result<String, String> {
    let got: Option<Value> = text
        .strip_prefix(prefix)
        .and_then(|rest| serde_json::from_str(rest).ok());
    if got.as_ref() == Some(want) {
        Ok(text)
    } else {
        Err(format!("got {text:?}, want {prefix}{want}"))
    }
}

/// The count of the deploy demo's resource.
async fn deployments(client: &Client) -> Result<u64, String> {
    let r = client
        .read_resource(ReadResourceRequestParams::new("mrtr://demo/deployments"))
        .await
        .map_err(|e| e.to_string())?;
    let v = serde_json::to_value(&r).map_err(|e| e.to_string())?;
    v["contents"][0]["text"]
        .as_str()
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| format!("not a count: {v}"))
}

async fn deploy(client: &Client) -> Result<String, String> {
    let before = deployments(client).await?;
    let text = call(client, "deploy", json!({"service": "web"})).await?;
    let text = exactly(text, &format!("Deployed web (deployment #{}).", before + 1))?;
    let after = deployments(client).await?;
    if after != before + 1 {
        return Err(format!("{after} deployments after it, want {}", before + 1));
    }
    Ok(text)
}

/// Runs every flow; prints a line for each; how many passed and failed.
async fn flows(client: &Client) -> (usize, usize) {
    const COMPLETED: &str = "Elicitation completed: action=accept, content=";
    let user_info = json!({"username": "testuser", "email": "test@example.com"});
    let results = [
        (
            "elicitation",
            call(client, "test_input_required_result_elicitation", json!({}))
                .await
                .and_then(|t| exactly(t, &format!("Hello, {NAME}!"))),
        ),
        (
            "sampling",
            call(client, "test_input_required_result_sampling", json!({}))
                .await
                .and_then(|t| exactly(t, &format!("The model said: {MODEL_TEXT}"))),
        ),
        (
            "roots",
            call(client, "test_input_required_result_list_roots", json!({}))
                .await
                .and_then(|t| exactly(t, &format!("Roots: {ROOT}"))),
        ),
        (
            "multi-round",
            call(client, "test_input_required_result_multi_round", json!({}))
                .await
                .and_then(|t| exactly(t, &format!("{NAME} likes {COLOR}"))),
        ),
        ("deploy", deploy(client).await),
        (
            "test_sampling",
            call(client, "test_sampling", json!({"prompt": "Test prompt"}))
                .await
                .and_then(|t| exactly(t, &format!("LLM response: {MODEL_TEXT}"))),
        ),
        (
            "test_elicitation",
            call(
                client,
                "test_elicitation",
                json!({"message": "Who are you?"}),
            )
            .await
            .and_then(|t| prefixed_json(t, "User response: action=accept, content=", &user_info)),
        ),
        (
            "sep1034-defaults",
            call(client, "test_elicitation_sep1034_defaults", json!({}))
                .await
                .and_then(|t| prefixed_json(t, COMPLETED, &defaults_answer())),
        ),
        (
            "sep1330-enums",
            call(client, "test_elicitation_sep1330_enums", json!({}))
                .await
                .and_then(|t| prefixed_json(t, COMPLETED, &enums_answer())),
        ),
    ];
    let (mut passed, mut failed) = (0, 0);
    for (name, result) in results {
        match result {
            Ok(text) => {
                passed += 1;
                println!("ok   {name}: {text}");
            }
            Err(why) => {
                failed += 1;
                println!("FAIL {name}: {why}");
            }
        }
    }
    (passed, failed)
}

/// Copies each connection to the Unix socket `path` to and from `authority`
/// (`host:port`), so rmcp's Unix-socket HTTP client reaches a TCP server.
fn bridge(path: &Path, authority: String) -> std::io::Result<()> {
    let listener = UnixListener::bind(path)?;
    tokio::spawn(async move {
        while let Ok((mut unix, _)) = listener.accept().await {
            let authority = authority.clone();
            tokio::spawn(async move {
                if let Ok(mut tcp) = TcpStream::connect(&authority).await {
                    let _ = tokio::io::copy_bidirectional(&mut unix, &mut tcp).await;
                }
            });
        }
    });
    Ok(())
}

/// Connects to `url` through a bridge socket in `dir`, runs the flows; how
/// many passed and failed (a wrong protocol version is one failure).
async fn run(url: &str, dir: &Path) -> Result<(usize, usize), Box<dyn std::error::Error>> {
    let uri: http::Uri = url.parse()?;
    if uri.scheme_str() != Some("http") {
        return Err(format!("{url}: only http:// URLs are supported").into());
    }
    let authority = uri
        .authority()
        .ok_or_else(|| format!("{url}: no host"))?
        .to_string();
    let socket = dir.join("bridge.sock");
    bridge(&socket, authority)?;
    let user = User(serde_json::from_value(json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {"form": {}}, "sampling": {}, "roots": {"listChanged": true}},
        "clientInfo": {"name": "mrtr-rmcp-legacy-client", "version": env!("CARGO_PKG_VERSION")},
    }))?);
    let transport = StreamableHttpClientTransport::from_unix_socket_with_config(
        socket.to_str().ok_or("a non-UTF-8 temporary directory")?,
        StreamableHttpClientTransportConfig::with_uri(url),
    );
    let client = user.serve(transport).await?;
    let version = client
        .peer_info()
        .map(|i| i.protocol_version.to_string())
        .unwrap_or_default();
    println!("# rmcp's client, protocol {version}");
    let counts = if version == "2025-11-25" {
        flows(&client).await
    } else {
        println!("FAIL connect: negotiated {version:?}, not 2025-11-25");
        (0, 1)
    };
    client.cancel().await?;
    Ok(counts)
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url] = args.as_slice() else {
        eprintln!("usage: rmcp_legacy_client URL   (http://HOST:PORT/mcp)");
        return ExitCode::from(2);
    };
    let dir: PathBuf =
        std::env::temp_dir().join(format!("mrtr-legacy-client-{}", std::process::id()));
    let outcome = match std::fs::create_dir_all(&dir) {
        Ok(()) => run(url, &dir).await,
        Err(e) => Err(e.into()),
    };
    let _ = std::fs::remove_dir_all(&dir);
    let (passed, failed) = outcome.unwrap_or_else(|e| {
        println!("FAIL connect: {e}");
        (0, 1)
    });
    println!("legacy-rmcp: {passed} passed, {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
