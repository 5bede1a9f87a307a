//! The client's two eras over HTTP, against tiny fake servers on 127.0.0.1: a
//! modern one (no extra round trip, a modern 400 is the modern server's error)
//! and a 2025-era one (a 400 without a modern error, then `initialize`, a
//! session, an `elicitation/create` on the SSE stream answered by a POST, and
//! `DELETE` at the end).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mrtr::wire::{ElicitAction, ElicitResult};
use mrtr_client::{Client, ClientError, Era, EraCache, EraMode, Handlers, HttpTransport};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// One request as a fake server saw it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    headers: HashMap<String, String>,
    body: Value,
}

impl Seen {
    /// The JSON-RPC method, `response` for a response, or the HTTP method.
    fn what(&self) -> String {
        if self.method != "POST" {
            return self.method.clone();
        }
        match self.body.get("method").and_then(Value::as_str) {
            Some(m) => m.to_owned(),
            None => "response".to_owned(),
        }
    }
}

type Log = Arc<Mutex<Vec<Seen>>>;

async fn read_request(sock: &mut TcpStream) -> Option<Seen> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = sock.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8(buf[..head_end].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let method = lines.next()?.split(' ').next()?.to_owned();
    let headers: HashMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let len: usize = headers
        .get("content-length")
        .map_or(0, |l| l.parse().unwrap());
    while buf.len() < head_end + len {
        let n = sock.read(&mut chunk).await.ok()?;
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = serde_json::from_slice(&buf[head_end..head_end + len]).unwrap_or(Value::Null);
    Some(Seen {
        method,
        headers,
        body,
    })
}

async fn write(sock: &mut TcpStream, status: &str, headers: &str, body: &str) {
    let r = format!(
        "HTTP/1.1 {status}\r\n{headers}content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = sock.write_all(r.as_bytes()).await;
}

fn json_headers() -> &'static str {
    "content-type: application/json\r\n"
}

/// A modern server: every tools/call completes at once, or (with `refuse`)
/// is refused with -32602 and status 400, as a 2026-07-28 server refuses bad params.
async fn modern_server(refuse: bool) -> (String, Log) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let log: Log = Arc::default();
    let seen = log.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let Some(req) = read_request(&mut sock).await else {
                    return;
                };
                seen.lock().unwrap().push(req.clone());
                let id = req.body["id"].clone();
                if refuse {
                    let body = json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": -32602, "message": "Invalid params"}});
                    write(
                        &mut sock,
                        "400 Bad Request",
                        json_headers(),
                        &body.to_string(),
                    )
                    .await;
                } else {
                    let body = json!({"jsonrpc": "2.0", "id": id, "result": {
                        "resultType": "complete", "content": [{"type": "text", "text": "modern"}]}});
                    write(&mut sock, "200 OK", json_headers(), &body.to_string()).await;
                }
            });
        }
    });
    (url, log)
}

/// How the fake 2025-era server refuses a request without a session.
#[derive(Clone, Copy)]
enum Refusal {
    /// `400 Bad Request: Session ID is required` (text), as rmcp does.
    Text,
    /// `400` with -32022 naming only 2025 versions.
    OldVersions,
}

/// A 2025-era server with sessions: see the module.
async fn legacy_server(refusal: Refusal) -> (String, Log) {
    let (url, log, _restart) = legacy_server_restartable(refusal).await;
    (url, log)
}

