//! The 2025 era: clients that open with `initialize` (protocol versions
//! 2025-11-25, 2025-06-18 and 2025-03-26), served beside 2026-07-28 clients by
//! the same handlers.
//!
//! The 2026-07-28 revision lets one server serve both eras ("protocol eras"):
//! a request with the modern `_meta` is served statelessly, and `initialize`
//! selects the 2025 semantics for the connection it opens (an HTTP session, the
//! stdio process). [`Service::eras`](crate::Service::eras) says which a service
//! serves ([`Eras`]); its transports route by it.
//!
//! A 2025-era client cannot take an `InputRequiredResult`: it expects the
//! server to *ask* it, with server-to-client requests (`elicitation/create`,
//! `sampling/createMessage`, `roots/list`) while its request is open. The
//! bridge ([`run`]) gives it exactly that from the same handlers: it runs a
//! round, sends each of its asks to the client through the transport's
//! [`ServerRequests`], puts the answers and the sealed `requestState` into the
//! next round's params, and runs the handler again, until it completes. So a
//! handler is written once, and everything a 2026-07-28 flow gets, a 2025 one
//! gets too: the capability gate (from the capabilities of `initialize`), the
//! answers validated (and re-asked) as MRTR answers are, `once` steps run at
//! most once, the engine's round limit, the state sealed and opened (it never
//! leaves the server, so no client can tamper with or replay it). What differs
//! are the bounds of one open request: each ask waits at most the ask timeout,
//! the whole flow at most the flow timeout ([`Bounds`]); a client that answers
//! an ask with an error, or not in time, ends the flow with a retryable tool
//! error on `tools/call` (-32603 elsewhere).
//!
//! The session's other state (the log level of `logging/setLevel`, the
//! resources of `resources/subscribe`, the notifications for its standalone
//! stream) is in its [`Session`], made by
//! [`Service::initialize`](crate::Service::initialize) and used by
//! [`Service::handle_legacy`](crate::Service::handle_legacy).

/// A boxed, `Send` future, as [`ServerRequests`] returns them (the one
/// [`ReplayGuard`](crate::replay::ReplayGuard) returns too).
pub use crate::replay::BoxFuture;
pub use crate::service::era::{
    Bounds, Eras, RequestFailed, ServerRequests, Session, VERSIONS, run,
};
pub use crate::wire::Era;
