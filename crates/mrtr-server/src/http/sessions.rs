//! The 2025-era sessions of one endpoint: a bounded table of
//! `Mcp-Session-Id`s, each bound to the principal that opened it, with the
//! event logs its SSE streams are replayed from (`Last-Event-ID`) and the
//! server-to-client requests waiting for the client's answers.
//!
//! Bounds ([`SessionLimits`]): a total and a per-principal cap, where the
//! session idle longest goes first (one with a request or a stream open is not
//! idle, and is never evicted: `initialize` gets 503 when all are busy); an
//! idle lifetime, past which the id is unknown (404); per session, the last
//! [`SESSION_STREAMS_KEPT`] streams' last [`SESSION_REPLAY_EVENTS`] events, and
//! at most [`SESSION_PENDING_MAX`] requests waiting for answers.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use serde_json::Value;
use tokio::sync::{Notify, oneshot};
use tokio::task::AbortHandle;

use super::options::SessionLimits;
use crate::defaults::{SESSION_PENDING_MAX, SESSION_REPLAY_EVENTS, SESSION_STREAMS_KEPT};
use mrtr::metrics::SessionEvent;
use mrtr::seal::Entropy as _;
use mrtr::wire::jsonrpc::RequestId;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The sessions of one endpoint (its `Debug` shows how many, not their ids).
pub(super) struct Sessions {
    table: Mutex<HashMap<String, Arc<HttpSession>>>,
    limits: SessionLimits,
}

/// Why a session could not be opened.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Full;

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("open", &lock(&self.table).len())
            .field("limits", &self.limits)
            .finish()
    }
}

impl Sessions {
    pub(super) fn new(limits: SessionLimits) -> Self {
        Self {
            table: Mutex::new(HashMap::new()),
            limits,
        }
    }

    /// Opens a session for `owner` (its caller key), within the caps: the
    /// expired go first, then, at a cap, the one idle longest.
    pub(super) fn open(
        &self,
        owner: String,
        core: mrtr::legacy::Session,
    ) -> Result<Arc<HttpSession>, Full> {
        let now = Instant::now();
        let mut table = lock(&self.table);
        table.retain(|_, s| {
            let live = !s.expired(now, self.limits);
            if !live {
                s.end();
                mrtr::metrics::session(SessionEvent::Expired);
            }
            live
        });
        let mine = table.values().filter(|s| s.owner == owner).count();
        let room = (mine < self.limits.per_principal
            || evict_idlest(&mut table, Some(&owner)).is_some())
            && (table.len() < self.limits.max || evict_idlest(&mut table, None).is_some());
        if !room {
            mrtr::metrics::session(SessionEvent::Refused);
            return Err(Full);
        }
        let session = Arc::new(HttpSession::new(fresh_id(), owner, core));
        table.insert(session.id.clone(), Arc::clone(&session));
        mrtr::metrics::session(SessionEvent::Opened);
        Ok(session)
    }

    /// The live session `id` when `owner` opened it; `None` for an unknown,
    /// expired or other principal's session alike (the client cannot tell them
    /// apart: each is a 404).
    pub(super) fn get(&self, id: &str, owner: &str) -> Option<Arc<HttpSession>> {
        let now = Instant::now();
        let mut table = lock(&self.table);
        let session = table.get(id)?;
        if session.expired(now, self.limits) {
            if let Some(s) = table.remove(id) {
                s.end();
                mrtr::metrics::session(SessionEvent::Expired);
            }
            return None;
        }
        (session.owner == owner).then(|| Arc::clone(session))
    }

    /// Ends session `id` of `owner` (`DELETE`): its flows are stopped and its
    /// waiting requests fail. Whether there was one.
    pub(super) fn remove(&self, id: &str, owner: &str) -> bool {
        let mut table = lock(&self.table);
        match table.get(id) {
            Some(s) if s.owner == owner => {
                if let Some(s) = table.remove(id) {
                    s.end();
                }
                mrtr::metrics::session(SessionEvent::Closed);
                true
            }
            _ => false,
        }
    }

    /// How many sessions are open.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        lock(&self.table).len()
    }
}

/// Removes the session idle longest (of `owner`'s, when given); `None` when
/// every candidate is busy.
fn evict_idlest(table: &mut HashMap<String, Arc<HttpSession>>, owner: Option<&str>) -> Option<()> {
    let id = table
        .values()
        .filter(|s| owner.is_none_or(|o| s.owner == o) && s.busy.load(Ordering::Acquire) == 0)
        .min_by_key(|s| *lock(&s.last_used))
        .map(|s| s.id.clone())?;
    if let Some(s) = table.remove(&id) {
        s.end();
    }
    mrtr::metrics::session(SessionEvent::Evicted);
    Some(())
}

