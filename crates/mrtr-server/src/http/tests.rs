//! The router as a whole: panics isolated per request, the principal sources,
//! and mounting in a user's application.

use super::*;
use axum::http::HeaderName;

use mrtr::principal::Principal;

#[tokio::test]
async fn panics_become_500_with_jsonrpc_body() {
    let app: Router = Router::new()
        .route("/boom", post(boom))
        .layer(middleware::from_fn(per_request));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let raw = raw_post(addr, "/boom").await;
    assert!(raw.starts_with("HTTP/1.1 500"), "{raw}");
    assert!(raw.contains("\"code\":-32603"), "{raw}");
}

async fn boom() -> Response {
    panic!("boom")
}

async fn raw_post(addr: std::net::SocketAddr, path: &str) -> String {
    raw_request(addr, path, "", "").await
}

/// One HTTP/1.1 POST with extra header lines (each ending in `\r\n`) and a body.
async fn raw_request(addr: std::net::SocketAddr, path: &str, headers: &str, body: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    out
}

fn parts(headers: &[(&str, &[u8])]) -> Parts {
    let mut req = axum::http::Request::builder().method("POST").uri("/mcp");
    for (name, value) in headers {
        req = req.header(*name, HeaderValue::from_bytes(value).unwrap());
    }
    req.body(()).unwrap().into_parts().0
}

#[test]
fn from_extension_reads_the_principal_the_auth_layer_inserted() {
    let mut p = parts(&[]);
    let refused = FromExtension.principal(&p).unwrap_err();
    assert_eq!(refused.detail(), "no Principal in the request extensions");
    p.extensions.insert(Principal::subject("alice"));
    assert_eq!(FromExtension.principal(&p), Ok(Principal::subject("alice")));
}

#[test]
fn from_header_trusts_one_visible_ascii_value() {
    let source = FromHeader::new(HeaderName::from_static("x-forwarded-user"));
    let ok = source.principal(&parts(&[("X-Forwarded-User", b"alice@example.com")]));
    assert_eq!(ok, Ok(Principal::subject("alice@example.com")));
    for bad in [
        parts(&[]),
        parts(&[("x-other", b"alice")]),
        parts(&[("x-forwarded-user", b"")]),
        parts(&[("x-forwarded-user", b"alice smith")]),
        parts(&[("x-forwarded-user", b"al\tice")]),
        parts(&[("x-forwarded-user", b"\xc3\xa9lise")]),
        parts(&[("x-forwarded-user", b"alice"), ("x-forwarded-user", b"bob")]),
    ] {
        let refused = source.principal(&bad).unwrap_err();
        // The private reason names the header, never its value.
        assert!(refused.detail().contains("x-forwarded-user"), "{refused:?}");
        assert!(!refused.detail().contains("alice"), "{refused:?}");
    }
}

#[test]
fn anonymous_and_closures() {
    assert_eq!(Anonymous.principal(&parts(&[])), Ok(Principal::anonymous()));
    let by_tenant = |parts: &Parts| match parts.headers.get("x-tenant") {
        Some(t) if t == "acme" => Ok(Principal::subject("svc").with_issuer("acme")),
        _ => Err(Rejection::new("unknown tenant")),
    };
    assert_eq!(
        by_tenant.principal(&parts(&[("x-tenant", b"acme")])),
        Ok(Principal::subject("svc").with_issuer("acme"))
    );
    assert!(by_tenant.principal(&parts(&[])).is_err());
}

/// A user's application: its own state type, its own routes and fallback, an
/// authentication layer, and the MCP router merged in and nested.
#[tokio::test]
async fn mounts_in_an_application_behind_its_auth_layer() {
    #[derive(Clone)]
    struct UserState;
    async fn authenticate(mut req: Request, next: Next) -> Response {
        if req
            .headers()
            .get("x-test-user")
            .is_some_and(|v| v == "alice")
        {
            req.extensions_mut().insert(Principal::subject("alice"));
        }
        next.run(req).await
    }
    let service = Arc::new(Service::new(
        mrtr::engine::Engine::new(mrtr::seal::Keyring::ephemeral(), "test"),
        "test",
        "1.0.0",
    ));
    let app: Router = Router::<UserState>::new()
        .route("/health", post(|| async { "ok" }))
        .merge(mcp_router(
            Arc::clone(&service),
            HttpOptions::default(),
            FromExtension,
        ))
        .nest(
            "/tenant",
            mcp_router(service, HttpOptions::default(), FromExtension),
        )
        .fallback(|| async { (StatusCode::IM_A_TEAPOT, "user fallback") })
        .layer(middleware::from_fn(authenticate))
        .with_state(UserState);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });

    let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let mcp = "Content-Type: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n";
    let alice = format!("{mcp}x-test-user: alice\r\n");
    for path in ["/mcp", "/tenant/mcp"] {
        let raw = raw_request(addr, path, &alice, list).await;
        assert!(raw.starts_with("HTTP/1.1 200"), "{path}: {raw}");
        assert!(raw.contains(r#""tools":[]"#), "{raw}");
        // No principal from the auth layer: 401, never anonymous.
        let raw = raw_request(addr, path, mcp, list).await;
        assert!(raw.starts_with("HTTP/1.1 401"), "{path}: {raw}");
        let body = raw.split("\r\n\r\n").nth(1).unwrap();
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["error"]["code"], -32600, "{v}");
        assert_eq!(v["error"]["message"], "Unauthorized", "{v}");
        assert!(v.get("id").is_none(), "{v}");
    }
    assert!(raw_post(addr, "/health").await.ends_with("ok"));
    assert!(raw_post(addr, "/other").await.starts_with("HTTP/1.1 418"));
}
