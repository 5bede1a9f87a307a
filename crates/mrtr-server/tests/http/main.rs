//! http: integration tests, one module per former test target.

#[cfg(feature = "oauth")]
mod oauth;
mod streamable_http_rules;
mod subscriptions;
