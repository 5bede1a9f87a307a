//! Where the principal of a request comes from: the [`PrincipalSource`] trait and
//! its implementations ([`FromExtension`], [`FromHeader`], [`Anonymous`]).

use std::borrow::Cow;

use axum::http::HeaderName;
use axum::http::request::Parts;

use crate::principal::Principal;

/// Where the principal of a request comes from: the identity every `requestState`
/// issued to that request is bound to, and that a retry must present again.
///
/// Implemented by [`FromExtension`], [`FromHeader`], [`Anonymous`], and any
/// `Fn(&Parts) -> Result<Principal, Rejection>` (annotate the closure's argument,
/// `|parts: &Parts| ...`). It is synchronous: authentication that awaits (a token
/// introspection, a database) belongs in a middleware layer that inserts the
/// [`Principal`] for [`FromExtension`].
pub trait PrincipalSource: Send + Sync + 'static {
    /// The principal of the request whose head is `parts`.
    ///
    /// # Errors
    /// A [`Rejection`] when the request carries no identity this source accepts:
    /// the request is answered 401 and never reaches the service.
    fn principal(&self, parts: &Parts) -> Result<Principal, Rejection>;
}

/// A request without an acceptable identity: answered `401 Unauthorized`.
///
/// The body is a JSON-RPC error without `id`, code `-32600` (Invalid Request,
/// like the transport's other refusals made before the body is read), message
/// `Unauthorized`. No `WWW-Authenticate` header is set: a challenge (OAuth
/// resource metadata, realm) is your authentication layer's business, and it
/// should answer before mrtr does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    detail: Cow<'static, str>,
}

impl Rejection {
    /// A refusal; `detail` goes to the private request log only. It must not hold
    /// a credential or a header value.
    pub fn new(detail: impl Into<Cow<'static, str>>) -> Self {
        Self {
            detail: detail.into(),
        }
    }

    /// The private reason, as logged.
    pub fn detail(&self) -> &str {
        &self.detail
    }
}

impl<F> PrincipalSource for F
where
    F: Fn(&Parts) -> Result<Principal, Rejection> + Send + Sync + 'static,
{
    fn principal(&self, parts: &Parts) -> Result<Principal, Rejection> {
        self(parts)
    }
}

/// The [`Principal`] your authentication middleware inserted into the request's
/// extensions (`req.extensions_mut().insert(principal)`): the idiomatic axum way.
///
/// A request without one is refused with 401, never served as anonymous: a route
/// mounted outside the authentication layer by mistake fails closed.
#[derive(Debug, Clone, Copy, Default)]
pub struct FromExtension;

impl PrincipalSource for FromExtension {
    fn principal(&self, parts: &Parts) -> Result<Principal, Rejection> {
        parts
            .extensions
            .get::<Principal>()
            .cloned()
            .ok_or_else(|| Rejection::new("no Principal in the request extensions"))
    }
}

/// The subject named by a request header that an authenticating reverse proxy sets
/// (`X-Forwarded-User`, say).
///
/// # Security
/// The header is trusted as is. Use this only when every request reaches mrtr
/// through a proxy that authenticates the caller, sets this header itself and
/// removes any copy the client sent; anyone who can reach mrtr directly can claim
/// any identity. A request where the header is missing, repeated, empty or holds
/// anything but visible ASCII (`!` to `~`, so no spaces) is refused with 401.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FromHeader {
    name: HeaderName,
}

impl FromHeader {
    /// Reads the subject from the header `name`.
    pub fn new(name: HeaderName) -> Self {
        Self { name }
    }

    /// The header read.
    pub fn name(&self) -> &HeaderName {
        &self.name
    }
}

impl PrincipalSource for FromHeader {
    fn principal(&self, parts: &Parts) -> Result<Principal, Rejection> {
        let mut values = parts.headers.get_all(&self.name).iter();
        match (values.next(), values.next()) {
            (None, _) => Err(Rejection::new(format!("no {} header", self.name))),
            (Some(_), Some(_)) => Err(Rejection::new(format!("repeated {} header", self.name))),
            (Some(v), None) => match std::str::from_utf8(v.as_bytes()) {
                Ok(s) if is_principal_name(s) => Ok(Principal::subject(s)),
                _ => Err(Rejection::new(format!(
                    "{} header is empty or not visible ASCII",
                    self.name
                ))),
            },
        }
    }
}

/// Every caller is [`Principal::anonymous`].
///
/// # Security
/// All callers share one principal, so binding to it keeps no user from
/// presenting another user's `requestState`. Choose it only for a single-user
/// server, or one on loopback.
#[derive(Debug, Clone, Copy, Default)]
pub struct Anonymous;

impl PrincipalSource for Anonymous {
    fn principal(&self, _parts: &Parts) -> Result<Principal, Rejection> {
        Ok(Principal::anonymous())
    }
}

/// Whether `name` can be a principal's subject from a header or the command line:
/// not empty, visible ASCII only.
pub(crate) fn is_principal_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_graphic())
}
