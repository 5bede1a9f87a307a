//! What the refusals give away: whether they differ by reason
//! (`error-uniformity`), and whether they, or the server's log, show a reason,
//! a token or a value (`leaks`).

use std::collections::BTreeMap;

use super::super::catalog::{CheckId, Severity};
use super::super::flow::Baseline;
use super::super::run::{Context, Refusal};
use super::super::target::Reply;
use super::super::text::{cut, shown};
use super::{CheckResult, Findings, Looks, skip};

/// The checks whose refusals are refusals of a bad state.
const STATE_CHECKS: [CheckId; 7] = [
    CheckId::Integrity,
    CheckId::BindingArguments,
    CheckId::BindingTool,
    CheckId::BindingMethod,
    CheckId::BindingPrincipal,
    CheckId::ForeignKey,
    CheckId::Expiry,
];

/// Whether `r` is a size refusal made before the body was parsed (HTTP 413):
/// it answers the request's length, which the client knows, not anything about
/// the state, so it is no oracle and names no private reason.
fn before_parsing(r: &Refusal) -> bool {
    r.exchange.status == Some(413)
}

/// The refusals of a bad state compared by the two checks, with how each looks.
/// Left out: a size refusal before parsing, and an expired state answered with
/// a tool error: only a state that verified and matched every binding can get
/// that answer (the audit presents an authentic state on its own request), so
/// it tells the one who holds it that time ran out, and a forger nothing; the
/// spec also lets an expired flow begin again.
fn compared(ctx: &Context<'_>) -> Vec<(Looks, String)> {
    ctx.refusals
        .iter()
        .filter(|r| STATE_CHECKS.contains(&r.check) && !before_parsing(r))
        .filter_map(|r| {
            let looks = Looks::of(&r.exchange)?;
            if r.check == CheckId::Expiry && looks.face.starts_with("a tool error") {
                return None;
            }
            Some((looks, format!("{}: {}", r.check.name(), r.sent)))
        })
        .collect()
}

/// The refusals grouped by `part` of how they look: each value, the cases that
/// got it, largest group first.
fn grouped(
    refusals: &[(Looks, String)],
    part: impl Fn(&Looks) -> &str,
) -> Vec<(&Looks, Vec<&str>)> {
    let mut groups: BTreeMap<String, (&Looks, Vec<&str>)> = BTreeMap::new();
    for (looks, sent) in refusals {
        groups
            .entry(part(looks).to_owned())
            .or_insert_with(|| (looks, Vec::new()))
            .1
            .push(sent);
    }
    let mut out: Vec<_> = groups.into_values().collect();
    out.sort_by_key(|(_, sent)| std::cmp::Reverse(sent.len()));
    out
}

/// The evidence of one difference: the commonest refusal and another, each
/// with a case that got it, both cut short.
fn difference(common: &(&Looks, Vec<&str>), other: &(&Looks, Vec<&str>)) -> String {
    format!(
        "{} for {} case(s), e.g. {}; but {} for {} case(s), e.g. {}",
        common.0.shown(),
        common.1.len(),
        shown(&cut(common.1[0], 70)),
        other.0.shown(),
        other.1.len(),
        shown(&cut(other.1[0], 70))
    )
}

pub(super) fn error_uniformity(ctx: &mut Context<'_>) -> CheckResult {
    let id = CheckId::ErrorUniformity;
    let refusals = compared(ctx);
    if refusals.is_empty() {
        return skip(
            id,
            "no refusal of a bad state to compare (run it with integrity or the binding checks)",
        );
    }
    let groups = grouped(&refusals, |l| &l.face);
    let mut f = Findings::new(id);
    for other in &groups[1..] {
        f.add(
            Severity::Medium,
            "refusals of a bad state differ by why: an oracle on the state",
            "Answer every state that does not verify, does not match the request, the user \
             or the key, or has lapsed, with one JSON-RPC error (code, message and HTTP \
             status), and keep the reason for the private log.",
            difference(&groups[0], other),
        );
    }
    f.done(format!(
        "{} refusals compared: {}",
        refusals.len(),
        if groups.len() == 1 {
            format!("all {}", groups[0].0.shown())
        } else {
            format!("{} different answers", groups.len())
        }
    ))
}

/// Slices of `state` long enough to mean it was echoed: 16 characters from
/// the start, the middle and the end.
fn slices(state: &str) -> Vec<&str> {
    let n = state.len();
    if n < 24 || !state.is_ascii() {
        return Vec::new();
    }
    vec![&state[..16], &state[n / 2 - 8..n / 2 + 8], &state[n - 16..]]
}

