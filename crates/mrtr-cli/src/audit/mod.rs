//! `mrtr audit`: a black-box security audit of any MRTR server, whatever SDK it
//! is written on.
//!
//! The audit speaks to the server as a client would (Streamable HTTP, or stdio
//! with `-- COMMAND`), one request at a time, at most `--max-requests` of them
//! and at most `--rate` a second, and only to the URLs it is given. It first
//! finds a flow to work on: the tool `--tool` (with `--args`), else the first
//! tool of `tools/list` that answers `input_required` with a `requestState`
//! when called with arguments made from its input schema. It completes that
//! flow once with plain answers (the *baseline*), and learns whether the server
//! needs the state at all (the same retry without it: the *control*). Then each
//! check attacks one rule, each with a stable id:
//!
//! | id | what it sends | passes when |
//! |---|---|---|
//! | `integrity` | the baseline retry with the state's bytes flipped (each region: start, middle, end, the last 16 bytes where an AEAD tag or MAC sits, each segment of a dotted token), truncated, extended, re-encoded (base64 padding and alphabet), emptied, 64 KiB long, and, when the state decodes to JSON, with one value changed and encoded again | every one is rejected (see below): never a result, a next round or a re-prompt |
//! | `confidentiality` | nothing: it decodes the states it was given (base64 of either alphabet, each dotted segment) | no argument or answer value in the clear (`low`: the SEP's SHOULD encrypt); a state that is merely readable is an `info` note (the spec allows any format) |
//! | `binding-arguments` | the retry with the state but another value for an argument | it is rejected |
//! | `binding-tool` | another tool that asks (with this tool's arguments where it takes them), with this tool's state and both tools' answers | as above |
//! | `binding-method` | a prompt that asks (`prompts/get`, likewise), with this tool's state | as above |
//! | `binding-principal` | the retry as another user (`--as-other`), on its own request and on one with another argument value | as above, and the two refusals alike (else the other user learns whether a guessed argument is right: the cross-user oracle) |
//! | `foreign-key` | the retry to an instance with another key (`--foreign-url`) | as above |
//! | `fleet` | the retry to another instance that shares the key (`--peer-url`) | it resumes |
//! | `expiry` | a fresh state from `--ttl-url` (else the server) resumed at once, another one `--ttl` seconds and one more after it was issued | the first resumes; the second is rejected |
//! | `error-uniformity` | nothing: it compares every refusal above (JSON-RPC errors, tool errors, error pages) | one face for all: the same code, message and HTTP status; a difference is shown with both refusals |
//! | `leaks` | nothing: it reads every refusal (and `--log FILE`) | the same details (data, text) for every cause, whatever their words; no slice of the state, no token from a header, no argument or answer value |
//! | `capability-gate` | the first call declaring no input capability, then each kind the baseline asked left out | no ask of an undeclared kind (form, URL, sampling, sampling with tools, roots); a -32021 carries `data.requiredCapabilities` (and HTTP 400) |
//! | `carriers` | `tools/list`, `prompts/list`, `resources/list`, `resources/templates/list` | none answers `input_required` |
//! | `result-type` | nothing: it reads every result | each has a `resultType`, and no `input_required` result carries a success `content` (wire hygiene) |
//! | `answers-validated` | the retry with the right answers and no state (where the server gave one), with no answer, with only an unrequested key, with an answer of another kind, with a form answer that breaks its schema, and with an extra key beside the right answers | the first is not taken (`medium`: answers bound to nothing); the next four are asked again (never accepted, never a protocol error); the last goes on as the baseline did |
//! | `error-channels` | an unknown method, a call without `_meta`, headers that disagree with the body (HTTP), a body that is not JSON, a batch and a body declared `text/plain` (HTTP), a foreign `Origin` (HTTP, DNS rebinding), an unknown tool, arguments of the wrong type | -32601 (HTTP 404), -32602 (HTTP 400), -32020 (HTTP 400), a JSON-RPC error body -32700, -32600 and -32600 each with an HTTP 4xx, HTTP 403, a JSON-RPC error, a tool result with `isError` |
//! | `size-caps` | a 1 MiB `requestState`, and 1 MiB of `inputResponses` | the state is never taken; neither is answered with a 2xx that holds no JSON-RPC reply. The spec sets no limit: answers taken are an `info` hardening note |
//! | `replay-after-complete` | the final retry of the baseline again, then with another answer (a form declined) | passes when both are refused (single use), or both complete (an `info` note saying whether the first result came back, a cache, or another, a re-run); fails when only the same answers are refused (a guard keyed by the request, not the flow) |
//!
//! *Rejected* means the same in every check that presents a bad state (altered,
//! misplaced, foreign, expired): a JSON-RPC error, an HTTP 4xx or a
//! tool result with `isError` (the spec says "reject" and names no channel;
//! `error-uniformity` compares them). The question asked again treats the
//! state as no state, which the spec's "reject" does not allow (the conformance
//! suite fails a re-prompt): a finding, `medium` where the rule is a MUST
//! (`integrity`, `foreign-key`, `binding-principal`), `low` where it is a
//! SHOULD (arguments, tool, method, expiry). A state taken is graded the same
//! way: `critical` or `high` for a MUST, `medium` for a SHOULD.
//!
//! A check that cannot run here (no second user given, no prompt that asks, no
//! argument to change, the request budget spent, the run's `--deadline` passed)
//! is `skip`ped with what it needs, never passed. The deadline (300 s by
//! default) bounds the whole run: no request is sent that could not be answered
//! before it, and a request it cuts short is not judged. Where the control shows the server completes without
//! the state, the binding checks skip: there the state decides nothing.
//!
//! Every finding has a severity (`critical`, `high`, `medium`, `low`, `info`),
//! the spec sentence it rests on, evidence (request and reply excerpts, every
//! state, token and value cut to a short prefix) and a fix. The report is a
//! table on the terminal (colour only on one), `--format json` (the schema in
//! [`report`]) or `--format markdown`. Everything a server chose is escaped for
//! the format it goes into (see [`report`]). The exit code is 0, or 1 when a finding
//! is at or above `--fail-on` (default `high`); 2 for a usage error; 3 when
//! the server cannot be audited (unreachable, or no tool that asks).
//!
//! The files, one job each: `text` (cutting, showing and escaping what a
//! server wrote), `catalog` (the checks' ids, names, spec sentences and the
//! severities), `args` (the options), `target` (the server, the request budget
//! and rate), `outcome` (what a reply means), `answer` (plain answers to any
//! input request), `state` (decoding and mutating a state), `run` (what a run
//! shares: the context and the refusal log), `flow` (finding and completing the
//! baseline), `checks` (the checks), `report` (the report and its formats).

