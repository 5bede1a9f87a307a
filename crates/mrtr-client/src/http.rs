//! [`HttpTransport`]: the Streamable HTTP client transport (feature `http`).
//!
//! Each JSON-RPC request is one `POST` to the MCP endpoint with the headers the
//! 2026-07-28 transport requires (`MCP-Protocol-Version`, `Mcp-Method`,
//! `Mcp-Name`) and `Accept: application/json, text/event-stream`. The response is
//! either one JSON body or an SSE stream; in a stream, the driver gets the `data`
//! of the first event that is the response to this request's id (progress
//! notifications and other messages before it are skipped), and the stream is
//! then dropped, which the server reads as the end of the request.
//!
//! `http://` and `https://`. TLS is rustls (TLS 1.2 and 1.3, the ring provider;
//! no OpenSSL). The server's certificate must chain to a trusted root: by default
//! the system's CA certificates (on Linux the bundle of the `ca-certificates`
//! package, or the file `$SSL_CERT_FILE` names), plus any private CA added with
//! [`HttpTransportBuilder::add_root_pem`]; [`HttpTransportBuilder::platform_roots`]
//! turns the system's off, to trust a private CA alone.
//!
//! Credentials: [`HttpTransportBuilder::header`] adds a header to every request
//! (an API key, a fixed `Authorization`), [`HttpTransportBuilder::bearer`] a fixed
//! bearer token, and [`HttpTransportBuilder::token_source`] a [`TokenSource`]
//! that is asked for the token before each request and once more for a fresh one
//! when the server refuses it as invalid (`401` with `WWW-Authenticate: Bearer
//! error="invalid_token"`). Every value given so is marked sensitive and left out
//! of `Debug` output and error messages; a `401` is
//! [`TransportError::Unauthorized`].

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{
    ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, WWW_AUTHENTICATE,
};
use hyper::{Request, Response, StatusCode, Uri};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use rustls::{CertificateError, RootCertStore};
use serde_json::Value;

use crate::{BoxFuture, Timer, Transport, TransportError};
use mrtr::streamable_http::{self, Framing, McpHeaders, ParamHeaders, SseParser};
use mrtr::wire::PROTOCOL_VERSION;

/// The most `tools/list` pages the transport reads to learn a refused tool's
/// `x-mcp-header` declarations ([`HttpTransport`]).
const RELIST_PAGES: usize = 8;

/// The largest response body read, JSON or SSE (bytes).
pub const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// A Streamable HTTP transport to one MCP endpoint (e.g. `http://127.0.0.1:8080/mcp`
/// or `https://mcp.example.com/mcp`).
///
/// Needs a tokio runtime. Cheap to share: the connection pool is inside.
///
/// Tool parameters in headers (MCP 2026-07-28, Streamable HTTP §Custom Headers
/// from Tool Parameters): the transport reads the `x-mcp-header` declarations
/// of the tools in every `tools/list` reply it carries, leaves out of that reply
/// a tool whose declarations break the rules, and sends each later `tools/call`
/// of a listed tool with its `Mcp-Param-*` headers. A call of a tool not listed
/// yet goes without them (the spec's SHOULD); when the server refuses it with
/// -32020, the transport lists the tools (at most eight pages) and, if the tool
/// declares headers, sends the call once more with them.
///
/// ```no_run
/// # fn main() -> Result<(), mrtr_client::TransportError> {
/// use mrtr_client::HttpTransport;
///
/// // The system's CA certificates.
/// let public = HttpTransport::new("https://mcp.example.com/mcp")?;
/// // A server whose certificate comes from a private CA, and only that CA.
/// let pem = std::fs::read("ca.pem").expect("the CA file");
/// let private = HttpTransport::builder("https://mcp.internal:8443/mcp")
///     .add_root_pem(&pem)?
///     .platform_roots(false)
///     .build()?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct HttpTransport {
    client: HyperClient<HttpsConnector<HttpConnector>, Full<Bytes>>,
    uri: Uri,
    headers: HeaderMap,
    auth: Auth,
    /// The `x-mcp-header` declarations of the tools the server listed
    /// (`tools/list` replies seen by this transport or a clone of it), by tool
    /// name.
    param_headers: Arc<Mutex<HashMap<String, ParamHeaders>>>,
}

impl fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpTransport")
            .field("uri", &self.uri)
            .field("headers", &HeaderNames(&self.headers))
            .field("auth", &self.auth)
            .finish_non_exhaustive()
    }
}

/// Builds an [`HttpTransport`]: which roots of trust `https://` uses, and the
/// credentials every request carries.
#[derive(Clone)]
pub struct HttpTransportBuilder {
    url: String,
    added_roots: RootCertStore,
    platform_roots: bool,
    headers: HeaderMap,
    auth: Auth,
}

impl fmt::Debug for HttpTransportBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpTransportBuilder")
            .field("url", &self.url)
            .field("added_roots", &self.added_roots.len())
            .field("platform_roots", &self.platform_roots)
            .field("headers", &HeaderNames(&self.headers))
            .field("auth", &self.auth)
            .finish()
    }
}

/// A bearer token: its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct BearerToken(String);

impl BearerToken {
    /// The token (the part after `Bearer `).
    pub fn new(token: impl Into<String>) -> Self {
        Self(token.into())
    }

    /// The token itself, to store or send.
    pub fn secret(&self) -> &str {
        &self.0
    }

    fn header_value(&self) -> Result<HeaderValue, TransportError> {
        let mut v = HeaderValue::try_from(format!("Bearer {}", self.0)).map_err(|_| {
            TransportError::InvalidRequest(
                "the bearer token has characters an Authorization header cannot carry".into(),
            )
        })?;
        v.set_sensitive(true);
        Ok(v)
    }
}

