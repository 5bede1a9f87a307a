//! `GET /metrics` on a listener of its own (`mrtr serve --metrics-listen ADDR`).
//!
//! The metrics never share the MCP port: the MCP endpoint faces clients, the
//! metrics face the operator (they hold the private rejection reasons, see
//! [`mrtr::metrics`]). This listener serves the text an installed recorder
//! renders and nothing else: `GET /metrics` (and `HEAD`), 405 for other methods
//! there, 404 on every other path. The application installs the recorder; the
//! library only serves what it renders.
//!
//! It runs the MCP listener's hardened accept loop ([`http::serve_with`]) with
//! limits of its own: at most [`crate::defaults::METRICS_MAX_CONNECTIONS`] connections
//! (a scraper needs one), and [`crate::defaults::METRICS_TIMEOUT`] for a head and for
//! idleness. [`METRICS_RESERVED_DESCRIPTORS`] is what the MCP listener leaves out of its
//! share of the open-file limit for it, so idle connections here can never use
//! up the descriptors the MCP listener counts on.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

use crate::http;

/// The path of the scrape endpoint.
pub const METRICS_PATH: &str = "/metrics";

/// The content type of the Prometheus text exposition format.
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// What renders the exposition text on each scrape.
type Render = Arc<dyn Fn() -> String + Send + Sync>;

/// Where `mrtr serve` serves metrics, and what it serves: the address of a
/// listener of its own, and a function rendering the Prometheus text exposition
/// of the recorder the application installed (for the Prometheus exporter,
/// `move || handle.render()`).
///
/// ```
/// use mrtr_server::MetricsEndpoint;
/// let endpoint = MetricsEndpoint::new("127.0.0.1:9464".parse().unwrap(), || {
///     "# TYPE up gauge\nup 1\n".to_owned()
/// });
/// assert_eq!(endpoint.listen().port(), 9464);
/// ```
#[derive(Clone)]
pub struct MetricsEndpoint {
    listen: SocketAddr,
    render: Render,
}

impl MetricsEndpoint {
    /// Binds the endpoint's listener, logs its address, and serves it on a task of
    /// its own (on the current tokio runtime) until the returned listener is dropped.
    ///
    /// # Errors
    /// The I/O error if the address cannot be bound.
    pub async fn start(&self) -> std::io::Result<MetricsListener> {
        let listener = tokio::net::TcpListener::bind(self.listen).await?;
        let local = listener.local_addr()?;
        if !local.ip().is_loopback() {
            tracing::info!(
                %local,
                "metrics on a non-loopback address: they show the private requestState \
                 rejection reasons; let only the scraper reach it"
            );
        }
        tracing::info!(metrics_addr = %local, "metrics on http://{local}{METRICS_PATH}");
        let app = router(Arc::clone(&self.render));
        let task = tokio::spawn(async move {
            let forever = std::future::pending::<()>();
            if let Err(e) = http::serve_with(listener, app, serve_options(), forever).await {
                tracing::error!(error = %e, "metrics listener stopped");
            }
        });
        Ok(MetricsListener { local, task })
    }

    /// An endpoint on `listen` (port 0 picks a free port; the bound address is
    /// logged as `metrics on http://ADDR/metrics`) serving what `render` returns.
    pub fn new(listen: SocketAddr, render: impl Fn() -> String + Send + Sync + 'static) -> Self {
        Self {
            listen,
            render: Arc::new(render),
        }
    }

    /// The address to listen on.
    pub fn listen(&self) -> SocketAddr {
        self.listen
    }
}

impl fmt::Debug for MetricsEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetricsEndpoint")
            .field("listen", &self.listen)
            .finish_non_exhaustive()
    }
}

/// The scrape router: `GET /metrics`, 404 elsewhere.
fn router(render: Render) -> Router {
    let scrape = move || {
        let render = Arc::clone(&render);
        async move {
            let mut resp = render().into_response();
            resp.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(TEXT_FORMAT));
            resp
        }
    };
    Router::new()
        .route(METRICS_PATH, get(scrape))
        .fallback(|| async { StatusCode::NOT_FOUND })
}