/// [`legacy_server`], and a switch that makes it forget its sessions (as a
/// restart does): the next session it opens is `sess-2`, and so on.
async fn legacy_server_restartable(refusal: Refusal) -> (String, Log, Arc<AtomicUsize>) {
    let generation = Arc::new(AtomicUsize::new(1));
    let current = generation.clone();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let log: Log = Arc::default();
    let seen = log.clone();
    // The answers POSTed to the server's requests, to the stream waiting for them.
    let (answers_tx, answers_rx) = mpsc::channel::<Value>(8);
    let answers_rx = Arc::new(tokio::sync::Mutex::new(answers_rx));
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let (seen, answers_tx, answers_rx) =
                (seen.clone(), answers_tx.clone(), answers_rx.clone());
            let live = format!("sess-{}", current.load(Ordering::SeqCst));
            tokio::spawn(async move {
                let Some(req) = read_request(&mut sock).await else {
                    return;
                };
                seen.lock().unwrap().push(req.clone());
                let session = req.headers.get("mcp-session-id").cloned();
                let what = req.what();
                let id = req.body["id"].clone();
                if session.as_ref().is_some_and(|s| *s != live) {
                    return write(&mut sock, "404 Not Found", "", "").await;
                }
                // A session the server knows (any other was answered 404 above).
                let known = session.as_ref().map(|_| "live");
                match (what.as_str(), known) {
                    ("DELETE", Some("live")) => write(&mut sock, "200 OK", "", "").await,
                    ("initialize", None) => {
                        let body = json!({"jsonrpc": "2.0", "id": id, "result": {
                            "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                            "serverInfo": {"name": "fake-2025", "version": "1"}}});
                        let headers =
                            format!("content-type: application/json\r\nmcp-session-id: {live}\r\n");
                        write(&mut sock, "200 OK", &headers, &body.to_string()).await;
                    }
                    (_, None) => match refusal {
                        Refusal::Text => {
                            write(
                                &mut sock,
                                "400 Bad Request",
                                "",
                                "Bad Request: Session ID is required",
                            )
                            .await;
                        }
                        Refusal::OldVersions => {
                            let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32022,
                                "message": "Unsupported protocol version",
                                "data": {"supported": ["2025-11-25", "2025-06-18"]}}});
                            write(
                                &mut sock,
                                "400 Bad Request",
                                json_headers(),
                                &body.to_string(),
                            )
                            .await;
                        }
                    },
                    ("notifications/initialized", Some("live")) => {
                        write(&mut sock, "202 Accepted", "", "").await;
                    }
                    ("response", Some("live")) => {
                        let _ = answers_tx.send(req.body.clone()).await;
                        write(&mut sock, "202 Accepted", "", "").await;
                    }
                    ("tools/call", Some("live")) => {
                        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
                        let _ = sock.write_all(head.as_bytes()).await;
                        let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                            "params": {"progressToken": 1, "progress": 1}});
                        let ask = json!({"jsonrpc": "2.0", "id": 7, "method": "elicitation/create",
                            "params": {"message": "Deploy web?", "requestedSchema": {"type": "object",
                                "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}}});
                        for event in [progress, ask] {
                            let _ = sock
                                .write_all(format!("event: message\ndata: {event}\n\n").as_bytes())
                                .await;
                        }
                        let answer = answers_rx.lock().await.recv().await.unwrap();
                        assert_eq!(answer["id"], 7);
                        let confirmed = answer["result"]["content"]["confirm"] == json!(true);
                        let result = json!({"jsonrpc": "2.0", "id": id, "result": {"content": [
                            {"type": "text", "text": if confirmed { "deployed (2025)" } else { "not deployed" }}]}});
                        let _ = sock
                            .write_all(format!("data: {result}\n\n").as_bytes())
                            .await;
                        // Left open: the client stops at the response.
                        tokio::time::sleep(Duration::from_secs(30)).await;
                    }
                    ("tools/list", Some("live")) => {
                        let body = json!({"jsonrpc": "2.0", "id": id, "result": {"tools": []}});
                        write(&mut sock, "200 OK", json_headers(), &body.to_string()).await;
                    }
                    _ => write(&mut sock, "404 Not Found", "", "").await,
                }
            });
        }
    });
    (url, log, generation)
}

fn confirm() -> Handlers {
    Handlers::new().on_elicit(|ctx, _form| async move {
        assert_eq!(ctx.key, "elicitation/create#1");
        assert_eq!(ctx.target, "deploy");
        Ok(ElicitResult {
            action: ElicitAction::Accept,
            content: json!({"confirm": true}).as_object().cloned(),
        })
    })
}

fn client(url: &str, mode: EraMode) -> Client {
    Client::builder(HttpTransport::new(url).unwrap())
        .with_handler(confirm())
        .with_era(mode)
        .with_request_timeout(Some(Duration::from_secs(10)))
        .build()
}

fn whats(log: &Log) -> Vec<String> {
    log.lock().unwrap().iter().map(Seen::what).collect()
}

#[tokio::test]
async fn a_modern_server_costs_no_extra_round_trip() {
    let (url, log) = modern_server(false).await;
    let c = client(&url, EraMode::Auto);
    assert_eq!(c.era(), None);
    let done = c.call_tool("deploy", json!({})).await.unwrap();
    assert_eq!(done.text(), "modern");
    assert_eq!(whats(&log), ["tools/call"]);
    assert_eq!(c.era(), Some(Era::Modern));
    assert_eq!(
        log.lock().unwrap()[0].headers["mcp-protocol-version"],
        "2026-07-28"
    );
    // Known now: the next call goes straight, and close has no session to end.
    c.call_tool("deploy", json!({})).await.unwrap();
    c.close().await;
    assert_eq!(whats(&log), ["tools/call", "tools/call"]);
}

#[tokio::test]
async fn a_modern_400_is_the_modern_servers_error() {
    let (url, log) = modern_server(true).await;
    let c = client(&url, EraMode::Auto);
    let e = c.call_tool("deploy", json!({})).await.unwrap_err();
    assert_eq!(e.jsonrpc_code(), Some(-32602), "{e:?}");
    assert_eq!(whats(&log), ["tools/call"]);
    assert_eq!(c.era(), Some(Era::Modern));
}

