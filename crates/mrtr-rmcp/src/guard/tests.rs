//! Unit tests of `guard`.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

/// rmcp's session manager as the guard sees it: the sessions that exist.
#[derive(Default)]
struct Live(Mutex<HashSet<String>>);

impl Sessions for Arc<Live> {
    fn exists(&self, id: SessionId) -> BoxFuture<'static, bool> {
        let found = self.0.lock().unwrap().contains(&*id);
        Box::pin(async move { found })
    }
    fn close(&self, id: SessionId) -> BoxFuture<'static, ()> {
        self.0.lock().unwrap().remove(&*id);
        Box::pin(async {})
    }
}

/// rmcp's service: opens session `s{n}` for each `initialize`, 404 for a
/// session that does not exist, 200 otherwise.
#[derive(Clone)]
struct Fake {
    live: Arc<Live>,
    calls: Arc<AtomicUsize>,
}

impl tower_service::Service<Request<Full<Bytes>>> for Fake {
    type Response = Response<Full<Bytes>>;
    type Error = std::convert::Infallible;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Full<Bytes>>) -> Self::Future {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        let mut response = Response::new(Full::new(Bytes::new()));
        match session_of(request.headers()) {
            None => {
                let id = format!("s{n}");
                self.live.0.lock().unwrap().insert(id.clone());
                response
                    .headers_mut()
                    .insert(SESSION_HEADER, HeaderValue::from_str(&id).unwrap());
            }
            Some(id) if !self.live.0.lock().unwrap().contains(&*id) => {
                *response.status_mut() = StatusCode::NOT_FOUND;
            }
            Some(_) => {}
        }
        Box::pin(async move { Ok(response) })
    }
}

fn guarded(max_sessions: usize) -> (Guarded<Fake>, Arc<Live>, Arc<AtomicUsize>) {
    let live = Arc::new(Live::default());
    let calls = Arc::new(AtomicUsize::new(0));
    let guard = HttpGuard {
        principals: Owners(Principals::from_http(|parts: &http::request::Parts| {
            let user = parts.headers.get("x-user")?.to_str().ok()?;
            Some(Principal::subject(user))
        })),
        sessions: Arc::new(Arc::clone(&live)),
        max_sessions,
        max_body: mrtr::defaults::MAX_BODY,
        body_timeout: DEFAULT_BODY_TIMEOUT,
    }
    .with_max_sessions(max_sessions);
    let fake = Fake {
        live: Arc::clone(&live),
        calls: Arc::clone(&calls),
    };
    (guard.wrap(fake), live, calls)
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;

async fn send(
    service: &mut Guarded<Fake>,
    user: &str,
    session: Option<&str>,
    body: &str,
) -> Response<Either<Full<Bytes>, Full<Bytes>>> {
    let mut request = Request::post("/mcp")
        .header(header::CONTENT_TYPE, "application/json")
        .header("x-user", user);
    if let Some(id) = session {
        request = request.header(SESSION_HEADER, id);
    }
    let request = request
        .body(Full::new(Bytes::from(body.to_owned())))
        .unwrap();
    tower_service::Service::call(service, request)
        .await
        .unwrap()
}

fn session(response: &Response<Either<Full<Bytes>, Full<Bytes>>>) -> Option<String> {
    session_of(response.headers()).map(|id| id.to_string())
}

#[tokio::test]
async fn a_session_serves_only_the_principal_that_opened_it() {
    let (mut service, _, calls) = guarded(10);
    let opened = send(&mut service, "alice", None, INITIALIZE).await;
    let id = session(&opened).expect("a session");
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    let answer = r#"{"jsonrpc":"2.0","id":0,"result":{}}"#;
    assert_eq!(
        send(&mut service, "alice", Some(&id), answer)
            .await
            .status(),
        200
    );
    let before = calls.load(Ordering::SeqCst);
    for body in [ping, answer] {
        let r = send(&mut service, "bob", Some(&id), body).await;
        assert_eq!(r.status(), StatusCode::NOT_FOUND);
    }
    // Bob's requests never reached rmcp.
    assert_eq!(calls.load(Ordering::SeqCst), before);
    // An answer on a session the guard never bound is refused too; a
    // request goes on (rmcp answers it as it does).
    let r = send(&mut service, "alice", Some("forged"), answer).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert_eq!(calls.load(Ordering::SeqCst), before);
    let r = send(&mut service, "alice", Some("forged"), ping).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert_eq!(calls.load(Ordering::SeqCst), before + 1);
}

#[tokio::test]
async fn the_bindings_are_bounded_and_dropped_with_their_sessions() {
    let (mut service, live, calls) = guarded(2);
    let a = session(&send(&mut service, "alice", None, INITIALIZE).await).unwrap();
    let b = session(&send(&mut service, "bob", None, INITIALIZE).await).unwrap();
    assert_eq!(service.shared.bindings.len(), 2);
    // Full of live sessions: a new one is refused before rmcp opens it.
    let before = calls.load(Ordering::SeqCst);
    let r = send(&mut service, "carol", None, INITIALIZE).await;
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(r.headers()[header::RETRY_AFTER], "1");
    assert!(session(&r).is_none());
    assert_eq!(calls.load(Ordering::SeqCst), before);
    // rmcp answers 404 for a session that ended: its binding goes.
    live.0.lock().unwrap().remove(&a);
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    assert_eq!(
        send(&mut service, "alice", Some(&a), ping).await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(service.shared.bindings.len(), 1);
    let c = session(&send(&mut service, "carol", None, INITIALIZE).await).unwrap();
    // A session that idled out in rmcp without a word: dropped by the sweep
    // once the map is full.
    live.0.lock().unwrap().remove(&b);
    tokio::time::pause();
    tokio::time::advance(SWEEP_INTERVAL).await;
    let d = send(&mut service, "dave", None, INITIALIZE).await;
    assert!(session(&d).is_some(), "{:?}", d.status());
    assert!(service.shared.bindings.owner(&b).is_none());
    assert!(service.shared.bindings.owner(&c).is_some());
    assert_eq!(service.shared.bindings.len(), 2);
}

#[tokio::test]
async fn a_duplicate_key_is_the_core_parse_error() {
    let (mut service, _, calls) = guarded(10);
    let body = r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#;
    let r = send(&mut service, "alice", None, body).await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let bytes = r.into_body().collect().await.unwrap().to_bytes();
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}})
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[test]
fn owners_differ_by_every_field_and_never_collide_by_concatenation() {
    let a = Owner::of(&Principal::subject("ab"));
    assert!(a == Owner::of(&Principal::subject("ab")));
    assert!(a != Owner::of(&Principal::subject("a").with_issuer("b")));
    assert!(a != Owner::of(&Principal::subject("ab").with_client_id("")));
    assert!(a != Owner::of(&Principal::anonymous()));
}
