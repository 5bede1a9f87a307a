//! [`StdioTransport`]: the client end of the stdio transport (feature `stdio`).
//!
//! The client spawns the server as a child process and speaks newline-delimited
//! JSON-RPC with it (MCP 2026-07-28, Transports §stdio): each request is one line on
//! the child's stdin, each message from the server one line on its stdout, and
//! the child's stderr is a log, never protocol.
//!
//! ```text
//!  send(request) ──► queue ──► writer task ──► child stdin (one line each, never cut)
//!       ▲
//!       └── pending[id] ◄── reader task ◄── child stdout (lines up to max_line_bytes)
//!                               │ a response: to the request with its id
//!                               │ a request from the server: to the 2025-era
//!                               │   exchange waiting (crate::legacy), else
//!                               │   answered -32601, logged
//!                               │ a notification, a stray response, a line that is
//!                               │ not JSON: logged and skipped
//!                               └ EOF or a read error: every pending request fails
//!                                 (TransportError::Connection, with the exit status)
//! ```
//!
//! Responses are matched by id, so requests may be in flight at the same time.
//! In 2026-07-28 a server sends no requests to the client (what it needs from the
//! user comes back as an `InputRequiredResult`); one that does gets a
//! `-32601 Method not found` error so it does not wait for an answer, unless a
//! 2025-era request is waiting ([`crate::legacy`]): then it is answered by the
//! client's handler, at most [`MAX_SERVER_REQUESTS`](crate::legacy::MAX_SERVER_REQUESTS)
//! queued at a time.
//!
//! The child is killed when the transport is dropped; [`StdioTransport::shutdown`]
//! closes its stdin first and gives it time to exit on its own.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::{BoxFuture, Timer, Transport, TransportError};
use mrtr::__private::lines::{Line, LineSplitter};

/// The longest line read from the server's stdout by default (bytes): a longer
/// line is skipped without being held in memory.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// The longest line of the server's stderr handed to a [`ServerStderr::lines`]
/// callback (bytes); the rest of a longer line is dropped.
pub const MAX_STDERR_LINE_BYTES: usize = 8 * 1024;

/// Lines queued for the server's stdin before `send` waits.
const QUEUE: usize = 64;

/// How long a failed request waits for the child's exit status, to report it.
const EXIT_STATUS_WAIT: Duration = Duration::from_secs(1);

/// The callback of [`ServerStderr::lines`].
type LineSink = Arc<dyn Fn(&str) + Send + Sync>;

/// Where the server's stderr (its log) goes.
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum ServerStderr {
    /// To this process's stderr, byte for byte (the default, as for any child
    /// process). The server writes to the terminal directly: filter it with
    /// [`lines`](Self::lines) when the server is not trusted with the terminal.
    #[default]
    Inherit,
    /// Nowhere.
    Discard,
    /// Line by line to a callback (lossy UTF-8, without the line ending, each at
    /// most [`MAX_STDERR_LINE_BYTES`]), on a task of its own that ends when the
    /// server's stderr closes (so the last lines of a server that is shutting down
    /// still arrive after the transport is dropped).
    Lines(LineSink),
}

impl ServerStderr {
    /// Each line of the server's stderr goes to `sink`.
    pub fn lines(sink: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Self::Lines(Arc::new(sink))
    }
}

impl std::fmt::Debug for ServerStderr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Inherit => f.write_str("Inherit"),
            Self::Discard => f.write_str("Discard"),
            Self::Lines(_) => f.write_str("Lines(..)"),
        }
    }
}

/// Builds a [`StdioTransport`] from a command: how to treat the server's stderr
/// and how long a line it may write.
#[derive(Debug)]
pub struct StdioTransportBuilder {
    command: std::process::Command,
    stderr: ServerStderr,
    max_line_bytes: usize,
}

impl StdioTransportBuilder {
    /// Where the server's stderr goes (default: [`ServerStderr::Inherit`]).
    #[must_use]
    pub fn stderr(mut self, stderr: ServerStderr) -> Self {
        self.stderr = stderr;
        self
    }

