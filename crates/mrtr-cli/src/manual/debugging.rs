//! # Debugging a failed request
//!
//! From what a user reports (a tool error's text, or "it asked me twice") to
//! the trace of the flow, to the private reason, to the upstream call. What
//! the client was told is deliberately thin: the frozen
//! `-32602 Invalid or expired requestState`, or a tool error whose text
//! advises the model. Everything else is on the server's side, bound together
//! by three ids:
//!
//! | id | where | what it finds |
//! |---|---|---|
//! | `correlation_id` | every `mrtr::request` line and `mrtr::diag` record of one request | the request's line, and its private detail |
//! | `trace_id`, `span_id` | the same line, with `--otlp-endpoint` | the request's span, and the rest of the trace: the client's span above it, the upstream calls below it |
//! | `mrtr.flow` | each round's span (16 hex digits, a digest of the flow id) | every round of one MRTR flow, on any instance |
//!
//! # Turn tracing on
//!
//! Run each instance with the collector's OTLP/HTTP address (or set
//! `OTEL_EXPORTER_OTLP_ENDPOINT`, as for any OpenTelemetry SDK):
//!
//! ```text
//! mrtr serve --keys-file /etc/mrtr/keys --otlp-endpoint http://otel-collector:4318
//! ```
//!
//! Each request then has a span named `tools/call deploy` (kind SERVER, the
//! MCP semantic conventions' attributes), the child of the `traceparent` the
//! client sent in `params._meta`. A client that sends one (`mrtr call
//! --otlp-endpoint URL` does; so do the SDKs that follow the conventions) makes
//! the whole flow one trace: its CLIENT span for each round, and under each the
//! SERVER span of the instance that served it. Each round after the first
//! carries a link to the first round's span, read from the sealed state, so a
//! flow split over instances (or over clients that send no `traceparent`) is
//! still found from any of its rounds. A `once` step is an event
//! (`mrtr.once`, with the step and `claimed`, `replayed`, `unavailable` or
//! `sealed`) on the span of the round that reached it.
//!
//! # From a user's report to the reason
//!
//! 1. **The report.** A tool error's text ("This step was already carried out
//!    for this request...", "The server could not record this step...") or the
//!    frozen -32602. Note the time and the tool.
//! 2. **The request's line.** Find it by tool and time (target `mrtr::request`;
//!    with `--log-format json`, a field each):
//!
//!    ```text
//!    grep 'target="deploy"' server.log | grep 'outcome="error:-32602"'
//!    ```
//!
//!    It has the `round`, the private `reject_reason` for a refused state (the
//!    table of reasons is in [`operations`](super::operations)), the
//!    `correlation_id`, and, when tracing, the `trace_id` and `span_id`.
//! 3. **The private detail.** The `mrtr::diag` record with the same
//!    `correlation_id` says what failed, in words meant for you only (never a
//!    token, key, plaintext state or argument value):
//!
//!    ```text
//!    grep 'correlation_id="90de1bf7269eceea"' server.log
//!    ```
//!
//! 4. **The trace.** Open `trace_id` in your tracing backend. The span's
//!    `mrtr.flow` names the flow; search for it to see every round, and follow
//!    the link of any round after the first to round 1. A refused round's span
//!    has `error.type` (the JSON-RPC code, or `tool_error`) and no flow: its state
//!    did not open, so nothing in it is trusted.
//! 5. **A state in hand.** A `requestState` the user or a proxy captured opens
//!    with the fleet's keys, for you only:
//!
//!    ```text
//!    mrtr inspect --keys-file /etc/mrtr/keys 'STATE...'
//!    ```
//!
//!    It prints the claims (round, flow deadline, binding digests, the answers
//!    kept, the `once` results sealed), or the private reason it does not open.
//! 6. **Upstream.** The handler's own calls (an API, a database) are spans under
//!    the request's span when the handler's client is instrumented with
//!    `tracing` (and exported through the same subscriber), and they carry the
//!    same `trace_id`: pass it on in the upstream request's headers
//!    (`traceparent`) and search the upstream service's logs for it.
//!
//! # Common findings
//!
//! | what you see | what it means |
//! |---|---|
//! | rounds of one flow in two traces, the later one linked to the first | the client sent no `traceparent`, or a new one each round: the link still ties them |
//! | `reject_reason="unknown_key"` on one instance only | a key ring that differs: see [`rotation`](super::rotation) |
//! | a `mrtr.once` event `unavailable` | the replay store did not answer: the step did not run, and the user may retry |
//! | a `mrtr.once` event `replayed` | a replayed final round: the step had run, and did not run again |
//! | a SERVER span without a parent | a client that sends no `traceparent`: its spans start at the server |
