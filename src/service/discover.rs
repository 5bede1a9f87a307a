//! The methods that are not carriers: `server/discover`, `ping`, and the lists
//! (`tools/list`, `prompts/list`, `resources/list`, `resources/templates/list`),
//! with their caching hints.

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
    pub(super) templates: &'a super::template::Templates,
}

/// The answer to `method`, which is not a carrier: -32601 for a method this
/// server does not serve.
pub(super) fn answer(server: &Server<'_>, method: &str, params: Option<&Value>) -> Outcome {
    let known = matches!(
        method,
        "server/discover"
            | "ping"
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
    if params.and_then(|p| p.get("cursor")).is_some() {
        // Everything fits on one page, so no cursor this server issued can exist.
        return Outcome::Protocol(Error::invalid_params("invalid cursor"));
    }
    let registries = server.registries;
    let mut result = Map::new();
    match method {
        "server/discover" => {
            let mut caps = Map::new();
            if registries.has_tools() {
                caps.insert("tools".into(), json!({}));
            }
            if registries.has_prompts() {
                caps.insert("prompts".into(), json!({}));
            }
            if registries.has_resources() || !server.templates.is_empty() {
                caps.insert("resources".into(), json!({}));
            }
            result.insert(
                "supportedVersions".into(),
                json!(SUPPORTED_PROTOCOL_VERSIONS),
            );
            result.insert("capabilities".into(), Value::Object(caps));
            if let Some(i) = server.instructions {
                result.insert("instructions".into(), i.into());
            }
            result.insert(
                "_meta".into(),
                json!({"io.modelcontextprotocol/serverInfo": serde_json::to_value(server.info).unwrap_or(Value::Null)}),
            );
        }
        "ping" => {}
        "tools/list" => {
            result.insert(
                "tools".into(),
                list(registries.of::<crate::ToolResult>().definitions()),
            );
        }
        "prompts/list" => {
            result.insert(
                "prompts".into(),
                list(registries.of::<crate::PromptResult>().definitions()),
            );
        }
        "resources/list" => {
            result.insert(
                "resources".into(),
                list(registries.of::<crate::ResourceResult>().definitions()),
            );
        }
        _ => {
            result.insert(
                "resourceTemplates".into(),
                list(server.templates.definitions()),
            );
        }
    }
    if method != "ping" {
        result.insert("ttlMs".into(), server.caching.ttl_ms.into());
        let scope = if server.caching.public {
            "public"
        } else {
            "private"
        };
        result.insert("cacheScope".into(), scope.into());
    }
    result.insert("resultType".into(), "complete".into());
    Outcome::Complete(Value::Object(result))
}

fn list<'a>(definitions: impl Iterator<Item = &'a Value>) -> Value {
    Value::Array(definitions.cloned().collect())
}
