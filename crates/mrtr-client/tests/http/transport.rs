//! The Streamable HTTP transport against a tiny fake HTTP server on 127.0.0.1:
//! the headers it sends, JSON and SSE responses, and HTTP error statuses.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mrtr::wire::{ElicitAction, ElicitResult};
use mrtr_client::{
    BearerToken, BoxFuture, Challenge, Client, ClientError, FlowError, Handlers, HttpTransport,
    TokenSource, Transport, TransportError,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One request as the fake server saw it.
#[derive(Debug, Clone)]
struct Seen {
    headers: HashMap<String, String>,
    body: Value,
}

/// What the fake server answers to a request (given its parsed body).
#[derive(Debug, Clone)]
enum Reply {
    /// `200 application/json`.
    Json(Value),
    /// `200 text/event-stream`, each string written separately; the stream is
    /// left open afterwards so the client must stop at the matching event.
    Sse(Vec<String>),
    /// Any status with a body and content type.
    Raw(u16, &'static str, String),
    /// `401` with this `WWW-Authenticate` value.
    Unauthorized(&'static str),
}

type Script = Arc<dyn Fn(&Value, usize) -> Reply + Send + Sync>;

async fn serve(script: Script) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((sock, _)) = listener.accept().await else {
                return;
            };
            let (script, log) = (script.clone(), log.clone());
            tokio::spawn(async move { handle(sock, script, log).await });
        }
    });
    (url, seen)
}

async fn handle(mut sock: TcpStream, script: Script, log: Arc<Mutex<Vec<Seen>>>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = sock.read(&mut chunk).await.unwrap();
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8(buf[..head_end].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap().to_owned();
    assert!(request_line.starts_with("POST /mcp "), "{request_line}");
    let headers: HashMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let len: usize = headers["content-length"].parse().unwrap();
    while buf.len() < head_end + len {
        let n = sock.read(&mut chunk).await.unwrap();
        buf.extend_from_slice(&chunk[..n]);
    }
    let body: Value = serde_json::from_slice(&buf[head_end..head_end + len]).unwrap();
    let n = {
        let mut l = log.lock().unwrap();
        l.push(Seen {
            headers,
            body: body.clone(),
        });
        l.len() - 1
    };
    match script(&body, n) {
        Reply::Json(v) => {
            let b = v.to_string();
            let r = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{b}",
                b.len()
            );
            sock.write_all(r.as_bytes()).await.unwrap();
        }
        Reply::Raw(status, ct, b) => {
            let r = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: {ct}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{b}",
                b.len()
            );
            sock.write_all(r.as_bytes()).await.unwrap();
        }
        Reply::Unauthorized(challenge) => {
            let b = r#"{"error":"unauthorized"}"#;
            let r = format!(
                "HTTP/1.1 401 Unauthorized\r\nwww-authenticate: {challenge}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{b}",
                b.len()
            );
            sock.write_all(r.as_bytes()).await.unwrap();
        }
        Reply::Sse(parts) => {
            let r = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";
            sock.write_all(r.as_bytes()).await.unwrap();
            for p in parts {
                // Unchunked, close-delimited body: each part arrives as it is written.
                sock.write_all(p.as_bytes()).await.unwrap();
                sock.flush().await.unwrap();
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            // Keep the stream open: the client must not wait for its end.
            tokio::time::sleep(Duration::from_secs(30)).await;
        }
    }
}

fn ok(req: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": req["id"], "result": result})
}

const STATE: &str = "eyJ9 \"odd\" \\ state ✓ ";

