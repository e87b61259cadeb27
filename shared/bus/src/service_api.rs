//! The NATS service API (`$SRV.PING`, `$SRV.INFO`, `$SRV.STATS`) for every Airlock service, with
//! the service's own counters in the stats reply.

use crate::BusError;
use airlock_protocol::roles::ServiceRole;
use async_nats::service::ServiceExt as _;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The key of the service API's INFO metadata giving the service's metrics URL.
pub const METRICS_METADATA: &str = "metrics";

/// Named counters a service bumps as it works (`handled`, `refused`, `approved`, ...), and the
/// problems it has now (what it depends on is away, it cannot do its work): a service with a
/// problem is up but not healthy, and `airlock status` says so and exits non-zero.
#[derive(Clone, Default)]
pub struct ServiceCounters {
    inner: Arc<Mutex<BTreeMap<&'static str, Arc<AtomicU64>>>>,
    problems: Arc<Mutex<BTreeMap<&'static str, String>>>,
    facts: Arc<Mutex<BTreeMap<&'static str, serde_json::Value>>>,
}

impl ServiceCounters {
    pub fn add(&self, name: &'static str, n: u64) {
        let counter = {
            let mut map = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            map.entry(name).or_default().clone()
        };
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub fn incr(&self, name: &'static str) {
        self.add(name, 1);
    }

    pub fn snapshot(&self) -> BTreeMap<String, u64> {
        let map = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        map.iter()
            .map(|(k, v)| ((*k).to_owned(), v.load(Ordering::Relaxed)))
            .collect()
    }

    /// Records a problem (`what` names the thing: `engine`, `audit_log`, ...) until cleared.
    pub fn set_problem(&self, what: &'static str, detail: impl Into<String>) {
        let mut problems = self.problems.lock().unwrap_or_else(|p| p.into_inner());
        problems.insert(what, detail.into());
    }

    pub fn clear_problem(&self, what: &'static str) {
        let mut problems = self.problems.lock().unwrap_or_else(|p| p.into_inner());
        problems.remove(what);
    }

    pub fn problems(&self) -> BTreeMap<String, String> {
        let problems = self.problems.lock().unwrap_or_else(|p| p.into_inner());
        problems.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect()
    }

    /// Records what the service is, as opposed to what it counts or lacks (`runtimes`: the
    /// container runtimes an executor checked with its engine and offers).
    pub fn set_fact(&self, what: &'static str, value: impl Into<serde_json::Value>) {
        let mut facts = self.facts.lock().unwrap_or_else(|p| p.into_inner());
        facts.insert(what, value.into());
    }

    pub fn facts(&self) -> BTreeMap<String, serde_json::Value> {
        let facts = self.facts.lock().unwrap_or_else(|p| p.into_inner());
        facts.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect()
    }

    /// What the service API's STATS and the status endpoint answer: `{"counters": {..},
    /// "problems": {..}, "facts": {..}}`.
    pub fn report(&self) -> serde_json::Value {
        serde_json::json!({ "counters": self.snapshot(), "problems": self.problems(), "facts": self.facts() })
    }
}

/// Registers the service; it answers PING/INFO/STATS until the returned service is dropped or
/// stopped. Its INFO metadata names its metrics endpoint, if it serves one. The counters and
/// problems ([`ServiceCounters::report`]) appear in each endpoint's `data` in STATS replies, and
/// on the service's status endpoint (`airlock.status.<name>`) as JSON.
pub async fn start_service(
    client: &async_nats::Client,
    role: &ServiceRole,
    counters: ServiceCounters,
) -> Result<async_nats::service::Service, BusError> {
    let stats_counters = counters.clone();
    // Where this process serves its Prometheus metrics, for `airlock status` and for anyone
    // asking `$SRV.INFO`: with free ports by default, the service is the one who knows.
    let metadata = airlock_telemetry::metrics_url()
        .map(|url| std::collections::HashMap::from([(METRICS_METADATA.to_owned(), url.to_owned())]))
        .unwrap_or_default();
    let service = client
        .service_builder()
        .description(role.description)
        .metadata(metadata)
        .stats_handler(move |_endpoint, _stats| stats_counters.report())
        .start(role.name, env!("CARGO_PKG_VERSION"))
        .await
        .map_err(BusError::Service)?;
    airlock_telemetry::metrics::record_start();
    let mut status = service
        .endpoint(role.status_subject())
        .await
        .map_err(BusError::Service)?;
    tokio::spawn(async move {
        use futures::StreamExt as _;
        while let Some(request) = status.next().await {
            let body = serde_json::to_vec(&counters.report()).unwrap_or_default();
            if let Err(e) = request.respond(Ok(body.into())).await {
                tracing::debug!(error = %e, "status reply failed");
            }
        }
    });
    Ok(service)
}
