//! The sans-IO request service: one JSON-RPC message in, one reply out.
//!
//! Transports (the Streamable HTTP and stdio adapters of the `server` feature) read
//! bytes, call [`Service::handle`], and write the reply. Everything the protocol
//! decides (parse errors, header/body agreement, `_meta`, routing, the round
//! engine, the error channels) happens here, without I/O or a clock; the
//! Streamable HTTP rules (headers, statuses) come from [`crate::streamable_http`].
//! Every reply is counted in [`crate::metrics`] where it is built.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures_util::FutureExt as _;
use futures_util::future::{Either, select};

use indexmap::IndexMap;
use serde_json::{Map, Value, json};

use crate::defaults;
use crate::engine::{Engine, Finisher, Flow, Outcome, Round};
use crate::error::{DiagContext, Error, Fallback, Retry, ToolAdvice};
use crate::metrics::{self, RequestOutcome};
use crate::principal::Principal;
use crate::seal::RejectReason;
use crate::streamable_http::{self, McpHeaders};
use crate::time::Timestamp;
use crate::wire::jsonrpc::RequestId;
use crate::wire::meta::RequestMeta;
use crate::wire::{CarrierMethod, CarrierRequest, RequestError};
use crate::wire::{Implementation, JsonObject, SUPPORTED_PROTOCOL_VERSIONS, type_name};

/// What the transport knows about one incoming message.
#[derive(Debug, Clone)]
pub struct RequestContext {
    /// The authenticated principal every `requestState` of this request is bound to.
    pub principal: Principal,
    /// The current time, read by the transport.
    pub now: Timestamp,
    /// A correlation id for the private log; never sent to the client.
    pub correlation_id: String,
    /// The HTTP headers to validate ([`streamable_http::check_headers`]); `None` on stdio.
    pub http_headers: Option<McpHeaders>,
    /// The network address the request came from (the TCP peer), when the
    /// transport has one; `None` on stdio and in process.
    ///
    /// Never sealed, logged or answered. For an anonymous principal it keys the
    /// replay guard's quota on the caller's address (an IPv4 address, an IPv6
    /// /64: [`Engine::begin_from`]), so one anonymous caller cannot take every
    /// anonymous caller's claims. Behind a reverse proxy it is the proxy's address.
    pub peer: Option<std::net::IpAddr>,
}

/// The reply to one message.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The serialized JSON-RPC response, or `None` for a notification.
    pub body: Option<String>,
    /// The HTTP status the Streamable HTTP transport must use, from
    /// [`streamable_http::outcome_status`] (other transports ignore it).
    pub http_status: u16,
    /// What the transport logs on its one line for this request.
    pub log: RequestLog,
}

/// The private, per-request log record (never sent to the client).
#[derive(Debug, Clone, Default)]
pub struct RequestLog {
    /// The JSON-RPC id, rendered as JSON text.
    pub jsonrpc_id: Option<String>,
    /// The method, if one was read.
    pub method: Option<String>,
    /// The tool or prompt name or resource URI.
    pub target: Option<String>,
    /// `complete`, `input_required`, `tool_error`, `notification`, or `error:<code>`.
    pub outcome: String,
    /// The round of an MRTR flow, when known (1 = first round).
    pub round: Option<u32>,
    /// The private reason a requestState was rejected, when it was.
    pub reject_reason: Option<&'static str>,
    /// A private diagnostic detail (never a token, key, plaintext state or argument value).
    pub detail: Option<String>,
}

/// The future a registered handler returns, boxed.
pub(crate) type HandlerFuture = Pin<Box<dyn Future<Output = Result<Value, Flow>> + Send>>;

/// A registered handler, sync or async, behind one shape: re-run from the top on
/// every round of a flow.
pub(crate) type Handler = Arc<dyn Fn(Round) -> HandlerFuture + Send + Sync>;

/// Wraps a synchronous handler: it runs when the future is first polled, so a
/// panic in it is caught like one in an async handler.
pub(crate) fn sync_handler<F, R>(f: F) -> Handler
where
    F: Fn(Round) -> Result<R, Flow> + Send + Sync + 'static,
    R: Into<Value> + 'static,
{
    let f = Arc::new(f);
    Arc::new(move |round| {
        let f = Arc::clone(&f);
        Box::pin(async move { f(round).map(Into::into) })
    })
}

/// Wraps an async handler.
pub(crate) fn async_handler<F, Fut, R>(f: F) -> Handler
where
    F: Fn(Round) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, Flow>> + Send + 'static,
    R: Into<Value> + 'static,
{
    // The handler is called inside the future, so a panic in code it runs before
    // returning its future is caught like one in the future itself.
    let f = Arc::new(f);
    Arc::new(move |round| {
        let f = Arc::clone(&f);
        Box::pin(async move { f(round).await.map(Into::into) })
    })
}

/// A `Tool` definition from its parts.
fn tool_definition(name: &str, description: &str, input_schema: Value) -> Value {
    json!({"name": name, "description": description, "inputSchema": input_schema})
}

struct Entry {
    definition: Value,
    handler: Handler,
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("definition", &self.definition)
            .finish_non_exhaustive()
    }
}

