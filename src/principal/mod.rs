//! Who is asking: the authenticated principal a sealed `requestState` is bound to.
//!
//! The spec (MRTR §Server Requirements 5) says servers SHOULD bind request state
//! to the authenticated principal, so that user B cannot replay user A's state.
//! mrtr makes the principal a required argument: an unauthenticated server must
//! say [`Principal::anonymous`] explicitly, so forgetting to bind is not silent.
//!
//! With the feature `http` (which `mrtr-server` and `mrtr-rmcp` turn on; it brings
//! only the `http` types crate), [`PrincipalSource`] is the one way a transport
//! learns the principal of a request from its HTTP head: the Streamable HTTP
//! transport (`mrtr_server::http`) and the rmcp adapter (`mrtr_rmcp`) both take it.

#[cfg(feature = "http")]
pub(crate) mod source;
#[cfg(feature = "http")]
pub use source::{Anonymous, FromExtension, FromHeader, PrincipalSource, Reads, Rejection};

/// The authenticated identity behind a request.
///
/// Each field that is set is bound: a state sealed for `alice` from one issuer
/// does not open for `alice` from another, nor for a bare `alice`.
///
/// ```
/// use mrtr::principal::Principal;
/// let alice = Principal::new("https://idp.example", "alice").with_client_id("app-1");
/// assert!(!alice.is_anonymous());
/// assert_eq!(alice.issuer(), Some("https://idp.example"));
/// assert_ne!(Principal::new("https://other.example", "alice"), Principal::new("https://idp.example", "alice"));
/// assert_ne!(Principal::subject("alice"), Principal::new("https://idp.example", "alice"));
/// assert!(Principal::anonymous().is_anonymous());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal {
    subject: Option<String>,
    issuer: Option<String>,
    client_id: Option<String>,
}

impl Principal {
    /// No authenticated identity. Every anonymous caller shares this principal,
    /// so binding to it prevents no cross-user replay: say so on purpose.
    pub const fn anonymous() -> Self {
        Self {
            subject: None,
            issuer: None,
            client_id: None,
        }
    }

    /// A subject as its issuer names it (for OAuth, the `iss` and `sub` claims):
    /// both are bound, so the same subject from another issuer is another principal.
    /// The same as `Principal::subject(subject).with_issuer(issuer)`.
    pub fn new(issuer: impl Into<String>, subject: impl Into<String>) -> Self {
        Self {
            subject: Some(subject.into()),
            issuer: Some(issuer.into()),
            client_id: None,
        }
    }

    /// An authenticated subject without an issuer (for OAuth, the `sub` claim):
    /// for a server that trusts a single identity provider. With several, use
    /// [`Principal::new`], so their subjects cannot collide.
    pub fn subject(subject: impl Into<String>) -> Self {
        Self {
            subject: Some(subject.into()),
            issuer: None,
            client_id: None,
        }
    }

    /// Adds the token issuer (OAuth `iss`), so equal subjects from two issuers differ.
    pub fn with_issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// Adds the OAuth client id, so one user's state does not move between client apps.
    pub fn with_client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// Whether this is the anonymous principal.
    pub fn is_anonymous(&self) -> bool {
        self.subject.is_none() && self.issuer.is_none() && self.client_id.is_none()
    }

    /// The subject, if authenticated.
    pub fn subject_id(&self) -> Option<&str> {
        self.subject.as_deref()
    }

    /// The issuer, if set.
    pub fn issuer(&self) -> Option<&str> {
        self.issuer.as_deref()
    }

    /// The client id, if set.
    pub fn client_id(&self) -> Option<&str> {
        self.client_id.as_deref()
    }
}
