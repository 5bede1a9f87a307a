//! Unit tests of `form_type`.

use std::collections::{BTreeSet, HashMap};

use schemars::JsonSchema;
use serde_json::json;

use super::*;
use crate::wire::RequestedSchema;

#[derive(JsonSchema)]
#[allow(dead_code)] // only the schema matters
struct Signup {
    /// Your name.
    name: String,
    #[schemars(title = "Age", range(min = 13, max = 130))]
    age: u8,
    /// Contact address.
    #[schemars(email, length(min = 3, max = 254))]
    email: String,
    #[schemars(url)]
    homepage: Option<String>,
    height_m: f64,
    visits: u32,
    balance: i64,
    newsletter: bool,
    plan: Plan,
    /// Preferred colour.
    colour: Option<Colour>,
    #[serde(default = "default_team", rename = "teamName")]
    team: String,
}

fn default_team() -> String {
    "blue".into()
}

#[derive(JsonSchema)]
#[allow(dead_code)]
#[serde(rename_all = "lowercase")]
enum Plan {
    Free,
    Pro,
}

#[derive(JsonSchema)]
#[allow(dead_code)]
enum Colour {
    #[schemars(title = "Red")]
    R,
    #[schemars(title = "Green")]
    G,
}

fn hand_built() -> Form {
    let described = |mut s: PrimitiveSchema, d: &str| {
        if let PrimitiveSchema::String { description, .. }
        | PrimitiveSchema::SingleSelect { description, .. } = &mut s
        {
            *description = Some(d.to_owned());
        }
        s
    };
    Form::new("Sign up")
        .field(
            "name",
            described(PrimitiveSchema::string(), "Your name."),
            true,
        )
        .integer("age", "Age", Some(13), Some(130))
        .field(
            "email",
            PrimitiveSchema::String {
                title: None,
                description: Some("Contact address.".into()),
                min_length: Some(3),
                max_length: Some(254),
                format: Some(StringFormat::Email),
                default: None,
            },
            true,
        )
        .field(
            "homepage",
            PrimitiveSchema::String {
                title: None,
                description: None,
                min_length: None,
                max_length: None,
                format: Some(StringFormat::Uri),
                default: None,
            },
            false,
        )
        .field("height_m", PrimitiveSchema::number(false), true)
        .field(
            "visits",
            PrimitiveSchema::Number {
                integer: true,
                title: None,
                description: None,
                minimum: Some(0.0),
                maximum: None,
                default: None,
            },
            true,
        )
        .field("balance", PrimitiveSchema::number(true), true)
        .field("newsletter", PrimitiveSchema::boolean(), true)
        .one_of("plan", ["free", "pro"])
        .field(
            "colour",
            PrimitiveSchema::SingleSelect {
                title: None,
                description: Some("Preferred colour.".into()),
                options: vec![
                    EnumOption {
                        value: "R".into(),
                        title: "Red".into(),
                    },
                    EnumOption {
                        value: "G".into(),
                        title: "Green".into(),
                    },
                ],
                style: EnumStyle::Titled,
                default: None,
            },
            false,
        )
        .field(
            "teamName",
            PrimitiveSchema::String {
                title: None,
                description: None,
                min_length: None,
                max_length: None,
                format: None,
                default: Some("blue".into()),
            },
            false,
        )
}

#[test]
fn derived_form_equals_hand_built() {
    let derived = Form::from_type::<Signup>("Sign up").unwrap();
    let hand = hand_built();
    assert_eq!(
        derived.to_request().to_value(),
        hand.to_request().to_value()
    );
    assert_eq!(derived, hand);
    // And it is a valid requestedSchema.
    let schema = derived.schema().to_value();
    assert!(RequestedSchema::from_value(&schema).is_ok());
    assert_eq!(
        schema["required"],
        json!([
            "name",
            "age",
            "email",
            "height_m",
            "visits",
            "balance",
            "newsletter",
            "plan"
        ])
    );
    assert_eq!(
        schema["properties"]["plan"],
        json!({"type": "string", "enum": ["free", "pro"]})
    );
    assert_eq!(
        schema["properties"]["colour"]["oneOf"],
        json!([{"const": "R", "title": "Red"}, {"const": "G", "title": "Green"}])
    );
}

