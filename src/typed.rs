//! Decoding JSON into a handler's own serde type, with an error safe to show.
//!
//! A handler usually wants its arguments as a struct, not as loose JSON. [`decode`]
//! does that and, when the client sent something that does not fit, returns a
//! [`TypeMismatch`] that names the field and the type the server expected, and
//! never the value the client sent: arguments may hold secrets, and an error text
//! travels to the model, to logs and back to the client.
//!
//! The unit test `restart_example` shows both: a fitting value decoded, and a
//! mismatch named by field and expected type only.
//!
//! # Security
//! The text of a [`TypeMismatch`] is built only from the path of the failing
//! field and from serde's "expected …" clause, which comes from the server's own
//! type. The path's map keys come from the client, so each segment is cut to
//! [`MAX_SEGMENT_CHARS`] characters and stripped of control characters. An error
//! message serde cannot classify (a `Deserialize` impl's custom error, which may
//! quote the value) is reduced to "has an invalid value". The one exception is a
//! [`Refusal`], the handler's own reason for turning an answer down: its text is
//! the application's, written for its user, and is shown as written.

use std::cell::RefCell;
use std::fmt;

use serde::de::DeserializeOwned;
use serde_json::Value;

/// The most characters kept of one path segment (a map key or enum variant the
/// client sent); the rest is cut.
pub(crate) const MAX_SEGMENT_CHARS: usize = 64;

/// The most characters kept of an "expected …" clause.
const MAX_EXPECTED_CHARS: usize = 200;

/// The most characters kept of a [`Refusal`]'s text (its docs say the number).
const MAX_REFUSAL_CHARS: usize = 500;

thread_local! {
    /// While [`decode`] runs on this thread, the text of the last [`Refusal`]
    /// serde turned into an error (`Some(None)` until one is). serde keeps only an
    /// error's text, so this is how a refusal is told apart from any other custom
    /// error: only a `Refusal` writes here, and only the application makes one.
    static REFUSED: RefCell<Option<Option<String>>> = const { RefCell::new(None) };
}

/// An answer or argument the handler's own type turns down, with the reason its
/// user reads.
///
/// Make it the error of the `TryFrom` behind serde's `#[serde(try_from = "…")]`
/// (or pass it to `serde::de::Error::custom` in a `Deserialize` impl). When a form
/// answer for [`Round::elicit_as`](crate::Round::elicit_as) fails with it, the
/// question is asked again with this text as its note; when a tool's
/// [`Round::arguments`](crate::Round::arguments) fail with it, it is the tool
/// error the model reads. Any other custom error shows only as "has an invalid
/// value", since it may quote what the client sent.
///
/// The text reaches the user as written (without control characters other than
/// line breaks, cut to 500 characters), and is not logged: write
/// it for the user, and leave out what they sent if it may be secret.
///
/// ```
/// use mrtr::{Flow, Form, FormAnswer, Refusal, Round, ToolResult};
/// use serde::Deserialize;
///
/// #[derive(Deserialize)]
/// struct Days {
///     first: String,
///     last: String,
/// }
///
/// /// A stay: the form's two dates, the first not after the last.
/// #[derive(Deserialize)]
/// #[serde(try_from = "Days")]
/// struct Stay(Days);
///
/// impl TryFrom<Days> for Stay {
///     type Error = Refusal;
///     fn try_from(d: Days) -> Result<Self, Refusal> {
///         // The form checked both are dates (YYYY-MM-DD): as text they sort as days do.
///         if d.first > d.last {
///             return Err(Refusal::new("The first night must not come after the last."));
///         }
///         Ok(Stay(d))
///     }
/// }
///
/// fn book(round: Round) -> Result<ToolResult, Flow> {
///     let form = Form::new("Which nights?").date("first", "First night").date("last", "Last night");
///     match round.elicit_as::<Stay>("stay", form)? {
///         FormAnswer::Accepted(Stay(d)) => Ok(ToolResult::text(format!("Booked {} to {}.", d.first, d.last))),
///         _ => Ok(ToolResult::text("Nothing was booked.")),
///     }
/// }
/// # let _ = book;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    text: String,
}

impl Refusal {
    /// A refusal the user reads as `text`.
    pub fn new(text: impl Into<String>) -> Self {
        let text: String = text.into();
        Self {
            text: text
                .chars()
                .filter(|c| *c == '\n' || !c.is_control())
                .take(MAX_REFUSAL_CHARS)
                .collect(),
        }
    }

