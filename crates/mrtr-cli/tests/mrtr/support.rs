//! What the binary's tests share beyond `mrtr-testkit`: spawn the built `mrtr`
//! binary and talk to it (raw HTTP/1.1 from `mrtr_testkit::http`, or stdio
//! lines), and the reference service in process.
#![allow(dead_code, unreachable_pub)] // each module uses a subset; items are test-local

use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use std::sync::atomic::{AtomicU64, Ordering};

use mrtr::replay::MemoryReplayGuard;
use mrtr::service::RequestLog;
use mrtr::{Engine, Principal, Service, Timestamp};
use mrtr_client::InProcess;
use serde_json::{Value, json};

/// The helpers every crate's tests share (request builders, reply readers, raw
/// HTTP), so the socket tests and the in-process tests build and read messages
/// the same way.
pub use mrtr_testkit as common;
pub use mrtr_testkit::*;

/// The path of the binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_mrtr")
}

/// A running `mrtr serve` on a loopback port; killed on drop.
pub struct Server {
    pub child: Child,
    pub addr: SocketAddr,
    pub stderr: Arc<Mutex<Vec<String>>>,
    /// The thread copying stderr into `stderr`; it ends at the pipe's EOF.
    stderr_reader: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Starts `mrtr serve --listen 127.0.0.1:0 --anonymous ARGS...` and waits for
    /// its `listening on http://ADDR/mcp` line.
    pub fn start(args: &[&str]) -> Self {
        Self::start_with_env(args, &[])
    }

    /// Like [`Server::start`], with extra environment variables.
    pub fn start_with_env(args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut all = vec!["--anonymous"];
        all.extend_from_slice(args);
        Self::launch(&all, env)
    }

    /// Starts `mrtr serve --listen 127.0.0.1:0 ARGS...`: the arguments must say
    /// who the caller is (`--anonymous` or `--principal-header NAME`).
    pub fn launch(args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut cmd = Command::new(bin());
        cmd.args(["serve", "--listen", "127.0.0.1:0"]).args(args);
        Self::spawn(cmd, env)
    }

    /// Starts `mrtr serve --listen 127.0.0.1:0 --anonymous ARGS...` with a soft
    /// and hard open-file limit of `nofile` (through `sh -c 'ulimit -n'`).
    pub fn start_with_open_files_limit(nofile: u32, args: &[&str]) -> Self {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(format!("ulimit -n {nofile} && exec \"$0\" \"$@\""))
            .arg(bin())
            .args(["serve", "--listen", "127.0.0.1:0", "--anonymous"])
            .args(args);
        Self::spawn(cmd, &[])
    }