/// How long clients may cache list results, and for whom (`ttlMs`, `cacheScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListCaching {
    /// `ttlMs`.
    pub ttl_ms: u64,
    /// `cacheScope` is `public` when true, else `private`.
    pub public: bool,
}

/// One JSON-RPC message, parsed: the first step of [`Service::handle_until`], on
/// its own so a transport can run it where it likes.
///
/// The parse is the part of handling whose cost grows with the size of the body;
/// the rest is bounded by the engine's own limits (the `requestState` is at most
/// [`defaults::MAX_TOKEN_LEN`] characters). The HTTP transport parses bodies
/// above [`defaults::BLOCKING_PARSE_THRESHOLD`] on tokio's blocking pool, then
/// hands the result to [`Service::handle_parsed_until`].
///
/// A message that is not JSON, or whose objects name a member twice at any depth,
/// is answered -32700 (Parse error) without an `id`: two readers of such a
/// message (a proxy routing on `params.name`, the server running the tool) can
/// disagree on what it says, so no member of it, not even `id`, is trusted
/// ([`from_slice_strict`](crate::wire::jsonrpc::from_slice_strict)). -32600
/// (Invalid Request) would claim the message was read and found wrong; it was
/// never read unambiguously.
#[derive(Debug)]
pub struct ParsedMessage(Result<Value, Error>);

impl ParsedMessage {
    /// Parses `body`; a failure is kept and answered when the message is handled.
    pub fn parse(body: &[u8]) -> Self {
        use crate::wire::jsonrpc::{StrictJsonError, from_slice_strict};
        Self(from_slice_strict(body).map_err(|e| {
            Error::parse(match e {
                StrictJsonError::Syntax { line, column } => {
                    format!("invalid JSON at line {line} column {column}")
                }
                StrictJsonError::DuplicateKey { line, column } => {
                    format!("duplicate object key before line {line} column {column}")
                }
            })
        }))
    }
}

