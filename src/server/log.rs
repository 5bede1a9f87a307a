//! Logging: tracing to stderr, and the one line written per request.
//!
//! The request line carries only what [`RequestLog`] holds (ids, names,
//! outcome, round, private reject reason) plus the transport's status and
//! duration: never a body, a token, a key or an argument value.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::io::IsTerminal;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tracing_subscriber::EnvFilter;

use super::LogFormat;
use crate::service::RequestLog;

/// The tracing target of the per-request line (`RUST_LOG=mrtr::request=info`).
pub const REQUEST_TARGET: &str = "mrtr::request";

/// Installs the global subscriber: stderr, `RUST_LOG` (default `info`), human or JSON.
///
/// Calling it twice is harmless (the second call changes nothing).
pub fn init(format: LogFormat) {
    let (filter, bad_filter) = match std::env::var("RUST_LOG") {
        Ok(s) if !s.trim().is_empty() => match EnvFilter::try_new(&s) {
            Ok(f) => (f, false),
            Err(_) => (EnvFilter::new("info"), true),
        },
        _ => (EnvFilter::new("info"), false),
    };
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none());
    let installed = match format {
        LogFormat::Human => builder.try_init().is_ok(),
        LogFormat::Json => builder.json().try_init().is_ok(),
    };
    if installed && bad_filter {
        tracing::warn!("RUST_LOG is not a valid filter; using `info`");
    }
}

/// Routes panic reports through tracing (ERROR, on stderr) with the location
/// only: a panic message could quote a request's arguments, which the log never
/// holds. The transports turn the panic itself into a -32603 reply.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()));
        tracing::error!(location = location.as_deref(), "panic (message withheld)");
    }));
}

/// A fresh correlation id: 16 lower-case hex characters.
///
/// Unique and unguessable enough for joining log lines (SipHash under the
/// process's random std hasher keys, over a counter and the clock); it is not a
/// secret and never leaves the process except in the SSE event id.
pub fn correlation_id() -> String {
    static KEYS: OnceLock<RandomState> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = KEYS.get_or_init(RandomState::new).build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    h.write_u128(nanos);
    h.write_u32(std::process::id());
    format!("{:016x}", h.finish())
}

/// Writes the one INFO line for a request.
///
/// `http_status` is `None` on stdio.
pub fn request(
    correlation_id: &str,
    transport: &'static str,
    log: &RequestLog,
    http_status: Option<u16>,
    elapsed: Duration,
) {
    // Milliseconds with microsecond resolution.
    let duration_ms = (elapsed.as_micros() as f64) / 1000.0;
    tracing::info!(
        target: REQUEST_TARGET,
        correlation_id,
        transport,
        jsonrpc_id = log.jsonrpc_id.as_deref(),
        method = log.method.as_deref(),
        target = log.target.as_deref(),
        outcome = log.outcome.as_str(),
        round = log.round,
        reject_reason = log.reject_reason,
        detail = log.detail.as_deref(),
        http_status,
        duration_ms,
        "request"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn correlation_ids_are_16_hex_and_distinct() {
        let a = correlation_id();
        let b = correlation_id();
        assert_eq!(a.len(), 16);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_ne!(a, b);
    }
}
