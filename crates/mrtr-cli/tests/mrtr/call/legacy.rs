//! `mrtr call` as a dual-era client: a modern server (`mrtr serve`) gets the
//! modern path with the requests it got before (no probe, no initialize); a
//! 2025-era stdio server (mrtr-client's Python fixture) gets `initialize` after
//! `server/discover` fails, and its `elicitation/create` is answered from
//! `--answers`, keyed `METHOD#N`, or fails closed naming that key.
#![cfg(unix)]

use std::process::Stdio;
use std::time::Duration;

use crate::support::Server;

const MRTR: &str = env!("CARGO_BIN_EXE_mrtr");

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../mrtr-client/tests/fixtures/legacy_stdio_server.py"
);

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
async fn era_takes_three_values() {
    let (code, _out, err) = mrtr_call(&["--era", "2025", "tool", "x", "--", "true"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("auto") && err.contains("legacy"), "{err}");
}
