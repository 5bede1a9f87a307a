//! Every default of mrtr, in one place.
//!
//! The setters that change a default say so and link here; nothing else in the
//! crate writes these numbers. The defaults are secure first and convenient
//! second: short-lived state, bounded rounds and sizes, a loopback listener.
//!
//! | area | default | value |
//! |---|---|---|
//! | sealed state | [`STATE_TTL`] per round, [`FLOW_LIFETIME`] per flow | 10 min, 1 h |
//! | | [`MAX_STATE_TTL`] ceiling, [`CLOCK_SKEW`] | 24 h, 60 s |
//! | | [`MAX_TOKEN_LEN`], [`MAX_PLAINTEXT`] | 16 384 chars, 8 192 bytes |
//! | engine | [`MAX_ROUNDS`], [`MAX_ASKS_PER_ROUND`] | 16, 16 |
//! | service | [`HANDLER_TIMEOUT`], [`LIST_CACHE_TTL`] | 30 s, 60 s |
//! | replay guard | [`REPLAY_MAX_CLAIMS`], [`REPLAY_MAX_CLAIMS_PER_PRINCIPAL`] (in memory) | 1 000 000, 10 000 |
//! | | [`REPLAY_MAX_CLAIMS_CEILING`] (configuration bound) | 20 000 000 |
//! | | [`REDIS_COMMAND_TIMEOUT`], [`REDIS_CONNECT_TIMEOUT`] (Redis) | 250 ms, 1 s |
//! | | [`REDIS_POLICY_RECHECK`], [`REDIS_WAIT_TIMEOUT`] (Redis) | 60 s, 100 ms |
//! | client | [`CLIENT_MAX_ROUNDS`] (= [`MAX_ROUNDS`] + 1), [`CLIENT_TOTAL_TIMEOUT`] | 17, 5 min |
//! | | [`CLIENT_REQUEST_TIMEOUT`] | 30 s |
//! | | [`CLIENT_MAX_QUESTIONS_PER_ROUND`] (= [`MAX_ASKS_PER_ROUND`]), [`CLIENT_MAX_CONCURRENT_ANSWERS`] | 16, 4 |
//! | | [`CLIENT_MAX_SAMPLING_PER_FLOW`], [`CLIENT_MAX_ANSWER_BYTES`] (= [`MAX_BODY`]) | 16, 256 KiB |
//! | | [`CLIENT_MAX_STATE_BYTES`] (= 4 × [`MAX_TOKEN_LEN`]), [`CLIENT_MAX_UPLOAD_BYTES`] (= [`CLIENT_MAX_ROUNDS`] × [`MAX_BODY`]) | 64 KiB, 4.25 MiB |
//! | | [`BACKOFF_INITIAL`] → [`BACKOFF_MAX`] | 50 ms → 250 ms |
//! | server | [`LISTEN`], [`MAX_BODY`], [`AUDIENCE`] | `127.0.0.1:8808`, 256 KiB, `mrtr-reference` |
//! | | [`MAX_CLOCK_SKEW`] (configuration bound), [`STDIO_MAX_IN_FLIGHT`] | 1 h, 64 |
//! | | [`SHUTDOWN_GRACE`] | 10 s |
//! | HTTP connections | [`HEADER_READ_TIMEOUT`], [`IDLE_TIMEOUT`], [`MAX_CONNECTIONS`] | 10 s, 30 s, 512 |
//! | | [`MAX_CONNECTIONS_PER_PEER`], [`METRICS_MAX_CONNECTIONS`] | 128, 16 |
//! | HTTP requests | [`MAX_IN_FLIGHT`], [`BODY_BUDGET`], [`BODY_ALLOWANCE`] | 256, 4 MiB, 16 KiB |
//! | | [`BODY_READ_TIMEOUT`] + size ÷ [`BODY_MIN_RATE`] | 5 s + size ÷ 16 KiB/s |
//! | | [`ADMISSION_TIMEOUT`], [`BLOCKING_PARSE_THRESHOLD`] | 10 s, 64 KiB |
//!
//! # Sizing the HTTP limits: a 2-core, 1 GiB instance stays up
//! An open connection waiting for its head costs about 15 KiB (measured: its 8 KiB
//! read buffer, the task, the tracker); the read buffer grows only while a body
//! streams through it, and never past [`HTTP1_MAX_BUF`] (32 KiB):
//! [`MAX_CONNECTIONS`] × 40 KiB ≈ 20 MiB at most. A parsed body costs more than
//! its bytes: a `serde_json::Value` is 72 bytes (with `preserve_order`), so the
//! worst body, `[0,0,0,...]`, takes about 36× its size once parsed. What is
//! buffered at once is at most [`MAX_CONNECTIONS`] × [`BODY_ALLOWANCE`] (8 MiB) plus
//! [`BODY_BUDGET`] (4 MiB): 12 MiB of bodies. Only a request holding one of the
//! [`MAX_IN_FLIGHT`] slots is parsed, so at most [`MAX_IN_FLIGHT`] ×
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
//!
//! # Rounds: client and server agree
//! The server counts the `InputRequiredResult`s one flow may issue
//! ([`MAX_ROUNDS`]); the client counts the requests it sends, the first one
//! included ([`CLIENT_MAX_ROUNDS`]). A flow that uses all of a default server's
//! rounds takes `MAX_ROUNDS + 1` requests, so that is the client's default: a
//! default client finishes every flow a default server allows, and a server that
//! asks for more is cut off by its own limit first (a tool error the model can
//! read) rather than by the client's.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::Duration;

