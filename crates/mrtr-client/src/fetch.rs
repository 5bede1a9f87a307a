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

use mrtr::client::TransportError;

/// The largest body [`HttpClient`] reads (bytes).
pub const MAX_FETCH_BYTES: usize = 256 * 1024;

/// How long [`HttpClient`] waits for one whole response.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(20);

/// A small HTTP(S) client for metadata documents and OAuth endpoints.
///
/// Cheap to clone (the connection pool is shared). Needs a tokio runtime.
///
/// ```no_run
/// # async fn run() -> Result<(), mrtr::client::TransportError> {
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
}
