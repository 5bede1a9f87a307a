//! [`ClientBuilder`]: the client's options, each with its default.

use std::sync::Arc;
use std::sync::atomic::AtomicI64;
use std::time::Duration;

use crate::Timer;
use crate::handler::InputHandler;
use crate::legacy::{EraCache, EraMode};
use crate::transport::Transport;
use mrtr::client::FlowRules;

use super::{Client, Inner};

// Named only in the setters' docs.
#[cfg(doc)]
use crate::ClientError;
#[cfg(doc)]
use crate::handler::NoInput;
#[cfg(doc)]
use mrtr::client::Cap;
#[cfg(doc)]
use mrtr::defaults;

/// Builds a [`Client`]. Mandatory things are arguments of [`Client::builder`];
/// everything here has a default, stated on its setter.
#[derive(Debug)]
pub struct ClientBuilder {
    pub(super) transport: Arc<dyn Transport>,
    pub(super) handler: Arc<dyn InputHandler>,
    /// Everything but the capabilities, which come from the handler at `build`.
    pub(super) rules: FlowRules,
    pub(super) total_timeout: Option<Duration>,
    pub(super) request_timeout: Option<Duration>,
    pub(super) concurrent_answers: usize,
    pub(super) timer: Option<Arc<dyn Timer>>,
    pub(super) era_mode: EraMode,
    pub(super) eras: Arc<EraCache>,
    pub(super) max_server_requests: usize,
    pub(super) max_sampling: u32,
    /// Whether the tasks extension is declared.
    pub(super) tasks: bool,
}

impl ClientBuilder {
    /// The handler that answers input requests. Default: [`NoInput`] (declares
    /// nothing, so any input request ends the flow with `UndeclaredInput`).
    pub fn with_handler(mut self, handler: impl InputHandler + 'static) -> Self {
        self.handler = Arc::new(handler);
        self
    }

    /// The handler, shared.
    pub fn with_shared_handler(mut self, handler: Arc<dyn InputHandler>) -> Self {
        self.handler = handler;
        self
    }

