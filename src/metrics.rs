//! What mrtr counts, through the [`metrics`] facade.
//!
//! The core records and never exports: every call below is a no-op until the
//! application installs a recorder (an exporter's `install`, or
//! `metrics::set_global_recorder`). A library must not install one, so mrtr
//! never does; the `mrtr` binary installs the Prometheus exporter when run as
//! `mrtr serve --metrics-listen ADDR` and serves it on that listener only.
//! Recording reads no clock and does no I/O, so the sans-IO core keeps building
//! for `wasm32-unknown-unknown`.
//!
//! | metric | kind | labels | recorded by |
//! |---|---|---|---|
//! | [`REQUESTS_TOTAL`] `mrtr_requests_total` | counter | `method`, `outcome`, `era` (`modern`, `legacy`), `code` (errors only), `name` (registered tools and prompts only) | [`Service`], once per message |
//! | [`STATE_REJECTIONS_TOTAL`] `mrtr_state_rejections_total` | counter | `reason` ([`RejectReason::as_str`]) | [`Service`], once per refused `requestState` |
//! | [`ROUNDS`] `mrtr_rounds` | histogram | none | [`Service`], the round of each carrier request that reached its handler (1 without `requestState`) |
//! | [`FLOW_SECONDS`] `mrtr_flow_seconds` | histogram | none | the engine, when a flow that issued at least one `InputRequiredResult` completes |
//! | [`ONCE_TOTAL`] `mrtr_once_total` | counter | `result`: `claimed`, `replayed`, `unavailable` (the store could not answer), `sealed` (the result was in the state) | the engine's `once` path |
//! | [`REPLAY_STORE_SECONDS`] `mrtr_replay_store_seconds` | histogram | none | a replay guard that talks to a store, through [`replay_store_latency`] |
//! | [`SESSIONS_TOTAL`] `mrtr_sessions_total` | counter | `event` ([`SessionEvent::as_str`]) | a transport that keeps 2025-era sessions, through [`session`] |
//! | [`SERVER_OPERATION_DURATION`] `mcp.server.operation.duration` | histogram (s) | `mcp.method.name`, `error.type` (errors only), `network.transport` | a transport, once per request, through [`server_operation`] |
//! | [`CLIENT_OPERATION_DURATION`] `mcp.client.operation.duration` | histogram (s) | the same | a client, once per request, through [`client_operation`] |
//! | [`SERVER_SESSION_DURATION`] `mcp.server.session.duration` | histogram (s) | `mcp.protocol.version`, `network.transport` | a transport that keeps 2025-era sessions, when one ends, through [`server_session`] |
//! | [`CLIENT_SESSION_DURATION`] `mcp.client.session.duration` | histogram (s) | the same | a client, when it ends its 2025-era session, through [`client_session`] |
//!
//! The last four are the OpenTelemetry semantic conventions' for MCP, by
//! their names and with their buckets ([`OPERATION_DURATION_BUCKETS`]); an
//! exporter that does not take dots renders them its own way (Prometheus:
//! `mcp_server_operation_duration`). They go through the same facade
//! as the rest: one way to record, whatever the exporter.
//!
//! Call [`describe`] once after installing a recorder to give each metric its
//! help text and unit; [`HISTOGRAM_BUCKETS`] holds bucket bounds that suit each
//! histogram.
//!
//! # Labels are a closed set
//! No label value is ever a string the client chose. `method` is one of the
//! methods the [`Service`] routes, else `other`; `outcome` is `complete`,
//! `input_required`, `tool_error`, `notification` or `error`; `code` is one of the
//! codes of [`crate::error::code`], else `other`; `name` is a tool or prompt name
//! the service registered, and absent for anything else (an unknown tool, a
//! resource URI, a list method). A client that sends a million different method or
//! tool names adds no series. The `rmcp` adapter keeps the same set: `name` is a
//! route of the tool router `mrtr_rmcp::Mrtr::call_tool`
//! routed to, or a tool or prompt of the [`Service`] its `*_service_*` methods
//! serve; a prompt name or resource URI handed to its handler-closure forms
//! (`Mrtr::get_prompt`, `Mrtr::read_resource`, ...) is never a label.
//!
//! # Security
//! The per-reason rejection counts are what the wire hides on purpose: a client
//! only ever sees the one frozen error for a refused `requestState`. They are for
//! the operator, so serve them on a listener of their own (`--metrics-listen`,
//! loopback unless a scraper elsewhere needs it), never next to the MCP endpoint.
//!
//! [`Service`]: crate::service::Service

