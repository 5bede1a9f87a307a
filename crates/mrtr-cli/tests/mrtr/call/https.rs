//! The client over `https://`: a test CA and a server certificate made here with
//! rcgen, a TLS server on 127.0.0.1 (tokio-rustls in front of the library's MCP
//! router), and `HttpTransport` and `mrtr call --cacert` against it: a two-round
//! flow completes with the CA trusted, and fails with a certificate error without
//! it or for the wrong host.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use mrtr::ToolResult;
use mrtr::engine::{Elicited, Engine, Form};
use mrtr::wire::{ElicitAction, ElicitResult};
use mrtr::{Keyring, Service};
use mrtr_client::{Client, ClientError, Handlers, HttpTransport, TransportError};
use mrtr_server::http::{Anonymous, HttpOptions, mcp_router};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A CA that exists only for this test run.
struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl TestCa {
    fn new(name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        Self { issuer }
    }

    fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A server certificate for `names` (DNS names or IP addresses) and its key.
    fn server_cert(&self, names: &[&str]) -> (CertificateDer<'static>, PrivateKeyDer<'static>) {
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let mut params = CertificateParams::new(names).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, "mrtr test server");
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        (cert.der().clone(), key)
    }
}

/// Accepts TCP connections and completes the TLS handshake; a client that
/// refuses the certificate ends its handshake and is skipped.
struct TlsListener {
    tcp: TcpListener,
    tls: TlsAcceptor,
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((sock, addr)) = self.tcp.accept().await else {
                continue;
            };
            let handshake = tokio::time::timeout(Duration::from_secs(5), self.tls.accept(sock));
            if let Ok(Ok(stream)) = handshake.await {
                return (stream, addr);
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}

/// A service with one two-round tool: `greet` asks a name, then greets.
fn service() -> Service {
    Service::new(
        Engine::new(Keyring::ephemeral(), "https-test"),
        "https-test",
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

/// Serves the MCP router over TLS on 127.0.0.1 with a certificate for `names`;
/// returns the port.
async fn serve_tls(ca: &TestCa, names: &[&str]) -> u16 {
    let (cert, key) = ca.server_cert(names);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap();
    let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = tcp.local_addr().unwrap().port();
    let listener = TlsListener {
        tcp,
        tls: TlsAcceptor::from(Arc::new(config)),
    };
    let app: axum::Router = mcp_router(Arc::new(service()), HttpOptions::default(), Anonymous);
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    port
}

fn answer_ada() -> Handlers {
    Handlers::new().on_elicit(|_ctx, _form| async {
        Ok(ElicitResult {
            action: ElicitAction::Accept,
            content: json!({"name": "Ada"}).as_object().cloned(),
        })
    })
}

async fn greet(transport: HttpTransport) -> Result<String, ClientError> {
    let client = Client::builder(transport)
        .with_handler(answer_ada())
        .with_request_timeout(Some(Duration::from_secs(10)))
        .build();
    let done = client.call_tool("greet", json!({})).await?;
    assert_eq!(done.rounds, 2);
    Ok(done.text())
}

fn tls_error(r: Result<String, ClientError>) -> String {
    match r {
        Err(ClientError::Transport(TransportError::Tls(msg))) => msg,
        other => panic!("expected a TLS error, got {other:?}"),
    }
}

#[tokio::test]
async fn with_the_ca_added_a_two_round_flow_completes() {
    let ca = TestCa::new("mrtr test CA");
    let port = serve_tls(&ca, &["localhost", "127.0.0.1"]).await;
    for host in ["127.0.0.1", "localhost"] {
        let url = format!("https://{host}:{port}/mcp");
        // The private CA alone.
        let only = HttpTransport::builder(&url)
            .add_root_pem(ca.pem().as_bytes())
            .unwrap()
            .platform_roots(false)
            .build()
            .unwrap();
        assert_eq!(greet(only).await.unwrap(), "Hello, Ada!", "{url}");
        // The private CA beside the system's.
        let both = HttpTransport::builder(&url)
            .add_root_pem(ca.pem().as_bytes())
            .unwrap()
            .build()
            .unwrap();
        assert_eq!(greet(both).await.unwrap(), "Hello, Ada!", "{url}");
    }
}

#[tokio::test]
async fn several_certificates_in_one_pem_are_all_roots() {
    let ca = TestCa::new("mrtr test CA");
    let other = TestCa::new("another CA");
    let port = serve_tls(&ca, &["127.0.0.1"]).await;
    let bundle = format!("{}\n{}", other.pem(), ca.pem());
    let transport = HttpTransport::builder(&format!("https://127.0.0.1:{port}/mcp"))
        .add_root_pem(bundle.as_bytes())
        .unwrap()
        .platform_roots(false)
        .build()
        .unwrap();
    assert_eq!(greet(transport).await.unwrap(), "Hello, Ada!");
}

#[tokio::test]
async fn without_the_ca_the_certificate_is_refused() {
    let ca = TestCa::new("mrtr test CA");
    let port = serve_tls(&ca, &["localhost", "127.0.0.1"]).await;
    let url = format!("https://127.0.0.1:{port}/mcp");
    // Another private CA only.
    let other = TestCa::new("another CA");
    let transport = HttpTransport::builder(&url)
        .add_root_pem(other.pem().as_bytes())
        .unwrap()
        .platform_roots(false)
        .build()
        .unwrap();
    let msg = tls_error(greet(transport).await);
    assert!(msg.contains("not signed by a trusted CA"), "{msg}");
    assert!(msg.contains("UnknownIssuer"), "{msg}");
    // The system's roots: the test CA is not among them (or there are none at all,
    // which is a TLS error before any connection).
    let msg = match HttpTransport::new(&url) {
        Ok(t) => tls_error(greet(t).await),
        Err(TransportError::Tls(msg)) => msg,
        Err(e) => panic!("{e:?}"),
    };
    assert!(
        msg.contains("not signed by a trusted CA") || msg.contains("no CA certificates"),
        "{msg}"
    );
}

#[tokio::test]
async fn a_certificate_for_another_host_is_refused() {
    let ca = TestCa::new("mrtr test CA");
    let port = serve_tls(&ca, &["mcp.example.test"]).await;
    let transport = HttpTransport::builder(&format!("https://127.0.0.1:{port}/mcp"))
        .add_root_pem(ca.pem().as_bytes())
        .unwrap()
        .platform_roots(false)
        .build()
        .unwrap();
    let msg = tls_error(greet(transport).await);
    assert!(msg.contains("not for this host"), "{msg}");
}

#[tokio::test]
async fn plain_http_to_a_tls_port_is_a_transport_error_not_a_hang() {
    let ca = TestCa::new("mrtr test CA");
    let port = serve_tls(&ca, &["127.0.0.1"]).await;
    let transport = HttpTransport::new(&format!("http://127.0.0.1:{port}/mcp")).unwrap();
    let r = tokio::time::timeout(Duration::from_secs(20), greet(transport))
        .await
        .expect("the call ends");
    assert!(matches!(r, Err(ClientError::Transport(_))), "{r:?}");
}

// ------------------------------------------------------------------ mrtr call

/// A file removed on drop.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, contents: &[u8]) -> Self {
        let path =
            std::env::temp_dir().join(format!("mrtr-client-https-{}-{name}", std::process::id()));
        std::fs::write(&path, contents).unwrap();
        Self(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// `mrtr call ARGS` as a process without a terminal: exit code, stdout, stderr.
async fn mrtr_call(args: &[&str]) -> (i32, String, String) {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_mrtr"))
        .arg("call")
        .args(args)
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
async fn mrtr_call_with_cacert_completes_and_without_it_says_why() {
    let ca = TestCa::new("mrtr test CA");
    let port = serve_tls(&ca, &["localhost", "127.0.0.1"]).await;
    let url = format!("https://127.0.0.1:{port}/mcp");
    let ca_file = TempFile::new("ca.pem", ca.pem().as_bytes());

    let (code, out, err) = mrtr_call(&[
        "--cacert",
        ca_file.path(),
        &url,
        "tool",
        "greet",
        "--answers",
        ANSWER,
        "--no-input",
    ])
    .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "Hello, Ada!");

    // Without --cacert: the system's roots do not have the test CA.
    let (code, out, err) =
        mrtr_call(&[&url, "tool", "greet", "--answers", ANSWER, "--no-input"]).await;
    assert_eq!(code, 3, "{err}");
    assert!(out.is_empty());
    assert!(err.contains("error: transport: tls: "), "{err}");
    assert!(
        err.contains("hint: ") && err.contains("--cacert FILE"),
        "{err}"
    );

    // --cacert trusts the file's CAs instead of the system's: another CA fails.
    let other = TempFile::new("other.pem", TestCa::new("another CA").pem().as_bytes());
    let (code, _, err) = mrtr_call(&[&url, "--cacert", other.path(), "tool", "greet"]).await;
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("not signed by a trusted CA"), "{err}");
}

#[tokio::test]
async fn mrtr_call_cacert_mistakes_are_usage_errors() {
    let garbage = TempFile::new("garbage.pem", b"not a certificate\n");
    let truncated = TempFile::new("truncated.pem", b"-----BEGIN CERTIFICATE-----\nMIIB\n");
    let missing = std::env::temp_dir().join("mrtr-client-https-no-such-file.pem");
    let missing = missing.to_str().unwrap();
    for (args, says) in [
        (
            vec![
                "--cacert",
                garbage.path(),
                "https://127.0.0.1:9/mcp",
                "tool",
                "x",
            ],
            "no certificate in the PEM data",
        ),
        (
            vec![
                "--cacert",
                truncated.path(),
                "https://127.0.0.1:9/mcp",
                "tool",
                "x",
            ],
            "not valid PEM",
        ),
        (
            vec!["--cacert", missing, "https://127.0.0.1:9/mcp", "tool", "x"],
            "cannot read it",
        ),
        (
            vec![
                "--cacert",
                garbage.path(),
                "http://127.0.0.1:9/mcp",
                "tool",
                "x",
            ],
            "--cacert is for https:// URLs",
        ),
        (
            vec!["ftp://127.0.0.1:9/mcp", "tool", "x"],
            "not an http:// or https:// URL",
        ),
    ] {
        let (code, out, err) = mrtr_call(&args).await;
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty());
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}