    /// The text the user reads.
    pub fn text(&self) -> &str {
        &self.text
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // serde writes the refusal into its error here: note the text for `decode`.
        REFUSED.with(|slot| {
            if let Ok(mut slot) = slot.try_borrow_mut()
                && let Some(seen) = slot.as_mut()
            {
                *seen = Some(self.text.clone());
            }
        });
        f.write_str(&self.text)
    }
}

impl std::error::Error for Refusal {}

/// Decodes `value` into `T`.
///
/// # Errors
/// A [`TypeMismatch`] naming the first field that does not fit `T` and what `T`
/// expected there; it never holds the value the client sent, only the text of a
/// [`Refusal`] the handler's type returned.
pub(crate) fn decode<T: DeserializeOwned>(value: &Value) -> Result<T, TypeMismatch> {
    let outer = REFUSED.with(|slot| slot.replace(Some(None)));
    let decoded = serde_path_to_error::deserialize(value);
    let refused = REFUSED.with(|slot| slot.replace(outer)).flatten();
    decoded.map_err(|e| TypeMismatch::from_path_error(&e, refused))
}

/// What was wrong with a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub(crate) enum MismatchKind {
    /// A required field was absent.
    MissingField,
    /// The value had the wrong JSON type (a string where a number belongs).
    InvalidType,
    /// The value had the right JSON type but was out of range, not one of the
    /// allowed variants, or of the wrong length.
    InvalidValue,
    /// A field the type does not know (with `#[serde(deny_unknown_fields)]`).
    UnknownField,
    /// The handler's type turned the value down with a [`Refusal`], whose text
    /// is kept.
    Refused,
    /// Anything else, such as a custom error from a `Deserialize` impl; its text is
    /// not kept, because it may quote the value.
    Other,
}

/// Why a JSON value did not decode into the handler's type: which field, what was
/// expected, never what was sent.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) struct TypeMismatch {
    field: String,
    expected: String,
    problem: MismatchKind,
    /// A [`Refusal`]'s text, for [`MismatchKind::Refused`]; else empty.
    refusal: String,
}

impl TypeMismatch {
    /// The path of the field, such as `service` or `items[2].name`; empty for the
    /// value itself. Each segment is at most [`MAX_SEGMENT_CHARS`] characters, with
    /// control characters removed.
    #[cfg(test)]
    pub(crate) fn field(&self) -> &str {
        &self.field
    }

    /// What the server's type expected there, in words: `a whole number from 0 to
    /// 4294967295` for a `u32`, `a string`, or a clause the type wrote itself such
    /// as `integer between 0 and 10000`; empty when the problem is not
    /// [`MismatchKind::InvalidType`] or [`MismatchKind::InvalidValue`].
    #[cfg(test)]
    pub(crate) fn expected(&self) -> &str {
        &self.expected
    }

    /// What was wrong.
    #[cfg(test)]
    pub(crate) fn problem(&self) -> MismatchKind {
        self.problem
    }

    /// A sentence a model can act on, with `what` naming the kind of input
    /// (`"Argument"` for tool arguments, `"Field"` for form fields), for example
    /// `Argument "delay_ms" must be a whole number from 0 to 4294967295. Correct it
    /// and try again.`
    ///
    /// For a [`Refusal`], its text as the handler wrote it.
    pub(crate) fn describe(&self, what: &str) -> String {
        if self.problem == MismatchKind::Refused {
            return self.refusal.clone();
        }
        let subject = if self.field.is_empty() {
            "The input".to_owned()
        } else {
            format!("{what} \"{}\"", self.field)
        };
        match self.problem {
            MismatchKind::InvalidType | MismatchKind::InvalidValue if !self.expected.is_empty() => {
                format!(
                    "{subject} must be {}. Correct it and try again.",
                    self.expected
                )
            }
            MismatchKind::MissingField => {
                format!("{subject} is required but was not given. Add it and try again.")
            }
            MismatchKind::UnknownField => {
                format!("{subject} is not accepted. Remove it and try again.")
            }
            _ => format!("{subject} has an invalid value. Correct it and try again."),
        }
    }

    /// The note a form question is asked again with: a [`Refusal`]'s text as the
    /// handler wrote it, else what [`describe`](Self::describe) says of the field.
    pub(crate) fn re_ask_note(&self) -> String {
        if self.problem == MismatchKind::Refused {
            self.refusal.clone()
        } else {
            format!("Please correct: {}", self.describe("Field"))
        }
    }

