//! The client over stdio: `StdioTransport` and `mrtr call ... -- PROGRAM ARGS`
//! against the crate's own `mrtr serve --stdio`, and against small `sh` scripts
//! that misbehave (garbage and oversized lines, requests from the server, an
//! early exit, a closed stdout, control characters on stderr).
#![cfg(unix)]

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mrtr::wire::{ElicitAction, ElicitResult};
use mrtr_client::{
    Client, ClientError, EraMode, Handlers, ServerStderr, StdioTransport, Transport, TransportError,
};
use serde_json::{Value, json};

const MRTR: &str = env!("CARGO_BIN_EXE_mrtr");

fn confirm() -> Handlers {
    Handlers::new().on_elicit(|_ctx, _form| async {
        Ok(ElicitResult {
            action: ElicitAction::Accept,
            content: json!({"confirm": true}).as_object().cloned(),
        })
    })
}

/// A modern client, with no `server/discover` probe first: the `sh` servers
/// answer the one request they read blindly (the probe is tested with the
/// 2025-era fixture in `call::legacy` and mrtr-client's tests).
fn client(transport: impl Transport + 'static) -> Client {
    Client::builder(transport)
        .with_handler(confirm())
        .with_era(EraMode::Modern)
        .with_request_timeout(Some(Duration::from_secs(20)))
        .build()
}

fn reference_server() -> std::process::Command {
    let mut command = std::process::Command::new(MRTR);
    command.args(["serve", "--stdio", "--anonymous"]);
    command
}

/// A server that is this `sh` script.
fn script(body: &str) -> std::process::Command {
    let mut command = std::process::Command::new("sh");
    command.args(["-c", body]);
    command
}

/// Collects the lines of a server's stderr.
fn collect() -> (ServerStderr, Arc<Mutex<Vec<String>>>) {
    let lines: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = lines.clone();
    let stderr = ServerStderr::lines(move |l| sink.lock().unwrap().push(l.to_owned()));
    (stderr, lines)
}

/// Waits (bounded) until a collected line contains `needle`.
async fn wait_for_line(lines: &Mutex<Vec<String>>, needle: &str) -> String {
    for _ in 0..100 {
        if let Some(l) = lines.lock().unwrap().iter().find(|l| l.contains(needle)) {
            return l.clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no line with {needle:?} in {:?}", lines.lock().unwrap());
}

/// The complete result of the driver's first request (id 1), as one line.
const COMPLETE_1: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[{"type":"text","text":"survived"}]}}"#;