impl fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BearerToken(..)")
    }
}

/// Where the bearer token of each request comes from, for a server behind OAuth
/// or any bearer check (see [`HttpTransportBuilder::token_source`]).
///
/// `token(None)` is asked before every request: return the token in hand (a
/// source caches it and renews it when it knows it has expired), or `None` to
/// send the request without one (a source that logs in only when the server asks).
/// `token(Some(challenge))` is asked at most once per request, after the server
/// refused it (`401`, or `403` with `error="insufficient_scope"`): return a fresh
/// token (refresh it, log in again with what the [`Challenge`] says), `None` to
/// give up, or an error, which the request then ends with.
///
/// ```
/// use mrtr_client::{BearerToken, BoxFuture, Challenge, TokenSource, TransportError};
///
/// #[derive(Debug)]
/// struct FromEnv;
/// impl TokenSource for FromEnv {
///     fn token<'a>(
///         &'a self,
///         refused: Option<&'a Challenge>,
///     ) -> BoxFuture<'a, Result<Option<BearerToken>, TransportError>> {
///         Box::pin(async move {
///             if refused.is_some() {
///                 return Ok(None); // the same variable would be refused again
///             }
///             std::env::var("MCP_TOKEN")
///                 .map(|t| Some(BearerToken::new(t)))
///                 .map_err(|_| TransportError::Unauthorized("MCP_TOKEN is not set".into()))
///         })
///     }
/// }
/// let transport = mrtr_client::HttpTransport::builder("http://127.0.0.1:8808/mcp")
///     .token_source(std::sync::Arc::new(FromEnv))
///     .build()?;
/// # Ok::<(), TransportError>(())
/// ```
pub trait TokenSource: fmt::Debug + Send + Sync {
    /// The token to send; `refused` is the server's challenge when it refused the
    /// request just sent (asked at most once per request).
    fn token<'a>(
        &'a self,
        refused: Option<&'a Challenge>,
    ) -> BoxFuture<'a, Result<Option<BearerToken>, TransportError>>;
}

/// A server's refusal of a request's credentials: the status and the
/// `WWW-Authenticate: Bearer` parameters a client acts on (RFC 6750 section 3,
/// RFC 9728 section 5.1). Only well-formed values are kept: an error code or a
/// scope of token characters, a `resource_metadata` that is an `http(s)` URL.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    status: u16,
    error: Option<String>,
    scope: Option<String>,
    resource_metadata: Option<String>,
}

impl Challenge {
    /// The challenge of a response with `status` and `headers`.
    pub fn from_response(status: u16, headers: &HeaderMap) -> Self {
        let param = |key: &str| {
            headers
                .get_all(WWW_AUTHENTICATE)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .find_map(|v| auth_param(v, "Bearer", key))
        };
        let token_chars = |s: &String, max: usize| {
            !s.is_empty()
                && s.len() <= max
                && s.bytes()
                    .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\' || b == b' ')
        };
        Self {
            status,
            error: param("error").filter(|e| {
                token_chars(e, 64)
                    && e.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            }),
            scope: param("scope").filter(|s| token_chars(s, 1024)),
            resource_metadata: param("resource_metadata").filter(|u| {
                token_chars(u, 2048)
                    && !u.contains(' ')
                    && (u.starts_with("https://") || u.starts_with("http://"))
            }),
        }
    }

    /// The HTTP status of the refusal (401 or 403).
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The `error` code (`invalid_token`, `insufficient_scope`), if given.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// The scopes the server asks for (space-separated), if given.
    pub fn scope(&self) -> Option<&str> {
        self.scope.as_deref()
    }

    /// Where the server's protected resource metadata is (RFC 9728), if given.
    pub fn resource_metadata(&self) -> Option<&str> {
        self.resource_metadata.as_deref()
    }
}

/// The credentials of a transport.
#[derive(Clone, Default)]
enum Auth {
    #[default]
    None,
    Fixed(HeaderValue),
    Source(Arc<dyn TokenSource>),
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Auth::None => "none",
            Auth::Fixed(_) => "bearer token",
            Auth::Source(_) => "token source",
        })
    }
}

/// Header names only, for `Debug`: the values may be credentials.
struct HeaderNames<'a>(&'a HeaderMap);

impl fmt::Debug for HeaderNames<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.keys()).finish()
    }
}

/// Headers the transport writes itself, or that HTTP/1.1 framing owns: refused
/// by [`HttpTransportBuilder::header`].
const OWN_HEADERS: &[&str] = &[
    "accept",
    "connection",
    "content-length",
    "content-type",
    "host",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    streamable_http::HEADER_PROTOCOL_VERSION,
    streamable_http::HEADER_METHOD,
    streamable_http::HEADER_NAME,
];

