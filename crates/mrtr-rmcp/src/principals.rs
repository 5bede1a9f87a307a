//! Who the caller of an rmcp request is: the core's
//! [`PrincipalSource`](mrtr::principal::PrincipalSource), held as [`Principals`].

use std::any::{Any, TypeId};
use std::fmt;
use std::sync::Arc;

use ::rmcp::RoleServer;
use ::rmcp::service::RequestContext as RmcpContext;

use mrtr::error::Error;
use mrtr::principal::{Anonymous, Principal, PrincipalSource, Rejection};

/// The principal resolver of a [`Mrtr`](super::Mrtr): one
/// [`PrincipalSource`], the same trait `mrtr_server::http` takes, shared by
/// every clone. There is no default: choose a source, or anonymous on purpose.
///
/// Every [`PrincipalSource`] converts into it, so `Mrtr::new` takes
/// [`Anonymous`], [`FromExtension`](mrtr::principal::FromExtension),
/// [`FromHeader`](mrtr::principal::FromHeader), a closure over
/// `http::request::Parts`, or one of the shorthands below. A source that finds no
/// principal refuses the request with the JSON-RPC error -32603 (the reason goes
/// to the log only).
#[derive(Clone)]
pub struct Principals {
    source: Arc<dyn PrincipalSource>,
    /// The resolver of a [`FromContext`] source, which reads rmcp's context.
    context: Option<Arc<ContextResolver>>,
    kind: Kind,
}

/// What the adapter and the guard need to know of a source beyond asking it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// [`Anonymous`]: every caller is the same principal.
    Anonymous,
    /// [`FromContext`]: reads rmcp's context, which an HTTP layer does not have.
    Context,
    /// Any other source: reads the HTTP request parts.
    Http,
}

impl Principals {
    /// `source`, shared.
    pub fn new<P: PrincipalSource>(source: P) -> Self {
        let context = (&source as &dyn Any)
            .downcast_ref::<FromContext>()
            .map(|c| Arc::clone(&c.0));
        let kind = if TypeId::of::<P>() == TypeId::of::<Anonymous>() {
            Kind::Anonymous
        } else if context.is_some() {
            Kind::Context
        } else {
            Kind::Http
        };
        Self {
            source: Arc::new(source),
            context,
            kind,
        }
    }

    /// Every caller is [`Principal::anonymous`] ([`Anonymous`]): binding prevents
    /// no cross-user replay. For a server without users, or one whose every
    /// caller is trusted alike.
    pub fn anonymous() -> Self {
        Self::new(Anonymous)
    }

    /// The principal read from the HTTP request (`http::request::Parts`, which
    /// rmcp's Streamable HTTP service puts into the request's extensions), e.g.
    /// from what your authentication middleware stored in `parts.extensions`:
    /// a shorthand for a closure source whose `None` is a [`Rejection`]. `None`,
    /// or a request without HTTP parts (stdio), is refused.
    ///
    /// ```
    /// use mrtr::Principal;
    /// use mrtr_rmcp::Principals;
    /// // Behind a proxy that authenticates and sets x-user (and strips it from clients).
    /// let principals = Principals::from_http(|parts| {
    ///     let user = parts.headers.get("x-user")?.to_str().ok()?;
    ///     Some(Principal::new("https://proxy.example", user))
    /// });
    /// # drop(principals);
    /// ```
    pub fn from_http<F>(resolve: F) -> Self
    where
        F: Fn(&http::request::Parts) -> Option<Principal> + Send + Sync + 'static,
    {
        Self::new(move |parts: &http::request::Parts| {
            resolve(parts).ok_or_else(|| Rejection::new("the principal resolver found none"))
        })
    }

    /// The principal read from rmcp's request context (its extensions, its
    /// peer), for transports without HTTP parts: a shorthand for
    /// [`FromContext::new`]. `None` is refused.
    pub fn from_context<F>(resolve: F) -> Self
    where
        F: Fn(&RmcpContext<RoleServer>) -> Option<Principal> + Send + Sync + 'static,
    {
        Self::new(FromContext::new(resolve))
    }