#[tokio::test]
async fn json_then_sse_through_the_driver() {
    let script: Script = Arc::new(|req, n| match n {
        0 => Reply::Json(ok(
            req,
            json!({"resultType": "input_required", "requestState": STATE, "inputRequests": {"ok": {
                "method": "elicitation/create", "params": {"message": "Sure?",
                "requestedSchema": {"type": "object", "properties": {"yes": {"type": "boolean"}}}}}}}),
        )),
        _ => {
            let done = ok(
                req,
                json!({"resultType": "complete", "content": [{"type": "text", "text": "done"}]}),
            );
            let other =
                json!({"jsonrpc": "2.0", "id": 12345, "result": {"resultType": "complete"}});
            let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}});
            let done_text = done.to_string();
            let (a, b) = done_text.split_at(done_text.len() / 2);
            Reply::Sse(vec![
                ": keep-alive\n\n".into(),
                format!("event: message\ndata: {progress}\n\n"),
                format!("data: {other}\n\n"),
                format!("id: 1\r\ndata: {a}"),
                format!("{b}\r\n\r\n"),
            ])
        }
    });
    let (url, seen) = serve(script).await;
    let handlers = Handlers::new().on_elicit(|_c, _p| async {
        Ok(ElicitResult {
            action: ElicitAction::Accept,
            content: json!({"yes": true}).as_object().cloned(),
        })
    });
    let client = Client::builder(HttpTransport::new(&url).unwrap())
        .with_handler(handlers)
        .build();
    let out = tokio::time::timeout(
        Duration::from_secs(10),
        client.call_tool("deploy", json!({"env": "prod"})),
    )
    .await
    .expect("the client stops at the matching event")
    .unwrap();
    assert_eq!(out.text(), "done");
    assert_eq!(out.rounds, 2);

    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    for s in &seen {
        let h = &s.headers;
        assert_eq!(h["content-type"], "application/json");
        assert_eq!(h["accept"], "application/json, text/event-stream");
        assert_eq!(h["mcp-protocol-version"], "2026-07-28");
        assert_eq!(h["mcp-method"], "tools/call");
        assert_eq!(h["mcp-name"], "deploy");
        assert_eq!(
            s.body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
    }
    assert_ne!(seen[0].body["id"], seen[1].body["id"]);
    assert!(seen[0].body["params"].get("requestState").is_none());
    assert_eq!(
        seen[1].body["params"]["requestState"]
            .as_str()
            .unwrap()
            .as_bytes(),
        STATE.as_bytes()
    );
    assert_eq!(
        seen[1].body["params"]["inputResponses"]["ok"],
        json!({"action": "accept", "content": {"yes": true}})
    );
}

#[tokio::test]
async fn resource_reads_name_the_uri() {
    let script: Script =
        Arc::new(|req, _| Reply::Json(ok(req, json!({"resultType": "complete", "contents": []}))));
    let (url, seen) = serve(script).await;
    let client = Client::builder(HttpTransport::new(&url).unwrap()).build();
    client.read_resource("file:///tmp/a.txt").await.unwrap();
    client
        .request("tools/list", Default::default())
        .await
        .unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen[0].headers["mcp-method"], "resources/read");
    assert_eq!(seen[0].headers["mcp-name"], "file:///tmp/a.txt");
    assert_eq!(seen[1].headers["mcp-method"], "tools/list");
    assert!(!seen[1].headers.contains_key("mcp-name"));
}

#[tokio::test]
async fn a_jsonrpc_error_with_http_400_is_typed() {
    let script: Script = Arc::new(|req, _| {
        Reply::Raw(
            400,
            "application/json",
            json!({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32020, "message": "Header mismatch", "data": {"h": 1}}})
                .to_string(),
        )
    });
    let (url, _) = serve(script).await;
    let client = Client::builder(HttpTransport::new(&url).unwrap()).build();
    assert_eq!(
        client.call_tool("t", Value::Null).await.unwrap_err(),
        ClientError::Flow(FlowError::JsonRpc {
            code: -32020,
            message: "Header mismatch".into(),
            data: Some(json!({"h": 1}))
        })
    );
}

#[tokio::test]
async fn http_failures_are_transport_errors() {
    let script: Script = Arc::new(|_, n| match n {
        0 => Reply::Raw(500, "text/plain", "boom".into()),
        1 => Reply::Raw(200, "application/json", "{not json".into()),
        _ => Reply::Raw(
            200,
            "text/event-stream",
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n".into(),
        ),
    });
    let (url, _) = serve(script).await;
    let t = HttpTransport::new(&url).unwrap();
    let req = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t"}});
    match t.send(req.clone()).await.unwrap_err() {
        TransportError::Status { status: 500, body } => assert_eq!(body, "boom"),
        e => panic!("{e:?}"),
    }
    assert!(matches!(
        t.send(req.clone()).await.unwrap_err(),
        TransportError::InvalidResponse(_)
    ));
    assert!(matches!(
        t.send(req).await.unwrap_err(),
        TransportError::InvalidResponse(_)
    ));

    // Nobody listening.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}/mcp", listener.local_addr().unwrap());
    drop(listener);
    let t = HttpTransport::new(&dead).unwrap();
    let req = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    assert!(matches!(
        t.send(req).await.unwrap_err(),
        TransportError::Connection(_)
    ));
}

/// A token source that hands out `tokens[i]` on its i-th call and records whether
/// each call came after a refusal.
#[derive(Debug)]
struct Tokens {
    tokens: Vec<&'static str>,
    asked: Mutex<Vec<bool>>,
}

