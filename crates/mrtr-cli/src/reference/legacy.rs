//! The fixtures of the conformance suite's 2025-11-25 server scenarios that the
//! 2026-07-28 revision drops (`tools-call-sampling`, `tools-call-elicitation`,
//! `elicitation-sep1034-defaults`, `elicitation-sep1330-enums`,
//! `resources-subscribe`, `resources-unsubscribe` and `server-sse-polling`; `tools-call-with-logging`'s
//! tool is in `streaming`). A 2025-11-25 client meets their questions as
//! `elicitation/create` and `sampling/createMessage` requests inside the call; a
//! 2026-07-28 client meets the same questions in an `InputRequiredResult` and
//! answers them on its retry. Names, schemas and texts are exactly what the
//! scenarios check.

use serde_json::{Value, json};

use mrtr::engine::{Elicited, Flow, Form, Round, Sampling};
use mrtr::error::{Retry, ToolAdvice};
use mrtr::service::Service;
use mrtr::wire::PrimitiveSchema;
use mrtr::{ResourceDefinition, ResourceResult, ToolResult};

use super::no_args;

/// The resource the `resources-subscribe` and `resources-unsubscribe` scenarios
/// subscribe to.
const WATCHED_URI: &str = "test://watched-resource";

/// The text of [`WATCHED_URI`].
const WATCHED_TEXT: &str = "The content of the watched resource.";

/// How long `test_reconnection` takes: longer than the one second the
/// conformance run gives a stream (`--sse-poll 1`), shorter than that second
/// plus the priming event's `retry` (a second), so the answer is in the log
/// when the client comes back for it.
const RECONNECTION_DELAY: std::time::Duration = std::time::Duration::from_millis(1500);

/// Registers the fixtures on `s`.
// structure: data table (one registration per conformance fixture)
pub(super) fn fixtures(s: Service) -> Service {
    s.tool(
        "test_sampling",
        "Conformance (2025-11-25): asks the client's model the given prompt (sampling/createMessage, \
         maxTokens 100) and returns its answer as \"LLM response: ...\".",
        one_string_argument("prompt", "The prompt to send to the LLM"),
        |r: Round| {
            let prompt = required_text(&r, "prompt")?;
            let answer = r.sample("llm_response", Sampling::prompt(prompt, 100))?;
            Ok(ToolResult::text(format!(
                "LLM response: {}",
                answer.map(|m| m.text()).unwrap_or_default()
            )))
        },
    )
    .tool(
        "test_elicitation",
        "Conformance (2025-11-25): asks the user, with the given message, for a username and an email \
         address (form elicitation) and returns the answer as \"User response: action=..., content={...}\".",
        one_string_argument("message", "The message to show the user"),
        |r: Round| {
            let message = required_text(&r, "message")?;
            let form = Form::new(message)
                .field(
                    "username",
                    raw(json!({"type": "string", "description": "User's response"})),
                    true,
                )
                .field(
                    "email",
                    raw(json!({"type": "string", "description": "User's email address"})),
                    true,
                );
            let answer = r.elicit("user_info", form)?;
            Ok(ToolResult::text(format!(
                "User response: {}",
                action_and_content(&answer)
            )))
        },
    )
    .tool(
        "test_elicitation_sep1034_defaults",
        "Conformance (SEP-1034): a form whose string, integer, number, enum and boolean fields carry \
         defaults; returns the answer as \"Elicitation completed: action=..., content={...}\".",
        no_args(),
        |r: Round| {
            let answer = r.elicit("defaults", defaults_form())?;
            Ok(ToolResult::text(format!(
                "Elicitation completed: {}",
                action_and_content(&answer)
            )))
        },
    )
    .tool(
        "test_elicitation_sep1330_enums",
        "Conformance (SEP-1330): a form with the five enum kinds (untitled and titled single-select, \
         legacy enumNames, untitled and titled multi-select); returns the answer as \
         \"Elicitation completed: action=..., content={...}\".",
        no_args(),
        |r: Round| {
            let answer = r.elicit("enums", enums_form())?;
            Ok(ToolResult::text(format!(
                "Elicitation completed: {}",
                action_and_content(&answer)
            )))
        },
    )
    .tool(
        "test_reconnection",
        "Conformance (SEP-1699): takes a while (RECONNECTION_DELAY) before it answers, longer than \
         `mrtr serve --sse-poll 1` keeps a 2025-era request's stream open: the client resumes the \
         stream with Last-Event-ID and gets the answer there.",
        no_args(),
        |_: Round| async {
            tokio::time::sleep(RECONNECTION_DELAY).await;
            Ok(ToolResult::text("Reconnection test completed"))
        },
    )
    .resource(
        ResourceDefinition::new(WATCHED_URI, "watched-resource")
            .description("Conformance: a resource that clients subscribe to and unsubscribe from.")
            .mime_type("text/plain"),
        |_| {
            Ok(ResourceResult::text(
                WATCHED_URI,
                "text/plain",
                WATCHED_TEXT,
            ))
        },
    )
}

/// An input schema of one required string argument.
fn one_string_argument(name: &str, description: &str) -> Value {
    json!({
        "type": "object",
        "properties": {name: {"type": "string", "description": description}},
        "required": [name],
    })
}

