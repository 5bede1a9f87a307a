//! The shared test helpers (`mrtr-testkit`), and the reference service from the
//! `mrtr` binary's library (`mrtr_cli::reference`) that some flows run on rmcp.
#![allow(dead_code, unreachable_pub)] // each module uses a subset

pub use mrtr_testkit::*;

/// `mrtr-testkit` plus the reference service, under the name the modules use.
pub mod common {
    use std::sync::Arc;
    use std::sync::atomic::AtomicU64;

    use mrtr::{Engine, Service};

    pub use mrtr_testkit::*;

    /// The reference service on an engine, with its deployment counter.
    pub fn reference(engine: Engine) -> (Service, Arc<AtomicU64>) {
        let n = Arc::new(AtomicU64::new(0));
        (mrtr_cli::reference::service(engine, n.clone()), n)
    }
}
