//! The accept loop of [`serve_with`]: HTTP/1.1 connections under a cap, each with
//! a header-read timeout and a keep-alive idle timeout.
//!
//! `axum::serve` accepts every connection and keeps it as long as the client
//! likes; on the open internet that runs the process out of file descriptors and
//! memory. Here one peer (an IPv4 address, or an IPv6 /64) may hold at most
//! [`ServeOptions::with_max_connections_per_peer`] of the connections, so one client
//! cannot take every slot with requests that never finish, and each request
//! carries its peer's address as axum's [`ConnectInfo`] in its extensions. Here every connection has a tracker that knows whether a request is in
//! progress and, if not, since when it has waited: for the first byte of its next
//! request (the idle timeout), or for the rest of a head it started to send (the
//! header-read timeout). hyper's own `header_read_timeout` is not used: it starts
//! when hyper begins waiting for a head, idle time included, so it cannot tell
//! the two apart.
//!
//! ```text
//!  accept ─► peer under its cap? ──no──► evict one of its idle connections,
//!               │ yes                     or close the new one if it has none
//!               ▼
//!           slot free? ──yes──────────────────────────────────► spawn connection
//!               │ no                                              │
//!               ▼                                                 ▼
//!   close the connection that has waited      ┌─ no request in progress: close at
//!   longest without a request in progress     │  idle (no byte yet) or header (head
//!   (none: wait for a slot; later connections │  started) timeout, or when evicted
//!   wait in the listen backlog)               └─ request in progress: no timer here
//! ```

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, Response};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

// Whose connection it is, for `max_connections_per_peer`: the crate's one rule
// for a peer (an IPv4 address, or an IPv6 /64).
use mrtr::__private::Peer as PeerKey;

/// The connection-level limits of [`serve_with`]: what `axum::serve` leaves to
/// the operating system. Per-request limits are in
/// [`HttpOptions`](super::HttpOptions).
///
/// ```
/// use std::time::Duration;
/// use mrtr_server::http::ServeOptions;
/// let options = ServeOptions::default()
///     .with_header_read_timeout(Duration::from_secs(5))
///     .with_idle_timeout(Duration::from_secs(15))
///     .with_max_connections(256);
/// # drop(options);
/// ```
#[derive(Debug, Clone)]
pub struct ServeOptions {
    header_read_timeout: Duration,
    idle_timeout: Duration,
    max_connections: usize,
    max_connections_per_peer: usize,
    reserve_descriptors: u64,
    shutdown_grace: Duration,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            header_read_timeout: crate::defaults::HEADER_READ_TIMEOUT,
            idle_timeout: crate::defaults::IDLE_TIMEOUT,
            max_connections: crate::defaults::MAX_CONNECTIONS,
            max_connections_per_peer: crate::defaults::MAX_CONNECTIONS_PER_PEER,
            reserve_descriptors: 0,
            shutdown_grace: crate::defaults::SHUTDOWN_GRACE,
        }
    }
}

impl ServeOptions {
    /// How long a client may take to send a request head, counted from its first
    /// byte (from the accept, for a connection's first request); then the
    /// connection is closed without a response. Default:
    /// [`crate::defaults::HEADER_READ_TIMEOUT`] (10 s).
    #[must_use]
    pub fn with_header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// How long a kept-alive connection may wait for the first byte of its next
    /// request; then it is closed. Default: [`crate::defaults::IDLE_TIMEOUT`] (30 s).
    #[must_use]
    pub fn with_idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// The most connections open at once (at least 1). At the cap, the connection
    /// that has waited longest without a request in progress is closed to make
    /// room; if every connection has a request in progress, new connections wait
    /// in the listen backlog. On Linux the cap is lowered at start-up, with a
    /// warning, to the open-file limit less [`crate::defaults::FD_RESERVE`], so accepting
    /// never fails with `EMFILE`. Default: [`crate::defaults::MAX_CONNECTIONS`] (512).
    #[must_use]
    pub fn with_max_connections(mut self, n: usize) -> Self {
        self.max_connections = n.max(1);
        self
    }

