//! `mrtr_server::oauth`: the resource server in front of the real router, over
//! a loopback socket, with tokens signed here by two test-only Ed25519 keys (the
//! real authorization server is node-oidc-provider, in `.ci/run`'s OAuth step).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::routing::get;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mrtr::{Confirmation, Engine, Flow, Keyring, Round, Service, ToolResult};
use mrtr_server::http::{FromExtension, HttpOptions, standalone_router};
use mrtr_server::oauth::{ResourceServer, ResourceServerConfig};
use mrtr_testkit::{
    accept, assert_frozen_state_response, borrow, complete_text, headers_for, request, retry,
    state_of, tool_call,
};
use serde_json::{Value, json};

/// Test-only keys (PKCS#8 DER, hex) and their public halves (JWK `x`).
const KEY_A: &str = "302e020100300506032b6570042204207e63da30df2190c18b2418a47ed200a705ec835b66dd7a630f4e3b95ebf95910";
const KEY_A_X: &str = "zMUeVR4jyJVzJmOkxn0WGKTO3UJAzneoYSeP0Oi1PE0";
const KEY_B: &str = "302e020100300506032b6570042204203d4729a147d86fba3d9ae88bc7d3cc13fd209d2bf111ba8a5e4cde4a663a9628";
const KEY_B_X: &str = "ETEo-UGdxFn7-WSVOhVVr_QbTXv9waQI5Jy-0OH4Pco";

