//! The sans-IO JSON-RPC router: one message in, one reply out.
//!
//! Transports (the Streamable HTTP and stdio adapters of `mrtr-server`, or
//! your own) read bytes, call [`Service::handle`], and write the reply. What the
//! protocol decides (parse errors, `_meta`, routing, the round engine, the error
//! channels) happens here, without I/O or a clock, and without knowing the
//! transport: a transport's own rules (Streamable HTTP's header agreement and
//! statuses, [`crate::streamable_http`]) stay with the transport, which checks
//! a message with [`ParsedMessage::check`] and maps a [`Reply`] to its status.
//! Every request is recorded where it ends, in one crate-private module (`record`).
//!
//! - [`envelope`](ParsedMessage): the JSON-RPC envelope;
//! - the tools, prompts and resources it serves ([`PromptDefinition`],
//!   [`ResourceDefinition`]) and their handlers, kept in the crate's registry
//!   (which the `rmcp` adapter reads too, without the router);
//! - discover: `server/discover` and the lists ([`ListCaching`]), in
//!   pages whose cursors a client cannot forge ([`Service::with_page_size`]);
//! - completion: `completion/complete`, answered by the sources registered
//!   with [`Service::prompt_completion`] and [`Service::resource_template_completion`];
//! - resource templates ([`ResourceTemplateDefinition`]):
//!   `resources/read` of a URI no static resource has, routed by template;
//! - the carrier requests run on the engine's one path.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use serde_json::{Value, json};

use crate::defaults;
use crate::engine::turn::{self, Turn};
use crate::engine::{Engine, NotificationSink, Outcome, Output, Round};
use crate::error::Error;
use crate::param_headers::ParamHeaders;
use crate::principal::Principal;
use crate::time::Timestamp;
use crate::wire::{CarrierMethod, CarrierRequest, Implementation, JsonObject};

mod completion;
mod discover;
mod envelope;
pub(crate) mod era;
mod legacy;
mod page;
mod subscription;
pub mod tasks;
mod template;

pub use crate::record::RequestLog;
use crate::registry::{self, Registered, Registries, Registry};
pub use crate::registry::{PromptDefinition, ResourceDefinition};
pub use completion::{Completion, CompletionOutput, CompletionRequest};
pub use discover::ListCaching;
pub use envelope::{NoCheck, ParsedMessage};
pub use subscription::{Changes, List, META_SUBSCRIPTION_ID, Subscription};
pub use tasks::{EXTENSION as TASKS_EXTENSION, TaskRun, TaskSupport};
pub use template::{ResourceTemplateDefinition, TemplateError};

use crate::result::{PromptResult, ResourceResult, ToolResult};

/// What the transport knows about one incoming message.
#[derive(Debug, Clone)]
pub struct RequestContext {
    /// The authenticated principal every `requestState` of this request is bound to.
    pub principal: Principal,
    /// The current time, read by the transport.
    pub now: Timestamp,
    /// A correlation id for the private log; never sent to the client.
    pub correlation_id: String,
    /// The network address the request came from (the TCP peer), when the
    /// transport has one; `None` on stdio and in process.
    ///
    /// Never sealed, logged or answered. For an anonymous principal it keys the
    /// replay guard's quota on the caller's address (an IPv4 address, an IPv6
    /// /64: [`Engine::run_from`]), so one anonymous caller cannot take every
    /// anonymous caller's claims. Behind a reverse proxy it is the proxy's address.
    pub peer: Option<std::net::IpAddr>,
    /// The span this request runs in, as the transport's tracer has it (W3C):
    /// sealed into a flow's first round, so that each later round's span,
    /// on any instance, links to it ([`RequestLog::flow_link`]). `None` when
    /// the transport traces nothing.
    pub trace: Option<crate::wire::TraceParent>,
}

impl RequestContext {
    /// The context of a request from `principal` at `now`, with a correlation id
    /// for the log and no peer address.
    pub fn new(principal: Principal, now: Timestamp, correlation_id: impl Into<String>) -> Self {
        Self {
            principal,
            now,
            correlation_id: correlation_id.into(),
            peer: None,
            trace: None,
        }
    }

    /// Who the caller is, for the limits kept per caller (subscriptions, the
    /// 2025-era sessions of `mrtr-server`): the principal's issuer and subject,
    /// or for an anonymous one its address (an IPv4 address, an IPv6 /64), as the
    /// replay guard keys its quota. Not a secret, and not for the log.
    pub fn caller_key(&self) -> String {
        if !self.principal.is_anonymous() {
            return format!(
                "{}\u{0}{}",
                self.principal.issuer().unwrap_or_default(),
                self.principal.subject_id().unwrap_or_default()
            );
        }
        match self.peer {
            Some(std::net::IpAddr::V4(ip)) => format!("anonymous\u{0}{ip}"),
            Some(std::net::IpAddr::V6(ip)) => {
                let s = ip.segments();
                format!(
                    "anonymous\u{0}{:x}:{:x}:{:x}:{:x}::/64",
                    s[0], s[1], s[2], s[3]
                )
            }
            None => "anonymous".to_owned(),
        }
    }
}

/// The reply to one message.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The serialized JSON-RPC response, or `None` for a notification.
    pub body: Option<String>,
    /// The JSON-RPC error code when the response is an error (a tool error is a
    /// result, not an error): what a transport's status rules read
    /// ([`streamable_http::reply_status`](crate::streamable_http::reply_status)).
    pub error_code: Option<i64>,
    /// What the transport logs on its one line for this request.
    pub log: RequestLog,
    /// A task's run this request made due (it created the task, or answered
    /// its last question): the transport starts it with [`Service::run_task`],
    /// off the request (the tasks extension, [`Service::with_tasks`]).
    pub task: Option<TaskRun>,
}

