//! The questions on the terminal: forms field by field, and consent to a link,
//! a sampling request or sharing the current directory.

use std::io::{BufRead, Write};
use std::net::IpAddr;

use serde_json::{Value, json};

use mrtr::wire::JsonObject;
use mrtr::wire::{
    CreateMessageParams, ElicitAction, ElicitFormParams, ElicitResult, ElicitUrlParams, Root,
};
use mrtr::wire::{PrimitiveSchema, RequestedSchema, StringFormat};

use super::sanitize::{one_line, quoted};

#[cfg(test)]
mod tests;

/// What the user typed for one field.
enum Typed {
    Line(String),
    Decline,
    Cancel,
}

fn read(input: &mut dyn BufRead) -> std::io::Result<Typed> {
    let mut raw = Vec::new();
    if input.read_until(b'\n', &mut raw)? == 0 {
        // End of input: the user went away.
        return Ok(Typed::Cancel);
    }
    // Bytes that are not UTF-8 (a terminal in another encoding) become U+FFFD and
    // fail the field's checks, rather than end the dialog.
    let line = String::from_utf8_lossy(&raw);
    let line = line.trim_end_matches(['\n', '\r']).to_owned();
    Ok(match line.trim() {
        ":decline" => Typed::Decline,
        ":cancel" => Typed::Cancel,
        _ => Typed::Line(line),
    })
}

fn refusal(action: ElicitAction) -> ElicitResult {
    ElicitResult {
        action,
        content: None,
    }
}

