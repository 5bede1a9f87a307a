//! `mrtr call` (src/bin/mrtr/call.rs) in-process against a fake server on 127.0.0.1:
//! answers from `--answers`, `--sampling-reply` and `--root`, failing closed
//! without a terminal, and the exit codes.
#![cfg(feature = "server")]

/// The `mrtr call` terminal client, from the `mrtr` binary (not part of the library).
#[path = "../src/bin/mrtr/call.rs"]
#[allow(dead_code)] // the binary's entry points other than the one tested here
mod call;

use std::sync::{Arc, Mutex};

use axum::Json;
use axum::routing::post;
use call::{CallArgs, run_call_with_output};
use clap::Parser;
use serde_json::{Value, json};

#[derive(Debug, Parser)]
struct Cli {
    #[command(flatten)]
    args: CallArgs,
}

/// A stateless fake MRTR server: `book` asks a form, a sampling and roots in one
/// round, then completes with what it got; `fail` is a tool error; `boom` a JSON-RPC error.
async fn server() -> (String, Arc<Mutex<Vec<Value>>>) {
    let log: Arc<Mutex<Vec<Value>>> = Arc::default();
    let seen = log.clone();
    let app = axum::Router::new().route(
        "/mcp",
        post(move |Json(req): Json<Value>| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push(req.clone());
                let p = &req["params"];
                let result = match p["name"].as_str().or(p["uri"].as_str()).unwrap_or("") {
                    "book" if p.get("inputResponses").is_none() => json!({
                        "resultType": "input_required",
                        "requestState": "st",
                        "inputRequests": {
                            "when": {"method": "elicitation/create", "params": {"message": "When?",
                                "requestedSchema": {"type": "object", "properties": {"day": {"type": "string"}}, "required": ["day"]}}},
                            "llm": {"method": "sampling/createMessage", "params": {
                                "messages": [{"role": "user", "content": {"type": "text", "text": "Say hi"}}], "maxTokens": 10}},
                            "where": {"method": "roots/list"}
                        }
                    }),
                    "book" => json!({"resultType": "complete", "content": [{"type": "text",
                        "text": format!("booked {} / {} / {}",
                            p["inputResponses"]["when"]["content"]["day"],
                            p["inputResponses"]["llm"]["content"]["text"],
                            p["inputResponses"]["where"]["roots"][0]["uri"])}]}),
                    "fail" => json!({"resultType": "complete", "isError": true, "content": [{"type": "text", "text": "disk full"}]}),
                    "boom" => {
                        return Json(json!({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32602, "message": "bad"}}));
                    }
                    _ => json!({"resultType": "complete", "contents": [{"uri": "x://y", "blob": "AA=="}]}),
                };
                Json(json!({"jsonrpc": "2.0", "id": req["id"], "result": result}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, log)
}

async fn call(argv: &[&str]) -> (i32, String, String) {
    let cli =
        Cli::try_parse_from(std::iter::once("mrtr-call").chain(argv.iter().copied())).unwrap();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = run_call_with_output(cli.args, &mut out, &mut err).await;
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

#[tokio::test]
async fn answers_flags_and_roots_complete_the_call() {
    let (url, log) = server().await;
    let answers = r#"{"when": {"action": "accept", "content": {"day": "monday"}}, "unused": {"action": "decline"}}"#;
    let (code, out, err) = call(&[
        &url,
        "tool",
        "book",
        "--args",
        r#"{"n": 2}"#,
        "--answers",
        answers,
        "--sampling-reply",
        "hi there",
        "--root",
        "/tmp",
        "--no-input",
    ])
    .await;
    assert_eq!(code, 0, "stderr: {err}");
    assert_eq!(
        out.trim(),
        r#"booked "monday" / "hi there" / "file:///tmp""#
    );
    let log = log.lock().unwrap();
    assert_eq!(log.len(), 2);
    assert_eq!(log[1]["params"]["arguments"], json!({"n": 2}));
    assert_eq!(log[1]["params"]["requestState"], "st");
    assert_eq!(
        log[1]["params"]["_meta"]["io.modelcontextprotocol/clientInfo"]["name"],
        "mrtr-call"
    );
    assert_eq!(
        log[1]["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"],
        json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}})
    );
}

