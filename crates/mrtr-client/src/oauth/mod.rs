//! MCP authorization for the client (feature `oauth`): an [`OAuthTokenSource`]
//! that logs in to a server behind OAuth 2.1 as the MCP authorization section
//! describes, for [`HttpTransportBuilder::token_source`](crate::HttpTransportBuilder::token_source).
//!
//! When the server answers `401` (its `WWW-Authenticate: Bearer
//! resource_metadata="…"` says where its metadata is), the source:
//!
//! 1. reads the server's protected resource metadata (RFC 9728; the header's URL,
//!    which must be on the server's own origin, else the well-known locations),
//!    which must name this server, and takes its first authorization server;
//! 2. reads that server's metadata (RFC 8414, else OpenID Connect discovery),
//!    which must name the same issuer; every URL it fetches or opens passes
//!    one [`UrlPolicy`]: `https://`, or plain
//!    `http://` only to the loopback origin of the MCP server itself (or of the
//!    [`issuer`](OAuthBuilder::issuer) the user named), so a remote server
//!    cannot point the client at services on the user's own machine;
//! 3. registers a client (RFC 7591) when no client id was given and the server
//!    offers registration (once per authorization server, kept in the cache);
//! 4. runs the authorization code flow with PKCE (S256; a server that does not
//!    list S256 is refused) through a loopback redirect listener (RFC 8252),
//!    handing the authorization URL to the application to show or open, and
//!    sends the `resource` parameter (RFC 8707) in every authorization and token
//!    request, so the token is for this server alone; the redirect's `iss`
//!    (RFC 9207) must be the issuer the login was sent to, so that a code is
//!    only ever redeemed at the token endpoint of the server that issued it
//!    (the mix-up defence of RFC 9700 section 4.4; an authorization server that
//!    sends no `iss` and does not promise one leaves the client only the
//!    issuer shown beside the login URL);
//! 5. keeps the tokens in the [`TokenCache`] (mode 0600), keyed by
//!    authorization server and MCP server, and refreshes them when they expire
//!    or the server refuses one as `invalid_token`.
//!
//! Non-interactive use: [`OAuthBuilder::client_credentials`] (a confidential
//! client's id and secret) gets tokens with the client credentials grant. A
//! client secret is sent only to the [`issuer`](OAuthBuilder::issuer) it was
//! issued by, which must be named with it.
//!
//! OAuth is refused for an MCP server on plain `http://` that is not on a
//! loopback host: its tokens would cross the network in clear (RFC 6750
//! section 5.3).
//!
//! The protocol work (PKCE, the authorization URL, the token requests and their
//! errors) is the [`oauth2`] crate's; discovery and registration are plain JSON
//! documents. No token, code or secret appears in an error message or `Debug`
//! output; an authorization server's error is shown by its code only.

mod cache;
mod discovery;
mod loopback;

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use oauth2::basic::{BasicClient, BasicErrorResponseType, BasicTokenResponse};
use oauth2::{
    AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, HttpRequest, PkceCodeChallenge,
    RedirectUrl, RefreshToken, RequestTokenError, Scope, StandardErrorResponse, TokenResponse,
    TokenUrl,
};
use serde_json::{Value, json};

use crate::fetch::{HttpClient, UrlPolicy};
use crate::{BearerToken, BoxFuture, Challenge, TokenSource, TransportError};

pub use cache::TokenCache;
pub use discovery::{AuthServer, Discovered};

use cache::{Entry, Registered};
use discovery::Rules;
use loopback::{Expected, Loopback};

/// How long a login waits for the browser to come back (default).
pub const DEFAULT_LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

/// A token this close to its expiry is refreshed before it is sent.
const EXPIRY_MARGIN: u64 = 30;

pub(crate) fn discovery_normalized(url: &str) -> String {
    let (origin, path) = discovery::split_origin(url);
    format!("{}{path}", origin.to_ascii_lowercase())
}

