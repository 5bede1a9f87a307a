//! `mrtr audit` against servers whose faults are known: the toy of [`toy`],
//! correct or broken in exactly one way (one [`toy::Flaw`] per check), and the
//! reference server (`mrtr serve`). Each run gives the audit every optional
//! input (a second user, a peer on the same key, an instance on another key, an
//! instance with a 2 s TTL) and reads its JSON report: the correct servers pass
//! every check (bar the skips listed, each with its reason); each flawed toy
//! fails exactly its own checks (one, or the few one fault truly breaks, each
//! named in `Flaw::checks`) and passes every other. No false pass, no false
//! alarm.
//!
//! `toy_selfcheck` proves the toys themselves with raw HTTP, without the audit.

mod cli;
mod toy;
mod toy_selfcheck;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::support::{Server, bin, wait_timeout};
use toy::{Flaw, Fleet, Replays};

/// Every check id of the audit, in the order of its module doc's table.
pub(crate) const CHECKS: [&str; 18] = [
    "integrity",
    "confidentiality",
    "binding-arguments",
    "binding-tool",
    "binding-method",
    "binding-principal",
    "foreign-key",
    "fleet",
    "expiry",
    "error-uniformity",
    "leaks",
    "capability-gate",
    "carriers",
    "result-type",
    "answers-validated",
    "error-channels",
    "size-caps",
    "replay-after-complete",
];

/// The longest one audit may take (it waits `--ttl` seconds once).
const AUDIT_LIMIT: Duration = Duration::from_secs(180);

/// One run of `mrtr audit`.
struct AuditRun {
    args: Vec<String>,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl AuditRun {
    /// The JSON report (stdout).
    fn report(&self) -> Result<Value, String> {
        serde_json::from_str(&self.stdout).map_err(|e| format!("stdout is not a JSON report: {e}"))
    }

    /// Everything about the run, for a failure message.
    fn explain(&self) -> String {
        let shown = match self.report() {
            Ok(v) => serde_json::to_string_pretty(&v).unwrap_or_default(),
            Err(_) => self.stdout.clone(),
        };
        format!(
            "mrtr {}\nexit code: {:?}\n--- report (stdout) ---\n{shown}\n--- stderr ---\n{}",
            self.args.join(" "),
            self.code,
            self.stderr
        )
    }
}

/// Runs `mrtr audit URL --format json --fail-on info --rate 1000 EXTRA...`.
fn run_audit(url: &str, extra: &[String]) -> AuditRun {
    let mut args: Vec<String> = [
        "audit",
        url,
        "--format",
        "json",
        "--fail-on",
        "info",
        "--rate",
        "1000",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend_from_slice(extra);
    let mut child = Command::new(bin())
        .args(&args)
        .env("NO_COLOR", "1")
        .env_remove("MRTR_KEYS")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mrtr audit");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = pipe.read_to_string(&mut s);
            s
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let status = wait_timeout(&mut child, AUDIT_LIMIT);
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let run = AuditRun {
        args,
        code: status.and_then(|s| s.code()),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    };
    assert!(
        status.is_some(),
        "the audit did not end within {AUDIT_LIMIT:?}\n{}",
        run.explain()
    );
    run
}

/// What a run must show.
struct Expect<'a> {
    /// The checks that must fail (none: none may).
    fails: &'a [&'a str],
    /// A check that must pass with an `info` note.
    note: Option<&'a str>,
    /// Checks that may be skipped here instead of passing, each with why.
    may_skip: &'a [(&'a str, &'a str)],
    /// The flow the audit must have chosen (`None`: any).
    flow: Option<&'a str>,
}

