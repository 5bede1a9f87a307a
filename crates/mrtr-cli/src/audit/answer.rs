//! Plain values for whatever a server asks: a tool's arguments from its input
//! schema, and an answer to each kind of input request, each string one of the
//! audit's own marked values (so that the leak checks can find them).

use serde_json::{Map, Value, json};

/// The kinds of input request, as the capability gate tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Kind {
    /// `elicitation/create` in form mode.
    Form,
    /// `elicitation/create` in URL mode.
    Url,
    /// `sampling/createMessage` without tools.
    Sampling,
    /// `sampling/createMessage` with `tools`.
    SamplingTools,
    /// `roots/list`.
    Roots,
}

impl Kind {
    /// Its name in the report.
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Form => "form elicitation",
            Self::Url => "URL elicitation",
            Self::Sampling => "sampling",
            Self::SamplingTools => "sampling with tools",
            Self::Roots => "roots",
        }
    }

    /// The capabilities declared when this kind is left out: everything else.
    pub(super) fn caps_without(self) -> Value {
        let mut caps = super::target::all_caps();
        match self {
            Self::Form => caps["elicitation"] = json!({"url": {}}),
            Self::Url => caps["elicitation"] = json!({"form": {}}),
            Self::Sampling => {
                caps.as_object_mut().map(|c| c.remove("sampling"));
            }
            Self::SamplingTools => caps["sampling"] = json!({}),
            Self::Roots => {
                caps.as_object_mut().map(|c| c.remove("roots"));
            }
        }
        caps
    }
}

/// The kind of one input request, if it is one the spec allows.
pub(super) fn kind_of(request: &Value) -> Option<Kind> {
    match request.get("method").and_then(Value::as_str)? {
        "elicitation/create" => match request["params"].get("mode").and_then(Value::as_str) {
            Some("url") => Some(Kind::Url),
            None | Some("form") => Some(Kind::Form),
            Some(_) => None,
        },
        "sampling/createMessage" => Some(if request["params"].get("tools").is_some() {
            Kind::SamplingTools
        } else {
            Kind::Sampling
        }),
        "roots/list" => Some(Kind::Roots),
        _ => None,
    }
}

/// The audit's marked values: argument strings start `arg-`, answer strings
/// `ans-`, both followed by this run's tag.
#[derive(Debug, Clone)]
pub(super) struct Marks {
    tag: String,
}

impl Marks {
    pub(super) fn new() -> Self {
        // Not a secret, only unlikely to be anywhere already: the hash of a
        // fresh key string.
        use std::hash::BuildHasher;
        let h = std::collections::hash_map::RandomState::new()
            .hash_one(mrtr::seal::generate_key_string());
        Self {
            tag: format!("{:08x}", h as u32),
        }
    }

    /// An argument string.
    pub(super) fn arg(&self) -> String {
        format!("arg-{}", self.tag)
    }

    /// Another argument string (for the argument binding check).
    pub(super) fn other_arg(&self) -> String {
        format!("arg2-{}", self.tag)
    }

    /// An answer string.
    pub(super) fn answer(&self) -> String {
        format!("ans-{}", self.tag)
    }

    /// Every marked value, to look for where none should be.
    pub(super) fn all(&self) -> [String; 3] {
        [self.arg(), self.other_arg(), self.answer()]
    }
}

