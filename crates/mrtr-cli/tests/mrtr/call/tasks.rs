//! `mrtr call` follows a task (the tasks extension) to its end: it declares
//! the extension, polls `tasks/get`, answers the task's questions from
//! `--answers` with `tasks/update`, and prints the result, or the task's error.

use crate::support::Server;

const MRTR: &str = env!("CARGO_BIN_EXE_mrtr");

/// `mrtr call ARGS` without a terminal: exit code, stdout, stderr.
async fn mrtr_call(args: &[&str]) -> (i32, String, String) {
    let out = tokio::process::Command::new(MRTR)
        .arg("call")
        .args(args)
        .env("MRTR_ERA_CACHE", "")
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("run mrtr call");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn mrtr_call_follows_a_task_answering_its_question_with_tasks_update() {
    let server = Server::start(&[]);
    let url = format!("http://{}/mcp", server.addr);
    let (code, out, err) = mrtr_call(&[
        &url,
        "--no-input",
        "tool",
        "confirm_delete",
        "--args",
        r#"{"filename": "old.log"}"#,
        "--answers",
        r#"{"confirm": {"action": "accept", "content": {"confirm": true}}}"#,
    ])
    .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "Deleted old.log\n");
    // The call became a task, polled, answered and ended: one tools/call,
    // tasks/get and one tasks/update, and the task's run on a line of its own.
    server.wait_for_lines("transport=\"task\"", 2);
    let lines = server.request_lines();
    let count = |m: &str| {
        lines
            .iter()
            .filter(|l| l.contains(&format!("method=\"{m}\"")))
            .count()
    };
    assert_eq!(
        count("tools/call"),
        3,
        "the call and its two runs: {lines:#?}"
    );
    assert!(count("tasks/get") >= 2, "{lines:#?}");
    assert_eq!(count("tasks/update"), 1, "{lines:#?}");

    // A task that fails is the call's error.
    let (code, _, err) = mrtr_call(&[&url, "--no-input", "tool", "protocol_error_job"]).await;
    assert_ne!(code, 0);
    assert!(err.contains("-32603"), "{err}");
}
