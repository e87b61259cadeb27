//! Tracing and metrics for every Airlock process: logs to stderr, spans and metrics to an
//! OTLP collector when one is configured (gRPC or HTTP, by the standard `OTEL_*` variables:
//! [`export`]), a Prometheus endpoint per service ([`scrape`]), and the W3C trace context
//! carried in NATS headers so that one request is one trace across the four services.
//!
//! Spans are always recorded by an OpenTelemetry tracer (even with no exporter), so that every
//! published message carries a `traceparent` and a collector added later sees whole traces.
//! Only Airlock's own spans are exported ([`filters`]).
//!
//! Nothing here can take a process down or hold a request up: exporters run on the SDK's own
//! threads and drop what they cannot send, an endpoint that cannot be bound or an exporter that
//! cannot be built is logged and left out, the exporter's errors are logged at a bounded rate,
//! and flushing at exit is bounded ([`TelemetryConfig::flush_limit`]).

pub mod export;
pub mod filters;
pub mod metrics;
pub mod scrape;
pub mod settings;
pub mod sigpipe;

pub use settings::TelemetrySettings;

use airlock_protocol::error_chain;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

/// Environment variable naming the OTLP endpoint; export is off when it is unset.
pub const OTLP_ENDPOINT_ENV: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";

/// Environment variable giving a metrics listen address to a process whose caller did not
/// (a service binary started on its own, as in a container).
pub const METRICS_LISTEN_ENV: &str = "AIRLOCK_METRICS_LISTEN";

/// How long flushing may hold up a process's exit unless told otherwise: a healthy collector
/// takes milliseconds; a dead or hanging one must not keep `airlock run` from returning.
pub const DEFAULT_FLUSH_LIMIT: Duration = Duration::from_millis(500);

/// The URL of this process's metrics endpoint, once serving.
static METRICS_URL: OnceLock<String> = OnceLock::new();

/// Where this process serves Prometheus metrics (`http://host:port/metrics`), if it does.
pub fn metrics_url() -> Option<&'static str> {
    METRICS_URL.get().map(String::as_str)
}

/// Flushes and shuts telemetry down when dropped, within [`TelemetryConfig::flush_limit`].
pub struct TelemetryGuard {
    /// Only when spans are exported: a provider without an exporter has nothing to flush, and
    /// a short-lived `airlock run` should not start a thread at exit to find that out.
    tracer: Option<SdkTracerProvider>,
    meter: Option<SdkMeterProvider>,
    flush_limit: Duration,
    _endpoint: Option<scrape::Endpoint>,
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        // The SDK's shutdown waits for a last export, which a hanging collector can stretch to
        // the export timeout: it runs on a thread of its own, and the process goes on after
        // the limit whatever it is doing.
        let tracer = self.tracer.take();
        let meter = self.meter.take();
        if tracer.is_none() && meter.is_none() {
            return;
        }
        let (done, finished) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("telemetry-shutdown".into())
            .spawn(move || {
                sigpipe::block_in_this_thread();
                if let Some(tracer) = tracer {
                    let _ = tracer.shutdown();
                }
                if let Some(meter) = meter {
                    let _ = meter.shutdown();
                }
                let _ = done.send(());
            });
        if spawned.is_ok() && finished.recv_timeout(self.flush_limit).is_err() {
            tracing::warn!(limit = ?self.flush_limit, "telemetry not flushed in time; exiting without it");
        }
    }
}

/// How a process logs, traces and measures.
#[derive(Clone, Debug, Default)]
pub struct TelemetryConfig {
    /// Base OTLP endpoint; falls back to `OTEL_EXPORTER_OTLP_ENDPOINT` (and the per-signal
    /// variables).
    pub otlp_endpoint: Option<String>,
    /// Log lines as JSON rather than text.
    pub json_logs: bool,
    /// Default filter when `RUST_LOG` is unset.
    pub default_filter: Option<String>,
    /// Serve Prometheus metrics on this address (`host:port`, port 0 for a free one); falls
    /// back to `AIRLOCK_METRICS_LISTEN`; none when both are unset.
    pub metrics_listen: Option<String>,
    /// Write a Prometheus file-discovery target file for the metrics endpoint here.
    pub metrics_targets_dir: Option<PathBuf>,
    /// How long flushing may hold up the exit ([`DEFAULT_FLUSH_LIMIT`] when unset).
    pub flush_limit: Option<Duration>,
}

impl TelemetryConfig {
    /// A service's configuration under `airlock serve`: its metrics address from
    /// `[telemetry]`, its target file in `targets_dir`, and time to flush at a graceful stop.
    pub fn for_service(settings: &TelemetrySettings, config_section: &str, targets_dir: PathBuf) -> Self {
        Self {
            metrics_listen: settings.metrics_listen(config_section),
            metrics_targets_dir: Some(targets_dir),
            flush_limit: Some(Duration::from_secs(5)),
            ..Default::default()
        }
    }
}

