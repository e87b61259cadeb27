//! What goes where: only Airlock's own spans are exported, and the exporter's complaints reach
//! the log at a bounded rate.
//!
//! Without the first filter every span of every library in the process is exported, including
//! those the exporter's own HTTP/2 client (h2, hyper, tonic) makes while exporting: a service
//! exported a steady stream of them while idle, forever. Without the second, a collector that
//! is down fills each service's log with one error per export attempt.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tracing::Metadata;
use tracing::level_filters::LevelFilter;
use tracing::subscriber::Interest;
use tracing_subscriber::layer::{Context, Filter};

/// Crates whose spans and events are Airlock's: every crate of the workspace is named
/// `airlock*` (the CLI's target is `airlock`).
const OWN_PREFIX: &str = "airlock";

/// The telemetry pipeline itself: the SDK, the OTLP exporter and the transports it drives.
const EXPORTER_PREFIXES: [&str; 6] = ["opentelemetry", "tonic", "h2", "hyper", "reqwest", "tower"];

/// At most one log line per call site of the exporter per this long.
pub const EXPORTER_LOG_INTERVAL: Duration = Duration::from_secs(60);

/// Whether a span or event belongs in the exported traces: Airlock's own, at INFO or above.
pub fn exported(metadata: &Metadata<'_>) -> bool {
    metadata.target().starts_with(OWN_PREFIX) && *metadata.level() <= tracing::Level::INFO
}

fn from_exporter(target: &str) -> bool {
    EXPORTER_PREFIXES.iter().any(|p| target.starts_with(p))
}

/// Lets through one event per call site of the exporter per [`EXPORTER_LOG_INTERVAL`]; every
/// other event passes untouched.
#[derive(Debug)]
pub struct ExporterLogLimit {
    interval: Duration,
    last: Mutex<HashMap<tracing::callsite::Identifier, Instant>>,
}

impl ExporterLogLimit {
    pub fn new(interval: Duration) -> Self {
        Self {
            interval,
            last: Mutex::new(HashMap::new()),
        }
    }

    /// Whether an event from this call site may be logged now (and notes that it was).
    fn admit(&self, callsite: tracing::callsite::Identifier, now: Instant) -> bool {
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        match last.get(&callsite) {
            Some(at) if now.duration_since(*at) < self.interval => false,
            _ => {
                last.insert(callsite, now);
                true
            }
        }
    }
}

impl<S> Filter<S> for ExporterLogLimit {
    fn enabled(&self, _: &Metadata<'_>, _: &Context<'_, S>) -> bool {
        true
    }

    fn callsite_enabled(&self, metadata: &'static Metadata<'static>) -> Interest {
        // The exporter's call sites must be asked about each event; the rest never.
        if metadata.is_event() && from_exporter(metadata.target()) {
            Interest::sometimes()
        } else {
            Interest::always()
        }
    }

    fn event_enabled(&self, event: &tracing::Event<'_>, _: &Context<'_, S>) -> bool {
        let metadata = event.metadata();
        !from_exporter(metadata.target()) || self.admit(metadata.callsite(), Instant::now())
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;

    /// Counts the events it is given.
    struct Count(Arc<AtomicUsize>);

    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Count {
        fn on_event(&self, _: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn the_exporter_logs_once_per_interval_and_the_rest_always() {
        let seen = Arc::new(AtomicUsize::new(0));
        let subscriber = tracing_subscriber::registry()
            .with(Count(seen.clone()).with_filter(ExporterLogLimit::new(Duration::from_secs(3600))));
        tracing::subscriber::with_default(subscriber, || {
            for _ in 0..5 {
                tracing::error!(target: "opentelemetry_sdk", "export failed");
            }
            assert_eq!(seen.load(Ordering::Relaxed), 1, "the exporter's error was not limited");
            for _ in 0..5 {
                tracing::error!(target: "airlock_bus::publish", "a real problem");
            }
            assert_eq!(seen.load(Ordering::Relaxed), 6, "Airlock's own events were limited");
        });
    }

    #[test]
    fn only_airlocks_own_spans_are_exported() {
        let subscriber = tracing_subscriber::registry()
            .with(Count(Arc::new(AtomicUsize::new(0))).with_filter(tracing_subscriber::filter::filter_fn(exported)));
        tracing::subscriber::with_default(subscriber, || {
            let ours = tracing::info_span!(target: "airlock_executor::service", "run");
            let h2 = tracing::info_span!(target: "h2::proto::connection", "Connection");
            let chatty = tracing::debug_span!(target: "airlock_bus::consume", "poll");
            assert!(ours.metadata().is_some_and(exported));
            assert!(!h2.metadata().is_some_and(exported));
            assert!(!chatty.metadata().is_some_and(exported));
        });
    }

    #[test]
    fn a_call_site_is_admitted_again_after_the_interval() {
        let limit = ExporterLogLimit::new(Duration::from_secs(60));
        let callsite = tracing::callsite::Identifier(&CALLSITE);
        let t0 = Instant::now();
        assert!(limit.admit(callsite.clone(), t0));
        assert!(!limit.admit(callsite.clone(), t0 + Duration::from_secs(59)));
        assert!(limit.admit(callsite, t0 + Duration::from_secs(61)));
    }

    struct Site;
    static CALLSITE: Site = Site;
    impl tracing::callsite::Callsite for Site {
        fn set_interest(&self, _: Interest) {}
        fn metadata(&self) -> &Metadata<'_> {
            unreachable!("never asked in this test")
        }
    }
}
