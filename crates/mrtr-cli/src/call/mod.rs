//! `mrtr call`: a terminal client for trying any MRTR server, built on
//! `mrtr_client`. Part of the `mrtr` binary, not a stable API (its tests reach it
//! as `mrtr_cli::call`).
//!
//! ```text
//! mrtr call URL tool NAME [--args JSON]        Streamable HTTP (http:// or https://)
//! mrtr call URL prompt NAME [--args JSON]
//! mrtr call URL resource URI
//! mrtr call tool NAME [OPTIONS] -- PROGRAM [ARGS]...   stdio: starts the server
//!     [--cacert FILE] [--server-stderr show|discard]
//!     [--answers JSON|@FILE] [--sampling-reply TEXT] [--root PATH]... [--no-input]
//!     [--era auto|modern|legacy] [--json] [--max-rounds N] [--timeout SECS] [--request-timeout SECS]
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
//! # 2025-era servers
//! With `--era auto` (the default) the first request tells the server's
//! generation (`mrtr_client::legacy`): a 2025-era server (2025-11-25, 2025-06-18,
//! 2025-03-26) is called after `initialize`, in a session, and the requests it
//! sends during the call (`elicitation/create`, `sampling/createMessage`,
//! `roots/list`) are answered exactly as input requests are, from `--answers`
//! (keyed `METHOD#N`, the N-th request of the call, as the server gives no
//! key), the flags or the terminal. The result is printed the same way. An
//! HTTP endpoint found to be of the 2025 era is remembered in a small file
//! (`eras`: `$MRTR_ERA_CACHE`, else `~/.cache/mrtr/eras.json`), so that the
//! next run opens its session at once.
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
//! wrote goes to the terminal through `Sanitized` (no control characters, no
//! bidirectional overrides), on one line where one line is meant, and with every
//! line after the first behind a `|` where a message may have several, so a
//! server cannot draw the tool's own prompts. Links are offered only over
//! `https` (or `http` to this machine), with their host on a line of its own.
//!
//! Without a terminal on stdin (or with `--no-input`) nothing is asked: a
//! question that `--answers` does not cover fails the call closed, naming the
//! key and showing how to answer it. An answer given on the command line is sent
//! once: a server that asks the same question again did not take it, so the call
//! stops there and shows the server's note on why (exit 4), rather than send the
//! same answer until the round cap.
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
//! cannot be given); 3 protocol or transport error (a cap reached included);
//! 4 an answer given on the command line (`--answers`, `--sampling-reply`,
//! `--root`) refused: the server asked the same question again, and its note is
//! printed on stderr.
//!
//! # Logging in
//! Without `-H` or `--bearer-env`, a server that answers `401` with an OAuth
//! challenge is logged in to (`login`, on `mrtr_client::oauth`): the login URL
//! goes to stderr (and to a browser with `--open`), the tokens to a cache file
//! of mode 0600, refreshed when they expire; `--logout` forgets them.
//!
//! The files, one job each: `args` (the arguments and what they mean),
//! `sanitize` (what reaches the terminal), `connect` (the server, over HTTP or
//! stdio), `eras` (the 2025-era endpoints remembered), `login` (OAuth),
//! `handler` (who answers an input request), `prompt` (the questions on the
//! terminal).

mod args;
mod connect;
mod eras;
mod handler;
mod login;
mod prompt;
mod sanitize;

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mrtr::error::code;
use mrtr::wire::{InputKind, Root};
use mrtr_client::{Cap, CarrierCall, Client, ClientError, Completion, FlowError, TransportError};
use serde_json::{Map, Value};

pub use args::CallArgs;
use args::{EraArg, build_call, parse_answers, roots_of};
use connect::{connect, show_server_stderr};
pub use eras::ERA_CACHE_ENV;

/// Why there is no server to call: what `connect` and the `login` options it
/// reads fail with (here, so that neither module imports the other).
enum Connect {
    /// The arguments do not name one (exit 2).
    Usage(String),
    /// It could not be reached or started (exit 3).
    Failed(TransportError),
}
use handler::CliHandler;
use sanitize::{Sanitized, one_line, quoted, shown_json};

/// Exit code: the call completed.
pub const EXIT_OK: i32 = 0;
/// Exit code: the tool ran and failed (`isError: true`).
pub const EXIT_TOOL_ERROR: i32 = 1;
/// Exit code: bad arguments, or input was needed that could not be given.
pub const EXIT_USAGE: i32 = 2;
/// Exit code: a protocol or transport error.
pub const EXIT_PROTOCOL: i32 = 3;
/// Exit code: the server did not take an answer given on the command line and
/// asked the same question again (its note on stderr).
pub const EXIT_REFUSED: i32 = 4;

