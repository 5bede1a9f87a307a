//! The MCP request headers (MCP 2026-07-28, Streamable HTTP §Server Validation):
//! their names, reading them from a request ([`McpHeaders::read`]), writing them on
//! one ([`McpHeaders::for_request`], [`McpHeaders::pairs`]), and their agreement
//! with the body ([`check_headers`], -32020).

use serde_json::Value;

use crate::error::Error;
use crate::wire::CarrierMethod;
use crate::wire::meta::META_PROTOCOL_VERSION;

/// `MCP-Protocol-Version`, as an HTTP header name (lower case).
pub const HEADER_PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// `Mcp-Method`, as an HTTP header name (lower case).
pub const HEADER_METHOD: &str = "mcp-method";
/// `Mcp-Name`, as an HTTP header name (lower case).
pub const HEADER_NAME: &str = "mcp-name";

/// The Streamable HTTP headers that must agree with the body (MCP 2026-07-28,
/// Streamable HTTP §Server Validation). `None` means the header was absent; a header whose bytes are
/// not visible ASCII is passed as `Some` of its lossy text so the check fails with -32020.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpHeaders {
    /// `MCP-Protocol-Version`.
    pub protocol_version: Option<String>,
    /// `Mcp-Method`.
    pub method: Option<String>,
    /// `Mcp-Name` (tools/call and prompts/get: `params.name`; resources/read:
    /// `params.uri`; tasks/get, tasks/update and tasks/cancel: `params.taskId`).
    pub name: Option<String>,
}

impl McpHeaders {
    /// The headers a conforming client sends with `request` (a whole JSON-RPC
    /// request object): the protocol version equal to `_meta`'s (or `default_version`
    /// when `_meta` names none), `Mcp-Method` the method, and for a carrier
    /// `Mcp-Name` its target (`params.name`, or `params.uri` for resources/read),
    /// for a task's method its `params.taskId`.
    pub fn for_request(request: &Value, default_version: &str) -> Self {
        let method = request.get("method").and_then(Value::as_str);
        let params = request.get("params");
        let version = params
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(META_PROTOCOL_VERSION))
            .and_then(Value::as_str)
            .unwrap_or(default_version);
        let name = method
            .and_then(name_param)
            .and_then(|param| params.and_then(|p| p.get(param)))
            .and_then(Value::as_str);
        Self {
            protocol_version: Some(version.to_owned()),
            method: method.map(str::to_owned),
            name: name.map(str::to_owned),
        }
    }

    /// Reads the three headers of a request through `values`, which gives every
    /// value of the header it is asked for (by its lower-case name, in the order
    /// they came). Absent → `None`; repeated → the values joined with `", "`, so
    /// [`check_headers`] sees a mismatch; bytes that are not UTF-8 → their lossy
    /// text, which [`check_headers`] rejects with -32020 (a value that is visible
    /// ASCII reads as itself).
    pub fn read<'a, F, I>(mut values: F) -> Self
    where
        F: FnMut(&'static str) -> I,
        I: IntoIterator<Item = &'a [u8]>,
    {
        // The text of one value: itself when it is UTF-8 (the usual case, checked
        // without the lossy decoder's chunking), else its lossy text.
        fn text(v: &[u8]) -> std::borrow::Cow<'_, str> {
            match std::str::from_utf8(v) {
                Ok(s) => s.into(),
                Err(_) => String::from_utf8_lossy(v),
            }
        }
        let mut one = |name: &'static str| {
            let mut values = values(name).into_iter();
            let mut joined = text(values.next()?).into_owned();
            for v in values {
                joined.push_str(", ");
                joined.push_str(&text(v));
            }
            Some(joined)
        };
        Self {
            protocol_version: one(HEADER_PROTOCOL_VERSION),
            method: one(HEADER_METHOD),
            name: one(HEADER_NAME),
        }
    }

    /// The headers to write on a request, as `(lower-case name, value)` pairs, the
    /// absent ones left out.
    pub fn pairs(&self) -> impl Iterator<Item = (&'static str, &str)> {
        [
            (HEADER_PROTOCOL_VERSION, &self.protocol_version),
            (HEADER_METHOD, &self.method),
            (HEADER_NAME, &self.name),
        ]
        .into_iter()
        .filter_map(|(name, value)| value.as_deref().map(|v| (name, v)))
    }
}

