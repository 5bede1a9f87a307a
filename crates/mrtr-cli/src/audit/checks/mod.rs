//! The checks: what each found, the verdicts they share, and the order they
//! run in. Their ids are in [`super::catalog`]; what a run shares (the server,
//! the audit's marked values, the refusal log) in [`super::run`].

mod binding;
mod oracle;
mod protocol;
mod tamper;

use std::io::Write;

use super::args::Plan;
use super::catalog::{CheckId, Severity, Word};
use super::flow::{self, Baseline, Round};
use super::outcome::Outcome;
use super::run::Context;
use super::target::{Exchange, Reply, Spent, Who};
use super::text::{cut, shown};

/// What a server did with a state it should have rejected. The spec says
/// "reject" for every such state (one that fails verification: MUST; one
/// presented by another principal, after its expiry or on another request:
/// SHOULD) and names no channel for it; the conformance suite fails a
/// re-prompt. So every check that presents a bad state gives the same reply
/// the same verdict: an error (JSON-RPC, HTTP 4xx, or a tool result with
/// `isError`) rejects it; the question asked again treats it as no state, which
/// is not rejecting it. Whether the rejections all look alike is
/// `error-uniformity`'s question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BadState {
    /// A JSON-RPC error, an HTTP 4xx (a limit in front of the server), or a
    /// tool result with `isError`.
    Rejected,
    /// The flow went on: the state was taken.
    Taken,
    /// The question asked again: the state treated as no state, not rejected.
    AskedAgain,
    /// Anything else: no JSON-RPC reply, a server error, an empty ask.
    Other,
}

impl BadState {
    /// The verdict on `ex`, where the flow had asked `asked`.
    pub(super) fn of(ex: &Exchange, asked: &serde_json::Map<String, serde_json::Value>) -> Self {
        let o = Outcome::of(ex);
        if o.progressed(asked) {
            return Self::Taken;
        }
        match o {
            Outcome::Error { .. } => Self::Rejected,
            Outcome::Http(s) if (400..500).contains(&s) => Self::Rejected,
            Outcome::Complete { is_error: true } => Self::Rejected,
            o if o.asks_again(asked) => Self::AskedAgain,
            _ => Self::Other,
        }
    }
}

/// The finding a reply makes: how bad, its title, and the fix.
#[derive(Debug, Clone, Copy)]
pub(super) struct Verdict<'a> {
    /// How bad it is.
    pub(super) severity: Severity,
    /// The finding's title (findings with one title share their evidence).
    pub(super) title: &'a str,
    /// What the server should do instead.
    pub(super) fix: &'a str,
}

/// Adds the finding for a bad state the server did not reject (`verdict`, on
/// `ex`, for what `sent` describes), graded by the word of `f`'s rule; a taken
/// state is graded by the caller (`taken`).
pub(super) fn judge_bad_state(
    f: &mut Findings,
    verdict: BadState,
    ex: &Exchange,
    sent: &str,
    taken: Verdict<'_>,
) {
    let must = f.id.word() == Word::Must;
    let Verdict {
        severity,
        title,
        fix,
    } = match verdict {
        BadState::Rejected => return,
        BadState::Taken => taken,
        BadState::AskedAgain => Verdict {
            severity: if must {
                Severity::Medium
            } else {
                Severity::Low
            },
            title: "a bad state is treated as no state (the question is asked again) instead of rejected",
            fix: "Reject a state that does not verify, or does not belong to this request, user or \
             time, with the one JSON-RPC error used for every bad state (the spec says reject; \
             the conformance suite fails a re-prompt).",
        },
        BadState::Other => Verdict {
            severity: if must {
                Severity::Medium
            } else {
                Severity::Low
            },
            title: "a bad state gets neither a rejection nor the flow (no JSON-RPC reply, a server error, or an empty ask)",
            fix: "Verify the state before using it, and answer a failure with the one JSON-RPC error \
             used for every bad state.",
        },
    };
    f.add(severity, title, fix, evidence(sent, ex));
}

/// What became of a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Status {
    /// It ran and found nothing at or above `low`.
    Pass,
    /// It ran and found something at or above `low`.
    Fail,
    /// It could not run here.
    Skip,
}

impl Status {
    /// Its name in the report.
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Fail => "fail",
            Self::Skip => "skip",
        }
    }
}

/// One thing a check found.
#[derive(Debug, Clone)]
pub(super) struct Finding {
    pub(super) check: CheckId,
    pub(super) severity: Severity,
    pub(super) title: String,
    pub(super) evidence: Vec<String>,
    pub(super) fix: String,
}

