//! # Streaming responses
//!
//! Most replies of `mrtr serve` (and of any server built on
//! `mrtr_server::http::mcp_router`) are one JSON body. Three kinds are a
//! `text/event-stream` (Server-Sent Events) instead, and whatever stands between
//! the client and the server (a reverse proxy, a load balancer, an API gateway)
//! must pass them on as they are written.
//!
//! # When a reply is SSE
//!
//! | the request | the response |
//! |---|---|
//! | `Accept` names only `text/event-stream` | the reply as one SSE `message` event, then the end: no different from JSON for an intermediary |
//! | a request whose `_meta` carries a `progressToken`, or an `io.modelcontextprotocol/logLevel`, and whose handler reports progress or logs | an SSE stream: each `notifications/progress` or `notifications/message` as the handler sends it, then the response as the last event. The head waits for the first notification, so a request that sends none is answered with JSON as before |
//! | `subscriptions/listen` (SEP-2575), when the server announces changes (`Service::with_changes`; `mrtr serve` does, for `mrtr://demo/deployments`) | a long-lived SSE stream: `notifications/subscriptions/acknowledged` first, then each `notifications/resources/updated` the client opted in to, each tagged with the listen request's id; an SSE comment (`: keepalive`) every 15 s while it is quiet; on shutdown the listen request's result as the last event |
//!
//! The server sends no request of its own on any of these streams: only
//! notifications about the request (or subscription), then the response.
//!
//! # 2025-era clients: sessions and their streams
//!
//! A client that opens with `initialize` (VS Code, Claude Desktop, MCP Inspector;
//! `--eras both`, the default) gets a session: an `Mcp-Session-Id` header it
//! sends on every later request, bound to the principal that opened it. Then:
//!
//! | the request | the response |
//! |---|---|
//! | `tools/call`, `prompts/get` or `resources/read` from a client that accepts `text/event-stream` | an SSE stream that opens with a priming event (an id, `retry: 1000`, no data), carries the handler's questions as requests to the client (`elicitation/create`, `sampling/createMessage`, `roots/list`), its progress and log messages, then the response. The client POSTs its answers (202) on the session; the flow runs meanwhile |
//! | `GET` with the session's id | its standalone stream: list changes and the resources it subscribed to, a `: keepalive` every 15 s |
//! | `GET` with `Last-Event-ID` | the events of that stream after that one (the last 128 of each of the session's last 16 streams are kept), then the rest as they come |
//! | `DELETE` with the session's id | the session ends (its flows stop); the id gets 404 from then on |
//!
//! A request's stream can be cut without losing the request: the flow goes on,
//! and the client resumes with `GET` and `Last-Event-ID` (SEP-1699). `mrtr
//! serve --sse-poll SECONDS` cuts each such stream itself after that long, for a
//! proxy or load balancer that ends long responses: the client comes back after
//! the priming event's `retry` and reads on. Sessions are bounded: 1 024 in all,
//! 16 per principal (the one idle longest goes first; when none is idle,
//! `initialize` gets 503), 30 minutes idle at most; a flow waits at most 2
//! minutes for an answer and 5 minutes in all. `mrtr_sessions_total` counts them
//! by event, and each request line names its `era`.
//!
//! `--eras modern-only` turns all of this off: `initialize` is answered with
//! -32022 naming 2026-07-28, and `GET`/`DELETE` with 405.
//!
//! # What an intermediary must not do
//!
//! - **Buffer.** An event is useful when it is written: a progress bar that
//!   arrives with the result, or an update that waits for the next one, is lost.
//!   The responses carry `Cache-Control: no-cache` and `X-Accel-Buffering: no`
//!   (nginx honours it); elsewhere turn response buffering off for the MCP path
//!   (nginx `proxy_buffering off`, HAProxy `option http-buffer-request` off,
//!   and no response compression that waits to fill a block).
//! - **Cut a quiet stream.** A listen stream may carry nothing but its keepalive
//!   comment for hours; an idle timeout under 15 s closes it (the client then
//!   listens again, and may miss an update in between). A progress stream is
//!   quiet for as long as the handler is between reports: keep read timeouts
//!   above the server's handler timeout (30 s).
//! - **Cache or retry it.** A stream answers one request; replaying the POST
//!   runs the request again.
//!
//! # What each stream costs
//!
//! A listen stream holds one connection for its life and no in-flight slot
//! (`--max-in-flight` counts requests being handled, not streams being
//! listened to). Open subscriptions are bounded: 1 024 in all and 8 per
//! principal (an anonymous caller is told apart by its address), so size
//! `--max-connections-per-peer` (default 128) above what one client keeps open.
//! A subscriber that reads too slowly (64 updates waiting) has its stream ended
//! rather than buffered; it listens again and reads afresh. A request's
//! notifications are bounded too: beyond the per-request cap they are dropped
//! and counted on its log line, never held.
//!
//! On SIGINT or SIGTERM, `mrtr serve` first ends every listen stream with its
//! result, so the drain (a 10 s grace) is not held up by them; requests
//! still streaming progress finish within the grace like any other.
//!
//! On stdio the same messages are lines on stdout, interleaved with the other
//! replies: a request's notifications come before its response line, and a
//! subscription's lines carry its id; `notifications/cancelled` naming the
//! listen request ends that subscription. A 2025-era `initialize` on stdio
//! makes the process a session: the handler's questions are request lines on
//! stdout, answered by response lines on stdin; a message with the 2026-07-28
//! `_meta` is still served statelessly.
