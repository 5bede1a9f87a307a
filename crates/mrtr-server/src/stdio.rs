//! stdio transport: newline-delimited JSON-RPC on stdin, one reply line each on stdout.
//!
//! stdout carries only JSON-RPC messages; logs go to stderr. Blank lines are
//! ignored; a line longer than the limit is answered with a -32600 error line
//! (and its bytes are discarded, never buffered whole); EOF ends the loop.
//! Messages are handled concurrently (up to [`crate::defaults::STDIO_MAX_IN_FLIGHT`]); each reply is
//! written as soon as it is ready, so replies may come out of request order.
//!
//! `subscriptions/listen` (when the service serves it, `Service::with_changes`)
//! shares the one channel: its acknowledgement, then its notifications, each
//! tagged with the listen request's id, interleaved with the other replies; a
//! `notifications/cancelled` naming that id ends it. A subscription the server
//! ends gracefully gets its result line; one cut short (its reader fell behind)
//! gets `notifications/cancelled` naming it, as the revision has stdio servers
//! end a subscription. At EOF the open subscriptions are dropped.
//!
//! A request that asked for notifications (a `progressToken`, an
//! `io.modelcontextprotocol/logLevel` in its `_meta`) gets its handler's progress
//! and log messages as lines of their own, as they are sent, all before its
//! response line; at most
//! [`MAX_NOTIFICATIONS_PER_REQUEST`](crate::defaults::MAX_NOTIFICATIONS_PER_REQUEST)
//! of one request wait to be written, and beyond them one is dropped. Lines of
//! concurrent requests interleave; none comes after its request's response.
//!
//! Both eras: a 2025-era `initialize` (one without the 2026-07-28 `_meta`)
//! selects the 2025 era for the process ([`Service::initialize`]); from then on
//! a message without that `_meta` is the session's ([`Service::handle_legacy`]),
//! whose asks go out as server-to-client request lines, answered by response
//! lines on stdin (matched by id), and whose list changes and subscribed
//! resources come as notification lines. A message with the `_meta` is served
//! statelessly, before `initialize` or after it.

use std::future::Future;
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use futures_util::stream::{BoxStream, FuturesUnordered, SelectAll};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};

use super::http::error_body;
use super::log;
use crate::notify::{Outbox, Queued};
use legacy::Legacy;
use mrtr::__private::lines::{Line, LineSplitter};
use mrtr::Timestamp;
use mrtr::principal::Principal;
use mrtr::service::{ParsedMessage, RequestContext, RequestLog, Service, Subscription};

mod legacy;

/// The most requests handled at once on one stdio connection.
const MAX_IN_FLIGHT: usize = crate::defaults::STDIO_MAX_IN_FLIGHT;

/// What the reader hands the worker.
enum Incoming {
    Line(Vec<u8>),
    TooLong,
}

