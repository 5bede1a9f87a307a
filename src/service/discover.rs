//! The methods that are not carriers: `server/discover` and the lists
//! (`tools/list`, `prompts/list`, `resources/list`, `resources/templates/list`),
//! with their caching hints; the lists come in pages (`super::page`).
//!
//! The methods 2026-07-28 removed (`initialize`, `ping`, `logging/setLevel`,
//! `resources/subscribe`, `resources/unsubscribe`) are unknown here like any
//! other: -32601, which Streamable HTTP carries with 404 (SEP-2575). A 2025-era
//! session's are answered by `super::legacy`.

use serde_json::{Map, Value, json};

use crate::engine::Outcome;
use crate::error::Error;
use crate::registry::Registries;
use crate::wire::meta::RequestMeta;
use crate::wire::{Implementation, SUPPORTED_PROTOCOL_VERSIONS, type_name};

/// How long clients may cache list results, and for whom (`ttlMs`, `cacheScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListCaching {
    /// `ttlMs`.
    pub ttl_ms: u64,
    /// `cacheScope` is `public` when true, else `private`.
    pub public: bool,
}

/// What the answers to these methods are made of.
pub(super) struct Server<'a> {
    pub(super) info: &'a Implementation,
    pub(super) instructions: Option<&'a str>,
    pub(super) caching: ListCaching,
    pub(super) registries: &'a Registries,
    /// Whether a completion source is registered (`completions` capability).
    pub(super) completions: bool,
    /// What cuts the lists into pages.
    pub(super) pager: super::page::Pager<'a>,
    /// The resource templates (`resources/templates/list`).
    pub(super) templates: &'a super::template::Templates,
    /// The application's changes hub (`Service::with_changes`): the lists
    /// leave out what it hides, and `server/discover` declares what it can tell.
    pub(super) changes: Option<&'a super::Changes>,
    /// Whether the tasks extension is served (declared by `server/discover`
    /// only: the extension is not defined for the 2025 era).
    pub(super) tasks: bool,
}

/// The entries of `list` the changes hub does not hide, in registration order.
fn visible<'e>(
    entries: impl Iterator<Item = (&'e str, &'e Value)>,
    changes: Option<&super::Changes>,
    list: super::List,
) -> Vec<(&'e str, &'e Value)> {
    match changes {
        Some(c) => entries.filter(|(k, _)| !c.is_hidden(list, k)).collect(),
        None => entries.collect(),
    }
}

/// The answer to `method`, which is not a carrier: -32601 for a method this
/// server does not serve.
pub(super) fn answer(server: &Server<'_>, method: &str, params: Option<&Value>) -> Outcome {
    let known = matches!(
        method,
        "server/discover"
            | "tools/list"
            | "prompts/list"
            | "resources/list"
            | "resources/templates/list"
    );
    if !known {
        return Outcome::Protocol(Error::method_not_found(method));
    }
    if let Some(p) = params
        && !p.is_object()
    {
        return Outcome::Protocol(Error::invalid_params(format!(
            "params must be an object, not {}",
            type_name(p)
        )));
    }
    if let Err(e) = RequestMeta::from_meta(params.and_then(|p| p.get("_meta"))) {
        return Outcome::Protocol(e.into());
    }
    // `params.cursor` of the lists (§Pagination); the other methods take none.
    let cursor = params.and_then(|p| p.get("cursor"));
    let mut result = Map::new();
    let listed = match method {
        "server/discover" => {
            discover(server, &mut result);
            Ok(())
        }
        _ => list(server, method, cursor, &mut result),
    };
    if let Err(e) = listed {
        return Outcome::Protocol(e);
    }
    result.insert("ttlMs".into(), server.caching.ttl_ms.into());
    let scope = if server.caching.public {
        "public"
    } else {
        "private"
    };
    result.insert("cacheScope".into(), scope.into());
    result.insert("resultType".into(), "complete".into());
    Outcome::Complete(Value::Object(result))
}

/// The `server/discover` result: versions, capabilities, instructions, server info.
fn discover(server: &Server<'_>, result: &mut Map<String, Value>) {
    result.insert(
        "supportedVersions".into(),
        json!(SUPPORTED_PROTOCOL_VERSIONS),
    );
    let mut caps = capabilities(server);
    if server.tasks {
        caps.insert("extensions".into(), json!({super::TASKS_EXTENSION: {}}));
    }
    result.insert("capabilities".into(), Value::Object(caps));
    if let Some(i) = server.instructions {
        result.insert("instructions".into(), i.into());
    }
    result.insert(
        "_meta".into(),
        json!({"io.modelcontextprotocol/serverInfo": serde_json::to_value(server.info).unwrap_or(Value::Null)}),
    );
}

/// The server's capabilities, as `server/discover` and `initialize` declare
/// them: what it has registered, and what its changes hub can tell.
pub(super) fn capabilities(server: &Server<'_>) -> Map<String, Value> {
    let registries = server.registries;
    let mut caps = Map::new();
    let (list_changed, subscribe) = if server.changes.is_some() {
        (
            json!({"listChanged": true}),
            json!({"listChanged": true, "subscribe": true}),
        )
    } else {
        (json!({}), json!({}))
    };
    if registries.has_tools() {
        caps.insert("tools".into(), list_changed.clone());
    }
    if registries.has_prompts() {
        caps.insert("prompts".into(), list_changed);
    }
    if registries.has_resources() || !server.templates.is_empty() {
        caps.insert("resources".into(), subscribe);
    }
    if server.completions {
        caps.insert("completions".into(), json!({}));
    }
    caps
}

/// One page of the list `method` names, from `cursor`, into `result`.
fn list(
    server: &Server<'_>,
    method: &str,
    cursor: Option<&Value>,
    result: &mut Map<String, Value>,
) -> Result<(), Error> {
    let registries = server.registries;
    let pager = &server.pager;
    let (field, entries) = match method {
        "tools/list" => (
            "tools",
            visible(
                registries.of::<crate::ToolResult>().entries(),
                server.changes,
                super::List::Tools,
            ),
        ),
        "prompts/list" => (
            "prompts",
            visible(
                registries.of::<crate::PromptResult>().entries(),
                server.changes,
                super::List::Prompts,
            ),
        ),
        "resources/list" => (
            "resources",
            visible(
                registries.of::<crate::ResourceResult>().entries(),
                server.changes,
                super::List::Resources,
            ),
        ),
        _ => {
            return pager.fill(
                result,
                method,
                "resourceTemplates",
                server.templates.entries(),
                cursor,
            );
        }
    };
    pager.fill(result, method, field, entries.into_iter(), cursor)
}
