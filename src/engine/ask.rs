//! Builders for the questions a handler asks.

use serde_json::Value;

use crate::capability::Necessity;
use crate::wire::input::{
    CreateMessageParams, ElicitFormParams, ElicitParams, ElicitUrlParams, InputRequest,
};
use crate::wire::schema::{EnumOption, EnumStyle, PrimitiveSchema, RequestedSchema, StringFormat};
use crate::wire::{JsonObject, Root};

/// A form elicitation: a message and a flat schema of primitive fields.
///
/// Fields added with the typed helpers are required; use [`Form::field`] for an
/// optional one. Field order is kept, so clients show fields in the order written.
///
/// ```
/// use mrtr::engine::Form;
/// let form = Form::new("Deploy where?").one_of("env", ["staging", "production"]);
/// let req = form.to_request();
/// assert_eq!(req.to_value()["params"]["requestedSchema"]["required"][0], "env");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    message: String,
    schema: RequestedSchema,
    necessity: Necessity,
    issued_only: bool,
}

impl Form {
    /// A form that shows `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            schema: RequestedSchema::new(),
            necessity: Necessity::Required,
            issued_only: false,
        }
    }

    /// A yes/no confirmation: one required boolean field `confirm`.
    pub fn confirm(message: impl Into<String>) -> Self {
        Self::new(message).boolean("confirm", "Confirm")
    }

    /// Adds a field with any primitive schema; `required` marks it in `required`.
    pub fn field(
        mut self,
        name: impl Into<String>,
        schema: PrimitiveSchema,
        required: bool,
    ) -> Self {
        let name = name.into();
        if required {
            let r = self.schema.required.get_or_insert_with(Vec::new);
            if !r.contains(&name) {
                r.push(name.clone());
            }
        }
        self.schema.properties.insert(name, schema);
        self
    }

    /// A required text field.
    pub fn string(self, name: impl Into<String>, title: impl Into<String>) -> Self {
        let mut s = PrimitiveSchema::string();
        set_title(&mut s, title.into());
        self.field(name, s, true)
    }

    /// A required email address field (`format: "email"`). An answer that is not
    /// an address (one `@`, a name before it, a domain with a dot after it, no
    /// spaces) is asked again.
    pub fn email(self, name: impl Into<String>, title: impl Into<String>) -> Self {
        self.formatted(name, title, StringFormat::Email)
    }

    /// A required absolute URI field (`format: "uri"`), such as
    /// `https://example.com/a`. An answer without a scheme is asked again.
    pub fn uri(self, name: impl Into<String>, title: impl Into<String>) -> Self {
        self.formatted(name, title, StringFormat::Uri)
    }

    /// A required date field (`format: "date"`): an RFC 3339 full-date such as
    /// `2026-07-28`. An answer that is not a real calendar day is asked again.
    pub fn date(self, name: impl Into<String>, title: impl Into<String>) -> Self {
        self.formatted(name, title, StringFormat::Date)
    }

    /// A required date and time field (`format: "date-time"`): an RFC 3339
    /// date-time with its offset, such as `2026-07-28T10:00:00Z` or
    /// `2026-07-28T12:00:00+02:00`. Any other answer is asked again.
    pub fn date_time(self, name: impl Into<String>, title: impl Into<String>) -> Self {
        self.formatted(name, title, StringFormat::DateTime)
    }

    /// A required text field of one of the formats MCP elicitation allows.
    fn formatted(
        self,
        name: impl Into<String>,
        title: impl Into<String>,
        format: StringFormat,
    ) -> Self {
        let s = PrimitiveSchema::String {
            title: Some(title.into()),
            description: None,
            min_length: None,
            max_length: None,
            format: Some(format),
            default: None,
        };
        self.field(name, s, true)
    }

    /// A required whole-number field with optional bounds.
    pub fn integer(
        self,
        name: impl Into<String>,
        title: impl Into<String>,
        min: Option<i64>,
        max: Option<i64>,
    ) -> Self {
        #[allow(clippy::cast_precision_loss)] // bounds written by the server author, far below 2^53
        let s = PrimitiveSchema::Number {
            integer: true,
            title: Some(title.into()),
            description: None,
            minimum: min.map(|m| m as f64),
            maximum: max.map(|m| m as f64),
            default: None,
        };
        self.field(name, s, true)
    }

    /// A required number field with optional bounds.
    pub fn number(
        self,
        name: impl Into<String>,
        title: impl Into<String>,
        min: Option<f64>,
        max: Option<f64>,
    ) -> Self {
        let s = PrimitiveSchema::Number {
            integer: false,
            title: Some(title.into()),
            description: None,
            minimum: min,
            maximum: max,
            default: None,
        };
        self.field(name, s, true)
    }

    /// A required yes/no field.
    pub fn boolean(self, name: impl Into<String>, title: impl Into<String>) -> Self {
        let mut s = PrimitiveSchema::boolean();
        set_title(&mut s, title.into());
        self.field(name, s, true)
    }

    /// A required single choice among `values` (written as `enum`).
    pub fn one_of<I, S>(self, name: impl Into<String>, values: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.field(name, PrimitiveSchema::one_of(values), true)
    }

    /// A required single choice among `(value, title)` pairs (written as `oneOf`).
    pub fn titled_one_of<I, V, T>(self, name: impl Into<String>, options: I) -> Self
    where
        I: IntoIterator<Item = (V, T)>,
        V: Into<String>,
        T: Into<String>,
    {
        let options = options
            .into_iter()
            .map(|(v, t)| EnumOption {
                value: v.into(),
                title: t.into(),
            })
            .collect();
        let s = PrimitiveSchema::SingleSelect {
            title: None,
            description: None,
            options,
            style: EnumStyle::Titled,
            default: None,
        };
        self.field(name, s, true)
    }

    /// Marks the whole ask optional for the capability gate: a client without
    /// form elicitation is not asked, and the handler sees `Elicited::Unavailable`.
    pub fn optional(mut self) -> Self {
        self.necessity = Necessity::Optional;
        self
    }

    /// Accepts an answer only if this question went out in an earlier sealed round,
    /// whatever the engine's [`AnswerPolicy`](super::AnswerPolicy): for a
    /// confirmation that must have been put to the user, never one a client sent
    /// unasked on its first request.
    pub fn issued_only(mut self) -> Self {
        self.issued_only = true;
        self
    }

    /// The schema as built.
    pub fn schema(&self) -> &RequestedSchema {
        &self.schema
    }

    /// The wire input request.
    pub fn to_request(&self) -> InputRequest {
        InputRequest::Elicit(ElicitParams::Form(ElicitFormParams {
            message: self.message.clone(),
            requested_schema: self.schema.clone(),
            explicit_mode: false,
        }))
    }

    /// The wire input request, its necessity and whether it is asked only once:
    /// what a round takes of a form, moved rather than copied.
    pub(crate) fn into_parts(self) -> (InputRequest, Necessity, bool) {
        let request = InputRequest::Elicit(ElicitParams::Form(ElicitFormParams {
            message: self.message,
            requested_schema: self.schema,
            explicit_mode: false,
        }));
        (request, self.necessity, self.issued_only)
    }
}

