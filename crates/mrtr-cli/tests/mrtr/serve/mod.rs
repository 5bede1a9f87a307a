//! `serve`: one module per former test target.

mod cli;
mod dns_rebinding;
mod flows;
mod http;
mod keys;
mod keys_reload;
mod limits;
mod metrics;
mod otel;
mod principal;
mod revision;
mod tasks;
