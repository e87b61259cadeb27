//! OTLP export: which signals go out, over which transport, read from the standard
//! OpenTelemetry environment variables so that any collector set-up works unchanged.
//!
//! - `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_{TRACES,METRICS}_ENDPOINT`): export
//!   is off unless one is set.
//! - `OTEL_EXPORTER_OTLP_PROTOCOL` (or the per-signal variant): `http/protobuf` (the
//!   specification's default) or `grpc`. `http/json` is not built in and turns that signal off
//!   with a warning, as does any other value.
//! - `OTEL_TRACES_EXPORTER` / `OTEL_METRICS_EXPORTER` = `none`, or `OTEL_SDK_DISABLED=true`,
//!   turn a signal (or everything) off.
//! - `OTEL_EXPORTER_OTLP_TIMEOUT`, `..._HEADERS`, `OTEL_BSP_*` and `OTEL_METRIC_EXPORT_INTERVAL`
//!   are read by the SDK itself.
//!
//! Exporting runs on the SDK's own threads (the batch span processor, the periodic metric
//! reader), never on a request's path: a span ends by being queued (or dropped when the queue is
//! full), so a dead, slow or hanging collector costs a request nothing.

use opentelemetry_otlp::WithExportConfig as _;

/// The transports built in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Grpc,
    HttpProtobuf,
}

impl Protocol {
    fn parse(value: &str) -> Result<Protocol, String> {
        match value.trim() {
            "grpc" => Ok(Protocol::Grpc),
            "http/protobuf" => Ok(Protocol::HttpProtobuf),
            "http/json" => Err("http/json is not built in: use http/protobuf or grpc".to_owned()),
            other => Err(format!("unknown protocol {other:?}: use http/protobuf or grpc")),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Grpc => "grpc",
            Protocol::HttpProtobuf => "http/protobuf",
        }
    }
}

/// One signal's export: its transport, and the base endpoint given in code (else the SDK reads
/// the environment).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub protocol: Protocol,
    pub endpoint: String,
}

/// What a process exports, and why a signal it could have exported is off.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    pub traces: Option<Target>,
    pub metrics: Option<Target>,
    /// Settings that turned a signal off, to be logged once.
    pub problems: Vec<String>,
}

#[derive(Clone, Copy)]
enum Signal {
    Traces,
    Metrics,
}

impl Signal {
    fn upper(self) -> &'static str {
        match self {
            Signal::Traces => "TRACES",
            Signal::Metrics => "METRICS",
        }
    }

    /// The path an OTLP/HTTP receiver serves this signal on.
    fn http_path(self) -> &'static str {
        match self {
            Signal::Traces => "/v1/traces",
            Signal::Metrics => "/v1/metrics",
        }
    }
}

/// Decides what to export from `env` (the process environment in production, a table in tests)
/// and a base endpoint given in code, which wins over the environment's.
pub fn plan(env: &dyn Fn(&str) -> Option<String>, endpoint_override: Option<&str>) -> Plan {
    let get = |name: &str| env(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
    let mut plan = Plan::default();
    if get("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return plan;
    }
    for signal in [Signal::Traces, Signal::Metrics] {
        let upper = signal.upper();
        if let Some(exporters) = get(&format!("OTEL_{upper}_EXPORTER")) {
            let names: Vec<&str> = exporters.split(',').map(str::trim).collect();
            if !names.contains(&"otlp") {
                if !names.iter().all(|n| *n == "none") {
                    plan.problems.push(format!(
                        "OTEL_{upper}_EXPORTER={exporters}: only otlp (or none) is built in; {} export is off",
                        upper.to_lowercase()
                    ));
                }
                continue;
            }
        }
        let endpoint = endpoint_override
            .map(str::to_owned)
            .filter(|e| !e.is_empty())
            .or_else(|| get(&format!("OTEL_EXPORTER_OTLP_{upper}_ENDPOINT")))
            .or_else(|| get("OTEL_EXPORTER_OTLP_ENDPOINT"));
        let Some(endpoint) = endpoint else { continue };
        let protocol_var = format!("OTEL_EXPORTER_OTLP_{upper}_PROTOCOL");
        let protocol = match get(&protocol_var).or_else(|| get("OTEL_EXPORTER_OTLP_PROTOCOL")) {
            None => Protocol::HttpProtobuf,
            Some(value) => match Protocol::parse(&value) {
                Ok(p) => p,
                Err(why) => {
                    plan.problems.push(format!(
                        "{}: {why}; {} export is off",
                        protocol_var,
                        upper.to_lowercase()
                    ));
                    continue;
                }
            },
        };
        let target = Target { protocol, endpoint };
        match signal {
            Signal::Traces => plan.traces = Some(target),
            Signal::Metrics => plan.metrics = Some(target),
        }
    }
    plan
}

/// The process environment, for [`plan`].
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Why an exporter could not be built (export of that signal is then off; nothing else is).
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("OTLP over gRPC needs an async runtime in the process that starts telemetry")]
    NoRuntime,
    #[error("building the OTLP {signal} exporter ({protocol}, {endpoint})")]
    Build {
        signal: &'static str,
        protocol: &'static str,
        endpoint: String,
        #[source]
        source: opentelemetry_otlp::ExporterBuildError,
    },
}

