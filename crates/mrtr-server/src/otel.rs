//! OTLP/HTTP export (feature `otlp`) of the request spans and of the metrics.
//!
//! The spans the transports open (target `mrtr::mcp`, [`crate`]'s `otel`
//! feature parents and links them) go through a `tracing-opentelemetry` layer
//! to an OpenTelemetry SDK tracer, whose batch exporter posts them as protobuf
//! to a collector's `/v1/traces`. The metrics mrtr records through the
//! `metrics` facade (the conventions' `mcp.server.operation.duration` and
//! mrtr's own) go through the facade's OpenTelemetry bridge
//! (`metrics-exporter-otel`) to an SDK meter, whose periodic reader posts them
//! to `/v1/metrics` (every 60 s, or `OTEL_METRIC_EXPORT_INTERVAL` ms, and at
//! [`Export::shutdown`]).
//!
//! ```no_run
//! use tracing_subscriber::layer::SubscriberExt;
//! use tracing_subscriber::util::SubscriberInitExt;
//!
//! let export = mrtr_server::otel::Export::otlp(Some("http://127.0.0.1:4318"), "my-mcp-server")
//!     .expect("a usable endpoint");
//! tracing_subscriber::registry().with(export.layer()).init();
//! // The process's one metrics recorder (or one of a fan-out's).
//! metrics::set_global_recorder(export.recorder()).expect("no recorder yet");
//! mrtr::metrics::describe();
//! // ... serve; then, to send what is still buffered:
//! export.shutdown();
//! ```

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::registry::LookupSpan;

use crate::ServerConfigError;

/// The instrumentation scope the spans and metrics are exported under.
const SCOPE: &str = "mrtr";

/// Where the request spans and the metrics go: an OpenTelemetry tracer and
/// meter exporting over OTLP/HTTP. Dropping it without [`Export::shutdown`]
/// may lose what is still buffered.
#[derive(Debug)]
pub struct Export {
    tracer: SdkTracerProvider,
    meter: SdkMeterProvider,
}

impl Export {
    /// Exporters to the collector at `endpoint` (its base URL, as
    /// `http://HOST:4318`: `/v1/traces` and `/v1/metrics` are added), or, when
    /// `None`, where the OpenTelemetry environment says
    /// (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` and
    /// `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`, else
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`, else `http://localhost:4318`), as the
    /// service `service_name` (`OTEL_SERVICE_NAME` wins, as the SDK reads it).
    ///
    /// # Errors
    /// [`ServerConfigError`] when the endpoint is not a URL the exporters take.
    pub fn otlp(endpoint: Option<&str>, service_name: &str) -> Result<Self, ServerConfigError> {
        let url =
            |signal: &str| endpoint.map(|e| format!("{}/v1/{signal}", e.trim_end_matches('/')));
        let bad = |e: opentelemetry_otlp::ExporterBuildError| {
            ServerConfigError(format!("--otlp-endpoint: {e}"))
        };
        let mut spans = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary);
        if let Some(url) = url("traces") {
            spans = spans.with_endpoint(url);
        }
        let mut metrics = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary);
        if let Some(url) = url("metrics") {
            metrics = metrics.with_endpoint(url);
        }
        let (spans, metrics) = (spans.build().map_err(bad)?, metrics.build().map_err(bad)?);
        let resource = Resource::builder()
            .with_service_name(service_name.to_owned())
            .build();
        let tracer = SdkTracerProvider::builder()
            .with_batch_exporter(spans)
            .with_resource(resource.clone())
            .build();
        let meter = SdkMeterProvider::builder()
            .with_periodic_exporter(metrics)
            .with_resource(resource)
            .build();
        Ok(Self { tracer, meter })
    }

    /// A `metrics` recorder whose metrics this export sends, with the buckets
    /// [`mrtr::metrics::HISTOGRAM_BUCKETS`] gives (the conventions' for the
    /// operation durations). Install it as the process's recorder, or as one
    /// of a fan-out's (`metrics_util::layers::FanoutBuilder`, beside a
    /// Prometheus recorder), before any metric is recorded, and call
    /// [`mrtr::metrics::describe`] after: a metric's unit and help are read
    /// when it is first recorded.
    pub fn recorder(&self) -> impl metrics::Recorder + Send + Sync + 'static + use<> {
        let recorder = metrics_exporter_otel::OpenTelemetryRecorder::new(self.meter.meter(SCOPE));
        for (name, bounds) in mrtr::metrics::HISTOGRAM_BUCKETS {
            recorder.set_histogram_bounds(&metrics::KeyName::from(name), bounds.to_vec());
        }
        recorder
    }

    /// The layer that turns the request spans (target `mrtr::mcp`) into
    /// OpenTelemetry spans; other spans and events are not exported.
    pub fn layer<S>(&self) -> impl Layer<S> + use<S>
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        tracing_opentelemetry::layer()
            .with_tracer(self.tracer.tracer(SCOPE))
            // The conventions' attributes only: no source location, thread or
            // busy/idle times.
            .with_location(false)
            .with_threads(false)
            .with_tracked_inactivity(false)
            .with_target(false)
            .with_filter(Targets::new().with_target(crate::span::TARGET, tracing::Level::INFO))
    }

    /// Sends what is buffered (the spans, and the metrics as they stand) and
    /// stops the exporters.
    pub fn shutdown(self) {
        if let Err(e) = self.tracer.shutdown() {
            tracing::warn!(error = %e, "OpenTelemetry span export did not shut down cleanly");
        }
        if let Err(e) = self.meter.shutdown() {
            tracing::warn!(error = %e, "OpenTelemetry metric export did not shut down cleanly");
        }
    }
}
