//! [`HttpClient`]: one request at a time to the documents and endpoints around an
//! MCP server (OAuth metadata, JWKS, token and registration endpoints), with the
//! same TLS as [`HttpTransport`](crate::HttpTransport) (feature `http`).
//!
//! It follows no redirect, reads at most [`MAX_FETCH_BYTES`] of a body, and gives
//! up after [`FETCH_TIMEOUT`]: the documents it fetches are small, and a server
//! that sends more is refused rather than buffered.

use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{ACCEPT, HeaderValue};
use hyper::{Request, Response, Uri};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rustls::RootCertStore;
use serde_json::Value;

use crate::TransportError;

/// The largest body [`HttpClient`] reads (bytes).
pub const MAX_FETCH_BYTES: usize = 256 * 1024;

/// How long [`HttpClient`] waits for one whole response.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(20);

/// A small HTTP(S) client for metadata documents and OAuth endpoints.
///
/// Cheap to clone (the connection pool is shared). Needs a tokio runtime.
///
/// ```no_run
/// # async fn run() -> Result<(), mrtr_client::TransportError> {
/// let client = mrtr_client::HttpClient::new()?;
/// let metadata = client
///     .get_json("https://auth.example/.well-known/oauth-authorization-server")
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct HttpClient {
    client: HyperClient<HttpsConnector<HttpConnector>, Full<Bytes>>,
}

impl fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClient").finish_non_exhaustive()
    }
}

/// Builds an [`HttpClient`]: which roots of trust `https://` uses.
#[derive(Debug, Clone)]
#[must_use]
pub struct HttpClientBuilder {
    added_roots: RootCertStore,
    platform_roots: bool,
}

impl HttpClientBuilder {
    /// Also trusts the CA certificates in `pem` (one or more `CERTIFICATE` blocks).
    ///
    /// # Errors
    /// [`TransportError::Tls`] when `pem` holds no certificate rustls accepts.
    pub fn add_root_pem(mut self, pem: &[u8]) -> Result<Self, TransportError> {
        crate::http::add_roots(&mut self.added_roots, pem)?;
        Ok(self)
    }

    /// Whether the system's CA certificates are trusted too (default: yes).
    pub fn platform_roots(mut self, trust: bool) -> Self {
        self.platform_roots = trust;
        self
    }

    /// The client. An `https://` request fails with [`TransportError::Tls`] when
    /// no root of trust is left; `http://` always works.
    ///
    /// # Errors
    /// [`TransportError::Tls`] when rustls refuses the configuration.
    pub fn build(self) -> Result<HttpClient, TransportError> {
        let connector = crate::http::connector(self.added_roots, self.platform_roots, false)?;
        Ok(HttpClient {
            client: HyperClient::builder(TokioExecutor::new()).build(connector),
        })
    }
}

impl HttpClient {
    /// A client trusting the system's CA certificates.
    ///
    /// # Errors
    /// As [`HttpClientBuilder::build`].
    pub fn new() -> Result<Self, TransportError> {
        Self::builder().build()
    }

    /// A builder, to add a private CA.
    pub fn builder() -> HttpClientBuilder {
        HttpClientBuilder {
            added_roots: RootCertStore::empty(),
            platform_roots: true,
        }
    }

    /// Sends `request` and reads the whole response (at most
    /// [`MAX_FETCH_BYTES`], within [`FETCH_TIMEOUT`]), whatever its status.
    ///
    /// # Errors
    /// [`TransportError::InvalidRequest`] for a URL that is not `http(s)://`,
    /// [`TransportError::Connection`] or [`TransportError::Tls`] when the server
    /// cannot be reached or no whole response came within [`FETCH_TIMEOUT`],
    /// [`TransportError::InvalidResponse`] for a body over the limit.
    pub async fn send(
        &self,
        request: Request<Vec<u8>>,
    ) -> Result<Response<Vec<u8>>, TransportError> {
        match request.uri().scheme_str() {
            Some("http" | "https") if request.uri().host().is_some() => {}
            _ => {
                return Err(TransportError::InvalidRequest(format!(
                    "not an http:// or https:// URL: {}",
                    request.uri()
                )));
            }
        }
        let (parts, body) = request.into_parts();
        let request = Request::from_parts(parts, Full::new(Bytes::from(body)));
        let work = async {
            let resp = self
                .client
                .request(request)
                .await
                .map_err(|e| crate::http::connect_error(&e))?;
            let (parts, body) = resp.into_parts();
            let body = Limited::new(body, MAX_FETCH_BYTES)
                .collect()
                .await
                .map_err(|_| {
                    TransportError::InvalidResponse(format!(
                        "the response is larger than {MAX_FETCH_BYTES} bytes, or broke off"
                    ))
                })?
                .to_bytes();
            Ok(Response::from_parts(parts, body.to_vec()))
        };
        tokio::time::timeout(FETCH_TIMEOUT, work)
            .await
            .map_err(|_| {
                TransportError::Connection(format!(
                    "no whole response within {} s",
                    FETCH_TIMEOUT.as_secs()
                ))
            })?
    }

