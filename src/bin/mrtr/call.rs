//! `mrtr call`: a terminal client for trying any MRTR server, built on
//! [`mrtr::client`]. Part of the `mrtr` binary, not of the library's API; tests
//! include this file with `#[path]`, so it names the library `mrtr::`, never `crate::`.
//!
//! ```text
//! mrtr call URL tool NAME [--args JSON]
//! mrtr call URL prompt NAME [--args JSON]
//! mrtr call URL resource URI
//!     [--answers JSON|@FILE] [--sampling-reply TEXT] [--root PATH]... [--no-input]
//!     [--json] [--max-rounds N] [--timeout SECS]
//! ```
//!
//! Input requests are answered in this order: an entry of `--answers` with the
//! request's key (an `InputResponse` in wire shape); otherwise roots from
//! `--root` (default: the current directory), sampling from `--sampling-reply`;
//! otherwise the user is asked on the terminal: form elicitations field by field
//! (types checked, choices listed, defaults offered, `:decline` / `:cancel`),
//! url elicitations as a link with a y/n consent, sampling as "type the model's
//! reply". Prompts go to stderr, the result to stdout.
//!
//! Without a terminal on stdin (or with `--no-input`) nothing is asked: a
//! question that `--answers` does not cover fails the call closed, naming the
//! key and showing how to answer it.
//!
//! Exit codes: 0 complete; 1 tool error (`isError: true`, printed on stderr);
//! 2 usage (bad arguments, a malformed `--answers` entry, or input needed that
//! cannot be given); 3 protocol or transport error.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Map, Value, json};

use mrtr::client::{
    BoxFuture, CarrierCall, Client, ClientError, HandlerError, HttpTransport, InputContext,
    InputHandler,
};
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

/// Arguments of `mrtr call`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct CallArgs {
    /// The MCP endpoint (Streamable HTTP, http:// only), e.g. http://127.0.0.1:8080/mcp
    pub(crate) url: String,
    /// What to call.
    #[command(subcommand)]
    pub(crate) target: CallTarget,
    /// Answers by input-request key: a JSON object mapping each key to an
    /// InputResponse in wire shape, or @FILE to read it from a file.
    #[arg(long, global = true, value_name = "JSON|@FILE")]
    pub(crate) answers: Option<String>,
    /// Answer sampling requests with this text as the model's reply.
    #[arg(long, global = true, value_name = "TEXT")]
    pub(crate) sampling_reply: Option<String>,
    /// A root to offer for roots/list (repeatable). Default: the current directory.
    #[arg(long = "root", global = true, value_name = "PATH")]
    pub(crate) roots: Vec<PathBuf>,
    /// Never ask on the terminal: fail closed unless --answers covers the question.
    #[arg(long, global = true)]
    pub(crate) no_input: bool,
    /// Print the whole result as JSON instead of its text content.
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// The most requests the flow may send.
    #[arg(long, global = true, default_value_t = mrtr::defaults::CLIENT_MAX_ROUNDS)]
    pub(crate) max_rounds: u32,
    /// The longest the whole flow may take, in seconds.
    #[arg(long, global = true, default_value_t = mrtr::defaults::CLIENT_TOTAL_TIMEOUT.as_secs(), value_name = "SECS")]
    pub(crate) timeout: u64,
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
    let mut out = Sanitized(std::io::stdout());
    let mut err = Sanitized(std::io::stderr());
    run_call_with_output(args, &mut out, &mut err).await
}

/// A writer for the terminal that drops control characters other than newline and
/// tab, so a server cannot send escape sequences (cursor moves, colours, title or
/// clipboard changes) or carriage returns that overwrite a prompt through a message,
/// a field title, a link or a result.
struct Sanitized<W>(W);

impl<W: Write> Write for Sanitized<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let clean: Vec<u8> = buf
            .iter()
            .copied()
            .filter(|&b| (b >= 0x20 && b != 0x7f) || b == b'\n' || b == b'\t')
            .collect();
        self.0.write_all(&clean)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

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
    let roots = match roots_of(&args.roots) {
        Ok(r) => r,
        Err(msg) => return usage(err, &msg),
    };
    let transport = match HttpTransport::new(&args.url) {
        Ok(t) => t,
        Err(e) => return usage(err, &e.to_string()),
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
    let client = Client::builder(transport)
        .shared_handler(handler.clone())
        .client_info("mrtr-call", env!("CARGO_PKG_VERSION"))
        .max_rounds(args.max_rounds)
        .total_timeout(Some(Duration::from_secs(args.timeout)))
        .build();
    match client.call(call).await {
        Ok(done) => {
            let shown = if args.json || done.text().is_empty() {
                serde_json::to_string_pretty(&done.result).unwrap_or_default()
            } else {
                done.text()
            };
            if done.is_tool_error() {
                let _ = writeln!(err, "tool error: {shown}");
                EXIT_TOOL_ERROR
            } else {
                let _ = writeln!(out, "{shown}");
                EXIT_OK
            }
        }
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            if let ClientError::JsonRpc { data: Some(d), .. } = &e {
                let _ = writeln!(err, "data: {d}");
            }
            if handler.failed_closed.load(Ordering::Relaxed) {
                EXIT_USAGE
            } else {
                EXIT_PROTOCOL
            }
        }
    }
}

