//! The settings of `mrtr serve` ([`ServeConfig`], who the caller is:
//! [`PrincipalConfig`]) and their validation, flag by flag; the transport
//! options they make.

use std::net::SocketAddr;
use std::time::Duration;

use mrtr::defaults;
use mrtr_server::keys::KeySource;
use mrtr_server::{MetricsEndpoint, ServerConfigError, http};

use super::replay_store::{self, ReplayStore};

/// The environment variable naming the principal of `mrtr serve --stdio` when
/// `--principal` is not given.
#[doc(hidden)]
pub const PRINCIPAL_ENV: &str = "MRTR_PRINCIPAL";

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
    /// `--anonymous`: every caller is [`Principal::anonymous`](mrtr::principal::Principal::anonymous).
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
/// release. Embed with [`http::mcp_router`],
/// [`keyring_from_env`](mrtr_server::keys::keyring_from_env) and the
/// [`Engine`](mrtr::engine::Engine) builder instead.
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
    /// The most items one page of `tools/list`, `prompts/list`, `resources/list`
    /// or `resources/templates/list` holds (`Service::with_page_size`).
    pub page_size: usize,
    /// `--eras`: which client eras are served (`Service::with_eras`).
    pub eras: mrtr::legacy::Eras,
    /// `--sse-poll`: close a 2025-era request's SSE stream after this many
    /// seconds, for the client to resume (`HttpOptions::with_sse_poll`). `None`:
    /// never.
    pub sse_poll_secs: Option<u64>,
    /// `--task-lease`: how long a task's runner holds its lease unless it
    /// renews it, in seconds (`Service::with_task_lease`). `None`:
    /// [`defaults::TASK_LEASE`].
    pub task_lease_secs: Option<u64>,
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
            listen: crate::defaults::LISTEN,
            stdio: false,
            keys: KeySource::Ephemeral,
            state_ttl_secs: defaults::STATE_TTL.as_secs(),
            clock_skew_secs: defaults::CLOCK_SKEW.as_secs(),
            audience: defaults::AUDIENCE.to_owned(),
            max_rounds: defaults::MAX_ROUNDS,
            page_size: mrtr::defaults::PAGE_SIZE,
            eras: mrtr::legacy::Eras::default(),
            sse_poll_secs: None,
            task_lease_secs: None,
            max_body: defaults::MAX_BODY,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            header_timeout_secs: mrtr_server::defaults::HEADER_READ_TIMEOUT.as_secs(),
            idle_timeout_secs: mrtr_server::defaults::IDLE_TIMEOUT.as_secs(),
            max_connections: mrtr_server::defaults::MAX_CONNECTIONS,
            max_connections_per_peer: mrtr_server::defaults::MAX_CONNECTIONS_PER_PEER,
            body_timeout_secs: mrtr_server::defaults::BODY_READ_TIMEOUT.as_secs(),
            body_min_rate: mrtr_server::defaults::BODY_MIN_RATE,
            max_in_flight: mrtr_server::defaults::MAX_IN_FLIGHT,
            body_budget: mrtr_server::defaults::BODY_BUDGET,
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
    /// The replay settings, as `replay_store` reads them.
    pub(super) fn replay(&self) -> replay_store::Replay<'_> {
        replay_store::Replay {
            store: &self.replay_store,
            max_claims: self.replay_max_claims,
            max_claims_per_principal: self.replay_max_claims_per_principal,
            allow_eviction: self.replay_allow_eviction,
            audience: &self.audience,
        }
    }

    /// Checks the ranges of the numeric settings, normalizes the allowed origins,
    /// and checks that the principal was chosen and fits the transport.
    ///
    /// # Errors
    /// [`ServerConfigError`] naming the first setting that is out of range or malformed.
    pub fn validate(mut self) -> Result<Self, ServerConfigError> {
        self.check_limits()?;
        replay_store::validate(&self.replay())?;
        let origins = std::mem::take(&mut self.allowed_origins);
        self.allowed_origins = origins
            .iter()
            .map(|o| http::normalize_origin(o))
            .collect::<Result<_, _>>()?;
        self.check_principal()?;
        Ok(self)
    }

    /// The ranges of the numeric settings, the `--allow-host` names, and the
    /// metrics listener's port.
    fn check_limits(&self) -> Result<(), ServerConfigError> {
        if let Some(lease) = self.task_lease_secs
            && !(3..=3600).contains(&lease)
        {
            return Err(ServerConfigError(
                "--task-lease must be between 3 and 3600 seconds".into(),
            ));
        }
        let max_ttl = defaults::MAX_STATE_TTL.as_secs();
        if self.state_ttl_secs == 0 || self.state_ttl_secs > max_ttl {
            return Err(ServerConfigError(format!(
                "--state-ttl must be between 1 and {max_ttl} seconds"
            )));
        }
        let max_skew = crate::defaults::MAX_CLOCK_SKEW.as_secs();
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
        if self.page_size == 0 {
            return Err(ServerConfigError("--page-size must be at least 1".into()));
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
        Ok(())
    }

    /// That the principal was chosen, fits the transport, and is well formed.
    fn check_principal(&self) -> Result<(), ServerConfigError> {
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
            (PrincipalConfig::Named(name), true) if !mrtr::__private::is_principal_name(name) => {
                return Err(ServerConfigError(format!(
                    "--principal (or {PRINCIPAL_ENV}) must be visible ASCII without spaces"
                )));
            }
            _ => {}
        }
        Ok(())
    }

    /// The transport options of the HTTP router listening on `local`.
    pub(super) fn http_options(
        &self,
        local: SocketAddr,
    ) -> Result<http::HttpOptions, ServerConfigError> {
        let options = http::HttpOptions::default()
            .with_max_body(self.max_body)
            .with_body_timeout(Duration::from_secs(self.body_timeout_secs))
            .with_body_min_rate(self.body_min_rate)
            .with_max_in_flight(self.max_in_flight)
            .with_body_budget(self.body_budget)
            .with_sse_poll(self.sse_poll_secs.map(Duration::from_secs));
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
    pub(super) fn serve_options(&self) -> http::ServeOptions {
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
