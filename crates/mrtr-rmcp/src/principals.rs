//! Who the caller of an rmcp request is: the core's
//! [`PrincipalSource`](mrtr::principal::PrincipalSource), held as [`Principals`].

use std::fmt;
use std::sync::Arc;

use ::rmcp::RoleServer;
use ::rmcp::service::RequestContext as RmcpContext;

use mrtr::error::Error;
use mrtr::principal::{Anonymous, Principal, PrincipalSource, Reads, Rejection};

/// The principal resolver of a [`Mrtr`](super::Mrtr): one source, shared by
/// every clone. There is no default: choose a source, or anonymous on purpose.
///
/// Every [`PrincipalSource`] (the trait `mrtr_server::http` takes) converts
/// into it, so `Mrtr::new` takes [`Anonymous`],
/// [`FromExtension`](mrtr::principal::FromExtension),
/// [`FromHeader`](mrtr::principal::FromHeader), a closure over
/// `http::request::Parts`, or one of the shorthands below; so does a
/// [`FromContext`], which reads rmcp's request context instead. A source that
/// finds no principal refuses the request with the JSON-RPC error -32603 (the
/// reason goes to the log only).
#[derive(Clone)]
pub struct Principals {
    source: Source,
}

/// Where the principal comes from, by what it reads.
#[derive(Clone)]
enum Source {
    /// A source that reads nothing ([`Anonymous`]): every caller is the same
    /// principal.
    Anonymous,
    /// A source that reads the HTTP request parts.
    Http(Arc<dyn PrincipalSource>),
    /// [`FromContext`]: reads rmcp's context, which an HTTP layer does not have.
    Context(Arc<ContextResolver>),
}

impl Principals {
    /// `source`, shared: the anonymous one when it reads nothing
    /// ([`PrincipalSource::reads`]).
    pub fn new<P: PrincipalSource>(source: P) -> Self {
        let source = match source.reads() {
            Reads::Nothing => Source::Anonymous,
            _ => Source::Http(Arc::new(source)),
        };
        Self { source }
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
        Self::from(FromContext::new(resolve))
    }

    /// The principal of the request `context` belongs to: anonymous for
    /// [`Anonymous`], the resolver's for [`FromContext`], and for any other
    /// source what it reads from the HTTP request parts rmcp's Streamable HTTP
    /// service puts into the context's extensions (a request without them, rmcp
    /// over stdio, is refused).
    pub(crate) fn resolve(&self, context: &RmcpContext<RoleServer>) -> Result<Principal, Error> {
        let found = match &self.source {
            Source::Anonymous => Ok(Principal::anonymous()),
            Source::Context(resolve) => {
                resolve(context).ok_or_else(|| Rejection::new("the principal resolver found none"))
            }
            Source::Http(source) => match context.extensions.get::<http::request::Parts>() {
                Some(parts) => source.principal(parts),
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
        matches!(self.source, Source::Anonymous)
    }

    /// Whether the source reads rmcp's context rather than the HTTP request, so
    /// an HTTP layer cannot ask it.
    #[cfg_attr(not(feature = "http"), allow(dead_code))] // why: the HttpGuard's
    pub(super) fn reads_context(&self) -> bool {
        matches!(self.source, Source::Context(_))
    }

    /// The principal of the HTTP request `parts`, as the guard asks it; a
    /// [`FromContext`] source has none to give.
    #[cfg_attr(not(feature = "http"), allow(dead_code))] // why: the HttpGuard's
    pub(super) fn of_http(&self, parts: &http::request::Parts) -> Result<Principal, Rejection> {
        match &self.source {
            Source::Anonymous => Anonymous.principal(parts),
            Source::Http(source) => source.principal(parts),
            Source::Context(_) => Err(Rejection::new(
                "FromContext reads rmcp's request context, not the HTTP request",
            )),
        }
    }
}

impl<P: PrincipalSource> From<P> for Principals {
    fn from(source: P) -> Self {
        Self::new(source)
    }
}

impl From<FromContext> for Principals {
    fn from(source: FromContext) -> Self {
        Self {
            source: Source::Context(source.0),
        }
    }
}

impl fmt::Debug for Principals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.source {
            Source::Anonymous => "Principals(Anonymous)",
            Source::Context(_) => "Principals(FromContext(..))",
            Source::Http(_) => "Principals(..)",
        })
    }
}

/// A resolver function over rmcp's whole request context.
type ContextResolver = dyn Fn(&RmcpContext<RoleServer>) -> Option<Principal> + Send + Sync;

/// The principal read from rmcp's request context (its extensions, its peer):
/// for rmcp transports without an HTTP head (stdio), where the connection is the
/// caller. It converts into [`Principals`], which asks it with rmcp's context;
/// it is no [`PrincipalSource`] (it has no answer for a bare HTTP request), and
/// `HttpGuard::new` refuses a [`Mrtr`](super::Mrtr) built on it.
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
        assert!(Principals::from(FromContext::new(|_| None)).reads_context());
        // Any source that reads nothing is the anonymous one, not only the type.
        struct Nobody;
        impl PrincipalSource for Nobody {
            fn principal(&self, _: &http::request::Parts) -> Result<Principal, Rejection> {
                Ok(Principal::anonymous())
            }
            fn reads(&self) -> Reads {
                Reads::Nothing
            }
        }
        assert!(Principals::from(Nobody).is_anonymous());
        let (parts, ()) = http::Request::new(()).into_parts();
        assert!(context.of_http(&parts).is_err());
    }
}
