//! The restricted JSON Schema of a form elicitation's `requestedSchema`.
//!
//! Only a flat object of primitive properties is allowed (`schema.ts`
//! `PrimitiveSchemaDefinition`: string, number/integer, boolean, and the enum
//! forms). Anything else, such as a nested object, is refused when parsed.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{WireError, type_name};

/// `requestedSchema`: `{ type: "object", properties, required? }`.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestedSchema {
    /// `$schema`, kept when present.
    pub schema_uri: Option<String>,
    /// The properties, in the order they were declared.
    pub properties: IndexMap<String, PrimitiveSchema>,
    /// The names of the required properties, if the field was present.
    pub required: Option<Vec<String>>,
}

/// `format` of a string property.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StringFormat {
    /// `email`.
    Email,
    /// `uri`.
    Uri,
    /// `date` (RFC 3339 full-date).
    Date,
    /// `date-time` (RFC 3339 date-time).
    DateTime,
}

impl StringFormat {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Email => "email",
            Self::Uri => "uri",
            Self::Date => "date",
            Self::DateTime => "date-time",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "email" => Self::Email,
            "uri" => Self::Uri,
            "date" => Self::Date,
            "date-time" => Self::DateTime,
            _ => return None,
        })
    }
}

/// One option of a titled enum (`{const, title}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnumOption {
    /// The value sent back.
    #[serde(rename = "const")]
    pub value: String,
    /// What the user sees.
    pub title: String,
}

/// One property of a `requestedSchema` (`PrimitiveSchemaDefinition`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum PrimitiveSchema {
    /// `StringSchema`.
    String {
        /// `title`.
        title: Option<String>,
        /// `description`.
        description: Option<String>,
        /// `minLength` (in characters).
        min_length: Option<u64>,
        /// `maxLength` (in characters).
        max_length: Option<u64>,
        /// `format`.
        format: Option<StringFormat>,
        /// `default`.
        default: Option<String>,
    },
    /// `NumberSchema` (`type: "number"` or `"integer"`).
    Number {
        /// `true` for `type: "integer"`.
        integer: bool,
        /// `title`.
        title: Option<String>,
        /// `description`.
        description: Option<String>,
        /// `minimum`.
        minimum: Option<f64>,
        /// `maximum`.
        maximum: Option<f64>,
        /// `default`.
        default: Option<f64>,
    },
    /// `BooleanSchema`.
    Boolean {
        /// `title`.
        title: Option<String>,
        /// `description`.
        description: Option<String>,
        /// `default`.
        default: Option<bool>,
    },
    /// A single-select enum: `enum` (untitled, optionally with the legacy
    /// `enumNames`) or `oneOf` of `{const, title}` (titled).
    SingleSelect {
        /// `title`.
        title: Option<String>,
        /// `description`.
        description: Option<String>,
        /// The options, in order.
        options: Vec<EnumOption>,
        /// How the options were written on the wire.
        style: EnumStyle,
        /// `default`.
        default: Option<String>,
    },
    /// A multi-select enum (`type: "array"`, `items.enum` or `items.anyOf`).
    MultiSelect {
        /// `title`.
        title: Option<String>,
        /// `description`.
        description: Option<String>,
        /// The options, in order.
        options: Vec<EnumOption>,
        /// `true` when written as `items.anyOf` with titles.
        titled: bool,
        /// `minItems`.
        min_items: Option<u64>,
        /// `maxItems`.
        max_items: Option<u64>,
        /// `default`.
        default: Option<Vec<String>>,
    },
}

/// How a single-select enum is written on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnumStyle {
    /// `enum: [...]` (titles equal the values).
    Untitled,
    /// `enum: [...]` with the legacy `enumNames: [...]`.
    LegacyNames,
    /// `oneOf: [{const, title}]`.
    Titled,
}

impl PrimitiveSchema {
    /// A plain string field.
    pub fn string() -> Self {
        Self::String {
            title: None,
            description: None,
            min_length: None,
            max_length: None,
            format: None,
            default: None,
        }
    }

    /// A number field (`integer` selects `type: "integer"`).
    pub fn number(integer: bool) -> Self {
        Self::Number {
            integer,
            title: None,
            description: None,
            minimum: None,
            maximum: None,
            default: None,
        }
    }

    /// A boolean field.
    pub fn boolean() -> Self {
        Self::Boolean {
            title: None,
            description: None,
            default: None,
        }
    }

    /// A single-select enum written as `enum: [...]`.
    pub fn one_of<I, S>(values: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let options = values
            .into_iter()
            .map(|v| {
                let v = v.into();
                EnumOption {
                    title: v.clone(),
                    value: v,
                }
            })
            .collect();
        Self::SingleSelect {
            title: None,
            description: None,
            options,
            style: EnumStyle::Untitled,
            default: None,
        }
    }