    /// `clientInfo` sent in `_meta`. Default: `{name: "mrtr", version: <crate version>}`.
    pub fn with_client_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.rules = self.rules.with_client_info(name, version);
        self
    }

    /// The most requests one flow may send (the first plus retries). Default: 17
    /// ([`defaults::CLIENT_MAX_ROUNDS`], a default server's 16 rounds plus the
    /// request that completes).
    /// A flow whose last allowed request is answered with another
    /// `InputRequiredResult` ends with [`FlowError::MaxRounds`](crate::FlowError::MaxRounds) (its input
    /// requests are not shown to anyone). Values below 1 count as 1.
    pub fn with_max_rounds(mut self, n: u32) -> Self {
        self.rules = self.rules.with_max_rounds(n);
        self
    }

    /// The longest one flow may take (or one `start`/`resume` step), `None` for no
    /// cap. Default: 5 minutes ([`defaults::CLIENT_TOTAL_TIMEOUT`]).
    /// Needs a [`Timer`]; without one the cap is not enforced.
    pub fn with_total_timeout(mut self, t: Option<Duration>) -> Self {
        self.total_timeout = t;
        self
    }

    /// The longest one request may wait for its response, `None` for no cap.
    /// Default: 30 seconds ([`defaults::CLIENT_REQUEST_TIMEOUT`]). A request that
    /// gets no response in time ends the flow with [`ClientError::RequestTimeout`].
    /// A server that holds a retry open until the user has finished a URL-mode
    /// step needs a longer one. Needs a [`Timer`]; without one the cap is not enforced.
    pub fn with_request_timeout(mut self, t: Option<Duration>) -> Self {
        self.request_timeout = t;
        self
    }

    /// The most questions (input requests) one round may ask. Default: 16
    /// ([`defaults::CLIENT_MAX_QUESTIONS_PER_ROUND`], what a default server may
    /// ask). A round that asks more ends the flow with [`FlowError::CapExceeded`](crate::FlowError::CapExceeded)
    /// ([`Cap::QuestionsPerRound`]) before any handler runs and without a retry.
    /// Values below 1 count as 1.
    pub fn with_max_questions_per_round(mut self, n: usize) -> Self {
        self.rules = self.rules.with_max_questions_per_round(n);
        self
    }

    /// The most questions of one round the handler answers at the same time; the
    /// others wait their turn (a bound on concurrency, never an error). Default: 4
    /// ([`defaults::CLIENT_MAX_CONCURRENT_ANSWERS`]). Values below 1 count as 1
    /// (one at a time).
    pub fn with_max_concurrent_answers(mut self, n: usize) -> Self {
        self.concurrent_answers = n.max(1);
        self
    }

    /// The most sampling requests one flow may ask, over all its rounds (each is a
    /// call to the client's model). Default: 16
    /// ([`defaults::CLIENT_MAX_SAMPLING_PER_FLOW`]). The round that would go over it
    /// ends the flow with [`FlowError::CapExceeded`](crate::FlowError::CapExceeded) ([`Cap::SamplingPerFlow`])
    /// before any handler runs. 0 refuses every sampling request.
    pub fn with_max_sampling_per_flow(mut self, n: u32) -> Self {
        self.max_sampling = n;
        self.rules = self.rules.with_max_sampling_per_flow(n);
        self
    }

    /// The most bytes of answers (`inputResponses`, as serialized JSON) one flow may
    /// send, over all its rounds. Default: 256 KiB ([`defaults::CLIENT_MAX_ANSWER_BYTES`]).
    /// Answers that would go over it are not sent: the flow ends with
    /// [`FlowError::CapExceeded`](crate::FlowError::CapExceeded) ([`Cap::AnswerBytes`]).
    pub fn with_max_answer_bytes(mut self, n: u64) -> Self {
        self.rules = self.rules.with_max_answer_bytes(n);
        self
    }

    /// The longest `requestState` (in bytes) the client echoes. Default: 64 KiB
    /// ([`defaults::CLIENT_MAX_STATE_BYTES`], four times the longest state a default
    /// server seals). A round whose state is longer ends the flow with
    /// [`FlowError::CapExceeded`](crate::FlowError::CapExceeded) ([`Cap::StateBytes`]) before any handler runs
    /// and before the state is sent back; the error never holds the state.
    pub fn with_max_state_bytes(mut self, n: usize) -> Self {
        self.rules = self.rules.with_max_state_bytes(n);
        self
    }

    /// The most bytes of requests (each JSON-RPC request as serialized JSON: the
    /// original params, `_meta`, the answers and the echoed state) one flow may
    /// send, over all its rounds. Default: 4.25 MiB
    /// ([`defaults::CLIENT_MAX_UPLOAD_BYTES`], 17 requests of a default server's
    /// largest body). A request that would go over it is not sent: the flow ends
    /// with [`FlowError::CapExceeded`](crate::FlowError::CapExceeded) ([`Cap::UploadBytes`]).
    pub fn with_max_upload_bytes(mut self, n: u64) -> Self {
        self.rules = self.rules.with_max_upload_bytes(n);
        self
    }

    /// The timer for back-off and the time cap. Default: the transport's
    /// ([`Transport::timer`](crate::Transport::timer); `mrtr-client`'s
    /// transports give tokio's, so the client must then run inside a tokio runtime),
    /// none otherwise (no back-off, no time cap).
    pub fn with_timer(mut self, timer: impl Timer + 'static) -> Self {
        self.timer = Some(Arc::new(timer));
        self
    }

    /// How the era of the server is picked. Default: [`EraMode::Auto`] (told by
    /// the first request, remembered in the [`EraCache`]); see [`crate::legacy`].
    pub fn with_era(mut self, mode: EraMode) -> Self {
        self.era_mode = mode;
        self
    }

    /// Where the eras learned are kept, e.g. one cache shared by the clients of
    /// a process, or filled from a file. Default: a cache of this client's own.
    pub fn with_era_cache(mut self, cache: Arc<EraCache>) -> Self {
        self.eras = cache;
        self
    }

    /// The most requests a 2025-era server may send during one call (each an
    /// `elicitation/create`, `sampling/createMessage`, `roots/list` or `ping`).
    /// Default: 32 ([`MAX_SERVER_REQUESTS`](crate::legacy::MAX_SERVER_REQUESTS)).
    /// The one past it ends the call with [`ClientError::TooManyServerRequests`].
    /// Values below 1 count as 1.
    pub fn with_max_server_requests(mut self, n: usize) -> Self {
        self.max_server_requests = n.max(1);
        self
    }

    /// Declares the tasks extension (`io.modelcontextprotocol/tasks`) beside
    /// the handler's capabilities: a server may then answer a `tools/call`
    /// with a task, which the client follows to its end (polling `tasks/get`
    /// at the interval the server suggests, within 100 ms to 30 s, answering
    /// the task's questions through the handler with `tasks/update`), within
    /// the total time cap. Default: not declared.
    pub fn with_tasks(mut self) -> Self {
        self.tasks = true;
        self
    }

    /// No timer: no back-off pause and no total time cap (rounds are still capped).
    /// For runtimes other than tokio, prefer [`with_timer`](Self::with_timer) with that runtime's sleep.
    pub fn no_timer(mut self) -> Self {
        self.timer = None;
        self
    }

    /// Builds the client. Its capabilities are read from the handler once, here.
    pub fn build(self) -> Client {
        let capabilities = self.handler.capabilities();
        Client {
            inner: Arc::new(Inner {
                transport: self.transport,
                handler: self.handler,
                rules: Arc::new({
                    let rules = self.rules.with_capabilities(capabilities);
                    if self.tasks {
                        rules.with_tasks()
                    } else {
                        rules
                    }
                }),
                total_timeout: self.total_timeout,
                request_timeout: self.request_timeout,
                concurrent_answers: self.concurrent_answers,
                timer: self.timer,
                next_id: AtomicI64::new(1),
                era_mode: self.era_mode,
                eras: self.eras,
                session: tokio::sync::Mutex::new(None),
                max_server_requests: self.max_server_requests,
                max_sampling: self.max_sampling,
            }),
        }
    }
}