    /// The longest line read from the server's stdout (default:
    /// [`MAX_LINE_BYTES`], 16 MiB). A longer line is skipped without being held;
    /// when exactly one request is waiting it fails with
    /// [`TransportError::InvalidResponse`], since the line was most likely its
    /// response.
    #[must_use]
    pub fn max_line_bytes(mut self, bytes: usize) -> Self {
        self.max_line_bytes = bytes.max(1);
        self
    }

    /// Starts the server. Its stdin and stdout are taken for the protocol, whatever
    /// the command said; its environment, working directory and arguments are the
    /// command's.
    ///
    /// Must be called inside a tokio runtime with I/O enabled.
    ///
    /// # Errors
    /// [`TransportError::Connection`] when the program cannot be started (not found,
    /// not executable), or when there is no tokio runtime.
    pub fn spawn(self) -> Result<StdioTransport, TransportError> {
        let program = self.command.get_program().to_string_lossy().into_owned();
        let command_line = std::iter::once(self.command.get_program())
            .chain(self.command.get_args())
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ");
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(TransportError::Connection(format!(
                "cannot start {program:?}: no tokio runtime"
            )));
        }
        let mut command = tokio::process::Command::from(self.command);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(match self.stderr {
                ServerStderr::Inherit => Stdio::inherit(),
                ServerStderr::Discard => Stdio::null(),
                ServerStderr::Lines(_) => Stdio::piped(),
            })
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|e| TransportError::Connection(format!("cannot start {program:?}: {e}")))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(TransportError::Connection(format!(
                "cannot start {program:?}: its stdin or stdout is not a pipe"
            )));
        };
        let shared = Arc::new(Shared::default());
        let (requests, server_requests) = mpsc::channel(crate::legacy::MAX_SERVER_REQUESTS);
        shared.lock().requests = Some(requests);
        let (queue, queued) = mpsc::channel(QUEUE);
        let tasks = [
            tokio::spawn(write_stdin(stdin, queued, shared.clone())),
            tokio::spawn(read_stdout(
                BufReader::new(stdout),
                shared.clone(),
                queue.downgrade(),
                self.max_line_bytes,
            )),
        ];
        // Not aborted with the others: it ends when the server's stderr closes, so
        // the last lines of a server that is shutting down still arrive.
        if let (ServerStderr::Lines(sink), Some(stderr)) = (self.stderr, child.stderr.take()) {
            tokio::spawn(read_stderr(BufReader::new(stderr), sink));
        }
        Ok(StdioTransport {
            program,
            pid: child.id(),
            legacy: Box::new(StdioLegacy {
                command_line,
                server_requests: tokio::sync::Mutex::new(server_requests),
            }),
            shared,
            queue: Mutex::new(Some(queue)),
            child: tokio::sync::Mutex::new(child),
            tasks,
        })
    }
}

/// A transport to an MCP server that this process starts and talks to over its
/// stdin and stdout (newline-delimited JSON-RPC).
///
/// Needs a tokio runtime. The server is killed when the transport is dropped.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use mrtr_client::{Client, ServerStderr, StdioTransport};
/// use serde_json::json;
///
/// let mut server = std::process::Command::new("mrtr");
/// server.args(["serve", "--stdio", "--anonymous"]);
/// let transport = StdioTransport::builder(server)
///     .stderr(ServerStderr::Discard)
///     .spawn()?;
/// let client = Client::builder(transport).build();
/// let done = client.call_tool("echo", json!({"text": "hi"})).await?;
/// println!("{}", done.text());
/// # Ok(()) }
/// ```
pub struct StdioTransport {
    program: String,
    pid: Option<u32>,
    /// What the 2025 era needs (boxed: most transports never use it).
    pub(crate) legacy: Box<StdioLegacy>,
    shared: Arc<Shared>,
    /// `None` once [`shutdown`](StdioTransport::shutdown) closed the server's stdin.
    queue: Mutex<Option<mpsc::Sender<Vec<u8>>>>,
    child: tokio::sync::Mutex<Child>,
    /// The writer and the reader, aborted on drop.
    tasks: [JoinHandle<()>; 2],
}

