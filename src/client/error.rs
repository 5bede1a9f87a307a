//! [`FlowError`]: every way the flow itself can end without a result (the
//! transport, the handlers and the clocks are the async client's, in `mrtr-client`).

use serde_json::Value;

use crate::wire::InputKind;
use crate::wire::jsonrpc::RequestId;
use crate::wire::meta::ClientCapabilities;

/// Why a flow ended without a final result, as the flow sees it: what the
/// server answered, and the client's caps.
///
/// A tool that ran and failed is *not* an error here: it is a complete result
/// with `isError: true` (see [`Completion::is_tool_error`](super::Completion::is_tool_error)).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FlowError {
    /// The task the call became was cancelled (the tasks extension).
    #[error("the task was cancelled")]
    TaskCancelled,
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
    /// The response carries another id than the request it answers: it is not
    /// the response to this request, and the flow stops.
    #[error("the response id does not match the request id {}", .expected.to_value())]
    IdMismatch {
        /// The id the request was sent with.
        expected: RequestId,
        /// The id the response carried (`null` when it had none).
        received: Value,
    },
    /// The server asked for more than one of the client's caps allows. The check
    /// comes before anything is answered or sent for that round: no handler runs
    /// for a round with too many questions, one sampling request too many or a
    /// `requestState` over the state cap (which is never echoed), answers that
    /// would go over the byte cap are not sent, and neither is a request that
    /// would go over the upload cap. The message names the cap and its limit,
    /// never what the server sent.
    #[error("the flow went over the client's cap on {cap} (limit {limit})")]
    CapExceeded {
        /// Which cap.
        cap: Cap,
        /// Its value.
        limit: u64,
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
    /// Answers passed to [`Asked::answer`](super::Asked::answer) do not match the
    /// outstanding input requests (a key unanswered, unknown, or of the wrong kind).
    #[error("answer {key:?} does not fit the pending flow: {reason}")]
    AnswerMismatch {
        /// The offending key.
        key: String,
        /// What is wrong.
        reason: String,
    },
}

/// A limit the client sets on what one flow may make it do (see
/// [`FlowError::CapExceeded`] and the setters of [`FlowRules`](super::FlowRules)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Cap {
    /// Input requests in one `InputRequiredResult`
    /// ([`FlowRules::with_max_questions_per_round`](super::FlowRules::with_max_questions_per_round)).
    QuestionsPerRound,
    /// `sampling/createMessage` requests over the whole flow
    /// ([`FlowRules::with_max_sampling_per_flow`](super::FlowRules::with_max_sampling_per_flow)).
    SamplingPerFlow,
    /// Bytes of `inputResponses` (serialized JSON) over the whole flow
    /// ([`FlowRules::with_max_answer_bytes`](super::FlowRules::with_max_answer_bytes)).
    AnswerBytes,
    /// Bytes of one `requestState` the client would echo
    /// ([`FlowRules::with_max_state_bytes`](super::FlowRules::with_max_state_bytes)).
    StateBytes,
    /// Bytes of requests (serialized JSON-RPC) over the whole flow
    /// ([`FlowRules::with_max_upload_bytes`](super::FlowRules::with_max_upload_bytes)).
    UploadBytes,
    /// Polls of one task
    /// ([`CLIENT_MAX_TASK_POLLS`](crate::defaults::CLIENT_MAX_TASK_POLLS)).
    TaskPolls,
}

impl Cap {
    /// A short name, for messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::QuestionsPerRound => "questions per round",
            Self::SamplingPerFlow => "sampling requests per flow",
            Self::AnswerBytes => "bytes answered per flow",
            Self::StateBytes => "requestState bytes echoed",
            Self::UploadBytes => "bytes uploaded per flow",
            Self::TaskPolls => "polls of one task",
        }
    }
}

impl std::fmt::Display for Cap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FlowError {
    /// The JSON-RPC error code, for [`FlowError::JsonRpc`].
    pub fn jsonrpc_code(&self) -> Option<i64> {
        match self {
            Self::JsonRpc { code, .. } => Some(*code),
            _ => None,
        }
    }
}