/// What a check came to.
#[derive(Debug, Clone)]
pub(super) struct CheckResult {
    pub(super) id: CheckId,
    pub(super) status: Status,
    pub(super) detail: String,
    pub(super) findings: Vec<Finding>,
}

/// Collects a check's findings, the same title's evidence together.
pub(super) struct Findings {
    pub(super) id: CheckId,
    list: Vec<Finding>,
}

/// The most evidence lines kept per finding.
const MAX_EVIDENCE: usize = 6;

impl Findings {
    pub(super) fn new(id: CheckId) -> Self {
        Self {
            id,
            list: Vec::new(),
        }
    }

    /// Adds `evidence` to the finding titled `title` (made with `severity` and
    /// `fix` the first time; a later, worse severity raises it).
    pub(super) fn add(&mut self, severity: Severity, title: &str, fix: &str, evidence: String) {
        if let Some(f) = self.list.iter_mut().find(|f| f.title == title) {
            f.severity = f.severity.max(severity);
            if f.evidence.len() < MAX_EVIDENCE {
                f.evidence.push(evidence);
            }
            return;
        }
        self.list.push(Finding {
            check: self.id,
            severity,
            title: title.to_owned(),
            evidence: vec![evidence],
            fix: fix.to_owned(),
        });
    }

    /// The result: `fail` when a finding is at or above `low`, else `pass`
    /// with `detail`.
    pub(super) fn done(mut self, detail: impl Into<String>) -> CheckResult {
        self.list.sort_by_key(|f| std::cmp::Reverse(f.severity));
        let failing = self
            .list
            .iter()
            .filter(|f| f.severity >= Severity::Low)
            .count();
        let (status, detail) = if failing > 0 {
            (
                Status::Fail,
                format!("{failing} finding(s); {}", detail.into()),
            )
        } else {
            (Status::Pass, detail.into())
        };
        CheckResult {
            id: self.id,
            status,
            detail,
            findings: self.list,
        }
    }
}

/// A skipped check.
pub(super) fn skip(id: CheckId, why: impl Into<String>) -> CheckResult {
    CheckResult {
        id,
        status: Status::Skip,
        detail: why.into(),
        findings: Vec::new(),
    }
}

/// How a refusal looks to the client, in two parts: its face (the JSON-RPC
/// code and message, or "a tool error", or the HTTP status of an error page,
/// with the HTTP status) and its details (the error's `data`, the tool error's
/// text, the error page). Digit runs and long tokens (request ids, trace ids)
/// are masked, so that what varies per request is no difference.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Looks {
    pub(super) face: String,
    pub(super) details: String,
}

impl Looks {
    /// How `ex` looks, if it is a refusal (an error, a tool error or an HTTP
    /// 4xx): `None` for anything else.
    pub(super) fn of(ex: &Exchange) -> Option<Self> {
        let status = ex
            .status
            .map(|s| format!(" (HTTP {s})"))
            .unwrap_or_default();
        let (face, details) = match &ex.reply {
            Reply::Error {
                code,
                message,
                data,
            } => (
                format!("JSON-RPC error {code} {:?}{status}", mask(message)),
                data.as_ref().map(ToString::to_string).unwrap_or_default(),
            ),
            Reply::Result(r)
                if r.get("isError").and_then(serde_json::Value::as_bool) == Some(true) =>
            {
                (
                    format!("a tool error{status}"),
                    r.get("content")
                        .map(ToString::to_string)
                        .unwrap_or_default(),
                )
            }
            Reply::NotJsonRpc if ex.status.is_some_and(|s| (400..500).contains(&s)) => {
                (format!("an error page{status}"), ex.excerpt.clone())
            }
            _ => return None,
        };
        Some(Self {
            face,
            details: mask(&details),
        })
    }

    /// Both parts, cut short and shown safely, for the evidence.
    pub(super) fn shown(&self) -> String {
        let details = if self.details.is_empty() {
            String::new()
        } else {
            format!(", details {}", shown(&cut(&self.details, 60)))
        };
        format!("{}{details}", shown(&cut(&self.face, 90)))
    }
}

/// `text` with every digit run as `#` and every token of 16 or more letters,
/// digits, `-` and `_` as `…`.
fn mask(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut token = String::new();
    let flush = |token: &mut String, out: &mut String| {
        if token.chars().count() >= 16 {
            out.push('…');
        } else {
            let mut digits = false;
            for c in token.chars() {
                if c.is_ascii_digit() {
                    if !digits {
                        out.push('#');
                    }
                    digits = true;
                } else {
                    digits = false;
                    out.push(c);
                }
            }
        }
        token.clear();
    };
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            token.push(c);
        } else {
            flush(&mut token, &mut out);
            out.push(c);
        }
    }
    flush(&mut token, &mut out);
    out
}