    /// `refused` is the text of the last [`Refusal`] serde wrote into an error
    /// while decoding: the error is that refusal only if its message is that text.
    fn from_path_error(
        e: &serde_path_to_error::Error<serde_json::Error>,
        refused: Option<String>,
    ) -> Self {
        let mut field = String::new();
        for segment in e.path() {
            match segment {
                serde_path_to_error::Segment::Seq { index } => {
                    field.push_str(&format!("[{index}]"));
                }
                serde_path_to_error::Segment::Map { key } => push_name(&mut field, key),
                serde_path_to_error::Segment::Enum { variant } => push_name(&mut field, variant),
                serde_path_to_error::Segment::Unknown => push_name(&mut field, "?"),
            }
        }
        let message = e.inner().to_string();
        let message = strip_position(&message, e.inner());
        if let Some(refusal) = refused.filter(|r| !r.is_empty() && r == message) {
            return Self {
                field,
                expected: String::new(),
                problem: MismatchKind::Refused,
                refusal,
            };
        }
        let (problem, expected) = classify(message);
        if problem == MismatchKind::MissingField {
            // `missing field `name``: the name comes from the server's type, and the
            // path stops at the struct that lacks it.
            if let Some(name) = message
                .strip_prefix("missing field `")
                .and_then(|rest| rest.strip_suffix('`'))
            {
                push_name(&mut field, name);
            }
        }
        Self {
            field,
            expected,
            problem,
            refusal: String::new(),
        }
    }
}

impl fmt::Display for TypeMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let root = self.field.is_empty();
        match self.problem {
            MismatchKind::InvalidType | MismatchKind::InvalidValue if !self.expected.is_empty() => {
                if root {
                    write!(f, "the value: expected {}", self.expected)
                } else {
                    write!(f, "field \"{}\": expected {}", self.field, self.expected)
                }
            }
            MismatchKind::MissingField => write!(f, "field \"{}\" is missing", self.field),
            MismatchKind::UnknownField => write!(f, "unknown field \"{}\"", self.field),
            // The refusal's text is for the user, not the log (it may name what they sent).
            MismatchKind::Refused if root => f.write_str("the value was refused by the handler"),
            MismatchKind::Refused => {
                write!(f, "field \"{}\" was refused by the handler", self.field)
            }
            _ if root => f.write_str("the value is invalid"),
            _ => write!(f, "field \"{}\" has an invalid value", self.field),
        }
    }
}

impl std::error::Error for TypeMismatch {}

/// Sorts serde's message into a [`MismatchKind`] and keeps only its "expected …"
/// clause. The text between `invalid type: ` and the clause describes the value
/// the client sent, so it is never copied.
fn classify(message: &str) -> (MismatchKind, String) {
    const EXPECTED: &str = ", expected ";
    let problem = if message.starts_with("invalid type: ") {
        MismatchKind::InvalidType
    } else if message.starts_with("invalid value: ")
        || message.starts_with("invalid length ")
        || message.starts_with("unknown variant ")
    {
        MismatchKind::InvalidValue
    } else if message.starts_with("missing field `") {
        return (MismatchKind::MissingField, String::new());
    } else if message.starts_with("unknown field `") {
        return (MismatchKind::UnknownField, String::new());
    } else {
        return (MismatchKind::Other, String::new());
    };
    // The clause is the end of the message, written by the server's type; client
    // text can only come before it, so the last separator is the real one.
    match message.rfind(EXPECTED) {
        Some(at) => {
            let expected = clean(&message[at + EXPECTED.len()..], MAX_EXPECTED_CHARS);
            if expected.is_empty() {
                (MismatchKind::Other, String::new())
            } else {
                (problem, in_words(expected))
            }
        }
        None => (MismatchKind::Other, String::new()),
    }
}

