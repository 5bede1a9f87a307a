//! `mrtr call` as a dual-era client: a modern server (`mrtr serve`) gets the
//! modern path with the requests it got before (no probe, no initialize); a
//! 2025-era stdio server (mrtr-client's Python fixture) gets `initialize` after
//! `server/discover` fails, and its `elicitation/create` is answered from
//! `--answers`, keyed `METHOD#N`, or fails closed naming that key.
#![cfg(unix)]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::Server;

const MRTR: &str = env!("CARGO_BIN_EXE_mrtr");

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../mrtr-client/tests/fixtures/legacy_stdio_server.py"
);

/// `mrtr call ARGS` as a process without a terminal: exit code, stdout, stderr.
/// It remembers no eras (an empty `MRTR_ERA_CACHE`).
async fn mrtr_call(args: &[&str]) -> (i32, String, String) {
    mrtr_call_remembering("", args).await
}

/// [`mrtr_call`] with the era file `eras`.
async fn mrtr_call_remembering(eras: &str, args: &[&str]) -> (i32, String, String) {
    let out = tokio::process::Command::new(MRTR)
        .arg("call")
        .args(args)
        .env("MRTR_ERA_CACHE", eras)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), out)
        .await
        .expect("mrtr call ends")
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The fixture's log lines (`server| got ...`) on `mrtr call`'s stderr.
fn got(err: &str) -> Vec<&str> {
    err.lines()
        .filter_map(|l| l.strip_prefix("server| got "))
        .collect()
}

#[tokio::test]
async fn a_2025_stdio_server_is_called_after_initialize_with_the_answers_given() {
    let answers = r#"{"elicitation/create#1": {"action": "accept", "content": {"confirm": true}}}"#;
    let (code, out, err) = mrtr_call(&[
        "tool",
        "deploy",
        "--answers",
        answers,
        "--no-input",
        "--",
        "python3",
        FIXTURE,
    ])
    .await;
    assert_eq!(code, 0, "{err}");
    // The tool result, printed as for a modern server.
    assert_eq!(out, "Deployed web (2025 era).\n");
    assert_eq!(
        got(&err),
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "tools/call",
            "response \"ask-1\""
        ],
        "{err}"
    );
    assert!(
        err.contains(r#"server| answer {"action": "accept", "content": {"confirm": true}}"#),
        "{err}"
    );

    // Forced, there is no probe.
    let (code, out, err) = mrtr_call(&[
        "--era",
        "legacy",
        "tool",
        "deploy",
        "--answers",
        answers,
        "--no-input",
        "--",
        "python3",
        FIXTURE,
    ])
    .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "Deployed web (2025 era).\n");
    assert_eq!(got(&err)[0], "initialize", "{err}");

    // Declined: the tool's own error, exit 1.
    let (code, _out, err) = mrtr_call(&[
        "tool",
        "deploy",
        "--answers",
        r#"{"elicitation/create#1": {"action": "decline"}}"#,
        "--no-input",
        "--",
        "python3",
        FIXTURE,
    ])
    .await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("tool error: Not deployed."), "{err}");
}