/// A sans-IO MCP server: tools, prompts and resources whose handlers run on the
/// round [`Engine`], plus the discovery and list methods, behind one [`Service::handle`].
///
/// ```
/// use mrtr::engine::{Engine, Form, Elicited, tool_text};
/// use mrtr::principal::Principal;
/// use mrtr::seal::Keyring;
/// use mrtr::service::{RequestContext, Service};
/// use mrtr::time::Timestamp;
///
/// let service = Service::new(Engine::new(Keyring::ephemeral(), "example"), "example", "1.0.0")
///     .tool("greet", "Asks your name, then greets you.", serde_json::json!({"type": "object"}), |round| {
///         match round.elicit("name", Form::new("Your name?").string("name", "Name"))? {
///             Elicited::Accepted(f) => Ok(tool_text(format!("Hello, {}!", f.str("name").unwrap_or("you")))),
///             _ => Ok(tool_text("Hello!")),
///         }
///     });
/// let ctx = RequestContext { principal: Principal::anonymous(), now: Timestamp::from_unix_secs(1_800_000_000),
///                            correlation_id: "c1".into(), http_headers: None, peer: None };
/// let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","_meta":{
///     "io.modelcontextprotocol/protocolVersion":"2026-07-28",
///     "io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}"#;
/// let reply = service.handle_sync(body, &ctx);
/// assert_eq!(reply.http_status, 200);
/// assert_eq!(reply.log.outcome, "input_required");
/// ```
#[derive(Debug)]
pub struct Service {
    engine: Engine,
    info: Implementation,
    instructions: Option<String>,
    tools: IndexMap<String, Entry>,
    prompts: IndexMap<String, Entry>,
    resources: IndexMap<String, Entry>,
    caching: ListCaching,
    handler_timeout: Duration,
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
            tools: IndexMap::new(),
            prompts: IndexMap::new(),
            resources: IndexMap::new(),
            caching: ListCaching {
                ttl_ms: u64::try_from(defaults::LIST_CACHE_TTL.as_millis()).unwrap_or(u64::MAX),
                public: true,
            },
            handler_timeout: defaults::HANDLER_TIMEOUT,
        }
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Guidance for the model, returned by `server/discover`.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// Caching hints on list and discover results (default: 60 s, public;
    /// [`defaults::LIST_CACHE_TTL`]).
    pub fn list_caching(mut self, caching: ListCaching) -> Self {
        self.caching = caching;
        self
    }

    /// The per-request deadline of a handler (default 30 s, [`defaults::HANDLER_TIMEOUT`]).
    /// The transports of the `server` feature enforce it through
    /// [`Service::handle_until`]: a handler still running then is abandoned (its
    /// future dropped, nothing it did in that run sealed) and the request gets a
    /// retryable tool error on `tools/call`, -32603 elsewhere.
    #[must_use]
    pub fn handler_timeout(mut self, timeout: Duration) -> Self {
        self.handler_timeout = timeout;
        self
    }

    /// The per-request deadline of a handler.
    pub fn handler_timeout_value(&self) -> Duration {
        self.handler_timeout
    }

    /// Registers a tool with a synchronous handler. `input_schema` is the tool's
    /// JSON Schema (`type: "object"`).
    #[must_use]
    pub fn tool<F, R>(self, name: &str, description: &str, input_schema: Value, handler: F) -> Self
    where
        F: Fn(Round) -> Result<R, Flow> + Send + Sync + 'static,
        R: Into<Value> + 'static,
    {
        self.add_tool(
            tool_definition(name, description, input_schema),
            sync_handler(handler),
        )
    }

    /// Registers a tool with an async handler, which may `.await` anything before,
    /// between and after its asks.
    ///
    /// ```
    /// use mrtr::{Confirmation, Engine, Keyring, Service};
    /// use mrtr::result::ToolResult;
    ///
    /// let service = Service::new(Engine::new(Keyring::ephemeral(), "example"), "example", "1.0.0")
    ///     .tool_async("wipe", "Wipes the cache after confirmation.", serde_json::json!({"type": "object"}),
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
    pub fn tool_async<F, Fut, R>(
        self,
        name: &str,
        description: &str,
        input_schema: Value,
        handler: F,
    ) -> Self
    where
        F: Fn(Round) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, Flow>> + Send + 'static,
        R: Into<Value> + 'static,
    {
        self.add_tool(
            tool_definition(name, description, input_schema),
            async_handler(handler),
        )
    }

    /// Registers a tool from a full `Tool` definition (title, annotations, ...),
    /// with a synchronous handler.
    ///
    /// # Panics
    /// When the definition has no string `name` (a programming error at start-up).
    #[must_use]
    pub fn tool_definition<F, R>(self, definition: Value, handler: F) -> Self
    where
        F: Fn(Round) -> Result<R, Flow> + Send + Sync + 'static,
        R: Into<Value> + 'static,
    {
        self.add_tool(definition, sync_handler(handler))
    }

    /// Registers a tool from a full `Tool` definition, with an async handler.
    ///
    /// # Panics
    /// When the definition has no string `name` (a programming error at start-up).
    #[must_use]
    pub fn tool_definition_async<F, Fut, R>(self, definition: Value, handler: F) -> Self
    where
        F: Fn(Round) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, Flow>> + Send + 'static,
        R: Into<Value> + 'static,
    {
        self.add_tool(definition, async_handler(handler))
    }

    fn add_tool(mut self, definition: Value, handler: Handler) -> Self {
        let name = definition
            .get("name")
            .and_then(Value::as_str)
            .expect("a tool definition needs a name")
            .to_owned();
        self.tools.insert(
            name,
            Entry {
                definition,
                handler,
            },
        );
        self
    }

    /// Registers a prompt with `(name, description, required)` arguments and a
    /// synchronous handler.
    #[must_use]
    pub fn prompt<F, R>(
        self,
        name: &str,
        description: &str,
        arguments: &[(&str, &str, bool)],
        handler: F,
    ) -> Self
    where
        F: Fn(Round) -> Result<R, Flow> + Send + Sync + 'static,
        R: Into<Value> + 'static,
    {
        self.add_prompt(name, description, arguments, sync_handler(handler))
    }

    /// Registers a prompt with an async handler.
    #[must_use]
    pub fn prompt_async<F, Fut, R>(
        self,
        name: &str,
        description: &str,
        arguments: &[(&str, &str, bool)],
        handler: F,
    ) -> Self
    where
        F: Fn(Round) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, Flow>> + Send + 'static,
        R: Into<Value> + 'static,
    {
        self.add_prompt(name, description, arguments, async_handler(handler))
    }

    fn add_prompt(
        mut self,
        name: &str,
        description: &str,
        arguments: &[(&str, &str, bool)],
        handler: Handler,
    ) -> Self {
        let args: Vec<Value> = arguments
            .iter()
            .map(|(n, d, r)| json!({"name": n, "description": d, "required": r}))
            .collect();
        let mut definition = json!({"name": name, "description": description});
        if !args.is_empty() {
            definition["arguments"] = Value::Array(args);
        }
        self.prompts.insert(
            name.to_owned(),
            Entry {
                definition,
                handler,
            },
        );
        self
    }

    /// Registers a resource at `uri` with a synchronous handler.
    #[must_use]
    pub fn resource<F, R>(
        self,
        uri: &str,
        name: &str,
        description: &str,
        mime_type: &str,
        handler: F,
    ) -> Self
    where
        F: Fn(Round) -> Result<R, Flow> + Send + Sync + 'static,
        R: Into<Value> + 'static,
    {
        let definition =
            json!({"uri": uri, "name": name, "description": description, "mimeType": mime_type});
        self.add_resource(uri, definition, sync_handler(handler))
    }

    /// Registers a resource at `uri` with an async handler.
    #[must_use]
    pub fn resource_async<F, Fut, R>(
        self,
        uri: &str,
        name: &str,
        description: &str,
        mime_type: &str,
        handler: F,
    ) -> Self
    where
        F: Fn(Round) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, Flow>> + Send + 'static,
        R: Into<Value> + 'static,
    {
        let definition =
            json!({"uri": uri, "name": name, "description": description, "mimeType": mime_type});
        self.add_resource(uri, definition, async_handler(handler))
    }

    fn add_resource(mut self, uri: &str, definition: Value, handler: Handler) -> Self {
        self.resources.insert(
            uri.to_owned(),
            Entry {
                definition,
                handler,
            },
        );
        self
    }

    /// Handles one JSON-RPC message (the raw body bytes) without a deadline. Never
    /// panics on any input; a handler that panics becomes -32603.
    pub async fn handle(&self, body: &[u8], ctx: &RequestContext) -> Reply {
        self.handle_until(body, ctx, std::future::pending()).await
    }

    /// Handles one message, abandoning the handler when `deadline` completes first
    /// (pass a timer of your runtime, e.g. `tokio::time::sleep(service.handler_timeout_value())`).
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
    /// [`ParsedMessage::parse`], e.g. on a thread where a large body's parse cannot
    /// hold up other requests.
    pub async fn handle_parsed_until<D>(
        &self,
        message: ParsedMessage,
        ctx: &RequestContext,
        deadline: D,
    ) -> Reply
    where
        D: Future<Output = ()>,
    {
        let mut log = RequestLog::default();
        let (id, outcome) = self.dispatch(message, ctx, &mut log, deadline).await;
        self.reply(id, outcome, ctx, log)
    }

    /// Handles one message on the caller's thread, for synchronous callers (tests,
    /// fuzzing, a server with only synchronous handlers). It never blocks: the
    /// handler gets one poll, and one that is still pending then (it awaits
    /// something not ready yet) is abandoned as overdue, exactly as if its deadline
    /// had passed. Async handlers belong on [`Service::handle`].
    pub fn handle_sync(&self, body: &[u8], ctx: &RequestContext) -> Reply {
        let mut log = RequestLog::default();
        let (id, outcome) = {
            let message = ParsedMessage::parse(body);
            let mut fut = pin!(self.dispatch(message, ctx, &mut log, std::future::ready(())));
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
                ),
            }
        };
        self.reply(id, outcome, ctx, log)
    }

    fn reply(
        &self,
        id: Option<RequestId>,
        outcome: Option<Outcome>,
        ctx: &RequestContext,
        mut log: RequestLog,
    ) -> Reply {
        let name = self.registered_name(&log);
        let Some(outcome) = outcome else {
            conclude(None, None, ctx, &mut log, name);
            return Reply {
                body: None,
                http_status: streamable_http::NOTIFICATION_STATUS,
                log,
            };
        };
        conclude(Some(&outcome), id.as_ref(), ctx, &mut log, name);
        let response = match (&outcome, &id) {
            (o, Some(id)) => o.to_response(id),
            (Outcome::Protocol(e), None) => e.to_jsonrpc(None),
            (_, None) => Error::internal("result without an id").to_jsonrpc(None),
        };
        Reply {
            body: Some(response.to_string()),
            http_status: streamable_http::outcome_status(&outcome),
            log,
        }
    }

    /// The registered name (never the client's string for an unknown one) of the
    /// tool or prompt the log names, for the metrics labels.
    fn registered_name(&self, log: &RequestLog) -> Option<&str> {
        let registry = match metrics::method_label(log.method.as_deref()) {
            "tools/call" => Some(&self.tools),
            "prompts/get" => Some(&self.prompts),
            _ => None,
        };
        registry
            .zip(log.target.as_deref())
            .and_then(|(r, target)| r.get_key_value(target))
            .map(|(registered, _)| registered.as_str())
    }

    /// Returns the request id (if any) and the outcome (`None` for a notification).
    async fn dispatch<D: Future<Output = ()>>(
        &self,
        message: ParsedMessage,
        ctx: &RequestContext,
        log: &mut RequestLog,
        deadline: D,
    ) -> (Option<RequestId>, Option<Outcome>) {
        let protocol = |e: Error| Some(Outcome::Protocol(e));
        let msg = match message.0 {
            Ok(v) => v,
            Err(e) => return (None, protocol(e)),
        };
        let Value::Object(msg) = msg else {
            let what = if msg.is_array() {
                "batch requests are not supported"
            } else {
                "a request must be a JSON object"
            };
            return (None, protocol(Error::invalid_request(what)));
        };
        let id = match msg.get("id") {
            None => None,
            Some(v) => match RequestId::from_value(v) {
                Some(id) => Some(id),
                None => {
                    return (
                        None,
                        protocol(Error::invalid_request("id must be a string or a number")),
                    );
                }
            },
        };
        log.jsonrpc_id = id.as_ref().map(|i| log_id(i).to_string());
        if msg.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return (
                id,
                protocol(Error::invalid_request("jsonrpc must be \"2.0\"")),
            );
        }
        let Some(method) = msg.get("method").and_then(Value::as_str) else {
            return (
                id,
                protocol(Error::invalid_request("method must be a string")),
            );
        };
        log.method = Some(crate::wire::truncate(method, 64).to_owned());
        let params = msg.get("params");
        let Some(request_id) = id.clone() else {
            // A notification: nothing to answer, whatever it is (cancellation has nothing
            // to cancel between rounds: an InputRequiredResult ends the request).
            return (None, None);
        };
        let carrier = CarrierMethod::from_method(method);
        if let Some(c) = carrier {
            log.target = params
                .and_then(|p| p.get(c.target_param()))
                .and_then(Value::as_str)
                .map(|t| crate::wire::truncate(t, LOG_TARGET_MAX).to_owned());
        }
        if let Some(h) = &ctx.http_headers
            && let Err(e) = streamable_http::check_headers(h, method, params, carrier)
        {
            return (Some(request_id), protocol(e));
        }
        let outcome = match carrier {
            Some(c) => self.carrier(c, params, ctx, log, deadline).await,
            None => self.plain(method, params),
        };
        (Some(request_id), Some(outcome))
    }

    fn plain(&self, method: &str, params: Option<&Value>) -> Outcome {
        let known = matches!(
            method,
            "server/discover"
                | "ping"
                | "tools/list"
                | "prompts/list"
                | "resources/list"
                | "resources/templates/list"
        );
        if !known {
            return Outcome::Protocol(Error::method_not_found(method));
        }
        if let Some(p) = params
            && !p.is_object()
        {
            return Outcome::Protocol(Error::invalid_params(format!(
                "params must be an object, not {}",
                type_name(p)
            )));
        }
        if let Err(e) = RequestMeta::from_meta(params.and_then(|p| p.get("_meta"))) {
            return Outcome::Protocol(e.into());
        }
        if let Some(c) = params.and_then(|p| p.get("cursor")) {
            // Everything fits on one page, so no cursor this server issued can exist.
            let _ = c;
            return Outcome::Protocol(Error::invalid_params("invalid cursor"));
        }
        let mut result = Map::new();
        let list = |m: &IndexMap<String, Entry>| {
            Value::Array(m.values().map(|e| e.definition.clone()).collect())
        };
        match method {
            "server/discover" => {
                let mut caps = Map::new();
                if !self.tools.is_empty() {
                    caps.insert("tools".into(), json!({}));
                }
                if !self.prompts.is_empty() {
                    caps.insert("prompts".into(), json!({}));
                }
                if !self.resources.is_empty() {
                    caps.insert("resources".into(), json!({}));
                }
                result.insert(
                    "supportedVersions".into(),
                    json!(SUPPORTED_PROTOCOL_VERSIONS),
                );
                result.insert("capabilities".into(), Value::Object(caps));
                if let Some(i) = &self.instructions {
                    result.insert("instructions".into(), i.clone().into());
                }
                result.insert(
                    "_meta".into(),
                    json!({"io.modelcontextprotocol/serverInfo": serde_json::to_value(&self.info).unwrap_or(Value::Null)}),
                );
            }
            "ping" => {}
            "tools/list" => {
                result.insert("tools".into(), list(&self.tools));
            }
            "prompts/list" => {
                result.insert("prompts".into(), list(&self.prompts));
            }
            "resources/list" => {
                result.insert("resources".into(), list(&self.resources));
            }
            _ => {
                result.insert("resourceTemplates".into(), json!([]));
            }
        }
        if method != "ping" {
            result.insert("ttlMs".into(), self.caching.ttl_ms.into());
            result.insert(
                "cacheScope".into(),
                if self.caching.public {
                    "public"
                } else {
                    "private"
                }
                .into(),
            );
        }
        result.insert("resultType".into(), "complete".into());
        Outcome::Complete(Value::Object(result))
    }

    async fn carrier<D: Future<Output = ()>>(
        &self,
        method: CarrierMethod,
        params: Option<&Value>,
        ctx: &RequestContext,
        log: &mut RequestLog,
        deadline: D,
    ) -> Outcome {
        let registry = match method {
            CarrierMethod::ToolsCall => &self.tools,
            CarrierMethod::PromptsGet => &self.prompts,
            CarrierMethod::ResourcesRead => &self.resources,
        };
        run_carrier(
            &self.engine,
            self.handler_timeout,
            method,
            CarrierRequest::from_params_memo(method, params, self.engine.metas()),
            ctx,
            log,
            deadline,
            |request| {
                registry
                    .get(request.target())
                    .map(|e| Arc::clone(&e.handler))
                    .map(|h| move |round| h(round))
            },
        )
        .await
    }

    /// The handler registered for `target` on `method`, for the `rmcp` adapter.
    #[cfg(feature = "rmcp")]
    pub(crate) fn registered(&self, method: CarrierMethod, target: &str) -> Option<Handler> {
        let registry = match method {
            CarrierMethod::ToolsCall => &self.tools,
            CarrierMethod::PromptsGet => &self.prompts,
            CarrierMethod::ResourcesRead => &self.resources,
        };
        registry.get(target).map(|e| Arc::clone(&e.handler))
    }

    /// The registered definitions (`Tool`, `Prompt` or `Resource` objects) for
    /// `method`'s list, for the `rmcp` adapter.
    #[cfg(feature = "rmcp")]
    pub(crate) fn definitions(&self, method: CarrierMethod) -> Vec<Value> {
        let registry = match method {
            CarrierMethod::ToolsCall => &self.tools,
            CarrierMethod::PromptsGet => &self.prompts,
            CarrierMethod::ResourcesRead => &self.resources,
        };
        registry.values().map(|e| e.definition.clone()).collect()
    }
}

