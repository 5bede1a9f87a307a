//! `mrtr serve`: the settings ([`ServeConfig`]), the one place the engine is
//! assembled from them ([`build_service`]: keys, seal configuration, limits,
//! replay guard), and the process around `mrtr-server`'s transports ([`serve`]:
//! signals, SIGHUP key reload, the metrics listener). The binary's, not an API.

mod reload;
mod replay_store;
mod shutdown;

use mrtr_server::{MetricsEndpoint, http, stdio};

use std::net::SocketAddr;

use std::sync::Arc;
use std::time::Duration;

use mrtr::Timestamp;
use mrtr::defaults;
use mrtr::engine::Engine;
use mrtr::principal::Principal;
use mrtr::seal::SealConfig;
use mrtr::service::Service;

pub use replay_store::ReplayStore;

pub use reload::{KeyReload, reload_keys};

/// The environment variable naming the principal of `mrtr serve --stdio` when
/// `--principal` is not given.
#[doc(hidden)]
pub const PRINCIPAL_ENV: &str = "MRTR_PRINCIPAL";

pub use mrtr_server::keys::{KEYS_ENV, KeySource, keyring_from_env};

/// Who the caller of `mrtr serve` is: the principal every flow is bound to.
///
/// Not library API: the `mrtr` binary's configuration, which may change in any
/// release. Embed with [`http::mcp_router`] and a
/// [`PrincipalSource`](mrtr::principal::PrincipalSource) instead.
///
/// There is no default: [`ServeConfig::validate`] refuses [`PrincipalConfig::Unset`],
/// so an anonymous server is always one somebody chose.
#[doc(hidden)]
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum PrincipalConfig {
    /// Nothing chosen yet (refused by [`ServeConfig::validate`]).
    #[default]
    Unset,
    /// `--anonymous`: every caller is [`Principal::anonymous`].
    Anonymous,
    /// `--principal NAME` or `MRTR_PRINCIPAL` (stdio only): the subject of the one
    /// user at the other end of the pipe.
    Named(String),
    /// `--principal-header NAME` (HTTP only): the subject in this header, set by an
    /// authenticating reverse proxy. See [`http::FromHeader`] for the risk.
    Header(::http::HeaderName),
    /// `--oauth-issuer URL --oauth-audience URI` (HTTP only): an OAuth resource
    /// server; the caller is the token's issuer and subject.
    OAuth(OAuthSettings),
}

/// `mrtr serve --oauth-*`: the resource server's settings, as given.
#[doc(hidden)]
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct OAuthSettings {
    /// `--oauth-issuer`: the authorization server whose tokens are accepted.
    pub issuer: String,
    /// `--oauth-audience`: this server's canonical URL, the tokens' `aud`.
    pub audience: String,
    /// `--oauth-scope`: scopes every request's token must carry.
    pub scopes: Vec<String>,
    /// `--oauth-tool-scope TOOL=SCOPE`: scopes a tool needs on top.
    pub tool_scopes: Vec<(String, String)>,
    /// `--oauth-skew`: seconds of clock skew allowed on `exp` and `nbf`.
    pub skew_secs: u64,
    /// `--oauth-accept-typ`: JWT `typ` values accepted beside `at+jwt` (for
    /// issuers that send `JWT`).
    pub accept_typ: Vec<String>,
    /// `--oauth-ca`: a PEM file of CA certificates trusted (beside the
    /// system's) to fetch the issuer's metadata and keys.
    pub ca: Option<std::path::PathBuf>,
}

impl OAuthSettings {
    /// The resource server's configuration.
    ///
    /// # Errors
    /// [`ServerConfigError`] naming the flag that is not usable.
    pub fn config(&self) -> Result<mrtr_server::oauth::ResourceServerConfig, ServerConfigError> {
        let mut c = mrtr_server::oauth::ResourceServerConfig::new(&self.issuer, &self.audience)?
            .with_skew(std::time::Duration::from_secs(self.skew_secs));
        for s in &self.scopes {
            check_scope("--oauth-scope", s)?;
            c = c.with_required_scope(s);
        }
        for (tool, s) in &self.tool_scopes {
            check_scope("--oauth-tool-scope", s)?;
            c = c.with_tool_scope(tool, s);
        }
        for typ in &self.accept_typ {
            check_typ(typ)?;
            c = c.with_accepted_typ(typ);
        }
        Ok(c)
    }
}

