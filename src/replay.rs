//! At-most-once guards for side effects, across re-runs and replays of a flow.
//!
//! A sealed `requestState` bounds replay (principal, request, deadline) but
//! cannot make a step single-use: the same client can present the same token
//! twice within its window (MRTR §Server Requirements 5, Warning). A
//! [`ReplayGuard`] is the server-side store that can. Before a
//! [`Round::once`](crate::engine::Round::once) step runs on a round that resumes
//! a flow, the engine sends the guard a [`Claim`] for `(flow id, step)`, and the
//! step runs only when the answer is [`ClaimOutcome::Claimed`].
//!
//! ```text
//!  once(step) ── sealed result in the state? ── yes ──► return it (no claim)
//!                   │ no
//!                   ▼
//!  Claim { flow id, step, issued_at, until = flow deadline + 2 × skew, now, quota key }
//!                   │ ReplayGuard::claim (async)
//!                   ▼
//!  Claimed ──────────► run the step, seal its result
//!  AlreadyClaimed ───► tool error "already carried out", the step does not run
//!  Unavailable ──────► retryable tool error (-32603 off tools/call), the step does not run
//! ```
//!
//! # Failing closed
//!
//! A guard that cannot answer says [`ClaimOutcome::Unavailable`], and the step
//! does **not** run: the engine never runs a step it could not claim. The
//! client gets a retryable error; on `tools/call` a tool error telling the model
//! that retrying may succeed.
//!
//! # Async, and what a timeout costs
//!
//! [`ReplayGuard::claim`] returns a future, so a network store never blocks a
//! runtime worker. [`Round::once_async`](crate::engine::Round::once_async) awaits
//! it. The synchronous [`Round::once`](crate::engine::Round::once) polls it
//! **once** (with a no-op waker) and takes a claim that is still pending as
//! [`ClaimOutcome::Unavailable`]: an in-memory guard answers at once, a network
//! guard such as `mrtr_redis::RedisReplayGuard` needs `once_async`.
//!
//! A claim whose answer never came (a timeout, a pending poll given up, a
//! connection lost after the command was written) may still land in the store
//! later. The step did not run, yet the store now says it was claimed: for that
//! flow, *at most once* has become *zero times*, and every later attempt at the
//! step in the flow is refused as already carried out. That is the price of
//! never running optimistically. The tool errors say what to do then: call the
//! tool again, which starts a new request (a new flow, with a new flow id).
//!
//! # How long a claim is held
//!
//! Until [`Claim::until`]: the flow's deadline plus **twice** the clock skew, on
//! the clock of the instance that claims. Two facts set that bound:
//!
//! - **Any state of the flow, not only the presented one.** A round that presents
//!   a state but does not reach the step (an answer was missing, a question
//!   changed) seals a *sibling*: a state of the same flow, expiring later, without
//!   the step's result. The sibling can be presented after the state the claim
//!   was made with has expired, so a claim held only until that state's expiry
//!   would let the sibling run the step again. Every state of a flow opens only
//!   until the flow's deadline (fixed in round 1) plus skew.
//! - **Any instance within the skew.** A state opens while `now <= deadline +
//!   skew` on the clock of the instance that opens it. Instances whose clocks
//!   differ by up to the tolerated skew (what `SealConfig::clock_skew` is for)
//!   see that moment up to one skew apart: an instance lagging the claimer by `d`
//!   still opens the flow's states `d` seconds after the claimer's `deadline +
//!   skew`. A shared store drops a claim by its own clock, a TTL counted from the
//!   claimer's `now`, so the claimer adds the second skew.
//!
//! The price is memory: a claim lives for up to the flow lifetime plus two skews
//! (1 h 2 min by default) rather than one round's. A guard must not shorten it.
//!
//! # Which guard
//!
//! - [`MemoryReplayGuard`] serves **one process**. It refuses every claim for a
//!   state sealed before it was built (see [`MemoryReplayGuard::new`]), so a
//!   restart never re-runs a step, at the cost of failing the flows that were in
//!   flight across the restart (their users start over). It cannot see claims
//!   made by other instances: behind a load balancer, a replay sent to another
//!   instance runs the step again there. Its memory is bounded by quotas, so
//!   callers who fill it deny `once` steps (fail closed), never repeat them: see
//!   [`MemoryReplayGuard`] for what it can and cannot promise.
//! - A fleet (several instances, or one that must keep in-flight flows across
//!   restarts) needs a shared store: `mrtr_redis::RedisReplayGuard` (crate `mrtr-redis`,
//!   `mrtr serve --replay-store redis://HOST:PORT[/DB]`), or any implementation
//!   of [`ReplayGuard`]. A shared store holds only as well as it keeps its data:
//!   a Redis restarted without persistence, one that evicts keys under memory
//!   pressure (any `maxmemory-policy` but `noeviction`; the Redis guard refuses
//!   claims on such a store unless told otherwise), or a failover to a replica
//!   the claim had not reached yet forgets claims of flows still open, and their
//!   replays run the step again. See `RedisReplayGuard` and the `mrtr` binary's
//!   operations chapter (`mrtr_cli::manual::operations`).
//!
//! Keys: stores see [`Claim::store_key`], a SHA-256 digest of the flow id and the
//! step name, never the token, the flow id or the step name themselves.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::net::IpAddr;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