/// Runs one carrier request (`tools/call`, `prompts/get`, `resources/read`):
/// [`start_carrier`], then [`Started::run`]. The one path of [`Service::handle`]
/// and of the `rmcp` adapter.
#[allow(clippy::too_many_arguments)] // why: one internal entry point for two callers
pub(crate) async fn run_carrier<D, H, G, Fut>(
    engine: &Engine,
    handler_timeout: Duration,
    method: CarrierMethod,
    request: Result<CarrierRequest, RequestError>,
    ctx: &RequestContext,
    log: &mut RequestLog,
    deadline: D,
    handler_for: H,
) -> Outcome
where
    D: Future<Output = ()>,
    H: FnOnce(&CarrierRequest) -> Option<G>,
    G: FnOnce(Round) -> Fut,
    Fut: Future<Output = Result<Value, Flow>>,
{
    match start_carrier(engine, method, request, ctx, handler_for) {
        Start::Done(outcome) => outcome,
        Start::Run(started) => {
            log.round = Some(started.round_number());
            started.run(handler_timeout, deadline).await
        }
    }
}

/// How a carrier request starts: refused or answered before its handler runs,
/// or a round begun for the handler.
#[must_use = "a started round must be run or it is never finished"]
pub(crate) enum Start<G> {
    /// The outcome, without the handler.
    Done(Outcome),
    /// The round is open; [`Started::run`] runs the handler and ends it.
    Run(Started<G>),
}

