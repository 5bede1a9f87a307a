//! A hand-written MRTR server for `mrtr audit`'s tests: correct, or broken in
//! exactly one way ([`Flaw`]), each way chosen so that one check of the audit
//! fails, or the few that one fault truly breaks (`Flaw::checks`).
//!
//! Axum, POST /mcp, JSON replies, one tokio runtime of its own per instance on
//! 127.0.0.1:0 ([`Toy`]); a [`Fleet`] is the four instances the audit takes with
//! every optional input: the server, a peer sharing its key, one with another key
//! and one with a 2 s state TTL.
//!
//! What it serves (the fixture surface of `scripts/audit-peers.sh`, adjusted so
//! that every binding flaw can be seen; see the notes on `ask_name` and the prompt):
//!
//! - `tools/call confirm_action {item}`: asks form key `confirm` (boolean `confirm`,
//!   required), then `done: <item>` (or `cancelled: <item>`).
//! - `tools/call ask_name {item}`: asks form key `name` (string `name`, required),
//!   then `Hello, <name>!`. It takes the same `item` argument as `confirm_action`:
//!   a state bound to everything but the tool can only be caught opening for
//!   another tool if that tool's arguments are the same.
//! - `prompts/get confirm_action {item}`: the prompt shares the tool's name, its
//!   argument and its question (key `confirm`), so that a state bound to everything
//!   but the method can be caught opening on `prompts/get`.
//! - `tools/list`, `prompts/list`, `resources/list`, `resources/templates/list`,
//!   `server/discover`; `resources/read` knows no resource.
//!
//! The state is sealed with `mrtr::seal` (XAES-256-GCM, base64url) and bound to
//! the method, the name, the canonical arguments, the principal and an audience;
//! its expiry is checked twice, against the sealed `exp` and against this
//! instance's own TTL from the sealed issue time (so an instance refuses a state
//! older than its TTL whoever sealed it). Every refusal is the frozen
//! `-32602 Invalid or expired requestState`, HTTP 200, no `data`.
//!
//! The principal: `Authorization: Bearer alice-token` is alice, `Bearer bob-token`
//! bob, anything else anonymous.
#![allow(dead_code)] // the self-checks and the audit tests each use a part

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mrtr::seal::{
    Binding, BindingInput, Claims, Key, Keyring, RejectReason, SealConfig, Sealer, UntrustedState,
    canonical_json,
};
use mrtr::{Principal, Timestamp};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// The protocol version the toy speaks.
pub(super) const PROTOCOL: &str = "2026-07-28";
/// The largest request body taken; a larger one gets HTTP 413.
pub(super) const MAX_BODY: usize = 256 * 1024;
/// The longest `requestState` opened; a longer one is refused before any decoding.
pub(super) const MAX_STATE: usize = 16 * 1024;
/// The code of every refusal of a state.
pub(super) const FROZEN_CODE: i64 = -32602;
/// The message of every refusal of a state.
pub(super) const FROZEN_MESSAGE: &str = "Invalid or expired requestState";
/// The audience every instance binds its states to (a fleet shares it).
const AUDIENCE: &str = "mrtr-audit-toy";
/// The key every instance uses under [`Flaw::SharedDefaultKey`], whatever it is given.
const BUILT_IN_KEY: [u8; 32] = [7; 32];
/// The TTL every instance uses under [`Flaw::IgnoresTtl`], whatever it is given.
const DEFAULT_TTL: Duration = Duration::from_secs(600);

