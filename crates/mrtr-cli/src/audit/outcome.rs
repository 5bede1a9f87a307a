//! What a reply means to a flow: a result, another round that asks, an error,
//! an HTTP status, or nothing. The baseline, the run's refusal log and every
//! check read replies through it.

use serde_json::{Map, Value};

use super::target::{Exchange, Reply};
use super::text::{cut, shown};

/// What a reply means to the flow.
#[derive(Debug, Clone)]
pub(super) enum Outcome {
    /// A final result (`isError` or not).
    Complete { is_error: bool },
    /// An `InputRequiredResult`: the keys it asks, the requests, the state.
    InputRequired {
        requests: Map<String, Value>,
        state: Option<String>,
    },
    /// A JSON-RPC error.
    Error { code: i64, message: String },
    /// An HTTP status with no JSON-RPC reply.
    Http(u16),
    /// No reply at all.
    Failed(String),
}

impl Outcome {
    pub(super) fn of(ex: &Exchange) -> Self {
        match &ex.reply {
            Reply::Result(r) => {
                if r.get("resultType").and_then(Value::as_str) == Some("input_required") {
                    Self::InputRequired {
                        requests: r
                            .get("inputRequests")
                            .and_then(Value::as_object)
                            .cloned()
                            .unwrap_or_default(),
                        state: r
                            .get("requestState")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                    }
                } else {
                    Self::Complete {
                        is_error: r.get("isError").and_then(Value::as_bool) == Some(true),
                    }
                }
            }
            Reply::Error { code, message, .. } => Self::Error {
                code: *code,
                message: message.clone(),
            },
            Reply::NotJsonRpc => Self::Http(ex.status.unwrap_or(0)),
            Reply::Failed(why) => Self::Failed(why.clone()),
        }
    }

    /// Whether the flow went on past what it had asked (`asked`: the keys of
    /// this round and of the rounds before it): a result that is no error, or
    /// a round that asks something new.
    pub(super) fn progressed(&self, asked: &Map<String, Value>) -> bool {
        match self {
            Self::Complete { is_error } => !is_error,
            Self::InputRequired { requests, .. } => {
                !requests.is_empty() && !requests.keys().all(|k| asked.contains_key(k))
            }
            _ => false,
        }
    }

    /// Whether this asks again what the flow had asked (`asked`).
    pub(super) fn asks_again(&self, asked: &Map<String, Value>) -> bool {
        matches!(self, Self::InputRequired { requests, .. }
            if !requests.is_empty() && requests.keys().all(|k| asked.contains_key(k)))
    }

    /// A short description for the evidence.
    pub(super) fn describe(&self) -> String {
        match self {
            Self::Complete { is_error: false } => "a result".into(),
            Self::Complete { is_error: true } => "a tool error (isError)".into(),
            Self::InputRequired { requests, state } => format!(
                "input_required asking {}{}",
                if requests.is_empty() {
                    "nothing".to_owned()
                } else {
                    requests
                        .keys()
                        .map(|k| shown(&cut(k, 24)))
                        .collect::<Vec<_>>()
                        .join(", ")
                },
                if state.is_some() {
                    " (with a state)"
                } else {
                    ""
                }
            ),
            Self::Error { code, message } => {
                format!("JSON-RPC error {code} {:?}", shown(&cut(message, 80)))
            }
            Self::Http(status) => format!("HTTP {status} without a JSON-RPC reply"),
            Self::Failed(why) => format!("no reply ({})", shown(why)),
        }
    }
}
