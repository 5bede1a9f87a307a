//! The 2025 era's types and the bridge, re-exported as [`crate::legacy`]
//! (they live beside the service, whose subscriptions a session holds).

use std::future::Future;
use std::sync::Mutex;
use std::task::{Context, Poll};
use std::time::Duration;

use serde_json::{Map, Value};

use super::Subscription;
use crate::engine::Outcome;
use crate::error::{Error, Fallback, Retry, ToolAdvice};
use crate::replay::BoxFuture;
use crate::wire::meta::LogLevel;
use crate::wire::{
    CarrierMethod, META_CLIENT_CAPABILITIES, META_LOG_LEVEL, META_PROTOCOL_VERSION,
    PROTOCOL_VERSION, truncate, type_name,
};

/// The 2025-era protocol versions served, newest first: `initialize` gets the
/// version it asked for when it is one of these, else the first.
pub const VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

/// Which eras a service serves ([`Service::with_eras`](crate::Service::with_eras)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Eras {
    /// Both, on the same endpoint: the default.
    #[default]
    Both,
    /// 2026-07-28 only: `initialize` is answered with -32022 naming the
    /// versions served, and Streamable HTTP answers `GET` and `DELETE` with 405.
    ModernOnly,
    /// The 2025 era only: a request without a session is refused as before
    /// `initialize`.
    LegacyOnly,
}

impl Eras {
    /// Whether 2025-era clients are served.
    pub fn serves_legacy(self) -> bool {
        self != Self::ModernOnly
    }

    /// Whether 2026-07-28 clients are served.
    pub fn serves_modern(self) -> bool {
        self != Self::LegacyOnly
    }

    /// `both`, `modern-only` or `legacy-only`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Both => "both",
            Self::ModernOnly => "modern-only",
            Self::LegacyOnly => "legacy-only",
        }
    }
}

impl std::fmt::Display for Eras {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Eras {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [Self::Both, Self::ModernOnly, Self::LegacyOnly]
            .into_iter()
            .find(|e| e.as_str() == s)
            .ok_or_else(|| "expected both, modern-only or legacy-only".to_owned())
    }
}

/// The time bounds of a 2025-era flow, which lives in one open request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// How long one ask waits for the client's answer (default 2 minutes,
    /// [`defaults::LEGACY_ASK_TIMEOUT`](crate::defaults::LEGACY_ASK_TIMEOUT)).
    pub ask_timeout: Duration,
    /// How long the whole flow, asks and handler runs, may take (default 5
    /// minutes, [`defaults::LEGACY_FLOW_TIMEOUT`](crate::defaults::LEGACY_FLOW_TIMEOUT)).
    pub flow_timeout: Duration,
}

impl Default for Bounds {
    fn default() -> Self {
        Self {
            ask_timeout: crate::defaults::LEGACY_ASK_TIMEOUT,
            flow_timeout: crate::defaults::LEGACY_FLOW_TIMEOUT,
        }
    }
}

/// One 2025-era connection's state: what `initialize` negotiated, the log
/// level, and (on a service with [`Changes`](crate::service::Changes)) the
/// notifications for its standalone stream. Made by
/// [`Service::initialize`](crate::Service::initialize), or by
/// [`Session::from_handshake`] where another SDK did the handshake.
#[derive(Debug)]
pub struct Session {
    version: &'static str,
    capabilities: Value,
    log_level: Mutex<Option<LogLevel>>,
    changes: Option<Subscription>,
}

impl Session {
    /// A session whose handshake was done elsewhere (rmcp's): `version` as
    /// negotiated (one of [`VERSIONS`], else the newest) and the client's
    /// capabilities as declared.
    pub fn from_handshake(version: &str, capabilities: Value) -> Self {
        Self::new(version, capabilities, None)
    }

    pub(crate) fn new(version: &str, capabilities: Value, changes: Option<Subscription>) -> Self {
        let version = VERSIONS
            .into_iter()
            .find(|v| *v == version)
            .unwrap_or(VERSIONS[0]);
        let capabilities = if capabilities.is_object() {
            capabilities
        } else {
            Value::Object(Map::new())
        };
        Self {
            version,
            capabilities,
            log_level: Mutex::new(None),
            changes,
        }
    }

