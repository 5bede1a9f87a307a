//! `mrtr`: the reference MRTR server and operator tools.
//!
//! Exit codes: 0 success; 1 runtime failure (e.g. the listen address is taken);
//! 2 usage or configuration error (message on stderr).
//!
//! The reference server's tools (`mrtr_cli::reference`) and the terminal client
//! (`mrtr_cli::call`) are this crate's library: `mrtr serve` hands
//! `mrtr_cli::serve::serve` a builder for its service.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use clap::{Args, Parser, Subcommand};
use mrtr::defaults;
use mrtr_cli::serve::{
    self as server, KEYS_ENV, KeySource, PrincipalConfig, ServeConfig, ServeError,
    ServerConfigError,
};
use mrtr_cli::{audit, call, log, recorder, reference};
use mrtr_server::otel::Export;

/// Multi Round-Trip Requests (MCP 2026-07-28): reference server and operator tools.
#[derive(Debug, Parser)]
#[command(name = "mrtr", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the stateless reference server (Streamable HTTP on POST /mcp, or stdio).
    Serve(ServeArgs),
    /// Print a new random key for MRTR_KEYS.
    Keygen,
    /// Call a tool, prompt or resource on any MRTR server and answer its questions
    /// on the terminal (or from --answers).
    Call(call::CallArgs),
    /// Audit any MRTR server (on any SDK) for the spec's request-state rules, and
    /// report what to fix.
    Audit(audit::AuditArgs),
    /// Open a requestState token with the configured keys and print its claims,
    /// or the private reason it does not open.
    Inspect {
        /// The requestState token.
        token: String,
        /// File holding the keys (MRTR_KEYS format). Default: $MRTR_KEYS.
        #[arg(long, value_name = "PATH")]
        keys_file: Option<PathBuf>,
    },
}

