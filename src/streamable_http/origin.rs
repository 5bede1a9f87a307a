//! `Origin` (spec: Streamable HTTP §Security Warning): a server must refuse a
//! foreign one (403), since a browser page on another site, or one whose name was
//! rebound to 127.0.0.1, sends it on every POST. Loopback origins pass by default.

/// Normalizes an origin (`scheme://host[:port]`): lower case, no trailing `/`;
/// `None` if it is not of that form (no path, query, user info or spaces).
///
/// ```
/// use mrtr::streamable_http::normalize_origin;
/// assert_eq!(normalize_origin("https://App.Example/").as_deref(), Some("https://app.example"));
/// assert_eq!(normalize_origin("https://app.example/x"), None);
/// ```
pub fn normalize_origin(origin: &str) -> Option<String> {
    let o = origin.trim().trim_end_matches('/').to_ascii_lowercase();
    let (scheme, rest) = o.split_once("://")?;
    if scheme.is_empty()
        || !scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
        || rest.is_empty()
        || rest
            .bytes()
            .any(|b| b"/?#@ \t\\".contains(&b) || b.is_ascii_control())
    {
        return None;
    }
    Some(o)
}

/// Whether a request with this `Origin` value may proceed: no `Origin` (not a
/// browser), a loopback one (`http://localhost`, `http://127.0.0.1`,
/// `http://[::1]`, any port), or one of `allowed` (each already
/// [`normalize_origin`]d). Anything else, malformed bytes included, is refused
/// ([`crate::streamable_http::Refusal::OriginNotAllowed`]).
pub fn origin_allowed(origin: Option<&[u8]>, allowed: &[String]) -> bool {
    let Some(origin) = origin else {
        return true;
    };
    let Ok(origin) = std::str::from_utf8(origin) else {
        return false;
    };
    let Some(origin) = normalize_origin(origin) else {
        return false;
    };
    if allowed.contains(&origin) {
        return true;
    }
    is_loopback_http_origin(&origin).unwrap_or(false)
}

/// `http://` + `localhost` | `127.0.0.1` | `[::1]` + optional `:port`; `None` if malformed.
fn is_loopback_http_origin(origin: &str) -> Option<bool> {
    let rest = origin.strip_prefix("http://")?;
    let (host, port) = if let Some(v6) = rest.strip_prefix('[') {
        let (host, after) = v6.split_once(']')?;
        let port = if after.is_empty() {
            None
        } else {
            Some(after.strip_prefix(':')?)
        };
        (host, port)
    } else {
        match rest.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (rest, None),
        }
    };
    let port_ok =
        port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()));
    Some(port_ok && matches!(host, "localhost" | "127.0.0.1" | "::1"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_origins() {
        let ok = |o: &str| origin_allowed(Some(o.as_bytes()), &[]);
        assert!(origin_allowed(None, &[]), "no Origin: not a browser");
        assert!(ok("http://localhost"));
        assert!(ok("http://localhost:3000"));
        assert!(ok("HTTP://LOCALHOST:3000/"));
        assert!(ok("http://127.0.0.1:8808"));
        assert!(ok("http://[::1]"));
        assert!(ok("http://[::1]:9"));
        assert!(!ok("http://localhost.evil.example"));
        assert!(!ok("http://localhost:"));
        assert!(!ok("http://localhost:80x"));
        assert!(!ok("http://127.0.0.1.evil:80"));
        assert!(!ok("https://evil.example"));
        assert!(!ok("null"));
        assert!(!ok("http://localhost/path"));
        assert!(!ok("http://user@localhost"));
        assert!(!origin_allowed(Some(b"http://local\xffhost"), &[]));
    }

    #[test]
    fn extra_origins() {
        let extra = vec![normalize_origin("https://App.Example/").unwrap()];
        assert!(origin_allowed(Some(b"https://app.example"), &extra));
        assert!(!origin_allowed(Some(b"https://app.example:8443"), &extra));
        assert!(normalize_origin("app.example").is_none());
        assert!(normalize_origin("https://app.example/x").is_none());
    }
}
