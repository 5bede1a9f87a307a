//! `integrity` (altered states are refused) and `confidentiality` (a state
//! cannot be read).

use super::super::args::Severity;
use super::super::flow::{Baseline, Outcome, retry};
use super::super::state::{self, Alteration};
use super::super::target::{Spent, Who};
use super::{CheckId, CheckResult, Context, Findings, evidence, fresh_state, skip};

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
        let outcome = Outcome::of(&ex);
        if !matches!(outcome, Outcome::Error { .. } | Outcome::Http(400..=499)) {
            // Whatever happened may have used the flow up: the next alteration
            // gets a state of its own.
            if let Ok((r, _)) = fresh_state(ctx, b, Who::Main, id).await? {
                round = r;
            }
        }
        ctx.keep_refusal(id, &sent, &ex);
        let reencoded = alt.what == Alteration::ReEncoded;
        match outcome {
            Outcome::Error { .. } => refused += 1,
            // A size limit in front of the server (413, 400) refuses too.
            Outcome::Http(status) if (400..500).contains(&status) => refused += 1,
            o if o.progressed(&known) => {
                let (severity, title) = match alt.what {
                    Alteration::ReEncoded => (
                        Severity::Low,
                        "the same state in another base64 form is taken (a malleable encoding)",
                    ),
                    Alteration::Flipped | Alteration::Forged => {
                        (Severity::Critical, "an altered state is taken: its integrity is not checked")
                    }
                    _ => (Severity::High, "a cut, lengthened, empty or replaced state is taken"),
                };
                f.add(severity, title, FIX_INTEGRITY, evidence(&sent, &ex));
            }
            o if o.asks_again(&known) => f.add(
                if reencoded { Severity::Low } else { Severity::Medium },
                "an altered state is treated as no state (the question is asked again) instead of refused",
                FIX_INTEGRITY,
                evidence(&sent, &ex),
            ),
            Outcome::Complete { is_error: true } => f.add(
                Severity::Low,
                "an altered state is refused as a tool error, not as a JSON-RPC error",
                "Answer a state that fails verification with a JSON-RPC error (-32602), the \
                 same for every reason.",
                evidence(&sent, &ex),
            ),
            Outcome::Failed(_) | Outcome::Http(_) => f.add(
                Severity::Medium,
                "an altered state breaks the request (no JSON-RPC reply, or a server error)",
                "Verify the state before using it, and answer a failure with a JSON-RPC error.",
                evidence(&sent, &ex),
            ),
            _ => f.add(
                Severity::Medium,
                "an altered state gets neither a refusal nor the flow",
                FIX_INTEGRITY,
                evidence(&sent, &ex),
            ),
        }
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
            f.add(
                if carries_values {
                    Severity::Medium
                } else {
                    Severity::Low
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