// ---------------------------------------------------------------------------
// Sealed state (`SealConfig`)
// ---------------------------------------------------------------------------

/// Per-round expiry of a `requestState`: 10 minutes (a human may have to answer).
/// [`SealConfig::ttl`](crate::seal::SealConfig::ttl) sets it (the `mrtr`
/// binary exposes it as `serve --state-ttl`).
pub const STATE_TTL: Duration = Duration::from_secs(600);

/// Ceiling for the per-round expiry, and for how far in the future an `exp` may
/// lie when opened: 24 hours. [`SealConfig::max_ttl`](crate::seal::SealConfig::max_ttl)
/// sets it; the `mrtr` binary also refuses a `serve --state-ttl` above it.
pub const MAX_STATE_TTL: Duration = Duration::from_secs(24 * 3600);

/// Absolute lifetime of a flow, fixed in round 1: 1 hour.
/// [`SealConfig::flow_lifetime`](crate::seal::SealConfig::flow_lifetime).
pub const FLOW_LIFETIME: Duration = Duration::from_secs(3600);

/// Clock skew tolerated between instances on expiry checks: 60 seconds.
/// [`SealConfig::clock_skew`](crate::seal::SealConfig::clock_skew) sets it (the `mrtr`
/// binary exposes it as `serve --clock-skew`).
pub const CLOCK_SKEW: Duration = Duration::from_secs(60);

/// The ceiling for a configured [`CLOCK_SKEW`]: 1 hour. The core does
/// not read it; the `mrtr` binary refuses a `serve --clock-skew` above it.
pub const MAX_CLOCK_SKEW: Duration = Duration::from_secs(3600);

/// Longest token `open` accepts: 16 384 characters.
/// [`SealConfig::max_token_len`](crate::seal::SealConfig::max_token_len).
pub const MAX_TOKEN_LEN: usize = 16 * 1024;

/// Largest plaintext (claims plus state) `seal` accepts: 8 192 bytes.
/// [`SealConfig::max_plaintext`](crate::seal::SealConfig::max_plaintext).
pub const MAX_PLAINTEXT: usize = 8 * 1024;

// ---------------------------------------------------------------------------
// Engine and service
// ---------------------------------------------------------------------------