/// A sans-IO MCP server: tools, prompts and resources whose handlers run on the
/// round [`Engine`], plus the discovery and list methods, behind one [`Service::handle`].
///
/// A handler is a closure from the [`Round`] to its carrier's result, sync
/// (`|round| { .. Ok(ToolResult::text(..)) }`) or async
/// (`|round| async move { .. }`), through the same registration.
///
/// ```
/// use mrtr::{Elicited, Engine, Form, Keyring, Principal, RequestContext, Service, Timestamp, ToolResult};
///
/// let service = Service::new(Engine::new(Keyring::ephemeral(), "example"), "example", "1.0.0")
///     .tool("greet", "Asks your name, then greets you.", serde_json::json!({"type": "object"}), |round| {
///         match round.elicit("name", Form::new("Your name?").string("name", "Name"))? {
///             Elicited::Accepted(f) => Ok(ToolResult::text(format!("Hello, {}!", f.str("name").unwrap_or("you")))),
///             _ => Ok(ToolResult::text("Hello!")),
///         }
///     });
/// let ctx = RequestContext::new(Principal::anonymous(), Timestamp::from_unix_secs(1_800_000_000), "c1");
/// let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","_meta":{
///     "io.modelcontextprotocol/protocolVersion":"2026-07-28",
///     "io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}"#;
/// let reply = service.handle_sync(body, &ctx);
/// assert_eq!(reply.error_code, None);
/// assert_eq!(reply.log.outcome, "input_required");
/// ```
#[derive(Debug)]
pub struct Service {
    engine: Engine,
    info: Implementation,
    instructions: Option<String>,
    registries: Registries,
    templates: template::Templates,
    caching: ListCaching,
    handler_timeout: Duration,
    completions: completion::Completions,
    page_size: usize,
    changes: Option<Changes>,
    /// The caching hints of the static resources registered with some
    /// (`ResourceDefinition::cache_for`), by URI.
    resource_caching: std::collections::HashMap<String, (u64, crate::result::CacheScope)>,
    /// The `x-mcp-header` declarations of the tools that have some, by tool
    /// name; empty (and never looked into) when no tool has any.
    param_headers: std::collections::HashMap<String, ParamHeaders>,
    /// Which eras the transports serve.
    eras: era::Eras,
    /// The time bounds of a 2025-era flow.
    legacy_bounds: era::Bounds,
    /// The tasks extension's tasks, when served ([`Service::with_tasks`]).
    tasks: Option<tasks::Tasks>,
    /// How each tool runs as a task, for the tools that may.
    task_support: std::collections::HashMap<String, TaskSupport>,
    /// How long a task's runner holds its lease ([`Service::with_task_lease`]).
    task_lease: Duration,
}

impl Service {
    /// A service named `name` at `version`, running handlers on `engine`.
    pub fn new(engine: Engine, name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            engine,
            info: Implementation {
                name: name.into(),
                version: version.into(),
                extra: JsonObject::new(),
            },
            instructions: None,
            registries: Registries::default(),
            templates: template::Templates::default(),
            caching: ListCaching {
                ttl_ms: u64::try_from(defaults::LIST_CACHE_TTL.as_millis()).unwrap_or(u64::MAX),
                public: true,
            },
            handler_timeout: defaults::HANDLER_TIMEOUT,
            completions: completion::Completions::default(),
            page_size: defaults::PAGE_SIZE,
            changes: None,
            resource_caching: std::collections::HashMap::new(),
            param_headers: std::collections::HashMap::new(),
            eras: era::Eras::default(),
            legacy_bounds: era::Bounds::default(),
            tasks: None,
            task_support: std::collections::HashMap::new(),
            task_lease: defaults::TASK_LEASE,
        }
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Guidance for the model, returned by `server/discover`.
    #[must_use]
    pub fn with_instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// Caching hints on list and discover results (default: 60 s, public;
    /// [`defaults::LIST_CACHE_TTL`]).
    #[must_use]
    pub fn with_list_caching(mut self, caching: ListCaching) -> Self {
        self.caching = caching;
        self
    }

    /// Serves `subscriptions/listen` (SEP-2575) with `changes`, the hub the
    /// application announces changes on (keep a clone):
    /// [`Changes::resource_updated`] reaches every client listening for that
    /// resource, [`Changes::hide`] and [`Changes::show`] take a registered
    /// target out of its list and put it back, telling the clients listening
    /// for that list; `server/discover` then says `listChanged` for each list the
    /// service has, and `resources.subscribe` when it has resources or resource
    /// templates. A transport opens each stream with
    /// [`Service::listen`]; without this call `subscriptions/listen` is -32601.
    ///
    /// ```
    /// use mrtr::service::{Changes, ParsedMessage, Service};
    /// use mrtr::{Engine, Keyring, Principal, RequestContext, ResourceResult, Timestamp};
    /// use std::task::{Context, Poll, Waker};
    ///
    /// let changes = Changes::new();
    /// let service = Service::new(Engine::new(Keyring::ephemeral(), "example"), "example", "1.0.0")
    ///     .resource(mrtr::ResourceDefinition::new("file:///today.md", "today"), |_| {
    ///         Ok(ResourceResult::text("file:///today.md", "text/markdown", "# Today"))
    ///     })
    ///     .with_changes(changes.clone());
    /// let ctx = RequestContext::new(Principal::anonymous(), Timestamp::from_unix_secs(1_800_000_000), "c1");
    /// let listen = ParsedMessage::parse(br#"{"jsonrpc":"2.0","id":9,"method":"subscriptions/listen","params":{
    ///     "notifications":{"resourceSubscriptions":["file:///today.md"]},"_meta":{
    ///     "io.modelcontextprotocol/protocolVersion":"2026-07-28",
    ///     "io.modelcontextprotocol/clientCapabilities":{}}}}"#);
    /// assert!(listen.is_listen());
    /// let subscription = service.listen(listen, &ctx).expect("open");
    /// assert!(subscription.acknowledgement().contains("notifications/subscriptions/acknowledged"));
    /// changes.resource_updated("file:///today.md");
    /// let Poll::Ready(Some(update)) = subscription.poll_next(&mut Context::from_waker(Waker::noop())) else {
    ///     panic!("an update")
    /// };
    /// assert!(update.contains("notifications/resources/updated"));
    /// ```
    #[must_use]
    pub fn with_changes(mut self, changes: Changes) -> Self {
        self.changes = Some(changes);
        self
    }

    /// Whether the application took `target` out of `T`'s list
    /// ([`Changes::hide`]): then it is served as if it were not registered.
    pub(crate) fn is_hidden<T: Registered>(&self, target: &str) -> bool {
        let Some(changes) = &self.changes else {
            return false;
        };
        let list = match T::METHOD {
            CarrierMethod::ToolsCall => List::Tools,
            CarrierMethod::PromptsGet => List::Prompts,
            CarrierMethod::ResourcesRead => List::Resources,
        };
        changes.is_hidden(list, target)
    }

    /// The hub given with [`Service::with_changes`], if any.
    pub fn changes(&self) -> Option<&Changes> {
        self.changes.as_ref()
    }