/// serde's "expected …" clause in words a model and a person read: the Rust
/// names of serde's own types (`u32`, `f64`, `struct Deploy`, `a sequence`)
/// become the JSON value that fits. A clause a type wrote itself (`integer
/// between 0 and 10000`, or the variants of an enum) is kept as it is.
fn in_words(expected: String) -> String {
    fn whole(min: impl fmt::Display, max: impl fmt::Display) -> String {
        format!("a whole number from {min} to {max}")
    }
    fn list_of(n: &str) -> String {
        if n == "1" {
            "a list of 1 item".to_owned()
        } else {
            format!("a list of {n} items")
        }
    }
    match expected.as_str() {
        "u8" => whole(u8::MIN, u8::MAX),
        "u16" => whole(u16::MIN, u16::MAX),
        "u32" => whole(u32::MIN, u32::MAX),
        "u64" => whole(u64::MIN, u64::MAX),
        "u128" => whole(u128::MIN, u128::MAX),
        "usize" => whole(usize::MIN, usize::MAX),
        "i8" => whole(i8::MIN, i8::MAX),
        "i16" => whole(i16::MIN, i16::MAX),
        "i32" => whole(i32::MIN, i32::MAX),
        "i64" => whole(i64::MIN, i64::MAX),
        "i128" => whole(i128::MIN, i128::MAX),
        "isize" => whole(isize::MIN, isize::MAX),
        "a nonzero u8" => whole(1, u8::MAX),
        "a nonzero u16" => whole(1, u16::MAX),
        "a nonzero u32" => whole(1, u32::MAX),
        "a nonzero u64" => whole(1, u64::MAX),
        "a nonzero u128" => whole(1, u128::MAX),
        "a nonzero usize" => whole(1, usize::MAX),
        "a nonzero i8" => whole(i8::MIN, i8::MAX) + " other than 0",
        "a nonzero i16" => whole(i16::MIN, i16::MAX) + " other than 0",
        "a nonzero i32" => whole(i32::MIN, i32::MAX) + " other than 0",
        "a nonzero i64" => whole(i64::MIN, i64::MAX) + " other than 0",
        "a nonzero i128" => whole(i128::MIN, i128::MAX) + " other than 0",
        "a nonzero isize" => whole(isize::MIN, isize::MAX) + " other than 0",
        "f32" | "f64" => "a number".to_owned(),
        "a boolean" => "true or false".to_owned(),
        "a character" => "a single character".to_owned(),
        "a borrowed string" | "a string" => "a string".to_owned(),
        "a sequence" => "a list".to_owned(),
        "a map" => "an object".to_owned(),
        "unit" => "null".to_owned(),
        "string or map" => "a string or an object".to_owned(),
        other => {
            if let Some(n) = other
                .strip_prefix("a tuple of size ")
                .or_else(|| other.strip_prefix("an array of length "))
            {
                list_of(n)
            } else if other.starts_with("struct ")
                || other.starts_with("struct variant ")
                || other.starts_with("internally tagged enum ")
                || other.starts_with("adjacently tagged enum ")
            {
                "an object".to_owned()
            } else if other.starts_with("tuple struct ") || other.starts_with("tuple variant ") {
                "a list".to_owned()
            } else if other.starts_with("enum ") {
                "one of the allowed values".to_owned()
            } else {
                expected
            }
        }
    }
}

/// serde_json appends ` at line L column C` when it parsed text; a `Value` has
/// no position, but strip it in case.
fn strip_position<'a>(message: &'a str, inner: &serde_json::Error) -> &'a str {
    if inner.line() == 0 {
        return message;
    }
    message
        .rfind(" at line ")
        .map_or(message, |at| &message[..at])
}

/// Appends one path segment, cut and cleaned.
fn push_name(field: &mut String, name: &str) {
    if !field.is_empty() {
        field.push('.');
    }
    field.push_str(&clean(name, MAX_SEGMENT_CHARS));
}

/// At most `max` characters of `s`, without control characters.
fn clean(s: &str, max: usize) -> String {
    s.chars().filter(|c| !c.is_control()).take(max).collect()
}

#[cfg(test)]
mod tests {

    /// What a mismatch says a `u32`, `u8` and `i64` need.
    const U32: &str = "a whole number from 0 to 4294967295";
    const U8: &str = "a whole number from 0 to 255";
    const I64: &str = "a whole number from -9223372036854775808 to 9223372036854775807";

    #[test]
    fn restart_example() {
        use serde::Deserialize;
        use serde_json::json;

        #[derive(Debug, Deserialize)]
        struct Restart {
            service: String,
            delay_ms: u32,
        }

        let ok: Restart = decode(&json!({"service": "api", "delay_ms": 250})).unwrap();
        assert_eq!((ok.service.as_str(), ok.delay_ms), ("api", 250));

        let err = decode::<Restart>(&json!({"service": "api", "delay_ms": "hunter2"})).unwrap_err();
        assert_eq!(err.field(), "delay_ms");
        assert_eq!(err.expected(), U32);
        assert_eq!(err.problem(), MismatchKind::InvalidType);
        assert_eq!(
            err.to_string(),
            "field \"delay_ms\": expected a whole number from 0 to 4294967295"
        );
        assert!(!err.describe("Argument").contains("hunter2"));
    }
    use std::collections::HashMap;

