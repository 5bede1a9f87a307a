//! The client under test for the MCP conformance suite's MRTR client scenario.
//!
//! ```text
//! conformance client --command "target/debug/examples/conformance_client" \
//!     --scenario sep-2322-client-request-state
//! ```
//!
//! The harness appends its mock server's URL as the last argument and names the
//! scenario in `MCP_CONFORMANCE_SCENARIO`. For `sep-2322-client-request-state`
//! this client, built on `mrtr::client`:
//! 1. calls `test_mrtr_echo_state` in manual mode and stops at its
//!    `InputRequiredResult`; makes an unrelated call (`test_mrtr_unrelated`)
//!    while that flow is pending, which must carry none of its state; then
//!    answers and resumes the flow (fresh id, verbatim `requestState`);
//! 2. drives `test_mrtr_no_state` to completion (the retry carries no `requestState`);
//! 3. calls `test_mrtr_no_result_type` once (no `resultType` means complete).
//!
//! Exit status 0 when every flow completed, 1 otherwise (the reason on stderr).

use std::process::ExitCode;

use mrtr::wire::{ElicitAction, ElicitParams, ElicitResult, JsonObject, PrimitiveSchema};
use mrtr_client::{CarrierCall, Client, ClientError, FlowError, Handlers, HttpTransport, Step};
use serde_json::{Value, json};

const SCENARIO: &str = "sep-2322-client-request-state";

#[tokio::main]
async fn main() -> ExitCode {
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: conformance_client <server-url>");
        return ExitCode::from(2);
    };
    let scenario =
        std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_else(|_| SCENARIO.to_owned());
    if scenario != SCENARIO {
        eprintln!("conformance_client: unsupported scenario {scenario:?} (only {SCENARIO})");
        return ExitCode::FAILURE;
    }
    match run(&url).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance_client: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(url: &str) -> Result<(), ClientError> {
    let transport = HttpTransport::new(url)?;
    let handlers = Handlers::new().on_elicit(|_ctx, params| async move { Ok(accept(&params)) });
    let client = Client::builder(transport)
        .with_handler(handlers)
        .with_client_info("mrtr-conformance-client", env!("CARGO_PKG_VERSION"))
        .build();

    // 1. A pending flow, an unrelated call in between, then the retry.
    match client
        .start(CarrierCall::tool("test_mrtr_echo_state", json!({})))
        .await?
    {
        Step::NeedsInput(pending) => {
            let unrelated = client.call_tool("test_mrtr_unrelated", json!({})).await?;
            eprintln!("test_mrtr_unrelated: {} round(s)", unrelated.rounds);
            let answers = client.fulfil(&pending).await?;
            let done = client.resume_to_completion(pending, answers).await?;
            eprintln!(
                "test_mrtr_echo_state: complete after {} round(s)",
                done.rounds
            );
        }
        Step::Complete(c) => eprintln!(
            "test_mrtr_echo_state: complete at once ({} round)",
            c.rounds
        ),
        // `Step` may grow; a step this client does not know fails the scenario.
        _ => {
            return Err(ClientError::Flow(FlowError::Malformed(
                "test_mrtr_echo_state: a step this client does not know".into(),
            )));
        }
    }

    // 2. No state issued: the retry must not carry one.
    let done = client.call_tool("test_mrtr_no_state", json!({})).await?;
    eprintln!(
        "test_mrtr_no_state: complete after {} round(s)",
        done.rounds
    );

    // 3. No resultType: complete, never retried.
    let done = client
        .call_tool("test_mrtr_no_result_type", json!({}))
        .await?;
    eprintln!(
        "test_mrtr_no_result_type: complete after {} round(s)",
        done.rounds
    );
    Ok(())
}

/// Accepts any elicitation: a form gets each field's default, or `true`, `0`,
/// `""`, the first option; a URL gets consent.
fn accept(params: &ElicitParams) -> ElicitResult {
    let ElicitParams::Form(form) = params else {
        return ElicitResult {
            action: ElicitAction::Accept,
            content: None,
        };
    };
    let mut content = JsonObject::new();
    for (name, field) in &form.requested_schema.properties {
        let value = match field {
            PrimitiveSchema::Boolean { default, .. } => Value::Bool(default.unwrap_or(true)),
            PrimitiveSchema::String { default, .. } => {
                Value::String(default.clone().unwrap_or_default())
            }
            PrimitiveSchema::Number { default, .. } => json!(default.unwrap_or(0.0) as i64),
            PrimitiveSchema::SingleSelect {
                default, options, ..
            } => Value::String(
                default
                    .clone()
                    .or_else(|| options.first().map(|o| o.value.clone()))
                    .unwrap_or_default(),
            ),
            PrimitiveSchema::MultiSelect { default, .. } => {
                json!(default.clone().unwrap_or_default())
            }
            _ => continue,
        };
        content.insert(name.clone(), value);
    }
    ElicitResult {
        action: ElicitAction::Accept,
        content: Some(content),
    }
}
