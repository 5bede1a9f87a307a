//! What one run of the audit holds while the checks run: the plan, the
//! server, the audit's marked values, and the refusal log (every refusal of a
//! bad state seen, which the `error-uniformity` and `leaks` checks read
//! afterwards).

use super::answer::Marks;
use super::args::Plan;
use super::catalog::CheckId;
use super::outcome::Outcome;
use super::target::{Exchange, Target};

/// A refusal of an altered or misplaced state, kept for `error-uniformity` and
/// `leaks`.
#[derive(Debug, Clone)]
pub(super) struct Refusal {
    /// The check that sent it.
    pub(super) check: CheckId,
    /// What was sent.
    pub(super) sent: String,
    /// What came back.
    pub(super) exchange: Exchange,
}

/// What the checks share.
pub(super) struct Context<'a> {
    /// The options.
    pub(super) plan: &'a Plan,
    /// The server, with the request budget and rate.
    pub(super) target: Target,
    /// The values the audit sends, marked so that they can be found again.
    pub(super) marks: Marks,
    /// The refusal log: every refusal of a bad state, in order.
    pub(super) refusals: Vec<Refusal>,
}

impl<'a> Context<'a> {
    /// A run of `plan` against `target`, with fresh marks and no refusal yet.
    pub(super) fn new(plan: &'a Plan, target: Target) -> Self {
        Self {
            plan,
            target,
            marks: Marks::new(),
            refusals: Vec::new(),
        }
    }

    /// Keeps `ex` as a refusal of what `sent` describes, if it refused.
    pub(super) fn keep_refusal(&mut self, check: CheckId, sent: &str, ex: &Exchange) {
        if matches!(
            Outcome::of(ex),
            Outcome::Error { .. } | Outcome::Complete { is_error: true } | Outcome::Http(_)
        ) {
            self.refusals.push(Refusal {
                check,
                sent: sent.to_owned(),
                exchange: ex.clone(),
            });
        }
    }
}