impl std::fmt::Debug for StdioTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioTransport")
            .field("program", &self.program)
            .field("pid", &self.pid)
            .finish_non_exhaustive()
    }
}

impl StdioTransport {
    /// Starts `program` with `args`, the server's stderr inherited. Use
    /// [`builder`](Self::builder) to set the environment, the working directory or
    /// where its stderr goes.
    ///
    /// # Errors
    /// As [`StdioTransportBuilder::spawn`].
    pub fn spawn<I, S>(program: impl AsRef<OsStr>, args: I) -> Result<Self, TransportError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut command = std::process::Command::new(program);
        command.args(args);
        Self::builder(command).spawn()
    }

    /// A builder for a transport to the server `command` starts.
    pub fn builder(command: std::process::Command) -> StdioTransportBuilder {
        StdioTransportBuilder {
            command,
            stderr: ServerStderr::Inherit,
            max_line_bytes: MAX_LINE_BYTES,
        }
    }

    /// The server's process id (`None` once it has been waited for).
    pub fn id(&self) -> Option<u32> {
        self.pid
    }

    /// Ends the session the way the stdio transport asks: closes the server's
    /// stdin, gives it `grace` to exit, then kills it. Requests still waiting fail.
    /// Returns the exit status, or `None` when it could not be read.
    pub async fn shutdown(&self, grace: Duration) -> Option<ExitStatus> {
        self.shared.close("the transport was shut down".into());
        // Dropping the sender ends the writer task, which closes the pipe once the
        // lines already queued are written.
        self.queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let mut child = self.child.lock().await;
        match tokio::time::timeout(grace, child.wait()).await {
            Ok(status) => status.ok(),
            Err(_) => {
                let _ = child.start_kill();
                child.wait().await.ok()
            }
        }
    }

    /// The command line the server was started with.
    pub(crate) fn command_line(&self) -> &str {
        &self.legacy.command_line
    }

    /// The shared state of the reader and the writer.
    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }

    /// Queues one line (a JSON-RPC message and its newline) for the server's stdin.
    pub(crate) async fn write_line(&self, line: Vec<u8>) -> Result<(), TransportError> {
        let queue = self
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let Some(queue) = queue else {
            return Err(self.gone("the transport was shut down".into()).await);
        };
        if queue.send(line).await.is_err() {
            return Err(self.gone(self.shared.why_closed()).await);
        }
        Ok(())
    }

    /// The error for a request that failed because the connection is gone, with
    /// the server's exit status when it has one by now.
    pub(crate) async fn gone(&self, why: String) -> TransportError {
        let mut child = self.child.lock().await;
        let status = tokio::time::timeout(EXIT_STATUS_WAIT, child.wait()).await;
        TransportError::Connection(match status {
            Ok(Ok(status)) => format!("the server {:?} {} ({why})", self.program, exited(status)),
            _ => format!("the server {:?}: {why}", self.program),
        })
    }
}

/// "exited with status 3", "was killed by signal 9".
fn exited(status: ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt as _;
        if let Some(signal) = status.signal() {
            return format!("was killed by signal {signal}");
        }
    }
    match status.code() {
        Some(code) => format!("exited with status {code}"),
        None => format!("ended ({status})"),
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        // The child itself is killed by `kill_on_drop` when `self.child` drops.
    }
}

