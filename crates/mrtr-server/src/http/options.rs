//! [`HttpOptions`]: the router's limits and its allowed `Origin` and `Host`
//! values, with the `Host` patterns they are kept as.

use std::time::Duration;

use crate::ServerConfigError;
use mrtr::defaults;

/// The router's limits: the body size, the requests in flight, the body bytes
/// buffered at once, and the allowed `Origin` and `Host` values.
///
/// ```
/// use mrtr_server::http::HttpOptions;
/// let options = HttpOptions::default()
///     .with_max_body(64 * 1024)
///     .with_max_in_flight(128)
///     .with_body_budget(2 * 1024 * 1024)
///     .allow_origin("https://app.example")?
///     .allow_host("mcp.example.com")?;
/// # Ok::<(), mrtr_server::ServerConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct HttpOptions {
    pub(super) max_body: usize,
    pub(super) body_timeout: Duration,
    pub(super) body_min_rate: u64,
    pub(super) max_in_flight: usize,
    pub(super) body_budget: usize,
    pub(super) allowed_origins: Vec<String>,
    pub(super) allowed_hosts: Vec<HostPattern>,
    pub(super) sessions: SessionLimits,
    pub(super) sse_poll: Option<Duration>,
}

/// The bounds of the 2025-era sessions an endpoint keeps
/// ([`HttpOptions::with_sessions`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// The most sessions open at once ([`crate::defaults::SESSIONS_MAX`]).
    pub max: usize,
    /// The most one principal holds ([`crate::defaults::SESSIONS_PER_PRINCIPAL_MAX`]).
    pub per_principal: usize,
    /// How long one may go unused ([`crate::defaults::SESSION_IDLE`]).
    pub idle: Duration,
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self {
            max: crate::defaults::SESSIONS_MAX,
            per_principal: crate::defaults::SESSIONS_PER_PRINCIPAL_MAX,
            idle: crate::defaults::SESSION_IDLE,
        }
    }
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            max_body: defaults::MAX_BODY,
            body_timeout: crate::defaults::BODY_READ_TIMEOUT,
            body_min_rate: crate::defaults::BODY_MIN_RATE,
            max_in_flight: crate::defaults::MAX_IN_FLIGHT,
            body_budget: crate::defaults::BODY_BUDGET,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            sessions: SessionLimits::default(),
            sse_poll: None,
        }
    }
}

/// The largest body any setting admits: a reservation of the body budget is
/// counted in `u32` permits.
const MAX_BODY_CEILING: usize = u32::MAX as usize;

impl HttpOptions {
    /// The bounds of the 2025-era sessions (at least one session, one per
    /// principal). Default: [`SessionLimits::default`].
    #[must_use]
    pub fn with_sessions(mut self, limits: SessionLimits) -> Self {
        self.sessions = SessionLimits {
            max: limits.max.max(1),
            per_principal: limits.per_principal.max(1),
            idle: limits.idle,
        };
        self
    }

    /// Close the SSE stream of a 2025-era request after it has been open this
    /// long (SEP-1699 polling): the request goes on, and the client reconnects
    /// with `GET` and `Last-Event-ID` after the priming event's `retry`
    /// ([`crate::defaults::SSE_RETRY`]), getting what it missed and the rest.
    /// For proxies and load balancers that cut long responses. Default: never.
    #[must_use]
    pub fn with_sse_poll(mut self, after: Option<Duration>) -> Self {
        self.sse_poll = after;
        self
    }

    /// The largest request body accepted, in bytes (at most 4 GiB); larger ones
    /// get 413. Nothing is allocated from a declared `Content-Length`: the buffer
    /// grows with the bytes that arrive. Default: [`defaults::MAX_BODY`](mrtr::defaults::MAX_BODY) (256 KiB).
    #[must_use]
    pub fn with_max_body(mut self, bytes: usize) -> Self {
        self.max_body = bytes.min(MAX_BODY_CEILING);
        self
    }