    /// `GET url` with `Accept: application/json`; the body of a `200` as JSON.
    ///
    /// # Errors
    /// As [`send`](Self::send); [`TransportError::Status`] for any other status
    /// (its body cut to 256 bytes); [`TransportError::InvalidResponse`] for a body
    /// that is not JSON.
    pub async fn get_json(&self, url: &str) -> Result<Value, TransportError> {
        let uri: Uri = url
            .parse()
            .map_err(|_| TransportError::InvalidRequest(format!("not a URL: {url:?}")))?;
        let mut request = Request::get(uri)
            .body(Vec::new())
            .map_err(|e| TransportError::InvalidRequest(e.to_string()))?;
        request
            .headers_mut()
            .insert(ACCEPT, HeaderValue::from_static("application/json"));
        let resp = self.send(request).await?;
        json_body(resp)
    }
}

/// `https://host:port` and the path after it, without a trailing `/`, query or
/// fragment (empty for the root): what OAuth's well-known locations are built
/// from.
///
/// ```
/// assert_eq!(
///     mrtr_client::fetch::split_origin("https://a.example/tenant/?x"),
///     ("https://a.example", "/tenant")
/// );
/// ```
pub fn split_origin(url: &str) -> (&str, &str) {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let end = url[after_scheme..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| after_scheme + i);
    let path = url[end..].split(['?', '#']).next().unwrap_or("");
    (&url[..end], path.trim_end_matches('/'))
}

/// Where the metadata of the authorization server `issuer` is, in the order to
/// try: RFC 8414 section 3.1 (the well-known path inserted before the issuer's
/// path), then OpenID Connect discovery (appended to it, then inserted).
pub fn issuer_metadata_urls(issuer: &str) -> Vec<String> {
    let (origin, path) = split_origin(issuer);
    let mut urls = vec![
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!(
            "{}/.well-known/openid-configuration",
            issuer.trim_end_matches('/')
        ),
    ];
    if !path.is_empty() {
        urls.push(format!("{origin}/.well-known/openid-configuration{path}"));
    }
    urls
}

impl HttpClient {
    /// The metadata document of the authorization server `issuer`, from the
    /// first of [`issuer_metadata_urls`] that answers with JSON. The caller
    /// checks that it names `issuer` (RFC 8414 section 3.3).
    ///
    /// # Errors
    /// The last location's error, when none answers.
    pub async fn issuer_metadata(&self, issuer: &str) -> Result<Value, TransportError> {
        let mut last = None;
        for url in issuer_metadata_urls(issuer) {
            match self.get_json(&url).await {
                Ok(doc) => return Ok(doc),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| TransportError::InvalidRequest("no metadata location".into())))
    }
}

/// Which URLs may be fetched on behalf of a URL the user named: the one rule for
/// every document and endpoint that OAuth discovers (the MCP client's metadata,
/// authorization, token and registration endpoints; the resource server's
/// JWKS).
///
/// A discovered URL is chosen by a server, so it may point anywhere, the user's
/// own machine included. The policy allows:
/// - `https://` on any host that is not loopback;
/// - `https://` on a loopback host only when the user named a loopback URL;
/// - plain `http://` only to the origin (scheme, host and port) of a URL the user
///   named, and only when that is on a loopback host (a local test server);
/// - with [`any_loopback_http`](Self::any_loopback_http), plain `http://` to any
///   port of a loopback host (local testing with several servers).
///
/// A loopback host is `localhost` or a loopback IP literal; a name that merely
/// resolves to one counts as remote (so it gets no plain `http://`).
///
/// ```
/// use mrtr_client::fetch::UrlPolicy;
///
/// let local = UrlPolicy::new().named("http://127.0.0.1:8080/mcp");
/// assert!(local.allows("http://127.0.0.1:8080/.well-known/openid-configuration"));
/// assert!(!local.allows("http://127.0.0.1:6379/admin"));
/// assert!(local.allows("https://auth.example/token"));
///
/// let remote = UrlPolicy::new().named("https://mcp.example/mcp");
/// assert!(!remote.allows("http://127.0.0.1:8080/admin"));
/// assert!(!remote.allows("https://127.0.0.1:8443/admin"));
/// assert!(!remote.allows("http://auth.example/token"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[must_use]
pub struct UrlPolicy {
    /// Origins (lower case) that may be fetched over plain http.
    http_origins: Vec<String>,
    /// Whether https on a loopback host is allowed (a loopback URL was named).
    loopback_https: bool,
    /// Whether plain http to any loopback port is allowed.
    any_loopback_http: bool,
}