/// A fresh session id: 192 bits from the operating system's CSPRNG, in hex.
fn fresh_id() -> String {
    let mut bytes = [0u8; 24];
    mrtr::seal::OsEntropy.fill(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A client's answer to a server-to-client request: its `result`, or the code
/// of its `error`.
pub(super) type Answer = Result<Value, i64>;

/// One 2025-era session. Its `Debug` leaves out its id, a secret.
pub(super) struct HttpSession {
    /// `Mcp-Session-Id`: a secret of the client's, never logged.
    pub(super) id: String,
    /// The caller key of the principal that opened it.
    owner: String,
    /// What the core keeps of it.
    pub(super) core: mrtr::legacy::Session,
    /// When it was opened (its life is measured when it ends).
    opened: Instant,
    last_used: Mutex<Instant>,
    /// Requests and streams open on it: while any is, it is not idle.
    busy: AtomicUsize,
    next_request: AtomicU64,
    next_stream: AtomicU64,
    /// The server-to-client requests waiting for the client's answers, by id.
    pending: Mutex<HashMap<RequestId, oneshot::Sender<Answer>>>,
    /// The streams whose events are kept for replay, oldest first.
    streams: Mutex<VecDeque<Arc<EventLog>>>,
    /// The standalone stream's events (stream 0).
    pub(super) standalone: Arc<EventLog>,
    /// Whether a `GET` stream is open (at most one at a time).
    standalone_open: AtomicBool,
    /// The flows running on it, by the id of their request (as JSON text),
    /// stopped when it ends or the client cancels one.
    flows: Mutex<Vec<(String, AbortHandle)>>,
}

impl std::fmt::Debug for HttpSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSession")
            .field("version", &self.core.version())
            .field("busy", &self.busy.load(Ordering::Acquire))
            .finish_non_exhaustive()
    }
}

impl HttpSession {
    fn new(id: String, owner: String, core: mrtr::legacy::Session) -> Self {
        Self {
            id,
            owner,
            core,
            opened: Instant::now(),
            last_used: Mutex::new(Instant::now()),
            busy: AtomicUsize::new(0),
            next_request: AtomicU64::new(0),
            next_stream: AtomicU64::new(1),
            pending: Mutex::new(HashMap::new()),
            streams: Mutex::new(VecDeque::new()),
            standalone: Arc::new(EventLog::new(0)),
            standalone_open: AtomicBool::new(false),
            flows: Mutex::new(Vec::new()),
        }
    }

    fn expired(&self, now: Instant, limits: SessionLimits) -> bool {
        self.busy.load(Ordering::Acquire) == 0
            && now.saturating_duration_since(*lock(&self.last_used)) > limits.idle
    }

    /// Marks the session in use until the guard drops.
    pub(super) fn busy(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::AcqRel);
        *lock(&self.last_used) = Instant::now();
        Busy(Arc::clone(self))
    }

    /// A new stream whose events are kept for replay (the oldest kept goes
    /// past [`SESSION_STREAMS_KEPT`]).
    pub(super) fn new_stream(&self) -> Arc<EventLog> {
        let log = Arc::new(EventLog::new(
            self.next_stream.fetch_add(1, Ordering::Relaxed),
        ));
        let mut streams = lock(&self.streams);
        if streams.len() >= SESSION_STREAMS_KEPT {
            streams.pop_front();
        }
        streams.push_back(Arc::clone(&log));
        log
    }

    /// The kept stream numbered `stream` (0: the standalone one).
    pub(super) fn stream(&self, stream: u64) -> Option<Arc<EventLog>> {
        if stream == 0 {
            return Some(Arc::clone(&self.standalone));
        }
        lock(&self.streams)
            .iter()
            .find(|l| l.stream == stream)
            .cloned()
    }

    /// Claims the standalone stream; `None` while another holds it.
    pub(super) fn claim_standalone(self: &Arc<Self>) -> Option<Standalone> {
        self.standalone_open
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .ok()?;
        Some(Standalone(Arc::clone(self), self.busy()))
    }

    /// Registers a server-to-client request: its id and the receiver of the
    /// client's answer; `None` at [`SESSION_PENDING_MAX`].
    pub(super) fn expect_answer(
        self: &Arc<Self>,
    ) -> Option<(u64, oneshot::Receiver<Answer>, Waiting)> {
        let mut pending = lock(&self.pending);
        if pending.len() >= SESSION_PENDING_MAX {
            return None;
        }
        let id = self.next_request.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        let key = RequestId::Number(id.into());
        pending.insert(key.clone(), tx);
        Some((id, rx, Waiting(Arc::clone(self), key)))
    }

    /// Delivers the client's answer to request `id` (exactly: a string id is
    /// not the number it spells); whether a request was waiting for it.
    pub(super) fn answer(&self, id: &RequestId, answer: Answer) -> bool {
        match lock(&self.pending).remove(id) {
            Some(tx) => tx.send(answer).is_ok(),
            None => false,
        }
    }

    /// Tracks the flow of request `id` (as JSON text), to stop with the
    /// session or when the client cancels it.
    pub(super) fn track(&self, id: String, flow: AbortHandle) {
        let mut flows = lock(&self.flows);
        flows.retain(|(_, f)| !f.is_finished());
        flows.push((id, flow));
    }

    /// Stops the flow of request `id` (`notifications/cancelled`); whether one ran.
    pub(super) fn cancel(&self, id: &str) -> bool {
        let mut flows = lock(&self.flows);
        let before = flows.len();
        flows.retain(|(i, f)| {
            let hit = i == id;
            if hit {
                f.abort();
            }
            !hit
        });
        before != flows.len()
    }

    /// Whether another flow may start: fewer than
    /// [`SESSION_FLOWS_MAX`](crate::defaults::SESSION_FLOWS_MAX) run.
    pub(super) fn may_start_flow(&self) -> bool {
        let mut flows = lock(&self.flows);
        flows.retain(|(_, f)| !f.is_finished());
        flows.len() < crate::defaults::SESSION_FLOWS_MAX
    }

    /// Ends the session (once: it has left the table): its flows stop, its
    /// waiting requests fail, its streams finish; its life is measured.
    fn end(&self) {
        mrtr::metrics::server_session(self.core.version(), "tcp", self.opened.elapsed());
        for (_, f) in lock(&self.flows).drain(..) {
            f.abort();
        }
        lock(&self.pending).clear();
        self.standalone.finish();
        for s in lock(&self.streams).iter() {
            s.finish();
        }
    }
}