/// A boxed, `Send` future: what [`ReplayGuard::claim`] returns.
pub use futures_util::future::BoxFuture;
use sha2::{Digest, Sha256};

use crate::defaults;
use crate::seal::Binding;
use crate::time::Timestamp;

/// Domain label of [`Claim::store_key`].
const CLAIM_LABEL: &[u8] = b"mrtr/replay/v1/claim";
/// Domain label of [`PrincipalKey::of`].
const PRINCIPAL_LABEL: &[u8] = b"mrtr/replay/v1/principal";
/// Domain label of [`PrincipalKey::of_peer`].
const PEER_LABEL: &[u8] = b"mrtr/replay/v1/principal-at-peer";

/// A store of claimed `(flow, step)` pairs, consulted before a `once` step runs.
///
/// Object-safe: the engine holds an `Arc<dyn ReplayGuard>`.
///
/// ```
/// use mrtr::replay::{BoxFuture, Claim, ClaimOutcome, ReplayGuard};
///
/// /// A guard that refuses everything (a store that is down).
/// #[derive(Debug)]
/// struct Down;
///
/// impl ReplayGuard for Down {
///     fn claim<'a>(&'a self, _claim: &'a Claim) -> BoxFuture<'a, ClaimOutcome> {
///         Box::pin(async { ClaimOutcome::Unavailable })
///     }
/// }
/// ```
pub trait ReplayGuard: Send + Sync + fmt::Debug {
    /// Claims `claim.step()` of the flow `claim.flow_id()` until `claim.until()`.
    ///
    /// Answers [`ClaimOutcome::Claimed`] the first time, and
    /// [`ClaimOutcome::AlreadyClaimed`] while an earlier claim of the same pair
    /// has not expired. A guard that cannot tell (its store is unreachable, a
    /// limit is reached) answers [`ClaimOutcome::Unavailable`]: never `Claimed`
    /// on a guess.
    fn claim<'a>(&'a self, claim: &'a Claim) -> BoxFuture<'a, ClaimOutcome>;
}

/// A guard's answer to a [`Claim`].
#[must_use = "a step may run only when its claim was granted"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClaimOutcome {
    /// The pair was free and is now claimed: the step may run.
    Claimed,
    /// The pair was claimed before (or the guard cannot rule that out, as for a
    /// state older than a [`MemoryReplayGuard`]): the step must not run, and
    /// retrying the same request will not change that.
    AlreadyClaimed,
    /// The guard could not answer (store unreachable, timed out, full): the step
    /// must not run; the same request may succeed later.
    Unavailable,
}

/// What the engine asks a [`ReplayGuard`] to record: one step of one flow.
#[derive(Clone, PartialEq, Eq)]
pub struct Claim {
    flow_id: [u8; 16],
    step: String,
    issued_at: Timestamp,
    until: Timestamp,
    now: Timestamp,
    principal: PrincipalKey,
}

