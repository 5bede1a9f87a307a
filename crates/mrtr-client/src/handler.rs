//! How the driver obtains answers: the [`InputHandler`] trait and the closure-based [`Handlers`].

use std::future::Future;
use std::sync::Arc;

use mrtr::wire::CarrierMethod;
use mrtr::wire::JsonObject;
use mrtr::wire::{ClientCapabilities, ElicitationCapability, SamplingCapability};
use mrtr::wire::{
    CreateMessageParams, CreateMessageResult, ElicitParams, ElicitResult, ListRootsResult,
};

use crate::BoxFuture;

/// Where an input request comes from: shown to a user, logged, or used to route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputContext {
    /// The server-assigned key of the input request in `inputRequests`.
    pub key: String,
    /// The carrier request being driven.
    pub method: CarrierMethod,
    /// Its target: tool or prompt name, or resource URI.
    pub target: String,
    /// The round whose result asked (1 = the answer to the first request).
    pub round: u32,
}

/// Why a handler gave no answer. Any of these ends the flow without a retry
/// (MCP 2026-07-28, Sampling §Error Handling and Roots §Error Handling: on a
/// declined or failed sampling or roots request the client
/// "simply does not retry"). An elicitation the user declines or cancels is *not*
/// an error: answer with [`ElicitResult`] `decline`/`cancel`, which the server sees.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HandlerError {
    /// The user refused (e.g. to let a model answer a sampling request).
    #[error("declined by the user")]
    Declined,
    /// This handler does not serve this kind of input.
    #[error("not supported by this client")]
    Unsupported,
    /// Something went wrong while producing the answer.
    #[error("{0}")]
    Failed(String),
}

/// Answers the input requests of an `InputRequiredResult`.
///
/// Each method has a default that answers [`HandlerError::Unsupported`]; the
/// driver never calls a method whose kind [`capabilities`](Self::capabilities)
/// does not declare (it refuses such a request with
/// [`FlowError::UndeclaredInput`](crate::FlowError::UndeclaredInput) before
/// asking anything). The methods of one round run concurrently, so an
/// implementation must be ready for overlapping calls.
///
/// [`Handlers`] builds one from closures and derives the capabilities from which
/// closures it was given.
pub trait InputHandler: Send + Sync + std::fmt::Debug {
    /// The capabilities declared in `_meta` of every request (the same on every round).
    fn capabilities(&self) -> ClientCapabilities;

    /// Answers an `elicitation/create` (form or url mode).
    fn elicit(
        &self,
        ctx: InputContext,
        params: ElicitParams,
    ) -> BoxFuture<'_, Result<ElicitResult, HandlerError>> {
        let _ = (ctx, params);
        Box::pin(async { Err(HandlerError::Unsupported) })
    }

    /// Answers a `sampling/createMessage`.
    fn create_message(
        &self,
        ctx: InputContext,
        params: CreateMessageParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, HandlerError>> {
        let _ = (ctx, params);
        Box::pin(async { Err(HandlerError::Unsupported) })
    }

    /// Answers a `roots/list`.
    fn list_roots(
        &self,
        ctx: InputContext,
    ) -> BoxFuture<'_, Result<ListRootsResult, HandlerError>> {
        let _ = ctx;
        Box::pin(async { Err(HandlerError::Unsupported) })
    }
}

impl<T: InputHandler + ?Sized> InputHandler for Arc<T> {
    fn capabilities(&self) -> ClientCapabilities {
        (**self).capabilities()
    }
    fn elicit(
        &self,
        ctx: InputContext,
        params: ElicitParams,
    ) -> BoxFuture<'_, Result<ElicitResult, HandlerError>> {
        (**self).elicit(ctx, params)
    }
    fn create_message(
        &self,
        ctx: InputContext,
        params: CreateMessageParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, HandlerError>> {
        (**self).create_message(ctx, params)
    }
    fn list_roots(
        &self,
        ctx: InputContext,
    ) -> BoxFuture<'_, Result<ListRootsResult, HandlerError>> {
        (**self).list_roots(ctx)
    }
}

/// A client that serves no input at all: declares `{}` and is never asked.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoInput;

impl InputHandler for NoInput {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities::none()
    }
}

type ElicitFn = Arc<
    dyn Fn(InputContext, ElicitParams) -> BoxFuture<'static, Result<ElicitResult, HandlerError>>
        + Send
        + Sync,
>;
type SamplingFn = Arc<
    dyn Fn(
            InputContext,
            CreateMessageParams,
        ) -> BoxFuture<'static, Result<CreateMessageResult, HandlerError>>
        + Send
        + Sync,
>;
type RootsFn = Arc<
    dyn Fn(InputContext) -> BoxFuture<'static, Result<ListRootsResult, HandlerError>> + Send + Sync,
>;

