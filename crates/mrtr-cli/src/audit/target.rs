//! The server under audit: one request at a time, within the request budget and
//! the rate, over Streamable HTTP (any of the URLs given) or stdio.

use std::time::{Duration, Instant};

use http::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use mrtr_client::Transport;
use mrtr_client::{HttpClient, ServerStderr, StdioTransport};
use serde_json::{Value, json};

use super::args::{Endpoint, Header, Plan};
use super::text::{cut, excerpt};

/// The protocol version the audit speaks.
pub(super) const PROTOCOL: &str = "2026-07-28";

/// Who sends a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Who {
    /// The user of `-H`.
    Main,
    /// The user of `--as-other`.
    Other,
}

/// Which MCP headers go with a request.
#[derive(Debug, Clone)]
pub(super) enum McpHeaders {
    /// The ones the body implies (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`).
    Derived,
    /// These instead (for the header checks).
    Given(Vec<(&'static str, String)>),
}

/// What a request got back.
#[derive(Debug, Clone)]
pub(super) struct Exchange {
    /// The HTTP status (none over stdio).
    pub(super) status: Option<u16>,
    /// The JSON-RPC reply, as far as there was one.
    pub(super) reply: Reply,
    /// The start of what came back, for evidence.
    pub(super) excerpt: String,
}

/// A JSON-RPC reply, or what came instead.
#[derive(Debug, Clone)]
pub(super) enum Reply {
    /// `result`.
    Result(Value),
    /// `error`.
    Error {
        code: i64,
        message: String,
        data: Option<Value>,
    },
    /// No JSON-RPC response in the body (an HTTP error page, an empty body).
    NotJsonRpc,
    /// Nothing came back: the connection failed or timed out (why).
    Failed(String),
}

/// Why no more requests may be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Spent {
    /// The request budget (`--max-requests`) is spent.
    Budget,
    /// The run's deadline (`--deadline`) has passed, or would before an answer.
    Deadline,
}

impl Spent {
    /// What ran out, for a message.
    pub(super) fn what(self) -> &'static str {
        match self {
            Self::Budget => "the request budget (--max-requests) ran out",
            Self::Deadline => "the audit's deadline (--deadline) passed",
        }
    }
}

enum Channel {
    Http(HttpClient),
    Stdio(StdioTransport),
}

/// The server, and what the audit has sent it.
pub(super) struct Target {
    channel: Channel,
    url: Option<String>,
    headers: Vec<Header>,
    other: Vec<Header>,
    max_requests: u32,
    min_interval: Duration,
    timeout: Duration,
    /// When the whole run must end (`--deadline`).
    deadline: Instant,
    last: Option<Instant>,
    next_id: u64,
    /// Requests sent so far.
    pub(super) sent: u32,
    /// Every result seen: the method asked, and whether the result had a
    /// `resultType`.
    pub(super) results: Vec<(String, bool)>,
    /// The methods whose `input_required` result also carried a success
    /// `content` (a result that is both a question and an answer).
    pub(super) mixed: Vec<String>,
}

impl Target {
    pub(super) async fn connect(plan: &Plan) -> Result<Self, String> {
        let (channel, url) = match &plan.endpoint {
            Endpoint::Http(url) => {
                let mut b = HttpClient::builder();
                if let Some(pem) = &plan.cacert {
                    b = b.add_root_pem(pem).map_err(|e| format!("--cacert: {e}"))?;
                }
                let client = b.build().map_err(|e| e.to_string())?;
                (Channel::Http(client), Some(url.clone()))
            }
            Endpoint::Stdio(cmd) => {
                let mut c = std::process::Command::new(&cmd[0]);
                c.args(&cmd[1..]);
                let t = StdioTransport::builder(c)
                    .stderr(ServerStderr::Discard)
                    .spawn()
                    .map_err(|e| format!("cannot start {}: {e}", cut(&cmd[0], 60)))?;
                (Channel::Stdio(t), None)
            }
        };
        Ok(Self {
            channel,
            url,
            headers: plan.headers.clone(),
            other: plan.other_headers(),
            max_requests: plan.max_requests,
            min_interval: plan.min_interval,
            timeout: plan.request_timeout,
            deadline: plan.started + plan.deadline,
            last: None,
            next_id: 1,
            sent: 0,
            results: Vec::new(),
            mixed: Vec::new(),
        })
    }

    /// What is audited, for the report.
    pub(super) fn describe(&self) -> String {
        match (&self.channel, &self.url) {
            (Channel::Http(_), Some(url)) => url.clone(),
            _ => "a stdio server".into(),
        }
    }

    /// Whether the server is spoken to over HTTP.
    pub(super) fn is_http(&self) -> bool {
        matches!(self.channel, Channel::Http(_))
    }

