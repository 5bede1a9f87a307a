//! The checks on a round before any handler runs (the capabilities it asks for,
//! the caps on questions, sampling and state), and the byte caps on what a flow sends.

use serde_json::{Map, Value};

use crate::capability;
use crate::client::error::{Cap, ClientError};
use crate::wire::InputRequests;
use crate::wire::input::{InputKind, InputResponses};

use super::{Client, Tally};

impl Client {
    pub(super) fn check_declared(&self, asks: &InputRequests) -> Result<(), ClientError> {
        for (key, ask) in asks {
            if let Some(missing) = capability::missing(&self.inner.capabilities, ask) {
                return Err(ClientError::UndeclaredInput {
                    key: key.clone(),
                    kind: ask.kind(),
                    missing: Box::new(missing),
                });
            }
        }
        Ok(())
    }

    /// [`Cap::QuestionsPerRound`]: how many questions one round may ask.
    pub(super) fn check_questions(&self, asks: &InputRequests) -> Result<(), ClientError> {
        let limit = self.inner.limits.questions_per_round;
        if asks.len() > limit {
            return Err(ClientError::CapExceeded {
                cap: Cap::QuestionsPerRound,
                limit: limit as u64,
            });
        }
        Ok(())
    }

    /// [`Cap::SamplingPerFlow`]: adds this round's sampling requests to the tally.
    pub(super) fn count_sampling(
        &self,
        asks: &InputRequests,
        tally: &mut Tally,
    ) -> Result<(), ClientError> {
        let limit = self.inner.limits.sampling_per_flow;
        let asked = asks
            .values()
            .filter(|a| a.kind() == InputKind::Sampling)
            .count();
        let total = u32::try_from(asked)
            .ok()
            .and_then(|n| tally.sampling.checked_add(n))
            .filter(|&n| n <= limit);
        match total {
            Some(n) => {
                tally.sampling = n;
                Ok(())
            }
            None => Err(ClientError::CapExceeded {
                cap: Cap::SamplingPerFlow,
                limit: u64::from(limit),
            }),
        }
    }

    /// [`Cap::StateBytes`]: the longest `requestState` this client echoes.
    pub(super) fn check_state(&self, state: &str) -> Result<(), ClientError> {
        let limit = self.inner.limits.state_bytes;
        if state.len() > limit {
            return Err(ClientError::CapExceeded {
                cap: Cap::StateBytes,
                limit: limit as u64,
            });
        }
        Ok(())
    }

    /// [`Cap::UploadBytes`]: adds the size of `request` (serialized) to the tally
    /// within the cap.
    pub(super) fn count_upload(
        &self,
        request: &Value,
        tally: &mut Tally,
    ) -> Result<(), ClientError> {
        let limit = self.inner.limits.upload_bytes;
        let mut size = ByteCount(0);
        // Counted as serialized, without building the bytes (the transport does).
        let size = serde_json::to_writer(&mut size, request).map_or(u64::MAX, |()| size.0);
        match tally.uploaded.checked_add(size).filter(|&n| n <= limit) {
            Some(n) => {
                tally.uploaded = n;
                Ok(())
            }
            None => Err(ClientError::CapExceeded {
                cap: Cap::UploadBytes,
                limit,
            }),
        }
    }

    /// [`Cap::AnswerBytes`]: the wire form of `responses`, once its size is added to
    /// the tally within the cap.
    pub(super) fn count_bytes(
        &self,
        responses: &InputResponses,
        tally: &mut Tally,
    ) -> Result<Value, ClientError> {
        let limit = self.inner.limits.answer_bytes;
        let m: Map<String, Value> = responses
            .iter()
            .map(|(k, v)| (k.clone(), v.to_value()))
            .collect();
        let value = Value::Object(m);
        let size = serde_json::to_vec(&value).map_or(u64::MAX, |b| b.len() as u64);
        match tally.bytes.checked_add(size).filter(|&n| n <= limit) {
            Some(n) => {
                tally.bytes = n;
                Ok(value)
            }
            None => Err(ClientError::CapExceeded {
                cap: Cap::AnswerBytes,
                limit,
            }),
        }
    }
}

/// An `io::Write` that only counts the bytes written to it.
struct ByteCount(u64);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 = self.0.saturating_add(buf.len() as u64);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
