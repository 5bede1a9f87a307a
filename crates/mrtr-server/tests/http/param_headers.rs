//! Tool parameters carried in `Mcp-Param-*` headers (MCP 2026-07-28, Streamable
//! HTTP §Custom Headers from Tool Parameters, SEP-2243) through the real router:
//! a tool declaring `x-mcp-header` properties is listed with its schema as
//! given, a call whose headers agree with its arguments runs, and one whose
//! header differs, is missing, is malformed or is repeated is refused with 400
//! and -32020 naming the header, never the value. A tool without declarations
//! needs no such header.

use mrtr_testkit as server_support;

use std::net::SocketAddr;
use std::sync::Arc;

use mrtr::{Engine, Keyring, Service, ToolResult};
use mrtr_client::{Client, HttpTransport};
use mrtr_server::http::{Anonymous, HttpOptions, mcp_router};
use serde_json::{Value, json};

use server_support::{HttpResponse, borrow, headers_for, request, rpc_error};

/// The annotated tool's schema: a string, an integer, a boolean and a nested
/// string mirrored into headers, and one argument that is not.
fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "limit": {"type": "integer", "x-mcp-header": "Limit"},
            "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
            "target": {"type": "object", "properties": {
                "zone": {"type": "string", "x-mcp-header": "Zone"},
            }},
            "sql": {"type": "string"},
        },
        "required": ["region", "sql"],
        "additionalProperties": false,
    })
}

/// The router with the tools `query` (annotated) and `plain` (not), served on a
/// loopback port by a runtime of its own (dropped with it).
struct Server {
    addr: SocketAddr,
    runtime: tokio::runtime::Runtime,
}

impl Server {
    fn start() -> Self {
        let service = Service::new(Engine::new(Keyring::ephemeral(), "ph"), "ph", "0")
            .tool("query", "Runs a query in a region.", schema(), |round| {
                let region = round.argument("region").and_then(Value::as_str);
                Ok(ToolResult::text(format!(
                    "ran in {}",
                    region.unwrap_or("?")
                )))
            })
            .tool("plain", "No headers.", json!({"type": "object"}), |_| {
                Ok(ToolResult::text("plain"))
            });
        let app = mcp_router(Arc::new(service), HttpOptions::default(), Anonymous);
        let (runtime, addr) = crate::loopback::serve(app);
        Self { addr, runtime }
    }

    /// `body` posted with the standard MCP headers that agree with it and `extra`.
    fn post(&self, body: &Value, extra: &[(&str, &str)]) -> (HttpResponse, Value) {
        let mut headers = headers_for(body);
        headers.push(("Content-Type".into(), "application/json".into()));
        let mut headers = borrow(&headers);
        headers.extend_from_slice(extra);
        let resp = request(
            self.addr,
            "POST",
            "/mcp",
            &headers,
            body.to_string().as_bytes(),
        );
        let v = serde_json::from_slice(&resp.body).unwrap_or(Value::Null);
        (resp, v)
    }
}

