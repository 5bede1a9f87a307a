//! `mrtr call`: a terminal client for trying any MRTR server, built on
//! [`mrtr::client`]. Part of the `mrtr` binary, not of the library's API; tests
//! include this file with `#[path]`, so it names the library `mrtr::`, never `crate::`.
//!
//! ```text
//! mrtr call URL tool NAME [--args JSON]        Streamable HTTP (http:// or https://)
//! mrtr call URL prompt NAME [--args JSON]
//! mrtr call URL resource URI
//! mrtr call tool NAME [OPTIONS] -- PROGRAM [ARGS]...   stdio: starts the server
//!     [--cacert FILE] [--server-stderr show|discard]
//!     [--answers JSON|@FILE] [--sampling-reply TEXT] [--root PATH]... [--no-input]
//!     [--json] [--max-rounds N] [--timeout SECS] [--request-timeout SECS]
//!     [--max-questions-per-round N] [--max-concurrent-answers N]
//!     [--max-sampling-per-flow N] [--max-answer-bytes N]
//!     [--max-state-bytes N] [--max-upload-bytes N]
//! ```
//!
//! Input requests are answered in this order: an entry of `--answers` with the
//! request's key (an `InputResponse` in wire shape); otherwise roots from
//! `--root`, sampling from `--sampling-reply`; otherwise the user is asked on the
//! terminal: form elicitations field by field (types checked with the library's
//! answer validation, choices listed, defaults offered, `:decline` / `:cancel`),
//! url elicitations as a link with its host and a y/n consent, sampling as "here
//! is what the server asks the model; type the model's reply", roots as "share the
//! current directory? y/n". Prompts go to stderr, the result to stdout.
//!
//! # Consent
//! The client declares only what it can answer with the user's consent:
//! `sampling` only with `--sampling-reply`, an `--answers` entry of that shape, or
//! a terminal to ask on; `roots` likewise with `--root`. Nothing is shared by
//! default: without `--root`, the current directory is offered only after the user
//! says yes on the terminal.
//!
//! # What a server can make it do
//! Every cap of the client driver is a flag (defaults in `mrtr::defaults`): rounds,
//! questions per round, questions answered at once, sampling requests per flow,
//! bytes answered per flow, the longest `requestState` echoed, bytes uploaded per
//! flow, time per request and per flow. Everything a server
//! wrote goes to the terminal through [`Sanitized`] (no control characters, no
//! bidirectional overrides), on one line where one line is meant, and with every
//! line after the first behind a `|` where a message may have several, so a
//! server cannot draw the tool's own prompts. Links are offered only over
//! `https` (or `http` to this machine), with their host on a line of its own.
//!
//! Without a terminal on stdin (or with `--no-input`) nothing is asked: a
//! question that `--answers` does not cover fails the call closed, naming the
//! key and showing how to answer it.
//!
//! # Where the server is
//! A URL is Streamable HTTP: `http://`, or `https://` checked against the system's
//! CA certificates, or with `--cacert FILE` against the CAs in FILE only (as curl
//! does). A command after `--` is started as the server and spoken to on its stdin
//! and stdout (stdio transport); its stderr is shown on ours a line at a time,
//! filtered as server text is, behind `server| `, and never in the middle of a
//! question. When the call ends the server's stdin is closed and it gets a moment
//! to exit before it is killed.
//!
//! Exit codes: 0 complete; 1 tool error (`isError: true`, printed on stderr);
//! 2 usage (bad arguments, a malformed `--answers` entry, or input needed that
//! cannot be given); 3 protocol or transport error (a cap reached included).

use std::io::{BufRead, IsTerminal, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Map, Value, json};

use mrtr::answers::validate_content;
use mrtr::client::{
    BoxFuture, Cap, CarrierCall, Client, ClientError, HandlerError, HttpTransport, InputContext,
    InputHandler, ServerStderr, StdioTransport, Transport, TransportError,
};
use mrtr::defaults;
use mrtr::wire::JsonObject;
use mrtr::wire::input::{
    CreateMessageParams, CreateMessageResult, ElicitAction, ElicitFormParams, ElicitParams,
    ElicitResult, ElicitUrlParams, InputKind, InputResponse, ListRootsResult, Root,
};
use mrtr::wire::meta::{ClientCapabilities, ElicitationCapability, SamplingCapability};
use mrtr::wire::schema::{PrimitiveSchema, RequestedSchema, StringFormat};

/// Exit code: the call completed.
pub(crate) const EXIT_OK: i32 = 0;
/// Exit code: the tool ran and failed (`isError: true`).
pub(crate) const EXIT_TOOL_ERROR: i32 = 1;
/// Exit code: bad arguments, or input was needed that could not be given.
pub(crate) const EXIT_USAGE: i32 = 2;
/// Exit code: a protocol or transport error.
pub(crate) const EXIT_PROTOCOL: i32 = 3;

/// How long a stdio server gets to exit after its stdin closes, before it is killed.
const STDIO_GRACE: Duration = Duration::from_secs(2);

/// How long the last lines of a stopped stdio server's stderr are waited for (only a
/// process it left behind, holding the pipe open, makes the wait this long).
const STDERR_DRAIN: Duration = Duration::from_secs(2);

/// Lines of the server's stderr held while a question is on the terminal; more are dropped.
const STDERR_BACKLOG: usize = 1024;