const ISSUER: &str = "http://127.0.0.1:9/issuer";

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn jwk(kid: &str, x: &str) -> Value {
    json!({"kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid, "use": "sig", "alg": "EdDSA"})
}

fn jwks(keys: &[Value]) -> JwkSet {
    serde_json::from_value(json!({"keys": keys})).unwrap()
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A token signed by `key` (hex DER) under `kid`, with `claims` over the defaults
/// (alice of [`ISSUER`] for `audience`, valid for five minutes, scope `mcp`).
fn token(key: &str, kid: &str, audience: &str, claims: Value) -> String {
    token_typ(key, kid, audience, claims, Some("at+jwt"))
}

/// [`token`] with the header's `typ` (`None`: no `typ`).
fn token_typ(key: &str, kid: &str, audience: &str, claims: Value, typ: Option<&str>) -> String {
    let mut c = json!({
        "iss": ISSUER, "sub": "alice", "aud": audience,
        "iat": now(), "exp": now() + 300, "scope": "mcp", "client_id": "app",
    });
    for (k, v) in claims.as_object().unwrap() {
        if v.is_null() {
            c.as_object_mut().unwrap().remove(k);
        } else {
            c[k] = v.clone();
        }
    }
    let mut h = Header::new(Algorithm::EdDSA);
    h.kid = Some(kid.into());
    h.typ = typ.map(str::to_owned);
    jsonwebtoken::encode(&h, &c, &EncodingKey::from_ed_der(&unhex(key))).unwrap()
}

/// Two tools: `echo`, and `deploy`, which asks to confirm (and needs `mcp:admin`).
fn service() -> Arc<Service> {
    async fn deploy(round: Round) -> Result<ToolResult, Flow> {
        match round.confirm("confirm", "Deploy?")? {
            Confirmation::Accepted => Ok(ToolResult::text("deployed")),
            _ => Ok(ToolResult::text("not deployed")),
        }
    }
    Arc::new(
        Service::new(
            Engine::new(Keyring::ephemeral(), "oauth-test"),
            "oauth",
            "0",
        )
        .tool("echo", "Echoes.", json!({"type": "object"}), |_round| {
            Ok(ToolResult::text("echoed"))
        })
        .tool("deploy", "Deploys.", json!({"type": "object"}), deploy),
    )
}

/// A server (or the issuer stub) on a loopback port, on a runtime of its own.
struct Running {
    addr: SocketAddr,
    _runtime: tokio::runtime::Runtime,
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

fn serve_on(
    runtime: tokio::runtime::Runtime,
    listener: std::net::TcpListener,
    app: Router,
) -> Running {
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    runtime.spawn(async move {
        let listener = tokio::net::TcpListener::from_std(listener).unwrap();
        axum::serve(listener, app).await
    });
    Running {
        addr,
        _runtime: runtime,
    }
}

/// The MCP server behind `oauth`, on a port bound before `oauth` was made (its
/// audience names that port).
fn protected(listener: std::net::TcpListener, oauth: &ResourceServer) -> Running {
    let app = oauth.protect(standalone_router(
        service(),
        HttpOptions::default(),
        FromExtension,
    ));
    serve_on(runtime(), listener, app)
}

fn bind() -> (std::net::TcpListener, String) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let audience = format!("http://{}/mcp", l.local_addr().unwrap());
    (l, audience)
}

/// POSTs `body` with `token` (if any); the status, `WWW-Authenticate` and body.
fn post(addr: SocketAddr, token: Option<&str>, body: &Value) -> (u16, Option<String>, Value) {
    let mut h = headers_for(body);
    h.push(("Content-Type".into(), "application/json".into()));
    h.push((
        "Accept".into(),
        "application/json, text/event-stream".into(),
    ));
    if let Some(t) = token {
        h.push(("Authorization".into(), format!("Bearer {t}")));
    }
    let r = request(
        addr,
        "POST",
        "/mcp",
        &borrow(&h),
        body.to_string().as_bytes(),
    );
    let v = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
    (r.status, r.header("www-authenticate").map(str::to_owned), v)
}

/// Every `mrtr::request` log line written in this test binary.
fn log() -> &'static Mutex<Vec<u8>> {
    static LOG: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOG.get_or_init(|| {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let writer = buf.clone();
        let _ = tracing_subscriber::fmt()
            .with_env_filter("mrtr::request=info,mrtr::oauth=info")
            .with_writer(move || Writer(writer.clone()))
            .with_ansi(false)
            .try_init();
        buf
    })
}

struct Writer(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Writer {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn tokens_are_checked_and_refusals_say_only_what_a_client_acts_on() {
    log();
    let (listener, audience) = bind();
    let config = ResourceServerConfig::new(ISSUER, &audience)
        .unwrap()
        .with_skew(Duration::from_secs(30))
        .with_tool_scope("deploy", "mcp:admin");
    let oauth = ResourceServer::with_keys(config, &jwks(&[jwk("a", KEY_A_X)])).unwrap();
    let server = protected(listener, &oauth);
    let addr = server.addr;
    let echo = tool_call(1, "echo", None);
    let good = token(KEY_A, "a", &audience, json!({}));

    // No token: 401 naming the metadata, which is served without one.
    let (status, challenge, body) = post(addr, None, &echo);
    assert_eq!(status, 401);
    let metadata_url = format!("http://{addr}/.well-known/oauth-protected-resource/mcp");
    assert_eq!(
        challenge.as_deref(),
        Some(format!("Bearer resource_metadata=\"{metadata_url}\"").as_str())
    );
    assert_eq!(body["error"]["code"], -32600, "{body}");
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let r = request(addr, "GET", path, &[], b"");
        assert_eq!(r.status, 200, "{path}");
        let doc: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(doc["resource"], audience.as_str());
        assert_eq!(doc["authorization_servers"], json!([ISSUER]));
        assert_eq!(doc["scopes_supported"], json!(["mcp:admin"]));
    }

    // A good token: served.
    let (status, _, body) = post(addr, Some(&good), &echo);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["content"][0]["text"], "echoed", "{body}");

    // Each bad token: 401 invalid_token, and the same body whatever the reason.
    let t = now();
    let hs256 = jsonwebtoken::encode(
        &Header {
            kid: Some("a".into()),
            ..Header::new(Algorithm::HS256)
        },
        &json!({"iss": ISSUER, "sub": "alice", "aud": audience, "exp": t + 300}),
        &EncodingKey::from_secret(KEY_A_X.as_bytes()).unwrap(),
    )
    .unwrap();
    let bad = [
        (
            "expired",
            token(KEY_A, "a", &audience, json!({"exp": t - 31})),
        ),
        (
            "not yet valid",
            token(KEY_A, "a", &audience, json!({"nbf": t + 120})),
        ),
        (
            "another audience",
            token(KEY_A, "a", "http://127.0.0.1:1/other", json!({})),
        ),
        (
            "another issuer",
            token(
                KEY_A,
                "a",
                &audience,
                json!({"iss": "http://127.0.0.1:9/evil"}),
            ),
        ),
        ("no sub", token(KEY_A, "a", &audience, json!({"sub": null}))),
        ("no exp", token(KEY_A, "a", &audience, json!({"exp": null}))),
        (
            "another key, same kid",
            token(KEY_B, "a", &audience, json!({})),
        ),
        ("an unknown kid", token(KEY_B, "b", &audience, json!({}))),
        ("HS256 with the public key as secret", hs256),
        ("not a JWT", "s3cret-opaque".to_owned()),
    ];
    for (why, t) in &bad {
        let (status, challenge, body) = post(addr, Some(t), &echo);
        assert_eq!(status, 401, "{why}");
        assert_eq!(
            challenge.as_deref(),
            Some(
                format!("Bearer resource_metadata=\"{metadata_url}\", error=\"invalid_token\"")
                    .as_str()
            ),
            "{why}"
        );
        assert_eq!(
            body,
            json!({"jsonrpc": "2.0", "error": {"code": -32600, "message": "Unauthorized"}}),
            "{why}"
        );
    }
    // Within the skew, an expired token still passes.
    let lenient = token(KEY_A, "a", &audience, json!({"exp": t - 5}));
    assert_eq!(post(addr, Some(&lenient), &echo).0, 200);

    // deploy needs mcp:admin: 403 naming it; echo does not.
    let deploy = tool_call(2, "deploy", None);
    let (status, challenge, _) = post(addr, Some(&good), &deploy);
    assert_eq!(status, 403);
    assert!(
        challenge
            .as_deref()
            .is_some_and(|c| c.ends_with(r#"error="insufficient_scope", scope="mcp:admin""#)),
        "{challenge:?}"
    );
    let admin = token(KEY_A, "a", &audience, json!({"scope": "mcp mcp:admin"}));
    let (status, _, body) = post(addr, Some(&admin), &deploy);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["resultType"], "input_required", "{body}");

    // The reasons are in the private log, no token is.
    let log = String::from_utf8(log().lock().unwrap().clone()).unwrap();
    for why in [
        "oauth: expired",
        "oauth: another audience",
        "oauth: bad signature",
        "oauth: not a JWT",
        "the tool needs a scope",
    ] {
        assert!(log.contains(why), "{why} not in the log");
    }
    for (_, t) in &bad {
        assert!(
            !log.contains(t.as_str()) && !log.contains("s3cret"),
            "a token in the log"
        );
    }
    assert!(!log.contains(&good) && !log.contains(&admin));
}

/// The MCP server behind `oauth` with the transport's `options` and `service`.
fn protected_with(
    listener: std::net::TcpListener,
    oauth: &ResourceServer,
    service: Arc<Service>,
    options: HttpOptions,
) -> Running {
    let app = oauth.protect(standalone_router(service, options, FromExtension));
    serve_on(runtime(), listener, app)
}

/// Sends a request head declaring `declared` bytes, then `sent` and nothing
/// more (the connection stays open); the status line of the answer and how
/// long it took.
fn stall(addr: SocketAddr, token: &str, declared: usize, sent: &[u8]) -> (String, Duration) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n\
         Authorization: Bearer {token}\r\nContent-Length: {declared}\r\n\
         Connection: close\r\n\r\n"
    );
    let started = std::time::Instant::now();
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(sent).unwrap();
    let mut reply = Vec::new();
    let mut byte = [0u8; 1];
    while !reply.ends_with(b"\r\n") {
        match s.read(&mut byte) {
            Ok(1) => reply.push(byte[0]),
            _ => break,
        }
    }
    (
        String::from_utf8_lossy(&reply).into_owned(),
        started.elapsed(),
    )
}

/// A token that lacks a tool's scope gets no read of its own: its body meets
/// the transport's limits (declared size, body time) like any other, and the
/// scope is checked on the transport's parse. (The OAuth layer used to read up
/// to 1 MiB for 10 s first: these bodies got a 400 after 10 s.)
#[test]
fn a_token_lacking_a_tool_scope_meets_the_transports_limits_first() {
    let (listener, audience) = bind();
    let config = ResourceServerConfig::new(ISSUER, &audience)
        .unwrap()
        .with_tool_scope("deploy", "mcp:admin");
    let oauth = ResourceServer::with_keys(config, &jwks(&[jwk("a", KEY_A_X)])).unwrap();
    let options = HttpOptions::default()
        .with_max_body(64 * 1024)
        .with_body_timeout(Duration::from_secs(1));
    let server = protected_with(listener, &oauth, service(), options);
    let addr = server.addr;
    let low = token(KEY_A, "a", &audience, json!({}));

    // Declared over the transport's limit (but under the old 1 MiB read): 413
    // at once, before a byte of the body is read.
    let (status, took) = stall(addr, &low, 64 * 1024 + 1, b"{");
    assert!(status.starts_with("HTTP/1.1 413"), "{status}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    // Sent over the limit without a declared length: also the transport's 413.
    let (status, _, body) = post(
        addr,
        Some(&low),
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "deploy", "pad": "a".repeat(64 * 1024)}}),
    );
    assert_eq!(status, 413, "{body}");
    // A body that stalls: the transport's 408 after its body time, not a read
    // held by the OAuth layer.
    let (status, took) = stall(addr, &low, 100, b"{\"jsonrpc\"");
    assert!(status.starts_with("HTTP/1.1 408"), "{status}");
    assert!(took < Duration::from_secs(5), "{took:?}");

    // Within the limits, the scope is still checked on the parsed request:
    // deploy needs mcp:admin, echo does not.
    let (status, challenge, body) = post(addr, Some(&low), &tool_call(1, "deploy", None));
    assert_eq!(status, 403, "{body}");
    assert!(
        challenge
            .as_deref()
            .is_some_and(|c| c.ends_with(r#"error="insufficient_scope", scope="mcp:admin""#)),
        "{challenge:?}"
    );
    assert_eq!(
        body,
        json!({"jsonrpc": "2.0", "error": {"code": -32600, "message": "Forbidden"}})
    );
    let (status, _, body) = post(addr, Some(&low), &tool_call(2, "echo", None));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["content"][0]["text"], "echoed", "{body}");
}