impl Claim {
    /// A claim of `step` in the flow `flow_id`, presented with a state sealed at
    /// `issued_at`, to be held until `until`, made at `now` by `principal` (the
    /// quota key).
    ///
    /// The engine builds it from the verified state the request presented:
    /// `until` is the flow's deadline plus twice the clock skew, the last moment
    /// (on this instance's clock) at which any instance within the tolerated skew
    /// can still open any state of the flow (see the [module doc](crate::replay)).
    pub fn new(
        flow_id: [u8; 16],
        step: impl Into<String>,
        issued_at: Timestamp,
        until: Timestamp,
        now: Timestamp,
        principal: PrincipalKey,
    ) -> Self {
        Self {
            flow_id,
            step: step.into(),
            issued_at,
            until,
            now,
            principal,
        }
    }

    /// The flow id (random, the same in every round of a flow).
    pub fn flow_id(&self) -> &[u8; 16] {
        &self.flow_id
    }

    /// The step name, as the handler passed it to `once`.
    pub fn step(&self) -> &str {
        &self.step
    }

    /// When the presented state was sealed (its `iat`).
    pub fn issued_at(&self) -> Timestamp {
        self.issued_at
    }

    /// Until when the claim must be held, on the clock [`Claim::now`] was read
    /// from: the flow's deadline plus twice the clock skew.
    ///
    /// Not the presented state's own expiry: a sibling state of the same flow
    /// (sealed by a round that did not reach the step) may open after it, until
    /// the flow's deadline plus skew; and an instance whose clock lags this one's
    /// by up to the skew opens it up to one more skew later in real time. After
    /// `until`, no instance within the tolerated skew opens a state of the flow.
    ///
    /// Timestamps are whole seconds, and the claim must be held through the whole
    /// second `until` names: a store that expires claims by its own clock holds a
    /// claim for `until - now + 1` seconds from when it records it (`now` was
    /// truncated to its second, so up to a second may already have passed).
    pub fn until(&self) -> Timestamp {
        self.until
    }

    /// The time of the request, as passed to the engine.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// A digest of who is claiming, for per-caller quotas: the principal the flow
    /// is bound to ([`PrincipalKey::of`]), or for an anonymous caller whose
    /// address the transport knew, that principal at that address
    /// ([`PrincipalKey::of_peer`]). Never the principal's text or the address.
    pub fn principal_key(&self) -> PrincipalKey {
        self.principal
    }

    /// The key a store files the claim under: SHA-256 over a domain label, the
    /// flow id and the step name (each length-prefixed). Reveals neither.
    pub fn store_key(&self) -> [u8; 32] {
        let mut h = Sha256::new();
        for part in [CLAIM_LABEL, &self.flow_id[..], self.step.as_bytes()] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part);
        }
        h.finalize().into()
    }
}

impl fmt::Debug for Claim {
    // The flow id is a secret of the sealed state: only a prefix is shown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Claim")
            .field("flow_id", &format_args!("{}…", hex(&self.flow_id[..3])))
            .field("step", &self.step)
            .field("issued_at", &self.issued_at)
            .field("until", &self.until)
            .field("now", &self.now)
            .field("principal", &self.principal)
            .finish()
    }
}

/// A fixed-size digest of a principal: what a guard counts quotas by.
///
/// SHA-256 over a domain label and the binding's principal digest, truncated to
/// 128 bits: it identifies a caller without holding their subject, issuer or
/// client id. For an anonymous caller whose network address the transport knew,
/// the engine keys the quota on that address as well ([`PrincipalKey::of_peer`]),
/// since every anonymous caller is the same principal.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PrincipalKey([u8; 16]);

impl PrincipalKey {
    /// The key of the principal `binding` is bound to.
    pub fn of(binding: &Binding) -> Self {
        let mut h = Sha256::new();
        h.update(PRINCIPAL_LABEL);
        h.update(binding.principal_digest());
        let d = h.finalize();
        let mut out = [0u8; 16];
        out.copy_from_slice(&d[..16]);
        Self(out)
    }

