//! Notifications a handler sends while its request runs: progress
//! (`notifications/progress`) and log messages (`notifications/message`).
//!
//! The core does no I/O: the transport hands the round a [`NotificationSink`]
//! for a request that asked for notifications, and writes what the sink takes
//! (Streamable HTTP: SSE events before the response event; stdio: lines before
//! the response line). The round applies the revision's rules before anything
//! reaches the sink:
//!
//! - progress goes out only when the request's `_meta` carries a `progressToken`
//!   (MCP 2026-07-28 §Progress), with that token, and only when its value is
//!   finite and greater than the last one sent ("the progress value MUST
//!   increase with each notification");
//! - a log message goes out only when the request's `_meta` carries
//!   `io.modelcontextprotocol/logLevel` and the message is at or above that
//!   level ("if absent, the server MUST NOT send `notifications/message` for
//!   the request");
//! - nothing goes out once the round has finished: the response is the last
//!   message of the request (Streamable HTTP §Sending Messages to the Server).
//!
//! A request that asked for neither gets no notifier at all: a handler that
//! reports progress or logs costs one branch then.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Value};

pub use crate::wire::meta::LogLevel;
use crate::wire::meta::RequestMeta;

/// Where the notifications of one request go: supplied by the transport, for a
/// request that asked for them, through
/// [`Service::handle_parsed_notifying`](crate::Service::handle_parsed_notifying).
///
/// The round calls [`NotificationSink::notify`] from the handler's own thread,
/// synchronously, so it must not block: a bounded queue that refuses when full
/// is the intended shape (what the server crate's transports use, with
/// `mrtr_server::defaults::MAX_NOTIFICATIONS_PER_REQUEST`). Every notification
/// it is given relates to the one request it was made for; the round never
/// gives it a request.
pub trait NotificationSink: Send + Sync + fmt::Debug {
    /// Takes one JSON-RPC notification (compact JSON: one line, no raw line
    /// break); `false` when it was not taken (the queue is full, or the request
    /// is over), and the notification is dropped.
    fn notify(&self, notification: String) -> bool;
}

/// The round's side of a request's notifications: the sink, and what the
/// request asked for. Made only when it asked for something.
pub(crate) struct Notifier {
    sink: Arc<dyn NotificationSink>,
    /// The request's `progressToken` (a string or a number, checked when `_meta`
    /// was parsed).
    progress_token: Option<Value>,
    /// The request's `io.modelcontextprotocol/logLevel`.
    level: Option<LogLevel>,
    /// The last progress value sent: each must be greater.
    last_progress: Mutex<Option<f64>>,
}

impl fmt::Debug for Notifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The token is the client's: not printed.
        f.debug_struct("Notifier")
            .field("progress", &self.progress_token.is_some())
            .field("level", &self.level)
            .finish_non_exhaustive()
    }
}

impl Notifier {
    /// The notifier of a request whose `_meta` is `meta`, sending to `sink`;
    /// `None` when there is no sink or the request asked for nothing.
    pub(crate) fn for_request(
        meta: &RequestMeta,
        sink: Option<Arc<dyn NotificationSink>>,
    ) -> Option<Self> {
        let sink = sink?;
        if meta.progress_token.is_none() && meta.log_level.is_none() {
            return None;
        }
        Some(Self {
            sink,
            progress_token: meta.progress_token.clone(),
            level: meta.log_level,
            last_progress: Mutex::new(None),
        })
    }

    pub(crate) fn wants_progress(&self) -> bool {
        self.progress_token.is_some()
    }

    pub(crate) fn level(&self) -> Option<LogLevel> {
        self.level
    }

    /// Sends a progress notification, if the request carries a token and
    /// `progress` is finite and above the last one sent; whether it went to the
    /// sink. A total that is not finite is left out.
    pub(crate) fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> bool {
        let Some(token) = &self.progress_token else {
            return false;
        };
        if !progress.is_finite() {
            return false;
        }
        {
            let mut last = self
                .last_progress
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if last.is_some_and(|l| progress <= l) {
                return false;
            }
            *last = Some(progress);
        }
        let mut params = Map::new();
        params.insert("progressToken".into(), token.clone());
        params.insert("progress".into(), number(progress));
        if let Some(t) = total.filter(|t| t.is_finite()) {
            params.insert("total".into(), number(t));
        }
        if let Some(m) = message {
            params.insert("message".into(), m.into());
        }
        self.sink
            .notify(notification("notifications/progress", params))
    }

