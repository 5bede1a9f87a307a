//! The round loops: one exchange at a time over the flow's states
//! ([`mrtr::client::Flow`]), pausing where a state-only round asks
//! it, answering through the handler (or stopping for a manual caller).

use serde_json::Value;

use crate::ClientError;
use mrtr::client::Completion;

use super::Step;
use mrtr::client::{Ready, Turn};

use super::Client;

impl Client {
    /// Drives a flow to its end, answering every question through the handler.
    pub(super) async fn complete(&self, ready: Ready) -> Result<Completion, ClientError> {
        let turn = self.exchange(ready).await?;
        self.complete_from(turn).await
    }

    /// Drives a flow on from what its last response meant.
    pub(super) async fn complete_from(&self, mut turn: Turn) -> Result<Completion, ClientError> {
        loop {
            let ready = match turn {
                Turn::Complete(c) => return Ok(c),
                Turn::Retry { after, ready } => {
                    self.pause(after).await;
                    ready
                }
                Turn::Ask(asked) => {
                    let answers = self
                        .answer(asked.call(), asked.round(), asked.asks())
                        .await?;
                    asked.answer(answers)?
                }
            };
            turn = self.exchange(ready).await?;
        }
    }

    /// Drives a flow to its end or to its next question (manual mode): a
    /// state-only round needs nothing from the caller and is retried.
    pub(super) async fn step(&self, ready: Ready) -> Result<Step, ClientError> {
        let turn = self.exchange(ready).await?;
        self.step_from(turn).await
    }

    /// [`step`](Self::step) on from what the last response meant.
    pub(super) async fn step_from(&self, mut turn: Turn) -> Result<Step, ClientError> {
        loop {
            let ready = match turn {
                Turn::Complete(c) => return Ok(Step::Complete(c)),
                Turn::Retry { after, ready } => {
                    self.pause(after).await;
                    ready
                }
                Turn::Ask(asked) => return Ok(Step::NeedsInput(asked.into_pending())),
            };
            turn = self.exchange(ready).await?;
        }
    }

    /// One request and what its response means.
    async fn exchange(&self, ready: Ready) -> Result<Turn, ClientError> {
        let (sent, request) = ready.request(self.next_id())?;
        let response: Value = self.send(request).await?;
        Ok(sent.on_response(response)?)
    }

    /// The back-off pause of a state-only round (none without a timer).
    async fn pause(&self, after: std::time::Duration) {
        if let Some(timer) = &self.inner.timer {
            timer.sleep(after).await;
        }
    }
}
