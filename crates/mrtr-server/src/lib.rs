#![doc = include_str!("../README.md")]
//!
//! # How a request travels
//!
//! The server: Streamable HTTP and stdio transports around a [`Service`](mrtr::Service) the
//! application builds (the `mrtr` binary, crate `mrtr-cli`, passes the reference
//! server's tools).
//!
//! Transports do transport things only: read bytes within a size limit, check the
//! `Origin` and `Content-Type`, take the caller's principal (from the request over
//! HTTP, from configuration on stdio), copy the MCP headers into [`McpHeaders`]
//! and check them (with a `tools/call`'s `Mcp-Param-*` headers, for a tool that
//! declares `x-mcp-header` parameters: [`Service::param_headers`](mrtr::Service::param_headers)),
//! pick JSON or SSE framing from `Accept`, write the reply, and log one line per
//! request. Everything the protocol decides happens in [`Service::handle`](mrtr::Service::handle).
//!
//! ```text
//!  accept (connection cap; header and idle timeouts close the socket)
//!    └► POST /mcp ─► host (421) ─► origin (403) ─► principal (401) ─► content-type (415)
//!         ─► declared size (413) ─► in-flight slot, body budget (503) ─► body (413, 408)
//!         ─► one strict parse ─► the tool's scope, behind the OAuth resource server (403) ┐
//!  stdin line (principal from configuration) ─► line limit (-32600) ──────────────────────┤
//!                                                                                         ▼
//!                                                       Service::handle(body, ctx) -> Reply
//!                                                                                         │
//!  HTTP: reply_status(&Reply) + JSON or one SSE event; no body → 202 ◄───────────────────────┤
//!  stdout: one line per reply ◄───────────────────────────────────────────────────────────┘
//! ```
//!
//! A request whose `_meta` asks for notifications (a `progressToken`, a log
//! level) gets its handler's progress and log messages before its reply: SSE
//! events on HTTP (when `Accept` allows `text/event-stream`), lines on stdout;
//! at most [`defaults::MAX_NOTIFICATIONS_PER_REQUEST`] of them wait for a slow
//! reader.
//!
//! With `mrtr serve --metrics-listen` (a [`MetricsEndpoint`]), a second listener of its own serves
//! `GET /metrics`; it never shares the MCP port.
//!
//! [`McpHeaders`]: mrtr::streamable_http::McpHeaders
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod defaults;
pub mod http;
pub mod keys;
mod log;
mod notify;
#[cfg(feature = "oauth")]
pub mod oauth;
#[cfg(feature = "otlp")]
pub mod otel;
mod scrape;
mod span;
pub mod stdio;
mod tasks;

pub use keys::{KEYS_ENV, keyring_from_env};
pub use scrape::{METRICS_PATH, METRICS_RESERVED_DESCRIPTORS, MetricsEndpoint, MetricsListener};

/// A setting the transport cannot use (an origin or host of the wrong form, an
/// address that cannot be bound); the message names the setting, never a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ServerConfigError(pub String);
