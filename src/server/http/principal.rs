//! Where the principal of a request comes from: the core's [`PrincipalSource`] and
//! its implementations, re-exported at their earlier paths
//! (`mrtr::server::http::{PrincipalSource, FromExtension, ...}`), so code written
//! for them compiles unchanged.

pub(crate) use crate::principal::is_principal_name;
pub use crate::principal::{Anonymous, FromExtension, FromHeader, PrincipalSource, Rejection};