    /// The `title`, if any.
    pub fn title(&self) -> Option<&str> {
        match self {
            Self::String { title, .. }
            | Self::Number { title, .. }
            | Self::Boolean { title, .. }
            | Self::SingleSelect { title, .. }
            | Self::MultiSelect { title, .. } => title.as_deref(),
        }
    }

    /// The `description`, if any.
    pub fn description(&self) -> Option<&str> {
        match self {
            Self::String { description, .. }
            | Self::Number { description, .. }
            | Self::Boolean { description, .. }
            | Self::SingleSelect { description, .. }
            | Self::MultiSelect { description, .. } => description.as_deref(),
        }
    }

    /// Parses one property definition.
    ///
    /// # Errors
    /// When the value is not one of the primitive schema shapes.
    pub fn from_value(v: &Value) -> Result<Self, WireError> {
        let o = v
            .as_object()
            .ok_or_else(|| WireError::new("a requestedSchema property must be an object"))?;
        let title = opt_str(o, "title")?;
        let description = opt_str(o, "description")?;
        let ty = o.get("type").and_then(Value::as_str).ok_or_else(|| {
            WireError::new("a requestedSchema property needs a \"type\" of string, number, integer, boolean or array")
        })?;
        match ty {
            "string" => {
                if let Some(one_of) = o.get("oneOf") {
                    return Ok(Self::SingleSelect {
                        title,
                        description,
                        options: parse_titled(one_of, "oneOf")?,
                        style: EnumStyle::Titled,
                        default: opt_str(o, "default")?,
                    });
                }
                if let Some(values) = o.get("enum") {
                    let (options, style) = untitled_options(o, values)?;
                    return Ok(Self::SingleSelect {
                        title,
                        description,
                        options,
                        style,
                        default: opt_str(o, "default")?,
                    });
                }
                Self::string_from(o, title, description)
            }
            "number" | "integer" => Ok(Self::Number {
                integer: ty == "integer",
                title,
                description,
                minimum: opt_f64(o, "minimum")?,
                maximum: opt_f64(o, "maximum")?,
                default: opt_f64(o, "default")?,
            }),
            "boolean" => Ok(Self::Boolean {
                title,
                description,
                default: match o.get("default") {
                    None => None,
                    Some(Value::Bool(b)) => Some(*b),
                    Some(_) => return Err(WireError::new("a boolean default must be a boolean")),
                },
            }),
            "array" => Self::multi_select_from(o, title, description),
            "object" => Err(WireError::new(
                "requestedSchema properties must be primitive: nested objects are not allowed",
            )),
            _ => Err(WireError::new(
                "a requestedSchema property needs a \"type\" of string, number, integer, boolean or array",
            )),
        }
    }

    /// A plain string property: its length bounds, its format (one of the four
    /// the spec names) and its default.
    fn string_from(
        o: &Map<String, Value>,
        title: Option<String>,
        description: Option<String>,
    ) -> Result<Self, WireError> {
        let format = match opt_str(o, "format")? {
            None => None,
            Some(f) => Some(StringFormat::parse(&f).ok_or_else(|| {
                WireError::new("string format must be email, uri, date or date-time")
            })?),
        };
        Ok(Self::String {
            title,
            description,
            min_length: opt_u64(o, "minLength")?,
            max_length: opt_u64(o, "maxLength")?,
            format,
            default: opt_str(o, "default")?,
        })
    }

    /// A multi-select enum (`type: array`): its `items`, titled (`anyOf`) or
    /// untitled (`enum` of strings), its item-count bounds and default.
    fn multi_select_from(
        o: &Map<String, Value>,
        title: Option<String>,
        description: Option<String>,
    ) -> Result<Self, WireError> {
        let items = o
            .get("items")
            .and_then(Value::as_object)
            .ok_or_else(|| WireError::new("a multi-select enum needs an \"items\" object"))?;
        let (options, titled) = if let Some(any_of) = items.get("anyOf") {
            (parse_titled(any_of, "items.anyOf")?, true)
        } else if let Some(values) = items.get("enum") {
            if items.get("type").and_then(Value::as_str) != Some("string") {
                return Err(WireError::new("multi-select items must be of type string"));
            }
            let opts = string_list(values, "items.enum")?
                .into_iter()
                .map(|v| EnumOption {
                    title: v.clone(),
                    value: v,
                })
                .collect::<Vec<_>>();
            (opts, false)
        } else {
            return Err(WireError::new(
                "array properties are only allowed as multi-select enums",
            ));
        };
        if options.is_empty() {
            return Err(WireError::new("an enum needs at least one value"));
        }
        let default = match o.get("default") {
            None => None,
            Some(d) => Some(string_list(d, "default")?),
        };
        Ok(Self::MultiSelect {
            title,
            description,
            options,
            titled,
            min_items: opt_u64(o, "minItems")?,
            max_items: opt_u64(o, "maxItems")?,
            default,
        })
    }

