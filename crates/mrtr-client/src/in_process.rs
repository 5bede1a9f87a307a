//! [`InProcess`]: the client driver talking to a [`Service`] in the same process.
//!
//! No socket, no pipe, no runtime: each request is serialized to the bytes a
//! transport would carry, handed to [`Service::handle_until`], and the reply body
//! parsed back, the way quinn-proto tests two endpoints in one process. What the
//! network adapters supply (the authenticated principal, the clock, the HTTP
//! headers, the handler deadline) is configured here instead, so a test can pin
//! each of them: a fixed or scripted clock for expiry, two principals for
//! binding, emulated headers for the header checks, a deadline it fires itself
//! for overdue handlers.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

use crate::{BoxFuture, Transport, TransportError};
use mrtr::Principal;
use mrtr::Timestamp;
use mrtr::service::{ParsedMessage, Reply, RequestContext, Service};
use mrtr::streamable_http::{McpHeaders, check_headers, check_param_headers};
use mrtr::wire::{CarrierMethod, PROTOCOL_VERSION};

/// Makes the deadline future of one request.
type DeadlineFactory = Arc<dyn Fn() -> BoxFuture<'static, ()> + Send + Sync>;

/// Where `RequestContext::now` comes from.
#[derive(Clone)]
enum Clock {
    System,
    Fixed(Timestamp),
    Custom(Arc<dyn Fn() -> Timestamp + Send + Sync>),
}

impl Clock {
    fn now(&self) -> Timestamp {
        match self {
            Self::System => Timestamp::now(),
            Self::Fixed(t) => *t,
            Self::Custom(f) => f(),
        }
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::System => f.write_str("System"),
            Self::Fixed(t) => f.debug_tuple("Fixed").field(t).finish(),
            Self::Custom(_) => f.write_str("Custom(..)"),
        }
    }
}

/// A [`Transport`] that hands each request to a [`Service`] in this process.
///
/// Every request is serialized to bytes and goes through
/// [`Service::handle_until`], so it meets exactly the checks a network request
/// meets (JSON-RPC envelope, `_meta`, the round engine, the error channels); only
/// the network is missing. Runtime-agnostic: the future completes as soon as the
/// handler does, on whatever executor polls it.
///
/// Defaults, each changed by a setter:
/// - the clock is the system clock ([`Timestamp::now`]);
/// - no HTTP headers are passed, as on stdio ([`emulate_http_headers`](Self::emulate_http_headers));
/// - no handler deadline: a handler is never abandoned, whatever the service's
///   [`handler_timeout`](Service::handler_timeout) says, since the core has no
///   timer ([`with_deadline`](Self::with_deadline)).
///
/// The principal has no default: it is what a `requestState` is bound to, so the
/// caller names it, [`Principal::anonymous`] included.
///
/// # Example
/// A two-round flow: the tool asks for a name, the client's handler answers.
/// ```
/// use mrtr_client::{Client, Handlers, InProcess};
/// use mrtr::engine::{Elicited, Engine, Form};
/// use mrtr::ToolResult;
/// use mrtr::wire::{ElicitAction, ElicitResult};
/// use mrtr::{Keyring, Principal, Service, Timestamp};
/// use serde_json::json;
///
/// let service = Service::new(Engine::new(Keyring::ephemeral(), "example"), "example", "1.0.0")
///     .tool("greet", "Asks your name, then greets you.", json!({"type": "object"}), |round| {
///         match round.elicit("name", Form::new("Your name?").string("name", "Name"))? {
///             Elicited::Accepted(f) => Ok(ToolResult::text(format!("Hello, {}!", f.str("name").unwrap_or("you")))),
///             _ => Ok(ToolResult::text("Hello!")),
///         }
///     });
/// let transport = InProcess::new(service, Principal::subject("alice"))
///     .fixed_clock(Timestamp::from_unix_secs(1_800_000_000));
/// let handlers = Handlers::new().on_elicit(|_ctx, _form| async {
///     Ok(ElicitResult { action: ElicitAction::Accept, content: json!({"name": "Ada"}).as_object().cloned() })
/// });
/// // No runtime in this example, so no timer (no back-off pause, no time cap).
/// let client = Client::builder(transport).with_handler(handlers).no_timer().build();
/// let done = block_on(client.call_tool("greet", json!({}))).unwrap();
/// assert_eq!(done.text(), "Hello, Ada!");
/// assert_eq!(done.rounds, 2);
/// # fn block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     // a minimal executor for the doctest (a synchronous handler never waits)
/// #     use std::task::{Context, Poll, Waker};
/// #     let mut f = std::pin::pin!(f);
/// #     let mut cx = Context::from_waker(Waker::noop());
/// #     loop { if let Poll::Ready(v) = f.as_mut().poll(&mut cx) { return v; } }
/// # }
/// ```
pub struct InProcess {
    service: Arc<Service>,
    principal: Principal,
    clock: Clock,
    http_headers: bool,
    deadline: Option<DeadlineFactory>,
    next_correlation: AtomicU64,
}

