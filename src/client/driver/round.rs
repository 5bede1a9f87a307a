//! The round loop: send a request, read its result, check what the round asks,
//! answer it (or stop for a manual caller), and send the retry.

use serde_json::Value;

use crate::client::error::ClientError;
use crate::client::flow::{CarrierCall, Completion, PendingFlow, Step};
use crate::defaults;
use crate::wire::CarrierMethod;
use crate::wire::input::InputResponses;
use crate::wire::jsonrpc::{self, RequestId};
use crate::wire::result::InputRequiredResult;

use super::{Client, Tally};

enum Outcome {
    Complete(Value),
    InputRequired(InputRequiredResult),
}

impl Client {
    /// The round loop. `tally` is what the flow used before this call (requests
    /// sent, sampling asked, bytes answered); `state` and `responses` are what the
    /// next request carries. All of it is local to this call.
    pub(super) async fn drive(
        &self,
        call: &CarrierCall,
        mut tally: Tally,
        mut state: Option<String>,
        mut responses: Option<InputResponses>,
        manual: bool,
    ) -> Result<Step, ClientError> {
        let mut backoff = defaults::BACKOFF_INITIAL;
        loop {
            let answers = match responses.take() {
                Some(r) => Some(self.count_bytes(&r, &mut tally)?),
                None => None,
            };
            tally.round += 1;
            let round = tally.round;
            let outcome = self
                .send_round(call, state.as_deref(), answers, &mut tally)
                .await?;
            let irr = match outcome {
                Outcome::Complete(result) => {
                    return Ok(Step::Complete(Completion {
                        result,
                        rounds: round,
                    }));
                }
                Outcome::InputRequired(irr) => irr,
            };
            // Refuse an undeclared kind before anything else: the server broke
            // Server Requirement 7, and nothing is asked or retried.
            if let Some(asks) = irr.input_requests() {
                self.check_declared(asks)?;
            }
            if round >= self.inner.max_rounds {
                return Err(ClientError::MaxRounds { rounds: round });
            }
            // The caps on what a round may ask come before any handler runs (and
            // before a manual caller is shown anything).
            if let Some(asks) = irr.input_requests() {
                self.check_questions(asks)?;
                self.count_sampling(asks, &mut tally)?;
            }
            if let Some(s) = irr.request_state() {
                self.check_state(s)?;
            }
            // Echo exactly what came this round; nothing when nothing came.
            state = irr.request_state().map(str::to_owned);
            match irr.input_requests() {
                None => {
                    // State-only round (load shedding): retry after a growing pause.
                    if let Some(timer) = &self.inner.timer {
                        timer.sleep(backoff).await;
                    }
                    backoff = (backoff * 2).min(defaults::BACKOFF_MAX);
                }
                Some(asks) => {
                    backoff = defaults::BACKOFF_INITIAL;
                    if manual {
                        return Ok(Step::NeedsInput(PendingFlow {
                            method: call.method(),
                            params: call.params().clone(),
                            request_state: state,
                            input_requests: asks.clone(),
                            round,
                            sampling_asked: tally.sampling,
                            bytes_answered: tally.bytes,
                            bytes_uploaded: tally.uploaded,
                        }));
                    }
                    responses = Some(self.answer(call, round, asks).await?);
                }
            }
        }
    }

    /// Sends one round: the original params, `_meta`, the answers (their wire
    /// form, already counted against the byte cap) and the state, unless the
    /// request would take the flow over its upload cap.
    async fn send_round(
        &self,
        call: &CarrierCall,
        state: Option<&str>,
        answers: Option<Value>,
        tally: &mut Tally,
    ) -> Result<Outcome, ClientError> {
        let mut params = call.params().clone();
        params.insert("_meta".into(), self.meta());
        if let Some(a) = answers {
            params.insert("inputResponses".into(), a);
        }
        if let Some(s) = state {
            params.insert("requestState".into(), Value::String(s.to_owned()));
        }
        let id = self.next_id();
        let request = jsonrpc::request(&id, call.method().as_str(), Value::Object(params));
        self.count_upload(&request, tally)?;
        let response = self.send(request).await?;
        classify(call.method(), result_of(response, &id)?)
    }
}

/// Extracts `result` from a response to the request with `id`.
pub(super) fn result_of(response: Value, id: &RequestId) -> Result<Value, ClientError> {
    let Value::Object(mut o) = response else {
        return Err(ClientError::Malformed(
            "a JSON-RPC response must be an object".into(),
        ));
    };
    // An error response may carry `null` (or no id) when the server could not
    // read the request's id (JSON-RPC 2.0 §5); any other id is someone else's.
    let received = o.get("id").cloned().unwrap_or(Value::Null);
    let unread_id = o.contains_key("error") && received.is_null();
    if received != id.to_value() && !unread_id {
        return Err(ClientError::IdMismatch {
            expected: id.clone(),
            received,
        });
    }
    if let Some(err) = o.remove("error") {
        let code = err.get("code").and_then(Value::as_i64);
        let message = err.get("message").and_then(Value::as_str);
        return match (code, message) {
            (Some(code), Some(message)) => Err(ClientError::JsonRpc {
                code,
                message: message.to_owned(),
                data: err.get("data").cloned(),
            }),
            _ => Err(ClientError::Malformed(
                "a JSON-RPC error needs an integer code and a string message".into(),
            )),
        };
    }
    match o.remove("result") {
        Some(r @ Value::Object(_)) => Ok(r),
        Some(_) => Err(ClientError::Malformed("result must be an object".into())),
        None => Err(ClientError::Malformed(
            "a JSON-RPC response needs result or error".into(),
        )),
    }
}

fn classify(method: CarrierMethod, result: Value) -> Result<Outcome, ClientError> {
    match result.get("resultType") {
        // Absent means complete (servers of earlier versions; MCP 2026-07-28, Base Protocol §Result Responses).
        None => Ok(Outcome::Complete(result)),
        Some(Value::String(t)) => match t.as_str() {
            "complete" => Ok(Outcome::Complete(result)),
            "input_required" => InputRequiredResult::from_value(method, &result)
                .map(Outcome::InputRequired)
                .map_err(|e| {
                    ClientError::Malformed(format!("InputRequiredResult: {}", e.message()))
                }),
            other => Err(ClientError::UnknownResultType {
                result_type: other.to_owned(),
            }),
        },
        Some(_) => Err(ClientError::Malformed("resultType must be a string".into())),
    }
}
