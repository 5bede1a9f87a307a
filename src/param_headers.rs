//! Tool parameters carried in custom headers (MCP 2026-07-28, Streamable HTTP
//! §Custom Headers from Tool Parameters, SEP-2243): a property of a tool's
//! `inputSchema` annotated `"x-mcp-header": "Region"` travels in the body and
//! as the header `Mcp-Param-Region`, which the server checks against the body.
//!
//! - [`ParamHeaders::from_input_schema`]: the declarations of one schema, each
//!   checked against §Schema Extension (a name that is a non-empty token,
//!   unique without regard to case, on a `string`, `integer` or `boolean`
//!   property; `number` is not permitted);
//! - [`check_param_headers`]: the server's check (§Server Behavior for Custom
//!   Headers), -32020 naming the header, never its value;
//! - [`ParamHeaders::pairs`]: the headers a client sends (§Value Encoding).
//!
//! Bounded whatever a client sends: the server looks only at the headers the
//! tool declares (at most [`MAX_PARAM_HEADERS`]), reads at most two values of
//! each (a repeated header is refused), and refuses a value longer than
//! [`MAX_PARAM_HEADER_LEN`] before decoding it.

use std::borrow::Cow;
use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use crate::defaults::{MAX_PARAM_HEADER_LEN, MAX_PARAM_HEADERS, PARAM_HEADER_MAX_DEPTH};
use crate::error::Error;

/// The prefix of a parameter header's name, lower case (`Mcp-Param-{Name}`).
pub const HEADER_PARAM_PREFIX: &str = "mcp-param-";

/// The schema keyword that designates a property as a header (its value names it).
pub(crate) const X_MCP_HEADER: &str = "x-mcp-header";

/// The Base64 sentinel's prefix (§Value Encoding): `=?base64?{value}?=`.
const SENTINEL_PREFIX: &str = "=?base64?";
/// The Base64 sentinel's suffix.
const SENTINEL_SUFFIX: &str = "?=";

/// The largest integer a parameter header may carry, in either sign: 2^53 − 1
/// (§Schema Extension: the safe range of JavaScript).
const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// One property of a tool's `inputSchema` that travels as a header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParamHeader {
    /// The name as declared (`Region`).
    name: String,
    /// The header's name as written in messages (`Mcp-Param-Region`).
    display: String,
    /// The header's name, lower case (`mcp-param-region`).
    lower: String,
    /// The property names from the schema's root to the property.
    path: Vec<String>,
}

impl ParamHeader {
    /// The `x-mcp-header` value as declared (`Region`).
    #[cfg(test)]
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The header's name, lower case (`mcp-param-region`), as the HTTP layer
    /// looks it up.
    pub(crate) fn header_name(&self) -> &str {
        &self.lower
    }

    /// The property names leading from the arguments to the value (one for a
    /// top-level property).
    #[cfg(test)]
    pub(crate) fn path(&self) -> &[String] {
        &self.path
    }

    /// The argument's value in `arguments`; `None` when absent or `null` (no
    /// header is sent or expected then).
    fn value_in<'a>(&self, arguments: Option<&'a Value>) -> Option<&'a Value> {
        let mut v = arguments?;
        for key in &self.path {
            v = v.get(key)?;
        }
        (!v.is_null()).then_some(v)
    }

    fn refuse(&self, detail: &str) -> Error {
        Error::header_mismatch(&self.display, format!("{}: {detail}", self.display))
    }
}

/// The `x-mcp-header` declarations of one tool's `inputSchema`, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeaders {
    headers: Vec<ParamHeader>,
}

