//! The [`Timer`] the client sleeps on (back-off) and races against (the time
//! caps), and [`TokioTimer`], the one this crate's transports give.
//!
//! The client's loop itself has no runtime: it only awaits futures. Waiting
//! needs an executor's timer, so it is injected: by the transport
//! ([`Transport::timer`]; the HTTP and stdio transports give tokio's) or by the
//! builder ([`ClientBuilder::with_timer`]). A client with neither neither backs
//! off nor caps time (rounds are still capped). Tests inject a recording timer
//! to check back-off without wall-clock assertions.
//!
//! [`Transport::timer`]: crate::Transport::timer
//! [`ClientBuilder::with_timer`]: crate::ClientBuilder::with_timer

use std::time::Duration;

use crate::BoxFuture;

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

/// [`Timer`] on `tokio::time::sleep`. Needs a tokio runtime with time enabled.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioTimer;

impl Timer for TokioTimer {
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
}