    /// How long a body may take beyond what its size needs at
    /// [`HttpOptions::with_body_min_rate`]: a body must be in within this plus
    /// (bytes arrived so far) ÷ (minimum rate) of the start of its read, or the
    /// request gets 408. A body that stalls is cut after this long; one trickled
    /// below the minimum rate soon after. Waiting for a share of the body budget
    /// does not count. Default: [`crate::defaults::BODY_READ_TIMEOUT`] (5 s).
    #[must_use]
    pub fn with_body_timeout(mut self, timeout: Duration) -> Self {
        self.body_timeout = timeout;
        self
    }

    /// The slowest average rate a body may arrive at past
    /// [`HttpOptions::with_body_timeout`], in bytes per second (at least 1). Default:
    /// [`crate::defaults::BODY_MIN_RATE`] (16 KiB/s).
    #[must_use]
    pub fn with_body_min_rate(mut self, bytes_per_sec: u64) -> Self {
        self.body_min_rate = bytes_per_sec.max(1);
        self
    }

    /// The most requests this router handles at once (at least 1). A request
    /// takes its slot once its body is in; beyond the cap it waits for at most
    /// [`crate::defaults::ADMISSION_TIMEOUT`], then gets 503 with `Retry-After: 1`.
    /// Default: [`crate::defaults::MAX_IN_FLIGHT`] (256).
    #[must_use]
    pub fn with_max_in_flight(mut self, n: usize) -> Self {
        self.max_in_flight = n.max(1);
        self
    }

    /// The bytes of request bodies this router buffers at once beyond the first
    /// [`crate::defaults::BODY_ALLOWANCE`] (16 KiB) of each; raised to the body limit if
    /// smaller, so every admissible body fits. A body over the allowance reserves
    /// its size before any of it is read and keeps the reservation until its reply
    /// is built; while the budget is spent it waits, for at most
    /// [`crate::defaults::ADMISSION_TIMEOUT`], then gets 503 with `Retry-After: 1`.
    /// Default: [`crate::defaults::BODY_BUDGET`] (4 MiB).
    #[must_use]
    pub fn with_body_budget(mut self, bytes: usize) -> Self {
        self.body_budget = bytes;
        self
    }

    /// Allows requests whose `Origin` is `origin` (`scheme://host[:port]`).
    /// Default: only requests without `Origin` or from `http://localhost`,
    /// `http://127.0.0.1` and `http://[::1]` (any port); any other `Origin` gets 403
    /// (spec: Streamable HTTP §Security Warning, DNS rebinding).
    ///
    /// # Errors
    /// [`ServerConfigError`] if `origin` is not of the form `scheme://host[:port]`.
    pub fn allow_origin(mut self, origin: &str) -> Result<Self, ServerConfigError> {
        let origin = normalize_origin(origin)?;
        if !self.allowed_origins.contains(&origin) {
            self.allowed_origins.push(origin);
        }
        Ok(self)
    }

    /// Allows requests addressed to `host` (`NAME`, `NAME:PORT`, an IPv4 address,
    /// or `[IPv6]`, with or without `:PORT`; without a port, any port matches).
    /// Once any host is allowed, a request whose `Host` (or absolute request target)
    /// names another, or that has none, gets `421 Misdirected Request` before
    /// anything else is looked at: this server does not answer for that name. That
    /// is the `Host` half of the DNS-rebinding defence (see the module doc); 421
    /// rather than 403 because the request may be fine, only sent to the wrong
    /// name. Default: no list, every `Host` passes (`mrtr serve` on a loopback
    /// address allows the loopback names unless `--allow-host` is given).
    ///
    /// # Errors
    /// [`ServerConfigError`] if `host` is not of that form.
    pub fn allow_host(mut self, host: &str) -> Result<Self, ServerConfigError> {
        let pattern = parse_authority(host.trim())
            .map(|(host, port)| HostPattern { host, port })
            .ok_or_else(|| ServerConfigError(format!("not a host (NAME[:PORT]): {host:?}")))?;
        if !self.allowed_hosts.contains(&pattern) {
            self.allowed_hosts.push(pattern);
        }
        Ok(self)
    }
}

