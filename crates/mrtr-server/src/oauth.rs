//! An OAuth 2.1 resource server (feature `oauth`): the MCP endpoint accepts JWT
//! access tokens from one authorization server, as the MCP authorization section
//! asks of a protected server.
//!
//! [`ResourceServer::discover`] reads the issuer's metadata (RFC 8414, or OpenID
//! Connect discovery) and its JWKS; [`ResourceServer::protect`] puts the check in
//! front of a router and serves the protected resource metadata (RFC 9728) beside
//! it. For each request it:
//!
//! - takes the `Authorization: Bearer` token (no token: `401` with
//!   `WWW-Authenticate: Bearer resource_metadata="…"`, so a client can discover
//!   where to log in);
//! - checks the token's `typ` (`at+jwt`, RFC 9068 section 4, or what
//!   [`ResourceServerConfig::with_accepted_typ`] adds), the signature against the
//!   issuer's keys (the token's `alg` must be the key's; an unknown `kid` fetches
//!   the JWKS again, at most once a minute), then `iss`, `aud` (the configured
//!   audience, the server's own URL), `exp` and `nbf` with the configured skew,
//!   and the scopes required of every request (a refused token: `401` with
//!   `error="invalid_token"`);
//! - inserts the [`Principal`] `iss` + `sub` into the request's extensions, for
//!   [`FromExtension`](crate::http::FromExtension) (a state sealed for a subject
//!   of one issuer never opens for the same subject of another), and the token's
//!   [`Grant`].
//!
//! The layer reads no body. The scopes a tool requires, if configured, are
//! checked by the transport ([`crate::http::mcp_router`]) on its one strict
//! parse of the body, after its `Host`, `Origin`, `Content-Type` and size checks
//! and within its body budget: a `tools/call` of a tool whose scope the
//! [`Grant`] lacks gets `403` with `error="insufficient_scope"` and the scopes
//! to ask for, and a body the transport cannot parse is refused by it (400)
//! before any tool is looked at. Another router behind [`ResourceServer::protect`]
//! must check [`Grant::missing_for_tool`] itself.
//!
//! A refused token's reason goes to the private request log (target
//! `mrtr::request`, field `detail`), never to the client; no token reaches a log
//! line.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use mrtr_server::http::{self, FromExtension, HttpOptions};
//! use mrtr_server::oauth::{ResourceServer, ResourceServerConfig};
//!
//! # let service: Arc<mrtr::Service> = todo!();
//! let config = ResourceServerConfig::new("https://auth.example", "https://mcp.example/mcp")?
//!     .with_tool_scope("deploy", "mcp:deploy");
//! let oauth = ResourceServer::discover(config, mrtr_client::HttpClient::new()?).await?;
//! let app = oauth.protect(http::standalone_router(service, HttpOptions::default(), FromExtension));
//! # Ok(()) }
//! ```

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::get;
use http::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue, WWW_AUTHENTICATE};
use http::{StatusCode, Uri};
use jsonwebtoken::jwk::{
    AlgorithmParameters, EllipticCurve, Jwk, JwkSet, KeyAlgorithm, PublicKeyUse,
};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use mrtr::principal::Principal;
use mrtr::service::RequestLog;
use mrtr::streamable_http;
use mrtr_client::HttpClient;
use mrtr_client::fetch::{UrlPolicy, UrlRefused, split_origin};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::ServerConfigError;
use crate::log;

/// The path of the protected resource metadata (RFC 9728 section 3).
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// The default clock skew allowed on `exp` and `nbf`.
pub const DEFAULT_SKEW: Duration = Duration::from_secs(60);

/// An unknown `kid` fetches the JWKS again at most this often.
const JWKS_REFRESH_INTERVAL: Duration = Duration::from_secs(60);

/// The longest token looked at (bytes): longer is refused before any parsing.
const MAX_TOKEN: usize = 16 * 1024;

/// What [`ResourceServer`] accepts: whose tokens, for which audience, with what
/// scopes and skew.
#[derive(Debug, Clone)]
#[must_use]
pub struct ResourceServerConfig {
    issuer: String,
    audience: String,
    skew: Duration,
    scopes: Vec<String>,
    tool_scopes: BTreeMap<String, BTreeSet<String>>,
    /// `typ` values accepted beside `at+jwt`, normalized ([`media_type`]).
    accepted_typ: BTreeSet<String>,
}

