//! The Streamable HTTP rules of MCP 2026-07-28, sans-IO: which headers must agree
//! with the body (-32020), and which HTTP status each reply gets. Plain values in,
//! plain `u16` statuses out; the axum adapter of the `server` feature and any
//! other HTTP transport use this module, and [`crate::service::Service`] calls it.
//!
//! | reply | status |
//! |---|---|
//! | a notification (no body) | 202 |
//! | a result: complete, `input_required`, or a tool error (`isError`) | 200 |
//! | -32601 method not found | 404 (MUST) |
//! | -32603 internal error | 500 |
//! | every other JSON-RPC error (-32700, -32600, -32602, -32020, -32021, -32022) | 400 |
//!
//! The specification requires 404 for -32601 and 400 for a missing `_meta` field,
//! -32020, -32021 and -32022; it leaves the others open, and mrtr answers 500 for
//! its own fault and 400 for every other client fault.

use serde_json::Value;

use crate::engine::Outcome;
use crate::error::{Error, code};
use crate::service::Reply;
use crate::wire::CarrierMethod;
use crate::wire::meta::META_PROTOCOL_VERSION;

/// `MCP-Protocol-Version`, as an HTTP header name (lower case).
pub const HEADER_PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// `Mcp-Method`, as an HTTP header name (lower case).
pub const HEADER_METHOD: &str = "mcp-method";
/// `Mcp-Name`, as an HTTP header name (lower case).
pub const HEADER_NAME: &str = "mcp-name";

/// The status of a reply without a body (a notification, or a response to one).
pub const NOTIFICATION_STATUS: u16 = 202;

/// The Streamable HTTP headers that must agree with the body (MCP 2026-07-28,
/// Streamable HTTP §Server Validation). `None` means the header was absent; a header whose bytes are
/// not visible ASCII is passed as `Some` of its lossy text so the check fails with -32020.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpHeaders {
    /// `MCP-Protocol-Version`.
    pub protocol_version: Option<String>,
    /// `Mcp-Method`.
    pub method: Option<String>,
    /// `Mcp-Name` (tools/call and prompts/get: `params.name`; resources/read: `params.uri`).
    pub name: Option<String>,
}

impl McpHeaders {
    /// The headers a conforming client sends with `request` (a whole JSON-RPC
    /// request object): the protocol version equal to `_meta`'s (or `default_version`
    /// when `_meta` names none), `Mcp-Method` the method, and for a carrier
    /// `Mcp-Name` its target (`params.name`, or `params.uri` for resources/read).
    pub fn for_request(request: &Value, default_version: &str) -> Self {
        let method = request.get("method").and_then(Value::as_str);
        let params = request.get("params");
        let version = params
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(META_PROTOCOL_VERSION))
            .and_then(Value::as_str)
            .unwrap_or(default_version);
        let name = method
            .and_then(CarrierMethod::from_method)
            .and_then(|c| params.and_then(|p| p.get(c.target_param())))
            .and_then(Value::as_str);
        Self {
            protocol_version: Some(version.to_owned()),
            method: method.map(str::to_owned),
            name: name.map(str::to_owned),
        }
    }
}

/// The HTTP status of `error` when it goes out as a JSON-RPC error: 404 for
/// -32601, 500 for -32603, 400 for every other code.
///
/// ```
/// use mrtr::error::Error;
/// use mrtr::streamable_http::error_status;
/// assert_eq!(error_status(&Error::method_not_found("x")), 404);
/// assert_eq!(error_status(&Error::invalid_request_state("tag")), 400);
/// assert_eq!(error_status(&Error::internal("x")), 500);
/// ```
pub fn error_status(error: &Error) -> u16 {
    code_status(error.code())
}

/// The HTTP status of a JSON-RPC error response with `code`.
fn code_status(code: i64) -> u16 {
    match code {
        code::METHOD_NOT_FOUND => 404,
        code::INTERNAL_ERROR => 500,
        _ => 400,
    }
}

/// The HTTP status of the response carrying the router's `reply`: 202 without a
/// body (a notification), [`error_status`] for a JSON-RPC error, else 200 (a
/// result, a tool error included).
pub fn reply_status(reply: &Reply) -> u16 {
    match (&reply.body, reply.error_code) {
        (None, _) => NOTIFICATION_STATUS,
        (Some(_), Some(code)) => code_status(code),
        (Some(_), None) => 200,
    }
}

/// The HTTP status of the response carrying `outcome`: 200 for a result (a tool
/// error included), else [`error_status`].
pub fn outcome_status(outcome: &Outcome) -> u16 {
    match outcome {
        Outcome::Protocol(e) => error_status(e),
        _ => 200,
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
    if let Some(c) = carrier {
        let body_name = params
            .and_then(|p| p.get(c.target_param()))
            .and_then(Value::as_str);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Fallback, Retry, ToolAdvice};
    use serde_json::json;

    #[test]
    fn statuses() {
        assert_eq!(error_status(&Error::parse("x")), 400);
        assert_eq!(error_status(&Error::invalid_request("x")), 400);
        assert_eq!(error_status(&Error::method_not_found("x")), 404);
        assert_eq!(error_status(&Error::invalid_params("x")), 400);
        assert_eq!(error_status(&Error::internal("x")), 500);
        assert_eq!(error_status(&Error::header_mismatch("Mcp-Name", "x")), 400);
        assert_eq!(error_status(&Error::unsupported_version("1")), 400);
        let failure = Error::tool_failure(
            ToolAdvice::new("x", Retry::Helps),
            Fallback::Internal,
            "c",
            "d",
        );
        let tool_error = Outcome::from_error(Some(CarrierMethod::ToolsCall), failure.clone());
        assert_eq!(outcome_status(&tool_error), 200);
        let rpc_error = Outcome::from_error(Some(CarrierMethod::PromptsGet), failure);
        assert_eq!(outcome_status(&rpc_error), 500);
        assert_eq!(outcome_status(&Outcome::Complete(json!({}))), 200);
    }

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
}
