//! `mrtr audit` as a user meets it: usage mistakes (exit 2), a server it cannot
//! audit (exit 3), a stdio server (`-- COMMAND`), the three report formats, and
//! `--only`, `--skip`, `--fail-on` and `--max-requests`.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::toy::{Config, Flaw, Toy, random_key};
use crate::support::bin;

fn audit(args: &[&str]) -> Output {
    Command::new(bin())
        .arg("audit")
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run mrtr audit")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `mrtr audit ARGS -- mrtr serve --stdio --anonymous`.
fn on_stdio(args: &[&str]) -> Output {
    on_stdio_serving(args, &[])
}

/// `mrtr audit ARGS -- mrtr serve --stdio --anonymous SERVE_ARGS`.
fn on_stdio_serving(args: &[&str], serve_args: &[&str]) -> Output {
    let mut all: Vec<&str> = args.to_vec();
    all.extend([
        "--rate",
        "1000",
        "--",
        bin(),
        "serve",
        "--stdio",
        "--anonymous",
    ]);
    all.extend_from_slice(serve_args);
    audit(&all)
}

#[test]
fn usage_mistakes_are_exit_2_with_a_message() {
    for (args, says) in [
        (vec![], "give the server's URL"),
        (vec!["ftp://x/mcp"], "an http:// or https:// URL"),
        (vec!["http://127.0.0.1:9/mcp", "--", "true"], "not both"),
        (
            vec!["http://127.0.0.1:9/mcp", "--tool", "t", "--args", "[1]"],
            "--args must be a JSON object",
        ),
        (
            vec!["http://127.0.0.1:9/mcp", "--tool", "t", "--args", "{"],
            "--args is not JSON",
        ),
        (
            vec!["http://127.0.0.1:9/mcp", "-H", "no colon"],
            "-H takes `Name: value`",
        ),
        (
            vec!["http://127.0.0.1:9/mcp", "-H", "Mcp-Name: x"],
            "set by the audit itself",
        ),
        (
            vec!["http://127.0.0.1:9/mcp", "--rate", "0"],
            "--rate must be a number above 0",
        ),
        (
            vec!["-H", "A: b", "--", "true"],
            "are for a server over HTTP",
        ),
        (
            vec![
                "http://127.0.0.1:9/mcp",
                "--only",
                "integrity",
                "--skip",
                "integrity",
            ],
            "leave no check",
        ),
    ] {
        let out = audit(&args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains(says),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    // clap's own refusals: an unknown check, a TTL out of range.
    for args in [
        vec!["http://127.0.0.1:9/mcp", "--only", "no-such-check"],
        vec!["http://127.0.0.1:9/mcp", "--ttl", "0"],
        vec![
            "http://127.0.0.1:9/mcp",
            "--ttl-url",
            "http://127.0.0.1:9/mcp",
        ],
    ] {
        let out = audit(&args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    let out = audit(&["http://127.0.0.1:9/mcp", "--only", "nope"]);
    assert!(
        text(&out.stderr).contains("the checks: integrity, confidentiality"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_server_that_cannot_be_audited_is_exit_3_and_says_why() {
    // Nothing listens on port 9 of loopback.
    let out = audit(&["http://127.0.0.1:9/mcp", "--request-timeout", "5"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("error:"),
        "{}",
        text(&out.stderr)
    );
    assert!(out.stdout.is_empty());
    // A server whose tools never ask.
    let out = on_stdio(&["--tool", "echo"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("no tool answered input_required"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_stdio_server_is_audited_and_reported_in_json() {
    // In pages of two tools, so that the audit must follow nextCursor to find
    // the tools with an argument it can change (the binding checks need one).
    let out = on_stdio_serving(
        &["--format", "json", "--fail-on", "low"],
        &["--page-size", "2"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let r: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    assert_eq!(r["schema"], "mrtr-audit/1");
    assert_eq!(r["server"]["target"], "a stdio server");
    assert_eq!(r["server"]["name"], "mrtr-reference", "{r}");
    // Over stdio the era is the process's: only server/discover's versions.
    assert_eq!(
        r["server"]["versions"],
        serde_json::json!(["2026-07-28"]),
        "{r}"
    );
    assert_eq!(r["flow"]["method"], "tools/call");
    assert_eq!(r["flow"]["needsState"], true);
    let checks = r["checks"].as_array().unwrap();
    assert_eq!(checks.len(), super::CHECKS.len());
    for c in checks {
        let id = c["id"].as_str().unwrap();
        let status = c["status"].as_str().unwrap();
        // Over stdio there is one user, one instance, and no TTL given.
        let needs_more = ["binding-principal", "foreign-key", "fleet", "expiry"].contains(&id);
        let want = if needs_more { "skip" } else { "pass" };
        assert_eq!(status, want, "{id}: {}", c["detail"]);
        if needs_more {
            assert!(c["detail"].as_str().unwrap().starts_with("needs --"), "{c}");
        }
    }
    assert!(r["requests"].as_u64().unwrap() <= 400);
    assert!(
        r["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["severity"] == "info"),
        "{r}"
    );
}

#[test]
fn text_and_markdown_reports_and_the_check_selection() {
    let out = on_stdio(&["--only", "integrity", "--only", "leaks"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    assert!(
        t.starts_with("mrtr audit of a stdio server (mrtr-reference "),
        "{t}"
    );
    assert!(t.contains("\nintegrity "), "{t}");
    assert!(t.contains("\nleaks "), "{t}");
    assert!(!t.contains("\nconfidentiality "), "{t}");
    assert!(t.contains("2 passed, 0 failed, 0 skipped"), "{t}");
    assert!(!t.contains('\x1b'), "no colour off a terminal: {t:?}");

    let out = on_stdio(&[
        "--format",
        "markdown",
        "--skip",
        "expiry",
        "--skip",
        "size-caps",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let md = text(&out.stdout);
    assert!(md.starts_with("## mrtr audit of `a stdio server`"), "{md}");
    assert!(
        md.contains("| check | status | detail |\n|---|---|---|\n"),
        "{md}"
    );
    assert!(md.contains("| `integrity` | ✅ pass |"), "{md}");
    assert!(
        !md.contains("`expiry`") && !md.contains("`size-caps`"),
        "{md}"
    );

    // The replay of deploy's final round is refused (its `once` step), so the
    // reference server has no finding at all: even --fail-on info exits 0.
    let out = on_stdio(&[
        "--tool",
        "deploy",
        "--args",
        r#"{"service":"web"}"#,
        "--fail-on",
        "info",
        "--only",
        "replay-after-complete",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
}

#[test]
fn the_request_budget_skips_what_it_cannot_pay_for() {
    let out = on_stdio(&["--format", "json", "--max-requests", "20"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let r: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    assert!(r["requests"].as_u64().unwrap() <= 20, "{r}");
    let spent: Vec<&Value> = r["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["detail"].as_str().unwrap().contains("--max-requests"))
        .collect();
    assert!(!spent.is_empty(), "{r}");
    assert!(spent.iter().all(|c| c["status"] == "skip"), "{r}");
}

/// What a hostile server names itself and its tool reaches the reports only
/// escaped: no link, image, HTML or emphasis in markdown (and the tool name
/// stays inside its code span), no raw bidirectional or line-separator
/// character in text or markdown.
#[test]
fn hostile_names_are_escaped_in_every_report() {
    let server_name =
        "\u{61c}\u{2028}\u{202e}<img src=https://evil.example/p.png>[**all passed**](https://e.x)";
    let tool_name = "t` **no findings** [report](https://evil.example) <b>x</b> `x";
    let toy = Toy::start(Config::new(Flaw::None, random_key()).names(server_name, tool_name));
    let url = toy.url();
    let run = |format: &str| {
        let out = audit(&[
            &url,
            "--format",
            format,
            "--rate",
            "1000",
            "--only",
            "integrity",
            "--only",
            "binding-tool",
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let md = run("markdown");
    for raw in ['\u{61c}', '\u{2028}', '\u{202e}'] {
        assert!(!md.contains(raw), "{raw:?} raw in {md}");
    }
    // The tool name stays whole inside a code span fenced longer than its
    // backtick runs.
    let span = format!("``{tool_name}``");
    assert!(
        md.contains(&format!("Flow: `tools/call` {span}, 1 round(s)")),
        "{md}"
    );
    // Outside it, every markup character the server chose is escaped; the
    // report's own markup uses none of these.
    let rest = md.replace(&span, "");
    let mut prev = ' ';
    for c in rest.chars() {
        if prev != '\\' {
            assert!(
                !matches!(c, '<' | '>' | '[' | ']' | '*' | '!' | '&'),
                "{c:?} unescaped in:\n{md}"
            );
        }
        prev = if prev == '\\' { ' ' } else { c };
    }
    assert!(
        md.contains(
            "\\\\u\\{61c\\}\\\\u\\{2028\\}\\\\u\\{202e\\}\\<img src\\=https\\:\\/\\/evil\\.example\\/p\\.png\\>\\[\\*\\*all passed"
        ),
        "{md}"
    );
    let t = run("text");
    for raw in ['\u{61c}', '\u{2028}', '\u{202e}'] {
        assert!(!t.contains(raw), "{raw:?} raw in {t}");
    }
    assert!(t.contains("\\u{61c}\\u{2028}\\u{202e}<img"), "{t}");
}

/// `--deadline` bounds the whole run against a server that answers slowly:
/// the audit ends about when it runs out, and the checks it did not reach are
/// skipped, saying so.
#[test]
fn the_deadline_bounds_the_run_and_skips_what_it_did_not_reach() {
    let toy = Toy::start(Config::new(Flaw::None, random_key()).delay(Duration::from_millis(300)));
    let started = Instant::now();
    let out = audit(&[
        &toy.url(),
        "--format",
        "json",
        "--rate",
        "1000",
        "--request-timeout",
        "2",
        "--deadline",
        "5",
    ]);
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(took < Duration::from_secs(9), "took {took:?}");
    let r: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    let checks = r["checks"].as_array().unwrap();
    assert_eq!(checks.len(), super::CHECKS.len(), "{r}");
    let cut: Vec<&Value> = checks
        .iter()
        .filter(|c| c["detail"].as_str().unwrap().contains("--deadline"))
        .collect();
    assert!(!cut.is_empty(), "{r}");
    assert!(cut.iter().all(|c| c["status"] == "skip"), "{r}");
    // Nothing cut short was judged: no finding at all.
    assert!(r["findings"].as_array().unwrap().is_empty(), "{r}");
}