    /// The protocol version negotiated.
    pub fn version(&self) -> &'static str {
        self.version
    }

    /// The capabilities the client declared at `initialize`.
    pub fn capabilities(&self) -> &Value {
        &self.capabilities
    }

    /// The level `logging/setLevel` set, if any: log messages below it are not
    /// sent, and none are before it is set.
    pub fn log_level(&self) -> Option<LogLevel> {
        *self
            .log_level
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn set_log_level(&self, level: LogLevel) {
        *self
            .log_level
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(level);
    }

    pub(crate) fn changes(&self) -> Option<&Subscription> {
        self.changes.as_ref()
    }

    /// The next notification for the session's standalone stream (a list that
    /// changed, a subscribed resource updated), as a JSON-RPC message;
    /// `Ready(None)` when there will be none (the service has no changes hub,
    /// or the server is closing it:
    /// [`Changes::close_all`](crate::service::Changes::close_all)).
    pub fn poll_notification(&self, cx: &mut Context<'_>) -> Poll<Option<String>> {
        match &self.changes {
            Some(s) => s.poll_next(cx),
            None => Poll::Ready(None),
        }
    }

    /// [`Session::poll_notification`] as a future.
    pub async fn next_notification(&self) -> Option<String> {
        std::future::poll_fn(|cx| self.poll_notification(cx)).await
    }

    /// A carrier request's params as the engine reads them for this session:
    /// the version the engine keys its state with, the capabilities of
    /// `initialize` and the session's log level in `_meta`, and no
    /// `requestState` or `inputResponses` of the client's (a 2025-era flow
    /// starts in its request, and its state never leaves the server).
    pub(crate) fn params(&self, params: Option<&Value>) -> Result<Map<String, Value>, Error> {
        let mut params = match params {
            None => Map::new(),
            Some(Value::Object(p)) => p.clone(),
            Some(other) => {
                return Err(Error::invalid_params(format!(
                    "params must be an object, not {}",
                    type_name(other)
                )));
            }
        };
        let mut meta = match params.remove("_meta") {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        meta.insert(META_PROTOCOL_VERSION.into(), PROTOCOL_VERSION.into());
        meta.insert(META_CLIENT_CAPABILITIES.into(), self.capabilities.clone());
        match self.log_level() {
            Some(level) => meta.insert(META_LOG_LEVEL.into(), level.as_str().into()),
            None => meta.remove(META_LOG_LEVEL),
        };
        params.insert("_meta".into(), Value::Object(meta));
        params.remove("requestState");
        params.remove("inputResponses");
        Ok(params)
    }
}

/// The transport's side of the bridge: how the server sends a request to a
/// 2025-era client and waits for its answer, and how it waits.
pub trait ServerRequests: Send + Sync {
    /// Sends the request `method` with `params` to the client (an id of the
    /// transport's own choosing) and resolves to the `result` of its response.
    /// The bridge bounds the wait ([`Bounds::ask_timeout`]) and drops the
    /// future past it: a transport forgets the request then.
    fn request<'a>(
        &'a self,
        method: &'a str,
        params: &'a Value,
    ) -> BoxFuture<'a, Result<Value, RequestFailed>>;

    /// Completes after `duration` (the runtime's timer).
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()>;
}

/// Why a server-to-client request got no result.
#[derive(Debug, Clone)]
pub enum RequestFailed {
    /// The client answered with a JSON-RPC error of this code.
    Answered {
        /// The error's code.
        code: i64,
    },
    /// The connection or stream the answer would come on is gone.
    Closed,
    /// The transport will not send it, for this reason (ends the flow with it).
    Refused(Error),
}

/// Runs a 2025-era carrier request through the bridge: `round` runs one round
/// of the handler on the params it is given (the engine's one path), each
/// round's asks go to the client through `client`, and the answers and the
/// sealed state go into the next round's params, until the handler completes,
/// within `bounds` and `max_rounds` rounds (the engine ends a flow past its
/// round limit first; this is a backstop).
///
/// `params` are the request's params as the client sent them; `session` is
/// its connection's. The outcome is never `InputRequired`.
pub async fn run<T, R, F>(
    method: CarrierMethod,
    params: Option<&Value>,
    session: &Session,
    client: &dyn ServerRequests,
    bounds: Bounds,
    max_rounds: u32,
    round: R,
) -> Outcome<T>
where
    R: FnMut(Value) -> F,
    F: Future<Output = Outcome<T>>,
{
    let params = match session.params(params) {
        Ok(p) => p,
        Err(e) => return Outcome::Protocol(e),
    };
    let rounds = rounds(params, client, bounds, max_rounds, round);
    match first(rounds, client.sleep(bounds.flow_timeout)).await {
        Some(Ok(outcome)) => outcome,
        Some(Err(e)) => Outcome::from_error(Some(method), e),
        None => Outcome::from_error(Some(method), flow_timed_out(bounds.flow_timeout)),
    }
}

