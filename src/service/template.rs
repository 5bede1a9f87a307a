//! Resource templates: a URI template (RFC 6570, level 1), its list entry for
//! `resources/templates/list`, and a handler that reads every resource whose
//! URI the template matches.
//!
//! # What is supported
//! Level 1 of RFC 6570 only: literal text and simple string expressions
//! `{var}`. Operators (`{+var}`, `{#var}`, `{/var}`, `{?var}`, ...), lists of
//! variables in one expression (`{a,b}`) and modifiers (`{var*}`, `{var:3}`)
//! are refused at registration, as are templates the matcher could not read
//! back unambiguously (see [`UriTemplate::parse`]).
//!
//! # Matching
//! Matching is the inverse of level-1 expansion: an expansion writes a
//! variable's value with every character outside the unreserved set
//! (`A-Z a-z 0-9 - . _ ~`) percent-encoded, so a variable matches a non-empty
//! run of unreserved characters and `%XX` triplets, which is then
//! percent-decoded (and must decode to UTF-8). Literals are compared byte for
//! byte (no case folding, no normalisation). A variable followed by another
//! variable ends at the first character an expansion never writes, which must
//! be where the literal between them begins (that literal must begin with such
//! a character, or the template is refused); the last variable ends where the
//! template's trailing literal, matched as a suffix, begins. Each template is
//! matched in one pass over the URI: linear in its length, no backtracking.
//!
//! A `resources/read` tries the static resources first (an exact URI), then the
//! templates in registration order: the first that matches reads the resource.
//! A URI longer than [`TEMPLATE_URI_MAX_BYTES`] is matched against no template,
//! and a variable whose decoded value is longer than
//! [`TEMPLATE_VARIABLE_MAX_BYTES`] makes its template not match.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use serde_json::{Value, json};

use super::{RequestContext, RequestLog, Service};
use crate::defaults::{TEMPLATE_URI_MAX_BYTES, TEMPLATE_VARIABLE_MAX_BYTES};
use crate::engine::{Handler, NotificationSink, Outcome, Output, Round};
use crate::error::Error;
use crate::result::{CacheScope, ResourceResult};
use crate::wire::{CarrierMethod, CarrierRequest, JsonObject};

/// Why a URI template was refused at registration.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TemplateError {
    /// The template is empty.
    Empty,
    /// A `{` without its `}`, or a `}` without its `{`.
    UnbalancedBrace,
    /// An expression `{}` with no variable name.
    EmptyExpression,
    /// An expression with an operator, several variables or a modifier: RFC 6570
    /// levels 2 to 4, which this matcher does not support.
    Unsupported(String),
    /// A variable name outside RFC 6570's `varname` (letters, digits, `_`, and
    /// single dots inside; percent-encoded names are not supported).
    InvalidName(String),
    /// A character RFC 6570 does not allow in literal text (space, `"`, `<`,
    /// `\`, a control character, a `%` not starting a `%XX` triplet, ...).
    InvalidLiteral(char),
    /// Two variables with nothing between them (`{a}{b}`): no matcher can tell
    /// where the first ends.
    AdjacentVariables(String, String),
    /// A variable followed by literal text and another variable, where that text
    /// starts with a character an expansion of the variable may hold (`{a}-{b}`):
    /// the split would be a guess.
    AmbiguousBoundary(String),
    /// The same variable twice.
    DuplicateVariable(String),
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("the uri template is empty"),
            Self::UnbalancedBrace => f.write_str("the uri template has an unbalanced brace"),
            Self::EmptyExpression => f.write_str("the uri template has an empty expression {}"),
            Self::Unsupported(e) => write!(
                f,
                "the expression {{{e}}} needs rfc 6570 level 2 or more; only {{name}} is supported"
            ),
            Self::InvalidName(n) => write!(f, "{n:?} is not a valid variable name"),
            Self::InvalidLiteral(c) => {
                write!(
                    f,
                    "{c:?} is not allowed in the literal text of a uri template"
                )
            }
            Self::AdjacentVariables(a, b) => {
                write!(
                    f,
                    "variables {{{a}}} and {{{b}}} are adjacent: put literal text between them"
                )
            }
            Self::AmbiguousBoundary(v) => write!(
                f,
                "the text after {{{v}}} starts with a character its value may hold, so where it ends is ambiguous; \
                 start that text with a reserved character such as / or :"
            ),
            Self::DuplicateVariable(v) => write!(f, "variable {{{v}}} appears twice"),
        }
    }
}