/// The `typ` of a JWT access token (RFC 9068 section 4), in the short form
/// [`media_type`] gives.
const AT_JWT: &str = "at+jwt";

/// A `typ` value as a media type to compare: lower case, without the
/// `application/` prefix RFC 7515 section 4.1.9 lets a sender leave out
/// (`application/at+jwt` and `AT+JWT` are both `at+jwt`).
fn media_type(typ: &str) -> String {
    let typ = typ.trim().to_ascii_lowercase();
    match typ.strip_prefix("application/") {
        Some(rest) if !rest.contains('/') => rest.to_owned(),
        _ => typ,
    }
}

impl ResourceServerConfig {
    /// Tokens of `issuer` (its `iss`, an `https://` URL, or `http://` on a
    /// loopback host) for `audience` (their `aud`: this server's canonical URL,
    /// e.g. `https://mcp.example/mcp`, which is also the `resource` its metadata
    /// names).
    ///
    /// # Errors
    /// [`ServerConfigError`] naming the setting when either is not such a URL.
    pub fn new(issuer: &str, audience: &str) -> Result<Self, ServerConfigError> {
        check_url("--oauth-issuer", issuer)?;
        check_url("--oauth-audience", audience)?;
        Ok(Self {
            issuer: issuer.to_owned(),
            audience: audience.to_owned(),
            skew: DEFAULT_SKEW,
            scopes: Vec::new(),
            tool_scopes: BTreeMap::new(),
            accepted_typ: BTreeSet::new(),
        })
    }

    /// The clock skew allowed on `exp` and `nbf` (default [`DEFAULT_SKEW`]).
    pub fn with_skew(mut self, skew: Duration) -> Self {
        self.skew = skew;
        self
    }

    /// A scope every request's token must carry (in `scope` or `scp`).
    pub fn with_required_scope(mut self, scope: &str) -> Self {
        self.scopes.push(scope.to_owned());
        self
    }

    /// Also accepts tokens whose `typ` header is `typ` (compared as a media type:
    /// case-insensitive, `application/` optional), beside `at+jwt`, which RFC
    /// 9068 section 4 requires of JWT access tokens and which is always
    /// accepted.
    ///
    /// For an issuer that signs its access tokens with another `typ`: Keycloak
    /// and Microsoft Entra ID send `JWT`. A `typ` shared with the issuer's ID
    /// tokens lets an ID token whose `aud` is this server pass as an access
    /// token, so add it only when the issuer gives no choice. A token without a
    /// `typ` is never accepted.
    pub fn with_accepted_typ(mut self, typ: &str) -> Self {
        self.accepted_typ.insert(media_type(typ));
        self
    }

    /// Whether a token whose header says `typ` may be an access token.
    fn accepts_typ(&self, typ: Option<&str>) -> bool {
        typ.map(media_type)
            .is_some_and(|t| t == AT_JWT || self.accepted_typ.contains(&t))
    }

    /// A scope a `tools/call` of `tool` needs on top of the required ones.
    pub fn with_tool_scope(mut self, tool: &str, scope: &str) -> Self {
        self.tool_scopes
            .entry(tool.to_owned())
            .or_default()
            .insert(scope.to_owned());
        self
    }
}

fn check_url(setting: &str, url: &str) -> Result<(), ServerConfigError> {
    let bad = || {
        ServerConfigError(format!(
            "{setting}: not an https:// URL (or http:// on a loopback host): {url:?}"
        ))
    };
    let uri: Uri = url.parse().map_err(|_| bad())?;
    let host = uri.host().ok_or_else(bad)?;
    let loopback = host == "localhost"
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    match uri.scheme_str() {
        Some("https") => Ok(()),
        Some("http") if loopback => Ok(()),
        _ => Err(bad()),
    }
}