pub(super) fn problem_list(problems: &[mrtr::wire::AnswerProblem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Asks a form field by field. Generic over the streams so it can be tested.
pub(crate) fn ask_form(
    form: &ElicitFormParams,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> std::io::Result<ElicitResult> {
    writeln!(out, "\n? {}", quoted(&form.message))?;
    writeln!(
        out,
        "  (answer each field; empty keeps the default or skips an optional field; :decline or :cancel to refuse)"
    )?;
    let schema: &RequestedSchema = &form.requested_schema;
    let mut content = JsonObject::new();
    for (name, field) in &schema.properties {
        let required = schema.is_required(name);
        loop {
            write!(out, "{}", field_prompt(name, field, required))?;
            out.flush()?;
            let line = match read(input)? {
                Typed::Decline => return Ok(refusal(ElicitAction::Decline)),
                Typed::Cancel => return Ok(refusal(ElicitAction::Cancel)),
                Typed::Line(l) => l,
            };
            match parse_field(name, field, line.trim(), required) {
                Ok(Some(v)) => {
                    content.insert(name.clone(), v);
                    break;
                }
                Ok(None) => break,
                Err(msg) => writeln!(out, "  ! {}", one_line(&msg))?,
            }
        }
    }
    // The whole form once more, as the server will check it (e.g. a `required`
    // name no field defines can never be met: say so rather than send it).
    match schema.validate_content(&content) {
        Ok(kept) => Ok(ElicitResult {
            action: ElicitAction::Accept,
            content: Some(kept),
        }),
        Err(problems) => {
            writeln!(
                out,
                "  ! the form cannot be completed ({}); cancelled",
                one_line(&problem_list(&problems))
            )?;
            Ok(refusal(ElicitAction::Cancel))
        }
    }
}

fn field_prompt(name: &str, field: &PrimitiveSchema, required: bool) -> String {
    let mut s = format!("  {}", one_line(field.title().unwrap_or(name)));
    if let Some(d) = field.description() {
        s.push_str(&format!(" — {}", one_line(d)));
    }
    let mut choices = Vec::new();
    let (ty, default) = match field {
        PrimitiveSchema::String {
            default,
            format,
            min_length,
            max_length,
            ..
        } => {
            let mut t = format.map_or("text", StringFormat::as_str).to_owned();
            if min_length.is_some() || max_length.is_some() {
                t.push_str(&format!(
                    ", {}..{} chars",
                    fmt_opt(min_length),
                    fmt_opt(max_length)
                ));
            }
            (t, default.clone())
        }
        PrimitiveSchema::Number {
            integer,
            minimum,
            maximum,
            default,
            ..
        } => {
            let mut t = if *integer { "integer" } else { "number" }.to_owned();
            if minimum.is_some() || maximum.is_some() {
                t.push_str(&format!(", {}..{}", fmt_opt(minimum), fmt_opt(maximum)));
            }
            (t, default.map(|d| d.to_string()))
        }
        PrimitiveSchema::Boolean { default, .. } => {
            ("y/n".to_owned(), default.map(|b| yes_no(b).to_owned()))
        }
        PrimitiveSchema::SingleSelect {
            options, default, ..
        } => {
            choices.extend(options.iter().map(|o| label(&o.title, &o.value)));
            ("choose one: number or value".to_owned(), default.clone())
        }
        PrimitiveSchema::MultiSelect {
            options, default, ..
        } => {
            choices.extend(options.iter().map(|o| label(&o.title, &o.value)));
            (
                "choose any: numbers or values, comma-separated".to_owned(),
                default.as_ref().map(|d| d.join(",")),
            )
        }
        // A field type this client does not know (`PrimitiveSchema` may grow).
        _ => ("value".to_owned(), None),
    };
    s.push_str(&format!(" ({ty})"));
    if let Some(d) = default {
        s.push_str(&format!(" [default: {}]", one_line(&d)));
    }
    if required {
        s.push_str(" *");
    }
    if choices.is_empty() {
        s.push_str(": ");
    } else {
        for (i, c) in choices.iter().enumerate() {
            s.push_str(&format!("\n      {}) {c}", i + 1));
        }
        s.push_str("\n    > ");
    }
    s
}

pub(super) fn kind_of(f: &PrimitiveSchema) -> String {
    match f {
        PrimitiveSchema::String {
            format: Some(fmt), ..
        } => format!("{} string", fmt.as_str()),
        PrimitiveSchema::String { .. } => "string".into(),
        PrimitiveSchema::Number { integer: true, .. } => "integer".into(),
        PrimitiveSchema::Number { .. } => "number".into(),
        PrimitiveSchema::Boolean { .. } => "true|false".into(),
        PrimitiveSchema::SingleSelect { options, .. } => options
            .iter()
            .map(|o| o.value.as_str())
            .collect::<Vec<_>>()
            .join("|"),
        PrimitiveSchema::MultiSelect { options, .. } => {
            format!(
                "[{}]",
                options
                    .iter()
                    .map(|o| o.value.as_str())
                    .collect::<Vec<_>>()
                    .join("|")
            )
        }
        _ => "value".into(),
    }
}

fn label(title: &str, value: &str) -> String {
    if title == value {
        one_line(value)
    } else {
        format!("{} ({})", one_line(title), one_line(value))
    }
}

fn fmt_opt<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref().map(ToString::to_string).unwrap_or_default()
}

fn yes_no(b: bool) -> &'static str {
    if b { "y" } else { "n" }
}

/// The value of field `name` from the typed text: `Ok(None)` leaves it out. The
/// text is read as the field's type here; whether the value fits the field
/// (lengths, formats, bounds, choices) is the library's answer validation, the
/// same the server applies ([`RequestedSchema::validate_content`](mrtr::wire::RequestedSchema::validate_content)).
fn parse_field(
    name: &str,
    field: &PrimitiveSchema,
    text: &str,
    required: bool,
) -> Result<Option<Value>, String> {
    if text.is_empty() {
        let default = match field {
            PrimitiveSchema::String { default, .. } => default.clone().map(Value::String),
            PrimitiveSchema::Number {
                default, integer, ..
            } => default.map(|d| number(d, *integer)),
            PrimitiveSchema::Boolean { default, .. } => default.map(Value::Bool),
            PrimitiveSchema::SingleSelect { default, .. } => default.clone().map(Value::String),
            PrimitiveSchema::MultiSelect { default, .. } => default.clone().map(|d| json!(d)),
            _ => None,
        };
        return match (default, required) {
            (Some(d), _) => fits(name, field, &d)
                .map(|()| Some(d))
                .map_err(|m| format!("the default does not fit ({m}); type a value")),
            (None, true) => Err("this field is required".into()),
            (None, false) => Ok(None),
        };
    }
    let value = match field {
        PrimitiveSchema::String { .. } => Value::String(text.to_owned()),
        PrimitiveSchema::Number { integer, .. } => {
            let x: f64 = text
                .parse()
                .ok()
                .filter(|x: &f64| x.is_finite())
                .ok_or_else(|| not_a(*integer))?;
            if *integer && x.fract() != 0.0 {
                return Err(not_a(true));
            }
            number(x, *integer)
        }
        PrimitiveSchema::Boolean { .. } => match text.to_lowercase().as_str() {
            "y" | "yes" | "true" => Value::Bool(true),
            "n" | "no" | "false" => Value::Bool(false),
            _ => return Err("answer y or n".into()),
        },
        PrimitiveSchema::SingleSelect { options, .. } => {
            let pick = pick(options.iter().map(|o| (&o.value, &o.title)), text)
                .ok_or_else(|| "choose one of the listed options (number or value)".to_owned())?;
            Value::String(pick)
        }
        PrimitiveSchema::MultiSelect { options, .. } => {
            let mut picked = Vec::new();
            for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let p =
                    pick(options.iter().map(|o| (&o.value, &o.title)), part).ok_or_else(|| {
                        format!("{:?} is not one of the listed options", one_line(part))
                    })?;
                if !picked.contains(&p) {
                    picked.push(p);
                }
            }
            json!(picked)
        }
        // A field type this client does not know (`PrimitiveSchema` may grow): it
        // cannot be typed here, so the form fails rather than send a guess.
        _ => return Err("this kind of field cannot be answered with mrtr call".into()),
    };
    fits(name, field, &value)?;
    Ok(Some(value))
}