    /// The JSON form of this property.
    pub fn to_value(&self) -> Value {
        let mut o = Map::new();
        match self {
            Self::String {
                title,
                description,
                min_length,
                max_length,
                format,
                default,
            } => {
                put_head(&mut o, "string", title, description);
                put(&mut o, "minLength", min_length.map(Value::from));
                put(&mut o, "maxLength", max_length.map(Value::from));
                put(&mut o, "format", format.map(|f| f.as_str().into()));
                put(&mut o, "default", default.clone().map(Value::String));
            }
            Self::Number {
                integer,
                title,
                description,
                minimum,
                maximum,
                default,
            } => {
                let ty = if *integer { "integer" } else { "number" };
                put_head(&mut o, ty, title, description);
                put(&mut o, "minimum", minimum.map(number_value));
                put(&mut o, "maximum", maximum.map(number_value));
                put(&mut o, "default", default.map(number_value));
            }
            Self::Boolean {
                title,
                description,
                default,
            } => {
                put_head(&mut o, "boolean", title, description);
                put(&mut o, "default", default.map(Value::Bool));
            }
            Self::SingleSelect {
                title,
                description,
                options,
                style,
                default,
            } => {
                put_head(&mut o, "string", title, description);
                match style {
                    EnumStyle::Titled => {
                        o.insert("oneOf".into(), titled_value(options));
                    }
                    EnumStyle::Untitled => {
                        o.insert("enum".into(), option_values(options));
                    }
                    EnumStyle::LegacyNames => {
                        o.insert("enum".into(), option_values(options));
                        o.insert("enumNames".into(), option_titles(options));
                    }
                }
                put(&mut o, "default", default.clone().map(Value::String));
            }
            Self::MultiSelect {
                title,
                description,
                options,
                titled,
                min_items,
                max_items,
                default,
            } => {
                put_head(&mut o, "array", title, description);
                put(&mut o, "minItems", min_items.map(Value::from));
                put(&mut o, "maxItems", max_items.map(Value::from));
                o.insert("items".into(), multi_select_items(options, *titled));
                let default = default
                    .as_ref()
                    .map(|d| d.iter().cloned().map(Value::String).collect());
                put(&mut o, "default", default);
            }
        }
        Value::Object(o)
    }
}

/// The options of an untitled single-select enum (`enum` of strings) and their
/// style: titled by a legacy `enumNames` (one name per value) when there is
/// one, else by their values.
fn untitled_options(
    o: &Map<String, Value>,
    values: &Value,
) -> Result<(Vec<EnumOption>, EnumStyle), WireError> {
    let values = string_list(values, "enum")?;
    let names = match o.get("enumNames") {
        Some(n) => Some(string_list(n, "enumNames")?),
        None => None,
    };
    if let Some(names) = &names
        && names.len() != values.len()
    {
        return Err(WireError::new(
            "enumNames must have one name per enum value",
        ));
    }
    let style = if names.is_some() {
        EnumStyle::LegacyNames
    } else {
        EnumStyle::Untitled
    };
    let options = values
        .iter()
        .enumerate()
        .map(|(i, v)| EnumOption {
            value: v.clone(),
            title: names.as_ref().map_or_else(|| v.clone(), |n| n[i].clone()),
        })
        .collect::<Vec<_>>();
    if options.is_empty() {
        return Err(WireError::new("an enum needs at least one value"));
    }
    Ok((options, style))
}

/// A property's `type`, then its `title` and `description` when present: the
/// keys every property starts with, in that order.
fn put_head(
    o: &mut Map<String, Value>,
    ty: &str,
    title: &Option<String>,
    description: &Option<String>,
) {
    o.insert("type".into(), ty.into());
    put(o, "title", title.clone().map(Value::String));
    put(o, "description", description.clone().map(Value::String));
}

/// Sets an optional keyword: an absent one is left out, never written as null.
fn put(o: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(v) = value {
        o.insert(key.into(), v);
    }
}

/// An untitled enum's values.
fn option_values(options: &[EnumOption]) -> Value {
    options
        .iter()
        .map(|x| Value::String(x.value.clone()))
        .collect()
}