#[derive(JsonSchema)]
#[allow(dead_code)]
struct Optional {
    a: Option<String>,
    b: Option<u8>,
    c: Option<bool>,
    d: Option<Plan>,
    e: String,
}

#[test]
fn option_fields_are_optional() {
    let form = Form::from_type::<Optional>("m").unwrap();
    let s = form.schema();
    assert_eq!(s.required.as_deref(), Some(&["e".to_owned()][..]));
    for name in ["a", "b", "c", "d"] {
        assert!(!s.is_required(name), "{name}");
    }
    assert_eq!(
        s.to_value()["properties"],
        json!({
            "a": {"type": "string"},
            "b": {"type": "integer", "minimum": 0, "maximum": 255},
            "c": {"type": "boolean"},
            "d": {"type": "string", "enum": ["free", "pro"]},
            "e": {"type": "string"},
        })
    );
}

#[derive(JsonSchema)]
#[allow(dead_code)]
struct Nested {
    ok: String,
    address: Address,
}

#[derive(JsonSchema)]
#[allow(dead_code)]
struct Address {
    street: String,
}

#[derive(JsonSchema)]
#[allow(dead_code)]
struct WithVec {
    ok: bool,
    tags: Vec<String>,
}

#[derive(JsonSchema)]
#[allow(dead_code)]
struct WithMap {
    labels: HashMap<String, String>,
}

#[derive(JsonSchema)]
#[allow(dead_code)]
struct WithSet {
    plans: BTreeSet<Plan>,
}

#[test]
fn non_primitive_fields_are_refused_by_name() {
    let cases = [
        (Form::from_type::<Nested>("m"), "address", "a nested object"),
        (Form::from_type::<WithVec>("m"), "tags", "a list"),
        (Form::from_type::<WithMap>("m"), "labels", "a map"),
        (Form::from_type::<WithSet>("m"), "plans", "a list"),
    ];
    for (result, field, kind) in cases {
        let e = result.unwrap_err();
        assert_eq!(
            e,
            FormTypeError::NotPrimitive {
                field: field.into(),
                kind
            }
        );
        assert!(
            e.to_string()
                .contains(&format!("field \"{field}\" is {kind}")),
            "{e}"
        );
    }
}

#[derive(JsonSchema)]
#[allow(dead_code)]
struct WithPattern {
    #[schemars(regex(pattern = r"^[a-z]+$"))]
    slug: String,
}

#[derive(JsonSchema)]
#[allow(dead_code)]
struct WithAny {
    extra: serde_json::Value,
}

#[derive(JsonSchema)]
#[allow(dead_code)]
enum DataEnum {
    Unit,
    Data { x: u8 },
}

#[derive(JsonSchema)]
#[allow(dead_code)]
struct WithDataEnum {
    choice: DataEnum,
}

#[derive(JsonSchema)]
#[allow(dead_code)]
struct WithUnit {
    nothing: (),
}

#[test]
fn inexpressible_fields_are_refused() {
    assert_eq!(
        Form::from_type::<WithPattern>("m").unwrap_err(),
        FormTypeError::UnsupportedKeyword {
            field: "slug".into(),
            keyword: "pattern".into()
        }
    );
    assert_eq!(
        Form::from_type::<WithAny>("m").unwrap_err(),
        FormTypeError::NotPrimitive {
            field: "extra".into(),
            kind: "a value of any type"
        }
    );
    assert!(matches!(
        Form::from_type::<WithDataEnum>("m").unwrap_err(),
        FormTypeError::NotPrimitive { field, .. } if field == "choice"
    ));
    assert!(matches!(
        Form::from_type::<WithUnit>("m").unwrap_err(),
        FormTypeError::NotPrimitive { field, kind: "always null" } if field == "nothing"
    ));
}

#[derive(JsonSchema)]
#[allow(dead_code)]
enum Documented {
    /// The first.
    First,
    /// The second.
    Second,
}

#[derive(JsonSchema)]
#[allow(dead_code)]
struct WithDocumented {
    pick: Documented,
}

#[test]
fn documented_variants_without_titles_stay_a_plain_enum() {
    let form = Form::from_type::<WithDocumented>("m").unwrap();
    assert_eq!(form, Form::new("m").one_of("pick", ["First", "Second"]));
}

