//! The arguments of `mrtr call`, and what they mean: the call to make, the
//! `--answers` and the `--root`s.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use mrtr::defaults;
use mrtr::wire::Root;
use mrtr_client::CarrierCall;

/// Arguments of `mrtr call`.
#[derive(Debug, Clone, clap::Args)]
#[command(
    override_usage = "mrtr call [OPTIONS] URL <tool NAME | prompt NAME | resource URI>\n       \
                      mrtr call [OPTIONS] <tool NAME | prompt NAME | resource URI> -- PROGRAM [ARGS]...",
    after_help = "Servers:\n  \
  mrtr call http://127.0.0.1:8808/mcp tool deploy --args '{\"service\":\"web\"}'\n  \
  mrtr call https://mcp.example.com/mcp --cacert ca.pem tool deploy ...\n  \
  MCP_TOKEN=... mrtr call https://mcp.example.com/mcp --bearer-env MCP_TOKEN tool deploy ...\n  \
  mrtr call https://mcp.example.com/mcp --logout\n  \
  mrtr call tool deploy --args '{\"service\":\"web\"}' -- mrtr serve --stdio --anonymous\n\n\
A URL is Streamable HTTP; https checks the server's certificate against the system's CA \
certificates, or with --cacert against the CAs in FILE only. Everything after -- is a \
command that starts the server, spoken to over its stdin and stdout (stdio transport); \
its stderr is shown on ours behind `server| `, and it is stopped when the call ends.\n\n\
A server behind OAuth (HTTP 401 with a resource_metadata challenge) is logged in to as the MCP \
authorization spec says: its metadata is read, a client registered if no --client-id is given, \
and the login URL printed with its issuer (opened with --open); the tokens are kept in a file \
only you can read (--token-cache) and refreshed. --client-credentials logs in without a browser. \
Every URL discovered must be https://, or plain http:// on the loopback origin of the server or \
of --oauth-issuer; no OAuth over plain http:// to a remote host.\n\n\
Exit codes: 0 complete, 1 tool error, 2 usage or input that cannot be given, \
3 protocol or transport error, 4 an answer given on the command line refused (the server's note \
on stderr)."
)]
pub struct CallArgs {
    /// The MCP endpoint over Streamable HTTP, http:// or https://, e.g.
    /// http://127.0.0.1:8080/mcp. Leave it out to start a stdio server with `-- PROGRAM [ARGS]...`.
    pub url: Option<String>,
    /// What to call (not needed with --logout).
    #[command(subcommand)]
    pub target: Option<CallTarget>,
    /// The stdio server to start instead of a URL: a program and its arguments,
    /// after `--`, e.g. `-- mrtr serve --stdio --anonymous`.
    #[arg(last = true, global = true, value_name = "PROGRAM [ARGS]")]
    pub command: Vec<String>,
    /// https: trust the CA certificates in FILE (PEM, one or more) instead of the
    /// system's, e.g. a private CA.
    #[arg(long, global = true, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// http(s): send this header with every request, as `Name: value`
    /// (repeatable), e.g. an API key. The MCP headers and HTTP's own cannot be
    /// set. For a token, prefer --bearer-env: a command line is visible to `ps`.
    #[arg(
        short = 'H',
        long = "header",
        global = true,
        value_name = "NAME: VALUE"
    )]
    pub headers: Vec<String>,
    /// http(s): send `Authorization: Bearer <token>` with the token read from the
    /// environment variable VAR (never from the command line, where `ps` shows it).
    #[arg(long, global = true, value_name = "VAR")]
    pub bearer_env: Option<String>,
    /// OAuth: the client id registered with the server's authorization server
    /// (else a client is registered dynamically, if the server allows it).
    #[arg(long, global = true, value_name = "ID")]
    pub client_id: Option<String>,
    /// OAuth: the client secret, read from the environment variable VAR (a
    /// confidential client; never from the command line). Needs --oauth-issuer:
    /// the secret is sent to that authorization server alone.
    #[arg(long, global = true, value_name = "VAR", requires = "client_id")]
    pub client_secret_env: Option<String>,
    /// OAuth: the authorization server (issuer) you expect: a server that names
    /// another is refused, and --client-id/--client-secret-env go to this one
    /// only. A loopback http:// issuer may be fetched over plain http.
    #[arg(long, global = true, value_name = "URL")]
    pub oauth_issuer: Option<String>,
    /// OAuth, for local testing: discovery may fetch plain http:// on any port
    /// of this machine (by default only the MCP server's own loopback origin and
    /// --oauth-issuer's), so that a remote server cannot aim requests at it.
    #[arg(long, global = true)]
    pub oauth_allow_loopback_http: bool,
    /// -H and --bearer-env: also send them over plain http:// to a host that is
    /// not loopback, where anyone on the path reads them. OAuth never does.
    #[arg(long, global = true)]
    pub insecure_http: bool,
    /// OAuth: get tokens with the client credentials grant (no browser, no user):
    /// needs --client-id and --client-secret-env.
    #[arg(long, global = true, requires = "client_secret_env")]
    pub client_credentials: bool,
    /// OAuth: a scope to ask for (repeatable). Default: the ones the server's
    /// challenge names, else the ones its metadata lists.
    #[arg(long = "scope", global = true, value_name = "SCOPE")]
    pub scopes: Vec<String>,
    /// OAuth: open the login URL in a browser (xdg-open or open) as well as printing it.
    #[arg(long, global = true)]
    pub open: bool,
    /// OAuth: never log in; use and refresh only the tokens in the cache.
    #[arg(long, global = true, conflicts_with = "client_credentials")]
    pub no_login: bool,
    /// OAuth: how long a login waits for the browser to come back.
    #[arg(long, global = true, value_name = "SECS", default_value_t = 300)]
    pub login_timeout: u64,
    /// OAuth: the token cache file (mode 0600). Default:
    /// $XDG_CACHE_HOME/mrtr/tokens.json, else ~/.cache/mrtr/tokens.json.
    #[arg(long, global = true, value_name = "PATH", env = "MRTR_TOKEN_CACHE")]
    pub token_cache: Option<PathBuf>,
    /// OAuth: forget the tokens kept for URL, and call nothing.
    #[arg(long, global = true)]
    pub logout: bool,
    /// stdio: show the server's stderr on ours (filtered, behind `server| `) or discard it.
    #[arg(long, global = true, value_enum, default_value_t = StderrArg::Show, value_name = "WHERE")]
    pub server_stderr: StderrArg,
    /// Answers by input-request key: a JSON object mapping each key to an
    /// InputResponse in wire shape, or @FILE to read it from a file.
    #[arg(long, global = true, value_name = "JSON|@FILE")]
    pub answers: Option<String>,
    /// Answer sampling requests with this text as the model's reply, without
    /// asking. Without it, sampling is declared only on a terminal, where you see
    /// what the server asks the model and type the reply (or :decline).
    #[arg(long, global = true, value_name = "TEXT")]
    pub sampling_reply: Option<String>,
    /// A root to offer for roots/list (repeatable). Without it, roots are declared
    /// only on a terminal, where the current directory is offered after you say yes.
    #[arg(long = "root", global = true, value_name = "PATH")]
    pub roots: Vec<PathBuf>,
    /// Never ask on the terminal: fail closed unless --answers covers the question.
    #[arg(long, global = true)]
    pub no_input: bool,
    /// Export the call's spans (one per request, the MCP semantic conventions,
    /// under one span for the call) and its mcp.client.operation.duration over
    /// OTLP/HTTP to the collector at URL (http://HOST:4318); each request
    /// carries its span's `traceparent` in `_meta`, so the server's spans join
    /// the trace. Without it, they are exported when
    /// OTEL_EXPORTER_OTLP_ENDPOINT (or the _TRACES_ or _METRICS_ one) is set.
    #[arg(long, global = true, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
    /// Which generation of MCP the server speaks: auto (tell it from the first
    /// request: a 2025-era server is called after initialize, its requests
    /// answered as input requests are), modern (2026-07-28) or legacy (2025-11-25,
    /// 2025-06-18, 2025-03-26). A 2025-era server's requests have no keys: for
    /// --answers they are `METHOD#N`, the N-th request of the call (e.g.
    /// `elicitation/create#1`). With auto, an http(s) endpoint found to be of the
    /// 2025 era is remembered in $MRTR_ERA_CACHE, else ~/.cache/mrtr/eras.json
    /// (an empty MRTR_ERA_CACHE remembers none).
    #[arg(long, global = true, value_enum, default_value_t = EraArg::Auto, value_name = "ERA")]
    pub era: EraArg,
    /// Print the whole result as JSON instead of its text content.
    #[arg(long, global = true)]
    pub json: bool,
    /// The most requests the flow may send.
    #[arg(long, global = true, default_value_t = defaults::CLIENT_MAX_ROUNDS)]
    pub max_rounds: u32,
    /// The longest the whole flow may take, in seconds.
    #[arg(long, global = true, default_value_t = defaults::CLIENT_TOTAL_TIMEOUT.as_secs(), value_name = "SECS")]
    pub timeout: u64,
    /// The longest one request may wait for its response, in seconds (raise it for
    /// a server that holds a request open while you finish a step in the browser).
    #[arg(long, global = true, default_value_t = defaults::CLIENT_REQUEST_TIMEOUT.as_secs(),
        value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub request_timeout: u64,
    /// The most questions one round may ask; a round that asks more ends the call
    /// before any of them is shown or answered.
    #[arg(long, global = true, default_value_t = defaults::CLIENT_MAX_QUESTIONS_PER_ROUND, value_name = "N")]
    pub max_questions_per_round: usize,
    /// The most questions of one round answered at the same time (the terminal
    /// still asks one at a time).
    #[arg(long, global = true, default_value_t = defaults::CLIENT_MAX_CONCURRENT_ANSWERS, value_name = "N")]
    pub max_concurrent_answers: usize,
    /// The most sampling requests (model replies) the whole flow may ask; 0 refuses all.
    #[arg(long, global = true, default_value_t = defaults::CLIENT_MAX_SAMPLING_PER_FLOW, value_name = "N")]
    pub max_sampling_per_flow: u32,
    /// The most bytes of answers (JSON) the whole flow may send.
    #[arg(long, global = true, default_value_t = defaults::CLIENT_MAX_ANSWER_BYTES, value_name = "BYTES")]
    pub max_answer_bytes: u64,
    /// The longest requestState the call echoes, in bytes; a server that sends a
    /// longer one ends the call before it is sent back (a default server's are at
    /// most 16 KiB).
    #[arg(long, global = true, default_value_t = defaults::CLIENT_MAX_STATE_BYTES, value_name = "BYTES")]
    pub max_state_bytes: usize,
    /// The most bytes of requests (JSON-RPC, the echoed requestState and the answers
    /// included) the whole flow may send; a request that would go over is not sent.
    #[arg(long, global = true, default_value_t = defaults::CLIENT_MAX_UPLOAD_BYTES, value_name = "BYTES")]
    pub max_upload_bytes: u64,
}