use std::time::Duration;

use ::metrics::{Label, Unit, counter, describe_counter, describe_histogram, histogram};

use crate::error::code;
use crate::seal::RejectReason;
use crate::time::Timestamp;

/// Requests handled, by `method`, `outcome`, `code` (errors only) and `name`
/// (registered tools and prompts only).
pub const REQUESTS_TOTAL: &str = "mrtr_requests_total";
/// `requestState` tokens refused, by private `reason`.
pub const STATE_REJECTIONS_TOTAL: &str = "mrtr_state_rejections_total";
/// The round each carrier request was (1 for one without `requestState`).
pub const ROUNDS: &str = "mrtr_rounds";
/// The age of a multi-round flow when it completes, in seconds.
pub const FLOW_SECONDS: &str = "mrtr_flow_seconds";
/// `once` steps, by `result`.
pub const ONCE_TOTAL: &str = "mrtr_once_total";
/// The latency of one replay-store operation, in seconds.
pub const REPLAY_STORE_SECONDS: &str = "mrtr_replay_store_seconds";

/// 2025-era sessions, by `event`: opened, refused at the cap, expired, evicted, closed.
pub const SESSIONS_TOTAL: &str = "mrtr_sessions_total";

/// The MCP semantic conventions' server operation duration, in seconds.
pub const SERVER_OPERATION_DURATION: &str = "mcp.server.operation.duration";
/// The MCP semantic conventions' client operation duration, in seconds.
pub const CLIENT_OPERATION_DURATION: &str = "mcp.client.operation.duration";
/// The MCP semantic conventions' server session duration, in seconds: a
/// 2025-era session's life (2026-07-28 has no sessions).
pub const SERVER_SESSION_DURATION: &str = "mcp.server.session.duration";
/// The MCP semantic conventions' client session duration, in seconds: a
/// 2025-era session's life, as the client that ended it measured it.
pub const CLIENT_SESSION_DURATION: &str = "mcp.client.session.duration";

/// The conventions' bucket bounds for the operation durations, in seconds.
pub const OPERATION_DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// Bucket upper bounds for [`ROUNDS`]: every round up to 5, then the default
/// maximum of 16 ([`crate::defaults::MAX_ROUNDS`]) in steps.
pub const ROUNDS_BUCKETS: [f64; 8] = [1.0, 2.0, 3.0, 4.0, 5.0, 8.0, 12.0, 16.0];
/// Bucket upper bounds for [`FLOW_SECONDS`]: from a second (a client answering by
/// itself) to the default flow lifetime of an hour ([`crate::defaults::FLOW_LIFETIME`]).
pub const FLOW_SECONDS_BUCKETS: [f64; 10] = [
    1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0,
];
/// Bucket upper bounds for [`REPLAY_STORE_SECONDS`]: half a millisecond to a second.
pub const REPLAY_STORE_SECONDS_BUCKETS: [f64; 11] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
];
/// Each histogram with its buckets, for an exporter that renders histograms
/// (the Prometheus exporter renders summaries unless given buckets).
pub const HISTOGRAM_BUCKETS: [(&str, &[f64]); 7] = [
    (ROUNDS, &ROUNDS_BUCKETS),
    (FLOW_SECONDS, &FLOW_SECONDS_BUCKETS),
    (REPLAY_STORE_SECONDS, &REPLAY_STORE_SECONDS_BUCKETS),
    (SERVER_OPERATION_DURATION, &OPERATION_DURATION_BUCKETS),
    (CLIENT_OPERATION_DURATION, &OPERATION_DURATION_BUCKETS),
    (SERVER_SESSION_DURATION, &OPERATION_DURATION_BUCKETS),
    (CLIENT_SESSION_DURATION, &OPERATION_DURATION_BUCKETS),
];

/// The methods the service routes: the only values of the `method` label besides
/// [`OTHER`].
pub const METHODS: [&str; 8] = [
    "server/discover",
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "tools/call",
    "prompts/get",
    "resources/read",
];

/// The label value for anything outside a closed set (an unknown or absent
/// method, an unknown error code).
pub const OTHER: &str = "other";