fn unauthorized(why: impl Into<String>) -> TransportError {
    TransportError::Unauthorized(why.into())
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A client secret: its `Debug` never shows it.
#[derive(Clone)]
pub struct ClientSecretValue(String);

impl ClientSecretValue {
    /// The secret.
    pub fn new(secret: impl Into<String>) -> Self {
        Self(secret.into())
    }
}

impl fmt::Debug for ClientSecretValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClientSecretValue(..)")
    }
}

/// Called with the authorization URL the user must open (print it, or open a
/// browser) and the issuer it logs in to (show it beside the URL, so that a
/// login page on another origin is noticed).
pub type OnAuthorizationUrl = Arc<dyn Fn(&str, &str) + Send + Sync>;

/// Which grant gets the tokens.
#[derive(Clone)]
enum Grant {
    /// The authorization code flow with PKCE, through the browser.
    Interactive {
        on_url: OnAuthorizationUrl,
        timeout: Duration,
    },
    /// The client credentials grant (a confidential client, no user).
    ClientCredentials,
    /// Only what the cache holds (and refreshes): never a new login.
    CachedOnly,
}

/// Builds an [`OAuthTokenSource`] for one MCP server.
#[must_use]
pub struct OAuthBuilder {
    server_url: String,
    http: HttpClient,
    cache: Option<TokenCache>,
    client_id: Option<String>,
    client_secret: Option<ClientSecretValue>,
    scopes: Vec<String>,
    grant: Grant,
    client_name: String,
    issuer: Option<String>,
    any_loopback_http: bool,
}

impl fmt::Debug for OAuthBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthBuilder")
            .field("server_url", &self.server_url)
            .field("cache", &self.cache)
            .field("client_id", &self.client_id)
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

impl OAuthBuilder {
    /// Keeps tokens (and registered clients) in `cache`; without one they last
    /// as long as the source.
    pub fn cache(mut self, cache: TokenCache) -> Self {
        self.cache = Some(cache);
        self
    }

    /// A client registered beforehand (else one is registered dynamically).
    pub fn client_id(mut self, id: impl Into<String>) -> Self {
        self.client_id = Some(id.into());
        self
    }

    /// The secret of a confidential client (sent with HTTP Basic). It is sent
    /// only to the [`issuer`](Self::issuer) it belongs to, which must be set.
    pub fn client_secret(mut self, secret: ClientSecretValue) -> Self {
        self.client_secret = Some(secret);
        self
    }

