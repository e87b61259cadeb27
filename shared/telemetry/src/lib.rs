//! Tracing for every Airlock process: logs to stderr, spans to an OTLP collector when one is
//! configured, and the W3C trace context carried in NATS headers so that one request is one
//! trace across the four services.
//!
//! Spans are always recorded by an OpenTelemetry tracer (even with no exporter), so that every
//! published message carries a `traceparent` and a collector added later sees whole traces.

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

/// Environment variable naming the OTLP (gRPC) endpoint; export is off when it is unset.
pub const OTLP_ENDPOINT_ENV: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";

/// Flushes and shuts the tracer down when dropped.
pub struct TelemetryGuard {
    provider: SdkTracerProvider,
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        let _ = self.provider.shutdown();
    }
}

/// How a process logs.
#[derive(Clone, Debug, Default)]
pub struct TelemetryConfig {
    /// OTLP endpoint; falls back to `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub otlp_endpoint: Option<String>,
    /// Log lines as JSON rather than text.
    pub json_logs: bool,
    /// Default filter when `RUST_LOG` is unset.
    pub default_filter: Option<String>,
}

/// Installs the global subscriber. Call once, at the top of `main`; the guard must live as long
/// as the process.
pub fn init(service_name: &str, config: &TelemetryConfig) -> TelemetryGuard {
    let mut builder = SdkTracerProvider::builder().with_resource(
        opentelemetry_sdk::Resource::builder()
            .with_service_name(service_name.to_owned())
            .build(),
    );
    let endpoint = config
        .otlp_endpoint
        .clone()
        .or_else(|| std::env::var(OTLP_ENDPOINT_ENV).ok());
    let mut export_error = None;
    if let Some(endpoint) = endpoint.filter(|e| !e.is_empty()) {
        use opentelemetry_otlp::WithExportConfig as _;
        match opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(endpoint.clone())
            .build()
        {
            Ok(exporter) => builder = builder.with_batch_exporter(exporter),
            Err(e) => export_error = Some(format!("OTLP exporter for {endpoint}: {e}")),
        }
    }
    let provider = builder.build();
    let tracer = provider.tracer(service_name.to_owned());
    opentelemetry::global::set_tracer_provider(provider.clone());
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());

    let default_filter = config.default_filter.clone().unwrap_or_else(|| "info".to_owned());
    let filter = || EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&default_filter));
    // The SDK logs through `tracing` too; keeping its own targets out of the OTLP layer avoids
    // a loop in which exporting a span produces a span to export.
    let otel_filter = tracing_subscriber::filter::filter_fn(|meta| !meta.target().starts_with("opentelemetry"));
    let otel = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(otel_filter);
    let registry = tracing_subscriber::registry().with(otel);
    use std::io::IsTerminal as _;
    let ansi = std::io::stderr().is_terminal();
    let result = if config.json_logs {
        registry
            .with(
                tracing_subscriber::fmt::layer()
                    .json()
                    .with_writer(std::io::stderr)
                    .with_filter(filter()),
            )
            .try_init()
    } else {
        registry
            .with(
                tracing_subscriber::fmt::layer()
                    .with_ansi(ansi)
                    .with_writer(std::io::stderr)
                    .with_filter(filter()),
            )
            .try_init()
    };
    if result.is_err() {
        // A subscriber was already installed (tests running several services in one process).
        tracing::debug!("tracing subscriber already installed");
    }
    if let Some(e) = export_error {
        tracing::warn!(error = %e, "OTLP export is off");
    }
    TelemetryGuard { provider }
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