    /// Opens the `subscriptions/listen` stream `message` asks for (check
    /// [`ParsedMessage::is_listen`] first): the [`Subscription`] whose
    /// acknowledgement, notifications and end the transport writes, or the
    /// error reply (the transport's rule refused it, its params are invalid, a
    /// cap is reached, or the service serves no subscriptions: -32601).
    ///
    /// # Errors
    /// The [`Reply`] to send instead of a stream.
    #[allow(clippy::result_large_err)] // why: the reply goes out as it is, once
    pub fn listen<C>(
        &self,
        mut message: ParsedMessage<C>,
        ctx: &RequestContext,
    ) -> Result<Subscription, Reply>
    where
        C: FnOnce(&str, Option<&Value>) -> Result<(), Error>,
    {
        let mut log = RequestLog::default();
        let (id, params) = match envelope::read(&mut message, &mut log) {
            envelope::Read::Request(r) if r.method == subscription::LISTEN => {
                if let Some(e) = r.refused {
                    return Err(self.reply(Some(r.id), Some(Outcome::Protocol(e)), ctx, log));
                }
                (r.id, r.params)
            }
            envelope::Read::Request(r) => {
                let e = Error::internal("Service::listen given another method");
                return Err(self.reply(Some(r.id), Some(Outcome::Protocol(e)), ctx, log));
            }
            envelope::Read::Notification => return Err(self.reply(None, None, ctx, log)),
            envelope::Read::Refused(id, e) => {
                return Err(self.reply(id, Some(Outcome::Protocol(e)), ctx, log));
            }
        };
        let Some(changes) = &self.changes else {
            let e = Error::method_not_found(subscription::LISTEN);
            return Err(self.reply(Some(id), Some(Outcome::Protocol(e)), ctx, log));
        };
        let served = [
            self.registries.has_tools(),
            self.registries.has_prompts(),
            self.registries.has_resources() || !self.templates.is_empty(),
        ];
        let follow = match (self.serves_tasks(), tasks::declares_extension(params)) {
            (false, _) => subscription::TaskFollow::NotServed,
            (true, false) => subscription::TaskFollow::Undeclared,
            (true, true) => subscription::TaskFollow::Declared,
        };
        let opened = subscription::filter(params, served, follow).and_then(|filter| {
            subscription::open(
                changes,
                id.clone(),
                subscription::quota_key(ctx),
                filter,
                serde_json::to_value(&self.info).unwrap_or(Value::Null),
            )
        });
        match opened {
            Ok(mut s) => {
                let opened: Outcome = Outcome::Complete(Value::Null);
                crate::record::conclude(
                    Some(&opened),
                    Some(&id),
                    &ctx.correlation_id,
                    &mut log,
                    None,
                );
                log.outcome = "subscribed".into();
                s.set_log(log);
                Ok(s)
            }
            Err(e) => Err(self.reply(Some(id), Some(Outcome::Protocol(e)), ctx, log)),
        }
    }

    /// The per-request deadline of a handler (default 30 s, [`defaults::HANDLER_TIMEOUT`]).
    /// The transports of `mrtr-server` enforce it through
    /// [`Service::handle_until`]: an async handler still running then is
    /// abandoned (its future dropped, nothing it did in that run sealed) and the
    /// request gets a retryable tool error on `tools/call`, -32603 elsewhere. A
    /// synchronous handler runs to its end: give work that may take long an
    /// async handler.
    #[must_use]
    pub fn with_handler_timeout(mut self, timeout: Duration) -> Self {
        self.handler_timeout = timeout;
        self
    }

    /// The per-request deadline of a handler.
    pub fn handler_timeout(&self) -> Duration {
        self.handler_timeout
    }

    /// The most items one page of a list holds (default 100,
    /// [`defaults::PAGE_SIZE`]; 0 counts as 1). A longer list is cut into pages
    /// in registration order, each but the last with a `nextCursor` the client
    /// sends back as `params.cursor` (MCP 2026-07-28 §Pagination).
    ///
    /// # Security
    ///
    /// A cursor is MACed with a key derived from the engine's key ring and bound
    /// to the list method, the principal, the audience and the listing, so a
    /// client cannot forge one, move it to another list or caller, or point it
    /// past the end: every cursor the service did not issue so gets -32602
    /// `invalid cursor`, whatever is wrong with it. It is not encrypted (it
    /// holds only a position) and does not expire. When the listing changes
    /// between pages, or the key that made a cursor leaves the ring, its cursors
    /// are refused the same way and the client starts over from the first page.
    ///
    /// ```
    /// use mrtr::{Engine, Keyring, Principal, RequestContext, Service, Timestamp, ToolResult};
    ///
    /// let mut service = Service::new(Engine::new(Keyring::ephemeral(), "example"), "example", "1.0.0")
    ///     .with_page_size(2);
    /// for name in ["a", "b", "c"] {
    ///     service = service.tool(name, "A tool.", serde_json::json!({"type": "object"}), |_| Ok(ToolResult::text("ok")));
    /// }
    /// let ctx = RequestContext::new(Principal::anonymous(), Timestamp::from_unix_secs(1_800_000_000), "c1");
    /// let list = |cursor: &str| format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{cursor}"_meta":{{
    ///     "io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#);
    /// let first: serde_json::Value = serde_json::from_str(&service.handle_sync(list("").as_bytes(), &ctx).body.unwrap())?;
    /// assert_eq!(first["result"]["tools"].as_array().unwrap().len(), 2);
    /// let cursor = first["result"]["nextCursor"].as_str().unwrap();
    /// let rest = service.handle_sync(list(&format!(r#""cursor":"{cursor}","#)).as_bytes(), &ctx);
    /// let rest: serde_json::Value = serde_json::from_str(&rest.body.unwrap())?;
    /// assert_eq!(rest["result"]["tools"][0]["name"], "c");
    /// assert!(rest["result"].get("nextCursor").is_none());
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    #[must_use]
    pub fn with_page_size(mut self, n: usize) -> Self {
        self.page_size = n.max(1);
        self
    }