/// The most `InputRequiredResult`s one flow may issue: 16.
/// [`Engine::max_rounds`](crate::engine::Engine::max_rounds) sets it (the `mrtr`
/// binary exposes it as `serve --max-rounds`).
pub const MAX_ROUNDS: u32 = 16;

/// The most questions one round may ask: 16.
/// [`Engine::max_asks_per_round`](crate::engine::Engine::max_asks_per_round).
pub const MAX_ASKS_PER_ROUND: usize = 16;

/// How long a handler may run for one request: 30 seconds.
/// [`Service::handler_timeout`](crate::service::Service::handler_timeout).
pub const HANDLER_TIMEOUT: Duration = Duration::from_secs(30);

/// How long clients may cache list and discover results (`ttlMs`): 60 seconds,
/// `cacheScope: public`. [`Service::with_list_caching`](crate::service::Service::with_list_caching).
pub const LIST_CACHE_TTL: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------
// Replay guards (`replay`)
// ---------------------------------------------------------------------------

/// The most live claims a [`MemoryReplayGuard`](crate::replay::MemoryReplayGuard)
/// holds: 1 000 000 (beyond it a claim is refused as unavailable: fail closed).
///
/// A hundred times [`REPLAY_MAX_CLAIMS_PER_PRINCIPAL`], so it takes a hundred
/// principals (or, for anonymous callers, a hundred peer addresses), each at its
/// quota, to fill it for everyone. Full, it holds about 105 MiB (see
/// [`MemoryReplayGuard`](crate::replay::MemoryReplayGuard) for the figure per claim).
/// [`MemoryReplayGuard::with_max_claims`](crate::replay::MemoryReplayGuard::with_max_claims) sets it
/// (the `mrtr` binary exposes it as `serve --replay-max-claims`).
pub const REPLAY_MAX_CLAIMS: usize = 1_000_000;

/// The most live claims one principal (an anonymous caller: one peer address, or
/// IPv6 /64) may hold in a [`MemoryReplayGuard`](crate::replay::MemoryReplayGuard):
/// 10 000, a hundredth of [`REPLAY_MAX_CLAIMS`], so a handful of callers cannot fill
/// it for everyone. A claim lives until its flow's deadline plus twice the clock
/// skew (about 62 min by default), so this lets one principal start about 2.7
/// `once` steps a second, sustained.
/// [`MemoryReplayGuard::with_max_claims_per_principal`](crate::replay::MemoryReplayGuard::with_max_claims_per_principal) sets it
/// (the `mrtr` binary exposes it as `serve --replay-max-claims-per-principal`).
pub const REPLAY_MAX_CLAIMS_PER_PRINCIPAL: usize = 10_000;

/// The ceiling for a configured [`REPLAY_MAX_CLAIMS`] (and so
/// [`REPLAY_MAX_CLAIMS_PER_PRINCIPAL`]): 20 000 000, about 2 GiB of claims when
/// full. The core does not read it; the `mrtr` binary refuses a
/// `serve --replay-max-claims` above it.
pub const REPLAY_MAX_CLAIMS_CEILING: usize = 20_000_000;

/// How long the Redis replay guard (`mrtr-redis`) waits for the answer to one
/// claim, reconnecting included, before it answers unavailable: 250 ms.
/// `RedisReplayGuard::command_timeout`.
pub const REDIS_COMMAND_TIMEOUT: Duration = Duration::from_millis(250);

/// How long one attempt of the Redis replay guard (`mrtr-redis`) to connect
/// may take: 1 second. `RedisReplayGuard::connect_timeout`.
pub const REDIS_CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// How often the Redis replay guard (`mrtr-redis`) reads the store's
/// `maxmemory-policy` again on a connection that stays up (it reads it on every
/// connect too): 60 seconds. `RedisReplayGuard::policy_recheck`.
pub const REDIS_POLICY_RECHECK: Duration = Duration::from_secs(60);