/// Why [`ResourceServer::discover`] could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthSetupError {
    /// The issuer's metadata or JWKS could not be fetched.
    #[error("{what}: {source}")]
    Fetch {
        /// Which document.
        what: &'static str,
        /// Why.
        source: mrtr_client::TransportError,
    },
    /// A document was fetched but is not what the issuer must publish.
    #[error("{0}")]
    Invalid(String),
    /// The issuer's metadata points at a URL the project's one URL policy
    /// ([`UrlPolicy`], named by the issuer) refuses: a plain `http://` `jwks_uri`
    /// on a remote host, or on another loopback origin than the issuer's own.
    #[error("{0}")]
    Refused(#[from] UrlRefused),
}

/// Checks JWT access tokens of one issuer: see the [module docs](self).
#[derive(Clone)]
pub struct ResourceServer {
    inner: Arc<Inner>,
}

struct Inner {
    config: ResourceServerConfig,
    /// The `WWW-Authenticate` value of a request without a token.
    challenge: HeaderValue,
    /// The protected resource metadata document.
    metadata: Value,
    /// Where the metadata is served on this server (RFC 9728 section 3.1).
    metadata_paths: Vec<String>,
    keys: RwLock<Keys>,
    /// Where to fetch the keys again; `None` for fixed keys.
    jwks: Option<(String, HttpClient)>,
    /// When the keys were last fetched again (`None`: not since they were
    /// first read); one fetch at a time.
    refetched: tokio::sync::Mutex<Option<Instant>>,
}

impl fmt::Debug for ResourceServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceServer")
            .field("issuer", &self.inner.config.issuer)
            .field("audience", &self.inner.config.audience)
            .finish_non_exhaustive()
    }
}

/// The verification keys of the issuer, by `kid`.
#[derive(Default)]
struct Keys {
    by_kid: HashMap<String, (DecodingKey, Algorithm)>,
    without_kid: Vec<(DecodingKey, Algorithm)>,
}

impl Keys {
    /// The usable signing keys of `set`: public keys (no `oct` secrets) meant
    /// for signatures, each with the one algorithm it verifies.
    fn from_set(set: &JwkSet) -> Self {
        let mut keys = Self::default();
        for jwk in &set.keys {
            let Some(alg) = algorithm_of(jwk) else {
                continue;
            };
            let Ok(key) = DecodingKey::from_jwk(jwk) else {
                continue;
            };
            match &jwk.common.key_id {
                Some(kid) => {
                    keys.by_kid.insert(kid.clone(), (key, alg));
                }
                None => keys.without_kid.push((key, alg)),
            }
        }
        keys
    }

    fn is_empty(&self) -> bool {
        self.by_kid.is_empty() && self.without_kid.is_empty()
    }
}

/// The algorithm a JWK verifies: its `alg`, or the one its curve or type
/// implies. Symmetric keys and encryption keys are never used.
fn algorithm_of(jwk: &Jwk) -> Option<Algorithm> {
    if matches!(jwk.common.public_key_use, Some(ref u) if *u != PublicKeyUse::Signature) {
        return None;
    }
    let implied = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => Algorithm::RS256,
        AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
            EllipticCurve::P256 => Algorithm::ES256,
            EllipticCurve::P384 => Algorithm::ES384,
            _ => return None,
        },
        AlgorithmParameters::OctetKeyPair(okp) if okp.curve == EllipticCurve::Ed25519 => {
            Algorithm::EdDSA
        }
        _ => return None,
    };
    let Some(named) = jwk.common.key_algorithm else {
        return Some(implied);
    };
    let alg = match named {
        KeyAlgorithm::RS256 => Algorithm::RS256,
        KeyAlgorithm::RS384 => Algorithm::RS384,
        KeyAlgorithm::RS512 => Algorithm::RS512,
        KeyAlgorithm::PS256 => Algorithm::PS256,
        KeyAlgorithm::PS384 => Algorithm::PS384,
        KeyAlgorithm::PS512 => Algorithm::PS512,
        KeyAlgorithm::ES256 => Algorithm::ES256,
        KeyAlgorithm::ES384 => Algorithm::ES384,
        KeyAlgorithm::EdDSA => Algorithm::EdDSA,
        _ => return None,
    };
    // An `alg` of another family than the key is no key at all.
    (alg.family() == implied.family()).then_some(alg)
}

