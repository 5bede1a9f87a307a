//! The 2025 era on the service: `initialize` opens a [`Session`], and
//! [`Service::handle_legacy`] answers the session's requests with the same
//! handlers, the carriers through the bridge ([`crate::legacy::run`]).

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Value, json};

use super::era::{Bounds, Eras, ServerRequests, Session, VERSIONS};
use super::{
    NotificationSink, Outcome, ParsedMessage, Reply, RequestContext, RequestLog, Service, discover,
    envelope, note_target, subscription,
};
use crate::error::Error;
use crate::wire::Era;
use crate::wire::meta::LogLevel;
use crate::wire::{CarrierMethod, type_name};

impl Service {
    /// Serve `eras` (default both, [`Eras::Both`]): the transports of
    /// `mrtr-server` route by it, and `initialize` is refused with -32022
    /// naming the versions served under [`Eras::ModernOnly`].
    #[must_use]
    pub fn with_eras(mut self, eras: Eras) -> Self {
        self.eras = eras;
        self
    }

    /// The eras served.
    pub fn eras(&self) -> Eras {
        self.eras
    }

    /// The time bounds of a 2025-era flow (default 2 minutes an ask, 5 minutes
    /// a flow: [`Bounds::default`]).
    #[must_use]
    pub fn with_legacy_bounds(mut self, bounds: Bounds) -> Self {
        self.legacy_bounds = bounds;
        self
    }

    /// The time bounds of a 2025-era flow.
    pub fn legacy_bounds(&self) -> Bounds {
        self.legacy_bounds
    }

    /// Answers a 2025-era `initialize` (a message naming `initialize` without
    /// the 2026-07-28 `_meta`: [`ParsedMessage::is_legacy_initialize`]): the
    /// new session and the reply to send, or the reply that refuses it.
    ///
    /// The version is the one asked for when it is one of
    /// [`VERSIONS`], else the newest of them; the
    /// capabilities declared are what `server/discover` declares, with
    /// `logging`. Under [`Eras::ModernOnly`] it is refused with -32022, whose
    /// data names the versions served, as the revision asks of a modern-only
    /// server.
    ///
    /// # Errors
    /// The reply to send instead of a session.
    #[allow(clippy::result_large_err)] // why: the reply goes out as it is, once
    pub fn initialize<C>(
        &self,
        mut message: ParsedMessage<C>,
        ctx: &RequestContext,
    ) -> Result<(Session, Reply), Reply>
    where
        C: FnOnce(&str, Option<&Value>) -> Result<(), Error>,
    {
        let mut log = RequestLog {
            era: Era::Legacy,
            ..RequestLog::default()
        };
        let (id, params) = match envelope::read(&mut message, &mut log) {
            envelope::Read::Request(r) if r.method == "initialize" => match r.refused {
                Some(e) => {
                    return Err(self.reply(Some(r.id), Some(Outcome::Protocol(e)), ctx, log));
                }
                None => (r.id, r.params),
            },
            envelope::Read::Request(r) => {
                let e = Error::internal("Service::initialize given another method");
                return Err(self.reply(Some(r.id), Some(Outcome::Protocol(e)), ctx, log));
            }
            envelope::Read::Notification => return Err(self.reply(None, None, ctx, log)),
            envelope::Read::Refused(id, e) => {
                return Err(self.reply(id, Some(Outcome::Protocol(e)), ctx, log));
            }
        };
        let handshake = read_initialize(params).and_then(|(asked, capabilities)| {
            if !self.eras.serves_legacy() {
                return Err(Error::unsupported_version(asked));
            }
            Ok((asked.to_owned(), capabilities))
        });
        let (asked, capabilities) = match handshake {
            Ok(h) => h,
            Err(e) => return Err(self.reply(Some(id), Some(Outcome::Protocol(e)), ctx, log)),
        };
        let changes = self.changes.as_ref().and_then(|changes| {
            let served = [
                self.registries.has_tools(),
                self.registries.has_prompts(),
                self.registries.has_resources() || !self.templates.is_empty(),
            ];
            // A server at its cap of subscriptions still opens the session; it
            // is not told of changes.
            subscription::session(
                changes,
                subscription::quota_key(ctx),
                served,
                serde_json::to_value(&self.info).unwrap_or(Value::Null),
            )
            .ok()
        });
        let session = Session::new(&asked, capabilities, changes);
        let mut caps = discover::capabilities(&self.discover_server(&ctx.principal));
        caps.insert("logging".into(), json!({}));
        let mut result = Map::new();
        result.insert("protocolVersion".into(), session.version().into());
        result.insert("capabilities".into(), Value::Object(caps));
        result.insert(
            "serverInfo".into(),
            serde_json::to_value(&self.info).unwrap_or(Value::Null),
        );
        if let Some(i) = &self.instructions {
            result.insert("instructions".into(), i.as_str().into());
        }
        let reply = self.reply(
            Some(id),
            Some(Outcome::Complete(Value::Object(result))),
            ctx,
            log,
        );
        Ok((session, reply))
    }