impl<G> Start<G> {
    /// The number of the round begun, if one was.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))] // why: the rmcp adapter's
    pub(crate) fn round_number(&self) -> Option<u32> {
        match self {
            Self::Done(_) => None,
            Self::Run(started) => Some(started.round_number()),
        }
    }
}

/// A round begun for its handler: what [`Started::run`] needs, and no more (a
/// future that awaits it holds this, not the request it came from).
pub(crate) struct Started<G> {
    method: CarrierMethod,
    handler: G,
    round: Round,
    finisher: Finisher,
}

/// The part of a carrier request before its handler, synchronous: takes its
/// parsed params (or why they did not parse), finds the handler with
/// `handler_for` (none: the "unknown target" -32602), and begins the round on
/// `engine` (the state opens or the request is refused).
pub(crate) fn start_carrier<H, G>(
    engine: &Engine,
    method: CarrierMethod,
    request: Result<CarrierRequest, RequestError>,
    ctx: &RequestContext,
    handler_for: H,
) -> Start<G>
where
    H: FnOnce(&CarrierRequest) -> Option<G>,
{
    let request = match request {
        Ok(r) => r,
        Err(e) => return Start::Done(Outcome::Protocol(e.into())),
    };
    let Some(handler) = handler_for(&request) else {
        let what = match method {
            CarrierMethod::ToolsCall => "Unknown tool",
            CarrierMethod::PromptsGet => "Unknown prompt",
            CarrierMethod::ResourcesRead => "Resource not found",
        };
        return Start::Done(Outcome::Protocol(Error::invalid_params(what)));
    };
    let round = match engine.begin_from(request, &ctx.principal, ctx.peer, ctx.now) {
        Err(e) => return Start::Done(Outcome::from_error(Some(method), e)),
        Ok(round) => round,
    };
    let (round, finisher) = round.hand_over();
    Start::Run(Started {
        method,
        handler,
        round,
        finisher,
    })
}

