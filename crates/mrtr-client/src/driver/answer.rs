//! The answers of a round, asked of the handler (concurrently, within the cap);
//! the flow ([`mrtr::client::Flow`]) checks them against what was
//! asked.

use futures_util::stream::{self, StreamExt, TryStreamExt};

use crate::ClientError;
use crate::handler::{HandlerError, InputContext};
use mrtr::client::CarrierCall;
use mrtr::wire::InputRequests;
use mrtr::wire::{InputRequest, InputResponse, InputResponses};

use super::Client;

impl Client {
    /// Asks the handler for every input request, up to the concurrency cap at a
    /// time; the first failure wins. The answers keep the server's order.
    pub(super) async fn answer(
        &self,
        call: &CarrierCall,
        round: u32,
        asks: &InputRequests,
    ) -> Result<InputResponses, ClientError> {
        let futures = asks.iter().enumerate().map(|(i, (key, ask))| {
            let ctx = InputContext {
                key: key.clone(),
                method: call.method(),
                target: call.target().to_owned(),
                round,
            };
            let ask = ask.clone();
            async move { self.answer_one(ctx, ask).await.map(|a| (i, a.0, a.1)) }
        });
        // Collected first: a stream over a borrowing closure trips the `Send`
        // check of the caller's future (higher-ranked lifetimes).
        let futures: Vec<_> = futures.collect();
        let mut answered: Vec<(usize, String, InputResponse)> = stream::iter(futures)
            .buffer_unordered(self.inner.concurrent_answers)
            .try_collect()
            .await?;
        answered.sort_unstable_by_key(|(i, _, _)| *i);
        Ok(answered.into_iter().map(|(_, k, a)| (k, a)).collect())
    }

    /// Asks the handler for the answer to one input request (of a round's
    /// `inputRequests`, or a 2025-era server request): the one place a question
    /// reaches the handler.
    pub(super) async fn answer_one(
        &self,
        ctx: InputContext,
        ask: InputRequest,
    ) -> Result<(String, InputResponse), ClientError> {
        let handler = &self.inner.handler;
        let kind = ask.kind();
        let key = ctx.key.clone();
        let answer = match ask {
            InputRequest::Elicit(p) => handler.elicit(ctx, p).await.map(InputResponse::Elicit),
            InputRequest::CreateMessage(p) => handler
                .create_message(ctx, p)
                .await
                .map(InputResponse::CreateMessage),
            InputRequest::ListRoots { .. } => {
                handler.list_roots(ctx).await.map(InputResponse::ListRoots)
            }
            // A kind the wire model learns later: no handler method serves it yet.
            _ => Err(HandlerError::Unsupported),
        };
        match answer {
            Ok(a) => Ok((key, a)),
            Err(source) => Err(ClientError::Handler { key, kind, source }),
        }
    }
}
