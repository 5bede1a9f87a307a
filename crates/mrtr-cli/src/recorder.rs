//! The binary's one metrics recorder: Prometheus's, served at
//! `--metrics-listen`; the OTLP export's (`--otlp-endpoint`); or both, the
//! facade's samples fanned out to each. The library records through the
//! `metrics` facade and never installs a recorder itself.

use std::net::SocketAddr;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusRecorder};
use metrics_util::layers::FanoutBuilder;
use mrtr_server::MetricsEndpoint;
use mrtr_server::ServerConfigError;
use mrtr_server::otel::Export;

/// How often the Prometheus recorder folds recorded histogram samples into its
/// buckets between scrapes, so memory stays bounded when nobody scrapes.
const METRICS_UPKEEP: std::time::Duration = std::time::Duration::from_secs(5);

/// Installs the process's recorder for what is asked: the Prometheus recorder
/// with mrtr's histogram buckets (and the endpoint that serves it, returned)
/// when `listen` is given, the export's recorder when `export` is, both
/// through a fan-out when both are; nothing when neither is. Then describes
/// mrtr's metrics to it.
///
/// # Errors
/// When a recorder is installed already, or the Prometheus recorder cannot
/// be built.
pub fn install(
    listen: Option<SocketAddr>,
    export: Option<&Export>,
) -> Result<Option<MetricsEndpoint>, ServerConfigError> {
    let otel = export.map(Export::recorder);
    let prometheus = listen.map(prometheus).transpose()?;
    let endpoint = match (prometheus, otel) {
        (None, None) => return Ok(None),
        (None, Some(otel)) => {
            metrics::set_global_recorder(otel).map_err(taken)?;
            None
        }
        (Some((recorder, endpoint)), None) => {
            metrics::set_global_recorder(recorder).map_err(taken)?;
            Some(endpoint)
        }
        (Some((recorder, endpoint)), Some(otel)) => {
            let both = FanoutBuilder::default()
                .add_recorder(recorder)
                .add_recorder(otel)
                .build();
            metrics::set_global_recorder(both).map_err(taken)?;
            Some(endpoint)
        }
    };
    mrtr::metrics::describe();
    Ok(endpoint)
}

/// The refusal of a second recorder.
fn taken<R>(_: metrics::SetRecorderError<R>) -> ServerConfigError {
    ServerConfigError("a metrics recorder is installed already".into())
}

/// The Prometheus recorder with mrtr's histogram buckets, and the endpoint
/// serving its text at `listen`; a thread runs its upkeep.
fn prometheus(
    listen: SocketAddr,
) -> Result<(PrometheusRecorder, MetricsEndpoint), ServerConfigError> {
    let recorder = mrtr::metrics::HISTOGRAM_BUCKETS
        .iter()
        .try_fold(PrometheusBuilder::new(), |b, (name, bounds)| {
            b.set_buckets_for_metric(Matcher::Full((*name).to_owned()), bounds)
        })
        .map(PrometheusBuilder::build_recorder)
        .map_err(|e| ServerConfigError(format!("--metrics-listen: {e}")))?;
    let handle = recorder.handle();
    let upkeep = handle.clone();
    std::thread::Builder::new()
        .name("metrics-upkeep".into())
        .spawn(move || {
            loop {
                std::thread::sleep(METRICS_UPKEEP);
                upkeep.run_upkeep();
            }
        })
        .map_err(|e| ServerConfigError(format!("--metrics-listen: cannot start upkeep: {e}")))?;
    Ok((
        recorder,
        MetricsEndpoint::new(listen, move || handle.render()),
    ))
}