    /// The key of the principal `binding` is bound to, calling from the network
    /// address `peer`: what the engine counts an anonymous caller's claims by
    /// ([`Engine::run_from`](crate::engine::Engine::run_from)).
    ///
    /// Addresses are grouped as one party usually holds them: an IPv4 address is
    /// taken whole (an IPv4-mapped IPv6 address counts as its IPv4 address), an
    /// IPv6 address by its /64 prefix (one host, or one home or office network, is
    /// typically given a whole /64, so its other addresses cost nothing to use).
    /// The address is digested like the principal (another domain label), and
    /// never held in clear.
    pub fn of_peer(binding: &Binding, peer: IpAddr) -> Self {
        let mut h = Sha256::new();
        h.update(PEER_LABEL);
        h.update(binding.principal_digest());
        let peer = crate::peer::Peer::of(peer);
        let (tag, bytes) = peer.tagged_bytes();
        h.update([tag]);
        h.update(bytes);
        let d = h.finalize();
        let mut out = [0u8; 16];
        out.copy_from_slice(&d[..16]);
        Self(out)
    }

    /// A key from its bytes (tests, and guards that store it).
    pub const fn from_bytes(bytes: [u8; 16]) -> Self {
        Self(bytes)
    }

    /// The key's bytes.
    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }
}

impl fmt::Debug for PrincipalKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PrincipalKey({}…)", hex(&self.0[..3]))
    }
}

/// Claims with `guard` and takes the answer if it is ready at once: one poll with
/// a no-op waker, a pending claim counting as [`ClaimOutcome::Unavailable`] (the
/// synchronous [`Round::once`](crate::engine::Round::once)).
pub(crate) fn claim_now(guard: &dyn ReplayGuard, claim: &Claim) -> ClaimOutcome {
    let mut fut = guard.claim(claim);
    match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(outcome) => outcome,
        Poll::Pending => {
            tracing::warn!(
                target: "mrtr::replay",
                "claim not answered within one poll: a synchronous `once` needs a guard that \
                 answers at once (use `once_async` with a network guard); refused"
            );
            ClaimOutcome::Unavailable
        }
    }
}

/// An in-process [`ReplayGuard`]: enough for **one** instance, not for a fleet.
///
/// - **Restarts**: claims for a state sealed before the guard's start are refused
///   ([`ClaimOutcome::AlreadyClaimed`]: the guard cannot rule out that the step ran
///   in the process before it), so a restart never re-runs a step. Flows in flight
///   across a restart fail at their next `once` step, and their users start over.
/// - **Lifetime**: a claim is held until [`Claim::until`] (the flow's deadline
///   plus twice the skew, read against the request's `now`), then dropped. Expiry
///   is kept in order, so each claim drops what expired without scanning the rest.
/// - **Bounds**: at most [`defaults::REPLAY_MAX_CLAIMS`] (1 000 000) live claims in
///   all and [`defaults::REPLAY_MAX_CLAIMS_PER_PRINCIPAL`] (10 000) per quota key
///   ([`Claim::principal_key`]: the principal, or for an anonymous caller the
///   principal at its peer address, an IPv4 address or an IPv6 /64). Beyond a
///   bound a claim is [`ClaimOutcome::Unavailable`] (fail closed; it may succeed
///   once claims expire). A claim costs about 80 to 110 bytes, so the default
///   global cap is about 105 MiB when full.
///
/// What it promises, in one process: a `once` step runs at most once per flow,
/// whatever a client replays, for as long as any state of the flow opens; a full
/// guard (or a caller's full quota) refuses steps, it never runs one twice; one
/// principal, or one anonymous peer address, cannot take more than its quota, so
/// it takes a hundred of them at the defaults to deny everyone else.
///
/// What it cannot promise:
///
/// - **Fleets.** Every instance behind a load balancer has its own memory: a
///   replay sent to another instance is not caught there. Use a shared store.
/// - **Availability under a distributed fill.** Enough principals (accounts you
///   hand out), or anonymous callers with enough addresses (a botnet, a large
///   IPv6 allocation: one /48 is 65 536 /64s), can together reach the global cap
///   and deny every `once` step until their claims expire (up to the flow lifetime
///   plus two skews). Authenticate callers, and size the caps
///   ([`MemoryReplayGuard::with_max_claims`]).
/// - **Peers behind a proxy.** The peer address is the TCP peer: behind a reverse
///   proxy every anonymous caller has the proxy's address and shares one quota.
///   Authenticate at the proxy (`--principal-header`) instead.
/// - **A clock stepped back across a restart.** Restart refusal compares the
///   state's `iat` with the guard's start: states sealed in the last seconds
///   before a restart whose clock went back by as much pass it.
///
/// ```
/// use mrtr::replay::{Claim, ClaimOutcome, MemoryReplayGuard, PrincipalKey};
/// use mrtr::Timestamp;
///
/// let started = Timestamp::from_unix_secs(1_800_000_000);
/// let guard = MemoryReplayGuard::new(started);
/// let claim = |issued_at: Timestamp| Claim::new([7; 16], "deploy", issued_at,
///     started.add_secs(660), started.add_secs(5), PrincipalKey::from_bytes([1; 16]));
/// assert_eq!(guard.claim_sync(&claim(started.add_secs(1))), ClaimOutcome::Claimed);
/// assert_eq!(guard.claim_sync(&claim(started.add_secs(1))), ClaimOutcome::AlreadyClaimed);
/// // A state sealed before the guard started: it may have been claimed by the
/// // process before this one.
/// let older = Claim::new([8; 16], "deploy", started.sub_secs(1),
///     started.add_secs(600), started.add_secs(5), PrincipalKey::from_bytes([1; 16]));
/// assert_eq!(guard.claim_sync(&older), ClaimOutcome::AlreadyClaimed);
/// ```
#[derive(Debug)]
pub struct MemoryReplayGuard {
    started_at: Timestamp,
    max_claims: usize,
    max_per_principal: usize,
    store: Mutex<Store>,
}