    fn spawn(mut cmd: Command, env: &[(&str, &str)]) -> Self {
        cmd.env_remove("MRTR_KEYS")
            .env_remove("MRTR_PRINCIPAL")
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn mrtr");
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let pipe = child.stderr.take().unwrap();
        let sink = Arc::clone(&stderr);
        let stderr_reader = std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                if let Some(addr) = parse_listening(&line) {
                    let _ = tx.send(addr);
                }
                sink.lock().unwrap().push(line);
            }
        });
        let addr = match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(a) => a,
            Err(_) => {
                let _ = child.kill();
                panic!(
                    "server did not report its address; stderr: {:?}",
                    stderr.lock().unwrap()
                );
            }
        };
        Self {
            child,
            addr,
            stderr,
            stderr_reader: Some(stderr_reader),
        }
    }

    /// The stderr lines so far.
    pub fn stderr_lines(&self) -> Vec<String> {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits until stderr holds at least `n` lines containing `needle`.
    pub fn wait_for_lines(&self, needle: &str, n: usize) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let lines: Vec<String> = self
                .stderr_lines()
                .into_iter()
                .filter(|l| l.contains(needle))
                .collect();
            if lines.len() >= n || Instant::now() > deadline {
                return lines;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends SIGTERM and waits (at most 10 s) for the exit status.
    pub fn terminate(&mut self) -> ExitStatus {
        self.signal("TERM")
    }

    /// Sends a signal (`TERM`, `INT`) and waits (at most 10 s) for the exit status.
    pub fn signal(&mut self, sig: &str) -> ExitStatus {
        let ok = Command::new("kill")
            .args([&format!("-{sig}"), &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(ok.success());
        let status =
            wait_timeout(&mut self.child, Duration::from_secs(10)).expect("server did not exit");
        // The process is gone, so its stderr pipe is at EOF: once the reader
        // thread ends, every line it wrote is in `stderr`.
        if let Some(h) = self.stderr_reader.take() {
            let _ = h.join();
        }
        status
    }

    pub fn post(&self, headers: &[(&str, &str)], body: &[u8]) -> HttpResponse {
        let mut all = vec![("Content-Type", "application/json")];
        all.extend_from_slice(headers);
        request(self.addr, "POST", "/mcp", &all, body)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Parses `... metrics on http://ADDR/metrics ...` (`--metrics-listen`).
pub fn parse_metrics(line: &str) -> Option<SocketAddr> {
    let rest = line.split("metrics on http://").nth(1)?;
    rest.split("/metrics").next()?.parse().ok()
}

impl Server {
    /// The bound address of `--metrics-listen`: logged before the MCP listener's
    /// line, so it is there once [`Server::start`] returns.
    pub fn metrics_addr(&self) -> SocketAddr {
        self.stderr_lines()
            .iter()
            .find_map(|l| parse_metrics(l))
            .unwrap_or_else(|| panic!("no metrics line: {:?}", self.stderr_lines()))
    }
}

/// Parses `... listening on http://ADDR/mcp ...`.
pub fn parse_listening(line: &str) -> Option<SocketAddr> {
    let rest = line.split("listening on http://").nth(1)?;
    rest.split("/mcp").next()?.parse().ok()
}

impl Server {
    /// Starts a server sharing `keys` (the `MRTR_KEYS` value) with `args`.
    pub fn start_with_keys(args: &[&str], keys: &str) -> Self {
        Self::start_with_env(args, &[("MRTR_KEYS", keys)])
    }

    /// POSTs `body` with the MCP headers that agree with it (JSON framing).
    pub fn rpc(&self, body: &Value) -> HttpResponse {
        self.rpc_with(body, &[])
    }

    /// Like [`Server::rpc`], with extra headers appended.
    pub fn rpc_with(&self, body: &Value, extra: &[(&str, &str)]) -> HttpResponse {
        let owned = headers_for(body);
        let mut h = borrow(&owned);
        h.extend_from_slice(extra);
        self.post(&h, body.to_string().as_bytes())
    }

    /// POSTs `body` and returns its JSON-RPC reply, asserting HTTP `status`
    /// and that the reply echoes the request id.
    pub fn call(&self, body: &Value, status: u16) -> Value {
        let r = self.rpc(body);
        assert_eq!(r.status, status, "{}: {}", body, r.text());
        assert_eq!(r.header("content-type"), Some("application/json"), "{r:?}");
        let v = r.json();
        assert_eq!(v["jsonrpc"], "2.0", "{v}");
        assert_eq!(v["id"], body["id"], "{v}");
        v
    }

    /// The request log lines (`mrtr::request`) so far.
    pub fn request_lines(&self) -> Vec<String> {
        self.stderr_lines()
            .into_iter()
            .filter(|l| l.contains("mrtr::request"))
            .collect()
    }

    /// Waits for the request log line of JSON-RPC id `id` (a unique id per test
    /// keeps this unambiguous) and returns it.
    pub fn log_line_for(&self, id: u64) -> String {
        let needle = format!("jsonrpc_id=\"{id}\"");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(l) = self
                .request_lines()
                .into_iter()
                .find(|l| l.contains(&needle))
            {
                return l;
            }
            assert!(
                Instant::now() < deadline,
                "no request line for id {id}: {:?}",
                self.stderr_lines()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// A `mrtr serve --stdio` child speaking lines on stdin/stdout.
pub struct StdioServer {
    pub child: Child,
    stdin: Option<std::process::ChildStdin>,
    stdout: BufReader<std::process::ChildStdout>,
    pub stderr: Arc<Mutex<Vec<String>>>,
    stderr_reader: Option<std::thread::JoinHandle<()>>,
}

impl StdioServer {
    /// Starts `mrtr serve --stdio --anonymous ARGS...` on an ephemeral key.
    pub fn start(args: &[&str]) -> Self {
        Self::start_with_keys_opt(args, None)
    }

    /// Like [`StdioServer::start`], with `MRTR_KEYS` set to `keys`.
    pub fn start_with_keys(args: &[&str], keys: &str) -> Self {
        Self::start_with_keys_opt(args, Some(keys))
    }

    fn start_with_keys_opt(args: &[&str], keys: Option<&str>) -> Self {
        let mut all = vec!["--anonymous"];
        all.extend_from_slice(args);
        let env: Vec<(&str, &str)> = keys.map(|k| ("MRTR_KEYS", k)).into_iter().collect();
        Self::launch(&all, &env)
    }

    /// Starts `mrtr serve --stdio ARGS...` with extra environment variables: the
    /// arguments (or `MRTR_PRINCIPAL`) must say who the caller is.
    pub fn launch(args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut cmd = Command::new(bin());
        cmd.args(["serve", "--stdio"])
            .args(args)
            .env_remove("MRTR_KEYS")
            .env_remove("MRTR_PRINCIPAL")
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn mrtr --stdio");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let pipe = child.stderr.take().unwrap();
        let sink = Arc::clone(&stderr);
        let stderr_reader = std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                sink.lock().unwrap().push(line);
            }
        });
        Self {
            child,
            stdin,
            stdout,
            stderr,
            stderr_reader: Some(stderr_reader),
        }
    }

    /// Writes one request line and reads one reply line (which must be one
    /// JSON object ending in a newline, echoing the request id).
    pub fn call(&mut self, body: &Value) -> Value {
        self.send(&body.to_string());
        let v = self.read_reply();
        assert_eq!(v["id"], body["id"], "{v}");
        v
    }

    /// Writes one line as is (no reply is read).
    pub fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{line}").expect("write request");
        stdin.flush().unwrap();
    }

    /// Reads one reply line: one JSON-RPC object ending in a newline.
    pub fn read_reply(&mut self) -> Value {
        let mut line = String::new();
        let n = self.stdout.read_line(&mut line).expect("read reply");
        assert!(
            n > 0,
            "stdout closed; stderr: {:?}",
            self.stderr.lock().unwrap()
        );
        assert!(line.ends_with('\n'), "{line:?}");
        let v: Value = serde_json::from_str(line.trim_end())
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
        assert_eq!(v["jsonrpc"], "2.0", "{v}");
        v
    }

    /// Closes stdin, waits for exit 0, and returns whatever else was on stdout
    /// and the stderr lines.
    pub fn finish(mut self) -> (String, Vec<String>) {
        drop(self.stdin.take());
        let status = wait_timeout(&mut self.child, Duration::from_secs(10)).expect("exit on EOF");
        assert!(status.success(), "{status:?}");
        let mut rest = String::new();
        self.stdout.read_to_string(&mut rest).unwrap();
        // The process is gone, so its stderr pipe is at EOF: once the reader
        // thread ends, every line is in `stderr`.
        if let Some(h) = self.stderr_reader.take() {
            let _ = h.join();
        }
        let err = self.stderr.lock().unwrap().clone();
        (rest, err)
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The reference service on an engine, with its deployment counter.
pub fn reference(engine: Engine) -> (Service, Arc<AtomicU64>) {
    let n = Arc::new(AtomicU64::new(0));
    (mrtr_cli::reference::service(engine, n.clone()), n)
}

// ---------------------------------------------------------------------------
// The reference server in process.
// ---------------------------------------------------------------------------

/// The reference service assembled as `mrtr serve` assembles it (a replay guard
/// for the deploy demo), anonymous, behind the in-process transport with the
/// Streamable HTTP headers emulated and a fake clock starting at [`T0`]: the
/// stand-in for a spawned server wherever a test needs no socket.
pub struct LocalServer {
    transport: InProcess,
    clock: Arc<AtomicU64>,
    deployments: Arc<AtomicU64>,
    logs: Mutex<Vec<(Value, RequestLog)>>,
}

impl LocalServer {
    /// The reference service on [`engine`] (key [`SECRET_A`], so two of them share
    /// a key like a fleet sharing `MRTR_KEYS`), with the server's defaults.
    pub fn start() -> Self {
        Self::on(engine())
    }

    /// The reference service on `engine` plus the server's replay guard.
    pub fn on(engine: Engine) -> Self {
        let (service, deployments) =
            reference(engine.with_replay_guard(Arc::new(MemoryReplayGuard::new(T0))));
        let clock = Arc::new(AtomicU64::new(T0.unix_secs()));
        let now = Arc::clone(&clock);
        let transport = InProcess::new(service, Principal::anonymous())
            .clock(move || Timestamp::from_unix_secs(now.load(Ordering::SeqCst)))
            .emulate_http_headers();
        Self {
            transport,
            clock,
            deployments,
            logs: Mutex::new(Vec::new()),
        }
    }

    /// Moves the fake clock forward.
    pub fn advance(&self, secs: u64) {
        self.clock.fetch_add(secs, Ordering::SeqCst);
    }

    /// How many deployments the deploy demo has made.
    pub fn deployments(&self) -> u64 {
        self.deployments.load(Ordering::SeqCst)
    }

    /// Sends `body` and returns its JSON-RPC reply, asserting the HTTP `status`
    /// the service chose and that the reply echoes the request id.
    #[track_caller]
    pub fn call(&self, body: &Value, status: u16) -> Value {
        let reply = ready(self.transport.exchange(body.to_string().as_bytes()));
        self.logs
            .lock()
            .unwrap()
            .push((body["id"].clone(), reply.log.clone()));
        let http_status = mrtr::streamable_http::reply_status(&reply);
        let text = reply.body.expect("a request gets a response");
        assert_eq!(http_status, status, "{body}: {text}");
        let v: Value = serde_json::from_str(&text).expect("the reply is JSON");
        assert_eq!(v["jsonrpc"], "2.0", "{v}");
        assert_eq!(v["id"], body["id"], "{v}");
        v
    }

    /// The private log record of the last request with JSON-RPC id `id`.
    #[track_caller]
    pub fn log_for(&self, id: u64) -> RequestLog {
        self.logs
            .lock()
            .unwrap()
            .iter()
            .rev()
            .find(|(i, _)| *i == json!(id))
            .map(|(_, log)| log.clone())
            .unwrap_or_else(|| panic!("no request with id {id}"))
    }

    /// Every log record so far, in order.
    pub fn logs(&self) -> Vec<RequestLog> {
        self.logs
            .lock()
            .unwrap()
            .iter()
            .map(|(_, l)| l.clone())
            .collect()
    }
}
