//! Streamable HTTP transport behaviour of `mrtr serve` that does not depend on
//! the round engine: methods, paths, Origin, Content-Type, body limit, Accept
//! framing, the bound-address line, the log line, and graceful shutdown.
//!
//! The engine-dependent behaviour over the socket (multi-round flows over JSON,
//! SSE and stdio, protocol errors and their statuses, fleets sharing `MRTR_KEYS`
//! or `--keys-file`, the `serve` flags reaching the engine, and the log line's
//! `round` and `reject_reason`) is tested in `tests/server_flows.rs`; the engine
//! behaviour itself (binding, expiry, exactly-once side effects, the round cap,
//! the demos) in process in `tests/flow_guarantees.rs` and `tests/demos.rs`;
//! `mrtr keygen` and `mrtr inspect` in `tests/server_cli.rs`.

use crate::support as server_support;

use server_support::{MCP_HEADERS, Server, request, request_raw, rpc_error, tools_list};

#[test]
fn listen_port_zero_reports_the_bound_address() {
    let s = Server::start(&[]);
    assert!(s.addr.ip().is_loopback());
    assert_ne!(s.addr.port(), 0);
    // And it answers there.
    let r = s.post(MCP_HEADERS, tools_list(1).as_bytes());
    assert!(r.status >= 200, "{r:?}");
}

#[test]
fn get_and_delete_are_405_with_allow_post() {
    let s = Server::start(&[]);
    for method in ["GET", "DELETE", "PUT"] {
        let r = request(
            s.addr,
            method,
            "/mcp",
            &[("Accept", "text/event-stream")],
            b"",
        );
        assert_eq!(r.status, 405, "{method}: {r:?}");
        assert_eq!(r.header("allow"), Some("POST"), "{method}");
    }
}

#[test]
fn other_paths_are_404() {
    let s = Server::start(&[]);
    for path in ["/", "/mcp/", "/other", "/mcp/x"] {
        let r = request(
            s.addr,
            "POST",
            path,
            &[("Content-Type", "application/json")],
            b"{}",
        );
        assert_eq!(r.status, 404, "{path}");
    }
}

#[test]
fn oversized_body_is_413_with_a_jsonrpc_error() {
    let s = Server::start(&["--max-body", "2048"]);
    // Declared too large: refused before reading.
    let r = request_raw(
        s.addr,
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 5000000\r\n\r\n{",
    );
    assert_eq!(r.status, 413, "{r:?}");
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v = r.json();
    rpc_error(&v, -32600);
    assert!(v.get("id").is_none(), "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("too large"),
        "{v}"
    );

    // Streamed (chunked, no length) past the limit: refused while reading.
    let mut raw = b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    raw.extend_from_slice(format!("{:x}\r\n", 3000).as_bytes());
    raw.extend_from_slice(&[b' '; 3000]);
    raw.extend_from_slice(b"\r\n0\r\n\r\n");
    let r = request_raw(s.addr, &raw);
    assert_eq!(r.status, 413, "{r:?}");
    rpc_error(&r.json(), -32600);

    // Exactly at the limit is accepted (reaches the service).
    let mut body = tools_list(1).into_bytes();
    body.resize(2048, b' ');
    let r = s.post(MCP_HEADERS, &body);
    assert_ne!(r.status, 413, "{r:?}");
}

#[test]
fn foreign_origin_is_403_with_an_error_without_id() {
    let s = Server::start(&[]);
    for origin in [
        "http://evil.example",
        "null",
        "http://localhost.evil.example",
        "https://localhost",
    ] {
        let mut h = MCP_HEADERS.to_vec();
        h.push(("Origin", origin));
        let r = s.post(&h, tools_list(1).as_bytes());
        assert_eq!(r.status, 403, "{origin}");
        let v = r.json();
        rpc_error(&v, -32600);
        assert!(v.get("id").is_none(), "{v}");
    }
}

#[test]
fn localhost_and_configured_origins_pass() {
    let s = Server::start(&["--allow-origin", "https://app.example"]);
    for origin in [
        "http://localhost",
        "http://localhost:6274",
        "http://127.0.0.1:8808",
        "http://[::1]:3000",
        "https://app.example",
    ] {
        let mut h = MCP_HEADERS.to_vec();
        h.push(("Origin", origin));
        let r = s.post(&h, tools_list(1).as_bytes());
        assert_ne!(r.status, 403, "{origin}");
        // It reached the service: a JSON-RPC reply.
        assert_eq!(r.json()["jsonrpc"], "2.0");
    }
}

#[test]
fn non_json_content_type_is_415() {
    let s = Server::start(&[]);
    for ct in [
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        None,
    ] {
        let headers: Vec<(&str, &str)> = ct.map(|c| ("Content-Type", c)).into_iter().collect();
        let r = request(s.addr, "POST", "/mcp", &headers, tools_list(1).as_bytes());
        assert_eq!(r.status, 415, "{ct:?}");
        rpc_error(&r.json(), -32600);
    }
    let r = request(
        s.addr,
        "POST",
        "/mcp",
        &[("Content-Type", "Application/JSON; charset=utf-8")],
        tools_list(1).as_bytes(),
    );
    assert_ne!(r.status, 415);
}

#[test]
fn accept_selects_json_or_one_sse_event() {
    let s = Server::start(&[]);
    // Both accepted (what the spec requires clients to send): JSON.
    let mut h = MCP_HEADERS.to_vec();
    h.push(("Accept", "application/json, text/event-stream"));
    let r = s.post(&h, tools_list(1).as_bytes());
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.json()["jsonrpc"], "2.0");

    // No Accept: JSON.
    let r = s.post(MCP_HEADERS, tools_list(2).as_bytes());
    assert_eq!(r.header("content-type"), Some("application/json"));

    // Only event-stream: one `message` event with an id, then the stream ends.
    let mut h = MCP_HEADERS.to_vec();
    h.push(("Accept", "text/event-stream"));
    let r = s.post(&h, tools_list(3).as_bytes());
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let text = r.text();
    assert!(text.ends_with("\n\n"), "{text:?}");
    let events: Vec<&str> = text.trim_end().split("\n\n").collect();
    assert_eq!(events.len(), 1, "{text:?}");
    let mut event = None;
    let mut id = None;
    let mut data = None;
    for line in events[0].lines() {
        let (field, value) = line.split_once(": ").unwrap_or((line, ""));
        match field {
            "event" => event = Some(value),
            "id" => id = Some(value),
            "data" => data = Some(value),
            other => panic!("unexpected SSE field {other:?}"),
        }
    }
    assert_eq!(event, Some("message"));
    assert!(id.is_some_and(|i| !i.is_empty()));
    let v: serde_json::Value = serde_json::from_str(data.unwrap()).unwrap();
    assert_eq!(v["jsonrpc"], "2.0");
}

