#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod driver;
mod error;
#[cfg(feature = "http")]
pub mod fetch;
mod handler;
#[cfg(feature = "http")]
pub mod http;
mod in_process;
pub mod legacy;
#[cfg(feature = "oauth")]
pub mod oauth;
mod span;
#[cfg(feature = "stdio")]
pub mod stdio;
mod timer;
mod transport;

pub use driver::{Client, ClientBuilder, Step};
pub use error::ClientError;
pub use error::TransportError;
#[cfg(feature = "http")]
pub use fetch::{HttpClient, HttpClientBuilder};
pub use handler::{HandlerError, Handlers, InputContext, InputHandler, NoInput};
#[cfg(feature = "http")]
pub use http::{BearerToken, Challenge, HttpTransport, HttpTransportBuilder, TokenSource};
pub use in_process::InProcess;
pub use legacy::{Era, EraCache, EraMode};
#[cfg(feature = "stdio")]
pub use stdio::{ServerStderr, StdioTransport, StdioTransportBuilder};
pub use timer::{Timer, TokioTimer};
pub use transport::Transport;

/// A boxed, `Send` future: what the object-safe client traits return.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// The flow's values from the core ([`mrtr::client`]), re-exported where the
/// client's API names them.
pub use mrtr::client::{Cap, CarrierCall, Completion, FlowError, FlowRules, PendingFlow};