#[tokio::test]
async fn a_2025_question_without_an_answer_fails_closed_naming_its_key() {
    let (code, out, err) = mrtr_call(&[
        "--server-stderr",
        "discard",
        "tool",
        "deploy",
        "--no-input",
        "--",
        "python3",
        FIXTURE,
    ])
    .await;
    assert_eq!(code, 2, "{err}");
    assert_eq!(out, "");
    assert!(
        err.contains(r#"--answers '{"elicitation/create#1": {"action": "accept", "content": {"confirm": <true|false>}}}'"#),
        "{err}"
    );
}

#[tokio::test]
async fn a_modern_server_gets_the_modern_path_and_no_extra_request() {
    let server = Server::start(&[]);
    let url = format!("http://{}/mcp", server.addr);
    let (code, out, err) = mrtr_call(&[
        &url,
        "tool",
        "deploy",
        "--args",
        r#"{"service": "web"}"#,
        "--answers",
        r#"{"confirm": {"action": "accept", "content": {"confirm": true}}}"#,
        "--no-input",
    ])
    .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "Deployed web (deployment #1).\n");
    // The two rounds of the flow, as before: no initialize, no server/discover.
    server.wait_for_lines("outcome=\"complete\"", 1);
    let rpcs: Vec<String> = server
        .request_lines()
        .into_iter()
        .filter(|l| l.contains("jsonrpc_id="))
        .collect();
    assert_eq!(rpcs.len(), 2, "{rpcs:#?}");
    assert!(
        rpcs.iter().all(|l| l.contains("method=\"tools/call\"")),
        "{rpcs:#?}"
    );
}

#[tokio::test]
async fn mrtr_call_in_the_2025_era_drives_mrtr_serve_in_a_session_over_http_and_stdio() {
    let server = Server::start(&[]);
    let url = format!("http://{}/mcp", server.addr);
    let answers = r#"{"elicitation/create#1": {"action": "accept", "content": {"confirm": true}}}"#;
    let call = |target: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = ["--era", "legacy", "--no-input", "--answers", answers]
            .into_iter()
            .chain(["tool", "deploy", "--args", r#"{"service": "web"}"#])
            .map(str::to_owned)
            .collect();
        a.extend(target.iter().map(|t| (*t).to_owned()));
        a
    };
    let mut over_http = vec![url.clone()];
    over_http.extend(call(&[]));
    let (code, out, err) =
        mrtr_call(&over_http.iter().map(String::as_str).collect::<Vec<_>>()).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "Deployed web (deployment #1).\n");
    // A session: initialize, the call in it (its question answered inside the
    // one request), and the session ended.
    server.wait_for_lines("method=\"tools/call\"", 1);
    let lines = server.request_lines();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("method=\"initialize\"") && l.contains("era=\"legacy\"")),
        "{lines:#?}"
    );
    assert!(
        lines.iter().any(|l| l.contains("method=\"tools/call\"")
            && l.contains("era=\"legacy\"")
            && l.contains("outcome=\"complete\"")),
        "{lines:#?}"
    );
    let mrtr = env!("CARGO_BIN_EXE_mrtr");
    let stdio = ["--", mrtr, "serve", "--stdio", "--anonymous"];
    let over_stdio = call(&stdio);
    let (code, out, err) =
        mrtr_call(&over_stdio.iter().map(String::as_str).collect::<Vec<_>>()).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "Deployed web (deployment #1).\n");
}

