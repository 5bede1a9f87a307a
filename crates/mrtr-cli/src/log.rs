//! The binary's logging set-up: tracing to stderr, and panic reports without
//! their message. (The one line per request is written by the library's
//! transports, under the `mrtr::request` target.)

use std::io::IsTerminal;

use clap::ValueEnum;
use mrtr_server::otel::Export;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// The service name spans and metrics are exported under (`OTEL_SERVICE_NAME` wins).
const SERVICE_NAME: &str = "mrtr";

/// The span and metric export `--otlp-endpoint` asks for, or the
/// OpenTelemetry environment (`OTEL_EXPORTER_OTLP_ENDPOINT`,
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`);
/// `None` when neither is given.
///
/// # Errors
/// When the endpoint is not a URL the exporter takes.
pub fn export(endpoint: Option<&str>) -> Result<Option<Export>, mrtr_server::ServerConfigError> {
    let from_env = [
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    ]
    .iter()
    .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()));
    if endpoint.is_none() && !from_env {
        return Ok(None);
    }
    Export::otlp(endpoint, SERVICE_NAME).map(Some)
}

/// How log lines are written to stderr (`--log-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Human,
    /// One JSON object per line.
    Json,
}

/// The filter without `RUST_LOG`: INFO, but not the request spans (target
/// `mrtr::mcp`), which are for a tracer: the one log line per request already
/// says what they record.
const DEFAULT_FILTER: &str = "info,mrtr::mcp=off";

/// `RUST_LOG`, with the request spans off unless it names them itself.
fn with_spans_off(directives: &str) -> String {
    if directives.contains("mrtr::mcp") {
        directives.to_owned()
    } else {
        format!("{directives},mrtr::mcp=off")
    }
}

/// Installs the global subscriber: stderr, `RUST_LOG` (default `info`, without
/// the request spans), human or JSON.
///
/// Calling it twice is harmless (the second call changes nothing).
pub fn init(format: LogFormat, export: Option<&Export>) {
    let (filter, bad_filter) = match std::env::var("RUST_LOG") {
        Ok(s) if !s.trim().is_empty() => match EnvFilter::try_new(with_spans_off(&s)) {
            Ok(f) => (f, false),
            Err(_) => (EnvFilter::new(DEFAULT_FILTER), true),
        },
        _ => (EnvFilter::new(DEFAULT_FILTER), false),
    };
    let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let installed = match export {
        // The subscriber of old: one global filter, no per-layer machinery on
        // the hot path (`scripts/serve-cg.sh` measures it).
        None => {
            let builder = tracing_subscriber::fmt()
                .with_writer(std::io::stderr)
                .with_env_filter(filter)
                .with_ansi(ansi);
            match format {
                LogFormat::Human => builder.try_init().is_ok(),
                LogFormat::Json => builder.json().try_init().is_ok(),
            }
        }
        // The log lines under their filter, and the request spans to the exporter.
        Some(export) => {
            let fmt = tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(ansi);
            let fmt = match format {
                LogFormat::Human => fmt.with_filter(filter).boxed(),
                LogFormat::Json => fmt.json().with_filter(filter).boxed(),
            };
            tracing_subscriber::registry()
                .with(fmt)
                .with(export.layer())
                .try_init()
                .is_ok()
        }
    };
    if installed && bad_filter {
        tracing::warn!("RUST_LOG is not a valid filter; using `info`");
    }
}

/// Installs a global subscriber that exports the request spans only (`mrtr
/// call`, which writes no log lines of its own).
pub fn init_spans(export: &Export) {
    let _ = tracing_subscriber::registry()
        .with(export.layer())
        .try_init();
}

/// Routes panic reports through tracing (ERROR, on stderr) with the location
/// only: a panic message could quote a request's arguments, which the log never
/// holds. The transports turn the panic itself into a -32603 reply.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()));
        tracing::error!(location = location.as_deref(), "panic (message withheld)");
    }));
}