    /// The most items one page of a list holds.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Registers a tool: its name, its description, its `inputSchema` (a JSON
    /// Schema with `type: "object"`, listed by `tools/list` exactly as given),
    /// and its handler, sync or async, which returns a [`ToolResult`] (or what
    /// converts into one).
    ///
    /// A property of the schema annotated `"x-mcp-header": "Name"` travels as
    /// the header `Mcp-Param-Name` too on Streamable HTTP, where the transport
    /// checks it against the argument ([`Service::param_headers`]).
    ///
    /// # Panics
    /// As [`Service::tool_definition`].
    ///
    /// ```
    /// use mrtr::{Confirmation, Engine, Keyring, Service, ToolResult};
    ///
    /// let service = Service::new(Engine::new(Keyring::ephemeral(), "example"), "example", "1.0.0")
    ///     .tool("wipe", "Wipes the cache after confirmation.", serde_json::json!({"type": "object"}),
    ///         |round| async move {
    ///             if round.confirm("confirm", "Wipe the cache?")? != Confirmation::Accepted {
    ///                 return Ok(ToolResult::text("Nothing was wiped."));
    ///             }
    ///             round.once_async("wipe", || async { Ok(()) }).await?;
    ///             Ok(ToolResult::text("Cache wiped."))
    ///         });
    /// # drop(service);
    /// ```
    #[must_use]
    pub fn tool<F, O, M>(
        self,
        name: &str,
        description: &str,
        input_schema: Value,
        handler: F,
    ) -> Self
    where
        F: Fn(Round) -> O + Send + Sync + 'static,
        O: Output<ToolResult, M> + 'static,
        M: 'static,
    {
        let definition =
            json!({"name": name, "description": description, "inputSchema": input_schema});
        self.tool_definition(definition, handler)
    }

    /// Registers a tool from a full `Tool` definition (title, annotations, ...),
    /// with its handler, as [`Service::tool`].
    ///
    /// # Panics
    /// When the definition has no string `name`, or its `inputSchema` has an
    /// `x-mcp-header` declaration that breaks the rules of MCP 2026-07-28
    /// (Streamable HTTP §Schema Extension:
    /// [`ParamHeaderError`](crate::streamable_http::ParamHeaderError)); both are
    /// programming errors at start-up.
    #[must_use]
    pub fn tool_definition<F, O, M>(mut self, definition: Value, handler: F) -> Self
    where
        F: Fn(Round) -> O + Send + Sync + 'static,
        O: Output<ToolResult, M> + 'static,
        M: 'static,
    {
        let name = definition
            .get("name")
            .and_then(Value::as_str)
            .expect("a tool definition needs a name")
            .to_owned();
        let declared = definition
            .get("inputSchema")
            .map(ParamHeaders::from_input_schema)
            .transpose()
            .unwrap_or_else(|e| panic!("tool {name:?}: {e}"))
            .flatten();
        match declared {
            Some(d) => {
                self.param_headers.insert(name.clone(), d);
            }
            None => {
                self.param_headers.remove(&name);
            }
        }
        self.register::<ToolResult, _, _, _>(name, definition, handler)
    }

    /// Registers a prompt and its handler, sync or async, which returns a
    /// [`PromptResult`].
    #[must_use]
    pub fn prompt<F, O, M>(self, definition: PromptDefinition, handler: F) -> Self
    where
        F: Fn(Round) -> O + Send + Sync + 'static,
        O: Output<PromptResult, M> + 'static,
        M: 'static,
    {
        let (name, definition) = registry::prompt_entry(definition);
        self.register::<PromptResult, _, _, _>(name, definition, handler)
    }

    /// Registers a resource and its handler, sync or async, which returns a
    /// [`ResourceResult`].
    #[must_use]
    pub fn resource<F, O, M>(mut self, definition: ResourceDefinition, handler: F) -> Self
    where
        F: Fn(Round) -> O + Send + Sync + 'static,
        O: Output<ResourceResult, M> + 'static,
        M: 'static,
    {
        let (uri, definition, caching) = registry::resource_entry(definition);
        match caching {
            Some(c) => self.resource_caching.insert(uri.clone(), c),
            None => self.resource_caching.remove(&uri),
        };
        self.register::<ResourceResult, _, _, _>(uri, definition, handler)
    }

    /// Registers a completion source for `argument` of the prompt named
    /// `prompt` (`completion/complete` with `ref/prompt`), replacing an earlier
    /// one for the same pair, and advertises the `completions` capability.
    ///
    /// The source gets the partial value and the client's already-resolved
    /// arguments ([`CompletionRequest`]) and returns a [`Completion`] (or what
    /// converts into one, such as a `Vec<String>`), at once
    /// (`Ok(..)`) or as a future (`async move { .. }`); an error it returns is
    /// answered as is. It cannot ask the client for input: completion never
    /// answers an `InputRequiredResult`.
    ///
    /// ```
    /// use mrtr::{Engine, Keyring, Service};
    /// use mrtr::service::Completion;
    ///
    /// let service = Service::new(Engine::new(Keyring::ephemeral(), "example"), "example", "1.0.0")
    ///     .prompt_completion("code_review", "language", |q| {
    ///         Ok(Completion::starting_with(["python", "rust", "typescript"], q.value()))
    ///     });
    /// # drop(service);
    /// ```
    #[must_use]
    pub fn prompt_completion<F, O, M>(mut self, prompt: &str, argument: &str, source: F) -> Self
    where
        F: Fn(CompletionRequest) -> O + Send + Sync + 'static,
        O: CompletionOutput<M> + 'static,
        M: 'static,
    {
        self.completions.insert_prompt(prompt, argument, source);
        self
    }

    /// Registers a completion source for `variable` of the resource template
    /// whose URI template is `uri_template` (`completion/complete` with
    /// `ref/resource`, matched on the exact URI string), as
    /// [`Service::prompt_completion`].
    #[must_use]
    pub fn resource_template_completion<F, O, M>(
        mut self,
        uri_template: &str,
        variable: &str,
        source: F,
    ) -> Self
    where
        F: Fn(CompletionRequest) -> O + Send + Sync + 'static,
        O: CompletionOutput<M> + 'static,
        M: 'static,
    {
        self.completions
            .insert_template(uri_template, variable, source);
        self
    }

    fn register<T, F, O, M>(mut self, target: String, definition: Value, handler: F) -> Self
    where
        T: Registered,
        F: Fn(Round) -> O + Send + Sync + 'static,
        O: Output<T, M> + 'static,
        M: 'static,
    {
        self.registries
            .of_mut::<T>()
            .insert(target, definition, crate::engine::register(handler));
        self
    }

