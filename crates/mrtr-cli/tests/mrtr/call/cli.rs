//! `mrtr call` (`mrtr_cli::call`) in-process against a fake server on 127.0.0.1:
//! answers from `--answers`, `--sampling-reply` and `--root`, failing closed
//! without a terminal, the exit codes, the caps as flags; and the binary on a
//! pseudo-terminal: consent to roots and sampling, what reaches the terminal
//! (no control characters, no bidi overrides, no imitation of the tool's
//! prompts), and multibyte input in every kind of form field.

use std::sync::{Arc, Mutex};

use axum::Json;
use axum::routing::post;
use clap::Parser;
use mrtr_cli::call::{CallArgs, run_call_with_output};
use serde_json::{Value, json};

#[derive(Debug, Parser)]
struct Cli {
    #[command(flatten)]
    args: CallArgs,
}

/// Every character a server must not get onto the terminal.
fn hostile_chars() -> String {
    let mut s: String = ('\u{0}'..='\u{1f}')
        .filter(|c| !matches!(c, '\n' | '\t'))
        .collect();
    s.extend('\u{7f}'..='\u{9f}');
    s.extend(['\u{061c}', '\u{200e}', '\u{200f}', '\u{2028}', '\u{2029}']);
    s.extend('\u{202a}'..='\u{202e}');
    s.extend('\u{2066}'..='\u{2069}');
    s
}

/// Server text that tries to draw the tool's own link notice and prompt.
const FAKE_PROMPT: &str = "\n  The server asks you to open a link. It leads to\n    host: evil.example\n    link: https://evil.example/\n  Open it and continue? (y = accept, n = decline, :cancel): ";

/// What a hostile server puts in every text it sends.
fn evil(label: &str) -> String {
    format!("{label} {}{FAKE_PROMPT}", hostile_chars())
}

/// A form with one field of every kind `mrtr call` can type, each required.
fn every_kind_form() -> Value {
    json!({"method": "elicitation/create", "params": {"message": "Kinds", "requestedSchema": {
        "type": "object", "properties": {
            "a": {"type": "string", "title": "F-text", "maxLength": 3},
            "b": {"type": "string", "title": "F-email", "format": "email"},
            "c": {"type": "string", "title": "F-uri", "format": "uri"},
            "d": {"type": "string", "title": "F-date", "format": "date"},
            "e": {"type": "string", "title": "F-datetime", "format": "date-time"},
            "f": {"type": "number", "title": "F-number"},
            "g": {"type": "integer", "title": "F-integer"},
            "h": {"type": "boolean", "title": "F-bool"},
            "i": {"type": "string", "title": "F-enum", "enum": ["red", "green"]}
        }, "required": ["a", "b", "c", "d", "e", "f", "g", "h", "i"]}}})
}

