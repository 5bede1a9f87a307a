//! Forms built from a type's JSON Schema (feature `schemars`).
//!
//! A form elicitation may only ask for a flat object of primitive fields
//! (`PrimitiveSchemaDefinition` in `schema.ts`): strings (with `minLength`,
//! `maxLength` and the formats `email`, `uri`, `date`, `date-time`), numbers and
//! integers (with `minimum`, `maximum`), booleans, and single-choice enums of
//! strings. [`Form::from_type`] reads the schema `schemars` derives for a struct
//! and builds the same [`Form`] one would write by hand, or refuses the type with
//! a [`FormTypeError`] naming the field and the reason. Refusing is deliberate:
//! a constraint the form cannot express (a `pattern`, a nested object, a list)
//! would otherwise be dropped without a word.
//!
//! ```
//! use mrtr::engine::Form;
//! use schemars::JsonSchema;
//!
//! #[derive(JsonSchema)]
//! #[allow(dead_code)]
//! struct Deploy {
//!     /// Where to deploy.
//!     env: Env,
//!     /// How many replicas.
//!     #[schemars(range(min = 1, max = 10))]
//!     replicas: u8,
//!     /// Why, for the audit log.
//!     reason: Option<String>,
//! }
//!
//! #[derive(JsonSchema)]
//! #[serde(rename_all = "lowercase")]
//! enum Env { Staging, Production }
//!
//! let form = Form::from_type::<Deploy>("Deploy where?").unwrap();
//! let schema = form.schema().to_value();
//! assert_eq!(schema["properties"]["env"]["enum"], serde_json::json!(["staging", "production"]));
//! assert_eq!(schema["properties"]["replicas"]["maximum"], 10);
//! assert_eq!(schema["required"], serde_json::json!(["env", "replicas"]));
//! ```
#![cfg(feature = "schemars")]
#![cfg_attr(docsrs, doc(cfg(feature = "schemars")))]

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

use super::Form;
use crate::wire::schema::{EnumOption, EnumStyle, PrimitiveSchema, StringFormat};

/// Why a type cannot be a form. Every variant names what the server's type
/// declared (field names, keywords, formats), never a client's value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormTypeError {
    /// The type is not a struct with named fields: its schema is not an object
    /// with `properties`.
    #[error("a form needs a struct with named fields, and this type's schema is not an object")]
    NotAnObject,
    /// The struct's schema uses a keyword at its top level that a form cannot
    /// express, such as `additionalProperties` from a flattened map or `allOf`.
    #[error("the type's schema uses \"{keyword}\", which a form cannot express")]
    UnsupportedRoot {
        /// The JSON Schema keyword.
        keyword: String,
    },
    /// A field is not a primitive: a nested struct, a list, a map, a union, a
    /// value of any type, or an enum whose variants are not plain strings.
    #[error(
        "field \"{field}\" is {kind}; a form holds only strings, numbers, integers, booleans and single-choice enums of strings"
    )]
    NotPrimitive {
        /// The field's name as sent on the wire.
        field: String,
        /// What it is instead, such as `a nested object`.
        kind: &'static str,
    },
    /// A field uses a JSON Schema keyword that a form cannot express, such as
    /// `pattern` or `exclusiveMinimum`.
    #[error("field \"{field}\" uses \"{keyword}\", which a form cannot express")]
    UnsupportedKeyword {
        /// The field's name as sent on the wire.
        field: String,
        /// The JSON Schema keyword.
        keyword: String,
    },
    /// A field has a `format` a form does not support (strings allow `email`,
    /// `uri`, `date` and `date-time`).
    #[error("field \"{field}\" has the format \"{format}\", which a form does not support")]
    UnsupportedFormat {
        /// The field's name as sent on the wire.
        field: String,
        /// The format.
        format: String,
    },
    /// A field's `default` does not fit its type (or is not one of its choices).
    #[error("field \"{field}\" has a default that does not fit its type")]
    BadDefault {
        /// The field's name as sent on the wire.
        field: String,
    },
}

