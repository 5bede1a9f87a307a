//! OTLP/HTTP export of the request spans (feature `otlp`): the spans the
//! transports open (target `mrtr::mcp`, [`crate`]'s `otel` feature parents and
//! links them) go through a `tracing-opentelemetry` layer to an OpenTelemetry
//! SDK tracer, whose batch exporter posts them as protobuf to a collector's
//! `/v1/traces`.
//!
//! ```no_run
//! use tracing_subscriber::layer::SubscriberExt;
//! use tracing_subscriber::util::SubscriberInitExt;
//!
//! let export = mrtr_server::otel::Export::otlp(Some("http://127.0.0.1:4318"), "my-mcp-server")
//!     .expect("a usable endpoint");
//! tracing_subscriber::registry().with(export.layer()).init();
//! // ... serve; then, to send what is still buffered:
//! export.shutdown();
//! ```

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::registry::LookupSpan;

use crate::ServerConfigError;

/// The instrumentation scope the spans are exported under.
const SCOPE: &str = "mrtr";

/// Where the request spans go: an OpenTelemetry tracer exporting over
/// OTLP/HTTP. Dropping it without [`Export::shutdown`] may lose the spans
/// still buffered.
#[derive(Debug)]
pub struct Export {
    provider: SdkTracerProvider,
}

impl Export {
    /// A batch exporter to the collector at `endpoint` (its base URL, as
    /// `http://HOST:4318`: `/v1/traces` is added), or, when `None`, where the
    /// OpenTelemetry environment says (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
    /// else `OTEL_EXPORTER_OTLP_ENDPOINT`, else `http://localhost:4318`), as the
    /// service `service_name` (`OTEL_SERVICE_NAME` wins, as the SDK reads it).
    ///
    /// # Errors
    /// [`ServerConfigError`] when the endpoint is not a URL the exporter takes.
    pub fn otlp(endpoint: Option<&str>, service_name: &str) -> Result<Self, ServerConfigError> {
        let mut builder = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary);
        if let Some(endpoint) = endpoint {
            let base = endpoint.trim_end_matches('/');
            builder = builder.with_endpoint(format!("{base}/v1/traces"));
        }
        let exporter = builder
            .build()
            .map_err(|e| ServerConfigError(format!("--otlp-endpoint: {e}")))?;
        let resource = Resource::builder()
            .with_service_name(service_name.to_owned())
            .build();
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build();
        Ok(Self { provider })
    }

    /// The layer that turns the request spans (target `mrtr::mcp`) into
    /// OpenTelemetry spans; other spans and events are not exported.
    pub fn layer<S>(&self) -> impl Layer<S> + use<S>
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        tracing_opentelemetry::layer()
            .with_tracer(self.provider.tracer(SCOPE))
            // The conventions' attributes only: no source location, thread or
            // busy/idle times.
            .with_location(false)
            .with_threads(false)
            .with_tracked_inactivity(false)
            .with_target(false)
            .with_filter(Targets::new().with_target(crate::span::TARGET, tracing::Level::INFO))
    }

    /// Sends what is buffered and stops the exporter.
    pub fn shutdown(self) {
        if let Err(e) = self.provider.shutdown() {
            tracing::warn!(error = %e, "OpenTelemetry export did not shut down cleanly");
        }
    }
}
