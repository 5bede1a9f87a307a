//! The round loops: one exchange at a time over the flow's states
//! ([`mrtr::client::Flow`]), pausing where a state-only round asks
//! it, answering through the handler (or stopping for a manual caller).

use serde_json::Value;

use crate::ClientError;
use mrtr::client::Completion;

use super::Step;
use mrtr::client::{Ready, TaskWait, Turn};

use super::Client;

impl Client {
    /// Drives a flow to its end, answering every question through the handler.
    pub(super) async fn complete(&self, ready: Ready) -> Result<Completion, ClientError> {
        let turn = self.exchange(ready).await?;
        self.complete_from(turn).await
    }

    /// Drives a flow on from what its last response meant (a task followed
    /// to its end, its questions answered through the handler too).
    pub(super) async fn complete_from(&self, mut turn: Turn) -> Result<Completion, ClientError> {
        loop {
            turn = match turn {
                Turn::Complete(c) => return Ok(c),
                Turn::Retry { after, ready } => {
                    self.pause(after).await;
                    self.exchange(ready).await?
                }
                Turn::Ask(asked) => {
                    let answers = self
                        .answer(asked.call(), asked.round(), asked.asks())
                        .await?;
                    self.exchange(asked.answer(answers)?).await?
                }
                turn @ (Turn::Task(_) | Turn::TaskAsk(_)) => self.task_step(turn).await?,
            };
        }
    }

    /// One step of a task: its next poll (or its answers sent), or its
    /// questions answered through the handler.
    async fn task_step(&self, turn: Turn) -> Result<Turn, ClientError> {
        let wait: TaskWait = match turn {
            Turn::Task(wait) => wait,
            Turn::TaskAsk(asked) => {
                let answers = self
                    .answer(asked.call(), asked.round(), asked.asks())
                    .await?;
                asked.answer(answers)?
            }
            other => return Ok(other),
        };
        self.pause(wait.after()).await;
        let (sent, request) = wait.request(self.next_id())?;
        let response: Value = self.send(request).await?;
        Ok(sent.on_response(response)?)
    }

    /// Drives a flow to its end or to its next question (manual mode): a
    /// state-only round needs nothing from the caller and is retried.
    pub(super) async fn step(&self, ready: Ready) -> Result<Step, ClientError> {
        let turn = self.exchange(ready).await?;
        self.step_from(turn).await
    }

    /// [`step`](Self::step) on from what the last response meant. A task is
    /// followed to its end, its questions answered through the handler (a
    /// task's questions are the task's, not a flow to keep).
    pub(super) async fn step_from(&self, mut turn: Turn) -> Result<Step, ClientError> {
        loop {
            turn = match turn {
                Turn::Complete(c) => return Ok(Step::Complete(c)),
                Turn::Retry { after, ready } => {
                    self.pause(after).await;
                    self.exchange(ready).await?
                }
                Turn::Ask(asked) => return Ok(Step::NeedsInput(asked.into_pending())),
                turn @ (Turn::Task(_) | Turn::TaskAsk(_)) => self.task_step(turn).await?,
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