/// Why an `inputSchema`'s `x-mcp-header` declarations are invalid (§Schema
/// Extension). A server refuses to register such a tool; a client over HTTP
/// leaves it out of its tool list.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParamHeaderError {
    /// The annotation is not a string.
    NotAString {
        /// The annotated property.
        property: String,
    },
    /// The name is empty.
    Empty {
        /// The annotated property.
        property: String,
    },
    /// The name is not an HTTP token (`1*tchar`, RFC 9110 §5.1): a space, a
    /// colon, a control or non-ASCII character.
    NotAToken {
        /// The annotated property.
        property: String,
    },
    /// Two properties declare the same name, compared without regard to case.
    Duplicate {
        /// The second property declaring it.
        property: String,
    },
    /// The annotated property's `type` is not `string`, `integer` or `boolean`
    /// (a `null` alongside one of them is allowed).
    NotPrimitive {
        /// The annotated property.
        property: String,
    },
    /// More than [`MAX_PARAM_HEADERS`] declarations.
    TooMany,
    /// Object properties nested deeper than [`PARAM_HEADER_MAX_DEPTH`].
    TooDeep,
}

impl fmt::Display for ParamHeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotAString { property } => {
                write!(f, "x-mcp-header of {property:?} is not a string")
            }
            Self::Empty { property } => write!(f, "x-mcp-header of {property:?} is empty"),
            Self::NotAToken { property } => {
                write!(f, "x-mcp-header of {property:?} is not an HTTP token")
            }
            Self::Duplicate { property } => write!(
                f,
                "x-mcp-header of {property:?} repeats an earlier name (case-insensitively)"
            ),
            Self::NotPrimitive { property } => write!(
                f,
                "x-mcp-header on {property:?}, whose type is not string, integer or boolean"
            ),
            Self::TooMany => write!(f, "more than {MAX_PARAM_HEADERS} x-mcp-header declarations"),
            Self::TooDeep => write!(
                f,
                "properties nested deeper than {PARAM_HEADER_MAX_DEPTH} levels"
            ),
        }
    }
}

impl std::error::Error for ParamHeaderError {}

/// An HTTP token character (RFC 9110 §5.6.2 `tchar`).
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Whether a property's `type` is one a header may carry.
fn is_primitive(property: &Value) -> bool {
    let allowed = |t: &Value| matches!(t.as_str(), Some("string" | "integer" | "boolean"));
    match property.get("type") {
        Some(t @ Value::String(_)) => allowed(t),
        Some(Value::Array(types)) => {
            types.iter().any(allowed)
                && types
                    .iter()
                    .all(|t| allowed(t) || t.as_str() == Some("null"))
        }
        _ => false,
    }
}

impl ParamHeaders {
    /// The declarations in `schema` (a tool's `inputSchema`), found on its
    /// `properties` and, through object properties, at any depth; `None` when it
    /// has none.
    ///
    /// # Errors
    /// [`ParamHeaderError`] when a declaration breaks a rule of §Schema
    /// Extension, or there are too many or too deep to look at.
    pub fn from_input_schema(schema: &Value) -> Result<Option<Self>, ParamHeaderError> {
        let mut headers = Vec::new();
        collect(schema, &mut Vec::new(), &mut headers)?;
        Ok((!headers.is_empty()).then_some(Self { headers }))
    }

    /// The declarations, in schema order.
    #[cfg(test)]
    pub(crate) fn iter(&self) -> impl ExactSizeIterator<Item = &ParamHeader> {
        self.headers.iter()
    }

    /// The headers a client sends with a `tools/call` whose arguments are
    /// `arguments`, as `(lower-case name, value)` pairs: one per declared
    /// argument that is present and not `null`, a string as is unless it must be
    /// Base64-encoded (`=?base64?…?=`: non-ASCII or control characters, leading
    /// or trailing whitespace, or a value that looks like the sentinel), an
    /// integer in decimal, a boolean as `true`/`false`. An object or array value
    /// gets no header (the server refuses the call).
    pub fn pairs(&self, arguments: Option<&Value>) -> Vec<(&str, String)> {
        self.headers
            .iter()
            .filter_map(|h| {
                let value = match h.value_in(arguments)? {
                    Value::String(s) => encode_str(s),
                    Value::Bool(b) => b.to_string(),
                    Value::Number(n) => n.to_string(),
                    _ => return None,
                };
                Some((h.header_name(), value))
            })
            .collect()
    }
}

