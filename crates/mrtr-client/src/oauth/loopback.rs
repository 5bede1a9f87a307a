//! The loopback redirect listener of a native app (RFC 8252 sections 7.3 and
//! 8.3): `http://127.0.0.1:PORT/callback`, bound on the loopback interface only,
//! waiting for the one redirect that carries the authorization code.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::TransportError;

/// The path the authorization server redirects to.
const CALLBACK: &str = "/callback";

/// The most of a request head read (bytes).
const MAX_HEAD: usize = 16 * 1024;

/// A bound listener and its redirect URI.
pub(super) struct Loopback {
    listener: TcpListener,
    redirect_uri: String,
}

/// What the redirect carried.
pub(super) enum Redirect {
    /// `code` and `state`.
    Code { code: String, state: String },
    /// `error` (an OAuth error code, e.g. `access_denied`).
    Error(String),
}

impl Loopback {
    /// Binds `127.0.0.1` on a free port.
    pub(super) async fn bind() -> Result<Self, TransportError> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.map_err(|e| {
            TransportError::Unauthorized(format!("cannot listen for the login redirect: {e}"))
        })?;
        let port = listener
            .local_addr()
            .map_err(|e| TransportError::Unauthorized(format!("the redirect listener: {e}")))?
            .port();
        Ok(Self {
            listener,
            redirect_uri: format!("http://127.0.0.1:{port}{CALLBACK}"),
        })
    }

    pub(super) fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    /// Waits up to `timeout` for the redirect to [`CALLBACK`]; other requests (a
    /// browser's `/favicon.ico`) get 404 and the wait goes on.
    pub(super) async fn wait(&self, timeout: Duration) -> Result<Redirect, TransportError> {
        tokio::time::timeout(timeout, self.accept_callback())
            .await
            .map_err(|_| {
                TransportError::Unauthorized(format!(
                    "no login within {} s (the browser never came back to {})",
                    timeout.as_secs(),
                    self.redirect_uri
                ))
            })?
    }

    async fn accept_callback(&self) -> Result<Redirect, TransportError> {
        loop {
            let Ok((mut socket, _)) = self.listener.accept().await else {
                continue;
            };
            let head =
                match tokio::time::timeout(Duration::from_secs(10), read_head(&mut socket)).await {
                    Ok(Some(h)) => h,
                    _ => continue,
                };
            let target = head
                .lines()
                .next()
                .and_then(|l| l.strip_prefix("GET "))
                .and_then(|l| l.split(' ').next())
                .unwrap_or("");
            let (path, query) = target.split_once('?').unwrap_or((target, ""));
            if path != CALLBACK {
                let _ = socket
                    .write_all(
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    )
                    .await;
                continue;
            }
            let mut code = None;
            let mut state = None;
            let mut error = None;
            for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
                match &*k {
                    "code" => code = Some(v.into_owned()),
                    "state" => state = Some(v.into_owned()),
                    "error" => error = Some(v.into_owned()),
                    _ => {}
                }
            }
            let (page, result) = match (code, state, error) {
                (_, _, Some(e)) => {
                    // Only a plain error code is repeated (never free text).
                    let e = if e.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                        && e.len() <= 64
                    {
                        e
                    } else {
                        "an error".into()
                    };
                    (
                        "The login was refused. You can close this tab.",
                        Redirect::Error(e),
                    )
                }
                (Some(code), Some(state), None) => (
                    "Logged in. You can close this tab and return to the terminal.",
                    Redirect::Code { code, state },
                ),
                _ => (
                    "The login did not finish. You can close this tab.",
                    Redirect::Error("invalid_request".into()),
                ),
            };
            let body =
                format!("<!doctype html><meta charset=utf-8><title>mrtr</title><p>{page}</p>");
            let resp = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nCache-Control: no-store\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(resp.as_bytes()).await;
            let _ = socket.shutdown().await;
            return Ok(result);
        }
    }
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

    #[tokio::test]
    async fn the_redirect_gives_the_code_and_other_paths_are_404() {
        let l = Loopback::bind().await.unwrap();
        let uri = l.redirect_uri().to_owned();
        assert!(uri.starts_with("http://127.0.0.1:") && uri.ends_with("/callback"));
        let browser = tokio::spawn(async move {
            let favicon = get(&uri, "/favicon.ico").await;
            let done = get(&uri, "/callback?code=c%2F1&state=s1&iss=x").await;
            (favicon, done)
        });
        let Redirect::Code { code, state } = l.wait(Duration::from_secs(5)).await.unwrap() else {
            panic!("no code")
        };
        assert_eq!((code.as_str(), state.as_str()), ("c/1", "s1"));
        let (favicon, done) = browser.await.unwrap();
        assert!(favicon.starts_with("HTTP/1.1 404"));
        assert!(done.starts_with("HTTP/1.1 200") && done.contains("Logged in"));
        assert!(!done.contains("c/1"));

        let l = Loopback::bind().await.unwrap();
        let uri = l.redirect_uri().to_owned();
        tokio::spawn(async move {
            get(
                &uri,
                "/callback?error=access_denied&error_description=%3Cscript%3E",
            )
            .await
        });
        let Redirect::Error(e) = l.wait(Duration::from_secs(5)).await.unwrap() else {
            panic!("no error")
        };
        assert_eq!(e, "access_denied");

        let l = Loopback::bind().await.unwrap();
        let e = l.wait(Duration::from_millis(50)).await.err().unwrap();
        assert!(e.to_string().contains("no login within"), "{e}");
    }
}