    /// The `x-mcp-header` declarations (MCP 2026-07-28, Streamable HTTP §Custom
    /// Headers from Tool Parameters) of the tool a request calls: `Some` only
    /// for a `tools/call` (its `method` and `params`) of a registered tool whose
    /// `inputSchema` declares some. A Streamable HTTP transport checks the
    /// request's `Mcp-Param-*` headers against them with
    /// [`check_param_headers`](crate::streamable_http::check_param_headers),
    /// in the same rule as its other headers ([`ParsedMessage::check`]);
    /// transports without headers (stdio) do not. Costs one comparison when no
    /// tool declares any.
    ///
    /// ```
    /// use mrtr::{Engine, Keyring, Service, ToolResult};
    /// use mrtr::streamable_http::check_param_headers;
    /// use serde_json::json;
    ///
    /// let service = Service::new(Engine::new(Keyring::ephemeral(), "example"), "example", "1.0.0")
    ///     .tool("query", "Runs a query in a region.", json!({"type": "object", "properties": {
    ///         "region": {"type": "string", "x-mcp-header": "Region"},
    ///         "sql": {"type": "string"},
    ///     }}), |_| Ok(ToolResult::text("ok")));
    /// let params = json!({"name": "query", "arguments": {"region": "us-west1", "sql": "SELECT 1"}});
    /// let declared = service.param_headers("tools/call", Some(&params)).unwrap();
    /// let sent = |name: &str| match name {
    ///     "mcp-param-region" => vec![&b"us-west1"[..]],
    ///     _ => vec![],
    /// };
    /// assert!(check_param_headers(declared, params.get("arguments"), sent).is_ok());
    /// let none = |_: &str| Vec::<&[u8]>::new();
    /// assert_eq!(check_param_headers(declared, params.get("arguments"), none).unwrap_err().code(), -32020);
    /// ```
    pub fn param_headers(&self, method: &str, params: Option<&Value>) -> Option<&ParamHeaders> {
        if self.param_headers.is_empty() {
            return None;
        }
        let call = CarrierMethod::ToolsCall;
        if CarrierMethod::from_method(method) != Some(call) {
            return None;
        }
        let tool = params?.get(call.target_param())?.as_str()?;
        self.param_headers.get(tool)
    }

    /// The list entries of the carrier whose result is `T` that the changes hub
    /// does not hide, in registration order, for the `rmcp` adapter's lists.
    pub(crate) fn listed<T: Registered>(&self) -> impl Iterator<Item = &Value> {
        self.registries
            .of::<T>()
            .entries()
            .filter(|(key, _)| !self.is_hidden::<T>(key))
            .map(|(_, definition)| definition)
    }

    /// The targets registered for the carrier whose result is `T`, for the
    /// `rmcp` adapter's `*_service_*` methods.
    pub(crate) fn registry<T: Registered>(&self) -> &Registry<T> {
        self.registries.of::<T>()
    }

    /// Handles one JSON-RPC message (the raw body bytes) without a deadline. Never
    /// panics on any input; a handler that panics becomes -32603.
    pub async fn handle(&self, body: &[u8], ctx: &RequestContext) -> Reply {
        self.handle_until(body, ctx, std::future::pending()).await
    }

    /// Handles one message, abandoning the handler when `deadline` completes first
    /// (pass a timer of your runtime, e.g. `tokio::time::sleep(service.handler_timeout())`).
    /// An abandoned handler's future is dropped and nothing it did in that run is
    /// sealed; the request gets a retryable tool error on `tools/call` (the model
    /// is told to call again) and -32603 elsewhere.
    pub async fn handle_until<D>(&self, body: &[u8], ctx: &RequestContext, deadline: D) -> Reply
    where
        D: Future<Output = ()>,
    {
        self.handle_parsed_until(ParsedMessage::parse(body), ctx, deadline)
            .await
    }

    /// [`Service::handle_until`] for a message the transport parsed beforehand with
    /// [`ParsedMessage::parse`] (and perhaps checked, [`ParsedMessage::check`]),
    /// e.g. on a thread where a large body's parse cannot hold up other requests.
    pub async fn handle_parsed_until<C, D>(
        &self,
        mut message: ParsedMessage<C>,
        ctx: &RequestContext,
        deadline: D,
    ) -> Reply
    where
        C: FnOnce(&str, Option<&Value>) -> Result<(), Error>,
        D: Future<Output = ()>,
    {
        let mut log = RequestLog::default();
        let (id, outcome, task) = self
            .dispatch(&mut message, ctx, &mut log, deadline, None)
            .await;
        Reply {
            task,
            ..self.reply(id, outcome, ctx, log)
        }
    }

    /// [`Service::handle_parsed_until`] for a transport that can carry the
    /// request's notifications: a handler's progress and log messages
    /// ([`Round::progress`], [`Round::log`]) go to `sink` as they are sent, all
    /// before this returns the reply, and only those the request asked for (a
    /// `progressToken`, an `io.modelcontextprotocol/logLevel` in its `_meta`;
    /// [`ParsedMessage::asks_for_notifications`] tells the transport beforehand).
    /// The sink gets nothing once the reply is made: the response is the
    /// request's last message.
    pub async fn handle_parsed_notifying<C, D>(
        &self,
        mut message: ParsedMessage<C>,
        ctx: &RequestContext,
        deadline: D,
        sink: Arc<dyn NotificationSink>,
    ) -> Reply
    where
        C: FnOnce(&str, Option<&Value>) -> Result<(), Error>,
        D: Future<Output = ()>,
    {
        let mut log = RequestLog::default();
        let (id, outcome, task) = self
            .dispatch(&mut message, ctx, &mut log, deadline, Some(sink))
            .await;
        Reply {
            task,
            ..self.reply(id, outcome, ctx, log)
        }
    }

    /// Handles one message on the caller's thread, for synchronous callers (tests,
    /// fuzzing, a server with only synchronous handlers). It never blocks: an
    /// async handler gets one poll, and one that is still pending then (it awaits
    /// something not ready yet) is abandoned as overdue, exactly as if its deadline
    /// had passed. Async handlers belong on [`Service::handle`].
    pub fn handle_sync(&self, body: &[u8], ctx: &RequestContext) -> Reply {
        self.handle_parsed_sync(ParsedMessage::parse(body), ctx)
    }

    /// [`Service::handle_sync`] for a message parsed (and perhaps checked) beforehand.
    pub fn handle_parsed_sync<C>(
        &self,
        mut message: ParsedMessage<C>,
        ctx: &RequestContext,
    ) -> Reply
    where
        C: FnOnce(&str, Option<&Value>) -> Result<(), Error>,
    {
        let mut log = RequestLog::default();
        let (id, outcome, task) = {
            let mut fut =
                pin!(self.dispatch(&mut message, ctx, &mut log, std::future::ready(()), None));
            let mut cx = Context::from_waker(Waker::noop());
            match fut.as_mut().poll(&mut cx) {
                Poll::Ready(r) => r,
                // Not reachable: the deadline is ready, so a pending handler is
                // abandoned within the first poll. A fail-closed answer all the same.
                Poll::Pending => (
                    None,
                    Some(Outcome::Protocol(Error::internal(
                        "handler did not complete",
                    ))),
                    None,
                ),
            }
        };
        Reply {
            task,
            ..self.reply(id, outcome, ctx, log)
        }
    }

