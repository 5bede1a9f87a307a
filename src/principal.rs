//! Who is asking: the authenticated principal a sealed `requestState` is bound to.
//!
//! The spec (MRTR §Server Requirements 5) says servers SHOULD bind request state
//! to the authenticated principal, so that user B cannot replay user A's state.
//! mrtr makes the principal a required argument: an unauthenticated server must
//! say [`Principal::anonymous`] explicitly, so forgetting to bind is not silent.

/// The authenticated identity behind a request.
///
/// ```
/// use mrtr::principal::Principal;
/// let alice = Principal::subject("alice").with_issuer("https://idp.example").with_client_id("app-1");
/// assert!(!alice.is_anonymous());
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

    /// An authenticated subject (for OAuth, the `sub` claim).
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