/// A live claim's key in memory: the first 128 bits of [`Claim::store_key`].
///
/// Half the size of the whole digest, and as good at telling claims apart: flow
/// ids are 128 random bits no client sees (they travel sealed), so nobody can aim
/// at a collision, and a chance one among a million claims has odds of about
/// 2^-89.
type ClaimId = [u8; 16];

/// The live claims, their expiry order and the count per principal.
///
/// About 80 to 110 bytes per claim in all (measured as RSS growth: 100 000 claims
/// took 7.6 MiB, 1 000 000 took 101 MiB; the hash table's growth by powers of two
/// makes the figure step). With the whole 32-byte digest it was 130 to 160.
#[derive(Debug, Default)]
struct Store {
    /// Each live claim's id, with the principal (quota key) that holds it.
    live: HashMap<ClaimId, PrincipalKey>,
    /// `(until, id)` of every live claim: the first entries expire first.
    by_expiry: BTreeSet<(Timestamp, ClaimId)>,
    per_principal: HashMap<PrincipalKey, usize>,
}

fn claim_id(claim: &Claim) -> ClaimId {
    let mut id = [0u8; 16];
    id.copy_from_slice(&claim.store_key()[..16]);
    id
}

impl Store {
    /// Drops the claims that expired before `now`, earliest first; stops at the
    /// first one still live.
    fn expire(&mut self, now: Timestamp) {
        while let Some(&(until, key)) = self.by_expiry.first() {
            if until >= now {
                break;
            }
            self.by_expiry.pop_first();
            if let Some(principal) = self.live.remove(&key) {
                self.release(principal);
            }
        }
    }

    fn release(&mut self, principal: PrincipalKey) {
        if let Some(n) = self.per_principal.get_mut(&principal) {
            *n -= 1;
            if *n == 0 {
                self.per_principal.remove(&principal);
            }
        }
    }
}