/// Serves JSON-RPC over a line-oriented reader/writer until EOF or `shutdown`,
/// binding every flow to `principal` (stdio has no per-request authentication: the
/// principal is the one the process was configured with).
///
/// Requests are handled concurrently, up to [`crate::defaults::STDIO_MAX_IN_FLIGHT`] at once, so a
/// handler that awaits does not hold up the next request; each reply is written
/// when it is ready (JSON-RPC matches replies by id). At EOF the requests in
/// flight finish and their replies are written before this returns.
///
/// # Errors
/// An I/O error reading input or writing output (e.g. stdout closed).
pub async fn serve<R, W>(
    service: &Service,
    principal: &Principal,
    max_body: usize,
    mut reader: R,
    mut writer: W,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Incoming>(MAX_IN_FLIGHT);
    // The reader runs beside the worker (not as a select branch), so a partly read
    // line is never lost to a cancelled read.
    let reading = async move {
        let mut buf = Vec::new();
        let mut splitter = LineSplitter::new(max_body);
        loop {
            let incoming = match read_line(&mut reader, &mut splitter, &mut buf).await? {
                Line::Eof => return Ok::<(), std::io::Error>(()),
                Line::Whole if buf.iter().all(u8::is_ascii_whitespace) => continue,
                Line::Whole => Incoming::Line(std::mem::take(&mut buf)),
                Line::TooLong => Incoming::TooLong,
            };
            if tx.send(incoming).await.is_err() {
                return Ok(());
            }
        }
    };
    // The notifications of every request in flight, each request's share capped
    // by its own `Outbox`.
    let (notes, mut noted) = tokio::sync::mpsc::unbounded_channel::<Queued>();
    let legacy = Legacy::default();
    let working = async {
        let mut in_flight = FuturesUnordered::new();
        // The task runs requests made due (the tasks extension), beside them.
        let mut tasks = FuturesUnordered::new();
        // And the runs another process's lapsed lease left due (a shared store).
        // And the status changes of the tasks a subscription follows.
        let sweeps = crate::tasks::sweep_every(service);
        let mut sweep = crate::tasks::interval(sweeps.unwrap_or(Duration::from_secs(3600)));
        let mut tell = crate::tasks::interval(mrtr::defaults::TASK_POLL_INTERVAL);
        let mut subscriptions = Subscriptions::default();
        let mut open = true;
        loop {
            if !open && in_flight.is_empty() {
                return Ok::<(), std::io::Error>(());
            }
            tokio::select! {
                biased;
                // Only requests in flight send notifications.
                Some(n) = noted.recv(), if !in_flight.is_empty() => {
                    write_line(&mut writer, n.text()).await?;
                }
                Some(done) = in_flight.next() => {
                    let mut done: Done = done;
                    if let Some(s) = done.subscription.take() {
                        subscriptions.open(s);
                    }
                    if let Some(session) = done.session.take() {
                        subscriptions.follow(session);
                    }
                    if let Some(run) = done.task.take() {
                        tasks.push(crate::tasks::run_one(service, run));
                    }
                    // What the request sent before it ended goes out before its reply.
                    while let Ok(n) = noted.try_recv() {
                        write_line(&mut writer, n.text()).await?;
                    }
                    write_reply(&mut writer, done.body.take()).await?;
                    done.log_line();
                }
                Some(()) = tasks.next(), if !tasks.is_empty() => {}
                _ = sweep.tick(), if sweeps.is_some() => {
                    for run in service.due_tasks(mrtr::Timestamp::now()).await {
                        tasks.push(crate::tasks::run_one(service, run));
                    }
                }
                _ = tell.tick(), if sweeps.is_some() && !subscriptions.streams.is_empty() => {
                    service.tell_task_status(mrtr::Timestamp::now()).await;
                }
                Some(line) = subscriptions.streams.next(), if !subscriptions.streams.is_empty() => {
                    write_reply(&mut writer, Some(line)).await?;
                }
                incoming = rx.recv(), if open && in_flight.len() < MAX_IN_FLIGHT => match incoming {
                    Some(Incoming::Line(line)) if subscriptions.cancels(&line) => {}
                    Some(m) => in_flight.push(handle(service, principal, m, max_body, &notes, &legacy)),
                    None => open = false,
                },
                else => return Ok::<(), std::io::Error>(()),
            }
        }
    };
    tokio::select! {
        r = async { tokio::try_join!(reading, working).map(|_| ()) } => r,
        () = shutdown => Ok(()),
    }
}

/// A handled request: the reply body (if any) and what its log line needs; for
/// a listen request, the subscription (its body is the acknowledgement).
struct Done {
    body: Option<String>,
    log: RequestLog,
    correlation_id: String,
    started: Instant,
    subscription: Option<Subscription>,
    /// The 2025-era session `initialize` opened, whose notifications follow.
    session: Option<std::sync::Arc<mrtr::legacy::Session>>,
    /// A task run the request made due (the tasks extension), to start.
    task: Option<mrtr::service::TaskRun>,
    /// The request's span (`crate::span`), for its log line.
    span: tracing::Span,
}

impl Done {
    /// The request's one log line, in its span, once the span has recorded
    /// how the request ended.
    fn log_line(&self) {
        crate::span::conclude(&self.span, &self.log, crate::span::error_code(&self.log));
        let _in_span = self.span.enter();
        log::request(
            &self.correlation_id,
            "stdio",
            &self.log,
            None,
            self.started.elapsed(),
        );
    }
}

/// The subscriptions open on this channel: their notification lines, merged,
/// and a way to end each when the client cancels it.
#[derive(Default)]
struct Subscriptions {
    streams: SelectAll<BoxStream<'static, String>>,
    /// The listen request id (as JSON text) of each open subscription, and the
    /// sender whose drop ends its stream.
    cancel: Vec<(String, tokio::sync::oneshot::Sender<()>)>,
}

