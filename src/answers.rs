//! Validation of an accepted form elicitation's `content` against the
//! `requestedSchema` that was asked (spec: elicitation §Requested Schema).
//!
//! Only what the primitive schemas can say is checked: types, `required`, enum
//! membership (`enum`, `oneOf`, multi-select `items`), string formats and
//! lengths, number bounds and integer-ness, item counts. Keys the schema does not
//! declare are dropped, so a handler never sees a value nobody validated.

use serde_json::Value;

use crate::wire::JsonObject;
use crate::wire::schema::{
    AnswerProblem, EnumOption, PrimitiveSchema, RequestedSchema, StringFormat,
};

impl RequestedSchema {
    /// Checks an accepted form's `content` against this schema; on success
    /// returns the content with undeclared keys removed. What the engine checks
    /// before a handler sees an answer, and what a client can check before it
    /// sends one.
    ///
    /// ```
    /// use mrtr::wire::RequestedSchema;
    /// use serde_json::json;
    /// let schema = RequestedSchema::from_value(&json!({"type":"object",
    ///     "properties":{"env":{"type":"string","enum":["staging","production"]}},
    ///     "required":["env"]})).unwrap();
    /// let ok = json!({"env":"staging","extra":1});
    /// let kept = schema.validate_content(ok.as_object().unwrap()).unwrap();
    /// assert_eq!(serde_json::Value::Object(kept), json!({"env":"staging"}));
    /// let bad = json!({"env":"moon"});
    /// assert!(schema.validate_content(bad.as_object().unwrap()).is_err());
    /// ```
    ///
    /// # Errors
    /// Every problem found ([`AnswerProblem`]: fields and rules, never the
    /// values), in field order.
    pub fn validate_content(&self, content: &JsonObject) -> Result<JsonObject, Vec<AnswerProblem>> {
        validate_content(self, content)
    }
}

/// Checks `content` against `schema` ([`RequestedSchema::validate_content`]).
pub(crate) fn validate_content(
    schema: &RequestedSchema,
    content: &JsonObject,
) -> Result<JsonObject, Vec<AnswerProblem>> {
    let mut problems = Vec::new();
    let mut kept = JsonObject::new();
    for (name, prop) in &schema.properties {
        match content.get(name) {
            None => {
                if schema.is_required(name) {
                    problems.push(AnswerProblem {
                        field: name.clone(),
                        message: "is required".into(),
                    });
                }
            }
            Some(v) => match check(prop, v) {
                Ok(()) => {
                    kept.insert(name.clone(), v.clone());
                }
                Err(message) => problems.push(AnswerProblem {
                    field: name.clone(),
                    message,
                }),
            },
        }
    }
    // `required` may name a key the properties do not define; such a schema can never be
    // satisfied by a validated key, so report it rather than accept blindly.
    if let Some(req) = &schema.required {
        for r in req {
            if !schema.properties.contains_key(r) {
                problems.push(AnswerProblem {
                    field: r.clone(),
                    message: "is required but not defined by the form".into(),
                });
            }
        }
    }
    if problems.is_empty() {
        Ok(kept)
    } else {
        Err(problems)
    }
}

/// Checks one answered value against its property, by the property's kind; the
/// error says what the value must be.
fn check(prop: &PrimitiveSchema, v: &Value) -> Result<(), String> {
    match prop {
        PrimitiveSchema::String {
            min_length,
            max_length,
            format,
            ..
        } => check_string(v, *min_length, *max_length, format.as_ref()),
        PrimitiveSchema::Number {
            integer,
            minimum,
            maximum,
            ..
        } => check_number(v, *integer, *minimum, *maximum),
        PrimitiveSchema::Boolean { .. } => v
            .is_boolean()
            .then_some(())
            .ok_or_else(|| "must be true or false".into()),
        PrimitiveSchema::SingleSelect { options, .. } => {
            let s = v.as_str().ok_or("must be one of the listed choices")?;
            if options.iter().any(|o| o.value == s) {
                Ok(())
            } else {
                Err(format!(
                    "must be one of: {}",
                    choice_list(options.iter().map(|o| o.value.as_str()))
                ))
            }
        }
        PrimitiveSchema::MultiSelect {
            options,
            min_items,
            max_items,
            ..
        } => check_multi_select(v, options, *min_items, *max_items),
    }
}

