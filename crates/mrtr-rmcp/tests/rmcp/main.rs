//! rmcp: integration tests, one module per former test target.

#[allow(dead_code, unreachable_pub)]
// why: the README's `main` and `pub` items, as a user writes them
mod greeter;
mod http;
mod legacy;
mod metrics;
mod readme;
mod rmcp_support;
mod support;