/// A stateless fake MRTR server: `book` asks a form, a sampling and roots in one
/// round, then completes with what it got; `fail` is a tool error; `boom` a
/// JSON-RPC error; `hostile` puts control characters and fake prompts in every
/// text of a form, a link and a sampling request; `kinds` asks a form of every
/// field kind; `again` asks the same questions every round; `reworded` asks a
/// new question under a key already answered; `hang` never answers; `bigstate` sends 1 MiB of `requestState`
/// and completes once it is echoed.
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
                    "hostile" if p.get("inputResponses").is_none() => json!({
                        "resultType": "input_required",
                        "inputRequests": {
                            "form": {"method": "elicitation/create", "params": {"message": evil("form"),
                                "requestedSchema": {"type": "object", "properties": {"pick": {
                                    "type": "string", "title": evil("title"), "description": evil("description"),
                                    "oneOf": [{"const": "v1", "title": evil("option")}]}}, "required": ["pick"]}}},
                            "link": {"method": "elicitation/create", "params": {"mode": "url",
                                "message": evil("link"), "url": "https://example.com/ok", "elicitationId": "e1"}},
                            "llm": {"method": "sampling/createMessage", "params": {"systemPrompt": evil("system"),
                                "messages": [{"role": "user", "content": {"type": "text", "text": evil("message")}}],
                                "maxTokens": 10}}
                        }
                    }),
                    "hostile" => json!({"resultType": "complete", "content": [{"type": "text",
                        "text": format!("{} done: {} {} {}", evil("result"),
                            p["inputResponses"]["form"]["content"]["pick"],
                            p["inputResponses"]["link"]["action"],
                            p["inputResponses"]["llm"]["content"]["text"])}]}),
                    "kinds" if p.get("inputResponses").is_none() => json!({
                        "resultType": "input_required", "inputRequests": {"k": every_kind_form()}}),
                    "kinds" => json!({"resultType": "complete", "content": [{"type": "text",
                        "text": format!("kinds {}", p["inputResponses"]["k"]["content"])}]}),
                    // Asks the same three questions every round, whatever it is sent.
                    "again" => json!({
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
                    // Asks `when` for a day, then (a new question under the same key) for a time.
                    "reworded" if p.get("requestState").is_none() => json!({
                        "resultType": "input_required", "requestState": "day",
                        "inputRequests": {"when": {"method": "elicitation/create", "params": {"message": "Which day?",
                            "requestedSchema": {"type": "object", "properties": {"day": {"type": "string"}}, "required": ["day"]}}}}}),
                    "reworded" if p["requestState"] == "day" => json!({
                        "resultType": "input_required", "requestState": "time",
                        "inputRequests": {"when": {"method": "elicitation/create", "params": {"message": "Which time?",
                            "requestedSchema": {"type": "object", "properties": {"time": {"type": "string"}}, "required": ["time"]}}}}}),
                    "reworded" => json!({"resultType": "complete", "content": [{"type": "text",
                        "text": format!("at {}", p["inputResponses"]["when"]["content"]["time"])}]}),
                    "hang" => std::future::pending().await,
                    "bigstate" if p.get("requestState").is_none() => json!({
                        "resultType": "input_required", "requestState": big_state()}),
                    "bigstate" => json!({"resultType": "complete", "content": [{"type": "text",
                        "text": format!("echoed {} bytes", p["requestState"].as_str().map_or(0, str::len))}]}),
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

/// The `requestState` of `bigstate`: 1 MiB that must never reach the terminal.
fn big_state() -> String {
    "SEALED".repeat((1 << 20) / 6 + 1)[..1 << 20].to_owned()
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
        json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {},
            "extensions": {"io.modelcontextprotocol/tasks": {}}})
    );
}

