//! The handler model: a stateless handler, re-run from the top on every round.
//!
//! A server that speaks Multi Round-Trip Requests keeps nothing between rounds:
//! the retry may reach another instance, or the same one after a restart, and
//! between rounds nothing is in flight. So mrtr does not suspend a handler in
//! the middle and resume it later. It runs the handler again, from the top, on
//! every round, and makes each ask return the answer the flow already has. A
//! handler reads like straight-line code that asks its questions one after the
//! other; underneath, it runs once per round.
//!
//! # One round
//!
//! ```text
//!  request (+ requestState, + inputResponses)
//!    │
//!    ▼  open and check the sealed state
//!  handler runs from the top
//!    │  round.elicit / sample / roots / visit:
//!    │    answer sealed by an earlier round, or a valid one in this retry ─► Ok(answer)
//!    │    otherwise: record the question ─────────────────────────────────► Err(Flow::Suspend)
//!    ▼
//!  Ok(result)      → the complete result
//!  Flow::Suspend   → one InputRequiredResult: every recorded question, and a new
//!                    requestState sealing the answers, the asked set, once
//!                    results and handler data (round + 1, same flow deadline)
//!  a failure       → a tool error (isError) or a JSON-RPC error
//! ```
//!
//! The client answers, retries the same request with a new id, and the handler
//! runs again; this time the asks it passed before return their answers, and it
//! gets further. How the state is opened and checked is in the
//! [security model](super::security_model); what it holds is in the
//! [token format](super::token_format).
//!
//! # Registering a handler
//!
//! A handler is a closure that takes the round by value and returns its
//! carrier's result: a `ToolResult` for a tool, a `PromptResult` for a prompt, a
//! `ResourceResult` for a resource (another carrier's result, or a bare JSON
//! value, does not compile). It may be synchronous (`|round| { .. }`, run with no
//! future around it) or `async` (`|round| async move { .. }`, raced against the
//! handler deadline); `Service::tool`, `prompt` and `resource` take either.
//!
//! ```
//! use mrtr::{Confirmation, Engine, Flow, Keyring, Retry, Service, ToolAdvice, ToolResult};
//! use serde::Deserialize;
//!
//! #[derive(Deserialize)]
//! struct DeployArgs {
//!     service: String,
//! }
//!
//! async fn deploy(service: &str) -> Result<u64, mrtr::Error> {
//!     # let _ = service;
//!     Ok(7) // your API call
//! }
//!
//! let service = Service::new(Engine::new(Keyring::ephemeral(), "https://tools.example"), "tools", "1.0.0");
//! let deploy_schema = serde_json::json!({"type": "object", "properties": {"service": {"type": "string"}}});
//! let service = service.tool(
//!     "deploy",
//!     "Deploys a service after the user confirms.",
//!     deploy_schema,
//!     |round| async move {
//!         let args: DeployArgs = round.arguments()?;
//!         let question = format!("Deploy {} to production?", args.service);
//!         if round.confirm("confirm", question)? != Confirmation::Accepted {
//!             return Err(Flow::failed(
//!                 ToolAdvice::new("The user did not confirm the deployment, so nothing was deployed", Retry::DoesNotHelp)
//!                     .instead("Ask the user whether they want to deploy before calling deploy again"),
//!             ));
//!         }
//!         let id = round.once_async("deploy", || deploy(&args.service)).await?;
//!         Ok(ToolResult::text(format!("Deployed {} (deployment #{id}).", args.service)))
//!     },
//! );
//! # drop(service);
//! ```
//!
//! Round 1 of this flow parses the arguments, asks the confirmation and stops
//! at the `?`. Round 2 parses the same arguments (they are bound to the sealed
//! state, so they cannot change), gets the confirmation, runs the `once` step
//! and completes. When the engine has a replay guard, round 2 sent again does
//! not deploy a second time: the `once` step refuses, and the model is told the
//! step was already carried out.
//!
//! # Arguments
//!
//! `round.arguments::<T>()?` deserializes the request's arguments into any
//! `serde` type. When they do not fit, the handler stops with a tool result
//! with `isError: true` that names the field and the expected type, never the
//! value sent, so the model can correct its call (`-32602` on `prompts/get` and
//! `resources/read`, which have no tool results).
//!
//! An accepted form decodes the same way: `round.elicit_as::<T>(key, form)?`
//! returns `FormAnswer::Accepted(T)`; content that fits the form's schema but not
//! `T` is asked again with a note naming the field. To turn an answer down for a
//! reason of its own (a check across fields, a date in the past), the type's
//! `TryFrom` (serde's `try_from`) returns a [`Refusal`](crate::Refusal): the
//! question is asked again with its text as the note. With the `schemars` feature,
//! `round.ask::<T>(key, message)?` builds the form from `T` itself (a flat struct
//! of primitives, as MCP elicitation allows; anything else is refused when the
//! form is built, before anything reaches a client).
//!
//! # Asking
//!
//! | call | asks for | returns |
//! |---|---|---|
//! | `round.elicit(key, Form)` | a form the user fills in | accepted fields, declined, cancelled, or unavailable |
//! | `round.visit(key, UrlVisit)` | the user to open a URL (sign-in, payment, secrets) | accepted, declined, cancelled, or unavailable |
//! | `round.sample(key, Sampling)` | a completion from the client's model | the model's message, or none |
//! | `round.roots(key, RootsAsk)` | the client's roots | the roots, or none |
//!
//! Each returns the answer when the flow has one, and otherwise records the
//! question and returns `Err(Flow::Suspend)`, which `?` passes up. An answer
//! counts only for the key and kind asked, for the very same question, and (for
//! a form) when it validates against the form's schema; anything else is asked
//! again with a note saying what was wrong. Decline and cancel are answers the
//! handler sees, not errors.
//!
//! An ask is required by default: when the client did not declare the
//! capability it needs, the request fails with `-32021` naming it. Mark an ask
//! `.optional()` to have it dropped instead; the handler then sees it as
//! unavailable and goes on without it. An accepted URL visit means the user
//! agreed to open the page, not that they finished there: check the outcome
//! yourself on the next round.
//!
//! # Several questions in one round
//!
//! Every ask made before the first `?` goes into the same
//! `InputRequiredResult`:
//!
//! ```
//! # use mrtr::{Flow, Form, Round, Sampling};
//! fn forecast(round: &Round) -> Result<String, Flow> {
//!     let units = round.elicit("units", Form::new("Units?").one_of("units", ["metric", "imperial"]).optional());
//!     let forecast = round.sample("forecast", Sampling::prompt("One-line forecast for Paris?", 60));
//!     let (units, forecast) = (units?, forecast?); // both asked at once
//!     let units = units.accepted().and_then(|f| f.str("units")).unwrap_or("metric").to_owned();
//!     Ok(format!("{} ({units})", forecast.map(|m| m.text()).unwrap_or_default()))
//! }
//! ```
//!
//! Ask in one round what does not depend on another answer, and in later rounds
//! what does. The engine caps questions per round and rounds per flow (16 each
//! by default); beyond that the flow ends with a tool error telling the model to
//! start over.
//!
//! # Confirmations
//!
//! `round.confirm(key, message)?` returns `Confirmation::Accepted` only when the
//! user accepted *and* the question was put to the user in an earlier sealed
//! round of this flow. A confirmation the client sends unasked, on its first
//! request, is not taken: the question goes out, and only the answer to it
//! counts. `Declined` covers a decline and an unchecked box, `Cancelled` a
//! dismissed question; treat both as "no". A client without form elicitation
//! gets `-32021`: a confirmation is never skipped. The result is `#[must_use]`.
//!
//! # Side effects: `once`
//!
//! `round.once(step, || ...)` and `round.once_async(step, || async { ... }).await`
//! run a side effect at most once per flow. The first run in a flow carries it
//! out and its result (any `serde` type) is sealed into the state; every later
//! re-run of the handler in that flow returns the sealed result without running
//! the step. A replayed final round would re-run it (nothing is sealed after a
//! complete result), unless the engine has a replay guard: then, on every round
//! that resumes a flow, the step first claims `(flow id, step)`, and a second
//! claim ends the run with a tool error saying the step was already carried
//! out. A guard that cannot answer fails the step closed: it does not run, and
//! the model is told that retrying may succeed. The claim is taken before the
//! step runs, so a step that failed is not retried in that flow. The guard
//! answers through a future: `once_async` awaits it, the synchronous `once`
//! gives it one poll, so with a guard that goes over the network (Redis) write
//! the step with `once_async`. An in-memory guard only holds within one
//! process; see the
//! [security model](super::security_model#replay-what-binding-gives-and-what-it-does-not)
//! for fleets and restarts.
//!
//! Step names identify steps within a flow: one name per side effect, and the
//! same result type across releases (a sealed result that no longer fits its
//! type is an internal error).
//!
//! # Handler data
//!
//! `round.set_data(&value)` stores typed data (any `serde` type) that is sealed
//! with the state and read back by `round.data::<T>()` in the next round.
//! Use it for what is expensive or impossible to recompute the same way on
//! every run, such as a plan derived from earlier answers. It travels through
//! the client, encrypted, and counts toward the size limit of the state (8 KiB of
//! plaintext by default).
//!
//! # Progress and log messages
//!
//! `round.progress(done, Some(total), Some("message"))` reports progress
//! (`notifications/progress`) and `round.log(LogLevel::Info, data)` sends a log
//! message (`notifications/message`) while the request runs. Each goes out only
//! when the request asked for it: progress when its `_meta` carries a
//! `progressToken` (and only with values that increase), a log message when its
//! `_meta` carries `io.modelcontextprotocol/logLevel` and the message is at or
//! above that level. Otherwise the call does nothing, so a handler reports
//! unconditionally; `round.progress_enabled()` and `round.log_enabled(level)`
//! say beforehand, for a message that is costly to build. On Streamable HTTP
//! they are SSE events before the response, on stdio lines before the response
//! line; rmcp's adapter drops them. They are the request's own notifications,
//! never a question (questions are asks, in the result), and they are not
//! sealed: a retry runs the handler again, and its progress starts over.
//! The client sees their text: never put secrets in them.
//!
//! # Deadline and panics
//!
//! Each run of a handler has a deadline (`Service::with_handler_timeout`, 30 s by
//! default; `mrtr_rmcp::Mrtr::with_handler_timeout` on rmcp). Only an async
//! handler can be cut short, at an `.await`. A run that overruns it is aborted: on
//! `tools/call` the client gets a tool error saying that retrying may succeed,
//! elsewhere `-32603`. Nothing from the aborted run is recorded, including
//! the results of `once` steps that finished in it, so a side effect that can
//! be cut short this way should be idempotent at its destination.
//!
//! A handler that panics ends its request with `-32603`; the panic's message
//! is not sent to the client. Panics are bugs, not a way to report a failure.
//!
//! # Rules for writing handlers
//!
//! 1. **Ask deterministically.** A question is its key plus the exact request
//!    sent: message, schema, parameters. A reworded question is a new question,
//!    asked again, and an earlier answer does not count for it. Do not put the
//!    time, random values, counters or freshly fetched data into a question,
//!    unless you stored them with `set_data` in an earlier round and read them
//!    back.
//! 2. **One key, one question.** Asking the same key with two different
//!    questions in one run is an internal error. Use a new key when the
//!    question is really new.
//! 3. **Branch only on answers and arguments.** Later questions may depend on
//!    earlier answers; that is what rounds are for. They must not depend on
//!    anything that may differ between runs.
//! 4. **Do side effects only inside `once`.** Code before an ask runs on every
//!    round; code outside `once` runs on every replay. Put the step after the
//!    questions that confirm it, and give the engine a replay guard when it must
//!    not run twice.
//! 5. **Never act on a declined or cancelled confirmation.** Act only on
//!    `confirm(...)` returning `Confirmation::Accepted`; for anything else
//!    return a result that tells the model nothing was done and why.
//! 6. **Handle every answer.** Decline, cancel and unavailable are normal
//!    outcomes; a `match` that covers them is part of the handler.
//! 7. **Keep the state small.** Everything sealed (answers, data, `once`
//!    results) travels through the client twice per round and must fit the size
//!    limit.
//! 8. **Ask for secrets by URL.** Never put passwords, API keys or payment
//!    details in a form; send the user to a page with `visit`.
//! 9. **Say what failed, not what was sent.** Failure text reaches the model:
//!    name the input at fault, never its value or a secret.
//! 10. **Suspend only by asking.** `Flow::Suspend` comes only from an ask (its
//!     proof, `Unanswered`, cannot be made elsewhere), passed up with `?`; the
//!     round itself is ended by the engine, never by the handler (`Round` has no
//!     `finish`).