/// What the transport cannot read as one request never reaches a tool, so
/// nothing passes the scope check unchecked; and the scope check reads the
/// tool the service would run, escapes and all.
#[test]
fn a_body_the_scope_check_cannot_read_is_refused_and_deploy_never_runs() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static DEPLOYED: AtomicUsize = AtomicUsize::new(0);
    let service = Arc::new(
        Service::new(
            Engine::new(Keyring::ephemeral(), "oauth-test"),
            "oauth",
            "0",
        )
        .tool("echo", "Echoes.", json!({"type": "object"}), |_round| {
            Ok(ToolResult::text("echoed"))
        })
        .tool("deploy", "Deploys.", json!({"type": "object"}), |_round| {
            DEPLOYED.fetch_add(1, Ordering::SeqCst);
            Ok(ToolResult::text("deployed"))
        }),
    );
    let (listener, audience) = bind();
    let config = ResourceServerConfig::new(ISSUER, &audience)
        .unwrap()
        .with_tool_scope("deploy", "mcp:admin");
    let oauth = ResourceServer::with_keys(config, &jwks(&[jwk("a", KEY_A_X)])).unwrap();
    let server = protected_with(listener, &oauth, service, HttpOptions::default());
    let low = token(KEY_A, "a", &audience, json!({}));
    let send = |body: &str| {
        let call = tool_call(1, "deploy", None);
        let mut h = headers_for(&call);
        h.push(("Content-Type".into(), "application/json".into()));
        h.push((
            "Accept".into(),
            "application/json, text/event-stream".into(),
        ));
        h.push(("Authorization".into(), format!("Bearer {low}")));
        let r = request(server.addr, "POST", "/mcp", &borrow(&h), body.as_bytes());
        let v: Value = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
        (r.status, v)
    };
    let call = tool_call(1, "deploy", None).to_string();
    let inner = call
        .strip_prefix('{')
        .and_then(|c| c.strip_suffix('}'))
        .unwrap()
        .to_owned();
    let cases = [
        // Read by the transport as a request for deploy: 403.
        (
            "escaped name",
            call.replace("\"deploy\"", "\"\\u0064eploy\""),
            403,
        ),
        (
            "escaped method",
            call.replace("tools/call", "tools\\/call"),
            403,
        ),
        // Not one unambiguous request: the transport's 400 (parse, batch).
        (
            "duplicate name",
            call.replace(
                "\"name\":\"deploy\"",
                "\"name\":\"echo\",\"name\":\"deploy\"",
            ),
            400,
        ),
        (
            "duplicate method",
            format!("{{\"method\":\"ping\",{inner}}}"),
            400,
        ),
        ("batch", format!("[{call}]"), 400),
        ("trailing data", format!("{call} {{}}"), 400),
        ("not JSON", format!("{call}x"), 400),
        ("a BOM", format!("\u{feff}{call}"), 400),
    ];
    for (why, body, expected) in &cases {
        let (status, v) = send(body);
        assert_eq!(status, *expected, "{why}: {v}");
    }
    assert_eq!(DEPLOYED.load(Ordering::SeqCst), 0, "deploy ran");
    // With the scope, the same tool runs: the counter works.
    let admin = token(KEY_A, "a", &audience, json!({"scope": "mcp mcp:admin"}));
    let (status, _, v) = post(server.addr, Some(&admin), &tool_call(1, "deploy", None));
    assert_eq!(status, 200, "{v}");
    assert_eq!(DEPLOYED.load(Ordering::SeqCst), 1);
}