impl std::error::Error for TemplateError {}

/// One piece of a parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Variable(String),
}

/// A parsed RFC 6570 level-1 URI template, checked to match unambiguously.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UriTemplate {
    source: String,
    parts: Vec<Part>,
}

/// Whether an expansion may write `b` verbatim: RFC 3986's unreserved set.
fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// Whether `c` may stand in a template's literal text (RFC 6570 §2.1; `%` is
/// checked as a triplet by the caller).
fn literal_char(c: char) -> bool {
    !(c.is_control()
        || c.is_whitespace()
        || matches!(c, '"' | '\'' | '<' | '>' | '\\' | '^' | '`' | '|'))
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && !name.ends_with('.')
        && !name.contains("..")
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
}

impl UriTemplate {
    /// Parses `template` and checks the matcher can read it back unambiguously.
    ///
    /// # Errors
    /// A [`TemplateError`] when the template is not RFC 6570 level 1 (an
    /// operator, several variables in one expression, a modifier), has an invalid
    /// variable name or literal character, repeats a variable, puts two variables
    /// side by side, or follows a variable that is not the last with text that
    /// starts with an unreserved character or `%` (`{a}-{b}`, `{a}.{b}`).
    pub(crate) fn parse(template: &str) -> Result<Self, TemplateError> {
        if template.is_empty() {
            return Err(TemplateError::Empty);
        }
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut chars = template.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            match c {
                '{' => {
                    let rest = &template[i + 1..];
                    let end = rest.find('}').ok_or(TemplateError::UnbalancedBrace)?;
                    let expression = &rest[..end];
                    if expression.contains('{') {
                        return Err(TemplateError::UnbalancedBrace);
                    }
                    let name = Self::variable(expression)?;
                    if !literal.is_empty() {
                        parts.push(Part::Literal(std::mem::take(&mut literal)));
                    }
                    if let Some(Part::Variable(previous)) = parts.last() {
                        return Err(TemplateError::AdjacentVariables(
                            previous.clone(),
                            name.to_owned(),
                        ));
                    }
                    if parts.contains(&Part::Variable(name.to_owned())) {
                        return Err(TemplateError::DuplicateVariable(name.to_owned()));
                    }
                    parts.push(Part::Variable(name.to_owned()));
                    for _ in 0..=expression.chars().count() {
                        chars.next();
                    }
                }
                '}' => return Err(TemplateError::UnbalancedBrace),
                '%' => {
                    let hex = template.as_bytes().get(i + 1..i + 3);
                    if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                        return Err(TemplateError::InvalidLiteral('%'));
                    }
                    literal.push('%');
                }
                c if literal_char(c) => literal.push(c),
                c => return Err(TemplateError::InvalidLiteral(c)),
            }
        }
        if !literal.is_empty() {
            parts.push(Part::Literal(literal));
        }
        Self::check_boundaries(&parts)?;
        Ok(Self {
            source: template.to_owned(),
            parts,
        })
    }

    /// The variable name of one expression (without its braces).
    fn variable(expression: &str) -> Result<&str, TemplateError> {
        let Some(first) = expression.chars().next() else {
            return Err(TemplateError::EmptyExpression);
        };
        let level_two_or_more =
            "+#./;?&=,!@|".contains(first) || expression.contains([',', '*', ':']);
        if level_two_or_more {
            return Err(TemplateError::Unsupported(
                crate::wire::truncate(expression, 64).to_owned(),
            ));
        }
        if !valid_name(expression) {
            return Err(TemplateError::InvalidName(
                crate::wire::truncate(expression, 64).to_owned(),
            ));
        }
        Ok(expression)
    }

    /// Every variable but the last must be followed by text whose first
    /// character no expansion writes (a reserved or non-ASCII character).
    fn check_boundaries(parts: &[Part]) -> Result<(), TemplateError> {
        let last_variable = parts.iter().rposition(|p| matches!(p, Part::Variable(_)));
        for (i, part) in parts.iter().enumerate() {
            let Part::Variable(name) = part else { continue };
            if Some(i) == last_variable {
                continue;
            }
            if let Some(Part::Literal(next)) = parts.get(i + 1)
                && let Some(&first) = next.as_bytes().first()
                && (unreserved(first) || first == b'%')
            {
                return Err(TemplateError::AmbiguousBoundary(name.clone()));
            }
        }
        Ok(())
    }

    /// The template as written.
    pub(crate) fn as_str(&self) -> &str {
        &self.source
    }

    /// The variable names, in template order.
    #[cfg(test)]
    pub(crate) fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Variable(v) => Some(v.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// The variables of `uri`, percent-decoded, when the template matches it
    /// (module docs, "Matching"); `None` when it does not, when `uri` is longer
    /// than [`TEMPLATE_URI_MAX_BYTES`], or when a decoded value is longer than
    /// [`TEMPLATE_VARIABLE_MAX_BYTES`] or not UTF-8.
    pub(crate) fn match_uri(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        if uri.len() > TEMPLATE_URI_MAX_BYTES {
            return None;
        }
        let bytes = uri.as_bytes();
        let mut at = 0;
        let mut variables = BTreeMap::new();
        for (i, part) in self.parts.iter().enumerate() {
            match part {
                Part::Literal(text) => {
                    if !bytes[at..].starts_with(text.as_bytes()) {
                        return None;
                    }
                    at += text.len();
                }
                Part::Variable(name) => {
                    let end = match self.parts.get(i + 1) {
                        // The last part: the variable runs to the end.
                        None => bytes.len(),
                        // The trailing literal: matched as a suffix.
                        Some(Part::Literal(text)) if i + 2 == self.parts.len() => {
                            bytes.len().checked_sub(text.len()).filter(|e| *e >= at)?
                        }
                        // A literal and another variable follow: the variable
                        // stops at the first byte an expansion never writes.
                        Some(Part::Literal(_)) => at + expansion_run(&bytes[at..]),
                        // Refused at parse time: two adjacent variables.
                        Some(Part::Variable(_)) => return None,
                    };
                    variables.insert(name.clone(), decode(&bytes[at..end])?);
                    at = end;
                }
            }
        }
        (at == bytes.len()).then_some(variables)
    }
}