impl Form {
    /// A form showing `message`, with one field per field of `T`, read from the
    /// JSON Schema `schemars` derives for `T` (for deserialization, so serde
    /// renames apply).
    ///
    /// `Option` fields and fields with a serde default are optional; all others are
    /// required. Titles and descriptions come from `schemars` (doc comments,
    /// `#[schemars(title = "…")]`); a unit-only enum becomes a single choice, with
    /// titles (`oneOf`) when its variants carry `#[schemars(title = "…")]`. Integer
    /// bounds are the ones `schemars` emits (`u8` gets 0 to 255, `u32` only 0, `i64`
    /// none); add `#[schemars(range(…))]` for tighter ones.
    ///
    /// # Errors
    /// A [`FormTypeError`] when `T` is not a struct with named fields, or a field
    /// cannot be a form field: a nested struct, a `Vec`, a map, a `pattern`, a
    /// format other than `email`, `uri`, `date` or `date-time`, and so on. The
    /// check is complete when this returns, so calling it once in a test proves the
    /// type for good.
    pub fn from_type<T: JsonSchema>(message: impl Into<String>) -> Result<Form, FormTypeError> {
        let root = SchemaSettings::draft2020_12()
            .for_deserialize()
            .into_generator()
            .into_root_schema_for::<T>();
        form_from_schema(message.into(), root.as_value())
    }
}

/// Keywords that only annotate, which a form may drop without losing a constraint.
const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
];

fn form_from_schema(message: String, root: &Value) -> Result<Form, FormTypeError> {
    let o = root.as_object().ok_or(FormTypeError::NotAnObject)?;
    if o.get("type").and_then(Value::as_str) != Some("object") {
        return Err(FormTypeError::NotAnObject);
    }
    let properties = o
        .get("properties")
        .and_then(Value::as_object)
        .ok_or(FormTypeError::NotAnObject)?;
    for (k, v) in o {
        let allowed = match k.as_str() {
            "$schema" | "type" | "properties" | "required" | "$defs" | "title" | "description"
            | "examples" | "deprecated" | "$comment" => true,
            // `deny_unknown_fields`: the form sends only its own fields anyway.
            "additionalProperties" => v == &Value::Bool(false),
            _ => false,
        };
        if !allowed {
            return Err(FormTypeError::UnsupportedRoot { keyword: k.clone() });
        }
    }
    let required: Vec<&str> = o
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let defs = o.get("$defs").and_then(Value::as_object);
    let mut form = Form::new(message);
    for (name, raw) in properties {
        let schema = primitive(name, raw, defs)?;
        form = form.field(name.clone(), schema, required.contains(&name.as_str()));
    }
    Ok(form)
}

fn not_primitive(field: &str, kind: &'static str) -> FormTypeError {
    FormTypeError::NotPrimitive {
        field: field.to_owned(),
        kind,
    }
}

/// Resolves `$ref` into `$defs` and unwraps `Option` (`anyOf: [T, {type: null}]`
/// or `type: [T, "null"]`), so that what is left is one flat schema object whose
/// own keywords (a field's doc comment) override the referenced ones.
fn flatten(
    field: &str,
    raw: &Value,
    defs: Option<&Map<String, Value>>,
    depth: u8,
) -> Result<Map<String, Value>, FormTypeError> {
    let o = match raw {
        Value::Object(o) => o,
        Value::Bool(_) => return Err(not_primitive(field, "a value of any type")),
        _ => return Err(not_primitive(field, "not described by a schema")),
    };
    if depth > 4 {
        return Err(not_primitive(field, "a chain of references"));
    }
    let overlay = |base: Map<String, Value>, skip: &str| {
        let mut merged = base;
        for (k, v) in o {
            if k != skip {
                merged.insert(k.clone(), v.clone());
            }
        }
        merged
    };
    if let Some(r) = o.get("$ref") {
        let target = r
            .as_str()
            .and_then(|r| r.strip_prefix("#/$defs/"))
            .and_then(|name| defs?.get(name))
            .ok_or_else(|| not_primitive(field, "a reference outside the type's schema"))?;
        let base = flatten(field, target, defs, depth + 1)?;
        return Ok(overlay(base, "$ref"));
    }
    for key in ["anyOf", "oneOf"] {
        let Some(alternatives) = o.get(key).and_then(Value::as_array) else {
            continue;
        };
        let is_null = |v: &Value| v.get("type").and_then(Value::as_str) == Some("null");
        if alternatives.len() == 2 && alternatives.iter().any(is_null) {
            let inner = alternatives
                .iter()
                .find(|v| !is_null(v))
                .unwrap_or(&Value::Null);
            let base = flatten(field, inner, defs, depth + 1)?;
            return Ok(overlay(base, key));
        }
    }
    let mut flat = o.clone();
    if let Some(Value::Array(types)) = o.get("type") {
        let named: Vec<&str> = types
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .collect();
        match named.as_slice() {
            [one] => {
                flat.insert("type".into(), Value::String((*one).to_owned()));
            }
            _ => return Err(not_primitive(field, "a union of types")),
        }
        if let Some(Value::Array(values)) = flat.get_mut("enum") {
            values.retain(|v| !v.is_null());
        }
    }
    if flat.get("default") == Some(&Value::Null) {
        flat.remove("default");
    }
    Ok(flat)
}

