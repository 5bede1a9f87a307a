#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "http")]
pub mod fetch;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "oauth")]
pub mod oauth;
#[cfg(feature = "stdio")]
pub mod stdio;
mod timer;

#[cfg(feature = "http")]
pub use fetch::{HttpClient, HttpClientBuilder};
#[cfg(feature = "http")]
pub use http::{BearerToken, Challenge, HttpTransport, HttpTransportBuilder, TokenSource};
#[cfg(feature = "stdio")]
pub use stdio::{ServerStderr, StdioTransport, StdioTransportBuilder};
pub use timer::TokioTimer;

/// The transport-free client driver of the core (`mrtr::client`), re-exported so
/// that one dependency names everything a client needs.
pub use mrtr::client::*;