impl MemoryReplayGuard {
    /// A guard for a process that started at `started_at` (read it from the clock
    /// when the process starts: the core has none). Claims for a state sealed
    /// before `started_at` are refused.
    ///
    /// Timestamps are whole seconds, so a state sealed by the previous process in
    /// the very second `started_at` names would be taken as this process's own:
    /// start serving on a fresh second (as `mrtr serve` does) and pass that second.
    ///
    /// Bounds: [`defaults::REPLAY_MAX_CLAIMS`] live claims,
    /// [`defaults::REPLAY_MAX_CLAIMS_PER_PRINCIPAL`] per quota key.
    pub fn new(started_at: Timestamp) -> Self {
        Self {
            started_at,
            max_claims: defaults::REPLAY_MAX_CLAIMS,
            max_per_principal: defaults::REPLAY_MAX_CLAIMS_PER_PRINCIPAL,
            store: Mutex::new(Store::default()),
        }
    }

    /// The most live claims held at once (default 1 000 000,
    /// [`defaults::REPLAY_MAX_CLAIMS`]; about 105 MiB when full); at least 1.
    /// Keep it a large multiple of [`MemoryReplayGuard::with_max_claims_per_principal`]:
    /// the ratio is how many callers it takes to fill the guard for everyone.
    #[must_use]
    pub fn with_max_claims(mut self, n: usize) -> Self {
        self.max_claims = n.max(1);
        self
    }

    /// The most live claims of one quota key (default 10 000,
    /// [`defaults::REPLAY_MAX_CLAIMS_PER_PRINCIPAL`]); at least 1. The key is the
    /// principal; every anonymous caller is one principal, so for them the engine
    /// keys the quota on the peer address too, when the transport passed one
    /// ([`Engine::run_from`](crate::engine::Engine::run_from)). Without a peer
    /// (stdio, in process) the anonymous callers share one quota.
    #[must_use]
    pub fn with_max_claims_per_principal(mut self, n: usize) -> Self {
        self.max_per_principal = n.max(1);
        self
    }

    /// The start time claims are checked against.
    pub fn started_at(&self) -> Timestamp {
        self.started_at
    }

    /// How many claims are held (expired ones included until the next claim drops them).
    pub fn claims_held(&self) -> usize {
        self.lock().live.len()
    }

    fn lock(&self) -> MutexGuard<'_, Store> {
        // No user code runs under the lock; a poisoned lock holds consistent data.
        self.store.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// [`ReplayGuard::claim`] without the future: the answer, at once.
    pub fn claim_sync(&self, claim: &Claim) -> ClaimOutcome {
        if claim.issued_at < self.started_at {
            tracing::info!(
                target: "mrtr::replay",
                issued_at = claim.issued_at.unix_secs(),
                started_at = self.started_at.unix_secs(),
                "claim refused: the state was sealed before this guard started, so the step \
                 may have run in an earlier process"
            );
            return ClaimOutcome::AlreadyClaimed;
        }
        let key = claim_id(claim);
        let now = claim.now;
        let mut store = self.lock();
        store.expire(now);
        if store.live.contains_key(&key) {
            return ClaimOutcome::AlreadyClaimed;
        }
        if store.live.len() >= self.max_claims {
            tracing::warn!(
                target: "mrtr::replay",
                max_claims = self.max_claims,
                "claim refused: the in-memory replay guard is full of live claims"
            );
            return ClaimOutcome::Unavailable;
        }
        let held_by_principal = store
            .per_principal
            .get(&claim.principal)
            .copied()
            .unwrap_or(0);
        if held_by_principal >= self.max_per_principal {
            tracing::warn!(
                target: "mrtr::replay",
                max_per_principal = self.max_per_principal,
                "claim refused: this caller (its principal, or for an anonymous caller its \
                 peer address) holds the most live claims allowed"
            );
            return ClaimOutcome::Unavailable;
        }
        // A state that opened has not expired, so `until >= now`; hold at least until now.
        let until = claim.until.max(now);
        store.live.insert(key, claim.principal);
        store.by_expiry.insert((until, key));
        *store.per_principal.entry(claim.principal).or_insert(0) += 1;
        ClaimOutcome::Claimed
    }
}

impl ReplayGuard for MemoryReplayGuard {
    fn claim<'a>(&'a self, claim: &'a Claim) -> BoxFuture<'a, ClaimOutcome> {
        Box::pin(std::future::ready(self.claim_sync(claim)))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests;
