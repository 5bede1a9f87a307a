//! [`ClientError`]: every way a call can end without a result: the flow's own
//! ([`FlowError`]), and the transport's, the handlers' and the clocks'.

use std::time::Duration;

use mrtr::client::FlowError;
use mrtr::wire::InputKind;

use crate::handler::HandlerError;

/// Why a call ended without a final result.
///
/// A tool that ran and failed is *not* an error here: it is a complete result
/// with `isError: true` (see [`Completion::is_tool_error`](mrtr::client::Completion::is_tool_error)).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The flow ended: what the server answered, or one of the client's caps
    /// (every check of [`mrtr::client::Flow`]).
    #[error(transparent)]
    Flow(#[from] FlowError),
    /// No response could be obtained.
    #[error("transport: {0}")]
    Transport(#[from] TransportError),
    /// The whole flow took longer than the client's time cap.
    #[error("gave up after {after:?}: the flow did not complete in time")]
    Timeout {
        /// The cap that was reached.
        after: Duration,
    },
    /// One request got no response within the client's per-request time cap.
    #[error("no response within {after:?}: the request timed out")]
    RequestTimeout {
        /// The cap that was reached.
        after: Duration,
    },
    /// A 2025-era server sent more requests during one call than the client
    /// answers ([`ClientBuilder::with_max_server_requests`](crate::ClientBuilder::with_max_server_requests)).
    #[error("the server sent more than {limit} requests during one call")]
    TooManyServerRequests {
        /// The cap that was reached.
        limit: usize,
    },
    /// A handler gave no answer for an input request; the flow stops without a retry.
    #[error("input {key:?} ({}) not answered: {source}", .kind.as_str())]
    Handler {
        /// The input request's key.
        key: String,
        /// Its kind.
        kind: InputKind,
        /// Why.
        source: HandlerError,
    },
}

impl ClientError {
    /// The flow's own error, if it is one.
    pub fn flow(&self) -> Option<&FlowError> {
        match self {
            Self::Flow(e) => Some(e),
            _ => None,
        }
    }

    /// The JSON-RPC error code, for [`FlowError::JsonRpc`].
    pub fn jsonrpc_code(&self) -> Option<i64> {
        self.flow().and_then(FlowError::jsonrpc_code)
    }
}

/// Why a transport could not deliver a request or read its response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The connection could not be made or broke (I/O, DNS, refused, reset).
    #[error("connection failed: {0}")]
    Connection(String),
    /// The server answered with an HTTP status and a body that is not a JSON-RPC response.
    #[error("http status {status}: {body}")]
    Status {
        /// The HTTP status code.
        status: u16,
        /// The start of the body, for diagnosis.
        body: String,
    },
    /// The response could not be read as a JSON-RPC response (bad JSON, bad SSE,
    /// an unexpected content type, a stream that ended without the response).
    #[error("invalid response: {0}")]
    InvalidResponse(String),
    /// The request could not be built (e.g. a bad URL or a header value that HTTP cannot carry).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// TLS refused the connection (e.g. a server certificate that is not signed by
    /// a trusted CA, or not for this host), or its configuration is unusable (a
    /// root of trust that is not a certificate, no root of trust at all).
    #[error("tls: {0}")]
    Tls(String),
    /// The server refused the request's credentials (HTTP 401): none were sent,
    /// or the token was refused, again after a fresh one where the transport has a
    /// source to ask. The text says which, with the server's `error` code if it
    /// gave one; never a token or a header value.
    #[error("unauthorized: {0}")]
    Unauthorized(String),
}
