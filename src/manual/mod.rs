//!
//! The API docs say what each item does; these chapters say how the pieces fit,
//! what the crate promises, and what is left to the application that embeds it.
//! They are plain prose modules with no items, in the manner of rustls's
//! `manual`.
//!
//! | chapter | read it when |
//! |---|---|
//! | [`token_format`](crate::manual::token_format) | you need the exact bytes of a sealed `requestState`, or you change them |
//! | [`security_model`](crate::manual::security_model) | you decide whether mrtr protects what you need: what is secret, bound, expiring, single-use, and which errors a client sees |
//! | [`handler_model`](crate::manual::handler_model) | you write a tool, prompt or resource handler that asks for input |
//!
//! Running the `mrtr` binary (`mrtr serve`) as a fleet, its key files and the
//! three-phase key rotation, its logs, metrics and alerts, is the binary's own
//! manual: `mrtr_cli::manual::rotation` and `mrtr_cli::manual::operations`, in
//! the `mrtr-cli` crate's docs. They change with its flags; these do not.
//!
//! # Citing the specification
//!
//! Rules of the protocol are cited from the public MCP specification, revision
//! 2026-07-28, by page and section name, for example "MCP 2026-07-28, Multi
//! Round-Trip Requests §Server Requirements (Basic Workflow)" or "MCP 2026-07-28,
//! Base Protocol §Error Codes". Nothing in the crate's documentation depends on a
//! document outside this repository; `tests/core/docs_links.rs` keeps it so.

pub mod handler_model;
pub mod security_model;
pub mod token_format;
