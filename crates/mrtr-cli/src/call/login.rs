//! Logging in to a server behind OAuth: the `mrtr_client::oauth` token source
//! the OAuth options make, and `--logout`.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use mrtr_client::HttpClient;
use mrtr_client::fetch::UrlPolicy;
use mrtr_client::oauth::{ClientSecretValue, OAuthTokenSource, TokenCache};

use super::Connect;
use super::EXIT_OK;
use super::args::CallArgs;
use super::sanitize::{Sanitized, one_line};

/// Whether any OAuth option was given.
pub(super) fn wanted(args: &CallArgs) -> bool {
    args.client_id.is_some()
        || args.client_secret_env.is_some()
        || args.client_credentials
        || !args.scopes.is_empty()
        || args.open
        || args.no_login
        || args.logout
        || args.oauth_issuer.is_some()
        || args.oauth_allow_loopback_http
}

/// Whether `url` keeps what is sent to it off the network: https, or a
/// loopback host.
fn private_channel(url: &str) -> bool {
    UrlPolicy::new().named(url).allows(url)
}

fn cache(args: &CallArgs) -> Option<TokenCache> {
    args.token_cache
        .clone()
        .or_else(TokenCache::default_path)
        .map(TokenCache::new)
}

/// Whether `url` gets an OAuth token source: not when the caller gives
/// credentials of their own (`-H`, `--bearer-env`), nor over plain http to a
/// host that is not loopback.
///
/// # Errors
/// [`Connect::Usage`] when the options mix both kinds of credentials, or would
/// send them in clear.
fn logs_in(args: &CallArgs, url: &str) -> Result<bool, Connect> {
    let private = private_channel(url);
    if !args.headers.is_empty() || args.bearer_env.is_some() {
        if wanted(args) {
            return Err(Connect::Usage(
                "-H or --bearer-env, or the OAuth options (--client-id, --scope, ...): give one \
                 kind of credentials"
                    .into(),
            ));
        }
        if !private && !args.insecure_http {
            return Err(Connect::Usage(
                "-H and --bearer-env over plain http:// to a host that is not loopback would \
                 send them in clear: use https://, or pass --insecure-http"
                    .into(),
            ));
        }
        return Ok(false);
    }
    if !private {
        if wanted(args) {
            return Err(Connect::Usage(
                "OAuth over plain http:// to a host that is not loopback would send its tokens \
                 in clear: use https://"
                    .into(),
            ));
        }
        return Ok(false);
    }
    Ok(true)
}

/// The secret in the environment variable `var` (`--client-secret-env`).
///
/// # Errors
/// [`Connect::Usage`] when it is unset, empty or not UTF-8.
fn client_secret(var: &str) -> Result<ClientSecretValue, Connect> {
    match std::env::var(var) {
        Ok(s) if !s.trim().is_empty() => Ok(ClientSecretValue::new(s.trim())),
        Ok(_) => Err(Connect::Usage(format!(
            "--client-secret-env {var}: {var} is empty"
        ))),
        Err(_) => Err(Connect::Usage(format!(
            "--client-secret-env {var}: {var} is not set (or not UTF-8)"
        ))),
    }
}