impl HttpTransportBuilder {
    /// Sends `name: value` with every request: an API key, a fixed
    /// `Authorization`, a tenant header. The value is marked sensitive (never
    /// shown by `Debug`, never in an error). Given twice, the name is sent with
    /// both values.
    ///
    /// # Errors
    /// [`TransportError::InvalidRequest`] (naming the header, never the value)
    /// when `name` is not a header name, `value` is not a header value, or `name`
    /// is one the transport writes itself (`Accept`, `Content-Type`, the MCP
    /// headers `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`,
    /// so a fixed header cannot stand in for an argument) or HTTP framing
    /// owns (`Host`, `Content-Length`, `Transfer-Encoding`, `Connection`, ...).
    pub fn header(mut self, name: &str, value: &str) -> Result<Self, TransportError> {
        let parsed = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
            TransportError::InvalidRequest(format!(
                "not a header name: {:?}",
                name.escape_debug().to_string()
            ))
        })?;
        if OWN_HEADERS.contains(&parsed.as_str())
            || parsed
                .as_str()
                .starts_with(streamable_http::HEADER_PARAM_PREFIX)
        {
            return Err(TransportError::InvalidRequest(format!(
                "the {parsed} header is the transport's own; it cannot be set"
            )));
        }
        let mut value = HeaderValue::from_str(value).map_err(|_| {
            TransportError::InvalidRequest(format!(
                "the {parsed} header cannot carry this value (control characters or non-ASCII)"
            ))
        })?;
        value.set_sensitive(true);
        self.headers.append(parsed, value);
        Ok(self)
    }

    /// Sends `Authorization: Bearer <token>` with every request. A `401` is then
    /// [`TransportError::Unauthorized`] (no fresh token to ask for: use
    /// [`token_source`](Self::token_source) for that).
    ///
    /// # Errors
    /// [`TransportError::InvalidRequest`] when the token has characters a header
    /// cannot carry (the message does not show it).
    pub fn bearer(mut self, token: &BearerToken) -> Result<Self, TransportError> {
        self.auth = Auth::Fixed(token.header_value()?);
        Ok(self)
    }

    /// Asks `source` for the bearer token of every request, and for a fresh one
    /// once when the server refuses it as invalid (see [`TokenSource`]).
    #[must_use]
    pub fn token_source(mut self, source: Arc<dyn TokenSource>) -> Self {
        self.auth = Auth::Source(source);
        self
    }

    /// Trusts the CA certificates in `pem` as well (PEM text: one or more
    /// `CERTIFICATE` blocks; other blocks, such as keys, are skipped), e.g. the CA of
    /// a private deployment. Each is a root of trust: a server certificate that
    /// chains to it is accepted for the names it holds.
    ///
    /// # Errors
    /// [`TransportError::Tls`] when `pem` holds no certificate, a block that is
    /// not valid PEM, or a certificate that cannot be a root (not DER X.509).
    pub fn add_root_pem(mut self, pem: &[u8]) -> Result<Self, TransportError> {
        add_roots(&mut self.added_roots, pem)?;
        Ok(self)
    }

    /// Whether `https://` also trusts the system's CA certificates (default: yes).
    /// With `false`, only the roots added with [`add_root_pem`](Self::add_root_pem)
    /// are trusted: for a server that must present a private CA's certificate.
    #[must_use]
    pub fn platform_roots(mut self, trust: bool) -> Self {
        self.platform_roots = trust;
        self
    }

    /// The transport.
    ///
    /// The system's CA certificates are read here, for an `https://` URL only.
    ///
    /// # Errors
    /// [`TransportError::InvalidRequest`] when the URL is not an absolute
    /// `http://` or `https://` URL with a host, or when an `Authorization` header
    /// and a bearer token (or token source) are both given; [`TransportError::Tls`] for an
    /// `https://` URL when no root of trust is left (the system has no CA
    /// certificates and none was added).
    pub fn build(self) -> Result<HttpTransport, TransportError> {
        if self.headers.contains_key(AUTHORIZATION) && !matches!(self.auth, Auth::None) {
            return Err(TransportError::InvalidRequest(
                "an Authorization header and a bearer token: give one of them".into(),
            ));
        }
        let url = &self.url;
        let uri: Uri = url
            .parse()
            .map_err(|_| TransportError::InvalidRequest(format!("not a URL: {url:?}")))?;
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => {
                return Err(TransportError::InvalidRequest(format!(
                    "not an http:// or https:// URL: {url:?}"
                )));
            }
        };
        if uri.host().is_none_or(str::is_empty) {
            return Err(TransportError::InvalidRequest(format!(
                "no host in {url:?}"
            )));
        }
        // Plain http never reads the system's certificates (the transport posts to
        // its one URL and follows no redirect, so no TLS connection is ever made).
        let connector = connector(self.added_roots, https && self.platform_roots, https)?;
        let client = HyperClient::builder(TokioExecutor::new()).build(connector);
        Ok(HttpTransport {
            client,
            uri,
            headers: self.headers,
            auth: self.auth,
            param_headers: Arc::default(),
        })
    }
}

/// Adds the certificates in `pem` to `roots`; at least one must be there.
pub(crate) fn add_roots(roots: &mut RootCertStore, pem: &[u8]) -> Result<(), TransportError> {
    let mut added = 0usize;
    for cert in CertificateDer::pem_slice_iter(pem) {
        let cert = cert.map_err(|e| TransportError::Tls(format!("not valid PEM: {e}")))?;
        roots.add(cert).map_err(|e| {
            TransportError::Tls(format!("certificate {} cannot be a root: {e}", added + 1))
        })?;
        added += 1;
    }
    if added == 0 {
        return Err(TransportError::Tls(
            "no certificate in the PEM data (a -----BEGIN CERTIFICATE----- block)".into(),
        ));
    }
    Ok(())
}