impl<G> Started<G> {
    /// The round's number in its flow (1 = first round).
    pub(crate) fn round_number(&self) -> u32 {
        self.round.number()
    }

    /// Runs the handler with panics caught and `deadline` enforced, and ends the
    /// round: sealed if it asks, abandoned if it panicked or overran.
    pub(crate) async fn run<D, Fut>(self, handler_timeout: Duration, deadline: D) -> Outcome
    where
        D: Future<Output = ()>,
        G: FnOnce(Round) -> Fut,
        Fut: Future<Output = Result<Value, Flow>>,
    {
        let Self {
            method,
            handler,
            round,
            finisher,
        } = self;
        // The handler is called inside the future, so a panic in its synchronous
        // part is caught like one in its future.
        let run = AssertUnwindSafe(async move { handler(round).await }).catch_unwind();
        match select(pin!(run), pin!(deadline)).await {
            Either::Left((ran, _)) => ended(method, finisher, ran),
            Either::Right(((), _)) => {
                finisher.abandon();
                Outcome::from_error(Some(method), overdue(handler_timeout))
            }
        }
    }

    /// Runs a synchronous handler here and now, with panics caught, and ends the
    /// round: what [`Started::run`] gives for a handler whose future is ready on
    /// its first poll (there, too, the deadline is never reached first), without
    /// a future around it.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))] // why: the rmcp adapter's
    pub(crate) fn run_sync(self) -> Outcome
    where
        G: FnOnce(Round) -> Result<Value, Flow>,
    {
        let Self {
            method,
            handler,
            round,
            finisher,
        } = self;
        let ran = std::panic::catch_unwind(AssertUnwindSafe(move || handler(round)));
        ended(method, finisher, ran)
    }
}

