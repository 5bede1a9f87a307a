//! Every default the core reads (and the sizes the transports and the client
//! derive theirs from), in one place. The setters that change a default say so
//! and link here; nothing else in the crate writes these numbers. The defaults
//! are secure first and convenient second: short-lived state, bounded rounds and
//! sizes.
//!
//! | area | default | value |
//! |---|---|---|
//! | sealed state | [`STATE_TTL`] per round, [`FLOW_LIFETIME`] per flow | 10 min, 1 h |
//! | | [`MAX_STATE_TTL`] ceiling, [`CLOCK_SKEW`] | 24 h, 60 s |
//! | | [`MAX_TOKEN_LEN`], [`MAX_PLAINTEXT`] | 16 384 chars, 8 192 bytes |
//! | engine | [`MAX_ROUNDS`], [`MAX_ASKS_PER_ROUND`] | 16, 16 |
//! | service | [`HANDLER_TIMEOUT`], [`LIST_CACHE_TTL`] | 30 s, 60 s |
//! | | [`PAGE_SIZE`] | 100 items |
//! | 2025-era flows | [`LEGACY_ASK_TIMEOUT`] per ask, [`LEGACY_FLOW_TIMEOUT`] per flow | 2 min, 5 min |
//! | tasks | [`TASKS_MAX`], [`TASKS_PER_PRINCIPAL_MAX`], [`TASK_TTL`], [`TASK_POLL_INTERVAL`], [`TASK_LEASE`] | 1 024, 64, 1 h, 500 ms, 30 s |
//! | subscriptions | [`SUBSCRIPTIONS_MAX`], [`SUBSCRIPTIONS_PER_PRINCIPAL_MAX`] | 1 024, 8 |
//! | | [`SUBSCRIPTION_URIS_MAX`], [`SUBSCRIPTION_QUEUE_MAX`] | 100 URIs, 64 notifications |
//! | parameter headers | [`MAX_PARAM_HEADERS`] per tool, [`PARAM_HEADER_MAX_DEPTH`] | 32, 16 levels |
//! | | [`MAX_PARAM_HEADER_LEN`] | 8 KiB |
//! | replay guard | [`REPLAY_MAX_CLAIMS`], [`REPLAY_MAX_CLAIMS_PER_PRINCIPAL`] (in memory) | 1 000 000, 10 000 |
//! | client | [`CLIENT_MAX_ROUNDS`] (= [`MAX_ROUNDS`] + 1), [`CLIENT_TOTAL_TIMEOUT`] | 17, 5 min |
//! | | [`CLIENT_REQUEST_TIMEOUT`] | 30 s |
//! | | [`CLIENT_MAX_QUESTIONS_PER_ROUND`] (= [`MAX_ASKS_PER_ROUND`]), [`CLIENT_MAX_CONCURRENT_ANSWERS`] | 16, 4 |
//! | | [`CLIENT_MAX_SAMPLING_PER_FLOW`], [`CLIENT_MAX_ANSWER_BYTES`] (= [`MAX_BODY`]) | 16, 256 KiB |
//! | | [`CLIENT_MAX_STATE_BYTES`] (= 4 × [`MAX_TOKEN_LEN`]), [`CLIENT_MAX_UPLOAD_BYTES`] (= [`CLIENT_MAX_ROUNDS`] × [`MAX_BODY`]) | 64 KiB, 4.25 MiB |
//! | | [`BACKOFF_INITIAL`] → [`BACKOFF_MAX`] | 50 ms → 250 ms |
//! | requests | [`MAX_BODY`], [`AUDIENCE`] | 256 KiB, `mrtr-reference` |
//!
//! Each crate owns the defaults only it reads: the transports' connection and
//! request limits are `mrtr_server::defaults`, the Redis replay guard's timeouts
//! `mrtr_redis::defaults`, and the binary's listen address and flag ceilings
//! `mrtr_cli::defaults`.
//!
//! # Rounds: client and server agree
//! The server counts the `InputRequiredResult`s one flow may issue
//! ([`MAX_ROUNDS`]); the client counts the requests it sends, the first one
//! included ([`CLIENT_MAX_ROUNDS`]). A flow that uses all of a default server's
//! rounds takes `MAX_ROUNDS + 1` requests, so that is the client's default: a
//! default client finishes every flow a default server allows, and a server that
//! asks for more is cut off by its own limit first (a tool error the model can
//! read) rather than by the client's.

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

/// The most items one page of a list (`tools/list`, `prompts/list`,
/// `resources/list`, `resources/templates/list`) holds: 100; a longer list
/// ends its page with a `nextCursor` (MCP 2026-07-28 §Pagination).
/// [`Service::with_page_size`](crate::service::Service::with_page_size) sets it.
pub const PAGE_SIZE: usize = 100;

/// The longest resource URI matched against the resource templates: 4 KiB. A
/// `resources/read` of a longer URI that no static resource has is refused
/// (-32602) before any template is tried
/// ([`Service::resource_template`](crate::service::Service::resource_template)).
pub const TEMPLATE_URI_MAX_BYTES: usize = 4 * 1024;

