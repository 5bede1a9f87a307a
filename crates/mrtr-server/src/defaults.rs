//! The transports' defaults: the HTTP connections and requests, the stdio
//! transport and the shutdown. The core's defaults (sizes, the sealed state,
//! the engine) are in [`mrtr::defaults`]; the setters that change one of these
//! say so and link here.
//!
//! | area | default | value |
//! |---|---|---|
//! | HTTP connections | [`HEADER_READ_TIMEOUT`], [`IDLE_TIMEOUT`], [`MAX_CONNECTIONS`] | 10 s, 30 s, 512 |
//! | | [`MAX_CONNECTIONS_PER_PEER`], [`METRICS_MAX_CONNECTIONS`], [`METRICS_TIMEOUT`] | 128, 16, 5 s |
//! | | [`FD_RESERVE`], [`HTTP1_MAX_BUF`] | 64, 32 KiB |
//! | HTTP requests | [`MAX_IN_FLIGHT`], [`BODY_BUDGET`], [`BODY_ALLOWANCE`] | 256, 4 MiB, 16 KiB |
//! | | [`BODY_READ_TIMEOUT`] + size ÷ [`BODY_MIN_RATE`] | 5 s + size ÷ 16 KiB/s |
//! | | [`ADMISSION_TIMEOUT`], [`BLOCKING_PARSE_THRESHOLD`] | 10 s, 64 KiB |
//! | stdio, shutdown | [`STDIO_MAX_IN_FLIGHT`], [`SHUTDOWN_GRACE`] | 64, 10 s |
//! | subscriptions | [`LISTEN_KEEPALIVE`] | 15 s |
//! | 2025-era sessions | [`SESSIONS_MAX`], [`SESSIONS_PER_PRINCIPAL_MAX`], [`SESSION_IDLE`] | 1 024, 16, 30 min |
//! | | [`SESSION_REPLAY_EVENTS`] per stream, [`SESSION_STREAMS_KEPT`], [`SESSION_PENDING_MAX`] | 128, 16, 32 |
//! | | [`SESSION_FLOWS_MAX`] | 8 |
//! | | [`SSE_RETRY`] | 1 s |
//! | notifications (both) | [`MAX_NOTIFICATIONS_PER_REQUEST`] | 64 |
//!
//! # Sizing: a 2-core, 1 GiB instance stays up
//! An open connection waiting for its head costs about 15 KiB (measured: its 8 KiB
//! read buffer, the task, the tracker); the read buffer grows only while a body
//! streams through it, and never past [`HTTP1_MAX_BUF`] (32 KiB):
//! [`MAX_CONNECTIONS`] × 40 KiB ≈ 20 MiB at most. A parsed body costs more than
//! its bytes: a `serde_json::Value` is 72 bytes (with `preserve_order`), so the
//! worst body, `[0,0,0,...]`, takes about 36× its size once parsed. What is
//! buffered at once is at most [`MAX_CONNECTIONS`] × [`BODY_ALLOWANCE`] (8 MiB) plus
//! [`BODY_BUDGET`] (4 MiB): 12 MiB of bodies. Only a request holding one of the
//! [`MAX_IN_FLIGHT`] slots is parsed (but a 2025-era session's answer to the
//! server's request, at most [`BODY_ALLOWANCE`] from a caller's live session,
//! which needs none), so at most [`MAX_IN_FLIGHT`] ×
//! [`BODY_ALLOWANCE`] plus [`BODY_BUDGET`] (8 MiB) is parsed at once: at worst
//! about 300 MiB, on top
//! of a resident set of about 10 MiB. That
//! leaves room in 1 GiB for the handlers' own memory. The allocator keeps much of
//! what a burst freed, so bounding the peak is what keeps the resident set down
//! after a burst. CPU: one core parses a 256 KiB body in about 2 ms (strings) to
//! 7 ms (an array of numbers), optimized; bodies over [`BLOCKING_PARSE_THRESHOLD`]
//! are parsed on the blocking pool, half the cores at a time, so the runtime's
//! workers stay free for small requests. File descriptors: the connection cap is
//! lowered at start-up to the process's limit less [`FD_RESERVE`], so new
//! connections wait in the listen backlog instead of failing with `EMFILE`.

use std::time::Duration;

/// How long a request body may take beyond what its size needs at
/// [`BODY_MIN_RATE`]: 5 seconds. A body of `n` bytes must be in within
/// `BODY_READ_TIMEOUT + n / BODY_MIN_RATE` of its head, measured as it arrives, so
/// a body that stalls is cut after 5 s and one trickled slower than the minimum
/// rate soon after, whatever it declared; a 256 KiB body ([`MAX_BODY`](mrtr::defaults::MAX_BODY)) has 21 s.
/// Waiting for a share of [`BODY_BUDGET`] does not count.
/// [`HttpOptions::with_body_timeout`](crate::http::HttpOptions::with_body_timeout) sets it
/// (the `mrtr` binary exposes it as `serve --body-timeout`).
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(5);