/// A legacy enum's `enumNames`: its options' titles.
fn option_titles(options: &[EnumOption]) -> Value {
    options
        .iter()
        .map(|x| Value::String(x.title.clone()))
        .collect()
}

/// A multi-select's `items`: titled options (`anyOf`), or an `enum` of strings.
fn multi_select_items(options: &[EnumOption], titled: bool) -> Value {
    let mut items = Map::new();
    if titled {
        items.insert("anyOf".into(), titled_value(options));
    } else {
        items.insert("type".into(), "string".into());
        items.insert("enum".into(), option_values(options));
    }
    Value::Object(items)
}

/// A whole number stays an integer on the wire (`1`, not `1.0`).
pub(crate) fn number_value(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        #[allow(clippy::cast_possible_truncation)] // checked: integral and within i64 range
        return Value::from(v as i64);
    }
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}

fn titled_value(options: &[EnumOption]) -> Value {
    options
        .iter()
        .map(|x| serde_json::json!({"const": x.value, "title": x.title}))
        .collect()
}

fn opt_str(o: &Map<String, Value>, key: &str) -> Result<Option<String>, WireError> {
    match o.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => Err(WireError::new(format!(
            "{key} must be a string, not {}",
            type_name(v)
        ))),
    }
}

fn opt_u64(o: &Map<String, Value>, key: &str) -> Result<Option<u64>, WireError> {
    match o.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| WireError::new(format!("{key} must be a non-negative integer"))),
    }
}

fn opt_f64(o: &Map<String, Value>, key: &str) -> Result<Option<f64>, WireError> {
    match o.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_f64()
            .map(Some)
            .ok_or_else(|| WireError::new(format!("{key} must be a number"))),
    }
}

fn string_list(v: &Value, key: &str) -> Result<Vec<String>, WireError> {
    let arr = v
        .as_array()
        .ok_or_else(|| WireError::new(format!("{key} must be an array of strings")))?;
    arr.iter()
        .map(|x| {
            x.as_str()
                .map(str::to_owned)
                .ok_or_else(|| WireError::new(format!("{key} must be an array of strings")))
        })
        .collect()
}

fn parse_titled(v: &Value, key: &str) -> Result<Vec<EnumOption>, WireError> {
    let arr = v
        .as_array()
        .ok_or_else(|| WireError::new(format!("{key} must be an array of {{const, title}}")))?;
    arr.iter()
        .map(|x| {
            let o = x
                .as_object()
                .ok_or_else(|| WireError::new(format!("{key} entries must be objects")))?;
            let value = o.get("const").and_then(Value::as_str);
            let title = o.get("title").and_then(Value::as_str);
            match (value, title) {
                (Some(v), Some(t)) => Ok(EnumOption {
                    value: v.to_owned(),
                    title: t.to_owned(),
                }),
                _ => Err(WireError::new(format!(
                    "{key} entries need string const and title"
                ))),
            }
        })
        .collect()
}

impl RequestedSchema {
    /// An empty `{type: "object", properties: {}}`.
    pub fn new() -> Self {
        Self {
            schema_uri: None,
            properties: IndexMap::new(),
            required: None,
        }
    }

    /// Whether `name` is listed in `required`.
    pub fn is_required(&self, name: &str) -> bool {
        self.required
            .as_ref()
            .is_some_and(|r| r.iter().any(|n| n == name))
    }

    /// Parses a `requestedSchema` value.
    ///
    /// # Errors
    /// When it is not `{type: "object", properties: {...primitive...}}`, or
    /// `required` is not an array of strings. A `required` name with no matching
    /// property is kept (schema.ts allows it); answer validation reports it.
    pub fn from_value(v: &Value) -> Result<Self, WireError> {
        let o = v
            .as_object()
            .ok_or_else(|| WireError::new("requestedSchema must be an object"))?;
        if o.get("type").and_then(Value::as_str) != Some("object") {
            return Err(WireError::new("requestedSchema.type must be \"object\""));
        }
        let props = o
            .get("properties")
            .and_then(Value::as_object)
            .ok_or_else(|| WireError::new("requestedSchema.properties must be an object"))?;
        let mut properties = IndexMap::new();
        for (k, p) in props {
            properties.insert(k.clone(), PrimitiveSchema::from_value(p)?);
        }
        let required = match o.get("required") {
            None => None,
            Some(r) => Some(string_list(r, "requestedSchema.required")?),
        };
        let schema_uri = opt_str(o, "$schema")?;
        Ok(Self {
            schema_uri,
            properties,
            required,
        })
    }

