//! Typed inputs: arguments and accepted form content decode into the handler's own
//! types. A mismatch names the field and the expected type, never the value, on the
//! channel the carrier allows: a tool error on `tools/call` (the model corrects its
//! call), -32602 on `prompts/get` and `resources/read`, and for form content a
//! fresh question with a note (the user corrects the answer).

use mrtr_testkit as common;

use common::*;
use mrtr::{Flow, Form, FormAnswer, Refusal, Round};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// A value the client sent that must never be echoed.
const SECRET: &str = "hunter2-secret-value";

#[derive(Debug, Deserialize)]
#[allow(dead_code)] // decoded to check the types, not read
struct Field<T> {
    field: T,
}

fn typed_tool<T: DeserializeOwned>(r: Round) -> Result<mrtr::ToolResult, Flow> {
    let _args: Field<T> = r.arguments()?;
    Ok(mrtr::ToolResult::text("ok"))
}

type Handler = fn(Round) -> Result<mrtr::ToolResult, Flow>;

/// One mismatch per primitive type, with what the text must name.
fn argument_cases() -> Vec<(&'static str, Value, Handler, &'static str)> {
    vec![
        ("string", json!(7_340_011), typed_tool::<String>, "a string"),
        (
            "bool",
            json!(SECRET),
            typed_tool::<bool>,
            "must be true or false",
        ),
        (
            "i64",
            json!(SECRET),
            typed_tool::<i64>,
            "must be a whole number from -9223372036854775808 to 9223372036854775807",
        ),
        (
            "u32",
            json!(-7_340_011),
            typed_tool::<u32>,
            "must be a whole number from 0 to 4294967295",
        ),
        (
            "u8",
            json!(7_340_011),
            typed_tool::<u8>,
            "must be a whole number from 0 to 255",
        ),
        ("f64", json!(SECRET), typed_tool::<f64>, "must be a number"),
        (
            "vec",
            json!(SECRET),
            typed_tool::<Vec<String>>,
            "must be a list",
        ),
        (
            "option",
            json!(SECRET),
            typed_tool::<Option<u16>>,
            "must be a whole number from 0 to 65535",
        ),
    ]
}

#[test]
fn argument_mismatches_are_tool_errors_naming_field_and_type_never_the_value() {
    let e = engine();
    for (name, value, handler, expected) in argument_cases() {
        let req = tool("t").args(json!({"field": value}));
        let (result, err) = tool_error(run(&e, &req, T0, handler));
        assert_eq!(result["isError"], true, "{name}");
        let t = text(&result);
        assert!(t.contains("\"field\""), "{name}: {t}");
        assert!(t.contains(expected), "{name}: expected {expected:?} in {t}");
        assert!(
            !t.contains(SECRET) && !t.contains("7340011"),
            "{name}: value echoed: {t}"
        );
        let detail = &err.diagnostic().detail;
        assert!(
            !detail.contains(SECRET) && !detail.contains("7340011"),
            "{name}: {detail}"
        );
    }
}

#[test]
fn a_missing_argument_is_named() {
    let e = engine();
    let (result, _) = tool_error(run(&e, &tool("t"), T0, typed_tool::<String>));
    let t = text(&result);
    assert!(t.contains("\"field\"") && t.contains("required"), "{t}");
}

#[test]
fn on_prompts_and_resources_a_mismatch_is_invalid_params() {
    let e = engine();
    // Prompt arguments are strings on the wire; a handler wanting a number there
    // gets one it cannot decode.
    let req = prompt("p").args(json!({"field": SECRET}));
    let err = protocol(run_text(&e, &req, T0, |r| {
        typed_tool::<u32>(r).map(|_| String::new())
    }));
    assert_eq!(err.code(), -32602);
    assert!(
        err.public_message().contains("\"field\""),
        "{}",
        err.public_message()
    );
    assert!(!err.public_message().contains(SECRET));
    // A resource read carries no arguments: a handler that needs one is told which.
    let err = protocol(run_text(&e, &resource("mrtr://r"), T0, |r| {
        typed_tool::<String>(r).map(|_| String::new())
    }));
    assert_eq!(err.code(), -32602);
    assert!(
        err.public_message().contains("\"field\""),
        "{}",
        err.public_message()
    );
}