/// Why [`UrlPolicy::check`] refused a URL. Its text names what was refused and
/// the URL's scheme and host, never its path or query.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} ({origin}) is refused: {why}")]
pub struct UrlRefused {
    what: String,
    origin: String,
    why: &'static str,
}

impl UrlPolicy {
    /// `https://` to hosts that are not loopback, and nothing else.
    pub fn new() -> Self {
        Self::default()
    }

    /// Also what `url`, a URL the user named (the MCP server, an expected
    /// issuer), opens: its own origin over plain http when that is a loopback
    /// host, and https on loopback hosts when it is on one.
    pub fn named(mut self, url: &str) -> Self {
        if let Some(parsed) = Parsed::of(url)
            && parsed.loopback
        {
            self.loopback_https = true;
            if parsed.scheme == "http" {
                self.http_origins.push(parsed.origin);
            }
        }
        self
    }

    /// Also plain `http://` to any port of a loopback host: for local testing,
    /// where the MCP server and its authorization server run on separate ports.
    /// Off by default.
    pub fn any_loopback_http(mut self, allow: bool) -> Self {
        self.any_loopback_http = allow;
        if allow {
            self.loopback_https = true;
        }
        self
    }

    /// Whether `url` may be fetched.
    pub fn allows(&self, url: &str) -> bool {
        self.check(url, "the URL").is_ok()
    }

    /// `Ok` when `url` may be fetched; else why not, naming it as `what`
    /// ("the authorization server's token_endpoint").
    ///
    /// # Errors
    /// [`UrlRefused`] when the policy does not allow `url`.
    pub fn check(&self, url: &str, what: &str) -> Result<(), UrlRefused> {
        let refused = |origin: &str, why| UrlRefused {
            what: what.to_owned(),
            origin: origin.to_owned(),
            why,
        };
        let Some(p) = Parsed::of(url) else {
            return Err(refused("?", "not an absolute http:// or https:// URL"));
        };
        match (p.scheme, p.loopback) {
            ("https", false) => Ok(()),
            ("https", true) if self.loopback_https => Ok(()),
            ("https", true) => Err(refused(
                &p.origin,
                "a loopback address, and the server named is not on this machine",
            )),
            (_, true) if self.any_loopback_http || self.http_origins.contains(&p.origin) => Ok(()),
            (_, true) => Err(refused(
                &p.origin,
                "plain http:// to another address of this machine than the one named \
                 (allow it for local testing only)",
            )),
            _ => Err(refused(
                &p.origin,
                "plain http:// to a remote host (use https://)",
            )),
        }
    }
}

/// The parts of an absolute http(s) URL that [`UrlPolicy`] judges.
struct Parsed {
    scheme: &'static str,
    /// `scheme://host:port`, lower case, the default port left out.
    origin: String,
    loopback: bool,
}

impl Parsed {
    fn of(url: &str) -> Option<Self> {
        let uri: Uri = url.parse().ok()?;
        let scheme = match uri.scheme_str()? {
            s if s.eq_ignore_ascii_case("https") => "https",
            s if s.eq_ignore_ascii_case("http") => "http",
            _ => return None,
        };
        let authority = uri.authority()?;
        if authority.as_str().contains('@') {
            // Credentials in the URL: never followed.
            return None;
        }
        let host = authority.host().to_ascii_lowercase();
        let default = if scheme == "https" { 443 } else { 80 };
        let port = authority.port_u16().unwrap_or(default);
        let origin = if port == default {
            format!("{scheme}://{host}")
        } else {
            format!("{scheme}://{host}:{port}")
        };
        Some(Self {
            scheme,
            origin,
            loopback: is_loopback_host(&host),
        })
    }
}

