//! http: integration tests, one module per former test target.

mod legacy;
mod loopback;
mod notifications;
#[cfg(feature = "oauth")]
mod oauth;
#[cfg(feature = "otel")]
mod otel;
mod param_headers;
mod streamable_http_rules;
mod subscriptions;