#[test]
fn non_struct_roots_are_refused() {
    assert_eq!(
        Form::from_type::<Plan>("m").unwrap_err(),
        FormTypeError::NotAnObject
    );
    assert_eq!(
        Form::from_type::<String>("m").unwrap_err(),
        FormTypeError::NotAnObject
    );
    assert_eq!(
        Form::from_type::<Vec<u8>>("m").unwrap_err(),
        FormTypeError::NotAnObject
    );
    assert_eq!(
        Form::from_type::<HashMap<String, u8>>("m").unwrap_err(),
        FormTypeError::NotAnObject
    );
}

#[derive(JsonSchema)]
#[allow(dead_code)]
struct Flattened {
    a: String,
    #[serde(flatten)]
    rest: HashMap<String, String>,
}

#[derive(JsonSchema)]
#[allow(dead_code)]
#[serde(deny_unknown_fields)]
struct Strict {
    a: String,
}

#[derive(JsonSchema, Default)]
#[allow(dead_code)]
#[serde(default)]
struct Defaults {
    retries: u8,
    verbose: bool,
    label: String,
}

#[test]
fn container_default_makes_fields_optional_with_defaults() {
    let form = Form::from_type::<Defaults>("m").unwrap();
    assert_eq!(
        form.schema().to_value(),
        json!({"type": "object", "properties": {
            "retries": {"type": "integer", "minimum": 0, "maximum": 255, "default": 0},
            "verbose": {"type": "boolean", "default": false},
            "label": {"type": "string", "default": ""},
        }})
    );
}

#[test]
fn root_keywords() {
    assert_eq!(
        Form::from_type::<Flattened>("m").unwrap_err(),
        FormTypeError::UnsupportedRoot {
            keyword: "additionalProperties".into()
        }
    );
    let strict = Form::from_type::<Strict>("m").unwrap();
    assert_eq!(
        strict,
        Form::new("m").field("a", PrimitiveSchema::string(), true)
    );
}

#[test]
fn schema_level_checks() {
    let f = |props: Value| {
        form_from_schema("m".into(), &json!({"type": "object", "properties": props}))
    };
    let e = f(json!({"id": {"type": "string", "format": "uuid"}})).unwrap_err();
    assert_eq!(
        e,
        FormTypeError::UnsupportedFormat {
            field: "id".into(),
            format: "uuid".into()
        }
    );
    assert_eq!(
        e.to_string(),
        "field \"id\" has the format \"uuid\", which a form does not support"
    );
    assert!(matches!(
        f(json!({"n": {"type": "number", "format": "int32"}})),
        Err(FormTypeError::UnsupportedFormat { .. })
    ));
    assert!(matches!(
        f(json!({"n": {"type": "integer", "exclusiveMinimum": 0}})),
        Err(FormTypeError::UnsupportedKeyword { keyword, .. }) if keyword == "exclusiveMinimum"
    ));
    assert!(matches!(
        f(json!({"n": {"type": ["integer", "string"]}})),
        Err(FormTypeError::NotPrimitive {
            kind: "a union of types",
            ..
        })
    ));
    assert!(matches!(
        f(json!({"n": {"$ref": "https://example.com/s.json"}})),
        Err(FormTypeError::NotPrimitive {
            kind: "a reference outside the type's schema",
            ..
        })
    ));
    assert!(matches!(
        f(json!({"n": {"type": "string", "enum": ["a"], "default": "b"}})),
        Err(FormTypeError::BadDefault { .. })
    ));
    assert!(matches!(
        f(json!({"n": {"type": "boolean", "default": "yes"}})),
        Err(FormTypeError::BadDefault { .. })
    ));
    assert!(matches!(
        f(json!({"n": {"type": "string", "enum": []}})),
        Err(FormTypeError::NotPrimitive {
            kind: "an enum with no variants",
            ..
        })
    ));
    // Nullable enum written inline, and a null default, as schemars may emit them.
    let form = f(json!({"n": {"type": ["string", "null"], "enum": ["a", null], "default": null}}))
        .unwrap();
    assert_eq!(
        form.schema().to_value()["properties"]["n"],
        json!({"type": "string", "enum": ["a"]})
    );
    assert_eq!(
        form_from_schema("m".into(), &json!({"type": "object"})).unwrap_err(),
        FormTypeError::NotAnObject
    );
}