/// Arguments of `mrtr call`.
#[derive(Debug, Clone, clap::Args)]
#[command(
    override_usage = "mrtr call [OPTIONS] URL <tool NAME | prompt NAME | resource URI>\n       \
                      mrtr call [OPTIONS] <tool NAME | prompt NAME | resource URI> -- PROGRAM [ARGS]...",
    after_help = "Servers:\n  \
  mrtr call http://127.0.0.1:8808/mcp tool deploy --args '{\"service\":\"web\"}'\n  \
  mrtr call https://mcp.example.com/mcp --cacert ca.pem tool deploy ...\n  \
  mrtr call tool deploy --args '{\"service\":\"web\"}' -- mrtr serve --stdio --anonymous\n\n\
A URL is Streamable HTTP; https checks the server's certificate against the system's CA \
certificates, or with --cacert against the CAs in FILE only. Everything after -- is a \
command that starts the server, spoken to over its stdin and stdout (stdio transport); \
its stderr is shown on ours behind `server| `, and it is stopped when the call ends.\n\n\
Exit codes: 0 complete, 1 tool error, 2 usage or input that cannot be given, \
3 protocol or transport error."
)]
pub(crate) struct CallArgs {
    /// The MCP endpoint over Streamable HTTP, http:// or https://, e.g.
    /// http://127.0.0.1:8080/mcp. Leave it out to start a stdio server with `-- PROGRAM [ARGS]...`.
    pub(crate) url: Option<String>,
    /// What to call.
    #[command(subcommand)]
    pub(crate) target: CallTarget,
    /// The stdio server to start instead of a URL: a program and its arguments,
    /// after `--`, e.g. `-- mrtr serve --stdio --anonymous`.
    #[arg(last = true, global = true, value_name = "PROGRAM [ARGS]")]
    pub(crate) command: Vec<String>,
    /// https: trust the CA certificates in FILE (PEM, one or more) instead of the
    /// system's, e.g. a private CA.
    #[arg(long, global = true, value_name = "FILE")]
    pub(crate) cacert: Option<PathBuf>,
    /// stdio: show the server's stderr on ours (filtered, behind `server| `) or discard it.
    #[arg(long, global = true, value_enum, default_value_t = StderrArg::Show, value_name = "WHERE")]
    pub(crate) server_stderr: StderrArg,
    /// Answers by input-request key: a JSON object mapping each key to an
    /// InputResponse in wire shape, or @FILE to read it from a file.
    #[arg(long, global = true, value_name = "JSON|@FILE")]
    pub(crate) answers: Option<String>,
    /// Answer sampling requests with this text as the model's reply, without
    /// asking. Without it, sampling is declared only on a terminal, where you see
    /// what the server asks the model and type the reply (or :decline).
    #[arg(long, global = true, value_name = "TEXT")]
    pub(crate) sampling_reply: Option<String>,
    /// A root to offer for roots/list (repeatable). Without it, roots are declared
    /// only on a terminal, where the current directory is offered after you say yes.
    #[arg(long = "root", global = true, value_name = "PATH")]
    pub(crate) roots: Vec<PathBuf>,
    /// Never ask on the terminal: fail closed unless --answers covers the question.
    #[arg(long, global = true)]
    pub(crate) no_input: bool,
    /// Print the whole result as JSON instead of its text content.
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// The most requests the flow may send.
    #[arg(long, global = true, default_value_t = defaults::CLIENT_MAX_ROUNDS)]
    pub(crate) max_rounds: u32,
    /// The longest the whole flow may take, in seconds.
    #[arg(long, global = true, default_value_t = defaults::CLIENT_TOTAL_TIMEOUT.as_secs(), value_name = "SECS")]
    pub(crate) timeout: u64,
    /// The longest one request may wait for its response, in seconds (raise it for
    /// a server that holds a request open while you finish a step in the browser).
    #[arg(long, global = true, default_value_t = defaults::CLIENT_REQUEST_TIMEOUT.as_secs(),
        value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) request_timeout: u64,
    /// The most questions one round may ask; a round that asks more ends the call
    /// before any of them is shown or answered.
    #[arg(long, global = true, default_value_t = defaults::CLIENT_MAX_QUESTIONS_PER_ROUND, value_name = "N")]
    pub(crate) max_questions_per_round: usize,
    /// The most questions of one round answered at the same time (the terminal
    /// still asks one at a time).
    #[arg(long, global = true, default_value_t = defaults::CLIENT_MAX_CONCURRENT_ANSWERS, value_name = "N")]
    pub(crate) max_concurrent_answers: usize,
    /// The most sampling requests (model replies) the whole flow may ask; 0 refuses all.
    #[arg(long, global = true, default_value_t = defaults::CLIENT_MAX_SAMPLING_PER_FLOW, value_name = "N")]
    pub(crate) max_sampling_per_flow: u32,
    /// The most bytes of answers (JSON) the whole flow may send.
    #[arg(long, global = true, default_value_t = defaults::CLIENT_MAX_ANSWER_BYTES, value_name = "BYTES")]
    pub(crate) max_answer_bytes: u64,
    /// The longest requestState the call echoes, in bytes; a server that sends a
    /// longer one ends the call before it is sent back (a default server's are at
    /// most 16 KiB).
    #[arg(long, global = true, default_value_t = defaults::CLIENT_MAX_STATE_BYTES, value_name = "BYTES")]
    pub(crate) max_state_bytes: usize,
    /// The most bytes of requests (JSON-RPC, the echoed requestState and the answers
    /// included) the whole flow may send; a request that would go over is not sent.
    #[arg(long, global = true, default_value_t = defaults::CLIENT_MAX_UPLOAD_BYTES, value_name = "BYTES")]
    pub(crate) max_upload_bytes: u64,
}

/// Where a stdio server's stderr goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum StderrArg {
    /// On our stderr, a line at a time, filtered.
    Show,
    /// Nowhere.
    Discard,
}