impl HttpOptions {
    /// The allowed hosts as `NAME[:PORT]` (empty: every `Host` is answered).
    pub fn allowed_host_names(&self) -> Vec<String> {
        self.allowed_hosts
            .iter()
            .map(|p| match p.port {
                Some(port) => format!("{}:{port}", p.host),
                None => p.host.clone(),
            })
            .collect()
    }
}

/// One allowed `Host`: a lower-case name or address (IPv6 in brackets), and a
/// port unless any port will do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct HostPattern {
    pub(super) host: String,
    pub(super) port: Option<u16>,
}

/// Splits `NAME[:PORT]` or `[IPv6][:PORT]` into a lower-case host and a port;
/// `None` if it is neither (empty parts, stray characters, a port over 65535).
pub(super) fn parse_authority(authority: &str) -> Option<(String, Option<u16>)> {
    let (host, port) = if authority.starts_with('[') {
        let end = authority.find(']')?;
        let (host, rest) = authority.split_at(end + 1);
        let inner = &host[1..host.len() - 1];
        if inner.is_empty()
            || !inner
                .bytes()
                .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
        {
            return None;
        }
        (
            host,
            if rest.is_empty() {
                None
            } else {
                Some(rest.strip_prefix(':')?)
            },
        )
    } else {
        let (host, port) = match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        };
        if host.is_empty()
            || host.len() > 253
            || !host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
        {
            return None;
        }
        (host, port)
    };
    let port = match port {
        None => None,
        Some(p) if !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()) => {
            Some(p.parse::<u16>().ok()?)
        }
        Some(_) => return None,
    };
    Some((host.to_ascii_lowercase(), port))
}

/// Normalizes an origin (`scheme://host[:port]`): lower case, no trailing `/`
/// ([`mrtr::streamable_http::normalize_origin`]).
///
/// # Errors
/// [`ServerConfigError`] if it is not of that form (no path, query, user info or spaces).
pub fn normalize_origin(origin: &str) -> Result<String, ServerConfigError> {
    mrtr::streamable_http::normalize_origin(origin).ok_or_else(|| {
        ServerConfigError(format!("not an origin (scheme://host[:port]): {origin:?}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorities_parse_as_names_addresses_and_ports() {
        let p = |a: &str| parse_authority(a);
        assert_eq!(p("Example.COM"), Some(("example.com".into(), None)));
        assert_eq!(
            p("example.com:8443"),
            Some(("example.com".into(), Some(8443)))
        );
        assert_eq!(p("127.0.0.1:0"), Some(("127.0.0.1".into(), Some(0))));
        assert_eq!(p("[::1]"), Some(("[::1]".into(), None)));
        assert_eq!(
            p("[::FFFF:127.0.0.1]:80"),
            Some(("[::ffff:127.0.0.1]".into(), Some(80)))
        );
        for bad in [
            "",
            ":80",
            "a:",
            "a:b",
            "a:65536",
            "a:123456",
            "a b",
            "a/b",
            "user@a",
            "[::1",
            "[]",
            "[::1]x",
            "[::1]:",
            "[zz]",
            "a:1:2",
            "é.example",
        ] {
            assert_eq!(p(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn http_options_normalize_origins() {
        let o = HttpOptions::default()
            .allow_origin("https://App.Example/")
            .unwrap()
            .allow_origin("https://app.example")
            .unwrap();
        assert_eq!(o.allowed_origins, ["https://app.example"]);
        assert_eq!(o.max_body, defaults::MAX_BODY);
        assert_eq!(o.max_in_flight, crate::defaults::MAX_IN_FLIGHT);
        assert_eq!(o.body_budget, crate::defaults::BODY_BUDGET);
        assert!(o.allowed_hosts.is_empty());
        assert_eq!(
            HttpOptions::default().with_max_in_flight(0).max_in_flight,
            1
        );
        assert!(HttpOptions::default().allow_origin("app.example").is_err());
    }
}