/// A string: its length in characters within the bounds, and of its format.
fn check_string(
    v: &Value,
    min_length: Option<u64>,
    max_length: Option<u64>,
    format: Option<&StringFormat>,
) -> Result<(), String> {
    let s = v.as_str().ok_or("must be text")?;
    let n = s.chars().count() as u64;
    if let Some(min) = min_length
        && n < min
    {
        return Err(format!("must be at least {min} characters"));
    }
    if let Some(max) = max_length
        && n > max
    {
        return Err(format!("must be at most {max} characters"));
    }
    if let Some(f) = format {
        let ok = match f {
            StringFormat::Email => is_email(s),
            StringFormat::Uri => is_uri(s),
            StringFormat::Date => is_date(s),
            StringFormat::DateTime => is_date_time(s),
        };
        if !ok {
            return Err(format!("must be a valid {}", f.as_str()));
        }
    }
    Ok(())
}

/// A number (a whole one for an integer property) within the bounds.
fn check_number(
    v: &Value,
    integer: bool,
    minimum: Option<f64>,
    maximum: Option<f64>,
) -> Result<(), String> {
    let x = v.as_f64().ok_or(if integer {
        "must be a whole number"
    } else {
        "must be a number"
    })?;
    if integer && !(v.is_i64() || v.is_u64() || x.fract() == 0.0) {
        return Err("must be a whole number".into());
    }
    if let Some(min) = minimum
        && x < min
    {
        return Err(format!(
            "must be at least {}",
            crate::wire::schema::number_value(min)
        ));
    }
    if let Some(max) = maximum
        && x > max
    {
        return Err(format!(
            "must be at most {}",
            crate::wire::schema::number_value(max)
        ));
    }
    Ok(())
}

/// A list of the listed choices, none twice, as many as the bounds allow.
fn check_multi_select(
    v: &Value,
    options: &[EnumOption],
    min_items: Option<u64>,
    max_items: Option<u64>,
) -> Result<(), String> {
    let arr = v.as_array().ok_or("must be a list of choices")?;
    let mut seen = std::collections::HashSet::new();
    for item in arr {
        let s = item.as_str().ok_or("must be a list of choices")?;
        if !options.iter().any(|o| o.value == s) {
            return Err(format!(
                "may only contain: {}",
                choice_list(options.iter().map(|o| o.value.as_str()))
            ));
        }
        if !seen.insert(s) {
            return Err("must not list a choice twice".into());
        }
    }
    let n = arr.len() as u64;
    if let Some(min) = min_items
        && n < min
    {
        return Err(format!("needs at least {min} choices"));
    }
    if let Some(max) = max_items
        && n > max
    {
        return Err(format!("allows at most {max} choices"));
    }
    Ok(())
}

fn choice_list<'a>(it: impl Iterator<Item = &'a str>) -> String {
    it.collect::<Vec<_>>().join(", ")
}

fn is_email(s: &str) -> bool {
    let Some((local, domain)) = s.rsplit_once('@') else {
        return false;
    };
    !local.is_empty()
        && local.len() <= 64
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !s.chars().any(|c| c.is_whitespace() || c.is_control())
        && !local.contains('@')
        && domain
            .split('.')
            .all(|l| !l.is_empty() && l.chars().all(|c| c.is_alphanumeric() || c == '-'))
}

fn is_uri(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !rest.is_empty()
        && !s.chars().any(|c| c.is_whitespace() || c.is_control())
}

