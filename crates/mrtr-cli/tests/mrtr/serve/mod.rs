//! `serve`: one module per former test target.

mod cli;
mod flows;
mod limits;
mod metrics;
mod keys;
mod keys_reload;
mod http;
mod principal;
mod dns_rebinding;
