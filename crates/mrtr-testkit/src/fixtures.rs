//! The reference server's fixtures, by name, and the answers they take: what the
//! tests and the reference (`mrtr_cli::reference`, run by `mrtr serve` and by the
//! rmcp example) agree on. The handlers stay with the binary, which ships them;
//! only the names and the answers' shapes are shared here.

use serde_json::{Value, json};

use crate::accept;

/// The reference server's elicitation fixture (asks `user_name`).
pub const ELICIT: &str = "test_input_required_result_elicitation";
/// The reference server's three-round fixture (`step1`, then `step2`).
pub const MULTI: &str = "test_input_required_result_multi_round";
/// The reference server's prompt fixture (asks `user_context`).
pub const PROMPT: &str = "test_input_required_result_prompt";
/// The reference server's resource that asks before it reveals.
pub const VAULT: &str = "mrtr://demo/vault-note";

/// The answer to [`ELICIT`]'s `user_name` question.
pub fn name_answer(name: &str) -> Value {
    json!({"user_name": accept(json!({"name": name}))})
}

/// The answer to the deploy demo's `confirm` question.
pub fn confirm_answer(yes: bool) -> Value {
    json!({"confirm": accept(json!({"confirm": yes}))})
}