/// Registers the help text and unit of every metric with the installed recorder.
/// Call it once, after installing the recorder; without one it does nothing.
pub fn describe() {
    describe_counter!(
        REQUESTS_TOTAL,
        Unit::Count,
        "Requests handled, by method, outcome, era (modern, legacy), JSON-RPC error code (errors only) and registered tool or prompt name"
    );
    describe_counter!(
        STATE_REJECTIONS_TOTAL,
        Unit::Count,
        "requestState tokens refused, by private reason (never sent to the client)"
    );
    describe_histogram!(
        ROUNDS,
        Unit::Count,
        "The round each carrier request was (1 for a request without requestState)"
    );
    describe_histogram!(
        FLOW_SECONDS,
        Unit::Seconds,
        "Age of a multi-round flow when it completes (whole seconds)"
    );
    describe_counter!(
        ONCE_TOTAL,
        Unit::Count,
        "once steps, by result: claimed, replayed, unavailable, sealed"
    );
    describe_histogram!(
        REPLAY_STORE_SECONDS,
        Unit::Seconds,
        "Latency of one replay store operation"
    );
    describe_counter!(
        SESSIONS_TOTAL,
        Unit::Count,
        "2025-era sessions, by event: opened, refused (at the cap), expired, evicted, closed"
    );
    describe_histogram!(
        SERVER_OPERATION_DURATION,
        Unit::Seconds,
        "MCP request duration as the server measured it, by method, error type and transport"
    );
    describe_histogram!(
        CLIENT_OPERATION_DURATION,
        Unit::Seconds,
        "MCP request duration as the client measured it, by method, error type and transport"
    );
    describe_histogram!(
        SERVER_SESSION_DURATION,
        Unit::Seconds,
        "2025-era session duration as the server measured it, by protocol version and transport"
    );
    describe_histogram!(
        CLIENT_SESSION_DURATION,
        Unit::Seconds,
        "2025-era session duration as the client measured it, by protocol version and transport"
    );
}

/// How an MCP operation ended, for [`server_operation`] and
/// [`client_operation`]: the JSON-RPC error code of an error response, a tool
/// error, or neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperationEnd {
    /// A result that is not a tool error.
    Ok,
    /// A `CallToolResult` with `isError`.
    ToolError,
    /// A JSON-RPC error with this code.
    Error(i64),
    /// No response (the transport failed, or the time ran out).
    Transport,
}

impl OperationEnd {
    /// The `error.type` label: the code (one of [`crate::error::code`], else
    /// `other`), `tool_error` or `transport`; `None` for a success.
    fn label(self) -> Option<&'static str> {
        match self {
            Self::Ok => None,
            Self::ToolError => Some("tool_error"),
            Self::Error(c) => Some(code_label(c)),
            Self::Transport => Some("transport"),
        }
    }
}

/// Records one request served, as the conventions' `mcp.server.operation.duration`:
/// `method` (a method the service routes, else `other`), how it ended, the
/// transport (`tcp` or `pipe`) and how long it took.
///
/// ```
/// use mrtr::metrics::{OperationEnd, server_operation};
/// server_operation(Some("tools/call"), OperationEnd::Error(-32602), "tcp", std::time::Duration::from_millis(3));
/// ```
pub fn server_operation(
    method: Option<&str>,
    end: OperationEnd,
    transport: &'static str,
    took: Duration,
) {
    operation(SERVER_OPERATION_DURATION, method, end, transport, took);
}

/// [`server_operation`] for a client's request: `mcp.client.operation.duration`.
pub fn client_operation(
    method: Option<&str>,
    end: OperationEnd,
    transport: &'static str,
    took: Duration,
) {
    operation(CLIENT_OPERATION_DURATION, method, end, transport, took);
}

fn operation(
    name: &'static str,
    method: Option<&str>,
    end: OperationEnd,
    transport: &'static str,
    took: Duration,
) {
    let method = method_label(method);
    // The labels as the macro's own pairs: no allocation without a recorder.
    match end.label() {
        Some(error) => histogram!(
            name,
            "mcp.method.name" => method,
            "network.transport" => transport,
            "error.type" => error
        ),
        None => histogram!(name, "mcp.method.name" => method, "network.transport" => transport),
    }
    .record(took.as_secs_f64());
}

/// What happened to a 2025-era session, for [`session`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SessionEvent {
    /// `initialize` opened it.
    Opened,
    /// `initialize` was refused: every session at the cap was busy.
    Refused,
    /// It went unused past its idle lifetime.
    Expired,
    /// It was the idlest at a cap, and made room for a new one.
    Evicted,
    /// The client ended it (`DELETE`).
    Closed,
}