/// Asserts the report of `run` against `expect`, printing the whole report on
/// any difference.
fn assert_report(run: &AuditRun, expect: &Expect<'_>) {
    let report = match run.report() {
        Ok(r) => r,
        Err(e) => panic!("{e}\n{}", run.explain()),
    };
    let mut problems = Vec::new();
    if report["schema"] != "mrtr-audit/1" {
        problems.push(format!("schema is {}", report["schema"]));
    }
    if let Some(name) = expect.flow {
        let flow = &report["flow"];
        if flow["method"] != "tools/call" || flow["name"] != name || flow["needsState"] != true {
            problems.push(format!(
                "the flow is not tools/call {name} needing its state: {flow}"
            ));
        }
    }
    let checks = report["checks"].as_array().cloned().unwrap_or_default();
    for id in CHECKS {
        let rows: Vec<&Value> = checks.iter().filter(|c| c["id"] == id).collect();
        let [row] = rows.as_slice() else {
            problems.push(format!("{id}: {} rows in checks", rows.len()));
            continue;
        };
        let status = row["status"].as_str().unwrap_or("(none)");
        let skip_ok = expect.may_skip.iter().any(|(c, _)| *c == id);
        let ok = if expect.fails.contains(&id) {
            status == "fail"
        } else {
            status == "pass" || (skip_ok && status == "skip")
        };
        if !ok {
            let want = if expect.fails.contains(&id) {
                "fail"
            } else if skip_ok {
                "pass or skip"
            } else {
                "pass"
            };
            problems.push(format!(
                "{id}: {status}, expected {want} ({})",
                row["detail"]
            ));
        }
    }
    for c in &checks {
        if !c["id"].as_str().is_some_and(|id| CHECKS.contains(&id)) {
            problems.push(format!("an unknown check: {c}"));
        }
    }
    let findings = report["findings"].as_array().cloned().unwrap_or_default();
    for f in &findings {
        let check = f["check"].as_str().unwrap_or_default();
        // Replaying the final round is allowed (single use is not required): at
        // most an info note.
        let note = (check == "replay-after-complete" || expect.note == Some(check))
            && f["severity"] == "info";
        if !expect.fails.contains(&check) && !note {
            problems.push(format!("a finding outside the failing check: {f}"));
        }
    }
    for id in expect.fails {
        if !findings
            .iter()
            .any(|f| f["check"] == *id && f["severity"] != "info")
        {
            problems.push(format!("no finding above info for {id}"));
        }
    }
    if let Some(id) = expect.note
        && !findings
            .iter()
            .any(|f| f["check"] == id && f["severity"] == "info")
    {
        problems.push(format!("no info note for {id}"));
    }
    // --fail-on info: exit 1 for any finding at all (an info note on replay
    // included), else 0.
    let expected_code = if findings.is_empty() { 0 } else { 1 };
    if run.code != Some(expected_code) {
        problems.push(format!(
            "exit code {:?}, expected {expected_code} ({} finding(s))",
            run.code,
            findings.len()
        ));
    }
    assert!(
        problems.is_empty(),
        "{} problem(s):\n  {}\n{}",
        problems.len(),
        problems.join("\n  "),
        run.explain()
    );
}

/// Audits a fleet of toys with `flaw`, giving every optional input.
fn audit_toy(flaw: Flaw) {
    let fleet = Fleet::start(flaw);
    let run = run_audit(&fleet.main.url(), &fleet.audit_args());
    assert_report(
        &run,
        &Expect {
            fails: flaw.checks(),
            note: flaw.note(),
            may_skip: &[],
            // A toy that takes answers without a state has no flow that needs it.
            flow: (flaw != Flaw::TakesAnswersWithoutState).then_some("confirm_action"),
        },
    );
}

macro_rules! toy_audits {
    ($($test:ident => $flaw:ident),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                audit_toy(Flaw::$flaw);
            }
        )*

        /// The table above names every flaw.
        #[test]
        fn every_flaw_is_audited() {
            let listed = [$(Flaw::$flaw),*];
            assert_eq!(listed.len(), Flaw::ALL.len());
            for f in Flaw::ALL {
                assert!(listed.contains(&f), "{f:?}");
            }
        }
    };
}

toy_audits! {
    the_correct_toy_passes_every_check => None,
    a_tampered_state_taken_fails_integrity_only => AcceptsTamperedState,
    a_readable_state_fails_confidentiality_only => ReadableState,
    unbound_arguments_fail_binding_arguments_only => UnboundArguments,
    an_unbound_tool_fails_binding_tool_only => UnboundTool,
    an_unbound_method_fails_binding_method_only => UnboundMethod,
    an_unbound_principal_fails_binding_principal_only => UnboundPrincipal,
    a_built_in_key_fails_foreign_key_only => SharedDefaultKey,
    a_per_process_key_fails_fleet_only => PerProcessKey,
    an_ignored_ttl_fails_expiry_only => IgnoresTtl,
    a_reason_in_data_fails_leaks_and_binding_principal => LeaksReason,
    distinct_refusals_fail_error_uniformity_only => DistinctErrors,
    an_undeclared_ask_fails_capability_gate_only => AsksUndeclared,
    input_required_on_a_list_fails_carriers_only => InputRequiredOnList,
    a_wrong_kind_taken_fails_answers_validated_only => AcceptsWrongKind,
    no_size_cap_is_only_a_size_caps_note => NoSizeCap,
    no_result_type_fails_result_type_only => NoResultType,
    tool_errors_as_protocol_errors_fail_error_channels_only => ToolErrorsAsProtocolErrors,
    plain_text_transport_errors_fail_error_channels_only => PlainTextTransportErrors,
    an_ignored_origin_fails_error_channels_only => IgnoresOrigin,
    an_empty_200_for_an_oversized_body_fails_size_caps_only => EmptyOkOnSize,
    content_beside_input_required_fails_result_type_only => ContentWithInputRequired,
    a_reprompt_on_other_arguments_fails_binding_arguments_and_principal => RepromptsOnOtherArguments,
    a_reason_in_plain_words_fails_leaks_and_binding_principal => DataSaysWhich,
    a_403_for_another_user_fails_binding_principal_and_error_uniformity => PrincipalRefusedWith403,
    answers_taken_without_a_state_fail_answers_validated_only => TakesAnswersWithoutState,
    a_replay_guard_keyed_by_the_answers_fails_replay_after_complete_only => ReplayGuardKeyedByAnswers,
}

