//! The loopback redirect listener of a native app (RFC 8252 sections 7.3 and
//! 8.3): `http://127.0.0.1:PORT/callback`, bound on the loopback interface only,
//! waiting for the one redirect that carries this login's `state`.
//!
//! Anything on the machine can connect to it, so it serves connections
//! concurrently (a few idle ones delay nothing), answers a request for this
//! login only when its `state` is the one sent (any other is answered with a
//! page and ignored: a forged redirect cannot end the login), and closes once
//! the real redirect came. The redirect's `iss` (RFC 9207) must be the issuer
//! the login was sent to, which is the client's defence against a mix-up: an
//! authorization server that sends the browser on to another one cannot get
//! that one's code redeemed at its own token endpoint.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use crate::TransportError;

/// The path the authorization server redirects to.
const CALLBACK: &str = "/callback";

/// The most of a request head read (bytes).
const MAX_HEAD: usize = 16 * 1024;

/// How long one connection may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(5);

/// The most connections served at once; more are closed at once.
const MAX_CONNECTIONS: usize = 64;

/// A bound listener and its redirect URI.
pub(super) struct Loopback {
    listener: TcpListener,
    redirect_uri: String,
}

/// What the redirect of one login attempt must carry.
#[derive(Debug, Clone)]
pub(super) struct Expected {
    /// The `state` sent in the authorization request.
    pub(super) state: String,
    /// The issuer the authorization request was sent to.
    pub(super) issuer: String,
    /// Whether that issuer's metadata says it sends `iss` (RFC 9207 section 3).
    pub(super) iss_required: bool,
}

fn unauthorized(why: impl Into<String>) -> TransportError {
    TransportError::Unauthorized(why.into())
}

impl Loopback {
    /// Binds `127.0.0.1` on a free port.
    pub(super) async fn bind() -> Result<Self, TransportError> {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|e| unauthorized(format!("cannot listen for the login redirect: {e}")))?;
        let port = listener
            .local_addr()
            .map_err(|e| unauthorized(format!("the redirect listener: {e}")))?
            .port();
        Ok(Self {
            listener,
            redirect_uri: format!("http://127.0.0.1:{port}{CALLBACK}"),
        })
    }

    pub(super) fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    /// Waits up to `timeout` for the redirect of the login `expected` describes,
    /// and gives its authorization code; other requests (a browser's
    /// `/favicon.ico`, a redirect with another `state`) are answered and the
    /// wait goes on. Consumes the listener: it closes when the wait ends.
    ///
    /// # Errors
    /// [`TransportError::Unauthorized`]: no redirect within `timeout`; the
    /// authorization server refused the login; the redirect came from another
    /// issuer than the one the login was sent to (a mix-up), or without the
    /// `iss` that issuer promised.
    pub(super) async fn wait(
        self,
        timeout: Duration,
        expected: Expected,
    ) -> Result<String, TransportError> {
        let redirect_uri = self.redirect_uri.clone();
        tokio::time::timeout(timeout, self.accept_callback(Arc::new(expected)))
            .await
            .map_err(|_| {
                unauthorized(format!(
                    "no login within {} s (the browser never came back to {redirect_uri})",
                    timeout.as_secs(),
                ))
            })?
    }

    async fn accept_callback(self, expected: Arc<Expected>) -> Result<String, TransportError> {
        let mut connections = JoinSet::new();
        loop {
            tokio::select! {
                accepted = self.listener.accept() => {
                    let Ok((socket, _)) = accepted else { continue };
                    if connections.len() < MAX_CONNECTIONS {
                        connections.spawn(serve(socket, Arc::clone(&expected)));
                    }
                }
                Some(done) = connections.join_next(), if !connections.is_empty() => {
                    if let Ok(Some(outcome)) = done {
                        return outcome;
                    }
                }
            }
        }
    }
}

/// Compares two secrets without stopping at the first difference.
fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// A plain OAuth error code, or a neutral word: nothing else from the request is
/// repeated.
fn error_code(e: &str) -> String {
    if !e.is_empty() && e.len() <= 64 && e.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        e.to_owned()
    } else {
        "an error".into()
    }
}

/// The redirect's parameters; `None` when one of them appears twice (which no
/// authorization server sends).
struct Params {
    code: Option<String>,
    state: Option<String>,
    iss: Option<String>,
    error: Option<String>,
}