fn usage(err: &mut (dyn Write + Send), msg: &str) -> i32 {
    let _ = writeln!(err, "error: {msg}");
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
    let paths = if paths.is_empty() {
        vec![
            std::env::current_dir()
                .map_err(|e| format!("cannot read the current directory: {e}"))?,
        ]
    } else {
        paths.to_vec()
    };
    paths
        .iter()
        .map(|p| {
            let abs =
                std::fs::canonicalize(p).map_err(|e| format!("--root {}: {e}", p.display()))?;
            Ok(Root {
                uri: file_uri(&abs),
                name: abs.file_name().map(|n| n.to_string_lossy().into_owned()),
                meta: None,
            })
        })
        .collect()
}

/// `file://` URI of an absolute path, percent-encoding all but unreserved characters and `/`.
pub(crate) fn file_uri(path: &Path) -> String {
    let mut s = String::from("file://");
    for b in path.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

/// Answers input requests from `--answers`, the flags, or the terminal.
#[derive(Debug)]
struct CliHandler {
    answers: Map<String, Value>,
    sampling_reply: Option<String>,
    roots: Vec<Root>,
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
            let mut output = Sanitized(std::io::stderr());
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
        ClientCapabilities {
            elicitation: Some(ElicitationCapability {
                form: Some(JsonObject::new()),
                url: Some(JsonObject::new()),
                ..Default::default()
            }),
            sampling: Some(SamplingCapability::default()),
            roots: Some(JsonObject::new()),
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
                return r.map(expect_elicit);
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
            Ok(ListRootsResult {
                roots: self.roots.clone(),
            })
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

/// What the user typed for one field.
enum Typed {
    Line(String),
    Decline,
    Cancel,
}

fn read(input: &mut dyn BufRead) -> std::io::Result<Typed> {
    let mut line = String::new();
    if input.read_line(&mut line)? == 0 {
        // End of input: the user went away.
        return Ok(Typed::Cancel);
    }
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

/// Asks a form field by field. Generic over the streams so it can be tested.
pub(crate) fn ask_form(
    form: &ElicitFormParams,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> std::io::Result<ElicitResult> {
    writeln!(out, "\n? {}", form.message)?;
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
            match parse_field(field, line.trim(), required) {
                Ok(Some(v)) => {
                    content.insert(name.clone(), v);
                    break;
                }
                Ok(None) => break,
                Err(msg) => writeln!(out, "  ! {msg}")?,
            }
        }
    }
    Ok(ElicitResult {
        action: ElicitAction::Accept,
        content: Some(content),
    })
}

fn field_prompt(name: &str, field: &PrimitiveSchema, required: bool) -> String {
    let mut s = format!("  {}", field.title().unwrap_or(name));
    if let Some(d) = field.description() {
        s.push_str(&format!(" — {d}"));
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
        s.push_str(&format!(" [default: {d}]"));
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
        value.to_owned()
    } else {
        format!("{title} ({value})")
    }
}

fn fmt_opt<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref().map(ToString::to_string).unwrap_or_default()
}

fn yes_no(b: bool) -> &'static str {
    if b { "y" } else { "n" }
}

/// The value of one field from the typed text: `Ok(None)` leaves it out.
fn parse_field(
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
            (Some(d), _) => Ok(Some(d)),
            (None, true) => Err("this field is required".into()),
            (None, false) => Ok(None),
        };
    }
    match field {
        PrimitiveSchema::String {
            min_length,
            max_length,
            format,
            ..
        } => {
            let n = text.chars().count() as u64;
            if min_length.is_some_and(|m| n < m) || max_length.is_some_and(|m| n > m) {
                return Err(format!(
                    "length must be {}..{} characters",
                    fmt_opt(min_length),
                    fmt_opt(max_length)
                ));
            }
            if let Some(f) = format {
                check_format(*f, text)?;
            }
            Ok(Some(Value::String(text.to_owned())))
        }
        PrimitiveSchema::Number {
            integer,
            minimum,
            maximum,
            ..
        } => {
            let x: f64 = text.parse().map_err(|_| "not a number".to_owned())?;
            if !x.is_finite() || (*integer && x.fract() != 0.0) {
                return Err(if *integer {
                    "not an integer".into()
                } else {
                    "not a number".into()
                });
            }
            if minimum.is_some_and(|m| x < m) || maximum.is_some_and(|m| x > m) {
                return Err(format!(
                    "must be within {}..{}",
                    fmt_opt(minimum),
                    fmt_opt(maximum)
                ));
            }
            Ok(Some(number(x, *integer)))
        }
        PrimitiveSchema::Boolean { .. } => match text.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Ok(Some(Value::Bool(true))),
            "n" | "no" | "false" => Ok(Some(Value::Bool(false))),
            _ => Err("answer y or n".into()),
        },
        PrimitiveSchema::SingleSelect { options, .. } => {
            let pick = pick(options.iter().map(|o| (&o.value, &o.title)), text)
                .ok_or_else(|| "choose one of the listed options (number or value)".to_owned())?;
            Ok(Some(Value::String(pick)))
        }
        PrimitiveSchema::MultiSelect {
            options,
            min_items,
            max_items,
            ..
        } => {
            let mut picked = Vec::new();
            for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let p = pick(options.iter().map(|o| (&o.value, &o.title)), part)
                    .ok_or_else(|| format!("{part:?} is not one of the listed options"))?;
                if !picked.contains(&p) {
                    picked.push(p);
                }
            }
            let n = picked.len() as u64;
            if min_items.is_some_and(|m| n < m) || max_items.is_some_and(|m| n > m) {
                return Err(format!(
                    "choose {}..{} options",
                    fmt_opt(min_items),
                    fmt_opt(max_items)
                ));
            }
            Ok(Some(json!(picked)))
        }
        // A field type this client does not know (`PrimitiveSchema` may grow): it
        // cannot be typed here, so the form fails rather than send a guess.
        _ => Err("this kind of field cannot be answered with mrtr call".into()),
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
        && (1..=options.len()).contains(&i)
    {
        return Some(options[i - 1].0.clone());
    }
    options
        .iter()
        .find(|(v, t)| v.as_str() == text || t.eq_ignore_ascii_case(text))
        .map(|(v, _)| (*v).clone())
}

