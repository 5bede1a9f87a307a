//! mrtr inside your own axum application: your authentication layer says who the
//! caller is, and every `requestState` is bound to that principal.
//!
//! ```sh
//! export MRTR_KEYS=$(cargo run -q -- keygen)   # from the repository root; unset: an ephemeral key, with a warning
//! cargo run --release -p mrtr-server --example embed_axum -- --listen 127.0.0.1:3000
//! ```
//!
//! MCP is served on `POST /mcp`. A toy authentication layer maps
//! `Authorization: Bearer alice-token` to the principal `alice` and
//! `Bearer bob-token` to `bob`; anything else gets 401 before mrtr sees the
//! request. The tool `slow_deploy` asks the user to confirm, then "deploys" (a
//! delay standing in for a real API call) at most once per flow, reporting its
//! progress to a client that asked for it (`_meta.progressToken`: the reply is then
//! an SSE stream). The resource `embed://deployments` counts the deployments, and a
//! client listening for it (`subscriptions/listen`) is told each time it changes.
//! A state issued to alice and presented by bob is refused with the frozen
//! `-32602 Invalid or expired requestState`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use clap::Parser;
use mrtr::replay::MemoryReplayGuard;
use mrtr::service::Changes;
use mrtr::{
    Confirmation, Engine, Flow, Keyring, Principal, Retry, Round, Service, Timestamp, ToolAdvice,
};
use mrtr::{ResourceDefinition, ResourceResult, ToolResult};
use mrtr_server::http::{FromExtension, HttpOptions, mcp_router};
use mrtr_server::{KEYS_ENV, keyring_from_env};
use serde::Deserialize;
use serde_json::json;

/// Serves the `slow_deploy` tool on POST /mcp behind a toy bearer-token check.
#[derive(Debug, Parser)]
#[command(name = "embed_axum")]
struct Args {
    /// Address to listen on; port 0 picks a free port (logged as `listening on http://ADDR/mcp`).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:3000")]
    listen: SocketAddr,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    // Logs (mrtr's private diagnostics included) go to stderr; RUST_LOG filters them.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();

    // The same key loading as `mrtr serve`: MRTR_KEYS, else a per-process key.
    let keyring = keyring_from_env()?.unwrap_or_else(|| {
        tracing::warn!(
            "{KEYS_ENV} is not set: using an ephemeral key, so a flow does not survive a \
             restart or move to another instance; set {KEYS_ENV} (`mrtr keygen`)"
        );
        Keyring::ephemeral()
    });
    let service = Arc::new(service(keyring));

    let listener = tokio::net::TcpListener::bind(args.listen).await?;
    let local = listener.local_addr()?;
    tracing::info!("listening on http://{local}/mcp");
    axum::serve(listener, app(service))
        .with_graceful_shutdown(ctrl_c())
        .await?;
    Ok(())
}

/// Resolves on Ctrl-C; in-flight requests then finish before `main` returns.
async fn ctrl_c() {
    if let Err(e) = tokio::signal::ctrl_c().await {
        tracing::error!(error = %e, "cannot listen for Ctrl-C; stop the process another way");
        std::future::pending::<()>().await;
    }
}

/// The application: the MCP endpoint behind the authentication layer. Your own
/// routes go beside it (`.route(...)`, `.merge(...)`), inside or outside the layer.
pub(crate) fn app(service: Arc<Service>) -> Router {
    with_auth(mcp(service))
}

/// mrtr's router: `POST /mcp`, with the principal `authenticate` inserted
/// ([`FromExtension`]). A request that reached it without one would get 401,
/// never anonymous.
pub(crate) fn mcp(service: Arc<Service>) -> Router {
    mcp_router(service, HttpOptions::default(), FromExtension)
}

/// Puts `routes` behind the toy authentication.
pub(crate) fn with_auth(routes: Router) -> Router {
    routes.layer(middleware::from_fn(authenticate))
}

/// The toy token table: bearer token → subject.
const USERS: &[(&str, &str)] = &[("alice-token", "alice"), ("bob-token", "bob")];

