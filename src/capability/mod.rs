//! The capability gate: may this input request be sent to this client?
//!
//! Read from the current request's `_meta` only (MCP 2026-07-28, Base Protocol
//! §_meta, Per-request protocol fields: servers MUST NOT infer capabilities from
//! earlier requests). `elicitation: {}` means form only;
//! url mode needs `elicitation.url`; sampling with `tools`/`toolChoice` needs
//! `sampling.tools`; `includeContext` other than `none` needs `sampling.context`;
//! roots needs `roots`. A required ask the client cannot serve fails the request
//! with -32021 naming exactly the missing (sub-)capabilities; an optional ask is
//! dropped. An undeclared input request is never sent (MRTR Server Requirement 7).
//!
//! [`verdict`] is the only gate: the round engine calls it for each optional ask as
//! the handler makes it (so the handler learns at once that it was dropped) and
//! for all the asks of a round when the round ends (so a -32021 names every
//! capability the required asks lack, merged).

use crate::error::Error;
use crate::wire::JsonObject;
use crate::wire::input::{ElicitParams, InputRequest};
use crate::wire::meta::{ClientCapabilities, ElicitationCapability, SamplingCapability};

/// Whether the handler cannot go on without an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Necessity {
    /// Without it the request fails with -32021 when the client cannot serve it.
    #[default]
    Required,
    /// Dropped silently when the client cannot serve it; the handler sees it as unavailable.
    Optional,
}

/// What the gate decided for one ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Send it.
    Send,
    /// The client cannot serve this optional ask: do not send it.
    Drop,
}

/// The capabilities `request` needs that `declared` lacks, or `None` if it may
/// be sent: a URL elicitation of a form-only client (`elicitation: {}`) lacks
/// `{"elicitation": {"url": {}}}`.
pub(crate) fn missing(
    declared: &ClientCapabilities,
    request: &InputRequest,
) -> Option<ClientCapabilities> {
    // Built only when something lacks: a served ask (the common case) allocates
    // and compares nothing.
    let elicitation = |e| ClientCapabilities {
        elicitation: Some(e),
        ..Default::default()
    };
    match request {
        InputRequest::Elicit(ElicitParams::Form(_)) => match &declared.elicitation {
            None => Some(elicitation(ElicitationCapability::default())),
            Some(e) if !e.supports_form() => Some(elicitation(ElicitationCapability {
                form: Some(JsonObject::new()),
                ..Default::default()
            })),
            Some(_) => None,
        },
        InputRequest::Elicit(ElicitParams::Url(_)) => {
            let served = declared
                .elicitation
                .as_ref()
                .is_some_and(ElicitationCapability::supports_url);
            (!served).then(|| {
                elicitation(ElicitationCapability {
                    url: Some(JsonObject::new()),
                    ..Default::default()
                })
            })
        }
        InputRequest::CreateMessage(p) => {
            let wants_tools = p.tools.is_some() || p.tool_choice.is_some();
            let wants_context = p.include_context.as_deref().is_some_and(|c| c != "none");
            let has = declared.sampling.as_ref();
            let lacks_tools = wants_tools && has.is_none_or(|s| s.tools.is_none());
            let lacks_context = wants_context && has.is_none_or(|s| s.context.is_none());
            (has.is_none() || lacks_tools || lacks_context).then(|| ClientCapabilities {
                sampling: Some(SamplingCapability {
                    tools: lacks_tools.then(JsonObject::new),
                    context: lacks_context.then(JsonObject::new),
                    ..Default::default()
                }),
                ..Default::default()
            })
        }
        InputRequest::ListRoots { .. } => declared.roots.is_none().then(|| ClientCapabilities {
            roots: Some(JsonObject::new()),
            ..Default::default()
        }),
    }
}

/// Merges `more` into `acc` (union of capability trees).
fn merge(acc: &mut ClientCapabilities, more: ClientCapabilities) {
    if let Some(e) = more.elicitation {
        // `elicitation: {}` means form (MCP 2026-07-28, Elicitation §Capabilities), so a bare `{}` merged
        // with `{url: {}}` must become `{form: {}, url: {}}`: `{url: {}}` alone
        // would tell the client to declare url-only, which refuses forms.
        let needs_form =
            e.supports_form() || acc.elicitation.as_ref().is_some_and(|a| a.supports_form());
        let a = acc.elicitation.get_or_insert_with(Default::default);
        a.form = a.form.take().or(e.form);
        a.url = a.url.take().or(e.url);
        if needs_form && a.url.is_some() && a.form.is_none() {
            a.form = Some(JsonObject::new());
        }
    }
    if let Some(s) = more.sampling {
        let a = acc.sampling.get_or_insert_with(Default::default);
        a.tools = a.tools.take().or(s.tools);
        a.context = a.context.take().or(s.context);
    }
    if more.roots.is_some() {
        acc.roots = Some(JsonObject::new());
    }
}