// The modules import one way, each only those before it in
// `tests::BOTTOM_UP` (text, catalog, args, target, outcome, answer, state, run,
// flow, checks, report): text and catalog are leaves, report and this module
// the top. A test holds them to it.
mod answer;
mod args;
mod catalog;
mod checks;
mod flow;
mod outcome;
pub mod report;
mod run;
mod state;
mod target;
mod text;

use std::io::{IsTerminal, Write};

pub use args::{AuditArgs, Format};
pub use catalog::{CheckId, Severity};
use report::Report;

/// Exit code: no finding at or above `--fail-on`.
pub const EXIT_OK: i32 = 0;
/// Exit code: a finding at or above `--fail-on`.
pub const EXIT_FINDINGS: i32 = 1;
/// Exit code: bad arguments.
pub const EXIT_USAGE: i32 = 2;
/// Exit code: the server could not be audited (unreachable, or no tool that asks).
pub const EXIT_CANNOT_AUDIT: i32 = 3;

/// Runs `mrtr audit`: the report on stdout, progress and errors on stderr.
/// Returns the process exit code.
pub async fn run_audit(args: AuditArgs) -> i32 {
    let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let mut out = std::io::stdout();
    let mut err = std::io::stderr();
    run_audit_with_output(args, colour, &mut out, &mut err).await
}