    /// Scopes to ask for (else the ones the server's challenge names, else the
    /// ones its metadata lists).
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.scopes.push(scope.into());
        self
    }

    /// Logs in through the browser: `on_url` is given the authorization URL,
    /// and the login must finish within `timeout` (default
    /// [`DEFAULT_LOGIN_TIMEOUT`]).
    pub fn interactive(mut self, on_url: OnAuthorizationUrl, timeout: Duration) -> Self {
        self.grant = Grant::Interactive { on_url, timeout };
        self
    }

    /// Gets tokens with the client credentials grant (needs
    /// [`client_id`](Self::client_id) and [`client_secret`](Self::client_secret)).
    pub fn client_credentials(mut self) -> Self {
        self.grant = Grant::ClientCredentials;
        self
    }

    /// The `client_name` registered (default `mrtr`).
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// The authorization server (its issuer identifier) the user expects: a
    /// server whose metadata names only others is refused, tokens cached from
    /// another issuer are not used, and the [`client_id`](Self::client_id) and
    /// [`client_secret`](Self::client_secret) go to this issuer alone. A
    /// loopback `http://` issuer also opens its own origin to the URL policy
    /// (an authorization server run for local tests).
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// Lets discovery fetch plain `http://` on any port of a loopback host, not
    /// only the MCP server's own origin: for local testing with the
    /// authorization server on another port. Off by default, because a remote
    /// server could otherwise point the client at services on this machine.
    pub fn allow_any_loopback_http(mut self, allow: bool) -> Self {
        self.any_loopback_http = allow;
        self
    }

    /// The source.
    ///
    /// # Errors
    /// [`TransportError::InvalidRequest`] for client credentials without a
    /// client id and secret, a client secret without an
    /// [`issuer`](Self::issuer), an MCP server on plain `http://` that is not
    /// on a loopback host, or an issuer that is neither `https://` nor a
    /// loopback `http://` URL.
    pub fn build(self) -> Result<OAuthTokenSource, TransportError> {
        let usage = |why: &str| Err(TransportError::InvalidRequest(why.into()));
        if matches!(self.grant, Grant::ClientCredentials)
            && (self.client_id.is_none() || self.client_secret.is_none())
        {
            return usage("the client credentials grant needs a client id and a client secret");
        }
        if self.client_secret.is_some() && self.issuer.is_none() {
            return usage(
                "a client secret is sent only to the authorization server it belongs to: \
                 name its issuer too",
            );
        }
        let mut policy = UrlPolicy::new().named(&self.server_url);
        if let Err(e) = policy.check(&self.server_url, "OAuth for the MCP server") {
            return usage(&format!(
                "{e}; its tokens would cross the network in clear (RFC 6750 section 5.3)"
            ));
        }
        if let Some(issuer) = &self.issuer {
            policy = policy.named(issuer);
            if let Err(e) = policy.check(issuer, "the issuer") {
                return usage(&e.to_string());
            }
        }
        let policy = policy.any_loopback_http(self.any_loopback_http);
        Ok(OAuthTokenSource {
            config: Arc::new(self),
            policy,
            state: tokio::sync::Mutex::new(State::default()),
        })
    }
}

/// What a source holds between requests.
#[derive(Default)]
struct State {
    entry: Option<Entry>,
    discovered: Option<Discovered>,
    /// Whether the cache was read.
    loaded: bool,
}

/// A [`TokenSource`] that logs in with OAuth 2.1 when the server asks: see the
/// [module docs](self).
///
/// ```no_run
/// # async fn run() -> Result<(), mrtr_client::TransportError> {
/// use std::sync::Arc;
/// use mrtr_client::oauth::{OAuthTokenSource, TokenCache, DEFAULT_LOGIN_TIMEOUT};
///
/// let url = "https://mcp.example.com/mcp";
/// let oauth = OAuthTokenSource::builder(url, mrtr_client::HttpClient::new()?)
///     .cache(TokenCache::new(TokenCache::default_path().expect("a home directory")))
///     .interactive(
///         Arc::new(|url, issuer| eprintln!("log in at {issuer}: open {url}")),
///         DEFAULT_LOGIN_TIMEOUT,
///     )
///     .build()?;
/// let transport = mrtr_client::HttpTransport::builder(url)
///     .token_source(Arc::new(oauth))
///     .build()?;
/// # Ok(()) }
/// ```
pub struct OAuthTokenSource {
    config: Arc<OAuthBuilder>,
    policy: UrlPolicy,
    state: tokio::sync::Mutex<State>,
}

impl fmt::Debug for OAuthTokenSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthTokenSource")
            .field("server_url", &self.config.server_url)
            .finish_non_exhaustive()
    }
}

impl OAuthTokenSource {
    /// A builder for the MCP server at `server_url` (the endpoint the transport
    /// posts to), fetching metadata and tokens with `http`. Without
    /// [`interactive`](OAuthBuilder::interactive) or
    /// [`client_credentials`](OAuthBuilder::client_credentials) it only uses
    /// (and refreshes) the tokens in its cache.
    pub fn builder(server_url: &str, http: HttpClient) -> OAuthBuilder {
        OAuthBuilder {
            server_url: server_url.to_owned(),
            http,
            cache: None,
            client_id: None,
            client_secret: None,
            scopes: Vec::new(),
            grant: Grant::CachedOnly,
            client_name: "mrtr".into(),
            issuer: None,
            any_loopback_http: false,
        }
    }