fn set_title(s: &mut PrimitiveSchema, t: String) {
    match s {
        PrimitiveSchema::String { title, .. } | PrimitiveSchema::Boolean { title, .. } => {
            *title = Some(t)
        }
        _ => {}
    }
}

/// A URL-mode elicitation: send the user to a page (sign-in, payment, secrets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlVisit {
    message: String,
    url: String,
    necessity: Necessity,
}

impl UrlVisit {
    /// Ask the user to visit `url`, explaining why in `message`.
    pub fn new(message: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            url: url.into(),
            necessity: Necessity::Required,
        }
    }

    /// Optional for the capability gate.
    pub fn optional(mut self) -> Self {
        self.necessity = Necessity::Optional;
        self
    }

    /// The wire input request.
    pub fn to_request(&self) -> InputRequest {
        InputRequest::Elicit(ElicitParams::Url(ElicitUrlParams {
            message: self.message.clone(),
            url: self.url.clone(),
        }))
    }

    pub(crate) fn necessity(&self) -> Necessity {
        self.necessity
    }
}

/// A sampling request to the client's model.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampling {
    params: CreateMessageParams,
    necessity: Necessity,
}

impl Sampling {
    /// One user message and a token budget.
    pub fn prompt(text: impl Into<String>, max_tokens: u64) -> Self {
        Self {
            params: CreateMessageParams::user_text(text, max_tokens),
            necessity: Necessity::Required,
        }
    }

    /// Any `sampling/createMessage` params.
    pub fn from_params(params: CreateMessageParams) -> Self {
        Self {
            params,
            necessity: Necessity::Required,
        }
    }

    /// Sets the system prompt.
    pub fn system(mut self, text: impl Into<String>) -> Self {
        self.params.system_prompt = Some(text.into());
        self
    }

    /// Offers tools to the model (needs the client's `sampling.tools`).
    pub fn tools(mut self, tools: Vec<Value>) -> Self {
        self.params.tools = Some(tools);
        self
    }

    /// Optional for the capability gate.
    pub fn optional(mut self) -> Self {
        self.necessity = Necessity::Optional;
        self
    }

    /// The wire input request.
    pub fn to_request(&self) -> InputRequest {
        InputRequest::CreateMessage(self.params.clone())
    }