impl Subscriptions {
    /// Adds `s`'s notifications (after its acknowledgement, written by the caller).
    fn open(&mut self, s: Subscription) {
        let id = serde_json::to_string(s.id()).unwrap_or_default();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        self.cancel.retain(|(_, tx)| !tx.is_closed());
        self.cancel.push((id, tx));
        let s = std::sync::Arc::new(s);
        let lines = futures_util::stream::unfold((Some(s), rx), |(s, mut rx)| async move {
            let s = s?;
            tokio::select! {
                next = s.next() => match next {
                    Some(line) => Some((line, (Some(s), rx))),
                    None => {
                        // Ended: its result, or the stdio way of cutting it short.
                        let last = s.final_result().unwrap_or_else(|| s.cancellation());
                        Some((last, (None, rx)))
                    }
                },
                _ = &mut rx => None,
            }
        });
        self.streams.push(lines.boxed());
    }

    /// Adds the notifications of the process's 2025-era session (list changes,
    /// subscribed resources updated), untagged, until the server ends them.
    fn follow(&mut self, session: std::sync::Arc<mrtr::legacy::Session>) {
        let lines = futures_util::stream::unfold(session, |s| async move {
            let line = s.next_notification().await?;
            Some((line, s))
        });
        self.streams.push(lines.boxed());
    }

