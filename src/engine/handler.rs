//! What a handler is: a closure from a [`Round`] to its carrier's result, sync
//! or async, through one bound.
//!
//! A handler for `tools/call` returns a [`ToolResult`], one for `prompts/get` a
//! [`PromptResult`], one for `resources/read` a [`ResourceResult`] (or anything
//! that converts into it with [`Into`]); the result type is the carrier
//! ([`CarrierResult`]). It returns it either at once (`Result<R, Flow>`: a
//! synchronous handler, which runs with no future around it) or as a future of
//! it (`async move { .. }`: an async handler, raced against the handler
//! deadline). [`Output`] is the one bound that takes both; its marker parameter
//! (`M`, [`Now`] or [`Later`]) only keeps the two implementations apart, as
//! axum's `Handler<T, S>` does, and is never written by a caller.
//!
//! A handler that returns another carrier's result, or a bare JSON value, does
//! not compile:
//!
//! ```compile_fail,E0277
//! # use mrtr::{Engine, Keyring, PromptResult, Service};
//! // A tool's handler must return a ToolResult, not a prompt's result.
//! let _ = Service::new(Engine::new(Keyring::ephemeral(), "a"), "a", "1")
//!     .tool("t", "d", serde_json::json!({"type": "object"}), |_round| {
//!         Ok(PromptResult::new().user_text("hi"))
//!     });
//! ```
//!
//! ```compile_fail,E0277
//! # use mrtr::{Engine, Keyring, Service};
//! // Nor a bare JSON value.
//! let _ = Service::new(Engine::new(Keyring::ephemeral(), "a"), "a", "1")
//!     .tool("t", "d", serde_json::json!({"type": "object"}), |_round| {
//!         Ok(serde_json::json!(42))
//!     });
//! ```
//!
//! ```compile_fail,E0277
//! # use mrtr::{Engine, Keyring, Service, ToolResult};
//! # use mrtr::service::PromptDefinition;
//! // A prompt's handler must return a PromptResult, even an async one.
//! let _ = Service::new(Engine::new(Keyring::ephemeral(), "a"), "a", "1")
//!     .prompt(PromptDefinition::new("p"), |_round| async move { Ok(ToolResult::text("hi")) });
//! ```
//!
//! ```compile_fail,E0277
//! # use mrtr::{Engine, Keyring, Service};
//! # use mrtr::service::ResourceDefinition;
//! // A resource's handler must return a ResourceResult.
//! let _ = Service::new(Engine::new(Keyring::ephemeral(), "a"), "a", "1")
//!     .resource(ResourceDefinition::new("file:///a", "a"), |_round| {
//!         Ok(serde_json::json!({"contents": []}))
//!     });
//! ```

use std::future::{Future, Pending};

use futures_util::FutureExt as _;
use futures_util::future::Map;
use serde_json::Value;

use super::{Flow, Round};
use crate::result::{PromptResult, ResourceResult, ToolResult};
use crate::wire::CarrierMethod;

mod sealed {
    /// Only this crate's result types are carriers.
    #[allow(unreachable_pub)] // why: the sealed-trait pattern: public, unnameable
    pub trait Sealed {}
}

/// The complete result of one of the three MRTR carriers: the type a handler of
/// that carrier returns, and so the carrier itself. Sealed: implemented by
/// [`ToolResult`] (`tools/call`), [`PromptResult`] (`prompts/get`) and
/// [`ResourceResult`] (`resources/read`) only.
pub trait CarrierResult: sealed::Sealed + Send + 'static {
    /// The carrier this is the result of.
    const METHOD: CarrierMethod;

    /// The result object as it goes on the wire, with `"resultType": "complete"`.
    fn into_complete(self) -> Value;
}

/// Adds `resultType: complete` to a result object.
fn complete(v: Value) -> Value {
    match v {
        Value::Object(mut o) => {
            o.insert("resultType".into(), "complete".into());
            Value::Object(o)
        }
        // Not reached: every carrier result is an object.
        other => other,
    }
}

impl sealed::Sealed for ToolResult {}
impl CarrierResult for ToolResult {
    const METHOD: CarrierMethod = CarrierMethod::ToolsCall;
    fn into_complete(self) -> Value {
        complete(self.into())
    }
}