/// One field's schema as a form property: a single choice, a string, a number
/// or a boolean, as its `type` says.
fn primitive(
    field: &str,
    raw: &Value,
    defs: Option<&Map<String, Value>>,
) -> Result<PrimitiveSchema, FormTypeError> {
    let s = flatten(field, raw, defs, 0)?;
    let k = Keywords { field, schema: &s };
    let (title, description) = (k.text("title"), k.text("description"));
    let ty = s.get("type").and_then(Value::as_str);
    if ty.is_none() || ty == Some("string") {
        if let Some(values) = s.get("enum") {
            k.only(&["type", "enum"])?;
            return single_select(field, values, None, title, description, s.get("default"));
        }
        if let Some(entries) = s.get("oneOf") {
            k.only(&["type", "oneOf"])?;
            return single_select(
                field,
                &Value::Null,
                Some(entries),
                title,
                description,
                s.get("default"),
            );
        }
    }
    match ty {
        Some("string") => string_property(&k, title, description),
        Some(t @ ("integer" | "number")) => number_property(&k, t == "integer", title, description),
        Some("boolean") => boolean_property(&k, title, description),
        Some("object") => Err(not_primitive(
            field,
            if s.contains_key("properties") {
                "a nested object"
            } else {
                "a map"
            },
        )),
        Some("array") => Err(not_primitive(field, "a list")),
        Some("null") => Err(not_primitive(field, "always null")),
        _ => Err(not_primitive(field, "not of one primitive type")),
    }
}

/// One field's flattened schema, read keyword by keyword: a reader that cannot
/// take a keyword's value fails naming the field and the keyword.
struct Keywords<'a> {
    field: &'a str,
    schema: &'a Map<String, Value>,
}

impl Keywords<'_> {
    /// A string annotation (`title`, `description`).
    fn text(&self, key: &str) -> Option<String> {
        self.schema
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    /// Fails on the first keyword neither in `allowed` nor an annotation.
    fn only(&self, allowed: &[&str]) -> Result<(), FormTypeError> {
        match self
            .schema
            .keys()
            .find(|k| !allowed.contains(&k.as_str()) && !ANNOTATIONS.contains(&k.as_str()))
        {
            Some(k) => Err(self.unsupported(k)),
            None => Ok(()),
        }
    }

    /// A numeric bound (`minimum`, `maximum`), if present.
    fn bound(&self, key: &str) -> Result<Option<f64>, FormTypeError> {
        match self.schema.get(key) {
            None => Ok(None),
            Some(v) => v.as_f64().map(Some).ok_or_else(|| self.unsupported(key)),
        }
    }

    /// A length bound (`minLength`, `maxLength`), if present.
    fn length(&self, key: &str) -> Result<Option<u64>, FormTypeError> {
        match self.schema.get(key) {
            None => Ok(None),
            Some(v) => v.as_u64().map(Some).ok_or_else(|| self.unsupported(key)),
        }
    }

    fn unsupported(&self, keyword: &str) -> FormTypeError {
        FormTypeError::UnsupportedKeyword {
            field: self.field.to_owned(),
            keyword: keyword.to_owned(),
        }
    }

    fn unsupported_format(&self, format: &Value) -> FormTypeError {
        FormTypeError::UnsupportedFormat {
            field: self.field.to_owned(),
            format: format.as_str().unwrap_or("?").to_owned(),
        }
    }

    fn bad_default(&self) -> FormTypeError {
        FormTypeError::BadDefault {
            field: self.field.to_owned(),
        }
    }
}

/// A string property: its length bounds, one of the spec's four formats, a
/// string default.
fn string_property(
    k: &Keywords<'_>,
    title: Option<String>,
    description: Option<String>,
) -> Result<PrimitiveSchema, FormTypeError> {
    k.only(&["type", "minLength", "maxLength", "format"])?;
    let format = match k.schema.get("format") {
        None => None,
        Some(f) => Some(match f.as_str() {
            Some("email") => StringFormat::Email,
            Some("uri") => StringFormat::Uri,
            Some("date") => StringFormat::Date,
            Some("date-time") => StringFormat::DateTime,
            _ => return Err(k.unsupported_format(f)),
        }),
    };
    let default = match k.schema.get("default") {
        None => None,
        Some(Value::String(d)) => Some(d.clone()),
        Some(_) => return Err(k.bad_default()),
    };
    Ok(PrimitiveSchema::String {
        title,
        description,
        min_length: k.length("minLength")?,
        max_length: k.length("maxLength")?,
        format,
        default,
    })
}

