//! The [`Timer`] the driver sleeps on (back-off) and races against (total time cap).
//!
//! The driver itself has no runtime: it only awaits futures. Waiting needs an
//! executor's timer, so it is injected: by the transport ([`Transport::timer`];
//! `mrtr-client`'s transports give tokio's) or by the builder
//! ([`ClientBuilder::with_timer`]). A client with neither neither backs off nor
//! caps total time (rounds are still capped).
//!
//! [`Transport::timer`]: super::Transport::timer
//! [`ClientBuilder::with_timer`]: super::ClientBuilder::with_timer Tests inject a recording timer to check back-off without wall-clock
//! assertions.

use std::time::Duration;

use super::transport::BoxFuture;

/// Resolves futures after a delay, on whatever runtime the caller uses.
pub trait Timer: Send + Sync + std::fmt::Debug {
    /// A future that resolves once `duration` has passed.
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()>;
}

impl<T: Timer + ?Sized> Timer for std::sync::Arc<T> {
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        (**self).sleep(duration)
    }
}