/// The connector of every client in this crate: rustls (ring, TLS 1.2 and 1.3)
/// trusting `roots`, plus the system's CA certificates when `platform` is set;
/// plain `http://` as well. With `require_roots`, no root of trust is an error.
pub(crate) fn connector(
    mut roots: RootCertStore,
    platform: bool,
    require_roots: bool,
) -> Result<HttpsConnector<HttpConnector>, TransportError> {
    if platform {
        let native = rustls_native_certs::load_native_certs();
        let (found, _unusable) = roots.add_parsable_certificates(native.certs);
        if found == 0 && roots.is_empty() && require_roots {
            let why = native
                .errors
                .first()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default();
            return Err(TransportError::Tls(format!(
                "no CA certificates found on this system{why}; install them (Debian: the \
                 ca-certificates package), set SSL_CERT_FILE, or add a root of trust"
            )));
        }
    }
    if require_roots && roots.is_empty() {
        return Err(TransportError::Tls(
            "no root of trust: add one, or trust the system's CA certificates".into(),
        ));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TransportError::Tls(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .build())
}

impl HttpTransport {
    /// A transport posting to `url` (`http://` or `https://`), trusting the system's
    /// CA certificates for `https://`. Use [`builder`](Self::builder) to add a
    /// private CA.
    ///
    /// # Errors
    /// As [`HttpTransportBuilder::build`].
    pub fn new(url: &str) -> Result<Self, TransportError> {
        Self::builder(url).build()
    }

    /// A builder for a transport posting to `url`; the URL is checked by
    /// [`build`](HttpTransportBuilder::build).
    pub fn builder(url: &str) -> HttpTransportBuilder {
        HttpTransportBuilder {
            url: url.to_owned(),
            added_roots: RootCertStore::empty(),
            platform_roots: true,
            headers: HeaderMap::new(),
            auth: Auth::None,
        }
    }

    /// The endpoint.
    pub fn uri(&self) -> &Uri {
        &self.uri
    }

    fn build(
        &self,
        request: &Value,
        authorization: Option<HeaderValue>,
        wire: Wire<'_>,
    ) -> Result<Request<Full<Bytes>>, TransportError> {
        let mut b = Request::post(self.uri.clone())
            .header(CONTENT_TYPE, streamable_http::JSON)
            .header(ACCEPT, streamable_http::ACCEPT_JSON_AND_EVENT_STREAM);
        let modern = match wire {
            Wire::Modern => true,
            Wire::Legacy { version, session } => {
                if let Some(v) = version {
                    b = b.header(
                        streamable_http::HEADER_PROTOCOL_VERSION,
                        header_value(streamable_http::HEADER_PROTOCOL_VERSION, v)?,
                    );
                }
                if let Some(id) = session {
                    let mut v = header_value(HEADER_SESSION_ID, id)?;
                    v.set_sensitive(true);
                    b = b.header(HEADER_SESSION_ID, v);
                }
                false
            }
        };
        if modern {
            let headers = McpHeaders::for_request(request, PROTOCOL_VERSION);
            for (name, value) in headers.pairs() {
                b = b.header(name, header_value(name, value)?);
            }
        }
        if modern
            && let Some(params) = request.get("params")
            && request.get("method").and_then(Value::as_str) == Some("tools/call")
            && let Some(tool) = params.get("name").and_then(Value::as_str)
        {
            let known = self
                .param_headers
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if let Some(declared) = known.get(tool) {
                for (name, value) in declared.pairs(params.get("arguments")) {
                    b = b.header(name, header_value(name, &value)?);
                }
            }
        }
        if let Some(extra) = b.headers_mut() {
            extra.extend(self.headers.clone());
            if let Some(a) = authorization {
                extra.insert(AUTHORIZATION, a);
            }
        }
        let body = serde_json::to_vec(request)
            .map_err(|e| TransportError::InvalidRequest(e.to_string()))?;
        b.body(Full::new(Bytes::from(body)))
            .map_err(|e| TransportError::InvalidRequest(e.to_string()))
    }

    /// Posts `request` and returns the response. A token source is asked again
    /// once if the server refuses the request (401, or 403 `insufficient_scope`).
    pub(crate) async fn post(
        &self,
        request: &Value,
        wire: Wire<'_>,
    ) -> Result<Response<hyper::body::Incoming>, TransportError> {
        let mut refused: Option<Challenge> = None;
        let mut sent_token = false;
        loop {
            let authorization = match &self.auth {
                Auth::None => None,
                Auth::Fixed(v) => Some(v.clone()),
                Auth::Source(source) => match source.token(refused.as_ref()).await? {
                    Some(token) => Some(token.header_value()?),
                    None if refused.is_some() => {
                        return Err(TransportError::Unauthorized(refusal(
                            if sent_token {
                                "the server refused the token and the token source has no other"
                            } else {
                                "the server asks for credentials and none were sent"
                            },
                            refused.as_ref(),
                        )));
                    }
                    None => None,
                },
            };
            sent_token = authorization.is_some();
            let req = self.build(request, authorization, wire)?;
            let resp = self
                .client
                .request(req)
                .await
                .map_err(|e| connect_error(&e))?;
            let challenge = Challenge::from_response(resp.status().as_u16(), resp.headers());
            let is_refusal = resp.status() == StatusCode::UNAUTHORIZED
                || (resp.status() == StatusCode::FORBIDDEN
                    && challenge.error() == Some("insufficient_scope"));
            if !is_refusal {
                return Ok(resp);
            }
            let why = match &self.auth {
                Auth::Source(_) if refused.is_none() => {
                    refused = Some(challenge);
                    continue;
                }
                Auth::Source(_) if sent_token => "the server refused a fresh token as well",
                Auth::Source(_) => "the server asks for credentials and none were sent",
                Auth::None if self.headers.contains_key(AUTHORIZATION) => {
                    "the server refused the Authorization header"
                }
                Auth::None => "the server asks for credentials and none were sent",
                Auth::Fixed(_) => "the server refused the bearer token",
            };
            return Err(TransportError::Unauthorized(refusal(why, Some(&challenge))));
        }
    }
}

impl HttpTransport {
    /// Ends a 2025-era session: `DELETE` with its id (and the current token).
    /// The answer is read and dropped (a server may refuse with `405`).
    pub(crate) async fn delete_session(&self, version: Option<&str>, session: &str) {
        let authorization = match &self.auth {
            Auth::None => None,
            Auth::Fixed(v) => Some(v.clone()),
            Auth::Source(source) => match source.token(None).await {
                Ok(Some(t)) => t.header_value().ok(),
                _ => None,
            },
        };
        let mut b = Request::delete(self.uri.clone());
        if let Some(headers) = b.headers_mut() {
            headers.extend(self.headers.clone());
            if let Some(a) = authorization {
                headers.insert(AUTHORIZATION, a);
            }
            if let Ok(mut v) = HeaderValue::from_str(session) {
                v.set_sensitive(true);
                headers.insert(HEADER_SESSION_ID, v);
            }
            if let Some(Ok(v)) = version.map(HeaderValue::from_str) {
                headers.insert(streamable_http::HEADER_PROTOCOL_VERSION, v);
            }
        }
        let Ok(req) = b.body(Full::new(Bytes::new())) else {
            return;
        };
        if let Ok(resp) = self.client.request(req).await {
            let mut body = resp.into_body();
            let _ = read_body(&mut body).await;
        }
    }
}

/// `why`, with the status and error code of the server's challenge (never its
/// free text).
fn refusal(why: &str, challenge: Option<&Challenge>) -> String {
    match challenge {
        Some(c) => {
            let code = c
                .error()
                .map(|e| format!(", error={e}"))
                .unwrap_or_default();
            format!("{why} (HTTP {}{code})", c.status())
        }
        None => why.to_owned(),
    }
}

/// The parameter `key` of the `scheme` challenge in one `WWW-Authenticate` value
/// (`Bearer realm="x", error="invalid_token"`): quoted or a bare token. Several
/// challenges in one value are told apart by their scheme names.
fn auth_param(value: &str, scheme: &str, key: &str) -> Option<String> {
    let mut rest = value.trim_start();
    let mut in_scheme = false;
    while !rest.is_empty() {
        // A name: a scheme (no `=` after it) or a parameter's key.
        let end = rest
            .find(|c: char| c == '=' || c == ',' || c.is_ascii_whitespace())
            .unwrap_or(rest.len());
        let name = &rest[..end];
        rest = rest[end..].trim_start();
        if let Some(after) = rest.strip_prefix('=') {
            let after = after.trim_start();
            let (val, tail) = if let Some(q) = after.strip_prefix('"') {
                let mut out = String::new();
                let mut chars = q.char_indices();
                let mut close = None;
                while let Some((i, c)) = chars.next() {
                    match c {
                        '\\' => {
                            if let Some((_, n)) = chars.next() {
                                out.push(n);
                            }
                        }
                        '"' => {
                            close = Some(i + 1);
                            break;
                        }
                        c => out.push(c),
                    }
                }
                (out, &q[close?..])
            } else {
                let end = after.find(',').unwrap_or(after.len());
                (after[..end].trim().to_owned(), &after[end..])
            };
            if in_scheme && name.eq_ignore_ascii_case(key) {
                return Some(val);
            }
            rest = tail.trim_start();
        } else if !name.is_empty() {
            in_scheme = name.eq_ignore_ascii_case(scheme);
        }
        rest = rest.trim_start_matches(|c: char| c == ',' || c.is_ascii_whitespace());
    }
    None
}

fn header_value(name: &str, v: &str) -> Result<HeaderValue, TransportError> {
    HeaderValue::from_str(v).map_err(|_| {
        TransportError::InvalidRequest(format!("the {name} header cannot carry this value"))
    })
}

impl Transport for HttpTransport {
    fn network_transport(&self) -> &'static str {
        "tcp"
    }

    /// The URL's host and port (80 or 443 when it names none).
    fn server_address(&self) -> Option<(&str, u16)> {
        let host = self.uri.host()?;
        let default = if self.uri.scheme_str() == Some("https") {
            443
        } else {
            80
        };
        Some((host, self.uri.port_u16().unwrap_or(default)))
    }

    /// Tokio's timer ([`TokioTimer`](crate::TokioTimer)): this transport runs on tokio.
    fn timer(&self) -> Option<std::sync::Arc<dyn Timer>> {
        Some(std::sync::Arc::new(crate::TokioTimer))
    }

    fn send(&self, request: Value) -> BoxFuture<'_, Result<Value, TransportError>> {
        Box::pin(async move {
            let reply = self.exchange(&request).await?;
            self.after_reply(&request, reply).await
        })
    }

    fn legacy(&self) -> Option<&dyn crate::legacy::LegacyTransport> {
        Some(self)
    }
}

