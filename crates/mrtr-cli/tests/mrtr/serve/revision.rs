//! The 2026-07-28 revision beyond MRTR on both of `mrtr serve`'s transports: the
//! same requests get the same answers over Streamable HTTP and over stdio (the
//! suite speaks HTTP only, so this is where stdio's parity is shown). Both
//! servers share a key, so even the list cursors agree.

use crate::support as server_support;

use serde_json::{Value, json};
use server_support::{PROTOCOL, Server, StdioServer};

fn meta(caps: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": PROTOCOL,
        "io.modelcontextprotocol/clientCapabilities": caps,
    })
}

fn request(id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"] = meta(json!({}));
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The requests, each with the HTTP status it must get.
fn requests() -> Vec<(Value, u16)> {
    let call = |id, name: &str| request(id, "tools/call", json!({"name": name, "arguments": {}}));
    vec![
        (call(1, "test_simple_text"), 200),
        (call(2, "test_image_content"), 200),
        (call(3, "test_audio_content"), 200),
        (call(4, "test_embedded_resource"), 200),
        (call(5, "test_multiple_content_types"), 200),
        (call(6, "test_error_handling"), 200),
        // Needs sampling, which these requests do not declare: -32021.
        (call(7, "test_missing_capability"), 400),
        (
            request(8, "resources/read", json!({"uri": "test://static-text"})),
            200,
        ),
        (
            request(9, "resources/read", json!({"uri": "test://static-binary"})),
            200,
        ),
        (
            request(
                10,
                "resources/read",
                json!({"uri": "test://template/42/data"}),
            ),
            200,
        ),
        (
            request(11, "resources/read", json!({"uri": "test://nowhere"})),
            400,
        ),
        (
            request(12, "prompts/get", json!({"name": "test_simple_prompt"})),
            200,
        ),
        (
            request(
                13,
                "prompts/get",
                json!({"name": "test_prompt_with_embedded_resource",
                       "arguments": {"resourceUri": "test://example"}}),
            ),
            200,
        ),
        (
            request(14, "prompts/get", json!({"name": "test_prompt_with_image"})),
            200,
        ),
        (
            request(
                15,
                "completion/complete",
                json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                       "argument": {"name": "arg1", "value": "pa"}}),
            ),
            200,
        ),
        (request(16, "resources/templates/list", json!({})), 200),
        (request(17, "prompts/list", json!({})), 200),
        (request(18, "resources/list", json!({})), 200),
        // Removed by the revision: -32601, 404 on HTTP.
        (request(19, "ping", json!({})), 404),
        (
            request(20, "logging/setLevel", json!({"level": "info"})),
            404,
        ),
        (
            request(
                21,
                "resources/subscribe",
                json!({"uri": "test://static-text"}),
            ),
            404,
        ),
    ]
}

/// Every tool's name, following `nextCursor` through the pages `send` gets.
fn all_tools(mut send: impl FnMut(&Value) -> Value) -> (Vec<String>, usize) {
    let mut names = Vec::new();
    let mut pages = 0;
    let mut cursor: Option<String> = None;
    loop {
        let mut params = json!({});
        if let Some(c) = &cursor {
            params["cursor"] = json!(c);
        }
        let v = send(&request(100 + pages as u64, "tools/list", params));
        pages += 1;
        assert!(pages < 100, "the pages do not end");
        let result = &v["result"];
        let page = result["tools"].as_array().expect("tools");
        assert!(page.len() <= 3, "page size 3: {v}");
        names.extend(page.iter().map(|t| t["name"].as_str().unwrap().to_owned()));
        match result.get("nextCursor").and_then(Value::as_str) {
            Some(c) => cursor = Some(c.to_owned()),
            None => return (names, pages),
        }
    }
}

