//! The Streamable HTTP rules of MCP 2026-07-28, sans-IO, for both ends: plain
//! values in (`&str`, `&[u8]`, `Option<&str>` for a header), plain values out
//! (`bool`, `u16` statuses, `String` bodies). The axum server (`mrtr_server::http`),
//! the client's HTTP transport (`mrtr_client::HttpTransport`) and the rmcp adapter's
//! `HttpGuard` use this module and keep no rule of their own; [`crate::service::Service`] calls [`check_headers`] and the status
//! table. No HTTP library is involved: the core builds without features, for
//! wasm32 too.
//!
//! | rule | here | server | client |
//! |---|---|---|---|
//! | `Accept`: one JSON body or an SSE event | [`reply_framing`], [`response_framing`], [`ACCEPT_JSON_AND_EVENT_STREAM`] | picks the framing | sends the `Accept`, reads either |
//! | a request's notifications as SSE events before its response | [`accepts_event_stream`], [`sse_event`] | streams them | reads the response's event |
//! | `Origin` | [`origin_allowed`], [`normalize_origin`] | 403 | sends none |
//! | `Content-Type` | [`is_json_content_type`], [`JSON`] | 415 | sends `application/json` |
//! | SSE framing | [`sse_event`], [`SseParser`] | writes one event | reads events |
//! | the id-less error body | [`error_body`], [`Refusal`] | every refusal | takes an id-less error as the reply |
//! | MCP headers (-32020) | [`McpHeaders::read`], [`McpHeaders::for_request`], [`McpHeaders::pairs`], [`check_headers`] | reads them | writes them |
//! | parameter headers, `x-mcp-header` (-32020) | [`ParamHeaders::from_input_schema`], [`check_param_headers`], [`ParamHeaders::pairs`] | reads the ones its tool declares ([`Service::param_headers`](crate::service::Service::param_headers)) | writes them |
//! | the status table | [`error_status`], [`outcome_status`], [`reply_shape`], [`Refusal::status`] | sets the status | hands over a JSON-RPC reply whatever its status |
//!
//! The status table:
//!
//! | reply | status |
//! |---|---|
//! | a notification (no body) | 202 |
//! | a result: complete, `input_required`, or a tool error (`isError`) | 200 |
//! | -32601 method not found | 404 (MUST) |
//! | -32603 internal error | 500 |
//! | every other JSON-RPC error (-32700, -32600, -32602, -32020, -32021, -32022) | 400 |
//! | a transport refusal ([`Refusal`]) | 421 `Host`, 403 `Origin`, 401, 415, 413, 408, 400, 503, 500 |
//!
//! The specification requires 404 for -32601 and 400 for a missing `_meta` field,
//! -32020, -32021 and -32022, and 403 for a foreign `Origin`; it leaves the others
//! open, and mrtr answers 500 for its own fault and 400 for every other client
//! fault.

mod headers;
mod media;
mod origin;
mod sse;
mod status;

pub use crate::param_headers::{
    HEADER_PARAM_PREFIX, ParamHeaderError, ParamHeaders, check_param_headers,
};
pub use headers::{HEADER_METHOD, HEADER_NAME, HEADER_PROTOCOL_VERSION, McpHeaders, check_headers};
pub use media::{
    ACCEPT_JSON_AND_EVENT_STREAM, EVENT_STREAM, Framing, JSON, accepts_event_stream,
    is_json_content_type, reply_framing, response_framing,
};
pub use origin::{normalize_origin, origin_allowed};
pub use sse::{SseParser, sse_event};
pub use status::{
    NOTIFICATION_STATUS, Refusal, ReplyShape, error_body, error_status, outcome_status,
    reply_shape, reply_status,
};
