//! mrtr: Multi Round-Trip Requests (MCP 2026-07-28) for MCP servers.
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod capability;
pub mod carrier;
pub mod client;
pub mod error;
pub mod principal;
pub mod seal;
#[cfg(feature = "server")]
pub mod server;
pub mod service;
pub mod time;
pub mod wire;