/// How the toy is broken: one rule each, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Flaw {
    /// Correct.
    None,
    /// A state whose AEAD tag does not verify is taken as a fresh, valid one, and
    /// the answers with it (a swallowed tag failure). Every other failure to open
    /// (another key, a malformed token, a binding or expiry) is still refused.
    AcceptsTamperedState,
    /// The state is `base64url(JSON claims, arguments included) . base64url(HMAC)`:
    /// authentic (anything edited is refused) but readable.
    ReadableState,
    /// The seal binds the method, the name and the principal, not the arguments.
    UnboundArguments,
    /// The seal binds the method, the arguments and the principal, not the name.
    UnboundTool,
    /// The seal binds the name, the arguments and the principal, not the method.
    UnboundMethod,
    /// The seal binds the request, not the principal.
    UnboundPrincipal,
    /// Every instance seals with a built-in key, ignoring the one it is given: an
    /// instance "with another key" still opens the server's states.
    SharedDefaultKey,
    /// Every instance seals with a per-process random key, ignoring the one it is
    /// given: a peer "sharing the key" cannot open the server's states.
    PerProcessKey,
    /// The configured TTL is ignored (600 s), so a state outlives `--ttl`.
    IgnoresTtl,
    /// Each refusal says why in `data.reason` (code and message stay frozen).
    LeaksReason,
    /// A refusal for a binding or principal mismatch is -32600, the others
    /// -32602; the message ("Invalid requestState") says nothing private.
    DistinctErrors,
    /// Asks the form even when the request declared no form elicitation.
    AsksUndeclared,
    /// `tools/list`, `resources/list` and `resources/templates/list` answer
    /// `input_required` (and list once answered).
    InputRequiredOnList,
    /// An answer of the wrong kind, or a form answer that breaks its schema, is
    /// taken as an accept (a missing answer is still asked again).
    AcceptsWrongKind,
    /// No body limit and no state length limit: 1 MiB of `inputResponses` beside
    /// the right answers completes the flow.
    NoSizeCap,
    /// `tools/list` results lack `resultType`.
    NoResultType,
    /// `confirm_action` with a non-string `item` is a JSON-RPC -32602 instead of
    /// a tool result with `isError`.
    ToolErrorsAsProtocolErrors,
    /// The transport answers in plain text: a body that is not JSON gets a 400
    /// `Bad Request` page, a batch a 200 `ok`, and a body declared `text/plain`
    /// is taken as JSON.
    PlainTextTransportErrors,
    /// A request from any `Origin` is served (no DNS-rebinding defence).
    IgnoresOrigin,
    /// A body over the limit gets a 200 with an empty body instead of a 413.
    EmptyOkOnSize,
    /// Every `input_required` result also carries a success `content`.
    ContentWithInputRequired,
    /// On `tools/call` of the confirming tool, a state whose binding does not
    /// match (other arguments) is treated as no state: the question is asked
    /// again instead of the state being rejected. Everything else is refused.
    RepromptsOnOtherArguments,
    /// Each refusal has the frozen code and message, and `data.detail` in
    /// plain words that name no keyword ("does not match this request", "was
    /// issued to someone else", ...): a text that differs by cause.
    DataSaysWhich,
    /// A state of another principal is refused with HTTP 403 (the frozen error
    /// otherwise), and the request binding is checked first: another user
    /// learns whether a guessed argument is right.
    PrincipalRefusedWith403,
    /// A retry with no `requestState` but an answer to the question is
    /// completed (a state given is still checked).
    TakesAnswersWithoutState,
    /// A completed flow's retry is refused when it comes again, but the guard
    /// is keyed by the state and the answers: the same state with another
    /// answer completes again.
    ReplayGuardKeyedByAnswers,
}

/// What the toy does with a final retry that comes again (its state and
/// answers completed a flow before).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Replays {
    /// Runs it again (the default: the spec asks no single use).
    Rerun,
    /// Refuses any retry with a state that completed a flow (single use).
    SingleUse,
    /// Answers it with the result the state first completed with.
    Cached,
}

impl Flaw {
    /// Every flaw, `None` first.
    pub(super) const ALL: [Flaw; 27] = [
        Flaw::None,
        Flaw::AcceptsTamperedState,
        Flaw::ReadableState,
        Flaw::UnboundArguments,
        Flaw::UnboundTool,
        Flaw::UnboundMethod,
        Flaw::UnboundPrincipal,
        Flaw::SharedDefaultKey,
        Flaw::PerProcessKey,
        Flaw::IgnoresTtl,
        Flaw::LeaksReason,
        Flaw::DistinctErrors,
        Flaw::AsksUndeclared,
        Flaw::InputRequiredOnList,
        Flaw::AcceptsWrongKind,
        Flaw::NoSizeCap,
        Flaw::NoResultType,
        Flaw::ToolErrorsAsProtocolErrors,
        Flaw::PlainTextTransportErrors,
        Flaw::IgnoresOrigin,
        Flaw::EmptyOkOnSize,
        Flaw::ContentWithInputRequired,
        Flaw::RepromptsOnOtherArguments,
        Flaw::DataSaysWhich,
        Flaw::PrincipalRefusedWith403,
        Flaw::TakesAnswersWithoutState,
        Flaw::ReplayGuardKeyedByAnswers,
    ];

    /// The ids of the audit checks this flaw must fail (none for the correct
    /// toy, and for a flaw the spec sets no rule against).
    pub(super) fn checks(self) -> &'static [&'static str] {
        match self {
            Flaw::None | Flaw::NoSizeCap => &[],
            Flaw::AcceptsTamperedState => &["integrity"],
            Flaw::ReadableState => &["confidentiality"],
            Flaw::UnboundArguments => &["binding-arguments"],
            // Bob, with alice's state, is asked again on another argument and
            // refused on hers: he can tell (the cross-user oracle).
            Flaw::RepromptsOnOtherArguments => &["binding-arguments", "binding-principal"],
            Flaw::UnboundTool => &["binding-tool"],
            Flaw::UnboundMethod => &["binding-method"],
            Flaw::UnboundPrincipal => &["binding-principal"],
            Flaw::SharedDefaultKey => &["foreign-key"],
            Flaw::PerProcessKey => &["fleet"],
            Flaw::IgnoresTtl => &["expiry"],
            Flaw::DistinctErrors => &["error-uniformity"],
            // The reason in data also tells bob, with alice's state, whether
            // he guessed her argument: "binding" on another, "principal" on hers.
            Flaw::LeaksReason | Flaw::DataSaysWhich => &["binding-principal", "leaks"],
            Flaw::PrincipalRefusedWith403 => &["binding-principal", "error-uniformity"],
            Flaw::AsksUndeclared => &["capability-gate"],
            Flaw::InputRequiredOnList => &["carriers"],
            Flaw::NoResultType | Flaw::ContentWithInputRequired => &["result-type"],
            Flaw::AcceptsWrongKind | Flaw::TakesAnswersWithoutState => &["answers-validated"],
            Flaw::ToolErrorsAsProtocolErrors
            | Flaw::PlainTextTransportErrors
            | Flaw::IgnoresOrigin => &["error-channels"],
            Flaw::EmptyOkOnSize => &["size-caps"],
            Flaw::ReplayGuardKeyedByAnswers => &["replay-after-complete"],
        }
    }

    /// A check that must report this flaw as an `info` note (a hardening
    /// note: the spec sets no rule it breaks), passing.
    pub(super) fn note(self) -> Option<&'static str> {
        match self {
            Flaw::NoSizeCap => Some("size-caps"),
            _ => None,
        }
    }
}

