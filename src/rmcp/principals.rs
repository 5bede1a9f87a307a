//! Who the caller of an rmcp request is: [`Principals`].

use std::fmt;
use std::sync::Arc;

use ::rmcp::RoleServer;
use ::rmcp::service::RequestContext as RmcpContext;

use crate::error::Error;
use crate::principal::Principal;

/// A resolver from the HTTP request parts to the principal.
pub(super) type HttpResolver = dyn Fn(&http::request::Parts) -> Option<Principal> + Send + Sync;
/// A resolver from rmcp's whole request context to the principal.
type ContextResolver = dyn Fn(&RmcpContext<RoleServer>) -> Option<Principal> + Send + Sync;

/// Who the caller of a request is: the principal every `requestState` of the
/// request is bound to. There is no default: choose a resolver, or anonymous on
/// purpose.
#[derive(Clone)]
pub struct Principals(pub(super) PrincipalSource);

#[derive(Clone)]
pub(super) enum PrincipalSource {
    Anonymous,
    Http(Arc<HttpResolver>),
    Context(Arc<ContextResolver>),
}

impl Principals {
    /// Every caller is [`Principal::anonymous`]: binding prevents no cross-user
    /// replay. For a server without users, or one whose every caller is trusted
    /// alike.
    pub fn anonymous() -> Self {
        Self(PrincipalSource::Anonymous)
    }

    /// The principal read from the HTTP request (`http::request::Parts`, which
    /// rmcp's Streamable HTTP service puts into the request's extensions), e.g.
    /// from what your authentication middleware stored in `parts.extensions`.
    /// `None`, or a request without HTTP parts (stdio), is refused.
    ///
    /// ```
    /// use mrtr::Principal;
    /// use mrtr::rmcp::Principals;
    /// // Behind a proxy that authenticates and sets x-user (and strips it from clients).
    /// let principals = Principals::from_http(|parts| {
    ///     let user = parts.headers.get("x-user")?.to_str().ok()?;
    ///     Some(Principal::subject(user))
    /// });
    /// # drop(principals);
    /// ```
    pub fn from_http<F>(resolve: F) -> Self
    where
        F: Fn(&http::request::Parts) -> Option<Principal> + Send + Sync + 'static,
    {
        Self(PrincipalSource::Http(Arc::new(resolve)))
    }

    /// The principal read from rmcp's request context (its extensions, its peer),
    /// for transports without HTTP parts. `None` is refused.
    pub fn from_context<F>(resolve: F) -> Self
    where
        F: Fn(&RmcpContext<RoleServer>) -> Option<Principal> + Send + Sync + 'static,
    {
        Self(PrincipalSource::Context(Arc::new(resolve)))
    }

    pub(super) fn resolve(&self, context: &RmcpContext<RoleServer>) -> Result<Principal, Error> {
        let found = match &self.0 {
            PrincipalSource::Anonymous => return Ok(Principal::anonymous()),
            PrincipalSource::Http(f) => match context.extensions.get::<http::request::Parts>() {
                Some(parts) => f(parts),
                None => {
                    return Err(Error::internal(
                        "no HTTP request parts in the request's extensions: \
                         Principals::from_http needs rmcp's Streamable HTTP service",
                    ));
                }
            },
            PrincipalSource::Context(f) => f(context),
        };
        found.ok_or_else(|| {
            Error::internal("the principal resolver found no principal: request refused")
        })
    }
}

impl fmt::Debug for Principals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            PrincipalSource::Anonymous => "Principals::anonymous",
            PrincipalSource::Http(_) => "Principals::from_http(..)",
            PrincipalSource::Context(_) => "Principals::from_context(..)",
        })
    }
}