fn not_a(integer: bool) -> String {
    if integer {
        "not an integer (e.g. 42)".into()
    } else {
        "not a number (e.g. 4.2)".into()
    }
}

/// Whether `value` fits `field`, by the library's answer validation; the message
/// says what is wrong (never the value) and, for a format, shows one that fits.
fn fits(name: &str, field: &PrimitiveSchema, value: &Value) -> Result<(), String> {
    let mut schema = RequestedSchema::new();
    schema.properties.insert(name.to_owned(), field.clone());
    let mut content = JsonObject::new();
    content.insert(name.to_owned(), value.clone());
    match schema.validate_content(&content) {
        Ok(_) => Ok(()),
        Err(problems) => {
            let mut msg = problems
                .iter()
                .map(|p| p.message.as_str())
                .collect::<Vec<_>>()
                .join("; ");
            if let PrimitiveSchema::String {
                format: Some(f), ..
            } = field
            {
                msg.push_str(match f {
                    StringFormat::Email => " (e.g. ada@example.org)",
                    StringFormat::Uri => " (e.g. https://example.org/a)",
                    StringFormat::Date => " (e.g. 2026-07-28)",
                    StringFormat::DateTime => " (e.g. 2026-07-28T10:00:00Z)",
                    // A format this client does not know (`StringFormat` may grow).
                    _ => "",
                });
            }
            Err(msg)
        }
    }
}

fn number(x: f64, integer: bool) -> Value {
    if integer && x.abs() < 9.0e15 {
        // An integral value within i64's exact range: send it as an integer.
        json!(x as i64)
    } else {
        json!(x)
    }
}

fn pick<'a>(options: impl Iterator<Item = (&'a String, &'a String)>, text: &str) -> Option<String> {
    let options: Vec<_> = options.collect();
    if let Ok(i) = text.parse::<usize>()
        && let Some(chosen) = i.checked_sub(1).and_then(|i| options.get(i))
    {
        return Some(chosen.0.clone());
    }
    options
        .iter()
        .find(|(v, t)| v.as_str() == text || t.to_lowercase() == text.to_lowercase())
        .map(|(v, _)| (*v).clone())
}

/// Why a link is not offered, or its host.
fn link_host(url: &str) -> Result<String, &'static str> {
    let uri: http::Uri = url.parse().map_err(|_| "it is not a valid URL")?;
    let host = uri.host().ok_or("it names no host")?;
    let scheme = uri.scheme_str().unwrap_or_default();
    let http = scheme.eq_ignore_ascii_case("http");
    if scheme.eq_ignore_ascii_case("https") || (http && is_loopback(host)) {
        Ok(host.to_owned())
    } else if http {
        Err("it is plain http to another machine (only https, or http to this machine)")
    } else {
        Err("only https links are offered (or http to this machine)")
    }
}