/// A scope is visible ASCII without spaces, quotes or backslashes (RFC 6749 section 3.3).
fn check_scope(flag: &str, scope: &str) -> Result<(), ServerConfigError> {
    if !scope.is_empty()
        && scope
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\')
    {
        Ok(())
    } else {
        Err(ServerConfigError(format!("{flag}: not a scope: {scope:?}")))
    }
}

/// A `typ` is a media type: visible ASCII without spaces, quotes or backslashes.
fn check_typ(typ: &str) -> Result<(), ServerConfigError> {
    if !typ.is_empty()
        && typ
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\')
    {
        Ok(())
    } else {
        Err(ServerConfigError(format!(
            "--oauth-accept-typ: not a JWT typ: {typ:?}"
        )))
    }
}

impl PrincipalConfig {
    /// `--principal-header NAME`.
    ///
    /// # Errors
    /// [`ServerConfigError`] if `name` is not a valid header name.
    pub fn header(name: &str) -> Result<Self, ServerConfigError> {
        ::http::HeaderName::from_bytes(name.trim().as_bytes())
            .map(Self::Header)
            .map_err(|_| {
                ServerConfigError(format!("--principal-header: not a header name: {name:?}"))
            })
    }

    /// Picks the principal setting of `mrtr serve` from its flags and, for stdio
    /// only, `MRTR_PRINCIPAL` (passed in as read from the environment); a flag
    /// wins over the environment.
    ///
    /// # Errors
    /// [`ServerConfigError`] if more than one flag is given, `header` is not a header
    /// name, or `MRTR_PRINCIPAL` is used but empty or not UTF-8.
    pub fn resolve(
        stdio: bool,
        anonymous: bool,
        principal: Option<String>,
        header: Option<&str>,
        oauth: Option<OAuthSettings>,
        env_value: Option<std::ffi::OsString>,
    ) -> Result<Self, ServerConfigError> {
        match (anonymous, principal, header, oauth) {
            (false, None, None, None) => {}
            (true, None, None, None) => return Ok(Self::Anonymous),
            (false, Some(name), None, None) => return Ok(Self::Named(name)),
            (false, None, Some(h), None) => return Self::header(h),
            (false, None, None, Some(o)) => return Ok(Self::OAuth(o)),
            _ => {
                return Err(ServerConfigError(
                    "choose one of --oauth-issuer, --principal-header, --principal and --anonymous"
                        .into(),
                ));
            }
        }
        match env_value {
            Some(v) if stdio => match v.into_string() {
                Ok(s) if s.trim().is_empty() => Err(ServerConfigError(format!(
                    "{PRINCIPAL_ENV} is set but empty"
                ))),
                Ok(s) => Ok(Self::Named(s)),
                Err(_) => Err(ServerConfigError(format!(
                    "{PRINCIPAL_ENV} is not valid UTF-8"
                ))),
            },
            _ => Ok(Self::Unset),
        }
    }
}