/// The token source for `url`, unless the caller gives credentials of their own
/// (`-H`, `--bearer-env`): then the OAuth options are a usage error. Neither
/// goes over plain http to a host that is not loopback (RFC 6750 section 5.3),
/// except `-H` and `--bearer-env` with `--insecure-http`; without OAuth
/// options such a URL gets no token source (its `401` is an error, not a
/// login).
pub(super) fn token_source(
    args: &CallArgs,
    url: &str,
    cacert: Option<&[u8]>,
) -> Result<Option<Arc<OAuthTokenSource>>, Connect> {
    if !logs_in(args, url)? {
        return Ok(None);
    }
    if args.client_secret_env.is_some() && args.oauth_issuer.is_none() {
        return Err(Connect::Usage(
            "--client-secret-env needs --oauth-issuer: the secret is sent to that \
             authorization server alone"
                .into(),
        ));
    }
    let mut http = HttpClient::builder();
    if let Some(pem) = cacert {
        // The authorization server may be a public one: the system's CAs stay
        // trusted. The transport already took this file, so it parses.
        http = http
            .add_root_pem(pem)
            .map_err(|e| Connect::Usage(format!("--cacert: {e}")))?;
    }
    let http = http.build().map_err(Connect::Failed)?;
    let mut b = OAuthTokenSource::builder(url, http);
    if let Some(cache) = cache(args) {
        b = b.cache(cache);
    }
    if let Some(id) = &args.client_id {
        b = b.client_id(id);
    }
    if let Some(issuer) = &args.oauth_issuer {
        b = b.issuer(issuer);
    }
    b = b.allow_any_loopback_http(args.oauth_allow_loopback_http);
    if let Some(var) = &args.client_secret_env {
        b = b.client_secret(client_secret(var)?);
    }
    for s in &args.scopes {
        b = b.scope(s);
    }
    if args.client_credentials {
        b = b.client_credentials();
    } else if !args.no_login {
        let open = args.open;
        let timeout = Duration::from_secs(args.login_timeout);
        let secs = args.login_timeout;
        b = b.interactive(
            Arc::new(move |login_url: &str, issuer: &str| {
                let mut err = Sanitized::new(std::io::stderr());
                let _ = writeln!(
                    err,
                    "The server asks you to log in at {}. Open this URL in a browser (waiting up \
                     to {secs} s); its page should be that server's:",
                    one_line(issuer)
                );
                let _ = writeln!(err, "  {}", one_line(login_url));
                if open {
                    open_browser(login_url);
                }
            }),
            timeout,
        );
    }
    b.build()
        .map(|s| Some(Arc::new(s)))
        .map_err(|e| Connect::Usage(e.to_string()))
}

/// Logs in before the flow starts, when no saved token will do and the server
/// publishes its protected resource metadata: a person's login (up to
/// `--login-timeout`) must not count against `--request-timeout`, which bounds
/// every request of the flow. It sends no MCP request; a server that publishes
/// no metadata at the well-known location is logged in to on its `401`.
///
/// # Errors
/// The transport's error when the login fails (a refused login, no login
/// within the time, the authorization server unreachable).
pub(super) async fn ensure_logged_in(
    args: &CallArgs,
    oauth: &OAuthTokenSource,
) -> Result<(), mrtr_client::TransportError> {
    let limit = Duration::from_secs(args.login_timeout.saturating_add(args.request_timeout));
    match tokio::time::timeout(limit, oauth.log_in_if_protected()).await {
        Err(_) => Err(mrtr_client::TransportError::Unauthorized(format!(
            "no login within {} s",
            limit.as_secs()
        ))),
        Ok(r) => r.map(|_| ()),
    }
}

/// Opens `url` with the desktop's opener, without a shell; a failure is only
/// reported (the URL is printed anyway).
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let spawned = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if spawned.is_err() {
        eprintln!("(could not run {opener}: open the URL yourself)");
    }
}

/// `mrtr call URL --logout`: forgets the tokens kept for URL.
pub(super) fn logout(
    args: &CallArgs,
    out: &mut (dyn Write + Send),
    err: &mut (dyn Write + Send),
) -> i32 {
    let Some(url) = &args.url else {
        return super::usage(err, "--logout needs the server's URL");
    };
    let Some(cache) = cache(args) else {
        return super::usage(
            err,
            "--logout: no token cache (set --token-cache, HOME or XDG_CACHE_HOME)",
        );
    };
    match cache.forget(url) {
        Ok(0) => {
            let _ = writeln!(out, "no saved login for {}", one_line(url));
            EXIT_OK
        }
        Ok(n) => {
            let _ = writeln!(
                out,
                "logged out of {} ({n} saved token{} removed)",
                one_line(url),
                if n == 1 { "" } else { "s" }
            );
            EXIT_OK
        }
        Err(e) => super::usage(err, &e.to_string()),
    }
}