/// Ends a round with what its handler's run gave: sealed if it asks, abandoned
/// if the handler panicked.
fn ended(
    method: CarrierMethod,
    finisher: Finisher,
    ran: std::thread::Result<Result<Value, Flow>>,
) -> Outcome {
    match ran {
        Ok(result) => same_carrier(method, finisher.finish(result)),
        Err(_panic) => {
            finisher.abandon();
            Outcome::Protocol(Error::internal("handler panicked"))
        }
    }
}

/// Ends a request in the log and the metrics ([`report`]), and fills in its
/// access-log line: the outcome label, and a refusal's private reason and detail.
/// `outcome` is `None` for a notification; `name` is the registered name of the
/// tool or prompt, if it is one.
pub(crate) fn conclude(
    outcome: Option<&Outcome>,
    id: Option<&RequestId>,
    ctx: &RequestContext,
    log: &mut RequestLog,
    name: Option<&str>,
) {
    let named = Named {
        method: log.method.as_deref(),
        target: log.target.as_deref(),
        round: log.round,
    };
    report(outcome, id, &ctx.correlation_id, named, name);
    let Some(outcome) = outcome else {
        log.outcome = "notification".into();
        return;
    };
    log.outcome = outcome.label();
    if let Some(e) = outcome.error() {
        log.reject_reason = e.diagnostic().reject_reason;
        log.detail = Some(e.diagnostic().detail.clone());
    }
}

/// What a request's diagnostic and metrics name it by: its method, its target
/// (the tool or prompt name, or the resource URI) and its round, when known.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Named<'a> {
    pub(crate) method: Option<&'a str>,
    pub(crate) target: Option<&'a str>,
    pub(crate) round: Option<u32>,
}

/// Ends a request in the metrics and, for a refusal, its private diagnostic
/// (through `tracing`, target `mrtr::diag`, with `correlation_id` and the
/// JSON-RPC `id`). `outcome` is `None` for a notification; `name` is the
/// registered name of the tool or prompt, if it is one. The one place both
/// [`Service`] (through [`conclude`]) and the `rmcp` adapter record a request.
pub(crate) fn report(
    outcome: Option<&Outcome>,
    id: Option<&RequestId>,
    correlation_id: &str,
    named: Named<'_>,
    name: Option<&str>,
) {
    record(named, outcome, name);
    if let Some(e) = outcome.and_then(Outcome::error) {
        let logged_id = id.map(log_id);
        e.log(&DiagContext {
            correlation_id,
            jsonrpc_id: logged_id.as_ref(),
            method: named.method,
            target: named.target,
            round: named.round,
        });
    }
}

/// Records the request in [`crate::metrics`]: its count, a refused state's
/// reason, and the round it was. Every label value comes from a closed set:
/// the methods routed here, the outcomes, the error codes, and the names
/// registered on the server (`name`; never the client's string for an unknown one).
fn record(named: Named<'_>, outcome: Option<&Outcome>, name: Option<&str>) {
    let method = metrics::method_label(named.method);
    let result = match outcome {
        None => RequestOutcome::Notification,
        Some(Outcome::Complete(_)) => RequestOutcome::Complete,
        Some(Outcome::InputRequired(_)) => RequestOutcome::InputRequired,
        Some(Outcome::ToolError { .. }) => RequestOutcome::ToolError,
        Some(Outcome::Protocol(e)) => RequestOutcome::Error(e.code()),
    };
    metrics::request(method, name, result);
    if let Some(reason) = outcome
        .and_then(Outcome::error)
        .and_then(|e| e.diagnostic().reject_reason)
        .and_then(RejectReason::from_name)
    {
        metrics::state_rejected(reason);
    }
    if let Some(n) = named.round {
        metrics::round(n);
    }
}

/// An `InputRequiredResult` goes out only in answer to the carrier it was built
/// for: any other is a server fault (-32603), never a mismatched result.
fn same_carrier(method: CarrierMethod, outcome: Outcome) -> Outcome {
    match outcome {
        Outcome::InputRequired(irr) if irr.method() != method => {
            Outcome::Protocol(Error::internal(format!(
                "InputRequiredResult built for {} answering {}",
                irr.method().as_str(),
                method.as_str()
            )))
        }
        other => other,
    }
}

/// The failure of a handler that outlived its deadline: retryable (nothing it did
/// in that run was recorded), a tool error on `tools/call`, -32603 elsewhere.
fn overdue(timeout: Duration) -> Error {
    Error::tool_failure(
        ToolAdvice::new("The tool did not finish in time", Retry::Helps)
            .instead("Call the tool again; if it keeps timing out, try again later"),
        Fallback::Internal,
        "deadline",
        format!(
            "handler still running after {} ms: abandoned",
            timeout.as_millis()
        ),
    )
}

/// The longest JSON-RPC string id written to the log, in characters (like the
/// method and target, a client-chosen id is shortened so it cannot bloat a line).
const LOG_ID_MAX: usize = 128;

/// The longest target (tool or prompt name, resource URI) a log line or metric
/// label carries, in characters.
pub(crate) const LOG_TARGET_MAX: usize = 128;