impl Transport for StdioTransport {
    fn network_transport(&self) -> &'static str {
        "pipe"
    }

    /// Tokio's timer ([`TokioTimer`](crate::TokioTimer)): this transport runs on tokio.
    fn timer(&self) -> Option<std::sync::Arc<dyn Timer>> {
        Some(std::sync::Arc::new(crate::TokioTimer))
    }

    fn legacy(&self) -> Option<&dyn crate::legacy::LegacyTransport> {
        Some(self)
    }

    fn send(&self, request: Value) -> BoxFuture<'_, Result<Value, TransportError>> {
        Box::pin(async move {
            let key = match request.get("id") {
                Some(id) if !id.is_null() => id.to_string(),
                _ => {
                    return Err(TransportError::InvalidRequest(
                        "a request without an id gets no response".into(),
                    ));
                }
            };
            let mut line = serde_json::to_vec(&request)
                .map_err(|e| TransportError::InvalidRequest(e.to_string()))?;
            // Compact JSON has no raw newline (they are escaped inside strings), so
            // the request is exactly one line.
            line.push(b'\n');
            let (reply, replied) = oneshot::channel();
            match self.shared.wait_for(key.clone(), reply) {
                Ok(()) => {}
                Err(TransportError::Connection(why)) => return Err(self.gone(why).await),
                Err(e) => return Err(e),
            }
            // Whatever ends this future (a response, an error, a timeout that drops
            // it) takes the entry out again.
            let _pending = Pending {
                shared: &self.shared,
                key,
            };
            let queue = self
                .queue
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            let Some(queue) = queue else {
                return Err(self.gone("the transport was shut down".into()).await);
            };
            if queue.send(line).await.is_err() {
                return Err(self.gone(self.shared.why_closed()).await);
            }
            match replied.await {
                Ok(Ok(response)) => Ok(response),
                Ok(Err(TransportError::Connection(why))) => Err(self.gone(why).await),
                Ok(Err(e)) => Err(e),
                Err(_) => Err(self.gone(self.shared.why_closed()).await),
            }
        })
    }
}

/// What a [`StdioTransport`] keeps for the 2025 era.
pub(crate) struct StdioLegacy {
    /// The program and its arguments, the key its era is remembered by.
    command_line: String,
    /// The requests the server sends during a 2025-era exchange.
    pub(crate) server_requests: tokio::sync::Mutex<mpsc::Receiver<Value>>,
}

/// What the reader, the writer and the requests share.
#[derive(Default)]
pub(crate) struct Shared {
    state: Mutex<State>,
}

#[derive(Default)]
pub(crate) struct State {
    /// The requests waiting for a response, by the JSON text of their id.
    pending: HashMap<String, oneshot::Sender<Result<Value, TransportError>>>,
    /// Why the connection is gone, once it is.
    closed: Option<String>,
    /// Where server requests go while a 2025-era exchange waits (`serving > 0`).
    requests: Option<mpsc::Sender<Value>>,
    /// How many 2025-era exchanges are waiting for their response.
    pub(crate) serving: usize,
}

impl Shared {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a request waiting for the response with id `key`.
    pub(crate) fn wait_for(
        &self,
        key: String,
        reply: oneshot::Sender<Result<Value, TransportError>>,
    ) -> Result<(), TransportError> {
        let mut state = self.lock();
        if let Some(why) = &state.closed {
            return Err(TransportError::Connection(why.clone()));
        }
        if state.pending.contains_key(&key) {
            return Err(TransportError::InvalidRequest(format!(
                "a request with id {key} is already waiting for its response"
            )));
        }
        state.pending.insert(key, reply);
        Ok(())
    }

    fn why_closed(&self) -> String {
        self.lock()
            .closed
            .clone()
            .unwrap_or_else(|| "the connection to the server is closed".into())
    }

    /// The connection is gone: every waiting request fails, and so does every later one.
    fn close(&self, why: String) {
        let mut state = self.lock();
        let why = state.closed.get_or_insert(why).clone();
        for (_, reply) in state.pending.drain() {
            let _ = reply.send(Err(TransportError::Connection(why.clone())));
        }
    }

    /// The one request waiting, when exactly one is: the only one a message
    /// without a usable id can belong to.
    fn only_pending(&self) -> Option<oneshot::Sender<Result<Value, TransportError>>> {
        let mut state = self.lock();
        if state.pending.len() != 1 {
            return None;
        }
        let key = state.pending.keys().next()?.clone();
        state.pending.remove(&key)
    }
}

/// Takes a request's entry out of the pending map when its future ends.
pub(crate) struct Pending<'a> {
    pub(crate) shared: &'a Shared,
    pub(crate) key: String,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        self.shared.lock().pending.remove(&self.key);
    }
}

