//! Tools: [`ToolCall`], the extractor a `#[tool]` function takes to run an mrtr
//! handler, and what [`Mrtr::call_tool`] keeps aside for it.

use std::sync::Arc;

use ::rmcp::ErrorData;
use ::rmcp::RoleServer;
use ::rmcp::handler::server::common::{AsRequestContext, FromContextPart};
use ::rmcp::handler::server::tool::ToolCallContext;
use ::rmcp::model::{CallToolResponse, JsonObject as RmcpObject};
use ::rmcp::service::RequestContext as RmcpContext;
use serde::de::DeserializeOwned;

use super::convert::{error_data, tool_response};
use super::params::Params;
use super::{Caller, Label, Mrtr, correlation_id};
use mrtr::__private::Run;
use mrtr::engine::{Output, Round};
use mrtr::error::Error;
use mrtr::result::ToolResult;
use mrtr::wire::CarrierMethod;

/// What [`Mrtr::call_tool`] keeps aside for the [`ToolCall`] of this call: its
/// params as the client sent them. Private, so nothing else can put one into a
/// request's extensions.
#[derive(Clone)]
struct Kept {
    mrtr: Mrtr,
    params: Params,
    /// Whether the tool is a route of the router the call went to.
    label: Label,
}

/// Keeps the call's params aside in `context` for its [`ToolCall`].
pub(super) fn keep(
    context: &mut RmcpContext<RoleServer>,
    mrtr: Mrtr,
    params: Params,
    label: Label,
) {
    context.extensions.insert(Kept {
        mrtr,
        params,
        label,
    });
}

/// The tool call, for an mrtr handler in a `#[tool]` function: take it as an
/// argument and [`run`](ToolCall::run) the handler.
///
/// It binds the arguments, state and answers the client sent, as kept by
/// [`Mrtr::call_tool`], whatever extractors come before it. On a tool not
/// routed through [`Mrtr::call_tool`] it fails closed (-32603; the log says
/// why).
///
/// ```
/// use mrtr_rmcp::{Mrtr, Principals, ToolCall};
/// use mrtr::{Confirmation, Engine, Keyring, ToolResult};
/// use rmcp::handler::server::router::tool::ToolRouter;
/// use rmcp::model::{CallToolRequestParams, CallToolResponse};
/// use rmcp::service::RequestContext;
/// use rmcp::{ErrorData, RoleServer, ServerHandler, tool, tool_handler, tool_router};
///
/// #[derive(serde::Deserialize, rmcp::schemars::JsonSchema)]
/// #[schemars(crate = "rmcp::schemars")]
/// struct Deploy {
///     service: String,
/// }
///
/// #[derive(Clone)]
/// struct Server {
///     mrtr: Mrtr,
///     tool_router: ToolRouter<Self>,
/// }
///
/// #[tool_router]
/// impl Server {
///     #[tool(description = "Deploys after confirmation", input_schema = mrtr_rmcp::input_schema::<Deploy>())]
///     async fn deploy(&self, call: ToolCall) -> Result<CallToolResponse, ErrorData> {
///         call.run_typed(|round, args: Deploy| async move {
///             if round.confirm("confirm", format!("Deploy {}?", args.service))? != Confirmation::Accepted {
///                 return Ok(ToolResult::text("Nothing was deployed."));
///             }
///             round.once_async("deploy", || async { Ok(()) }).await?;
///             Ok(ToolResult::text(format!("Deployed {}.", args.service)))
///         })
///         .await
///     }
/// }
///
/// #[tool_handler(router = self.tool_router)]
/// impl ServerHandler for Server {
///     async fn call_tool(&self, request: CallToolRequestParams, context: RequestContext<RoleServer>)
///         -> Result<CallToolResponse, ErrorData> {
///         self.mrtr.call_tool(self, &self.tool_router, request, context).await
///     }
/// }
///
/// let engine = Engine::new(Keyring::ephemeral(), "https://mcp.example.com");
/// let server = Server { mrtr: Mrtr::new(engine, Principals::anonymous()), tool_router: Server::tool_router() };
/// let tools = server.tool_router.list_all();
/// assert_eq!(tools[0].name, "deploy");
/// assert_eq!(tools[0].input_schema["required"], serde_json::json!(["service"]));
/// ```
pub struct ToolCall {
    /// What was kept, and the caller (resolved when the `ToolCall` is taken, so
    /// it keeps no copy of rmcp's whole request context).
    kept: Option<(Kept, Caller)>,
}