    /// Logs in now, before any MCP request, when no saved token will do and the
    /// server publishes protected resource metadata at its well-known location
    /// (RFC 9728 section 3): a login that waits for a person then runs outside
    /// the per-request time limits of the flow that follows. Says whether it
    /// logged in. A server that publishes no metadata there is left alone: if
    /// it asks for a login, its `401` starts one during the flow.
    ///
    /// # Errors
    /// As a login in the flow: a refused login, a timeout, the authorization
    /// server unreachable.
    pub async fn log_in_if_protected(&self) -> Result<bool, TransportError> {
        let mut st = self.state.lock().await;
        if self.next(&mut st).await?.is_some() || matches!(self.config.grant, Grant::CachedOnly) {
            return Ok(false);
        }
        if self.discovered(&mut st, None).await.is_err() {
            return Ok(false);
        }
        self.obtain(&mut st, None).await?;
        Ok(true)
    }

    /// The token for the next request: the one in hand, refreshed or fetched
    /// when the source knows it must be.
    async fn next(&self, st: &mut State) -> Result<Option<BearerToken>, TransportError> {
        let c = &self.config;
        if !st.loaded {
            st.loaded = true;
            if let Some(cache) = &c.cache {
                // A token from another issuer than the one the user named is
                // not this login's.
                st.entry = cache
                    .entry_for(&c.server_url)?
                    .filter(|e| c.issuer.as_ref().is_none_or(|i| *i == e.issuer));
            }
        }
        if let Some(e) = &st.entry {
            if e.expires_at.is_some_and(|t| t <= now() + EXPIRY_MARGIN) {
                if e.refresh_token.is_some() && self.refresh(st).await.is_ok() {
                    return Ok(st.entry.as_ref().map(|e| BearerToken::new(&e.access_token)));
                }
                st.entry = None;
            } else {
                return Ok(Some(BearerToken::new(&e.access_token)));
            }
        }
        if matches!(c.grant, Grant::ClientCredentials) {
            self.obtain(st, None).await?;
            return Ok(st.entry.as_ref().map(|e| BearerToken::new(&e.access_token)));
        }
        // No token: the request goes without one, and the server's challenge says
        // where to log in.
        Ok(None)
    }

    /// A fresh token after the server refused the request.
    async fn refused(
        &self,
        st: &mut State,
        ch: &Challenge,
    ) -> Result<Option<BearerToken>, TransportError> {
        let had_token = st.entry.is_some();
        if had_token && ch.error() == Some("invalid_token") {
            let refreshable = st.entry.as_ref().is_some_and(|e| e.refresh_token.is_some());
            if refreshable && self.refresh(st).await.is_ok() {
                return Ok(st.entry.as_ref().map(|e| BearerToken::new(&e.access_token)));
            }
        }
        if matches!(self.config.grant, Grant::CachedOnly) {
            return Err(unauthorized(if had_token {
                "the server refused the saved token and no new login is allowed here"
            } else {
                "the server asks for a login and no new login is allowed here"
            }));
        }
        // A server that names no metadata and publishes none at the well-known
        // places is not an OAuth resource server: nothing to log in to.
        if ch.resource_metadata().is_none()
            && !matches!(self.config.grant, Grant::ClientCredentials)
            && self.discovered(st, Some(ch)).await.is_err()
        {
            return Ok(None);
        }
        self.obtain(st, Some(ch)).await?;
        Ok(st.entry.as_ref().map(|e| BearerToken::new(&e.access_token)))
    }

    /// Discovers (once) where to log in.
    async fn discovered(
        &self,
        st: &mut State,
        ch: Option<&Challenge>,
    ) -> Result<Discovered, TransportError> {
        if let Some(d) = &st.discovered {
            return Ok(d.clone());
        }
        let rules = Rules {
            policy: &self.policy,
            issuer: self.config.issuer.as_deref(),
        };
        let d = discovery::discover(&self.config.http, rules, &self.config.server_url, ch).await?;
        st.discovered = Some(d.clone());
        Ok(d)
    }