    use proptest::prelude::*;
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)] // fields exist to be decoded into
    struct Prims {
        s: String,
        b: bool,
        i: i64,
        u: u32,
        small: u8,
        f: f64,
        opt: Option<u32>,
        mode: Mode,
        tags: Vec<String>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "lowercase")]
    enum Mode {
        Fast,
        Safe,
    }

    fn good() -> Value {
        json!({"s": "x", "b": true, "i": -3, "u": 7, "small": 200, "f": 1.5,
               "opt": null, "mode": "fast", "tags": ["a", "b"]})
    }

    fn with(field: &str, v: Value) -> Value {
        let mut g = good();
        g[field] = v;
        g
    }

    fn mismatch(field: &str, v: Value) -> TypeMismatch {
        decode::<Prims>(&with(field, v)).unwrap_err()
    }

    #[test]
    fn good_value_decodes() {
        let p: Prims = decode(&good()).unwrap();
        assert_eq!((p.mode, p.small, p.opt), (Mode::Fast, 200, None));
    }

    #[test]
    fn each_primitive_names_field_and_expected_type() {
        let cases = [
            ("s", json!(5), "a string", MismatchKind::InvalidType),
            (
                "b",
                json!("yes"),
                "true or false",
                MismatchKind::InvalidType,
            ),
            ("i", json!("12"), I64, MismatchKind::InvalidType),
            ("i", json!(1.5), I64, MismatchKind::InvalidType),
            ("u", json!(-1), U32, MismatchKind::InvalidValue),
            ("u", json!("7"), U32, MismatchKind::InvalidType),
            ("small", json!(300), U8, MismatchKind::InvalidValue),
            ("f", json!("1.5"), "a number", MismatchKind::InvalidType),
            ("opt", json!("seven"), U32, MismatchKind::InvalidType),
            ("tags", json!("a"), "a list", MismatchKind::InvalidType),
        ];
        for (field, v, expected, problem) in cases {
            let e = mismatch(field, v.clone());
            assert_eq!(
                (e.field(), e.expected(), e.problem()),
                (field, expected, problem),
                "{field} = {v}"
            );
            assert_eq!(
                e.to_string(),
                format!("field \"{field}\": expected {expected}")
            );
        }
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)] // decoded to see the mismatch, never read
    struct One<T> {
        n: T,
    }

    /// What a model is told when `n` does not fit `T`.
    fn said<T: DeserializeOwned + fmt::Debug>(v: Value) -> String {
        decode::<One<T>>(&json!({ "n": v }))
            .unwrap_err()
            .describe("Argument")
    }

    #[test]
    fn rust_type_names_are_said_in_words() {
        let whole = |min: &dyn fmt::Display, max: &dyn fmt::Display| {
            format!("a whole number from {min} to {max}")
        };
        let cases = [
            (said::<u8>(json!(-1)), whole(&0, &255)),
            (said::<u16>(json!(70_000)), whole(&0, &65_535)),
            (said::<u32>(json!("7")), whole(&0, &4_294_967_295u32)),
            (said::<u64>(json!(-1)), whole(&0, &u64::MAX)),
            (said::<u128>(json!(-1)), whole(&0, &u128::MAX)),
            (said::<usize>(json!(1.5)), whole(&0, &usize::MAX)),
            (said::<i8>(json!(200)), whole(&-128, &127)),
            (said::<i16>(json!(40_000)), whole(&i16::MIN, &i16::MAX)),
            (said::<i32>(json!(true)), whole(&i32::MIN, &i32::MAX)),
            (said::<i64>(json!(0.5)), whole(&i64::MIN, &i64::MAX)),
            (said::<i128>(json!("1")), whole(&i128::MIN, &i128::MAX)),
            (said::<isize>(json!([])), whole(&isize::MIN, &isize::MAX)),
            (said::<std::num::NonZeroU32>(json!(0)), whole(&1, &u32::MAX)),
            (
                said::<std::num::NonZeroI8>(json!(0)),
                whole(&-128, &127) + " other than 0",
            ),
            (said::<f32>(json!("1.5")), "a number".to_owned()),
            (said::<f64>(json!(null)), "a number".to_owned()),
            (said::<bool>(json!(1)), "true or false".to_owned()),
            (said::<String>(json!(1)), "a string".to_owned()),
            (said::<char>(json!("ab")), "a single character".to_owned()),
            (said::<Vec<u8>>(json!({})), "a list".to_owned()),
            (
                said::<HashMap<String, u8>>(json!([])),
                "an object".to_owned(),
            ),
            (said::<(u8, u8)>(json!([1])), "a list of 2 items".to_owned()),
            (said::<[u8; 1]>(json!([])), "a list of 1 item".to_owned()),
            (said::<Strict>(json!(1)), "an object".to_owned()),
            (said::<()>(json!(1)), "null".to_owned()),
        ];
        for (said, words) in cases {
            assert_eq!(
                said,
                format!("Argument \"n\" must be {words}. Correct it and try again.")
            );
        }
    }

    #[test]
    fn unit_enum_names_its_variants() {
        let e = mismatch("mode", json!("turbo"));
        assert_eq!(e.field(), "mode");
        assert_eq!(e.problem(), MismatchKind::InvalidValue);
        assert_eq!(e.expected(), "`fast` or `safe`");
        assert!(!e.to_string().contains("turbo"));
        let e = mismatch("mode", json!(3));
        assert_eq!(e.field(), "mode");
        assert_eq!(e.problem(), MismatchKind::InvalidType);
    }

    #[test]
    fn vec_element_has_index_in_path() {
        let e = mismatch("tags", json!(["a", 2]));
        assert_eq!((e.field(), e.expected()), ("tags[1]", "a string"));
    }

    #[test]
    fn missing_field_is_named() {
        let mut v = good();
        v.as_object_mut().unwrap().remove("u");
        let e = decode::<Prims>(&v).unwrap_err();
        assert_eq!(
            (e.field(), e.problem(), e.expected()),
            ("u", MismatchKind::MissingField, "")
        );
        assert_eq!(e.to_string(), "field \"u\" is missing");
        assert_eq!(
            e.describe("Argument"),
            "Argument \"u\" is required but was not given. Add it and try again."
        );
        // An absent Option is fine.
        let mut v = good();
        v.as_object_mut().unwrap().remove("opt");
        assert!(decode::<Prims>(&v).is_ok());
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Strict {
        name: String,
    }

    #[test]
    fn unknown_field_is_named() {
        let e = decode::<Strict>(&json!({"name": "a", "x": "secret"})).unwrap_err();
        assert_eq!((e.field(), e.problem()), ("x", MismatchKind::UnknownField));
        assert_eq!(e.to_string(), "unknown field \"x\"");
        assert_eq!(
            e.describe("Field"),
            "Field \"x\" is not accepted. Remove it and try again."
        );
        assert!(!e.to_string().contains("secret"));
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Order {
        items: Vec<Item>,
        meta: HashMap<String, Item>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Item {
        name: String,
        qty: u16,
    }

    #[test]
    fn nested_paths() {
        let v = json!({"items": [{"name": "a", "qty": 1}, {"name": "b", "qty": 2},
                                 {"name": false, "qty": 3}], "meta": {}});
        let e = decode::<Order>(&v).unwrap_err();
        assert_eq!((e.field(), e.expected()), ("items[2].name", "a string"));
        let v = json!({"items": [{"name": "a"}], "meta": {}});
        let e = decode::<Order>(&v).unwrap_err();
        assert_eq!(
            (e.field(), e.problem()),
            ("items[0].qty", MismatchKind::MissingField)
        );
        let v = json!({"items": [], "meta": {"k": {"name": "a", "qty": 70000}}});
        let e = decode::<Order>(&v).unwrap_err();
        assert_eq!(
            (e.field(), e.expected()),
            ("meta.k.qty", "a whole number from 0 to 65535")
        );
    }

    #[test]
    fn client_keys_are_cut_and_cleaned() {
        let key = format!("a\u{1b}[31m\n{}", "k".repeat(100));
        let mut meta = serde_json::Map::new();
        meta.insert(key, json!({"name": 1, "qty": 1}));
        let v = json!({"items": [], "meta": meta});
        let e = decode::<Order>(&v).unwrap_err();
        let first = e.field().strip_prefix("meta.").unwrap();
        let key_part = first.strip_suffix(".name").unwrap();
        assert_eq!(key_part.chars().count(), MAX_SEGMENT_CHARS);
        assert!(!e.field().chars().any(char::is_control));
        assert!(key_part.starts_with("a[31mkkk"));
    }

    #[test]
    fn root_mismatch() {
        let e = decode::<Strict>(&json!("just a string")).unwrap_err();
        assert_eq!((e.field(), e.problem()), ("", MismatchKind::InvalidType));
        assert_eq!(e.expected(), "an object");
        assert_eq!(e.to_string(), "the value: expected an object");
        assert_eq!(
            e.describe("Argument"),
            "The input must be an object. Correct it and try again."
        );
        let e = decode::<u32>(&json!(-4)).unwrap_err();
        assert_eq!((e.field(), e.expected()), ("", U32));
    }

    /// A type whose `Deserialize` quotes the value in a custom error.
    #[derive(Debug)]
    struct Port(#[allow(dead_code)] u16);

    impl<'de> Deserialize<'de> for Port {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            let s = String::deserialize(d)?;
            s.parse()
                .map(Port)
                .map_err(|_| serde::de::Error::custom(format!("bad port {s}")))
        }
    }

    /// A `Deserialize` that reports a range with serde's own vocabulary.
    #[derive(Debug)]
    struct Delay(#[allow(dead_code)] u64);

    impl<'de> Deserialize<'de> for Delay {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            let n = u64::deserialize(d)?;
            if n > 10_000 {
                return Err(serde::de::Error::invalid_value(
                    serde::de::Unexpected::Unsigned(n),
                    &"integer between 0 and 10000",
                ));
            }
            Ok(Delay(n))
        }
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Conn {
        port: Port,
        delay: Option<Delay>,
    }

    #[test]
    fn custom_errors_are_not_quoted() {
        let e = decode::<Conn>(&json!({"port": "s3cr3t"})).unwrap_err();
        assert_eq!(
            (e.field(), e.problem(), e.expected()),
            ("port", MismatchKind::Other, "")
        );
        assert_eq!(e.to_string(), "field \"port\" has an invalid value");
        assert_eq!(
            e.describe("Argument"),
            "Argument \"port\" has an invalid value. Correct it and try again."
        );
    }

    #[test]
    fn invalid_value_keeps_the_servers_clause() {
        let e = decode::<Conn>(&json!({"port": "80", "delay": 20000})).unwrap_err();
        assert_eq!(
            (e.field(), e.problem()),
            ("delay", MismatchKind::InvalidValue)
        );
        assert_eq!(e.expected(), "integer between 0 and 10000");
        assert!(!e.to_string().contains("20000"));
        assert_eq!(
            e.describe("Argument"),
            "Argument \"delay\" must be integer between 0 and 10000. Correct it and try again."
        );
    }

    #[test]
    fn classify_uses_the_last_separator() {
        let (p, exp) = classify("unknown variant `x, expected evil`, expected one of `a`");
        assert_eq!(
            (p, exp.as_str()),
            (MismatchKind::InvalidValue, "one of `a`")
        );
        assert_eq!(
            classify("invalid type: string \"q\"").0,
            MismatchKind::Other
        );
        assert_eq!(
            classify("unknown variant `x`, there are no variants").0,
            MismatchKind::Other
        );
        assert_eq!(
            classify("invalid length 3, expected a tuple of size 2").1,
            "a list of 2 items"
        );
        assert_eq!(classify("something else entirely").0, MismatchKind::Other);
    }

    #[derive(Debug, Deserialize)]
    struct Span {
        from: u32,
        to: u32,
    }

    /// A span whose end is not before its start, checked by `TryFrom`.
    #[derive(Debug, Deserialize)]
    #[serde(try_from = "Span")]
    #[allow(dead_code)] // decoded to see the refusal
    struct Ordered(Span);

    impl TryFrom<Span> for Ordered {
        type Error = Refusal;
        fn try_from(s: Span) -> Result<Self, Refusal> {
            if s.to < s.from {
                return Err(Refusal::new("The end must not come before the start."));
            }
            Ok(Self(s))
        }
    }

    /// The same check, with a `String` error: text the application did not mark
    /// as written for the user.
    #[derive(Debug, Deserialize)]
    #[serde(try_from = "Span")]
    #[allow(dead_code)]
    struct Unmarked(Span);

    impl TryFrom<Span> for Unmarked {
        type Error = String;
        fn try_from(s: Span) -> Result<Self, String> {
            if s.to < s.from {
                return Err(format!("end {} is before start {}", s.to, s.from));
            }
            Ok(Self(s))
        }
    }

    #[test]
    fn a_refusal_is_said_in_the_handlers_words_and_kept_out_of_the_log() {
        const TEXT: &str = "The end must not come before the start.";
        let e = decode::<Ordered>(&json!({"from": 7_340_011, "to": 2})).unwrap_err();
        assert_eq!((e.field(), e.problem()), ("", MismatchKind::Refused));
        assert_eq!(e.describe("Field"), TEXT);
        assert_eq!(e.re_ask_note(), TEXT);
        assert_eq!(e.to_string(), "the value was refused by the handler");
        // In a field: the path names it in the log, the text is the same.
        let e = decode::<One<Ordered>>(&json!({"n": {"from": 9, "to": 2}})).unwrap_err();
        assert_eq!((e.field(), e.describe("Argument").as_str()), ("n", TEXT));
        assert_eq!(e.to_string(), "field \"n\" was refused by the handler");
        // A mismatch inside the refused type is still named by field and type.
        let e = decode::<Ordered>(&json!({"from": "x", "to": 2})).unwrap_err();
        assert_eq!(e.problem(), MismatchKind::InvalidType);
        assert_eq!(
            e.re_ask_note(),
            format!("Please correct: Field \"from\" must be {U32}. Correct it and try again.")
        );
        assert!(decode::<Ordered>(&json!({"from": 2, "to": 9})).is_ok());
    }

    #[test]
    fn only_a_refusal_is_shown_never_other_custom_text() {
        // A `String` error may quote the value: reduced as any custom error.
        let e = decode::<Unmarked>(&json!({"from": 7_340_011, "to": 2})).unwrap_err();
        assert_eq!(e.problem(), MismatchKind::Other);
        assert!(!e.describe("Field").contains("7340011"));
        // A refusal serde wrote and then dropped (an untagged enum tries each
        // variant) is not the error: and it is forgotten before the next decode.
        #[derive(Debug, Deserialize)]
        #[serde(untagged)]
        #[allow(dead_code)]
        enum Either {
            Span(Ordered),
            Number(u8),
        }
        let e = decode::<Either>(&json!({"from": 9, "to": 2})).unwrap_err();
        assert_eq!(e.problem(), MismatchKind::Other);
        // A type that errs with exactly what the client sent: the client's text is
        // never taken for a refusal, even one made just before.
        #[derive(Debug)]
        struct Echo;
        impl<'de> Deserialize<'de> for Echo {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                Err(serde::de::Error::custom(String::deserialize(d)?))
            }
        }
        assert!(decode::<Ordered>(&json!({"from": 9, "to": 2})).is_err());
        let e = decode::<Echo>(&json!("The end must not come before the start.")).unwrap_err();
        assert_eq!(e.problem(), MismatchKind::Other);
    }

    #[test]
    fn a_refusal_keeps_line_breaks_only_and_is_cut() {
        let r = Refusal::new("Pick\u{1b}[31m a weekday.\nSundays are closed.\r\u{7}");
        assert_eq!(r.text(), "Pick[31m a weekday.\nSundays are closed.");
        assert_eq!(r.to_string(), r.text());
        let long = Refusal::new("é".repeat(2 * MAX_REFUSAL_CHARS));
        assert_eq!(long.text().chars().count(), MAX_REFUSAL_CHARS);
    }

    fn secret_value() -> impl Strategy<Value = Value> {
        prop_oneof![
            "[a-zA-Z0-9 _.,:`\"'-]{6,40}".prop_map(Value::String),
            (5_000_000_000i64..i64::MAX).prop_map(Value::from),
            (i64::MIN..-5_000_000_000i64).prop_map(Value::from),
            (1.0e6f64..1.0e12).prop_map(|f| json!(f + 0.25)),
        ]
    }

    proptest! {
        #[test]
        fn sent_values_never_appear(v in secret_value(), field in 0usize..7) {
            let field = ["s", "b", "i", "u", "small", "mode", "tags"][field];
            // Strings go where a string is not wanted; numbers where a number overflows
            // or is the wrong type.
            let field = match (&v, field) {
                (Value::String(_), "s") => "u",
                (Value::Number(_), "i") if v.is_f64() => "i",
                (Value::Number(_), "i") => "small",
                _ => field,
            };
            let result = decode::<Prims>(&with(field, v.clone()));
            prop_assert!(result.is_err(), "{} accepted {}", field, v);
            let e = result.unwrap_err();
            prop_assert_eq!(e.field(), field);
            let needle = match &v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let shown = format!("{e} {} {} {:?}", e.describe("Argument"), e.describe("Field"), e);
            prop_assert!(!shown.contains(&needle), "{} leaked into {}", needle, shown);
        }
    }
}
