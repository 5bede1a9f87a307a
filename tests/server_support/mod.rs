//! Shared helpers for the server integration tests: spawn the built `mrtr`
//! binary and talk raw HTTP/1.1 to it (no client library, so tests can send
//! malformed or unusual headers).
#![allow(dead_code, unreachable_pub)] // each test crate uses a subset; items are test-local

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The path of the binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_mrtr")
}

/// A running `mrtr serve` on a loopback port; killed on drop.
pub struct Server {
    pub child: Child,
    pub addr: SocketAddr,
    pub stderr: Arc<Mutex<Vec<String>>>,
}

impl Server {
    /// Starts `mrtr serve --listen 127.0.0.1:0 ARGS...` and waits for its
    /// `listening on http://ADDR/mcp` line.
    pub fn start(args: &[&str]) -> Self {
        Self::start_with_env(args, &[])
    }

    pub fn start_with_env(args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut cmd = Command::new(bin());
        cmd.args(["serve", "--listen", "127.0.0.1:0"]).args(args);
        cmd.env_remove("MRTR_KEYS")
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
        std::thread::spawn(move || {
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
        wait_timeout(&mut self.child, Duration::from_secs(10)).expect("server did not exit")
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
