//! The `Host` half of the DNS-rebinding defence (the `Origin` half is in
//! `tests/server_http.rs`): a loopback `mrtr serve` answers only for the loopback
//! names unless `--allow-host` lists others, and a request for any other name, or
//! for none, gets 421 Misdirected Request with a JSON-RPC error before anything
//! else is looked at.

use crate::support as server_support;

use std::net::SocketAddr;

use server_support::{HttpResponse, MCP_HEADERS, Server, request_raw, tools_list};

/// `tools/list` with `Host: host` (`None`: no `Host` header), optionally in
/// absolute form (`POST http://TARGET/mcp`) and with extra header lines.
fn list(addr: SocketAddr, host: Option<&str>, target: &str, extra: &str) -> HttpResponse {
    let body = tools_list(1);
    let mut head = format!("POST {target} HTTP/1.1\r\n");
    if let Some(h) = host {
        head.push_str(&format!("Host: {h}\r\n"));
    }
    for (k, v) in MCP_HEADERS {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!(
        "{extra}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    request_raw(addr, head.as_bytes())
}

#[track_caller]
fn assert_misdirected(r: &HttpResponse, what: &str) {
    assert_eq!(r.status, 421, "{what}: {}", r.text());
    let v = r.json();
    assert_eq!(v["error"]["code"], -32600, "{what}: {v}");
    assert!(v.get("id").is_none(), "{what}: {v}");
}

#[test]
fn a_loopback_server_answers_only_for_loopback_names() {
    let s = Server::start(&[]);
    let port = s.addr.port();
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("LocalHost:{port}"),
        format!("[::1]:{port}"),
        "localhost".to_owned(),
    ] {
        let r = list(s.addr, Some(&host), "/mcp", "");
        assert_eq!(r.status, 200, "{host}: {}", r.text());
    }
    for host in [
        "evil.example".to_owned(),
        format!("evil.example:{port}"),
        format!("127.0.0.1.evil.example:{port}"),
        format!("localhost.:{port}"),
        format!("localhost:{port}x"),
        "".to_owned(),
    ] {
        assert_misdirected(&list(s.addr, Some(&host), "/mcp", ""), &host);
    }
}

#[test]
fn no_host_two_hosts_or_a_foreign_absolute_target_are_misdirected() {
    let s = Server::start(&[]);
    let ours = s.addr.to_string();
    assert_misdirected(&list(s.addr, None, "/mcp", ""), "no Host");
    assert_misdirected(
        &list(s.addr, Some(&ours), "/mcp", "Host: evil.example\r\n"),
        "two Hosts",
    );
    // RFC 9112 §3.2.2: an absolute request target's authority wins over Host.
    assert_misdirected(
        &list(s.addr, Some(&ours), "http://evil.example/mcp", ""),
        "absolute form",
    );
    let r = list(s.addr, Some(&ours), &format!("http://{ours}/mcp"), "");
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn the_host_check_comes_before_origin_and_principal() {
    let s = Server::launch(&["--principal-header", "X-User"], &[]);
    // A foreign Host with a foreign Origin and no principal: the Host decides.
    let r = list(
        s.addr,
        Some("evil.example"),
        "/mcp",
        "Origin: http://evil.example\r\n",
    );
    assert_misdirected(&r, "host first");
    let r = list(
        s.addr,
        Some(&s.addr.to_string()),
        "/mcp",
        "Origin: http://evil.example\r\n",
    );
    assert_eq!(r.status, 403, "{}", r.text());
}

#[test]
fn allow_host_replaces_the_loopback_names() {
    let s = Server::start(&[
        "--allow-host",
        "MCP.example.com",
        "--allow-host",
        "api.example:9000",
    ]);
    for host in [
        "mcp.example.com",
        "mcp.example.com:8443",
        "api.example:9000",
    ] {
        let r = list(s.addr, Some(host), "/mcp", "");
        assert_eq!(r.status, 200, "{host}: {}", r.text());
        assert_eq!(r.json()["result"]["tools"].as_array().map(|_| ()), Some(()));
    }
    for host in [
        "api.example:9001".to_owned(),
        "api.example".to_owned(),
        "other.example.com".to_owned(),
        s.addr.to_string(),
        "localhost".to_owned(),
    ] {
        assert_misdirected(&list(s.addr, Some(&host), "/mcp", ""), &host);
    }
}
