#![doc = include_str!("../README.md")]
//!
//! # The library half
//!
//! The `mrtr` binary is `src/main.rs`: argument parsing and exit codes. What it
//! runs is this crate's library, so the tests reach it as any code does:
//! [`audit`] (the black-box audit of any MRTR server), [`serve`] (the settings and the process around `mrtr-server`'s transports),
//! [`reference`](mod@reference) (the reference server's tools, prompts and resources), [`call`]
//! (the terminal client) and [`log`] (the logging set-up). None of it is a
//! stable API: it changes with the binary.
//!
//! [`manual`] is the operator's manual of `mrtr serve`: key rotation and
//! operating a fleet, beside the core's own chapters in `mrtr::manual`.
#![forbid(unsafe_code)]

pub mod audit;
pub mod call;
pub mod defaults;
pub mod log;
pub mod manual;
pub mod recorder;
pub mod reference;
pub mod serve;

/// The repository's README (the user's page of the whole workspace), its Rust
/// blocks compiled and run as doctests here, where every crate they use is a
/// dependency.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct RepositoryReadme;