/// Whether this process's environment asks for traces or metrics to be exported by OTLP. The
/// exporters run on the async runtime, and the guard's flush at exit waits for them from a
/// thread of its own: a single-threaded runtime would be blocked in that wait, so a command
/// that would use one must use a multi-threaded one when this is true.
pub fn exports_configured() -> bool {
    let plan = export::plan(&export::process_env, None);
    plan.traces.is_some() || plan.metrics.is_some()
}

/// Installs the global subscriber, tracer and meter. Call once, at the top of `main`, inside
/// the async runtime (OTLP over gRPC and the metrics endpoint run on it); the guard must live
/// as long as the process.
pub fn init(service_name: &str, config: &TelemetryConfig) -> TelemetryGuard {
    // The exporters' threads (and the blocking HTTP client's) are started here and inherit
    // this: a collector that resets a connection makes an export fail, never kills a command
    // that prints (see [`sigpipe`]).
    sigpipe::with_blocked(|| start(service_name, config))
}

fn start(service_name: &str, config: &TelemetryConfig) -> TelemetryGuard {
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name(service_name.to_owned())
        .build();
    let plan = export::plan(&export::process_env, config.otlp_endpoint.as_deref());
    // Problems are logged once the subscriber is in place.
    let mut problems: Vec<String> = plan.problems.clone();
    let mut notes: Vec<String> = Vec::new();

    let mut tracing_builder = SdkTracerProvider::builder().with_resource(resource.clone());
    let mut exporting_traces = false;
    if let Some(target) = &plan.traces {
        match export::span_exporter(&export::process_env, target) {
            Ok(exporter) => {
                tracing_builder = tracing_builder.with_batch_exporter(exporter);
                exporting_traces = true;
                notes.push(format!("traces to {} ({})", target.endpoint, target.protocol.as_str()));
            }
            Err(e) => problems.push(format!("trace export is off: {}", error_chain(&e))),
        }
    }
    let tracer_provider = tracing_builder.build();
    let tracer = tracer_provider.tracer(service_name.to_owned());
    opentelemetry::global::set_tracer_provider(tracer_provider.clone());
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());

    let (meter_provider, endpoint) = init_metrics(service_name, config, &plan, resource, &mut problems, &mut notes);

    install_subscriber(config, tracer);
    for problem in problems {
        tracing::warn!("{problem}");
    }
    if !notes.is_empty() {
        tracing::info!("telemetry: {}", notes.join("; "));
    }
    TelemetryGuard {
        tracer: exporting_traces.then_some(tracer_provider),
        meter: meter_provider,
        flush_limit: config.flush_limit.unwrap_or(DEFAULT_FLUSH_LIMIT),
        _endpoint: endpoint,
    }
}

/// The meter provider, when metrics go anywhere: a Prometheus endpoint, an OTLP collector, or
/// both (each a reader of the same instruments).
fn init_metrics(
    service_name: &str,
    config: &TelemetryConfig,
    plan: &export::Plan,
    resource: opentelemetry_sdk::Resource,
    problems: &mut Vec<String>,
    notes: &mut Vec<String>,
) -> (Option<SdkMeterProvider>, Option<scrape::Endpoint>) {
    let listen = config
        .metrics_listen
        .clone()
        .or_else(|| std::env::var(METRICS_LISTEN_ENV).ok())
        .filter(|l| !l.is_empty() && l != settings::OFF);
    let mut builder = SdkMeterProvider::builder().with_resource(resource);
    let mut readers = 0;
    let mut endpoint = None;
    if let Some(listen) = listen {
        let registry = prometheus::Registry::new();
        // A problem here is a line in the service's start-up notes (telemetry never stops a
        // service), so the two errors become the one sentence that line says.
        let served = opentelemetry_prometheus::exporter()
            .with_registry(registry.clone())
            .build()
            .map_err(|e| e.to_string())
            .and_then(|exporter| {
                scrape::serve(&listen, registry)
                    .map(|endpoint| (exporter, endpoint))
                    .map_err(|e| error_chain(&e))
            });
        match served {
            Ok((exporter, mut served)) => {
                builder = builder.with_reader(exporter);
                readers += 1;
                if let Some(dir) = &config.metrics_targets_dir
                    && let Err(e) = served.write_target_file(dir, service_name)
                {
                    problems.push(format!("metrics: {}", error_chain(&e)));
                }
                notes.push(format!("metrics at {}", served.url()));
                let _ = METRICS_URL.set(served.url());
                endpoint = Some(served);
            }
            Err(e) => problems.push(format!("the metrics endpoint is off: {e}")),
        }
    }
    if let Some(target) = &plan.metrics {
        match export::metric_exporter(&export::process_env, target) {
            Ok(exporter) => {
                builder = builder.with_reader(opentelemetry_sdk::metrics::PeriodicReader::builder(exporter).build());
                readers += 1;
                notes.push(format!("metrics to {} ({})", target.endpoint, target.protocol.as_str()));
            }
            Err(e) => problems.push(format!("metric export is off: {}", error_chain(&e))),
        }
    }
    if readers == 0 {
        return (None, endpoint);
    }
    let provider = builder.build();
    opentelemetry::global::set_meter_provider(provider.clone());
    metrics::set_enabled();
    (Some(provider), endpoint)
}