/// One instance's settings.
#[derive(Debug, Clone)]
pub(super) struct Config {
    pub(super) flaw: Flaw,
    /// The state key (32 bytes).
    pub(super) key: [u8; 32],
    /// The state TTL.
    pub(super) ttl: Duration,
    /// The `serverInfo` name `server/discover` gives.
    pub(super) server_name: String,
    /// The name `tools/list` gives the confirming tool (the prompt keeps
    /// `confirm_action`).
    pub(super) tool_name: String,
    /// How long every reply waits before it goes out.
    pub(super) delay: Duration,
    /// The largest request body taken; a larger one gets HTTP 413.
    pub(super) max_body: usize,
    /// What a completed flow's retry gets when it comes again.
    pub(super) replays: Replays,
}

impl Config {
    /// The correct toy or `flaw`, on `key`, with the default TTL (600 s).
    pub(super) fn new(flaw: Flaw, key: [u8; 32]) -> Self {
        Self {
            flaw,
            key,
            ttl: DEFAULT_TTL,
            server_name: "mrtr-audit-toy".into(),
            tool_name: "confirm_action".into(),
            delay: Duration::ZERO,
            max_body: MAX_BODY,
            replays: Replays::Rerun,
        }
    }

    /// With another rule for a completed flow's retry that comes again.
    pub(super) fn replays(mut self, replays: Replays) -> Self {
        self.replays = replays;
        self
    }

    /// With another body limit (a proxy in front with a small one).
    pub(super) fn body_limit(mut self, max_body: usize) -> Self {
        self.max_body = max_body;
        self
    }

    /// With another `serverInfo` name and confirming tool name (for what a
    /// hostile server may put into a report).
    pub(super) fn names(mut self, server: &str, tool: &str) -> Self {
        self.server_name = server.into();
        self.tool_name = tool.into();
        self
    }

    /// Every reply `delay` late (a slow server).
    pub(super) fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// With another TTL.
    pub(super) fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }
}

/// A fresh random 32-byte key.
pub(super) fn random_key() -> [u8; 32] {
    let text = mrtr::seal::generate_key_string();
    let bytes = URL_SAFE_NO_PAD
        .decode(text.as_bytes())
        .expect("a base64url key");
    bytes.try_into().expect("a 32-byte key")
}

/// A running toy on its own runtime; stopped on drop.
pub(super) struct Toy {
    runtime: Option<tokio::runtime::Runtime>,
    pub(super) addr: SocketAddr,
    pub(super) flaw: Flaw,
}

impl Toy {
    /// Starts an instance on 127.0.0.1:0.
    pub(super) fn start(config: Config) -> Toy {
        let flaw = config.flaw;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime");
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("a local address");
        let app = Arc::new(App::new(config));
        let router = axum::Router::new()
            .route("/mcp", post(handle))
            .layer(DefaultBodyLimit::disable())
            .with_state(app);
        runtime.spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        Toy {
            runtime: Some(runtime),
            addr,
            flaw,
        }
    }

    /// The MCP endpoint.
    pub(super) fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }
}

impl Drop for Toy {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// The four instances an audit with every optional input speaks to, all with
/// the same flaw: the server, a peer on its key, one on another key, and one on
/// its key with a 2 s TTL.
pub(super) struct Fleet {
    pub(super) main: Toy,
    pub(super) peer: Toy,
    pub(super) foreign: Toy,
    pub(super) ttl: Toy,
}

/// The TTL of the fleet's short-lived instance.
pub(super) const SHORT_TTL: Duration = Duration::from_secs(2);
/// What `--ttl` says for it: its TTL plus a second (the toy allows no clock skew).
pub(super) const AUDIT_TTL_SECS: u64 = 3;

impl Fleet {
    pub(super) fn start(flaw: Flaw) -> Fleet {
        Self::start_with(flaw, |c| c)
    }

    /// As [`Fleet::start`], each instance's settings changed by `tweak`.
    pub(super) fn start_with(flaw: Flaw, tweak: impl Fn(Config) -> Config) -> Fleet {
        let (key, other) = (random_key(), random_key());
        Fleet {
            main: Toy::start(tweak(Config::new(flaw, key))),
            peer: Toy::start(tweak(Config::new(flaw, key))),
            foreign: Toy::start(tweak(Config::new(flaw, other))),
            ttl: Toy::start(tweak(Config::new(flaw, key).ttl(SHORT_TTL))),
        }
    }