/// A fresh key round and its state (see [`flow::fresh`]), or the skip that
/// says why there is none.
pub(super) async fn fresh_state(
    ctx: &mut Context<'_>,
    b: &Baseline,
    who: Who,
    id: CheckId,
) -> Result<Result<(Round, String), CheckResult>, Spent> {
    if b.state().is_none() {
        return Ok(Err(skip(
            id,
            "the server hands out no requestState (it keeps the flow's state itself): nothing to present",
        )));
    }
    Ok(match flow::fresh(ctx, b, who).await? {
        Some(Round {
            state: Some(state),
            requests,
            answers,
        }) => Ok((
            Round {
                state: Some(state.clone()),
                requests,
                answers,
            },
            state,
        )),
        _ => Err(skip(
            id,
            "the flow, begun again, did not ask the same way (no fresh state to present)",
        )),
    })
}

/// `sent: ...; got: ...` for the evidence.
pub(super) fn evidence(sent: &str, ex: &Exchange) -> String {
    let status = ex
        .status
        .map(|s| format!(" (HTTP {s})"))
        .unwrap_or_default();
    format!(
        "sent {}; got {}{status}",
        shown(&cut(sent, 120)),
        Outcome::of(ex).describe()
    )
}

/// The skip of a check cut short by the request budget or the deadline.
fn spent(id: CheckId, why: Spent, plan: &Plan) -> CheckResult {
    match why {
        Spent::Budget => skip(
            id,
            "the request budget ran out (raise --max-requests, or run fewer checks with --only)",
        ),
        Spent::Deadline => skip(
            id,
            format!(
                "not finished within the audit's deadline ({} s; raise --deadline, or run fewer \
                 checks with --only)",
                plan.deadline.as_secs()
            ),
        ),
    }
}

/// Runs the selected checks: those that send first, then those that read what
/// the others saw. Returns them in the report's order.
pub(super) async fn run_all(
    ctx: &mut Context<'_>,
    b: &Baseline,
    progress: &mut (dyn Write + Send),
) -> Vec<CheckResult> {
    let selected = ctx.plan.checks.clone();
    let mut results = Vec::new();
    let readers = [
        CheckId::ErrorUniformity,
        CheckId::Leaks,
        CheckId::ResultType,
    ];
    for id in selected.iter().copied().filter(|c| !readers.contains(c)) {
        let _ = writeln!(progress, "audit: {}", id.name());
        let r = match id {
            CheckId::Integrity => tamper::integrity(ctx, b).await,
            CheckId::Confidentiality => Ok(tamper::confidentiality(ctx, b)),
            CheckId::BindingArguments => binding::arguments(ctx, b).await,
            CheckId::BindingTool => binding::tool(ctx, b).await,
            CheckId::BindingMethod => binding::method(ctx, b).await,
            CheckId::BindingPrincipal => binding::principal(ctx, b).await,
            CheckId::ForeignKey => binding::foreign_key(ctx, b).await,
            CheckId::Fleet => binding::fleet(ctx, b).await,
            CheckId::Expiry => binding::expiry(ctx, b, progress).await,
            CheckId::CapabilityGate => protocol::capability_gate(ctx, b).await,
            CheckId::Carriers => protocol::carriers(ctx).await,
            CheckId::AnswersValidated => protocol::answers_validated(ctx, b).await,
            CheckId::ErrorChannels => protocol::error_channels(ctx, b).await,
            CheckId::SizeCaps => protocol::size_caps(ctx, b).await,
            CheckId::ReplayAfterComplete => protocol::replay(ctx, b).await,
            CheckId::ErrorUniformity | CheckId::Leaks | CheckId::ResultType => continue,
        };
        results.push(r.unwrap_or_else(|why| spent(id, why, ctx.plan)));
    }
    for id in selected.iter().copied().filter(|c| readers.contains(c)) {
        let r = match id {
            CheckId::ErrorUniformity => oracle::error_uniformity(ctx),
            CheckId::Leaks => oracle::leaks(ctx, b),
            _ => protocol::result_type(ctx),
        };
        results.push(r);
    }
    results.sort_by_key(|r| CheckId::ALL.iter().position(|c| *c == r.id));
    results
}
