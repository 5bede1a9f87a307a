//! Where the principal of a request comes from: the core's [`PrincipalSource`] and
//! its implementations, re-exported beside the router that takes them.

pub use mrtr::principal::{Anonymous, FromExtension, FromHeader, PrincipalSource, Rejection};
