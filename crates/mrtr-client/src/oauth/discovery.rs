//! Where to log in: the protected resource metadata (RFC 9728) of the MCP
//! server, then its authorization server's metadata (RFC 8414, or OpenID Connect
//! discovery), as the MCP authorization section's discovery steps describe.

use serde_json::Value;

use crate::fetch::HttpClient;
pub(super) use crate::fetch::split_origin;
use crate::{Challenge, TransportError};

/// What a client needs to know to log in to one MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovered {
    /// The resource, as its metadata names it: the `resource` parameter sent
    /// (RFC 8707) and the audience of the tokens.
    pub resource: String,
    /// The scopes the resource lists (`scopes_supported`), if any.
    pub resource_scopes: Vec<String>,
    /// The authorization server.
    pub server: AuthServer,
}

/// An authorization server's endpoints (RFC 8414 section 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthServer {
    /// Its issuer identifier.
    pub issuer: String,
    /// `authorization_endpoint`, if it has one (not needed for client credentials).
    pub authorization_endpoint: Option<String>,
    /// `token_endpoint`.
    pub token_endpoint: String,
    /// `registration_endpoint` (RFC 7591), if it registers clients.
    pub registration_endpoint: Option<String>,
    /// Whether it lists `S256` in `code_challenge_methods_supported`.
    pub pkce_s256: bool,
}

fn invalid(what: impl Into<String>) -> TransportError {
    TransportError::Unauthorized(what.into())
}

/// A URL compared as an identifier: scheme and host in lower case, no trailing
/// `/`, no query or fragment.
fn normalized(url: &str) -> String {
    let (origin, path) = split_origin(url);
    format!("{}{path}", origin.to_ascii_lowercase())
}