fn params(query: &str) -> Option<Params> {
    let mut p = Params {
        code: None,
        state: None,
        iss: None,
        error: None,
    };
    for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
        let slot = match &*k {
            "code" => &mut p.code,
            "state" => &mut p.state,
            "iss" => &mut p.iss,
            "error" => &mut p.error,
            _ => continue,
        };
        if slot.replace(v.into_owned()).is_some() {
            return None;
        }
    }
    Some(p)
}

/// Serves one connection: `None` when it was not this login's redirect (it was
/// answered, and the wait goes on), else how the login ends.
async fn serve(
    mut socket: tokio::net::TcpStream,
    expected: Arc<Expected>,
) -> Option<Result<String, TransportError>> {
    let head = tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut socket))
        .await
        .ok()??;
    let target = head
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("GET "))
        .and_then(|l| l.split(' ').next())
        .unwrap_or("");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    if path != CALLBACK {
        let _ = socket
            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            .await;
        return None;
    }
    let ours = params(query).filter(|p| {
        p.state
            .as_deref()
            .is_some_and(|s| same_secret(s, &expected.state))
    });
    let Some(p) = ours else {
        answer(
            &mut socket,
            "400 Bad Request",
            "This is not the login mrtr is waiting for, and it was ignored.",
        )
        .await;
        return None;
    };
    let (page, outcome) = judge(p, &expected);
    answer(&mut socket, "200 OK", page).await;
    Some(outcome)
}

/// How the redirect that carries this login's `state` ends it, and the page
/// the browser shows.
fn judge(p: Params, expected: &Expected) -> (&'static str, Result<String, TransportError>) {
    const REFUSED: &str = "The login was refused. You can close this tab.";
    match (&p.iss, expected.iss_required) {
        (Some(iss), _) if *iss != expected.issuer => {
            return (
                "This login came back from another authorization server than the one \
                 mrtr sent you to, and mrtr refused it. You can close this tab.",
                Err(unauthorized(format!(
                    "the login came back from another authorization server than {} \
                     (the redirect's iss differs: a mix-up attack?); its code was not used",
                    expected.issuer
                ))),
            );
        }
        (None, true) => {
            return (
                REFUSED,
                Err(unauthorized(format!(
                    "the login redirect carried no iss, which {} says it always sends \
                     (RFC 9207): refused",
                    expected.issuer
                ))),
            );
        }
        _ => {}
    }
    match (p.code, p.error) {
        (_, Some(e)) => (
            REFUSED,
            Err(unauthorized(format!(
                "the authorization server refused the login ({})",
                error_code(&e)
            ))),
        ),
        (Some(code), None) if !code.is_empty() => (
            "Logged in. You can close this tab and return to the terminal.",
            Ok(code),
        ),
        _ => (
            "The login did not finish. You can close this tab.",
            Err(unauthorized(
                "the login redirect carried no authorization code",
            )),
        ),
    }
}

async fn answer(socket: &mut tokio::net::TcpStream, status: &str, page: &str) {
    let body = format!("<!doctype html><meta charset=utf-8><title>mrtr</title><p>{page}</p>");
    let resp = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nCache-Control: no-store\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = socket.write_all(resp.as_bytes()).await;
    let _ = socket.shutdown().await;
}

