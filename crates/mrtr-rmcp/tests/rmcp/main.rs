//! rmcp: integration tests, one module per former test target.
//!
//! What scripts/rmcp-versions.sh builds on the lowest rmcp (3.2, with
//! `--cfg mrtr_rmcp_lowest`) is `http` and `legacy`: the README's server names
//! rmcp 3.4's `ServerConfig`, and the metrics test was never part of that check.

#[cfg(not(mrtr_rmcp_lowest))]
mod dual_era_client;
#[cfg(not(mrtr_rmcp_lowest))]
#[allow(dead_code, unreachable_pub)]
// why: the README's `main` and `pub` items, as a user writes them
mod greeter;
mod http;
mod legacy;
#[cfg(not(mrtr_rmcp_lowest))]
mod metrics;
#[cfg(not(mrtr_rmcp_lowest))]
mod readme;
mod rmcp_support;
mod support;
