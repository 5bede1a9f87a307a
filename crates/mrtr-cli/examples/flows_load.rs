//! A bounded load driver for `scripts/flows-per-second.sh` and `scripts/soak.sh`:
//! two-round MRTR flows against a running `mrtr serve`.
//!
//! ```text
//! cargo run --release -p mrtr-cli --example flows_load -- http://127.0.0.1:8808/mcp [SECONDS] [CONNECTIONS]
//!     [--flows N] [--reconnect-every K] [--rss-pid PID --samples FILE]
//! ```
//!
//! Each of CONNECTIONS (default 8) keep-alive connections runs flows one after
//! another: `tools/call` of the reference server's
//! `test_input_required_result_elicitation` (round 1: an `InputRequiredResult`
//! asking `user_name`), then its retry with the answer and the `requestState`
//! (round 2: the tool's result). The tool has no `once` side effect, so nothing
//! accumulates on the server. A flow counts when its second round completes.
//!
//! - Without `--flows`, the driver runs for SECONDS (default 10, at most 120).
//! - With `--flows N`, it starts exactly N flows in all and stops when they have
//!   ended, or after SECONDS (default 1800, at most 3600), whichever comes first;
//!   fewer than N completed flows is a failure.
//! - `--reconnect-every K` closes each connection after K flows and opens a new
//!   one, so accepting and closing connections is part of the load too.
//! - `--rss-pid PID --samples FILE` writes the resident set of process PID
//!   (`VmRSS` in `/proc/PID/status`, Linux) to FILE as CSV
//!   (`seconds,flows,failures,rss_kib,event`): before the first flow (`start`),
//!   every second (`tick`), with `--flows` after each 1% of the flows (`progress`,
//!   taken by the flow that reaches the mark, before its connection does anything
//!   else), and after every connection has closed (`end`).
//!
//! It prints `flows: N in S s, failures: F` and `flows/s: R`, and exits 1 if any
//! flow failed or (with `--flows`) not all flows completed; after 1 000 failed
//! flows it starts no more. Loopback only: it
//! speaks plain HTTP/1.1 on one TCP connection per task, on a single-threaded
//! runtime (pin it to a core of its own with `taskset`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use mrtr_testkit::vm_rss_kib;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const TOOL: &str = "test_input_required_result_elicitation";
/// The longest run without `--flows`, and its default.
const MAX_SECONDS: u64 = 120;
const DEFAULT_SECONDS: u64 = 10;
/// The wall-clock cap with `--flows`, and its default.
const MAX_CAP_SECONDS: u64 = 3600;
const DEFAULT_CAP_SECONDS: u64 = 1800;
/// No flow starts after this many failed: the server is gone or broken, and
/// the run has already failed.
const MAX_FAILURES: u64 = 1000;
const USAGE: &str = "usage: flows_load http://127.0.0.1:PORT/mcp [SECONDS] [CONNECTIONS] \
                     [--flows N] [--reconnect-every K] [--rss-pid PID --samples FILE]";

