//! The conformance fixtures for tool schemas: a tool whose arguments travel as
//! `Mcp-Param-*` headers too (scenario `http-custom-header-server-validation`,
//! SEP-2243), and a tool whose `inputSchema` uses JSON Schema 2020-12 keywords,
//! listed verbatim (scenario `json-schema-2020-12`, SEP-1613 and SEP-2106).
//! Written with the public API only.

use serde_json::{Value, json};

use mrtr::ToolResult;
use mrtr::service::Service;

/// The tool whose `region`, `priority` and `verbose` arguments are mirrored
/// into `Mcp-Param-Region`, `Mcp-Param-Priority` and `Mcp-Param-Verbose`.
const PARAM_HEADERS_TOOL: &str = "test_x_mcp_header";

/// The tool with the JSON Schema 2020-12 `inputSchema`.
const JSON_SCHEMA_2020_12_TOOL: &str = "json_schema_2020_12_tool";

/// The `inputSchema` of [`PARAM_HEADERS_TOOL`]: one string, one integer and one
/// boolean parameter designated as headers, and one that is not.
fn param_headers_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "region": {
                "type": "string",
                "description": "The region to run in; also sent as Mcp-Param-Region",
                "x-mcp-header": "Region",
            },
            "priority": {
                "type": "integer",
                "description": "A priority; also sent as Mcp-Param-Priority",
                "x-mcp-header": "Priority",
            },
            "verbose": {
                "type": "boolean",
                "description": "Verbose output; also sent as Mcp-Param-Verbose",
                "x-mcp-header": "Verbose",
            },
            "query": {"type": "string", "description": "Not mirrored into a header"},
        },
        "required": ["region"],
    })
}

/// The `inputSchema` of [`JSON_SCHEMA_2020_12_TOOL`], as the suite gives it.
fn json_schema_2020_12_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            },
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"},
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false,
    })
}

/// Registers the two fixtures on `s`.
pub(super) fn tools(s: Service) -> Service {
    s.tool(
        PARAM_HEADERS_TOOL,
        "Conformance (SEP-2243): region, priority and verbose travel as Mcp-Param-* headers too, \
         which the server checks against the arguments; answers with the region.",
        param_headers_schema(),
        |round| {
            let region = round
                .argument("region")
                .and_then(Value::as_str)
                .unwrap_or_default();
            Ok(ToolResult::text(format!("region: {region}")))
        },
    )
    .tool(
        JSON_SCHEMA_2020_12_TOOL,
        "Tool with JSON Schema 2020-12 features",
        json_schema_2020_12_schema(),
        |_| Ok(ToolResult::text("ok")),
    )
}