/// An [`InputHandler`] made of async closures; the declared capabilities follow
/// from which closures are set, plus the sub-capabilities switched on explicitly.
///
/// | set | declares |
/// |---|---|
/// | [`on_elicit`](Self::on_elicit) | `elicitation: {}` (form only) |
/// | … + [`with_url_mode`](Self::with_url_mode) | `elicitation: {form: {}, url: {}}` |
/// | … + [`without_form_mode`](Self::without_form_mode) | `elicitation: {url: {}}` |
/// | [`on_sampling`](Self::on_sampling) | `sampling: {}`, plus `tools`/`context` with [`with_sampling_tools`](Self::with_sampling_tools)/[`with_sampling_context`](Self::with_sampling_context) |
/// | [`on_roots`](Self::on_roots) | `roots: {}` |
///
/// ```
/// use mrtr_client::Handlers;
/// use mrtr::wire::{ElicitAction, ElicitResult};
/// let h = Handlers::new().on_elicit(|_ctx, _params| async {
///     Ok(ElicitResult { action: ElicitAction::Decline, content: None })
/// });
/// use mrtr_client::InputHandler;
/// assert_eq!(h.capabilities().to_value(), serde_json::json!({"elicitation": {}}));
/// ```
#[derive(Clone, Default)]
pub struct Handlers {
    elicit: Option<ElicitFn>,
    url_mode: bool,
    no_form_mode: bool,
    sampling: Option<SamplingFn>,
    sampling_tools: bool,
    sampling_context: bool,
    roots: Option<RootsFn>,
}

impl std::fmt::Debug for Handlers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handlers")
            .field("elicit", &self.elicit.is_some())
            .field("url_mode", &self.url_mode)
            .field("no_form_mode", &self.no_form_mode)
            .field("sampling", &self.sampling.is_some())
            .field("sampling_tools", &self.sampling_tools)
            .field("sampling_context", &self.sampling_context)
            .field("roots", &self.roots.is_some())
            .finish()
    }
}

impl Handlers {
    /// No handlers: declares nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Answers elicitations with `f` (declares `elicitation`, form mode).
    pub fn on_elicit<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(InputContext, ElicitParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitResult, HandlerError>> + Send + 'static,
    {
        self.elicit = Some(Arc::new(move |c, p| Box::pin(f(c, p))));
        self
    }

    /// Also declares url-mode elicitation (`elicitation.url`). Needs [`on_elicit`](Self::on_elicit).
    pub fn with_url_mode(mut self) -> Self {
        self.url_mode = true;
        self
    }

    /// Declares url mode only (no form mode). Implies [`with_url_mode`](Self::with_url_mode).
    pub fn without_form_mode(mut self) -> Self {
        self.no_form_mode = true;
        self.url_mode = true;
        self
    }

    /// Answers sampling requests with `f` (declares `sampling`).
    pub fn on_sampling<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(InputContext, CreateMessageParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CreateMessageResult, HandlerError>> + Send + 'static,
    {
        self.sampling = Some(Arc::new(move |c, p| Box::pin(f(c, p))));
        self
    }

    /// Also declares `sampling.tools` (tool-enabled sampling). Needs [`on_sampling`](Self::on_sampling).
    pub fn with_sampling_tools(mut self) -> Self {
        self.sampling_tools = true;
        self
    }

    /// Also declares `sampling.context` (`includeContext` other than `none`).
    pub fn with_sampling_context(mut self) -> Self {
        self.sampling_context = true;
        self
    }

    /// Answers `roots/list` with `f` (declares `roots`).
    pub fn on_roots<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(InputContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ListRootsResult, HandlerError>> + Send + 'static,
    {
        self.roots = Some(Arc::new(move |c| Box::pin(f(c))));
        self
    }
}

impl InputHandler for Handlers {
    fn capabilities(&self) -> ClientCapabilities {
        let mut caps = ClientCapabilities::none();
        if self.elicit.is_some() {
            caps.elicitation = Some(match (self.url_mode, self.no_form_mode) {
                // `elicitation: {}` is form only (MCP 2026-07-28, Elicitation §Capabilities):
                // the shortest correct declaration.
                (false, _) => ElicitationCapability::default(),
                (true, false) => ElicitationCapability {
                    form: Some(JsonObject::new()),
                    url: Some(JsonObject::new()),
                    ..Default::default()
                },
                (true, true) => ElicitationCapability {
                    url: Some(JsonObject::new()),
                    ..Default::default()
                },
            });
        }
        if self.sampling.is_some() {
            caps.sampling = Some(SamplingCapability {
                tools: self.sampling_tools.then(JsonObject::new),
                context: self.sampling_context.then(JsonObject::new),
                ..Default::default()
            });
        }
        if self.roots.is_some() {
            caps.roots = Some(JsonObject::new());
        }
        caps
    }

    fn elicit(
        &self,
        ctx: InputContext,
        params: ElicitParams,
    ) -> BoxFuture<'_, Result<ElicitResult, HandlerError>> {
        match &self.elicit {
            Some(f) => f(ctx, params),
            None => Box::pin(async { Err(HandlerError::Unsupported) }),
        }
    }

    fn create_message(
        &self,
        ctx: InputContext,
        params: CreateMessageParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, HandlerError>> {
        match &self.sampling {
            Some(f) => f(ctx, params),
            None => Box::pin(async { Err(HandlerError::Unsupported) }),
        }
    }

    fn list_roots(
        &self,
        ctx: InputContext,
    ) -> BoxFuture<'_, Result<ListRootsResult, HandlerError>> {
        match &self.roots {
            Some(f) => f(ctx),
            None => Box::pin(async { Err(HandlerError::Unsupported) }),
        }
    }
}