/// Toy authentication: a known bearer token becomes a [`Principal`] in the
/// request's extensions, anything else is 401 here. A real server validates an
/// OAuth access token and builds the principal from its `sub`, `iss` and
/// `client_id` (`Principal::subject(sub).with_issuer(iss).with_client_id(id)`).
async fn authenticate(mut req: Request, next: Next) -> Response {
    let subject = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .and_then(|token| USERS.iter().find(|(known, _)| *known == token))
        .map(|(_, subject)| *subject);
    match subject {
        Some(subject) => {
            req.extensions_mut().insert(Principal::subject(subject));
            next.run(req).await
        }
        None => (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
        )
            .into_response(),
    }
}

/// The resource that counts the deployments.
pub(crate) const DEPLOYMENTS_URI: &str = "embed://deployments";

/// The service: one tool and the resource counting what it deployed, on an
/// engine whose replay guard keeps a replayed last round from deploying twice
/// (in memory: one process, which refuses the flows sealed before it started; a
/// fleet shares a store such as `RedisReplayGuard`), and a changes hub that
/// tells listening clients when the count changes.
pub(crate) fn service(keyring: Keyring) -> Service {
    let engine = Engine::new(keyring, "embed-axum-example")
        .with_replay_guard(Arc::new(MemoryReplayGuard::new(Timestamp::now())));
    let changes = Changes::new();
    let deployed = Arc::new(AtomicU64::new(0));
    let (announce, count) = (changes.clone(), Arc::clone(&deployed));
    Service::new(engine, "embed-axum-example", env!("CARGO_PKG_VERSION"))
        .tool(
            "slow_deploy",
            "Deploys a service after the user confirms; the deployment takes delay_ms milliseconds.",
            json!({
                "type": "object",
                "properties": {
                    "service": {"type": "string", "description": "The service to deploy."},
                    "delay_ms": {
                        "type": "integer", "minimum": 0, "maximum": MAX_DELAY_MS,
                        "description": "How long the deployment takes, in milliseconds."
                    }
                },
                "required": ["service", "delay_ms"]
            }),
            move |round| slow_deploy(round, Arc::clone(&deployed), announce.clone()),
        )
        .resource(
            ResourceDefinition::new(DEPLOYMENTS_URI, "deployments")
                .description("How many deployments slow_deploy has made.")
                .mime_type("text/plain"),
            move |_| {
                let n = count.load(Ordering::SeqCst).to_string();
                Ok(ResourceResult::text(DEPLOYMENTS_URI, "text/plain", n))
            },
        )
        .with_changes(changes)
}

/// The arguments of `slow_deploy`.
#[derive(Debug, Deserialize)]
struct SlowDeploy {
    service: String,
    delay_ms: u16,
}

/// The longest deployment accepted, in milliseconds.
const MAX_DELAY_MS: u16 = 10_000;

/// Re-run from the top on every round: the confirmation is answered from the
/// retry, and the deployment, once done, from the sealed state.
async fn slow_deploy(
    round: Round,
    deployed: Arc<AtomicU64>,
    changes: Changes,
) -> Result<ToolResult, Flow> {
    // A wrong type or a missing field is a tool error naming the field, never its value.
    let args: SlowDeploy = round.arguments()?;
    if args.delay_ms > MAX_DELAY_MS {
        return Err(Flow::failed(
            ToolAdvice::new(
                format!("delay_ms must be at most {MAX_DELAY_MS} milliseconds"),
                Retry::DoesNotHelp,
            )
            .input("delay_ms"),
        ));
    }
    let refused = match round.confirm("confirm", format!("Deploy {}?", args.service))? {
        Confirmation::Accepted => None,
        Confirmation::Declined => Some("the user declined"),
        _ => Some("the user dismissed the question"),
    };
    if let Some(why) = refused {
        return Ok(ToolResult::text(format!("Not deployed: {why}.")));
    }
    let delay = Duration::from_millis(args.delay_ms.into());
    // Sent only to a client that asked (a progressToken); free otherwise.
    round.progress(0.0, Some(1.0), Some("deploying"));
    round
        .once_async("deploy", || async move {
            // Stands in for the real API call.
            tokio::time::sleep(delay).await;
            deployed.fetch_add(1, Ordering::SeqCst);
            changes.resource_updated(DEPLOYMENTS_URI);
            Ok::<(), mrtr::Error>(())
        })
        .await?;
    round.progress(1.0, Some(1.0), Some("deployed"));
    Ok(ToolResult::text(format!("Deployed {}", args.service)))
}

/// The example over real HTTP on loopback (`cargo test -p mrtr-server --example embed_axum`).
#[cfg(test)]
mod tests;