impl ResourceServer {
    /// Reads the issuer's metadata (`/.well-known/oauth-authorization-server`,
    /// then `/.well-known/openid-configuration`, both on the issuer's own
    /// origin), checks that it names the issuer, and fetches its JWKS from its
    /// `jwks_uri`, which must pass [`UrlPolicy`] named by the issuer: `https://`
    /// (to a loopback host only when the issuer is on one), or plain `http://`
    /// only to the issuer's own origin when that is a loopback host.
    ///
    /// # Errors
    /// [`OAuthSetupError`] when a document cannot be fetched, names another
    /// issuer, points at a `jwks_uri` the policy refuses
    /// ([`OAuthSetupError::Refused`]), or has no usable signing key.
    pub async fn discover(
        config: ResourceServerConfig,
        http: HttpClient,
    ) -> Result<Self, OAuthSetupError> {
        let metadata = http
            .issuer_metadata(&config.issuer)
            .await
            .map_err(|source| OAuthSetupError::Fetch {
                what: "the issuer's metadata",
                source,
            })?;
        if metadata.get("issuer").and_then(Value::as_str) != Some(config.issuer.as_str()) {
            return Err(OAuthSetupError::Invalid(
                "the issuer's metadata names another issuer (RFC 8414 section 3.3)".into(),
            ));
        }
        let jwks_uri = metadata
            .get("jwks_uri")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                OAuthSetupError::Invalid("the issuer's metadata has no jwks_uri".into())
            })?
            .to_owned();
        UrlPolicy::new()
            .named(&config.issuer)
            .check(&jwks_uri, "the issuer's jwks_uri")?;
        let keys = fetch_keys(&http, &jwks_uri).await?;
        Ok(Self::build(config, keys, Some((jwks_uri, http))))
    }

    /// A resource server with fixed keys (never fetched again): for an issuer
    /// whose keys are configured rather than discovered, and for tests.
    ///
    /// # Errors
    /// [`OAuthSetupError::Invalid`] when `jwks` holds no usable signing key.
    pub fn with_keys(config: ResourceServerConfig, jwks: &JwkSet) -> Result<Self, OAuthSetupError> {
        let keys = Keys::from_set(jwks);
        if keys.is_empty() {
            return Err(OAuthSetupError::Invalid(
                "the JWKS has no usable signing key".into(),
            ));
        }
        Ok(Self::build(config, keys, None))
    }

    fn build(config: ResourceServerConfig, keys: Keys, jwks: Option<(String, HttpClient)>) -> Self {
        let (origin, path) = split_origin(&config.audience);
        let metadata_url = format!("{origin}{METADATA_PATH}{path}");
        let mut metadata_paths = vec![format!("{METADATA_PATH}{path}")];
        if !path.is_empty() {
            metadata_paths.push(METADATA_PATH.to_owned());
        }
        let mut scopes: BTreeSet<&str> = config.scopes.iter().map(String::as_str).collect();
        scopes.extend(config.tool_scopes.values().flatten().map(String::as_str));
        let mut metadata = json!({
            "resource": config.audience,
            "authorization_servers": [config.issuer],
            "bearer_methods_supported": ["header"],
        });
        // `scopes_supported` is optional (RFC 9728 section 2), and an empty list
        // is not the same as none to every client: the Python SDK takes `[]` as
        // the scope "" and registers " offline_access", which an authorization
        // server refuses. Without scopes, the client falls back on the
        // authorization server's own (the MCP authorization scope selection).
        if !scopes.is_empty() {
            metadata["scopes_supported"] = json!(scopes);
        }
        let challenge = HeaderValue::try_from(format!(
            "Bearer resource_metadata=\"{metadata_url}\"{}",
            scope_param(&config.scopes)
        ))
        .unwrap_or_else(|_| HeaderValue::from_static("Bearer"));
        Self {
            inner: Arc::new(Inner {
                config,
                challenge,
                metadata,
                metadata_paths,
                keys: RwLock::new(keys),
                jwks,
                refetched: tokio::sync::Mutex::new(None),
            }),
        }
    }

    /// The protected resource metadata this server publishes (RFC 9728).
    pub fn metadata(&self) -> &Value {
        &self.inner.metadata
    }

    /// `router` with every route behind the token check (`route_layer`: routes
    /// only, not its fallback), and the protected resource metadata served
    /// beside it at [`METADATA_PATH`] followed by the audience's path (and at
    /// [`METADATA_PATH`] itself), without a token.
    pub fn protect<S: Clone + Send + Sync + 'static>(&self, router: Router<S>) -> Router<S> {
        let guarded =
            router.route_layer(middleware::from_fn_with_state(self.clone(), authenticate));
        let metadata = self.inner.metadata.clone();
        let mut documents = Router::new();
        for path in &self.inner.metadata_paths {
            let doc = metadata.clone();
            documents = documents.route(
                path,
                get(move || {
                    let doc = doc.clone();
                    async move { axum::Json(doc) }
                }),
            );
        }
        guarded.merge(documents)
    }

    /// The principal of a token, or why it is refused (the private reason).
    async fn check(&self, token: &str) -> Result<Token, Refusal> {
        if token.len() > MAX_TOKEN {
            return Err(Refusal::invalid("token too long"));
        }
        let header =
            jsonwebtoken::decode_header(token).map_err(|_| Refusal::invalid("not a JWT"))?;
        if !self.inner.config.accepts_typ(header.typ.as_deref()) {
            return Err(Refusal::invalid(
                "not an access token: typ is not at+jwt (RFC 9068 section 4) nor an accepted one",
            ));
        }
        let (key, alg) = match self.key_for(header.kid.as_deref(), header.alg) {
            Some(k) => k,
            None => {
                self.refetch().await;
                self.key_for(header.kid.as_deref(), header.alg)
                    .ok_or_else(|| {
                        Refusal::invalid("no key of the issuer signs with this kid and alg")
                    })?
            }
        };
        let c = &self.inner.config;
        let mut v = Validation::new(alg);
        v.leeway = c.skew.as_secs();
        v.validate_nbf = true;
        v.set_issuer(&[&c.issuer]);
        v.set_audience(&[&c.audience]);
        v.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let data = jsonwebtoken::decode::<Claims>(token, &key, &v).map_err(|e| {
            use jsonwebtoken::errors::ErrorKind as K;
            Refusal::invalid(match e.kind() {
                K::InvalidSignature => "bad signature",
                K::ExpiredSignature => "expired",
                K::ImmatureSignature => "not yet valid (nbf)",
                K::InvalidIssuer => "another issuer",
                K::InvalidAudience => "another audience",
                K::MissingRequiredClaim(_) => "a required claim (exp, iss, aud, sub) is missing",
                K::InvalidAlgorithm => "another algorithm than the key's",
                _ => "not a valid token",
            })
        })?;
        let claims = data.claims;
        if claims.sub.is_empty() {
            return Err(Refusal::invalid("empty sub"));
        }
        let scopes = claims.scopes();
        let missing: Vec<String> = c
            .scopes
            .iter()
            .filter(|s| !scopes.contains(s.as_str()))
            .cloned()
            .collect();
        if !missing.is_empty() {
            return Err(Refusal::scope("a required scope is missing", missing));
        }
        Ok(Token {
            principal: Principal::new(claims.iss, claims.sub),
            scopes,
        })
    }

    fn key_for(&self, kid: Option<&str>, alg: Algorithm) -> Option<(DecodingKey, Algorithm)> {
        let keys = self.inner.keys.read().unwrap_or_else(|e| e.into_inner());
        let found = match kid {
            Some(kid) => keys.by_kid.get(kid).filter(|(_, a)| *a == alg),
            None => keys.without_kid.iter().find(|(_, a)| *a == alg),
        };
        found.cloned()
    }

    /// Fetches the JWKS again (a new `kid` after the issuer rotated), at most
    /// once per [`JWKS_REFRESH_INTERVAL`]; a failed fetch keeps the old keys.
    async fn refetch(&self) {
        let Some((uri, http)) = &self.inner.jwks else {
            return;
        };
        let mut last = self.inner.refetched.lock().await;
        if last.is_some_and(|t| t.elapsed() < JWKS_REFRESH_INTERVAL) {
            return;
        }
        *last = Some(Instant::now());
        match fetch_keys(http, uri).await {
            Ok(keys) => *self.inner.keys.write().unwrap_or_else(|e| e.into_inner()) = keys,
            Err(e) => {
                tracing::warn!(target: "mrtr::oauth", error = %e, "fetching the JWKS again failed; keeping the old keys")
            }
        }
    }
}

