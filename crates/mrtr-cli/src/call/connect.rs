//! The server to call: a Streamable HTTP endpoint, or a stdio server started
//! from the command after `--` (and its stderr, shown on ours).

use std::io::Write;
use std::sync::Arc;

use mrtr_client::{
    BearerToken, HttpTransport, HttpTransportBuilder, ServerStderr, StdioTransport, Transport,
    TransportError,
};

use super::Connect;
use super::args::{CallArgs, StderrArg};
use super::handler::CliHandler;
use super::sanitize::{Sanitized, one_line};

/// Lines of the server's stderr held while a question is on the terminal; more are dropped.
const STDERR_BACKLOG: usize = 1024;

/// The server to call, ready: the transport, and for stdio the process to stop
/// at the end and the lines of its stderr to show.
pub(super) struct Server {
    pub(super) transport: Arc<dyn Transport>,
    /// The OAuth token source, when the call may log in.
    pub(super) oauth: Option<Arc<mrtr_client::oauth::OAuthTokenSource>>,
    pub(super) stdio: Option<Arc<StdioTransport>>,
    pub(super) stderr_lines: Option<tokio::sync::mpsc::Receiver<String>>,
}

/// The transport the arguments name: a URL, or a command after `--`.
pub(super) fn connect(args: &CallArgs) -> Result<Server, Connect> {
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
            // The CA file is read once, for the transport and the OAuth fetches.
            let mut cacert = None;
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
                cacert = Some(pem);
            }
            builder = credentials(builder, args)?;
            let oauth = super::login::token_source(args, url, cacert.as_deref())?;
            if let Some(source) = &oauth {
                builder = builder.token_source(source.clone());
            }
            let transport = builder.build().map_err(|e| match e {
                TransportError::InvalidRequest(msg) => Connect::Usage(msg),
                e => Connect::Failed(e),
            })?;
            Ok(Server {
                transport: Arc::new(transport),
                oauth,
                stdio: None,
                stderr_lines: None,
            })
        }
        (None, Some((program, rest))) => {
            if args.cacert.is_some() {
                return Err(Connect::Usage("--cacert is for https:// URLs".into()));
            }
            if !args.headers.is_empty() || args.bearer_env.is_some() || super::login::wanted(args) {
                return Err(Connect::Usage(
                    "-H, --bearer-env and the OAuth options are for http:// and https:// URLs (a \
                     stdio server takes its credentials from its own arguments or environment)"
                        .into(),
                ));
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
                oauth: None,
                stdio: Some(stdio),
                stderr_lines,
            })
        }
    }
}

/// The `-H` headers and the `--bearer-env` token on the HTTP transport. No error
/// names a header's value or the token.
fn credentials(
    mut builder: HttpTransportBuilder,
    args: &CallArgs,
) -> Result<HttpTransportBuilder, Connect> {
    for h in &args.headers {
        let Some((name, value)) = h.split_once(':') else {
            return Err(Connect::Usage(
                "-H takes `Name: value` (a header name, a colon, the value)".into(),
            ));
        };
        builder = builder
            .header(name.trim(), value.trim())
            .map_err(|e| Connect::Usage(format!("-H: {}", message(&e))))?;
    }
    if let Some(var) = &args.bearer_env {
        let token = match std::env::var(var) {
            Ok(t) if !t.trim().is_empty() => BearerToken::new(t.trim()),
            Ok(_) => {
                return Err(Connect::Usage(format!(
                    "--bearer-env {var}: {var} is empty"
                )));
            }
            Err(std::env::VarError::NotPresent) => {
                return Err(Connect::Usage(format!(
                    "--bearer-env {var}: {var} is not set"
                )));
            }
            Err(std::env::VarError::NotUnicode(_)) => {
                return Err(Connect::Usage(format!(
                    "--bearer-env {var}: {var} is not valid UTF-8"
                )));
            }
        };
        if args.headers.iter().any(|h| {
            h.split_once(':')
                .is_some_and(|(n, _)| n.trim().eq_ignore_ascii_case("authorization"))
        }) {
            return Err(Connect::Usage(
                "--bearer-env and -H 'Authorization: ...': give one of them".into(),
            ));
        }
        builder = builder
            .bearer(&token)
            .map_err(|e| Connect::Usage(format!("--bearer-env {var}: {}", message(&e))))?;
    }
    Ok(builder)
}

/// An `InvalidRequest`'s text alone (the builder's messages never hold a value).
fn message(e: &TransportError) -> String {
    match e {
        TransportError::InvalidRequest(m) => m.clone(),
        e => e.to_string(),
    }
}

/// Shows the stdio server's stderr on ours, a line at a time, filtered as any
/// server text, and never while a question is on the terminal.
pub(super) async fn show_server_stderr(
    mut lines: tokio::sync::mpsc::Receiver<String>,
    handler: Arc<CliHandler>,
) {
    while let Some(line) = lines.recv().await {
        let _dialog = handler.terminal.lock().await;
        let mut err = Sanitized::new(std::io::stderr());
        let _ = writeln!(err, "server| {}", one_line(&line));
    }
}
