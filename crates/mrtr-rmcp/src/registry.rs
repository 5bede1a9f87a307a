//! A whole [`Service`] on rmcp: its tools, prompts and resources run through
//! [`Mrtr`]'s flows with the handlers the service registered, and its lists as
//! rmcp's types.

use ::rmcp::ErrorData;
use ::rmcp::RoleServer;
use ::rmcp::model::{
    CallToolRequestParams, CallToolResponse, GetPromptRequestParams, GetPromptResponse, Prompt,
    ReadResourceRequestParams, ReadResourceResponse, Resource, Tool,
};
use ::rmcp::service::RequestContext as RmcpContext;
use serde::de::DeserializeOwned;

use super::convert::{prompt_response, resource_response, tool_response};
use super::params::Params;
use super::{Label, Mrtr};
use mrtr::__private::Registered;
use mrtr::engine::Outcome;
use mrtr::result::{PromptResult, ResourceResult, ToolResult};
use mrtr::service::Service;
use mrtr::wire::CarrierMethod;

impl Mrtr {
    /// `tools/call` of a tool registered on `service` (its handler, on this
    /// [`Mrtr`]'s engine and principal): for serving a whole [`Service`] on rmcp.
    /// An unknown tool is -32602, as on [`Service::handle`].
    ///
    /// # Errors
    /// As [`Mrtr::get_prompt`].
    pub async fn call_service_tool(
        &self,
        service: &Service,
        request: CallToolRequestParams,
        context: RmcpContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let outcome = self
            .serve::<ToolResult, _>(service, &request, &context)
            .await;
        tool_response(outcome, &self.inner.asks)
    }

    /// `prompts/get` of a prompt registered on `service`.
    ///
    /// # Errors
    /// As [`Mrtr::get_prompt`].
    pub async fn get_service_prompt(
        &self,
        service: &Service,
        request: GetPromptRequestParams,
        context: RmcpContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let outcome = self
            .serve::<PromptResult, _>(service, &request, &context)
            .await;
        prompt_response(outcome, &self.inner.asks)
    }

    /// `resources/read` of a resource registered on `service`.
    ///
    /// # Errors
    /// As [`Mrtr::get_prompt`].
    pub async fn read_service_resource(
        &self,
        service: &Service,
        request: ReadResourceRequestParams,
        context: RmcpContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let outcome = self
            .serve::<ResourceResult, _>(service, &request, &context)
            .await;
        resource_response(outcome, &self.inner.asks)
    }

    /// A request of the carrier whose result is `T`, with the handler `service`
    /// registered for its target (none: the carrier's "unknown target").
    async fn serve<T: Registered, P: serde::Serialize>(
        &self,
        service: &Service,
        request: &P,
        context: &RmcpContext<RoleServer>,
    ) -> Outcome<T> {
        let params = Params::of(T::METHOD, request, context, self.metas());
        let target = params.target(T::METHOD).unwrap_or_default();
        // A target the application hid (`Changes::hide`) is unknown here too.
        let handler = if mrtr::__private::is_hidden::<T>(service, target) {
            None
        } else {
            mrtr::__private::registry::<T>(service).handler_of(target)
        };
        // Only tools and prompts are labelled by name, as on `Service`.
        let label = match T::METHOD {
            CarrierMethod::ToolsCall | CarrierMethod::PromptsGet if handler.is_some() => {
                Label::Registered
            }
            _ => Label::Unlisted,
        };
        let caller = self.caller(context);
        let run = handler.map(|h| move |round| h(round));
        self.flow(params, caller, label, run.as_ref()).await
    }
}

/// The tools registered on `service`, as rmcp's `Tool`s (for `list_tools`).
pub fn service_tools(service: &Service) -> Vec<Tool> {
    definitions::<ToolResult, _>(service)
}

/// The prompts registered on `service`, as rmcp's `Prompt`s (for `list_prompts`).
pub fn service_prompts(service: &Service) -> Vec<Prompt> {
    definitions::<PromptResult, _>(service)
}

/// The resources registered on `service`, as rmcp's `Resource`s (for
/// `list_resources`).
pub fn service_resources(service: &Service) -> Vec<Resource> {
    definitions::<ResourceResult, _>(service)
}

/// The listed definitions (not those the application hid), as rmcp's type.
fn definitions<T: Registered, D: DeserializeOwned>(service: &Service) -> Vec<D> {
    mrtr::__private::listed::<T>(service)
        .filter_map(|d| D::deserialize(d).ok())
        .collect()
}
