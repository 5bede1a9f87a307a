//! stdio transport: newline-delimited JSON-RPC on stdin, one reply line each on stdout.
//!
//! stdout carries only JSON-RPC messages; logs go to stderr. Blank lines are
//! ignored; a line longer than the limit is answered with a -32600 error line
//! (and its bytes are discarded, never buffered whole); EOF ends the loop.
//! Messages are handled one at a time, so replies keep the order of requests.

use std::future::Future;
use std::time::Instant;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};

use super::http::error_body;
use super::log;
use crate::principal::Principal;
use crate::service::{RequestContext, RequestLog, Service};
use crate::time::Timestamp;

/// What one read produced.
#[derive(Debug, PartialEq, Eq)]
enum Read {
    /// End of input (nothing pending).
    Eof,
    /// A complete line (without its line ending) is in the buffer.
    Line,
    /// The line exceeded the limit; its bytes were skipped up to the newline.
    TooLong,
}

/// Reads one line into `buf` (cleared first), never holding more than `max` bytes.
async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Read> {
    buf.clear();
    let mut too_long = false;
    let mut saw_any = false;
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            // EOF: a last line without a newline still counts.
            return Ok(match (saw_any, too_long) {
                (false, _) => Read::Eof,
                (true, true) => Read::TooLong,
                (true, false) => Read::Line,
            });
        }
        saw_any = true;
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (chunk.len(), false),
        };
        if !too_long {
            if buf.len() + take > max {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(&chunk[..take]);
            }
        }
        reader.consume(if done { take + 1 } else { take });
        if done {
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            return Ok(if too_long { Read::TooLong } else { Read::Line });
        }
    }
}

/// Serves JSON-RPC over a line-oriented reader/writer until EOF or `shutdown`.
///
/// # Errors
/// An I/O error reading input or writing output (e.g. stdout closed).
pub async fn serve<R, W>(
    service: &Service,
    max_body: usize,
    mut reader: R,
    mut writer: W,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    tokio::pin!(shutdown);
    let mut buf = Vec::new();
    loop {
        let read = tokio::select! {
            r = read_line(&mut reader, &mut buf, max_body) => r?,
            () = &mut shutdown => return Ok(()),
        };
        let started = Instant::now();
        let (out, entry, corr) = match read {
            Read::Eof => return Ok(()),
            Read::Line if buf.iter().all(u8::is_ascii_whitespace) => continue,
            Read::TooLong => {
                let msg = format!("Request too large (limit {max_body} bytes per line)");
                let entry = RequestLog {
                    outcome: "error:-32600".into(),
                    detail: Some("line too long".into()),
                    ..RequestLog::default()
                };
                (Some(error_body(-32600, &msg)), entry, log::correlation_id())
            }
            Read::Line => {
                let corr = log::correlation_id();
                let ctx = RequestContext {
                    principal: Principal::anonymous(),
                    now: Timestamp::now(),
                    correlation_id: corr.clone(),
                    http_headers: None,
                };
                let handled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    service.handle(&buf, &ctx)
                }));
                match handled {
                    Ok(reply) => (reply.body, reply.log, corr),
                    Err(_) => {
                        let entry = RequestLog {
                            outcome: "error:-32603".into(),
                            detail: Some("panic in service".into()),
                            ..RequestLog::default()
                        };
                        (Some(error_body(-32603, "Internal error")), entry, corr)
                    }
                }
            }
        };
        if let Some(body) = out {
            // Valid JSON has raw line breaks only as whitespace, so replacing them
            // keeps the message and keeps it on one line.
            let line = body.replace(['\n', '\r'], " ");
            writer.write_all(line.as_bytes()).await?;
            writer.write_all(b"\n").await?;
            writer.flush().await?;
        }
        log::request(&corr, "stdio", &entry, None, started.elapsed());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<(Read, Vec<u8>)> {
        // A tiny buffer exercises lines split across reads.
        let mut r = tokio::io::BufReader::with_capacity(3, input);
        let mut out = Vec::new();
        let mut buf = Vec::new();
        loop {
            let l = read_line(&mut r, &mut buf, max).await.unwrap();
            if l == Read::Eof {
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
                (Read::Line, b"ab".to_vec()),
                (Read::Line, b"".to_vec()),
                (Read::TooLong, b"".to_vec()),
                (Read::Line, b"xyz".to_vec()),
            ]
        );
        assert!(lines(b"", 5).await.is_empty());
        assert_eq!(lines(b"123456", 5).await, vec![(Read::TooLong, Vec::new())]);
        assert_eq!(
            lines(b"12345\n", 5).await,
            vec![(Read::Line, b"12345".to_vec())]
        );
    }

    #[tokio::test]
    async fn serves_lines_in_order_and_skips_blank() {
        let service = Service::new(
            crate::engine::Engine::new(crate::seal::Keyring::ephemeral(), "t"),
            "t",
            "0",
        );
        let mut input = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}\n\n   \n".to_vec();
        input.extend_from_slice(&[b'x'; 100]);
        input.push(b'\n');
        let mut out = Vec::new();
        serve(&service, 64, &input[..], &mut out, std::future::pending())
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
}