/// The longest value of one resource-template variable, percent-decoded: 1 KiB
/// (a longer one and its template does not match).
pub const TEMPLATE_VARIABLE_MAX_BYTES: usize = 1024;

/// How long a 2025-era flow waits for the client's answer to one ask (a
/// server-to-client request): 2 minutes; then the flow ends with a retryable
/// error. [`legacy::Bounds`](crate::legacy::Bounds).
pub const LEGACY_ASK_TIMEOUT: Duration = Duration::from_secs(120);

/// How long a whole 2025-era flow (its asks and handler runs, all in one open
/// request) may take: 5 minutes, not the hour a 2026-07-28 flow may take across
/// requests. [`legacy::Bounds`](crate::legacy::Bounds).
pub const LEGACY_FLOW_TIMEOUT: Duration = Duration::from_secs(300);

/// The most tasks (the tasks extension) a service keeps at once: 1 024; another
/// `tools/call` that would create one is refused (-32600) until one expires.
/// [`Service::with_tasks`](crate::service::Service::with_tasks).
pub const TASKS_MAX: usize = 1024;

/// The most tasks one principal holds at once: 64 (an anonymous caller is told
/// apart by its address).
pub const TASKS_PER_PRINCIPAL_MAX: usize = 64;

/// How long a task is kept from its creation (its `ttlMs`): 1 hour; then its
/// id is unknown.
pub const TASK_TTL: Duration = Duration::from_secs(3600);

/// The `pollIntervalMs` a task suggests: half a second.
pub const TASK_POLL_INTERVAL: Duration = Duration::from_millis(500);

/// How long a task's runner holds its lease unless it renews it (every third
/// of it): 30 seconds; how soon another instance takes over the run of one
/// that died.
pub const TASK_LEASE: Duration = Duration::from_secs(30);

/// The most `tasks/get` one flow sends to follow its task: 10 000 (at the
/// shortest interval, 100 ms, over a quarter of an hour; at the default, hours).
pub const CLIENT_MAX_TASK_POLLS: u32 = 10_000;

/// How long a client waits between two polls of a task when the server
/// suggests nothing (`pollIntervalMs`): one second.
pub const TASK_POLL_DEFAULT: Duration = Duration::from_secs(1);

/// The shortest wait between two polls of a task, whatever the server
/// suggests: 100 ms (a client is not made to poll faster).
pub const TASK_POLL_MIN: Duration = Duration::from_millis(100);

/// The longest wait between two polls of a task, whatever the server
/// suggests: 30 s.
pub const TASK_POLL_MAX: Duration = Duration::from_secs(30);

/// The most `subscriptions/listen` streams open on one service at once: 1 024;
/// another is refused (-32600) until one closes.
/// [`Changes`](crate::service::Changes).
pub const SUBSCRIPTIONS_MAX: usize = 1024;

/// The most `subscriptions/listen` streams one principal holds open at once: 8
/// (an anonymous caller is told apart by its address, as the replay guard does).
pub const SUBSCRIPTIONS_PER_PRINCIPAL_MAX: usize = 8;

/// The most URIs one subscription's `resourceSubscriptions` names: 100 (-32602
/// beyond).
pub const SUBSCRIPTION_URIS_MAX: usize = 100;

/// The most notifications waiting on one subscription for its reader: 64 (an
/// update of a URI already waiting is not counted again); a reader further
/// behind has its subscription ended.
pub const SUBSCRIPTION_QUEUE_MAX: usize = 64;

/// The most `x-mcp-header` declarations one tool's `inputSchema` may hold: 32
/// (MCP 2026-07-28, Streamable HTTP §Custom Headers from Tool Parameters). A
/// [`Service`](crate::service::Service) refuses to register a tool with more;
/// the server looks at no more parameter headers than its tool declares.
/// [`ParamHeaders::from_input_schema`](crate::streamable_http::ParamHeaders::from_input_schema).
pub const MAX_PARAM_HEADERS: usize = 32;

/// How deep in nested object properties `x-mcp-header` declarations are looked
/// for: 16 levels; a schema nesting deeper is refused as its declarations are.
/// [`ParamHeaders::from_input_schema`](crate::streamable_http::ParamHeaders::from_input_schema).
pub const PARAM_HEADER_MAX_DEPTH: usize = 16;

/// The longest value of one `Mcp-Param-*` header the server decodes: 8 KiB; a
/// longer one is refused (-32020) before it is decoded.
/// [`check_param_headers`](crate::streamable_http::check_param_headers).
pub const MAX_PARAM_HEADER_LEN: usize = 8 * 1024;

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
// Requests (what every transport reads)
// ---------------------------------------------------------------------------

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
    fn the_state_ttl_fits_under_its_ceiling() {
        const { assert!(STATE_TTL.as_secs() <= MAX_STATE_TTL.as_secs()) };
    }
}