/// Walks `schema`'s properties, collecting the declarations.
fn collect(
    schema: &Value,
    path: &mut Vec<String>,
    out: &mut Vec<ParamHeader>,
) -> Result<(), ParamHeaderError> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    if path.len() >= PARAM_HEADER_MAX_DEPTH {
        return Err(ParamHeaderError::TooDeep);
    }
    for (key, property) in properties {
        path.push(key.clone());
        if let Some(declared) = property.get(X_MCP_HEADER) {
            let property_name = || path.join(".");
            let Some(name) = declared.as_str() else {
                return Err(ParamHeaderError::NotAString {
                    property: property_name(),
                });
            };
            if name.is_empty() {
                return Err(ParamHeaderError::Empty {
                    property: property_name(),
                });
            }
            if !name.bytes().all(is_tchar) {
                return Err(ParamHeaderError::NotAToken {
                    property: property_name(),
                });
            }
            if !is_primitive(property) {
                return Err(ParamHeaderError::NotPrimitive {
                    property: property_name(),
                });
            }
            if out.iter().any(|h| h.name.eq_ignore_ascii_case(name)) {
                return Err(ParamHeaderError::Duplicate {
                    property: property_name(),
                });
            }
            if out.len() == MAX_PARAM_HEADERS {
                return Err(ParamHeaderError::TooMany);
            }
            out.push(ParamHeader {
                name: name.to_owned(),
                display: format!("Mcp-Param-{name}"),
                lower: format!("{HEADER_PARAM_PREFIX}{}", name.to_ascii_lowercase()),
                path: path.clone(),
            });
        }
        collect(property, path, out)?;
        path.pop();
    }
    Ok(())
}

/// A string as a header value: as is when it is plain visible ASCII (inner
/// spaces allowed), else in the Base64 sentinel.
fn encode_str(s: &str) -> String {
    let plain = s.bytes().all(|b| (0x20..0x7f).contains(&b))
        && !s.starts_with(' ')
        && !s.ends_with(' ')
        && !is_sentinel(s);
    if plain {
        s.to_owned()
    } else {
        format!("{SENTINEL_PREFIX}{}{SENTINEL_SUFFIX}", STANDARD.encode(s))
    }
}

fn is_sentinel(s: &str) -> bool {
    s.len() >= SENTINEL_PREFIX.len() + SENTINEL_SUFFIX.len()
        && s.starts_with(SENTINEL_PREFIX)
        && s.ends_with(SENTINEL_SUFFIX)
}

/// The text a header value carries: its bytes without surrounding whitespace
/// (RFC 9110 §5.5), which must be visible ASCII, space or tab, and, in the
/// sentinel, padded standard Base64 of UTF-8. `None` when it is not.
fn decode(raw: &[u8]) -> Option<Cow<'_, str>> {
    let ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = raw.iter().position(|b| !ows(b)).unwrap_or(raw.len());
    let end = raw.iter().rposition(|b| !ows(b)).map_or(start, |i| i + 1);
    let raw = &raw[start..end];
    if !raw.iter().all(|&b| (0x20..0x7f).contains(&b) || b == b'\t') {
        return None;
    }
    // Visible ASCII, so UTF-8.
    let text = std::str::from_utf8(raw).ok()?;
    if !is_sentinel(text) {
        return Some(Cow::Borrowed(text));
    }
    let encoded = &text[SENTINEL_PREFIX.len()..text.len() - SENTINEL_SUFFIX.len()];
    let bytes = STANDARD.decode(encoded).ok()?;
    String::from_utf8(bytes).ok().map(Cow::Owned)
}