    /// The most connections one peer may hold open at once (at least 1): a peer
    /// is an IPv4 address, or an IPv6 /64 (an IPv4-mapped IPv6 address counts as
    /// its IPv4 address). A peer at its cap that connects again has its own
    /// longest-waiting idle connection closed to make room; if none of its
    /// connections is idle (each has a request in progress, such as a body that
    /// never arrives), the new connection is closed at once. Behind a reverse
    /// proxy every connection comes from the proxy: set this to the connection
    /// cap there. Default: [`crate::defaults::MAX_CONNECTIONS_PER_PEER`] (128).
    #[must_use]
    pub fn with_max_connections_per_peer(mut self, n: usize) -> Self {
        self.max_connections_per_peer = n.max(1);
        self
    }

    /// File descriptors other listeners of this process may hold, left out of
    /// this one's share of the open-file limit (on top of
    /// [`crate::defaults::FD_RESERVE`]): `mrtr serve` reserves the metrics listener's
    /// connection cap here, so that listener's connections cannot starve this
    /// one of descriptors. Default: 0.
    #[must_use]
    pub fn with_reserve_descriptors(mut self, n: u64) -> Self {
        self.reserve_descriptors = n;
        self
    }

    /// How long in-flight requests may take to finish once shutdown begins; then
    /// the remaining connections are closed. Default: [`crate::defaults::SHUTDOWN_GRACE`] (10 s).
    #[must_use]
    pub fn with_shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }
}

/// Serves `app` (HTTP/1.1) on `listener` under `options` until `shutdown`
/// resolves; then stops accepting, closes idle connections, and lets in-flight
/// requests finish for at most the shutdown grace.
///
/// # Errors
/// None today: accept errors are logged and retried (a full file table is waited
/// out, not fatal). The `Result` is kept for a listener that can fail for good.
pub async fn serve_with(
    listener: TcpListener,
    app: Router,
    options: ServeOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let cap = connection_cap(
        options.max_connections,
        open_files_limit().map(|n| n.saturating_sub(options.reserve_descriptors)),
    );
    let per_peer = options.max_connections_per_peer.max(1);
    let slots = Arc::new(Semaphore::new(cap));
    let registry = Arc::new(Registry::default());
    let (stop_tx, stop_rx) = watch::channel(false);
    let limits = Limits {
        header: options.header_read_timeout,
        idle: options.idle_timeout,
    };
    let mut connections = JoinSet::new();
    let mut shutdown = pin!(shutdown);
    loop {
        // Reap finished connections so the set holds only live ones.
        while connections.try_join_next().is_some() {}
        let accepted = tokio::select! {
            biased;
            () = &mut shutdown => break,
            r = listener.accept() => r,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) if is_per_connection(&e) => continue,
            Err(e) => {
                // EMFILE/ENFILE (another part of the process, or the system, is out
                // of descriptors) or ENOMEM: back off instead of spinning.
                tracing::warn!(error = %e, "accept failed; retrying in 100 ms");
                tokio::select! {
                    biased;
                    () = &mut shutdown => break,
                    () = tokio::time::sleep(ACCEPT_BACKOFF) => continue,
                }
            }
        };
        let peer_key = PeerKey::of(peer.ip());
        if !registry.admit(peer_key, per_peer) {
            // Every connection of this peer has a request in progress: refused
            // before it takes a slot (closing the socket is the answer).
            tracing::debug!("connection refused: its peer holds its share of the connections");
            drop(stream);
            continue;
        }
        let permit = tokio::select! {
            biased;
            () = &mut shutdown => break,
            p = make_room(&slots, &registry) => p,
        };
        let tracker = registry.register(peer);
        connections.spawn(connection(
            stream,
            permit,
            tracker,
            Arc::clone(&registry),
            app.clone(),
            limits,
            stop_rx.clone(),
        ));
    }
    drop(listener);
    // Idle connections close at once; busy ones after their current response.
    let _ = stop_tx.send(true);
    let drain = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(options.shutdown_grace, drain)
        .await
        .is_err()
    {
        tracing::warn!(
            grace_secs = options.shutdown_grace.as_secs(),
            "connections still open after the grace period; closing them"
        );
        connections.shutdown().await;
    }
    Ok(())
}