async fn fetch_keys(http: &HttpClient, uri: &str) -> Result<Keys, OAuthSetupError> {
    let doc = http
        .get_json(uri)
        .await
        .map_err(|source| OAuthSetupError::Fetch {
            what: "the issuer's JWKS",
            source,
        })?;
    let set: JwkSet = serde_json::from_value(doc)
        .map_err(|_| OAuthSetupError::Invalid("the issuer's JWKS is not a JWK set".into()))?;
    let keys = Keys::from_set(&set);
    if keys.is_empty() {
        return Err(OAuthSetupError::Invalid(
            "the issuer's JWKS has no usable signing key".into(),
        ));
    }
    Ok(keys)
}

/// The claims read from an access token (RFC 9068 section 2.2).
#[derive(Deserialize)]
struct Claims {
    iss: String,
    sub: String,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    scp: Option<Vec<String>>,
}

impl Claims {
    fn scopes(&self) -> BTreeSet<String> {
        let mut s: BTreeSet<String> = self
            .scope
            .as_deref()
            .unwrap_or("")
            .split(' ')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        s.extend(self.scp.iter().flatten().cloned());
        s
    }
}

/// An accepted token.
struct Token {
    principal: Principal,
    scopes: BTreeSet<String>,
}

/// What an accepted token grants: [`ResourceServer::protect`] puts it into the
/// request's extensions beside its [`Principal`]. The transport
/// ([`crate::http::mcp_router`]) checks it against the tool a `tools/call`
/// names, on its one parse of the body ([`module docs`](self)).
#[derive(Clone)]
pub struct Grant {
    scopes: BTreeSet<String>,
    server: ResourceServer,
}

