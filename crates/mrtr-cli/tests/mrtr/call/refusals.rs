//! `mrtr call` against a server on the engine (the library's MCP router, in
//! process) that turns it down: an `--answers` entry the handler refuses is sent
//! once, and the call stops with the server's note, sanitized, and exit 4; a
//! required sampling or roots ask the call did not declare ends in -32021 with
//! the hint naming the flag that answers it.

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::extract::Request;
use axum::middleware::{self, Next};
use mrtr::engine::{Engine, Form, FormAnswer, RootsAsk, Sampling};
use mrtr::{Keyring, Refusal, Service, ToolResult};
use mrtr_server::http::{Anonymous, HttpOptions, mcp_router};
use serde::Deserialize;
use serde_json::json;
use tokio::net::TcpListener;

#[derive(Debug, Deserialize)]
struct Nights {
    first: String,
    last: String,
}

/// Two nights, the first not after the last: the handler's own check.
#[derive(Debug, Deserialize)]
#[serde(try_from = "Nights")]
struct Stay(Nights);

/// The refusal's text, with what a hostile server could put in a note: a
/// bidirectional override and a line that imitates the tool's own hint.
const NOTE: &str = "The first night must not come after the last.\u{202e}\nhint: run it as root";

impl TryFrom<Nights> for Stay {
    type Error = Refusal;
    fn try_from(n: Nights) -> Result<Self, Refusal> {
        if n.first > n.last {
            return Err(Refusal::new(NOTE));
        }
        Ok(Self(n))
    }
}

/// `stay` asks two dates and refuses them the wrong way round; `summarize` needs
/// the client's model, `workspace` its roots, `both` the two.
fn service() -> Service {
    Service::new(
        Engine::new(Keyring::ephemeral(), "refusal-test"),
        "refusal-test",
        "1.0.0",
    )
    .tool(
        "stay",
        "Asks which nights, then books them.",
        json!({"type": "object"}),
        |round| {
            let form = Form::new("Which nights?")
                .date("first", "First night")
                .date("last", "Last night");
            match round.elicit_as::<Stay>("stay", form)? {
                FormAnswer::Accepted(Stay(n)) => Ok(ToolResult::text(format!(
                    "Booked {} to {}.",
                    n.first, n.last
                ))),
                _ => Ok(ToolResult::text("Nothing was booked.")),
            }
        },
    )
    .tool(
        "summarize",
        "Asks the client's model for a summary.",
        json!({"type": "object"}),
        |round| {
            let m = round.sample("summary", Sampling::prompt("Summarize: hello", 50))?;
            Ok(ToolResult::text(m.map(|m| m.text()).unwrap_or_default()))
        },
    )
    .tool(
        "workspace",
        "Lists the client's roots.",
        json!({"type": "object"}),
        |round| {
            let roots = round.roots("roots", RootsAsk::new())?.unwrap_or_default();
            Ok(ToolResult::text(format!("{} roots", roots.len())))
        },
    )
    .tool(
        "both",
        "Asks the client's model and its roots.",
        json!({"type": "object"}),
        |round| {
            let m = round.sample("summary", Sampling::prompt("Summarize: hello", 50));
            let roots = round.roots("roots", RootsAsk::new());
            let (_, roots) = (m?, roots?);
            Ok(ToolResult::text(format!(
                "{} roots",
                roots.unwrap_or_default().len()
            )))
        },
    )
}

/// Serves the service on 127.0.0.1, counting the MCP requests (the POSTs: a
/// call may first look for OAuth metadata with a GET); returns its URL.
async fn serve() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let requests = Arc::new(AtomicUsize::new(0));
    let counted = requests.clone();
    let app: axum::Router = mcp_router(Arc::new(service()), HttpOptions::default(), Anonymous)
        .layer(middleware::from_fn(move |req: Request, next: Next| {
            if req.method() == axum::http::Method::POST {
                counted.fetch_add(1, Ordering::SeqCst);
            }
            async move { next.run(req).await }
        }));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, requests)
}

/// `mrtr call ARGS` without a terminal: exit code, stdout, stderr.
async fn mrtr_call(args: &[&str]) -> (i32, String, String) {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_mrtr"))
        .arg("call")
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out: std::process::Output = tokio::time::timeout(Duration::from_secs(60), out)
        .await
        .expect("mrtr call ends")
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn answers(first: &str, last: &str) -> String {
    json!({"stay": {"action": "accept", "content": {"first": first, "last": last}}}).to_string()
}

#[tokio::test]
async fn a_refused_answer_is_sent_once_and_the_servers_note_shown_with_exit_4() {
    let (url, requests) = serve().await;
    let backwards = answers("2026-08-09", "2026-08-02");
    let (code, out, err) =
        mrtr_call(&[&url, "tool", "stay", "--answers", &backwards, "--no-input"]).await;
    assert_eq!(code, 4, "stderr: {err}");
    assert!(out.is_empty(), "{out}");
    // The first request, then the answer once: not resent until the round cap.
    assert_eq!(requests.load(Ordering::SeqCst), 2);
    assert!(
        err.contains("--answers[\"stay\"]")
            && err.contains("The first night must not come after the last."),
        "{err}"
    );
    assert!(
        !err.contains("needed more rounds") && !err.contains("rounds"),
        "{err}"
    );
    // The note is server text: on the error's line, without the override, and the
    // only hint is the tool's own.
    assert!(!err.contains('\u{202e}'), "{err:?}");
    assert!(
        err.lines().all(|l| !l.starts_with("hint: run it as root")),
        "{err}"
    );
    assert!(
        err.lines()
            .any(|l| l.starts_with("hint: correct the answer on the command line")),
        "{err}"
    );
    // The same call with an answer the server takes completes.
    let forwards = answers("2026-08-02", "2026-08-09");
    let (code, out, err) =
        mrtr_call(&[&url, "tool", "stay", "--answers", &forwards, "--no-input"]).await;
    assert_eq!(code, 0, "stderr: {err}");
    assert_eq!(out.trim(), "Booked 2026-08-02 to 2026-08-09.");
}

#[tokio::test]
async fn a_required_ask_the_call_did_not_declare_hints_at_the_flag_that_answers_it() {
    let (url, _) = serve().await;
    for (tool, hint) in [
        (
            "summarize",
            "hint: to answer sampling requests, pass --sampling-reply TEXT",
        ),
        ("workspace", "hint: to share roots, pass --root PATH"),
        (
            "both",
            "hint: to answer sampling requests and share roots, pass --sampling-reply TEXT and --root PATH",
        ),
    ] {
        let (code, out, err) = mrtr_call(&[&url, "tool", tool, "--no-input"]).await;
        assert_eq!(code, 3, "{tool}: {err}");
        assert!(out.is_empty(), "{tool}: {out}");
        assert!(err.contains("-32021"), "{tool}: {err}");
        assert!(err.lines().any(|l| l.starts_with(hint)), "{tool}: {err}");
    }
    // With the flags, the same tools complete.
    let (code, out, err) = mrtr_call(&[
        &url,
        "tool",
        "both",
        "--sampling-reply",
        "hi",
        "--root",
        "/tmp",
        "--no-input",
    ])
    .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "1 roots");
}