    /// A fresh request id.
    pub(super) fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Sends `body` to the server as `who`.
    pub(super) async fn send(&mut self, who: Who, body: &Value) -> Result<Exchange, Spent> {
        self.send_to(None, who, body, McpHeaders::Derived).await
    }

    /// Sends `body` to `url` (another instance; the server's own URL when `None`)
    /// as `who`, with `mcp` headers.
    pub(super) async fn send_to(
        &mut self,
        url: Option<&str>,
        who: Who,
        body: &Value,
        mcp: McpHeaders,
    ) -> Result<Exchange, Spent> {
        let bytes = serde_json::to_vec(body).unwrap_or_default();
        self.send_bytes(url, who, body, bytes, mcp, JSON).await
    }

    /// Sends `bytes` to the server as the first user, declared as `content_type`,
    /// with the MCP headers `body` implies: a body the transport must refuse
    /// (not JSON, a batch, another media type). Over stdio, `None`: a line
    /// transport has neither a media type nor a way to send a broken message.
    pub(super) async fn send_raw(
        &mut self,
        body: &Value,
        bytes: Vec<u8>,
        content_type: &'static str,
    ) -> Result<Option<Exchange>, Spent> {
        if !self.is_http() {
            return Ok(None);
        }
        let mcp = McpHeaders::Given(derived(body));
        self.send_bytes(None, Who::Main, &Value::Null, bytes, mcp, content_type)
            .await
            .map(Some)
    }

    /// The time left before the run's deadline.
    pub(super) fn time_left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// Sends `bytes` (the serialized `body`, or something else for the size and
    /// transport checks) as `content_type`.
    async fn send_bytes(
        &mut self,
        url: Option<&str>,
        who: Who,
        body: &Value,
        bytes: Vec<u8>,
        mcp: McpHeaders,
        content_type: &'static str,
    ) -> Result<Exchange, Spent> {
        if self.sent >= self.max_requests {
            return Err(Spent::Budget);
        }
        if let Some(last) = self.last {
            let wait = self.min_interval.saturating_sub(last.elapsed());
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
        }
        // The run's deadline bounds every request: one that cannot be answered
        // before it is not sent, and one cut by it is no answer to judge.
        let left = self.time_left();
        if left.is_zero() {
            return Err(Spent::Deadline);
        }
        let cut_by_deadline = left < self.timeout;
        let timeout = self.timeout.min(left);
        self.sent += 1;
        self.last = Some(Instant::now());
        let method = body["method"].as_str().unwrap_or_default().to_owned();
        let id = body.get("id").cloned().unwrap_or(Value::Null);
        let exchange = match &self.channel {
            Channel::Http(client) => {
                let url = url.or(self.url.as_deref()).unwrap_or_default().to_owned();
                let headers = match who {
                    Who::Main => &self.headers,
                    Who::Other => &self.other,
                };
                let request = http_request(&url, body, bytes, mcp, headers, content_type);
                match request {
                    Ok(req) => match tokio::time::timeout(timeout, client.send(req)).await {
                        Ok(Ok(resp)) => from_http(resp, &id),
                        Ok(Err(e)) => failed(&e.to_string()),
                        Err(_) if cut_by_deadline => return Err(Spent::Deadline),
                        Err(_) => failed(&format!("no answer within {} s", self.timeout.as_secs())),
                    },
                    Err(e) => failed(&e),
                }
            }
            Channel::Stdio(t) => {
                let sent = match serde_json::from_slice::<Value>(&bytes) {
                    Ok(v) => v,
                    Err(_) => body.clone(),
                };
                match tokio::time::timeout(timeout, t.send(sent)).await {
                    Ok(Ok(v)) => from_message(None, &v, excerpt(&v.to_string())),
                    Ok(Err(e)) => failed(&e.to_string()),
                    Err(_) if cut_by_deadline => return Err(Spent::Deadline),
                    Err(_) => failed(&format!("no answer within {} s", self.timeout.as_secs())),
                }
            }
        };
        if let Reply::Result(r) = &exchange.reply {
            if r.get("resultType").and_then(Value::as_str) == Some("input_required")
                && r.get("content").is_some()
            {
                self.mixed.push(method.clone());
            }
            self.results.push((method, r.get("resultType").is_some()));
        }
        Ok(exchange)
    }
}

fn failed(why: &str) -> Exchange {
    Exchange {
        status: None,
        reply: Reply::Failed(cut(why, 200)),
        excerpt: String::new(),
    }
}

/// The media type of every request but those that test a wrong one.
pub(super) const JSON: &str = "application/json";