/// Where a stdio server's stderr goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StderrArg {
    /// On our stderr, a line at a time, filtered.
    Show,
    /// Nowhere.
    Discard,
}

/// `--era`: how the server's generation is picked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EraArg {
    /// Told by the first request.
    Auto,
    /// MCP 2026-07-28.
    Modern,
    /// The 2025 era (initialize, sessions, server requests).
    Legacy,
}

impl EraArg {
    /// The client's mode.
    pub fn mode(self) -> mrtr_client::EraMode {
        match self {
            Self::Auto => mrtr_client::EraMode::Auto,
            Self::Modern => mrtr_client::EraMode::Modern,
            Self::Legacy => mrtr_client::EraMode::Legacy,
        }
    }
}

/// What `mrtr call` calls.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum CallTarget {
    /// tools/call NAME
    Tool {
        /// The tool name.
        name: String,
        /// The arguments, a JSON object.
        #[arg(long, value_name = "JSON")]
        args: Option<String>,
    },
    /// prompts/get NAME
    Prompt {
        /// The prompt name.
        name: String,
        /// The arguments, a JSON object of strings.
        #[arg(long, value_name = "JSON")]
        args: Option<String>,
    },
    /// resources/read URI
    Resource {
        /// The resource URI.
        uri: String,
    },
}