fn main() -> ExitCode {
    let options = match Options::parse(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("flows_load: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let sampler = match &options.rss {
        Some((pid, path)) => match File::create(path) {
            Ok(f) => Some(Sampler::new(*pid, f)),
            Err(e) => {
                eprintln!("flows_load: cannot create {path}: {e}");
                return ExitCode::from(2);
            }
        },
        None => None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let run = Arc::new(Run::new(&options, sampler));
    let elapsed = runtime.block_on(drive(&options, Arc::clone(&run)));
    let (flows, failures) = run.counts();
    println!(
        "flows: {flows} in {:.2} s, failures: {failures}",
        elapsed.as_secs_f64()
    );
    println!("flows/s: {:.0}", flows as f64 / elapsed.as_secs_f64());
    if let Some(Err(e)) = run.sampler.as_ref().map(Sampler::finish) {
        eprintln!("flows_load: writing the samples: {e}");
        return ExitCode::from(1);
    }
    let complete = options.flows.is_none_or(|n| flows == n);
    if !complete {
        println!(
            "incomplete: {flows} of {} flows completed within {} s",
            options.flows.unwrap_or(0),
            options.run_for.as_secs()
        );
    }
    if failures == 0 && flows > 0 && complete {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// What the command line asked for.
struct Options {
    addr: SocketAddr,
    /// How long to run, or with `flows` the most to run.
    run_for: Duration,
    connections: usize,
    /// Exactly this many flows are started, when set.
    flows: Option<u64>,
    /// Each connection is replaced after this many flows, when set.
    reconnect_every: Option<u64>,
    /// Whose resident set to sample, and the CSV file to write it to.
    rss: Option<(u32, String)>,
}

impl Options {
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Self, String> {
        let (mut positional, mut flows, mut reconnect_every) = (Vec::new(), None, None);
        let (mut rss_pid, mut samples) = (None, None);
        while let Some(arg) = args.next() {
            let Some(flag) = arg.strip_prefix("--") else {
                positional.push(arg);
                continue;
            };
            let value = args
                .next()
                .ok_or_else(|| format!("--{flag} needs a value"))?;
            let number = || {
                value
                    .parse::<u64>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| format!("--{flag}: not a positive number: {value}"))
            };
            match flag {
                "flows" => flows = Some(number()?),
                "reconnect-every" => reconnect_every = Some(number()?),
                "rss-pid" => rss_pid = Some(u32::try_from(number()?).map_err(|e| e.to_string())?),
                "samples" => samples = Some(value),
                _ => return Err(format!("unknown option --{flag}")),
            }
        }
        let mut positional = positional.into_iter();
        let addr = positional
            .next()
            .as_deref()
            .and_then(parse_url)
            .ok_or("the first argument must be http://LOOPBACK-IP:PORT/mcp")?;
        let mut number = |what: &str| -> Result<Option<u64>, String> {
            positional
                .next()
                .map(|s| s.parse().map_err(|_| format!("{what}: not a number: {s}")))
                .transpose()
        };
        let seconds = number("SECONDS")?;
        let connections = number("CONNECTIONS")?.unwrap_or(8).max(1);
        if positional.next().is_some() {
            return Err("too many arguments".into());
        }
        let (default, max) = match flows {
            Some(_) => (DEFAULT_CAP_SECONDS, MAX_CAP_SECONDS),
            None => (DEFAULT_SECONDS, MAX_SECONDS),
        };
        let rss = match (rss_pid, samples) {
            (Some(pid), Some(path)) => Some((pid, path)),
            (None, None) => None,
            _ => return Err("--rss-pid and --samples go together".into()),
        };
        Ok(Self {
            addr,
            run_for: Duration::from_secs(seconds.unwrap_or(default).clamp(1, max)),
            connections: usize::try_from(connections).map_err(|e| e.to_string())?,
            flows,
            reconnect_every,
            rss,
        })
    }
}

/// `http://HOST:PORT/mcp` with a numeric loopback host.
fn parse_url(url: &str) -> Option<SocketAddr> {
    let rest = url.strip_prefix("http://")?;
    let authority = rest.strip_suffix("/mcp")?;
    let addr: SocketAddr = authority.parse().ok()?;
    addr.ip().is_loopback().then_some(addr)
}

/// The state every connection's task shares: when to stop, and what happened.
struct Run {
    started: Instant,
    deadline: Instant,
    /// The number of flows to start, if fixed.
    budget: Option<u64>,
    /// Flows started (with a budget; may run past it, only the first `budget` start).
    started_flows: AtomicU64,
    /// Flows ended, completed or failed.
    ended: AtomicU64,
    flows: AtomicU64,
    failures: AtomicU64,
    sampler: Option<Sampler>,
}

impl Run {
    fn new(options: &Options, sampler: Option<Sampler>) -> Self {
        let started = Instant::now();
        Self {
            started,
            deadline: started + options.run_for,
            budget: options.flows,
            started_flows: AtomicU64::new(0),
            ended: AtomicU64::new(0),
            flows: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            sampler,
        }
    }

    /// Whether another flow may start (and, with a budget, takes its place).
    fn start_flow(&self) -> bool {
        Instant::now() < self.deadline
            && self.failures.load(Ordering::Relaxed) < MAX_FAILURES
            && self
                .budget
                .is_none_or(|n| self.started_flows.fetch_add(1, Ordering::Relaxed) < n)
    }

    /// Counts a flow that ended, and samples at each 1% of a budget.
    fn end_flow(&self, ok: bool) {
        let counter = if ok { &self.flows } else { &self.failures };
        counter.fetch_add(1, Ordering::Relaxed);
        let ended = self.ended.fetch_add(1, Ordering::Relaxed) + 1;
        if let Some(n) = self.budget
            && (ended.is_multiple_of((n / 100).max(1)) || ended == n)
        {
            self.sample("progress");
        }
    }

    /// Completed and failed flows so far.
    fn counts(&self) -> (u64, u64) {
        (
            self.flows.load(Ordering::Relaxed),
            self.failures.load(Ordering::Relaxed),
        )
    }

    fn sample(&self, event: &str) {
        if let Some(s) = &self.sampler {
            let (flows, failures) = self.counts();
            s.record(self.started.elapsed(), flows, failures, event);
        }
    }
}

/// Writes the resident set of one process, with the flow counts, as CSV rows.
struct Sampler {
    pid: u32,
    out: Mutex<BufWriter<File>>,
}

impl Sampler {
    fn new(pid: u32, file: File) -> Self {
        let mut out = BufWriter::new(file);
        let _ = writeln!(out, "seconds,flows,failures,rss_kib,event");
        Self {
            pid,
            out: Mutex::new(out),
        }
    }

    /// One row; `rss_kib` is empty when the process cannot be read (it exited).
    fn record(&self, at: Duration, flows: u64, failures: u64, event: &str) {
        let rss = vm_rss_kib(self.pid).map_or(String::new(), |k| k.to_string());
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = writeln!(
            out,
            "{:.3},{flows},{failures},{rss},{event}",
            at.as_secs_f64()
        );
        // A row a second at most (and 100 progress rows): flush each, so the
        // file can be watched during the run and holds the curve if it is cut short.
        let _ = out.flush();
    }

    fn finish(&self) -> std::io::Result<()> {
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        out.flush()
    }
}

/// Runs the flows on every connection until the run ends; the time it took.
async fn drive(options: &Options, run: Arc<Run>) -> Duration {
    let addr = options.addr;
    let reconnect_every = options.reconnect_every.unwrap_or(u64::MAX);
    run.sample("start");
    let ticker = run.sampler.is_some().then(|| {
        let run = Arc::clone(&run);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_secs(1));
            every.tick().await;
            loop {
                every.tick().await;
                run.sample("tick");
            }
        })
    });
    let tasks: Vec<_> = (0..options.connections)
        .map(|n| {
            let run = Arc::clone(&run);
            tokio::spawn(async move {
                let mut conn = None;
                let mut on_conn = 0;
                let mut id = (n as u64) << 40;
                while run.start_flow() {
                    if on_conn == reconnect_every {
                        (conn, on_conn) = (None, 0);
                    }
                    if conn.is_none() {
                        conn = TcpStream::connect(addr).await.ok().map(Conn::new);
                    }
                    let Some(c) = conn.as_mut() else {
                        eprintln!("flow failed: cannot connect to {addr}");
                        run.end_flow(false);
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    };
                    id += 2;
                    on_conn += 1;
                    let outcome = flow(c, addr, id).await;
                    if let Err(e) = &outcome {
                        eprintln!("flow failed: {e}");
                        conn = None;
                    }
                    run.end_flow(outcome.is_ok());
                }
            })
        })
        .collect();
    for t in tasks {
        let _ = t.await;
    }
    let elapsed = run.started.elapsed();
    if let Some(t) = ticker {
        t.abort();
    }
    run.sample("end");
    elapsed
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