/// The header checks (MCP 2026-07-28, Streamable HTTP §Server Validation): the
/// headers of a request for `method` with `params` (`carrier` when it is one of the
/// three carrier methods) must be present, visible ASCII, and agree with the body.
///
/// # Errors
/// -32020 naming the header at fault (never its value). A missing target in the
/// body is left to the params check (-32602).
pub fn check_headers(
    h: &McpHeaders,
    method: &str,
    params: Option<&Value>,
    carrier: Option<CarrierMethod>,
) -> Result<(), Error> {
    let valid = |v: &str| !v.is_empty() && v.bytes().all(|b| (0x20..0x7f).contains(&b));
    match h.method.as_deref() {
        Some(m) if valid(m) && m == method => {}
        Some(_) => {
            return Err(Error::header_mismatch(
                "Mcp-Method",
                "Mcp-Method differs from body method or is malformed",
            ));
        }
        None => {
            return Err(Error::header_mismatch(
                "Mcp-Method",
                "Mcp-Method header missing",
            ));
        }
    }
    let body_version = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(META_PROTOCOL_VERSION))
        .and_then(Value::as_str);
    match (h.protocol_version.as_deref(), body_version) {
        (None, _) => {
            return Err(Error::header_mismatch(
                "MCP-Protocol-Version",
                "MCP-Protocol-Version header missing",
            ));
        }
        (Some(v), _) if !valid(v) => {
            return Err(Error::header_mismatch(
                "MCP-Protocol-Version",
                "MCP-Protocol-Version header malformed",
            ));
        }
        (Some(v), Some(b)) if v != b => {
            return Err(Error::header_mismatch(
                "MCP-Protocol-Version",
                "MCP-Protocol-Version differs from _meta",
            ));
        }
        _ => {}
    }
    let named = carrier
        .map(CarrierMethod::target_param)
        .or_else(|| name_param(method));
    if let Some(param) = named {
        let body_name = params.and_then(|p| p.get(param)).and_then(Value::as_str);
        match (h.name.as_deref(), body_name) {
            (None, _) => {
                return Err(Error::header_mismatch(
                    "Mcp-Name",
                    "Mcp-Name header missing",
                ));
            }
            (Some(n), Some(b)) if n == b && valid(n) => {}
            (Some(_), None) => {} // the body check (-32602) reports the missing target
            (Some(_), Some(_)) => {
                return Err(Error::header_mismatch(
                    "Mcp-Name",
                    "Mcp-Name differs from body or is malformed",
                ));
            }
        }
    }
    Ok(())
}

/// The parameter `Mcp-Name` mirrors for `method`: a carrier's target, a
/// task's id on the tasks extension's methods; `None` for any other method.
fn name_param(method: &str) -> Option<&'static str> {
    match method {
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => CarrierMethod::from_method(method).map(CarrierMethod::target_param),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::code;
    use serde_json::json;

    #[test]
    fn headers_must_agree_with_the_body() {
        let params = json!({"name": "echo", "_meta": {META_PROTOCOL_VERSION: "2026-07-28"}});
        let ok = McpHeaders {
            protocol_version: Some("2026-07-28".into()),
            method: Some("tools/call".into()),
            name: Some("echo".into()),
        };
        let check = |h: &McpHeaders| {
            check_headers(
                h,
                "tools/call",
                Some(&params),
                Some(CarrierMethod::ToolsCall),
            )
        };
        assert!(check(&ok).is_ok());
        let e = check(&McpHeaders {
            name: Some("other".into()),
            ..ok.clone()
        })
        .unwrap_err();
        assert_eq!(e.code(), code::HEADER_MISMATCH);
        assert!(e.public_message().contains("Mcp-Name"));
        // A method that is not a carrier needs no Mcp-Name.
        let list = McpHeaders {
            method: Some("tools/list".into()),
            name: None,
            ..ok
        };
        assert!(check_headers(&list, "tools/list", Some(&params), None).is_ok());
    }

    #[test]
    fn headers_read_as_one_value_each_and_write_back() {
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read",
            "params": {"uri": "file:///a"}});
        let sent = McpHeaders::for_request(&request, "2026-07-28");
        let pairs: Vec<_> = sent.pairs().collect();
        assert_eq!(
            pairs,
            [
                (HEADER_PROTOCOL_VERSION, "2026-07-28"),
                (HEADER_METHOD, "resources/read"),
                (HEADER_NAME, "file:///a"),
            ]
        );
        // What was written reads back as the same headers.
        let read = McpHeaders::read(|name| {
            pairs
                .iter()
                .filter(move |(n, _)| *n == name)
                .map(|(_, v)| v.as_bytes())
        });
        assert_eq!(read, sent);
        // Repeated values join (a mismatch for the check); odd bytes read lossily.
        let odd = McpHeaders::read(|name| match name {
            HEADER_METHOD => vec![&b"tools/list"[..], b"tools/call"],
            HEADER_NAME => vec![&b"\xffx"[..]],
            _ => vec![],
        });
        assert_eq!(odd.method.as_deref(), Some("tools/list, tools/call"));
        assert_eq!(odd.name.as_deref(), Some("\u{fffd}x"));
        assert_eq!(odd.protocol_version, None);
        assert_eq!(McpHeaders::default().pairs().count(), 0);
    }

    #[test]
    fn a_task_s_method_names_its_task_in_mcp_name() {
        let params = json!({"taskId": "t1", "_meta": {META_PROTOCOL_VERSION: "2026-07-28"}});
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": params});
        let sent = McpHeaders::for_request(&request, "2026-07-28");
        assert_eq!(sent.name.as_deref(), Some("t1"));
        assert!(check_headers(&sent, "tasks/get", Some(&params), None).is_ok());
        for name in [None, Some("t2".to_owned())] {
            let h = McpHeaders {
                name,
                ..sent.clone()
            };
            let e = check_headers(&h, "tasks/get", Some(&params), None).unwrap_err();
            assert_eq!(e.code(), code::HEADER_MISMATCH);
        }
        // tasks/result (removed) names nothing.
        let removed =
            json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/result", "params": params});
        assert_eq!(McpHeaders::for_request(&removed, "2026-07-28").name, None);
    }
}
