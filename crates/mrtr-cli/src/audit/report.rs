//! The audit's report, and its three forms.
//!
//! # The JSON document (`--format json`), schema `mrtr-audit/1`
//!
//! ```json
//! {
//!   "schema": "mrtr-audit/1",
//!   "server": {"target": "http://127.0.0.1:8808/mcp", "name": "mrtr-reference", "version": "0.1.0",
//!              "versions": ["2026-07-28", "2025-11-25"]},
//!   "flow": {"method": "tools/call", "name": "deploy", "rounds": 1, "needsState": true},
//!   "requests": 61,
//!   "checks": [
//!     {"id": "integrity", "status": "pass", "detail": "20 of 20 altered states refused with an error"}
//!   ],
//!   "findings": [
//!     {"check": "replay-after-complete", "severity": "info",
//!      "title": "the final round can be replayed: with another answer it runs again and completes differently",
//!      "evidence": ["sent the final retry with another answer, under a new id; got a result (HTTP 200)"],
//!      "spec": "MRTR server requirement 5, warning: ...", "fix": "Where a side effect must happen at most once, ..."}
//!   ]
//! }
//! ```
//!
//! - `server.name` and `server.version` are what `server/discover` said, when
//!   it answered; `server.versions` the protocol versions it serves, of both
//!   eras: `server/discover`'s `supportedVersions`, and over HTTP the version a
//!   2025-11-25 `initialize` got (a server that answers it serves 2025-era
//!   clients too), at most four.
//! - `checks` lists every check selected, in the order of the table in the
//!   `audit` module, each `status` one of `pass`, `fail`, `skip`; `detail` says
//!   what was sent, or for a skip what the check needs.
//! - `findings` are sorted worst first; `severity` is one of `critical`,
//!   `high`, `medium`, `low`, `info`. A check fails when it has a finding at or
//!   above `low`.
//! - Every state and header value the audit saw is cut to a six-character
//!   prefix and `…` wherever it would appear; control characters a server
//!   sent are shown as `?`, and invisible formatting characters (bidirectional
//!   controls such as U+061C, U+200E/F, U+202A-E, U+2066-9, zero-width
//!   characters, the line and paragraph separators U+2028/9) as `\u{…}`.
//! - The markdown report backslash-escapes every ASCII punctuation character of
//!   every text in it, or puts a name in a code span whose fence is longer than
//!   any run of backticks in it: a server's name or tool name can make no link,
//!   image, HTML, emphasis or heading there.
//! - A later version adds fields; a change to these is a new `schema`.

use serde_json::{Value, json};

use super::catalog::Severity;
use super::checks::{CheckResult, Finding, Status};
use super::flow::Baseline;
use super::run::Context;
use super::text::{cut, md_code, md_text, shown};

/// The schema of the JSON report.
pub const SCHEMA: &str = "mrtr-audit/1";

/// One check in the report.
#[derive(Debug, Clone)]
struct CheckLine {
    id: &'static str,
    status: Status,
    detail: String,
}

/// One finding in the report.
#[derive(Debug, Clone)]
struct FindingLine {
    check: &'static str,
    severity: Severity,
    title: String,
    evidence: Vec<String>,
    spec: &'static str,
    fix: String,
}

/// The report of one audit.
#[derive(Debug, Clone)]
pub struct Report {
    target: String,
    /// `serverInfo` name and version, as the server said (shown safely).
    server: Option<(String, String)>,
    /// The protocol versions it serves, of each era (shown safely).
    eras: Vec<String>,
    flow: (String, String, usize, bool),
    requests: u32,
    checks: Vec<CheckLine>,
    findings: Vec<FindingLine>,
}

/// Cuts every secret (a state, a header value) in `s` to its prefix.
fn redact(s: &str, secrets: &[String]) -> String {
    let mut out = shown(s);
    for secret in secrets {
        if out.contains(secret.as_str()) {
            out = out.replace(
                secret.as_str(),
                &format!("{}…", cut(secret, 6).trim_end_matches('…')),
            );
        }
    }
    out
}

