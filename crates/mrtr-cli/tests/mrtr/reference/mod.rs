//! `reference`: one module per former test target.

mod demos;
mod flow_guarantees;
mod legacy_fixtures;
mod principal_issuer;
mod replay_guard;
mod service_flows;
mod streaming;