    /// A new token from the configured grant.
    async fn obtain(&self, st: &mut State, ch: Option<&Challenge>) -> Result<(), TransportError> {
        let c = &self.config;
        let d = self.discovered(st, ch).await?;
        let scopes = self.scopes_for(&d, ch);
        // The listener is bound first, so that a registration names its port.
        let loopback = match c.grant {
            Grant::Interactive { .. } => Some(Loopback::bind().await?),
            _ => None,
        };
        let redirect = loopback.as_ref().map(|l| l.redirect_uri().to_owned());
        let (client_id, secret) = self.client(&d, redirect.as_deref()).await?;
        let token_url = TokenUrl::new(d.server.token_endpoint.clone())
            .map_err(|_| unauthorized("the token endpoint is not a URL"))?;
        let http = c.http.clone();
        let call = move |req: HttpRequest| {
            let http = http.clone();
            async move { http.send(req).await }
        };
        let response = match &c.grant {
            Grant::ClientCredentials => {
                let mut client =
                    BasicClient::new(ClientId::new(client_id.clone())).set_token_uri(token_url);
                if let Some(s) = &secret {
                    client = client.set_client_secret(ClientSecret::new(s.clone()));
                }
                client
                    .exchange_client_credentials()
                    .add_scopes(scopes.iter().cloned().map(Scope::new))
                    .add_extra_param("resource", d.resource.clone())
                    .request_async(&call)
                    .await
                    .map_err(|e| token_error("the client credentials grant", &e))?
            }
            Grant::Interactive { on_url, timeout } => {
                if !d.server.pkce_s256 {
                    return Err(unauthorized(
                        "the authorization server does not support PKCE with S256, which MCP requires",
                    ));
                }
                let auth = d.server.authorization_endpoint.clone().ok_or_else(|| {
                    unauthorized("the authorization server has no authorization endpoint")
                })?;
                let Some(loopback) = loopback else {
                    return Err(unauthorized("no redirect listener"));
                };
                let mut client = BasicClient::new(ClientId::new(client_id.clone()))
                    .set_auth_uri(
                        AuthUrl::new(auth)
                            .map_err(|_| unauthorized("the authorization endpoint is not a URL"))?,
                    )
                    .set_token_uri(token_url)
                    .set_redirect_uri(
                        RedirectUrl::new(loopback.redirect_uri().to_owned())
                            .map_err(|_| unauthorized("the redirect URI is not a URL"))?,
                    );
                if let Some(s) = &secret {
                    client = client.set_client_secret(ClientSecret::new(s.clone()));
                }
                let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
                let (url, csrf) = client
                    .authorize_url(CsrfToken::new_random)
                    .add_scopes(scopes.iter().cloned().map(Scope::new))
                    .set_pkce_challenge(challenge)
                    .add_extra_param("resource", d.resource.clone())
                    .url();
                on_url(url.as_str(), &d.server.issuer);
                // This attempt is keyed to one issuer: the redirect must carry
                // its state and come from it, and the code (with the verifier)
                // goes only to that issuer's token endpoint.
                let expected = Expected {
                    state: csrf.secret().clone(),
                    issuer: d.server.issuer.clone(),
                    iss_required: d.server.iss_parameter_supported,
                };
                let code = loopback.wait(*timeout, expected).await?;
                client
                    .exchange_code(AuthorizationCode::new(code))
                    .set_pkce_verifier(verifier)
                    .add_extra_param("resource", d.resource.clone())
                    .request_async(&call)
                    .await
                    .map_err(|e| token_error("the token request", &e))?
            }
            Grant::CachedOnly => return Err(unauthorized("no new login is allowed here")),
        };
        let entry = entry_of(&response, &c.server_url, &d, &client_id, None);
        self.keep(st, entry)
    }