/// What `mrtr call` calls.
#[derive(Debug, Clone, clap::Subcommand)]
pub(crate) enum CallTarget {
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

/// Runs `mrtr call`, printing the result on stdout and messages on stderr.
/// Returns the process exit code.
pub(crate) async fn run_call(args: CallArgs) -> i32 {
    let mut out = Sanitized::new(std::io::stdout());
    let mut err = Sanitized::new(std::io::stderr());
    run_call_with_output(args, &mut out, &mut err).await
}

// ---------------------------------------------------------------------------
// What reaches the terminal
// ---------------------------------------------------------------------------

/// Whether `c` may reach the terminal. Out: the C0 controls but newline and tab
/// (escape sequences, carriage returns that overwrite a prompt, bells), DEL, the C1
/// controls U+0080–U+009F (U+009B is a one-character CSI, U+009D an OSC on many
/// terminals), the bidirectional controls that reorder what is shown (U+061C,
/// U+200E/F, U+202A–E, U+2066–9) and the Unicode line and paragraph separators.
pub(crate) fn is_shown(c: char) -> bool {
    !matches!(c,
        '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        | '\u{2028}' | '\u{2029}')
}

/// A writer for the terminal that passes only characters for which [`is_shown`]
/// holds, so nothing a server sends (a message, a field title, a link, a result)
/// can move the cursor, change colours, the title or the clipboard, overwrite a
/// prompt or reorder text. Works on characters, not bytes: a character split
/// across writes is held until it is whole, and bytes that are not UTF-8 become
/// U+FFFD (a lone 0x9B byte is a CSI to some terminals too).
pub(crate) struct Sanitized<W> {
    inner: W,
    /// The start of a character whose other bytes have not been written yet (at most 3 bytes).
    partial: Vec<u8>,
}

impl<W> Sanitized<W> {
    pub(crate) fn new(inner: W) -> Self {
        Self {
            inner,
            partial: Vec::new(),
        }
    }

    #[cfg(test)]
    fn into_inner(self) -> W {
        self.inner
    }
}

impl<W: Write> Write for Sanitized<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.partial.extend_from_slice(buf);
        let mut clean = String::with_capacity(self.partial.len());
        let mut rest: &[u8] = &self.partial;
        loop {
            match std::str::from_utf8(rest) {
                Ok(s) => {
                    clean.extend(s.chars().filter(|&c| is_shown(c)));
                    rest = &[];
                    break;
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    let valid = std::str::from_utf8(valid).unwrap_or_default();
                    clean.extend(valid.chars().filter(|&c| is_shown(c)));
                    match e.error_len() {
                        Some(bad) => {
                            clean.push(char::REPLACEMENT_CHARACTER);
                            rest = after.get(bad..).unwrap_or_default();
                        }
                        // A character cut short: keep its start for the next write.
                        None => {
                            rest = after;
                            break;
                        }
                    }
                }
            }
        }
        let keep = rest.to_vec();
        self.partial = keep;
        self.inner.write_all(clean.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Whether `c` ends a line for some terminal or editor.
fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{b}' | '\u{c}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// Server text meant as one line (a title, an option, a link, a name): line
/// breaks and tabs become spaces, other controls go.
pub(crate) fn one_line(s: &str) -> String {
    s.chars()
        .filter_map(|c| {
            if is_line_break(c) || c == '\t' {
                Some(' ')
            } else if c.is_control() || !is_shown(c) {
                None
            } else {
                Some(c)
            }
        })
        .collect()
}

/// Server text that may have several lines (a message): the first as is, every
/// further one behind `  | `, so no line of it starts where the tool's own
/// prompts and notices start.
pub(crate) fn quoted(s: &str) -> String {
    let s = s.replace("\r\n", "\n");
    s.split(is_line_break)
        .map(one_line)
        .collect::<Vec<_>>()
        .join("\n  | ")
}

/// Pretty JSON for the terminal: the characters [`is_shown`] refuses can only sit
/// inside strings here, so they are written as `\uXXXX` escapes and the JSON
/// still means exactly what the server sent.
fn shown_json(v: &Value) -> String {
    let pretty = serde_json::to_string_pretty(v).unwrap_or_default();
    let mut out = String::with_capacity(pretty.len());
    for c in pretty.chars() {
        if is_shown(c) {
            out.push(c);
        } else {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        }
    }
    out
}

// ---------------------------------------------------------------------------
// The call
// ---------------------------------------------------------------------------

/// [`run_call`] writing the result to `out` and messages to `err` (for tests and embedding).
/// Interactive questions, if any, still use the process's terminal.
pub(crate) async fn run_call_with_output(
    args: CallArgs,
    out: &mut (dyn Write + Send),
    err: &mut (dyn Write + Send),
) -> i32 {
    let call = match build_call(&args.target) {
        Ok(c) => c,
        Err(msg) => return usage(err, &msg),
    };
    let answers = match args.answers.as_deref().map(parse_answers).transpose() {
        Ok(a) => a.unwrap_or_default(),
        Err(msg) => return usage(err, &msg),
    };
    let roots = if args.roots.is_empty() {
        None
    } else {
        match roots_of(&args.roots) {
            Ok(r) => Some(r),
            Err(msg) => return usage(err, &msg),
        }
    };
    let server = match connect(&args) {
        Ok(s) => s,
        Err(Connect::Usage(msg)) => return usage(err, &msg),
        Err(Connect::Failed(e)) => {
            let _ = writeln!(err, "error: {}", one_line(&e.to_string()));
            return EXIT_PROTOCOL;
        }
    };
    let interactive = !args.no_input && std::io::stdin().is_terminal();
    let handler = Arc::new(CliHandler {
        answers,
        sampling_reply: args.sampling_reply.clone(),
        roots,
        interactive,
        terminal: tokio::sync::Mutex::new(()),
        failed_closed: AtomicBool::new(false),
    });
    let printer = server
        .stderr_lines
        .map(|lines| tokio::spawn(show_server_stderr(lines, handler.clone())));
    let client = Client::builder(server.transport)
        .shared_handler(handler.clone())
        .client_info("mrtr-call", env!("CARGO_PKG_VERSION"))
        .max_rounds(args.max_rounds)
        .total_timeout(Some(Duration::from_secs(args.timeout)))
        .request_timeout(Some(Duration::from_secs(args.request_timeout)))
        .max_questions_per_round(args.max_questions_per_round)
        .max_concurrent_answers(args.max_concurrent_answers)
        .max_sampling_per_flow(args.max_sampling_per_flow)
        .max_answer_bytes(args.max_answer_bytes)
        .max_state_bytes(args.max_state_bytes)
        .max_upload_bytes(args.max_upload_bytes)
        .build();
    let outcome = client.call(call).await;
    drop(client);
    if let Some(stdio) = server.stdio {
        stdio.shutdown(STDIO_GRACE).await;
        drop(stdio);
    }
    if let Some(printer) = printer {
        // The server's last lines, once its stderr has closed.
        let _ = tokio::time::timeout(STDERR_DRAIN, printer).await;
    }
    match outcome {
        Ok(done) => {
            let shown = if args.json || done.text().is_empty() {
                shown_json(&done.result)
            } else {
                done.text()
            };
            if done.is_tool_error() {
                let _ = writeln!(err, "tool error: {}", quoted(&shown));
                EXIT_TOOL_ERROR
            } else {
                let _ = writeln!(out, "{shown}");
                EXIT_OK
            }
        }
        Err(e) => {
            let _ = writeln!(err, "error: {}", one_line(&e.to_string()));
            if let ClientError::JsonRpc { data: Some(d), .. } = &e {
                let _ = writeln!(err, "data: {}", one_line(&shown_json(d)));
            }
            if let Some(hint) = hint(&e) {
                let _ = writeln!(err, "hint: {hint}");
            }
            if handler.failed_closed.load(Ordering::Relaxed) {
                EXIT_USAGE
            } else {
                EXIT_PROTOCOL
            }
        }
    }
}

/// What to do about an error the user can fix with a flag.
fn hint(e: &ClientError) -> Option<&'static str> {
    match e {
        ClientError::UndeclaredInput {
            kind: InputKind::Sampling,
            ..
        } => Some("to answer sampling requests, pass --sampling-reply TEXT or run on a terminal"),
        ClientError::UndeclaredInput {
            kind: InputKind::Roots,
            ..
        } => Some("to share roots, pass --root PATH or run on a terminal"),
        ClientError::CapExceeded {
            cap: Cap::StateBytes,
            ..
        } => Some(
            "--max-state-bytes BYTES raises this cap; raise it only for a server you trust \
             (the state is sent back on every round)",
        ),
        ClientError::CapExceeded {
            cap: Cap::UploadBytes,
            ..
        } => Some("--max-upload-bytes BYTES raises this cap; raise it only for a server you trust"),
        ClientError::CapExceeded { .. } => {
            Some("the caps are flags (see mrtr call --help); raise one only for a server you trust")
        }
        ClientError::RequestTimeout { .. } => Some("--request-timeout SECS waits longer"),
        ClientError::Transport(TransportError::Tls(_)) => {
            Some("for a server whose certificate comes from a private CA, pass --cacert FILE (PEM)")
        }
        _ => None,
    }
}

/// The server to call, ready: the transport, and for stdio the process to stop
/// at the end and the lines of its stderr to show.
struct Server {
    transport: Arc<dyn Transport>,
    stdio: Option<Arc<StdioTransport>>,
    stderr_lines: Option<tokio::sync::mpsc::Receiver<String>>,
}

/// Why there is no server to call.
enum Connect {
    /// The arguments do not name one (exit 2).
    Usage(String),
    /// It could not be reached or started (exit 3).
    Failed(TransportError),
}

/// The transport the arguments name: a URL, or a command after `--`.
fn connect(args: &CallArgs) -> Result<Server, Connect> {
    match (&args.url, args.command.split_first()) {
        (Some(_), Some(_)) => Err(Connect::Usage(
            "give a URL or a server command after --, not both".into(),
        )),
        (None, None) => Err(Connect::Usage(
            "no server: give its URL (mrtr call URL tool NAME) or the command that starts it \
             (mrtr call tool NAME -- PROGRAM ARGS...)"
                .into(),
        )),
        (Some(url), None) => {
            let mut builder = HttpTransport::builder(url);
            if let Some(path) = &args.cacert {
                if !url
                    .get(..8)
                    .is_some_and(|s| s.eq_ignore_ascii_case("https://"))
                {
                    return Err(Connect::Usage("--cacert is for https:// URLs".into()));
                }
                let shown = path.display();
                let pem = std::fs::read(path).map_err(|e| {
                    Connect::Usage(format!("--cacert {shown}: cannot read it: {e}"))
                })?;
                builder = builder
                    .add_root_pem(&pem)
                    .map_err(|e| Connect::Usage(format!("--cacert {shown}: {e}")))?
                    .platform_roots(false);
            }
            let transport = builder.build().map_err(|e| match e {
                TransportError::InvalidRequest(msg) => Connect::Usage(msg),
                e => Connect::Failed(e),
            })?;
            Ok(Server {
                transport: Arc::new(transport),
                stdio: None,
                stderr_lines: None,
            })
        }
        (None, Some((program, rest))) => {
            if args.cacert.is_some() {
                return Err(Connect::Usage("--cacert is for https:// URLs".into()));
            }
            let mut command = std::process::Command::new(program);
            command.args(rest);
            let (stderr, stderr_lines) = match args.server_stderr {
                StderrArg::Discard => (ServerStderr::Discard, None),
                StderrArg::Show => {
                    let (tx, rx) = tokio::sync::mpsc::channel(STDERR_BACKLOG);
                    let sink = ServerStderr::lines(move |line| {
                        let _ = tx.try_send(line.to_owned());
                    });
                    (sink, Some(rx))
                }
            };
            let stdio = StdioTransport::builder(command)
                .stderr(stderr)
                .spawn()
                .map_err(Connect::Failed)?;
            let stdio = Arc::new(stdio);
            Ok(Server {
                transport: stdio.clone(),
                stdio: Some(stdio),
                stderr_lines,
            })
        }
    }
}

/// Shows the stdio server's stderr on ours, a line at a time, filtered as any
/// server text, and never while a question is on the terminal.
async fn show_server_stderr(
    mut lines: tokio::sync::mpsc::Receiver<String>,
    handler: Arc<CliHandler>,
) {
    while let Some(line) = lines.recv().await {
        let _dialog = handler.terminal.lock().await;
        let mut err = Sanitized::new(std::io::stderr());
        let _ = writeln!(err, "server| {}", one_line(&line));
    }
}

fn usage(err: &mut (dyn Write + Send), msg: &str) -> i32 {
    let _ = writeln!(err, "error: {}", one_line(msg));
    EXIT_USAGE
}

fn build_call(target: &CallTarget) -> Result<CarrierCall, String> {
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

fn parse_answers(s: &str) -> Result<Map<String, Value>, String> {
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

fn roots_of(paths: &[PathBuf]) -> Result<Vec<Root>, String> {
    paths
        .iter()
        .map(|p| root_of(p).map_err(|e| format!("--root {}: {e}", p.display())))
        .collect()
}

fn root_of(path: &Path) -> std::io::Result<Root> {
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

// ---------------------------------------------------------------------------
// The handler
// ---------------------------------------------------------------------------

/// Answers input requests from `--answers`, the flags, or the terminal.
#[derive(Debug)]
struct CliHandler {
    answers: Map<String, Value>,
    sampling_reply: Option<String>,
    /// The roots of `--root`; `None` when none was given.
    roots: Option<Vec<Root>>,
    interactive: bool,
    /// One dialog at a time on the terminal (a round's questions run concurrently).
    terminal: tokio::sync::Mutex<()>,
    /// Set when the flow failed for want of a usable answer: exit 2 (usage), not 3.
    failed_closed: AtomicBool,
}

impl CliHandler {
    /// The `--answers` entry for `key`, parsed as the asked kind.
    fn given(&self, key: &str, kind: InputKind) -> Option<Result<InputResponse, HandlerError>> {
        self.answers.get(key).map(|v| {
            InputResponse::parse_as(kind, v).map_err(|e| {
                // A bad answer on the command line is a usage error.
                self.failed_closed.store(true, Ordering::Relaxed);
                HandlerError::Failed(format!(
                    "--answers[{key:?}] is not a valid {} answer: {e}",
                    kind.as_str()
                ))
            })
        })
    }

    /// Whether some `--answers` entry has the shape of an answer to `kind`.
    fn answers_kind(&self, kind: InputKind) -> bool {
        self.answers.values().any(|v| {
            matches!(
                (kind, InputResponse::from_value(v)),
                (InputKind::Sampling, Ok(InputResponse::CreateMessage(_)))
                    | (InputKind::Roots, Ok(InputResponse::ListRoots(_)))
            )
        })
    }

    fn closed(
        &self,
        ctx: &InputContext,
        kind: InputKind,
        form: Option<&RequestedSchema>,
    ) -> HandlerError {
        self.failed_closed.store(true, Ordering::Relaxed);
        let example = match (kind, form) {
            (InputKind::ElicitForm, Some(schema)) => {
                let fields: Vec<String> = schema
                    .properties
                    .iter()
                    .map(|(name, f)| format!("{name:?}: <{}>", kind_of(f)))
                    .collect();
                format!(r#"{{"action": "accept", "content": {{{}}}}}"#, fields.join(", "))
            }
            (InputKind::ElicitForm, None) => r#"{"action": "accept", "content": {...}}"#.to_owned(),
            (InputKind::ElicitUrl, _) => r#"{"action": "accept"}"#.to_owned(),
            (InputKind::Sampling, _) => {
                r#"{"role": "assistant", "content": {"type": "text", "text": "..."}, "model": "..."}"#.to_owned()
            }
            (InputKind::Roots, _) => r#"{"roots": [{"uri": "file:///..."}]}"#.to_owned(),
            // A kind this client does not know (`InputKind` may grow).
            _ => "{...}".to_owned(),
        };
        HandlerError::Failed(format!(
            "no terminal to ask on (stdin is not a terminal, or --no-input); answer it with --answers '{{{:?}: {example}}}'",
            ctx.key
        ))
    }

    async fn dialog<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut dyn BufRead, &mut dyn Write) -> T + Send + 'static,
    ) -> Result<T, HandlerError> {
        let _guard = self.terminal.lock().await;
        tokio::task::spawn_blocking(move || {
            let stdin = std::io::stdin();
            let mut input = stdin.lock();
            let mut output = Sanitized::new(std::io::stderr());
            f(&mut input, &mut output)
        })
        .await
        .map_err(|e| HandlerError::Failed(format!("terminal dialog failed: {e}")))
    }
}

fn expect_elicit(r: InputResponse) -> ElicitResult {
    match r {
        InputResponse::Elicit(e) => e,
        // parse_as with an elicitation kind only yields Elicit.
        _ => ElicitResult {
            action: ElicitAction::Cancel,
            content: None,
        },
    }
}

impl InputHandler for CliHandler {
    fn capabilities(&self) -> ClientCapabilities {
        let sampling = self.sampling_reply.is_some()
            || self.interactive
            || self.answers_kind(InputKind::Sampling);
        let roots = self.roots.is_some() || self.interactive || self.answers_kind(InputKind::Roots);
        ClientCapabilities {
            elicitation: Some(ElicitationCapability {
                form: Some(JsonObject::new()),
                url: Some(JsonObject::new()),
                ..Default::default()
            }),
            sampling: sampling.then(SamplingCapability::default),
            roots: roots.then(JsonObject::new),
            ..Default::default()
        }
    }

    fn elicit(
        &self,
        ctx: InputContext,
        params: ElicitParams,
    ) -> BoxFuture<'_, Result<ElicitResult, HandlerError>> {
        Box::pin(async move {
            let (kind, schema) = match &params {
                ElicitParams::Form(f) => (InputKind::ElicitForm, Some(&f.requested_schema)),
                ElicitParams::Url(_) => (InputKind::ElicitUrl, None),
                // An elicitation mode this client does not know (`ElicitParams` may grow).
                _ => return Err(HandlerError::Unsupported),
            };
            if let Some(r) = self.given(&ctx.key, kind) {
                let mut answer = r.map(expect_elicit)?;
                // An accepted form from the command line is checked like a typed one,
                // and sent without keys the form does not define.
                if let (Some(schema), Some(content)) = (schema, &answer.content)
                    && answer.action == ElicitAction::Accept
                {
                    let kept = validate_content(schema, content).map_err(|problems| {
                        self.failed_closed.store(true, Ordering::Relaxed);
                        HandlerError::Failed(format!(
                            "--answers[{:?}] does not fit the form: {}",
                            ctx.key,
                            problem_list(&problems)
                        ))
                    })?;
                    answer.content = Some(kept);
                }
                return Ok(answer);
            }
            if !self.interactive {
                return Err(self.closed(&ctx, kind, schema));
            }
            match params {
                ElicitParams::Form(form) => self.dialog(move |i, o| ask_form(&form, i, o)).await?,
                ElicitParams::Url(url) => self.dialog(move |i, o| ask_url(&url, i, o)).await?,
                _ => return Err(HandlerError::Unsupported),
            }
            .map_err(|e| HandlerError::Failed(format!("terminal: {e}")))
        })
    }

    fn create_message(
        &self,
        ctx: InputContext,
        params: CreateMessageParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, HandlerError>> {
        Box::pin(async move {
            if let Some(r) = self.given(&ctx.key, InputKind::Sampling) {
                return r.map(|a| match a {
                    InputResponse::CreateMessage(m) => m,
                    _ => model_reply(String::new()),
                });
            }
            if let Some(text) = &self.sampling_reply {
                return Ok(model_reply(text.clone()));
            }
            if !self.interactive {
                return Err(self.closed(&ctx, InputKind::Sampling, None));
            }
            let reply = self
                .dialog(move |i, o| ask_sampling(&params, i, o))
                .await?
                .map_err(|e| HandlerError::Failed(format!("terminal: {e}")))?;
            reply.map(model_reply).ok_or(HandlerError::Declined)
        })
    }

    fn list_roots(
        &self,
        ctx: InputContext,
    ) -> BoxFuture<'_, Result<ListRootsResult, HandlerError>> {
        Box::pin(async move {
            if let Some(r) = self.given(&ctx.key, InputKind::Roots) {
                return r.map(|a| match a {
                    InputResponse::ListRoots(l) => l,
                    _ => ListRootsResult { roots: vec![] },
                });
            }
            if let Some(roots) = &self.roots {
                return Ok(ListRootsResult {
                    roots: roots.clone(),
                });
            }
            if !self.interactive {
                return Err(self.closed(&ctx, InputKind::Roots, None));
            }
            let here = std::env::current_dir()
                .and_then(|d| root_of(&d))
                .map_err(|e| {
                    HandlerError::Failed(format!("cannot read the current directory: {e}"))
                })?;
            let offered = here.clone();
            let shared = self
                .dialog(move |i, o| ask_roots(&offered, i, o))
                .await?
                .map_err(|e| HandlerError::Failed(format!("terminal: {e}")))?;
            if shared {
                Ok(ListRootsResult { roots: vec![here] })
            } else {
                Err(HandlerError::Declined)
            }
        })
    }
}

fn model_reply(text: String) -> CreateMessageResult {
    CreateMessageResult {
        role: "assistant".into(),
        content: json!({"type": "text", "text": text}),
        model: "mrtr-call-user".into(),
        stop_reason: Some("endTurn".into()),
        meta: None,
    }
}

// ---------------------------------------------------------------------------
// The dialogs
// ---------------------------------------------------------------------------

/// What the user typed for one field.
enum Typed {
    Line(String),
    Decline,
    Cancel,
}

fn read(input: &mut dyn BufRead) -> std::io::Result<Typed> {
    let mut raw = Vec::new();
    if input.read_until(b'\n', &mut raw)? == 0 {
        // End of input: the user went away.
        return Ok(Typed::Cancel);
    }
    // Bytes that are not UTF-8 (a terminal in another encoding) become U+FFFD and
    // fail the field's checks, rather than end the dialog.
    let line = String::from_utf8_lossy(&raw);
    let line = line.trim_end_matches(['\n', '\r']).to_owned();
    Ok(match line.trim() {
        ":decline" => Typed::Decline,
        ":cancel" => Typed::Cancel,
        _ => Typed::Line(line),
    })
}

fn refusal(action: ElicitAction) -> ElicitResult {
    ElicitResult {
        action,
        content: None,
    }
}

fn problem_list(problems: &[mrtr::answers::AnswerProblem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Asks a form field by field. Generic over the streams so it can be tested.
pub(crate) fn ask_form(
    form: &ElicitFormParams,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> std::io::Result<ElicitResult> {
    writeln!(out, "\n? {}", quoted(&form.message))?;
    writeln!(
        out,
        "  (answer each field; empty keeps the default or skips an optional field; :decline or :cancel to refuse)"
    )?;
    let schema: &RequestedSchema = &form.requested_schema;
    let mut content = JsonObject::new();
    for (name, field) in &schema.properties {
        let required = schema.is_required(name);
        loop {
            write!(out, "{}", field_prompt(name, field, required))?;
            out.flush()?;
            let line = match read(input)? {
                Typed::Decline => return Ok(refusal(ElicitAction::Decline)),
                Typed::Cancel => return Ok(refusal(ElicitAction::Cancel)),
                Typed::Line(l) => l,
            };
            match parse_field(name, field, line.trim(), required) {
                Ok(Some(v)) => {
                    content.insert(name.clone(), v);
                    break;
                }
                Ok(None) => break,
                Err(msg) => writeln!(out, "  ! {}", one_line(&msg))?,
            }
        }
    }
    // The whole form once more, as the server will check it (e.g. a `required`
    // name no field defines can never be met: say so rather than send it).
    match validate_content(schema, &content) {
        Ok(kept) => Ok(ElicitResult {
            action: ElicitAction::Accept,
            content: Some(kept),
        }),
        Err(problems) => {
            writeln!(
                out,
                "  ! the form cannot be completed ({}); cancelled",
                one_line(&problem_list(&problems))
            )?;
            Ok(refusal(ElicitAction::Cancel))
        }
    }
}

fn field_prompt(name: &str, field: &PrimitiveSchema, required: bool) -> String {
    let mut s = format!("  {}", one_line(field.title().unwrap_or(name)));
    if let Some(d) = field.description() {
        s.push_str(&format!(" — {}", one_line(d)));
    }
    let mut choices = Vec::new();
    let (ty, default) = match field {
        PrimitiveSchema::String {
            default,
            format,
            min_length,
            max_length,
            ..
        } => {
            let mut t = format.map_or("text", StringFormat::as_str).to_owned();
            if min_length.is_some() || max_length.is_some() {
                t.push_str(&format!(
                    ", {}..{} chars",
                    fmt_opt(min_length),
                    fmt_opt(max_length)
                ));
            }
            (t, default.clone())
        }
        PrimitiveSchema::Number {
            integer,
            minimum,
            maximum,
            default,
            ..
        } => {
            let mut t = if *integer { "integer" } else { "number" }.to_owned();
            if minimum.is_some() || maximum.is_some() {
                t.push_str(&format!(", {}..{}", fmt_opt(minimum), fmt_opt(maximum)));
            }
            (t, default.map(|d| d.to_string()))
        }
        PrimitiveSchema::Boolean { default, .. } => {
            ("y/n".to_owned(), default.map(|b| yes_no(b).to_owned()))
        }
        PrimitiveSchema::SingleSelect {
            options, default, ..
        } => {
            choices.extend(options.iter().map(|o| label(&o.title, &o.value)));
            ("choose one: number or value".to_owned(), default.clone())
        }
        PrimitiveSchema::MultiSelect {
            options, default, ..
        } => {
            choices.extend(options.iter().map(|o| label(&o.title, &o.value)));
            (
                "choose any: numbers or values, comma-separated".to_owned(),
                default.as_ref().map(|d| d.join(",")),
            )
        }
        // A field type this client does not know (`PrimitiveSchema` may grow).
        _ => ("value".to_owned(), None),
    };
    s.push_str(&format!(" ({ty})"));
    if let Some(d) = default {
        s.push_str(&format!(" [default: {}]", one_line(&d)));
    }
    if required {
        s.push_str(" *");
    }
    if choices.is_empty() {
        s.push_str(": ");
    } else {
        for (i, c) in choices.iter().enumerate() {
            s.push_str(&format!("\n      {}) {c}", i + 1));
        }
        s.push_str("\n    > ");
    }
    s
}

fn kind_of(f: &PrimitiveSchema) -> String {
    match f {
        PrimitiveSchema::String {
            format: Some(fmt), ..
        } => format!("{} string", fmt.as_str()),
        PrimitiveSchema::String { .. } => "string".into(),
        PrimitiveSchema::Number { integer: true, .. } => "integer".into(),
        PrimitiveSchema::Number { .. } => "number".into(),
        PrimitiveSchema::Boolean { .. } => "true|false".into(),
        PrimitiveSchema::SingleSelect { options, .. } => options
            .iter()
            .map(|o| o.value.as_str())
            .collect::<Vec<_>>()
            .join("|"),
        PrimitiveSchema::MultiSelect { options, .. } => {
            format!(
                "[{}]",
                options
                    .iter()
                    .map(|o| o.value.as_str())
                    .collect::<Vec<_>>()
                    .join("|")
            )
        }
        _ => "value".into(),
    }
}

fn label(title: &str, value: &str) -> String {
    if title == value {
        one_line(value)
    } else {
        format!("{} ({})", one_line(title), one_line(value))
    }
}

fn fmt_opt<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref().map(ToString::to_string).unwrap_or_default()
}

fn yes_no(b: bool) -> &'static str {
    if b { "y" } else { "n" }
}

/// The value of field `name` from the typed text: `Ok(None)` leaves it out. The
/// text is read as the field's type here; whether the value fits the field
/// (lengths, formats, bounds, choices) is the library's answer validation, the
/// same the server applies ([`validate_content`]).
fn parse_field(
    name: &str,
    field: &PrimitiveSchema,
    text: &str,
    required: bool,
) -> Result<Option<Value>, String> {
    if text.is_empty() {
        let default = match field {
            PrimitiveSchema::String { default, .. } => default.clone().map(Value::String),
            PrimitiveSchema::Number {
                default, integer, ..
            } => default.map(|d| number(d, *integer)),
            PrimitiveSchema::Boolean { default, .. } => default.map(Value::Bool),
            PrimitiveSchema::SingleSelect { default, .. } => default.clone().map(Value::String),
            PrimitiveSchema::MultiSelect { default, .. } => default.clone().map(|d| json!(d)),
            _ => None,
        };
        return match (default, required) {
            (Some(d), _) => fits(name, field, &d)
                .map(|()| Some(d))
                .map_err(|m| format!("the default does not fit ({m}); type a value")),
            (None, true) => Err("this field is required".into()),
            (None, false) => Ok(None),
        };
    }
    let value = match field {
        PrimitiveSchema::String { .. } => Value::String(text.to_owned()),
        PrimitiveSchema::Number { integer, .. } => {
            let x: f64 = text
                .parse()
                .ok()
                .filter(|x: &f64| x.is_finite())
                .ok_or_else(|| not_a(*integer))?;
            if *integer && x.fract() != 0.0 {
                return Err(not_a(true));
            }
            number(x, *integer)
        }
        PrimitiveSchema::Boolean { .. } => match text.to_lowercase().as_str() {
            "y" | "yes" | "true" => Value::Bool(true),
            "n" | "no" | "false" => Value::Bool(false),
            _ => return Err("answer y or n".into()),
        },
        PrimitiveSchema::SingleSelect { options, .. } => {
            let pick = pick(options.iter().map(|o| (&o.value, &o.title)), text)
                .ok_or_else(|| "choose one of the listed options (number or value)".to_owned())?;
            Value::String(pick)
        }
        PrimitiveSchema::MultiSelect { options, .. } => {
            let mut picked = Vec::new();
            for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let p =
                    pick(options.iter().map(|o| (&o.value, &o.title)), part).ok_or_else(|| {
                        format!("{:?} is not one of the listed options", one_line(part))
                    })?;
                if !picked.contains(&p) {
                    picked.push(p);
                }
            }
            json!(picked)
        }
        // A field type this client does not know (`PrimitiveSchema` may grow): it
        // cannot be typed here, so the form fails rather than send a guess.
        _ => return Err("this kind of field cannot be answered with mrtr call".into()),
    };
    fits(name, field, &value)?;
    Ok(Some(value))
}

fn not_a(integer: bool) -> String {
    if integer {
        "not an integer (e.g. 42)".into()
    } else {
        "not a number (e.g. 4.2)".into()
    }
}

/// Whether `value` fits `field`, by the library's answer validation; the message
/// says what is wrong (never the value) and, for a format, shows one that fits.
fn fits(name: &str, field: &PrimitiveSchema, value: &Value) -> Result<(), String> {
    let mut schema = RequestedSchema::new();
    schema.properties.insert(name.to_owned(), field.clone());
    let mut content = JsonObject::new();
    content.insert(name.to_owned(), value.clone());
    match validate_content(&schema, &content) {
        Ok(_) => Ok(()),
        Err(problems) => {
            let mut msg = problems
                .iter()
                .map(|p| p.message.as_str())
                .collect::<Vec<_>>()
                .join("; ");
            if let PrimitiveSchema::String {
                format: Some(f), ..
            } = field
            {
                msg.push_str(match f {
                    StringFormat::Email => " (e.g. ada@example.org)",
                    StringFormat::Uri => " (e.g. https://example.org/a)",
                    StringFormat::Date => " (e.g. 2026-07-28)",
                    StringFormat::DateTime => " (e.g. 2026-07-28T10:00:00Z)",
                    // A format this client does not know (`StringFormat` may grow).
                    _ => "",
                });
            }
            Err(msg)
        }
    }
}

fn number(x: f64, integer: bool) -> Value {
    if integer && x.abs() < 9.0e15 {
        // An integral value within i64's exact range: send it as an integer.
        json!(x as i64)
    } else {
        json!(x)
    }
}

fn pick<'a>(options: impl Iterator<Item = (&'a String, &'a String)>, text: &str) -> Option<String> {
    let options: Vec<_> = options.collect();
    if let Ok(i) = text.parse::<usize>()
        && let Some(chosen) = i.checked_sub(1).and_then(|i| options.get(i))
    {
        return Some(chosen.0.clone());
    }
    options
        .iter()
        .find(|(v, t)| v.as_str() == text || t.to_lowercase() == text.to_lowercase())
        .map(|(v, _)| (*v).clone())
}

/// Why a link is not offered, or its host.
fn link_host(url: &str) -> Result<String, &'static str> {
    let uri: hyper::Uri = url.parse().map_err(|_| "it is not a valid URL")?;
    let host = uri.host().ok_or("it names no host")?;
    let scheme = uri.scheme_str().unwrap_or_default();
    let http = scheme.eq_ignore_ascii_case("http");
    if scheme.eq_ignore_ascii_case("https") || (http && is_loopback(host)) {
        Ok(host.to_owned())
    } else if http {
        Err("it is plain http to another machine (only https, or http to this machine)")
    } else {
        Err("only https links are offered (or http to this machine)")
    }
}

/// `localhost`, 127.0.0.0/8 or ::1.
fn is_loopback(host: &str) -> bool {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    host.eq_ignore_ascii_case("localhost")
        || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Shows a url-mode elicitation and asks for consent. A link that is not `https`
/// (or `http` to this machine) is not shown at all: it is declined.
pub(crate) fn ask_url(
    url: &ElicitUrlParams,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> std::io::Result<ElicitResult> {
    writeln!(out, "\n? {}", quoted(&url.message))?;
    let host = match link_host(&url.url) {
        Ok(h) => h,
        Err(why) => {
            writeln!(
                out,
                "  ! The server sent a link that mrtr call does not offer: {why}. Declined."
            )?;
            return Ok(refusal(ElicitAction::Decline));
        }
    };
    writeln!(out, "  The server asks you to open a link. It leads to")?;
    writeln!(out, "    host: {}", one_line(&host))?;
    writeln!(out, "    link: {}", one_line(&url.url))?;
    loop {
        write!(
            out,
            "  Open it and continue? (y = accept, n = decline, :cancel): "
        )?;
        out.flush()?;
        match read(input)? {
            Typed::Decline => return Ok(refusal(ElicitAction::Decline)),
            Typed::Cancel => return Ok(refusal(ElicitAction::Cancel)),
            Typed::Line(l) => match l.trim().to_lowercase().as_str() {
                "y" | "yes" => {
                    writeln!(
                        out,
                        "  Open the link in your browser; the call continues now."
                    )?;
                    return Ok(ElicitResult {
                        action: ElicitAction::Accept,
                        content: None,
                    });
                }
                "n" | "no" => return Ok(refusal(ElicitAction::Decline)),
                _ => writeln!(out, "  ! answer y or n")?,
            },
        }
    }
}

/// The text of a sampling message's content (a block or an array of blocks).
fn content_text(content: Option<&Value>) -> String {
    let block = |b: &Value| match b.get("text").and_then(Value::as_str) {
        Some(t) => t.to_owned(),
        None => format!(
            "[{} content]",
            one_line(b.get("type").and_then(Value::as_str).unwrap_or("non-text"))
        ),
    };
    match content {
        Some(Value::Array(bs)) => bs.iter().map(block).collect::<Vec<_>>().join("\n"),
        Some(b) => block(b),
        None => String::new(),
    }
}

/// Shows a sampling request (what the server asks the model) and reads the
/// model's reply from the user; `None` = declined.
pub(crate) fn ask_sampling(
    params: &CreateMessageParams,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> std::io::Result<Option<String>> {
    writeln!(
        out,
        "\n? The server asks for a model reply (max {} tokens). It asks the model:",
        params.max_tokens
    )?;
    if let Some(s) = &params.system_prompt {
        writeln!(out, "  system: {}", quoted(s))?;
    }
    for m in &params.messages {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("?");
        writeln!(
            out,
            "  {}: {}",
            one_line(role),
            quoted(&content_text(m.get("content")))
        )?;
    }
    write!(out, "  Your reply as the model (:decline to refuse): ")?;
    out.flush()?;
    Ok(match read(input)? {
        Typed::Line(l) => Some(l),
        Typed::Decline | Typed::Cancel => None,
    })
}

/// Asks whether to share `root` (the current directory) with the server.
pub(crate) fn ask_roots(
    root: &Root,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> std::io::Result<bool> {
    writeln!(
        out,
        "\n? The server asks for your roots (the folders it may work in)."
    )?;
    writeln!(out, "  Share the current directory?")?;
    writeln!(out, "    {}", one_line(&root.uri))?;
    loop {
        write!(out, "  (y = share it, n = decline): ")?;
        out.flush()?;
        match read(input)? {
            Typed::Decline | Typed::Cancel => return Ok(false),
            Typed::Line(l) => match l.trim().to_lowercase().as_str() {
                "y" | "yes" => return Ok(true),
                "n" | "no" => return Ok(false),
                _ => writeln!(out, "  ! answer y or n")?,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(schema: Value) -> ElicitFormParams {
        ElicitFormParams {
            message: "Fill".into(),
            requested_schema: RequestedSchema::from_value(&schema).unwrap(),
            explicit_mode: false,
        }
    }

    fn run_form(schema: Value, typed: &str) -> (ElicitResult, String) {
        let f = form(schema);
        let mut input = std::io::Cursor::new(typed.as_bytes().to_vec());
        let mut out = Vec::new();
        let r = ask_form(&f, &mut input, &mut out).unwrap();
        (r, String::from_utf8(out).unwrap())
    }

    #[test]
    fn form_fields_are_typed_checked_and_defaulted() {
        // Declared in alphabetical order, so the fields are asked in this order whether
        // or not serde_json preserves insertion order. age: "x", 1.5, then the
        // default; color: 3 (out of range) then 2; mail: bad then good; name: empty
        // (required), too short, ok; note: skipped; ok: "maybe" then y; tags: "a, c".
        let schema = json!({"type": "object", "properties": {
            "age": {"type": "integer", "minimum": 0, "default": 30},
            "color": {"type": "string", "enum": ["red", "green"]},
            "mail": {"type": "string", "format": "email"},
            "name": {"type": "string", "title": "Name", "minLength": 2},
            "note": {"type": "string"},
            "ok": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}}
        }, "required": ["name", "ok", "color"]});
        let typed = "x\n1.5\n\n3\n2\nnope\nada@example.org\n\nA\nAda\n\nmaybe\ny\na, c\n";
        let (r, shown) = run_form(schema, typed);
        assert_eq!(r.action, ElicitAction::Accept);
        assert_eq!(
            Value::Object(r.content.unwrap()),
            json!({"name": "Ada", "age": 30, "ok": true, "color": "green", "tags": ["a", "c"], "mail": "ada@example.org"})
        );
        assert!(shown.contains("1) red"), "{shown}");
        assert!(shown.contains("[default: 30]"), "{shown}");
        assert!(shown.contains("this field is required"), "{shown}");
        assert!(shown.contains("not an integer"), "{shown}");
    }

    #[test]
    fn decline_cancel_and_end_of_input() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}});
        assert_eq!(
            run_form(schema.clone(), "x\n:decline\n").0,
            refusal(ElicitAction::Decline)
        );
        assert_eq!(
            run_form(schema.clone(), ":cancel\n").0,
            refusal(ElicitAction::Cancel)
        );
        assert_eq!(run_form(schema, "x\n").0, refusal(ElicitAction::Cancel));
    }

    #[test]
    fn url_consent() {
        let u = ElicitUrlParams {
            message: "Sign in".into(),
            url: "https://example.com/a".into(),
        };
        let ask = |typed: &str| {
            let mut out = Vec::new();
            let r = ask_url(
                &u,
                &mut std::io::Cursor::new(typed.as_bytes().to_vec()),
                &mut out,
            )
            .unwrap();
            (r.action, String::from_utf8(out).unwrap())
        };
        let (a, shown) = ask("what\ny\n");
        assert_eq!(a, ElicitAction::Accept);
        assert!(shown.contains("https://example.com/a"));
        assert_eq!(ask("n\n").0, ElicitAction::Decline);
        assert_eq!(ask(":cancel\n").0, ElicitAction::Cancel);
    }

    #[test]
    fn sampling_reply_from_the_user() {
        let p = CreateMessageParams::user_text("Capital of France?", 50);
        let mut out = Vec::new();
        let r = ask_sampling(&p, &mut std::io::Cursor::new(b"Paris\n".to_vec()), &mut out).unwrap();
        assert_eq!(r.as_deref(), Some("Paris"));
        assert!(
            String::from_utf8(out)
                .unwrap()
                .contains("user: Capital of France?")
        );
        let r = ask_sampling(
            &p,
            &mut std::io::Cursor::new(b":decline\n".to_vec()),
            &mut Vec::new(),
        )
        .unwrap();
        assert_eq!(r, None);
    }

    #[test]
    fn file_uris_are_percent_encoded() {
        assert_eq!(
            file_uri(Path::new("/home/a b/ü")),
            "file:///home/a%20b/%C3%BC"
        );
    }

    #[test]
    fn terminal_output_drops_control_characters() {
        let mut w = Sanitized::new(Vec::new());
        write!(w, "ok\x1b[2J\x1b]52;c;AAAA\x07\rfake prompt\n\tdone\x7f").unwrap();
        assert_eq!(
            String::from_utf8(w.into_inner()).unwrap(),
            "ok[2J]52;c;AAAAfake prompt\n\tdone"
        );
    }

    /// Every character the terminal must never get from a server.
    fn hostile_chars() -> Vec<char> {
        let mut v: Vec<char> = ('\u{0}'..='\u{1f}')
            .filter(|c| !matches!(c, '\n' | '\t'))
            .collect();
        v.extend('\u{7f}'..='\u{9f}');
        v.extend(['\u{061c}', '\u{200e}', '\u{200f}', '\u{2028}', '\u{2029}']);
        v.extend('\u{202a}'..='\u{202e}');
        v.extend('\u{2066}'..='\u{2069}');
        v
    }

    #[test]
    fn terminal_output_is_filtered_per_character() {
        let hostile = hostile_chars();
        assert_eq!(hostile.len(), 30 + 33 + 5 + 5 + 4);
        let text: String = hostile
            .iter()
            .flat_map(|&c| ['a', c])
            .chain(['é', '€', '😀', '\n', '\t'])
            .collect();
        // Written whole, and a byte at a time (a character split across writes).
        let mut whole = Sanitized::new(Vec::new());
        whole.write_all(text.as_bytes()).unwrap();
        let mut bytewise = Sanitized::new(Vec::new());
        for b in text.as_bytes() {
            bytewise.write_all(&[*b]).unwrap();
        }
        let expected = format!("{}é€😀\n\t", "a".repeat(hostile.len()));
        assert_eq!(String::from_utf8(whole.into_inner()).unwrap(), expected);
        assert_eq!(String::from_utf8(bytewise.into_inner()).unwrap(), expected);
        // A lone C1 byte is not UTF-8: it never reaches the terminal as such.
        let mut w = Sanitized::new(Vec::new());
        w.write_all(b"x\x9b2Jy").unwrap();
        assert_eq!(String::from_utf8(w.into_inner()).unwrap(), "x\u{fffd}2Jy");
        for c in hostile {
            assert!(!is_shown(c), "{:?}", c);
        }
    }

    #[test]
    fn server_text_cannot_draw_the_tools_prompts() {
        let fake = "Sign in\n  The server asks you to open a link. It leads to\r\n    host: example.com\r    link: https://example.com/\u{2028}? Open it\u{85}x\u{b}y\u{c}z";
        let q = quoted(fake);
        let mut lines = q.lines();
        assert_eq!(lines.next(), Some("Sign in"));
        for l in lines {
            assert!(l.starts_with("  | "), "{l:?}");
        }
        assert_eq!(q.lines().count(), 8);
        assert_eq!(one_line("a\nb\rc\td\u{2029}e\u{85}f"), "a b c d e f");
        // JSON keeps every character, escaped where the terminal must not see it.
        let v = json!({"t": "a\u{202e}b\u{9b}c\u{7f}"});
        let shown = shown_json(&v);
        assert!(shown.contains(r"a\u202eb\u009bc\u007f"), "{shown}");
        assert_eq!(serde_json::from_str::<Value>(&shown).unwrap(), v);
    }

    #[test]
    fn links_are_offered_over_https_or_to_this_machine_only() {
        for ok in [
            ("https://example.com/a?b=c", "example.com"),
            ("HTTPS://Example.com/", "Example.com"),
            ("https://user@evil.example/x", "evil.example"),
            ("http://127.0.0.1:8080/cb", "127.0.0.1"),
            ("http://127.45.6.7/", "127.45.6.7"),
            ("http://[::1]:9/", "[::1]"),
            ("http://localhost:3000/x", "localhost"),
        ] {
            assert_eq!(link_host(ok.0).as_deref(), Ok(ok.1), "{}", ok.0);
        }
        for bad in [
            "http://example.com/",
            "http://localhost.evil.example/",
            "http://128.0.0.1/",
            "http://[::2]/",
            "javascript:alert(1)",
            "file:///etc/passwd",
            "ftp://example.com/",
            "data:text/html,hi",
            "https:///nohost",
            "not a url",
            "",
        ] {
            assert!(link_host(bad).is_err(), "{bad}");
        }
        // A refused link is declined without a question, and not shown.
        let u = ElicitUrlParams {
            message: "Sign in".into(),
            url: "http://evil.example/steal".into(),
        };
        let mut out = Vec::new();
        let r = ask_url(&u, &mut std::io::Cursor::new(b"y\n".to_vec()), &mut out).unwrap();
        let shown = String::from_utf8(out).unwrap();
        assert_eq!(r.action, ElicitAction::Decline);
        assert!(shown.contains("does not offer"), "{shown}");
        assert!(!shown.contains("evil.example"), "{shown}");
    }

    #[test]
    fn multibyte_input_in_every_field_kind_is_re_asked() {
        // Alphabetical, so the order is the same with or without preserve_order.
        let schema = json!({"type": "object", "properties": {
            "a_text": {"type": "string", "maxLength": 3},
            "b_email": {"type": "string", "format": "email"},
            "c_uri": {"type": "string", "format": "uri"},
            "d_date": {"type": "string", "format": "date"},
            "e_datetime": {"type": "string", "format": "date-time"},
            "f_number": {"type": "number", "maximum": 10},
            "g_integer": {"type": "integer"},
            "h_bool": {"type": "boolean"},
            "i_enum": {"type": "string", "enum": ["red", "green"]},
            "j_multi": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}
        }, "required": ["a_text", "b_email", "c_uri", "d_date", "e_datetime", "f_number", "g_integer", "h_bool", "i_enum", "j_multi"]});
        let typed = [
            ("éééé", "éé"),
            ("adaé", "ada@example.org"),
            ("é:x", "https://example.org/é"),
            ("2024-01-0é", "2024-01-05"),
            ("2024-01-0é12:00:00Z", "2024-01-05T12:00:00Z"),
            ("４.５", "4.5"),
            ("4２", "42"),
            ("ｙ", "y"),
            ("é", "2"),
            ("é, a", "a"),
        ];
        let input: String = typed
            .iter()
            .map(|(bad, good)| format!("{bad}\n{good}\n"))
            .collect();
        let (r, shown) = run_form(schema, &input);
        assert_eq!(r.action, ElicitAction::Accept, "{shown}");
        assert_eq!(
            Value::Object(r.content.unwrap()),
            json!({"a_text": "éé", "b_email": "ada@example.org", "c_uri": "https://example.org/é",
                   "d_date": "2024-01-05", "e_datetime": "2024-01-05T12:00:00Z", "f_number": 4.5,
                   "g_integer": 42, "h_bool": true, "i_enum": "green", "j_multi": ["a"]})
        );
        let complaints: Vec<&str> = shown.lines().filter(|l| l.contains("  ! ")).collect();
        assert_eq!(complaints.len(), typed.len(), "{shown}");
        assert!(
            shown.contains("must be a valid date-time (e.g. 2026-07-28T10:00:00Z)"),
            "{shown}"
        );
        assert!(shown.contains("must be at most 3 characters"), "{shown}");
        assert!(shown.contains("not an integer"), "{shown}");
    }

    #[test]
    fn sampling_shows_what_the_model_is_asked_filtered() {
        let mut p =
            CreateMessageParams::user_text("line one\n? Your reply as the model: \u{1b}[2J", 50);
        p.system_prompt = Some("be\u{202e}nice\nsecond".into());
        let mut out = Sanitized::new(Vec::new());
        let r = ask_sampling(&p, &mut std::io::Cursor::new(b"ok\n".to_vec()), &mut out).unwrap();
        assert_eq!(r.as_deref(), Some("ok"));
        let shown = String::from_utf8(out.into_inner()).unwrap();
        assert!(shown.contains("  system: benice\n  | second"), "{shown}");
        assert!(
            shown.contains("  user: line one\n  | ? Your reply as the model: [2J"),
            "{shown}"
        );
        assert_eq!(
            shown.matches("\n  Your reply as the model").count(),
            1,
            "{shown}"
        );
    }

    #[test]
    fn roots_are_shared_only_on_yes() {
        let root = Root {
            uri: "file:///work".into(),
            name: None,
            meta: None,
        };
        let ask = |typed: &str| {
            let mut out = Vec::new();
            let r = ask_roots(
                &root,
                &mut std::io::Cursor::new(typed.as_bytes().to_vec()),
                &mut out,
            )
            .unwrap();
            (r, String::from_utf8(out).unwrap())
        };
        let (yes, shown) = ask("é\ny\n");
        assert!(yes);
        assert!(
            shown.contains("file:///work") && shown.contains("! answer y or n"),
            "{shown}"
        );
        assert!(!ask("n\n").0);
        assert!(!ask(":decline\n").0);
        assert!(!ask("").0, "end of input declines");
    }
}