impl SessionEvent {
    /// Every event.
    pub const ALL: [SessionEvent; 5] = [
        SessionEvent::Opened,
        SessionEvent::Refused,
        SessionEvent::Expired,
        SessionEvent::Evicted,
        SessionEvent::Closed,
    ];

    /// The `event` label value.
    pub const fn as_str(self) -> &'static str {
        match self {
            SessionEvent::Opened => "opened",
            SessionEvent::Refused => "refused",
            SessionEvent::Expired => "expired",
            SessionEvent::Evicted => "evicted",
            SessionEvent::Closed => "closed",
        }
    }
}

/// Counts one session event in [`SESSIONS_TOTAL`] (the core keeps no
/// sessions: the transports that do report here).
///
/// ```
/// mrtr::metrics::session(mrtr::metrics::SessionEvent::Opened);
/// ```
pub fn session(event: SessionEvent) {
    counter!(SESSIONS_TOTAL, "event" => event.as_str()).increment(1);
}

/// Records the life of one 2025-era session that ended (closed, expired,
/// evicted, or its stdio stream gone) in [`SERVER_SESSION_DURATION`], by the
/// `mcp.protocol.version` it negotiated and its `network.transport`.
///
/// `version` is a label: one of the 2025 era's (`mrtr::legacy::VERSIONS`),
/// else [`OTHER`], never a string a peer chose.
///
/// ```
/// let opened = std::time::Instant::now();
/// mrtr::metrics::server_session("2025-11-25", "tcp", opened.elapsed());
/// ```
pub fn server_session(version: &'static str, transport: &'static str, lasted: Duration) {
    session_duration(SERVER_SESSION_DURATION, version, transport, lasted);
}

/// [`server_session`] for a client that ended its session:
/// `mcp.client.session.duration`.
pub fn client_session(version: &'static str, transport: &'static str, lasted: Duration) {
    session_duration(CLIENT_SESSION_DURATION, version, transport, lasted);
}

fn session_duration(
    name: &'static str,
    version: &'static str,
    transport: &'static str,
    lasted: Duration,
) {
    histogram!(
        name,
        "mcp.protocol.version" => version,
        "network.transport" => transport,
    )
    .record(lasted.as_secs_f64());
}

/// What became of one `once` step, for [`once_result`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum OnceResult {
    /// The replay guard let this round claim the step: it runs now.
    Claimed,
    /// The step was claimed before: a replayed `requestState`, refused.
    Replayed,
    /// The replay guard's store could not answer, so the step was refused (fail closed).
    Unavailable,
    /// The step already ran in this flow: its result came from the sealed state,
    /// and no claim was needed.
    Sealed,
}

impl OnceResult {
    /// Every result.
    #[cfg(test)]
    pub(crate) const ALL: [OnceResult; 4] = [
        OnceResult::Claimed,
        OnceResult::Replayed,
        OnceResult::Unavailable,
        OnceResult::Sealed,
    ];

    /// The `result` label value.
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            OnceResult::Claimed => "claimed",
            OnceResult::Replayed => "replayed",
            OnceResult::Unavailable => "unavailable",
            OnceResult::Sealed => "sealed",
        }
    }
}

/// Counts one `once` step in [`ONCE_TOTAL`]. The engine's `once` path calls it
/// once per step it reaches: [`OnceResult::Sealed`] when the sealed state already
/// holds the step's result, else the replay guard's answer. Without a replay guard
/// nothing is claimed, and nothing is counted but `Sealed`.
pub(crate) fn once_result(result: OnceResult) {
    counter!(ONCE_TOTAL, "result" => result.as_str()).increment(1);
}

/// Records one replay-store operation's latency in [`REPLAY_STORE_SECONDS`].
///
/// The core reads no clock, so the engine cannot time the store: a
/// [`ReplayGuard`](crate::replay::ReplayGuard) that talks to one (Redis, a
/// database) measures each operation with its runtime's clock and reports it
/// here, failures included. An in-process guard has nothing worth timing.
///
/// ```
/// use std::time::Duration;
/// mrtr::metrics::replay_store_latency(Duration::from_micros(350));
/// ```
pub fn replay_store_latency(latency: Duration) {
    histogram!(REPLAY_STORE_SECONDS).record(latency.as_secs_f64());
}