    /// Handles one message of a 2025-era session opened by
    /// [`Service::initialize`]: the session's own methods (`ping`,
    /// `logging/setLevel`, `resources/subscribe` and `unsubscribe`), the lists
    /// and completions as for any client, and the carriers through the bridge
    /// ([`crate::legacy::run`]): each ask of the handler goes to the client as a
    /// server-to-client request through `client`, within the service's
    /// [`Bounds`]. Progress and log messages go to `sink` when given (the log
    /// level is the session's).
    ///
    /// Results carry no 2026-07-28 fields (`resultType`, the caching hints);
    /// `initialize` again, `server/discover` and `subscriptions/listen` are
    /// refused.
    pub async fn handle_legacy<C>(
        &self,
        mut message: ParsedMessage<C>,
        session: &Session,
        ctx: &RequestContext,
        client: &dyn ServerRequests,
        sink: Option<Arc<dyn NotificationSink>>,
    ) -> Reply
    where
        C: FnOnce(&str, Option<&Value>) -> Result<(), Error>,
    {
        let mut log = RequestLog {
            era: Era::Legacy,
            ..RequestLog::default()
        };
        let request = match envelope::read(&mut message, &mut log) {
            envelope::Read::Request(r) => r,
            envelope::Read::Notification => return self.reply(None, None, ctx, log),
            envelope::Read::Refused(id, e) => {
                return self.reply(id, Some(Outcome::Protocol(e)), ctx, log);
            }
        };
        note_target(&mut log, request.method, request.params);
        let outcome = match request.refused {
            Some(e) => Outcome::Protocol(e),
            None => {
                self.route_legacy(
                    request.method,
                    request.params,
                    session,
                    ctx,
                    &mut log,
                    client,
                    sink,
                )
                .await
            }
        };
        self.reply(
            Some(request.id),
            Some(without_modern_fields(outcome)),
            ctx,
            log,
        )
    }

    /// The answer to one request of a 2025-era session.
    #[allow(clippy::too_many_arguments)] // why: the request and its whole context
    async fn route_legacy(
        &self,
        method: &str,
        params: Option<&Value>,
        session: &Session,
        ctx: &RequestContext,
        log: &mut RequestLog,
        client: &dyn ServerRequests,
        sink: Option<Arc<dyn NotificationSink>>,
    ) -> Outcome {
        let answered = |r: Result<(), Error>| match r {
            Ok(()) => Outcome::Complete(json!({})),
            Err(e) => Outcome::Protocol(e),
        };
        match method {
            "ping" => Outcome::Complete(json!({})),
            "initialize" => Outcome::Protocol(Error::invalid_request(
                "this session is initialized already",
            )),
            "logging/setLevel" => answered(set_level(session, params)),
            "resources/subscribe" | "resources/unsubscribe" => match session.changes() {
                Some(changes) => answered(string_param(params, "uri").and_then(|uri| {
                    if method == "resources/subscribe" {
                        changes.watch(uri)
                    } else {
                        changes.unwatch(uri);
                        Ok(())
                    }
                })),
                None => Outcome::Protocol(Error::method_not_found(method)),
            },
            "server/discover" | subscription::LISTEN => {
                Outcome::Protocol(Error::method_not_found(method))
            }
            _ => match CarrierMethod::from_method(method) {
                Some(carrier) => {
                    self.bridge(carrier, params, session, ctx, log, client, sink)
                        .await
                }
                None => match session.params(params) {
                    Ok(p) => {
                        let p = Value::Object(p);
                        self.route(
                            method,
                            Some(&p),
                            ctx,
                            log,
                            client.sleep(self.handler_timeout),
                            None,
                        )
                        .await
                    }
                    Err(e) => Outcome::Protocol(e),
                },
            },
        }
    }