/// The settings of `mrtr serve`, parsed and validated.
///
/// Not library API: the `mrtr` binary's configuration, which may change in any
/// release. Embed with [`http::mcp_router`], [`keyring_from_env`] and the
/// [`Engine`] builder instead.
#[doc(hidden)]
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServeConfig {
    /// The address to listen on (HTTP). Port 0 picks a free port; the bound
    /// address is logged as `listening on http://ADDR/mcp`.
    pub listen: SocketAddr,
    /// Speak newline-delimited JSON-RPC on stdin/stdout instead of HTTP.
    pub stdio: bool,
    /// Where the sealing keys come from.
    pub keys: KeySource,
    /// Lifetime of one round's `requestState`, in seconds.
    pub state_ttl_secs: u64,
    /// Clock skew tolerated on expiry checks, in seconds.
    pub clock_skew_secs: u64,
    /// The audience a `requestState` is bound to.
    pub audience: String,
    /// Maximum rounds of one flow.
    pub max_rounds: u32,
    /// Maximum size of one request (HTTP body or stdio line), in bytes.
    pub max_body: usize,
    /// Extra allowed `Origin` values, normalized (lower case, no trailing slash).
    pub allowed_origins: Vec<String>,
    /// `--allow-host`: the `Host` values answered ([`http::HttpOptions::allow_host`]).
    /// Empty: on a loopback listen address, `localhost`, `127.0.0.1` and `[::1]`
    /// (any port); on any other address, every `Host`.
    pub allowed_hosts: Vec<String>,
    /// `--header-timeout`: seconds a client may take to send a request head.
    pub header_timeout_secs: u64,
    /// `--idle-timeout`: seconds a kept-alive connection may wait for its next request.
    pub idle_timeout_secs: u64,
    /// `--max-connections`: connections open at once.
    pub max_connections: usize,
    /// `--max-connections-per-peer`: connections one peer (an IPv4 address or
    /// an IPv6 /64) holds open at once.
    pub max_connections_per_peer: usize,
    /// `--body-timeout`: seconds a request body may take beyond what its size
    /// needs at `--body-min-rate`.
    pub body_timeout_secs: u64,
    /// `--body-min-rate`: the slowest a body may arrive, in bytes per second.
    pub body_min_rate: u64,
    /// `--max-in-flight`: requests handled at once.
    pub max_in_flight: usize,
    /// `--body-budget`: bytes of large bodies buffered at once.
    pub body_budget: usize,
    /// Who the caller is. Must be chosen: the default is [`PrincipalConfig::Unset`].
    pub principal: PrincipalConfig,
    /// `--metrics-listen`: serve `GET /metrics` on a listener of its own. Default:
    /// none (no metrics listener).
    pub metrics: Option<MetricsEndpoint>,
    /// Where the claims of `once` steps are kept (default: in memory).
    pub replay_store: ReplayStore,
    /// `--replay-max-claims`: the in-memory store's cap on live claims. `None`:
    /// [`defaults::REPLAY_MAX_CLAIMS`].
    pub replay_max_claims: Option<usize>,
    /// `--replay-max-claims-per-principal`: the in-memory store's cap per principal
    /// (per peer address for anonymous callers). `None`:
    /// [`defaults::REPLAY_MAX_CLAIMS_PER_PRINCIPAL`].
    pub replay_max_claims_per_principal: Option<usize>,
    /// `--replay-store-allow-eviction`: make claims on a Redis store that may evict
    /// them, or whose eviction policy cannot be read. Default `false` (refused).
    pub replay_allow_eviction: bool,
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self {
            listen: defaults::LISTEN,
            stdio: false,
            keys: KeySource::Ephemeral,
            state_ttl_secs: defaults::STATE_TTL.as_secs(),
            clock_skew_secs: defaults::CLOCK_SKEW.as_secs(),
            audience: defaults::AUDIENCE.to_owned(),
            max_rounds: defaults::MAX_ROUNDS,
            max_body: defaults::MAX_BODY,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            header_timeout_secs: defaults::HEADER_READ_TIMEOUT.as_secs(),
            idle_timeout_secs: defaults::IDLE_TIMEOUT.as_secs(),
            max_connections: defaults::MAX_CONNECTIONS,
            max_connections_per_peer: defaults::MAX_CONNECTIONS_PER_PEER,
            body_timeout_secs: defaults::BODY_READ_TIMEOUT.as_secs(),
            body_min_rate: defaults::BODY_MIN_RATE,
            max_in_flight: defaults::MAX_IN_FLIGHT,
            body_budget: defaults::BODY_BUDGET,
            principal: PrincipalConfig::Unset,
            metrics: None,
            replay_store: ReplayStore::Memory,
            replay_max_claims: None,
            replay_max_claims_per_principal: None,
            replay_allow_eviction: false,
        }
    }
}

