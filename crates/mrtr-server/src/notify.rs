//! The transports' [`NotificationSink`]: a request's notifications, queued for
//! the writer (the SSE stream of its HTTP response, or stdout), at most
//! [`MAX_NOTIFICATIONS_PER_REQUEST`] of one request at a time.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use tokio::sync::mpsc;

use crate::defaults::MAX_NOTIFICATIONS_PER_REQUEST;
use mrtr::NotificationSink;

/// One notification waiting for the writer; dropping it (once written, or never)
/// frees its request's place in the queue.
#[derive(Debug)]
pub(crate) struct Queued {
    text: String,
    queued: Arc<AtomicUsize>,
}

impl Queued {
    /// A message counted against no request's cap (a server-to-client
    /// request: each flow sends at most one at a time).
    pub(crate) fn uncounted(text: String) -> Self {
        Self {
            text,
            queued: Arc::new(AtomicUsize::new(1)),
        }
    }

    /// The notification (compact JSON, one line).
    pub(crate) fn text(&self) -> &str {
        &self.text
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        self.queued.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The sink of one request: into `tx`, while fewer than the cap of its own are
/// waiting there; beyond it a notification is dropped and counted.
#[derive(Debug)]
pub(crate) struct Outbox {
    tx: mpsc::UnboundedSender<Queued>,
    queued: Arc<AtomicUsize>,
    cap: usize,
    dropped: AtomicU64,
}

impl Outbox {
    /// A request's sink into `tx` (a channel one request or many share; the cap is
    /// this request's own), holding at most [`MAX_NOTIFICATIONS_PER_REQUEST`].
    pub(crate) fn new(tx: mpsc::UnboundedSender<Queued>) -> Arc<Self> {
        Self::with_cap(tx, MAX_NOTIFICATIONS_PER_REQUEST)
    }

    pub(crate) fn with_cap(tx: mpsc::UnboundedSender<Queued>, cap: usize) -> Arc<Self> {
        Arc::new(Self {
            tx,
            queued: Arc::new(AtomicUsize::new(0)),
            cap,
            dropped: AtomicU64::new(0),
        })
    }

    /// How many notifications were dropped: the cap was reached, or the writer
    /// was gone.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Acquire)
    }
}

impl NotificationSink for Outbox {
    fn notify(&self, notification: String) -> bool {
        if self.queued.fetch_add(1, Ordering::AcqRel) >= self.cap {
            self.queued.fetch_sub(1, Ordering::AcqRel);
            self.dropped.fetch_add(1, Ordering::AcqRel);
            return false;
        }
        let queued = Queued {
            text: notification,
            queued: Arc::clone(&self.queued),
        };
        // A closed channel: the request is over; the item's drop frees its place.
        if self.tx.send(queued).is_err() {
            self.dropped.fetch_add(1, Ordering::AcqRel);
            return false;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_the_cap_waits_and_a_written_one_frees_its_place() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let outbox = Outbox::with_cap(tx, 2);
        assert!(outbox.notify("a".into()));
        assert!(outbox.notify("b".into()));
        assert!(!outbox.notify("c".into()));
        assert_eq!(outbox.dropped(), 1);
        let a = rx.try_recv().unwrap();
        assert_eq!(a.text(), "a");
        assert!(!outbox.notify("d".into()), "still waiting until written");
        drop(a);
        assert!(outbox.notify("e".into()));
        assert_eq!(rx.try_recv().unwrap().text(), "b");
        assert_eq!(rx.try_recv().unwrap().text(), "e");
        rx.close();
        assert!(!outbox.notify("f".into()));
        assert_eq!(outbox.dropped(), 3);
    }
}