    /// Refreshes the token in hand (RFC 6749 section 6), keeping the refresh
    /// token if the server sends no new one.
    async fn refresh(&self, st: &mut State) -> Result<(), TransportError> {
        let Some(old) = st.entry.clone() else {
            return Err(unauthorized("no token to refresh"));
        };
        let Some(refresh) = old.refresh_token.clone() else {
            return Err(unauthorized("no refresh token"));
        };
        // Checked at the login; checked again, as the cache file may be older
        // than this policy.
        self.policy
            .check(&old.token_endpoint, "the saved token endpoint")
            .map_err(|e| unauthorized(e.to_string()))?;
        let token_url = TokenUrl::new(old.token_endpoint.clone())
            .map_err(|_| unauthorized("the token endpoint is not a URL"))?;
        let mut client =
            BasicClient::new(ClientId::new(old.client_id.clone())).set_token_uri(token_url);
        if let Some(s) = self.secret_for(&old.issuer)? {
            client = client.set_client_secret(ClientSecret::new(s));
        }
        let http = self.config.http.clone();
        let call = move |req: HttpRequest| {
            let http = http.clone();
            async move { http.send(req).await }
        };
        let refresh_token = RefreshToken::new(refresh.clone());
        let response = client
            .exchange_refresh_token(&refresh_token)
            .add_extra_param("resource", old.resource.clone())
            .request_async(&call)
            .await;
        let response = match response {
            Ok(r) => r,
            Err(e) => {
                // A refresh token the server no longer takes is dropped, from
                // the cache too (else every later run would try it again).
                st.entry = None;
                if let (RequestTokenError::ServerResponse(_), Some(cache)) =
                    (&e, &self.config.cache)
                {
                    cache.remove(&old)?;
                }
                return Err(token_error("refreshing the token", &e));
            }
        };
        let d = Discovered {
            resource: old.resource.clone(),
            resource_scopes: Vec::new(),
            server: AuthServer {
                issuer: old.issuer.clone(),
                authorization_endpoint: None,
                token_endpoint: old.token_endpoint.clone(),
                registration_endpoint: None,
                pkce_s256: true,
                iss_parameter_supported: false,
            },
        };
        let entry = entry_of(&response, &old.server, &d, &old.client_id, Some(refresh));
        self.keep(st, entry)
    }

    fn keep(&self, st: &mut State, entry: Entry) -> Result<(), TransportError> {
        if let Some(cache) = &self.config.cache {
            cache.put(entry.clone())?;
        }
        st.entry = Some(entry);
        Ok(())
    }

    /// The scopes to ask for: the configured ones, else the challenge's, else
    /// the resource's.
    fn scopes_for(&self, d: &Discovered, ch: Option<&Challenge>) -> Vec<String> {
        if !self.config.scopes.is_empty() {
            return self.config.scopes.clone();
        }
        if let Some(s) = ch.and_then(Challenge::scope) {
            return s
                .split(' ')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
        }
        d.resource_scopes.clone()
    }

    fn secret_for(&self, issuer: &str) -> Result<Option<String>, TransportError> {
        if let Some(s) = &self.config.client_secret {
            // The configured secret belongs to the configured issuer alone.
            return Ok((self.config.issuer.as_deref() == Some(issuer)).then(|| s.0.clone()));
        }
        match &self.config.cache {
            Some(cache) if self.config.client_id.is_none() => {
                Ok(cache.client(issuer)?.and_then(|r| r.client_secret))
            }
            _ => Ok(None),
        }
    }

    /// The client id (and secret) to use with `d`'s authorization server: the
    /// configured one, else one registered before, else a new registration.
    async fn client(
        &self,
        d: &Discovered,
        redirect_uri: Option<&str>,
    ) -> Result<(String, Option<String>), TransportError> {
        let c = &self.config;
        if let Some(id) = &c.client_id {
            return Ok((id.clone(), self.secret_for(&d.server.issuer)?));
        }
        if let Some(cache) = &c.cache
            && let Some(r) = cache.client(&d.server.issuer)?
        {
            return Ok((r.client_id, r.client_secret));
        }
        let Some(endpoint) = &d.server.registration_endpoint else {
            return Err(unauthorized(
                "the authorization server registers no clients (RFC 7591): give a client id",
            ));
        };
        let Some(redirect_uri) = redirect_uri else {
            return Err(unauthorized(
                "a client registered dynamically logs in through the browser",
            ));
        };
        let r = register(&c.http, endpoint, &c.client_name, redirect_uri).await?;
        if let Some(cache) = &c.cache {
            cache.put_client(&d.server.issuer, r.clone())?;
        }
        Ok((r.client_id, r.client_secret))
    }
}