/// How a request ended, for the `outcome` and `code` labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RequestOutcome {
    Complete,
    InputRequired,
    ToolError,
    Notification,
    /// A JSON-RPC error with this code.
    Error(i64),
}

impl RequestOutcome {
    fn as_str(self) -> &'static str {
        match self {
            Self::Complete => "complete",
            Self::InputRequired => "input_required",
            Self::ToolError => "tool_error",
            Self::Notification => "notification",
            Self::Error(_) => "error",
        }
    }
}

/// The `method` label: a method the service routes, else [`OTHER`].
pub(crate) fn method_label(method: Option<&str>) -> &'static str {
    METHODS
        .into_iter()
        .find(|m| Some(*m) == method)
        .unwrap_or(OTHER)
}

/// The `code` label: a code of [`crate::error::code`], else [`OTHER`].
fn code_label(c: i64) -> &'static str {
    match c {
        code::PARSE_ERROR => "-32700",
        code::INVALID_REQUEST => "-32600",
        code::METHOD_NOT_FOUND => "-32601",
        code::INVALID_PARAMS => "-32602",
        code::INTERNAL_ERROR => "-32603",
        code::HEADER_MISMATCH => "-32020",
        code::MISSING_REQUIRED_CLIENT_CAPABILITY => "-32021",
        code::UNSUPPORTED_PROTOCOL_VERSION => "-32022",
        _ => OTHER,
    }
}

/// Counts one request in [`REQUESTS_TOTAL`]. `method` comes from
/// [`method_label`]; `name` must be a name the service registered (the caller
/// checks), or `None`.
pub(crate) fn request(
    method: &'static str,
    name: Option<&str>,
    outcome: RequestOutcome,
    era: crate::wire::Era,
) {
    // Room for all five: a push past `vec!`'s two would grow it.
    let mut labels = Vec::with_capacity(5);
    labels.push(Label::new("method", method));
    labels.push(Label::new("outcome", outcome.as_str()));
    labels.push(Label::new("era", era.as_str()));
    if let RequestOutcome::Error(c) = outcome {
        labels.push(Label::new("code", code_label(c)));
    }
    if let Some(name) = name {
        labels.push(Label::new("name", name.to_owned()));
    }
    counter!(REQUESTS_TOTAL, labels).increment(1);
}

/// Counts one refused `requestState` in [`STATE_REJECTIONS_TOTAL`].
pub(crate) fn state_rejected(reason: RejectReason) {
    counter!(STATE_REJECTIONS_TOTAL, "reason" => reason.as_str()).increment(1);
}

/// Records the round of a carrier request in [`ROUNDS`].
pub(crate) fn round(number: u32) {
    histogram!(ROUNDS).record(f64::from(number));
}

/// Records the age of a completed multi-round flow in [`FLOW_SECONDS`].
pub(crate) fn flow_completed(age: Duration) {
    histogram!(FLOW_SECONDS).record(age.as_secs_f64());
}

