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
//! - checks the signature against the issuer's keys (the token's `alg` must be the
//!   key's; an unknown `kid` fetches the JWKS again, at most once a minute), then
//!   `iss`, `aud` (the configured audience, the server's own URL), `exp` and `nbf`
//!   with the configured skew, and the scopes required of every request (a refused
//!   token: `401` with `error="invalid_token"`);
//! - checks the scopes a tool requires, if configured (`403` with
//!   `error="insufficient_scope"` and the scopes to ask for); only for a token
//!   that lacks one of them is the body read, to learn the tool, within 1 MiB
//!   and 10 s (`400` otherwise);
//! - inserts the [`Principal`] `iss` + `sub` into the request's extensions, for
//!   [`FromExtension`](crate::http::FromExtension): a state sealed for a subject
//!   of one issuer never opens for the same subject of another.
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
use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue, WWW_AUTHENTICATE};
use http::{StatusCode, Uri};
use jsonwebtoken::jwk::{
    AlgorithmParameters, EllipticCurve, Jwk, JwkSet, KeyAlgorithm, PublicKeyUse,
};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use mrtr::principal::Principal;
use mrtr::service::RequestLog;
use mrtr_client::HttpClient;
use mrtr_client::fetch::split_origin;
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

/// The largest body read to learn which tool a request calls (tool scopes only).
/// Only a token that lacks some tool's scope has its request read here, before
/// the transport's own body limits: so the read is bounded in size and in time.
const MAX_PEEK: usize = 1024 * 1024;

/// The longest the body read for a tool scope may take (a slow sender holds no
/// more than this).
const PEEK_TIMEOUT: Duration = Duration::from_secs(10);

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
        source: mrtr::client::TransportError,
    },
    /// A document was fetched but is not what the issuer must publish.
    #[error("{0}")]
    Invalid(String),
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
    /// then `/.well-known/openid-configuration`), checks that it names the
    /// issuer, and fetches its JWKS.
    ///
    /// # Errors
    /// [`OAuthSetupError`] when a document cannot be fetched, names another
    /// issuer, or has no usable signing key.
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
    /// `400`: the body could not be read to learn the tool.
    Body,
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

/// The middleware of [`ResourceServer::protect`].
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
    let tools = &rs.inner.config.tool_scopes;
    if tools
        .values()
        .flatten()
        .any(|s| !accepted.scopes.contains(s))
    {
        // This token may not call some tool: see which one the request calls.
        let (parts, body) = req.into_parts();
        let Ok(Ok(bytes)) = tokio::time::timeout(PEEK_TIMEOUT, to_bytes(body, MAX_PEEK)).await
        else {
            return rs.refuse(
                Refusal {
                    reason: "the body could not be read in time, or is too large, to check tool scopes",
                    kind: RefusalKind::Body,
                },
                started,
            );
        };
        if let Some(needed) = tool_of(&bytes).and_then(|t| tools.get(&t)) {
            let missing: Vec<String> = needed
                .iter()
                .filter(|s| !accepted.scopes.contains(s.as_str()))
                .cloned()
                .collect();
            if !missing.is_empty() {
                return rs.refuse(
                    Refusal::scope("the tool needs a scope the token lacks", missing),
                    started,
                );
            }
        }
        req = Request::from_parts(parts, Body::from(bytes));
    }
    req.extensions_mut().insert(accepted.principal);
    next.run(req).await
}

/// The tool a `tools/call` body names, if it is one.
fn tool_of(body: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Call {
        method: String,
        params: Option<Params>,
    }
    #[derive(Deserialize)]
    struct Params {
        name: Option<String>,
    }
    let call: Call = serde_json::from_slice(body).ok()?;
    (call.method == "tools/call").then_some(())?;
    call.params?.name
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
        let inner = &self.inner;
        let (status, header, message) = match &refusal.kind {
            RefusalKind::Body => (
                StatusCode::BAD_REQUEST,
                inner.challenge.clone(),
                "Invalid Request",
            ),
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
        let body = json!({
            "jsonrpc": "2.0",
            "error": {"code": -32600, "message": message},
        });
        let mut resp = (status, axum::Json(body)).into_response();
        if status != StatusCode::BAD_REQUEST {
            resp.headers_mut().insert(WWW_AUTHENTICATE, header);
        }
        resp.headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
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
    fn tool_of_reads_only_tools_call() {
        assert_eq!(
            tool_of(
                br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deploy"}}"#
            )
            .as_deref(),
            Some("deploy")
        );
        assert_eq!(
            tool_of(br#"{"method":"prompts/get","params":{"name":"deploy"}}"#),
            None
        );
        assert_eq!(tool_of(b"not json"), None);
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