    pub(crate) fn necessity(&self) -> Necessity {
        self.necessity
    }
}

/// A `roots/list` request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RootsAsk {
    necessity: Necessity,
}

impl RootsAsk {
    /// Ask for the client's roots.
    pub fn new() -> Self {
        Self::default()
    }

    /// Optional for the capability gate.
    pub fn optional(mut self) -> Self {
        self.necessity = Necessity::Optional;
        self
    }

    /// The wire input request.
    pub fn to_request(&self) -> InputRequest {
        InputRequest::ListRoots { meta: None }
    }

    pub(crate) fn necessity(&self) -> Necessity {
        self.necessity
    }
}

/// The submitted values of an accepted form, validated against its schema.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Fields(JsonObject);

impl Fields {
    pub(crate) fn new(map: JsonObject) -> Self {
        Self(map)
    }

    /// A text or single-choice field.
    pub fn str(&self, name: &str) -> Option<&str> {
        self.0.get(name).and_then(Value::as_str)
    }

    /// A yes/no field.
    pub fn bool(&self, name: &str) -> Option<bool> {
        self.0.get(name).and_then(Value::as_bool)
    }

    /// A whole-number field.
    pub fn i64(&self, name: &str) -> Option<i64> {
        let v = self.0.get(name)?;
        #[allow(clippy::cast_possible_truncation)]
        // only integral values within range reach the cast
        v.as_i64().or_else(|| {
            v.as_f64()
                .filter(|x| x.fract() == 0.0 && x.abs() < 9.0e15)
                .map(|x| x as i64)
        })
    }

    /// A number field.
    pub fn f64(&self, name: &str) -> Option<f64> {
        self.0.get(name).and_then(Value::as_f64)
    }

    /// A multi-choice field.
    pub fn strings(&self, name: &str) -> Option<Vec<&str>> {
        self.0
            .get(name)?
            .as_array()?
            .iter()
            .map(Value::as_str)
            .collect()
    }

    /// All values.
    pub fn as_map(&self) -> &JsonObject {
        &self.0
    }
}

/// What came back for an elicitation.
#[must_use = "an elicitation's answer may be a decline or a cancel: match on it"]
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Elicited {
    /// Accepted: the form's validated values (empty for url mode, where accept
    /// means the user agreed to open the page, not that they finished there).
    Accepted(Fields),
    /// The user declined.
    Declined,
    /// The user dismissed the request.
    Cancelled,
    /// An optional ask the client cannot serve; it was not sent.
    Unavailable,
}

impl Elicited {
    /// The fields when accepted.
    pub fn accepted(&self) -> Option<&Fields> {
        match self {
            Self::Accepted(f) => Some(f),
            _ => None,
        }
    }
}

/// A client's roots.
pub type Roots = Vec<Root>;

/// What came back for a typed form ([`Round::elicit_as`](super::Round::elicit_as)).
#[must_use = "a form's answer may be a decline or a cancel: match on it"]
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum FormAnswer<T> {
    /// Accepted: the content, validated against the form and decoded into `T`.
    Accepted(T),
    /// The user declined.
    Declined,
    /// The user dismissed the request.
    Cancelled,
    /// An optional ask the client cannot serve; it was not sent.
    Unavailable,
}

impl<T> FormAnswer<T> {
    /// The value when accepted.
    pub fn accepted(self) -> Option<T> {
        match self {
            Self::Accepted(t) => Some(t),
            _ => None,
        }
    }
}

/// Whether the user confirmed, from [`Round::confirm`](super::Round::confirm).
#[must_use = "a confirmation guards an action: match on it"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Confirmation {
    /// The user accepted with `confirm: true`.
    Accepted,
    /// The user declined, or accepted the form with `confirm: false`.
    Declined,
    /// The user dismissed the question.
    Cancelled,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::Form;

    #[test]
    fn format_helpers_write_the_spec_string_schema() {
        let form = Form::new("About you")
            .email("mail", "Email")
            .uri("site", "Site")
            .date("born", "Birthday")
            .date_time("at", "When");
        assert_eq!(
            form.schema().to_value(),
            json!({"type": "object", "properties": {
                "mail": {"type": "string", "title": "Email", "format": "email"},
                "site": {"type": "string", "title": "Site", "format": "uri"},
                "born": {"type": "string", "title": "Birthday", "format": "date"},
                "at": {"type": "string", "title": "When", "format": "date-time"}
            }, "required": ["mail", "site", "born", "at"]})
        );
        // Without its title, exactly the spec's `{"type":"string","format":"date"}`.
        let mut born = form.schema().to_value()["properties"]["born"].clone();
        born.as_object_mut().unwrap().remove("title");
        assert_eq!(born.to_string(), r#"{"type":"string","format":"date"}"#);
    }
}