#[test]
fn a_matching_call_decodes() {
    let e = engine();
    let done = complete(run(
        &e,
        &tool("t").args(json!({"field": 250})),
        T0,
        typed_tool::<u8>,
    ));
    assert_eq!(text(&done), "ok");
}

fn typed_form<T: DeserializeOwned + std::fmt::Debug>(
    form: Form,
) -> impl Fn(Round) -> Result<mrtr::ToolResult, Flow> {
    move |r: Round| match r.elicit_as::<Field<T>>("q", form.clone())? {
        FormAnswer::Accepted(f) => Ok(mrtr::ToolResult::text(format!("{:?}", f.field))),
        _ => Ok(mrtr::ToolResult::text("no")),
    }
}

#[test]
fn form_content_that_fits_the_form_but_not_the_type_is_asked_again_with_a_note() {
    // Each form accepts the answer (it validates against the schema that was sent),
    // but the handler's type cannot hold it: the question goes out again.
    type Boxed = Box<dyn Fn(Round) -> Result<mrtr::ToolResult, Flow>>;
    let cases: Vec<(&str, Value, Boxed, &str)> = vec![
        (
            "u8 from a number",
            json!(7_340_011),
            Box::new(typed_form::<u8>(
                Form::new("n?").number("field", "N", None, None),
            )),
            "a whole number from 0 to 255",
        ),
        (
            "i64 from a fraction",
            json!(0.5),
            Box::new(typed_form::<i64>(
                Form::new("n?").number("field", "N", None, None),
            )),
            "a whole number from -9223372036854775808",
        ),
        (
            "bool from a string",
            json!(SECRET),
            Box::new(typed_form::<bool>(Form::new("b?").string("field", "B"))),
            "true or false",
        ),
        (
            "f64 from a string",
            json!(SECRET),
            Box::new(typed_form::<f64>(Form::new("f?").string("field", "F"))),
            "must be a number",
        ),
        (
            "string from a boolean",
            json!(true),
            Box::new(typed_form::<String>(Form::new("s?").boolean("field", "S"))),
            "a string",
        ),
    ];
    let e = engine();
    for (name, value, handler, expected) in cases {
        let r1 = irr(run(&e, &tool("t"), T0, &handler));
        let r2 = irr(run(
            &e,
            &tool("t").reply(&r1, json!({"q": accept(json!({"field": value}))})),
            T0.add_secs(1),
            &handler,
        ));
        assert_eq!(keys(&r2), ["q"], "{name}: asked again");
        let m = message(&r2, "q");
        assert!(
            m.contains("\"field\"") && m.contains(expected),
            "{name}: {m}"
        );
        assert!(
            !m.contains(SECRET) && !m.contains("7340011"),
            "{name}: value echoed: {m}"
        );
    }
}

#[test]
fn form_content_that_fits_decodes() {
    let e = engine();
    let form = Form::new("n?").integer("field", "N", Some(0), Some(255));
    let h = typed_form::<u8>(form);
    let r1 = irr(run(&e, &tool("t"), T0, &h));
    let done = complete(run(
        &e,
        &tool("t").reply(&r1, json!({"q": accept(json!({"field": 200}))})),
        T0.add_secs(1),
        &h,
    ));
    assert_eq!(text(&done), "200");
}

#[derive(Debug, Deserialize)]
struct Nights {
    first: String,
    last: String,
}

/// Two nights from a form of dates, checked by the handler's own type.
#[derive(Debug, Deserialize)]
#[serde(try_from = "Nights")]
struct Stay(Nights);

/// What the handler's type says when the nights are the wrong way round.
const BACKWARDS: &str = "The first night must not come after the last.";

impl TryFrom<Nights> for Stay {
    type Error = Refusal;
    fn try_from(n: Nights) -> Result<Self, Refusal> {
        // Dates the form checked (YYYY-MM-DD) sort as text as they do as days.
        if n.first > n.last {
            return Err(Refusal::new(BACKWARDS));
        }
        Ok(Self(n))
    }
}