/// How long a claim waits for replicas to acknowledge it (`WAIT`) when the Redis
/// store URL asks for them with `?wait=N` and no `wait_timeout_ms`: 100 ms.
pub const REDIS_WAIT_TIMEOUT: Duration = Duration::from_millis(100);

// ---------------------------------------------------------------------------
// Client
// ---------------------------------------------------------------------------

/// The most requests one client flow may send, the first one included:
/// [`MAX_ROUNDS`] + 1, so a default client can finish every flow a default server
/// allows (see the module doc). [`FlowRules::with_max_rounds`](crate::client::FlowRules::with_max_rounds) sets it
/// (the `mrtr` binary exposes it as `call --max-rounds`).
pub const CLIENT_MAX_ROUNDS: u32 = MAX_ROUNDS + 1;

/// The longest one client flow may take: 5 minutes.
/// `mrtr-client`'s `ClientBuilder::with_total_timeout` sets it
/// (the `mrtr` binary exposes it as `call --timeout`).
pub const CLIENT_TOTAL_TIMEOUT: Duration = Duration::from_secs(300);

/// The longest one request of a client flow may wait for its response: 30 seconds.
/// A server that holds a retry open while the user finishes a URL-mode step needs
/// more. `mrtr-client`'s `ClientBuilder::with_request_timeout` sets it
/// (the `mrtr` binary exposes it as `call --request-timeout`).
pub const CLIENT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The most questions (input requests) the client accepts in one round: 16, what a
/// default server may ask ([`MAX_ASKS_PER_ROUND`]). A round that asks more ends the
/// flow before any of its questions is answered.
/// [`FlowRules::with_max_questions_per_round`](crate::client::FlowRules::with_max_questions_per_round) sets it
/// (the `mrtr` binary exposes it as `call --max-questions-per-round`).
pub const CLIENT_MAX_QUESTIONS_PER_ROUND: usize = MAX_ASKS_PER_ROUND;

/// The most questions of one round the client answers at the same time: 4 (the
/// rest wait their turn).
/// `mrtr-client`'s `ClientBuilder::with_max_concurrent_answers` sets it
/// (the `mrtr` binary exposes it as `call --max-concurrent-answers`).
pub const CLIENT_MAX_CONCURRENT_ANSWERS: usize = 4;

/// The most sampling requests (each one a call to the client's model) one client
/// flow accepts, over all its rounds: 16, one per round of a default server's
/// longest flow.
/// [`FlowRules::with_max_sampling_per_flow`](crate::client::FlowRules::with_max_sampling_per_flow) sets it
/// (the `mrtr` binary exposes it as `call --max-sampling-per-flow`).
pub const CLIENT_MAX_SAMPLING_PER_FLOW: u32 = 16;

/// The most bytes of answers (`inputResponses`, as serialized JSON) one client
/// flow sends, over all its rounds: 256 KiB, the most a default server reads in
/// one request ([`MAX_BODY`]).
/// [`FlowRules::with_max_answer_bytes`](crate::client::FlowRules::with_max_answer_bytes) sets it
/// (the `mrtr` binary exposes it as `call --max-answer-bytes`).
pub const CLIENT_MAX_ANSWER_BYTES: u64 = MAX_BODY as u64;

/// The longest `requestState` the client echoes: 64 KiB, four times the longest
/// one a default server seals or opens ([`MAX_TOKEN_LEN`], 16 KiB), so a server
/// that raised its own limit still works. A longer one ends the flow before it is
/// sent back: a hostile server cannot make the client upload a state of megabytes
/// on every round.
/// [`FlowRules::with_max_state_bytes`](crate::client::FlowRules::with_max_state_bytes) sets it
/// (the `mrtr` binary exposes it as `call --max-state-bytes`).
pub const CLIENT_MAX_STATE_BYTES: usize = 4 * MAX_TOKEN_LEN;

