//! [`ClientError`]: every way a flow can end without a result.

use std::time::Duration;

use serde_json::Value;

use crate::wire::InputKind;
use crate::wire::meta::ClientCapabilities;

use super::handler::HandlerError;
use super::transport::TransportError;

/// Why a call ended without a final result.
///
/// A tool that ran and failed is *not* an error here: it is a complete result
/// with `isError: true` (see [`Completion::is_tool_error`](super::Completion::is_tool_error)).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// No response could be obtained.
    #[error("transport: {0}")]
    Transport(#[from] TransportError),
    /// The server answered with a JSON-RPC error.
    #[error("json-rpc error {code}: {message}")]
    JsonRpc {
        /// `error.code`.
        code: i64,
        /// `error.message`.
        message: String,
        /// `error.data`, when present.
        data: Option<Value>,
    },
    /// The server still asked for input after `rounds` requests (the client's cap).
    #[error("gave up after {rounds} rounds: the server kept asking for input")]
    MaxRounds {
        /// How many requests were sent.
        rounds: u32,
    },
    /// The whole flow took longer than the client's time cap.
    #[error("gave up after {after:?}: the flow did not complete in time")]
    Timeout {
        /// The cap that was reached.
        after: Duration,
    },
    /// The server asked for an input kind this client did not declare; the flow
    /// stops and nothing is retried (MRTR Server Requirement 7 was broken).
    #[error("the server asked {key:?} for {} input, which this client did not declare", .kind.as_str())]
    UndeclaredInput {
        /// The input request's key.
        key: String,
        /// What it asked for.
        kind: InputKind,
        /// The capabilities it would have needed.
        missing: Box<ClientCapabilities>,
    },
    /// The result's `resultType` is neither `complete` nor `input_required`
    /// (a client MUST treat an unknown value as invalid: MCP 2026-07-28, Base
    /// Protocol §Result Responses, ResultType).
    #[error("unknown resultType {result_type:?}")]
    UnknownResultType {
        /// The value received.
        result_type: String,
    },
    /// The response is not a valid JSON-RPC response, or its result is not a valid
    /// `InputRequiredResult`.
    #[error("malformed response: {0}")]
    Malformed(String),
    /// A handler gave no answer for an input request; the flow stops without a retry.
    #[error("input {key:?} ({}) not answered: {source}", .kind.as_str())]
    Handler {
        /// The input request's key.
        key: String,
        /// Its kind.
        kind: InputKind,
        /// Why.
        source: HandlerError,
    },
    /// Answers passed to [`Client::resume`](super::Client::resume) do not match the
    /// outstanding input requests (a key unanswered, unknown, or of the wrong kind).
    #[error("answer {key:?} does not fit the pending flow: {reason}")]
    AnswerMismatch {
        /// The offending key.
        key: String,
        /// What is wrong.
        reason: String,
    },
}

impl ClientError {
    /// The JSON-RPC error code, for [`ClientError::JsonRpc`].
    pub fn jsonrpc_code(&self) -> Option<i64> {
        match self {
            Self::JsonRpc { code, .. } => Some(*code),
            _ => None,
        }
    }
}
