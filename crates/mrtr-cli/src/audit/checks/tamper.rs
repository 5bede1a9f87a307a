//! `integrity` (altered states are refused) and `confidentiality` (a state
//! cannot be read).

use super::super::catalog::{CheckId, Severity};
use super::super::flow::{Baseline, retry};
use super::super::outcome::Outcome;
use super::super::run::Context;
use super::super::state::{self, Alteration};
use super::super::target::{Spent, Who};
use super::{BadState, CheckResult, Findings, Verdict, fresh_state, judge_bad_state, skip};

const FIX_INTEGRITY: &str = "Seal the state with an AEAD (AES-GCM, XAES-256-GCM, ChaCha20-Poly1305) or sign it \
     with an HMAC over its exact bytes, and answer every state that does not verify with one \
     JSON-RPC error (-32602) before looking at anything in it.";

pub(super) async fn integrity(ctx: &mut Context<'_>, b: &Baseline) -> Result<CheckResult, Spent> {
    let id = CheckId::Integrity;
    let (mut round, original) = match fresh_state(ctx, b, Who::Main, id).await? {
        Ok(r) => r,
        Err(skipped) => return Ok(skipped),
    };
    let known = b.asked();
    let alterations = state::alterations(&original);
    let mut f = Findings::new(id);
    let mut refused = 0;
    for alt in &alterations {
        let rid = ctx.target.id();
        let body = retry(&b.first, rid, Some(&alt.state), Some(&round.answers));
        let ex = ctx.target.send(Who::Main, &body).await?;
        let sent = format!("the state with {}", alt.label);
        if !matches!(
            Outcome::of(&ex),
            Outcome::Error { .. } | Outcome::Http(400..=499)
        ) {
            // Whatever happened may have used the flow up: the next alteration
            // gets a state of its own.
            if let Ok((r, _)) = fresh_state(ctx, b, Who::Main, id).await? {
                round = r;
            }
        }
        ctx.keep_refusal(id, &sent, &ex);
        let verdict = BadState::of(&ex, &known);
        if verdict == BadState::Rejected {
            refused += 1;
        }
        let taken = match alt.what {
            Alteration::ReEncoded => (
                Severity::Low,
                "the same state in another base64 form is taken (a malleable encoding)",
            ),
            Alteration::Flipped | Alteration::Forged => (
                Severity::Critical,
                "an altered state is taken: its integrity is not checked",
            ),
            _ => (
                Severity::High,
                "a cut, lengthened, empty or replaced state is taken",
            ),
        };
        judge_bad_state(
            &mut f,
            verdict,
            &ex,
            &sent,
            Verdict {
                severity: taken.0,
                title: taken.1,
                fix: FIX_INTEGRITY,
            },
        );
    }
    Ok(f.done(format!(
        "{refused} of {} altered states refused with an error",
        alterations.len()
    )))
}

pub(super) fn confidentiality(ctx: &mut Context<'_>, b: &Baseline) -> CheckResult {
    let id = CheckId::Confidentiality;
    let states: Vec<&str> = b.rounds.iter().filter_map(|r| r.state.as_deref()).collect();
    if states.is_empty() {
        return skip(id, "the server hands out no requestState: nothing to read");
    }
    let marks = ctx.marks.all();
    let mut f = Findings::new(id);
    for (n, s) in states.iter().enumerate() {
        if let Some(what) = state::readable(s, &marks) {
            let carries_values = what.starts_with("a value");
            // The spec asks for integrity, not secrecy: the state is "in any format
            // (base64 JSON, encrypted JWT, binary, ...)"; only the SEP says SHOULD
            // encrypt. Values in the clear miss that SHOULD; a readable state
            // without them breaks no rule.
            f.add(
                if carries_values {
                    Severity::Low
                } else {
                    Severity::Info
                },
                if carries_values {
                    "the state carries the arguments or answers in the clear"
                } else {
                    "the state is readable by the client"
                },
                "Encrypt the state (an AEAD such as AES-GCM), so that a client carries it without \
                 reading what the server keeps in it.",
                format!("the state of round {}: {what}", n + 1),
            );
        }
    }
    f.done(format!("{} state(s) looked at", states.len()))
}
