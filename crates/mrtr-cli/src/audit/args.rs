//! The options of `mrtr audit`, and the plan they make.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};
use serde_json::Value;

use super::catalog::{CheckId, Severity};

/// `mrtr audit`: audit an MRTR server for the spec's request-state rules.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
  mrtr audit http://127.0.0.1:8808/mcp\n  \
  mrtr audit http://127.0.0.1:8808/mcp --tool deploy --args '{\"service\":\"web\"}' --format markdown\n  \
  mrtr audit https://mcp.example.com/mcp -H 'Authorization: Bearer ...' --as-other 'Authorization: Bearer ...'\n  \
  mrtr audit -- python server.py --stdio\n\n\
Checks: integrity, confidentiality, binding-arguments, binding-tool, binding-method, \
binding-principal, foreign-key, fleet, expiry, error-uniformity, leaks, capability-gate, carriers, \
result-type, answers-validated, error-channels, size-caps, replay-after-complete. A check that \
cannot run here (or is not reached before --deadline) is reported as skipped, with what it needs.\n\n\
The audit calls tools and answers their questions with yes (a tool whose annotations say it \
is destructive is tried last): point it at a test instance, or name a harmless tool with --tool.\n\n\
The audit is polite: one request at a time, at most --max-requests, at most --rate a second, \
only to the URLs given. Nothing a server wrote reaches the terminal unfiltered, and every state, \
token and value in the evidence is cut to a short prefix.\n\n\
Exit codes: 0 no finding at or above --fail-on, 1 a finding at or above it, 2 usage, \
3 the server cannot be audited (unreachable, or no tool that answers input_required).")]
pub struct AuditArgs {
    /// The MCP endpoint over Streamable HTTP (http:// or https://). Leave it out to
    /// audit a stdio server started with `-- PROGRAM [ARGS]...`.
    pub url: Option<String>,
    /// The stdio server to start instead of a URL, after `--`.
    #[arg(last = true, value_name = "PROGRAM [ARGS]")]
    pub command: Vec<String>,
    /// The tool to work on (one that answers input_required). Default: the first
    /// tool of tools/list that does, called with arguments made from its schema.
    #[arg(long, value_name = "NAME")]
    pub tool: Option<String>,
    /// The tool's arguments, a JSON object (with --tool).
    #[arg(long, value_name = "JSON", requires = "tool")]
    pub args: Option<String>,
    /// http(s): a header sent with every request, as `Name: value` (repeatable),
    /// e.g. the credentials of the user the audit acts as.
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// http(s): a header that makes the audit a second user (repeatable; it
    /// replaces a -H header of the same name), for the principal check.
    #[arg(long, value_name = "NAME: VALUE")]
    pub as_other: Vec<String>,
    /// Another instance that should share the key: a fleet must resume there.
    #[arg(long, value_name = "URL")]
    pub peer_url: Option<String>,
    /// An instance with another key: it must refuse the state.
    #[arg(long, value_name = "URL")]
    pub foreign_url: Option<String>,
    /// An instance with a short state TTL (with --ttl); default: the server itself.
    #[arg(long, value_name = "URL", requires = "ttl")]
    pub ttl_url: Option<String>,
    /// Seconds after which a state must be refused (its TTL plus the clock skew
    /// the server allows); the expiry check waits this long, at most 600 s.
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=600))]
    pub ttl: Option<u64>,
    /// The server's log file, read after the audit: no token of a -H/--as-other
    /// header and no argument or answer value of the audit may be in it.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// The report's format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Exit 1 if a finding is at or above this severity.
    #[arg(long, value_enum, default_value_t = Severity::High, value_name = "SEVERITY")]
    pub fail_on: Severity,
    /// The most requests the audit sends (each check that would go over is skipped).
    #[arg(long, value_name = "N", default_value_t = 400, value_parser = clap::value_parser!(u32).range(20..=100_000))]
    pub max_requests: u32,
    /// The most requests a second.
    #[arg(long, value_name = "R", default_value_t = 20.0)]
    pub rate: f64,
    /// Run only this check (repeatable).
    #[arg(long, value_name = "CHECK", value_parser = check_id)]
    pub only: Vec<CheckId>,
    /// Leave out this check (repeatable).
    #[arg(long, value_name = "CHECK", value_parser = check_id)]
    pub skip: Vec<CheckId>,
    /// https: trust the CA certificates in FILE (PEM) beside the system's.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// The longest one request may take, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 20)]
    pub request_timeout: u64,
    /// The longest the whole audit may take, in seconds: checks it does not
    /// reach in time are reported as skipped (a request is never cut short to
    /// be judged). Raise it for a long --ttl.
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_DEADLINE_SECS,
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub deadline: u64,
}