#[derive(Debug, Args)]
#[command(
    after_help = "Who the caller is must be chosen: every requestState is bound to it, \
so that one user cannot present another's. Over HTTP, give --oauth-issuer URL --oauth-audience URI \
(an OAuth resource server: the caller is the access token's issuer and subject), --principal-header \
NAME (only behind an authenticating reverse proxy) or --anonymous; with --stdio, --principal NAME (or \
MRTR_PRINCIPAL) or --anonymous."
)]
struct ServeArgs {
    /// Address to listen on; port 0 picks a free port (the bound address is
    /// logged as `listening on http://ADDR/mcp`).
    #[arg(long, value_name = "ADDR", default_value_t = mrtr_cli::defaults::LISTEN, conflicts_with = "stdio")]
    listen: SocketAddr,
    /// Speak newline-delimited JSON-RPC on stdin/stdout instead of HTTP (logs stay on stderr).
    #[arg(long)]
    stdio: bool,
    /// File holding the sealing keys (MRTR_KEYS format; the first seals). Re-read on
    /// SIGHUP (`kill -HUP PID`), logged as `key ring reloaded`; a file that cannot be
    /// read or parsed keeps the keys in force, and so does one that drops the key
    /// this process seals with or one it sealed with within the flow lifetime (1 h;
    /// a restart takes any ring). Write it to a temporary name in the same directory,
    /// then rename it over the old file, so a reload never reads it half written.
    /// Default: $MRTR_KEYS (not reloadable), else an ephemeral per-process key.
    #[arg(long, value_name = "PATH")]
    keys_file: Option<PathBuf>,
    /// Lifetime of one round's requestState, in seconds (1..=86400).
    #[arg(long, value_name = "SECONDS", default_value_t = defaults::STATE_TTL.as_secs())]
    state_ttl: u64,
    /// Clock skew tolerated on expiry checks, in seconds (0..=3600).
    #[arg(long, value_name = "SECONDS", default_value_t = defaults::CLOCK_SKEW.as_secs())]
    clock_skew: u64,
    /// Audience a requestState is bound to; every instance of a fleet must use the same one.
    #[arg(long, value_name = "STR", default_value = defaults::AUDIENCE)]
    audience: String,
    /// Maximum rounds of one flow.
    #[arg(long, value_name = "N", default_value_t = defaults::MAX_ROUNDS)]
    max_rounds: u32,
    /// The most items one page of a list (tools, prompts, resources, resource
    /// templates) holds; a longer list comes in pages with a `nextCursor`.
    #[arg(long, value_name = "N", default_value_t = mrtr::defaults::PAGE_SIZE)]
    page_size: usize,
    /// Which client eras are served: both (2026-07-28 clients statelessly, and
    /// 2025-era clients, which open with `initialize`, in sessions), modern-only
    /// (initialize gets -32022 naming 2026-07-28) or legacy-only.
    #[arg(long, value_name = "ERAS", default_value = "both")]
    eras: mrtr::legacy::Eras,
    /// Close a 2025-era request's SSE stream after this many seconds (SEP-1699
    /// polling): the request goes on, and the client resumes with Last-Event-ID.
    /// For proxies that cut long responses. Default: never.
    #[arg(long, value_name = "SECONDS")]
    sse_poll: Option<u64>,
    /// How long a task's runner holds its lease unless it renews it (every
    /// third of it), 3 to 3600: how soon another instance sharing the replay
    /// store takes over the task of one that died. Keep it well above the
    /// fleet's clock differences. Default: 30.
    #[arg(long, value_name = "SECONDS")]
    task_lease: Option<u64>,
    /// Maximum request size (HTTP body or stdio line), in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = defaults::MAX_BODY)]
    max_body: usize,
    /// An extra allowed Origin (scheme://host[:port]); repeatable. Always allowed: no
    /// Origin, http://localhost, http://127.0.0.1 and http://[::1] on any port.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origin: Vec<String>,
    /// A Host this server answers for (NAME, NAME:PORT, an IPv4 address or [IPv6];
    /// without a port, any port); repeatable. A request for another Host, or
    /// without one, gets 421 (a DNS-rebinding defence beside the Origin check).
    /// Default: on a loopback --listen address, localhost, 127.0.0.1 and [::1];
    /// on any other address, every Host (list your public names here).
    #[arg(long = "allow-host", value_name = "NAME[:PORT]")]
    allow_host: Vec<String>,
    /// Seconds a client may take to send a request's head (request line and
    /// headers), from its first byte; then the connection is closed (1..=3600).
    #[arg(long, value_name = "SECONDS", default_value_t = mrtr_server::defaults::HEADER_READ_TIMEOUT.as_secs())]
    header_timeout: u64,
    /// Seconds a kept-alive connection may wait for its next request (1..=3600).
    #[arg(long, value_name = "SECONDS", default_value_t = mrtr_server::defaults::IDLE_TIMEOUT.as_secs())]
    idle_timeout: u64,
    /// Connections open at once. At the cap, the one that has waited longest
    /// without a request in progress is closed; if all are busy, new connections
    /// wait. Lowered to the open-file limit (ulimit -n) less 64.
    #[arg(long, value_name = "N", default_value_t = mrtr_server::defaults::MAX_CONNECTIONS)]
    max_connections: usize,
    /// Connections one peer (an IPv4 address, or an IPv6 /64) holds open at once.
    /// At its cap, its longest-waiting idle connection is closed to make room; if
    /// all of its connections are busy, the new one is closed. Behind a reverse
    /// proxy every connection is the proxy's: set it to --max-connections there.
    #[arg(long, value_name = "N", default_value_t = mrtr_server::defaults::MAX_CONNECTIONS_PER_PEER)]
    max_connections_per_peer: usize,
    /// Seconds a request body may take beyond what its size needs at
    /// --body-min-rate (1..=3600); a body that stalls is answered 408 after this.
    #[arg(long, value_name = "SECONDS", default_value_t = mrtr_server::defaults::BODY_READ_TIMEOUT.as_secs())]
    body_timeout: u64,
    /// The slowest a request body may arrive past --body-timeout, in bytes per
    /// second (at least 1); a slower trickle is answered 408.
    #[arg(long, value_name = "BYTES", default_value_t = mrtr_server::defaults::BODY_MIN_RATE)]
    body_min_rate: u64,
    /// Requests handled at once, counted from when a request's body is in; more
    /// wait up to 10 s, then get 503.
    #[arg(long, value_name = "N", default_value_t = mrtr_server::defaults::MAX_IN_FLIGHT)]
    max_in_flight: usize,
    /// Bytes of request bodies buffered at once beyond the first 16 KiB of each
    /// (at least --max-body); a larger body waits up to 10 s for its share, then gets 503.
    #[arg(long, value_name = "BYTES", default_value_t = mrtr_server::defaults::BODY_BUDGET)]
    body_budget: usize,
    /// Log format on stderr.
    #[arg(long, value_enum, default_value_t = log::LogFormat::Human)]
    log_format: log::LogFormat,
    /// Export each request's span (the MCP semantic conventions; the rounds of
    /// one MRTR flow linked) and the metrics (every 60 s, or
    /// OTEL_METRIC_EXPORT_INTERVAL ms, and at exit) over OTLP/HTTP to the
    /// collector at URL (http://HOST:4318; /v1/traces and /v1/metrics are
    /// added). Without it, they are exported when OTEL_EXPORTER_OTLP_ENDPOINT
    /// (or the _TRACES_ or _METRICS_ one) is set, to where it says.
    #[arg(long, value_name = "URL")]
    otlp_endpoint: Option<String>,
    /// HTTP: the caller is the subject in request header NAME (e.g. X-Forwarded-User);
    /// a request without it gets 401. RISK: the header is trusted as is. Use this only
    /// behind a reverse proxy that authenticates every request, sets NAME itself and
    /// strips any NAME the client sent; anyone who can reach mrtr directly can claim
    /// any identity.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["stdio", "anonymous", "principal"])]
    principal_header: Option<String>,
    /// HTTP: be an OAuth 2.1 resource server for the authorization server at URL:
    /// requests need a JWT access token of this issuer (checked against the keys
    /// in its JWKS, found through its metadata at start); the caller is the token's
    /// issuer and subject. A request without a valid token gets 401 with the
    /// WWW-Authenticate header that lets a client find where to log in
    /// (/.well-known/oauth-protected-resource is served). Needs --oauth-audience.
    #[arg(
        long,
        value_name = "URL",
        requires = "oauth_audience",
        conflicts_with_all = ["stdio", "anonymous", "principal", "principal_header"]
    )]
    oauth_issuer: Option<String>,
    /// The audience tokens must name (their `aud`): this server's canonical URL,
    /// e.g. https://mcp.example.com/mcp.
    #[arg(long, value_name = "URI", requires = "oauth_issuer")]
    oauth_audience: Option<String>,
    /// A scope every request's token must carry (repeatable).
    #[arg(long, value_name = "SCOPE", requires = "oauth_issuer")]
    oauth_scope: Vec<String>,
    /// A scope a tool needs on top, as TOOL=SCOPE (repeatable): a call without it
    /// gets 403 with error="insufficient_scope".
    #[arg(long, value_name = "TOOL=SCOPE", requires = "oauth_issuer", value_parser = tool_scope)]
    oauth_tool_scope: Vec<(String, String)>,
    /// Seconds of clock skew allowed on a token's exp and nbf.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 60,
        requires = "oauth_issuer"
    )]
    oauth_skew: u64,
    /// Also accept access tokens whose JWT header says typ TYP (repeatable), beside
    /// at+jwt, which RFC 9068 requires and which is always accepted: for issuers
    /// that send JWT (Keycloak, Microsoft Entra ID), e.g. --oauth-accept-typ JWT.
    /// Any other token (an ID token of the same issuer) is refused: 401.
    #[arg(long, value_name = "TYP", requires = "oauth_issuer")]
    oauth_accept_typ: Vec<String>,
    /// A PEM file of CA certificates trusted, beside the system's, to fetch the
    /// issuer's metadata and keys.
    #[arg(long, value_name = "PATH", requires = "oauth_issuer")]
    oauth_ca: Option<PathBuf>,
    /// stdio: the caller's principal (a subject; visible ASCII, no spaces).
    /// Default: $MRTR_PRINCIPAL.
    #[arg(long, value_name = "NAME", conflicts_with = "anonymous")]
    principal: Option<String>,
    /// Every caller is the anonymous principal. All callers then share one identity, so
    /// binding stops no user from presenting another's requestState: only for a
    /// single-user server or one on loopback.
    #[arg(long)]
    anonymous: bool,
    /// Serve Prometheus metrics (GET /metrics) on ADDR, a listener of its own that
    /// never shares the MCP port; e.g. 127.0.0.1:9464. Keep it on loopback or reach it
    /// only from the scraper: it shows the private requestState rejection reasons. Port
    /// 0 picks a free port (logged as `metrics on http://ADDR/metrics`). Default: off.
    #[arg(long, value_name = "ADDR")]
    metrics_listen: Option<SocketAddr>,
    /// Where `once` steps are claimed, so a replayed request never repeats a side effect:
    /// `memory` (this process only; a restart refuses the flows in flight) or
    /// redis://HOST:PORT[/DB] (rediss:// for TLS), shared by a fleet. While Redis is unreachable, `once` steps fail closed. A Redis
    /// that may evict keys (maxmemory-policy other than noeviction) is refused at
    /// start and by every claim; `?wait=N&wait_timeout_ms=T` makes each claim wait
    /// for N replicas to acknowledge it (fewer: the step fails closed).
    #[arg(
        long,
        value_name = "STORE",
        env = "MRTR_REPLAY_STORE",
        hide_env_values = true,
        default_value = "memory"
    )]
    replay_store: String,
    /// Use a Redis replay store even though it may evict claims (maxmemory-policy other
    /// than noeviction), or its policy cannot be read (CONFIG GET forbidden, as on many
    /// managed services). Risk: an evicted claim is forgotten, and a replay of its flow
    /// runs the once step again. Only for a store you know never evicts.
    #[arg(long)]
    replay_store_allow_eviction: bool,
    /// The in-memory replay store's cap on live claims, about 110 bytes each; beyond it
    /// once steps fail closed. 1 to 20000000. [default: 1000000]
    #[arg(long, value_name = "N")]
    replay_max_claims: Option<usize>,
    /// The in-memory replay store's cap on one principal's live claims (one peer
    /// address, or IPv6 /64, for anonymous callers). 1 to --replay-max-claims.
    /// [default: 10000]
    #[arg(long, value_name = "N")]
    replay_max_claims_per_principal: Option<usize>,
}

