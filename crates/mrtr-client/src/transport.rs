//! The [`Transport`] trait: one JSON-RPC request out, its response back.

use std::sync::Arc;

use serde_json::Value;

use crate::legacy::LegacyTransport;
use crate::{BoxFuture, Timer, TransportError};

/// Sends one JSON-RPC request and returns the JSON-RPC response.
///
/// The request is a complete JSON-RPC request object (`{jsonrpc, id, method,
/// params}`); the response is the complete response object (`{jsonrpc, id,
/// result}` or `{jsonrpc, id?, error}`). How the response travels (a JSON body,
/// an SSE stream, a pipe) is the transport's business: the driver only ever sees
/// the one response to the one request. A JSON-RPC *error response* is a normal
/// return value (the driver turns it into [`FlowError::JsonRpc`](crate::FlowError::JsonRpc)); a
/// [`TransportError`] means no response object could be obtained.
///
/// The trait is object safe (`Arc<dyn Transport>` is what the [`Client`] holds)
/// and its futures are `Send`, so a client can be used from any task of a
/// multi-threaded runtime. Implement it with `Box::pin(async move { ... })`:
///
/// ```
/// use mrtr_client::{BoxFuture, Transport, TransportError};
/// use serde_json::{json, Value};
///
/// #[derive(Debug)]
/// struct Echo;
/// impl Transport for Echo {
///     fn send(&self, request: Value) -> BoxFuture<'_, Result<Value, TransportError>> {
///         Box::pin(async move {
///             Ok(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"resultType": "complete"}}))
///         })
///     }
/// }
/// ```
///
/// [`Client`]: super::Client
pub trait Transport: Send + Sync + std::fmt::Debug {
    /// Sends `request` and resolves to its response.
    ///
    /// # Errors
    /// A [`TransportError`] when no JSON-RPC response object could be obtained.
    fn send(&self, request: Value) -> BoxFuture<'_, Result<Value, TransportError>>;

    /// The timer of the runtime this transport runs on: the [`Client`](super::Client)'s default
    /// for back-off and its time caps ([`ClientBuilder::with_timer`] overrides it).
    /// `None` (the default) leaves a client without one unless the builder sets it.
    ///
    /// [`ClientBuilder::with_timer`]: super::ClientBuilder::with_timer
    fn timer(&self) -> Option<Arc<dyn Timer>> {
        None
    }

    /// This transport as a carrier of the 2025 era (`initialize`, sessions,
    /// server requests), when it can be one. `None` (the default): a
    /// [`Client`](super::Client) on it speaks MCP 2026-07-28 only.
    fn legacy(&self) -> Option<&dyn LegacyTransport> {
        None
    }

    /// The transport as the OpenTelemetry conventions name it
    /// (`network.transport`): `tcp` for HTTP, `pipe` for stdio; `unknown` (the
    /// default) for another.
    fn network_transport(&self) -> &'static str {
        "unknown"
    }

    /// The server's host and port, as the conventions' `server.address` and
    /// `server.port` name them (an HTTP transport's URL's); `None` (the
    /// default) for a transport without one, as stdio.
    fn server_address(&self) -> Option<(&str, u16)> {
        None
    }
}

impl<T: Transport + ?Sized> Transport for Arc<T> {
    fn send(&self, request: Value) -> BoxFuture<'_, Result<Value, TransportError>> {
        (**self).send(request)
    }

    fn timer(&self) -> Option<Arc<dyn Timer>> {
        (**self).timer()
    }

    fn legacy(&self) -> Option<&dyn LegacyTransport> {
        (**self).legacy()
    }

    fn network_transport(&self) -> &'static str {
        (**self).network_transport()
    }

    fn server_address(&self) -> Option<(&str, u16)> {
        (**self).server_address()
    }
}

impl<T: Transport + ?Sized> Transport for Box<T> {
    fn send(&self, request: Value) -> BoxFuture<'_, Result<Value, TransportError>> {
        (**self).send(request)
    }

    fn timer(&self) -> Option<Arc<dyn Timer>> {
        (**self).timer()
    }

    fn legacy(&self) -> Option<&dyn LegacyTransport> {
        (**self).legacy()
    }

    fn network_transport(&self) -> &'static str {
        (**self).network_transport()
    }

    fn server_address(&self) -> Option<(&str, u16)> {
        (**self).server_address()
    }
}