    fn reply(
        &self,
        id: Option<crate::wire::jsonrpc::RequestId>,
        outcome: Option<Outcome>,
        ctx: &RequestContext,
        mut log: RequestLog,
    ) -> Reply {
        let name = self.registered_name(&log);
        crate::record::conclude(
            outcome.as_ref(),
            id.as_ref(),
            &ctx.correlation_id,
            &mut log,
            name,
        );
        let Some(outcome) = outcome else {
            return Reply {
                body: None,
                error_code: None,
                log,
                task: None,
            };
        };
        let response = match (&outcome, &id) {
            (o, Some(id)) => o.to_response(id),
            (Outcome::Protocol(e), None) => e.to_jsonrpc(None),
            (_, None) => Error::internal("result without an id").to_jsonrpc(None),
        };
        let error_code = match &outcome {
            Outcome::Protocol(e) => Some(e.code()),
            _ if id.is_none() => Some(crate::error::code::INTERNAL_ERROR),
            _ => None,
        };
        Reply {
            body: Some(response.to_string()),
            error_code,
            log,
            task: None,
        }
    }

    /// The registered name (never the client's string for an unknown one) of the
    /// tool or prompt the log names, for the metrics labels.
    fn registered_name(&self, log: &RequestLog) -> Option<&str> {
        let target = log.target.as_deref()?;
        match crate::metrics::method_label(log.method.as_deref()) {
            "tools/call" => self.registries.of::<ToolResult>().registered(target),
            "prompts/get" => self.registries.of::<PromptResult>().registered(target),
            _ => None,
        }
    }

    /// Returns the request id (if any), the outcome (`None` for a
    /// notification) and the task run it made due, if any.
    async fn dispatch<C, D>(
        &self,
        message: &mut ParsedMessage<C>,
        ctx: &RequestContext,
        log: &mut RequestLog,
        deadline: D,
        notify: Option<Arc<dyn NotificationSink>>,
    ) -> (
        Option<crate::wire::jsonrpc::RequestId>,
        Option<Outcome>,
        Option<TaskRun>,
    )
    where
        C: FnOnce(&str, Option<&Value>) -> Result<(), Error>,
        D: Future<Output = ()>,
    {
        let request = match envelope::read(message, log) {
            envelope::Read::Request(r) => r,
            envelope::Read::Notification => return (None, None, None),
            envelope::Read::Refused(id, e) => return (id, Some(Outcome::Protocol(e)), None),
        };
        note_target(log, request.method, request.params);
        if let Some(e) = request.refused {
            return (Some(request.id), Some(Outcome::Protocol(e)), None);
        }
        if let Some(tasks) = &self.tasks
            && let Some((outcome, run)) = self
                .tasks_route(tasks, request.method, request.params, ctx)
                .await
        {
            return (Some(request.id), Some(outcome), run);
        }
        let outcome = self
            .route(request.method, request.params, ctx, log, deadline, notify)
            .await;
        (Some(request.id), Some(outcome), None)
    }

    /// Routes the request `method` with `params` (read from its envelope, or
    /// rewritten for a 2025-era session): a carrier on the engine's one path,
    /// a completion, or the discovery and list methods.
    async fn route<D: Future<Output = ()>>(
        &self,
        method: &str,
        params: Option<&Value>,
        ctx: &RequestContext,
        log: &mut RequestLog,
        deadline: D,
        notify: Option<Arc<dyn NotificationSink>>,
    ) -> Outcome {
        match CarrierMethod::from_method(method) {
            Some(CarrierMethod::ToolsCall) => self
                .carrier::<ToolResult, _>(params, ctx, log, deadline, notify)
                .await
                .into_json(),
            Some(CarrierMethod::PromptsGet) => self
                .carrier::<PromptResult, _>(params, ctx, log, deadline, notify)
                .await
                .into_json(),
            Some(CarrierMethod::ResourcesRead) => self
                .read_resource(params, ctx, log, deadline, notify)
                .await
                .into_json(),
            None if method == completion::METHOD && !self.completions.is_empty() => {
                self.completions
                    .answer(params, &ctx.principal, self.handler_timeout, deadline)
                    .await
            }
            None => discover::answer(&self.discover_server(&ctx.principal), method, params),
        }
    }

    /// What `server/discover` and the lists are answered from.
    fn discover_server<'a>(&'a self, principal: &'a Principal) -> discover::Server<'a> {
        discover::Server {
            info: &self.info,
            instructions: self.instructions.as_deref(),
            caching: self.caching,
            registries: &self.registries,
            completions: !self.completions.is_empty(),
            pager: page::Pager {
                engine: &self.engine,
                principal,
                page_size: self.page_size,
            },
            templates: &self.templates,
            changes: self.changes.as_ref(),
            tasks: self.serves_tasks(),
        }
    }

    /// A carrier request on the engine's one path, with the handler registered
    /// for its target.
    async fn carrier<T: Registered, D: Future<Output = ()>>(
        &self,
        params: Option<&Value>,
        ctx: &RequestContext,
        log: &mut RequestLog,
        deadline: D,
        notify: Option<Arc<dyn NotificationSink>>,
    ) -> Outcome<T> {
        let request = CarrierRequest::from_params_memo(T::METHOD, params, self.engine.metas());
        self.run_request(request, None, ctx, log, deadline, notify, None)
            .await
    }

    /// A parsed carrier request on the engine's one path, with the handler
    /// registered for its target, else `fallback` (a resource template's);
    /// a round of a task's flow when `task` is given.
    #[allow(clippy::too_many_arguments)] // why: the request and its whole context
    async fn run_request<T: Registered, D: Future<Output = ()>>(
        &self,
        request: Result<CarrierRequest, crate::wire::RequestError>,
        fallback: Option<&crate::engine::Handler<T>>,
        ctx: &RequestContext,
        log: &mut RequestLog,
        deadline: D,
        notify: Option<Arc<dyn NotificationSink>>,
        task: Option<crate::engine::TaskFlow>,
    ) -> Outcome<T> {
        let turn = Turn {
            engine: &self.engine,
            request,
            principal: &ctx.principal,
            peer: ctx.peer,
            now: ctx.now,
            timeout: self.handler_timeout,
            notifications: notify,
            trace: ctx.trace,
        };
        let registry = self.registries.of::<T>();
        let ran = turn::run_in(
            turn,
            task,
            |request| {
                if self.is_hidden::<T>(request.target()) {
                    return None;
                }
                registry
                    .handler_of(request.target())
                    .or(fallback)
                    .map(|h| move |round| h(round))
            },
            deadline,
        )
        .await;
        log.round = ran.round;
        if let Some(flow) = ran.flow {
            log.flow = Some(flow.flow);
            log.flow_link = flow.first;
        }
        ran.outcome
    }
}

