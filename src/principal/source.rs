//! Where the principal of a request comes from: the [`PrincipalSource`] trait and
//! its implementations ([`FromExtension`], [`FromHeader`], [`Anonymous`], closures).

use std::borrow::Cow;

use http::HeaderName;
use http::request::Parts;

use super::Principal;

/// Where the principal of a request comes from: the identity every `requestState`
/// issued to that request is bound to, and that a retry must present again.
///
/// The one resolver of both transports: `mrtr_server::http::mcp_router` and
/// `mrtr_rmcp::Mrtr::new` take it. Implemented by [`FromExtension`],
/// [`FromHeader`], [`Anonymous`], and any
/// `Fn(&Parts) -> Result<Principal, Rejection>` (annotate the closure's argument,
/// `|parts: &Parts| ...`). It is synchronous: authentication that awaits (a token
/// introspection, a database) belongs in a middleware layer that inserts the
/// [`Principal`] for [`FromExtension`].
///
/// When it finds none, each transport refuses the request as it documents: the
/// Streamable HTTP transport answers `401 Unauthorized` before mrtr reads the
/// body; the rmcp adapter answers the JSON-RPC error -32603 (Internal error).
///
/// ```
/// use http::request::Parts;
/// use mrtr::principal::{Principal, PrincipalSource, Rejection};
/// // A tenant header set by an authenticating proxy names the issuer.
/// let by_tenant = |parts: &Parts| match parts.headers.get("x-tenant") {
///     Some(t) if t == "acme" => Ok(Principal::new("acme", "svc")),
///     _ => Err(Rejection::new("no known tenant")),
/// };
/// let (parts, ()) = http::Request::new(()).into_parts();
/// assert!(by_tenant.principal(&parts).is_err());
/// ```
pub trait PrincipalSource: Send + Sync + 'static {
    /// The principal of the request whose head is `parts`.
    ///
    /// # Errors
    /// A [`Rejection`] when the request carries no identity this source accepts:
    /// the request is refused and never reaches a handler.
    fn principal(&self, parts: &Parts) -> Result<Principal, Rejection>;

    /// What this source reads: the request ([`Reads::Request`], the default),
    /// or nothing at all ([`Reads::Nothing`]: every caller is the same
    /// principal, as with [`Anonymous`]). A transport without a request head
    /// (stdio, rmcp's non-HTTP transports) can still ask a source that reads
    /// nothing, and knows that binding a state to its principal isolates no
    /// caller from another.
    fn reads(&self) -> Reads {
        Reads::Request
    }
}

/// What a [`PrincipalSource`] reads to find a principal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reads {
    /// The request's head (`http::request::Parts`).
    Request,
    /// Nothing: every caller is the same principal.
    Nothing,
}

/// A request without an acceptable identity.
///
/// Over mrtr's Streamable HTTP transport it is answered `401 Unauthorized`: the
/// body is a JSON-RPC error without `id`, code `-32600` (Invalid Request, like
/// the transport's other refusals made before the body is read), message
/// `Unauthorized`. No `WWW-Authenticate` header is set: a challenge (OAuth
/// resource metadata, realm) is your authentication layer's business, and it
/// should answer before mrtr does. On rmcp it is the JSON-RPC error -32603.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    detail: Cow<'static, str>,
}

impl Rejection {
    /// A refusal; `detail` goes to the private request log only. It must not hold
    /// a credential, a header value or a principal's name.
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
/// A middleware that validated a token sets its issuer
/// ([`Principal::new`]).
///
/// A request without one is refused, never served as anonymous: a route mounted
/// outside the authentication layer by mistake fails closed.
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
/// (`X-Forwarded-User`, say), optionally with the issuer that proxy stands for
/// ([`FromHeader::with_issuer`]).
///
/// # Security
/// The header is trusted as is. Use this only when every request reaches mrtr
/// through a proxy that authenticates the caller, sets this header itself and
/// removes any copy the client sent; anyone who can reach mrtr directly can claim
/// any identity. A request where the header is missing, repeated, empty or holds
/// anything but visible ASCII (`!` to `~`, so no spaces) is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FromHeader {
    name: HeaderName,
    issuer: Option<String>,
}

impl FromHeader {
    /// Reads the subject from the header `name`; the principal has no issuer.
    pub fn new(name: HeaderName) -> Self {
        Self { name, issuer: None }
    }

    /// Names the issuer of every subject read (the identity provider behind the
    /// proxy): each principal is [`Principal::new`]`(issuer, subject)`, so a state
    /// sealed here does not open for the same subject from another issuer.
    /// Default: none ([`Principal::subject`]).
    #[must_use]
    pub fn with_issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// The header read.
    pub fn name(&self) -> &HeaderName {
        &self.name
    }

    /// The issuer set with [`FromHeader::with_issuer`], if any.
    pub fn issuer(&self) -> Option<&str> {
        self.issuer.as_deref()
    }
}

impl PrincipalSource for FromHeader {
    fn principal(&self, parts: &Parts) -> Result<Principal, Rejection> {
        let mut values = parts.headers.get_all(&self.name).iter();
        match (values.next(), values.next()) {
            (None, _) => Err(Rejection::new(format!("no {} header", self.name))),
            (Some(_), Some(_)) => Err(Rejection::new(format!("repeated {} header", self.name))),
            (Some(v), None) => match std::str::from_utf8(v.as_bytes()) {
                Ok(s) if is_principal_name(s) => Ok(match &self.issuer {
                    Some(issuer) => Principal::new(issuer.as_str(), s),
                    None => Principal::subject(s),
                }),
                _ => Err(Rejection::new(format!(
                    "{} header is empty or not visible ASCII",
                    self.name
                ))),
            },
        }
    }
}

/// Every caller is [`Principal::anonymous`], over HTTP and on any other transport.
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

    fn reads(&self) -> Reads {
        Reads::Nothing
    }
}

/// Whether `name` can be a principal's subject from a header or the command line:
/// not empty, visible ASCII only.
pub fn is_principal_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_graphic())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(headers: &[(&str, &[u8])]) -> Parts {
        let mut b = http::Request::builder();
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap().into_parts().0
    }

    #[test]
    fn from_header_sets_the_issuer_it_was_given() {
        let name = HeaderName::from_static("x-user");
        let bare = FromHeader::new(name.clone());
        let issued = FromHeader::new(name).with_issuer("https://proxy.example");
        let p = parts(&[("x-user", b"alice")]);
        assert_eq!(bare.principal(&p), Ok(Principal::subject("alice")));
        assert_eq!(
            issued.principal(&p),
            Ok(Principal::new("https://proxy.example", "alice"))
        );
        assert_eq!(issued.issuer(), Some("https://proxy.example"));
        // Refusals name the header, never its value.
        let refused = issued
            .principal(&parts(&[("x-user", b"al ice")]))
            .unwrap_err();
        assert!(!refused.detail().contains("al ice"), "{}", refused.detail());
    }
}
