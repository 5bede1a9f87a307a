//! stdio transport: newline-delimited JSON-RPC on stdin, one reply line each on stdout.
//!
//! stdout carries only JSON-RPC messages; logs go to stderr. Blank lines are
//! ignored; a line longer than the limit is answered with a -32600 error line
//! (and its bytes are discarded, never buffered whole); EOF ends the loop.
//! Messages are handled concurrently (up to [`crate::defaults::STDIO_MAX_IN_FLIGHT`]); each reply is
//! written as soon as it is ready, so replies may come out of request order.

use std::future::Future;
use std::time::Instant;

use futures_util::StreamExt as _;
use futures_util::stream::FuturesUnordered;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};

use super::http::error_body;
use super::log;
use mrtr::__private::lines::{Line, LineSplitter};
use mrtr::Timestamp;
use mrtr::principal::Principal;
use mrtr::service::{RequestContext, RequestLog, Service};

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
    let working = async {
        let mut in_flight = FuturesUnordered::new();
        let mut open = true;
        loop {
            tokio::select! {
                biased;
                Some(done) = in_flight.next() => {
                    let done: Done = done;
                    write_reply(&mut writer, done.body).await?;
                    log::request(&done.correlation_id, "stdio", &done.log, None, done.started.elapsed());
                }
                incoming = rx.recv(), if open && in_flight.len() < MAX_IN_FLIGHT => match incoming {
                    Some(m) => in_flight.push(handle(service, principal, m, max_body)),
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

/// A handled request: the reply body (if any) and what its log line needs.
struct Done {
    body: Option<String>,
    log: RequestLog,
    correlation_id: String,
    started: Instant,
}

/// Handles one incoming line.
async fn handle(
    service: &Service,
    principal: &Principal,
    incoming: Incoming,
    max_body: usize,
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
            }
        }
        Incoming::Line(buf) => {
            let ctx = RequestContext {
                principal: principal.clone(),
                now: Timestamp::now(),
                correlation_id: corr.clone(),
                peer: None,
            };
            let deadline = tokio::time::sleep(service.handler_timeout());
            let reply = service.handle_until(&buf, &ctx, deadline).await;
            Done {
                body: reply.body,
                log: reply.log,
                correlation_id: corr,
                started,
            }
        }
    }
}

async fn write_reply<W: AsyncWrite + Unpin>(
    writer: &mut W,
    body: Option<String>,
) -> std::io::Result<()> {
    if let Some(body) = body {
        // Valid JSON has raw line breaks only as whitespace, so replacing them
        // keeps the message and keeps it on one line.
        let line = body.replace(['\n', '\r'], " ");
        writer.write_all(line.as_bytes()).await?;
        writer.write_all(b"\n").await?;
        writer.flush().await?;
    }
    Ok(())
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
}