/// The most bytes of requests (JSON-RPC, as serialized JSON) one client flow
/// sends, over all its rounds: 4.25 MiB, [`CLIENT_MAX_ROUNDS`] requests of the
/// largest body a default server reads ([`MAX_BODY`]), so a default client can
/// send every flow a default server accepts. A request that would go over it is
/// not sent.
/// [`FlowRules::with_max_upload_bytes`](crate::client::FlowRules::with_max_upload_bytes) sets it
/// (the `mrtr` binary exposes it as `call --max-upload-bytes`).
pub const CLIENT_MAX_UPLOAD_BYTES: u64 = CLIENT_MAX_ROUNDS as u64 * MAX_BODY as u64;

/// The client's first wait before retrying after a state-only round: 50 ms.
pub const BACKOFF_INITIAL: Duration = Duration::from_millis(50);

/// The client's longest wait before retrying after a state-only round: 250 ms.
pub const BACKOFF_MAX: Duration = Duration::from_millis(250);

// ---------------------------------------------------------------------------
// Server (the transports of `mrtr-server`)
// ---------------------------------------------------------------------------

/// The listen address: loopback only, so nothing else on the network can reach it.
pub const LISTEN: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 8808));

/// The largest request (one HTTP body or one stdio line): 256 KiB.
///
/// What a client legitimately sends is small: the largest piece of a request is
/// the echoed `requestState`, at most [`MAX_TOKEN_LEN`] (16 KiB); the rest are
/// the tool's arguments and the answers of one round (form fields, a sampled
/// message, a list of roots). 256 KiB is sixteen times the largest state, room for
/// generous arguments and answers, and a quarter of the old 1 MiB: every body the
/// server holds, and every parse it does, costs at most a quarter as much.
/// `mrtr_server::http::HttpOptions::with_max_body` sets it
/// (the `mrtr` binary exposes it as `serve --max-body`).
pub const MAX_BODY: usize = 256 * 1024;

/// The audience a sealed `requestState` is bound to.
///
/// A fixed name rather than the listen address: instances of one fleet listen on
/// different addresses (or on port 0), yet must open each other's state.
pub const AUDIENCE: &str = "mrtr-reference";

/// How long a request body may take beyond what its size needs at
/// [`BODY_MIN_RATE`]: 5 seconds. A body of `n` bytes must be in within
/// `BODY_READ_TIMEOUT + n / BODY_MIN_RATE` of its head, measured as it arrives, so
/// a body that stalls is cut after 5 s and one trickled slower than the minimum
/// rate soon after, whatever it declared; a 256 KiB body ([`MAX_BODY`]) has 21 s.
/// Waiting for a share of [`BODY_BUDGET`] does not count.
/// `mrtr_server::http::HttpOptions::with_body_timeout` sets it
/// (the `mrtr` binary exposes it as `serve --body-timeout`).
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(5);

/// The slowest a request body may arrive, on average, past [`BODY_READ_TIMEOUT`]:
/// 16 KiB per second (128 kbit/s, a poor mobile link). A trickle below it cannot
/// stretch its read: its deadline grows only with the bytes that arrived.
/// `mrtr_server::http::HttpOptions::with_body_min_rate` sets it
/// (the `mrtr` binary exposes it as `serve --body-min-rate`).
pub const BODY_MIN_RATE: u64 = 16 * 1024;

/// How long in-flight requests may take to finish after SIGINT/SIGTERM: 10 seconds.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// The most requests handled at once on one stdio connection: 64. Beyond it,
/// input is not read until one finishes (back-pressure, bounded memory).
pub const STDIO_MAX_IN_FLIGHT: usize = 64;

// ---------------------------------------------------------------------------
// HTTP connections (`ServeOptions`): see "Sizing" in the module doc
// ---------------------------------------------------------------------------