/// The default of `--deadline`: five minutes, ample for the checks at the
/// default rate with a short `--ttl`, and a bound on a server that answers
/// each request just before `--request-timeout`.
const DEFAULT_DEADLINE_SECS: u64 = 300;

fn check_id(s: &str) -> Result<CheckId, String> {
    CheckId::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = CheckId::ALL.iter().map(|c| c.name()).collect();
        format!("no check {s:?}; the checks: {}", names.join(", "))
    })
}

/// The report's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A table for the terminal.
    Text,
    /// The versioned JSON document (`mrtr-audit/1`).
    Json,
    /// Markdown, for a pull request.
    Markdown,
}

/// A header to send: its name and value.
#[derive(Clone, PartialEq, Eq)]
pub(super) struct Header {
    pub(super) name: http::HeaderName,
    pub(super) value: http::HeaderValue,
}

impl std::fmt::Debug for Header {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: ..", self.name)
    }
}

/// Where the audit speaks.
#[derive(Debug, Clone)]
pub(super) enum Endpoint {
    /// Streamable HTTP.
    Http(String),
    /// A stdio server: the program and its arguments.
    Stdio(Vec<String>),
}

/// What the options ask for, checked.
#[derive(Debug)]
pub(super) struct Plan {
    pub(super) endpoint: Endpoint,
    pub(super) tool: Option<(String, Value)>,
    pub(super) headers: Vec<Header>,
    pub(super) as_other: Vec<Header>,
    pub(super) peer_url: Option<String>,
    pub(super) foreign_url: Option<String>,
    pub(super) ttl_url: Option<String>,
    pub(super) ttl: Option<Duration>,
    pub(super) log: Option<PathBuf>,
    pub(super) format: Format,
    pub(super) fail_on: Severity,
    pub(super) max_requests: u32,
    pub(super) min_interval: Duration,
    pub(super) checks: Vec<CheckId>,
    pub(super) cacert: Option<Vec<u8>>,
    pub(super) request_timeout: Duration,
    /// When the run began (the options were read).
    pub(super) started: std::time::Instant,
    /// How long the whole run may take (`--deadline`).
    pub(super) deadline: Duration,
}

/// A `Name: value` header, refusing those the audit sets itself.
fn header(flag: &str, raw: &str) -> Result<Header, String> {
    let Some((name, value)) = raw.split_once(':') else {
        return Err(format!("{flag} takes `Name: value`"));
    };
    let name = http::HeaderName::try_from(name.trim())
        .map_err(|_| format!("{flag}: not a header name: {:?}", name.trim()))?;
    const OWNED: [&str; 8] = [
        "content-type",
        "content-length",
        "accept",
        "host",
        "transfer-encoding",
        "mcp-protocol-version",
        "mcp-method",
        "mcp-name",
    ];
    if OWNED.contains(&name.as_str()) {
        return Err(format!("{flag}: {name} is set by the audit itself"));
    }
    let mut value = http::HeaderValue::try_from(value.trim())
        .map_err(|_| format!("{flag}: the value of {name} is not a valid header value"))?;
    value.set_sensitive(true);
    Ok(Header { name, value })
}

fn http_url(flag: &str, url: &str) -> Result<String, String> {
    let uri: http::Uri = url
        .parse()
        .map_err(|_| format!("{flag}: not a URL: {:?}", super::text::cut(url, 80)))?;
    match (uri.scheme_str(), uri.host()) {
        (Some("http" | "https"), Some(_)) => Ok(url.to_owned()),
        _ => Err(format!("{flag}: an http:// or https:// URL")),
    }
}

