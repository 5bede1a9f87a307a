//! Raw HTTP/1.1 over `std::net` (no client library, so tests can send malformed
//! or unusual headers), the MCP headers that agree with a JSON-RPC body, and the
//! SSE framing of a reply.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::Value;

use crate::{PROTOCOL, target_param};

/// A parsed HTTP/1.1 response.
#[derive(Debug)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// The header fields in order, names lower-cased, values trimmed.
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked when `Transfer-Encoding: chunked`.
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// The first header field named `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as text (lossy UTF-8).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON; panics when it is not.
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

/// Parses one complete response (head and body), de-chunking the body.
pub fn parse_response(raw: &[u8]) -> HttpResponse {
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

/// A request whose response is a long-lived SSE stream (`subscriptions/listen`),
/// read event by event as they arrive, on a connection of its own.
#[derive(Debug)]
pub struct EventStream {
    tcp: TcpStream,
    parser: mrtr::streamable_http::SseParser,
    /// The response head, once read (status line and header fields).
    pub head: String,
    events: Vec<Value>,
    /// The chunked body's last bytes, to see its terminating chunk.
    tail: Vec<u8>,
}

impl EventStream {
    /// POSTs `body` to /mcp with its agreeing MCP headers, the JSON and SSE
    /// `Accept`, and `extra`; reads nothing yet.
    pub fn open(addr: SocketAddr, body: &Value, extra: &[(&str, &str)]) -> Self {
        let owned = headers_for(body);
        let mut headers = borrow(&owned);
        headers.extend_from_slice(extra);
        Self::post(addr, body, &headers)
    }

    /// POSTs `body` to /mcp with the JSON and SSE `Accept` and `headers` only
    /// (a 2025-era request, which has no MCP headers to agree); reads nothing yet.
    pub fn post(addr: SocketAddr, body: &Value, headers: &[(&str, &str)]) -> Self {
        let mut tcp = TcpStream::connect(addr).expect("connect");
        tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let text = body.to_string();
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            text.len()
        );
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        tcp.write_all(head.as_bytes()).unwrap();
        tcp.write_all(text.as_bytes()).unwrap();
        Self {
            tcp,
            parser: mrtr::streamable_http::SseParser::default(),
            head: String::new(),
            events: Vec::new(),
            tail: Vec::new(),
        }
    }

    /// Sends a request with no body (`GET`, to open or resume a stream) with
    /// `headers`; reads nothing yet.
    pub fn send(addr: SocketAddr, method: &str, headers: &[(&str, &str)]) -> Self {
        let mut tcp = TcpStream::connect(addr).expect("connect");
        tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut head = format!("{method} /mcp HTTP/1.1\r\nHost: {addr}\r\n");
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        tcp.write_all(head.as_bytes()).unwrap();
        Self {
            tcp,
            parser: mrtr::streamable_http::SseParser::default(),
            head: String::new(),
            events: Vec::new(),
            tail: Vec::new(),
        }
    }

    /// The next event's JSON (the chunked framing's size lines are not SSE
    /// fields, so the parser passes over them); `None` once the body ended or
    /// nothing came for 10 s.
    pub fn next_event(&mut self) -> Option<Value> {
        loop {
            if !self.events.is_empty() {
                return Some(self.events.remove(0));
            }
            // The zero-size chunk ends the body (the connection may stay open).
            if self.tail.ends_with(b"\r\n0\r\n\r\n") || self.tail == b"0\r\n\r\n" {
                return None;
            }
            let mut buf = [0u8; 4096];
            let n = self.tcp.read(&mut buf).ok()?;
            if n == 0 {
                return None;
            }
            let body: Vec<u8> = if self.head.contains("\r\n\r\n") {
                buf[..n].to_vec()
            } else {
                self.head.push_str(&String::from_utf8_lossy(&buf[..n]));
                let Some(end) = self.head.find("\r\n\r\n") else {
                    continue;
                };
                let rest = self.head.as_bytes()[end + 4..].to_vec();
                self.head.truncate(end + 4);
                rest
            };
            // An event without data (a stream's priming event) carries no message.
            for data in self.parser.push(&body) {
                if !data.is_empty() {
                    self.events.push(serde_json::from_str(&data).unwrap());
                }
            }
            self.tail.extend_from_slice(&body);
            let keep = self.tail.len().saturating_sub(16);
            self.tail.drain(..keep);
        }
    }
}

/// A kept-alive HTTP/1.1 connection: requests go one after another on the same
/// socket (responses must carry `Content-Length`).
#[derive(Debug)]
pub struct KeepAlive {
    stream: TcpStream,
    addr: SocketAddr,
    buf: Vec<u8>,
}

impl KeepAlive {
    /// Connects to `addr` (a read timeout of 10 s).
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