/// How long the accept loop waits after an accept error that is not about one
/// connection (a full file table, no memory).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// How long the accept loop waits for an evicted connection to close before it
/// looks for another one to evict.
const EVICTION_WAIT: Duration = Duration::from_millis(50);

/// Errors of `accept` that concern only the connection being accepted.
fn is_per_connection(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
    )
}

/// The connection cap: `wanted`, lowered to the open-file limit less
/// [`crate::defaults::FD_RESERVE`] when that is known and smaller (at least 1).
fn connection_cap(wanted: usize, open_files: Option<u64>) -> usize {
    let wanted = wanted.max(1);
    let Some(limit) = open_files else {
        return wanted;
    };
    let fit = usize::try_from(limit.saturating_sub(crate::defaults::FD_RESERVE))
        .unwrap_or(usize::MAX)
        .max(1);
    if fit < wanted {
        tracing::warn!(
            max_connections = wanted,
            open_files_limit = limit,
            lowered_to = fit,
            "the connection cap does not fit the open-file limit (ulimit -n); lowered"
        );
        return fit;
    }
    wanted
}

/// The soft open-file limit of this process, read from `/proc/self/limits`
/// (Linux; `None` elsewhere, or when it is unlimited or cannot be read).
fn open_files_limit() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/limits").ok()?;
    parse_open_files_limit(&text)
}

fn parse_open_files_limit(limits: &str) -> Option<u64> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.trim_start_matches("Max open files")
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// A slot for one more connection: a free one, or one made by evicting the
/// connection that has waited longest without a request in progress. Waits while
/// every connection has a request in progress.
async fn make_room(slots: &Arc<Semaphore>, registry: &Registry) -> OwnedSemaphorePermit {
    loop {
        if let Ok(permit) = Arc::clone(slots).try_acquire_owned() {
            return permit;
        }
        registry.evict_longest_waiting();
        if let Ok(Ok(permit)) =
            tokio::time::timeout(EVICTION_WAIT, Arc::clone(slots).acquire_owned()).await
        {
            return permit;
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Limits {
    header: Duration,
    idle: Duration,
}

/// The open connections' trackers, for eviction, and how many each peer holds.
#[derive(Debug, Default)]
struct Registry {
    next_id: AtomicU64,
    live: Mutex<Live>,
}

#[derive(Debug, Default)]
struct Live {
    trackers: HashMap<u64, Arc<Tracker>>,
    per_peer: HashMap<PeerKey, usize>,
}

impl Registry {
    fn register(&self, addr: SocketAddr) -> Arc<Tracker> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let tracker = Arc::new(Tracker::new(id, addr, Instant::now()));
        let peer = tracker.peer;
        let mut live = lock(&self.live);
        live.trackers.insert(id, Arc::clone(&tracker));
        *live.per_peer.entry(peer).or_default() += 1;
        tracker
    }

    fn remove(&self, id: u64) {
        let mut live = lock(&self.live);
        if let Some(tracker) = live.trackers.remove(&id)
            && let Some(n) = live.per_peer.get_mut(&tracker.peer)
        {
            *n -= 1;
            if *n == 0 {
                live.per_peer.remove(&tracker.peer);
            }
        }
    }

    /// Whether `peer` may open one more connection under `cap`: yes below it;
    /// at it, yes if one of its own idle connections could be asked to close
    /// (that one goes, so the peer stays at its cap once it has), else no.
    fn admit(&self, peer: PeerKey, cap: usize) -> bool {
        let live = lock(&self.live);
        if live.per_peer.get(&peer).copied().unwrap_or(0) < cap {
            return true;
        }
        longest_waiting(live.trackers.values().filter(|t| t.peer == peer))
            .map(|t| t.evict())
            .is_some()
    }

    /// Asks the connection that has waited longest without a request in
    /// progress (and is not already asked) to close.
    fn evict_longest_waiting(&self) {
        let live = lock(&self.live);
        if let Some(tracker) = longest_waiting(live.trackers.values()) {
            tracker.evict();
        }
    }
}

/// Of `trackers`, the one that has waited longest without a request in progress
/// and is not already asked to close.
fn longest_waiting<'a>(trackers: impl Iterator<Item = &'a Arc<Tracker>>) -> Option<&'a Tracker> {
    trackers
        .filter_map(|t| t.waiting_since().map(|since| (since, t)))
        .min_by_key(|(since, _)| *since)
        .map(|(_, t)| &**t)
}

