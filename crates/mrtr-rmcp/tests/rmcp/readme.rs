//! The README's rmcp server ("Using mrtr with rmcp"), compiled and run: the
//! README shows excerpts of tests/rmcp/greeter.rs, whose lines must all be there
//! in the same order (the first test checks that), and a two-round flow runs
//! against it over HTTP. The curl walkthrough's note on rmcp's framing holds for
//! that server.

use crate::support as server_support;

use crate::greeter;

use mrtr::Keyring;
use serde_json::{Value, json};
use server_support::common::{accept, asked_keys, carrier, retry, state_of};
use server_support::{borrow, headers_for, request};

const GREETER: &str = include_str!("greeter.rs");

#[test]
fn the_readme_block_is_this_code() {
    let readme = include_str!("../../../../README.md");
    let section = readme
        .split("## Using mrtr with rmcp")
        .nth(1)
        .expect("README section");
    let block = section
        .split("```rust,ignore\n")
        .nth(1)
        .and_then(|b| b.split("```\n").next())
        .expect("the section's rust block");
    // Each line of the block (but the `// ...` marks between the excerpts) is a
    // line of greeter.rs, in order.
    let mut lines = GREETER.lines();
    let mut shown = 0;
    for want in block.lines().filter(|l| l.trim() != "// ...") {
        assert!(
            lines.any(|l| l == want),
            "README line {want:?} is not in tests/rmcp/greeter.rs (in this order)"
        );
        shown += 1;
    }
    assert!(shown >= 20, "the README shows {shown} lines of the server");
    assert!(block.contains("\n// ...\n"), "the excerpts are marked");
}

fn post(addr: std::net::SocketAddr, body: &Value) -> Value {
    let owned = headers_for(body);
    let mut headers = borrow(&owned);
    headers.push(("Content-Type", "application/json"));
    headers.push(("Accept", "application/json, text/event-stream"));
    let r = request(addr, "POST", "/mcp", &headers, body.to_string().as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    // The README's server answers with SSE (rmcp's default): one event, one message.
    let text = r.text();
    let data = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .find(|d| !d.is_empty())
        .unwrap_or(text.as_str());
    serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
fn the_readme_server_greets_in_two_rounds() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    rt.spawn(async move { axum::serve(listener, greeter::app(Keyring::ephemeral())).await });

    let first = carrier(1, "tools/call", "greet", None);
    let v = post(addr, &first);
    assert_eq!(asked_keys(&v), ["name"]);
    let answers = json!({"name": accept(json!({"name": "Ada"}))});
    let v = post(addr, &retry(&first, 2, Some(answers), &state_of(&v)));
    assert_eq!(v["result"]["content"][0]["text"], "Hello, Ada!", "{v}");
    rt.shutdown_background();
}

#[test]
fn the_curl_walkthrough_says_which_rmcp_server_answers_plain_json_and_it_is_so() {
    let readme = include_str!("../../../../README.md");
    let section = readme
        .split("## The reference server: two rounds with curl")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("README section");
    let prose = section.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        prose.contains("no `Accept` gets plain JSON")
            && prose.contains("`StreamableHttpServerConfig` sets `.with_json_response(true)`"),
        "{prose}"
    );
    // The README's server keeps rmcp's default: SSE for the walkthrough's `Accept`,
    // and no plain JSON for any other (rmcp wants both types named).
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    rt.spawn(async move { axum::serve(listener, greeter::app(Keyring::ephemeral())).await });
    let first = carrier(1, "tools/call", "greet", None);
    let owned = headers_for(&first);
    for (accept, status, framing) in [
        (
            "application/json, text/event-stream",
            200,
            Some("text/event-stream"),
        ),
        ("application/json", 406, None),
    ] {
        let mut headers = borrow(&owned);
        headers.push(("Content-Type", "application/json"));
        headers.push(("Accept", accept));
        let r = request(addr, "POST", "/mcp", &headers, first.to_string().as_bytes());
        assert_eq!(r.status, status, "{accept}: {}", r.text());
        if let Some(framing) = framing {
            let content_type = r.header("content-type").unwrap_or_default();
            assert!(
                content_type.starts_with(framing),
                "{accept}: {content_type}"
            );
        }
    }
    rt.shutdown_background();
}