impl fmt::Debug for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Grant")
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

impl Grant {
    /// The token's scopes (its `scope` and `scp` claims).
    pub fn scopes(&self) -> &BTreeSet<String> {
        &self.scopes
    }

    /// The scopes a `tools/call` of `tool` needs
    /// ([`ResourceServerConfig::with_tool_scope`]) that the token lacks: empty
    /// when it may call `tool`.
    pub fn missing_for_tool(&self, tool: &str) -> Vec<String> {
        self.server
            .inner
            .config
            .tool_scopes
            .get(tool)
            .into_iter()
            .flatten()
            .filter(|s| !self.scopes.contains(s.as_str()))
            .cloned()
            .collect()
    }

    /// The `403` answer to a call that needs the scopes `missing`: the
    /// `insufficient_scope` challenge naming them, and the id-less error body.
    /// The caller writes the log line.
    pub(crate) fn insufficient_scope(&self, missing: Vec<String>) -> Response {
        self.server.response(&RefusalKind::Scope(missing))
    }
}

/// A refused request: the private reason, and the scopes to ask for.
struct Refusal {
    reason: &'static str,
    kind: RefusalKind,
}

enum RefusalKind {
    /// No token at all: the bare challenge.
    Missing,
    /// `401`, `error="invalid_token"`.
    Invalid,
    /// `403`, `error="insufficient_scope"`.
    Scope(Vec<String>),
}

impl Refusal {
    fn invalid(reason: &'static str) -> Self {
        Self {
            reason,
            kind: RefusalKind::Invalid,
        }
    }

    fn scope(reason: &'static str, scopes: Vec<String>) -> Self {
        Self {
            reason,
            kind: RefusalKind::Scope(scopes),
        }
    }
}

fn scope_param(scopes: &[String]) -> String {
    if scopes.is_empty() {
        String::new()
    } else {
        format!(", scope=\"{}\"", scopes.join(" "))
    }
}

/// The middleware of [`ResourceServer::protect`]: the token only (no body is
/// read here); the request goes on with its [`Principal`] and [`Grant`].
async fn authenticate(State(rs): State<ResourceServer>, mut req: Request, next: Next) -> Response {
    let started = Instant::now();
    let token = match bearer(&req) {
        Ok(t) => t,
        Err(r) => return rs.refuse(r, started),
    };
    let accepted = match rs.check(&token).await {
        Ok(t) => t,
        Err(r) => return rs.refuse(r, started),
    };
    drop(token);
    let extensions = req.extensions_mut();
    extensions.insert(accepted.principal);
    extensions.insert(Grant {
        scopes: accepted.scopes,
        server: rs,
    });
    next.run(req).await
}