/// The request id as the log shows it: a long string id is shortened.
fn log_id(id: &RequestId) -> RequestId {
    match id {
        RequestId::String(s) => RequestId::String(crate::wire::truncate(s, LOG_ID_MAX).to_owned()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::tool_text;
    use crate::seal::Keyring;

    fn service() -> Service {
        Service::new(Engine::new(Keyring::ephemeral(), "t"), "t", "0").tool(
            "echo",
            "echo",
            json!({"type":"object"}),
            |_| Ok(tool_text("hi")),
        )
    }

    fn ctx(headers: Option<McpHeaders>) -> RequestContext {
        RequestContext {
            principal: Principal::anonymous(),
            now: Timestamp::from_unix_secs(1_800_000_000),
            correlation_id: "c".into(),
            http_headers: headers,
            peer: None,
        }
    }

    fn body(method: &str, extra: &str) -> Vec<u8> {
        format!(r#"{{"jsonrpc":"2.0","id":7,"method":"{method}","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}}{extra}}}}}"#).into_bytes()
    }

    fn parse(r: &Reply) -> Value {
        serde_json::from_str(r.body.as_deref().unwrap()).unwrap()
    }

    #[test]
    fn envelope_errors() {
        let s = service();
        let r = s.handle_sync(b"{not json", &ctx(None));
        assert_eq!(parse(&r)["error"]["code"], -32700);
        assert_eq!(r.http_status, 400);
        let r = s.handle_sync(b"[]", &ctx(None));
        assert_eq!(parse(&r)["error"]["code"], -32600);
        let r = s.handle_sync(br#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#, &ctx(None));
        assert_eq!(parse(&r)["error"]["code"], -32600);
        let r = s.handle_sync(&body("nope/nope", ""), &ctx(None));
        assert_eq!(parse(&r)["error"]["code"], -32601);
        assert_eq!(r.http_status, 404);
        let r = s.handle_sync(
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#,
            &ctx(None),
        );
        assert!(r.body.is_none());
        assert_eq!(r.http_status, 202);
    }

    #[test]
    fn lists_carry_caching_and_result_type() {
        let s = service();
        let v = parse(&s.handle_sync(&body("tools/list", ""), &ctx(None)));
        assert_eq!(v["result"]["resultType"], "complete");
        assert_eq!(v["result"]["tools"][0]["name"], "echo");
        assert!(v["result"]["ttlMs"].is_u64());
        let v = parse(&s.handle_sync(&body("server/discover", ""), &ctx(None)));
        assert_eq!(v["result"]["supportedVersions"][0], "2026-07-28");
    }

    #[test]
    fn long_string_ids_are_shortened_in_the_log_only() {
        let s = service();
        let long = "i".repeat(10_000);
        let b = format!(r#"{{"jsonrpc":"2.0","id":"{long}","method":"nope"}}"#);
        let r = s.handle_sync(b.as_bytes(), &ctx(None));
        assert_eq!(parse(&r)["id"], long.as_str());
        let logged = r.log.jsonrpc_id.unwrap();
        assert!(logged.len() <= LOG_ID_MAX + 2, "{}", logged.len());
        let r = s.handle_sync(&body("nope", ""), &ctx(None));
        assert_eq!(r.log.jsonrpc_id.as_deref(), Some("7"));
    }

    #[test]
    fn an_input_required_result_goes_out_only_on_its_own_carrier() {
        let mut asks = crate::wire::InputRequests::new();
        asks.insert(
            "r".into(),
            crate::wire::InputRequest::ListRoots { meta: None },
        );
        let irr =
            crate::wire::InputRequiredResult::new(CarrierMethod::PromptsGet, asks, None).unwrap();
        let o = same_carrier(
            CarrierMethod::ToolsCall,
            Outcome::InputRequired(irr.clone()),
        );
        assert!(
            matches!(&o, Outcome::Protocol(e) if e.code() == crate::error::code::INTERNAL_ERROR),
            "{o:?}"
        );
        let o = same_carrier(CarrierMethod::PromptsGet, Outcome::InputRequired(irr));
        assert!(matches!(o, Outcome::InputRequired(_)), "{o:?}");
    }

    #[test]
    fn header_checks() {
        let s = service();
        let ok = McpHeaders {
            protocol_version: Some("2026-07-28".into()),
            method: Some("tools/call".into()),
            name: Some("echo".into()),
        };
        let b = body("tools/call", r#","name":"echo""#);
        assert_eq!(
            s.handle_sync(&b, &ctx(Some(ok.clone()))).log.outcome,
            "complete"
        );
        for bad in [
            McpHeaders {
                name: Some("other".into()),
                ..ok.clone()
            },
            McpHeaders {
                name: None,
                ..ok.clone()
            },
            McpHeaders {
                method: Some("tools/list".into()),
                ..ok.clone()
            },
            McpHeaders {
                protocol_version: Some("2025-11-25".into()),
                ..ok.clone()
            },
            McpHeaders {
                protocol_version: None,
                ..ok.clone()
            },
            McpHeaders {
                name: Some("ec\u{7f}ho".into()),
                ..ok.clone()
            },
        ] {
            let r = s.handle_sync(&b, &ctx(Some(bad)));
            assert_eq!(parse(&r)["error"]["code"], -32020);
            assert_eq!(r.http_status, 400);
        }
    }
}
