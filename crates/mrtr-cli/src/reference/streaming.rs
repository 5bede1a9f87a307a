//! The conformance fixtures that send notifications while their request runs:
//! progress (`tools-call-with-progress`) and log messages (`server-stateless`,
//! and the 2025-11-25 `tools-call-with-logging`),
//! and the tool whose response stream must hold nothing but notifications and
//! its result (`server-stateless`, `sep-2575-http-server-no-independent-requests-on-stream`).
//!
//! Written with the public API only: [`Round::progress`] and [`Round::log`], which
//! send only what the request asked for (a `progressToken`, an
//! `io.modelcontextprotocol/logLevel`).

use std::time::Duration;

use serde_json::json;

use mrtr::engine::{Elicited, Flow, Form, Round};
use mrtr::service::Service;
use mrtr::{LogLevel, ToolResult};

use super::no_args;

/// A pause between two notifications, so a client sees them arrive one by one.
const STEP: Duration = Duration::from_millis(20);

/// The pause between the log messages of `tools-call-with-logging`, which asks
/// for about 50 ms.
const LOG_STEP: Duration = Duration::from_millis(50);

/// Registers the fixtures on `s`.
pub(super) fn fixtures(s: Service) -> Service {
    s.tool(
        "test_tool_with_progress",
        "Conformance: reports progress 0, 50 and 100 of 100 (when the request carries a progressToken), then completes.",
        no_args(),
        |round: Round| async move {
            for (step, message) in [(0.0, "started"), (50.0, "halfway"), (100.0, "done")] {
                round.progress(step, Some(100.0), Some(message));
                tokio::time::sleep(STEP).await;
            }
            Ok(ToolResult::text("Progress reported: 0, 50, 100 of 100."))
        },
    )
    .tool(
        "test_logging_tool",
        "Conformance: sends three info log messages (only when the request asked for a log level), then completes.",
        no_args(),
        |round: Round| three_log_messages(round, "test_logging_tool", STEP),
    )
    .tool(
        "test_tool_with_logging",
        "Conformance (2025-11-25): sends three info log messages about 50 ms apart (when the client \
         asked for a log level), then completes.",
        no_args(),
        |round: Round| three_log_messages(round, "test_tool_with_logging", LOG_STEP),
    )
    .tool(
        "test_streaming_elicitation",
        "Conformance: reports progress and logs (if asked), then asks the user's name by form elicitation \
         (key user_name) in an InputRequiredResult: the response stream carries notifications and the result, \
         never a request.",
        no_args(),
        |round: Round| async move {
            round.progress(1.0, Some(2.0), Some("asking for a name"));
            round.log(LogLevel::Info, json!("asking the user for a name"));
            let form = Form::new("What is your name?").string("name", "Name");
            match round.elicit("user_name", form)? {
                Elicited::Accepted(f) => {
                    round.progress(2.0, Some(2.0), Some("answered"));
                    Ok(ToolResult::text(format!(
                        "Hello, {}!",
                        f.str("name").unwrap_or_default()
                    )))
                }
                _ => Ok(ToolResult::text("No name given.")),
            }
        },
    )
}

/// The log fixture: "Tool execution started", "Tool processing data" and "Tool
/// execution completed" at info, `step` apart, from the logger `name` (the
/// messages of the suite's `tools-call-with-logging`).
async fn three_log_messages(
    round: Round,
    name: &'static str,
    step: Duration,
) -> Result<ToolResult, Flow> {
    for (i, message) in [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ]
    .into_iter()
    .enumerate()
    {
        if i > 0 {
            tokio::time::sleep(step).await;
        }
        round.log_from(LogLevel::Info, Some(name), json!(message));
    }
    Ok(ToolResult::text("Logged three messages."))
}
