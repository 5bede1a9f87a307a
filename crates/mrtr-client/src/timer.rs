//! The driver's [`Timer`](mrtr::client::Timer) on tokio: what this crate's transports
//! give a [`Client`](mrtr::client::Client) by default.

use std::time::Duration;

use mrtr::client::{BoxFuture, Timer};

/// [`Timer`] on `tokio::time::sleep`. Needs a tokio runtime with time enabled.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioTimer;

impl Timer for TokioTimer {
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
}