/// The length of the longest prefix of `bytes` an expansion could have written:
/// unreserved bytes and `%XX` triplets.
fn expansion_run(bytes: &[u8]) -> usize {
    let mut i = 0;
    while i < bytes.len() {
        if unreserved(bytes[i]) {
            i += 1;
        } else if bytes[i] == b'%'
            && bytes
                .get(i + 1..i + 3)
                .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
        {
            i += 3;
        } else {
            break;
        }
    }
    i
}

/// A variable's value: non-empty, made only of what an expansion writes,
/// percent-decoded to UTF-8 of at most [`TEMPLATE_VARIABLE_MAX_BYTES`].
fn decode(raw: &[u8]) -> Option<String> {
    if raw.is_empty() || expansion_run(raw) != raw.len() {
        return None;
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'%' {
            let hex = std::str::from_utf8(&raw[i + 1..i + 3]).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(raw[i]);
            i += 1;
        }
        if out.len() > TEMPLATE_VARIABLE_MAX_BYTES {
            return None;
        }
    }
    String::from_utf8(out).ok()
}

/// A resource template as `resources/templates/list` describes it: its URI
/// template and name, and an optional title, description and MIME type
/// (schema.ts `ResourceTemplate`; icons and annotations are not supported).
///
/// ```
/// use mrtr::service::ResourceTemplateDefinition;
/// let files = ResourceTemplateDefinition::new("file:///notes/{name}.txt", "notes")
///     .unwrap()
///     .title("Notes")
///     .description("A note by name")
///     .mime_type("text/plain");
/// assert_eq!(files.uri_template(), "file:///notes/{name}.txt");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub struct ResourceTemplateDefinition {
    template: UriTemplate,
    name: String,
    title: Option<String>,
    description: Option<String>,
    mime_type: Option<String>,
    caching: Option<(u64, CacheScope)>,
}

