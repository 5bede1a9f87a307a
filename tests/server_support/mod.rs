//! Shared helpers for the server integration tests: spawn the built `mrtr`
//! binary and talk raw HTTP/1.1 to it (no client library, so tests can send
//! malformed or unusual headers).
#![allow(dead_code, unreachable_pub)] // each test crate uses a subset; items are test-local

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The helpers every wire test shares (request builders, reply readers), so the
/// socket tests and the in-process tests build and read messages the same way.
#[path = "../common/mod.rs"]
pub mod common;
#[allow(unused_imports)] // each test crate uses a subset
pub use common::{
    ELICIT, MULTI, PROMPT, PROTOCOL, VAULT, accept, all_caps, asked_keys,
    assert_frozen_state_response, carrier, complete_text, confirm_answer, meta, name_answer,
    result, retry, roots, rpc_error, sampled, state_of, target_param, tool_call, tool_error_text,
    tool_text,
};

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

pub fn wait_timeout(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[derive(Debug)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {:?}", self.text()))
    }
}

/// One HTTP/1.1 request with `Connection: close`; `Content-Length` is added
/// unless the caller sets it or `Transfer-Encoding`.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> HttpResponse {
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    let framed = headers.iter().any(|(k, _)| {
        k.eq_ignore_ascii_case("content-length") || k.eq_ignore_ascii_case("transfer-encoding")
    });
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if !framed {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    let mut raw = head.into_bytes();
    raw.extend_from_slice(body);
    request_raw(addr, &raw)
}

/// Sends raw bytes and parses the response. A write error (the server may
/// answer and close before reading everything, e.g. on 413) is ignored; the
/// response is read from what arrived.
pub fn request_raw(addr: SocketAddr, raw: &[u8]) -> HttpResponse {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = s.write_all(raw);
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            // A reset after the response arrived is fine; we parse what we have.
            Err(_) if !out.is_empty() => break,
            Err(e) => panic!("read: {e}"),
        }
    }
    parse_response(&out)
}

fn parse_response(raw: &[u8]) -> HttpResponse {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no header end in {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    let status = status_line.split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked"));
    if chunked {
        body = dechunk(&body);
    }
    HttpResponse {
        status,
        headers,
        body,
    }
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = b.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size_text = String::from_utf8_lossy(&b[..eol]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16).unwrap();
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&b[eol + 2..eol + 2 + size]);
        b = &b[eol + 2 + size + 2..];
    }
}

/// The JSON-RPC request body the harness would send (tools/list with `_meta`).
pub fn tools_list(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
    )
}

/// The MCP headers matching [`tools_list`].
pub const MCP_HEADERS: &[(&str, &str)] = &[
    ("MCP-Protocol-Version", "2026-07-28"),
    ("Mcp-Method", "tools/list"),
];

// ---------------------------------------------------------------------------
// The MCP headers and SSE framing of requests and replies; the JSON-RPC values
// themselves are built and read by the shared helpers of tests/common.
// ---------------------------------------------------------------------------

/// The MCP headers that agree with `body`: `MCP-Protocol-Version` from `_meta`
/// (else [`PROTOCOL`]), `Mcp-Method`, and `Mcp-Name` for the carriers.
pub fn headers_for(body: &Value) -> Vec<(String, String)> {
    let method = body["method"].as_str().unwrap_or_default().to_owned();
    let version = body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
        .as_str()
        .unwrap_or(PROTOCOL)
        .to_owned();
    let mut h = vec![
        ("MCP-Protocol-Version".to_owned(), version),
        ("Mcp-Method".to_owned(), method.clone()),
    ];
    if matches!(
        method.as_str(),
        "tools/call" | "prompts/get" | "resources/read"
    ) && let Some(name) = body["params"][target_param(&method)].as_str()
    {
        h.push(("Mcp-Name".to_owned(), name.to_owned()));
    }
    h
}

