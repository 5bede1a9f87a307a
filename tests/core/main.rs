//! core: integration tests, one module per former test target.

mod answers;
mod async_handlers;
mod capabilities;
mod engine_capabilities;
mod errors;
mod rounds;
mod typed_handlers;
mod duplicate_keys;
mod wire;
mod readme_flow;
mod docs_links;
mod peers_lock;
