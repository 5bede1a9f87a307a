//! The 2025 era over stdio: [`StdioTransport`] as a [`LegacyTransport`].
//!
//! Messages are lines both ways, interleaved: while a 2025-era request waits
//! for its response, the requests the server writes on its stdout are handed
//! to the [`ServeRequest`] and their answers written to its stdin (outside such
//! an exchange they are still answered `-32601`). The era is told by a
//! `server/discover` sent first ([`discover_says_legacy`]).

use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::{Pending, StdioTransport};
use crate::legacy::{
    Exchanged, LegacyTransport, Probe, ServeRequest, Served, Session, discover_says_legacy,
};
use crate::{BoxFuture, Transport, TransportError};

/// Counts a 2025-era exchange as waiting while it lives, so server requests go
/// to it.
struct Serving<'a>(&'a StdioTransport);

impl<'a> Serving<'a> {
    fn new(t: &'a StdioTransport) -> Self {
        t.shared().lock().serving += 1;
        Self(t)
    }
}

impl Drop for Serving<'_> {
    fn drop(&mut self) {
        let mut state = self.0.shared().lock();
        state.serving = state.serving.saturating_sub(1);
    }
}

fn line_of(message: &Value) -> Result<Vec<u8>, TransportError> {
    let mut line =
        serde_json::to_vec(message).map_err(|e| TransportError::InvalidRequest(e.to_string()))?;
    line.push(b'\n');
    Ok(line)
}

impl StdioTransport {
    /// What the reader handed over for a 2025-era request.
    async fn replied(
        &self,
        r: Result<Result<Value, TransportError>, oneshot::error::RecvError>,
    ) -> Result<Exchanged, TransportError> {
        match r {
            Ok(Ok(response)) => Ok(Exchanged::Response(response)),
            Ok(Err(TransportError::Connection(why))) => Err(self.gone(why).await),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(self
                .gone("the connection to the server is closed".into())
                .await),
        }
    }
}

impl LegacyTransport for StdioTransport {
    fn server(&self) -> String {
        format!("stdio:{}", self.command_line())
    }

    fn probe(&self, request: Value) -> BoxFuture<'_, Result<Probe, TransportError>> {
        Box::pin(async move {
            let id = request.get("id").cloned().unwrap_or(Value::Null);
            let mut params = serde_json::Map::new();
            if let Some(meta) = request.pointer("/params/_meta") {
                params.insert("_meta".into(), meta.clone());
            }
            let discover = json!({"jsonrpc": "2.0", "id": format!("discover-{id}"),
                "method": "server/discover", "params": params});
            let answer = self.send(discover).await?;
            if discover_says_legacy(&answer) {
                return Ok(Probe::Legacy);
            }
            Ok(Probe::Modern(self.send(request).await?))
        })
    }

    fn exchange<'a>(
        &'a self,
        _session: &'a Session,
        message: Value,
        serve: &'a dyn ServeRequest,
    ) -> BoxFuture<'a, Result<Exchanged, TransportError>> {
        Box::pin(async move {
            let line = line_of(&message)?;
            let id = message
                .get("id")
                .filter(|id| !id.is_null() && message.get("method").is_some());
            let Some(id) = id else {
                // A notification or a response: nothing comes back.
                self.write_line(line).await?;
                return Ok(Exchanged::Delivered);
            };
            let key = id.to_string();
            let (reply, mut replied) = oneshot::channel();
            match self.shared().wait_for(key.clone(), reply) {
                Ok(()) => {}
                Err(TransportError::Connection(why)) => return Err(self.gone(why).await),
                Err(e) => return Err(e),
            }
            let _pending = Pending {
                shared: self.shared(),
                key,
            };
            let _serving = Serving::new(self);
            self.write_line(line).await?;
            loop {
                let request = tokio::select! {
                    biased;
                    r = &mut replied => return self.replied(r).await,
                    request = async { self.legacy.server_requests.lock().await.recv().await } => request,
                };
                let Some(request) = request else {
                    // No more server requests can come: only the response.
                    return self.replied((&mut replied).await).await;
                };
                match serve.serve(request).await {
                    Served::Answer(answer) => self.write_line(line_of(&answer)?).await?,
                    Served::Stop(answer) => {
                        if let Some(answer) = answer {
                            let _ = self.write_line(line_of(&answer)?).await;
                        }
                        return Ok(Exchanged::Stopped);
                    }
                }
            }
        })
    }

    fn end<'a>(&'a self, _session: &'a Session) -> BoxFuture<'a, ()> {
        // A stdio session ends with the process ([`StdioTransport::shutdown`]).
        Box::pin(async {})
    }
}