    /// A carrier request of a 2025-era session: its rounds on the engine's
    /// one path, its asks sent to the client, until the handler completes.
    #[allow(clippy::too_many_arguments)] // why: the request and its whole context
    async fn bridge(
        &self,
        carrier: CarrierMethod,
        params: Option<&Value>,
        session: &Session,
        ctx: &RequestContext,
        log: &mut RequestLog,
        client: &dyn ServerRequests,
        sink: Option<Arc<dyn NotificationSink>>,
    ) -> Outcome {
        let round_reached = Mutex::new(None);
        let outcome = super::era::run(
            carrier,
            params,
            session,
            client,
            self.legacy_bounds,
            self.engine.max_rounds(),
            |p: Value| {
                let sink = sink.clone();
                let round_reached = &round_reached;
                async move {
                    let mut round_log = RequestLog::default();
                    let deadline = client.sleep(self.handler_timeout);
                    let outcome = self
                        .route(
                            carrier.as_str(),
                            Some(&p),
                            ctx,
                            &mut round_log,
                            deadline,
                            sink,
                        )
                        .await;
                    *round_reached.lock().unwrap_or_else(PoisonError::into_inner) = round_log.round;
                    outcome
                }
            },
        )
        .await;
        log.round = round_reached
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        outcome
    }
}

/// The protocol version and capabilities of an `initialize`'s params.
fn read_initialize(params: Option<&Value>) -> Result<(&str, Value), Error> {
    let Some(Value::Object(params)) = params else {
        return Err(Error::invalid_params(
            "initialize needs params with protocolVersion, capabilities and clientInfo",
        ));
    };
    let Some(version) = params.get("protocolVersion").and_then(Value::as_str) else {
        return Err(Error::invalid_params("protocolVersion must be a string"));
    };
    let capabilities = match params.get("capabilities") {
        None => Value::Object(Map::new()),
        Some(c @ Value::Object(_)) => c.clone(),
        Some(other) => {
            return Err(Error::invalid_params(format!(
                "capabilities must be an object, not {}",
                type_name(other)
            )));
        }
    };
    // The version the session gets: the one asked for when served, else the
    // newest (the client then decides whether it can speak it).
    let version = VERSIONS
        .into_iter()
        .find(|v| *v == version)
        .unwrap_or(version);
    Ok((version, capabilities))
}

/// `logging/setLevel`: the session's level from `params.level`.
fn set_level(session: &Session, params: Option<&Value>) -> Result<(), Error> {
    let name = string_param(params, "level")?;
    let level = LogLevel::from_name(name).ok_or_else(|| {
        Error::invalid_params(
            "level must be one of debug, info, notice, warning, error, critical, alert, emergency",
        )
    })?;
    session.set_log_level(level);
    Ok(())
}

/// The string member `name` of `params`.
fn string_param<'a>(params: Option<&'a Value>, name: &str) -> Result<&'a str, Error> {
    params
        .and_then(|p| p.get(name))
        .and_then(Value::as_str)
        .ok_or_else(|| Error::invalid_params(format!("{name} must be a string")))
}