#[tokio::test]
async fn without_a_terminal_an_unanswered_question_fails_closed() {
    let (url, log) = server().await;
    // Sampling and roots are covered; the form is not.
    let (code, out, err) =
        call(&[&url, "tool", "book", "--sampling-reply", "x", "--no-input"]).await;
    assert_eq!(code, 2, "stderr: {err}");
    assert!(out.is_empty());
    assert!(
        err.contains("\"when\"") && err.contains("--answers"),
        "{err}"
    );
    assert_eq!(log.lock().unwrap().len(), 1, "no retry");
}

#[tokio::test]
async fn an_answer_of_the_wrong_shape_fails_closed() {
    let (url, _) = server().await;
    let answers = r#"{"when": {"roots": []}, "llm": {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"}}"#;
    let (code, _, err) = call(&[&url, "tool", "book", "--answers", answers, "--no-input"]).await;
    assert_eq!(code, 2, "stderr: {err}");
    assert!(err.contains("--answers[\"when\"]"), "{err}");
}

#[tokio::test]
async fn a_tool_error_exits_1_on_stderr() {
    let (url, _) = server().await;
    let (code, out, err) = call(&[&url, "tool", "fail", "--no-input"]).await;
    assert_eq!(code, 1);
    assert!(out.is_empty());
    assert!(err.contains("tool error: disk full"), "{err}");
}

#[tokio::test]
async fn protocol_errors_exit_3_and_usage_errors_exit_2() {
    let (url, _) = server().await;
    let (code, _, err) = call(&[&url, "prompt", "boom", "--args", r#"{"a": "b"}"#]).await;
    assert_eq!(code, 3);
    assert!(err.contains("-32602"), "{err}");
    assert_eq!(call(&[&url, "tool", "x", "--args", "[1]"]).await.0, 2);
    assert_eq!(
        call(&[&url, "prompt", "x", "--args", r#"{"a": 1}"#])
            .await
            .0,
        2
    );
    assert_eq!(
        call(&["https://example.com/mcp", "resource", "x://y"])
            .await
            .0,
        2
    );
    assert_eq!(call(&[&url, "tool", "x", "--answers", "[]"]).await.0, 2);
}

#[tokio::test]
async fn a_result_without_text_prints_as_json() {
    let (url, _) = server().await;
    let (code, out, _) = call(&[&url, "resource", "x://y"]).await;
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["contents"][0]["blob"], "AA==");
}

#[tokio::test]
async fn interactive_answers_through_a_pseudo_terminal() {
    // `script` (util-linux) runs the command on a new pseudo-terminal and copies
    // our piped stdin to it, so the program sees a terminal and asks.
    let bin = env!("CARGO_BIN_EXE_mrtr");
    assert!(
        std::process::Command::new("script")
            .arg("--version")
            .output()
            .is_ok(),
        "this test needs util-linux `script` (Debian: bsdutils) for a pseudo-terminal"
    );
    let (url, log) = server().await;
    let cmd = format!("{bin} call {url} tool book --root /tmp");
    let mut child = tokio::process::Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    // Answer each prompt once it shows (a round's questions come one at a time, in any order).
    let mut todo = vec![
        ("(text) *:", "tuesday\n"),
        ("Your reply as the model", "hello\n"),
    ];
    let mut from = 0;
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    while !todo.is_empty() {
        if let Some(i) = todo.iter().position(|(p, _)| seen[from..].contains(p)) {
            let (_, answer) = todo.remove(i);
            from = seen.len();
            stdin.write_all(answer.as_bytes()).await.unwrap();
            stdin.flush().await.unwrap();
            continue;
        }
        let n = match tokio::time::timeout_at(deadline, stdout.read(&mut buf)).await {
            Ok(n) => n.unwrap(),
            Err(_) => panic!("prompts {todo:?} not shown: {seen:?}"),
        };
        assert!(n > 0, "output ended early: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    let status = tokio::time::timeout(std::time::Duration::from_secs(20), async {
        let mut rest = Vec::new();
        stdout.read_to_end(&mut rest).await.unwrap();
        seen.push_str(&String::from_utf8_lossy(&rest));
        child.wait().await.unwrap()
    })
    .await
    .expect("the call ends");
    assert!(status.success(), "{seen}");
    assert!(seen.contains("When?"), "{seen}");
    assert!(
        seen.contains(r#"booked "tuesday" / "hello" / "file:///tmp""#),
        "{seen}"
    );
    assert_eq!(log.lock().unwrap().len(), 2);
}