/// The string argument `name`, or a tool error when it is missing or empty.
fn required_text(r: &Round, name: &str) -> Result<String, Flow> {
    match r.argument(name).and_then(Value::as_str) {
        Some(text) if !text.is_empty() => Ok(text.to_owned()),
        _ => Err(Flow::failed(
            ToolAdvice::new(
                format!("The \"{name}\" argument is missing"),
                Retry::DoesNotHelp,
            )
            .input(name)
            .instead(format!("Call again with a non-empty string \"{name}\"")),
        )),
    }
}

/// A property written as the scenario writes it, through the core's own parser.
pub(super) fn raw(schema: Value) -> PrimitiveSchema {
    PrimitiveSchema::from_value(&schema).expect("a fixture's schema is a valid primitive schema")
}

/// `action=<accept|decline|cancel>, content=<the answered fields as JSON>`:
/// the content is `{}` unless the user accepted.
fn action_and_content(answer: &Elicited) -> String {
    let (action, content) = match answer {
        Elicited::Accepted(f) => ("accept", Value::Object(f.as_map().clone())),
        Elicited::Declined => ("decline", json!({})),
        // Cancelled; an unavailable ask is never seen here (the forms are required).
        _ => ("cancel", json!({})),
    };
    format!("action={action}, content={content}")
}

/// SEP-1034: a default for each primitive type, none of them required.
fn defaults_form() -> Form {
    Form::new("Please review and update the form fields with defaults")
        .field(
            "name",
            raw(json!({"type": "string", "title": "Name", "default": "John Doe"})),
            false,
        )
        .field(
            "age",
            raw(json!({"type": "integer", "title": "Age", "default": 30})),
            false,
        )
        .field(
            "score",
            raw(json!({"type": "number", "title": "Score", "default": 95.5})),
            false,
        )
        .field(
            "status",
            raw(json!({"type": "string", "title": "Status",
                        "enum": ["active", "inactive", "pending"], "default": "active"})),
            false,
        )
        .field(
            "verified",
            raw(json!({"type": "boolean", "title": "Verified", "default": true})),
            false,
        )
}

/// SEP-1330: the five enum kinds, none of them required.
fn enums_form() -> Form {
    Form::new("Please choose from the enum fields")
        .field(
            "untitledSingle",
            raw(json!({"type": "string", "title": "Untitled single-select",
                        "enum": ["option1", "option2", "option3"]})),
            false,
        )
        .field(
            "titledSingle",
            raw(
                json!({"type": "string", "title": "Titled single-select", "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"},
                ]}),
            ),
            false,
        )
        .field(
            "legacyEnum",
            raw(json!({"type": "string", "title": "Legacy titled enum",
                        "enum": ["opt1", "opt2", "opt3"],
                        "enumNames": ["Option One", "Option Two", "Option Three"]})),
            false,
        )
        .field(
            "untitledMulti",
            raw(json!({"type": "array", "title": "Untitled multi-select",
                        "items": {"type": "string", "enum": ["option1", "option2", "option3"]}})),
            false,
        )
        .field(
            "titledMulti",
            raw(
                json!({"type": "array", "title": "Titled multi-select", "items": {"anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]}}),
            ),
            false,
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The properties of `form` as they go on the wire.
    fn properties(form: &Form) -> Value {
        form.to_request().to_value()["params"]["requestedSchema"]["properties"].clone()
    }

    #[test]
    fn the_defaults_form_carries_each_default_with_its_type() {
        let p = properties(&defaults_form());
        assert_eq!(p["name"]["type"], "string");
        assert_eq!(p["name"]["default"], "John Doe");
        assert_eq!(p["age"]["type"], "integer");
        assert_eq!(p["age"]["default"], 30);
        assert!(p["age"]["default"].is_i64(), "30, not 30.0");
        assert_eq!(p["score"]["type"], "number");
        assert_eq!(p["score"]["default"], 95.5);
        assert_eq!(
            p["status"]["enum"],
            json!(["active", "inactive", "pending"])
        );
        assert_eq!(p["status"]["default"], "active");
        assert_eq!(p["verified"]["default"], true);
    }

    #[test]
    fn the_enums_form_writes_each_kind_in_its_own_shape() {
        let p = properties(&enums_form());
        assert!(p["untitledSingle"].get("oneOf").is_none());
        assert!(p["untitledSingle"].get("enumNames").is_none());
        assert_eq!(
            p["titledSingle"]["oneOf"][2],
            json!({"const": "value3", "title": "Third Option"})
        );
        assert!(p["titledSingle"].get("enum").is_none());
        assert_eq!(
            p["legacyEnum"]["enumNames"],
            json!(["Option One", "Option Two", "Option Three"])
        );
        assert_eq!(
            p["untitledMulti"]["items"],
            json!({"type": "string", "enum": ["option1", "option2", "option3"]})
        );
        assert_eq!(p["titledMulti"]["type"], "array");
        assert_eq!(
            p["titledMulti"]["items"]["anyOf"][0]["title"],
            "First Choice"
        );
        assert!(p["titledMulti"]["items"].get("enum").is_none());
    }

    #[test]
    fn an_answer_reads_as_action_and_content() {
        assert_eq!(
            action_and_content(&Elicited::Declined),
            "action=decline, content={}"
        );
        assert_eq!(
            action_and_content(&Elicited::Cancelled),
            "action=cancel, content={}"
        );
    }
}