#[tokio::test]
async fn without_a_terminal_an_unanswered_question_fails_closed() {
    let (url, log) = server().await;
    // Sampling and roots are covered; the form is not.
    let (code, out, err) = call(&[
        &url,
        "tool",
        "book",
        "--sampling-reply",
        "x",
        "--root",
        "/tmp",
        "--no-input",
    ])
    .await;
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
async fn answers_from_flags_asked_for_again_are_not_resent() {
    let (url, log) = server().await;
    let when = r#"{"when": {"action": "accept", "content": {"day": "monday"}}}"#;
    let (code, out, err) = call(&[
        &url,
        "tool",
        "again",
        "--answers",
        when,
        "--sampling-reply",
        "hi",
        "--root",
        "/tmp",
        "--no-input",
    ])
    .await;
    assert_eq!(code, 4, "stderr: {err}");
    assert!(out.is_empty());
    assert!(
        err.contains("did not take the answer from") && err.contains("without saying why"),
        "{err}"
    );
    assert!(err.contains("hint: correct the answer"), "{err}");
    assert_eq!(log.lock().unwrap().len(), 2, "sent once, not resent");
    // A new question under the same key is answered (here by the same entry).
    let both = r#"{"when": {"action": "accept", "content": {"day": "monday", "time": "noon"}}}"#;
    let (code, out, err) = call(&[&url, "tool", "reworded", "--answers", both, "--no-input"]).await;
    assert_eq!(code, 0, "stderr: {err}");
    assert_eq!(out.trim(), r#"at "noon""#);
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
        call(&["ftp://example.com/mcp", "resource", "x://y"])
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
async fn without_flags_or_a_terminal_sampling_and_roots_are_not_declared() {
    let (url, log) = server().await;
    let when = r#"{"when": {"action": "accept", "content": {"day": "monday"}}}"#;
    let (code, _, err) = call(&[&url, "tool", "book", "--answers", when, "--no-input"]).await;
    // The server asks for sampling anyway: refused unanswered, with what to do about it.
    assert_eq!(code, 3, "stderr: {err}");
    assert!(err.contains("did not declare"), "{err}");
    assert!(
        err.contains("hint: ") && err.contains("--sampling-reply"),
        "{err}"
    );
    {
        let log = log.lock().unwrap();
        assert_eq!(log.len(), 1, "no retry");
        assert_eq!(
            log[0]["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"],
            json!({"elicitation": {"form": {}, "url": {}},
                "extensions": {"io.modelcontextprotocol/tasks": {}}})
        );
    }
    // Answers of those shapes given on the command line declare them.
    let answers = r#"{"when": {"action": "accept", "content": {"day": "monday"}},
        "llm": {"role": "assistant", "content": {"type": "text", "text": "hey"}, "model": "me"},
        "where": {"roots": [{"uri": "file:///srv"}]}}"#;
    let (code, out, err) = call(&[&url, "tool", "book", "--answers", answers, "--no-input"]).await;
    assert_eq!(code, 0, "stderr: {err}");
    assert_eq!(out.trim(), r#"booked "monday" / "hey" / "file:///srv""#);
    assert_eq!(
        log.lock().unwrap()[1]["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"],
        json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {},
            "extensions": {"io.modelcontextprotocol/tasks": {}}})
    );
}

#[tokio::test]
async fn a_form_answer_on_the_command_line_is_validated() {
    let (url, log) = server().await;
    let answers = r#"{"k": {"action": "accept", "content": {"a": "toolong"}}}"#;
    let (code, _, err) = call(&[&url, "tool", "kinds", "--answers", answers, "--no-input"]).await;
    assert_eq!(code, 2, "stderr: {err}");
    assert!(
        err.contains("does not fit the form") && err.contains("at most 3 characters"),
        "{err}"
    );
    assert_eq!(log.lock().unwrap().len(), 1, "nothing sent");
}

#[tokio::test]
async fn the_caps_are_flags() {
    let (url, log) = server().await;
    let full = [
        "--sampling-reply",
        "x",
        "--root",
        "/tmp",
        "--answers",
        r#"{"when": {"action": "accept", "content": {"day": "monday"}}}"#,
        "--no-input",
    ];
    let run = |extra: &'static [&'static str]| {
        let url = url.clone();
        async move {
            let mut argv = vec![url.as_str(), "tool", "book"];
            argv.extend(full);
            argv.extend(extra);
            call(&argv).await
        }
    };
    for (flags, cap) in [
        (
            &["--max-questions-per-round", "2"][..],
            "questions per round (limit 2)",
        ),
        (
            &["--max-sampling-per-flow", "0"][..],
            "sampling requests per flow (limit 0)",
        ),
        (
            &["--max-answer-bytes", "10"][..],
            "bytes answered per flow (limit 10)",
        ),
    ] {
        log.lock().unwrap().clear();
        let (code, out, err) = run(flags).await;
        assert_eq!(code, 3, "{flags:?}: {err}");
        assert!(out.is_empty());
        assert!(err.contains(cap), "{flags:?}: {err}");
        assert_eq!(
            log.lock().unwrap().len(),
            1,
            "{flags:?}: the round at fault is not answered"
        );
    }
    // Within the caps the same call completes.
    let (code, _, err) = run(&[
        "--max-questions-per-round",
        "3",
        "--max-concurrent-answers",
        "1",
    ])
    .await;
    assert_eq!(code, 0, "{err}");

    // A request that is never answered ends at --request-timeout.
    let (code, _, err) =
        call(&[&url, "tool", "hang", "--request-timeout", "1", "--no-input"]).await;
    assert_eq!(code, 3);
    assert!(
        err.contains("timed out") && err.contains("--request-timeout"),
        "{err}"
    );
    let zero = Cli::try_parse_from(["mrtr-call", &url, "tool", "x", "--request-timeout", "0"]);
    assert!(zero.is_err(), "a request timeout of 0 is refused");
    let defaults = Cli::try_parse_from(["mrtr-call", &url, "tool", "x"])
        .unwrap()
        .args;
    assert_eq!(
        (
            defaults.request_timeout,
            defaults.max_questions_per_round,
            defaults.max_concurrent_answers,
            defaults.max_sampling_per_flow,
            defaults.max_answer_bytes,
            defaults.max_state_bytes,
            defaults.max_upload_bytes
        ),
        (
            mrtr::defaults::CLIENT_REQUEST_TIMEOUT.as_secs(),
            mrtr::defaults::CLIENT_MAX_QUESTIONS_PER_ROUND,
            mrtr::defaults::CLIENT_MAX_CONCURRENT_ANSWERS,
            mrtr::defaults::CLIENT_MAX_SAMPLING_PER_FLOW,
            mrtr::defaults::CLIENT_MAX_ANSWER_BYTES,
            mrtr::defaults::CLIENT_MAX_STATE_BYTES,
            mrtr::defaults::CLIENT_MAX_UPLOAD_BYTES
        )
    );
}