fn rpc(id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn call(tool: &str, arguments: Value) -> Value {
    rpc(
        2,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

/// Asserts a 400 with -32020 whose message names `header` and holds nothing of
/// `secret`.
fn refused(resp: &HttpResponse, v: &Value, header: &str, secret: &str) {
    assert_eq!(resp.status, 400, "{v}");
    let message = rpc_error(v, -32020)["message"].as_str().unwrap();
    assert!(message.contains(header), "{message}");
    assert!(!String::from_utf8_lossy(&resp.body).contains(secret), "{v}");
}

#[test]
fn the_schema_is_listed_as_given_with_its_annotations() {
    let s = Server::start();
    let (resp, v) = s.post(&rpc(1, "tools/list", json!({})), &[]);
    assert_eq!(resp.status, 200, "{v}");
    let tools = v["result"]["tools"].as_array().unwrap();
    let query = tools.iter().find(|t| t["name"] == "query").unwrap();
    assert_eq!(query["inputSchema"], schema());
    assert_eq!(
        serde_json::to_string(&query["inputSchema"]).unwrap(),
        serde_json::to_string(&schema()).unwrap(),
        "key order kept"
    );
}

#[test]
fn headers_that_agree_with_the_arguments_pass() {
    let s = Server::start();
    let args = json!({"region": "Zürich", "limit": 42, "dry": false,
        "target": {"zone": " b "}, "sql": "SELECT 1"});
    let (resp, v) = s.post(
        &call("query", args),
        &[
            ("Mcp-Param-Region", "=?base64?WsO8cmljaA==?="),
            ("mcp-param-limit", "42.0"),
            ("MCP-PARAM-DRY-RUN", "false"),
            ("Mcp-Param-Zone", "=?base64?IGIg?="),
            // Undeclared parameter headers are forwarded and ignored.
            ("Mcp-Param-Sql", "anything"),
        ],
    );
    assert_eq!(resp.status, 200, "{v}");
    assert_eq!(v["result"]["content"][0]["text"], "ran in Zürich");
    // Arguments left out (or null) need no header.
    let (resp, v) = s.post(
        &call("query", json!({"region": "eu", "dry": null, "sql": "q"})),
        &[("Mcp-Param-Region", "eu")],
    );
    assert_eq!(resp.status, 200, "{v}");
}

#[test]
fn a_tool_without_declarations_needs_no_parameter_header() {
    let s = Server::start();
    let (resp, v) = s.post(&call("plain", json!({"region": "x"})), &[]);
    assert_eq!(resp.status, 200, "{v}");
    assert_eq!(v["result"]["content"][0]["text"], "plain");
}

#[test]
fn mismatched_missing_malformed_or_repeated_headers_are_refused_with_400_and_32020() {
    let s = Server::start();
    let secret = "tenant-7-secret!";
    let args = json!({"region": secret, "sql": "q"});
    let cases: [&[(&str, &str)]; 6] = [
        // A different value.
        &[("Mcp-Param-Region", "tenant-8-secret")],
        // Missing while the argument is present.
        &[],
        // Characters a header value may not carry (non-ASCII unencoded).
        &[("Mcp-Param-Region", "tenant-7-sécret")],
        // The argument in Base64 without its padding, and Base64 outside the alphabet.
        &[("Mcp-Param-Region", "=?base64?dGVuYW50LTctc2VjcmV0IQ?=")],
        &[("Mcp-Param-Region", "=?base64?dGVuYW50!!!?=")],
        // Twice.
        &[("Mcp-Param-Region", secret), ("Mcp-Param-Region", secret)],
    ];
    for (i, extra) in cases.into_iter().enumerate() {
        let (resp, v) = s.post(&call("query", args.clone()), extra);
        assert_eq!(resp.status, 400, "case {i}");
        refused(&resp, &v, "Mcp-Param-Region", secret);
    }
    // A header for an argument the body does not carry.
    let (resp, v) = s.post(
        &call("query", json!({"region": "eu", "sql": "q"})),
        &[("Mcp-Param-Region", "eu"), ("Mcp-Param-Limit", "5")],
    );
    refused(&resp, &v, "Mcp-Param-Limit", "\"5\"");
    // Numbers compare as numbers, booleans as true/false, nested ones too.
    let args = json!({"region": "eu", "limit": 5, "target": {"zone": "a"}, "sql": "q"});
    for (extra, header) in [
        (
            [("Mcp-Param-Limit", "6"), ("Mcp-Param-Zone", "a")],
            "Mcp-Param-Limit",
        ),
        (
            [("Mcp-Param-Limit", "5"), ("Mcp-Param-Zone", "b")],
            "Mcp-Param-Zone",
        ),
    ] {
        let mut all = vec![("Mcp-Param-Region", "eu")];
        all.extend_from_slice(&extra);
        let (resp, v) = s.post(&call("query", args.clone()), &all);
        refused(&resp, &v, header, "\"a\"");
    }
    // The standard headers are checked first, with the same code.
    let body = call("query", args);
    let (resp, v) = s.post(&body, &[("Mcp-Name", "plain")]);
    assert_eq!(resp.status, 400, "{v}");
    rpc_error(&v, -32020);
}

#[test]
fn mrtrs_client_sends_the_headers_of_the_tools_it_listed() {
    let s = Server::start();
    let url = format!("http://{}/mcp", s.addr);
    let args = json!({"region": "Zürich", "limit": 3, "target": {"zone": " a"}, "sql": "q"});
    s.runtime.block_on(async {
        // Listed first: the call carries its headers.
        let client = Client::builder(HttpTransport::new(&url).unwrap()).build();
        client
            .request("tools/list", Default::default())
            .await
            .unwrap();
        let done = client.call_tool("query", args.clone()).await.unwrap();
        assert_eq!(done.text(), "ran in Zürich");
        // Not listed: sent without them, refused (-32020), then the transport
        // lists the tools and sends it once more with them.
        let fresh = Client::builder(HttpTransport::new(&url).unwrap()).build();
        let done = fresh.call_tool("query", args).await.unwrap();
        assert_eq!(done.text(), "ran in Zürich");
        // A call that is refused for another reason stays refused.
        let bad = json!({"region": {"not": "a string"}, "sql": "q"});
        let e = fresh.call_tool("query", bad).await.unwrap_err();
        assert!(e.to_string().contains("-32020"), "{e}");
    });
}