pub(super) fn leaks(ctx: &mut Context<'_>, b: &Baseline) -> CheckResult {
    let id = CheckId::Leaks;
    let secrets = ctx.plan.secrets();
    let values = ctx.marks.all();
    let state_slices: Vec<String> = b
        .rounds
        .iter()
        .filter_map(|r| r.state.as_deref())
        .flat_map(|s| slices(s).into_iter().map(str::to_owned))
        .collect();
    let mut f = Findings::new(id);
    // What a refusal says beyond its face (data, a tool error's text, an error
    // page) must not differ by cause either: a text that varies with the
    // reason names it, whatever its words.
    let refusals = compared(ctx);
    let groups = grouped(&refusals, |l| &l.details);
    for other in groups.iter().skip(1) {
        f.add(
            Severity::Medium,
            "a refusal's details differ by why: they name the reason",
            "Keep the reason for a private log line; the client gets one fixed error, the same \
             data (or none) for every bad state.",
            difference(&groups[0], other),
        );
    }
    let mut read = 0;
    for r in &ctx.refusals {
        read += 1;
        echoed(&mut f, r, &secrets, &values, &state_slices);
    }
    let mut detail = format!("{read} refusals read");
    if let Some(path) = &ctx.plan.log {
        match logged(&mut f, path, &secrets, &values) {
            Ok(len) => detail.push_str(&format!(", and the log ({len} bytes)")),
            Err(e) => {
                return skip(
                    id,
                    format!("--log {}: {e}", shown(&path.display().to_string())),
                );
            }
        }
    } else if read == 0 {
        return skip(id, "no refusal to read, and no --log FILE");
    }
    f.done(detail)
}

/// `leaks` on one refusal: no credential (`secrets`), no argument or answer
/// value (`values`) and no slice of a state (`state_slices`) in what it says.
fn echoed(
    f: &mut Findings,
    r: &Refusal,
    secrets: &[String],
    values: &[String],
    state_slices: &[String],
) {
    let text = match &r.exchange.reply {
        Reply::Error { message, data, .. } => {
            let data = data.as_ref().map(ToString::to_string).unwrap_or_default();
            format!("{message} {data}")
        }
        _ => r.exchange.excerpt.clone(),
    };
    let sent = format!("{}: {}", r.check.name(), r.sent);
    if secrets.iter().any(|s| text.contains(s.as_str())) {
        f.add(
            Severity::High,
            "a refusal echoes a credential the client sent",
            "Never put a header value or token into a reply.",
            format!(
                "{} — a -H/--as-other value is in the reply",
                shown(&cut(&sent, 80))
            ),
        );
    }
    if let Some(v) = values.iter().find(|v| text.contains(v.as_str())) {
        f.add(
            Severity::Medium,
            "a refusal echoes an argument or answer value",
            "Name the field at fault, never its value: a value can be a secret or an injection.",
            format!("{} — the reply holds {}", shown(&cut(&sent, 80)), cut(v, 6)),
        );
    }
    if state_slices.iter().any(|s| text.contains(s.as_str())) {
        f.add(
            Severity::Low,
            "a refusal echoes the state",
            "Refuse a state without repeating it.",
            format!(
                "{} — a slice of the state is in the reply",
                shown(&cut(&sent, 80))
            ),
        );
    }
}

/// `leaks` on the server's log at `path`: no credential (`secrets`) and no
/// argument or answer value (`values`) in it. Returns how long the log read
/// was.
fn logged(
    f: &mut Findings,
    path: &std::path::Path,
    secrets: &[String],
    values: &[String],
) -> std::io::Result<usize> {
    let log = read_log(path)?;
    if secrets.iter().any(|s| log.contains(s.as_str())) {
        f.add(
            Severity::High,
            "a credential reaches the server's log",
            "Log who the caller is (a principal), never a header value or token.",
            format!(
                "{}: a -H/--as-other value is in it",
                shown(&path.display().to_string())
            ),
        );
    }
    if let Some(v) = values.iter().find(|v| log.contains(v.as_str())) {
        f.add(
            Severity::Medium,
            "an argument or answer value reaches the server's log",
            "Log the names of arguments and answer keys, never their values.",
            format!(
                "{}: {} is in it",
                shown(&path.display().to_string()),
                cut(v, 6)
            ),
        );
    }
    Ok(log.len())
}

/// The log, at most its last 64 MiB.
fn read_log(path: &std::path::Path) -> std::io::Result<String> {
    const MAX: usize = 64 * 1024 * 1024;
    let bytes = std::fs::read(path)?;
    let start = bytes.len().saturating_sub(MAX);
    Ok(String::from_utf8_lossy(&bytes[start..]).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_slices_come_from_three_places() {
        let s: String = ('a'..='z').chain('A'..='Z').collect();
        let sl = slices(&s);
        assert_eq!(
            sl,
            vec![
                "abcdefghijklmnop",
                "ruvwxyzABCDEFGHI".get(0..0).map_or(sl[1], |_| sl[1]),
                "KLMNOPQRSTUVWXYZ"
            ]
        );
        assert_eq!(sl[1].len(), 16);
        assert!(slices("short").is_empty());
    }
}