/// How long a client may take to send a request's head (request line and
/// headers), from its first byte, or from the accept for a new connection: 10
/// seconds. A client that trickles its headers (slowloris) is closed then. A head
/// is a few hundred bytes; even a slow mobile link sends it in well under a second.
/// `mrtr_server::http::ServeOptions::with_header_read_timeout` sets it
/// (the `mrtr` binary exposes it as `serve --header-timeout`).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a kept-alive connection may sit idle between requests: 30 seconds.
/// Long enough for a client to reuse its connection across the rounds of a flow
/// that the model answers; a round a human answers usually takes longer, and the
/// client simply reconnects.
/// `mrtr_server::http::ServeOptions::with_idle_timeout` sets it
/// (the `mrtr` binary exposes it as `serve --idle-timeout`).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// The most connections open at once: 512. At the cap, the connection that has
/// waited longest without a request in progress (idle, or still sending its head)
/// is closed to make room; when every connection has a request in progress, new
/// connections wait in the listen backlog. Lowered at start-up to the open-file
/// limit less [`FD_RESERVE`].
/// `mrtr_server::http::ServeOptions::with_max_connections` sets it
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
/// `mrtr_server::http::ServeOptions::with_max_connections_per_peer` sets it
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

// ---------------------------------------------------------------------------
// HTTP requests (`HttpOptions`, per router)
// ---------------------------------------------------------------------------

/// The most requests one router handles at once: 256. A request takes its slot
/// once its body is in; beyond the cap it waits (at most [`ADMISSION_TIMEOUT`]),
/// then gets 503. A body still arriving holds no slot, so clients that send their
/// bodies slowly (or never) cannot keep anyone else's request out. Handlers that
/// await (a database, an API) hold their slot while they wait, so the cap is
/// generous.
/// `mrtr_server::http::HttpOptions::with_max_in_flight` sets it
/// (the `mrtr` binary exposes it as `serve --max-in-flight`).
pub const MAX_IN_FLIGHT: usize = 256;

/// The bytes of request bodies one router buffers at once beyond each body's
/// [`BODY_ALLOWANCE`]: 4 MiB, sixteen bodies of the largest size [`MAX_BODY`]. A
/// body larger than the allowance reserves its size (its `Content-Length`, or
/// [`MAX_BODY`] for a chunked one) before any of it is read, and waits (at most
/// [`ADMISSION_TIMEOUT`]) while the budget is spent; the reservation lasts until
/// the reply is built, so it also bounds the parsed copies.
/// `mrtr_server::http::HttpOptions::with_body_budget` sets it
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_and_server_rounds_agree() {
        // A server flow of MAX_ROUNDS input-required results completes on the next request.
        assert_eq!(CLIENT_MAX_ROUNDS, MAX_ROUNDS + 1);
    }

    #[test]
    fn a_default_client_accepts_every_round_a_default_server_asks() {
        const { assert!(CLIENT_MAX_QUESTIONS_PER_ROUND >= MAX_ASKS_PER_ROUND) };
        const { assert!(CLIENT_MAX_CONCURRENT_ANSWERS >= 1) };
        const { assert!(CLIENT_REQUEST_TIMEOUT.as_secs() <= CLIENT_TOTAL_TIMEOUT.as_secs()) };
        // Every state a default server seals is echoed, and every flow it reads is sent.
        const { assert!(CLIENT_MAX_STATE_BYTES >= MAX_TOKEN_LEN) };
        const { assert!(CLIENT_MAX_UPLOAD_BYTES >= CLIENT_MAX_ROUNDS as u64 * MAX_BODY as u64) };
    }

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

    #[test]
    fn the_state_ttl_fits_under_its_ceiling() {
        const { assert!(STATE_TTL.as_secs() <= MAX_STATE_TTL.as_secs()) };
        const { assert!(CLOCK_SKEW.as_secs() <= MAX_CLOCK_SKEW.as_secs()) };
        assert_eq!(LISTEN.to_string(), "127.0.0.1:8808");
    }
}