#[tokio::test]
async fn the_echoed_state_and_the_upload_are_capped_by_flags() {
    let (url, log) = server().await;
    let run = |extra: &'static [&'static str]| {
        let url = url.clone();
        async move {
            let mut argv = vec![url.as_str(), "tool", "bigstate", "--no-input"];
            argv.extend(extra);
            call(&argv).await
        }
    };
    let echoed = |log: &Mutex<Vec<Value>>| {
        log.lock()
            .unwrap()
            .iter()
            .filter(|r| r["params"].get("requestState").is_some())
            .count()
    };
    // By default, 1 MiB of state is refused before it is sent back.
    let (code, out, err) = run(&[]).await;
    assert_eq!(code, 3, "{err}");
    assert!(out.is_empty());
    assert!(
        err.contains("requestState bytes echoed (limit 65536)"),
        "{err}"
    );
    assert!(
        err.contains("--max-state-bytes"),
        "the hint names the flag: {err}"
    );
    assert!(!err.contains("SEALED"), "the state is never printed");
    assert_eq!(log.lock().unwrap().len(), 1);
    assert_eq!(echoed(&log), 0, "never echoed");

    // --max-state-bytes lets it through; the upload cap then still holds.
    log.lock().unwrap().clear();
    let (code, _, err) = run(&[
        "--max-state-bytes",
        "2000000",
        "--max-upload-bytes",
        "500000",
    ])
    .await;
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("bytes uploaded per flow (limit 500000)"),
        "{err}"
    );
    assert!(
        err.contains("--max-upload-bytes"),
        "the hint names the flag: {err}"
    );
    assert!(!err.contains("SEALED"));
    assert_eq!(echoed(&log), 0, "the request over the cap is not sent");
    log.lock().unwrap().clear();
    let (code, out, err) = run(&[
        "--max-state-bytes",
        "2000000",
        "--max-upload-bytes",
        "2000000",
    ])
    .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), format!("echoed {} bytes", 1 << 20));
    assert_eq!(echoed(&log), 1);
}

// ---------------------------------------------------------------- on a pseudo-terminal

/// `mrtr call ARGS` on a pseudo-terminal. `script` (util-linux) runs the command
/// on a new pseudo-terminal and copies our piped stdin to it, so the program sees
/// a terminal and asks; everything it writes (stdout and stderr) comes back raw.
struct Pty {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::process::ChildStdout,
    /// Everything the terminal got so far, byte for byte.
    seen: Vec<u8>,
    /// Where the next search starts (after the last prompt answered).
    from: usize,
    deadline: tokio::time::Instant,
}

impl Pty {
    fn start(args: &str) -> Self {
        assert!(
            std::process::Command::new("script")
                .arg("--version")
                .output()
                .is_ok(),
            "this test needs util-linux `script` (Debian: bsdutils) for a pseudo-terminal"
        );
        let cmd = format!("{} call {args}", env!("CARGO_BIN_EXE_mrtr"));
        let mut child = tokio::process::Command::new("script")
            .args(["-qec", &cmd, "/dev/null"])
            .current_dir("/tmp")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        Self {
            stdin: child.stdin.take().unwrap(),
            stdout: child.stdout.take().unwrap(),
            child,
            seen: Vec::new(),
            from: 0,
            deadline: tokio::time::Instant::now() + std::time::Duration::from_secs(30),
        }
    }

    fn find(&self, needle: &str) -> Option<usize> {
        let n = needle.as_bytes();
        self.seen[self.from..]
            .windows(n.len())
            .position(|w| w == n)
            .map(|i| self.from + i + n.len())
    }