/// Writes queued lines to the server's stdin, each whole, until the queue closes
/// (the transport shut down or dropped) or the pipe breaks.
async fn write_stdin(
    mut stdin: ChildStdin,
    mut queued: mpsc::Receiver<Vec<u8>>,
    shared: Arc<Shared>,
) {
    while let Some(line) = queued.recv().await {
        let written = async {
            stdin.write_all(&line).await?;
            stdin.flush().await
        };
        if let Err(e) = written.await {
            shared.close(format!("cannot write to its stdin: {e}"));
            return;
        }
    }
}

/// Reads the server's stdout and hands each response to the request it answers.
async fn read_stdout<R: AsyncBufRead + Unpin>(
    mut stdout: R,
    shared: Arc<Shared>,
    queue: mpsc::WeakSender<Vec<u8>>,
    max_line_bytes: usize,
) {
    let mut buf = Vec::new();
    let mut splitter = LineSplitter::new(max_line_bytes);
    loop {
        match read_line(&mut stdout, &mut splitter, &mut buf).await {
            Ok(Line::Eof) => {
                shared.close("it closed its stdout".into());
                return;
            }
            Err(e) => {
                shared.close(format!("cannot read its stdout: {e}"));
                return;
            }
            Ok(Line::TooLong) => {
                let why = format!("the server wrote a line longer than {max_line_bytes} bytes");
                match shared.only_pending() {
                    Some(reply) => {
                        let _ = reply.send(Err(TransportError::InvalidResponse(why)));
                    }
                    None => tracing::warn!("{why}; skipped"),
                }
            }
            Ok(Line::Whole) if buf.iter().all(u8::is_ascii_whitespace) => {}
            Ok(Line::Whole) => dispatch(&buf, &shared, &queue),
        }
    }
}

/// One line from the server's stdout.
fn dispatch(line: &[u8], shared: &Shared, queue: &mpsc::WeakSender<Vec<u8>>) {
    let Ok(Value::Object(message)) = serde_json::from_slice::<Value>(line) else {
        tracing::warn!(
            bytes = line.len(),
            "skipped a line from the server that is not a JSON-RPC message"
        );
        return;
    };
    let id = message.get("id").filter(|id| !id.is_null());
    let method = message.get("method").and_then(Value::as_str);
    let is_response = message.contains_key("result") || message.contains_key("error");
    match (method, id) {
        (None, Some(id)) if is_response => {
            let reply = shared.lock().pending.remove(&id.to_string());
            match reply {
                Some(reply) => {
                    let _ = reply.send(Ok(Value::Object(message)));
                }
                None => tracing::debug!(%id, "skipped a response no request is waiting for"),
            }
        }
        // An error without an id (e.g. the server could not parse a line): it can
        // only be attributed when one request is waiting.
        (None, None) if message.contains_key("error") => match shared.only_pending() {
            Some(reply) => {
                let _ = reply.send(Ok(Value::Object(message)));
            }
            None => tracing::warn!("skipped an error response without an id"),
        },
        (Some(method), Some(id)) => {
            {
                let state = shared.lock();
                if state.serving > 0
                    && let Some(requests) = &state.requests
                {
                    match requests.try_send(Value::Object(message.clone())) {
                        Ok(()) => return,
                        Err(_) => tracing::warn!(method, "too many server requests waiting"),
                    }
                }
            }
            tracing::warn!(method, %id, "the server sent a request; answered -32601");
            let answer = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601,
                "message": "Method not found: this client takes no requests (MCP 2026-07-28)"}});
            let mut line = answer.to_string().into_bytes();
            line.push(b'\n');
            // Never wait here: the reader must keep reading. A full queue drops the answer.
            if let Some(queue) = queue.upgrade() {
                let _ = queue.try_send(line);
            }
        }
        (Some(method), None) => tracing::debug!(method, "skipped a notification"),
        _ => tracing::warn!("skipped a message that is neither a request nor a response"),
    }
}

