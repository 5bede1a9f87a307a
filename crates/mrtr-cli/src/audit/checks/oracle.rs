//! What the refusals give away: whether they differ by reason
//! (`error-uniformity`), and whether they, or the server's log, show a reason,
//! a token or a value (`leaks`).

use std::collections::BTreeMap;

use super::super::args::Severity;
use super::super::flow::Baseline;
use super::super::report::{cut, shown};
use super::super::target::Reply;
use super::{CheckId, CheckResult, Context, Findings, skip};

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
fn before_parsing(r: &super::Refusal) -> bool {
    r.exchange.status == Some(413)
}

pub(super) fn error_uniformity(ctx: &mut Context<'_>) -> CheckResult {
    let id = CheckId::ErrorUniformity;
    // (code, message, HTTP status) → what got it.
    let mut variants: BTreeMap<(i64, String, Option<u16>), Vec<String>> = BTreeMap::new();
    for r in ctx
        .refusals
        .iter()
        .filter(|r| STATE_CHECKS.contains(&r.check) && !before_parsing(r))
    {
        if let Reply::Error { code, message, .. } = &r.exchange.reply {
            variants
                .entry((*code, message.clone(), r.exchange.status))
                .or_default()
                .push(format!("{}: {}", r.check.name(), r.sent));
        }
    }
    let total: usize = variants.values().map(Vec::len).sum();
    if total == 0 {
        return skip(
            id,
            "no JSON-RPC refusal of a bad state to compare (run it with integrity or the binding checks)",
        );
    }
    let mut f = Findings::new(id);
    if variants.len() > 1 {
        for ((code, message, status), sent) in &variants {
            f.add(
                Severity::Medium,
                "refusals of a bad state differ by why: an oracle on the state",
                "Answer every state that does not verify, does not match the request, the user \
                 or the key, or has lapsed, with one JSON-RPC error (code and message), and keep \
                 the reason for the private log.",
                format!(
                    "{code} {:?}{} for {} case(s), e.g. {}",
                    shown(&cut(message, 80)),
                    status.map(|s| format!(" (HTTP {s})")).unwrap_or_default(),
                    sent.len(),
                    shown(&cut(&sent[0], 100))
                ),
            );
        }
    }
    let (code, message) = variants
        .keys()
        .next()
        .map(|(c, m, _)| (*c, m.clone()))
        .unwrap_or_default();
    f.done(format!(
        "{total} refusals compared: {}",
        if variants.len() == 1 {
            format!("all {code} {:?}", shown(&cut(&message, 60)))
        } else {
            format!("{} different answers", variants.len())
        }
    ))
}

/// Words that name why a state was refused, or what the server is made of.
const REASONS: [&str; 34] = [
    "mismatch",
    "binding",
    "too long",
    "too large",
    "decrypt",
    "aead",
    "hmac",
    "signature",
    "auth tag",
    "authentication tag",
    "tag mismatch",
    "mac mismatch",
    "invalid mac",
    "key id",
    "kid ",
    "unknown key",
    "nonce",
    "padding",
    "base64",
    "utf-8",
    "utf8",
    "deserializ",
    "serde",
    "expected value",
    "principal",
    "audience",
    "digest",
    "different tool",
    "wrong tool",
    "another user",
    "belongs to",
    "traceback",
    "panicked",
    "stack trace",
];

/// The refusal texts: the error's message and data (or the tool error's content).
fn text_of(reply: &Reply, excerpt: &str) -> String {
    match reply {
        Reply::Error { message, data, .. } => {
            let data = data.as_ref().map(ToString::to_string).unwrap_or_default();
            format!("{message} {data}")
        }
        _ => excerpt.to_owned(),
    }
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
    let mut read = 0;
    for r in &ctx.refusals {
        read += 1;
        let text = text_of(&r.exchange.reply, &r.exchange.excerpt);
        let lower = text.to_ascii_lowercase();
        let sent = format!("{}: {}", r.check.name(), r.sent);
        if let Some(word) = REASONS
            .iter()
            .find(|w| lower.contains(*w))
            .filter(|_| !before_parsing(r))
        {
            f.add(
                Severity::Medium,
                "a refusal names its reason",
                "Keep the reason for a private log line; the client gets one fixed error.",
                format!(
                    "{} — the reply says {:?}",
                    shown(&cut(&sent, 80)),
                    word.trim()
                ),
            );
        }
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
    let mut detail = format!("{read} refusals read");
    if let Some(path) = &ctx.plan.log {
        match read_log(path) {
            Ok(log) => {
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
                detail.push_str(&format!(", and the log ({} bytes)", log.len()));
            }
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

    #[test]
    fn the_frozen_message_names_no_reason() {
        let frozen = "invalid or expired requeststate";
        assert!(!REASONS.iter().any(|w| frozen.contains(w)));
    }
}