    /// The JSON form.
    pub fn to_value(&self) -> Value {
        let mut o = Map::new();
        if let Some(s) = &self.schema_uri {
            o.insert("$schema".into(), s.clone().into());
        }
        o.insert("type".into(), "object".into());
        let props: Map<String, Value> = self
            .properties
            .iter()
            .map(|(k, p)| (k.clone(), p.to_value()))
            .collect();
        o.insert("properties".into(), Value::Object(props));
        if let Some(r) = &self.required {
            o.insert(
                "required".into(),
                r.iter().cloned().map(Value::String).collect(),
            );
        }
        Value::Object(o)
    }
}

impl Default for RequestedSchema {
    fn default() -> Self {
        Self::new()
    }
}

serde_via_value!(RequestedSchema, PrimitiveSchema);

/// One reason an answer does not fit its question. Shown to the user when the
/// question is asked again, so it names fields and rules, never the value given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswerProblem {
    /// The field at fault.
    pub field: String,
    /// What is wrong, for a person.
    pub message: String,
}

impl std::fmt::Display for AnswerProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_primitive_round_trips() {
        let props = [
            json!({"type":"string","title":"Email","format":"email","minLength":3,"maxLength":64,"default":"a@b.c"}),
            json!({"type":"integer","minimum":1,"maximum":10,"default":5}),
            json!({"type":"number","minimum":0.5}),
            json!({"type":"boolean","default":true,"description":"Agree?"}),
            json!({"type":"string","enum":["a","b"],"default":"a"}),
            json!({"type":"string","enum":["a","b"],"enumNames":["Alpha","Beta"]}),
            json!({"type":"string","oneOf":[{"const":"r","title":"Red"}]}),
            json!({"type":"array","items":{"type":"string","enum":["x","y"]},"minItems":1,"maxItems":2,"default":["x"]}),
            json!({"type":"array","items":{"anyOf":[{"const":"x","title":"Ex"}]}}),
        ];
        for p in props {
            let parsed = PrimitiveSchema::from_value(&p).unwrap();
            assert_eq!(parsed.to_value(), p);
        }
    }

    #[test]
    fn non_primitive_properties_are_refused() {
        for bad in [
            json!({"type":"object","properties":{}}),
            json!({"type":"array","items":{"type":"number"}}),
            json!({"type":"null"}),
            json!({"title":"no type"}),
            json!({"type":"string","enum":[]}),
            json!({"type":"string","enum":["a"],"enumNames":["A","B"]}),
            json!({"type":"string","format":"phone"}),
            json!("string"),
        ] {
            assert!(PrimitiveSchema::from_value(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn required_may_name_an_undefined_property() {
        let s = RequestedSchema::from_value(
            &json!({"type":"object","properties":{},"required":["ghost"]}),
        )
        .unwrap();
        assert!(s.is_required("ghost"));
        assert!(
            RequestedSchema::from_value(
                &json!({"type":"object","properties":{},"required":"ghost"})
            )
            .is_err()
        );
        assert!(
            RequestedSchema::from_value(&json!({"type":"object","properties":{},"required":[1]}))
                .is_err()
        );
    }

    #[test]
    fn builders_and_accessors() {
        assert_eq!(
            PrimitiveSchema::string().to_value(),
            json!({"type":"string"})
        );
        assert_eq!(
            PrimitiveSchema::number(true).to_value(),
            json!({"type":"integer"})
        );
        assert_eq!(
            PrimitiveSchema::number(false).to_value(),
            json!({"type":"number"})
        );
        assert_eq!(
            PrimitiveSchema::boolean().to_value(),
            json!({"type":"boolean"})
        );
        assert_eq!(
            PrimitiveSchema::one_of(["a", "b"]).to_value(),
            json!({"type":"string","enum":["a","b"]})
        );
        let p =
            PrimitiveSchema::from_value(&json!({"type":"boolean","title":"T","description":"D"}))
                .unwrap();
        assert_eq!((p.title(), p.description()), (Some("T"), Some("D")));
        assert_eq!(
            RequestedSchema::default().to_value(),
            json!({"type":"object","properties":{}})
        );
        assert_eq!(number_value(2.0), json!(2));
        assert_eq!(number_value(2.5), json!(2.5));
        assert_eq!(number_value(f64::NAN), Value::Null);
    }

    #[test]
    fn schema_requires_object_type_and_properties() {
        assert!(RequestedSchema::from_value(&json!({"type":"object"})).is_err());
        assert!(RequestedSchema::from_value(&json!({"type":"array","properties":{}})).is_err());
        let s = RequestedSchema::from_value(
            &json!({"type":"object","properties":{"n":{"type":"string"}},"required":["n"]}),
        )
        .unwrap();
        assert!(s.is_required("n"));
    }
}