/// A value for one property of a JSON schema: `text` for a free string.
fn value_for(prop: &Value, text: &str) -> Value {
    if let Some(c) = prop.get("const") {
        return c.clone();
    }
    if let Some(first) = prop
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
    {
        return first.clone();
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(first) = prop
            .get(key)
            .and_then(Value::as_array)
            .and_then(|a| a.first())
        {
            return value_for(first, text);
        }
    }
    if let Some(d) = prop.get("default") {
        return d.clone();
    }
    let ty = match prop.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("string"),
        _ => "string",
    };
    match ty {
        "boolean" => json!(true),
        "integer" | "number" => {
            let min = prop.get("minimum").and_then(Value::as_f64).unwrap_or(1.0);
            let max = prop
                .get("maximum")
                .and_then(Value::as_f64)
                .unwrap_or(f64::MAX);
            let v = min.max(1.0).min(max).ceil();
            if ty == "integer" {
                json!(v as i64)
            } else {
                json!(v)
            }
        }
        "array" => {
            let item = prop.get("items").cloned().unwrap_or(json!({}));
            if item.get("enum").is_some()
                || item.get("anyOf").is_some()
                || item.get("oneOf").is_some()
            {
                json!([value_for(&item, text)])
            } else {
                json!([])
            }
        }
        "object" => Value::Object(object_for(prop, text, true)),
        _ => match prop.get("format").and_then(Value::as_str) {
            Some("email") => json!(format!("{text}@example.com")),
            Some("uri") => json!(format!("https://example.com/{text}")),
            Some("date") => json!("2026-01-02"),
            Some("date-time") => json!("2026-01-02T03:04:05Z"),
            _ => {
                let min = prop.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
                let max = prop
                    .get("maxLength")
                    .and_then(Value::as_u64)
                    .map_or(usize::MAX, |m| m as usize);
                if text.len() <= max && text.len() >= min {
                    json!(text)
                } else {
                    json!("a".repeat(min.max(1).min(max.max(1))))
                }
            }
        },
    }
}

/// An object for `schema`: its required properties (every property, if `all`).
fn object_for(schema: &Value, text: &str, all: bool) -> Map<String, Value> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = Map::new();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            if all || required.contains(&name.as_str()) {
                out.insert(name.clone(), value_for(prop, text));
            }
        }
    }
    out
}

/// Arguments for a tool or prompt from its input schema: every required property.
pub(super) fn arguments_for(schema: &Value, marks: &Marks) -> Value {
    Value::Object(object_for(schema, &marks.arg(), false))
}

/// A prompt's arguments from its `arguments` list (the required ones, as strings).
pub(super) fn prompt_arguments(list: &Value, marks: &Marks) -> Value {
    let mut out = Map::new();
    for a in list.as_array().into_iter().flatten() {
        if a.get("required").and_then(Value::as_bool) == Some(true)
            && let Some(name) = a.get("name").and_then(Value::as_str)
        {
            out.insert(name.to_owned(), json!(marks.arg()));
        }
    }
    Value::Object(out)
}

/// A string argument of `args` the audit set (a marked one), if any.
pub(super) fn marked_argument(args: &Value, marks: &Marks) -> Option<String> {
    args.as_object()?
        .iter()
        .find(|(_, v)| v.as_str() == Some(marks.arg().as_str()))
        .map(|(k, _)| k.clone())
}

/// The answer to one input request: accepted, with every field filled.
pub(super) fn answer(request: &Value, marks: &Marks) -> Value {
    match kind_of(request) {
        Some(Kind::Form) => {
            let schema = &request["params"]["requestedSchema"];
            json!({"action": "accept", "content": Value::Object(object_for(schema, &marks.answer(), true))})
        }
        Some(Kind::Url) => json!({"action": "accept"}),
        Some(Kind::Sampling | Kind::SamplingTools) => sampled(&marks.answer()),
        Some(Kind::Roots) => json!({"roots": [{"uri": "file:///tmp/mrtr-audit", "name": "audit"}]}),
        None => json!({}),
    }
}

/// A sampling result with `text`.
pub(super) fn sampled(text: &str) -> Value {
    json!({
        "role": "assistant",
        "content": {"type": "text", "text": text},
        "model": "mrtr-audit",
        "stopReason": "endTurn",
    })
}

/// Answers to every request of `requests` (an `inputRequests` object).
pub(super) fn answers(requests: &Map<String, Value>, marks: &Marks) -> Map<String, Value> {
    requests
        .iter()
        .map(|(k, r)| (k.clone(), answer(r, marks)))
        .collect()
}

/// Another answer of the kind `request` asks, differing from [`answer`]'s: a
/// form or URL declined, another sampled text, no roots. Each is one a server
/// must take, so a refusal of it can only be the server's single-use rule.
pub(super) fn other_answer(request: &Value, marks: &Marks) -> Value {
    match kind_of(request) {
        Some(Kind::Form | Kind::Url) => json!({"action": "decline"}),
        Some(Kind::Sampling | Kind::SamplingTools) => sampled(&format!("{}-again", marks.answer())),
        Some(Kind::Roots) => json!({"roots": []}),
        None => json!({}),
    }
}

