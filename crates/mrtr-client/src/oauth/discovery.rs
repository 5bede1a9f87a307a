//! Where to log in: the protected resource metadata (RFC 9728) of the MCP
//! server, then its authorization server's metadata (RFC 8414, or OpenID Connect
//! discovery), as the MCP authorization section's discovery steps describe.

use serde_json::Value;

pub(super) use crate::fetch::split_origin;
use crate::fetch::{HttpClient, UrlPolicy};
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
    /// Whether it says it sends `iss` in every authorization response
    /// (`authorization_response_iss_parameter_supported`, RFC 9207): then a
    /// response without one is refused.
    pub iss_parameter_supported: bool,
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

/// What a discovery must hold to: the URL policy for every URL it fetches or
/// hands on, and the issuer the user expects (if any).
#[derive(Debug, Clone, Copy)]
pub(super) struct Rules<'a> {
    pub(super) policy: &'a UrlPolicy,
    pub(super) issuer: Option<&'a str>,
}

impl Rules<'_> {
    fn check(&self, url: &str, what: &str) -> Result<(), TransportError> {
        self.policy
            .check(url, what)
            .map_err(|e| invalid(e.to_string()))
    }
}

/// Finds where to log in to the MCP server at `server_url`: the metadata URL of
/// the server's challenge (if any), else the well-known locations.
pub(super) async fn discover(
    http: &HttpClient,
    rules: Rules<'_>,
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
        rules.check(url, "the server's protected resource metadata")?;
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
    let named: Vec<&str> = prm
        .get("authorization_servers")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let issuer = match rules.issuer {
        // The user said which issuer to trust (and to send a client secret to):
        // a server that names only others is refused, whatever it names.
        Some(expected) => named.iter().copied().find(|i| *i == expected).ok_or_else(|| {
            invalid(format!(
                "the server names another authorization server than the expected issuer {expected} \
                 (--oauth-issuer): no login there"
            ))
        })?,
        None => named.first().copied().ok_or_else(|| {
            invalid("the protected resource metadata names no authorization server")
        })?,
    };
    rules.check(issuer, "the authorization server")?;
    let server = auth_server(http, rules, issuer).await?;
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
/// 3.3), and its endpoints must pass the URL policy.
pub(super) async fn auth_server(
    http: &HttpClient,
    rules: Rules<'_>,
    issuer: &str,
) -> Result<AuthServer, TransportError> {
    match http.issuer_metadata(issuer).await {
        Ok(doc) => server_of(&doc, rules, issuer),
        Err(e) => Err(invalid(format!(
            "the authorization server's metadata (RFC 8414 or OpenID discovery) cannot be read: {e}"
        ))),
    }
}

fn server_of(doc: &Value, rules: Rules<'_>, issuer: &str) -> Result<AuthServer, TransportError> {
    if doc.get("issuer").and_then(Value::as_str) != Some(issuer) {
        return Err(invalid(
            "the authorization server's metadata names another issuer (RFC 8414 section 3.3)",
        ));
    }
    let endpoint = |key: &str| -> Result<Option<String>, TransportError> {
        match doc.get(key).and_then(Value::as_str) {
            None => Ok(None),
            Some(u) => {
                rules.check(u, &format!("the authorization server's {key}"))?;
                Ok(Some(u.to_owned()))
            }
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
        iss_parameter_supported: doc
            .get("authorization_response_iss_parameter_supported")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn identifiers_are_normalized() {
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
        let policy = UrlPolicy::new();
        let rules = Rules {
            policy: &policy,
            issuer: None,
        };
        let s = server_of(&good, rules, "https://auth.example").unwrap();
        assert!(s.pkce_s256);
        assert!(!s.iss_parameter_supported);
        assert_eq!(s.registration_endpoint, None);
        assert!(server_of(&good, rules, "https://other.example").is_err());
        let mut with_iss = good.clone();
        with_iss["authorization_response_iss_parameter_supported"] = json!(true);
        assert!(
            server_of(&with_iss, rules, "https://auth.example")
                .unwrap()
                .iss_parameter_supported
        );
        // An https server names endpoints on the user's machine, or in clear.
        for (key, url) in [
            ("token_endpoint", "http://auth.example/token"),
            ("token_endpoint", "http://127.0.0.1:6379/token"),
            (
                "registration_endpoint",
                "http://127.0.0.1:8080/admin/reset?confirm=yes",
            ),
            ("authorization_endpoint", "https://127.0.0.1:8443/auth"),
        ] {
            let mut bad = good.clone();
            bad[key] = json!(url);
            let e = server_of(&bad, rules, "https://auth.example")
                .unwrap_err()
                .to_string();
            assert!(e.contains(key) && e.contains("refused"), "{e}");
            assert!(!e.contains("admin"), "{e}");
        }
        let mut none = good;
        none.as_object_mut().unwrap().remove("token_endpoint");
        assert!(server_of(&none, rules, "https://auth.example").is_err());
    }
}