    /// Sends a log message, if the request asked for a level and `level` is at
    /// or above it; whether it went to the sink.
    pub(crate) fn log(&self, level: LogLevel, logger: Option<&str>, data: Value) -> bool {
        if self.level.is_none_or(|wanted| level < wanted) {
            return false;
        }
        let mut params = Map::new();
        params.insert("level".into(), level.as_str().into());
        if let Some(l) = logger {
            params.insert("logger".into(), l.into());
        }
        params.insert("data".into(), data);
        self.sink
            .notify(notification("notifications/message", params))
    }
}

/// A progress value as JSON: an integral value as an integer (`3`, not `3.0`).
fn number(v: f64) -> Value {
    // Exact: the value is integral and well within i64's range.
    #[allow(clippy::cast_possible_truncation)] // why: checked integral and in range just above
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        return Value::from(v as i64);
    }
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}

fn notification(method: &str, params: Map<String, Value>) -> String {
    let mut o = Map::new();
    o.insert("jsonrpc".into(), "2.0".into());
    o.insert("method".into(), method.into());
    o.insert("params".into(), Value::Object(params));
    Value::Object(o).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ClientCapabilities;
    use serde_json::json;

    #[derive(Debug, Default)]
    struct Collect(Mutex<Vec<Value>>);

    impl NotificationSink for Collect {
        fn notify(&self, n: String) -> bool {
            self.0
                .lock()
                .unwrap()
                .push(serde_json::from_str(&n).unwrap());
            true
        }
    }

    fn meta(token: Option<Value>, level: Option<LogLevel>) -> RequestMeta {
        let mut m = RequestMeta::new(ClientCapabilities::none());
        m.progress_token = token;
        m.log_level = level;
        m
    }

    #[test]
    fn nothing_asked_no_notifier() {
        let sink: Arc<dyn NotificationSink> = Arc::new(Collect::default());
        assert!(Notifier::for_request(&meta(None, None), Some(Arc::clone(&sink))).is_none());
        assert!(Notifier::for_request(&meta(Some(json!(1)), None), None).is_none());
        assert!(Notifier::for_request(&meta(Some(json!(1)), None), Some(sink)).is_some());
    }

    #[test]
    fn progress_carries_the_token_and_only_increases() {
        let sink = Arc::new(Collect::default());
        let n = Notifier::for_request(&meta(Some(json!("t-1")), None), Some(sink.clone())).unwrap();
        assert!(n.progress(1.0, Some(3.0), Some("one")));
        assert!(!n.progress(1.0, None, None), "equal is no increase");
        assert!(!n.progress(0.5, None, None));
        assert!(!n.progress(f64::NAN, None, None));
        assert!(!n.progress(f64::INFINITY, None, None));
        assert!(n.progress(2.5, Some(f64::NAN), None));
        // No level asked: no log message, whatever its severity.
        assert!(!n.log(LogLevel::Emergency, None, json!("x")));
        let got = sink.0.lock().unwrap().clone();
        assert_eq!(
            got,
            vec![
                json!({"jsonrpc": "2.0", "method": "notifications/progress",
                       "params": {"progressToken": "t-1", "progress": 1, "total": 3, "message": "one"}}),
                json!({"jsonrpc": "2.0", "method": "notifications/progress",
                       "params": {"progressToken": "t-1", "progress": 2.5}}),
            ]
        );
    }

    #[test]
    fn log_messages_at_or_above_the_level_only() {
        let sink = Arc::new(Collect::default());
        let n = Notifier::for_request(&meta(None, Some(LogLevel::Warning)), Some(sink.clone()))
            .unwrap();
        assert!(!n.progress(1.0, None, None), "no token, no progress");
        assert!(!n.log(LogLevel::Info, None, json!("quiet")));
        assert!(n.log(LogLevel::Warning, Some("db"), json!({"slow": true})));
        assert!(n.log(LogLevel::Error, None, json!("bad")));
        let got = sink.0.lock().unwrap().clone();
        assert_eq!(got.len(), 2);
        assert_eq!(
            got[0],
            json!({"jsonrpc": "2.0", "method": "notifications/message",
                   "params": {"level": "warning", "logger": "db", "data": {"slow": true}}})
        );
        assert_eq!(got[1]["params"]["level"], "error");
    }

    #[test]
    fn levels_order_and_names() {
        for w in LogLevel::ALL.windows(2) {
            assert!(w[0] < w[1]);
        }
        for l in LogLevel::ALL {
            assert_eq!(LogLevel::from_name(l.as_str()), Some(l));
        }
        assert_eq!(LogLevel::from_name("INFO"), None);
        assert_eq!(LogLevel::from_name("warn"), None);
    }
}