    /// `mrtr audit`'s optional inputs for this fleet (after the URL).
    pub(super) fn audit_args(&self) -> Vec<String> {
        [
            "-H",
            "Authorization: Bearer alice-token",
            "--as-other",
            "Authorization: Bearer bob-token",
            "--peer-url",
            &self.peer.url(),
            "--foreign-url",
            &self.foreign.url(),
            "--ttl-url",
            &self.ttl.url(),
            "--ttl",
            &AUDIT_TTL_SECS.to_string(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }
}

// ---------------------------------------------------------------------------
// The server.
// ---------------------------------------------------------------------------

/// Why a state was refused (private: only [`Flaw::LeaksReason`] and
/// [`Flaw::DistinctErrors`] let it show).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    TooLong,
    Malformed,
    UnknownKey,
    Tag,
    Expired,
    Binding,
    Principal,
}

impl Refusal {
    fn of(r: RejectReason) -> Refusal {
        match r {
            RejectReason::TooLarge => Refusal::TooLong,
            RejectReason::UnknownKey => Refusal::UnknownKey,
            RejectReason::Tag => Refusal::Tag,
            RejectReason::Expired | RejectReason::Deadline | RejectReason::FarFuture => {
                Refusal::Expired
            }
            RejectReason::Binding | RejectReason::Audience => Refusal::Binding,
            RejectReason::Principal => Refusal::Principal,
            _ => Refusal::Malformed,
        }
    }

    /// The reason as [`Flaw::DataSaysWhich`] tells it: plain words, none of
    /// them a keyword a list would look for.
    fn plain_text(self) -> &'static str {
        match self {
            Refusal::Binding => "does not match this request",
            Refusal::Principal => "was issued to someone else",
            Refusal::Expired => "is too old now",
            Refusal::UnknownKey => "comes from somewhere else",
            _ => "cannot be used",
        }
    }

    /// The reason as [`Flaw::LeaksReason`] tells it.
    fn private_text(self) -> &'static str {
        match self {
            Refusal::TooLong => "token longer than 16384 bytes",
            Refusal::Malformed => "malformed token: not canonical base64url",
            Refusal::UnknownKey => "unknown key id",
            Refusal::Tag => "AEAD tag mismatch",
            Refusal::Expired => "expired",
            Refusal::Binding => "binding mismatch (method, name or arguments)",
            Refusal::Principal => "principal mismatch",
        }
    }
}

/// The flows that ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asking {
    ConfirmTool,
    AskName,
    ConfirmPrompt,
}

impl Asking {
    fn key(self) -> &'static str {
        match self {
            Asking::ConfirmTool | Asking::ConfirmPrompt => "confirm",
            Asking::AskName => "name",
        }
    }

    /// The form's one field and its JSON type.
    fn field(self) -> (&'static str, &'static str) {
        match self {
            Asking::ConfirmTool | Asking::ConfirmPrompt => ("confirm", "boolean"),
            Asking::AskName => ("name", "string"),
        }
    }

    fn form(self, item: &str) -> Value {
        let (field, ty) = self.field();
        let message = match self {
            Asking::AskName => "What is your name?".to_owned(),
            _ => format!("Confirm {item}?"),
        };
        json!({"method": "elicitation/create", "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {"type": "object", "properties": {field: {"type": ty}}, "required": [field]}
        }})
    }
}

/// An answer, as read.
enum Answer {
    /// Accepted, with the field's value.
    Accepted(Value),
    Declined,
    /// Missing, or (unless [`Flaw::AcceptsWrongKind`]) not a valid answer.
    Missing,
}

/// The request a state is sealed for or opened on.
struct Carrier<'a> {
    method: &'a str,
    name: &'a str,
    args: &'a Value,
    principal: &'a Principal,
}

/// A reply: the HTTP status and the JSON body (`None`: 202, no body).
type Reply = (StatusCode, Option<Value>);

struct App {
    flaw: Flaw,
    server_name: String,
    tool_name: String,
    delay: Duration,
    max_body: usize,
    /// The key in force (the configured one, unless the flaw replaces it).
    key: [u8; 32],
    ttl: Duration,
    sealer: Sealer,
    replays: Replays,
    /// The flows completed, by state (and answers, under
    /// [`Flaw::ReplayGuardKeyedByAnswers`]), with their results.
    completed: Mutex<HashMap<String, Value>>,
}

impl App {
    fn new(config: Config) -> App {
        let key = match config.flaw {
            Flaw::SharedDefaultKey => BUILT_IN_KEY,
            Flaw::PerProcessKey => random_key(),
            _ => config.key,
        };
        let ttl = match config.flaw {
            Flaw::IgnoresTtl => DEFAULT_TTL,
            _ => config.ttl,
        };
        let max_token = match config.flaw {
            Flaw::NoSizeCap => 64 * 1024 * 1024,
            _ => MAX_STATE,
        };
        let seal_config = SealConfig::default()
            .with_ttl(ttl)
            .expect("a TTL of at least 1 s")
            .with_clock_skew(Duration::ZERO)
            .with_max_token_len(max_token);
        let ring = Keyring::new(Key::from_secret(&key).expect("a 32-byte key"));
        App {
            flaw: config.flaw,
            server_name: config.server_name,
            tool_name: config.tool_name,
            delay: config.delay,
            max_body: config.max_body,
            key,
            ttl,
            sealer: Sealer::new(ring, seal_config),
            replays: config.replays,
            completed: Mutex::new(HashMap::new()),
        }
    }