/// How long a stdio server gets to exit after its stdin closes, before it is killed.
const STDIO_GRACE: Duration = Duration::from_secs(2);

/// How long the last lines of a stopped stdio server's stderr are waited for (only a
/// process it left behind, holding the pipe open, makes the wait this long).
const STDERR_DRAIN: Duration = Duration::from_secs(2);

/// Runs `mrtr call`, printing the result on stdout and messages on stderr.
/// Returns the process exit code.
pub async fn run_call(args: CallArgs) -> i32 {
    let mut out = Sanitized::new(std::io::stdout());
    let mut err = Sanitized::new(std::io::stderr());
    run_call_with_output(args, &mut out, &mut err).await
}

/// [`run_call`] writing the result to `out` and messages to `err` (for tests and embedding).
/// Interactive questions, if any, still use the process's terminal.
pub async fn run_call_with_output(
    args: CallArgs,
    out: &mut (dyn Write + Send),
    err: &mut (dyn Write + Send),
) -> i32 {
    if args.logout {
        return login::logout(&args, out, err);
    }
    let Asked {
        call,
        answers,
        roots,
    } = match asked(&args) {
        Ok(a) => a,
        Err(msg) => return usage(err, &msg),
    };
    let server = match connect(&args) {
        Ok(s) => s,
        Err(Connect::Usage(msg)) => return usage(err, &msg),
        Err(Connect::Failed(e)) => {
            let _ = writeln!(err, "error: {}", one_line(&e.to_string()));
            return EXIT_PROTOCOL;
        }
    };
    if let Some(oauth) = &server.oauth
        && let Err(e) = login::ensure_logged_in(&args, oauth).await
    {
        let e = ClientError::Transport(e);
        let _ = writeln!(err, "error: {}", one_line(&e.to_string()));
        if let Some(h) = hint(&e) {
            let _ = writeln!(err, "hint: {h}");
        }
        return EXIT_PROTOCOL;
    }
    let interactive = !args.no_input && std::io::stdin().is_terminal();
    let handler = Arc::new(CliHandler {
        answers,
        sampling_reply: args.sampling_reply.clone(),
        roots,
        interactive,
        terminal: tokio::sync::Mutex::new(()),
        failed_closed: AtomicBool::new(false),
        sent: Mutex::default(),
        refused: AtomicBool::new(false),
    });
    let printer = server
        .stderr_lines
        .map(|lines| tokio::spawn(show_server_stderr(lines, handler.clone())));
    // With --era auto over HTTP, the 2025-era endpoints found by earlier runs.
    let remembered = match (args.era, &args.url) {
        (EraArg::Auto, Some(_)) => eras::path(),
        _ => None,
    };
    let era_cache = Arc::new(remembered.as_deref().map(eras::load).unwrap_or_default());
    let endpoint = server.transport.legacy().map(|l| l.server());
    let client = Client::builder(server.transport)
        .with_shared_handler(handler.clone())
        .with_client_info("mrtr-call", env!("CARGO_PKG_VERSION"))
        .with_max_rounds(args.max_rounds)
        .with_total_timeout(Some(Duration::from_secs(args.timeout)))
        .with_request_timeout(Some(Duration::from_secs(args.request_timeout)))
        .with_max_questions_per_round(args.max_questions_per_round)
        .with_max_concurrent_answers(args.max_concurrent_answers)
        .with_max_sampling_per_flow(args.max_sampling_per_flow)
        .with_max_answer_bytes(args.max_answer_bytes)
        .with_max_state_bytes(args.max_state_bytes)
        .with_max_upload_bytes(args.max_upload_bytes)
        .with_era(args.era.mode())
        .with_tasks()
        .with_era_cache(era_cache)
        .build();
    let outcome = client.call(call).await;
    if let (Some(path), Some(endpoint)) = (&remembered, &endpoint) {
        eras::record(path, endpoint, client.era());
    }
    // A 2025-era session ends (HTTP: DELETE with its id).
    client.close().await;
    drop(client);
    if let Some(stdio) = server.stdio {
        stdio.shutdown(STDIO_GRACE).await;
        drop(stdio);
    }
    if let Some(printer) = printer {
        // The server's last lines, once its stderr has closed.
        let _ = tokio::time::timeout(STDERR_DRAIN, printer).await;
    }
    finish(outcome, args.json, &handler, out, err)
}

/// What the command line asks: the call, the answers given ahead, the roots
/// to share.
struct Asked {
    /// The tool, prompt or resource to call.
    call: CarrierCall,
    /// `--answers`, by key (empty when not given).
    answers: Map<String, Value>,
    /// `--root`; `None` when none was given.
    roots: Option<Vec<Root>>,
}

