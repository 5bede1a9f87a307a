//! What the rmcp adapter counts (`mrtr::metrics`), captured by a recorder of
//! this test process: no label value is ever a string the client chose. Many
//! distinct prompt names, resource URIs and tool names through every path of
//! the adapter (the handler-closure forms, sync and async; a whole `Service`;
//! rmcp's tool router; requests refused for having no principal; a 2025-11-25
//! session) leave the `name` label with the registered names only.

use crate::rmcp_support;
use crate::support as server_support;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::OnceLock;

use metrics_util::debugging::{DebuggingRecorder, Snapshotter};
use mrtr::{Engine, Keyring};
use mrtr_rmcp::{Mrtr, Principals};
use rmcp::ServiceExt;
use rmcp::model::{GetPromptRequestParams, InitializeRequestParams, ReadResourceRequestParams};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use server_support::common::carrier;
use server_support::{borrow, headers_for, request};

/// How many distinct targets each path gets.
const DISTINCT: usize = 60;

/// The recorder of this test process (installed once, before any request).
fn snapshotter() -> &'static Snapshotter {
    static SNAP: OnceLock<Snapshotter> = OnceLock::new();
    SNAP.get_or_init(|| {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        recorder
            .install()
            .expect("the only recorder of this process");
        snapshotter
    })
}

/// The series of `mrtr_requests_total` so far, each as its sorted labels.
fn request_series() -> Vec<Vec<(String, String)>> {
    snapshotter()
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(key, ..)| key.key().name() == mrtr::metrics::REQUESTS_TOTAL)
        .map(|(key, ..)| {
            let mut labels: Vec<(String, String)> = key
                .key()
                .labels()
                .map(|l| (l.key().to_owned(), l.value().to_owned()))
                .collect();
            labels.sort();
            labels
        })
        .collect()
}

/// Every value the `name` label took.
fn names() -> BTreeSet<String> {
    request_series()
        .into_iter()
        .flatten()
        .filter(|(k, _)| k == "name")
        .map(|(_, v)| v)
        .collect()
}

/// POSTs `body` with the MCP headers that agree with it, as `user` when given.
fn post(addr: SocketAddr, body: &Value, user: Option<&str>) -> Value {
    let owned = headers_for(body);
    let mut headers = borrow(&owned);
    headers.push(("Content-Type", "application/json"));
    headers.push(("Accept", "application/json, text/event-stream"));
    if let Some(u) = user {
        headers.push((rmcp_support::USER_HEADER, u));
    }
    request(addr, "POST", "/mcp", &headers, body.to_string().as_bytes()).json()
}

fn engine() -> Engine {
    Engine::new(Keyring::ephemeral(), "https://rmcp.test.example")
}

/// A 2025-11-25 client that declares no capabilities (the handlers here ask nothing).
#[derive(Clone)]
struct Legacy(InitializeRequestParams);

impl rmcp::ClientHandler for Legacy {
    fn get_info(&self) -> InitializeRequestParams {
        self.0.clone()
    }
}

#[test]
fn client_chosen_targets_never_become_metric_labels() {
    snapshotter();
    let before = request_series().len();

    // The handler-closure forms (sync and async), for any prompt name and URI:
    // completed, and refused for having no principal.
    let any =
        rmcp_support::start_any_target(Mrtr::new(engine(), rmcp_support::header_principals()));
    for i in 0..DISTINCT {
        for user in [Some("alice"), None] {
            let v = post(
                any.addr,
                &carrier(1, "prompts/get", &format!("prompt-{i}"), None),
                user,
            );
            match user {
                Some(_) => assert!(v.get("result").is_some(), "{v}"),
                None => assert_eq!(v["error"]["code"], -32603, "{v}"),
            }
            let v = post(
                any.addr,
                &carrier(2, "resources/read", &format!("file:///r/{i}"), None),
                user,
            );
            match user {
                Some(_) => assert!(v.get("result").is_some(), "{v}"),
                None => assert_eq!(v["error"]["code"], -32603, "{v}"),
            }
        }
    }

    // A whole Service: unknown prompts and URIs, and its registered resource.
    let (service, _) = server_support::common::reference(server_support::common::engine());
    let bridged = rmcp_support::start_bridged(service);
    for i in 0..DISTINCT {
        let v = post(
            bridged.addr,
            &carrier(3, "prompts/get", &format!("unknown-{i}"), None),
            None,
        );
        assert!(v.get("error").is_some(), "{v}");
        let v = post(
            bridged.addr,
            &carrier(4, "resources/read", &format!("file:///unknown/{i}"), None),
            None,
        );
        assert!(v.get("error").is_some(), "{v}");
    }
    let v = post(
        bridged.addr,
        &carrier(
            5,
            "prompts/get",
            server_support::common::PROMPT,
            Some(json!({})),
        ),
        None,
    );
    assert!(v.get("result").is_some(), "{v}");

    // rmcp's tool router: a registered tool, and a registered one refused for
    // having no principal.
    let tools = rmcp_support::start(Mrtr::new(engine(), rmcp_support::header_principals()));
    let v = post(
        tools.addr,
        &carrier(6, "tools/call", "greet", None),
        Some("a"),
    );
    assert!(v.get("result").is_some(), "{v}");
    let v = post(tools.addr, &carrier(7, "tools/call", "greet", None), None);
    assert_eq!(v["error"]["code"], -32603, "{v}");

    // A 2025-11-25 session on the closure forms.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let legacy = rmcp_support::start_any_target(Mrtr::new(engine(), Principals::anonymous()));
    rt.block_on(async {
        let init = serde_json::from_value(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "metrics-test", "version": "0"},
        }))
        .unwrap();
        let transport = StreamableHttpClientTransport::from_unix_socket_with_config(
            legacy.socket.to_str().unwrap(),
            StreamableHttpClientTransportConfig::with_uri("http://localhost/mcp"),
        );
        let client = Legacy(init).serve(transport).await.expect("initialize");
        for i in 0..DISTINCT {
            client
                .get_prompt(GetPromptRequestParams::new(format!("legacy-{i}")))
                .await
                .expect("prompts/get");
            client
                .read_resource(ReadResourceRequestParams::new(format!("file:///l/{i}")))
                .await
                .expect("resources/read");
        }
        client.cancel().await.unwrap();
    });

    // The names are registered ones only: the router's tool and the Service's
    // prompt are there, and no prompt name or URI a client chose. (The other
    // modules of this test binary record into the same process-wide recorder, so
    // their servers' registered names may be there too, and their series.)
    let names = names();
    for registered in ["greet", server_support::common::PROMPT] {
        assert!(
            names.contains(registered),
            "{registered} is counted: {names:?}"
        );
    }
    let chosen =
        |n: &String| n.starts_with("prompt-") || n.starts_with("unknown-") || n.contains("://");
    assert!(
        !names.iter().any(chosen),
        "a client-chosen target is a label: {names:?}"
    );
    // Hundreds of distinct targets (4 x DISTINCT) added a handful of series
    // (method x outcome x code x name), not one per target.
    let added = request_series().len() - before;
    assert!(added < DISTINCT, "{added} series: {:?}", request_series());
}