/// The request head (up to the blank line), or `None` if it is too long or the
/// peer stops.
async fn read_head(socket: &mut tokio::net::TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 2048];
    loop {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.windows(4).any(|w| w == b"\r\n\r\n") {
            return String::from_utf8(buf).ok();
        }
        if buf.len() > MAX_HEAD {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(uri: &str, path: &str) -> String {
        let addr = uri
            .trim_start_matches("http://")
            .split('/')
            .next()
            .unwrap()
            .to_owned();
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    fn expected(iss_required: bool) -> Expected {
        Expected {
            state: "s1".into(),
            issuer: "http://127.0.0.1:9/honest".into(),
            iss_required,
        }
    }

    #[tokio::test]
    async fn the_redirect_gives_the_code_and_other_paths_are_404() {
        let l = Loopback::bind().await.unwrap();
        let uri = l.redirect_uri().to_owned();
        assert!(uri.starts_with("http://127.0.0.1:") && uri.ends_with("/callback"));
        let browser = tokio::spawn(async move {
            let favicon = get(&uri, "/favicon.ico").await;
            let done = get(
                &uri,
                "/callback?code=c%2F1&state=s1&iss=http%3A%2F%2F127.0.0.1%3A9%2Fhonest",
            )
            .await;
            (favicon, done)
        });
        let code = l
            .wait(Duration::from_secs(5), expected(true))
            .await
            .unwrap();
        assert_eq!(code, "c/1");
        let (favicon, done) = browser.await.unwrap();
        assert!(favicon.starts_with("HTTP/1.1 404"));
        assert!(done.starts_with("HTTP/1.1 200") && done.contains("Logged in"));
        assert!(!done.contains("c/1"));

        // Without iss from a server that does not promise one: accepted.
        let l = Loopback::bind().await.unwrap();
        let uri = l.redirect_uri().to_owned();
        tokio::spawn(async move { get(&uri, "/callback?code=c2&state=s1").await });
        let code = l
            .wait(Duration::from_secs(5), expected(false))
            .await
            .unwrap();
        assert_eq!(code, "c2");

        let l = Loopback::bind().await.unwrap();
        let uri = l.redirect_uri().to_owned();
        tokio::spawn(async move {
            get(
                &uri,
                "/callback?error=access_denied&state=s1&error_description=%3Cscript%3E",
            )
            .await
        });
        let e = l
            .wait(Duration::from_secs(5), expected(false))
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("refused the login (access_denied)"), "{e}");
        assert!(!e.contains("script"), "{e}");

        let l = Loopback::bind().await.unwrap();
        let e = l
            .wait(Duration::from_millis(50), expected(false))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("no login within"), "{e}");
    }

    /// N1: the honest server's redirect, relayed through a mix-up, names the
    /// honest issuer; the login was sent to another one, so the code is refused.
    #[tokio::test]
    async fn a_redirect_from_another_issuer_is_refused() {
        for (query, iss_required, want) in [
            (
                "/callback?code=honest-code&state=s1&iss=http%3A%2F%2F127.0.0.1%3A7%2Fother",
                false,
                "another authorization server",
            ),
            (
                "/callback?code=honest-code&state=s1",
                true,
                "carried no iss",
            ),
            (
                "/callback?error=access_denied&state=s1&iss=http%3A%2F%2Fevil",
                false,
                "another authorization server",
            ),
        ] {
            let l = Loopback::bind().await.unwrap();
            let uri = l.redirect_uri().to_owned();
            let browser = tokio::spawn(async move { get(&uri, query).await });
            let e = l
                .wait(Duration::from_secs(5), expected(iss_required))
                .await
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{query}: {e}");
            assert!(!e.contains("honest-code"), "{e}");
            assert!(browser.await.unwrap().starts_with("HTTP/1.1 200"));
        }
    }

    /// N7: a forged redirect (another state, none, or a state given twice) is
    /// answered and ignored, idle connections delay nothing, and the listener
    /// closes after the real redirect.
    #[tokio::test]
    async fn forged_redirects_and_idle_connections_do_not_end_or_stall_the_login() {
        let l = Loopback::bind().await.unwrap();
        let uri = l.redirect_uri().to_owned();
        let addr = uri
            .trim_start_matches("http://")
            .split('/')
            .next()
            .unwrap()
            .to_owned();
        let waiting = tokio::spawn(l.wait(Duration::from_secs(20), expected(false)));
        let mut idle = Vec::new();
        for _ in 0..10 {
            idle.push(tokio::net::TcpStream::connect(&addr).await.unwrap());
        }
        for forged in [
            "/callback?code=x&state=forged",
            "/callback?code=x",
            "/callback?error=access_denied",
            "/callback?code=x&state=s1&state=s1",
            "/callback?code=x&state=s",
        ] {
            let page = get(&uri, forged).await;
            assert!(page.starts_with("HTTP/1.1 400"), "{forged}: {page}");
            assert!(page.contains("not the login mrtr is waiting for"));
        }
        assert!(!waiting.is_finished(), "a forged redirect ended the login");
        let real = get(&uri, "/callback?code=real&state=s1").await;
        assert!(real.starts_with("HTTP/1.1 200"), "{real}");
        // Served one at a time, the ten idle connections would hold the real
        // redirect for ten head timeouts, past the 20 s wait.
        assert_eq!(waiting.await.unwrap().unwrap(), "real");
        // Closed after the real redirect.
        assert!(tokio::net::TcpStream::connect(&addr).await.is_err());
        drop(idle);
    }
}