impl Plan {
    pub(super) fn from_args(a: &AuditArgs) -> Result<Self, String> {
        let endpoint = match (&a.url, a.command.is_empty()) {
            (Some(url), true) => Endpoint::Http(http_url("URL", url)?),
            (None, false) => Endpoint::Stdio(a.command.clone()),
            (Some(_), false) => return Err("give a URL or a command after --, not both".into()),
            (None, true) => {
                return Err("give the server's URL, or a command that starts it after --".into());
            }
        };
        let is_http = matches!(endpoint, Endpoint::Http(_));
        let needs_http = !a.headers.is_empty()
            || !a.as_other.is_empty()
            || a.peer_url.is_some()
            || a.foreign_url.is_some()
            || a.ttl_url.is_some()
            || a.cacert.is_some();
        if !is_http && needs_http {
            return Err(
                "-H, --as-other, --peer-url, --foreign-url, --ttl-url and --cacert are for a server \
                 over HTTP"
                    .into(),
            );
        }
        let tool = match (&a.tool, &a.args) {
            (Some(t), Some(args)) => {
                let v: Value =
                    serde_json::from_str(args).map_err(|e| format!("--args is not JSON: {e}"))?;
                if !v.is_object() {
                    return Err("--args must be a JSON object".into());
                }
                Some((t.clone(), v))
            }
            (Some(t), None) => Some((t.clone(), Value::Object(Default::default()))),
            _ => None,
        };
        let headers = a
            .headers
            .iter()
            .map(|h| header("-H", h))
            .collect::<Result<Vec<_>, _>>()?;
        let as_other = a
            .as_other
            .iter()
            .map(|h| header("--as-other", h))
            .collect::<Result<Vec<_>, _>>()?;
        if !(a.rate > 0.0 && a.rate.is_finite()) {
            return Err("--rate must be a number above 0".into());
        }
        let checks: Vec<CheckId> = CheckId::ALL
            .iter()
            .copied()
            .filter(|c| a.only.is_empty() || a.only.contains(c))
            .filter(|c| !a.skip.contains(c))
            .collect();
        if checks.is_empty() {
            return Err("--only and --skip leave no check to run".into());
        }
        let cacert = match &a.cacert {
            Some(p) => {
                Some(std::fs::read(p).map_err(|e| format!("--cacert {}: {e}", p.display()))?)
            }
            None => None,
        };
        Ok(Self {
            endpoint,
            tool,
            headers,
            as_other,
            peer_url: a
                .peer_url
                .as_deref()
                .map(|u| http_url("--peer-url", u))
                .transpose()?,
            foreign_url: a
                .foreign_url
                .as_deref()
                .map(|u| http_url("--foreign-url", u))
                .transpose()?,
            ttl_url: a
                .ttl_url
                .as_deref()
                .map(|u| http_url("--ttl-url", u))
                .transpose()?,
            ttl: a.ttl.map(Duration::from_secs),
            log: a.log.clone(),
            format: a.format,
            fail_on: a.fail_on,
            max_requests: a.max_requests,
            min_interval: Duration::from_secs_f64(1.0 / a.rate.min(1e6)),
            checks,
            cacert,
            request_timeout: Duration::from_secs(a.request_timeout.clamp(1, 600)),
            started: std::time::Instant::now(),
            deadline: Duration::from_secs(a.deadline),
        })
    }

    /// The headers of the other user: `--as-other` over `-H`, by name.
    pub(super) fn other_headers(&self) -> Vec<Header> {
        let mut out: Vec<Header> = self
            .headers
            .iter()
            .filter(|h| !self.as_other.iter().any(|o| o.name == h.name))
            .cloned()
            .collect();
        out.extend(self.as_other.iter().cloned());
        out
    }

    /// Every header value given (the secrets the report and the log must not show).
    pub(super) fn secrets(&self) -> Vec<String> {
        self.headers
            .iter()
            .chain(&self.as_other)
            .filter_map(|h| h.value.to_str().ok())
            .flat_map(|v| {
                // The value, and its token after a scheme (`Bearer TOKEN`).
                let mut parts = vec![v.to_owned()];
                if let Some((_, token)) = v.split_once(' ') {
                    parts.push(token.trim().to_owned());
                }
                parts
            })
            .filter(|s| s.len() >= 6)
            .collect()
    }
}