/// Names the target of a carrier request in the log (the registered form of
/// it, cut to the log's bound), before anything can refuse it.
fn note_target(log: &mut RequestLog, method: &str, params: Option<&Value>) {
    if let Some(c) = CarrierMethod::from_method(method) {
        log.target = params
            .and_then(|p| p.get(c.target_param()))
            .and_then(Value::as_str)
            .map(|t| crate::record::target(t).to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seal::Keyring;

    fn service() -> Service {
        Service::new(Engine::new(Keyring::ephemeral(), "t"), "t", "0").tool(
            "echo",
            "echo",
            json!({"type":"object"}),
            |_| Ok(ToolResult::text("hi")),
        )
    }

    fn ctx() -> RequestContext {
        RequestContext::new(
            Principal::anonymous(),
            Timestamp::from_unix_secs(1_800_000_000),
            "c",
        )
    }

    fn body(method: &str, extra: &str) -> Vec<u8> {
        format!(r#"{{"jsonrpc":"2.0","id":7,"method":"{method}","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}}{extra}}}}}"#).into_bytes()
    }

    fn parse(r: &Reply) -> Value {
        serde_json::from_str(r.body.as_deref().unwrap()).unwrap()
    }

    #[derive(Debug, Default)]
    struct Collect(std::sync::Mutex<Vec<Value>>);

    impl NotificationSink for Collect {
        fn notify(&self, n: String) -> bool {
            self.0
                .lock()
                .unwrap()
                .push(serde_json::from_str(&n).unwrap());
            true
        }
    }

    /// Runs `body` with a sink (the handlers here are synchronous: one poll).
    fn notifying(s: &Service, body: &[u8]) -> (Value, Vec<Value>, bool) {
        let sink = Arc::new(Collect::default());
        let message = ParsedMessage::parse(body);
        let asks = message.asks_for_notifications();
        let c = ctx();
        let fut = s.handle_parsed_notifying(message, &c, std::future::ready(()), sink.clone());
        let mut cx = Context::from_waker(Waker::noop());
        let Poll::Ready(reply) = pin!(fut).poll(&mut cx) else {
            panic!("a synchronous handler's reply waited")
        };
        let got = sink.0.lock().unwrap().clone();
        (parse(&reply), got, asks)
    }

    #[test]
    fn a_handler_reports_progress_and_logs_only_what_the_request_asked_for() {
        let s = service().tool("work", "w", json!({"type":"object"}), |round| {
            for p in [1.0, 2.0, 2.0, 3.0] {
                round.progress(p, Some(3.0), None);
            }
            round.log(crate::LogLevel::Debug, json!("noise"));
            round.log_from(crate::LogLevel::Info, Some("work"), json!({"done": 3}));
            Ok(ToolResult::text("done"))
        });
        let meta = r#""progressToken":"p1","io.modelcontextprotocol/logLevel":"info","#;
        let both = String::from_utf8(body("tools/call", r#","name":"work""#))
            .unwrap()
            .replace(r#""_meta":{"#, &format!(r#""_meta":{{{meta}"#));
        let (reply, got, asks) = notifying(&s, both.as_bytes());
        assert!(asks);
        assert_eq!(reply["result"]["content"][0]["text"], "done");
        let methods: Vec<&str> = got.iter().map(|n| n["method"].as_str().unwrap()).collect();
        assert_eq!(
            methods,
            [
                "notifications/progress",
                "notifications/progress",
                "notifications/progress",
                "notifications/message"
            ]
        );
        let progress: Vec<&Value> = got[..3].iter().map(|n| &n["params"]["progress"]).collect();
        assert_eq!(progress, [&json!(1), &json!(2), &json!(3)]);
        assert!(
            got[..3]
                .iter()
                .all(|n| n["params"]["progressToken"] == "p1")
        );
        assert_eq!(
            got[3]["params"],
            json!({"level": "info", "logger": "work", "data": {"done": 3}})
        );
        // Nothing asked: nothing sent, even with a sink.
        let plain = body("tools/call", r#","name":"work""#);
        let (reply, got, asks) = notifying(&s, &plain);
        assert!(!asks && got.is_empty());
        assert_eq!(reply["result"]["resultType"], "complete");
        // A token alone: progress, and no log message at any level.
        let token = plain.clone();
        let token = String::from_utf8(token)
            .unwrap()
            .replace(r#""_meta":{"#, r#""_meta":{"progressToken":7,"#);
        let (_, got, _) = notifying(&s, token.as_bytes());
        assert_eq!(got.len(), 3);
        assert!(
            got.iter()
                .all(|n| n["method"] == "notifications/progress"
                    && n["params"]["progressToken"] == 7)
        );
        // A list request never streams, whatever its _meta.
        let list = String::from_utf8(body("tools/list", ""))
            .unwrap()
            .replace(r#""_meta":{"#, r#""_meta":{"progressToken":7,"#);
        assert!(!ParsedMessage::parse(list.as_bytes()).asks_for_notifications());
        // A malformed token or level is refused before the handler: nothing sent.
        for bad in [
            r#""progressToken":{},"#,
            r#""io.modelcontextprotocol/logLevel":"loud","#,
        ] {
            let b = String::from_utf8(plain.clone())
                .unwrap()
                .replace(r#""_meta":{"#, &format!(r#""_meta":{{{bad}"#));
            let (reply, got, _) = notifying(&s, b.as_bytes());
            assert_eq!(reply["error"]["code"], -32602, "{reply}");
            assert!(got.is_empty());
        }
    }

    #[test]
    fn a_round_kept_past_its_end_sends_nothing() {
        let kept: Arc<std::sync::Mutex<Option<Round>>> = Arc::default();
        let stash = Arc::clone(&kept);
        let s = service().tool("keep", "k", json!({"type":"object"}), move |round| {
            assert!(round.progress_enabled() && round.log_enabled(crate::LogLevel::Error));
            assert!(!round.log_enabled(crate::LogLevel::Debug));
            round.progress(1.0, None, None);
            *stash.lock().unwrap() = Some(round);
            Ok(ToolResult::text("kept"))
        });
        let meta = r#""_meta":{"progressToken":1,"io.modelcontextprotocol/logLevel":"info","#;
        let b = String::from_utf8(body("tools/call", r#","name":"keep""#))
            .unwrap()
            .replace(r#""_meta":{"#, meta);
        let (_, got, _) = notifying(&s, b.as_bytes());
        assert_eq!(got.len(), 1);
        let round = kept.lock().unwrap().take().unwrap();
        // The response was the request's last message: nothing after it.
        assert!(!round.progress(2.0, None, None));
        assert!(!round.log(crate::LogLevel::Error, json!("late")));
    }

    #[test]
    fn envelope_errors() {
        let s = service();
        let r = s.handle_sync(b"{not json", &ctx());
        assert_eq!(parse(&r)["error"]["code"], -32700);
        assert_eq!(r.error_code, Some(-32700));
        let r = s.handle_sync(b"[]", &ctx());
        assert_eq!(parse(&r)["error"]["code"], -32600);
        let r = s.handle_sync(br#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#, &ctx());
        assert_eq!(parse(&r)["error"]["code"], -32600);
        let r = s.handle_sync(&body("nope/nope", ""), &ctx());
        assert_eq!(parse(&r)["error"]["code"], -32601);
        assert_eq!(r.error_code, Some(-32601));
        let r = s.handle_sync(
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#,
            &ctx(),
        );
        assert!(r.body.is_none());
        assert_eq!(r.error_code, None);
        let r = s.handle_sync(&body("tools/call", r#","name":"echo""#), &ctx());
        assert_eq!(parse(&r)["result"]["resultType"], "complete");
        assert_eq!(r.error_code, None);
    }

    #[test]
    fn lists_carry_caching_and_result_type() {
        let s = service();
        let v = parse(&s.handle_sync(&body("tools/list", ""), &ctx()));
        assert_eq!(v["result"]["resultType"], "complete");
        assert_eq!(v["result"]["tools"][0]["name"], "echo");
        assert!(v["result"]["ttlMs"].is_u64());
        let v = parse(&s.handle_sync(&body("server/discover", ""), &ctx()));
        assert_eq!(v["result"]["supportedVersions"][0], "2026-07-28");
    }

    #[test]
    fn long_string_ids_are_shortened_in_the_log_only() {
        let s = service();
        let long = "i".repeat(10_000);
        let b = format!(r#"{{"jsonrpc":"2.0","id":"{long}","method":"nope"}}"#);
        let r = s.handle_sync(b.as_bytes(), &ctx());
        assert_eq!(parse(&r)["id"], long.as_str());
        let logged = r.log.jsonrpc_id.unwrap();
        assert!(logged.len() <= 128 + 2, "{}", logged.len());
        let r = s.handle_sync(&body("nope", ""), &ctx());
        assert_eq!(r.log.jsonrpc_id.as_deref(), Some("7"));
    }

    #[test]
    fn a_transport_refusal_answers_the_request_under_its_id_and_names_it_in_the_log() {
        let s = service();
        let b = body("tools/call", r#","name":"echo""#);
        let refuse = |method: &str, params: Option<&Value>| {
            assert_eq!(method, "tools/call");
            assert_eq!(params.unwrap()["name"], "echo");
            Err(Error::header_mismatch("Mcp-Name", "Mcp-Name differs"))
        };
        let r = s.handle_parsed_sync(ParsedMessage::parse(&b).check(refuse), &ctx());
        assert_eq!(parse(&r)["error"]["code"], -32020);
        assert_eq!(parse(&r)["id"], 7);
        assert_eq!(r.log.target.as_deref(), Some("echo"));
        assert_eq!(r.error_code, Some(-32020));
        let r = s.handle_parsed_sync(ParsedMessage::parse(&b).check(|_, _| Ok(())), &ctx());
        assert_eq!(r.log.outcome, "complete");
        // A notification is not checked: there is nothing to answer.
        let n = br#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#;
        let r = s.handle_parsed_sync(
            ParsedMessage::parse(n).check(|_, _| panic!("checked a notification")),
            &ctx(),
        );
        assert!(r.body.is_none());
    }

    fn annotated() -> Value {
        json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
            "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
            "$defs": {"a": {"$anchor": "x"}}, "additionalProperties": false})
    }

    #[test]
    fn tools_list_shows_the_input_schema_verbatim() {
        let s = service().tool("q", "q", annotated(), |_| Ok(ToolResult::text("ok")));
        let v = parse(&s.handle_sync(&body("tools/list", ""), &ctx()));
        let listed = &v["result"]["tools"][1]["inputSchema"];
        assert_eq!(listed, &annotated());
        assert_eq!(listed.to_string(), annotated().to_string());
    }

    #[test]
    fn param_headers_are_given_only_for_a_call_of_a_declaring_tool() {
        let s = service();
        let call = json!({"name": "q", "arguments": {"region": "eu"}});
        assert!(s.param_headers("tools/call", Some(&call)).is_none());
        let s = s.tool("q", "q", annotated(), |_| Ok(ToolResult::text("ok")));
        let declared = s.param_headers("tools/call", Some(&call)).unwrap();
        assert_eq!(
            declared.iter().next().unwrap().header_name(),
            "mcp-param-region"
        );
        assert!(s.param_headers("prompts/get", Some(&call)).is_none());
        assert!(
            s.param_headers("tools/call", Some(&json!({"name": "echo"})))
                .is_none()
        );
        assert!(s.param_headers("tools/call", None).is_none());
        // Registering the name again without declarations drops them.
        let s = s.tool("q", "q", json!({"type": "object"}), |_| {
            Ok(ToolResult::text("ok"))
        });
        assert!(s.param_headers("tools/call", Some(&call)).is_none());
        // Without a transport's rule (stdio, in process) nothing is checked.
        let s = service().tool("q", "q", annotated(), |_| Ok(ToolResult::text("ok")));
        let r = s.handle_sync(
            &body("tools/call", r#","name":"q","arguments":{"region":"eu"}"#),
            &ctx(),
        );
        assert_eq!(parse(&r)["result"]["content"][0]["text"], "ok");
    }

    #[test]
    #[should_panic(expected = "tool \"bad\": x-mcp-header of \"p\" is not an HTTP token")]
    fn a_bad_declaration_panics_at_registration() {
        let schema = json!({"type": "object", "properties": {
            "p": {"type": "string", "x-mcp-header": "My Region"},
        }});
        let _ = service().tool("bad", "bad", schema, |_| Ok(ToolResult::text("never")));
    }
}