/// The call, `--answers` and `--root` of `args`, in that order.
///
/// # Errors
/// The message of the first that is not usable.
fn asked(args: &CallArgs) -> Result<Asked, String> {
    let call = build_call(args.target.as_ref())?;
    let answers = args
        .answers
        .as_deref()
        .map(parse_answers)
        .transpose()?
        .unwrap_or_default();
    let roots = if args.roots.is_empty() {
        None
    } else {
        Some(roots_of(&args.roots)?)
    };
    Ok(Asked {
        call,
        answers,
        roots,
    })
}

/// Prints what the call came to (the result, the tool error, or the error
/// with its data and a hint; `json`: the result as JSON) and returns the
/// exit code.
fn finish(
    outcome: Result<Completion, ClientError>,
    json: bool,
    handler: &CliHandler,
    out: &mut (dyn Write + Send),
    err: &mut (dyn Write + Send),
) -> i32 {
    match outcome {
        Ok(done) => {
            let shown = if json || done.text().is_empty() {
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
            if let ClientError::Flow(FlowError::JsonRpc { data: Some(d), .. }) = &e {
                let _ = writeln!(err, "data: {}", one_line(&shown_json(d)));
            }
            let refused = handler.refused.load(Ordering::Relaxed);
            let hint = if refused {
                Some(
                    "correct the answer on the command line, or leave it out to be asked on a terminal",
                )
            } else {
                hint(&e)
            };
            if let Some(hint) = hint {
                let _ = writeln!(err, "hint: {hint}");
            }
            if refused {
                EXIT_REFUSED
            } else if handler.failed_closed.load(Ordering::Relaxed) {
                EXIT_USAGE
            } else {
                EXIT_PROTOCOL
            }
        }
    }
}

/// The hint for a sampling request this call did not declare it could answer.
const SAMPLING_HINT: &str =
    "to answer sampling requests, pass --sampling-reply TEXT or run on a terminal";
/// The hint for a roots request this call did not declare it could answer.
const ROOTS_HINT: &str = "to share roots, pass --root PATH or run on a terminal";

/// What to do about an error the user can fix with a flag.
fn hint(e: &ClientError) -> Option<&'static str> {
    match e {
        ClientError::Flow(FlowError::UndeclaredInput {
            kind: InputKind::Sampling,
            ..
        }) => Some(SAMPLING_HINT),
        ClientError::Flow(FlowError::UndeclaredInput {
            kind: InputKind::Roots,
            ..
        }) => Some(ROOTS_HINT),
        // The server needs a capability this call did not declare (-32021): its
        // `data.requiredCapabilities` names which. Elicitation is always declared.
        ClientError::Flow(FlowError::JsonRpc {
            code: code::MISSING_REQUIRED_CLIENT_CAPABILITY,
            data: Some(data),
            ..
        }) => {
            let required = &data["requiredCapabilities"];
            match (required.get("sampling"), required.get("roots")) {
                (Some(_), Some(_)) => Some(
                    "to answer sampling requests and share roots, pass --sampling-reply TEXT \
                     and --root PATH, or run on a terminal",
                ),
                (Some(_), None) => Some(SAMPLING_HINT),
                (None, Some(_)) => Some(ROOTS_HINT),
                (None, None) => None,
            }
        }
        ClientError::Flow(FlowError::CapExceeded {
            cap: Cap::StateBytes,
            ..
        }) => Some(
            "--max-state-bytes BYTES raises this cap; raise it only for a server you trust \
             (the state is sent back on every round)",
        ),
        ClientError::Flow(FlowError::CapExceeded {
            cap: Cap::UploadBytes,
            ..
        }) => {
            Some("--max-upload-bytes BYTES raises this cap; raise it only for a server you trust")
        }
        ClientError::Flow(FlowError::CapExceeded { .. }) => {
            Some("the caps are flags (see mrtr call --help); raise one only for a server you trust")
        }
        ClientError::RequestTimeout { .. } => Some("--request-timeout SECS waits longer"),
        ClientError::Transport(TransportError::Tls(_)) => {
            Some("for a server whose certificate comes from a private CA, pass --cacert FILE (PEM)")
        }
        ClientError::Transport(TransportError::Unauthorized(_)) => Some(
            "send credentials with --bearer-env VAR (a token read from the environment) or \
             -H 'Name: value'; a server behind OAuth is logged in to when neither is given \
             (--client-credentials without a browser)",
        ),
        _ => None,
    }
}

fn usage(err: &mut (dyn Write + Send), msg: &str) -> i32 {
    let _ = writeln!(err, "error: {}", one_line(msg));
    EXIT_USAGE
}