impl HttpTransport {
    /// What a modern reply to `request` leads to: the tools' declarations
    /// learned from a `tools/list`, a refused `tools/call` sent once more.
    pub(crate) async fn after_reply(
        &self,
        request: &Value,
        mut reply: Value,
    ) -> Result<Value, TransportError> {
        match request.get("method").and_then(Value::as_str) {
            Some("tools/list") => self.learn_tools(&mut reply),
            Some("tools/call") if self.relist_for(request, &reply).await => {
                // Refused before it ran (the header check comes first), so
                // sending it again with its headers runs it once.
                reply = self.exchange(request).await?;
            }
            _ => {}
        }
        Ok(reply)
    }

    /// Posts `request` and reads its JSON-RPC response.
    async fn exchange(&self, request: &Value) -> Result<Value, TransportError> {
        let resp = self.post(request, Wire::Modern).await?;
        self.read_reply(request, resp).await
    }

    /// Reads the JSON-RPC response to `request` from `resp`.
    pub(crate) async fn read_reply(
        &self,
        request: &Value,
        resp: Response<hyper::body::Incoming>,
    ) -> Result<Value, TransportError> {
        {
            let id = request.get("id").cloned().unwrap_or(Value::Null);
            let status = resp.status();
            let content_type = resp
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok());
            let framing = streamable_http::response_framing(content_type);
            let mut body = resp.into_body();
            if framing == Framing::EventStream {
                let mut parser = SseParser::default();
                let mut read = 0usize;
                loop {
                    let data = match body.frame().await {
                        None => parser.finish(),
                        Some(frame) => {
                            let frame =
                                frame.map_err(|e| TransportError::Connection(error_chain(&e)))?;
                            let Ok(chunk) = frame.into_data() else {
                                continue;
                            };
                            read += chunk.len();
                            if read > MAX_RESPONSE_BYTES {
                                return Err(TransportError::InvalidResponse(
                                    "the event stream is too large".into(),
                                ));
                            }
                            parser.push(&chunk)
                        }
                    };
                    for d in data {
                        if let Some(v) = response_for(&d, &id) {
                            return Ok(v);
                        }
                    }
                    if parser.is_finished() {
                        return Err(TransportError::InvalidResponse(format!(
                            "the event stream ended without the response (http status {})",
                            status.as_u16()
                        )));
                    }
                }
            }
            let buf = read_body(&mut body).await?;
            // A JSON-RPC response is handed over whatever the status (errors come with 4xx).
            match serde_json::from_slice::<Value>(&buf) {
                Ok(v) if is_jsonrpc_response(&v) => Ok(v),
                _ if !status.is_success() => Err(TransportError::Status {
                    status: status.as_u16(),
                    body: String::from_utf8_lossy(&buf[..buf.len().min(512)]).into_owned(),
                }),
                Ok(_) => Err(TransportError::InvalidResponse(
                    "the body is not a JSON-RPC response".into(),
                )),
                Err(e) => Err(TransportError::InvalidResponse(format!(
                    "the body is not JSON: {e}"
                ))),
            }
        }
    }

    /// After a `tools/call` of a tool whose declarations the transport does not
    /// know was refused with -32020 (perhaps for the `Mcp-Param-*` headers it
    /// could not send): lists the tools (at most [`RELIST_PAGES`] pages, with
    /// the call's `_meta`) and says whether the tool now has declarations, so
    /// the call is worth sending once more (the recovery Streamable HTTP §Client
    /// Behavior suggests). A failed listing is no error: the refusal stands.
    async fn relist_for(&self, call: &Value, reply: &Value) -> bool {
        let refused = reply
            .pointer("/error/code")
            .and_then(Value::as_i64)
            .is_some_and(|c| c == mrtr::error::code::HEADER_MISMATCH);
        let tool = call.pointer("/params/name").and_then(Value::as_str);
        let (true, Some(tool)) = (refused, tool) else {
            return false;
        };
        if self.knows(tool) {
            return false;
        }
        let mut params = serde_json::Map::new();
        if let Some(meta) = call.pointer("/params/_meta") {
            params.insert("_meta".into(), meta.clone());
        }
        let id = call.get("id").cloned().unwrap_or(Value::Null);
        for _ in 0..RELIST_PAGES {
            let list = serde_json::json!({
                "jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params,
            });
            let Ok(mut page) = self.exchange(&list).await else {
                return false;
            };
            self.learn_tools(&mut page);
            if self.knows(tool) {
                return true;
            }
            match page.pointer("/result/nextCursor").and_then(Value::as_str) {
                Some(cursor) => params.insert("cursor".into(), cursor.into()),
                None => return false,
            };
        }
        false
    }

    /// Whether the transport knows `tool`'s `x-mcp-header` declarations.
    fn knows(&self, tool: &str) -> bool {
        self.param_headers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(tool)
    }

    /// Reads the `x-mcp-header` declarations of the tools a `tools/list` reply
    /// lists (MCP 2026-07-28, Streamable HTTP §Custom Headers from Tool
    /// Parameters), so later calls send their `Mcp-Param-*` headers; a tool whose
    /// declarations break the rules is left out of the reply, with a warning
    /// naming it (the client MUST exclude it).
    fn learn_tools(&self, reply: &mut Value) {
        let Some(tools) = reply
            .get_mut("result")
            .and_then(|r| r.get_mut("tools"))
            .and_then(Value::as_array_mut)
        else {
            return;
        };
        let mut known = self
            .param_headers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        tools.retain(|tool| {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                return true;
            };
            let declared = tool.get("inputSchema").map(ParamHeaders::from_input_schema);
            match declared {
                Some(Ok(Some(d))) => {
                    known.insert(name.to_owned(), d);
                    true
                }
                Some(Err(e)) => {
                    known.remove(name);
                    tracing::warn!(
                        tool = %name.escape_debug(),
                        reason = %e,
                        "tool left out: invalid x-mcp-header declaration"
                    );
                    false
                }
                _ => {
                    known.remove(name);
                    true
                }
            }
        });
    }
}

