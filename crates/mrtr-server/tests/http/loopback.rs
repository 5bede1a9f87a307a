//! The one way these tests serve a router: on a loopback port, on a runtime of
//! its own with one worker (dropping the runtime stops the server).

use std::net::SocketAddr;

use axum::Router;

/// Serves `app` with `axum::serve` on a fresh loopback port; the runtime and
/// the address.
pub(crate) fn serve(app: Router) -> (tokio::runtime::Runtime, SocketAddr) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    runtime.spawn(async move { axum::serve(listener, app).await });
    (runtime, addr)
}
