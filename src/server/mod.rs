//! The server: Streamable HTTP and stdio transports around a [`Service`] the
//! application builds (the `mrtr` binary passes the reference server's tools).
//!
//! Transports do transport things only: read bytes within a size limit, check the
//! `Origin` and `Content-Type`, copy the MCP headers into [`McpHeaders`], pick JSON
//! or SSE framing from `Accept`, write the reply, and log one line per request.
//! Everything the protocol decides happens in [`Service::handle`].
//!
//! ```text
//!  POST /mcp ─► origin (403) ─► content-type (415) ─► body limit (413) ─┐
//!  stdin line ─► line limit (-32600) ───────────────────────────────────┤
//!                                                                       ▼
//!                                      Service::handle(body, ctx) -> Reply
//!                                                                       │
//!  HTTP: Reply.http_status + JSON or one SSE event; no body → 202 ◄─────┤
//!  stdout: one line per reply ◄─────────────────────────────────────────┘
//! ```
//!
//! [`McpHeaders`]: crate::streamable_http::McpHeaders

pub mod http;
mod log;
mod shutdown;
pub mod stdio;

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::defaults;
use crate::engine::Engine;
use crate::principal::Principal;
use crate::replay::MemoryReplayGuard;
use crate::seal::{KEYS_ENV, Keyring, SealConfig};
use crate::service::Service;

/// Where the sealing keys come from. The text is kept raw here; parsing it into a
/// key ring belongs to the sealed-state module.
#[derive(Clone, PartialEq, Eq)]
pub enum KeySource {
    /// `--keys-file PATH`: the file holds the keys in the `MRTR_KEYS` format.
    File(PathBuf),
    /// The raw value of the `MRTR_KEYS` environment variable.
    Env(String),
    /// No configured key: a random key for this process only.
    Ephemeral,
}

impl fmt::Debug for KeySource {
    // The environment value is key material: never print it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File(p) => f.debug_tuple("File").field(p).finish(),
            Self::Env(_) => f.write_str("Env(<redacted>)"),
            Self::Ephemeral => f.write_str("Ephemeral"),
        }
    }
}

impl KeySource {
    /// Picks the key source: `--keys-file` first, else `MRTR_KEYS` (passed in as
    /// read from the environment), else an ephemeral key.
    ///
    /// # Errors
    /// [`ConfigError`] if `MRTR_KEYS` is set but empty or not UTF-8: a fleet
    /// operator who set it by mistake must not silently get a per-process key.
    pub fn resolve(
        keys_file: Option<PathBuf>,
        env_value: Option<std::ffi::OsString>,
    ) -> Result<Self, ConfigError> {
        if let Some(path) = keys_file {
            return Ok(Self::File(path));
        }
        match env_value {
            None => Ok(Self::Ephemeral),
            Some(v) => match v.into_string() {
                Ok(s) if s.trim().is_empty() => {
                    Err(ConfigError(format!("{KEYS_ENV} is set but empty")))
                }
                Ok(s) => Ok(Self::Env(s)),
                Err(_) => Err(ConfigError(format!("{KEYS_ENV} is not valid UTF-8"))),
            },
        }
    }

    /// The key ring: parsed from the file or `MRTR_KEYS`, or a fresh ephemeral key.
    ///
    /// # Errors
    /// [`ConfigError`] naming what is wrong with the keys (never their bytes).
    pub fn keyring(&self) -> Result<Keyring, ConfigError> {
        match self {
            Self::File(path) => {
                Keyring::from_file(path).map_err(|e| ConfigError(format!("--keys-file: {e}")))
            }
            Self::Env(s) => {
                Keyring::parse_keys(s).map_err(|e| ConfigError(format!("{KEYS_ENV}: {e}")))
            }
            Self::Ephemeral => Ok(Keyring::ephemeral()),
        }
    }

    /// The raw key text: the file's contents, the environment value, or `None`
    /// for an ephemeral key.
    ///
    /// # Errors
    /// [`ConfigError`] if the keys file cannot be read as UTF-8 text.
    pub fn load_raw(&self) -> Result<Option<String>, ConfigError> {
        match self {
            Self::File(path) => std::fs::read_to_string(path)
                .map(Some)
                .map_err(|e| ConfigError(format!("cannot read keys file {}: {e}", path.display()))),
            Self::Env(s) => Ok(Some(s.clone())),
            Self::Ephemeral => Ok(None),
        }
    }
}

/// How log lines are written to stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Human,
    /// One JSON object per line.
    Json,
}