/// The age of a flow at `now`, from its deadline: round 1 fixed it at its own
/// time plus the flow lifetime, so the flow began `lifetime` before it. Whole
/// seconds, like every time in a sealed state (the token format carries no
/// first-round time); off by the difference if the lifetime was reconfigured
/// while the flow ran, and never negative.
pub(crate) fn flow_age(deadline: Timestamp, lifetime: Duration, now: Timestamp) -> Duration {
    let began = deadline.sub_secs(lifetime.as_secs());
    Duration::from_secs(now.unix_secs().saturating_sub(began.unix_secs()))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::PromptDefinition;

    use metrics_util::debugging::{DebugValue, DebuggingRecorder};
    use serde_json::json;

    use super::*;
    use crate::engine::{Engine, Form};
    use crate::principal::Principal;
    use crate::result::ToolResult;
    use crate::seal::Keyring;
    use crate::service::{RequestContext, Service};

    /// What was recorded while `f` ran, on a recorder local to this thread (tests
    /// run in parallel; none installs a global recorder): counters by
    /// `name{k=v,...}` (labels sorted), histograms by name.
    fn capture(f: impl FnOnce()) -> (BTreeMap<String, u64>, BTreeMap<String, Vec<f64>>) {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        ::metrics::with_local_recorder(&recorder, f);
        let (mut counters, mut histograms) = (BTreeMap::new(), BTreeMap::new());
        for (key, _, _, value) in snapshotter.snapshot().into_vec() {
            let key = key.key();
            let mut labels: Vec<String> = key
                .labels()
                .map(|l| format!("{}={}", l.key(), l.value()))
                .collect();
            labels.sort();
            let id = format!("{}{{{}}}", key.name(), labels.join(","));
            match value {
                DebugValue::Counter(n) => {
                    counters.insert(id, n);
                }
                DebugValue::Histogram(v) => {
                    histograms.insert(id, v.into_iter().map(f64::from).collect());
                }
                DebugValue::Gauge(_) => panic!("mrtr records no gauge: {id}"),
            }
        }
        (counters, histograms)
    }

    fn service() -> Service {
        Service::new(Engine::new(Keyring::ephemeral(), "t"), "t", "0")
            .tool("echo", "echo", json!({"type": "object"}), |_| {
                Ok(ToolResult::text("hi"))
            })
            .tool("confirm", "asks", json!({"type": "object"}), |r| {
                let _ = r.elicit("ok", Form::confirm("Sure?"))?;
                Ok(ToolResult::text("done"))
            })
            .prompt(
                PromptDefinition::new("greeting").description("a prompt"),
                |_| Ok(crate::PromptResult::new().description("d").user_text("t")),
            )
    }

    fn ctx(now: u64) -> RequestContext {
        RequestContext {
            principal: Principal::anonymous(),
            now: Timestamp::from_unix_secs(now),
            correlation_id: "c".into(),
            peer: None,
            trace: None,
        }
    }

    const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}"#;

    fn call(method: &str, params: &str) -> Vec<u8> {
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{{{META}{params}}}}}"#)
            .into_bytes()
    }

    /// The value of every label of every recorded series.
    fn label_values(counters: &BTreeMap<String, u64>) -> Vec<String> {
        counters
            .keys()
            .flat_map(|k| {
                let inner = &k[k.find('{').unwrap() + 1..k.len() - 1];
                inner
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(|kv| kv.split_once('=').unwrap().1.to_owned())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    #[test]
    fn client_chosen_methods_and_names_never_become_label_values() {
        let s = service();
        let (counters, _) = capture(|| {
            for body in [
                call("evil/method-1", ""),
                call("evil/method-2", ""),
                call("tools/call", r#","name":"evil-tool""#),
                call("prompts/get", r#","name":"evil-prompt""#),
                call("resources/read", r#","uri":"file:///evil""#),
                br#"{"jsonrpc":"2.0","method":"notifications/evil"}"#.to_vec(),
                b"{not json".to_vec(),
            ] {
                s.handle_sync(&body, &ctx(1_800_000_000));
            }
        });
        for v in label_values(&counters) {
            assert!(!v.contains("evil"), "client string {v:?} in {counters:?}");
        }
        let expected: BTreeMap<String, u64> = [
            (
                "mrtr_requests_total{code=-32601,era=modern,method=other,outcome=error}",
                2,
            ),
            (
                "mrtr_requests_total{code=-32602,era=modern,method=tools/call,outcome=error}",
                1,
            ),
            (
                "mrtr_requests_total{code=-32602,era=modern,method=prompts/get,outcome=error}",
                1,
            ),
            (
                "mrtr_requests_total{code=-32602,era=modern,method=resources/read,outcome=error}",
                1,
            ),
            (
                "mrtr_requests_total{era=modern,method=other,outcome=notification}",
                1,
            ),
            (
                "mrtr_requests_total{code=-32700,era=modern,method=other,outcome=error}",
                1,
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        assert_eq!(counters, expected);
    }

    #[test]
    fn registered_names_are_labels_and_rounds_are_recorded() {
        let s = service();
        let (counters, histograms) = capture(|| {
            s.handle_sync(
                &call("tools/call", r#","name":"echo""#),
                &ctx(1_800_000_000),
            );
            s.handle_sync(
                &call("tools/call", r#","name":"confirm""#),
                &ctx(1_800_000_000),
            );
            s.handle_sync(
                &call("prompts/get", r#","name":"greeting""#),
                &ctx(1_800_000_000),
            );
            s.handle_sync(&call("tools/list", ""), &ctx(1_800_000_000));
        });
        let expected: BTreeMap<String, u64> = [
            (
                "mrtr_requests_total{era=modern,method=tools/call,name=echo,outcome=complete}",
                1,
            ),
            (
                "mrtr_requests_total{era=modern,method=tools/call,name=confirm,outcome=input_required}",
                1,
            ),
            (
                "mrtr_requests_total{era=modern,method=prompts/get,name=greeting,outcome=complete}",
                1,
            ),
            ("mrtr_requests_total{era=modern,method=tools/list,outcome=complete}", 1),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        assert_eq!(counters, expected);
        assert_eq!(histograms["mrtr_rounds{}"], [1.0, 1.0, 1.0]);
        assert!(!histograms.contains_key("mrtr_flow_seconds{}"));
    }

    /// Round 1 of the `confirm` tool at `t0`; returns its requestState.
    fn first_round(s: &Service, t0: u64) -> String {
        let r = s.handle_sync(&call("tools/call", r#","name":"confirm""#), &ctx(t0));
        let v: serde_json::Value = serde_json::from_str(r.body.as_deref().unwrap()).unwrap();
        v["result"]["requestState"].as_str().unwrap().to_owned()
    }

    fn retry(state: &str) -> Vec<u8> {
        call(
            "tools/call",
            &format!(
                r#","name":"confirm","requestState":"{state}","inputResponses":{{"ok":{{"action":"accept","content":{{"confirm":true}}}}}}"#
            ),
        )
    }

    #[test]
    fn rejections_by_reason_and_the_age_of_completed_flows() {
        let s = service();
        let t0 = 1_800_000_000;
        let state = first_round(&s, t0);
        // One character in the middle of the ciphertext: authentic no more.
        let mut tampered = state.clone().into_bytes();
        let mid = tampered.len() / 2;
        tampered[mid] = if tampered[mid] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(tampered).unwrap();
        let (counters, histograms) = capture(|| {
            // Completes 42 s after round 1.
            s.handle_sync(&retry(&state), &ctx(t0 + 42));
            s.handle_sync(&retry(&tampered), &ctx(t0 + 1));
            s.handle_sync(&retry("AAAA"), &ctx(t0 + 1));
            // Past the round's 10 minutes and the 60 s skew: authentic but expired.
            s.handle_sync(&retry(&state), &ctx(t0 + 700));
        });
        let rejections: BTreeMap<&str, u64> = counters
            .iter()
            .filter(|(k, _)| k.starts_with(STATE_REJECTIONS_TOTAL))
            .map(|(k, n)| (k.as_str(), *n))
            .collect();
        assert_eq!(
            rejections,
            BTreeMap::from([
                ("mrtr_state_rejections_total{reason=expired}", 1),
                ("mrtr_state_rejections_total{reason=malformed}", 1),
                ("mrtr_state_rejections_total{reason=tag}", 1),
            ])
        );
        assert_eq!(
            counters["mrtr_requests_total{era=modern,method=tools/call,name=confirm,outcome=complete}"],
            1
        );
        assert_eq!(
            counters["mrtr_requests_total{era=modern,method=tools/call,name=confirm,outcome=tool_error}"],
            1,
            "an expired state on tools/call is a tool error"
        );
        assert_eq!(
            histograms["mrtr_rounds{}"],
            [2.0],
            "refused states carry no known round"
        );
        assert_eq!(histograms["mrtr_flow_seconds{}"], [42.0]);
    }

    #[test]
    fn once_results_and_store_latency() {
        let (counters, histograms) = capture(|| {
            for r in OnceResult::ALL {
                once_result(r);
            }
            once_result(OnceResult::Replayed);
            replay_store_latency(Duration::from_millis(3));
        });
        assert_eq!(counters["mrtr_once_total{result=claimed}"], 1);
        assert_eq!(counters["mrtr_once_total{result=replayed}"], 2);
        assert_eq!(counters["mrtr_once_total{result=unavailable}"], 1);
        assert_eq!(counters["mrtr_once_total{result=sealed}"], 1);
        assert_eq!(histograms["mrtr_replay_store_seconds{}"], [0.003]);
    }

    #[test]
    fn session_durations_by_version_and_transport() {
        let (_, histograms) = capture(|| {
            server_session("2025-06-18", "tcp", Duration::from_secs(2));
            client_session("2025-11-25", "pipe", Duration::from_millis(500));
            client_session(OTHER, "pipe", Duration::from_secs(1));
        });
        assert_eq!(
            histograms["mcp.server.session.duration{mcp.protocol.version=2025-06-18,network.transport=tcp}"],
            [2.0]
        );
        assert_eq!(
            histograms["mcp.client.session.duration{mcp.protocol.version=2025-11-25,network.transport=pipe}"],
            [0.5]
        );
        assert_eq!(
            histograms["mcp.client.session.duration{mcp.protocol.version=other,network.transport=pipe}"],
            [1.0]
        );
    }

    #[test]
    fn a_2025_era_request_is_counted_once_with_its_era() {
        use crate::legacy::{BoxFuture, RequestFailed, ServerRequests};
        use crate::service::ParsedMessage;
        struct Accepts;
        impl ServerRequests for Accepts {
            fn request<'a>(
                &'a self,
                _: &'a str,
                _: &'a serde_json::Value,
            ) -> BoxFuture<'a, Result<serde_json::Value, RequestFailed>> {
                Box::pin(async { Ok(json!({"action": "accept", "content": {"confirm": true}})) })
            }
            fn sleep(&self, _: Duration) -> BoxFuture<'static, ()> {
                Box::pin(std::future::pending())
            }
        }
        let s = service();
        let (counters, _) = capture(|| {
            let init = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}}}}"#;
            let (session, _) = s
                .initialize(ParsedMessage::parse(init), &ctx(1_800_000_000))
                .unwrap();
            let call =
                br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"confirm"}}"#;
            let c = ctx(1_800_000_000);
            let reply = std::pin::pin!(s.handle_legacy(
                ParsedMessage::parse(call),
                &session,
                &c,
                &Accepts,
                None,
            ));
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            let std::task::Poll::Ready(reply) = std::future::Future::poll(reply, &mut cx) else {
                panic!("pending");
            };
            assert_eq!(reply.log.outcome, "complete");
        });
        // One count for the call, whatever its rounds: the bridge's are not requests.
        assert_eq!(
            counters.get(
                "mrtr_requests_total{era=legacy,method=tools/call,name=confirm,outcome=complete}"
            ),
            Some(&1),
            "{counters:?}"
        );
        assert_eq!(
            counters.get("mrtr_requests_total{era=legacy,method=other,outcome=complete}"),
            Some(&1),
            "initialize: {counters:?}"
        );
    }

    #[test]
    fn every_method_label_is_routed_and_nothing_else_is() {
        let s = service();
        for m in METHODS {
            assert_eq!(method_label(Some(m)), m);
            let r = s.handle_sync(&call(m, ""), &ctx(1_800_000_000));
            assert!(
                !r.body.unwrap().contains("-32601"),
                "{m} is a label value but not routed"
            );
        }
        assert_eq!(method_label(Some("tools/call ")), OTHER);
        assert_eq!(method_label(None), OTHER);
    }

    #[test]
    fn labels_are_closed_sets() {
        assert_eq!(code_label(code::INVALID_PARAMS), "-32602");
        assert_eq!(code_label(-1), OTHER);
        assert_eq!(code_label(i64::MAX), OTHER);
        let names: Vec<_> = OnceResult::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(names, ["claimed", "replayed", "unavailable", "sealed"]);
        for (name, buckets) in HISTOGRAM_BUCKETS {
            // mrtr's own, or the MCP semantic conventions'.
            assert!(
                name.starts_with("mrtr_") || name.starts_with("mcp."),
                "{name}"
            );
            assert!(buckets.windows(2).all(|w| w[0] < w[1]), "{name}");
        }
        // error.type: a known code, tool_error or transport; nothing for a success.
        assert_eq!(OperationEnd::Ok.label(), None);
        assert_eq!(OperationEnd::ToolError.label(), Some("tool_error"));
        assert_eq!(OperationEnd::Transport.label(), Some("transport"));
        assert_eq!(OperationEnd::Error(-32602).label(), Some("-32602"));
        assert_eq!(OperationEnd::Error(12345).label(), Some(OTHER));
    }

    #[test]
    fn flow_age_counts_from_the_first_round() {
        let t0 = Timestamp::from_unix_secs(1_800_000_000);
        let hour = Duration::from_secs(3600);
        assert_eq!(
            flow_age(t0.add_secs(3600), hour, t0.add_secs(90)),
            Duration::from_secs(90)
        );
        assert_eq!(flow_age(t0.add_secs(3600), hour, t0), Duration::ZERO);
        // A lifetime shortened mid-flow never makes the age negative.
        assert_eq!(flow_age(t0.add_secs(3600), hour / 2, t0), Duration::ZERO);
    }
}