impl ServeArgs {
    fn into_config(self, export: Option<&Export>) -> Result<ServeConfig, ServerConfigError> {
        let keys = KeySource::resolve(self.keys_file, std::env::var_os(KEYS_ENV))?;
        let principal = PrincipalConfig::resolve(
            self.stdio,
            self.anonymous,
            self.principal,
            self.principal_header.as_deref(),
            self.oauth_issuer.map(|issuer| {
                let mut o = server::OAuthSettings::default();
                o.issuer = issuer;
                o.audience = self.oauth_audience.unwrap_or_default();
                o.scopes = self.oauth_scope;
                o.tool_scopes = self.oauth_tool_scope;
                o.skew_secs = self.oauth_skew;
                o.accept_typ = self.oauth_accept_typ;
                o.ca = self.oauth_ca;
                o
            }),
            std::env::var_os(server::PRINCIPAL_ENV),
        )?;
        let mut cfg = ServeConfig::default();
        cfg.listen = self.listen;
        cfg.stdio = self.stdio;
        cfg.keys = keys;
        cfg.state_ttl_secs = self.state_ttl;
        cfg.clock_skew_secs = self.clock_skew;
        cfg.audience = self.audience;
        cfg.max_rounds = self.max_rounds;
        cfg.page_size = self.page_size;
        cfg.eras = self.eras;
        cfg.sse_poll_secs = self.sse_poll;
        cfg.task_lease_secs = self.task_lease;
        cfg.max_body = self.max_body;
        cfg.allowed_origins = self.allow_origin;
        cfg.allowed_hosts = self.allow_host;
        cfg.header_timeout_secs = self.header_timeout;
        cfg.idle_timeout_secs = self.idle_timeout;
        cfg.max_connections = self.max_connections;
        cfg.max_connections_per_peer = self.max_connections_per_peer;
        cfg.body_timeout_secs = self.body_timeout;
        cfg.body_min_rate = self.body_min_rate;
        cfg.max_in_flight = self.max_in_flight;
        cfg.body_budget = self.body_budget;
        cfg.principal = principal;
        cfg.metrics = recorder::install(self.metrics_listen, export)?;
        cfg.replay_store = server::ReplayStore::parse(&self.replay_store)?;
        cfg.replay_allow_eviction = self.replay_store_allow_eviction;
        cfg.replay_max_claims = self.replay_max_claims;
        cfg.replay_max_claims_per_principal = self.replay_max_claims_per_principal;
        cfg.validate()
    }
}