/// The settings of `mrtr serve`, parsed and validated.
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
    /// Log line format.
    pub log_format: LogFormat,
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
            log_format: LogFormat::Human,
        }
    }
}

impl ServeConfig {
    /// Checks the ranges of the numeric settings and normalizes the allowed origins.
    ///
    /// # Errors
    /// [`ConfigError`] naming the first setting that is out of range or malformed.
    pub fn validate(mut self) -> Result<Self, ConfigError> {
        let max_ttl = defaults::MAX_STATE_TTL.as_secs();
        if self.state_ttl_secs == 0 || self.state_ttl_secs > max_ttl {
            return Err(ConfigError(format!(
                "--state-ttl must be between 1 and {max_ttl} seconds"
            )));
        }
        let max_skew = defaults::MAX_CLOCK_SKEW.as_secs();
        if self.clock_skew_secs > max_skew {
            return Err(ConfigError(format!(
                "--clock-skew must be at most {max_skew} seconds"
            )));
        }
        if self.audience.trim().is_empty() {
            return Err(ConfigError("--audience must not be empty".into()));
        }
        if self.max_rounds == 0 {
            return Err(ConfigError("--max-rounds must be at least 1".into()));
        }
        if self.max_body < 1024 {
            return Err(ConfigError("--max-body must be at least 1024 bytes".into()));
        }
        let origins = std::mem::take(&mut self.allowed_origins);
        self.allowed_origins = origins
            .iter()
            .map(|o| http::normalize_origin(o))
            .collect::<Result<_, _>>()?;
        Ok(self)
    }
}

/// A configuration error: exit code 2, message on stderr.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

/// Why `mrtr serve` stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The configuration is unusable (exit code 2).
    #[error(transparent)]
    Config(#[from] ConfigError),
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

/// Builds the request service from the settings: the ONE place where the engine
/// (keys, seal configuration, limits, replay guard) is assembled; `make` puts the
/// application's tools, prompts and resources on it.
///
/// ```
/// use mrtr::server::{ServeConfig, build_service};
/// use mrtr::service::Service;
/// let service = build_service(&ServeConfig::default(), |engine| {
///     Service::new(engine, "example", "1.0.0")
/// })
/// .unwrap();
/// assert_eq!(service.engine().audience(), mrtr::defaults::AUDIENCE);
/// ```
///
/// # Errors
/// [`ConfigError`] if the keys cannot be loaded.
pub fn build_service<F>(cfg: &ServeConfig, make: F) -> Result<Service, ConfigError>
where
    F: FnOnce(Engine) -> Service,
{
    let keyring = cfg.keys.keyring()?;
    let seal = SealConfig::default()
        .ttl(Duration::from_secs(cfg.state_ttl_secs))
        .map_err(|e| ConfigError(format!("--state-ttl: {e}")))?
        .clock_skew(Duration::from_secs(cfg.clock_skew_secs));
    let engine = Engine::new(keyring, cfg.audience.clone())
        .with_seal_config(seal)
        .max_rounds(cfg.max_rounds)
        // A side effect behind `Round::once` must not repeat when a client replays
        // the final round.
        .replay_guard(Arc::new(MemoryReplayGuard::default()));
    Ok(make(engine))
}

/// Runs the server until EOF (stdio) or SIGINT/SIGTERM (HTTP), with the service
/// [`build_service`] makes from `cfg` and `make`.
///
/// Logging should already be set up (a `tracing` subscriber; the `mrtr` binary
/// installs one): the transports write one line per request through `tracing`.
///
/// # Errors
/// [`ServeError::Config`] for unusable settings, [`ServeError::Io`] if the
/// listener cannot be bound or stdio fails.
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
    let service = Arc::new(build_service(&cfg, make)?);
    // Handlers are installed here, before the server reports that it is up.
    let shutdown = shutdown::signal();
    if cfg.stdio {
        let stdin = tokio::io::BufReader::new(tokio::io::stdin());
        let stdout = tokio::io::stdout();
        stdio::serve(
            &service,
            &Principal::anonymous(),
            cfg.max_body,
            stdin,
            stdout,
            shutdown,
        )
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
    if !local.ip().is_loopback() {
        tracing::warn!(
            %local,
            "listening on a non-loopback address: the reference server has no authentication"
        );
    }
    tracing::info!(local_addr = %local, "listening on http://{local}/mcp");
    let app = http::router(service, &cfg);
    http::serve(listener, app, shutdown)
        .await
        .map_err(|source| ServeError::Io {
            context: "http server",
            source,
        })?;
    tracing::info!("shut down");
    Ok(())
}