    // -- the state ----------------------------------------------------------

    /// What the seal binds, less what the flaw leaves out.
    fn binding(&self, c: &Carrier<'_>) -> Binding {
        let anonymous = Principal::anonymous();
        Binding::new(&BindingInput {
            method: if self.flaw == Flaw::UnboundMethod {
                "*"
            } else {
                c.method
            },
            target: if self.flaw == Flaw::UnboundTool {
                "*"
            } else {
                c.name
            },
            arguments: if self.flaw == Flaw::UnboundArguments {
                None
            } else {
                Some(c.args)
            },
            principal: if self.flaw == Flaw::UnboundPrincipal {
                &anonymous
            } else {
                c.principal
            },
            audience: AUDIENCE,
            protocol_version: PROTOCOL,
        })
    }

    fn seal(&self, c: &Carrier<'_>, asked: &str) -> String {
        if self.flaw == Flaw::ReadableState {
            return self.seal_readable(c, asked);
        }
        let claims = Claims::first_round(
            self.binding(c),
            Timestamp::now(),
            self.sealer.config(),
            json!({"asked": asked}),
        );
        self.sealer.seal(&claims).expect("a small state seals")
    }

    /// Opens `token` for `c`: `Ok` when it may be used.
    fn open(&self, c: &Carrier<'_>, token: &str) -> Result<(), Refusal> {
        if self.flaw == Flaw::ReadableState {
            return self.open_readable(c, token);
        }
        let now = Timestamp::now();
        let opened = self
            .sealer
            .open::<Value>(&UntrustedState::new(token), &self.binding(c), now)
            .map_err(|e| Refusal::of(e.reason()))?;
        // This instance's own TTL, from when the state was sealed.
        if now.unix_secs() > opened.issued_at().unix_secs() + self.ttl.as_secs() {
            return Err(Refusal::Expired);
        }
        Ok(())
    }

    /// [`Flaw::ReadableState`]: `base64url(claims) . base64url(HMAC-SHA256(key, first part))`.
    fn seal_readable(&self, c: &Carrier<'_>, asked: &str) -> String {
        let claims = json!({
            "method": c.method,
            "name": c.name,
            "arguments": c.args,
            "principal": c.principal.subject_id(),
            "iat": Timestamp::now().unix_secs(),
            "exp": Timestamp::now().unix_secs() + self.ttl.as_secs(),
            "asked": asked,
        });
        let body = URL_SAFE_NO_PAD.encode(claims.to_string());
        let tag = URL_SAFE_NO_PAD.encode(hmac_sha256(&self.key, body.as_bytes()));
        format!("{body}.{tag}")
    }