/// `--oauth-tool-scope TOOL=SCOPE`.
fn tool_scope(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((tool, scope)) if !tool.is_empty() && !scope.is_empty() => {
            Ok((tool.to_owned(), scope.to_owned()))
        }
        _ => Err("expected TOOL=SCOPE".into()),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => serve(args),
        Command::Keygen => {
            println!("{}", mrtr::seal::generate_key_string());
            ExitCode::SUCCESS
        }
        Command::Inspect { token, keys_file } => inspect(&token, keys_file),
        Command::Call(args) => call(args),
        Command::Audit(args) => audit(args),
    }
}

/// `mrtr audit`: the report on stdout, progress on stderr.
fn audit(args: audit::AuditArgs) -> ExitCode {
    let runtime = match runtime(tokio::runtime::Builder::new_current_thread()) {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let code = runtime.block_on(audit::run_audit(args));
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// Runs `mrtr call` on a small runtime; exit codes 0 complete, 1 tool error,
/// 2 usage, 3 protocol or transport error, 4 an answer given on the command line refused.
fn call(args: call::CallArgs) -> ExitCode {
    let export = match log::export(args.otlp_endpoint.as_deref()) {
        Ok(export) => export,
        Err(e) => {
            eprintln!("mrtr: error: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(export) = &export {
        log::init_spans(export);
        // The conventions' mcp.client.operation.duration, exported with the spans.
        if let Err(e) = recorder::install(None, Some(export)) {
            eprintln!("mrtr: error: {e}");
            return ExitCode::from(2);
        }
    }
    let runtime = match runtime(tokio::runtime::Builder::new_current_thread()) {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    // One span for the call: every request's span is its child, so the rounds
    // and the servers' spans are one trace.
    let span = tracing::info_span!(target: "mrtr::mcp", "mrtr call", otel.kind = "internal");
    let code = runtime.block_on(tracing::Instrument::instrument(call::run_call(args), span));
    drop(runtime);
    if let Some(export) = export {
        export.shutdown();
    }
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// Opens a token for an operator: claims on stdout, or the private reason on stderr (exit 1).
fn inspect(token: &str, keys_file: Option<PathBuf>) -> ExitCode {
    let keys = match KeySource::resolve(keys_file, std::env::var_os(KEYS_ENV)) {
        Ok(KeySource::Ephemeral) => {
            eprintln!("mrtr: error: no keys: pass --keys-file or set {}", KEYS_ENV);
            return ExitCode::from(2);
        }
        Ok(k) => k,
        Err(e) => {
            eprintln!("mrtr: error: {e}");
            return ExitCode::from(2);
        }
    };
    let keyring = match keys.keyring() {
        Ok(k) => k,
        Err(e) => {
            eprintln!("mrtr: error: {e}");
            return ExitCode::from(2);
        }
    };
    let sealer = mrtr::seal::Sealer::new(keyring, mrtr::seal::SealConfig::default());
    match sealer.inspect(&mrtr::seal::UntrustedState::new(token.trim())) {
        Ok(claims) => {
            println!(
                "{}",
                serde_json::to_string_pretty(&claims).unwrap_or_default()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!(
                "mrtr inspect: the token does not open: {}",
                e.reason().as_str()
            );
            ExitCode::from(1)
        }
    }
}

fn serve(args: ServeArgs) -> ExitCode {
    let log_format = args.log_format;
    let export = match log::export(args.otlp_endpoint.as_deref()) {
        Ok(export) => export,
        Err(e) => {
            eprintln!("mrtr: error: {e}");
            return ExitCode::from(2);
        }
    };
    let cfg = match args.into_config(export.as_ref()) {
        Ok(cfg) => cfg,
        Err(e) => {
            eprintln!("mrtr: error: {e}");
            return ExitCode::from(2);
        }
    };
    log::init(log_format, export.as_ref());
    log::install_panic_hook();
    let runtime = match runtime(tokio::runtime::Builder::new_multi_thread()) {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    // The reference tools; the deploy demo's counter is not read by anyone here.
    let service = |engine| reference::service(engine, Arc::new(AtomicU64::new(0)));
    let result = runtime.block_on(server::serve(cfg, service));
    // Do not wait for a blocking stdin read that will never finish (stdio mode
    // stopped by a signal while stdin is still open).
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    if let Some(export) = export {
        export.shutdown();
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(ServeError::Config(e)) => {
            eprintln!("mrtr: error: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            tracing::error!(error = %e, "server stopped");
            eprintln!("mrtr: error: {e}");
            ExitCode::from(1)
        }
    }
}

/// Builds a tokio runtime, or says why not (exit 1).
fn runtime(mut builder: tokio::runtime::Builder) -> Result<tokio::runtime::Runtime, ExitCode> {
    builder.enable_all().build().map_err(|e| {
        eprintln!("mrtr: error: cannot start the async runtime: {e}");
        ExitCode::from(1)
    })
}