/// The outcome without the members 2026-07-28 added to results (`resultType`,
/// `ttlMs`, `cacheScope`), which a 2025-era client does not know.
fn without_modern_fields(outcome: Outcome) -> Outcome {
    let strip = |mut v: Value| {
        if let Value::Object(o) = &mut v {
            for key in ["resultType", "ttlMs", "cacheScope"] {
                o.remove(key);
            }
        }
        v
    };
    match outcome {
        Outcome::Complete(v) => Outcome::Complete(strip(v)),
        Outcome::ToolError { result, error } => Outcome::ToolError {
            result: strip(result),
            error,
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Elicited, Engine, Form};
    use crate::legacy::{BoxFuture, RequestFailed};
    use crate::result::ToolResult;
    use crate::seal::Keyring;
    use crate::{Principal, Timestamp};
    use std::time::Duration;

    fn service() -> Service {
        Service::new(Engine::new(Keyring::ephemeral(), "t"), "t", "0")
            .tool("echo", "echo", json!({"type":"object"}), |_| {
                Ok(ToolResult::text("hi"))
            })
            .tool(
                "greet",
                "asks a name",
                json!({"type":"object"}),
                |round| match round
                    .elicit("name", Form::new("Your name?").string("name", "Name"))?
                {
                    Elicited::Accepted(f) => Ok(ToolResult::text(format!(
                        "Hello, {}!",
                        f.str("name").unwrap_or("you")
                    ))),
                    _ => Ok(ToolResult::text("Hello!")),
                },
            )
    }

    fn ctx() -> RequestContext {
        RequestContext::new(
            Principal::anonymous(),
            Timestamp::from_unix_secs(1_800_000_000),
            "c",
        )
    }

    /// A client that answers each request with `answer`, recording what it was sent.
    struct Client {
        answer: Result<Value, RequestFailed>,
        sent: Mutex<Vec<(String, Value)>>,
    }

    impl ServerRequests for Client {
        fn request<'a>(
            &'a self,
            method: &'a str,
            params: &'a Value,
        ) -> BoxFuture<'a, Result<Value, RequestFailed>> {
            self.sent
                .lock()
                .unwrap()
                .push((method.to_owned(), params.clone()));
            let answer = self.answer.clone();
            Box::pin(async move {
                match answer {
                    Err(RequestFailed::Closed) => std::future::pending().await,
                    other => other,
                }
            })
        }

        fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
            // No runtime here: a zero bound is over at once, any other never.
            Box::pin(async move {
                if !duration.is_zero() {
                    std::future::pending::<()>().await;
                }
            })
        }
    }

    fn client(answer: Result<Value, RequestFailed>) -> Client {
        Client {
            answer,
            sent: Mutex::new(Vec::new()),
        }
    }

    fn block<F: std::future::Future>(f: F) -> F::Output {
        let mut f = std::pin::pin!(f);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match f.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(v) => v,
            std::task::Poll::Pending => panic!("still pending"),
        }
    }

    fn body(r: &Reply) -> Value {
        serde_json::from_str(r.body.as_deref().unwrap()).unwrap()
    }

    fn open(s: &Service, version: &str, caps: Value) -> (Session, Value) {
        let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion": version, "capabilities": caps,
            "clientInfo": {"name":"c","version":"1"}}});
        let message = ParsedMessage::parse(init.to_string().as_bytes());
        assert!(message.is_legacy_initialize());
        let (session, reply) = s.initialize(message, &ctx()).unwrap();
        (session, body(&reply))
    }

    fn call(s: &Service, session: &Session, c: &Client, method: &str, params: Value) -> Value {
        let m = json!({"jsonrpc":"2.0","id":1,"method":method,"params":params});
        body(&block(s.handle_legacy(
            ParsedMessage::parse(m.to_string().as_bytes()),
            session,
            &ctx(),
            c,
            None,
        )))
    }

    #[test]
    fn initialize_negotiates_a_2025_version_and_declares_logging() {
        let s = service();
        let (session, r) = open(&s, "2025-06-18", json!({"elicitation": {}}));
        assert_eq!(r["result"]["protocolVersion"], "2025-06-18");
        assert_eq!(session.version(), "2025-06-18");
        assert_eq!(r["result"]["capabilities"]["logging"], json!({}));
        assert_eq!(r["result"]["capabilities"]["tools"], json!({}));
        assert_eq!(r["result"]["serverInfo"]["name"], "t");
        assert!(r["result"].get("resultType").is_none());
        // An unknown version gets the newest; a modern-only service refuses it,
        // naming what it serves.
        assert_eq!(
            open(&s, "2024-11-05", json!({})).1["result"]["protocolVersion"],
            "2025-11-25"
        );
        let modern = service().with_eras(Eras::ModernOnly);
        let init = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}"#;
        let refused = body(
            &modern
                .initialize(ParsedMessage::parse(init), &ctx())
                .unwrap_err(),
        );
        assert_eq!(refused["error"]["code"], -32022);
        assert_eq!(refused["error"]["data"]["supported"], json!(["2026-07-28"]));
        // initialize carrying the modern _meta is no 2025-era initialize.
        let modern_init = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        assert!(!ParsedMessage::parse(modern_init).is_legacy_initialize());
        let bad = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{}}}"#;
        assert_eq!(
            body(&s.initialize(ParsedMessage::parse(bad), &ctx()).unwrap_err())["error"]["code"],
            -32602
        );
    }

    #[test]
    fn the_session_methods_answer_empty_results_and_lists_lose_the_modern_fields() {
        let s = service();
        let (session, _) = open(&s, "2025-11-25", json!({}));
        let c = client(Ok(json!({})));
        assert_eq!(
            call(&s, &session, &c, "ping", json!({}))["result"],
            json!({})
        );
        assert_eq!(
            call(
                &s,
                &session,
                &c,
                "logging/setLevel",
                json!({"level":"info"})
            )["result"],
            json!({})
        );
        assert_eq!(session.log_level(), Some(LogLevel::Info));
        assert_eq!(
            call(
                &s,
                &session,
                &c,
                "logging/setLevel",
                json!({"level":"loud"})
            )["error"]["code"],
            -32602
        );
        let list = call(&s, &session, &c, "tools/list", json!({}));
        assert_eq!(list["result"]["tools"][0]["name"], "echo");
        for gone in ["resultType", "ttlMs", "cacheScope"] {
            assert!(list["result"].get(gone).is_none(), "{gone}");
        }
        let text = call(&s, &session, &c, "tools/call", json!({"name":"echo"}));
        assert_eq!(text["result"]["content"][0]["text"], "hi");
        assert!(text["result"].get("resultType").is_none());
        for refused in ["initialize", "server/discover", "subscriptions/listen"] {
            assert!(
                call(&s, &session, &c, refused, json!({}))["error"].is_object(),
                "{refused}"
            );
        }
        // No changes hub: nothing to subscribe to.
        assert_eq!(
            call(
                &s,
                &session,
                &c,
                "resources/subscribe",
                json!({"uri":"a://b"})
            )["error"]["code"],
            -32601
        );
        assert!(c.sent.lock().unwrap().is_empty());
    }

    #[test]
    fn an_ask_goes_to_the_client_and_its_answer_completes_the_handler() {
        let s = service();
        let (session, _) = open(&s, "2025-11-25", json!({"elicitation": {}}));
        let c = client(Ok(json!({"action":"accept","content":{"name":"Ada"}})));
        let r = call(
            &s,
            &session,
            &c,
            "tools/call",
            json!({"name":"greet","requestState":"x"}),
        );
        assert_eq!(r["result"]["content"][0]["text"], "Hello, Ada!");
        let sent = c.sent.lock().unwrap();
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].0, "elicitation/create");
        assert_eq!(sent[0].1["message"], "Your name?");
    }

    #[test]
    fn answers_are_validated_and_capabilities_gated_as_mrtr_answers_are() {
        let s = service();
        // A wrong answer is asked again, then the engine's round limit ends it.
        let (session, _) = open(&s, "2025-11-25", json!({"elicitation": {}}));
        let c = client(Ok(json!({"action":"accept","content":{"name":7}})));
        let r = call(&s, &session, &c, "tools/call", json!({"name":"greet"}));
        assert!(c.sent.lock().unwrap().len() > 1);
        assert!(
            r["result"]["isError"] == true || r["error"].is_object(),
            "{r}"
        );
        // Without the elicitation capability the client is never asked.
        let (session, _) = open(&s, "2025-11-25", json!({}));
        let c = client(Ok(json!({})));
        let r = call(&s, &session, &c, "tools/call", json!({"name":"greet"}));
        assert!(c.sent.lock().unwrap().is_empty());
        assert!(
            r["error"]["code"] == -32021 || r["result"]["isError"] == true,
            "{r}"
        );
    }

    #[test]
    fn a_client_that_fails_an_ask_ends_the_flow_with_a_retryable_tool_error() {
        let s = service();
        let (session, _) = open(&s, "2025-11-25", json!({"elicitation": {}}));
        let c = client(Err(RequestFailed::Answered { code: -32600 }));
        let r = call(&s, &session, &c, "tools/call", json!({"name":"greet"}));
        assert_eq!(r["result"]["isError"], true);
        let text = r["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("did not answer"), "{text}");
        // One that never answers: the ask bound (zero here) ends it the same way.
        let quick = service().with_legacy_bounds(Bounds {
            ask_timeout: Duration::ZERO,
            flow_timeout: Duration::from_secs(60),
        });
        let c = client(Err(RequestFailed::Closed));
        let (session, _) = open(&quick, "2025-11-25", json!({"elicitation": {}}));
        let r = call(&quick, &session, &c, "tools/call", json!({"name":"greet"}));
        assert_eq!(r["result"]["isError"], true);
    }
}