    fn open_readable(&self, c: &Carrier<'_>, token: &str) -> Result<(), Refusal> {
        if token.len() > MAX_STATE {
            return Err(Refusal::TooLong);
        }
        let (body, tag) = token.split_once('.').ok_or(Refusal::Malformed)?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag.as_bytes())
            .map_err(|_| Refusal::Malformed)?;
        if tag != hmac_sha256(&self.key, body.as_bytes()) {
            return Err(Refusal::Tag);
        }
        let claims: Value = URL_SAFE_NO_PAD
            .decode(body.as_bytes())
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or(Refusal::Malformed)?;
        let now = Timestamp::now().unix_secs();
        let exp = claims["exp"].as_u64().ok_or(Refusal::Malformed)?;
        let iat = claims["iat"].as_u64().ok_or(Refusal::Malformed)?;
        if now > exp || now > iat + self.ttl.as_secs() {
            return Err(Refusal::Expired);
        }
        if claims["method"] != c.method
            || claims["name"] != c.name
            || canonical_json(&claims["arguments"]) != canonical_json(c.args)
        {
            return Err(Refusal::Binding);
        }
        if claims["principal"].as_str() != c.principal.subject_id() {
            return Err(Refusal::Principal);
        }
        Ok(())
    }

    /// The reply to a refused state.
    fn refusal(&self, id: &Value, why: Refusal) -> Reply {
        let error = match self.flaw {
            Flaw::LeaksReason => json!({
                "code": FROZEN_CODE,
                "message": FROZEN_MESSAGE,
                "data": {"reason": why.private_text()}
            }),
            Flaw::DataSaysWhich => json!({
                "code": FROZEN_CODE,
                "message": FROZEN_MESSAGE,
                "data": {"detail": why.plain_text()}
            }),
            Flaw::DistinctErrors => {
                let code = match why {
                    Refusal::Binding | Refusal::Principal => -32600,
                    _ => -32602,
                };
                json!({"code": code, "message": "Invalid requestState"})
            }
            _ => json!({"code": FROZEN_CODE, "message": FROZEN_MESSAGE}),
        };
        let status = match (self.flaw, why) {
            (Flaw::PrincipalRefusedWith403, Refusal::Principal) => StatusCode::FORBIDDEN,
            _ => StatusCode::OK,
        };
        (
            status,
            Some(json!({"jsonrpc": "2.0", "id": id, "error": error})),
        )
    }

    // -- the methods --------------------------------------------------------

    fn dispatch(&self, headers: &HeaderMap, id: &Value, method: &str, params: &Value) -> Reply {
        const KNOWN: [&str; 8] = [
            "server/discover",
            "tools/list",
            "tools/call",
            "prompts/list",
            "prompts/get",
            "resources/list",
            "resources/templates/list",
            "resources/read",
        ];
        if !KNOWN.contains(&method) {
            return error(StatusCode::NOT_FOUND, id, -32601, "Method not found", None);
        }
        if !(params.is_object() || params.is_null()) {
            return error(
                StatusCode::BAD_REQUEST,
                id,
                -32602,
                "params must be an object",
                None,
            );
        }
        let meta = &params["_meta"];
        let version = meta["io.modelcontextprotocol/protocolVersion"].as_str();
        let caps = &meta["io.modelcontextprotocol/clientCapabilities"];
        let Some(version) = version.filter(|_| caps.is_object()) else {
            return error(
                StatusCode::BAD_REQUEST,
                id,
                -32602,
                "Missing required _meta fields (protocolVersion and clientCapabilities)",
                None,
            );
        };
        if version != PROTOCOL {
            return error(
                StatusCode::BAD_REQUEST,
                id,
                -32022,
                "Unsupported protocol version",
                Some(json!({"supported": [PROTOCOL], "requested": version})),
            );
        }
        if let Err(which) = agree(headers, method, version, params) {
            return error(
                StatusCode::BAD_REQUEST,
                id,
                -32020,
                &format!("Header mismatch: {which} does not match the body"),
                None,
            );
        }
        let principal = principal(headers);
        match method {
            "tools/call" | "prompts/get" | "resources/read" => {
                self.carrier(id, method, params, &principal, caps)
            }
            _ => self.listing(id, method, params, &principal),
        }
    }

    fn listing(&self, id: &Value, method: &str, params: &Value, principal: &Principal) -> Reply {
        let result = match method {
            "server/discover" => json!({
                "resultType": "complete",
                "supportedVersions": [PROTOCOL],
                "capabilities": {"tools": {}, "prompts": {}, "resources": {}},
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": self.server_name, "version": "1.0.0"}}
            }),
            // Asks first, and lists once it has an answer (the audit answers,
            // to learn the tools, and reports the fault).
            "tools/list" | "resources/list" | "resources/templates/list"
                if self.flaw == Flaw::InputRequiredOnList
                    && params.get("inputResponses").is_none() =>
            {
                let empty = json!({});
                let c = Carrier {
                    method,
                    name: "",
                    args: &empty,
                    principal,
                };
                json!({
                    "resultType": "input_required",
                    "inputRequests": {"filter": {"method": "elicitation/create", "params": {
                        "mode": "form", "message": "Which resources?",
                        "requestedSchema": {"type": "object", "properties": {"filter": {"type": "string"}}, "required": ["filter"]}}}},
                    "requestState": self.seal(&c, "filter"),
                })
            }
            "tools/list" => {
                let item = json!({"type": "object", "properties": {"item": {"type": "string"}}, "required": ["item"]});
                let mut r = json!({"tools": [
                    {"name": self.tool_name, "description": "Asks the user to confirm an item, then acts on it.",
                     "inputSchema": item},
                    {"name": "ask_name", "description": "Asks the user's name, then greets them.",
                     "inputSchema": item},
                ]});
                if self.flaw != Flaw::NoResultType {
                    r["resultType"] = json!("complete");
                }
                r
            }
            "prompts/list" => json!({"resultType": "complete", "prompts": [
                {"name": "confirm_action", "description": "Asks the user to confirm an item, then writes a message about it.",
                 "arguments": [{"name": "item", "description": "The item", "required": true}]}
            ]}),
            "resources/list" => json!({"resultType": "complete", "resources": []}),
            _ => json!({"resultType": "complete", "resourceTemplates": []}),
        };
        ok(id, result)
    }

    fn carrier(
        &self,
        id: &Value,
        method: &str,
        params: &Value,
        principal: &Principal,
        caps: &Value,
    ) -> Reply {
        let name = params["name"].as_str().unwrap_or_default();
        let asking = match (method, name) {
            ("tools/call", n) if n == self.tool_name => Asking::ConfirmTool,
            ("tools/call", "ask_name") => Asking::AskName,
            ("prompts/get", "confirm_action") => Asking::ConfirmPrompt,
            ("tools/call", _) => return error(StatusCode::OK, id, -32602, "Unknown tool", None),
            ("prompts/get", _) => {
                return error(StatusCode::OK, id, -32602, "Unknown prompt", None);
            }
            _ => return error(StatusCode::OK, id, -32602, "Unknown resource", None),
        };
        let empty = json!({});
        let args = params.get("arguments").unwrap_or(&empty);
        let Some(item) = args.get("item").and_then(Value::as_str) else {
            if asking == Asking::ConfirmPrompt || self.flaw == Flaw::ToolErrorsAsProtocolErrors {
                return error(StatusCode::OK, id, -32602, "Invalid arguments", None);
            }
            return ok(
                id,
                json!({"resultType": "complete", "isError": true,
                       "content": [{"type": "text", "text": "The argument item must be a string."}]}),
            );
        };
        let c = Carrier {
            method,
            name,
            args,
            principal,
        };
        match params.get("requestState") {
            None | Some(Value::Null) if self.flaw == Flaw::TakesAnswersWithoutState => {}
            None | Some(Value::Null) => return self.ask(id, &c, caps, asking, item),
            Some(Value::String(token)) => match self.open(&c, token) {
                Ok(()) => {}
                Err(Refusal::Tag) if self.flaw == Flaw::AcceptsTamperedState => {}
                Err(Refusal::Binding)
                    if self.flaw == Flaw::RepromptsOnOtherArguments
                        && method == "tools/call"
                        && name == self.tool_name =>
                {
                    return self.ask(id, &c, caps, asking, item);
                }
                Err(why) => return self.refusal(id, why),
            },
            Some(_) => return self.refusal(id, Refusal::Malformed),
        }
        let answer = params
            .get("inputResponses")
            .and_then(|r| r.get(asking.key()));
        let used = params.get("requestState").and_then(Value::as_str).map(|t| {
            if self.flaw == Flaw::ReplayGuardKeyedByAnswers {
                let all = params.get("inputResponses").unwrap_or(&Value::Null);
                format!("{t} {}", canonical_json(all))
            } else {
                t.to_owned()
            }
        });
        let guarded =
            self.flaw == Flaw::ReplayGuardKeyedByAnswers || self.replays != Replays::Rerun;
        if let Some(used) = used.as_ref().filter(|_| guarded)
            && let Some(first) = self.completed.lock().expect("the table").get(used)
        {
            return match self.replays {
                Replays::Cached => ok(id, first.clone()),
                _ => error(StatusCode::OK, id, FROZEN_CODE, FROZEN_MESSAGE, None),
            };
        }
        let result = match self.read_answer(asking, answer) {
            Answer::Accepted(v) => self.done(asking, item, Some(&v)),
            Answer::Declined => self.done(asking, item, None),
            Answer::Missing => return self.ask(id, &c, caps, asking, item),
        };
        if let Some(used) = used.filter(|_| guarded) {
            self.completed
                .lock()
                .expect("the table")
                .insert(used, result.clone());
        }
        ok(id, result)
    }

    /// An `InputRequiredResult` asking `asking`'s question, if the request
    /// declared form elicitation; else -32021.
    fn ask(&self, id: &Value, c: &Carrier<'_>, caps: &Value, asking: Asking, item: &str) -> Reply {
        if !declares_form(caps) && self.flaw != Flaw::AsksUndeclared {
            return error(
                StatusCode::BAD_REQUEST,
                id,
                -32021,
                "Missing required client capability",
                Some(json!({"requiredCapabilities": {"elicitation": {"form": {}}}})),
            );
        }
        let mut result = json!({
            "resultType": "input_required",
            "inputRequests": {asking.key(): asking.form(item)},
            "requestState": self.seal(c, asking.key()),
        });
        if self.flaw == Flaw::ContentWithInputRequired {
            result["content"] = json!([{"type": "text", "text": "done"}]);
        }
        ok(id, result)
    }

    fn read_answer(&self, asking: Asking, answer: Option<&Value>) -> Answer {
        let Some(answer) = answer else {
            return Answer::Missing;
        };
        let (field, ty) = asking.field();
        let valid = match answer.get("action").and_then(Value::as_str) {
            Some("decline" | "cancel") => return Answer::Declined,
            Some("accept") => answer
                .get("content")
                .and_then(|c| c.get(field))
                .filter(|v| match ty {
                    "boolean" => v.is_boolean(),
                    _ => v.is_string(),
                })
                .cloned(),
            _ => None,
        };
        match valid {
            Some(v) => Answer::Accepted(v),
            // Taken as an accept of its own.
            None if self.flaw == Flaw::AcceptsWrongKind => Answer::Accepted(match ty {
                "boolean" => json!(true),
                _ => json!("friend"),
            }),
            None => Answer::Missing,
        }
    }

    /// The final result; `value` is the accepted field (`None`: declined).
    fn done(&self, asking: Asking, item: &str, value: Option<&Value>) -> Value {
        let text =
            |t: String| json!({"resultType": "complete", "content": [{"type": "text", "text": t}]});
        match asking {
            Asking::ConfirmTool => match value.and_then(Value::as_bool) {
                Some(true) => text(format!("done: {item}")),
                _ => text(format!("cancelled: {item}")),
            },
            Asking::AskName => match value.and_then(Value::as_str) {
                Some(name) => text(format!("Hello, {name}!")),
                None => text("No name given.".into()),
            },
            Asking::ConfirmPrompt => {
                let yes = value.and_then(Value::as_bool) == Some(true);
                json!({"resultType": "complete", "description": "A message about the item",
                       "messages": [{"role": "user", "content": {"type": "text",
                           "text": format!("Confirm {item}: {}", if yes { "yes" } else { "no" })}}]})
            }
        }
    }
}

