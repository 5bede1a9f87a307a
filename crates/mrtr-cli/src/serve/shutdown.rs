//! Graceful shutdown on SIGINT and SIGTERM.

use std::future::Future;

/// Installs the SIGINT and SIGTERM handlers now, and returns a future that
/// resolves when either signal arrives.
///
/// Installing eagerly (not on first poll) matters: a signal that arrives after
/// the server said it is listening must never hit the default action (which
/// would kill the process with no clean exit). Must be called inside a tokio
/// runtime. If a handler cannot be installed, that signal is not awaited
/// (logged at WARN) rather than shutting the server down at once.
pub(crate) fn signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let int = signal(SignalKind::interrupt());
        let term = signal(SignalKind::terminate());
        async move {
            let int = wait(int, "SIGINT");
            let term = wait(term, "SIGTERM");
            tokio::select! {
                () = int => tracing::info!(signal = "SIGINT", "shutting down"),
                () = term => tracing::info!(signal = "SIGTERM", "shutting down"),
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            if tokio::signal::ctrl_c().await.is_ok() {
                tracing::info!(signal = "SIGINT", "shutting down");
            } else {
                std::future::pending::<()>().await;
            }
        }
    }
}

#[cfg(unix)]
async fn wait(installed: std::io::Result<tokio::signal::unix::Signal>, name: &'static str) {
    match installed {
        Ok(mut s) => {
            s.recv().await;
        }
        Err(e) => {
            tracing::warn!(error = %e, signal = name, "cannot install signal handler");
            std::future::pending::<()>().await;
        }
    }
}