/// A number property (`integer` or `number`): its bounds, a format naming a Rust
/// width of the same kind, a numeric default.
fn number_property(
    k: &Keywords<'_>,
    integer: bool,
    title: Option<String>,
    description: Option<String>,
) -> Result<PrimitiveSchema, FormTypeError> {
    k.only(&["type", "minimum", "maximum", "format"])?;
    if let Some(f) = k.schema.get("format") {
        // schemars names the Rust width (`uint8`, `int64`, `double`); the
        // bounds it implies are the ones emitted as `minimum`/`maximum`.
        let known = match f.as_str() {
            Some(
                "int8" | "int16" | "int32" | "int64" | "int128" | "int" | "uint8" | "uint16"
                | "uint32" | "uint64" | "uint128" | "uint",
            ) => integer,
            Some("float" | "double") => !integer,
            _ => false,
        };
        if !known {
            return Err(k.unsupported_format(f));
        }
    }
    let default = match k.schema.get("default") {
        None => None,
        Some(d) => Some(d.as_f64().ok_or_else(|| k.bad_default())?),
    };
    Ok(PrimitiveSchema::Number {
        integer,
        title,
        description,
        minimum: k.bound("minimum")?,
        maximum: k.bound("maximum")?,
        default,
    })
}

/// A boolean property: nothing but a boolean default.
fn boolean_property(
    k: &Keywords<'_>,
    title: Option<String>,
    description: Option<String>,
) -> Result<PrimitiveSchema, FormTypeError> {
    k.only(&["type"])?;
    let default = match k.schema.get("default") {
        None => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err(k.bad_default()),
    };
    Ok(PrimitiveSchema::Boolean {
        title,
        description,
        default,
    })
}

/// A single choice from `enum: [strings]`, or from `oneOf: [{const, title?}]`.
fn single_select(
    field: &str,
    values: &Value,
    entries: Option<&Value>,
    title: Option<String>,
    description: Option<String>,
    default: Option<&Value>,
) -> Result<PrimitiveSchema, FormTypeError> {
    let not_strings = || not_primitive(field, "an enum whose variants are not plain strings");
    let (options, style) = match entries {
        None => {
            let values = values.as_array().ok_or_else(not_strings)?;
            let options = values
                .iter()
                .map(|v| {
                    let v = v.as_str().ok_or_else(not_strings)?;
                    Ok(EnumOption {
                        value: v.to_owned(),
                        title: v.to_owned(),
                    })
                })
                .collect::<Result<Vec<_>, FormTypeError>>()?;
            (options, EnumStyle::Untitled)
        }
        Some(entries) => {
            let entries = entries.as_array().ok_or_else(not_strings)?;
            let mut titled = false;
            let mut options = Vec::with_capacity(entries.len());
            for e in entries {
                let e = e.as_object().ok_or_else(not_strings)?;
                let allowed = |k: &str| {
                    matches!(
                        k,
                        "const" | "title" | "description" | "deprecated" | "$comment"
                    ) || (k == "type" && e.get("type").and_then(Value::as_str) == Some("string"))
                };
                let value = e.get("const").and_then(Value::as_str);
                let (Some(value), true) = (value, e.keys().all(|k| allowed(k))) else {
                    return Err(not_strings());
                };
                let option_title = e.get("title").and_then(Value::as_str);
                titled |= option_title.is_some();
                options.push(EnumOption {
                    value: value.to_owned(),
                    title: option_title.unwrap_or(value).to_owned(),
                });
            }
            let style = if titled {
                EnumStyle::Titled
            } else {
                EnumStyle::Untitled
            };
            (options, style)
        }
    };
    if options.is_empty() {
        return Err(not_primitive(field, "an enum with no variants"));
    }
    let default = match default {
        None => None,
        Some(Value::String(d)) if options.iter().any(|o| &o.value == d) => Some(d.clone()),
        Some(_) => {
            return Err(FormTypeError::BadDefault {
                field: field.to_owned(),
            });
        }
    };
    Ok(PrimitiveSchema::SingleSelect {
        title,
        description,
        options,
        style,
        default,
    })
}

#[cfg(test)]
mod tests;