#[test]
fn odd_header_bytes_never_crash_the_server() {
    let s = Server::start(&[]);
    let body = tools_list(1);
    let mut raw = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\nMcp-Method: tools/\u{ff}\r\nMcp-Method: second\r\n\r\n",
        body.len()
    )
    .into_bytes();
    // Replace the UTF-8 encoding of U+00FF with a raw 0xFF byte (obs-text).
    let pos = raw.windows(2).position(|w| w == [0xC3, 0xBF]).unwrap();
    raw.splice(pos..pos + 2, [0xFF]);
    raw.extend_from_slice(body.as_bytes());
    let r = request_raw(s.addr, &raw);
    assert_eq!(r.json()["jsonrpc"], "2.0");
    // Malformed JSON and binary garbage still get a JSON-RPC reply.
    for body in [&b"{not json"[..], &[0xff, 0x00, 0x80][..], b""] {
        let r = s.post(MCP_HEADERS, body);
        assert_eq!(r.json()["jsonrpc"], "2.0");
    }
}

#[test]
fn one_log_line_per_request_without_bodies() {
    let s = Server::start(&[]);
    let secret = "SECRET-ARGUMENT-VALUE";
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"x","arguments":{{"a":"{secret}"}}}}}}"#
    );
    s.post(&[], body.as_bytes());
    request(s.addr, "GET", "/mcp", &[], b"");
    let lines = s.wait_for_lines("mrtr::request", 2);
    assert_eq!(lines.len(), 2, "{lines:?}");
    for l in &lines {
        assert!(l.contains(" INFO "), "{l}");
        assert!(l.contains("correlation_id="), "{l}");
        assert!(l.contains("http_status="), "{l}");
        assert!(l.contains("duration_ms="), "{l}");
        assert!(l.contains("outcome="), "{l}");
    }
    assert!(s.stderr_lines().iter().all(|l| !l.contains(secret)));
}

#[test]
fn json_log_format_is_one_json_object_per_line() {
    let s = Server::start(&["--log-format", "json"]);
    s.post(MCP_HEADERS, tools_list(1).as_bytes());
    let lines = s.wait_for_lines("mrtr::request", 1);
    assert_eq!(lines.len(), 1);
    for l in s.stderr_lines() {
        let v: serde_json::Value = serde_json::from_str(&l).unwrap_or_else(|e| panic!("{e}: {l}"));
        assert!(v.get("level").is_some(), "{l}");
    }
    let v: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
    let f = &v["fields"];
    assert_eq!(f["http_status"], 200, "{v}");
    assert_eq!(f["outcome"], "complete", "{v}");
    assert_eq!(f["correlation_id"].as_str().map(str::len), Some(16), "{v}");
    assert!(f["duration_ms"].is_number(), "{v}");
    assert!(f["outcome"].is_string(), "{v}");
}

#[test]
fn ephemeral_key_warns_about_fleets_and_configured_keys_do_not() {
    let s = Server::start(&[]);
    let warn = s
        .stderr_lines()
        .into_iter()
        .find(|l| l.contains("WARN"))
        .unwrap();
    assert!(warn.contains("MRTR_KEYS") && warn.contains("--keys-file") && warn.contains("fleet"));
    drop(s);
    let key = mrtr::seal::generate_key_string();
    let s = Server::start_with_env(&[], &[("MRTR_KEYS", key.as_str())]);
    assert!(s.stderr_lines().iter().all(|l| !l.contains("WARN")));
    assert!(s.stderr_lines().iter().all(|l| !l.contains(key.as_str())));
}

#[test]
fn sigterm_shuts_down_gracefully_with_exit_0() {
    let mut s = Server::start(&[]);
    s.post(MCP_HEADERS, tools_list(1).as_bytes());
    let status = s.terminate();
    assert!(status.success(), "{status:?}");
    assert!(s.stderr_lines().iter().any(|l| l.contains("SIGTERM")));
}

#[test]
fn sigint_shuts_down_gracefully_with_exit_0() {
    let mut s = Server::start(&[]);
    let status = s.signal("INT");
    assert!(status.success(), "{status:?}");
    assert!(s.stderr_lines().iter().any(|l| l.contains("SIGINT")));
}