impl ServeConfig {
    /// Checks the ranges of the numeric settings, normalizes the allowed origins,
    /// and checks that the principal was chosen and fits the transport.
    ///
    /// # Errors
    /// [`ServerConfigError`] naming the first setting that is out of range or malformed.
    pub fn validate(mut self) -> Result<Self, ServerConfigError> {
        let max_ttl = defaults::MAX_STATE_TTL.as_secs();
        if self.state_ttl_secs == 0 || self.state_ttl_secs > max_ttl {
            return Err(ServerConfigError(format!(
                "--state-ttl must be between 1 and {max_ttl} seconds"
            )));
        }
        let max_skew = defaults::MAX_CLOCK_SKEW.as_secs();
        if self.clock_skew_secs > max_skew {
            return Err(ServerConfigError(format!(
                "--clock-skew must be at most {max_skew} seconds"
            )));
        }
        if self.audience.trim().is_empty() {
            return Err(ServerConfigError("--audience must not be empty".into()));
        }
        if self.max_rounds == 0 {
            return Err(ServerConfigError("--max-rounds must be at least 1".into()));
        }
        if self.max_body < 1024 {
            return Err(ServerConfigError(
                "--max-body must be at least 1024 bytes".into(),
            ));
        }
        if self.max_body > u32::MAX as usize {
            return Err(ServerConfigError("--max-body must be at most 4 GiB".into()));
        }
        if self.body_budget < self.max_body {
            return Err(ServerConfigError(
                "--body-budget must be at least --max-body: a body the limit admits must fit"
                    .into(),
            ));
        }
        for (flag, secs) in [
            ("--header-timeout", self.header_timeout_secs),
            ("--idle-timeout", self.idle_timeout_secs),
            ("--body-timeout", self.body_timeout_secs),
        ] {
            if secs == 0 || secs > MAX_CONNECTION_TIMEOUT_SECS {
                return Err(ServerConfigError(format!(
                    "{flag} must be between 1 and {MAX_CONNECTION_TIMEOUT_SECS} seconds"
                )));
            }
        }
        if self.max_connections == 0 {
            return Err(ServerConfigError(
                "--max-connections must be at least 1".into(),
            ));
        }
        if self.max_connections_per_peer == 0 {
            return Err(ServerConfigError(
                "--max-connections-per-peer must be at least 1".into(),
            ));
        }
        if self.body_min_rate == 0 {
            return Err(ServerConfigError(
                "--body-min-rate must be at least 1 byte per second".into(),
            ));
        }
        if self.max_in_flight == 0 {
            return Err(ServerConfigError(
                "--max-in-flight must be at least 1".into(),
            ));
        }
        self.allowed_hosts
            .iter()
            .try_fold(http::HttpOptions::default(), |o, h| o.allow_host(h))
            .map_err(|e| ServerConfigError(format!("--allow-host: {e}")))?;
        if let Some(m) = &self.metrics
            && !self.stdio
            && m.listen().port() != 0
            && m.listen().port() == self.listen.port()
        {
            return Err(ServerConfigError(
                "--metrics-listen must use another port than --listen: metrics never share \
                 the MCP endpoint's listener"
                    .into(),
            ));
        }
        replay_store::validate(&self)?;
        let origins = std::mem::take(&mut self.allowed_origins);
        self.allowed_origins = origins
            .iter()
            .map(|o| http::normalize_origin(o))
            .collect::<Result<_, _>>()?;
        match (&self.principal, self.stdio) {
            (PrincipalConfig::Unset, true) => {
                return Err(ServerConfigError(format!(
                    "say who the caller is: --principal NAME (or {PRINCIPAL_ENV}), or --anonymous"
                )));
            }
            (PrincipalConfig::Unset, false) => {
                return Err(ServerConfigError(
                    "say who the caller is: --oauth-issuer URL --oauth-audience URI (an OAuth \
                     resource server), --principal-header NAME (only behind an \
                     authenticating reverse proxy), or --anonymous"
                        .into(),
                ));
            }
            (PrincipalConfig::Named(_), false) => {
                return Err(ServerConfigError(
                    "--principal is for --stdio; over HTTP use --principal-header NAME".into(),
                ));
            }
            (PrincipalConfig::Header(_), true) => {
                return Err(ServerConfigError(
                    "--principal-header is for HTTP; with --stdio use --principal NAME".into(),
                ));
            }
            (PrincipalConfig::OAuth(_), true) => {
                return Err(ServerConfigError(
                    "--oauth-issuer is for HTTP; with --stdio use --principal NAME".into(),
                ));
            }
            (PrincipalConfig::OAuth(o), false) => {
                let _checked = o.config()?;
            }
            (PrincipalConfig::Named(name), true) if !mrtr::principal::is_principal_name(name) => {
                return Err(ServerConfigError(format!(
                    "--principal (or {PRINCIPAL_ENV}) must be visible ASCII without spaces"
                )));
            }
            _ => {}
        }
        Ok(self)
    }

    /// The transport options of the HTTP router listening on `local`.
    fn http_options(&self, local: SocketAddr) -> Result<http::HttpOptions, ServerConfigError> {
        let options = http::HttpOptions::default()
            .with_max_body(self.max_body)
            .with_body_timeout(Duration::from_secs(self.body_timeout_secs))
            .with_body_min_rate(self.body_min_rate)
            .with_max_in_flight(self.max_in_flight)
            .with_body_budget(self.body_budget);
        let options = self
            .allowed_origins
            .iter()
            .try_fold(options, |o, origin| o.allow_origin(origin))?;
        let loopback_default = self.allowed_hosts.is_empty() && local.ip().is_loopback();
        let hosts: Vec<&str> = if loopback_default {
            LOOPBACK_HOSTS.to_vec()
        } else {
            self.allowed_hosts.iter().map(String::as_str).collect()
        };
        hosts.into_iter().try_fold(options, |o, h| o.allow_host(h))
    }