/// Whether `caps` declares form elicitation (`elicitation: {}` or with `form`).
fn declares_form(caps: &Value) -> bool {
    match caps.get("elicitation").and_then(Value::as_object) {
        Some(e) => e.is_empty() || e.contains_key("form"),
        None => false,
    }
}

/// The principal of `Authorization`.
fn principal(headers: &HeaderMap) -> Principal {
    match headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    {
        Some("Bearer alice-token") => Principal::subject("alice"),
        Some("Bearer bob-token") => Principal::subject("bob"),
        _ => Principal::anonymous(),
    }
}

/// The MCP headers against the body: `Err` names the one that is missing or differs.
fn agree(
    headers: &HeaderMap,
    method: &str,
    version: &str,
    params: &Value,
) -> Result<(), &'static str> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if get("mcp-protocol-version") != Some(version) {
        return Err("MCP-Protocol-Version");
    }
    if get("mcp-method") != Some(method) {
        return Err("Mcp-Method");
    }
    let target = match method {
        "tools/call" | "prompts/get" => Some(params["name"].as_str().unwrap_or_default()),
        "resources/read" => Some(params["uri"].as_str().unwrap_or_default()),
        _ => None,
    };
    if let Some(t) = target
        && get("mcp-name") != Some(t)
    {
        return Err("Mcp-Name");
    }
    Ok(())
}

