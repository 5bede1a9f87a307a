//! A bounded load driver for `scripts/flows-per-second.sh`: two-round MRTR flows
//! per second against a running `mrtr serve`.
//!
//! ```text
//! cargo run --release --example flows_load -- http://127.0.0.1:8808/mcp [SECONDS] [CONNECTIONS]
//! ```
//!
//! Each of CONNECTIONS keep-alive connections runs flows one after another for
//! SECONDS (default 10, at most 120): `tools/call` of the reference server's
//! `test_input_required_result_elicitation` (round 1: an `InputRequiredResult`
//! asking `user_name`), then its retry with the answer and the `requestState`
//! (round 2: the tool's result). The tool has no `once` side effect, so nothing
//! accumulates on the server. A flow counts when its second round completes; the
//! driver prints `flows/s: N` and exits 1 if any flow failed. Loopback only: it
//! speaks plain HTTP/1.1 on one TCP connection per task, on a single-threaded
//! runtime (pin it to a core of its own with `taskset`).

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const TOOL: &str = "test_input_required_result_elicitation";
const MAX_SECONDS: u64 = 120;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(addr) = args.next().as_deref().and_then(parse_url) else {
        eprintln!("usage: flows_load http://127.0.0.1:PORT/mcp [SECONDS] [CONNECTIONS]");
        return ExitCode::from(2);
    };
    let seconds: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(10);
    let connections: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(8);
    let run_for = Duration::from_secs(seconds.clamp(1, MAX_SECONDS));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let (flows, failures, elapsed) = runtime.block_on(drive(addr, run_for, connections.max(1)));
    let rate = flows as f64 / elapsed.as_secs_f64();
    println!(
        "flows: {flows} in {:.2} s, failures: {failures}",
        elapsed.as_secs_f64()
    );
    println!("flows/s: {rate:.0}");
    if failures == 0 && flows > 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// `http://HOST:PORT/mcp` with a numeric loopback host.
fn parse_url(url: &str) -> Option<SocketAddr> {
    let rest = url.strip_prefix("http://")?;
    let authority = rest.strip_suffix("/mcp")?;
    let addr: SocketAddr = authority.parse().ok()?;
    addr.ip().is_loopback().then_some(addr)
}

async fn drive(addr: SocketAddr, run_for: Duration, connections: usize) -> (u64, u64, Duration) {
    let flows = Arc::new(AtomicU64::new(0));
    let failures = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let deadline = started + run_for;
    let tasks: Vec<_> = (0..connections)
        .map(|n| {
            let (flows, failures) = (Arc::clone(&flows), Arc::clone(&failures));
            tokio::spawn(async move {
                let mut conn = None;
                let mut id = (n as u64) << 40;
                while Instant::now() < deadline {
                    if conn.is_none() {
                        conn = TcpStream::connect(addr).await.ok().map(Conn::new);
                    }
                    let Some(c) = conn.as_mut() else {
                        failures.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    };
                    id += 2;
                    match flow(c, addr, id).await {
                        Ok(()) => flows.fetch_add(1, Ordering::Relaxed),
                        Err(e) => {
                            eprintln!("flow failed: {e}");
                            conn = None;
                            failures.fetch_add(1, Ordering::Relaxed)
                        }
                    };
                }
            })
        })
        .collect();
    for t in tasks {
        let _ = t.await;
    }
    (
        flows.load(Ordering::Relaxed),
        failures.load(Ordering::Relaxed),
        started.elapsed(),
    )
}

/// One two-round flow on `c`.
async fn flow(c: &mut Conn, addr: SocketAddr, id: u64) -> Result<(), String> {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "flows_load", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    });
    let mut request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                             "params": {"_meta": meta, "name": TOOL}});
    let first = c.rpc(addr, &request).await?;
    let state = first["result"]["requestState"]
        .as_str()
        .ok_or_else(|| format!("round 1 did not ask: {first}"))?
        .to_owned();
    request["id"] = json!(id + 1);
    request["params"]["inputResponses"] =
        json!({"user_name": {"action": "accept", "content": {"name": "load"}}});
    request["params"]["requestState"] = json!(state);
    let second = c.rpc(addr, &request).await?;
    match second["result"]["resultType"].as_str() {
        Some("complete") => Ok(()),
        _ => Err(format!("round 2 did not complete: {second}")),
    }
}

/// A kept-alive HTTP/1.1 connection (responses carry `Content-Length`).
struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    fn new(stream: TcpStream) -> Self {
        let _ = stream.set_nodelay(true);
        Self {
            stream,
            buf: Vec::with_capacity(16 * 1024),
        }
    }

    async fn rpc(&mut self, addr: SocketAddr, body: &Value) -> Result<Value, String> {
        let text = body.to_string();
        let mut raw = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
             Mcp-Method: tools/call\r\nMcp-Name: {TOOL}\r\nContent-Length: {}\r\n\r\n",
            text.len()
        )
        .into_bytes();
        raw.extend_from_slice(text.as_bytes());
        let io = |e: std::io::Error| e.to_string();
        self.stream.write_all(&raw).await.map_err(io)?;
        let mut chunk = [0u8; 16 * 1024];
        let (head_end, len) = loop {
            if let Some(p) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&self.buf[..p]).to_ascii_lowercase();
                if !head.starts_with("http/1.1 200") {
                    return Err(head.lines().next().unwrap_or("").to_owned());
                }
                let len = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .ok_or("no Content-Length")?;
                break (p + 4, len);
            }
            let n = self.stream.read(&mut chunk).await.map_err(io)?;
            if n == 0 {
                return Err("connection closed".into());
            }
            self.buf.extend_from_slice(&chunk[..n]);
        };
        while self.buf.len() < head_end + len {
            let n = self.stream.read(&mut chunk).await.map_err(io)?;
            if n == 0 {
                return Err("connection closed mid-body".into());
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
        let v =
            serde_json::from_slice(&self.buf[head_end..head_end + len]).map_err(|e| e.to_string());
        self.buf.drain(..head_end + len);
        v
    }
}