#[tokio::test]
async fn era_takes_three_values() {
    let (code, _out, err) = mrtr_call(&["--era", "2025", "tool", "x", "--", "true"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("auto") && err.contains("legacy"), "{err}");
}

/// A 2025-era HTTP server on a thread: `400 Bad Request: Session ID is required`
/// to a request without a session, `initialize` with `Mcp-Session-Id: s-1`,
/// `202` to notifications, a JSON result to `tools/call`, `200` to `DELETE`.
/// Returns its URL and what it got (`METHOD` or the HTTP method, in order).
fn legacy_http_server() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let got: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = got.clone();
    std::thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(mut sock) = sock else { return };
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            let head_end = loop {
                let Ok(n) = sock.read(&mut chunk) else {
                    break None;
                };
                if n == 0 {
                    break None;
                }
                buf.extend_from_slice(&chunk[..n]);
                if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    break Some(i + 4);
                }
            };
            let Some(head_end) = head_end else { continue };
            let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            while buf.len() < head_end + len {
                let n = sock.read(&mut chunk).unwrap();
                buf.extend_from_slice(&chunk[..n]);
            }
            let body: Value = serde_json::from_slice(&buf[head_end..]).unwrap_or(Value::Null);
            let session = head.contains("mcp-session-id: s-1");
            let what = if head.starts_with("post") {
                body["method"].as_str().unwrap_or("response").to_owned()
            } else {
                head.split(' ').next().unwrap_or("").to_ascii_uppercase()
            };
            // `mrtr call`'s look for OAuth metadata (GET .well-known) is not counted.
            if what != "GET" {
                log.lock().unwrap().push(what.clone());
            }
            let (status, headers, body) = match (what.as_str(), session) {
                ("initialize", false) => (
                    "200 OK",
                    "content-type: application/json\r\nmcp-session-id: s-1\r\n",
                    json!({"jsonrpc": "2.0", "id": body["id"], "result": {
                        "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                        "serverInfo": {"name": "fake-2025", "version": "1"}}})
                    .to_string(),
                ),
                (_, false) => (
                    "400 Bad Request",
                    "",
                    "Bad Request: Session ID is required".into(),
                ),
                ("tools/call", true) => (
                    "200 OK",
                    "content-type: application/json\r\n",
                    json!({"jsonrpc": "2.0", "id": body["id"], "result": {
                        "content": [{"type": "text", "text": "hello from 2025"}]}})
                    .to_string(),
                ),
                ("DELETE", true) => ("200 OK", "", String::new()),
                ("GET", _) => ("404 Not Found", "", String::new()),
                (_, true) => ("202 Accepted", "", String::new()),
            };
            let _ = write!(
                sock,
                "HTTP/1.1 {status}\r\n{headers}content-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, got)
}

#[tokio::test]
async fn a_2025_http_endpoint_is_remembered_from_one_run_to_the_next() {
    let dir = std::env::temp_dir().join(format!("mrtr-call-eras-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let eras = dir.join("eras.json");
    let eras = eras.to_str().unwrap();
    let (url, got) = legacy_http_server();

    let (code, out, err) =
        mrtr_call_remembering(eras, &[&url, "--no-input", "tool", "hello"]).await;
    assert_eq!((code, out.as_str()), (0, "hello from 2025\n"), "{err}");
    assert_eq!(
        *got.lock().unwrap(),
        [
            "tools/call",
            "initialize",
            "notifications/initialized",
            "tools/call",
            "DELETE"
        ]
    );
    let file: Value = serde_json::from_str(&std::fs::read_to_string(eras).unwrap()).unwrap();
    assert_eq!(file, json!({url.clone(): "legacy"}));

    // The next run opens the session at once: no 2026-07-28 request first.
    got.lock().unwrap().clear();
    let (code, out, err) =
        mrtr_call_remembering(eras, &[&url, "--no-input", "tool", "hello"]).await;
    assert_eq!((code, out.as_str()), (0, "hello from 2025\n"), "{err}");
    assert_eq!(
        *got.lock().unwrap(),
        [
            "initialize",
            "notifications/initialized",
            "tools/call",
            "DELETE"
        ]
    );

    // A stale entry (the endpoint is modern-only now): the session cannot be opened,
    // the era is told again, the call succeeds, and the entry goes.
    let server = Server::start(&["--eras", "modern-only"]);
    let modern = format!("http://{}/mcp", server.addr);
    std::fs::write(
        eras,
        json!({modern.clone(): "legacy", url.clone(): "legacy"}).to_string(),
    )
    .unwrap();
    let (code, out, err) = mrtr_call_remembering(
        eras,
        &[
            &modern,
            "--no-input",
            "tool",
            "deploy",
            "--args",
            r#"{"service": "web"}"#,
            "--answers",
            r#"{"confirm": {"action": "accept", "content": {"confirm": true}}}"#,
        ],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "Deployed web (deployment #1).\n");
    let file: Value = serde_json::from_str(&std::fs::read_to_string(eras).unwrap()).unwrap();
    assert_eq!(file, json!({url: "legacy"}));
    let _ = std::fs::remove_dir_all(&dir);
}
