//! The [`Timer`] the driver sleeps on (back-off) and races against (total time cap).
//!
//! The driver itself has no runtime: it only awaits futures. Waiting needs an
//! executor's timer, so it is injected. With the `client-http` or
//! `client-stdio` feature the default is [`TokioTimer`]; without them there is no default, and a client built
//! without a timer neither backs off nor caps total time (rounds are still
//! capped). Tests inject a recording timer to check back-off without wall-clock
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

/// [`Timer`] on `tokio::time::sleep` (feature `client-http` or `client-stdio`). Needs a
/// tokio runtime with time enabled.
#[cfg(any(feature = "client-http", feature = "client-stdio"))]
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioTimer;

#[cfg(any(feature = "client-http", feature = "client-stdio"))]
impl Timer for TokioTimer {
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
}
