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
    pub(super) async fn complete(&self, mut ready: Ready) -> Result<Completion, ClientError> {
        loop {
            ready = match self.exchange(ready).await? {
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
        }
    }

    /// Drives a flow to its end or to its next question (manual mode): a
    /// state-only round needs nothing from the caller and is retried.
    pub(super) async fn step(&self, mut ready: Ready) -> Result<Step, ClientError> {
        loop {
            ready = match self.exchange(ready).await? {
                Turn::Complete(c) => return Ok(Step::Complete(c)),
                Turn::Retry { after, ready } => {
                    self.pause(after).await;
                    ready
                }
                Turn::Ask(asked) => return Ok(Step::NeedsInput(asked.into_pending())),
            };
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