/// The bearer token of the request: one `Authorization: Bearer` header.
fn bearer(req: &Request) -> Result<String, Refusal> {
    let mut values = req.headers().get_all(AUTHORIZATION).iter();
    let (Some(value), None) = (values.next(), values.next()) else {
        return Err(Refusal {
            reason: "no bearer token, or more than one Authorization header",
            kind: RefusalKind::Missing,
        });
    };
    let value = value
        .to_str()
        .map_err(|_| Refusal::invalid("an Authorization value that is not ASCII"))?;
    let (scheme, token) = value
        .split_once(' ')
        .ok_or(Refusal::invalid("not a bearer token"))?;
    if !scheme.eq_ignore_ascii_case("bearer") || token.trim().is_empty() {
        return Err(Refusal {
            reason: "not a bearer token",
            kind: RefusalKind::Missing,
        });
    }
    Ok(token.trim().to_owned())
}

impl ResourceServer {
    /// The refusal's response (no reason in it) and its private log line.
    fn refuse(&self, refusal: Refusal, started: Instant) -> Response {
        let resp = self.response(&refusal.kind);
        let status = resp.status();
        let entry = RequestLog {
            outcome: format!("http:{}", status.as_u16()),
            detail: Some(format!("oauth: {}", refusal.reason)),
            ..RequestLog::default()
        };
        log::request(
            &log::correlation_id(),
            "http",
            &entry,
            Some(status.as_u16()),
            started.elapsed(),
        );
        resp
    }

    /// A refusal's response: its status, the challenge, and the id-less
    /// JSON-RPC error body ([`streamable_http::error_body`]), the same whatever
    /// the private reason.
    fn response(&self, kind: &RefusalKind) -> Response {
        let inner = &self.inner;
        let (status, challenge, message) = match kind {
            RefusalKind::Missing => (
                StatusCode::UNAUTHORIZED,
                inner.challenge.clone(),
                "Unauthorized",
            ),
            RefusalKind::Invalid => (
                StatusCode::UNAUTHORIZED,
                with_error(&inner.challenge, "invalid_token", None),
                "Unauthorized",
            ),
            RefusalKind::Scope(scopes) => (
                StatusCode::FORBIDDEN,
                with_error(&inner.challenge, "insufficient_scope", Some(scopes)),
                "Forbidden",
            ),
        };
        let mut resp = Response::new(Body::from(streamable_http::error_body(-32600, message)));
        *resp.status_mut() = status;
        let headers = resp.headers_mut();
        headers.insert(WWW_AUTHENTICATE, challenge);
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static(streamable_http::JSON),
        );
        resp
    }
}