#[test]
fn stdio_answers_the_revision_as_http_does() {
    let key = mrtr::seal::generate_key_string();
    let http = Server::start_with_keys(&["--page-size", "3"], &key);
    let mut stdio = StdioServer::start_with_keys(&["--page-size", "3"], &key);
    for (body, status) in requests() {
        let over_http = http.call(&body, status);
        let over_stdio = stdio.call(&body);
        assert_eq!(over_http, over_stdio, "{body}");
        let method = body["method"].as_str().unwrap();
        match status {
            200 => assert!(over_http.get("result").is_some(), "{method}: {over_http}"),
            _ => assert!(over_http.get("error").is_some(), "{method}: {over_http}"),
        }
    }
    // The content kinds, as the suite reads them.
    let kinds = |v: &Value| -> Vec<String> {
        v["result"]["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["type"].as_str().unwrap().to_owned())
            .collect()
    };
    let call = |id, name: &str| request(id, "tools/call", json!({"name": name, "arguments": {}}));
    assert_eq!(
        kinds(&http.call(&call(30, "test_audio_content"), 200)),
        ["audio"]
    );
    assert_eq!(
        kinds(&stdio.call(&call(31, "test_multiple_content_types"))),
        ["text", "image", "resource"]
    );
    let error = stdio.call(&call(32, "test_error_handling"));
    assert_eq!(error["result"]["isError"], true, "{error}");
    let missing = stdio.call(&call(33, "test_missing_capability"));
    assert_eq!(missing["error"]["code"], -32021, "{missing}");
    assert_eq!(
        missing["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}}),
        "{missing}"
    );
    let not_found = stdio.call(&request(
        34,
        "resources/read",
        json!({"uri": "test://nowhere"}),
    ));
    assert_eq!(not_found["error"]["data"], json!({"uri": "test://nowhere"}));
    for method in ["ping", "initialize"] {
        let v = stdio.call(&request(35, method, json!({})));
        assert_eq!(v["error"]["code"], -32601, "{method}: {v}");
    }
    // The tool list in pages of three, the same pages over both.
    let (over_http, pages) = all_tools(|b| http.call(b, 200));
    let (over_stdio, _) = all_tools(|b| stdio.call(b));
    assert_eq!(over_http, over_stdio);
    assert!(pages > 3, "{pages} pages of {} tools", over_http.len());
    let mut unique = over_http.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        over_http.len(),
        "each tool once: {over_http:?}"
    );
    assert!(over_http.iter().any(|n| n == "test_simple_text"));

    // Progress and log messages: the same notifications, SSE events before the
    // response on HTTP, lines before it on stdio.
    let mut asked = call(42, "test_tool_with_progress");
    asked["params"]["_meta"]["progressToken"] = json!("p-42");
    let mut logged = call(43, "test_logging_tool");
    logged["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("info");
    for body in [&asked, &logged] {
        let r = http.rpc_with(body, &[("Accept", "application/json, text/event-stream")]);
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.header("content-type"), Some("text/event-stream"), "{r:?}");
        let mut over_http = server_support::sse_messages(&r.text());
        let http_reply = over_http.pop().unwrap();
        stdio.send(&body.to_string());
        let mut over_stdio = Vec::new();
        let stdio_reply = loop {
            let v = stdio.read_reply();
            if v.get("id").is_some() {
                break v;
            }
            over_stdio.push(v);
        };
        assert_eq!(http_reply, stdio_reply, "{body}");
        assert_eq!(over_http, over_stdio, "{body}");
        assert_eq!(over_http.len(), 3, "{over_http:?}");
    }
    // Without a token or a level, neither transport sends any.
    let quiet = call(44, "test_tool_with_progress");
    let r = http.rpc_with(&quiet, &[("Accept", "application/json, text/event-stream")]);
    assert_eq!(r.header("content-type"), Some("application/json"), "{r:?}");
    assert_eq!(stdio.call(&quiet)["id"], 44, "the reply is the next line");

    // A parameter carried in a header (x-mcp-header): HTTP checks the header
    // against the argument; stdio has no headers and checks none.
    let regional = request(
        45,
        "tools/call",
        json!({"name": "test_x_mcp_header", "arguments": {"region": "eu"}}),
    );
    let refused = http.rpc(&regional);
    assert_eq!(refused.status, 400, "{}", refused.text());
    assert_eq!(refused.json()["error"]["code"], -32020);
    let with_header = http.rpc_with(&regional, &[("Mcp-Param-Region", "eu")]);
    assert_eq!(with_header.status, 200, "{}", with_header.text());
    assert_eq!(with_header.json(), stdio.call(&regional));

    // A subscription on stdio: its acknowledgement, then a list change the
    // trigger makes, tagged with the listen id, beside the trigger's reply.
    let listen = request(
        40,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true,
                                 "resourceSubscriptions": ["mrtr://demo/deployments"]}}),
    );
    stdio.send(&listen.to_string());
    let ack = stdio.read_reply();
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true, "resourceSubscriptions": ["mrtr://demo/deployments"]})
    );
    stdio.send(&call(41, "test_trigger_tool_change").to_string());
    let (a, b) = (stdio.read_reply(), stdio.read_reply());
    let (reply, change) = if a.get("id").is_some() {
        (a, b)
    } else {
        (b, a)
    };
    assert_eq!(reply["id"], 41, "{reply}");
    assert_eq!(
        change["method"], "notifications/tools/list_changed",
        "{change}"
    );
    assert_eq!(
        change["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        40
    );
    // The trigger took test_dynamic_tool out of the list, on this process.
    let (names, _) = all_tools(|b| stdio.call(b));
    assert!(!names.iter().any(|n| n == "test_dynamic_tool"), "{names:?}");
    stdio.finish();
}