    /// Whether `line` is a `notifications/cancelled` naming an open
    /// subscription, which it then ends (nothing is written for it).
    fn cancels(&mut self, line: &[u8]) -> bool {
        if self.cancel.is_empty() || !contains(line, b"notifications/cancelled") {
            return false;
        }
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(line) else {
            return false;
        };
        if v.get("method").and_then(serde_json::Value::as_str) != Some("notifications/cancelled")
            || v.get("id").is_some()
        {
            return false;
        }
        let Some(id) = v
            .pointer("/params/requestId")
            .map(serde_json::Value::to_string)
        else {
            return false;
        };
        let before = self.cancel.len();
        self.cancel.retain(|(open, _)| *open != id);
        before != self.cancel.len()
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Handles one incoming line.
async fn handle(
    service: &Service,
    principal: &Principal,
    incoming: Incoming,
    max_body: usize,
    notes: &tokio::sync::mpsc::UnboundedSender<Queued>,
    legacy: &Legacy,
) -> Done {
    let started = Instant::now();
    let corr = log::correlation_id();
    match incoming {
        Incoming::TooLong => {
            let msg = format!("Request too large (limit {max_body} bytes per line)");
            let entry = RequestLog {
                outcome: "error:-32600".into(),
                detail: Some("line too long".into()),
                ..RequestLog::default()
            };
            Done {
                body: Some(error_body(-32600, &msg)),
                log: entry,
                correlation_id: corr,
                started,
                subscription: None,
                session: None,
                task: None,
                span: tracing::Span::none(),
            }
        }
        Incoming::Line(buf) => {
            #[allow(unused_mut)] // why: the `otel` feature's span context goes in
            let mut ctx = RequestContext {
                principal: principal.clone(),
                now: Timestamp::now(),
                correlation_id: corr.clone(),
                peer: None,
                trace: None,
            };
            let message = ParsedMessage::parse(&buf);
            drop(buf);
            let message = if message.has_modern_meta() {
                if !service.eras().serves_modern() {
                    return Done {
                        body: Some(error_body(
                            -32600,
                            "this server serves 2025-era clients only: initialize first",
                        )),
                        log: RequestLog {
                            outcome: "error:-32600".into(),
                            detail: Some("2026-07-28 request on a 2025-era-only server".into()),
                            ..RequestLog::default()
                        },
                        correlation_id: corr,
                        started,
                        subscription: None,
                        session: None,
                        task: None,
                        span: tracing::Span::none(),
                    };
                }
                message
            } else {
                match legacy_era(service, message, &mut ctx, notes, legacy).await {
                    Ok(done) => {
                        return Done {
                            correlation_id: corr,
                            started,
                            ..done
                        };
                    }
                    // Not the 2025 era's: the modern path refuses it as it must.
                    Err(message) => message,
                }
            };
            let span = crate::span::request("stdio");
            crate::span::adopt(&span, &message, &mut ctx);
            let run = modern(service, message, ctx, notes, started);
            let done = tracing::Instrument::instrument(run, span.clone()).await;
            Done { span, ..done }
        }
    }
}

/// A message of the 2025 era: the client's answer to one of our requests, a
/// message of the open session, or the `initialize` that opens it; the
/// message back for any other (no session is open and it is no `initialize`).
/// The correlation id and start of the result are the caller's.
async fn legacy_era(
    service: &Service,
    message: ParsedMessage,
    ctx: &mut RequestContext,
    notes: &tokio::sync::mpsc::UnboundedSender<Queued>,
    legacy: &Legacy,
) -> Result<Done, ParsedMessage> {
    let done = |body: Option<String>, log: RequestLog| Done {
        body,
        log,
        correlation_id: String::new(),
        started: Instant::now(),
        subscription: None,
        session: None,
        task: None,
        span: tracing::Span::none(),
    };
    if legacy.answers(&message) {
        let log = RequestLog {
            outcome: "answer".into(),
            era: mrtr::legacy::Era::Legacy,
            ..RequestLog::default()
        };
        return Ok(done(None, log));
    }
    if legacy.session().is_none() && !message.is_legacy_initialize() {
        return Err(message);
    }
    // A request of the session, or its initialize: the conventions' span, as
    // for a modern request (the session's version as mcp.protocol.version).
    let span = crate::span::request("stdio");
    crate::span::adopt(&span, &message, ctx);
    let ctx = &*ctx;
    let traced = |body, log| Done {
        span: span.clone(),
        ..done(body, log)
    };
    if let Some(session) = legacy.session() {
        crate::span::session_version(&span, session.version());
        let outbox = Outbox::new(notes.clone());
        let asker = legacy.asker(notes);
        let handled = service.handle_legacy(message, session, ctx, &asker, Some(outbox));
        let reply = tracing::Instrument::instrument(handled, span.clone()).await;
        return Ok(traced(reply.body, reply.log));
    }
    let _in_span = span.enter();
    Ok(match service.initialize(message, ctx) {
        Ok((session, reply)) => {
            crate::span::session_version(&span, session.version());
            legacy.open(session);
            Done {
                session: legacy.session().cloned(),
                ..traced(reply.body, reply.log)
            }
        }
        Err(reply) => traced(reply.body, reply.log),
    })
}

/// A message served statelessly (2026-07-28).
async fn modern(
    service: &Service,
    message: ParsedMessage,
    ctx: RequestContext,
    notes: &tokio::sync::mpsc::UnboundedSender<Queued>,
    started: Instant,
) -> Done {
    let corr = ctx.correlation_id.clone();
    if service.changes().is_some() && message.is_listen() {
        return match service.listen(message, &ctx) {
            Ok(s) => Done {
                body: Some(s.acknowledgement()),
                log: s.log().clone(),
                correlation_id: corr,
                started,
                subscription: Some(s),
                session: None,
                task: None,
                span: tracing::Span::none(),
            },
            Err(reply) => Done {
                body: reply.body,
                log: reply.log,
                correlation_id: corr,
                started,
                subscription: None,
                session: None,
                task: None,
                span: tracing::Span::none(),
            },
        };
    }
    let deadline = tokio::time::sleep(service.handler_timeout());
    let reply = if message.asks_for_notifications() {
        let outbox = Outbox::new(notes.clone());
        let mut reply = service
            .handle_parsed_notifying(message, &ctx, deadline, outbox.clone())
            .await;
        let dropped = outbox.dropped();
        if dropped > 0 && reply.log.detail.is_none() {
            reply.log.detail = Some(format!("{dropped} notifications dropped (queue full)"));
        }
        reply
    } else {
        service.handle_parsed_until(message, &ctx, deadline).await
    };
    Done {
        body: reply.body,
        log: reply.log,
        correlation_id: corr,
        started,
        subscription: None,
        session: None,
        task: reply.task,
        span: tracing::Span::none(),
    }
}

async fn write_reply<W: AsyncWrite + Unpin>(
    writer: &mut W,
    body: Option<String>,
) -> std::io::Result<()> {
    match body {
        Some(body) => write_line(writer, &body).await,
        None => Ok(()),
    }
}

/// Writes one message as one line.
async fn write_line<W: AsyncWrite + Unpin>(writer: &mut W, message: &str) -> std::io::Result<()> {
    // Valid JSON has raw line breaks only as whitespace, so replacing them
    // keeps the message and keeps it on one line.
    let line = message.replace(['\n', '\r'], " ");
    writer.write_all(line.as_bytes()).await?;
    writer.write_all(b"\n").await?;
    writer.flush().await
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

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<(Line, Vec<u8>)> {
        // A tiny buffer exercises lines split across reads.
        let mut r = tokio::io::BufReader::with_capacity(3, input);
        let mut out = Vec::new();
        let mut buf = Vec::new();
        let mut splitter = LineSplitter::new(max);
        loop {
            let l = read_line(&mut r, &mut splitter, &mut buf).await.unwrap();
            if l == Line::Eof {
                return out;
            }
            out.push((l, buf.clone()));
        }
    }

    #[tokio::test]
    async fn splits_lines_and_limits() {
        let got = lines(b"ab\r\n\n0123456789\nxyz", 5).await;
        assert_eq!(
            got,
            vec![
                (Line::Whole, b"ab".to_vec()),
                (Line::Whole, b"".to_vec()),
                (Line::TooLong, b"".to_vec()),
                (Line::Whole, b"xyz".to_vec()),
            ]
        );
        assert!(lines(b"", 5).await.is_empty());
        assert_eq!(lines(b"123456", 5).await, vec![(Line::TooLong, Vec::new())]);
        assert_eq!(
            lines(b"12345\n", 5).await,
            vec![(Line::Whole, b"12345".to_vec())]
        );
    }

    #[tokio::test]
    async fn notifications_are_lines_before_their_response_line() {
        let service = Service::new(
            mrtr::engine::Engine::new(mrtr::seal::Keyring::ephemeral(), "t"),
            "t",
            "0",
        )
        .tool(
            "work",
            "w",
            serde_json::json!({"type": "object"}),
            |round| async move {
                for p in 1..=3 {
                    round.progress(f64::from(p), Some(3.0), None);
                    tokio::task::yield_now().await;
                }
                round.log(mrtr::LogLevel::Warning, serde_json::json!("careful"));
                round.log(mrtr::LogLevel::Info, serde_json::json!("below the level"));
                Ok(mrtr::ToolResult::text("done"))
            },
        );
        let line = |id: u32, extra: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"work","_meta":{{{extra}"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
            )
        };
        let input = format!(
            "{}\n{}\n{}\n",
            line(
                1,
                r#""progressToken":"a","io.modelcontextprotocol/logLevel":"warning","#
            ),
            line(2, ""),
            line(3, r#""io.modelcontextprotocol/logLevel":"error","#),
        );
        let mut out = Vec::new();
        let anyone = Principal::anonymous();
        serve(
            &service,
            &anyone,
            4096,
            input.as_bytes(),
            &mut out,
            std::future::pending(),
        )
        .await
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        // Three progress lines and one log line for request 1, all before its
        // response; nothing for 2 (it asked for nothing) or 3 (nothing at error).
        let notes: Vec<&serde_json::Value> =
            lines.iter().filter(|l| l.get("method").is_some()).collect();
        assert_eq!(notes.len(), 4, "{text}");
        let response_1 = lines.iter().position(|l| l["id"] == 1).unwrap();
        let last_note = lines
            .iter()
            .rposition(|l| l.get("method").is_some())
            .unwrap();
        assert!(last_note < response_1, "{text}");
        let progress: Vec<&serde_json::Value> = notes
            .iter()
            .filter(|n| n["method"] == "notifications/progress")
            .map(|n| &n["params"]["progress"])
            .collect();
        assert_eq!(progress, [1, 2, 3]);
        assert!(notes.iter().all(|n| n["method"] == "notifications/progress"
            && n["params"]["progressToken"] == "a"
            || n["params"] == serde_json::json!({"level": "warning", "data": "careful"})));
        for id in 1..=3 {
            assert_eq!(lines.iter().filter(|l| l["id"] == id).count(), 1, "{text}");
        }
    }

    #[tokio::test]
    async fn serves_lines_in_order_and_skips_blank() {
        let service = Service::new(
            mrtr::engine::Engine::new(mrtr::seal::Keyring::ephemeral(), "t"),
            "t",
            "0",
        );
        let mut input = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}\n\n   \n".to_vec();
        input.extend_from_slice(&[b'x'; 100]);
        input.push(b'\n');
        let mut out = Vec::new();
        let anyone = Principal::anonymous();
        serve(
            &service,
            &anyone,
            64,
            &input[..],
            &mut out,
            std::future::pending(),
        )
        .await
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        for l in &lines {
            let _: serde_json::Value = serde_json::from_str(l).unwrap();
        }
        assert!(lines[1].contains("-32600"));
    }

    fn rpc(id: u64, method: &str, mut params: serde_json::Value) -> String {
        params["_meta"] = serde_json::json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        let line =
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        format!("{line}\n")
    }

    #[tokio::test]
    async fn a_subscription_shares_the_channel_until_cancelled() {
        use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
        let changes = mrtr::service::Changes::new();
        let announce = changes.clone();
        let service = Service::new(
            mrtr::engine::Engine::new(mrtr::seal::Keyring::ephemeral(), "t"),
            "t",
            "0",
        )
        .tool(
            "touch",
            "Changes a.txt.",
            serde_json::json!({"type": "object"}),
            move |_| {
                announce.resource_updated("file:///a.txt");
                Ok(mrtr::ToolResult::text("touched"))
            },
        )
        .resource(mrtr::ResourceDefinition::new("file:///a.txt", "a"), |_| {
            Ok(mrtr::ResourceResult::text(
                "file:///a.txt",
                "text/plain",
                "a",
            ))
        })
        .with_changes(changes.clone());
        let (mut to_server, server_in) = tokio::io::duplex(64 * 1024);
        let (server_out, from_server) = tokio::io::duplex(64 * 1024);
        let anyone = Principal::anonymous();
        let serving = serve(
            &service,
            &anyone,
            64 * 1024,
            BufReader::new(server_in),
            server_out,
            std::future::pending(),
        );
        let client = async {
            let mut lines = BufReader::new(from_server).lines();
            let mut next = async || -> serde_json::Value {
                let l = lines.next_line().await.unwrap().expect("a line");
                serde_json::from_str(&l).unwrap()
            };
            let listen = rpc(
                5,
                "subscriptions/listen",
                serde_json::json!({"notifications": {"resourceSubscriptions": ["file:///a.txt"]}}),
            );
            to_server.write_all(listen.as_bytes()).await.unwrap();
            let ack = next().await;
            assert_eq!(
                ack["method"], "notifications/subscriptions/acknowledged",
                "{ack}"
            );
            assert_eq!(
                ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
                5
            );
            let touch = rpc(6, "tools/call", serde_json::json!({"name": "touch"}));
            to_server.write_all(touch.as_bytes()).await.unwrap();
            // The reply and the update, in either order.
            let (a, b) = (next().await, next().await);
            let (reply, update) = if a.get("id").is_some() {
                (a, b)
            } else {
                (b, a)
            };
            assert_eq!(reply["id"], 6, "{reply}");
            assert_eq!(
                update["method"], "notifications/resources/updated",
                "{update}"
            );
            assert_eq!(
                update["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
                5
            );
            // The client cancels it: no more updates, only the replies.
            let cancel = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                            "params": {"requestId": 5}});
            to_server
                .write_all(format!("{cancel}\n").as_bytes())
                .await
                .unwrap();
            for id in 7..10 {
                to_server
                    .write_all(
                        rpc(id, "tools/call", serde_json::json!({"name": "touch"})).as_bytes(),
                    )
                    .await
                    .unwrap();
                let v = next().await;
                assert_eq!(v["id"], id, "only the reply: {v}");
            }
            assert_eq!(changes.open_subscriptions(), 0);
            // A second one, ended gracefully by the server: its result line.
            to_server
                .write_all(
                    rpc(
                        11,
                        "subscriptions/listen",
                        serde_json::json!({
                "notifications": {"resourceSubscriptions": ["file:///a.txt"]}}),
                    )
                    .as_bytes(),
                )
                .await
                .unwrap();
            assert_eq!(
                next().await["method"],
                "notifications/subscriptions/acknowledged"
            );
            changes.close_all();
            let end = next().await;
            assert_eq!(end["id"], 11, "{end}");
            assert_eq!(end["result"]["resultType"], "complete", "{end}");
            drop(to_server);
            assert!(
                lines.next_line().await.unwrap().is_none(),
                "EOF ends the output"
            );
        };
        let (served, ()) = tokio::join!(serving, client);
        served.unwrap();
    }

    /// stdio carries no headers: a call of a tool that declares `x-mcp-header`
    /// parameters is served without any (MCP 2026-07-28: the mirroring is a
    /// Streamable HTTP matter).
    #[tokio::test]
    async fn a_tool_with_parameter_headers_is_served_without_them() {
        let schema = serde_json::json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
        }});
        let service = Service::new(
            mrtr::engine::Engine::new(mrtr::seal::Keyring::ephemeral(), "t"),
            "t",
            "0",
        )
        .tool("query", "q", schema, |_| Ok(mrtr::ToolResult::text("ran")));
        let input = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"query","arguments":{"region":"eu"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}
