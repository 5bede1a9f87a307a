//! The security model: what mrtr protects, what it does not, and what is left to you.
//!
//! Since MCP 2026-07-28 a server keeps nothing between the rounds of a Multi
//! Round-Trip Request: what it needs to resume travels through the client in
//! `requestState`, and the client's answers arrive in `inputResponses`. Both are
//! attacker-controlled input (MCP 2026-07-28, Multi Round-Trip Requests §Server
//! Requirements (Basic Workflow), item 4, and §Security Considerations). This
//! chapter says what mrtr does about that.
//!
//! # What is secret
//!
//! - **The keys.** 32 random bytes each, in a [`Keyring`]. A [`Key`]'s `Debug`
//!   shows only its kid, its bytes are zeroized on drop, and no error message of
//!   the crate ever shows key material ([`KeyError`] names the entry, never its
//!   value). Whoever holds a key can read every state sealed under it and forge
//!   states for any request and any principal: the bound digests are computed
//!   from public inputs.
//! - **The sealed state.** `requestState` is encrypted (XAES-256-GCM), not only
//!   signed: the client cannot read the answers gathered so far, the results of
//!   `once` steps or the handler's data.
//!
//! Not secret: the kid (4 bytes in clear, a keyed hash that reveals nothing
//! about the key), the format version, and the token's length, which follows the
//! size of the state. The layout is in [`token_format`].
//!
//! # What is bound
//!
//! A token opens only on the request it was sealed for (MCP 2026-07-28, Multi
//! Round-Trip Requests §Server Requirements (Basic Workflow), item 5). Its
//! plaintext holds digests of:
//!
//! - the **request**: the method (`tools/call`, `prompts/get` or
//!   `resources/read`), the target (tool or prompt name, resource URI), the
//!   **canonical arguments** (key order and whitespace do not matter; absent
//!   arguments and `{}` are the same) and the **protocol version**;
//! - the **principal**: subject, issuer and client id of the caller, as the
//!   application passes them in ([`Principal`]);
//! - the **audience**: the name of this service, the same on every instance of
//!   a fleet and different between services, so a state cannot move to another
//!   server that happens to share a key.
//!
//! `open` recomputes the digests from the current request and refuses a token
//! whose digests differ (private reasons `binding`, `principal`, `audience`).
//! A client that changes the arguments between rounds therefore starts a new
//! flow, it never continues the old one with other arguments.
//!
//! # Expiry
//!
//! Every token carries three times, all checked with a tolerated clock skew
//! between instances ([`SealConfig::clock_skew`], default 60 s):
//!
//! - **Round expiry** `exp`: `iat + ttl`, default 10 minutes
//!   ([`STATE_TTL`]; `mrtr serve --state-ttl`). Long enough for a person to
//!   answer; each round gets a fresh one.
//! - **Absolute flow deadline**: fixed in round 1 as `iat + flow_lifetime`,
//!   default 1 hour ([`FLOW_LIFETIME`]). Later rounds copy it and never
//!   extend it, and no round's expiry lies past it, so a flow cannot be kept
//!   alive forever by answering slowly.
//! - **Far future**: a token whose expiry lies more than `max_ttl` (default 24
//!   hours, [`MAX_STATE_TTL`]) plus skew ahead of `now` is refused
//!   (`far_future`); lowering `max_ttl` is a kill switch for long-lived tokens.
//!
//! Time is passed in (the core has no clock) in whole seconds.
//!
//! An authentic token whose round expiry or flow deadline has passed, on the
//! request it was sealed for, is the one refusal a client learns about: on
//! `tools/call` it becomes a tool result with `isError: true` telling the model
//! that the window to answer lapsed and to call the tool again
//! ([`OpenError::is_expired_but_authentic`]). Only a token that verified and
//! matched every binding gets this answer, so it reveals nothing a forger could
//! use. On `prompts/get` and `resources/read`, which have no `isError`, it is the
//! uniform error below.
//!
//! # One public error, private reasons
//!
//! Every other refusal (malformed, too large, unknown version, unknown key, bad
//! tag, undecodable, expired on a carrier without `isError`, wrong request,
//! principal or audience, far future) is the same JSON-RPC error: code
//! `-32602`, message `Invalid or expired requestState`
//! ([`INVALID_REQUEST_STATE_MESSAGE`]), `data: {"reason":
//! "invalid_request_state"}`, HTTP 400. A client cannot tell which check failed,
//! so it cannot probe for valid key ids or learn whether a forgery came close.
//!
//! The precise [`RejectReason`] goes only to the operator: a `tracing` event
//! (target `mrtr::seal`; warning level for `tag`, `unknown_version` and `decode`,
//! which point at tampering or a broken proxy), the per-request diagnostic
//! record (target `mrtr::diag`, field `reject_reason`), and one counter per
//! reason ([`Sealer::reject_counts`]). The reasons tell tampering (`tag`) from
//! replay elsewhere (`binding`, `principal`, `audience`), clock trouble
//! (`expired`, `far_future`) and a key removed too early (`unknown_key`).
//!
//! # Replay: what binding gives, and what it does not
//!
//! Binding bounds replay: a token works only for the same principal, on the same
//! request, at the same audience, until it expires. User B cannot present user
//! A's token, and a token for deploying `web` cannot deploy `db`.
//!
//! Binding does **not** make a token single-use. Until it expires, the same
//! principal can send the same retry again, for example re-submitting a final
//! round whose accepted confirmation triggers a deployment. The specification
//! requires servers to enforce single use themselves where it matters (MCP
//! 2026-07-28, Multi Round-Trip Requests §Server Requirements (Basic Workflow),
//! item 5, Warning). In mrtr:
//!
//! - A handler runs each side effect inside a `once` step (see
//!   [`handler_model`]). Its result is sealed into the next round's state, so
//!   later re-runs of the handler in the same flow reuse it instead of repeating
//!   the effect.
//! - That alone does not stop a replayed *final* round: its response is a
//!   complete result, and nothing is sealed after it. Give the engine a
//!   [`ReplayGuard`] ([`Engine`]'s `replay_guard`) and, on every round that
//!   resumes a flow, a `once` step first sends it a [`Claim`] for `(flow id,
//!   step)`. The step runs only when the guard answers `Claimed`.
//! - **How long a claim is held**: until the flow's deadline plus **twice** the
//!   clock skew, on the claiming instance's clock: as long as any instance whose
//!   clock is within the tolerated skew can open any state of the flow. Not only
//!   the presented state: a round that presented it without reaching the step
//!   (an answer missing, a question changed) sealed a sibling of the same flow
//!   that expires later and does not carry the step's result, and every state of
//!   a flow opens until the flow's deadline plus skew. And not only on this
//!   instance's clock: an instance lagging it by up to the skew opens those
//!   states up to one more skew later, while a shared store drops the claim by
//!   its own clock. (Before this rule a claim lasted until the presented state's
//!   expiry plus one skew, and both a sibling state and a lagging instance could
//!   run the step a second time; the tests `reference::replay_guard` and
//!   `redis::replay_redis` of `mrtr-cli` replay both.) The price is that a claim lives up to
//!   the flow lifetime plus two skews, 1 h 2 min by default.
//! - **Already claimed**: the replay gets a failure instead of a second
//!   effect: on `tools/call` a tool error (`This step was already carried out
//!   for this request`, retrying does not help, call the tool again to start a
//!   new request), elsewhere `-32602`. The claim is taken before the step runs:
//!   a step that failed is not retried within that flow either.
//! - **Unavailable** (the store is unreachable, timed out, or full): the step
//!   does **not** run; mrtr never runs a step it could not claim. On
//!   `tools/call` a tool error says the step was not carried out and that
//!   retrying may succeed; elsewhere `-32603`.
//! - **Zero times rather than twice.** A claim whose answer never came (a
//!   timeout, a connection lost after the command was written) may still land
//!   in the store. The step did not run, yet every later attempt at it in that
//!   flow is refused as already carried out. Both tool errors tell the model
//!   what to do then: call the tool again, which starts a new request (a new
//!   flow id).
//! - **Async.** The guard answers through a future. `once_async` awaits it;
//!   the synchronous `once` polls it once and takes a claim that is not
//!   answered then as unavailable, so a network guard needs `once_async`.
//! - A first request carries no state, so there is no flow to replay: sending it
//!   twice is two calls, which no server can tell from a user who really wants
//!   two. Side effects therefore belong after the questions that confirm them.
//!
//! Which guard:
//!
//! - [`MemoryReplayGuard`] is enough for **one instance**. It is built with the
//!   time its process started and refuses (as already claimed) every claim for a
//!   state sealed before then, so a restart never re-runs a step; the price is
//!   that flows in flight across a restart fail at their next `once` step and
//!   their users start over (`mrtr serve` starts serving on a fresh second, so
//!   the refusal is exact even for a restart within one second). Its claims
//!   expire in order (no scan under the lock), and it is bounded: 1 000 000
//!   live claims in all (about 105 MiB when full; a claim costs about 80 to 110
//!   bytes) and 10 000 per principal (`mrtr serve --replay-max-claims`,
//!   `--replay-max-claims-per-principal`), beyond which a claim is unavailable.
//!   Every anonymous caller is the same principal, so for them the quota is
//!   keyed on the peer address as well (an IPv4 address, an IPv6 /64; the
//!   transport passes it in `RequestContext::peer`): one anonymous caller
//!   filling its quota leaves every other address its own. What it can promise:
//!   in one process, a `once` step runs at most once per flow; a full guard
//!   refuses steps and never repeats one; it takes a hundred principals (or a
//!   hundred anonymous addresses) at their quota to deny everyone else. What it
//!   cannot: many accounts, or many addresses (a botnet; one IPv6 /48 holds
//!   65 536 /64s), can still fill it together and deny every `once` step until
//!   their claims expire, up to the flow lifetime plus two skews later; behind a
//!   reverse proxy every anonymous caller has the proxy's address and one quota
//!   (authenticate at the proxy, `--principal-header`, instead). It cannot see
//!   another instance's claims: behind a load balancer, a replay sent to
//!   another instance is not caught.
//! - **A fleet** (several instances, or one that must keep flows across
//!   restarts) needs a shared store: the Redis guard of the `mrtr-redis` crate
//!   (`mrtr_redis::RedisReplayGuard`; `mrtr serve --replay-store
//!   redis://HOST:PORT[/DB]`, `rediss://` for TLS),
//!   or any implementation of [`ReplayGuard`]. Each claim is one `SET NX PX`
//!   under `mrtr:<hash of the audience>:<hash of flow id and step>`: no token,
//!   flow id or step name reaches the store. A claim is bounded by a command
//!   timeout (250 ms by default) and is unavailable after it; the server starts
//!   while Redis is down and its `once` steps fail closed until Redis answers.
//!   A shared store is only as good as its data, and a claim it loses is a step
//!   that can run twice. The guard reads `maxmemory-policy` on every connect and
//!   reconnect (and every minute on a live connection): any policy but
//!   `noeviction` may evict claims (`volatile-*` ones too: every claim has a
//!   TTL, so on a Redis whose other data has none the claims go first), and the
//!   guard refuses every claim there, failing closed with an ERROR line that
//!   names the policy; `mrtr serve --replay-store` refuses to start (exit 2).
//!   Where `CONFIG GET` is forbidden (managed services: `ERR unknown command`,
//!   `NOPERM`), the guard cannot rule eviction out and refuses in the same way,
//!   saying so. Only the operator's explicit opt-in
//!   (`--replay-store-allow-eviction`,
//!   `mrtr_redis::RedisReplayGuard::allow_eviction`) lets claims through then,
//!   with a WARN on each connect. A Redis restarted without
//!   persistence forgets the claims of open flows, and a failover to a replica
//!   the claim had not reached yet loses it; `?wait=N` on the store URL makes a
//!   claim count only once `N` replicas acknowledged it (fewer is a refusal,
//!   and that step of that flow is then refused for good). Use a Redis (or
//!   Valkey) dedicated to mrtr, with `maxmemory-policy noeviction` and AOF; see
//!   the `mrtr` binary's operations chapter (`mrtr_cli::manual::operations`).
//! - The engine has no guard by default; `mrtr serve` installs a
//!   [`MemoryReplayGuard`] unless told `--replay-store`.
//!
//! # Two error channels
//!
//! A failure goes to the model or to the client software, never both, and
//! [`Error`] decides which:
//!
//! - **A tool result with `isError: true`**, on `tools/call` only, for a failure
//!   the model can act on: the user declined, the window to answer lapsed, a
//!   limit was reached (rounds, questions per round, size of the carried state),
//!   a `once` step was replayed or its claim could not be recorded, or the
//!   handler reported a failure with advice.
//!   Its text ([`ToolAdvice`]) says what failed, which input (by name, never its
//!   value), whether retrying the same call helps ([`Retry`]), and what to do
//!   instead. It carries `resultType: "complete"`.
//! - **A JSON-RPC error** for a request that cannot be processed, which the model
//!   never sees. `prompts/get` and `resources/read` have no `isError`, so every
//!   failure there is a JSON-RPC error (advice-carrying failures use `-32602`,
//!   or `-32603` for a fault of the server).
//!
//! The codes (MCP 2026-07-28, Base Protocol §Error Codes; HTTP statuses for the
//! Streamable HTTP transport):
//!
//! | code | when | HTTP |
//! |---|---|---|
//! | `-32700` | the body is not JSON, or one of its objects names a member twice (a proxy and the server could read it differently, so no member of it, `id` included, is trusted) | 400 |
//! | `-32600` | not a JSON-RPC request object (batches included) | 400 |
//! | `-32601` | unknown method | 404 |
//! | `-32602` | invalid params, a missing or malformed `_meta` field, the uniform `requestState` refusal | 400 |
//! | `-32603` | a fault of the server (a handler that panicked, a result that is not an object, a replay store that did not answer) | 500 |
//! | `-32020` | an HTTP header (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`) is missing, malformed or disagrees with the body | 400 |
//! | `-32021` | a required ask needs a client capability this request did not declare; `data.requiredCapabilities` | 400 |
//! | `-32022` | unsupported protocol version; `data: {supported, requested}` | 400 |
//!
//! mrtr never emits `-32042` (the retired `URLElicitationRequiredError`: its role
//! is now an `InputRequiredResult` carrying a URL-mode elicitation), nor any
//! other code from `-32000` to `-32099` (legacy, or reserved for the
//! specification). [`Error::tool_failure`] takes the fallback a failure uses on
//! the carriers without `isError` as a closed [`Fallback`]: `-32602` or
//! `-32603`, so none of those can be passed.
//!
//! Public text never holds a token, a key, plaintext state or an argument value.
//! Every failure also yields a private [`Diagnostic`] for the operator's log
//! (category, whether a retry can succeed, detail, reject reason), which is a
//! different string from the public one and holds none of those either.
//!
//! # Answers are checked against what was asked
//!
//! `inputResponses` come from the client, so an answer counts only if:
//!
//! - the handler asks that key in this run, and the answer is of the kind asked
//!   (a form answer for a form, a sampling result for sampling, ...);
//! - when an earlier round asked the key, the question is the same one: its
//!   digest, sealed in the asked set, covers the whole request sent (message,
//!   `requestedSchema`, sampling parameters). An answer never carries over to a
//!   reworded question;
//! - an accepted form's `content` validates against the `requestedSchema` that
//!   was sent ([`validate_content`]: types, `required`, enums, formats, lengths,
//!   bounds). Fields the schema does not declare are dropped, so a handler never
//!   sees a value nobody validated.
//!
//! Keys nobody asked are ignored. A missing or wrong answer is not an error: the
//! question goes out again in a fresh round, with a note naming the field and
//! the rule (never the value), as MCP 2026-07-28, Multi Round-Trip Requests
//! §Error Handling asks. Without these checks a client could slip in answers
//! nobody was asked, such as a confirmation the user never saw.
//!
//! By default the engine also takes a fresh answer that fits the question the
//! handler asks now even when no earlier sealed round asked it (a "cold" retry,
//! as the conformance suite sends). A confirmation must not work that way: a
//! handler asks it so that it counts only if it was put to the user in an
//! earlier sealed round (see [`handler_model`]), or the engine runs with the
//! strict answer policy.
//!
//! # Capability gating
//!
//! An input request goes out only if the client declared the capability for it
//! in **this** request's `_meta` (never inferred from earlier requests; MCP
//! 2026-07-28, Base Protocol §_meta, Per-request protocol fields):
//!
//! | ask | needs |
//! |---|---|
//! | form elicitation | `elicitation` (`{}` means form) or `elicitation.form` |
//! | URL elicitation | `elicitation.url` |
//! | sampling | `sampling`; with `tools` or `toolChoice`, `sampling.tools`; with `includeContext` other than `none`, `sampling.context` |
//! | roots | `roots` |
//!
//! A required ask the client cannot serve fails the request with `-32021`,
//! whose `data.requiredCapabilities` names exactly the missing
//! (sub-)capabilities of every such ask in the round. An ask marked optional is
//! dropped and the handler sees it as unavailable. An answer already in hand
//! needs no capability, since nothing is sent for it. An undeclared input
//! request is never sent (MCP 2026-07-28, Multi Round-Trip Requests §Server
//! Requirements (Basic Workflow), item 7). The gate is one function of the engine, run for every ask.
//!
//! # What the server author must still do
//!
//! - **Authenticate callers and choose the principal.** mrtr binds to the
//!   principal it is given; it cannot check it. Derive it from the MCP
//!   authorization credentials (subject, issuer, client id). Every anonymous
//!   caller shares [`Principal::anonymous`], so binding to it prevents no replay
//!   between users. Over HTTP the principal comes from the request
//!   (`principal::PrincipalSource`, feature `http`, which `mrtr_server::http` and
//!   `mrtr_rmcp` take: the one your authentication layer put in the
//!   request's extensions, or a header an authenticating proxy sets); `mrtr serve`
//!   refuses to start until told `--principal-header NAME`, `--principal NAME`
//!   (stdio) or `--anonymous`, listens on loopback by default, and warns when an
//!   anonymous server does not.
//! - **Choose one audience** per service, identical on every instance.
//! - **Keep the keys secret and shared**: the same ring on every instance, from
//!   a secret store, rotated as in the `mrtr` binary's
//!   rotation chapter (`mrtr_cli::manual::rotation`). Without configured keys a
//!   process uses an ephemeral key its peers cannot open.
//! - **Share a [`ReplayGuard`]** across the fleet when a side effect must happen
//!   at most once (`--replay-store redis://…`), keep its store durable, and
//!   write side effects that go over the network with `once_async`.
//! - **Never log secrets**: tokens, keys, plaintext state, answers, argument
//!   values. mrtr's own log records hold none of them; `mrtr inspect` prints a
//!   decrypted state and is for the operator's eyes only. The reference server's
//!   panic hook logs where a panic happened, not its message, which could quote
//!   a request.
//! - **Ask for sensitive data by URL**, never by form: passwords, API keys,
//!   tokens and payment details must not go through form mode (MCP 2026-07-28,
//!   Elicitation).
//! - **Limit request rates and sizes**: a client can make a server re-ask as
//!   often as it likes. mrtr caps rounds per flow, questions per round and the
//!   carried state; the HTTP transport caps the body size, the requests in flight,
//!   the body bytes buffered at once, the open connections, and how long a head may
//!   take and a kept-alive connection may idle (see the `mrtr` binary's operations
//!   chapter, `mrtr_cli::manual::operations`, "Facing the open internet"). It does not limit request rates: put a rate
//!   limiter in front of a public server.
//! - **Reseed after `fork`**: nonces come from a per-thread generator that does
//!   not reseed on `fork`; a process that forks after sealing must call
//!   `rand::rng().reseed()` in the child before sealing again.
//!
//! [`Keyring`]: crate::seal::Keyring
//! [`Key`]: crate::seal::Key
//! [`KeyError`]: crate::seal::KeyError
//! [`Principal`]: crate::principal::Principal
//! [`Principal::anonymous`]: crate::principal::Principal::anonymous
//! [`SealConfig::clock_skew`]: crate::seal::SealConfig::clock_skew
//! [`STATE_TTL`]: crate::defaults::STATE_TTL
//! [`FLOW_LIFETIME`]: crate::defaults::FLOW_LIFETIME
//! [`MAX_STATE_TTL`]: crate::defaults::MAX_STATE_TTL
//! [`OpenError::is_expired_but_authentic`]: crate::seal::OpenError::is_expired_but_authentic
//! [`INVALID_REQUEST_STATE_MESSAGE`]: crate::error::INVALID_REQUEST_STATE_MESSAGE
//! [`RejectReason`]: crate::seal::RejectReason
//! [`Sealer::reject_counts`]: crate::seal::Sealer::reject_counts
//! [`ReplayGuard`]: crate::replay::ReplayGuard
//! [`MemoryReplayGuard`]: crate::replay::MemoryReplayGuard
//! [`Claim`]: crate::replay::Claim
//! [`Engine`]: crate::engine::Engine
//! [`Error`]: crate::error::Error
//! [`Error::tool_failure`]: crate::error::Error::tool_failure
//! [`Fallback`]: crate::error::Fallback
//! [`ToolAdvice`]: crate::error::ToolAdvice
//! [`Retry`]: crate::error::Retry
//! [`Diagnostic`]: crate::error::Diagnostic
//! [`validate_content`]: crate::wire::RequestedSchema::validate_content
//! [`token_format`]: super::token_format
//! [`handler_model`]: super::handler_model