impl Report {
    pub(super) fn new(ctx: &Context<'_>, b: &Baseline, results: Vec<CheckResult>) -> Self {
        let mut secrets = ctx.plan.secrets();
        secrets.extend(
            b.rounds
                .iter()
                .filter_map(|r| r.state.clone())
                .filter(|s| s.len() >= 8),
        );
        // Longest first, so that a state is cut before any part of it is.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        let r = |s: &str| redact(s, &secrets);
        let mut findings: Vec<FindingLine> = results
            .iter()
            .flat_map(|c| c.findings.iter())
            .map(|f: &Finding| FindingLine {
                check: f.check.name(),
                severity: f.severity,
                title: r(&f.title),
                evidence: f.evidence.iter().map(|e| r(e)).collect(),
                spec: f.check.spec(),
                fix: f.fix.clone(),
            })
            .collect();
        findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
        Self {
            target: r(&ctx.target.describe()),
            server: b.server.as_ref().map(|s| {
                let field = |k: &str| r(&cut(s.get(k).and_then(Value::as_str).unwrap_or(""), 60));
                (field("name"), field("version"))
            }),
            eras: b.eras.iter().map(|v| r(v)).collect(),
            flow: (
                b.method.to_owned(),
                r(&b.name),
                b.rounds.len(),
                b.needs_state,
            ),
            requests: ctx.target.sent,
            checks: results
                .iter()
                .map(|c| CheckLine {
                    id: c.id.name(),
                    status: c.status,
                    detail: r(&c.detail),
                })
                .collect(),
            findings,
        }
    }

    /// The worst severity found, if any.
    pub fn worst(&self) -> Option<Severity> {
        self.findings.iter().map(|f| f.severity).max()
    }

    /// The JSON document.
    pub fn to_json(&self) -> String {
        let v = json!({
            "schema": SCHEMA,
            "server": match &self.server {
                Some((name, version)) => json!({"target": self.target, "name": name, "version": version, "versions": self.eras}),
                None => json!({"target": self.target, "versions": self.eras}),
            },
            "flow": {
                "method": self.flow.0,
                "name": self.flow.1,
                "rounds": self.flow.2,
                "needsState": self.flow.3,
            },
            "requests": self.requests,
            "checks": self.checks.iter().map(|c| json!({
                "id": c.id, "status": c.status.name(), "detail": c.detail,
            })).collect::<Vec<Value>>(),
            "findings": self.findings.iter().map(|f| json!({
                "check": f.check,
                "severity": f.severity.name(),
                "title": f.title,
                "evidence": f.evidence,
                "spec": f.spec,
                "fix": f.fix,
            })).collect::<Vec<Value>>(),
        });
        let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
        s.push('\n');
        s
    }

    fn server_line(&self) -> String {
        let versions = if self.eras.is_empty() {
            String::new()
        } else {
            format!(", protocol {}", self.eras.join(" and "))
        };
        match &self.server {
            Some((name, version)) => format!(" ({name} {version}{versions})"),
            None if versions.is_empty() => String::new(),
            None => format!(" ({})", versions.trim_start_matches(", ")),
        }
    }

    fn counts(&self) -> (usize, usize, usize) {
        let n = |st| self.checks.iter().filter(|c| c.status == st).count();
        (n(Status::Pass), n(Status::Fail), n(Status::Skip))
    }

    /// The table for the terminal (with ANSI colours when `colour`).
    pub fn to_text(&self, colour: bool) -> String {
        let paint = |code: &str, s: &str| {
            if colour {
                format!("\x1b[{code}m{s}\x1b[0m")
            } else {
                s.to_owned()
            }
        };
        let mut out = String::new();
        out.push_str(&format!(
            "mrtr audit of {}{}\n",
            self.target,
            self.server_line()
        ));
        out.push_str(&format!(
            "flow: {} {:?}, {} round(s), {} the state; {} requests sent\n\n",
            self.flow.0,
            self.flow.1,
            self.flow.2,
            if self.flow.3 {
                "needs"
            } else {
                "does not need"
            },
            self.requests
        ));
        let width = self
            .checks
            .iter()
            .map(|c| c.id.len())
            .max()
            .unwrap_or(5)
            .max(5);
        out.push_str(&format!("{:width$}  STATUS  DETAIL\n", "CHECK"));
        for c in &self.checks {
            let status = match c.status {
                Status::Pass => paint("32", "pass"),
                Status::Fail => paint("31;1", "FAIL"),
                Status::Skip => paint("33", "skip"),
            };
            out.push_str(&format!("{:width$}  {status}    {}\n", c.id, c.detail));
        }
        if !self.findings.is_empty() {
            out.push_str("\nFINDINGS\n");
        }
        for f in &self.findings {
            let sev = match f.severity {
                Severity::Critical | Severity::High => paint("31;1", f.severity.name()),
                Severity::Medium => paint("33", f.severity.name()),
                _ => paint("36", f.severity.name()),
            };
            out.push_str(&format!("\n[{sev}] {}: {}\n", f.check, f.title));
            for e in &f.evidence {
                out.push_str(&format!("  evidence: {e}\n"));
            }
            out.push_str(&format!("  spec: {}\n  fix: {}\n", f.spec, f.fix));
        }
        let (pass, fail, skip) = self.counts();
        out.push_str(&format!(
            "\n{pass} passed, {fail} failed, {skip} skipped; worst finding: {}\n",
            self.worst().map_or("none", Severity::name)
        ));
        out
    }

