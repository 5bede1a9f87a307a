//! `mrtr call` against a server behind a bearer-token check (the library's MCP
//! router behind an axum middleware, as `examples/embed_axum` in mrtr-server):
//! `-H` and `--bearer-env` carry the credentials through a two-round flow, a
//! missing or refused token is a transport error with a hint, and no token or
//! header value ever reaches the terminal.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use mrtr::ToolResult;
use mrtr::engine::{Elicited, Engine, Form};
use mrtr::principal::Principal;
use mrtr::{Keyring, Service};
use mrtr_server::http::{FromExtension, HttpOptions, mcp_router};
use serde_json::json;
use tokio::net::TcpListener;

/// The one token the server takes, and for whom.
const TOKEN: &str = "s3cret-alice-token";

/// `greet` asks a name, then greets it and says who asked.
fn service() -> Service {
    Service::new(
        Engine::new(Keyring::ephemeral(), "auth-test"),
        "auth-test",
        "1.0.0",
    )
    .tool(
        "greet",
        "Asks your name, then greets you.",
        json!({"type": "object"}),
        |round| match round.elicit("name", Form::new("Your name?").string("name", "Name"))? {
            Elicited::Accepted(f) => Ok(ToolResult::text(format!(
                "Hello, {}!",
                f.str("name").unwrap_or("you")
            ))),
            _ => Ok(ToolResult::text("Hello!")),
        },
    )
}

/// `Authorization: Bearer TOKEN` becomes the principal `alice`; anything else is
/// 401 with a Bearer challenge. `X-Tenant`, when sent, must be `blue`.
async fn authenticate(mut req: Request, next: Next) -> Response {
    let headers = req.headers();
    let tenant_ok = headers
        .get("x-tenant")
        .is_none_or(|v| v.as_bytes() == b"blue");
    let bearer_ok = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        == Some(TOKEN);
    if !(tenant_ok && bearer_ok) {
        return (
            StatusCode::UNAUTHORIZED,
            [(
                header::WWW_AUTHENTICATE,
                r#"Bearer error="invalid_token", error_description="unknown token""#,
            )],
        )
            .into_response();
    }
    req.extensions_mut().insert(Principal::subject("alice"));
    next.run(req).await
}

/// Serves the router behind the check on 127.0.0.1; returns its URL.
async fn serve() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let app: axum::Router = mcp_router(Arc::new(service()), HttpOptions::default(), FromExtension)
        .layer(middleware::from_fn(authenticate));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

/// `mrtr call ARGS` with `env` added, without a terminal: exit code, stdout, stderr.
async fn mrtr_call(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_mrtr"))
        .arg("call")
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), out)
        .await
        .expect("mrtr call ends")
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const ANSWER: &str = r#"{"name": {"action": "accept", "content": {"name": "Ada"}}}"#;

#[tokio::test]
async fn a_header_or_a_token_from_the_environment_finishes_the_flow() {
    let url = serve().await;
    let authorization = format!("Authorization: Bearer {TOKEN}");
    for (args, env) in [
        (vec!["-H", authorization.as_str()], vec![]),
        (
            vec!["-H", "X-Tenant: blue", "--bearer-env", "MRTR_TEST_TOKEN"],
            vec![("MRTR_TEST_TOKEN", TOKEN)],
        ),
        // Whitespace around the name and the value is not part of them.
        (
            vec![
                "--header",
                "  x-tenant :  blue ",
                "--bearer-env",
                "MRTR_TEST_TOKEN",
            ],
            vec![("MRTR_TEST_TOKEN", TOKEN)],
        ),
    ] {
        let mut all = args.clone();
        all.extend([
            url.as_str(),
            "tool",
            "greet",
            "--answers",
            ANSWER,
            "--no-input",
        ]);
        let (code, out, err) = mrtr_call(&all, &env).await;
        assert_eq!(code, 0, "{args:?}: {err}");
        assert_eq!(out.trim(), "Hello, Ada!", "{args:?}");
        assert!(!err.contains(TOKEN), "{err}");
    }
}

#[tokio::test]
async fn no_token_or_a_refused_one_is_a_transport_error_that_never_shows_it() {
    let url = serve().await;
    for (args, env, says) in [
        (vec![], vec![], "none were sent"),
        (
            vec!["--bearer-env", "MRTR_TEST_TOKEN"],
            vec![("MRTR_TEST_TOKEN", "s3cret-wrong")],
            "refused the bearer token",
        ),
        (
            vec!["-H", "Authorization: Bearer s3cret-wrong"],
            vec![],
            "refused the Authorization header",
        ),
        (
            vec![
                "-H",
                "X-Tenant: s3cret-red",
                "--bearer-env",
                "MRTR_TEST_TOKEN",
            ],
            vec![("MRTR_TEST_TOKEN", TOKEN)],
            "refused the bearer token",
        ),
    ] {
        let mut all = args.clone();
        all.extend([
            url.as_str(),
            "tool",
            "greet",
            "--answers",
            ANSWER,
            "--no-input",
        ]);
        let (code, out, err) = mrtr_call(&all, &env).await;
        assert_eq!(code, 3, "{args:?}: {err}");
        assert!(out.is_empty(), "{out}");
        assert!(
            err.contains("error: transport: unauthorized: "),
            "{args:?}: {err}"
        );
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(err.contains("error=invalid_token"), "{err}");
        assert!(
            err.contains("hint: ") && err.contains("--bearer-env VAR"),
            "{err}"
        );
        assert!(
            !err.contains("s3cret") && !err.contains("unknown token"),
            "{err}"
        );
    }
}

#[tokio::test]
async fn credential_mistakes_are_usage_errors_that_never_show_a_value() {
    let url = "http://127.0.0.1:9/mcp";
    for (args, env, says) in [
        (
            vec!["-H", "Mcp-Method: tools/list", url],
            vec![],
            "transport's own",
        ),
        (
            vec!["-H", "Content-Type: text/plain", url],
            vec![],
            "transport's own",
        ),
        (vec!["-H", "no colon here", url], vec![], "`Name: value`"),
        (
            vec!["-H", "Bad Name: s3cret", url],
            vec![],
            "not a header name",
        ),
        (
            vec!["-H", "X-Key: s3cret\u{7f}", url],
            vec![],
            "cannot carry this value",
        ),
        (
            vec!["--bearer-env", "MRTR_TEST_NO_SUCH_VAR", url],
            vec![],
            "MRTR_TEST_NO_SUCH_VAR is not set",
        ),
        (
            vec!["--bearer-env", "MRTR_TEST_TOKEN", url],
            vec![("MRTR_TEST_TOKEN", "  ")],
            "MRTR_TEST_TOKEN is empty",
        ),
        (
            vec!["--bearer-env", "MRTR_TEST_TOKEN", url],
            vec![("MRTR_TEST_TOKEN", "s3cret\u{7f}")],
            "cannot carry",
        ),
        (
            vec![
                "-H",
                "authorization: Bearer s3cret",
                "--bearer-env",
                "MRTR_TEST_TOKEN",
                url,
            ],
            vec![("MRTR_TEST_TOKEN", "s3cret-2")],
            "give one of them",
        ),
    ] {
        let mut all = args.clone();
        all.extend(["tool", "greet"]);
        let (code, out, err) = mrtr_call(&all, &env).await;
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty());
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(
            !err.contains("s3cret") && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
    // Credentials are for HTTP: a stdio server takes its own.
    let (code, _, err) = mrtr_call(&["-H", "X-Key: v", "tool", "greet", "--", "true"], &[]).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("are for http:// and https:// URLs"), "{err}");
}
