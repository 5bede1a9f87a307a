//! Graceful shutdown on SIGINT and SIGTERM.

/// Resolves when the process receives SIGINT (Ctrl-C) or, on Unix, SIGTERM.
///
/// If a signal handler cannot be installed, that signal is simply not awaited
/// (logged at WARN) rather than shutting the server down at once.
pub async fn signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::warn!(error = %e, "cannot listen for SIGINT");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => tracing::info!(signal = "SIGINT", "shutting down"),
        () = term => tracing::info!(signal = "SIGTERM", "shutting down"),
    }
}