    /// Markdown, for a pull request. Everything a server chose (and every
    /// other text) is escaped (`md_text`) or in a code span (`md_code`).
    pub fn to_markdown(&self) -> String {
        let cell = md_text;
        let mut out = String::new();
        out.push_str(&format!(
            "## mrtr audit of {}{}\n\n",
            md_code(&self.target),
            cell(&self.server_line())
        ));
        out.push_str(&format!(
            "Flow: `{}` {}, {} round(s); {} requests sent.\n\n",
            self.flow.0,
            md_code(&self.flow.1),
            self.flow.2,
            self.requests
        ));
        out.push_str("| check | status | detail |\n|---|---|---|\n");
        for c in &self.checks {
            let status = match c.status {
                Status::Pass => "✅ pass",
                Status::Fail => "❌ fail",
                Status::Skip => "⏭️ skip",
            };
            out.push_str(&format!(
                "| `{}` | {status} | {} |\n",
                c.id,
                cell(&c.detail)
            ));
        }
        if !self.findings.is_empty() {
            out.push_str("\n### Findings\n");
        }
        for f in &self.findings {
            out.push_str(&format!(
                "\n#### {} — `{}`: {}\n\n",
                f.severity.name(),
                f.check,
                cell(&f.title)
            ));
            for e in &f.evidence {
                out.push_str(&format!("- evidence: {}\n", cell(e)));
            }
            out.push_str(&format!(
                "- spec: {}\n- fix: {}\n",
                cell(f.spec),
                cell(&f.fix)
            ));
        }
        let (pass, fail, skip) = self.counts();
        out.push_str(&format!(
            "\n{pass} passed, {fail} failed, {skip} skipped.\n"
        ));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_server_wrote_is_shown_safely_and_secrets_are_cut() {
        assert_eq!(shown("a\x1b[31mb\u{202e}c\n"), "a?[31mb\\u{202e}c?");
        assert_eq!(
            shown("x\u{61c}\u{2028}\u{2029}\u{200e}\u{2066}\u{feff}y"),
            "x\\u{61c}\\u{2028}\\u{2029}\\u{200e}\\u{2066}\\u{feff}y"
        );
        assert_eq!(cut("abcdef", 3), "abc…");
        assert_eq!(cut("abc", 3), "abc");
        let secrets = vec!["Bearer-s3cr3t-token".to_owned()];
        assert_eq!(
            redact("got Bearer-s3cr3t-token back", &secrets),
            "got Bearer… back"
        );
    }

    #[test]
    fn markdown_escapes_every_markup_character() {
        let hostile =
            "<img src=x>[**all passed**](https://evil.example) `a` | # _b_ ![i](j) www.x.y &amp;";
        let escaped = md_text(hostile);
        // Every ASCII punctuation character is preceded by a backslash.
        let mut chars = escaped.chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                assert!(
                    chars.next().is_some_and(|n| n.is_ascii_punctuation()),
                    "{escaped}"
                );
            } else {
                assert!(!c.is_ascii_punctuation(), "{c:?} unescaped in {escaped}");
            }
        }
        assert_eq!(md_text("a\nb"), "a b");
        assert_eq!(md_code("plain"), "`plain`");
        assert_eq!(md_code("a ` b `` c"), "```a ` b `` c```");
        assert_eq!(md_code("`x`"), "`` `x` ``");
        assert_eq!(md_code(""), "(none)");
    }
}