/// The challenge with an `error` code (and the scopes to ask for) added.
fn with_error(challenge: &HeaderValue, error: &str, scopes: Option<&Vec<String>>) -> HeaderValue {
    let base = challenge.to_str().unwrap_or("Bearer");
    // The base names the scopes of every request; a scope refusal names its own.
    let base = match (scopes, base.find(", scope=")) {
        (Some(_), Some(i)) => &base[..i],
        _ => base,
    };
    let scope = scopes.map(|s| scope_param(s)).unwrap_or_default();
    HeaderValue::try_from(format!("{base}, error=\"{error}\"{scope}"))
        .unwrap_or_else(|_| challenge.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked() {
        assert!(
            ResourceServerConfig::new("https://auth.example", "https://mcp.example/mcp").is_ok()
        );
        assert!(
            ResourceServerConfig::new("http://127.0.0.1:9000", "http://localhost:8808/mcp").is_ok()
        );
        for bad in ["http://auth.example", "ftp://x", "not a url", ""] {
            let e = ResourceServerConfig::new(bad, "https://mcp.example/mcp").unwrap_err();
            assert!(e.0.starts_with("--oauth-issuer"), "{e}");
        }
    }

    #[test]
    fn the_metadata_lists_scopes_only_when_there_are_some() {
        let jwks: JwkSet = serde_json::from_value(json!({"keys": [{
            "kty": "OKP", "crv": "Ed25519", "kid": "k", "use": "sig", "alg": "EdDSA",
            "x": "zMUeVR4jyJVzJmOkxn0WGKTO3UJAzneoYSeP0Oi1PE0",
        }]}))
        .unwrap();
        let config = || {
            ResourceServerConfig::new("https://auth.example", "https://mcp.example/mcp").unwrap()
        };
        let bare = ResourceServer::with_keys(config(), &jwks).unwrap();
        assert_eq!(
            bare.metadata().get("scopes_supported"),
            None,
            "{}",
            bare.metadata()
        );
        let scoped =
            ResourceServer::with_keys(config().with_tool_scope("deploy", "mcp:deploy"), &jwks)
                .unwrap();
        assert_eq!(scoped.metadata()["scopes_supported"], json!(["mcp:deploy"]));
    }

    #[test]
    fn typ_is_at_jwt_as_a_media_type_unless_another_is_named() {
        let config =
            ResourceServerConfig::new("https://auth.example", "https://mcp.example/mcp").unwrap();
        for good in [
            "at+jwt",
            "application/at+jwt",
            "AT+JWT",
            "Application/At+Jwt",
        ] {
            assert!(config.accepts_typ(Some(good)), "{good}");
        }
        for bad in [
            None,
            Some(""),
            Some("JWT"),
            Some("application/jwt"),
            Some("at+jwt2"),
            Some("x/at+jwt"),
            Some("application/application/at+jwt"),
        ] {
            assert!(!config.accepts_typ(bad), "{bad:?}");
        }
        let keycloak = config.with_accepted_typ("JWT");
        for good in ["JWT", "jwt", "application/JWT", "at+jwt"] {
            assert!(keycloak.accepts_typ(Some(good)), "{good}");
        }
        assert!(!keycloak.accepts_typ(None));
        assert!(!keycloak.accepts_typ(Some("id+jwt")));
    }

    #[test]
    fn a_grant_names_the_tool_scopes_it_lacks() {
        let jwks: JwkSet = serde_json::from_value(json!({"keys": [{
            "kty": "OKP", "crv": "Ed25519", "kid": "k", "use": "sig", "alg": "EdDSA",
            "x": "zMUeVR4jyJVzJmOkxn0WGKTO3UJAzneoYSeP0Oi1PE0",
        }]}))
        .unwrap();
        let config = ResourceServerConfig::new("https://auth.example", "https://mcp.example/mcp")
            .unwrap()
            .with_tool_scope("deploy", "mcp:deploy")
            .with_tool_scope("deploy", "mcp:admin");
        let server = ResourceServer::with_keys(config, &jwks).unwrap();
        let grant = |scopes: &[&str]| Grant {
            scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
            server: server.clone(),
        };
        assert_eq!(
            grant(&["mcp"]).missing_for_tool("deploy"),
            ["mcp:admin", "mcp:deploy"]
        );
        assert_eq!(
            grant(&["mcp:admin"]).missing_for_tool("deploy"),
            ["mcp:deploy"]
        );
        assert!(
            grant(&["mcp:admin", "mcp:deploy"])
                .missing_for_tool("deploy")
                .is_empty()
        );
        assert!(grant(&[]).missing_for_tool("echo").is_empty());
        // Names are exact: no case folding, no trimming.
        assert!(grant(&[]).missing_for_tool("Deploy").is_empty());
    }

    #[test]
    fn challenges_name_the_metadata_and_the_error() {
        let c = HeaderValue::from_static(
            r#"Bearer resource_metadata="https://m/.well-known/oauth-protected-resource/mcp", scope="mcp""#,
        );
        assert_eq!(
            with_error(&c, "invalid_token", None),
            r#"Bearer resource_metadata="https://m/.well-known/oauth-protected-resource/mcp", scope="mcp", error="invalid_token""#
        );
        assert_eq!(
            with_error(&c, "insufficient_scope", Some(&vec!["mcp:admin".into()])),
            r#"Bearer resource_metadata="https://m/.well-known/oauth-protected-resource/mcp", error="insufficient_scope", scope="mcp:admin""#
        );
    }
}