/// Locks a mutex whose data stays consistent even if a holder panicked (every
/// critical section here is a few assignments).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What one connection is doing, as far as its timers care.
#[derive(Debug)]
struct Tracker {
    id: u64,
    /// The peer's address, put into every request's extensions as [`ConnectInfo`].
    addr: SocketAddr,
    peer: PeerKey,
    state: Mutex<ConnState>,
    /// Woken when a request starts or ends, a head starts, or eviction is asked.
    changed: Notify,
}

#[derive(Debug)]
struct ConnState {
    /// Requests whose response has not been sent in full (HTTP/1: 0 or 1).
    in_progress: u32,
    /// Since when no request has been in progress: the accept, or the end of the
    /// last response.
    waiting_since: Instant,
    /// When the first byte of the next head arrived, if it has.
    head_started: Option<Instant>,
    /// No request has started on this connection yet.
    fresh: bool,
    /// The accept loop asked this connection to make room.
    evicted: bool,
}

/// The tracker reads no clock: its callers pass `now`, so the timing rules are
/// tested without waiting.
impl Tracker {
    fn new(id: u64, addr: SocketAddr, now: Instant) -> Self {
        Self {
            id,
            addr,
            peer: PeerKey::of(addr.ip()),
            state: Mutex::new(ConnState {
                in_progress: 0,
                waiting_since: now,
                head_started: None,
                fresh: true,
                evicted: false,
            }),
            changed: Notify::new(),
        }
    }

    /// Bytes arrived: when no request is in progress, they begin the next head.
    fn on_read(&self, now: Instant) {
        let mut s = lock(&self.state);
        if s.in_progress == 0 && s.head_started.is_none() {
            s.head_started = Some(now);
            drop(s);
            self.changed.notify_one();
        }
    }

    fn request_started(&self) {
        let mut s = lock(&self.state);
        s.in_progress += 1;
        s.fresh = false;
        s.head_started = None;
    }

    fn request_ended(&self, now: Instant) {
        let mut s = lock(&self.state);
        s.in_progress = s.in_progress.saturating_sub(1);
        if s.in_progress == 0 {
            s.waiting_since = now;
            s.head_started = None;
        }
        drop(s);
        self.changed.notify_one();
    }

    /// When the connection must close unless a request starts first; `None`
    /// while a request is in progress.
    fn deadline(&self, limits: Limits) -> Option<Instant> {
        let s = lock(&self.state);
        if s.in_progress > 0 {
            return None;
        }
        Some(match s.head_started {
            Some(t) => t + limits.header,
            // A new connection owes its first head within the header timeout.
            None if s.fresh => s.waiting_since + limits.header,
            None => s.waiting_since + limits.idle,
        })
    }

    /// Since when the connection has waited without a request in progress
    /// (`None` while one is, or once it was asked to close).
    fn waiting_since(&self) -> Option<Instant> {
        let s = lock(&self.state);
        (s.in_progress == 0 && !s.evicted).then(|| s.head_started.unwrap_or(s.waiting_since))
    }

    fn evict(&self) {
        lock(&self.state).evicted = true;
        self.changed.notify_one();
    }

    /// Whether the connection can be closed now without cutting a request short.
    fn idle(&self) -> bool {
        lock(&self.state).in_progress == 0
    }

    fn evicted_while_idle(&self) -> bool {
        let s = lock(&self.state);
        s.evicted && s.in_progress == 0
    }
}