impl TokenSource for OAuthTokenSource {
    fn token<'a>(
        &'a self,
        refused: Option<&'a Challenge>,
    ) -> BoxFuture<'a, Result<Option<BearerToken>, TransportError>> {
        Box::pin(async move {
            let mut st = self.state.lock().await;
            match refused {
                None => self.next(&mut st).await,
                Some(ch) => self.refused(&mut st, ch).await,
            }
        })
    }
}

/// Registers a native public client (RFC 7591 section 3) with the loopback
/// `redirect_uri` of this login (later logins listen on other ports, which an
/// authorization server must allow for loopback URIs: RFC 8252 section 7.3).
async fn register(
    http: &HttpClient,
    endpoint: &str,
    name: &str,
    redirect_uri: &str,
) -> Result<Registered, TransportError> {
    let body = json!({
        "client_name": name,
        "application_type": "native",
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    let request = hyper::Request::post(endpoint)
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .header(hyper::header::ACCEPT, "application/json")
        .body(serde_json::to_vec(&body).unwrap_or_default())
        .map_err(|_| unauthorized("the registration endpoint is not a URL"))?;
    let resp = http.send(request).await?;
    let status = resp.status().as_u16();
    let doc: Value = serde_json::from_slice(resp.body()).unwrap_or(Value::Null);
    if !(200..300).contains(&status) {
        let code = doc
            .get("error")
            .and_then(Value::as_str)
            .filter(|e| e.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') && e.len() <= 64)
            .map(|e| format!(", {e}"))
            .unwrap_or_default();
        return Err(unauthorized(format!(
            "the authorization server refused to register this client (HTTP {status}{code})"
        )));
    }
    let client_id = doc
        .get("client_id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| unauthorized("the registration response has no client_id"))?;
    Ok(Registered {
        client_id: client_id.to_owned(),
        client_secret: doc
            .get("client_secret")
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}

fn entry_of(
    r: &BasicTokenResponse,
    server_url: &str,
    d: &Discovered,
    client_id: &str,
    old_refresh: Option<String>,
) -> Entry {
    Entry {
        server: server_url.to_owned(),
        issuer: d.server.issuer.clone(),
        resource: d.resource.clone(),
        token_endpoint: d.server.token_endpoint.clone(),
        client_id: client_id.to_owned(),
        access_token: r.access_token().secret().clone(),
        refresh_token: r
            .refresh_token()
            .map(|t| t.secret().clone())
            .or(old_refresh),
        expires_at: r.expires_in().map(|d| now().saturating_add(d.as_secs())),
        scope: r
            .scopes()
            .map(|s| s.iter().map(|x| x.as_str()).collect::<Vec<_>>().join(" ")),
    }
}

/// A token endpoint's failure, by its error code only.
fn token_error(
    what: &str,
    e: &RequestTokenError<TransportError, StandardErrorResponse<BasicErrorResponseType>>,
) -> TransportError {
    match e {
        RequestTokenError::ServerResponse(r) => {
            unauthorized(format!("{what} was refused ({})", r.error().as_ref()))
        }
        RequestTokenError::Request(t) => unauthorized(format!("{what} failed: {t}")),
        RequestTokenError::Parse(_, _) => unauthorized(format!(
            "{what}: the authorization server's answer is not a token response"
        )),
        RequestTokenError::Other(_) => unauthorized(format!("{what}: an unexpected answer")),
    }
}
