//! core: integration tests, one module per former test target.

mod answers;
mod async_handlers;
mod caching;
mod completion;
mod docs_links;
mod duplicate_keys;
mod engine_capabilities;
mod errors;
mod pagination;
mod peers_lock;
mod principal_issuer;
mod readme_flow;
mod replay_guard;
mod resource_templates;
mod rounds;
mod subscriptions;
mod trace;
mod typed_handlers;
mod wire;