/// Whether `url` is `https://`, or `http://` on a loopback host (RFC 9700 and the
/// MCP authorization section: every authorization endpoint is HTTPS; loopback is
/// for tests and local servers).
pub(super) fn acceptable_url(url: &str) -> bool {
    if url.starts_with("https://") {
        return true;
    }
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = match authority.rsplit_once(':') {
        Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => authority,
    };
    host == "localhost"
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Finds where to log in to the MCP server at `server_url`: the metadata URL of
/// the server's challenge (if any), else the well-known locations.
pub(super) async fn discover(
    http: &HttpClient,
    server_url: &str,
    challenge: Option<&Challenge>,
) -> Result<Discovered, TransportError> {
    let (origin, path) = split_origin(server_url);
    let mut candidates = Vec::new();
    if let Some(url) = challenge.and_then(Challenge::resource_metadata) {
        // The metadata must live on the server's own origin: a challenge cannot
        // send the client to read (and trust) another host's document.
        if !normalized(url).starts_with(&format!("{}/", origin.to_ascii_lowercase())) {
            return Err(invalid(
                "the server's resource_metadata is on another origin than the server",
            ));
        }
        candidates.push(url.to_owned());
    } else {
        candidates.push(format!(
            "{origin}/.well-known/oauth-protected-resource{path}"
        ));
        if !path.is_empty() {
            candidates.push(format!("{origin}/.well-known/oauth-protected-resource"));
        }
    }
    let mut last = None;
    let mut prm = None;
    for url in &candidates {
        match http.get_json(url).await {
            Ok(doc) => {
                prm = Some(doc);
                break;
            }
            Err(e) => last = Some(e),
        }
    }
    let Some(prm) = prm else {
        let why = last.map(|e| e.to_string()).unwrap_or_default();
        return Err(invalid(format!(
            "the server asks for a login but its protected resource metadata (RFC 9728) \
             cannot be read: {why}"
        )));
    };
    let resource = prm
        .get("resource")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("the protected resource metadata has no resource"))?;
    // RFC 9728 section 3.3: the metadata must be the server's own.
    let named = normalized(resource);
    if named != normalized(server_url) && named != origin.to_ascii_lowercase() {
        return Err(invalid(
            "the protected resource metadata names another resource than this server",
        ));
    }
    let issuer = prm
        .get("authorization_servers")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("the protected resource metadata names no authorization server"))?;
    if !acceptable_url(issuer) {
        return Err(invalid(
            "the authorization server is not an https:// URL (nor http:// on loopback)",
        ));
    }
    let server = auth_server(http, issuer).await?;
    Ok(Discovered {
        resource: resource.to_owned(),
        resource_scopes: strings(prm.get("scopes_supported")),
        server,
    })
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The metadata of the authorization server `issuer`: RFC 8414 first (the
/// well-known path inserted before the issuer's path), then OpenID Connect
/// discovery (appended, then inserted). It must name `issuer` (RFC 8414 section
/// 3.3), and its endpoints must be HTTPS (or loopback).
pub(super) async fn auth_server(
    http: &HttpClient,
    issuer: &str,
) -> Result<AuthServer, TransportError> {
    match http.issuer_metadata(issuer).await {
        Ok(doc) => server_of(&doc, issuer),
        Err(e) => Err(invalid(format!(
            "the authorization server's metadata (RFC 8414 or OpenID discovery) cannot be read: {e}"
        ))),
    }
}

fn server_of(doc: &Value, issuer: &str) -> Result<AuthServer, TransportError> {
    if doc.get("issuer").and_then(Value::as_str) != Some(issuer) {
        return Err(invalid(
            "the authorization server's metadata names another issuer (RFC 8414 section 3.3)",
        ));
    }
    let endpoint = |key: &str| -> Result<Option<String>, TransportError> {
        match doc.get(key).and_then(Value::as_str) {
            None => Ok(None),
            Some(u) if acceptable_url(u) => Ok(Some(u.to_owned())),
            Some(_) => Err(invalid(format!(
                "the authorization server's {key} is not an https:// URL"
            ))),
        }
    };
    Ok(AuthServer {
        issuer: issuer.to_owned(),
        authorization_endpoint: endpoint("authorization_endpoint")?,
        token_endpoint: endpoint("token_endpoint")?
            .ok_or_else(|| invalid("the authorization server's metadata has no token_endpoint"))?,
        registration_endpoint: endpoint("registration_endpoint")?,
        pkce_s256: strings(doc.get("code_challenge_methods_supported"))
            .iter()
            .any(|m| m == "S256"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn urls_are_judged_as_the_spec_asks() {
        assert!(acceptable_url("https://auth.example/x"));
        assert!(acceptable_url("http://127.0.0.1:9000/token"));
        assert!(acceptable_url("http://localhost/token"));
        assert!(acceptable_url("http://[::1]:8/token"));
        assert!(!acceptable_url("http://auth.example/token"));
        assert!(!acceptable_url("http://127.0.0.1.evil.example/token"));
        assert!(!acceptable_url("javascript:alert(1)"));
        assert_eq!(
            normalized("HTTPS://MCP.example/mcp/"),
            "https://mcp.example/mcp"
        );
        assert_eq!(
            split_origin("https://a.example/t/x?q"),
            ("https://a.example", "/t/x")
        );
    }

    #[test]
    fn metadata_must_name_its_issuer_and_use_https() {
        let good = json!({
            "issuer": "https://auth.example",
            "authorization_endpoint": "https://auth.example/auth",
            "token_endpoint": "https://auth.example/token",
            "code_challenge_methods_supported": ["plain", "S256"],
        });
        let s = server_of(&good, "https://auth.example").unwrap();
        assert!(s.pkce_s256);
        assert_eq!(s.registration_endpoint, None);
        assert!(server_of(&good, "https://other.example").is_err());
        let mut plain = good.clone();
        plain["token_endpoint"] = json!("http://auth.example/token");
        assert!(server_of(&plain, "https://auth.example").is_err());
        let mut none = good;
        none.as_object_mut().unwrap().remove("token_endpoint");
        assert!(server_of(&none, "https://auth.example").is_err());
    }
}
