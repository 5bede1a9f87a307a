//! A restart never re-runs a `once` step: `mrtr serve` with its in-memory replay
//! guard, restarted with the same `--keys-file`, refuses a replayed final round
//! (and, failing closed, a flow that was in flight across the restart). The
//! `deploy` demo's "deployment #n" text shows the counter of each process.

use crate::support as server_support;

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use server_support::{
    Server, bin, complete_text, confirm_answer, retry, state_of, tool_call, tool_error_text,
};

/// A key file for this test only, removed on drop.
struct KeyFile(std::path::PathBuf);

impl KeyFile {
    fn new() -> Self {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let path = std::env::temp_dir().join(format!(
            "mrtr-replay-restart-{}-{nanos}",
            std::process::id()
        ));
        std::fs::write(&path, format!("{}\n", mrtr::seal::generate_key_string())).unwrap();
        Self(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for KeyFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn deploy(id: u64, service: &str) -> Value {
    tool_call(id, "deploy", Some(json!({"service": service})))
}

#[test]
fn a_restart_never_re_runs_a_step() {
    let keys = KeyFile::new();
    let mut before = Server::start(&["--keys-file", keys.path()]);

    // A flow carried out to the end, and a second one left waiting for its answer.
    let first = deploy(1, "web");
    let last = retry(
        &first,
        2,
        Some(confirm_answer(true)),
        &state_of(&before.call(&first, 200)),
    );
    assert_eq!(
        complete_text(&before.call(&last, 200)),
        "Deployed web (deployment #1)."
    );
    let waiting = deploy(3, "db");
    let waiting_state = state_of(&before.call(&waiting, 200));
    assert!(before.terminate().success());

    let after = Server::start(&["--keys-file", keys.path()]);
    // The same keys: the old states still open (not the uniform -32602)...
    let mut replay = last.clone();
    replay["id"] = json!(4);
    let refused = tool_error_text(&after.call(&replay, 200));
    // ...but the step is refused, not carried out a second time.
    assert!(refused.contains("already carried out"), "{refused}");
    assert!(refused.contains("start a new request"), "{refused}");
    // Failing closed: the flow in flight across the restart is refused as well.
    let answered = retry(&waiting, 5, Some(confirm_answer(true)), &waiting_state);
    let refused = tool_error_text(&after.call(&answered, 200));
    assert!(refused.contains("already carried out"), "{refused}");

    // The new process deployed nothing so far: a fresh flow is its deployment #1.
    let fresh = deploy(6, "web");
    let state = state_of(&after.call(&fresh, 200));
    let done = after.call(&retry(&fresh, 7, Some(confirm_answer(true)), &state), 200);
    assert_eq!(complete_text(&done), "Deployed web (deployment #1).");
    // The operator's log says why, once per refused flow.
    let why = after.wait_for_lines("sealed before this guard started", 2);
    assert_eq!(why.len(), 2, "{:?}", after.stderr_lines());
}

#[test]
fn a_bad_replay_store_is_a_configuration_error() {
    for (value, expect) in [
        ("sqlite://x", "expected memory, redis://"),
        ("redis://:hunter2@[::1", "--replay-store"),
    ] {
        let out = std::process::Command::new(bin())
            .args(["serve", "--anonymous", "--replay-store", value])
            .env_remove("MRTR_KEYS")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{value}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expect), "{err}");
        assert!(!err.contains("hunter2"), "the URL is never echoed: {err}");
    }
}