fn install_subscriber(config: &TelemetryConfig, tracer: opentelemetry_sdk::trace::Tracer) {
    let default_filter = config.default_filter.clone().unwrap_or_else(|| "info".to_owned());
    let filter = || EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&default_filter));
    let otel = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(tracing_subscriber::filter::filter_fn(filters::exported));
    let registry = tracing_subscriber::registry().with(otel);
    use std::io::IsTerminal as _;
    let ansi = std::io::stderr().is_terminal();
    let limit = || filters::ExporterLogLimit::new(filters::EXPORTER_LOG_INTERVAL);
    // One combined filter per layer: a filtered layer filtered again trips tracing-subscriber's
    // per-layer filter state (a debug assertion, and events lost without it) when the inner
    // filter turns an event down.
    use tracing_subscriber::filter::FilterExt as _;
    let result = if config.json_logs {
        registry
            .with(
                tracing_subscriber::fmt::layer()
                    .json()
                    .with_writer(std::io::stderr)
                    .with_filter(filter().and(limit())),
            )
            .try_init()
    } else {
        registry
            .with(
                tracing_subscriber::fmt::layer()
                    .with_ansi(ansi)
                    .with_writer(std::io::stderr)
                    .with_filter(filter().and(limit())),
            )
            .try_init()
    };
    if result.is_err() {
        // A subscriber was already installed (tests running several services in one process).
        tracing::debug!("tracing subscriber already installed");
    }
}

struct HeaderInjector<'a>(&'a mut async_nats::HeaderMap);

impl Injector for HeaderInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key, value.as_str());
    }
}

struct HeaderExtractor<'a>(&'a async_nats::HeaderMap);

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(|v| v.as_str())
    }
    fn keys(&self) -> Vec<&str> {
        // Only the W3C headers are ever read; listing them is enough for the propagator.
        vec!["traceparent", "tracestate"]
    }
}

/// Writes the current span's trace context (`traceparent`, `tracestate`) into NATS headers.
pub fn inject_current(headers: &mut async_nats::HeaderMap) {
    let context = tracing::Span::current().context();
    TraceContextPropagator::new().inject_context(&context, &mut HeaderInjector(headers));
}

/// The current span's `traceparent`, to be kept with durable state and resumed later.
pub fn current_traceparent() -> Option<String> {
    let mut headers = async_nats::HeaderMap::new();
    inject_current(&mut headers);
    headers.get("traceparent").map(|v| v.as_str().to_owned())
}

/// Makes `span` a child of the trace named by a kept `traceparent`.
pub fn set_parent_traceparent(span: &tracing::Span, traceparent: Option<&str>) {
    if let Some(value) = traceparent {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("traceparent", value);
        set_parent_from(span, Some(&headers));
    }
}

/// Makes `span` a child of the trace whose context arrived in `headers`, if any.
pub fn set_parent_from(span: &tracing::Span, headers: Option<&async_nats::HeaderMap>) {
    if let Some(headers) = headers {
        let parent = TraceContextPropagator::new().extract(&HeaderExtractor(headers));
        let _ = span.set_parent(parent);
    }
}

/// The trace id of the current span, as 32 hex digits (all zeros when there is none).
pub fn current_trace_id() -> String {
    use opentelemetry::trace::TraceContextExt as _;
    tracing::Span::current()
        .context()
        .span()
        .span_context()
        .trace_id()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_context_travels_through_headers() {
        let _guard = init("test", &TelemetryConfig::default());
        let outer = tracing::info_span!("publisher");
        let mut headers = async_nats::HeaderMap::new();
        let sent_trace = outer.in_scope(|| {
            inject_current(&mut headers);
            current_trace_id()
        });
        let traceparent = headers
            .get("traceparent")
            .map(|v| v.as_str().to_owned())
            .unwrap_or_default();
        assert!(
            traceparent.starts_with("00-"),
            "traceparent header missing: {traceparent:?}"
        );
        assert!(traceparent.contains(&sent_trace));
        assert_ne!(sent_trace, "00000000000000000000000000000000");

        let inner = tracing::info_span!("consumer");
        set_parent_from(&inner, Some(&headers));
        let received_trace = inner.in_scope(current_trace_id);
        assert_eq!(received_trace, sent_trace);
    }
}