/// A session in use (a request, a stream); dropping it makes it idle again
/// when nothing else holds it.
#[derive(Debug)]
pub(super) struct Busy(Arc<HttpSession>);

impl Drop for Busy {
    fn drop(&mut self) {
        *lock(&self.0.last_used) = Instant::now();
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The standalone stream, claimed; dropping it frees it for the next `GET`.
#[derive(Debug)]
pub(super) struct Standalone(
    Arc<HttpSession>,
    #[allow(dead_code)] // why: held for its drop only
    Busy,
);

impl Standalone {
    pub(super) fn session(&self) -> &Arc<HttpSession> {
        &self.0
    }
}

impl Drop for Standalone {
    fn drop(&mut self) {
        self.0.standalone_open.store(false, Ordering::Release);
    }
}

/// A server-to-client request waiting; dropping it (answered, or given up on)
/// forgets it.
#[derive(Debug)]
pub(super) struct Waiting(Arc<HttpSession>, RequestId);

impl Drop for Waiting {
    fn drop(&mut self) {
        lock(&self.0.pending).remove(&self.1);
    }
}

/// The events of one SSE stream, kept for replay: the last
/// [`SESSION_REPLAY_EVENTS`], each numbered in order from 0, and whether more
/// will come.
#[derive(Debug)]
pub(super) struct EventLog {
    /// The stream's number in its session (0: the standalone stream).
    pub(super) stream: u64,
    state: Mutex<LogState>,
    changed: Notify,
}

#[derive(Debug, Default)]
struct LogState {
    events: VecDeque<(u64, Arc<str>)>,
    next: u64,
    finished: bool,
}

impl EventLog {
    fn new(stream: u64) -> Self {
        Self {
            stream,
            state: Mutex::new(LogState::default()),
            changed: Notify::new(),
        }
    }

    /// Appends an event; its number.
    pub(super) fn push(&self, data: impl Into<Arc<str>>) -> u64 {
        let mut s = lock(&self.state);
        let n = s.next;
        s.next += 1;
        if s.events.len() >= SESSION_REPLAY_EVENTS {
            s.events.pop_front();
        }
        s.events.push_back((n, data.into()));
        drop(s);
        self.changed.notify_waiters();
        n
    }

    /// The number of the last event pushed, if any.
    pub(super) fn last(&self) -> Option<u64> {
        lock(&self.state).next.checked_sub(1)
    }

    /// No more events will come.
    pub(super) fn finish(&self) {
        lock(&self.state).finished = true;
        self.changed.notify_waiters();
    }

    /// The first event after number `after` (from the first kept when `None`),
    /// waiting for one; `None` once the log is finished and read to its end.
    pub(super) async fn next_after(&self, after: Option<u64>) -> Option<(u64, Arc<str>)> {
        loop {
            let notified = self.changed.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            {
                let s = lock(&self.state);
                let next = s
                    .events
                    .iter()
                    .find(|(n, _)| after.is_none_or(|a| *n > a))
                    .cloned();
                if next.is_some() {
                    return next;
                }
                if s.finished {
                    return None;
                }
            }
            notified.await;
        }
    }

    /// An SSE event id naming event `n` of this stream: `<stream>-<n>`.
    pub(super) fn event_id(&self, n: u64) -> String {
        format!("{}-{n}", self.stream)
    }
}

/// The stream and event numbers a `Last-Event-ID` names.
pub(super) fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (stream, n) = id.split_once('-')?;
    Some((stream.parse().ok()?, n.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn core() -> mrtr::legacy::Session {
        mrtr::legacy::Session::from_handshake("2025-11-25", Value::Null)
    }

    fn limits(max: usize, per_principal: usize) -> SessionLimits {
        SessionLimits {
            max,
            per_principal,
            idle: Duration::from_secs(60),
        }
    }

    #[test]
    fn ids_are_long_random_and_bound_to_their_owner() {
        let sessions = Sessions::new(limits(8, 8));
        let a = sessions.open("alice".into(), core()).unwrap();
        assert!(
            !format!("{a:?} {sessions:?}").contains(&a.id),
            "the id is a secret"
        );
        let b = sessions.open("alice".into(), core()).unwrap();
        assert_eq!(a.id.len(), 48);
        assert_ne!(a.id, b.id);
        assert!(sessions.get(&a.id, "alice").is_some());
        assert!(sessions.get(&a.id, "mallory").is_none());
        assert!(!sessions.remove(&a.id, "mallory"));
        assert!(sessions.remove(&a.id, "alice"));
        assert!(sessions.get(&a.id, "alice").is_none());
    }

    #[test]
    fn at_a_cap_the_idlest_goes_and_a_busy_one_never() {
        let sessions = Sessions::new(limits(2, 2));
        let first = sessions.open("alice".into(), core()).unwrap();
        let second = sessions.open("alice".into(), core()).unwrap();
        // alice's cap: the idlest of hers (first) goes.
        let _busy = second.busy();
        let third = sessions.open("alice".into(), core()).unwrap();
        assert!(sessions.get(&first.id, "alice").is_none());
        assert_eq!(sessions.len(), 2);
        // Both left are busy: nothing can go, so no session opens.
        let _busy3 = third.busy();
        assert_eq!(sessions.open("bob".into(), core()).unwrap_err(), Full);
    }

    #[test]
    fn an_idle_session_expires_and_a_busy_one_does_not() {
        let sessions = Sessions::new(SessionLimits {
            max: 4,
            per_principal: 4,
            idle: Duration::ZERO,
        });
        let a = sessions.open("alice".into(), core()).unwrap();
        let busy = a.busy();
        std::thread::sleep(Duration::from_millis(2));
        assert!(sessions.get(&a.id, "alice").is_some());
        drop(busy);
        std::thread::sleep(Duration::from_millis(2));
        assert!(sessions.get(&a.id, "alice").is_none());
    }

    #[tokio::test]
    async fn a_log_replays_after_an_id_and_ends_when_finished() {
        let log = EventLog::new(3);
        for i in 0..3 {
            assert_eq!(log.push(format!("e{i}")), i);
        }
        assert_eq!(log.event_id(1), "3-1");
        assert_eq!(parse_event_id("3-1"), Some((3, 1)));
        assert_eq!(parse_event_id("x"), None);
        let (n, data) = log.next_after(Some(1)).await.unwrap();
        assert_eq!((n, &*data), (2, "e2"));
        log.finish();
        assert!(log.next_after(Some(2)).await.is_none());
        // Past the cap the oldest are gone.
        let log = EventLog::new(1);
        for i in 0..(SESSION_REPLAY_EVENTS as u64 + 5) {
            log.push(format!("e{i}"));
        }
        assert_eq!(log.next_after(None).await.unwrap().0, 5);
    }

    #[tokio::test]
    async fn an_answer_reaches_its_request_once_and_a_given_up_one_is_forgotten() {
        let sessions = Sessions::new(limits(4, 4));
        let s = sessions.open("alice".into(), core()).unwrap();
        let (id, rx, waiting) = s.expect_answer().unwrap();
        assert!(s.answer(&RequestId::Number(id.into()), Ok(Value::Bool(true))));
        assert_eq!(rx.await.unwrap(), Ok(Value::Bool(true)));
        assert!(!s.answer(&RequestId::Number(id.into()), Ok(Value::Null)));
        drop(waiting);
        let (id, _rx, waiting) = s.expect_answer().unwrap();
        drop(waiting);
        assert!(!s.answer(&RequestId::Number(id.into()), Ok(Value::Null)));
        let held: Vec<_> = (0..SESSION_PENDING_MAX)
            .map(|_| s.expect_answer().unwrap())
            .collect();
        assert!(s.expect_answer().is_none());
        drop(held);
    }
}