fn stay_handler(r: Round) -> Result<mrtr::ToolResult, Flow> {
    let form = Form::new("Which nights?")
        .date("first", "First night")
        .date("last", "Last night");
    match r.elicit_as::<Stay>("stay", form)? {
        FormAnswer::Accepted(Stay(n)) => {
            Ok(mrtr::ToolResult::text(format!("{} to {}", n.first, n.last)))
        }
        _ => Ok(mrtr::ToolResult::text("no")),
    }
}

#[test]
fn a_refusal_by_the_handlers_type_asks_again_with_the_handlers_text() {
    let e = engine();
    let r1 = irr(run(&e, &tool("t"), T0, stay_handler));
    let original = message(&r1, "stay");
    let backwards = json!({"first": "2026-08-09", "last": "2026-08-02"});
    let r2 = irr(run(
        &e,
        &tool("t").reply(&r1, json!({"stay": accept(backwards)})),
        T0.add_secs(1),
        stay_handler,
    ));
    assert_eq!(keys(&r2), ["stay"]);
    // The note is the handler's own text, as written, and nothing else.
    assert_eq!(message(&r2, "stay"), format!("{original}\n\n{BACKWARDS}"));
    let done = complete(run(
        &e,
        &tool("t").reply(
            &r2,
            json!({"stay": accept(json!({"first": "2026-08-02", "last": "2026-08-09"}))}),
        ),
        T0.add_secs(2),
        stay_handler,
    ));
    assert_eq!(text(&done), "2026-08-02 to 2026-08-09");
}

#[test]
fn a_refusal_of_the_arguments_is_the_tool_error_and_not_logged() {
    let e = engine();
    let req = tool("t").args(json!({"first": SECRET, "last": "2026-08-02"}));
    let (result, err) = tool_error(run(&e, &req, T0, |r: Round| {
        let _: Stay = r.arguments()?;
        Ok(mrtr::ToolResult::text("ok"))
    }));
    // The handler's text, then the engine's word on retrying.
    assert!(text(&result).starts_with(BACKWARDS), "{}", text(&result));
    assert!(!text(&result).contains(SECRET));
    let detail = &err.diagnostic().detail;
    assert!(
        !detail.contains(BACKWARDS) && !detail.contains(SECRET),
        "{detail}"
    );
}

#[cfg(feature = "schemars")]
mod derived {
    use super::*;
    use schemars::JsonSchema;

    #[derive(Debug, Deserialize, JsonSchema)]
    #[allow(dead_code)] // decoded, partly read
    struct Signup {
        /// Your name
        name: String,
        age: u8,
        newsletter: Option<bool>,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[allow(dead_code)] // refused before any decoding
    struct Nested {
        inner: Signup,
    }

    #[test]
    fn a_derived_form_asks_and_decodes() {
        let e = engine();
        let h = |r: Round| match r.ask::<Signup>("signup", "Sign up?")? {
            FormAnswer::Accepted(s) => Ok(mrtr::ToolResult::text(format!("{} {}", s.name, s.age))),
            _ => Ok(mrtr::ToolResult::text("no")),
        };
        let r1 = irr(run(&e, &tool("t"), T0, h));
        let schema = &request_json(&r1, "signup")["params"]["requestedSchema"];
        assert_eq!(schema["properties"]["age"]["type"], "integer");
        assert_eq!(schema["required"], json!(["name", "age"]));
        let done = complete(run(
            &e,
            &tool("t").reply(
                &r1,
                json!({"signup": accept(json!({"name": "Ada", "age": 36}))}),
            ),
            T0.add_secs(1),
            h,
        ));
        assert_eq!(text(&done), "Ada 36");
    }

    #[test]
    fn a_nested_type_is_refused_when_the_form_is_built_not_at_the_client() {
        assert!(Form::from_type::<Nested>("x").is_err());
        let e = engine();
        let err = protocol(run(&e, &tool("t"), T0, |r: Round| {
            let _ = r.ask::<Nested>("n", "Nested?")?;
            Ok(mrtr::ToolResult::text("unreachable"))
        }));
        assert_eq!(err.code(), -32603);
        assert!(
            err.diagnostic().detail.contains("inner"),
            "{}",
            err.diagnostic().detail
        );
    }
}