/// The POST of `body` as `content_type`, with the MCP headers and then the user's.
fn http_request(
    url: &str,
    body: &Value,
    bytes: Vec<u8>,
    mcp: McpHeaders,
    headers: &[Header],
    content_type: &'static str,
) -> Result<http::Request<Vec<u8>>, String> {
    let mut req = http::Request::post(url)
        .body(bytes)
        .map_err(|_| "not a URL".to_owned())?;
    let h = req.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(
        ACCEPT,
        HeaderValue::from_static("application/json, text/event-stream"),
    );
    let pairs = match mcp {
        McpHeaders::Derived => derived(body),
        McpHeaders::Given(p) => p,
    };
    for (name, value) in pairs {
        if let Ok(v) = HeaderValue::try_from(value) {
            h.insert(name, v);
        }
    }
    for header in headers {
        h.insert(header.name.clone(), header.value.clone());
    }
    Ok(req)
}

/// The MCP headers `body` implies.
pub(super) fn derived(body: &Value) -> Vec<(&'static str, String)> {
    let method = body["method"].as_str().unwrap_or_default();
    let version = body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
        .as_str()
        .unwrap_or(PROTOCOL);
    let mut out = vec![
        ("mcp-protocol-version", version.to_owned()),
        ("mcp-method", method.to_owned()),
    ];
    let target = match method {
        "tools/call" | "prompts/get" => body["params"]["name"].as_str(),
        "resources/read" => body["params"]["uri"].as_str(),
        _ => None,
    };
    if let Some(t) = target {
        out.push(("mcp-name", t.to_owned()));
    }
    out
}

/// The reply in an HTTP response: a JSON body, or the event of an SSE stream
/// that answers `id`.
fn from_http(resp: http::Response<Vec<u8>>, id: &Value) -> Exchange {
    let status = resp.status().as_u16();
    let is_sse = resp
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let text = String::from_utf8_lossy(resp.body()).into_owned();
    let message = if is_sse {
        sse_messages(&text).into_iter().find(|m| {
            m.get("id") == Some(id) && (m.get("result").is_some() || m.get("error").is_some())
        })
    } else {
        serde_json::from_str::<Value>(&text).ok()
    };
    match message {
        Some(m) => from_message(Some(status), &m, excerpt(&text)),
        None => Exchange {
            status: Some(status),
            reply: Reply::NotJsonRpc,
            excerpt: excerpt(&text),
        },
    }
}

/// The JSON `data` of each event of an SSE stream.
fn sse_messages(text: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for event in text.split("\n\n") {
        let data: Vec<&str> = event
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|l| l.strip_prefix(' ').unwrap_or(l))
            .collect();
        if let Ok(v) = serde_json::from_str::<Value>(&data.join("\n")) {
            out.push(v);
        }
    }
    out
}

fn from_message(status: Option<u16>, m: &Value, excerpt: String) -> Exchange {
    let reply = if let Some(r) = m.get("result") {
        Reply::Result(r.clone())
    } else if let Some(e) = m.get("error") {
        Reply::Error {
            code: e.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: e
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            data: e.get("data").cloned(),
        }
    } else {
        Reply::NotJsonRpc
    };
    Exchange {
        status,
        reply,
        excerpt,
    }
}

/// The per-request `_meta`, declaring `caps`.
pub(super) fn meta(caps: &Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": PROTOCOL,
        "io.modelcontextprotocol/clientInfo": {"name": "mrtr-audit", "version": env!("CARGO_PKG_VERSION")},
        "io.modelcontextprotocol/clientCapabilities": caps,
    })
}

/// Every input capability: form and URL elicitation, sampling with tools, roots.
pub(super) fn all_caps() -> Value {
    json!({
        "elicitation": {"form": {}, "url": {}},
        "sampling": {"tools": {}},
        "roots": {"listChanged": true},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_streams_give_the_reply_to_the_request() {
        let text = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n\
                    data: {\"jsonrpc\":\"2.0\",\"id\":7,\n\
                    data: \"result\":{\"resultType\":\"complete\"}}\n\n";
        let msgs = sse_messages(text);
        assert_eq!(msgs.len(), 2);
        assert_eq!(msgs[1]["id"], 7);
        let resp = http::Response::builder()
            .status(200)
            .header("content-type", "text/event-stream")
            .body(text.as_bytes().to_vec())
            .unwrap();
        let ex = from_http(resp, &json!(7));
        assert!(matches!(ex.reply, Reply::Result(ref r) if r["resultType"] == "complete"));
    }

    #[test]
    fn mcp_headers_follow_the_body() {
        let body = json!({"method": "resources/read", "params": {"uri": "x://y", "_meta": meta(&json!({}))}});
        assert_eq!(
            derived(&body),
            vec![
                ("mcp-protocol-version", PROTOCOL.to_owned()),
                ("mcp-method", "resources/read".to_owned()),
                ("mcp-name", "x://y".to_owned()),
            ]
        );
    }
}