fn ok(id: &Value, result: Value) -> Reply {
    (
        StatusCode::OK,
        Some(json!({"jsonrpc": "2.0", "id": id, "result": result})),
    )
}

fn error(status: StatusCode, id: &Value, code: i64, message: &str, data: Option<Value>) -> Reply {
    let mut e = Map::new();
    e.insert("code".into(), code.into());
    e.insert("message".into(), message.into());
    if let Some(d) = data {
        e.insert("data".into(), d);
    }
    (
        status,
        Some(json!({"jsonrpc": "2.0", "id": id, "error": e})),
    )
}

fn hmac_sha256(key: &[u8; 32], message: &[u8]) -> Vec<u8> {
    let mut block = [0u8; 64];
    block[..32].copy_from_slice(key);
    let pad = |b: u8| block.map(|k| k ^ b);
    let mut inner = Sha256::new();
    inner.update(pad(0x36));
    inner.update(message);
    let inner = inner.finalize();
    let mut outer = Sha256::new();
    outer.update(pad(0x5c));
    outer.update(&inner[..]);
    outer.finalize().to_vec()
}

async fn handle(State(app): State<Arc<App>>, headers: HeaderMap, body: Bytes) -> Response {
    if !app.delay.is_zero() {
        tokio::time::sleep(app.delay).await;
    }
    if app.flaw != Flaw::IgnoresOrigin && !allowed_origin(&headers) {
        let (status, body) = error(
            StatusCode::FORBIDDEN,
            &Value::Null,
            -32600,
            "Forbidden: Origin not allowed",
            None,
        );
        return json_response(status, body);
    }
    if app.flaw == Flaw::PlainTextTransportErrors {
        match serde_json::from_slice::<Value>(&body) {
            Err(_) => return (StatusCode::BAD_REQUEST, "Bad Request").into_response(),
            Ok(Value::Array(_)) => return (StatusCode::OK, "ok").into_response(),
            Ok(_) => {}
        }
    } else if !is_json(&headers) {
        let (status, body) = error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            &Value::Null,
            -32600,
            "Unsupported Media Type: the body must be application/json",
            None,
        );
        return json_response(status, body);
    }
    let (status, body) = reply(&app, &headers, &body);
    json_response(status, body)
}

/// Whether the request has no `Origin`, or a loopback one.
fn allowed_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let origin = origin.to_str().unwrap_or_default();
    ["http://127.0.0.1", "http://localhost", "http://[::1]"]
        .iter()
        .any(|o| origin == *o || origin.strip_prefix(o).is_some_and(|r| r.starts_with(':')))
}

/// Whether the request says its body is `application/json`.
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
}

fn json_response(status: StatusCode, body: Option<Value>) -> Response {
    match body {
        Some(v) => (
            status,
            [(header::CONTENT_TYPE, "application/json")],
            v.to_string(),
        )
            .into_response(),
        None => status.into_response(),
    }
}

fn reply(app: &App, headers: &HeaderMap, body: &[u8]) -> Reply {
    if body.len() > app.max_body && app.flaw == Flaw::EmptyOkOnSize {
        return (StatusCode::OK, None);
    }
    if body.len() > app.max_body && app.flaw != Flaw::NoSizeCap {
        return error(
            StatusCode::PAYLOAD_TOO_LARGE,
            &Value::Null,
            -32600,
            "Request body too large",
            None,
        );
    }
    let Ok(message) = serde_json::from_slice::<Value>(body) else {
        return error(
            StatusCode::BAD_REQUEST,
            &Value::Null,
            -32700,
            "Parse error",
            None,
        );
    };
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    let Some(method) = message.get("method").and_then(Value::as_str) else {
        return error(
            StatusCode::BAD_REQUEST,
            &id,
            -32600,
            "Invalid Request",
            None,
        );
    };
    if message.get("id").is_none() {
        // A notification.
        return (StatusCode::ACCEPTED, None);
    }
    app.dispatch(
        headers,
        &id,
        method,
        message.get("params").unwrap_or(&Value::Null),
    )
}