impl ResourceTemplateDefinition {
    /// The resources whose URIs match `uri_template`, listed as `name`.
    ///
    /// # Errors
    /// When the template is refused: not RFC 6570 level 1, or not matched back
    /// unambiguously ([`TemplateError`]).
    pub fn new(uri_template: &str, name: impl Into<String>) -> Result<Self, TemplateError> {
        Ok(Self {
            template: UriTemplate::parse(uri_template)?,
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            caching: None,
        })
    }

    /// Its human-readable title, for the client's list.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Its description, for the client's list.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The MIME type of every resource it matches.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// The URI template, as written.
    pub fn uri_template(&self) -> &str {
        self.template.as_str()
    }

    /// The caching hints (SEP-2549) of the read results of the resources it
    /// matches, when the handler sets none of its own; only on a result read at
    /// once, never on one that took a round of input
    /// ([`ResourceDefinition::cache_for`](crate::service::ResourceDefinition::cache_for)).
    pub fn cache_for(mut self, ttl_ms: u64, scope: CacheScope) -> Self {
        self.caching = Some((ttl_ms, scope));
        self
    }

    fn into_parts(self) -> (UriTemplate, Value, Option<(u64, CacheScope)>) {
        let mut definition = json!({"uriTemplate": self.template.as_str(), "name": self.name});
        for (key, value) in [
            ("title", self.title),
            ("description", self.description),
            ("mimeType", self.mime_type),
        ] {
            if let Some(v) = value {
                definition[key] = v.into();
            }
        }
        (self.template, definition, self.caching)
    }
}

/// One registered template.
struct Entry {
    template: UriTemplate,
    definition: Value,
    handler: Handler<ResourceResult>,
    caching: Option<(u64, CacheScope)>,
}

/// The templates of a service, in registration order.
#[derive(Default)]
pub(super) struct Templates(Vec<Entry>);

impl fmt::Debug for Templates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|e| e.template.as_str()))
            .finish()
    }
}

/// Where a `resources/read` of a URI no static resource has goes.
enum Route<'a> {
    /// The first template that matches, the URI's variables, and the
    /// template's caching hints.
    Template(
        &'a Handler<ResourceResult>,
        JsonObject,
        Option<(u64, CacheScope)>,
    ),
    /// No template matches.
    None,
    /// The URI is too long to match.
    TooLong,
}

impl Templates {
    fn insert(
        &mut self,
        template: UriTemplate,
        definition: Value,
        handler: Handler<ResourceResult>,
        caching: Option<(u64, CacheScope)>,
    ) {
        let entry = Entry {
            template,
            definition,
            handler,
            caching,
        };
        // The same template again replaces the first in its place, as a tool does.
        match self.0.iter_mut().find(|e| e.template == entry.template) {
            Some(slot) => *slot = entry,
            None => self.0.push(entry),
        }
    }

    /// The list entries (the URI template, the definition listed), in
    /// registration order.
    pub(super) fn entries(&self) -> impl ExactSizeIterator<Item = (&str, &Value)> + Clone {
        self.0.iter().map(|e| (e.template.as_str(), &e.definition))
    }

    /// Whether no template is registered.
    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn route(&self, uri: &str) -> Route<'_> {
        if self.0.is_empty() {
            return Route::None;
        }
        if uri.len() > TEMPLATE_URI_MAX_BYTES {
            return Route::TooLong;
        }
        self.0
            .iter()
            .find_map(|e| {
                let variables = e.template.match_uri(uri)?;
                let object = variables
                    .into_iter()
                    .map(|(k, v)| (k, Value::String(v)))
                    .collect();
                Some(Route::Template(&e.handler, object, e.caching))
            })
            .unwrap_or(Route::None)
    }
}