fn connection_error(r: Result<impl std::fmt::Debug, ClientError>) -> String {
    match r {
        Err(ClientError::Transport(TransportError::Connection(msg))) => msg,
        other => panic!("expected a connection error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_two_round_deploy_against_mrtr_serve_stdio() {
    let (stderr, log) = collect();
    let transport = Arc::new(
        StdioTransport::builder(reference_server())
            .stderr(stderr)
            .spawn()
            .unwrap(),
    );
    assert!(transport.id().is_some());
    let client = client(transport.clone());
    let done = client
        .call_tool("deploy", json!({"service": "web"}))
        .await
        .unwrap();
    assert_eq!(done.rounds, 2);
    assert_eq!(done.text(), "Deployed web (deployment #1).");

    // Two flows at once on the one connection: each response finds its request.
    let (a, b) = tokio::join!(
        client.call_tool("deploy", json!({"service": "a"})),
        client.call_tool("deploy", json!({"service": "b"}))
    );
    assert!(a.unwrap().text().starts_with("Deployed a "));
    assert!(b.unwrap().text().starts_with("Deployed b "));

    // Closing its stdin ends `mrtr serve --stdio` by itself, within the grace.
    let status = transport.shutdown(Duration::from_secs(10)).await;
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
    wait_for_line(&log, "stdin closed").await;
    let after = client.call_tool("deploy", json!({"service": "c"})).await;
    assert!(connection_error(after).contains("shut down"));
}

#[tokio::test]
async fn garbage_notifications_and_server_requests_are_skipped() {
    // Junk of every kind before the response; then the answer we send to the
    // server's request is echoed to stderr, so the test sees it.
    let body = format!(
        r#"read request
echo 'not json at all'
echo '[1, 2, 3]'
echo ''
printf '\033[2J\r\n'
echo '{{"jsonrpc":"2.0","method":"notifications/message","params":{{"level":"info"}}}}'
echo '{{"jsonrpc":"2.0","id":77,"result":{{}}}}'
echo '{{"jsonrpc":"2.0","id":"1","result":{{}}}}'
echo '{{"jsonrpc":"2.0","id":5,"method":"elicitation/create","params":{{}}}}'
echo '{COMPLETE_1}'
read answer
echo "answer: $answer" >&2
exec cat > /dev/null"#
    );
    let (stderr, log) = collect();
    let transport = StdioTransport::builder(script(&body))
        .stderr(stderr)
        .spawn()
        .unwrap();
    let client = client(transport);
    let done = client.call_tool("x", json!({})).await.unwrap();
    assert_eq!(done.text(), "survived");
    // (The client, and so the server, lives until the answer is seen.)
    let answer = wait_for_line(&log, "answer: ").await;
    let answer: Value = serde_json::from_str(answer.trim_start_matches("answer: ")).unwrap();
    assert_eq!(answer["id"], 5);
    assert_eq!(answer["error"]["code"], -32601);
}

#[tokio::test]
async fn an_oversized_line_fails_the_request_waiting_without_holding_it() {
    let body = r#"read request
head -c 100000 /dev/zero | tr '\0' x
echo
exec cat > /dev/null"#;
    let transport = StdioTransport::builder(script(body))
        .stderr(ServerStderr::Discard)
        .max_line_bytes(1024)
        .spawn()
        .unwrap();
    match client(transport).call_tool("x", json!({})).await {
        Err(ClientError::Transport(TransportError::InvalidResponse(msg))) => {
            assert!(msg.contains("longer than 1024 bytes"), "{msg}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn an_error_without_an_id_reaches_the_one_request_waiting() {
    let body = r#"read request
echo '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}'
exec cat > /dev/null"#;
    let transport = StdioTransport::builder(script(body))
        .stderr(ServerStderr::Discard)
        .spawn()
        .unwrap();
    let r = client(transport).call_tool("x", json!({})).await;
    assert_eq!(r.unwrap_err().jsonrpc_code(), Some(-32700));
}

#[tokio::test]
async fn a_server_that_exits_is_a_connection_error_with_its_status() {
    let transport = StdioTransport::builder(script("exit 7"))
        .stderr(ServerStderr::Discard)
        .spawn()
        .unwrap();
    let msg = connection_error(client(transport).call_tool("x", json!({})).await);
    assert!(msg.contains("exited with status 7"), "{msg}");

    // One that closes its stdout and keeps running.
    let transport = StdioTransport::builder(script("exec >&-; exec sleep 30"))
        .stderr(ServerStderr::Discard)
        .spawn()
        .unwrap();
    let msg = connection_error(client(transport).call_tool("x", json!({})).await);
    assert!(msg.contains("closed its stdout"), "{msg}");
}

#[tokio::test]
async fn a_program_that_cannot_start_is_an_error_at_spawn() {
    let r = StdioTransport::spawn("/nonexistent/mrtr-no-such-server", ["--stdio"]);
    match r {
        Err(TransportError::Connection(msg)) => {
            assert!(msg.contains("cannot start"), "{msg}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn spawning_needs_a_tokio_runtime() {
    let r = StdioTransport::spawn("sh", ["-c", "exit 0"]);
    assert!(matches!(r, Err(TransportError::Connection(m)) if m.contains("no tokio runtime")));
}

#[tokio::test]
async fn shutdown_kills_a_server_that_does_not_exit_on_eof() {
    // `sleep` never reads its stdin, so closing it changes nothing.
    let transport = StdioTransport::builder(script("exec sleep 30"))
        .stderr(ServerStderr::Discard)
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let status = transport
        .shutdown(Duration::from_millis(200))
        .await
        .unwrap();
    use std::os::unix::process::ExitStatusExt as _;
    assert_eq!(status.signal(), Some(9), "{status:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn dropping_the_transport_kills_the_server() {
    let transport = StdioTransport::builder(script("exec sleep 30"))
        .stderr(ServerStderr::Discard)
        .spawn()
        .unwrap();
    let pid = transport.id().unwrap();
    drop(transport);
    // Gone, or a zombie waiting to be reaped: not running any more.
    for _ in 0..100 {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return,
            Ok(stat)
                if stat
                    .rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z') =>
            {
                return;
            }
            Ok(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    panic!("the server {pid} still runs after the transport was dropped");
}

// ------------------------------------------------------------------ mrtr call

/// `mrtr call ARGS` as a process without a terminal: exit code, stdout, stderr.
async fn mrtr_call(args: &[&str]) -> (i32, String, String) {
    let out = tokio::process::Command::new(MRTR)
        .arg("call")
        .args(args)
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

const CONFIRM: &str = r#"{"confirm": {"action": "accept", "content": {"confirm": true}}}"#;

#[tokio::test]
async fn mrtr_call_deploys_over_stdio_with_answers() {
    let (code, out, err) = mrtr_call(&[
        "tool",
        "deploy",
        "--args",
        r#"{"service": "web"}"#,
        "--answers",
        CONFIRM,
        "--no-input",
        "--",
        MRTR,
        "serve",
        "--stdio",
        "--anonymous",
    ])
    .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "Deployed web (deployment #1).");
    // The server's log, on our stderr behind its marker: both rounds.
    let rounds = err
        .lines()
        .filter(|l| l.starts_with("server| ") && l.contains("target=\"deploy\""))
        .count();
    assert_eq!(rounds, 2, "{err}");

    // Discarded on request.
    let (code, out, err) = mrtr_call(&[
        "--server-stderr",
        "discard",
        "tool",
        "deploy",
        "--args",
        r#"{"service": "web"}"#,
        "--answers",
        CONFIRM,
        "--no-input",
        "--",
        MRTR,
        "serve",
        "--stdio",
        "--anonymous",
    ])
    .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "Deployed web (deployment #1).");
    assert!(!err.contains("server| "), "{err}");
}

#[tokio::test]
async fn mrtr_call_reports_a_server_that_exits_at_once() {
    // `mrtr serve --stdio` without a principal refuses to start (exit 2).
    let (code, out, err) = mrtr_call(&[
        "tool",
        "deploy",
        "--no-input",
        "--",
        MRTR,
        "serve",
        "--stdio",
    ])
    .await;
    assert_eq!(code, 3, "{err}");
    assert!(out.is_empty());
    assert!(err.contains("exited with status 2"), "{err}");
    assert!(
        err.contains("server| mrtr: error:"),
        "the server's own words: {err}"
    );
    assert!(!err.contains("panicked"), "{err}");

    let (code, _, err) = mrtr_call(&["tool", "x", "--", "/nonexistent/mrtr-no-such-server"]).await;
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("cannot start"), "{err}");
}

#[tokio::test]
async fn mrtr_call_survives_garbage_and_filters_the_servers_stderr() {
    let body = format!(
        r#"read request
printf '\033]52;c;AAAA\007\033[2Jevil\n' >&2
echo 'garbage'
echo '{COMPLETE_1}'
exec cat > /dev/null"#
    );
    // A modern server that answers one request blindly: no probe.
    let (code, out, err) = mrtr_call(&[
        "--era",
        "modern",
        "tool",
        "x",
        "--no-input",
        "--",
        "sh",
        "-c",
        &body,
    ])
    .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "survived");
    assert!(err.contains("server| ]52;c;AAAA[2Jevil"), "{err}");
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");
}

#[tokio::test]
async fn mrtr_call_refuses_an_oversized_line_without_panicking() {
    // One line over the 16 MiB default.
    let body = r#"read request
head -c 17000000 /dev/zero | tr '\0' x
echo
exec cat > /dev/null"#;
    let (code, out, err) = mrtr_call(&["tool", "x", "--no-input", "--", "sh", "-c", body]).await;
    assert_eq!(code, 3, "{err}");
    assert!(out.is_empty());
    assert!(err.contains("longer than 16777216 bytes"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[tokio::test]
async fn mrtr_call_wants_one_server() {
    let (code, _, err) = mrtr_call(&["tool", "x"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no server"), "{err}");
    let (code, _, err) = mrtr_call(&["http://127.0.0.1:9/mcp", "tool", "x", "--", "sh"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not both"), "{err}");
    let (code, _, err) = mrtr_call(&["--cacert", "/dev/null", "tool", "x", "--", "sh"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--cacert is for https://"), "{err}");
}