/// [`verdict`] with its decisions in a list, in order: what the gating tables
/// read.
///
/// # Errors
/// -32021 naming every capability that the required asks lack (merged), if any.
#[cfg(test)]
pub(crate) fn gate<'a, I>(declared: &ClientCapabilities, asks: I) -> Result<Vec<Decision>, Error>
where
    I: IntoIterator<Item = (&'a InputRequest, Necessity)>,
{
    let mut decisions = Vec::new();
    verdict(declared, asks, |d| decisions.push(d))?;
    Ok(decisions)
}

/// The capability gate: decides, in order, whether each of a round's asks may be
/// sent to a client that declared `declared` in this request; each ask's
/// decision goes to `each`, and nothing is allocated when every required ask is
/// served.
///
/// # Errors
/// -32021 naming every capability that the required asks lack (merged), if any.
pub(crate) fn verdict<'a, I>(
    declared: &ClientCapabilities,
    asks: I,
    mut each: impl FnMut(Decision),
) -> Result<(), Error>
where
    I: IntoIterator<Item = (&'a InputRequest, Necessity)>,
{
    let mut required_missing: Option<ClientCapabilities> = None;
    for (request, necessity) in asks {
        match (missing(declared, request), necessity) {
            (None, _) => each(Decision::Send),
            (Some(_), Necessity::Optional) => each(Decision::Drop),
            (Some(m), Necessity::Required) => {
                merge(required_missing.get_or_insert_with(Default::default), m);
                each(Decision::Drop);
            }
        }
    }
    match required_missing {
        Some(m) => Err(missing_error(&m)),
        None => Ok(()),
    }
}

/// -32021 (HTTP 400) with `data.requiredCapabilities` naming exactly `required`,
/// and a message that names them for a person (`elicitation.url, roots`).
pub(crate) fn missing_error(required: &ClientCapabilities) -> Error {
    Error::missing_capabilities(&capability_names(required), required)
}

/// The capabilities in `c`, as a person reads them.
fn capability_names(c: &ClientCapabilities) -> String {
    let mut names = Vec::new();
    if let Some(e) = &c.elicitation {
        match (e.form.is_some(), e.url.is_some()) {
            (_, true) if e.form.is_none() => names.push("elicitation.url"),
            (true, false) => names.push("elicitation.form"),
            (true, true) => names.push("elicitation.form and elicitation.url"),
            _ => names.push("elicitation"),
        }
    }
    if let Some(s) = &c.sampling {
        match (s.tools.is_some(), s.context.is_some()) {
            (true, true) => names.push("sampling.tools and sampling.context"),
            (true, false) => names.push("sampling.tools"),
            (false, true) => names.push("sampling.context"),
            (false, false) => names.push("sampling"),
        }
    }
    if c.roots.is_some() {
        names.push("roots");
    }
    if names.is_empty() {
        "required".to_owned()
    } else {
        names.join(", ")
    }
}

/// Every row of the gating table, and the gate's decisions (moved beside the
/// gate from the crate's flow tests when the module became crate-private).
#[cfg(test)]
mod gating;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn caps(v: serde_json::Value) -> ClientCapabilities {
        serde_json::from_value(v).unwrap()
    }

    fn merged(parts: &[serde_json::Value]) -> serde_json::Value {
        let mut acc = ClientCapabilities::default();
        for p in parts {
            merge(&mut acc, caps(p.clone()));
        }
        acc.to_value()
    }

    #[test]
    fn a_url_ask_of_a_form_only_client_lacks_elicitation_url() {
        use crate::wire::ElicitUrlParams;
        let url = InputRequest::Elicit(ElicitParams::Url(ElicitUrlParams {
            message: "Sign in".into(),
            url: "https://example.com/login".into(),
        }));
        let m = missing(&caps(json!({"elicitation": {}})), &url).unwrap();
        assert_eq!(m.to_value(), json!({"elicitation": {"url": {}}}));
        assert!(missing(&caps(json!({"elicitation": {"url": {}}})), &url).is_none());
    }

    #[test]
    fn capability_names_read_naturally() {
        for (v, names) in [
            (json!({"elicitation": {}}), "elicitation"),
            (json!({"elicitation": {"form": {}}}), "elicitation.form"),
            (json!({"elicitation": {"url": {}}}), "elicitation.url"),
            (
                json!({"elicitation": {"form": {}, "url": {}}}),
                "elicitation.form and elicitation.url",
            ),
            (json!({"sampling": {}}), "sampling"),
            (json!({"sampling": {"tools": {}}}), "sampling.tools"),
            (json!({"sampling": {"context": {}}}), "sampling.context"),
            (
                json!({"sampling": {"tools": {}, "context": {}}}),
                "sampling.tools and sampling.context",
            ),
            (json!({"roots": {}}), "roots"),
            (
                json!({"elicitation": {"url": {}}, "roots": {}}),
                "elicitation.url, roots",
            ),
            (json!({}), "required"),
        ] {
            assert_eq!(capability_names(&caps(v.clone())), names, "{v}");
        }
    }

    #[test]
    fn merge_keeps_implicit_form_next_to_url() {
        let form = json!({"elicitation": {}});
        let url = json!({"elicitation": {"url": {}}});
        let both = json!({"elicitation": {"form": {}, "url": {}}});
        assert_eq!(merged(&[form.clone(), url.clone()]), both);
        assert_eq!(merged(&[url.clone(), form.clone()]), both);
        assert_eq!(
            merged(&[json!({"elicitation": {"form": {}}}), url.clone()]),
            both
        );
        // Nothing is invented when only one mode is named.
        assert_eq!(merged(&[form.clone(), form.clone()]), form);
        assert_eq!(merged(&[url.clone(), url.clone()]), url);
    }

    #[test]
    fn merge_unions_sampling_and_roots() {
        assert_eq!(
            merged(&[
                json!({"sampling": {}}),
                json!({"sampling": {"tools": {}}}),
                json!({"roots": {}})
            ]),
            json!({"sampling": {"tools": {}}, "roots": {}})
        );
        assert_eq!(
            merged(&[
                json!({"sampling": {"context": {}}}),
                json!({"sampling": {"tools": {}}})
            ]),
            json!({"sampling": {"tools": {}, "context": {}}})
        );
    }
}