/// An answer of another kind than `request` asks (a sampling result for a form,
/// a form answer for anything else).
pub(super) fn wrong_kind(request: &Value, marks: &Marks) -> Value {
    match kind_of(request) {
        Some(Kind::Form | Kind::Url) => sampled(&marks.answer()),
        _ => json!({"action": "accept", "content": {"answer": marks.answer()}}),
    }
}

/// A form answer that breaks the form's schema: a required field left out, or
/// a field of another type; `None` when the form has no field to break.
pub(super) fn schema_violation(request: &Value, marks: &Marks) -> Option<Value> {
    if kind_of(request) != Some(Kind::Form) {
        return None;
    }
    let schema = &request["params"]["requestedSchema"];
    let mut content = object_for(schema, &marks.answer(), true);
    let props = schema.get("properties").and_then(Value::as_object)?;
    let (name, prop) = props.iter().next()?;
    let wrong = match prop.get("type").and_then(Value::as_str) {
        Some("boolean") => json!("not-a-boolean"),
        Some("integer" | "number") => json!("not-a-number"),
        Some("array") => json!("not-an-array"),
        _ => json!({"not": "a string"}),
    };
    content.insert(name.clone(), wrong);
    Some(json!({"action": "accept", "content": content}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_are_answered_within_their_schema() {
        let marks = Marks::new();
        let form = json!({"method": "elicitation/create", "params": {"message": "?", "requestedSchema": {
            "type": "object",
            "properties": {
                "ok": {"type": "boolean"},
                "n": {"type": "integer", "minimum": 3, "maximum": 9},
                "pick": {"type": "string", "enum": ["a", "b"]},
                "when": {"type": "string", "format": "date"},
                "short": {"type": "string", "maxLength": 2},
                "name": {"type": "string"}
            },
            "required": ["ok"]
        }}});
        let a = answer(&form, &marks);
        assert_eq!(a["action"], "accept");
        let c = &a["content"];
        assert_eq!(c["ok"], true);
        assert_eq!(c["n"], 3);
        assert_eq!(c["pick"], "a");
        assert_eq!(c["when"], "2026-01-02");
        assert_eq!(c["short"], "a");
        assert_eq!(c["name"], json!(marks.answer()));
        let bad = schema_violation(&form, &marks).unwrap();
        assert_eq!(bad["content"]["ok"], "not-a-boolean");
        assert_eq!(wrong_kind(&form, &marks)["role"], "assistant");
        assert_eq!(other_answer(&form, &marks), json!({"action": "decline"}));
        let sampling = json!({"method": "sampling/createMessage", "params": {"messages": []}});
        assert_ne!(other_answer(&sampling, &marks), answer(&sampling, &marks));
    }

    #[test]
    fn kinds_and_the_capabilities_without_them() {
        let url =
            json!({"method": "elicitation/create", "params": {"mode": "url", "url": "https://x"}});
        assert_eq!(kind_of(&url), Some(Kind::Url));
        let tools =
            json!({"method": "sampling/createMessage", "params": {"messages": [], "tools": []}});
        assert_eq!(kind_of(&tools), Some(Kind::SamplingTools));
        assert_eq!(kind_of(&json!({"method": "ping"})), None);
        assert_eq!(Kind::Form.caps_without()["elicitation"], json!({"url": {}}));
        assert!(Kind::Roots.caps_without().get("roots").is_none());
        assert_eq!(Kind::SamplingTools.caps_without()["sampling"], json!({}));
    }

    #[test]
    fn arguments_fill_the_required_properties_with_the_mark() {
        let marks = Marks::new();
        let schema = json!({"type": "object", "properties": {"service": {"type": "string"}, "n": {"type": "integer"}}, "required": ["service"]});
        let args = arguments_for(&schema, &marks);
        assert_eq!(args, json!({"service": marks.arg()}));
        assert_eq!(marked_argument(&args, &marks).as_deref(), Some("service"));
    }
}
