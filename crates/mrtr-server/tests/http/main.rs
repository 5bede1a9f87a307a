//! http: integration tests, one module per former test target.

mod streamable_http_rules;