/// Borrows owned header pairs as the `&[(&str, &str)]` the request helpers take.
pub fn borrow(h: &[(String, String)]) -> Vec<(&str, &str)> {
    h.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

/// Parses a `text/event-stream` body into its events' JSON `data` payloads,
/// checking the framing: every event is `event: message` with an `id` and
/// `data:` lines, and the stream ends with a blank line.
pub fn sse_messages(text: &str) -> Vec<Value> {
    assert!(
        text.ends_with("\n\n"),
        "SSE stream must end an event: {text:?}"
    );
    text.trim_end()
        .split("\n\n")
        .map(|event| {
            let (mut name, mut id, mut data) = (None, None, Vec::new());
            for line in event.lines() {
                let (field, value) = line.split_once(':').unwrap_or((line, ""));
                let value = value.strip_prefix(' ').unwrap_or(value);
                match field {
                    "event" => name = Some(value.to_owned()),
                    "id" => id = Some(value.to_owned()),
                    "data" => data.push(value.to_owned()),
                    other => panic!("unexpected SSE field {other:?} in {text:?}"),
                }
            }
            assert_eq!(name.as_deref(), Some("message"), "{text:?}");
            assert!(id.is_some_and(|i| !i.is_empty()), "{text:?}");
            assert!(!data.is_empty(), "{text:?}");
            serde_json::from_str(&data.join("\n"))
                .unwrap_or_else(|e| panic!("SSE data is not JSON ({e}): {text:?}"))
        })
        .collect()
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

/// A kept-alive HTTP/1.1 connection: requests go one after another on the same
/// socket (responses must carry `Content-Length`).
pub struct KeepAlive {
    stream: TcpStream,
    addr: SocketAddr,
    buf: Vec<u8>,
}

impl KeepAlive {
    pub fn connect(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        Self {
            stream,
            addr,
            buf: Vec::new(),
        }
    }

    /// POSTs `body` to /mcp with its agreeing MCP headers and reads one response.
    pub fn rpc(&mut self, body: &Value) -> HttpResponse {
        let text = body.to_string();
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
            self.addr,
            text.len()
        );
        for (k, v) in headers_for(body) {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        self.stream.write_all(head.as_bytes()).unwrap();
        self.stream.write_all(text.as_bytes()).unwrap();
        // Read the head, then exactly Content-Length body bytes.
        let mut chunk = [0u8; 8192];
        let split = loop {
            if let Some(p) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break p;
            }
            let n = read_retrying(&mut self.stream, &mut chunk).expect("read head");
            assert!(n > 0, "connection closed before a response");
            self.buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&self.buf[..split]).to_ascii_lowercase();
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map(|v| v.trim().parse().unwrap())
            .expect("response has a Content-Length");
        while self.buf.len() < split + 4 + len {
            let n = read_retrying(&mut self.stream, &mut chunk).expect("read body");
            assert!(n > 0, "connection closed mid-body");
            self.buf.extend_from_slice(&chunk[..n]);
        }
        let raw: Vec<u8> = self.buf.drain(..split + 4 + len).collect();
        parse_response(&raw)
    }
}

/// `read`, retried when a signal interrupts it (EINTR).
fn read_retrying(s: &mut TcpStream, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match s.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            r => return r,
        }
    }
}

impl KeepAlive {
    /// Whether the server closes this connection (EOF or reset) within `limit`,
    /// without sending anything first.
    pub fn closed_by_server_within(&mut self, limit: Duration) -> bool {
        closed_within(&mut self.stream, limit)
    }
}

/// Whether the peer closes `s` (EOF or reset) within `limit`; bytes that arrive
/// instead mean it did not.
pub fn closed_within(s: &mut TcpStream, limit: Duration) -> bool {
    s.set_read_timeout(Some(limit)).unwrap();
    let mut buf = [0u8; 1024];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => return false,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return false;
            }
            Err(_) => return true,
        }
    }
}

/// The resident set of process `pid` in KiB (`VmRSS` in `/proc/PID/status`, Linux).
pub fn vm_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// How many file descriptors process `pid` has open (`/proc/PID/fd`, Linux).
pub fn open_fds(pid: u32) -> Option<usize> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count())
}
