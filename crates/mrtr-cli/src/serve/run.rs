//! The process of `mrtr serve`: signals, SIGHUP key reload, the metrics
//! listener, and the stdio or HTTP transport of `mrtr-server` around the
//! service.

use std::sync::Arc;

use mrtr::engine::Engine;
use mrtr::principal::Principal;
use mrtr::service::Service;
use mrtr_server::keys::{KEYS_ENV, KeySource};
use mrtr_server::{ServerConfigError, http, stdio};

use super::config::{OAuthSettings, PrincipalConfig, ServeConfig};
use super::replay_store::{self, ReplayStore};
use super::{build_service, reload, shutdown};

/// Why `mrtr serve` stopped with an error.
///
/// Not library API: the `mrtr` binary's, which may change in any release.
#[doc(hidden)]
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The configuration is unusable (exit code 2).
    #[error(transparent)]
    Config(#[from] ServerConfigError),
    /// An I/O failure while serving, e.g. the listen address is taken (exit code 1).
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: &'static str,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

/// Not library API (the `mrtr` binary's, which may change in any release).
///
/// Runs the server until EOF (stdio) or SIGINT/SIGTERM (HTTP), with the service
/// [`build_service`] makes from `cfg` and `make`. On SIGHUP (Unix) it re-reads
/// `--keys-file` and swaps the new ring in
/// ([`reload_keys`](super::reload_keys)); a file that does not parse leaves
/// the ring as it was.
///
/// Logging should already be set up (a `tracing` subscriber; the `mrtr` binary
/// installs one): the transports write one line per request through `tracing`.
///
/// # Errors
/// [`ServeError::Config`] for unusable settings, [`ServeError::Io`] if the
/// listener cannot be bound or stdio fails.
#[doc(hidden)]
pub async fn serve<F>(cfg: ServeConfig, make: F) -> Result<(), ServeError>
where
    F: FnOnce(Engine) -> Service,
{
    if cfg.keys == KeySource::Ephemeral {
        tracing::warn!(
            "no keys configured: using an ephemeral key for this process only; \
             a fleet (several instances, or restarts during a flow) needs a shared key \
             via {KEYS_ENV} or --keys-file"
        );
    }
    if cfg.replay_store == ReplayStore::Memory {
        // No state of an earlier process can then carry this process's start second.
        replay_store::fresh_second().await;
    }
    // A Redis store that may evict claims stops the start (exit 2).
    replay_store::check_at_start(&cfg.replay()).await?;
    let service = Arc::new(build_service(&cfg, make)?);
    tracing::info!(replay_store = ?cfg.replay_store, "replay guard for once steps");
    // Handlers are installed here, before the server reports that it is up.
    // On the signal, open subscriptions end gracefully (their result goes out)
    // before the transport drains, so a listen stream does not hold it up.
    let changes = service.changes().cloned();
    let signal = shutdown::signal();
    let shutdown = async move {
        signal.await;
        if let Some(changes) = changes {
            changes.close_all();
        }
    };
    let _reload = reload::on_hangup(cfg.keys.clone(), service.engine().sealer().clone());
    // Bound and logged before the MCP listener reports that it is up; it stops
    // when this function returns.
    let _metrics = match &cfg.metrics {
        Some(endpoint) => Some(endpoint.start().await.map_err(|source| ServeError::Io {
            context: "cannot bind metrics listen address",
            source,
        })?),
        None => None,
    };
    if cfg.stdio {
        return serve_stdio(&cfg, &service, shutdown).await;
    }
    serve_http(&cfg, service, shutdown).await
}

/// Serves `service` on stdin and stdout until EOF (or `shutdown`), as the
/// principal `--principal` (or `MRTR_PRINCIPAL`) names.
async fn serve_stdio(
    cfg: &ServeConfig,
    service: &Service,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let principal = match &cfg.principal {
        PrincipalConfig::Named(name) => Principal::subject(name.as_str()),
        PrincipalConfig::Anonymous => Principal::anonymous(),
        _ => return Err(ServerConfigError("no principal for --stdio".into()).into()),
    };
    let stdin = tokio::io::BufReader::new(tokio::io::stdin());
    let stdout = tokio::io::stdout();
    stdio::serve(service, &principal, cfg.max_body, stdin, stdout, shutdown)
        .await
        .map_err(|source| ServeError::Io {
            context: "stdio",
            source,
        })?;
    tracing::info!("stdin closed, exiting");
    Ok(())
}

/// Serves `service` over HTTP on `--listen` until `shutdown`, the caller
/// known the way `--principal-header`, `--oauth-issuer` or `--anonymous` says.
async fn serve_http(
    cfg: &ServeConfig,
    service: Arc<Service>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let listener = tokio::net::TcpListener::bind(cfg.listen)
        .await
        .map_err(|source| ServeError::Io {
            context: "cannot bind listen address",
            source,
        })?;
    let local = listener.local_addr().map_err(|source| ServeError::Io {
        context: "cannot read bound address",
        source,
    })?;
    let options = cfg.http_options(local)?;
    if cfg.allowed_hosts.is_empty() && !local.ip().is_loopback() {
        tracing::info!(
            %local,
            "every Host is answered on a non-loopback address: list your public names \
             with --allow-host to refuse DNS-rebound requests"
        );
    }
    let app = match &cfg.principal {
        PrincipalConfig::Anonymous => {
            if !local.ip().is_loopback() {
                tracing::warn!(
                    %local,
                    "listening on a non-loopback address with --anonymous: every caller \
                     shares one principal, so one can present another's requestState"
                );
            }
            http::standalone_router(service, options, http::Anonymous)
        }
        PrincipalConfig::Header(name) => {
            tracing::info!(
                header = %name,
                "the caller is the subject in this header: only an authenticating reverse \
                 proxy that sets it must be able to reach this address"
            );
            http::standalone_router(service, options, http::FromHeader::new(name.clone()))
        }
        PrincipalConfig::OAuth(o) => {
            let oauth = resource_server(o).await?;
            tracing::info!(
                issuer = %o.issuer,
                audience = %o.audience,
                "the caller is the subject of a JWT access token of this issuer for this audience"
            );
            oauth.protect(http::standalone_router(
                service,
                options,
                http::FromExtension,
            ))
        }
        _ => return Err(ServerConfigError("no principal source for HTTP".into()).into()),
    };
    tracing::info!(local_addr = %local, "listening on http://{local}/mcp");
    http::serve_with(listener, app, cfg.serve_options(), shutdown)
        .await
        .map_err(|source| ServeError::Io {
            context: "http server",
            source,
        })?;
    tracing::info!("shut down");
    Ok(())
}

/// The resource server of `--oauth-issuer`: the issuer's metadata and keys are
/// fetched before the server reports that it is up (a failure stops the start).
async fn resource_server(
    o: &OAuthSettings,
) -> Result<mrtr_server::oauth::ResourceServer, ServeError> {
    let mut http = mrtr_client::HttpClient::builder();
    if let Some(path) = &o.ca {
        let pem = std::fs::read(path).map_err(|e| {
            ServerConfigError(format!("--oauth-ca: cannot read {}: {e}", path.display()))
        })?;
        http = http
            .add_root_pem(&pem)
            .map_err(|e| ServerConfigError(format!("--oauth-ca: {e}")))?;
    }
    let http = http
        .build()
        .map_err(|e| ServerConfigError(format!("--oauth-issuer: {e}")))?;
    mrtr_server::oauth::ResourceServer::discover(o.config()?, http)
        .await
        .map_err(|e| ServerConfigError(format!("--oauth-issuer: {e}")).into())
}