/// A correct toy behind a 32 KiB body limit refuses the integrity check's
/// 64 KiB state with HTTP 413 and -32600 "Request body too large" before it
/// parses anything: that is no oracle on the state (error-uniformity) and no
/// private reason (leaks), so it passes every check.
#[test]
fn a_size_refusal_before_parsing_is_no_oracle() {
    let fleet = Fleet::start_with(Flaw::None, |c| c.body_limit(32 * 1024));
    let run = run_audit(&fleet.main.url(), &fleet.audit_args());
    assert_report(
        &run,
        &Expect {
            fails: &[],
            note: None,
            may_skip: &[],
            flow: Some("confirm_action"),
        },
    );
}

/// Single use, a cache and a re-run are told apart by the replay with another
/// answer (the form declined): a correct toy refusing any used state passes
/// with no note at all; one answering from a cache and one running again each
/// pass with an info note saying which.
#[test]
fn single_use_a_cache_and_a_rerun_are_told_apart() {
    for (replays, said, noted) in [
        (
            Replays::SingleUse,
            "with the same answers and with others (single use)",
            false,
        ),
        (Replays::Cached, "answered with the first result", true),
        (Replays::Rerun, "runs the flow again", true),
    ] {
        let fleet = Fleet::start_with(Flaw::None, |c| c.replays(replays));
        let run = run_audit(&fleet.main.url(), &fleet.audit_args());
        assert_report(
            &run,
            &Expect {
                fails: &[],
                note: None,
                may_skip: &[],
                flow: Some("confirm_action"),
            },
        );
        let report = run.report().expect("a JSON report");
        let row = report["checks"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["id"] == "replay-after-complete"))
            .cloned()
            .unwrap_or_default();
        assert!(
            row["detail"].as_str().is_some_and(|d| d.contains(said)),
            "{replays:?}: {row}\n{}",
            run.explain()
        );
        let notes = report["findings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|f| f["check"] == "replay-after-complete")
            .count();
        assert_eq!(notes, usize::from(noted), "{replays:?}\n{}", run.explain());
    }
}

/// The reference server, `mrtr serve` with the caller in `X-User`: four
/// instances (the server; a peer and a 2 s TTL instance on its key; one on
/// another key), audited with every optional input. It is correct, so every
/// check passes: none may be skipped, since the audit works on a tool with a
/// string argument when there is one (`deploy`), and the reference has another
/// tool and a prompt that ask.
#[test]
fn the_reference_server_passes_every_check() {
    let (key, other) = (
        mrtr::seal::generate_key_string(),
        mrtr::seal::generate_key_string(),
    );
    let who = ["--principal-header", "X-User"];
    let server = Server::launch(&who, &[("MRTR_KEYS", &key)]);
    let peer = Server::launch(&who, &[("MRTR_KEYS", &key)]);
    let foreign = Server::launch(&who, &[("MRTR_KEYS", &other)]);
    let mut short = who.to_vec();
    short.extend(["--state-ttl", "2", "--clock-skew", "0"]);
    let ttl = Server::launch(&short, &[("MRTR_KEYS", &key)]);
    let url = |s: &Server| format!("http://{}/mcp", s.addr);
    let extra: Vec<String> = [
        "-H",
        "X-User: alice",
        "--as-other",
        "X-User: bob",
        "--peer-url",
        &url(&peer),
        "--foreign-url",
        &url(&foreign),
        "--ttl-url",
        &url(&ttl),
        "--ttl",
        "3",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let run = run_audit(&url(&server), &extra);
    assert_report(
        &run,
        &Expect {
            fails: &[],
            note: None,
            may_skip: &[],
            flow: None,
        },
    );
}