    /// The principal of the request `context` belongs to: anonymous for
    /// [`Anonymous`], the resolver's for [`FromContext`], and for any other
    /// source what it reads from the HTTP request parts rmcp's Streamable HTTP
    /// service puts into the context's extensions (a request without them, rmcp
    /// over stdio, is refused).
    pub(crate) fn resolve(&self, context: &RmcpContext<RoleServer>) -> Result<Principal, Error> {
        let found = match (&self.kind, &self.context) {
            (Kind::Anonymous, _) => Ok(Principal::anonymous()),
            (Kind::Context, Some(resolve)) => {
                resolve(context).ok_or_else(|| Rejection::new("the principal resolver found none"))
            }
            _ => match context.extensions.get::<http::request::Parts>() {
                Some(parts) => self.source.principal(parts),
                None => Err(Rejection::new(
                    "no HTTP request parts in rmcp's request context (a transport other \
                     than rmcp's Streamable HTTP service): this principal source reads them",
                )),
            },
        };
        found.map_err(|r| Error::internal(format!("no principal, request refused: {}", r.detail())))
    }

    /// Whether this is the anonymous source: every caller is the same principal.
    pub(crate) fn is_anonymous(&self) -> bool {
        self.kind == Kind::Anonymous
    }

    /// Whether the source reads rmcp's context rather than the HTTP request, so
    /// an HTTP layer cannot ask it.
    #[cfg_attr(not(feature = "http"), allow(dead_code))] // why: the HttpGuard's
    pub(super) fn reads_context(&self) -> bool {
        self.kind == Kind::Context
    }

    /// The principal of the HTTP request `parts`, as the guard asks it.
    #[cfg_attr(not(feature = "http"), allow(dead_code))] // why: the HttpGuard's
    pub(super) fn of_http(&self, parts: &http::request::Parts) -> Result<Principal, Rejection> {
        self.source.principal(parts)
    }
}

impl<P: PrincipalSource> From<P> for Principals {
    fn from(source: P) -> Self {
        Self::new(source)
    }
}

impl fmt::Debug for Principals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.kind {
            Kind::Anonymous => "Principals(Anonymous)",
            Kind::Context => "Principals(FromContext(..))",
            Kind::Http => "Principals(..)",
        })
    }
}

/// A resolver function over rmcp's whole request context.
type ContextResolver = dyn Fn(&RmcpContext<RoleServer>) -> Option<Principal> + Send + Sync;

/// The principal read from rmcp's request context (its extensions, its peer):
/// for rmcp transports without an HTTP head (stdio), where the connection is the
/// caller. A [`PrincipalSource`] that [`Principals`] asks with rmcp's context;
/// it has no answer for a bare HTTP request, so `HttpGuard::new` refuses a
/// [`Mrtr`](super::Mrtr) built on it.
#[derive(Clone)]
pub struct FromContext(Arc<ContextResolver>);

impl FromContext {
    /// The principal `resolve` finds in the context; `None` is refused.
    pub fn new<F>(resolve: F) -> Self
    where
        F: Fn(&RmcpContext<RoleServer>) -> Option<Principal> + Send + Sync + 'static,
    {
        Self(Arc::new(resolve))
    }
}

impl fmt::Debug for FromContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FromContext(..)")
    }
}

impl PrincipalSource for FromContext {
    fn principal(&self, _parts: &http::request::Parts) -> Result<Principal, Rejection> {
        Err(Rejection::new(
            "FromContext reads rmcp's request context, not the HTTP request",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mrtr::principal::{FromExtension, FromHeader};

    #[test]
    fn every_source_converts_and_only_anonymous_is_anonymous() {
        assert!(Principals::from(Anonymous).is_anonymous());
        assert!(Principals::anonymous().is_anonymous());
        let header = FromHeader::new(http::HeaderName::from_static("x-user"));
        for p in [
            Principals::from(FromExtension),
            Principals::from(header),
            Principals::from(|_: &http::request::Parts| Ok(Principal::anonymous())),
            Principals::from_http(|_| None),
        ] {
            assert!(!p.is_anonymous() && !p.reads_context(), "{p:?}");
        }
        let context = Principals::from_context(|_| None);
        assert!(context.reads_context() && !context.is_anonymous());
        let (parts, ()) = http::Request::new(()).into_parts();
        assert!(context.of_http(&parts).is_err());
    }
}