impl sealed::Sealed for PromptResult {}
impl CarrierResult for PromptResult {
    const METHOD: CarrierMethod = CarrierMethod::PromptsGet;
    fn into_complete(self) -> Value {
        complete(self.into())
    }
}

impl sealed::Sealed for ResourceResult {}
impl CarrierResult for ResourceResult {
    const METHOD: CarrierMethod = CarrierMethod::ResourcesRead;
    fn into_complete(self) -> Value {
        complete(self.into())
    }
}

/// The marker of a synchronous handler's [`Output`]: `Result<R, Flow>`.
#[derive(Debug)]
pub enum Now {}

/// The marker of an async handler's [`Output`]: a future of `Result<R, Flow>`.
#[derive(Debug)]
pub enum Later {}

/// What a handler of the carrier whose result is `T` may return: `Result<R, Flow>`
/// now, or a `Send` future of it, where `R: Into<T>`. Implemented for exactly
/// those; `M` is [`Now`] or [`Later`], inferred, never named.
pub trait Output<T, M>: private::IntoRun<T, M> + Send {}

impl<T, M, O: private::IntoRun<T, M> + Send> Output<T, M> for O {}

pub(crate) mod private {
    use super::{Flow, Future};

    /// How a handler's return value runs: ready now, or a future to await.
    #[allow(unreachable_pub)] // why: in the public Output bound, unnameable outside
    pub enum Run<T, L> {
        /// A synchronous handler's result.
        Now(Result<T, Flow>),
        /// An async handler's future.
        Later(L),
    }

    impl<T, L> std::fmt::Debug for Run<T, L> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(match self {
                Self::Now(_) => "Run::Now(..)",
                Self::Later(_) => "Run::Later(..)",
            })
        }
    }

    /// The conversion behind [`super::Output`].
    #[allow(unreachable_pub)] // why: in the public Output bound, unnameable outside
    pub trait IntoRun<T, M> {
        /// The future of an async handler (never made for a synchronous one).
        type Later: Future<Output = Result<T, Flow>> + Send;
        /// The handler's return value, converted to the carrier's result.
        fn into_run(self) -> Run<T, Self::Later>;
    }
}

pub(crate) use private::{IntoRun, Run};

/// A handler's return value as a [`Run`], for mrtr's adapters (`mrtr-rmcp`), which
/// cannot name the sealed conversion. Not API.
#[doc(hidden)]
pub fn into_run<T, M, O: Output<T, M>>(output: O) -> Run<T, <O as IntoRun<T, M>>::Later> {
    output.into_run()
}

fn convert<R: Into<T>, T>(r: Result<R, Flow>) -> Result<T, Flow> {
    r.map(Into::into)
}

impl<T: Send, R: Into<T>> IntoRun<T, Now> for Result<R, Flow> {
    type Later = Pending<Result<T, Flow>>;
    fn into_run(self) -> Run<T, Self::Later> {
        Run::Now(convert(self))
    }
}

impl<T, F, R> IntoRun<T, Later> for F
where
    F: Future<Output = Result<R, Flow>> + Send,
    R: Into<T>,
{
    type Later = Map<F, fn(Result<R, Flow>) -> Result<T, Flow>>;
    fn into_run(self) -> Run<T, Self::Later> {
        Run::Later(self.map(convert::<R, T> as fn(_) -> _))
    }
}

/// The boxed future of a registered async handler.
pub(crate) type BoxRun<T> =
    std::pin::Pin<Box<dyn Future<Output = Result<T, Flow>> + Send + 'static>>;

/// A registered handler, sync or async, behind one shape: re-run from the top
/// on every round of a flow.
pub(crate) type Handler<T> = std::sync::Arc<dyn Fn(Round) -> Run<T, BoxRun<T>> + Send + Sync>;

/// A handler closure as a registered [`Handler`]: a synchronous one stays
/// unboxed (its result is ready), an async one's future is boxed.
pub(crate) fn register<T, F, O, M>(f: F) -> Handler<T>
where
    T: 'static,
    F: Fn(Round) -> O + Send + Sync + 'static,
    O: Output<T, M> + 'static,
    M: 'static,
{
    std::sync::Arc::new(move |round| match f(round).into_run() {
        Run::Now(r) => Run::Now(r),
        Run::Later(l) => Run::Later(Box::pin(l)),
    })
}