/// Whether the header's text stands for the body's value: a string equal to
/// it, `true`/`false` for a boolean, the same number for a number (compared as
/// numbers, so `42.0` stands for `42`; an integer outside ±(2^53 − 1) matches
/// nothing).
fn agrees(text: &str, body: &Value) -> bool {
    match body {
        Value::String(s) => text == s,
        Value::Bool(b) => text == if *b { "true" } else { "false" },
        Value::Number(n) => {
            let header = || text.parse::<f64>().ok().filter(|h| h.is_finite());
            if let Some(i) = n.as_i64() {
                if !(-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&i) {
                    return false;
                }
                match text.parse::<i64>() {
                    Ok(h) => h == i,
                    // Exact: a safe integer is an f64 without rounding.
                    #[allow(clippy::cast_precision_loss)] // reason: |i| < 2^53, exact
                    Err(_) => header() == Some(i as f64),
                }
            } else if n.is_u64() {
                false // above i64::MAX, so outside the safe range
            } else {
                n.as_f64().is_some_and(|b| header() == Some(b))
            }
        }
        _ => false,
    }
}

/// The server's check of the parameter headers (MCP 2026-07-28, Streamable
/// HTTP §Server Behavior for Custom Headers) of a `tools/call` whose
/// `arguments` are given, for a tool declaring `declared`. `values` gives every
/// value of the header it is asked for, by its lower-case name
/// (`mcp-param-region` for `Mcp-Param-Region`), in the order they came; it is asked once per
/// declaration and read for at most two values.
///
/// An argument present (and not `null`) needs its header; an absent or `null`
/// one must have none. A header's value, without surrounding whitespace, must be
/// visible ASCII (space and tab allowed), at most [`MAX_PARAM_HEADER_LEN`]
/// bytes, and, decoded from the Base64 sentinel when it is in one, stand for
/// the argument. Headers the tool does not declare are not looked at.
///
/// # Errors
/// -32020 naming the first header at fault (`Mcp-Param-Region`), never its value
/// or the argument's.
pub fn check_param_headers<'a, F, I>(
    declared: &ParamHeaders,
    arguments: Option<&Value>,
    mut values: F,
) -> Result<(), Error>
where
    F: FnMut(&str) -> I,
    I: IntoIterator<Item = &'a [u8]>,
{
    for h in &declared.headers {
        let body = h.value_in(arguments);
        let mut sent = values(&h.lower).into_iter();
        let first = sent.next();
        if first.is_some() && sent.next().is_some() {
            return Err(h.refuse("header repeated"));
        }
        match (first, body) {
            (None, None) => {}
            (None, Some(_)) => return Err(h.refuse("header missing, argument present")),
            (Some(_), None) => return Err(h.refuse("header present, argument absent")),
            (Some(raw), Some(_)) if raw.len() > MAX_PARAM_HEADER_LEN => {
                return Err(h.refuse("header value too long"));
            }
            (Some(raw), Some(body)) => match decode(raw) {
                None => return Err(h.refuse("header value has invalid characters or Base64")),
                Some(text) if !agrees(&text, body) => {
                    return Err(h.refuse("header value differs from the argument"));
                }
                Some(_) => {}
            },
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::code;
    use serde_json::json;

    fn declared(schema: Value) -> ParamHeaders {
        ParamHeaders::from_input_schema(&schema).unwrap().unwrap()
    }

    fn region() -> ParamHeaders {
        declared(json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "query": {"type": "string"},
        }}))
    }

    /// The check with `sent` as the only headers of the request.
    fn check(d: &ParamHeaders, arguments: Value, sent: &[(&str, &[u8])]) -> Result<(), Error> {
        check_param_headers(d, Some(&arguments), |name| {
            let name = name.to_owned();
            sent.iter()
                .filter(move |(n, _)| n.eq_ignore_ascii_case(&name))
                .map(|(_, v)| *v)
                .collect::<Vec<_>>()
        })
    }

    #[test]
    fn annotations_are_found_at_any_depth_in_schema_order() {
        let d = declared(json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "plain": {"type": "string"},
            "target": {"type": "object", "properties": {
                "zone": {"type": ["integer", "null"], "x-mcp-header": "Zone"},
            }},
            "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
        }}));
        let found: Vec<_> = d
            .iter()
            .map(|h| (h.name(), h.header_name(), h.path().join(".")))
            .collect();
        assert_eq!(
            found,
            [
                ("Region", "mcp-param-region", "region".to_owned()),
                ("Zone", "mcp-param-zone", "target.zone".to_owned()),
                ("Dry-Run", "mcp-param-dry-run", "dry".to_owned()),
            ]
        );
        assert_eq!(
            ParamHeaders::from_input_schema(&json!({"type": "object"})),
            Ok(None)
        );
    }

    #[test]
    fn annotations_that_break_the_rules_are_refused() {
        let one = |property: Value| {
            ParamHeaders::from_input_schema(
                &json!({"type": "object", "properties": {"p": property}}),
            )
        };
        let p = || "p".to_owned();
        let cases = [
            (
                json!({"type": "string", "x-mcp-header": ""}),
                ParamHeaderError::Empty { property: p() },
            ),
            (
                json!({"type": "string", "x-mcp-header": 7}),
                ParamHeaderError::NotAString { property: p() },
            ),
            (
                json!({"type": "string", "x-mcp-header": "My Region"}),
                ParamHeaderError::NotAToken { property: p() },
            ),
            (
                json!({"type": "string", "x-mcp-header": "Region:Primary"}),
                ParamHeaderError::NotAToken { property: p() },
            ),
            (
                json!({"type": "string", "x-mcp-header": "Région"}),
                ParamHeaderError::NotAToken { property: p() },
            ),
            (
                json!({"type": "string", "x-mcp-header": "Region\t1"}),
                ParamHeaderError::NotAToken { property: p() },
            ),
            (
                json!({"type": "string", "x-mcp-header": "A\r\nB"}),
                ParamHeaderError::NotAToken { property: p() },
            ),
            (
                json!({"type": "number", "x-mcp-header": "Score"}),
                ParamHeaderError::NotPrimitive { property: p() },
            ),
            (
                json!({"type": "object", "x-mcp-header": "Data"}),
                ParamHeaderError::NotPrimitive { property: p() },
            ),
            (
                json!({"type": "array", "x-mcp-header": "Items"}),
                ParamHeaderError::NotPrimitive { property: p() },
            ),
            (
                json!({"type": "null", "x-mcp-header": "Nil"}),
                ParamHeaderError::NotPrimitive { property: p() },
            ),
            (
                json!({"x-mcp-header": "Untyped"}),
                ParamHeaderError::NotPrimitive { property: p() },
            ),
        ];
        for (property, want) in cases {
            assert_eq!(one(property.clone()), Err(want), "{property}");
        }
        let twice = |a: &str, b: &str| {
            ParamHeaders::from_input_schema(&json!({"type": "object", "properties": {
                "a": {"type": "string", "x-mcp-header": a},
                "b": {"type": "string", "x-mcp-header": b},
            }}))
        };
        let dup = Err(ParamHeaderError::Duplicate {
            property: "b".into(),
        });
        assert_eq!(twice("Region", "Region"), dup);
        assert_eq!(twice("MyField", "myfield"), dup);
        // Bounded: too many declarations, too deep a nesting.
        let many: serde_json::Map<_, _> = (0..=MAX_PARAM_HEADERS)
            .map(|i| {
                (
                    format!("p{i}"),
                    json!({"type": "string", "x-mcp-header": format!("H{i}")}),
                )
            })
            .collect();
        assert_eq!(
            ParamHeaders::from_input_schema(&json!({"properties": many})),
            Err(ParamHeaderError::TooMany)
        );
        let mut deep = json!({"type": "string"});
        for _ in 0..=PARAM_HEADER_MAX_DEPTH {
            deep = json!({"type": "object", "properties": {"n": deep}});
        }
        assert_eq!(
            ParamHeaders::from_input_schema(&deep),
            Err(ParamHeaderError::TooDeep)
        );
        // The message names the property and the rule.
        let e = one(json!({"type": "number", "x-mcp-header": "Score"})).unwrap_err();
        assert_eq!(
            e.to_string(),
            "x-mcp-header on \"p\", whose type is not string, integer or boolean"
        );
    }

    #[test]
    fn the_base64_sentinel_decodes_strictly() {
        assert_eq!(decode(b"us-west1").as_deref(), Some("us-west1"));
        assert_eq!(decode(b"  us west 1\t").as_deref(), Some("us west 1"));
        assert_eq!(decode(b"").as_deref(), Some(""));
        assert_eq!(decode(b"=?base64?SGVsbG8=?=").as_deref(), Some("Hello"));
        assert_eq!(
            decode(b"=?base64?SGVsbG8sIOS4lueVjA==?=").as_deref(),
            Some("Hello, 世界")
        );
        assert_eq!(decode(b"=?base64??=").as_deref(), Some(""));
        // Missing padding, characters outside the alphabet, bytes that are not UTF-8.
        assert_eq!(decode(b"=?base64?SGVsbG8?="), None);
        assert_eq!(decode(b"=?base64?SGVs!!!bG8=?="), None);
        assert_eq!(decode(b"=?base64?/w==?="), None);
        // Without the whole wrapper, or not in lower case: the text itself.
        assert_eq!(
            decode(b"=?base64?SGVsbG8=").as_deref(),
            Some("=?base64?SGVsbG8=")
        );
        assert_eq!(decode(b"SGVsbG8=?=").as_deref(), Some("SGVsbG8=?="));
        assert_eq!(
            decode(b"=?BASE64?SGVsbG8=?=").as_deref(),
            Some("=?BASE64?SGVsbG8=?=")
        );
        // Control and non-ASCII bytes are invalid characters.
        assert_eq!(decode(b"a\x01b"), None);
        assert_eq!(decode(b"caf\xc3\xa9"), None);
        assert_eq!(decode(b"a\x7fb"), None);
    }

    #[test]
    fn a_matching_header_passes() {
        let d = region();
        let args = json!({"region": "us-west1", "query": "q"});
        assert!(check(&d, args, &[("Mcp-Param-Region", b"us-west1")]).is_ok());
        let args = json!({"region": "Hello"});
        assert!(
            check(
                &d,
                args.clone(),
                &[("mcp-param-region", b"=?base64?SGVsbG8=?=")]
            )
            .is_ok()
        );
        // Absent or null argument, no header: nothing to check.
        assert!(check(&d, json!({"query": "q"}), &[]).is_ok());
        assert!(check(&d, json!({"region": null}), &[]).is_ok());
        assert!(check_param_headers(&d, None, |_| Vec::<&[u8]>::new()).is_ok());
        // Undeclared Mcp-Param headers are not looked at.
        assert!(check(&d, json!({}), &[("Mcp-Param-Other", b"\x01")]).is_ok());
    }

    #[test]
    fn integers_and_booleans_compare_as_values() {
        let d = declared(json!({"type": "object", "properties": {
            "n": {"type": "integer", "x-mcp-header": "N"},
            "b": {"type": "boolean", "x-mcp-header": "B"},
        }}));
        let ok = |args: Value, n: &[u8], b: &[u8]| {
            check(&d, args, &[("mcp-param-n", n), ("mcp-param-b", b)]).is_ok()
        };
        assert!(ok(json!({"n": 42, "b": true}), b"42", b"true"));
        assert!(ok(json!({"n": 42, "b": false}), b"42.0", b"false"));
        assert!(ok(json!({"n": -7, "b": false}), b"-7", b"false"));
        assert!(ok(json!({"n": 42.0, "b": false}), b"42", b"false"));
        assert!(!ok(json!({"n": 42, "b": true}), b"43", b"true"));
        assert!(!ok(json!({"n": 42, "b": true}), b"42", b"True"));
        assert!(!ok(json!({"n": 42, "b": true}), b"forty-two", b"true"));
        assert!(!ok(json!({"n": 42, "b": true}), b"inf", b"true"));
        // Outside the safe range, nothing matches (f64 would round it).
        let big = (1_i64 << 53) + 1;
        assert!(!ok(
            json!({"n": big, "b": true}),
            big.to_string().as_bytes(),
            b"true"
        ));
        assert!(!ok(
            json!({"n": u64::MAX, "b": true}),
            u64::MAX.to_string().as_bytes(),
            b"true"
        ));
        // An object where a primitive was declared: nothing stands for it.
        assert!(!ok(json!({"n": {"x": 1}, "b": true}), b"1", b"true"));
    }

    #[test]
    fn mismatch_missing_extra_repeated_long_and_invalid_are_refused_naming_the_header_only() {
        let d = region();
        let secret = "s3cr3t-region";
        let args = json!({"region": secret});
        let long = vec![b'a'; MAX_PARAM_HEADER_LEN + 1];
        let cases: [&[(&str, &[u8])]; 6] = [
            &[("mcp-param-region", b"other")],
            &[],
            &[
                ("mcp-param-region", b"s3cr3t-region"),
                ("Mcp-Param-Region", b"s3cr3t-region"),
            ],
            &[("mcp-param-region", b"s3cr3t\x01region")],
            &[("mcp-param-region", b"=?base64?czNjcjN0LXJlZ2lvbg?=")],
            &[("mcp-param-region", &long)],
        ];
        for sent in cases {
            let e = check(&d, args.clone(), sent).unwrap_err();
            assert_eq!(e.code(), code::HEADER_MISMATCH);
            assert!(
                e.public_message().contains("Mcp-Param-Region"),
                "{}",
                e.public_message()
            );
            assert!(!format!("{e:?}").contains(secret), "{e:?}");
            assert!(!e.public_message().contains(secret));
        }
        // A header for an argument the body does not carry.
        let e = check(&d, json!({"query": "q"}), &[("mcp-param-region", b"x")]).unwrap_err();
        assert_eq!(e.code(), code::HEADER_MISMATCH);
    }

    #[test]
    fn what_a_client_sends_passes_the_check() {
        let d = declared(json!({"type": "object", "properties": {
            "a": {"type": "string", "x-mcp-header": "A"},
            "b": {"type": "string", "x-mcp-header": "B"},
            "c": {"type": "string", "x-mcp-header": "C"},
            "d": {"type": "string", "x-mcp-header": "D"},
            "e": {"type": "integer", "x-mcp-header": "E"},
            "f": {"type": "boolean", "x-mcp-header": "F"},
            "g": {"type": "string", "x-mcp-header": "G"},
            "h": {"type": "string", "x-mcp-header": "H"},
        }}));
        let args = json!({"a": "us-west1", "b": "Hello, 世界", "c": " padded ",
            "d": "=?base64?literal?=", "e": -7, "f": true, "g": "line1\nline2", "h": null});
        let pairs = d.pairs(Some(&args));
        let sent: Vec<(&str, &str)> = pairs.iter().map(|(n, v)| (*n, v.as_str())).collect();
        assert_eq!(
            sent,
            [
                ("mcp-param-a", "us-west1"),
                ("mcp-param-b", "=?base64?SGVsbG8sIOS4lueVjA==?="),
                ("mcp-param-c", "=?base64?IHBhZGRlZCA=?="),
                ("mcp-param-d", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
                ("mcp-param-e", "-7"),
                ("mcp-param-f", "true"),
                ("mcp-param-g", "=?base64?bGluZTEKbGluZTI=?="),
            ]
        );
        let raw: Vec<(&str, &[u8])> = sent.iter().map(|(n, v)| (*n, v.as_bytes())).collect();
        assert!(check(&d, args, &raw).is_ok());
    }
}
