//! The sans-IO request service: one JSON-RPC message in, one reply out.
//!
//! Transports (the Streamable HTTP and stdio adapters of the `server` feature) read
//! bytes, call [`Service::handle`], and write the reply. Everything the protocol
//! decides (parse errors, header/body agreement, `_meta`, routing, the round
//! engine, the error channels) happens here, without I/O or a clock.
//!
//! PLACEHOLDER: the interface is fixed; the body is filled in by the engine work.

use crate::principal::Principal;
use crate::time::Timestamp;

/// The Streamable HTTP headers that must agree with the body (spec: streamable-http
/// §Server Validation). `None` means the header was absent; a header whose bytes are
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

/// What the transport knows about one incoming message.
#[derive(Debug, Clone)]
pub struct RequestContext {
    /// The authenticated principal (the reference server is anonymous).
    pub principal: Principal,
    /// The current time, read by the transport.
    pub now: Timestamp,
    /// A correlation id for the private log; never sent to the client.
    pub correlation_id: String,
    /// The HTTP headers to validate; `None` on stdio.
    pub http_headers: Option<McpHeaders>,
}

/// The reply to one message.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The serialized JSON-RPC response, or `None` for a notification.
    pub body: Option<String>,
    /// The HTTP status the Streamable HTTP transport must use.
    pub http_status: u16,
    /// What the transport logs on its one line for this request.
    pub log: RequestLog,
}

/// The private, per-request log record (never sent to the client).
#[derive(Debug, Clone, Default)]
pub struct RequestLog {
    /// The JSON-RPC id, rendered as JSON text.
    pub jsonrpc_id: Option<String>,
    /// The method, if one was read.
    pub method: Option<String>,
    /// The tool or prompt name or resource URI.
    pub target: Option<String>,
    /// `complete`, `input_required`, `tool_error`, `notification`, or `error:<code>`.
    pub outcome: String,
    /// The round of an MRTR flow, when known (1 = first round).
    pub round: Option<u32>,
    /// The private reason a requestState was rejected, when it was.
    pub reject_reason: Option<&'static str>,
    /// A private diagnostic detail (never a token, key, plaintext state or argument value).
    pub detail: Option<String>,
}

/// The request service. PLACEHOLDER until the engine lands: answers -32601 to everything.
#[derive(Debug, Default)]
pub struct Service {
    _private: (),
}

impl Service {
    /// A placeholder service (every method unknown).
    pub fn placeholder() -> Self {
        Self { _private: () }
    }

    /// Handles one JSON-RPC message (the raw body bytes).
    pub fn handle(&self, body: &[u8], ctx: &RequestContext) -> Reply {
        let _ = (body, ctx);
        Reply {
            body: Some(
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"Method not found"}}"#
                    .to_owned(),
            ),
            http_status: 404,
            log: RequestLog { outcome: "error:-32601".into(), ..RequestLog::default() },
        }
    }
}