/// The descriptors the metrics listener may hold: its connection cap and its
/// listening socket. An MCP listener beside it reserves them
/// ([`http::ServeOptions::with_reserve_descriptors`]).
pub const METRICS_RESERVED_DESCRIPTORS: u64 = crate::defaults::METRICS_MAX_CONNECTIONS as u64 + 1;

/// The accept loop's limits for the metrics listener.
fn serve_options() -> http::ServeOptions {
    http::ServeOptions::default()
        .with_max_connections(crate::defaults::METRICS_MAX_CONNECTIONS)
        .with_max_connections_per_peer(crate::defaults::METRICS_MAX_CONNECTIONS)
        .with_header_read_timeout(crate::defaults::METRICS_TIMEOUT)
        .with_idle_timeout(crate::defaults::METRICS_TIMEOUT)
}

/// The running scrape listener ([`MetricsEndpoint::start`]): stopped when dropped.
#[derive(Debug)]
#[must_use = "the listener stops when this is dropped"]
pub struct MetricsListener {
    local: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl MetricsListener {
    /// The address the listener is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }
}

impl Drop for MetricsListener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    use super::*;

    /// One HTTP/1.1 request without a body; the raw response.
    async fn raw(addr: SocketAddr, method: &str, path: &str) -> String {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let req = format!("{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        s.write_all(req.as_bytes()).await.unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn serves_the_rendered_text_on_get_metrics_only() {
        let endpoint = MetricsEndpoint::new("127.0.0.1:0".parse().unwrap(), || {
            "mrtr_requests_total 3\n".to_owned()
        });
        let running = endpoint.start().await.unwrap();
        let addr = running.local_addr();
        assert!(addr.ip().is_loopback() && addr.port() != 0, "{addr}");
        let ok = raw(addr, "GET", "/metrics").await;
        assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
        assert!(
            ok.to_ascii_lowercase()
                .contains(&format!("content-type: {TEXT_FORMAT}")),
            "{ok}"
        );
        assert!(ok.ends_with("\r\n\r\nmrtr_requests_total 3\n"), "{ok}");
        for path in ["/", "/mcp", "/metrics/", "/metricsx"] {
            let r = raw(addr, "GET", path).await;
            assert!(r.starts_with("HTTP/1.1 404"), "{path}: {r}");
        }
        let r = raw(addr, "POST", "/metrics").await;
        assert!(r.starts_with("HTTP/1.1 405"), "{r}");
        drop(running);
    }

    #[tokio::test]
    async fn idle_connections_are_capped_and_closed_after_the_short_timeout() {
        let endpoint = MetricsEndpoint::new("127.0.0.1:0".parse().unwrap(), String::new);
        let running = endpoint.start().await.unwrap();
        let addr = running.local_addr();
        let mut idle = Vec::new();
        for _ in 0..crate::defaults::METRICS_MAX_CONNECTIONS {
            idle.push(tokio::net::TcpStream::connect(addr).await.unwrap());
        }
        // At the cap, a scrape still gets in: the longest-waiting idle one goes.
        let ok = raw(addr, "GET", "/metrics").await;
        assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
        // Past the timeout every idle connection has been closed by the server.
        tokio::time::sleep(crate::defaults::METRICS_TIMEOUT).await;
        for mut c in idle {
            let mut buf = [0u8; 1];
            let n = tokio::time::timeout(std::time::Duration::from_secs(3), c.read(&mut buf))
                .await
                .expect("closed, not left open")
                .unwrap_or(0);
            assert_eq!(n, 0, "an idle metrics connection stayed open");
        }
        drop(running);
    }

    #[test]
    fn debug_shows_the_address_only() {
        let e = MetricsEndpoint::new("127.0.0.1:9464".parse().unwrap(), String::new);
        assert_eq!(
            format!("{e:?}"),
            "MetricsEndpoint { listen: 127.0.0.1:9464, .. }"
        );
    }
}