/// Runs one connection until it ends, times out, is evicted, or shutdown closes it.
async fn connection(
    stream: TcpStream,
    _slot: OwnedSemaphorePermit,
    tracker: Arc<Tracker>,
    registry: Arc<Registry>,
    app: Router,
    limits: Limits,
    mut stop: watch::Receiver<bool>,
) {
    struct Deregister(Arc<Registry>, u64);
    impl Drop for Deregister {
        fn drop(&mut self) {
            self.0.remove(self.1);
        }
    }
    let _registered = Deregister(registry, tracker.id);
    // Responses are written whole; waiting for more to coalesce only adds latency.
    let _ = stream.set_nodelay(true);
    let io = TokioIo::new(TrackedIo {
        inner: stream,
        tracker: Arc::clone(&tracker),
    });
    let service = TrackedService {
        inner: TowerToHyperService::new(app),
        tracker: Arc::clone(&tracker),
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .keep_alive(true)
        .max_buf_size(crate::defaults::HTTP1_MAX_BUF);
    let mut conn = pin!(builder.serve_connection(io, service));
    let mut stopping = *stop.borrow();
    loop {
        if tracker.evicted_while_idle() || (stopping && tracker.idle()) {
            return; // dropping the connection closes the socket
        }
        let deadline = tracker.deadline(limits);
        let expiry = async {
            match deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            r = conn.as_mut() => {
                if let Err(e) = r {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                return;
            }
            () = tracker.changed.notified() => {}
            () = expiry => {
                // Re-read: a request may have started since the deadline was taken.
                if tracker.deadline(limits).is_some_and(|at| at <= Instant::now()) {
                    tracing::debug!("connection closed: header or idle timeout");
                    return;
                }
            }
            r = stop.changed(), if !stopping => {
                stopping = true;
                if r.is_ok() {
                    // No keep-alive after the response in progress, if any.
                    conn.as_mut().graceful_shutdown();
                }
            }
        }
    }
}

/// The socket, noting when bytes arrive so the tracker knows a head has begun.
#[derive(Debug)]
struct TrackedIo {
    inner: TcpStream,
    tracker: Arc<Tracker>,
}

impl AsyncRead for TrackedIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.tracker.on_read(Instant::now());
        }
        r
    }
}

impl AsyncWrite for TrackedIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The application as a hyper service, marking each request in progress from
/// the moment its head is read until its response body has been handed over
/// in full (or dropped).
#[derive(Debug, Clone)]
struct TrackedService {
    inner: TowerToHyperService<Router>,
    tracker: Arc<Tracker>,
}

/// Ends the tracker's request when dropped, however the request ends.
#[derive(Debug)]
struct InProgress(Arc<Tracker>);

impl InProgress {
    fn begin(tracker: &Arc<Tracker>) -> Self {
        tracker.request_started();
        Self(Arc::clone(tracker))
    }
}

impl Drop for InProgress {
    fn drop(&mut self) {
        self.0.request_ended(Instant::now());
    }
}

type ServiceFuture =
    Pin<Box<dyn Future<Output = Result<Response<TrackedBody>, Infallible>> + Send>>;

impl hyper::service::Service<Request<Incoming>> for TrackedService {
    type Response = Response<TrackedBody>;
    type Error = Infallible;
    type Future = ServiceFuture;

    fn call(&self, mut req: Request<Incoming>) -> Self::Future {
        let in_progress = InProgress::begin(&self.tracker);
        req.extensions_mut().insert(ConnectInfo(self.tracker.addr));
        let response = self.inner.call(req);
        Box::pin(async move {
            let response = response.await?;
            Ok(response.map(|body| TrackedBody {
                body,
                _in_progress: in_progress,
            }))
        })
    }
}

/// A response body that keeps its request in progress until hyper drops it.
#[derive(Debug)]
struct TrackedBody {
    body: Body,
    _in_progress: InProgress,
}

impl hyper::body::Body for TrackedBody {
    type Data = <Body as hyper::body::Body>::Data;
    type Error = <Body as hyper::body::Body>::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests;
