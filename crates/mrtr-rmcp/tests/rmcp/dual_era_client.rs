//! `mrtr call` (`mrtr_cli::call`, on `mrtr_client`) driving rmcp's real
//! Streamable HTTP server in both eras: `--era legacy` opens a 2025-11-25
//! session and answers the `elicitation/create` and `sampling/createMessage`
//! requests rmcp sends from `--answers` (keyed `METHOD#N`) and
//! `--sampling-reply`, printing the tool result as for a modern server;
//! `--era auto` takes the modern path, rmcp serving 2026-07-28 too.

use crate::rmcp_support;

use clap::Parser;
use mrtr::{Engine, Keyring};
use mrtr_cli::call::{CallArgs, run_call_with_output};
use mrtr_rmcp::{Mrtr, Principals};

#[derive(Debug, Parser)]
struct Cli {
    #[command(flatten)]
    args: CallArgs,
}

fn server() -> rmcp_support::Running {
    let engine = Engine::new(Keyring::ephemeral(), "https://rmcp.test.example");
    rmcp_support::start(Mrtr::new(engine, Principals::anonymous()))
}

/// `mrtr call URL ARGS...` in process: exit code, stdout, stderr.
async fn mrtr_call(url: &str, args: &[&str]) -> (i32, String, String) {
    let mut argv = vec!["call", url, "--no-input"];
    argv.extend_from_slice(args);
    let cli = Cli::try_parse_from(argv).expect("arguments parse");
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = run_call_with_output(cli.args, &mut out, &mut err).await;
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mrtr_call_drives_rmcp_in_both_eras() {
    let s = server();
    let url = format!("http://{}/mcp", s.addr);

    let two = r#"{"elicitation/create#1": {"action": "accept", "content": {"name": "Ada"}},
                  "elicitation/create#2": {"action": "accept", "content": {"color": "red"}}}"#;
    let (code, out, err) = mrtr_call(
        &url,
        &["--era", "legacy", "--answers", two, "tool", "two_rounds"],
    )
    .await;
    assert_eq!((code, out.as_str()), (0, "Ada likes red\n"), "{err}");

    let (code, out, err) = mrtr_call(
        &url,
        &[
            "--era",
            "legacy",
            "--sampling-reply",
            "Paris",
            "--answers",
            r#"{"elicitation/create#1": {"action": "decline"}}"#,
            "tool",
            "ask_model",
        ],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("model=Paris"), "{out}");

    // Without an answer: fails closed, naming the key to answer.
    let (code, _out, err) = mrtr_call(&url, &["--era", "legacy", "tool", "greet"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(r#"--answers '{"elicitation/create#1""#),
        "{err}"
    );

    // The same server, auto: the modern path and the server's own keys.
    let (code, out, err) = mrtr_call(
        &url,
        &[
            "--answers",
            r#"{"user_name": {"action": "accept", "content": {"name": "Ada"}}}"#,
            "tool",
            "greet",
        ],
    )
    .await;
    assert_eq!((code, out.as_str()), (0, "Hello, Ada!\n"), "{err}");
}
