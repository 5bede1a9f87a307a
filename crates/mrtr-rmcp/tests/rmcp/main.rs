//! rmcp: integration tests, one module per former test target.

mod support;
mod rmcp_support;
mod http;
mod legacy;
mod metrics;
#[allow(dead_code, unreachable_pub)]
// why: the README's `main` and `pub` items, as a user writes them
mod greeter;
mod readme;
