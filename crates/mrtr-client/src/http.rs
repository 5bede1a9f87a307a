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

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use hyper::{Request, Uri};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use rustls::{CertificateError, RootCertStore};
use serde_json::Value;

use mrtr::client::{BoxFuture, Timer, Transport, TransportError};
use mrtr::streamable_http::{self, Framing, McpHeaders, SseParser};
use mrtr::wire::PROTOCOL_VERSION;

/// The largest response body read, JSON or SSE (bytes).
pub const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// A Streamable HTTP transport to one MCP endpoint (e.g. `http://127.0.0.1:8080/mcp`
/// or `https://mcp.example.com/mcp`).
///
/// Needs a tokio runtime. Cheap to share: the connection pool is inside.
///
/// ```no_run
/// # fn main() -> Result<(), mrtr::client::TransportError> {
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
#[derive(Debug, Clone)]
pub struct HttpTransport {
    client: HyperClient<HttpsConnector<HttpConnector>, Full<Bytes>>,
    uri: Uri,
}

/// Builds an [`HttpTransport`]: which roots of trust `https://` uses.
#[derive(Debug, Clone)]
pub struct HttpTransportBuilder {
    url: String,
    added_roots: RootCertStore,
    platform_roots: bool,
}

impl HttpTransportBuilder {
    /// Trusts the CA certificates in `pem` as well (PEM text: one or more
    /// `CERTIFICATE` blocks; other blocks, such as keys, are skipped), e.g. the CA of
    /// a private deployment. Each is a root of trust: a server certificate that
    /// chains to it is accepted for the names it holds.
    ///
    /// # Errors
    /// [`TransportError::Tls`] when `pem` holds no certificate, a block that is
    /// not valid PEM, or a certificate that cannot be a root (not DER X.509).
    pub fn add_root_pem(mut self, pem: &[u8]) -> Result<Self, TransportError> {
        let mut added = 0usize;
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|e| TransportError::Tls(format!("not valid PEM: {e}")))?;
            self.added_roots.add(cert).map_err(|e| {
                TransportError::Tls(format!("certificate {} cannot be a root: {e}", added + 1))
            })?;
            added += 1;
        }
        if added == 0 {
            return Err(TransportError::Tls(
                "no certificate in the PEM data (a -----BEGIN CERTIFICATE----- block)".into(),
            ));
        }
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
    /// `http://` or `https://` URL with a host; [`TransportError::Tls`] for an
    /// `https://` URL when no root of trust is left (the system has no CA
    /// certificates and none was added).
    pub fn build(self) -> Result<HttpTransport, TransportError> {
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
        let mut roots = self.added_roots;
        // Plain http never reads the system's certificates (the transport posts to
        // its one URL and follows no redirect, so no TLS connection is ever made).
        if https && self.platform_roots {
            let native = rustls_native_certs::load_native_certs();
            let (found, _unusable) = roots.add_parsable_certificates(native.certs);
            if found == 0 && roots.is_empty() {
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
        if https && roots.is_empty() {
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
        let connector = HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .build();
        let client = HyperClient::builder(TokioExecutor::new()).build(connector);
        Ok(HttpTransport { client, uri })
    }
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
        }
    }

    /// The endpoint.
    pub fn uri(&self) -> &Uri {
        &self.uri
    }

    fn build(&self, request: &Value) -> Result<Request<Full<Bytes>>, TransportError> {
        let headers = McpHeaders::for_request(request, PROTOCOL_VERSION);
        let mut b = Request::post(self.uri.clone())
            .header(CONTENT_TYPE, streamable_http::JSON)
            .header(ACCEPT, streamable_http::ACCEPT_JSON_AND_EVENT_STREAM);
        for (name, value) in headers.pairs() {
            b = b.header(name, header_value(name, value)?);
        }
        let body = serde_json::to_vec(request)
            .map_err(|e| TransportError::InvalidRequest(e.to_string()))?;
        b.body(Full::new(Bytes::from(body)))
            .map_err(|e| TransportError::InvalidRequest(e.to_string()))
    }
}

fn header_value(name: &str, v: &str) -> Result<HeaderValue, TransportError> {
    HeaderValue::from_str(v).map_err(|_| {
        TransportError::InvalidRequest(format!("the {name} header cannot carry this value"))
    })
}

impl Transport for HttpTransport {
    /// Tokio's timer ([`TokioTimer`](crate::TokioTimer)): this transport runs on tokio.
    fn timer(&self) -> Option<std::sync::Arc<dyn Timer>> {
        Some(std::sync::Arc::new(crate::TokioTimer))
    }

    fn send(&self, request: Value) -> BoxFuture<'_, Result<Value, TransportError>> {
        Box::pin(async move {
            let id = request.get("id").cloned().unwrap_or(Value::Null);
            let req = self.build(&request)?;
            let resp = self
                .client
                .request(req)
                .await
                .map_err(|e| connect_error(&e))?;
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
        })
    }
}

/// A failed connection: [`TransportError::Tls`] when TLS refused it, else
/// [`TransportError::Connection`].
fn connect_error(e: &(dyn std::error::Error + 'static)) -> TransportError {
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

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s
}

fn is_jsonrpc_response(v: &Value) -> bool {
    v.as_object()
        .is_some_and(|o| o.contains_key("result") || o.contains_key("error"))
}

/// The event data if it is the response to `id` (or an error without an id).
fn response_for(data: &str, id: &Value) -> Option<Value> {
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
}
