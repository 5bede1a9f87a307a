//! `reference`: one module per former test target.

mod service_flows;
mod demos;
mod flow_guarantees;
mod principal_issuer;
mod replay_guard;