/// `localhost`, 127.0.0.0/8 or ::1.
fn is_loopback(host: &str) -> bool {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    host.eq_ignore_ascii_case("localhost")
        || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Shows a url-mode elicitation and asks for consent. A link that is not `https`
/// (or `http` to this machine) is not shown at all: it is declined.
pub(crate) fn ask_url(
    url: &ElicitUrlParams,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> std::io::Result<ElicitResult> {
    writeln!(out, "\n? {}", quoted(&url.message))?;
    let host = match link_host(&url.url) {
        Ok(h) => h,
        Err(why) => {
            writeln!(
                out,
                "  ! The server sent a link that mrtr call does not offer: {why}. Declined."
            )?;
            return Ok(refusal(ElicitAction::Decline));
        }
    };
    writeln!(out, "  The server asks you to open a link. It leads to")?;
    writeln!(out, "    host: {}", one_line(&host))?;
    writeln!(out, "    link: {}", one_line(&url.url))?;
    loop {
        write!(
            out,
            "  Open it and continue? (y = accept, n = decline, :cancel): "
        )?;
        out.flush()?;
        match read(input)? {
            Typed::Decline => return Ok(refusal(ElicitAction::Decline)),
            Typed::Cancel => return Ok(refusal(ElicitAction::Cancel)),
            Typed::Line(l) => match l.trim().to_lowercase().as_str() {
                "y" | "yes" => {
                    writeln!(
                        out,
                        "  Open the link in your browser; the call continues now."
                    )?;
                    return Ok(ElicitResult {
                        action: ElicitAction::Accept,
                        content: None,
                    });
                }
                "n" | "no" => return Ok(refusal(ElicitAction::Decline)),
                _ => writeln!(out, "  ! answer y or n")?,
            },
        }
    }
}

/// The text of a sampling message's content (a block or an array of blocks).
fn content_text(content: Option<&Value>) -> String {
    let block = |b: &Value| match b.get("text").and_then(Value::as_str) {
        Some(t) => t.to_owned(),
        None => format!(
            "[{} content]",
            one_line(b.get("type").and_then(Value::as_str).unwrap_or("non-text"))
        ),
    };
    match content {
        Some(Value::Array(bs)) => bs.iter().map(block).collect::<Vec<_>>().join("\n"),
        Some(b) => block(b),
        None => String::new(),
    }
}

/// Shows a sampling request (what the server asks the model) and reads the
/// model's reply from the user; `None` = declined.
pub(crate) fn ask_sampling(
    params: &CreateMessageParams,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> std::io::Result<Option<String>> {
    writeln!(
        out,
        "\n? The server asks for a model reply (max {} tokens). It asks the model:",
        params.max_tokens
    )?;
    if let Some(s) = &params.system_prompt {
        writeln!(out, "  system: {}", quoted(s))?;
    }
    for m in &params.messages {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("?");
        writeln!(
            out,
            "  {}: {}",
            one_line(role),
            quoted(&content_text(m.get("content")))
        )?;
    }
    write!(out, "  Your reply as the model (:decline to refuse): ")?;
    out.flush()?;
    Ok(match read(input)? {
        Typed::Line(l) => Some(l),
        Typed::Decline | Typed::Cancel => None,
    })
}

/// Asks whether to share `root` (the current directory) with the server.
pub(crate) fn ask_roots(
    root: &Root,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> std::io::Result<bool> {
    writeln!(
        out,
        "\n? The server asks for your roots (the folders it may work in)."
    )?;
    writeln!(out, "  Share the current directory?")?;
    writeln!(out, "    {}", one_line(&root.uri))?;
    loop {
        write!(out, "  (y = share it, n = decline): ")?;
        out.flush()?;
        match read(input)? {
            Typed::Decline | Typed::Cancel => return Ok(false),
            Typed::Line(l) => match l.trim().to_lowercase().as_str() {
                "y" | "yes" => return Ok(true),
                "n" | "no" => return Ok(false),
                _ => writeln!(out, "  ! answer y or n")?,
            },
        }
    }
}
