//! The `mrtr` command line: usage and configuration errors exit 2 with a clear
//! message, `keygen` and `inspect`, and the stdio transport's framing (a
//! multi-round flow over stdio is in `tests/server_flows.rs`).

use crate::support as server_support;

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use server_support::{StdioServer, bin, tools_list, wait_timeout};

fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .env_remove("MRTR_KEYS")
        .env_remove("MRTR_PRINCIPAL")
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run mrtr")
}

fn assert_exit_2(out: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert!(err.contains(needle), "stderr lacks {needle:?}: {err}");
    assert!(
        out.stdout.is_empty(),
        "stdout: {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn usage_and_config_errors_exit_2() {
    assert_exit_2(&run(&["serve", "--bogus"], &[]), "--bogus");
    assert_exit_2(&run(&["serve", "--listen", "nowhere"], &[]), "--listen");
    assert_exit_2(
        &run(&["serve", "--stdio", "--listen", "127.0.0.1:1"], &[]),
        "--listen",
    );
    assert_exit_2(
        &run(&["serve", "--anonymous", "--state-ttl", "0"], &[]),
        "--state-ttl",
    );
    assert_exit_2(
        &run(&["serve", "--anonymous", "--state-ttl", "86401"], &[]),
        "--state-ttl",
    );
    assert_exit_2(
        &run(&["serve", "--anonymous", "--clock-skew", "3601"], &[]),
        "--clock-skew",
    );
    assert_exit_2(
        &run(&["serve", "--anonymous", "--max-rounds", "0"], &[]),
        "--max-rounds",
    );
    assert_exit_2(
        &run(&["serve", "--anonymous", "--max-body", "10"], &[]),
        "--max-body",
    );
    assert_exit_2(
        &run(&["serve", "--anonymous", "--audience", " "], &[]),
        "--audience",
    );
    assert_exit_2(
        &run(
            &["serve", "--anonymous", "--allow-origin", "example.com"],
            &[],
        ),
        "origin",
    );
    assert_exit_2(
        &run(&["serve", "--anonymous", "--log-format", "xml"], &[]),
        "xml",
    );
    assert_exit_2(
        &run(
            &["serve", "--anonymous", "--keys-file", "/nonexistent/keys"],
            &[],
        ),
        "key file",
    );
    assert_exit_2(
        &run(&["serve", "--anonymous"], &[("MRTR_KEYS", "")]),
        "MRTR_KEYS",
    );
    let oauth = |typ: &str| {
        run(
            &[
                "serve",
                "--oauth-issuer",
                "https://auth.example",
                "--oauth-audience",
                "https://mcp.example/mcp",
                "--oauth-accept-typ",
                typ,
            ],
            &[],
        )
    };
    assert_exit_2(&oauth("a b"), "--oauth-accept-typ");
    assert_exit_2(&oauth(""), "--oauth-accept-typ");
    assert_exit_2(
        &run(&["serve", "--anonymous", "--oauth-accept-typ", "JWT"], &[]),
        "--oauth-issuer",
    );
    assert_exit_2(&run(&[], &[]), "Usage");
}

#[test]
fn the_principal_must_be_chosen() {
    assert_exit_2(&run(&["serve"], &[]), "--anonymous");
    assert_exit_2(
        &run(&["serve"], &[("MRTR_PRINCIPAL", "alice")]),
        "--principal-header",
    );
    assert_exit_2(&run(&["serve", "--stdio"], &[]), "--principal NAME");
    assert_exit_2(
        &run(&["serve", "--principal", "alice"], &[]),
        "--principal-header",
    );
    assert_exit_2(
        &run(&["serve", "--stdio", "--principal-header", "x-user"], &[]),
        "--principal-header",
    );
    assert_exit_2(
        &run(
            &["serve", "--anonymous", "--principal-header", "x-user"],
            &[],
        ),
        "--anonymous",
    );
    assert_exit_2(
        &run(&["serve", "--principal-header", "not a header"], &[]),
        "--principal-header",
    );
    assert_exit_2(
        &run(&["serve", "--stdio", "--principal", "alice smith"], &[]),
        "--principal",
    );
    assert_exit_2(
        &run(&["serve", "--stdio"], &[("MRTR_PRINCIPAL", " ")]),
        "MRTR_PRINCIPAL",
    );
    assert_exit_2(
        &run(&["serve", "--stdio"], &[("MRTR_PRINCIPAL", "alice smith")]),
        "MRTR_PRINCIPAL",
    );
}

#[test]
fn help_and_version_exit_0() {
    let out = run(&["serve", "--help"], &[]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--listen",
        "--stdio",
        "--keys-file",
        "--state-ttl",
        "--clock-skew",
        "--audience",
        "--max-rounds",
        "--max-body",
        "--allow-origin",
        "--log-format",
        "--principal-header",
        "--principal",
        "--anonymous",
        "--oauth-accept-typ",
    ] {
        assert!(help.contains(flag), "{flag} missing from help");
    }
    assert!(run(&["--version"], &[]).status.success());
}

#[test]
fn keygen_prints_a_fresh_usable_key() {
    let a = run(&["keygen"], &[]);
    let b = run(&["keygen"], &[]);
    assert!(a.status.success() && b.status.success());
    let (ka, kb) = (
        String::from_utf8_lossy(&a.stdout),
        String::from_utf8_lossy(&b.stdout),
    );
    assert_ne!(ka, kb, "every key is fresh");
    assert!(
        mrtr::seal::Keyring::parse_keys(ka.trim()).is_ok(),
        "keygen output loads as MRTR_KEYS"
    );
}

#[test]
fn inspect_opens_with_the_configured_keys_or_says_why_not() {
    use mrtr::Timestamp;
    use mrtr::principal::Principal;
    use mrtr::seal::{Binding, BindingInput, Claims, Keyring, SealConfig, Sealer};

    let key = String::from_utf8(run(&["keygen"], &[]).stdout).unwrap();
    let key = key.trim();
    let sealer = Sealer::new(Keyring::parse_keys(key).unwrap(), SealConfig::default());
    let binding = Binding::new(&BindingInput {
        method: "tools/call",
        target: "deploy",
        arguments: None,
        principal: &Principal::anonymous(),
        audience: "mrtr-reference",
        protocol_version: "2026-07-28",
    });
    let claims = Claims::first_round(
        binding,
        Timestamp::from_unix_secs(1_800_000_000),
        &SealConfig::default(),
        serde_json::json!({"d": 7}),
    );
    let token = sealer.seal(&claims).unwrap();

    let out = run(&["inspect", &token], &[("MRTR_KEYS", key)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let claims: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(claims["round"], 1);
    assert_eq!(claims["state"]["d"], 7);

    // another key: the private reason, exit 1, and never the token on any stream
    let other = String::from_utf8(run(&["keygen"], &[]).stdout).unwrap();
    let out = run(&["inspect", &token], &[("MRTR_KEYS", other.trim())]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown_key"), "{err}");
    assert!(!err.contains(&token) && out.stdout.is_empty());
    let out = run(&["inspect", &format!("{token}x")], &[("MRTR_KEYS", key)]);
    assert_eq!(out.status.code(), Some(1));
    assert_exit_2(&run(&["inspect", &token], &[]), "no keys");
}

#[test]
fn taken_listen_address_exits_1() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = run(&["serve", "--anonymous", "--listen", &addr], &[]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn stdio_end_to_end() {
    let mut s = StdioServer::start(&["--max-body", "4096"]);

    // Two requests, with blank lines (ignored) between them.
    s.send(&tools_list(1));
    s.send("");
    s.send("  ");
    s.send(&tools_list(2));
    for _ in 0..2 {
        s.read_reply();
    }
    // A line over the limit: a -32600 error line, and the server keeps going.
    s.send(&" ".repeat(5000));
    let v = s.read_reply();
    assert_eq!(v["error"]["code"], -32600, "{v}");
    assert!(v.get("id").is_none(), "{v}");

    // EOF: exit 0, and nothing else on stdout.
    let (rest, err) = s.finish();
    assert_eq!(rest, "", "stdout must hold only the replies");
    let err = err.join("\n");
    assert_eq!(err.matches("mrtr::request").count(), 3, "{err}");
    assert!(
        err.contains("transport=\"stdio\"") || err.contains("transport=stdio"),
        "{err}"
    );
}

#[test]
fn stdio_sigterm_exits_0_with_stdin_open() {
    let mut s = StdioServer::start(&[]);
    // One round trip proves the server is up (and its handlers installed).
    s.send(&tools_list(1));
    s.read_reply();
    let ok = Command::new("kill")
        .args(["-TERM", &s.child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let status = wait_timeout(&mut s.child, Duration::from_secs(10)).expect("exit on SIGTERM");
    assert!(status.success(), "{status:?}");
}

#[test]
fn the_replay_flags_are_checked_and_exit_2() {
    let serve = |extra: &[&str]| {
        let mut args = vec!["serve", "--anonymous"];
        args.extend_from_slice(extra);
        run(&args, &[])
    };
    let range = "--replay-max-claims must be between 1 and 20000000";
    assert_exit_2(&serve(&["--replay-max-claims", "0"]), range);
    assert_exit_2(&serve(&["--replay-max-claims", "20000001"]), range);
    assert_exit_2(
        &serve(&["--replay-max-claims", "many"]),
        "--replay-max-claims",
    );
    let per = "--replay-max-claims-per-principal must be between 1 and --replay-max-claims";
    assert_exit_2(&serve(&["--replay-max-claims-per-principal", "0"]), per);
    assert_exit_2(
        &serve(&[
            "--replay-max-claims",
            "10",
            "--replay-max-claims-per-principal",
            "11",
        ]),
        per,
    );
    // Above the default global cap, with that cap left as it is.
    assert_exit_2(
        &serve(&["--replay-max-claims-per-principal", "1000001"]),
        per,
    );
    assert_exit_2(
        &serve(&[
            "--replay-store",
            "redis://127.0.0.1:1",
            "--replay-max-claims",
            "5",
        ]),
        "bound the in-memory replay store",
    );
    assert_exit_2(
        &serve(&["--replay-store-allow-eviction"]),
        "--replay-store-allow-eviction is for a Redis replay store",
    );
    let bad_wait = serve(&["--replay-store", "redis://:hunter2@127.0.0.1:1/0?wait=0"]);
    assert_exit_2(&bad_wait, "`wait` must be a number of replicas");
    assert!(!String::from_utf8_lossy(&bad_wait.stderr).contains("hunter2"));
    // The help states the defaults the code uses.
    let help = run(&["serve", "--help"], &[]);
    let help = String::from_utf8_lossy(&help.stdout);
    for default in [
        mrtr::defaults::REPLAY_MAX_CLAIMS,
        mrtr::defaults::REPLAY_MAX_CLAIMS_PER_PRINCIPAL,
    ] {
        assert!(help.contains(&format!("[default: {default}]")), "{help}");
    }
    assert!(help.contains(&format!(
        "1 to {}",
        mrtr_cli::defaults::REPLAY_MAX_CLAIMS_CEILING
    )));
    assert!(help.contains("--replay-store-allow-eviction"), "{help}");
}

#[test]
fn the_replay_quota_flag_takes_effect() {
    // One claim per caller: the second deployment from this address fails closed.
    let s = server_support::Server::start(&["--replay-max-claims-per-principal", "1"]);
    let deploy = |id: u64| {
        let first =
            server_support::tool_call(id, "deploy", Some(serde_json::json!({"service": "web"})));
        let state = server_support::state_of(&s.call(&first, 200));
        let last = server_support::retry(
            &first,
            id + 1,
            Some(server_support::confirm_answer(true)),
            &state,
        );
        s.call(&last, 200)
    };
    assert_eq!(
        server_support::complete_text(&deploy(1)),
        "Deployed web (deployment #1)."
    );
    let refused = server_support::tool_error_text(&deploy(3));
    assert!(refused.contains("could not record this step"), "{refused}");
}