impl std::fmt::Debug for InProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InProcess")
            .field("principal", &self.principal)
            .field("clock", &self.clock)
            .field("http_headers", &self.http_headers)
            .field("deadline", &self.deadline.as_ref().map(|_| ".."))
            .finish_non_exhaustive()
    }
}

impl InProcess {
    /// A transport to `service`, authenticated as `principal` on every request.
    pub fn new(service: impl Into<Arc<Service>>, principal: Principal) -> Self {
        Self {
            service: service.into(),
            principal,
            clock: Clock::System,
            http_headers: false,
            deadline: None,
            next_correlation: AtomicU64::new(1),
        }
    }

    /// Every request happens at `now` (default: the system clock).
    #[must_use]
    pub fn fixed_clock(mut self, now: Timestamp) -> Self {
        self.clock = Clock::Fixed(now);
        self
    }

    /// Reads the time from `clock` on every request (default: the system clock),
    /// e.g. a fake clock a test moves forward.
    #[must_use]
    pub fn clock(mut self, clock: impl Fn() -> Timestamp + Send + Sync + 'static) -> Self {
        self.clock = Clock::Custom(Arc::new(clock));
        self
    }

    /// Passes the Streamable HTTP headers a conforming client sends with each
    /// request (`MCP-Protocol-Version` from `_meta`, `Mcp-Method`, `Mcp-Name`,
    /// and the `Mcp-Param-*` headers of the arguments a called tool declares
    /// with `x-mcp-header`), so the service checks them as it would over HTTP
    /// (default: no headers, as on stdio).
    #[must_use]
    pub fn emulate_http_headers(mut self) -> Self {
        self.http_headers = true;
        self
    }

    /// Races every handler against a deadline made by `deadline` for that request
    /// (default: none). When the deadline completes first the handler is abandoned
    /// and the request gets the service's overdue error. Pass a timer of your
    /// runtime, or a future the test completes itself:
    ///
    /// ```
    /// # use mrtr::{Engine, Keyring, Principal, Service};
    /// # use mrtr_client::InProcess;
    /// # let service = Service::new(Engine::new(Keyring::ephemeral(), "t"), "t", "0");
    /// let transport = InProcess::new(service, Principal::anonymous())
    ///     // never completes: the same as no deadline
    ///     .with_deadline(|| Box::pin(std::future::pending()));
    /// ```
    #[must_use]
    pub fn with_deadline(
        mut self,
        deadline: impl Fn() -> BoxFuture<'static, ()> + Send + Sync + 'static,
    ) -> Self {
        self.deadline = Some(Arc::new(deadline));
        self
    }

    /// The service requests go to.
    pub fn service(&self) -> &Arc<Service> {
        &self.service
    }

    /// The principal every request is authenticated as.
    pub fn principal(&self) -> &Principal {
        &self.principal
    }

    /// Hands `body` (any bytes, malformed ones included) to the service as
    /// [`send`](Transport::send) does and returns the whole [`Reply`]: the body,
    /// the HTTP status the Streamable HTTP adapter would use, and the private log
    /// record. For tests that look past the JSON-RPC response.
    pub async fn exchange(&self, body: &[u8]) -> Reply {
        // A body that is not JSON gets no headers; the service reports the parse error first.
        let headers = self.http_headers.then(|| {
            serde_json::from_slice::<Value>(body)
                .map(|v| McpHeaders::for_request(&v, PROTOCOL_VERSION))
                .unwrap_or_default()
        });
        let service = &self.service;
        let message = ParsedMessage::parse(body).check(|method, params| {
            let Some(h) = &headers else { return Ok(()) };
            check_headers(h, method, params, CarrierMethod::from_method(method))?;
            match service.param_headers(method, params) {
                None => Ok(()),
                Some(declared) => {
                    // What a conforming client sends for these arguments.
                    let arguments = params.and_then(|p| p.get("arguments"));
                    let sent = declared.pairs(arguments);
                    check_param_headers(declared, arguments, |name| {
                        sent.iter()
                            .filter(move |(n, _)| *n == name)
                            .map(|(_, v)| v.as_bytes())
                            .collect::<Vec<_>>()
                    })
                }
            }
        });
        let n = self.next_correlation.fetch_add(1, Ordering::Relaxed);
        let ctx = RequestContext {
            principal: self.principal.clone(),
            now: self.clock.now(),
            correlation_id: format!("in-process-{n}"),
            peer: None,
            trace: None,
        };
        match &self.deadline {
            Some(make) => {
                self.service
                    .handle_parsed_until(message, &ctx, make())
                    .await
            }
            None => {
                self.service
                    .handle_parsed_until(message, &ctx, std::future::pending())
                    .await
            }
        }
    }
}