/// Hands the server's stderr to `sink`, a line at a time.
async fn read_stderr<R: AsyncBufRead + Unpin>(mut stderr: R, sink: LineSink) {
    let mut buf = Vec::new();
    loop {
        buf.clear();
        // The first MAX_STDERR_LINE_BYTES of each line; the rest is skipped.
        let mut cut = false;
        let more = loop {
            let chunk = match stderr.fill_buf().await {
                Ok(chunk) => chunk,
                Err(_) => return,
            };
            if chunk.is_empty() {
                break false;
            }
            let (take, ends) = match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => (i, true),
                None => (chunk.len(), false),
            };
            let room = MAX_STDERR_LINE_BYTES.saturating_sub(buf.len());
            cut |= take > room;
            buf.extend_from_slice(&chunk[..take.min(room)]);
            stderr.consume(if ends { take + 1 } else { take });
            if ends {
                break true;
            }
        };
        if !buf.is_empty() || more {
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            let mut text = String::from_utf8_lossy(&buf).into_owned();
            if cut {
                text.push('…');
            }
            sink(&text);
        }
        if !more {
            return;
        }
    }
}

/// Reads the next line through `splitter` (the core's bounded splitter) into `buf`.
async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    splitter: &mut LineSplitter,
    buf: &mut Vec<u8>,
) -> std::io::Result<Line> {
    loop {
        let chunk = reader.fill_buf().await?;
        let (used, done) = splitter.feed(chunk, buf);
        reader.consume(used);
        if let Some(line) = done {
            return Ok(line);
        }
    }
}

/// The 2025 era on this transport.
mod legacy;

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn stderr_lines_are_cut_and_lossy() {
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let sink = seen.clone();
        let long = vec![b'x'; MAX_STDERR_LINE_BYTES + 10];
        let mut input = b"one\r\n\xff\n".to_vec();
        input.extend_from_slice(&long);
        input.extend_from_slice(b"\nlast");
        read_stderr(
            BufReader::with_capacity(7, &input[..]),
            Arc::new(move |l: &str| sink.lock().unwrap().push(l.to_owned())),
        )
        .await;
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 4);
        assert_eq!(seen[0], "one");
        assert_eq!(seen[1], "\u{fffd}");
        assert_eq!(seen[2].len(), MAX_STDERR_LINE_BYTES + '…'.len_utf8());
        assert_eq!(seen[3], "last");
    }

    #[test]
    fn messages_go_to_their_request() {
        let shared = Shared::default();
        let (tx, mut rx) = oneshot::channel();
        shared.wait_for("7".into(), tx).unwrap();
        let (q, mut queued) = mpsc::channel(4);
        let weak = q.downgrade();
        // Junk, a notification, another id, a server request: none of them is the response.
        for junk in [
            &b"garbage"[..],
            b"[1,2]",
            br#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#,
            br#"{"jsonrpc":"2.0","id":8,"result":{}}"#,
            br#"{"jsonrpc":"2.0","id":"7","result":{}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{}}"#,
        ] {
            dispatch(junk, &shared, &weak);
        }
        assert!(rx.try_recv().is_err());
        let answer: Value = serde_json::from_slice(&queued.try_recv().unwrap()).unwrap();
        assert_eq!(answer["id"], 1);
        assert_eq!(answer["error"]["code"], -32601);
        // The response.
        dispatch(
            br#"{"jsonrpc":"2.0","id":7,"result":{"ok":1}}"#,
            &shared,
            &weak,
        );
        assert_eq!(rx.try_recv().unwrap().unwrap()["result"]["ok"], 1);
        // An id-less error goes to the only request waiting.
        let (tx, mut rx) = oneshot::channel();
        shared.wait_for("9".into(), tx).unwrap();
        dispatch(
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"too big"}}"#,
            &shared,
            &weak,
        );
        assert_eq!(rx.try_recv().unwrap().unwrap()["error"]["code"], -32600);
        // Closing fails whatever waits, and whatever comes later.
        let (tx, mut rx) = oneshot::channel();
        shared.wait_for("10".into(), tx).unwrap();
        shared.close("gone".into());
        assert_eq!(
            rx.try_recv().unwrap(),
            Err(TransportError::Connection("gone".into()))
        );
        let (tx, _rx) = oneshot::channel();
        assert!(shared.wait_for("11".into(), tx).is_err());
    }
}