    async fn read_more(&mut self, waiting_for: &dyn std::fmt::Debug) {
        use tokio::io::AsyncReadExt;
        let mut buf = [0u8; 4096];
        let n = match tokio::time::timeout_at(self.deadline, self.stdout.read(&mut buf)).await {
            Ok(n) => n.unwrap(),
            Err(_) => panic!(
                "{waiting_for:?} not shown: {}",
                String::from_utf8_lossy(&self.seen)
            ),
        };
        assert!(
            n > 0,
            "output ended early: {}",
            String::from_utf8_lossy(&self.seen)
        );
        self.seen.extend_from_slice(&buf[..n]);
    }

    async fn send(&mut self, text: &str) {
        use tokio::io::AsyncWriteExt;
        self.stdin.write_all(text.as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// Waits for `prompt`, then types `answer`.
    async fn answer(&mut self, prompt: &str, answer: &str) {
        loop {
            if let Some(end) = self.find(prompt) {
                self.from = end;
                self.send(answer).await;
                return;
            }
            self.read_more(&prompt).await;
        }
    }

    /// Answers each prompt once it shows, in whatever order they come (a round's
    /// questions are asked one at a time, in any order).
    async fn answer_any(&mut self, mut todo: Vec<(&str, &str)>) {
        while !todo.is_empty() {
            let hit = todo
                .iter()
                .enumerate()
                .filter_map(|(i, (p, _))| self.find(p).map(|end| (end, i)))
                .min();
            match hit {
                Some((end, i)) => {
                    let (_, answer) = todo.remove(i);
                    self.from = end;
                    self.send(answer).await;
                }
                None => self.read_more(&todo).await,
            }
        }
    }

    /// Reads to the end; the exit status and everything the terminal got.
    async fn finish(mut self) -> (std::process::ExitStatus, Vec<u8>) {
        use tokio::io::AsyncReadExt;
        let status = tokio::time::timeout_at(self.deadline, async {
            let mut rest = Vec::new();
            self.stdout.read_to_end(&mut rest).await.unwrap();
            self.seen.extend_from_slice(&rest);
            self.child.wait().await.unwrap()
        })
        .await
        .expect("the call ends");
        (status, self.seen)
    }
}

fn text(raw: &[u8]) -> String {
    String::from_utf8_lossy(raw).into_owned()
}

#[tokio::test]
async fn interactive_answers_through_a_pseudo_terminal() {
    let (url, log) = server().await;
    let mut pty = Pty::start(&format!("{url} tool book --root /tmp"));
    pty.answer_any(vec![
        ("(text) *:", "tuesday\n"),
        ("Your reply as the model", "hello\n"),
    ])
    .await;
    let (status, raw) = pty.finish().await;
    let seen = text(&raw);
    assert!(status.success(), "{seen}");
    assert!(seen.contains("When?"), "{seen}");
    assert!(
        seen.contains("user: Say hi"),
        "the model's question is shown: {seen}"
    );
    assert!(
        seen.contains(r#"booked "tuesday" / "hello" / "file:///tmp""#),
        "{seen}"
    );
    assert!(
        !seen.contains("Share the current directory"),
        "--root needs no consent"
    );
    let log = log.lock().unwrap();
    assert_eq!(log.len(), 2);
    assert_eq!(
        log[0]["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"],
        json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {},
            "extensions": {"io.modelcontextprotocol/tasks": {}}})
    );
}

#[tokio::test]
async fn roots_are_shared_only_after_a_yes_on_the_terminal() {
    for (answer, shared) in [("y\n", true), ("n\n", false)] {
        let (url, log) = server().await;
        // No --root: the current directory (/tmp here) is offered, after a question.
        let mut pty = Pty::start(&format!("{url} tool book --sampling-reply hi"));
        pty.answer_any(vec![
            ("(text) *:", "tuesday\n"),
            ("(y = share it, n = decline): ", answer),
        ])
        .await;
        let (status, raw) = pty.finish().await;
        let seen = text(&raw);
        assert!(seen.contains("Share the current directory?"), "{seen}");
        assert!(seen.contains("file:///tmp"), "{seen}");
        if shared {
            assert!(status.success(), "{seen}");
            assert!(
                seen.contains(r#"booked "tuesday" / "hi" / "file:///tmp""#),
                "{seen}"
            );
            assert_eq!(log.lock().unwrap().len(), 2);
        } else {
            assert_eq!(status.code(), Some(3), "{seen}");
            assert!(seen.contains("declined by the user"), "{seen}");
            assert_eq!(log.lock().unwrap().len(), 1, "nothing is sent after a no");
        }
    }
}

#[tokio::test]
async fn no_control_character_from_a_server_reaches_the_terminal() {
    let (url, _) = server().await;
    let mut pty = Pty::start(&format!("{url} tool hostile"));
    // The real prompts start their line; the server's imitations come after "  | ".
    pty.answer_any(vec![
        ("\n    > ", "1\n"),
        ("\n  Open it and continue? (y = accept", "y\n"),
        ("\n  Your reply as the model", "fine\n"),
    ])
    .await;
    let (status, raw) = pty.finish().await;
    let seen = String::from_utf8(raw).expect("the terminal gets UTF-8 only (no lone C1 bytes)");
    assert!(status.success(), "{seen}");
    assert!(seen.contains(r#"done: "v1" "accept" "fine""#), "{seen}");
    // Not one of the characters reached the terminal. (The pseudo-terminal itself
    // turns each newline into CR LF: a CR is allowed only there.)
    let chars: Vec<char> = seen.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        let cr_lf = *c == '\r' && chars.get(i + 1) == Some(&'\n');
        assert!(
            cr_lf || !hostile_chars().contains(*c),
            "{:?} reached the terminal at {i}: {seen:?}",
            c
        );
    }
    // In the dialog, the fake link notice never starts a line: only the real one
    // does, with the real host. (The result, printed when nothing more is asked,
    // is the tool's output and stays as the server wrote it, filtered.)
    let lines: Vec<&str> = seen
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .take_while(|l| !l.starts_with("result "))
        .collect();
    let hosts: Vec<&&str> = lines
        .iter()
        .filter(|l| l.starts_with("    host: "))
        .collect();
    assert_eq!(hosts, [&"    host: example.com"], "{seen}");
    let notices = lines
        .iter()
        .filter(|l| l.starts_with("  The server asks you to open a link"))
        .count();
    assert_eq!(notices, 1, "{seen}");
    assert!(
        seen.contains("  |   The server asks you to open a link"),
        "{seen}"
    );
    assert!(seen.contains("  |     host: evil.example"), "{seen}");
}

#[tokio::test]
async fn multibyte_input_in_every_field_kind_is_asked_again() {
    let (url, log) = server().await;
    let mut pty = Pty::start(&format!("{url} tool kinds"));
    let fields = [
        ("F-text", "éééé", "éé"),
        ("F-email", "adaé", "ada@example.org"),
        ("F-uri", "é:x", "https://example.org/é"),
        ("F-date", "2024-01-0é", "2024-01-05"),
        ("F-datetime", "2024-01-0é12:00:00Z", "2024-01-05T12:00:00Z"),
        ("F-number", "４.５", "4.5"),
        ("F-integer", "4２", "42"),
        ("F-bool", "ｙ", "y"),
        ("F-enum", "é", "2"),
    ];
    for (title, bad, good) in fields {
        pty.answer(&format!("\n  {title} ("), &format!("{bad}\n"))
            .await;
        // Asked again, with the reason, and the same field again.
        pty.answer("\n  ! ", "").await;
        pty.answer(&format!("\n  {title} ("), &format!("{good}\n"))
            .await;
    }
    let (status, raw) = pty.finish().await;
    let seen = text(&raw);
    assert!(status.success(), "{seen}");
    assert!(!seen.contains("panicked"), "{seen}");
    assert!(
        seen.contains("must be a valid date-time (e.g. 2026-07-28T10:00:00Z)"),
        "{seen}"
    );
    assert_eq!(
        log.lock().unwrap()[1]["params"]["inputResponses"]["k"]["content"],
        json!({"a": "éé", "b": "ada@example.org", "c": "https://example.org/é", "d": "2024-01-05",
               "e": "2024-01-05T12:00:00Z", "f": 4.5, "g": 42, "h": true, "i": "green"})
    );
}