/// The rounds of a flow: the outcome that ends it, or the failure of an ask.
async fn rounds<T, R, F>(
    mut params: Map<String, Value>,
    client: &dyn ServerRequests,
    bounds: Bounds,
    max_rounds: u32,
    mut round: R,
) -> Result<Outcome<T>, Error>
where
    R: FnMut(Value) -> F,
    F: Future<Output = Outcome<T>>,
{
    for _ in 0..max_rounds.saturating_add(2) {
        let irr = match round(Value::Object(params.clone())).await {
            Outcome::InputRequired(irr) => irr,
            done => return Ok(done),
        };
        let mut answers = Map::new();
        for (key, ask) in irr.input_requests().into_iter().flatten() {
            let ask = ask.to_value();
            let method = ask.get("method").and_then(Value::as_str).unwrap_or("");
            let empty = Value::Object(Map::new());
            let ask_params = ask.get("params").unwrap_or(&empty);
            let sent = first(
                client.request(method, ask_params),
                client.sleep(bounds.ask_timeout),
            )
            .await;
            let key_shown = truncate(key, 64);
            let answer = match sent {
                Some(Ok(result)) => result,
                Some(Err(RequestFailed::Refused(e))) => return Err(e),
                Some(Err(RequestFailed::Answered { code })) => {
                    return Err(ask_failed(format!(
                        "2025-era client answered ask {key_shown:?} with error {code}"
                    )));
                }
                Some(Err(RequestFailed::Closed)) => {
                    return Err(ask_failed(format!(
                        "2025-era client's connection closed before it answered ask {key_shown:?}"
                    )));
                }
                None => {
                    return Err(ask_failed(format!(
                        "2025-era client did not answer ask {key_shown:?} within {} s",
                        bounds.ask_timeout.as_secs_f64()
                    )));
                }
            };
            answers.insert(key.clone(), answer);
        }
        params.remove("inputResponses");
        params.remove("requestState");
        if !answers.is_empty() {
            params.insert("inputResponses".into(), Value::Object(answers));
        }
        if let Some(state) = irr.request_state() {
            params.insert("requestState".into(), state.into());
        }
    }
    Err(Error::internal(
        "2025-era flow did not complete within the round bound",
    ))
}

/// `work`'s output, or `None` when `deadline` completes first.
pub(super) async fn first<W, D>(work: W, deadline: D) -> Option<W::Output>
where
    W: Future,
    D: Future<Output = ()>,
{
    let mut work = std::pin::pin!(work);
    let mut deadline = std::pin::pin!(deadline);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(out) = work.as_mut().poll(cx) {
            return Poll::Ready(Some(out));
        }
        if deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        Poll::Pending
    })
    .await
}

/// A 2025-era flow past [`Bounds::flow_timeout`]: retryable, as a failed ask is.
fn flow_timed_out(limit: Duration) -> Error {
    Error::tool_failure(
        ToolAdvice::new(
            "The client did not answer the server's questions in time",
            Retry::Helps,
        )
        .instead("Call the tool again when the questions can be answered sooner"),
        Fallback::Internal,
        "legacy_flow_timeout",
        format!(
            "2025-era flow did not complete within {} s",
            limit.as_secs_f64()
        ),
    )
}

/// A failed ask of a 2025-era flow: retryable (nothing of it was sealed), a
/// tool error on `tools/call`, -32603 elsewhere.
fn ask_failed(detail: String) -> Error {
    Error::tool_failure(
        ToolAdvice::new(
            "The client did not answer a request for input",
            Retry::Helps,
        )
        .instead("Call the tool again when the client can answer"),
        Fallback::Internal,
        "legacy_ask",
        detail,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_session_s_params_start_a_fresh_flow_with_the_handshake_s_capabilities() {
        let session = Session::from_handshake("2025-06-18", json!({"sampling": {}}));
        assert_eq!(session.version(), "2025-06-18");
        let params = json!({
            "name": "t",
            "requestState": "client-sent",
            "inputResponses": {"k": {}},
            "_meta": {"progressToken": 7, META_LOG_LEVEL: "debug"},
        });
        let p = session.params(Some(&params)).unwrap();
        assert!(p.get("requestState").is_none());
        assert!(p.get("inputResponses").is_none());
        let meta = &p["_meta"];
        assert_eq!(meta["progressToken"], 7);
        assert_eq!(meta[META_PROTOCOL_VERSION], PROTOCOL_VERSION);
        assert_eq!(meta[META_CLIENT_CAPABILITIES], json!({"sampling": {}}));
        // The log level is the session's, never the request's.
        assert!(meta.get(META_LOG_LEVEL).is_none());
        session.set_log_level(LogLevel::Warning);
        let p = session.params(Some(&params)).unwrap();
        assert_eq!(p["_meta"][META_LOG_LEVEL], "warning");
        assert_eq!(
            session.params(Some(&json!([1]))).unwrap_err().code(),
            crate::error::code::INVALID_PARAMS
        );
    }

    #[test]
    fn an_unknown_version_is_the_newest_and_eras_parse_by_name() {
        assert_eq!(
            Session::from_handshake("2024-11-05", Value::Null).version(),
            VERSIONS[0]
        );
        for e in [Eras::Both, Eras::ModernOnly, Eras::LegacyOnly] {
            assert_eq!(e.as_str().parse::<Eras>(), Ok(e));
        }
        assert!("modern".parse::<Eras>().is_err());
        assert!(Eras::Both.serves_legacy() && Eras::Both.serves_modern());
        assert!(!Eras::ModernOnly.serves_legacy() && !Eras::LegacyOnly.serves_modern());
    }
}
