//! The 2025 era on stdio: `initialize` selects it for the process. The
//! session's server-to-client requests are lines on stdout among the others,
//! and the client's answers lines on stdin, matched by id.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::notify::Queued;
use mrtr::legacy::{BoxFuture, RequestFailed, ServerRequests, Session};
use mrtr::service::ParsedMessage;
use mrtr::wire::jsonrpc::RequestId;

/// The process's 2025-era session, once `initialize` opened it, and the
/// requests it waits on the client's answers for.
#[derive(Debug, Default)]
pub(super) struct Legacy {
    /// The session, and when it was opened (its life is measured when the
    /// stream ends).
    session: OnceLock<(Arc<Session>, std::time::Instant)>,
    pending: Mutex<HashMap<RequestId, oneshot::Sender<Result<Value, i64>>>>,
    next: AtomicU64,
}

impl Drop for Legacy {
    /// The stream is gone: so is the session, whose life is measured.
    fn drop(&mut self) {
        if let Some((session, opened)) = self.session.get() {
            mrtr::metrics::server_session(session.version(), "pipe", opened.elapsed());
        }
    }
}

impl Legacy {
    /// The session, when `initialize` opened one.
    pub(super) fn session(&self) -> Option<&Arc<Session>> {
        self.session.get().map(|(s, _)| s)
    }

    /// Keeps the session `initialize` opened; `false` when one was open already.
    pub(super) fn open(&self, session: Session) -> bool {
        let opened = std::time::Instant::now();
        self.session.set((Arc::new(session), opened)).is_ok()
    }

    /// Takes `message` when it is the client's answer to a request of ours:
    /// delivered to the flow waiting for it (an unmatched one is dropped).
    pub(super) fn answers(&self, message: &ParsedMessage) -> bool {
        let Some((id, answer)) = message.response() else {
            return false;
        };
        if let Some(tx) = lock(&self.pending).remove(&id) {
            let _ = tx.send(answer);
        }
        true
    }

    /// This process's way of asking the client: lines through `lines`.
    pub(super) fn asker<'a>(&'a self, lines: &'a mpsc::UnboundedSender<Queued>) -> Asker<'a> {
        Asker {
            legacy: self,
            lines,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Sends a flow's asks as request lines and waits for their answers.
#[derive(Debug)]
pub(super) struct Asker<'a> {
    legacy: &'a Legacy,
    lines: &'a mpsc::UnboundedSender<Queued>,
}

/// Forgets a request given up on.
struct Waiting<'a>(&'a Legacy, RequestId);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        lock(&self.0.pending).remove(&self.1);
    }
}

impl ServerRequests for Asker<'_> {
    fn request<'a>(
        &'a self,
        method: &'a str,
        params: &'a Value,
    ) -> BoxFuture<'a, Result<Value, RequestFailed>> {
        Box::pin(async move {
            let (id, rx) = {
                let mut pending = lock(&self.legacy.pending);
                if pending.len() >= crate::defaults::SESSION_PENDING_MAX {
                    return Err(RequestFailed::Refused(mrtr::Error::internal(
                        "2025-era stdio session has too many requests waiting for answers",
                    )));
                }
                let id = self.legacy.next.fetch_add(1, Ordering::Relaxed);
                let (tx, rx) = oneshot::channel();
                pending.insert(RequestId::Number(id.into()), tx);
                (id, rx)
            };
            let _waiting = Waiting(self.legacy, RequestId::Number(id.into()));
            let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
            if self
                .lines
                .send(Queued::uncounted(line.to_string()))
                .is_err()
            {
                return Err(RequestFailed::Closed);
            }
            match rx.await {
                Ok(Ok(result)) => Ok(result),
                Ok(Err(code)) => Err(RequestFailed::Answered { code }),
                Err(_) => Err(RequestFailed::Closed),
            }
        })
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};
    use mrtr::{Engine, Keyring, Service};

    /// When the stream ends (the `Legacy` value goes), the session's life is
    /// measured, by its version, on the pipe.
    #[test]
    fn the_end_of_the_stream_measures_the_session_s_life() {
        let service = Service::new(Engine::new(Keyring::ephemeral(), "t"), "t", "0");
        let init = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}});
        let message = ParsedMessage::parse(init.to_string().as_bytes());
        let ctx = mrtr::service::RequestContext::new(
            mrtr::Principal::anonymous(),
            mrtr::Timestamp::now(),
            "t",
        );
        let (session, _) = service.initialize(message, &ctx).expect("a session");
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        metrics::with_local_recorder(&recorder, || {
            let legacy = Legacy::default();
            assert!(legacy.open(session));
            drop(legacy);
            // No session, nothing measured.
            drop(Legacy::default());
        });
        let recorded: Vec<(String, usize)> = snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .filter_map(|(key, _, _, value)| match value {
                DebugValue::Histogram(v) => Some((format!("{:?}", key.key()), v.len())),
                _ => None,
            })
            .collect();
        assert_eq!(recorded.len(), 1, "{recorded:?}");
        let (key, samples) = &recorded[0];
        assert_eq!(*samples, 1);
        assert!(
            key.contains("mcp.server.session.duration")
                && key.contains("2025-06-18")
                && key.contains("pipe"),
            "{key}"
        );
    }
}