impl Transport for InProcess {
    fn network_transport(&self) -> &'static str {
        "inproc"
    }

    fn send(&self, request: Value) -> BoxFuture<'_, Result<Value, TransportError>> {
        Box::pin(async move {
            let body = serde_json::to_vec(&request)
                .map_err(|e| TransportError::InvalidRequest(e.to_string()))?;
            let reply = self.exchange(&body).await;
            let Some(text) = reply.body else {
                return Err(TransportError::InvalidResponse(
                    "no response: the service answers a notification with nothing".into(),
                ));
            };
            serde_json::from_str(&text)
                .map_err(|e| TransportError::InvalidResponse(format!("the reply is not JSON: {e}")))
        })
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::sync::Mutex;
    use std::task::{Context, Poll, Waker};

    use serde_json::json;

    use super::*;
    use mrtr::engine::{Engine, Form};
    use mrtr::result::ToolResult;
    use mrtr::seal::Keyring;

    const T0: Timestamp = Timestamp::from_unix_secs(1_800_000_000);

    /// Polls once: every handler here is synchronous, so one poll is enough.
    fn ready<F: Future>(f: F) -> F::Output {
        let mut f = std::pin::pin!(f);
        match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(v) => v,
            Poll::Pending => panic!("a synchronous handler did not complete"),
        }
    }

    fn service() -> Service {
        Service::new(Engine::new(Keyring::ephemeral(), "t"), "t", "0")
            .tool("ask", "asks", json!({"type": "object"}), |round| {
                let _ = round.elicit("n", Form::new("Name?").string("name", "Name"))?;
                Ok(ToolResult::text("done"))
            })
            .tool("wait", "waits", json!({"type": "object"}), |_| async {
                std::future::pending::<()>().await;
                Ok(ToolResult::text("never"))
            })
    }

    fn call(id: u64, name: &str) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name,
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}}})
    }

    #[test]
    fn the_principal_and_the_clock_bind_the_state() {
        let service = Arc::new(service());
        let alice =
            InProcess::new(Arc::clone(&service), Principal::subject("alice")).fixed_clock(T0);
        let irr = ready(alice.send(call(1, "ask"))).unwrap();
        let mut retry = call(2, "ask");
        retry["params"]["requestState"] = irr["result"]["requestState"].clone();
        retry["params"]["inputResponses"] =
            json!({"n": {"action": "accept", "content": {"name": "A"}}});
        let bob = InProcess::new(Arc::clone(&service), Principal::subject("bob")).fixed_clock(T0);
        assert_eq!(
            ready(bob.send(retry.clone())).unwrap()["error"]["code"],
            -32602
        );
        let later = Arc::new(Mutex::new(T0.add_secs(86_400)));
        let clock = Arc::clone(&later);
        let late_alice = InProcess::new(Arc::clone(&service), Principal::subject("alice"))
            .clock(move || *clock.lock().unwrap());
        assert_eq!(
            ready(late_alice.send(retry.clone())).unwrap()["result"]["isError"],
            true
        );
        *later.lock().unwrap() = T0;
        let done = ready(late_alice.send(retry)).unwrap();
        assert_eq!(done["result"]["content"][0]["text"], "done");
    }

    #[test]
    fn emulated_headers_agree_with_the_body() {
        let t = InProcess::new(service(), Principal::anonymous()).emulate_http_headers();
        let reply = ready(t.exchange(call(1, "ask").to_string().as_bytes()));
        assert_eq!(reply.log.outcome, "input_required");
        let h = McpHeaders::for_request(&call(1, "ask"), PROTOCOL_VERSION);
        assert_eq!(h.name.as_deref(), Some("ask"));
        assert_eq!(h.method.as_deref(), Some("tools/call"));
        assert_eq!(h.protocol_version.as_deref(), Some("2026-07-28"));
        // Not JSON: no headers at all, and the parse error wins.
        let reply = ready(t.exchange(b"{oops"));
        assert_eq!(reply.log.outcome, "error:-32700");
    }

    /// With emulated headers the `Mcp-Param-*` ones are derived from the
    /// arguments as a conforming client derives them, so the call passes the
    /// check; without (stdio) there is no check.
    #[test]
    fn emulated_parameter_headers_are_the_ones_a_conforming_client_sends() {
        let annotated = || {
            let schema = json!({"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
            }});
            service().tool("query", "q", schema, |_| Ok(ToolResult::text("ran")))
        };
        let mut body = call(1, "query");
        body["params"]["arguments"] = json!({"region": "Zürich"});
        let body = body.to_string();
        for t in [
            InProcess::new(annotated(), Principal::anonymous()).emulate_http_headers(),
            InProcess::new(annotated(), Principal::anonymous()),
        ] {
            let reply = ready(t.exchange(body.as_bytes()));
            assert_eq!(reply.log.outcome, "complete", "{:?}", reply.body);
        }
    }

    #[test]
    fn a_notification_gets_no_response() {
        let t = InProcess::new(service(), Principal::anonymous());
        let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled"});
        assert!(matches!(
            ready(t.send(note)),
            Err(TransportError::InvalidResponse(_))
        ));
    }

    #[test]
    fn the_deadline_abandons_a_waiting_handler() {
        let t = InProcess::new(service(), Principal::anonymous())
            .with_deadline(|| Box::pin(std::future::ready(())));
        let v = ready(t.send(call(1, "wait"))).unwrap();
        assert_eq!(v["result"]["isError"], true, "{v}");
        // A handler that does not wait still finishes.
        let v = ready(t.send(call(2, "ask"))).unwrap();
        assert_eq!(v["result"]["resultType"], "input_required", "{v}");
    }
}