#[tokio::test]
async fn a_2025_server_gets_initialize_a_session_and_its_question_answered() {
    let (url, log) = legacy_server(Refusal::Text).await;
    let cache = Arc::new(EraCache::new());
    let c = Client::builder(HttpTransport::new(&url).unwrap())
        .with_handler(confirm())
        .with_era_cache(cache.clone())
        .build();
    let done = c
        .call_tool("deploy", json!({"service": "web"}))
        .await
        .unwrap();
    assert_eq!(done.text(), "deployed (2025)");
    assert_eq!(c.era(), Some(Era::Legacy));
    assert_eq!(cache.get(&url), Some(Era::Legacy), "{:?}", cache.entries());
    assert_eq!(
        whats(&log),
        [
            "tools/call",
            "initialize",
            "notifications/initialized",
            "tools/call",
            "response"
        ]
    );
    {
        let seen = log.lock().unwrap();
        // The 2025 call: plain params, no MRTR _meta, no 2026 headers.
        assert_eq!(
            seen[3].body["params"],
            json!({"name": "deploy", "arguments": {"service": "web"}})
        );
        assert!(!seen[3].headers.contains_key("mcp-method"));
        assert!(!seen[1].headers.contains_key("mcp-session-id"));
        assert_eq!(seen[1].body["params"]["protocolVersion"], "2025-11-25");
        assert_eq!(
            seen[1].body["params"]["capabilities"]["elicitation"],
            json!({})
        );
        for later in &seen[2..] {
            assert_eq!(later.headers["mcp-session-id"], "sess-1");
            assert_eq!(later.headers["mcp-protocol-version"], "2025-11-25");
        }
        // The answer to the server's request: its id, the handler's result.
        assert_eq!(
            seen[4].body,
            json!({"jsonrpc": "2.0", "id": 7, "result": {"action": "accept", "content": {"confirm": true}}})
        );
    }
    // The session is kept: another request goes in it without initialize.
    let tools = c.request("tools/list", Default::default()).await.unwrap();
    assert_eq!(tools, json!({"tools": []}));
    c.close().await;
    let all = whats(&log);
    assert_eq!(&all[5..], ["tools/list", "DELETE"]);
    assert!(!format!("{c:?}").contains("sess-1"));
}

#[tokio::test]
async fn unsupported_version_naming_only_2025_versions_means_2025() {
    let (url, log) = legacy_server(Refusal::OldVersions).await;
    let c = client(&url, EraMode::Auto);
    let done = c.call_tool("deploy", json!({})).await.unwrap();
    assert_eq!(done.text(), "deployed (2025)");
    assert_eq!(whats(&log)[..2], ["tools/call", "initialize"]);
}

#[tokio::test]
async fn a_forced_era_skips_the_probe() {
    let (url, log) = legacy_server(Refusal::Text).await;
    let c = client(&url, EraMode::Legacy);
    assert_eq!(c.era(), Some(Era::Legacy));
    c.call_tool("deploy", json!({})).await.unwrap();
    assert_eq!(whats(&log)[0], "initialize");

    let (url, log) = legacy_server(Refusal::Text).await;
    let c = client(&url, EraMode::Modern);
    let e = c.call_tool("deploy", json!({})).await.unwrap_err();
    assert!(
        matches!(
            e,
            ClientError::Transport(mrtr_client::TransportError::Status { status: 400, .. })
        ),
        "{e:?}"
    );
    assert_eq!(whats(&log), ["tools/call"]);
}

#[tokio::test]
async fn a_session_the_server_forgot_is_opened_again_once() {
    let (url, log, restart) = legacy_server_restartable(Refusal::Text).await;
    let c = client(&url, EraMode::Legacy);
    c.request("tools/list", Default::default()).await.unwrap();
    restart.store(2, Ordering::SeqCst);
    let tools = c.request("tools/list", Default::default()).await.unwrap();
    assert_eq!(tools, json!({"tools": []}));
    assert_eq!(
        whats(&log),
        [
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/list",
            "initialize",
            "notifications/initialized",
            "tools/list"
        ]
    );
    let seen = log.lock().unwrap();
    assert_eq!(seen[3].headers["mcp-session-id"], "sess-1");
    assert_eq!(seen[6].headers["mcp-session-id"], "sess-2");
}

#[tokio::test]
async fn a_remembered_2025_era_that_no_longer_holds_is_told_again() {
    let (url, log) = modern_server(false).await;
    let cache = Arc::new(EraCache::new());
    cache.insert(&url, Era::Legacy);
    let c = Client::builder(HttpTransport::new(&url).unwrap())
        .with_handler(confirm())
        .with_era_cache(cache.clone())
        .build();
    let done = c.call_tool("deploy", json!({})).await.unwrap();
    assert_eq!(done.text(), "modern");
    // initialize found no 2025 server; the call then told the era afresh.
    assert_eq!(whats(&log), ["initialize", "tools/call"]);
    assert_eq!(cache.get(&url), Some(Era::Modern));

    // Forced, the era stands, and the failure is the call's.
    let (url, log) = modern_server(false).await;
    let c = client(&url, EraMode::Legacy);
    let e = c.call_tool("deploy", json!({})).await.unwrap_err();
    assert!(matches!(e, ClientError::Flow(_)), "{e:?}");
    assert_eq!(whats(&log), ["initialize"]);
}