pub(super) fn build_call(target: Option<&CallTarget>) -> Result<CarrierCall, String> {
    let Some(target) = target else {
        return Err("say what to call: tool NAME, prompt NAME or resource URI".into());
    };
    let args = |a: &Option<String>| -> Result<Value, String> {
        match a {
            None => Ok(Value::Null),
            Some(s) => match serde_json::from_str::<Value>(s) {
                Ok(v @ Value::Object(_)) => Ok(v),
                Ok(_) => Err("--args must be a JSON object".into()),
                Err(e) => Err(format!("--args is not valid JSON: {e}")),
            },
        }
    };
    Ok(match target {
        CallTarget::Tool { name, args: a } => CarrierCall::tool(name.clone(), args(a)?),
        CallTarget::Prompt { name, args: a } => {
            let v = args(a)?;
            if v.as_object()
                .is_some_and(|o| o.values().any(|x| !x.is_string()))
            {
                return Err("prompt --args values must be strings".into());
            }
            CarrierCall::prompt(name.clone(), v)
        }
        CallTarget::Resource { uri } => CarrierCall::resource(uri.clone()),
    })
}

pub(super) fn parse_answers(s: &str) -> Result<Map<String, Value>, String> {
    let text = match s.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| format!("--answers: cannot read {path}: {e}"))?,
        None => s.to_owned(),
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => {
            Err("--answers must be a JSON object mapping input-request keys to answers".into())
        }
        Err(e) => Err(format!("--answers is not valid JSON: {e}")),
    }
}

pub(super) fn roots_of(paths: &[PathBuf]) -> Result<Vec<Root>, String> {
    paths
        .iter()
        .map(|p| root_of(p).map_err(|e| format!("--root {}: {e}", p.display())))
        .collect()
}

pub(super) fn root_of(path: &Path) -> std::io::Result<Root> {
    let abs = std::fs::canonicalize(path)?;
    Ok(Root {
        uri: file_uri(&abs),
        name: abs.file_name().map(|n| n.to_string_lossy().into_owned()),
        meta: None,
    })
}

/// `file://` URI of an absolute path, percent-encoding all but unreserved characters and `/`.
pub(crate) fn file_uri(path: &Path) -> String {
    let mut s = String::from("file://");
    for b in path.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            s.push(char::from(b));
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_are_percent_encoded() {
        assert_eq!(
            file_uri(Path::new("/home/a b/ü")),
            "file:///home/a%20b/%C3%BC"
        );
    }
}