/// RFC 9068 section 4: an access token says `typ: at+jwt`; any other JWT of the
/// issuer for this audience (an ID token, a logout token) is refused, unless
/// the server names the issuer's other `typ`.
#[test]
fn only_access_tokens_pass_unless_another_typ_is_named() {
    log();
    let (listener, audience) = bind();
    let config = ResourceServerConfig::new(ISSUER, &audience).unwrap();
    let oauth = ResourceServer::with_keys(config, &jwks(&[jwk("a", KEY_A_X)])).unwrap();
    let server = protected(listener, &oauth);
    let echo = tool_call(1, "echo", None);
    let t = |typ: Option<&str>| token_typ(KEY_A, "a", &audience, json!({}), typ);
    for typ in [
        "at+jwt",
        "application/at+jwt",
        "AT+JWT",
        "Application/At+JWT",
    ] {
        let (status, _, body) = post(server.addr, Some(&t(Some(typ))), &echo);
        assert_eq!(status, 200, "{typ}: {body}");
    }
    let id_token = token_typ(
        KEY_A,
        "a",
        &audience,
        json!({"azp": audience, "nonce": "n", "auth_time": now()}),
        Some("JWT"),
    );
    let refused = [
        ("typ JWT", t(Some("JWT"))),
        ("no typ", t(None)),
        ("typ application/jwt", t(Some("application/jwt"))),
        ("an ID token", id_token),
    ];
    for (why, token) in &refused {
        let (status, challenge, body) = post(server.addr, Some(token), &echo);
        assert_eq!(status, 401, "{why}: {body}");
        assert!(
            challenge
                .as_deref()
                .is_some_and(|c| c.ends_with(r#"error="invalid_token""#)),
            "{why}: {challenge:?}"
        );
        assert_eq!(
            body,
            json!({"jsonrpc": "2.0", "error": {"code": -32600, "message": "Unauthorized"}}),
            "{why}"
        );
    }
    let log = String::from_utf8(log().lock().unwrap().clone()).unwrap();
    assert!(log.contains("oauth: not an access token: typ"), "{log}");
    for (_, token) in &refused {
        assert!(!log.contains(token.as_str()), "a token in the log");
    }

    // An issuer that sends `JWT` (Keycloak, Entra ID): named, it passes; a
    // token without a typ still does not.
    let (listener, audience) = bind();
    let config = ResourceServerConfig::new(ISSUER, &audience)
        .unwrap()
        .with_accepted_typ("JWT");
    let oauth = ResourceServer::with_keys(config, &jwks(&[jwk("a", KEY_A_X)])).unwrap();
    let server = protected(listener, &oauth);
    let t = |typ: Option<&str>| token_typ(KEY_A, "a", &audience, json!({}), typ);
    assert_eq!(post(server.addr, Some(&t(Some("JWT"))), &echo).0, 200);
    assert_eq!(post(server.addr, Some(&t(Some("at+jwt"))), &echo).0, 200);
    assert_eq!(post(server.addr, Some(&t(None)), &echo).0, 401);
    assert_eq!(post(server.addr, Some(&t(Some("id+jwt"))), &echo).0, 401);
}

#[test]
fn a_state_opens_only_for_the_subject_it_was_issued_to() {
    let (listener, audience) = bind();
    let config = ResourceServerConfig::new(ISSUER, &audience).unwrap();
    let oauth = ResourceServer::with_keys(config, &jwks(&[jwk("a", KEY_A_X)])).unwrap();
    let server = protected(listener, &oauth);
    let alice = token(KEY_A, "a", &audience, json!({}));
    let bob = token(KEY_A, "a", &audience, json!({"sub": "bob"}));

    let first = tool_call(1, "deploy", None);
    let (_, _, v) = post(server.addr, Some(&alice), &first);
    let state = state_of(&v);
    let answers = Some(json!({"confirm": accept(json!({"confirm": true}))}));
    let again = retry(&first, 2, answers.clone(), &state);
    // Bob presents alice's state: the frozen -32602 (HTTP 400, the status table's).
    let (status, _, v) = post(server.addr, Some(&bob), &again);
    assert_eq!(status, 400, "{v}");
    assert_frozen_state_response(&v);
    // Alice finishes.
    let (_, _, v) = post(
        server.addr,
        Some(&alice),
        &retry(&first, 3, answers, &state),
    );
    assert_eq!(complete_text(&v), "deployed");
}

#[test]
fn discovery_reads_the_metadata_and_an_unknown_kid_fetches_the_keys_again() {
    // The issuer: RFC 8414 metadata and a JWKS that gains key b later.
    let issuer_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let issuer = format!("http://{}", issuer_listener.local_addr().unwrap());
    let keys = Arc::new(Mutex::new(vec![jwk("a", KEY_A_X)]));
    let fetches = Arc::new(Mutex::new(0u32));
    let (k, f) = (keys.clone(), fetches.clone());
    let meta = json!({"issuer": issuer, "jwks_uri": format!("{issuer}/jwks")});
    let stub = Router::new()
        .route(
            "/.well-known/oauth-authorization-server",
            get(move || {
                let m = meta.clone();
                async move { axum::Json(m) }
            }),
        )
        .route(
            "/jwks",
            get(move || {
                *f.lock().unwrap() += 1;
                let ks = k.lock().unwrap().clone();
                async move { axum::Json(json!({"keys": ks})) }
            }),
        );
    let _issuer = serve_on(runtime(), issuer_listener, stub);

    let (listener, audience) = bind();
    let rt = runtime();
    let config = ResourceServerConfig::new(&issuer, &audience).unwrap();
    let http = rt
        .block_on(async {
            mrtr_client::HttpClient::builder()
                .platform_roots(false)
                .build()
        })
        .unwrap();
    let oauth = rt.block_on(ResourceServer::discover(config, http)).unwrap();
    let server = serve_on(
        rt,
        listener,
        oauth.protect(standalone_router(
            service(),
            HttpOptions::default(),
            FromExtension,
        )),
    );
    assert_eq!(*fetches.lock().unwrap(), 1);
    let echo = tool_call(1, "echo", None);
    let claims = json!({"iss": issuer});
    assert_eq!(
        post(
            server.addr,
            Some(&token(KEY_A, "a", &audience, claims.clone())),
            &echo
        )
        .0,
        200
    );

    // The issuer rotates to key b: the first token under the new kid fetches again.
    keys.lock().unwrap().push(jwk("b", KEY_B_X));
    assert_eq!(
        post(
            server.addr,
            Some(&token(KEY_B, "b", &audience, claims.clone())),
            &echo
        )
        .0,
        200
    );
    assert_eq!(*fetches.lock().unwrap(), 2);
    // Another unknown kid within the minute: refused without a fetch.
    assert_eq!(
        post(
            server.addr,
            Some(&token(KEY_B, "c", &audience, claims)),
            &echo
        )
        .0,
        401
    );
    assert_eq!(*fetches.lock().unwrap(), 2);

    // Metadata naming another issuer is refused at start.
    let rt = runtime();
    let other = ResourceServerConfig::new(&format!("{issuer}/"), &audience).unwrap();
    let http = rt
        .block_on(async {
            mrtr_client::HttpClient::builder()
                .platform_roots(false)
                .build()
        })
        .unwrap();
    let e = rt
        .block_on(ResourceServer::discover(other, http))
        .unwrap_err();
    assert!(
        e.to_string().contains("another issuer") || e.to_string().contains("metadata"),
        "{e}"
    );
}

/// The issuer's `jwks_uri` passes the one URL policy: with an issuer on plain
/// http on loopback, only its own origin may serve the keys over plain http;
/// another port, a loopback name it was not given, or a remote host over plain
/// http stop the start, before anything is fetched from there.
#[test]
fn a_jwks_uri_the_url_policy_refuses_stops_the_start() {
    use mrtr_server::oauth::OAuthSetupError;
    // Another loopback port that would serve the right keys, counting fetches.
    let other_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other = other_listener.local_addr().unwrap();
    let stolen = Arc::new(Mutex::new(0u32));
    let s = stolen.clone();
    let _other = serve_on(
        runtime(),
        other_listener,
        Router::new().route(
            "/jwks",
            get(move || {
                *s.lock().unwrap() += 1;
                async move { axum::Json(json!({"keys": [jwk("a", KEY_A_X)]})) }
            }),
        ),
    );
    let issuer_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = issuer_listener.local_addr().unwrap().port();
    let issuer = format!("http://127.0.0.1:{port}");
    let jwks_uri = Arc::new(Mutex::new(String::new()));
    let (meta_issuer, named) = (issuer.clone(), jwks_uri.clone());
    let stub = Router::new()
        .route(
            "/.well-known/oauth-authorization-server",
            get(move || {
                let m = json!({"issuer": meta_issuer, "jwks_uri": *named.lock().unwrap()});
                async move { axum::Json(m) }
            }),
        )
        .route(
            "/jwks",
            get(|| async { axum::Json(json!({"keys": [jwk("a", KEY_A_X)]})) }),
        );
    let _issuer = serve_on(runtime(), issuer_listener, stub);
    let (_listener, audience) = bind();
    let rt = runtime();
    let discover = |uri: String| {
        *jwks_uri.lock().unwrap() = uri;
        let config = ResourceServerConfig::new(&issuer, &audience).unwrap();
        rt.block_on(async {
            let http = mrtr_client::HttpClient::builder()
                .platform_roots(false)
                .build()
                .unwrap();
            ResourceServer::discover(config, http).await
        })
    };
    for (why, uri) in [
        ("another loopback port", format!("http://{other}/jwks")),
        ("a loopback name", format!("http://0x7f000001:{port}/jwks")),
        (
            "localhost, not the issuer's",
            format!("http://localhost:{port}/jwks"),
        ),
        (
            "a remote host over http",
            "http://auth.example/jwks".to_owned(),
        ),
        ("not http", format!("file:///{port}/jwks")),
    ] {
        let e = discover(uri).expect_err(why);
        assert!(matches!(e, OAuthSetupError::Refused(_)), "{why}: {e:?}");
        let text = e.to_string();
        assert!(
            text.starts_with("the issuer's jwks_uri") && text.contains("is refused"),
            "{why}: {text}"
        );
        assert!(!text.contains("/jwks"), "{why}: the path in {text}");
    }
    assert_eq!(*stolen.lock().unwrap(), 0, "the keys were fetched");
    // The issuer's own origin serves them.
    assert!(discover(format!("{issuer}/jwks")).is_ok());
}