    /// The connection-level options of the HTTP listener: with a metrics
    /// listener, that one's descriptors are left out of this one's share.
    fn serve_options(&self) -> http::ServeOptions {
        let reserve = if self.metrics.is_some() {
            mrtr_server::METRICS_RESERVED_DESCRIPTORS
        } else {
            0
        };
        http::ServeOptions::default()
            .with_header_read_timeout(Duration::from_secs(self.header_timeout_secs))
            .with_idle_timeout(Duration::from_secs(self.idle_timeout_secs))
            .with_max_connections(self.max_connections)
            .with_max_connections_per_peer(self.max_connections_per_peer)
            .with_reserve_descriptors(reserve)
    }
}

/// The names a loopback `mrtr serve` answers for when no `--allow-host` is given
/// (any port): what a local client puts in `Host`; a rebound name is none of them.
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// The upper bound of `--header-timeout` and `--idle-timeout`: 1 hour.
const MAX_CONNECTION_TIMEOUT_SECS: u64 = 3600;

pub use mrtr_server::ServerConfigError;

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
/// Builds the request service from the settings: the ONE place where the engine
/// (keys, seal configuration, limits, replay guard) is assembled; `make` puts the
/// application's tools, prompts and resources on it.
///
/// ```
/// use mrtr_cli::serve::{ServeConfig, build_service};
/// use mrtr::service::Service;
/// let service = build_service(&ServeConfig::default(), |engine| {
///     Service::new(engine, "example", "1.0.0")
/// })
/// .unwrap();
/// assert_eq!(service.engine().audience(), mrtr::defaults::AUDIENCE);
/// ```
///
/// The in-memory replay guard refuses states sealed before the second this is
/// called in ([`MemoryReplayGuard::new`](mrtr::replay::MemoryReplayGuard::new));
/// [`serve`] calls it at the start of a fresh second.
///
/// # Errors
/// [`ServerConfigError`] if the keys cannot be loaded, or the replay store is unusable.
#[doc(hidden)]
pub fn build_service<F>(cfg: &ServeConfig, make: F) -> Result<Service, ServerConfigError>
where
    F: FnOnce(Engine) -> Service,
{
    let keyring = cfg.keys.keyring()?;
    let seal = SealConfig::default()
        .with_ttl(Duration::from_secs(cfg.state_ttl_secs))
        .map_err(|e| ServerConfigError(format!("--state-ttl: {e}")))?
        .with_clock_skew(Duration::from_secs(cfg.clock_skew_secs));
    let engine = Engine::new(keyring, cfg.audience.clone())
        .with_seal_config(seal)
        .with_max_rounds(cfg.max_rounds)
        // A side effect behind `Round::once` must not repeat when a client replays
        // the final round.
        .with_replay_guard(replay_store::guard(cfg, Timestamp::now())?);
    Ok(make(engine))
}

/// Not library API (the `mrtr` binary's, which may change in any release).
///
/// Runs the server until EOF (stdio) or SIGINT/SIGTERM (HTTP), with the service
/// [`build_service`] makes from `cfg` and `make`. On SIGHUP (Unix) it re-reads
/// `--keys-file` and swaps the new ring in ([`reload_keys`]); a file that does
/// not parse leaves the ring as it was.
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
    replay_store::check_at_start(&cfg).await?;
    let service = Arc::new(build_service(&cfg, make)?);
    tracing::info!(replay_store = ?cfg.replay_store, "replay guard for once steps");
    // Handlers are installed here, before the server reports that it is up.
    let shutdown = shutdown::signal();
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
        let principal = match &cfg.principal {
            PrincipalConfig::Named(name) => Principal::subject(name.as_str()),
            PrincipalConfig::Anonymous => Principal::anonymous(),
            _ => return Err(ServerConfigError("no principal for --stdio".into()).into()),
        };
        let stdin = tokio::io::BufReader::new(tokio::io::stdin());
        let stdout = tokio::io::stdout();
        stdio::serve(&service, &principal, cfg.max_body, stdin, stdout, shutdown)
            .await
            .map_err(|source| ServeError::Io {
                context: "stdio",
                source,
            })?;
        tracing::info!("stdin closed, exiting");
        return Ok(());
    }
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

#[cfg(test)]
mod tests;