/// Whether the endpoint came from code or from a per-signal variable, the SDK must be told
/// where to send: a generic endpoint gets the signal's path appended for HTTP (as the
/// specification says), a per-signal one is used as it is.
fn http_endpoint(env: &dyn Fn(&str) -> Option<String>, signal: Signal, target: &Target) -> String {
    let per_signal = env(&format!("OTEL_EXPORTER_OTLP_{}_ENDPOINT", signal.upper()))
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty());
    if per_signal.as_deref() == Some(target.endpoint.as_str()) {
        return target.endpoint.clone();
    }
    format!("{}{}", target.endpoint.trim_end_matches('/'), signal.http_path())
}

fn need_runtime(target: &Target) -> Result<(), ExportError> {
    // tonic's channel spawns its connection task on the current runtime when it is built.
    if target.protocol == Protocol::Grpc && tokio::runtime::Handle::try_current().is_err() {
        return Err(ExportError::NoRuntime);
    }
    Ok(())
}

pub fn span_exporter(
    env: &dyn Fn(&str) -> Option<String>,
    target: &Target,
) -> Result<opentelemetry_otlp::SpanExporter, ExportError> {
    need_runtime(target)?;
    let built = match target.protocol {
        Protocol::Grpc => opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_protocol(opentelemetry_otlp::Protocol::Grpc)
            .with_endpoint(target.endpoint.clone())
            .build(),
        Protocol::HttpProtobuf => opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(http_endpoint(env, Signal::Traces, target))
            .build(),
    };
    built.map_err(|source| ExportError::Build {
        signal: "trace",
        protocol: target.protocol.as_str(),
        endpoint: target.endpoint.clone(),
        source,
    })
}

pub fn metric_exporter(
    env: &dyn Fn(&str) -> Option<String>,
    target: &Target,
) -> Result<opentelemetry_otlp::MetricExporter, ExportError> {
    need_runtime(target)?;
    // Cumulative, as Prometheus reads them: a collector sees the same numbers as a scrape.
    let temporality = opentelemetry_sdk::metrics::Temporality::Cumulative;
    let built = match target.protocol {
        Protocol::Grpc => opentelemetry_otlp::MetricExporter::builder()
            .with_tonic()
            .with_temporality(temporality)
            .with_protocol(opentelemetry_otlp::Protocol::Grpc)
            .with_endpoint(target.endpoint.clone())
            .build(),
        Protocol::HttpProtobuf => opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_temporality(temporality)
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(http_endpoint(env, Signal::Metrics, target))
            .build(),
    };
    built.map_err(|source| ExportError::Build {
        signal: "metric",
        protocol: target.protocol.as_str(),
        endpoint: target.endpoint.clone(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn plan_of(vars: &[(&str, &str)]) -> Plan {
        let table: HashMap<String, String> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        plan(&|name| table.get(name).cloned(), None)
    }

    fn target(protocol: Protocol, endpoint: &str) -> Option<Target> {
        Some(Target {
            protocol,
            endpoint: endpoint.to_owned(),
        })
    }

    #[test]
    fn nothing_is_exported_without_an_endpoint() {
        assert_eq!(plan_of(&[]), Plan::default());
        assert_eq!(plan_of(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]), Plan::default());
    }

    #[test]
    fn http_protobuf_is_the_default_and_grpc_is_chosen_by_name() {
        let http = plan_of(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")]);
        assert_eq!(http.traces, target(Protocol::HttpProtobuf, "http://127.0.0.1:4318"));
        assert_eq!(http.metrics, target(Protocol::HttpProtobuf, "http://127.0.0.1:4318"));
        let grpc = plan_of(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/protobuf"),
        ]);
        assert_eq!(grpc.traces, target(Protocol::Grpc, "http://127.0.0.1:4317"));
        assert_eq!(grpc.metrics, target(Protocol::HttpProtobuf, "http://127.0.0.1:4317"));
    }

    #[test]
    fn a_signal_can_be_turned_off_or_sent_elsewhere() {
        let plan = plan_of(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://b:4318/custom"),
            ("OTEL_METRICS_EXPORTER", "none"),
        ]);
        assert_eq!(plan.traces, target(Protocol::HttpProtobuf, "http://b:4318/custom"));
        assert_eq!(plan.metrics, None);
        assert!(plan.problems.is_empty());
        assert_eq!(
            plan_of(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"),
                ("OTEL_SDK_DISABLED", "true")
            ]),
            Plan::default()
        );
    }

    #[test]
    fn unsupported_settings_turn_export_off_and_say_why() {
        let plan = plan_of(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_METRICS_EXPORTER", "console"),
        ]);
        assert_eq!((plan.traces, plan.metrics), (None, None));
        assert_eq!(plan.problems.len(), 2, "{:?}", plan.problems);
        assert!(plan.problems[0].contains("http/json"), "{:?}", plan.problems);
    }

    #[test]
    fn http_paths_are_appended_to_a_generic_endpoint_only() {
        let generic = |_: &str| None;
        let t = Target {
            protocol: Protocol::HttpProtobuf,
            endpoint: "http://a:4318/".into(),
        };
        assert_eq!(http_endpoint(&generic, Signal::Traces, &t), "http://a:4318/v1/traces");
        assert_eq!(http_endpoint(&generic, Signal::Metrics, &t), "http://a:4318/v1/metrics");
        let per_signal = |name: &str| (name == "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").then(|| "http://b/x".to_owned());
        let t = Target {
            protocol: Protocol::HttpProtobuf,
            endpoint: "http://b/x".into(),
        };
        assert_eq!(http_endpoint(&per_signal, Signal::Traces, &t), "http://b/x");
    }
}