"#;
        let mut out = Vec::new();
        let anyone = Principal::anonymous();
        serve(
            &service,
            &anyone,
            4096,
            &input[..],
            &mut out,
            std::future::pending(),
        )
        .await
        .unwrap();
        let reply: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(reply["result"]["content"][0]["text"], "ran", "{reply}");
    }

    #[tokio::test]
    async fn initialize_selects_the_2025_era_whose_asks_are_request_lines() {
        use serde_json::json;
        use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
        let changes = mrtr::service::Changes::new();
        let service = Service::new(
            mrtr::engine::Engine::new(mrtr::seal::Keyring::ephemeral(), "t"),
            "t",
            "0",
        )
        .tool(
            "greet",
            "Asks a name.",
            json!({"type": "object"}),
            |round| match round
                .elicit("name", mrtr::Form::new("Your name?").string("name", "Name"))?
            {
                mrtr::Elicited::Accepted(f) => Ok(mrtr::ToolResult::text(format!(
                    "Hello, {}!",
                    f.str("name").unwrap_or("you")
                ))),
                _ => Ok(mrtr::ToolResult::text("Hello!")),
            },
        )
        .with_changes(changes.clone());
        let (mut to_server, server_in) = tokio::io::duplex(64 * 1024);
        let (server_out, from_server) = tokio::io::duplex(64 * 1024);
        let anyone = Principal::anonymous();
        let serving = serve(
            &service,
            &anyone,
            64 * 1024,
            BufReader::new(server_in),
            server_out,
            std::future::pending(),
        );
        let client = async {
            let mut lines = BufReader::new(from_server).lines();
            let mut next = async || -> serde_json::Value {
                let l = lines.next_line().await.unwrap().expect("a line");
                serde_json::from_str(&l).unwrap()
            };
            let mut send = async |v: serde_json::Value| {
                let mut line = v.to_string();
                line.push('\n');
                to_server.write_all(line.as_bytes()).await.unwrap();
            };
            // Before initialize, a message without the modern _meta is refused.
            send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).await;
            assert!(next().await["error"].is_object());
            send(
                json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "c", "version": "1"}}}),
            )
            .await;
            let init = next().await;
            assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
            send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
            send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                        "params": {"name": "greet"}}))
            .await;
            let ask = next().await;
            assert_eq!(ask["method"], "elicitation/create", "{ask}");
            // A modern request is served meanwhile, statelessly.
            send(
                json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {"_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}}}}),
            )
            .await;
            let list = next().await;
            assert_eq!(list["id"], 4);
            assert_eq!(list["result"]["resultType"], "complete");
            send(json!({"jsonrpc": "2.0", "id": ask["id"],
                        "result": {"action": "accept", "content": {"name": "Ada"}}}))
            .await;
            let done = next().await;
            assert_eq!(done["id"], 3);
            assert_eq!(done["result"]["content"][0]["text"], "Hello, Ada!");
            assert!(done["result"].get("resultType").is_none());
            // The session's list changes arrive as lines of their own.
            changes.list_changed(mrtr::service::List::Tools);
            assert_eq!(next().await["method"], "notifications/tools/list_changed");
            // A second initialize is refused; ping answers.
            send(
                json!({"jsonrpc": "2.0", "id": 5, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}}}),
            )
            .await;
            assert_eq!(next().await["error"]["code"], -32600);
            send(json!({"jsonrpc": "2.0", "id": 6, "method": "ping"})).await;
            assert_eq!(
                next().await,
                json!({"jsonrpc": "2.0", "id": 6, "result": {}})
            );
            drop(to_server);
        };
        let (served, ()) = tokio::join!(serving, client);
        served.unwrap();
    }
}