/// The slowest a request body may arrive, on average, past [`BODY_READ_TIMEOUT`]:
/// 16 KiB per second (128 kbit/s, a poor mobile link). A trickle below it cannot
/// stretch its read: its deadline grows only with the bytes that arrived.
/// [`HttpOptions::with_body_min_rate`](crate::http::HttpOptions::with_body_min_rate) sets it
/// (the `mrtr` binary exposes it as `serve --body-min-rate`).
pub const BODY_MIN_RATE: u64 = 16 * 1024;

/// How often a quiet `subscriptions/listen` stream gets an SSE comment line, so
/// that proxies and load balancers do not close it as idle: 15 seconds.
pub const LISTEN_KEEPALIVE: Duration = Duration::from_secs(15);
/// The most notifications (progress, log messages) of one request buffered and
/// not yet written: 64, on both transports.
///
/// A handler reports progress and logs synchronously ([`mrtr::Round::progress`],
/// [`mrtr::Round::log`]) and never waits for the client; a client that reads its
/// SSE stream (or stdout) slower than the handler writes would otherwise grow
/// the queue without end. Beyond the cap a notification is dropped, not queued:
/// a dropped progress notification is superseded by the next one that fits (each
/// carries the progress so far), a dropped log message is lost. The response is
/// never dropped: it is written after the notifications still buffered. At most
/// 64 × about 0.5 KiB for a typical notification per request in flight.
pub const MAX_NOTIFICATIONS_PER_REQUEST: usize = 64;

/// How long in-flight requests may take to finish after SIGINT/SIGTERM: 10 seconds.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// The most requests handled at once on one stdio connection: 64. Beyond it,
/// input is not read until one finishes (back-pressure, bounded memory).
pub const STDIO_MAX_IN_FLIGHT: usize = 64;

/// How long a client may take to send a request's head (request line and
/// headers), from its first byte, or from the accept for a new connection: 10
/// seconds. A client that trickles its headers (slowloris) is closed then. A head
/// is a few hundred bytes; even a slow mobile link sends it in well under a second.
/// [`ServeOptions::with_header_read_timeout`](crate::http::ServeOptions::with_header_read_timeout) sets it
/// (the `mrtr` binary exposes it as `serve --header-timeout`).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a kept-alive connection may sit idle between requests: 30 seconds.
/// Long enough for a client to reuse its connection across the rounds of a flow
/// that the model answers; a round a human answers usually takes longer, and the
/// client simply reconnects.
/// [`ServeOptions::with_idle_timeout`](crate::http::ServeOptions::with_idle_timeout) sets it
/// (the `mrtr` binary exposes it as `serve --idle-timeout`).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// The most connections open at once: 512. At the cap, the connection that has
/// waited longest without a request in progress (idle, or still sending its head)
/// is closed to make room; when every connection has a request in progress, new
/// connections wait in the listen backlog. Lowered at start-up to the open-file
/// limit less [`FD_RESERVE`].
/// [`ServeOptions::with_max_connections`](crate::http::ServeOptions::with_max_connections) sets it
/// (the `mrtr` binary exposes it as `serve --max-connections`).
pub const MAX_CONNECTIONS: usize = 512;

/// The most connections one peer may hold open at once: 128, a quarter of
/// [`MAX_CONNECTIONS`]. A peer is an IPv4 address, or an IPv6 /64 (what one host
/// is usually given). A peer at its cap that opens another connection has its own
/// longest-waiting idle connection closed to make room; when all of its
/// connections have a request in progress (bodies that stall, say), the new one
/// is closed at once. So one address cannot take every connection slot, while
/// load generators and pooled clients (a few dozen connections) never notice.
/// Behind a reverse proxy every connection comes from the proxy: raise it to
/// [`MAX_CONNECTIONS`] there, and let the proxy limit its clients.
/// [`ServeOptions::with_max_connections_per_peer`](crate::http::ServeOptions::with_max_connections_per_peer) sets it
/// (the `mrtr` binary exposes it as `serve --max-connections-per-peer`).
pub const MAX_CONNECTIONS_PER_PEER: usize = 128;

/// File descriptors kept free for everything but client connections (the
/// listeners, standard streams, the runtime's own, a key file being re-read): 64.
pub const FD_RESERVE: u64 = 64;

/// The largest read buffer of one HTTP/1 connection: 32 KiB (hyper's default is
/// about 400 KiB). A request head must fit in it (nginx allows 32 KiB of header
/// lines by default); bodies stream through it.
pub const HTTP1_MAX_BUF: usize = 32 * 1024;

/// The most connections a metrics listener (the `mrtr` binary's
/// `serve --metrics-listen`) holds open at once: 16. A scraper needs one; the listener runs the same
/// accept loop as the MCP one, with [`METRICS_TIMEOUT`] for heads and idleness,
/// and its connections are counted in the MCP listener's share of the open-file
/// limit.
pub const METRICS_MAX_CONNECTIONS: usize = 16;

/// The header-read and idle timeout of the metrics listener: 5 seconds.
pub const METRICS_TIMEOUT: Duration = Duration::from_secs(5);

