//! The conformance suite's list-change fixtures (`server-stateless`, SEP-2575):
//! `test_trigger_tool_change` and `test_trigger_prompt_change` each take a real
//! entry out of its list, or put it back ([`Changes::hide`], [`Changes::show`]),
//! so a client listening for that list's changes is told. The entries they
//! toggle, `test_dynamic_tool` and `test_dynamic_prompt`, are listed at start.

use mrtr::service::{Changes, List, Service};
use mrtr::{PromptDefinition, PromptResult, ToolResult};

use super::no_args;

const DYNAMIC_TOOL: &str = "test_dynamic_tool";
const DYNAMIC_PROMPT: &str = "test_dynamic_prompt";

/// Takes `key` out of `list` when it is listed, else puts it back; says which.
fn toggle(changes: &Changes, list: List, key: &str) -> String {
    if changes.is_hidden(list, key) {
        changes.show(list, key);
        format!("{key} is listed again.")
    } else {
        changes.hide(list, key);
        format!("{key} is no longer listed.")
    }
}

/// Registers the list-change fixtures on `s`, toggling through `changes`.
pub(super) fn fixtures(s: Service, changes: &Changes) -> Service {
    let tools = changes.clone();
    let prompts = changes.clone();
    s.tool(
        DYNAMIC_TOOL,
        "Conformance: a tool test_trigger_tool_change takes out of the list and puts back.",
        no_args(),
        |_| Ok(ToolResult::text("The dynamic tool ran.")),
    )
    .tool(
        "test_trigger_tool_change",
        "Conformance: changes the tool list (takes test_dynamic_tool out of it, or puts it \
         back), which clients listening for toolsListChanged are told.",
        no_args(),
        move |_| Ok(ToolResult::text(toggle(&tools, List::Tools, DYNAMIC_TOOL))),
    )
    .prompt(
        PromptDefinition::new(DYNAMIC_PROMPT).description(
            "Conformance: a prompt test_trigger_prompt_change takes out of the list and puts back.",
        ),
        |_| Ok(PromptResult::new().user_text("The dynamic prompt.")),
    )
    .tool(
        "test_trigger_prompt_change",
        "Conformance: changes the prompt list (takes test_dynamic_prompt out of it, or puts it \
         back), which clients listening for promptsListChanged are told.",
        no_args(),
        move |_| {
            Ok(ToolResult::text(toggle(
                &prompts,
                List::Prompts,
                DYNAMIC_PROMPT,
            )))
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trigger_takes_its_entry_out_then_puts_it_back() {
        let changes = Changes::new();
        assert_eq!(
            toggle(&changes, List::Tools, DYNAMIC_TOOL),
            "test_dynamic_tool is no longer listed."
        );
        assert!(changes.is_hidden(List::Tools, DYNAMIC_TOOL));
        assert_eq!(
            toggle(&changes, List::Tools, DYNAMIC_TOOL),
            "test_dynamic_tool is listed again."
        );
        assert!(!changes.is_hidden(List::Tools, DYNAMIC_TOOL));
    }
}
