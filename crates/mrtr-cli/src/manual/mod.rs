//! The operator's manual of the `mrtr` binary: prose chapters on running
//! `mrtr serve` as a fleet, in the manner of the core's own `mrtr::manual`.
//!
//! The core's chapters say how the library works (the token format, the security
//! model, the handler model); these say how to run the binary that serves it:
//! its flags, its key files, its logs and metrics. They change when the binary's
//! flags change, so they live with the binary.
//!
//! | chapter | read it when |
//! |---|---|
//! | [`rotation`] | you run a fleet: key formats, `MRTR_KEYS`, `--keys-file`, and the three-phase key rotation |
//! | [`operations`] | you operate a fleet: what instances share, logs, metrics, alerts, a replay store that is down |
//! | [`streaming`] | you put a proxy or load balancer in front: which replies are SSE streams, and what it must not buffer or cut |
//! | [`debugging`] | a user reports a failed request: from its text to the trace, the private reason and the upstream call |
//!
//! The core's chapters they lean on: [`mrtr::manual::token_format`] (the bytes of
//! a sealed `requestState`, its key id included) and
//! [`mrtr::manual::security_model`] (what is secret, bound, expiring and single
//! use).

pub mod debugging;
pub mod operations;
pub mod rotation;
pub mod streaming;