/// The most requests one router handles at once: 256. A request takes its slot
/// once its body is in; beyond the cap it waits (at most [`ADMISSION_TIMEOUT`]),
/// then gets 503. A body still arriving holds no slot, so clients that send their
/// bodies slowly (or never) cannot keep anyone else's request out. Handlers that
/// await (a database, an API) hold their slot while they wait, so the cap is
/// generous.
/// [`HttpOptions::with_max_in_flight`](crate::http::HttpOptions::with_max_in_flight) sets it
/// (the `mrtr` binary exposes it as `serve --max-in-flight`).
pub const MAX_IN_FLIGHT: usize = 256;

/// The bytes of request bodies one router buffers at once beyond each body's
/// [`BODY_ALLOWANCE`]: 4 MiB, sixteen bodies of the largest size [`MAX_BODY`](mrtr::defaults::MAX_BODY). A
/// body larger than the allowance reserves its size (its `Content-Length`, or
/// [`MAX_BODY`](mrtr::defaults::MAX_BODY) for a chunked one) before any of it is read, and waits (at most
/// [`ADMISSION_TIMEOUT`]) while the budget is spent; the reservation lasts until
/// the reply is built, so it also bounds the parsed copies.
/// [`HttpOptions::with_body_budget`](crate::http::HttpOptions::with_body_budget) sets it
/// (the `mrtr` binary exposes it as `serve --body-budget`).
pub const BODY_BUDGET: usize = 4 * 1024 * 1024;

/// The bytes of every body that do not count against [`BODY_BUDGET`]: 16 KiB, the
/// size of the largest `requestState`. Ordinary requests (a `ping`, a round with
/// its state and a few answers) never wait behind large bodies; together they are
/// bounded by one per connection, [`MAX_CONNECTIONS`] × 16 KiB = 8 MiB.
pub const BODY_ALLOWANCE: usize = 16 * 1024;

/// How long a request may wait for a slot under [`MAX_IN_FLIGHT`] and for its
/// share of [`BODY_BUDGET`] before it is answered 503 with `Retry-After`: 10 seconds.
pub const ADMISSION_TIMEOUT: Duration = Duration::from_secs(10);

/// Bodies larger than this are parsed on tokio's blocking pool, not on the
/// runtime's workers: 64 KiB. Parsing is the only part of handling whose cost
/// grows with the body (0.5 to 2 ms per 64 KiB on one core, optimized); below this
/// size the hop to another thread costs about as much as it saves.
pub const BLOCKING_PARSE_THRESHOLD: usize = 64 * 1024;

/// The most 2025-era sessions (`Mcp-Session-Id`) open at once on one HTTP
/// endpoint: 1 024. At the cap the session idle longest goes first; when none
/// is idle (each has a request or a stream open), `initialize` gets 503.
/// [`HttpOptions::with_sessions`](crate::http::HttpOptions::with_sessions).
pub const SESSIONS_MAX: usize = 1024;

/// The most 2025-era sessions one principal holds at once: 16 (an anonymous
/// caller is told apart by its address, as the replay guard does). Its idle
/// longest goes first, as at [`SESSIONS_MAX`].
pub const SESSIONS_PER_PRINCIPAL_MAX: usize = 16;

/// How long a 2025-era session may go unused (no request, no stream open)
/// before it ends: 30 minutes; then its id gets 404, and the client opens a
/// new one, as the spec has it.
pub const SESSION_IDLE: Duration = Duration::from_secs(30 * 60);

/// The events of one SSE stream of a session kept for a client that
/// reconnects with `Last-Event-ID`: the last 128. An event older than these is
/// not replayed.
pub const SESSION_REPLAY_EVENTS: usize = 128;

/// The streams of one session whose events are kept for replay: the last 16
/// (a stream's events go with it).
pub const SESSION_STREAMS_KEPT: usize = 16;

/// The server-to-client requests of one session waiting for their answers at
/// once: 32; a flow that would send another ends with a retryable error.
pub const SESSION_PENDING_MAX: usize = 32;

/// The carrier requests of one 2025-era session that run at once: 8. Each
/// holds an in-flight slot while it waits for the client's answers, so one
/// session cannot take the whole of [`MAX_IN_FLIGHT`]; another gets 503.
pub const SESSION_FLOWS_MAX: usize = 8;

/// The `retry` of the priming event that opens each SSE stream of a 2025-era
/// request: 1 second, how long a client whose stream was closed waits before
/// it reconnects with `Last-Event-ID` (SEP-1699).
pub const SSE_RETRY: Duration = Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use super::*;
    use mrtr::defaults::{MAX_BODY, MAX_TOKEN_LEN};

    #[test]
    fn the_http_limits_fit_together() {
        // The largest state fits the allowance, so a round never waits behind big bodies.
        const { assert!(BODY_ALLOWANCE >= MAX_TOKEN_LEN) };
        // The budget admits the largest body; the largest head fits the read buffer.
        const { assert!(BODY_BUDGET >= MAX_BODY) };
        const { assert!(MAX_BODY > BLOCKING_PARSE_THRESHOLD) };
        const { assert!(HTTP1_MAX_BUF >= 8 * 1024) };
        const { assert!(HEADER_READ_TIMEOUT.as_secs() <= IDLE_TIMEOUT.as_secs()) };
    }
}