fn digits(s: &str) -> Option<u32> {
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let (Some(y), Some(m), Some(d)) = (digits(&s[0..4]), digits(&s[5..7]), digits(&s[8..10]))
    else {
        return false;
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// RFC 3339 §5.6 `date-time`: `full-date "T" partial-time time-offset`, where
/// `partial-time` is `HH:MM:SS` with an optional `.` and fraction digits, and
/// `time-offset` is `Z` or `+HH:MM` / `-HH:MM`. A second of 60 is a leap second;
/// `T` and `Z` may be lower case (§5.6, NOTE).
fn is_date_time(s: &str) -> bool {
    let Some((date, time)) = s.split_once(['T', 't']) else {
        return false;
    };
    if !is_date(date) {
        return false;
    }
    let (time, offset) = if let Some(time) = time.strip_suffix(['Z', 'z']) {
        (time, None)
    } else if let Some(at) = time.rfind(['+', '-']) {
        (&time[..at], Some(&time[at + 1..]))
    } else {
        return false;
    };
    let (hms, fraction) = match time.split_once('.') {
        Some((hms, fraction)) => (hms, Some(fraction)),
        None => (time, None),
    };
    if fraction.is_some_and(|f| f.is_empty() || !f.bytes().all(|b| b.is_ascii_digit())) {
        return false;
    }
    clock(hms, true) && offset.is_none_or(|o| clock(o, false))
}

/// `HH:MM:SS` (with `seconds`) or `HH:MM`, two digits each, hours 00-23,
/// minutes 00-59, seconds 00-60.
fn clock(s: &str, seconds: bool) -> bool {
    let parts: Vec<&str> = s.split(':').collect();
    let limits: &[u32] = if seconds { &[23, 59, 60] } else { &[23, 59] };
    parts.len() == limits.len()
        && parts
            .iter()
            .zip(limits)
            .all(|(p, max)| p.len() == 2 && digits(p).is_some_and(|n| n <= *max))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(v: Value) -> RequestedSchema {
        RequestedSchema::from_value(&v).unwrap()
    }

    fn run(s: &RequestedSchema, c: Value) -> Result<JsonObject, Vec<AnswerProblem>> {
        validate_content(s, c.as_object().unwrap())
    }

    #[test]
    fn types_bounds_and_required() {
        let s = schema(json!({"type":"object","properties":{
            "name":{"type":"string","minLength":2,"maxLength":5},
            "age":{"type":"integer","minimum":0,"maximum":150},
            "score":{"type":"number","maximum":1.5},
            "ok":{"type":"boolean"}},"required":["name","ok"]}));
        assert!(run(&s, json!({"name":"Al","ok":true})).is_ok());
        assert!(run(&s, json!({"name":"Al","ok":true,"age":30,"score":1.5})).is_ok());
        assert!(run(&s, json!({"name":"A","ok":true})).is_err());
        assert!(run(&s, json!({"name":"Alexander","ok":true})).is_err());
        assert!(run(&s, json!({"name":"Al"})).is_err());
        assert!(run(&s, json!({"name":"Al","ok":"yes"})).is_err());
        assert!(run(&s, json!({"name":"Al","ok":true,"age":2.5})).is_err());
        assert!(run(&s, json!({"name":"Al","ok":true,"age":-1})).is_err());
        assert!(run(&s, json!({"name":"Al","ok":true,"score":1.6})).is_err());
        assert!(run(&s, json!({"name":12,"ok":true})).is_err());
    }

    #[test]
    fn enums_and_multi_select() {
        let s = schema(json!({"type":"object","properties":{
            "c":{"type":"string","oneOf":[{"const":"r","title":"Red"},{"const":"g","title":"Green"}]},
            "l":{"type":"string","enum":["a","b"],"enumNames":["A","B"]},
            "m":{"type":"array","items":{"type":"string","enum":["x","y","z"]},"minItems":1,"maxItems":2}}}));
        assert!(run(&s, json!({"c":"r","l":"b","m":["x","z"]})).is_ok());
        assert!(
            run(&s, json!({"c":"Red"})).is_err(),
            "a title is not a value"
        );
        assert!(run(&s, json!({"l":"A"})).is_err());
        assert!(run(&s, json!({"m":[]})).is_err());
        assert!(run(&s, json!({"m":["x","y","z"]})).is_err());
        assert!(run(&s, json!({"m":["x","x"]})).is_err());
        assert!(run(&s, json!({"m":["w"]})).is_err());
    }

    #[test]
    fn date_is_a_real_calendar_day() {
        for ok in [
            "2024-02-29", // leap year
            "2000-02-29", // divisible by 400
            "2023-02-28",
            "2026-01-31",
            "2026-04-30",
            "2026-12-31",
            "0000-01-01",
            "9999-12-31",
        ] {
            assert!(is_date(ok), "{ok}");
        }
        for bad in [
            "2023-02-29", // not a leap year
            "1900-02-29", // divisible by 100, not by 400
            "2024-02-30",
            "2026-04-31",
            "2026-13-01",
            "2026-00-10",
            "2026-01-00",
            "2026-01-32",
            "24-01-01",
            "2026-1-01",
            "2026-01-1",
            "2026/01/01",
            "2026-01-01 ",
            " 2026-01-01",
            "+2026-01-01",
            "2026-01-0a",
            "２０２６-01-01", // full-width digits
            "2026-é-01",
            "",
        ] {
            assert!(!is_date(bad), "{bad}");
        }
    }

    #[test]
    fn date_time_is_rfc_3339_with_an_offset() {
        for ok in [
            "2026-07-28T10:00:00Z",
            "2026-07-28t10:00:00z",
            "2026-07-28T00:00:00Z",
            "2026-07-28T23:59:59Z",
            "2016-12-31T23:59:60Z", // a leap second
            "2026-07-28T10:00:00.123+02:00",
            "2026-07-28T10:00:00.5-05:30",
            "2026-07-28T10:00:00+23:59",
            "2024-02-29T10:00:00Z",
        ] {
            assert!(is_date_time(ok), "{ok}");
        }
        for bad in [
            "2026-07-28T24:00:00Z", // hours stop at 23
            "2026-07-28T25:00:00Z",
            "2026-07-28T10:60:00Z",
            "2026-07-28T10:00:61Z",
            "2026-07-28T10:00:00", // no offset
            "2026-07-28 10:00:00Z",
            "2026-07-28T10:00Z",
            "2026-07-28T1:00:00Z",
            "2026-07-28T10:00:00.Z",
            "2026-07-28T10:00:00.1a+02:00",
            "2026-07-28T10:00:00+0200",
            "2026-07-28T10:00:00+24:00",
            "2026-07-28T10:00:00+02:60",
            "2026-07-28T10:00:00+02",
            "2026-07-28T10:00:00Z+02:00",
            "2026-07-28T10:00:00ZZ",
            "2023-02-29T10:00:00Z",
            "2026-07-28",
            "T10:00:00Z",
            "2026-07-28Té0:00:00Z",
            "",
        ] {
            assert!(!is_date_time(bad), "{bad}");
        }
    }

    #[test]
    fn email_is_a_pragmatic_addr_spec() {
        for ok in [
            "a@example.com",
            "a.b+tag@example.com",
            "first_last@sub.example.co.uk",
            "x@xn--bcher-kva.example",
            "ü@例え.jp",
        ] {
            assert!(is_email(ok), "{ok}");
        }
        for bad in [
            "a@b", // no dot in the domain
            "@example.com",
            "a@",
            "a",
            "a@@example.com",
            "a@b@example.com",
            "a b@example.com",
            "a@exa mple.com",
            "a@example.com ",
            "a\t@example.com",
            "a\n@example.com",
            "a@.example.com",
            "a@example.com.",
            "a@example..com",
            "a@exa_mple.com",
            "",
        ] {
            assert!(!is_email(bad), "{bad:?}");
        }
    }

    #[test]
    fn uri_is_absolute() {
        for ok in [
            "https://example.com/a?b=c#d",
            "http://127.0.0.1:8808/mcp",
            "urn:isbn:0451450523",
            "mailto:a@example.com",
            "file:///tmp",
            "git+ssh://host/repo",
            "a.b-c+d:x",
            "HTTPS://EXAMPLE.COM",
        ] {
            assert!(is_uri(ok), "{ok}");
        }
        for bad in [
            "no scheme",
            "example.com/a",
            "/relative/path",
            "//host/path",
            "1http://x",
            "+http://x",
            "ht tp://x",
            "ht_tp://x",
            "https:",
            ":nothing",
            "https://exa mple.com",
            "https://example.com/\n",
            "https://example.com/\u{7f}",
            "é://x",
            "",
        ] {
            assert!(!is_uri(bad), "{bad:?}");
        }
    }

    #[test]
    fn a_wrong_format_is_named_by_its_format() {
        let s = schema(json!({"type":"object","properties":{
            "d":{"type":"string","format":"date"},
            "t":{"type":"string","format":"date-time"},
            "e":{"type":"string","format":"email"},
            "u":{"type":"string","format":"uri"}}}));
        let ok = json!({"d":"2024-02-29","t":"2026-07-28T10:00:00Z","e":"a@b.co","u":"https://x"});
        assert!(run(&s, ok).is_ok());
        let bad = json!({"d":"2023-02-29","t":"2026-07-28T24:00:00Z","e":"a@b","u":"x"});
        let problems: Vec<String> = run(&s, bad)
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            problems,
            [
                "d: must be a valid date",
                "t: must be a valid date-time",
                "e: must be a valid email",
                "u: must be a valid uri"
            ]
        );
    }

    #[test]
    fn extra_keys_are_dropped_and_messages_never_echo_values() {
        let s =
            schema(json!({"type":"object","properties":{"e":{"type":"string","format":"email"}}}));
        let kept = run(&s, json!({"e":"a@b.co","zzz":"SECRET"})).unwrap();
        assert!(!kept.contains_key("zzz"));
        let err = run(&s, json!({"e":"SECRET-VALUE"})).unwrap_err();
        assert!(err.iter().all(|p| !p.message.contains("SECRET")));
    }
}