impl std::fmt::Debug for ToolCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCall")
            .field("routed_by_mrtr", &self.kept.is_some())
            .finish_non_exhaustive()
    }
}

impl<S> FromContextPart<ToolCallContext<'_, S>> for ToolCall {
    fn from_context_part(context: &mut ToolCallContext<'_, S>) -> Result<Self, ErrorData> {
        let request = context.as_request_context_mut();
        // Taken, so a second ToolCall in one function cannot run the flow twice.
        let kept = request.extensions.remove::<Kept>();
        Ok(Self {
            kept: kept.map(|kept| {
                let caller = kept.mrtr.caller(request);
                (kept, caller)
            }),
        })
    }
}

impl ToolCall {
    /// Runs the handler, a sync closure (`|round| { .. }`) or an async one
    /// (`|round| async move { .. }`), re-run from the top on every round. It
    /// returns a [`ToolResult`] (or what converts into one); a result of text
    /// blocks goes to rmcp as its `CallToolResult` directly, without JSON.
    ///
    /// # Errors
    /// The JSON-RPC errors of the flow; failures the model can act on are tool
    /// errors (`isError: true`) in the `Ok` value.
    pub async fn run<F, O, M>(self, handler: F) -> Result<CallToolResponse, ErrorData>
    where
        F: Fn(Round) -> O + Send + Sync,
        O: Output<ToolResult, M>,
    {
        self.flow(|round| handler(round).into_run()).await
    }

    /// [`ToolCall::run`] with the arguments decoded into `A`: arguments that do
    /// not fit are a tool error naming the field (never its value), and the
    /// handler does not run.
    ///
    /// # Errors
    /// As [`ToolCall::run`].
    pub async fn run_typed<A, F, O, M>(self, handler: F) -> Result<CallToolResponse, ErrorData>
    where
        A: DeserializeOwned,
        F: Fn(Round, A) -> O + Send + Sync,
        O: Output<ToolResult, M>,
    {
        self.flow(|round: Round| match round.arguments::<A>() {
            Ok(args) => handler(round, args).into_run(),
            Err(refused) => Run::Now(Err(refused)),
        })
        .await
    }

    async fn flow<H, L>(self, run: H) -> Result<CallToolResponse, ErrorData>
    where
        H: Fn(Round) -> Run<ToolResult, L> + Sync,
        L: std::future::Future<Output = Result<ToolResult, mrtr::Flow>>,
    {
        let Some((
            Kept {
                mrtr,
                params,
                label,
            },
            caller,
        )) = self.kept
        else {
            return Err(not_routed());
        };
        let outcome = mrtr.flow(params, caller, label, Some(&run)).await;
        tool_response(outcome, &mrtr.inner.asks)
    }
}

/// The refusal of a [`ToolCall`] whose call was not routed through
/// [`Mrtr::call_tool`]: without the kept params, what rmcp's earlier extractors
/// left may lack the arguments or the state, and binding to that would be weaker
/// than the call. Fails closed.
fn not_routed() -> ErrorData {
    let e = Error::internal(
        "mrtr_rmcp::ToolCall on a tool call not routed through Mrtr::call_tool: \
         route ServerHandler::call_tool through Mrtr::call_tool (the call_tool \
         #[tool_handler] generates keeps nothing for ToolCall), and take one \
         ToolCall per tool function (the first takes what was kept)",
    );
    e.log(&mrtr::error::DiagContext {
        correlation_id: &correlation_id(),
        method: Some(CarrierMethod::ToolsCall.as_str()),
        ..Default::default()
    });
    error_data(&e)
}

/// The `inputSchema` of a tool whose arguments are `A`, for
/// `#[tool(input_schema = mrtr_rmcp::input_schema::<A>())]` (rmcp's own schema
/// settings, as for `Parameters<A>`). With rmcp's re-export of schemars, the
/// derive needs `#[schemars(crate = "rmcp::schemars")]`.
///
/// # Panics
/// When `A`'s schema is not an object schema (a programming error, found when the
/// tool router is built).
pub fn input_schema<A: ::rmcp::schemars::JsonSchema + 'static>() -> Arc<RmcpObject> {
    ::rmcp::handler::server::common::schema_for_input::<A>()
        .unwrap_or_else(|e| panic!("input schema of {}: {e}", std::any::type_name::<A>()))
}
