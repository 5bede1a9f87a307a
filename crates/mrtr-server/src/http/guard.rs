//! The DNS-rebinding guard (see the module doc of [`super`]): the request must be
//! addressed to an allowed `Host` (421), and come from an allowed `Origin` (403,
//! the rule is [`streamable_http::origin_allowed`]).

use axum::http::header;
use axum::http::request::Parts;

use super::options::{HostPattern, parse_authority};
use mrtr::streamable_http;

/// Whether the request is addressed to an allowed host: the absolute request
/// target's authority if it has one (RFC 9112 §3.2.2: then `Host` is ignored),
/// else its one `Host` header. No list: always.
pub(super) fn host_allowed(parts: &Parts, allowed: &[HostPattern]) -> bool {
    if allowed.is_empty() {
        return true;
    }
    let authority = match parts.uri.authority() {
        Some(a) => a.as_str().to_owned(),
        None => {
            let mut hosts = parts.headers.get_all(header::HOST).iter();
            match (hosts.next().map(|h| h.to_str()), hosts.next()) {
                (Some(Ok(h)), None) => h.to_owned(),
                _ => return false,
            }
        }
    };
    let Some((host, port)) = parse_authority(&authority) else {
        return false;
    };
    allowed
        .iter()
        .any(|p| p.host == host && p.port.is_none_or(|allowed| Some(allowed) == port))
}

/// Whether the request's `Origin` (its first, as a browser sends one) may
/// proceed, by [`streamable_http::origin_allowed`].
pub(super) fn origin_allowed(parts: &Parts, allowed: &[String]) -> bool {
    let origin = parts.headers.get(header::ORIGIN).map(|v| v.as_bytes());
    streamable_http::origin_allowed(origin, allowed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::HttpOptions;

    /// The parts of a `POST /mcp` with this `Host`, if any.
    fn parts(host: Option<&str>) -> Parts {
        let mut req = axum::http::Request::builder().method("POST").uri("/mcp");
        if let Some(host) = host {
            req = req.header(header::HOST, host);
        }
        req.body(()).unwrap().into_parts().0
    }

    #[test]
    fn hosts_match_by_name_and_by_port_when_one_is_given() {
        let options = HttpOptions::default()
            .allow_host("a.example")
            .unwrap()
            .allow_host("b.example:9000")
            .unwrap()
            .allow_host("A.EXAMPLE")
            .unwrap();
        assert_eq!(
            options.allowed_hosts.len(),
            2,
            "{:?}",
            options.allowed_hosts
        );
        let allowed = |host: &str| host_allowed(&parts(Some(host)), &options.allowed_hosts);
        assert!(allowed("a.example"));
        assert!(allowed("A.example:1234"));
        assert!(allowed("b.example:9000"));
        assert!(!allowed("b.example"));
        assert!(!allowed("b.example:9001"));
        assert!(!allowed("c.example"));
        assert!(
            !host_allowed(&parts(None), &options.allowed_hosts),
            "no Host"
        );
        assert!(host_allowed(&parts(None), &[]), "no list, no check");
        assert!(HttpOptions::default().allow_host("a b").is_err());
    }

    #[test]
    fn origin_is_read_from_the_first_origin_header() {
        let with = |origins: &[&str]| {
            let mut req = axum::http::Request::builder().method("POST").uri("/mcp");
            for o in origins {
                req = req.header(header::ORIGIN, *o);
            }
            origin_allowed(&req.body(()).unwrap().into_parts().0, &[])
        };
        assert!(with(&[]));
        assert!(with(&["http://localhost:3000"]));
        assert!(!with(&["https://evil.example"]));
        assert!(with(&["http://localhost", "https://evil.example"]));
    }
}