/// The HTTP header of a 2025-era session's id.
pub(crate) const HEADER_SESSION_ID: &str = "mcp-session-id";

/// Which generation's headers a request carries.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Wire<'a> {
    /// 2026-07-28: `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`.
    Modern,
    /// The 2025 era: `MCP-Protocol-Version` once negotiated, the session's id once given.
    Legacy {
        version: Option<&'a str>,
        session: Option<&'a str>,
    },
}

/// A whole (non-stream) body, at most [`MAX_RESPONSE_BYTES`].
pub(crate) async fn read_body(body: &mut hyper::body::Incoming) -> Result<Vec<u8>, TransportError> {
    let mut buf = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| TransportError::Connection(error_chain(&e)))?;
        if let Ok(chunk) = frame.into_data() {
            buf.extend_from_slice(&chunk);
            if buf.len() > MAX_RESPONSE_BYTES {
                return Err(TransportError::InvalidResponse(
                    "the response body is too large".into(),
                ));
            }
        }
    }
    Ok(buf)
}

/// A failed connection: [`TransportError::Tls`] when TLS refused it, else
/// [`TransportError::Connection`].
pub(crate) fn connect_error(e: &(dyn std::error::Error + 'static)) -> TransportError {
    match find_tls_error(e, 0) {
        Some(tls) => TransportError::Tls(tls_reason(tls)),
        None => TransportError::Connection(error_chain(e)),
    }
}

/// The rustls error under `e`, if any. It sits inside `io::Error`s (hyper-rustls
/// wraps tokio-rustls's `io::Error` in another), whose `source` skips the error
/// they wrap, so each is opened with `get_ref` as well as followed by `source`.
fn find_tls_error<'a>(
    e: &'a (dyn std::error::Error + 'static),
    depth: usize,
) -> Option<&'a rustls::Error> {
    if depth > 16 {
        return None;
    }
    if let Some(tls) = e.downcast_ref::<rustls::Error>() {
        return Some(tls);
    }
    let wrapped = e
        .downcast_ref::<std::io::Error>()
        .and_then(std::io::Error::get_ref)
        .map(|inner| inner as &(dyn std::error::Error + 'static));
    wrapped
        .and_then(|inner| find_tls_error(inner, depth + 1))
        .or_else(|| e.source().and_then(|s| find_tls_error(s, depth + 1)))
}

/// What a rustls error means for the person reading it.
fn tls_reason(e: &rustls::Error) -> String {
    let plain = match e {
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => {
            "the server's certificate is not signed by a trusted CA"
        }
        rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        ) => "the server's certificate is not for this host",
        rustls::Error::InvalidCertificate(
            CertificateError::Expired | CertificateError::ExpiredContext { .. },
        ) => "the server's certificate has expired",
        _ => return e.to_string(),
    };
    format!("{plain} ({e})")
}

pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s
}

pub(crate) fn is_jsonrpc_response(v: &Value) -> bool {
    v.as_object()
        .is_some_and(|o| o.contains_key("result") || o.contains_key("error"))
}

/// The event data if it is the response to `id` (or an error without an id).
pub(crate) fn response_for(data: &str, id: &Value) -> Option<Value> {
    let v: Value = serde_json::from_str(data).ok()?;
    if !is_jsonrpc_response(&v) {
        return None;
    }
    match v.get("id") {
        Some(got) if got == id => Some(v),
        None | Some(Value::Null) if v.get("error").is_some() => Some(v),
        _ => None,
    }
}

/// The 2025 era on this transport.
mod legacy;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_matching() {
        let id = Value::from(3);
        assert!(
            response_for(
                r#"{"jsonrpc":"2.0","method":"notifications/progress"}"#,
                &id
            )
            .is_none()
        );
        assert!(response_for(r#"{"jsonrpc":"2.0","id":2,"result":{}}"#, &id).is_none());
        assert!(response_for(r#"{"jsonrpc":"2.0","id":"3","result":{}}"#, &id).is_none());
        assert!(response_for(r#"{"jsonrpc":"2.0","id":3,"result":{}}"#, &id).is_some());
        assert!(
            response_for(
                r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"x"}}"#,
                &id
            )
            .is_some()
        );
    }

    #[test]
    fn only_http_and_https_urls() {
        for bad in [
            "ftp://x/",
            "/mcp",
            "ws://x/mcp",
            "mcp.example.com",
            "http:///mcp",
        ] {
            assert!(
                matches!(
                    HttpTransport::new(bad),
                    Err(TransportError::InvalidRequest(_))
                ),
                "{bad}"
            );
        }
        // No TLS configuration is read for plain http.
        let plain = HttpTransport::builder("http://127.0.0.1:1/mcp")
            .platform_roots(false)
            .build();
        assert!(plain.is_ok());
        // https with nothing to trust is refused before any connection.
        let nothing = HttpTransport::builder("https://127.0.0.1:1/mcp")
            .platform_roots(false)
            .build();
        assert!(
            matches!(nothing, Err(TransportError::Tls(_))),
            "{nothing:?}"
        );
    }

    #[test]
    fn bearer_challenges_are_read_without_echoing_free_text() {
        for (value, want) in [
            (r#"Bearer error="invalid_token""#, Some("invalid_token")),
            (
                r#"Bearer realm="mcp", error="invalid_token", error_description="expired""#,
                Some("invalid_token"),
            ),
            ("Bearer error=invalid_token", Some("invalid_token")),
            (
                r#"Basic realm="x", Bearer error="insufficient_scope""#,
                Some("insufficient_scope"),
            ),
            (r#"Basic error="invalid_token""#, None),
            ("Bearer", None),
            (
                r#"Bearer resource_metadata="https://x/.well-known/oauth-protected-resource""#,
                None,
            ),
            (r#"Bearer error="a \"quoted\" code""#, None),
            (r#"Bearer error="unterminated"#, None),
            ("", None),
        ] {
            let mut h = HeaderMap::new();
            h.insert(WWW_AUTHENTICATE, HeaderValue::from_str(value).unwrap());
            assert_eq!(Challenge::from_response(401, &h).error(), want, "{value}");
        }
        let mut h = HeaderMap::new();
        h.append(
            WWW_AUTHENTICATE,
            HeaderValue::from_static(
                r#"Bearer error="insufficient_scope", scope="mcp mcp:admin", resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/mcp""#,
            ),
        );
        let c = Challenge::from_response(403, &h);
        assert_eq!(c.status(), 403);
        assert_eq!(c.scope(), Some("mcp mcp:admin"));
        assert_eq!(
            c.resource_metadata(),
            Some("https://mcp.example/.well-known/oauth-protected-resource/mcp")
        );
        for bad in [
            r#"Bearer resource_metadata="javascript:alert(1)""#,
            r#"Bearer resource_metadata="https://x/a b""#,
            "Bearer resource_metadata=\"\"",
        ] {
            let mut h = HeaderMap::new();
            h.insert(WWW_AUTHENTICATE, HeaderValue::from_str(bad).unwrap());
            assert_eq!(
                Challenge::from_response(401, &h).resource_metadata(),
                None,
                "{bad}"
            );
        }
        assert_eq!(
            auth_param(r#"Bearer error="a \"quoted\" code""#, "bearer", "error").as_deref(),
            Some(r#"a "quoted" code"#)
        );
    }

    #[test]
    fn headers_are_checked_and_never_shown() {
        let b = || HttpTransport::builder("http://127.0.0.1:1/mcp");
        for own in [
            "Content-Type",
            "accept",
            "MCP-Protocol-Version",
            "mcp-method",
            "Mcp-Name",
            "Host",
            "content-length",
            "Transfer-Encoding",
            "connection",
            "Mcp-Param-Region",
        ] {
            match b().header(own, "x") {
                Err(TransportError::InvalidRequest(m)) => {
                    assert!(m.contains("transport's own"), "{own}: {m}")
                }
                other => panic!("{own}: {other:?}"),
            }
        }
        match b().header("bad name", "x") {
            Err(TransportError::InvalidRequest(m)) => {
                assert!(m.contains("not a header name"), "{m}")
            }
            other => panic!("{other:?}"),
        }
        match b().header("X-Api-Key", "s3cret\nline") {
            Err(TransportError::InvalidRequest(m)) => {
                assert!(m.contains("x-api-key") && !m.contains("s3cret"), "{m}");
            }
            other => panic!("{other:?}"),
        }
        match b().bearer(&BearerToken::new("s3cret\r\nline")) {
            Err(TransportError::InvalidRequest(m)) => assert!(!m.contains("s3cret"), "{m}"),
            other => panic!("{other:?}"),
        }
        let both = b()
            .header("Authorization", "Bearer a")
            .unwrap()
            .bearer(&BearerToken::new("b"))
            .unwrap()
            .build();
        assert!(
            matches!(both, Err(TransportError::InvalidRequest(_))),
            "{both:?}"
        );

        let t = b()
            .header("X-Api-Key", "s3cret-key")
            .unwrap()
            .bearer(&BearerToken::new("s3cret-token"))
            .unwrap()
            .build()
            .unwrap();
        let shown = format!("{t:?} {:?}", BearerToken::new("s3cret-token"));
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(
            shown.contains("x-api-key") && shown.contains("bearer token"),
            "{shown}"
        );
    }

    #[test]
    fn root_pem_errors_are_typed() {
        let b = || HttpTransport::builder("https://127.0.0.1:1/mcp");
        for (pem, says) in [
            (&b""[..], "no certificate"),
            (b"hello", "no certificate"),
            (
                b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
                "no certificate",
            ),
            (
                b"-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n",
                "not valid PEM",
            ),
            (
                b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
                "cannot be a root",
            ),
            (b"-----BEGIN CERTIFICATE-----\nAAAA\n", "not valid PEM"),
        ] {
            match b().add_root_pem(pem) {
                Err(TransportError::Tls(m)) => assert!(m.contains(says), "{m:?} for {pem:?}"),
                other => panic!("{other:?} for {pem:?}"),
            }
        }
    }

    #[test]
    fn listed_tools_get_their_parameter_headers_and_invalid_ones_are_left_out() {
        let t = HttpTransport::new("http://127.0.0.1:1/mcp").unwrap();
        let call = |tool: &str| {
            serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": tool, "arguments": {"region": "Zürich", "n": 7, "q": "x"}}})
        };
        let param_headers = |req: &Request<Full<Bytes>>| -> Vec<(String, String)> {
            req.headers()
                .iter()
                .filter(|(n, _)| n.as_str().starts_with("mcp-param-"))
                .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
                .collect()
        };
        // Not listed yet: no parameter headers.
        assert!(param_headers(&t.build(&call("query"), None, Wire::Modern).unwrap()).is_empty());
        let mut reply = serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [
            {"name": "query", "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "n": {"type": "integer", "x-mcp-header": "N"},
                "q": {"type": "string"},
            }}},
            {"name": "bad", "inputSchema": {"type": "object", "properties": {
                "v": {"type": "number", "x-mcp-header": "V"},
            }}},
            {"name": "plain", "inputSchema": {"type": "object"}},
        ]}});
        t.learn_tools(&mut reply);
        let names: Vec<_> = reply["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["query", "plain"]);
        assert_eq!(
            param_headers(&t.build(&call("query"), None, Wire::Modern).unwrap()),
            [
                (
                    "mcp-param-region".to_owned(),
                    "=?base64?WsO8cmljaA==?=".to_owned()
                ),
                ("mcp-param-n".to_owned(), "7".to_owned()),
            ]
        );
        assert!(param_headers(&t.build(&call("plain"), None, Wire::Modern).unwrap()).is_empty());
        // A clone shares what was learned; a later listing without the
        // declarations forgets them.
        let clone = t.clone();
        assert_eq!(
            param_headers(&clone.build(&call("query"), None, Wire::Modern).unwrap()).len(),
            2
        );
        let mut relisted = serde_json::json!({"result": {"tools": [
            {"name": "query", "inputSchema": {"type": "object"}},
        ]}});
        t.learn_tools(&mut relisted);
        assert!(
            param_headers(&clone.build(&call("query"), None, Wire::Modern).unwrap()).is_empty()
        );
    }
}