impl TokenSource for Tokens {
    fn token<'a>(
        &'a self,
        refused: Option<&'a Challenge>,
    ) -> BoxFuture<'a, Result<Option<BearerToken>, TransportError>> {
        Box::pin(async move {
            let mut asked = self.asked.lock().unwrap();
            // A refusal that is not about the token gets no other token.
            if refused.is_some_and(|c| c.error() != Some("invalid_token")) {
                asked.push(true);
                return Ok(None);
            }
            asked.push(refused.is_some());
            let t = self
                .tokens
                .get(asked.len() - 1)
                .or(self.tokens.last())
                .unwrap();
            Ok(Some(BearerToken::new(*t)))
        })
    }
}

#[tokio::test]
async fn headers_and_bearer_tokens_are_sent_and_a_refused_token_is_refreshed_once() {
    let (url, seen) = serve(Arc::new(|req, n| {
        // The fake server sees only the body here; the log is checked below, and
        // the script answers by request number.
        match n {
            0 => {
                Reply::Unauthorized(r#"Bearer error="invalid_token", error_description="expired""#)
            }
            _ => Reply::Json(ok(req, json!({"tools": []}))),
        }
    }))
    .await;
    let source = Arc::new(Tokens {
        tokens: vec!["old-token", "new-token"],
        asked: Mutex::default(),
    });
    let t = HttpTransport::builder(&url)
        .header("X-Tenant", "blue")
        .unwrap()
        .token_source(source.clone())
        .build()
        .unwrap();
    let req = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    let v = t.send(req).await.unwrap();
    assert_eq!(v["result"], json!({"tools": []}));
    assert_eq!(*source.asked.lock().unwrap(), vec![false, true]);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].headers["authorization"], "Bearer old-token");
    assert_eq!(seen[1].headers["authorization"], "Bearer new-token");
    for s in &seen {
        assert_eq!(s.headers["x-tenant"], "blue");
        assert_eq!(s.headers["mcp-method"], "tools/list");
    }
}

#[tokio::test]
async fn a_401_is_unauthorized_and_never_shows_the_token() {
    let refuse: Script = Arc::new(|_, _| {
        Reply::Unauthorized(r#"Bearer error="invalid_token", error_description="see <script>""#)
    });
    let req = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});

    // A source whose fresh token is refused too: two requests, then the error.
    let (url, seen) = serve(refuse.clone()).await;
    let source = Arc::new(Tokens {
        tokens: vec!["s3cret-1", "s3cret-2"],
        asked: Mutex::default(),
    });
    let t = HttpTransport::builder(&url)
        .token_source(source.clone())
        .build()
        .unwrap();
    let e = t.send(req.clone()).await.unwrap_err();
    let TransportError::Unauthorized(m) = &e else {
        panic!("{e:?}")
    };
    assert!(
        m.contains("fresh token") && m.contains("error=invalid_token"),
        "{m}"
    );
    assert_eq!(seen.lock().unwrap().len(), 2);
    assert_eq!(*source.asked.lock().unwrap(), vec![false, true]);

    // A fixed token: refused at once, no second request.
    let (url, seen) = serve(refuse.clone()).await;
    let t = HttpTransport::builder(&url)
        .bearer(&BearerToken::new("s3cret-fixed"))
        .unwrap()
        .build()
        .unwrap();
    let e = t.send(req.clone()).await.unwrap_err();
    assert!(
        matches!(&e, TransportError::Unauthorized(m) if m.contains("refused the bearer token")),
        "{e:?}"
    );
    assert_eq!(seen.lock().unwrap().len(), 1);

    // No credentials at all.
    let (url, _) = serve(Arc::new(|_, _| {
        Reply::Unauthorized(
            r#"Bearer resource_metadata="http://x/.well-known/oauth-protected-resource""#,
        )
    }))
    .await;
    let e = HttpTransport::new(&url)
        .unwrap()
        .send(req.clone())
        .await
        .unwrap_err();
    assert!(
        matches!(&e, TransportError::Unauthorized(m) if m.contains("none were sent")),
        "{e:?}"
    );

    // A source that has no other token for a refusal that is not about the
    // token: asked once more, declines, and no second request is sent.
    let (url, seen) = serve(Arc::new(|_, _| Reply::Unauthorized("Bearer"))).await;
    let source = Arc::new(Tokens {
        tokens: vec!["s3cret-3"],
        asked: Mutex::default(),
    });
    let t = HttpTransport::builder(&url)
        .token_source(source.clone())
        .build()
        .unwrap();
    let e = t.send(req).await.unwrap_err();
    assert!(
        matches!(&e, TransportError::Unauthorized(m) if m.contains("has no other") && m.contains("HTTP 401")),
        "{e:?}"
    );
    assert_eq!(seen.lock().unwrap().len(), 1);
    assert_eq!(*source.asked.lock().unwrap(), vec![false, true]);

    for e in [e.to_string(), format!("{e:?}"), format!("{t:?}")] {
        assert!(!e.contains("s3cret") && !e.contains("<script>"), "{e}");
    }
}
