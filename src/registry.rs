//! What a server serves ([`Service`](crate::Service), or the `rmcp` adapter's
//! `*_service_*` methods): for each carrier, its targets'
//! definitions (as `*/list` returns them) and handlers, in registration order.

use indexmap::IndexMap;
use serde_json::{Value, json};

use crate::engine::{CarrierResult, Handler};
use crate::result::{PromptResult, ResourceResult, ToolResult};

/// A prompt as `prompts/list` describes it: a name, an optional description,
/// and its arguments.
///
/// ```
/// use mrtr::service::PromptDefinition;
/// let review = PromptDefinition::new("review")
///     .description("Review a change")
///     .argument("diff", "The diff to review", true)
///     .argument("style", "The house style, if any", false);
/// # drop(review);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub struct PromptDefinition {
    name: String,
    description: Option<String>,
    arguments: Vec<Value>,
}

impl PromptDefinition {
    /// A prompt named `name`, without description or arguments.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: None,
            arguments: Vec::new(),
        }
    }

    /// Its description, for the client's list.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Adds an argument: its name, what it is, and whether the client must send it.
    pub fn argument(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        required: bool,
    ) -> Self {
        self.arguments.push(json!({
            "name": name.into(), "description": description.into(), "required": required,
        }));
        self
    }

    /// The prompt's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn into_value(self) -> Value {
        let mut definition = json!({"name": self.name});
        if let Some(d) = self.description {
            definition["description"] = d.into();
        }
        if !self.arguments.is_empty() {
            definition["arguments"] = Value::Array(self.arguments);
        }
        definition
    }
}

/// A resource as `resources/list` describes it: its URI and name, and an
/// optional description and MIME type.
///
/// ```
/// use mrtr::service::ResourceDefinition;
/// let notes = ResourceDefinition::new("file:///notes.txt", "notes")
///     .description("Today's notes")
///     .mime_type("text/plain");
/// assert_eq!(notes.uri(), "file:///notes.txt");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub struct ResourceDefinition {
    uri: String,
    name: String,
    description: Option<String>,
    mime_type: Option<String>,
    caching: Option<(u64, crate::result::CacheScope)>,
}

impl ResourceDefinition {
    /// The resource at `uri`, listed as `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            description: None,
            mime_type: None,
            caching: None,
        }
    }

    /// Its description, for the client's list.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Its MIME type (`text/plain`, ...).
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// The caching hints (SEP-2549: `ttlMs`, `cacheScope`) of its read results
    /// when its handler sets none of its own
    /// ([`ResourceResult::cache_for`](crate::result::ResourceResult::cache_for)).
    /// They go only on a result read at once: one that took a round of input
    /// keeps `0` and private, as results of requests carrying `inputResponses`
    /// or `requestState` must not be cached.
    pub fn cache_for(mut self, ttl_ms: u64, scope: crate::result::CacheScope) -> Self {
        self.caching = Some((ttl_ms, scope));
        self
    }

    /// The resource's URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    fn into_value(self) -> Value {
        let mut definition = json!({"uri": self.uri, "name": self.name});
        if let Some(d) = self.description {
            definition["description"] = d.into();
        }
        if let Some(m) = self.mime_type {
            definition["mimeType"] = m.into();
        }
        definition
    }
}

/// A `Prompt` definition as its list entry.
pub(crate) fn prompt_entry(definition: PromptDefinition) -> (String, Value) {
    (definition.name.clone(), definition.into_value())
}

/// A `Resource` definition as its list entry, and its caching hints.
pub(crate) fn resource_entry(
    definition: ResourceDefinition,
) -> (String, Value, Option<(u64, crate::result::CacheScope)>) {
    let caching = definition.caching;
    (definition.uri.clone(), definition.into_value(), caching)
}

/// One registered target: its list entry and its handler.
pub(crate) struct Entry<T> {
    pub(crate) definition: Value,
    pub(crate) handler: Handler<T>,
}

impl<T> std::fmt::Debug for Entry<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("definition", &self.definition)
            .finish_non_exhaustive()
    }
}

/// The targets of one carrier, by name (or URI), in registration order.
pub struct Registry<T>(IndexMap<String, Entry<T>>);

impl<T> Default for Registry<T> {
    fn default() -> Self {
        Self(IndexMap::new())
    }
}

impl<T> std::fmt::Debug for Registry<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.0.iter()).finish()
    }
}

impl<T> Registry<T> {
    pub(crate) fn insert(&mut self, target: String, definition: Value, handler: Handler<T>) {
        self.0.insert(
            target,
            Entry {
                definition,
                handler,
            },
        );
    }

    /// The handler registered for `target`.
    pub fn handler_of(&self, target: &str) -> Option<&Handler<T>> {
        self.0.get(target).map(|e| &e.handler)
    }

    /// The registered spelling of `target`, if it is registered (for a metric
    /// label: never the client's own string).
    pub fn registered(&self, target: &str) -> Option<&str> {
        self.0.get_key_value(target).map(|(k, _)| k.as_str())
    }

    /// The list entries with their keys (the name, or the URI), in registration
    /// order: what the lists page through.
    pub(crate) fn entries(&self) -> impl ExactSizeIterator<Item = (&str, &Value)> + Clone {
        self.0.iter().map(|(k, e)| (k.as_str(), &e.definition))
    }

    /// Whether nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The three registries of a service.
#[derive(Debug, Default)]
pub struct Registries {
    tools: Registry<ToolResult>,
    prompts: Registry<PromptResult>,
    resources: Registry<ResourceResult>,
}

/// A carrier result whose targets a [`Registries`] keeps.
pub trait Registered: CarrierResult + Sized {
    /// This carrier's registry.
    fn of(registries: &Registries) -> &Registry<Self>;
    /// This carrier's registry, to register in.
    fn of_mut(registries: &mut Registries) -> &mut Registry<Self>;
}

macro_rules! registered {
    ($result:ty, $field:ident) => {
        impl Registered for $result {
            fn of(registries: &Registries) -> &Registry<Self> {
                &registries.$field
            }
            fn of_mut(registries: &mut Registries) -> &mut Registry<Self> {
                &mut registries.$field
            }
        }
    };
}
registered!(ToolResult, tools);
registered!(PromptResult, prompts);
registered!(ResourceResult, resources);

impl Registries {
    /// The registry of the carrier whose result is `T`.
    pub(crate) fn of<T: Registered>(&self) -> &Registry<T> {
        T::of(self)
    }

    pub(crate) fn of_mut<T: Registered>(&mut self) -> &mut Registry<T> {
        T::of_mut(self)
    }

    pub(crate) fn has_tools(&self) -> bool {
        !self.tools.is_empty()
    }

    pub(crate) fn has_prompts(&self) -> bool {
        !self.prompts.is_empty()
    }

    pub(crate) fn has_resources(&self) -> bool {
        !self.resources.is_empty()
    }
}