/// Whether `host` (as it appears in a URL, IPv6 in brackets) is `localhost` or
/// a loopback IP literal.
pub(crate) fn is_loopback_host(host: &str) -> bool {
    let host = host.trim_end_matches('.');
    host.eq_ignore_ascii_case("localhost")
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The JSON body of a `200` (or `201`) response.
pub(crate) fn json_body(resp: Response<Vec<u8>>) -> Result<Value, TransportError> {
    let status = resp.status();
    let body = resp.into_body();
    if !status.is_success() {
        return Err(TransportError::Status {
            status: status.as_u16(),
            body: String::from_utf8_lossy(&body[..body.len().min(256)]).into_owned(),
        });
    }
    serde_json::from_slice(&body)
        .map_err(|e| TransportError::InvalidResponse(format!("the body is not JSON: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_locations_follow_rfc_8414_then_openid_discovery() {
        assert_eq!(
            split_origin("https://a.example/mcp/"),
            ("https://a.example", "/mcp")
        );
        assert_eq!(
            split_origin("http://127.0.0.1:8/"),
            ("http://127.0.0.1:8", "")
        );
        assert_eq!(split_origin("https://a.example"), ("https://a.example", ""));
        assert_eq!(
            issuer_metadata_urls("https://a.example/tenant"),
            [
                "https://a.example/.well-known/oauth-authorization-server/tenant",
                "https://a.example/tenant/.well-known/openid-configuration",
                "https://a.example/.well-known/openid-configuration/tenant",
            ]
        );
        assert_eq!(
            issuer_metadata_urls("https://a.example"),
            [
                "https://a.example/.well-known/oauth-authorization-server",
                "https://a.example/.well-known/openid-configuration",
            ]
        );
    }

    #[tokio::test]
    async fn refuses_what_is_not_an_http_url() {
        let c = HttpClient::builder().platform_roots(false).build().unwrap();
        for url in ["ftp://x/a", "/relative", "file:///etc/passwd"] {
            let e = c.get_json(url).await.unwrap_err();
            assert!(
                matches!(e, TransportError::InvalidRequest(_)),
                "{url}: {e:?}"
            );
        }
    }

    #[test]
    fn the_url_policy_opens_only_what_the_user_named() {
        let https = UrlPolicy::new();
        assert!(https.allows("https://auth.example/x"));
        assert!(https.allows("HTTPS://Auth.Example:8443/x"));
        for refused in [
            "http://auth.example/token",
            "http://127.0.0.1:9000/token",
            "https://127.0.0.1:9000/token",
            "https://localhost/token",
            "https://[::1]:8/token",
            "http://localhost./x",
            "javascript:alert(1)",
            "/relative",
            "https://user:pw@auth.example/x",
            "ftp://auth.example/x",
        ] {
            assert!(!https.allows(refused), "{refused}");
        }
        // A loopback MCP server opens its own origin, and https on loopback.
        let local = UrlPolicy::new().named("http://127.0.0.1:8080/mcp");
        assert!(local.allows("http://127.0.0.1:8080/.well-known/x?y"));
        assert!(local.allows("https://127.0.0.1:9443/x"));
        assert!(!local.allows("http://127.0.0.1:8081/x"));
        assert!(!local.allows("http://localhost:8080/x"));
        assert!(!local.allows("http://auth.example/x"));
        // The default port is the same origin written either way.
        let default_port = UrlPolicy::new().named("http://localhost/mcp");
        assert!(default_port.allows("http://localhost:80/x"));
        assert!(default_port.allows("http://LOCALHOST/x"));
        // A name that resolves to loopback is remote: no plain http.
        let hex = UrlPolicy::new().named("http://0x7f000001:8080/mcp");
        assert!(!hex.allows("http://0x7f000001:8080/x"));
        // A remote https server opens nothing on this machine.
        let remote = UrlPolicy::new().named("https://mcp.example/mcp");
        assert_eq!(remote, UrlPolicy::new());
        // The explicit opening for local tests: any loopback port, never remote.
        let tests = UrlPolicy::new().any_loopback_http(true);
        assert!(tests.allows("http://127.0.0.1:1/x"));
        assert!(tests.allows("http://[::1]:2/x"));
        assert!(!tests.allows("http://auth.example/x"));
        let e = remote
            .check("http://127.0.0.1:6379/admin?op=wipe", "the token_endpoint")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("the token_endpoint (http://127.0.0.1:6379) is refused"),
            "{e}"
        );
        assert!(!e.contains("admin") && !e.contains("wipe"), "{e}");
    }
}