impl Service {
    /// Registers a resource template and its handler, sync or async, which
    /// returns a [`ResourceResult`]: a `resources/read` of a URI no static
    /// resource has, which the template matches, runs it (module docs: static
    /// resources first, then templates in registration order). Registering the
    /// same template again replaces the handler.
    ///
    /// The handler is a resource handler like any other (it may ask, and answer
    /// `input_required`); [`Round::target`] is the URI read, and the template's
    /// variables are its arguments, strings already percent-decoded:
    /// [`Round::argument`] one by one, or [`Round::arguments`] into the
    /// handler's own type (a value that does not fit is -32602).
    ///
    /// # Security
    /// The variables are the client's input: a decoded value may hold any
    /// UTF-8 text, `/`, `..` or `%` included (up to
    /// [`TEMPLATE_VARIABLE_MAX_BYTES`]); check it before using it as a path, a
    /// key or a query. The round's `requestState` is bound to the URI, so to
    /// the variables too.
    ///
    /// ```
    /// use mrtr::service::ResourceTemplateDefinition;
    /// use mrtr::{Engine, Keyring, ResourceResult, Service};
    ///
    /// #[derive(serde::Deserialize)]
    /// struct Item {
    ///     id: String,
    /// }
    ///
    /// let items = ResourceTemplateDefinition::new("test://items/{id}", "item").unwrap();
    /// let service = Service::new(Engine::new(Keyring::ephemeral(), "example"), "example", "1.0.0")
    ///     .resource_template(items, |round| {
    ///         let item: Item = round.arguments()?;
    ///         Ok(ResourceResult::text(round.target(), "text/plain", format!("Item {}", item.id)))
    ///     });
    /// # drop(service);
    /// ```
    #[must_use]
    pub fn resource_template<F, O, M>(
        mut self,
        definition: ResourceTemplateDefinition,
        handler: F,
    ) -> Self
    where
        F: Fn(Round) -> O + Send + Sync + 'static,
        O: Output<ResourceResult, M> + 'static,
        M: 'static,
    {
        let (template, definition, caching) = definition.into_parts();
        self.templates.insert(
            template,
            definition,
            crate::engine::register(handler),
            caching,
        );
        self
    }

    /// `resources/read`: the static resource of that URI, else the first
    /// template that matches it, with its variables as the request's arguments.
    pub(super) async fn read_resource<D: Future<Output = ()>>(
        &self,
        params: Option<&Value>,
        ctx: &RequestContext,
        log: &mut RequestLog,
        deadline: D,
        notify: Option<Arc<dyn NotificationSink>>,
    ) -> Outcome<ResourceResult> {
        let mut request = CarrierRequest::from_params_memo(
            CarrierMethod::ResourcesRead,
            params,
            self.engine.metas(),
        );
        let mut fallback = None;
        // The registration's caching hints, for a result read at once.
        let mut caching = request
            .as_ref()
            .ok()
            .and_then(|r| self.resource_caching.get(r.target()).copied());
        let at_once = request
            .as_ref()
            .is_ok_and(|r| r.request_state().is_none() && r.input_responses().is_none());
        if let Ok(r) = &mut request
            && self
                .registries
                .of::<ResourceResult>()
                .handler_of(r.target())
                .is_none()
        {
            match self.templates.route(r.target()) {
                Route::Template(handler, variables, hints) => {
                    r.set_template_arguments(variables);
                    fallback = Some(handler);
                    caching = hints;
                }
                Route::TooLong => {
                    return Outcome::Protocol(Error::invalid_params(format!(
                        "resource uri longer than {TEMPLATE_URI_MAX_BYTES} bytes"
                    )));
                }
                Route::None => {}
            }
        }
        let outcome = self
            .run_request(request, fallback, ctx, log, deadline, notify, None)
            .await;
        match outcome {
            Outcome::Complete(result) if at_once => Outcome::Complete(result.or_cache_for(caching)),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests;