/// [`run_audit`] writing to `out` and `err`, with or without colour (for tests
/// and embedding).
pub async fn run_audit_with_output(
    args: AuditArgs,
    colour: bool,
    out: &mut (dyn Write + Send),
    err: &mut (dyn Write + Send),
) -> i32 {
    let plan = match args::Plan::from_args(&args) {
        Ok(p) => p,
        Err(msg) => {
            let _ = writeln!(err, "error: {msg}");
            return EXIT_USAGE;
        }
    };
    let report = match audit(&plan, err).await {
        Ok(r) => r,
        Err(msg) => {
            let _ = writeln!(err, "error: {msg}");
            return EXIT_CANNOT_AUDIT;
        }
    };
    let rendered = match plan.format {
        Format::Text => report.to_text(colour),
        Format::Json => report.to_json(),
        Format::Markdown => report.to_markdown(),
    };
    let _ = out.write_all(rendered.as_bytes());
    let _ = out.flush();
    if report.worst().is_some_and(|s| s >= plan.fail_on) {
        EXIT_FINDINGS
    } else {
        EXIT_OK
    }
}

/// Finds the baseline flow, then runs every selected check in order.
async fn audit(plan: &args::Plan, progress: &mut (dyn Write + Send)) -> Result<Report, String> {
    let target = target::Target::connect(plan).await?;
    let mut ctx = run::Context::new(plan, target);
    let _ = writeln!(progress, "audit: {}", text::shown(&ctx.target.describe()));
    let baseline = flow::establish(&mut ctx).await?;
    let _ = writeln!(
        progress,
        "audit: working on {} {} ({} round(s) to complete; it {} the state)",
        baseline.method,
        text::shown(&baseline.name),
        baseline.rounds.len(),
        if baseline.needs_state {
            "needs"
        } else {
            "does not need"
        }
    );
    let results = checks::run_all(&mut ctx, &baseline, progress).await;
    Ok(Report::new(&ctx, &baseline, results))
}

#[cfg(test)]
mod tests {
    /// The audit's modules, bottom first, with their files and how deep each
    /// file sits below this module (`super::` once or twice to reach a
    /// sibling). Each may import only the modules before it.
    const BOTTOM_UP: [(&str, &[(&str, usize)]); 11] = [
        ("text", &[(include_str!("text.rs"), 1)]),
        ("catalog", &[(include_str!("catalog.rs"), 1)]),
        ("args", &[(include_str!("args.rs"), 1)]),
        ("target", &[(include_str!("target.rs"), 1)]),
        ("outcome", &[(include_str!("outcome.rs"), 1)]),
        ("answer", &[(include_str!("answer.rs"), 1)]),
        ("state", &[(include_str!("state.rs"), 1)]),
        ("run", &[(include_str!("run.rs"), 1)]),
        ("flow", &[(include_str!("flow.rs"), 1)]),
        (
            "checks",
            &[
                (include_str!("checks/mod.rs"), 1),
                (include_str!("checks/binding.rs"), 2),
                (include_str!("checks/oracle.rs"), 2),
                (include_str!("checks/protocol.rs"), 2),
                (include_str!("checks/tamper.rs"), 2),
            ],
        ),
        ("report", &[(include_str!("report.rs"), 1)]),
    ];

    /// The sibling modules `source` names through `super::` (`depth` times),
    /// in `use` lines or inline paths, grouped imports included.
    fn siblings(source: &str, depth: usize) -> Vec<String> {
        let prefix = "super::".repeat(depth);
        let mut found = Vec::new();
        for (at, _) in source.match_indices(&prefix) {
            if source[..at].ends_with("super::") {
                continue;
            }
            let rest = &source[at + prefix.len()..];
            let names: Vec<&str> = match rest.strip_prefix('{') {
                Some(group) => group[..group.find('}').unwrap_or(group.len())]
                    .split(',')
                    .map(str::trim)
                    .collect(),
                None => vec![rest],
            };
            for name in names {
                let end = name
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(name.len());
                let name = &name[..end];
                if !name.is_empty() && name != "super" {
                    found.push(name.to_owned());
                }
            }
        }
        found
    }

    #[test]
    fn the_audit_modules_import_one_way() {
        let order: Vec<&str> = BOTTOM_UP.iter().map(|(m, _)| *m).collect();
        for (at, (module, files)) in BOTTOM_UP.iter().enumerate() {
            for (source, depth) in *files {
                for name in siblings(source, *depth) {
                    if let Some(theirs) = order.iter().position(|m| *m == name) {
                        assert!(
                            theirs < at,
                            "audit::{module} imports audit::{name}, which is not below it"
                        );
                    }
                }
            }
        }
    }
}
