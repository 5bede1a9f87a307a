//! The fixtures of the tasks extension's conformance scenarios
//! (`io.modelcontextprotocol/tasks`, SEP-2663): tools that become tasks for a
//! client that declares the extension ([`TaskSupport`]), registered after the
//! others (a scenario calls the first tool listed and expects it to answer).
//! The same handlers answer in the request for a client that does not declare
//! it, where their support allows; their questions are the task's
//! `input_required` questions once they run as tasks.

use std::time::Duration;

use serde_json::{Value, json};

use mrtr::ToolResult;
use mrtr::engine::{Confirmation, Flow, Form, Round};
use mrtr::error::{Error, Retry, ToolAdvice};
use mrtr::service::{Service, TaskSupport};

use super::legacy::raw;
use super::no_args;

/// Registers the fixtures on `s` and their task support; `s` serves tasks.
// structure: data table (one registration per conformance fixture)
pub(super) fn fixtures(s: Service) -> Service {
    s.tool(
        "greet",
        "Conformance (tasks): says hello to `name`, in the request (never a task).",
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
        |r: Round| {
            let name = text_argument(&r, "name").unwrap_or_default();
            Ok(ToolResult::text(format!("Hello, {name}!")))
        },
    )
    .tool(
        "slow_compute",
        "Conformance (tasks): takes `seconds` (at most an hour) and says so; a task for a client that \
         declares the extension.",
        json!({"type": "object", "properties": {
            "seconds": {"type": "number", "minimum": 0},
            "label": {"type": "string"}}}),
        |r: Round| async move {
            let seconds = r.argument("seconds").and_then(Value::as_f64).unwrap_or(0.0);
            let label = text_argument(&r, "label").unwrap_or_else(|| "work".into());
            tokio::time::sleep(Duration::from_secs_f64(seconds.clamp(0.0, 3600.0))).await;
            Ok(ToolResult::text(format!("Computed {label} in {seconds}s")))
        },
    )
    .tool(
        "failing_job",
        "Conformance (tasks): only as a task; ends with a tool error (isError) after a moment.",
        no_args(),
        |_: Round| async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            Err::<ToolResult, Flow>(Flow::failed(ToolAdvice::new(
                "The job failed on purpose (a conformance fixture)",
                Retry::DoesNotHelp,
            )))
        },
    )
    .tool(
        "protocol_error_job",
        "Conformance (tasks): fails with a JSON-RPC error (-32603), so its task ends failed.",
        no_args(),
        |_: Round| async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            Err::<ToolResult, Flow>(Flow::Fail(Error::internal(
                "protocol_error_job fails on purpose (a conformance fixture)",
            )))
        },
    )
    .tool(
        "confirm_delete",
        "Conformance (tasks): asks to confirm deleting `filename` (form elicitation), then says \
         what it did.",
        json!({"type": "object", "properties": {"filename": {"type": "string"}}, "required": ["filename"]}),
        |r: Round| {
            let file = text_argument(&r, "filename").unwrap_or_default();
            Ok(match r.confirm("confirm", format!("Delete {file}?"))? {
                Confirmation::Accepted => ToolResult::text(format!("Deleted {file}")),
                _ => ToolResult::text(format!("Kept {file}")),
            })
        },
    )
    .tool(
        "multi_input",
        "Conformance (tasks): asks two forms at once (a name and a confirmation each), then \
         echoes both names.",
        no_args(),
        |r: Round| {
            let form = |which: &str| {
                Form::new(format!("The {which} input"))
                    .field("name", raw(json!({"type": "string", "title": "Name"})), false)
                    .field(
                        "confirm",
                        raw(json!({"type": "boolean", "title": "Confirm"})),
                        false,
                    )
            };
            let first = r.elicit("first", form("first"));
            let second = r.elicit("second", form("second"));
            let (first, second) = (first?, second?);
            let name = |e: &mrtr::Elicited| {
                e.accepted()
                    .and_then(|f| f.str("name").map(str::to_owned))
                    .unwrap_or_default()
            };
            Ok(ToolResult::text(format!(
                "first={}; second={}",
                name(&first),
                name(&second)
            )))
        },
    )
    .tool(
        "test_tool_with_task",
        "Conformance (tasks and MRTR): asks your name in the request (an MRTR round), then \
         becomes a task that greets you.",
        no_args(),
        |r: Round| {
            let name = r
                .elicit(
                    "user_name",
                    Form::new("What is your name?").string("name", "Name"),
                )?
                .accepted()
                .and_then(|f| f.str("name").map(str::to_owned))
                .unwrap_or_default();
            Ok(ToolResult::text(format!("Hello, {name}!")))
        },
    )
    .tool(
        "migrate",
        "A long job, as a task for a client that declares the extension: asks to confirm, works \
         `seconds` (at most 600), then migrates, once however often the task is run or taken \
         over (a `once` step), and says so.",
        json!({"type": "object", "properties": {
            "seconds": {"type": "number", "minimum": 0, "maximum": 600}}}),
        |r: Round| async move {
            let seconds = r.argument("seconds").and_then(Value::as_f64).unwrap_or(0.0);
            if r.confirm("confirm", "Run the migration? It takes a while.")?
                != Confirmation::Accepted
            {
                return Ok(ToolResult::text("The migration was not run"));
            }
            tokio::time::sleep(Duration::from_secs_f64(seconds.clamp(0.0, 600.0))).await;
            r.once_async("migrate", || async { Ok(()) }).await?;
            Ok(ToolResult::text("Migrated"))
        },
    )
    .task_support("migrate", TaskSupport::Optional)
    .task_support("slow_compute", TaskSupport::Optional)
    .task_support("failing_job", TaskSupport::Required)
    .task_support("protocol_error_job", TaskSupport::Optional)
    .task_support("confirm_delete", TaskSupport::Optional)
    .task_support("multi_input", TaskSupport::Optional)
    .task_support("test_tool_with_task", TaskSupport::AfterFirstRound)
    .with_tasks()
}

/// The string argument `name`, if given.
fn text_argument(r: &Round, name: &str) -> Option<String> {
    r.argument(name).and_then(Value::as_str).map(str::to_owned)
}