fn check_format(f: StringFormat, text: &str) -> Result<(), String> {
    let ok = match f {
        StringFormat::Email => text
            .split_once('@')
            .is_some_and(|(a, b)| !a.is_empty() && b.contains('.')),
        StringFormat::Uri => text.split_once(':').is_some_and(|(s, _)| !s.is_empty()),
        StringFormat::Date => is_date(text),
        StringFormat::DateTime => {
            text.len() > 10 && is_date(&text[..10]) && matches!(text.as_bytes()[10], b'T' | b't')
        }
        // A format this client does not know (`StringFormat` may grow): the server
        // validates the answer and asks again if it does not fit.
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("not a valid {}", f.as_str()))
    }
}

fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

/// Shows a url-mode elicitation and asks for consent.
pub(crate) fn ask_url(
    url: &ElicitUrlParams,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> std::io::Result<ElicitResult> {
    writeln!(out, "\n? {}", url.message)?;
    writeln!(
        out,
        "  The server asks you to open this link:\n    {}",
        url.url
    )?;
    loop {
        write!(
            out,
            "  Open it and continue? (y = accept, n = decline, :cancel): "
        )?;
        out.flush()?;
        match read(input)? {
            Typed::Decline => return Ok(refusal(ElicitAction::Decline)),
            Typed::Cancel => return Ok(refusal(ElicitAction::Cancel)),
            Typed::Line(l) => match l.trim().to_ascii_lowercase().as_str() {
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

/// Shows a sampling request and reads the model's reply from the user; `None` = declined.
pub(crate) fn ask_sampling(
    params: &CreateMessageParams,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> std::io::Result<Option<String>> {
    writeln!(
        out,
        "\n? The server asks for a model reply (max {} tokens).",
        params.max_tokens
    )?;
    if let Some(s) = &params.system_prompt {
        writeln!(out, "  system: {s}")?;
    }
    for m in &params.messages {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("?");
        let text = match m.get("content") {
            Some(Value::Array(bs)) => bs
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            Some(b) => b
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or("[non-text content]")
                .to_owned(),
            None => String::new(),
        };
        writeln!(out, "  {role}: {text}")?;
    }
    write!(out, "  Your reply as the model (:decline to refuse): ")?;
    out.flush()?;
    Ok(match read(input)? {
        Typed::Line(l) => Some(l),
        Typed::Decline | Typed::Cancel => None,
    })
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
        let mut w = Sanitized(Vec::new());
        write!(w, "ok\x1b[2J\x1b]52;c;AAAA\x07\rfake prompt\n\tdone\x7f").unwrap();
        assert_eq!(
            String::from_utf8(w.0).unwrap(),
            "ok[2J]52;c;AAAAfake prompt\n\tdone"
        );
    }
}
