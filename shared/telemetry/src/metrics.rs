//! Airlock's metrics: one set of instruments, recorded where the facts are seen once — the
//! bus's publisher (every event a service publishes: verdicts, decisions, outcomes,
//! violations, refusals), its deliveries (every handling, timed), the auditor (every event of
//! every request: stage latencies and audit lag), the executor's pool and each consumer's
//! queue.
//!
//! Without [`crate::init`] having installed a meter provider (a CLI, a unit test), every
//! instrument is a no-op: recording costs an atomic load and nothing else.
//!
//! Counters count since the process started; a restarted service starts again from zero, as
//! every Prometheus counter does (`rate()` and `increase()` account for it). What survives a
//! restart is exposed as a gauge read from durable state instead (the audit log's size).
//!
//! Names are OpenTelemetry's dotted ones; on the Prometheus endpoint they read with
//! underscores, `_total` for counters and `_seconds` for durations
//! (`airlock.requests.ended` → `airlock_requests_ended_total`). `docs/observability.md` lists
//! them all.

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Gauge, Histogram, Meter};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Histogram buckets for latencies, in seconds: from a fraction of a millisecond (an assessment,
/// a warm container) to minutes (a human answering an override, a long run).
const LATENCY_BUCKETS: [f64; 19] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
    900.0,
];

/// Whether a real meter provider is installed; pollers (queue depth) run only then.
static ENABLED: AtomicBool = AtomicBool::new(false);

pub(crate) fn set_enabled() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// Whether metrics go anywhere (a Prometheus endpoint or an OTLP collector).
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

struct Instruments {
    published: Counter<u64>,
    assessed: Counter<u64>,
    decided: Counter<u64>,
    ended: Counter<u64>,
    violations: Counter<u64>,
    refusals: Counter<u64>,
    deliveries: Counter<u64>,
    delivery_duration: Histogram<f64>,
    stage_duration: Histogram<f64>,
    audit_lag: Histogram<f64>,
    consumer_pending: Gauge<u64>,
    consumer_ack_pending: Gauge<u64>,
    audit_log_size: Gauge<u64>,
    override_answer_time: Histogram<f64>,
}

/// Buckets for people's answers: seconds to an hour, where approval fatigue shows as a drift
/// toward the first buckets.
const ANSWER_BUCKETS: [f64; 11] = [1.0, 3.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0];

static INSTRUMENTS: OnceLock<Instruments> = OnceLock::new();

pub(crate) fn meter() -> Meter {
    opentelemetry::global::meter("airlock")
}

/// The instruments, made on first use from the global meter provider: [`crate::init`] installs
/// it before anything records, so they bind to the real one in a service.
fn instruments() -> &'static Instruments {
    INSTRUMENTS.get_or_init(|| {
        let meter = meter();
        let seconds = |name: &'static str, description: &'static str| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(description)
                .with_boundaries(LATENCY_BUCKETS.to_vec())
                .build()
        };
        Instruments {
            published: meter
                .u64_counter("airlock.events.published")
                .with_description("Events this service published (duplicates the stream dropped not counted), by kind")
                .build(),
            assessed: meter
                .u64_counter("airlock.requests.assessed")
                .with_description("Requests assessed, by verdict (level)")
                .build(),
            decided: meter
                .u64_counter("airlock.requests.decided")
                .with_description("Signed decisions, by outcome (approved, denied) and approver (policy, human, deadline)")
                .build(),
            ended: meter
                .u64_counter("airlock.requests.ended")
                .with_description("Terminal events, by outcome (finished, failed, denied, expired)")
                .build(),
            violations: meter
                .u64_counter("airlock.violations")
                .with_description("Runs stopped for a limit violation, by kind")
                .build(),
            refusals: meter
                .u64_counter("airlock.refusals")
                .with_description("Messages refused (each is also an audited event), by reason")
                .build(),
            deliveries: meter
                .u64_counter("airlock.deliveries")
                .with_description("Messages a service's consumer handled, by consumer and result")
                .build(),
            delivery_duration: seconds(
                "airlock.delivery.duration",
                "Time from a message's delivery to its settling (ack, redelivery or dead letter), by consumer and result",
            ),
            stage_duration: seconds(
                "airlock.request.stage.duration",
                "Time between a request's events, by stage (assess, decide, start, run, total), from the events' own times",
            ),
            audit_lag: seconds(
                "airlock.audit.lag",
                "Time from an event's storage in the events stream to its entry being durable in the audit log",
            ),
            consumer_pending: meter
                .u64_gauge("airlock.consumer.pending")
                .with_description("Messages waiting in the stream for a service's consumer (not yet delivered)")
                .build(),
            consumer_ack_pending: meter
                .u64_gauge("airlock.consumer.ack_pending")
                .with_description("Messages delivered to a service's consumer and not yet settled")
                .build(),
            audit_log_size: meter
                .u64_gauge("airlock.audit.log.size")
                .with_description("Entries in the audit log (its tree size: durable, survives restarts)")
                .build(),
            override_answer_time: meter
                .f64_histogram("airlock.overrides.answer.time")
                .with_unit("s")
                .with_description("Time from an override request to the people's decision, by outcome (approved, denied)")
                .with_boundaries(ANSWER_BUCKETS.to_vec())
                .build(),
        }
    })
}

/// An event this process published (`kind` as the wire names it).
pub fn published(kind: &'static str) {
    instruments().published.add(1, &[KeyValue::new("kind", kind)]);
}

/// An assessment's verdict.
pub fn assessed(level: &'static str) {
    instruments().assessed.add(1, &[KeyValue::new("level", level)]);
}

/// A signed decision.
pub fn decided(outcome: &'static str, approver: &'static str) {
    instruments().decided.add(
        1,
        &[KeyValue::new("outcome", outcome), KeyValue::new("approver", approver)],
    );
}

/// A terminal event, and the violation that ended its run if any.
pub fn ended(outcome: &'static str, violation: Option<&'static str>) {
    let i = instruments();
    i.ended.add(1, &[KeyValue::new("outcome", outcome)]);
    if let Some(kind) = violation {
        i.violations.add(1, &[KeyValue::new("kind", kind)]);
    }
}

/// A refused message.
pub fn refused(reason: &'static str) {
    instruments().refusals.add(1, &[KeyValue::new("reason", reason)]);
}

/// A delivery settled: `result` is `acked`, `retried`, `dead_lettered` or `interrupted`.
pub fn delivery(consumer: &str, result: &'static str, elapsed: Duration) {
    let i = instruments();
    let attributes = [
        KeyValue::new("consumer", consumer.to_owned()),
        KeyValue::new("result", result),
    ];
    i.deliveries.add(1, &attributes);
    i.delivery_duration.record(elapsed.as_secs_f64(), &attributes);
}

/// People decided an override request `waited` after it was asked.
pub fn override_answered(approved: bool, waited: Duration) {
    let outcome = if approved { "approved" } else { "denied" };
    instruments()
        .override_answer_time
        .record(waited.as_secs_f64(), &[KeyValue::new("outcome", outcome)]);
}

/// The time a request spent in one stage.
pub fn stage(stage: &'static str, elapsed: Duration) {
    instruments()
        .stage_duration
        .record(elapsed.as_secs_f64(), &[KeyValue::new("stage", stage)]);
}

/// How long an event waited to be durable in the audit log.
pub fn audit_lag(elapsed: Duration) {
    instruments().audit_lag.record(elapsed.as_secs_f64(), &[]);
}

/// The audit log's size after a commit.
pub fn audit_log_size(entries: u64) {
    instruments().audit_log_size.record(entries, &[]);
}

/// A consumer's queue, as the server last reported it.
pub fn consumer_depth(consumer: &str, pending: u64, ack_pending: u64) {
    let i = instruments();
    let attributes = [KeyValue::new("consumer", consumer.to_owned())];
    i.consumer_pending.record(pending, &attributes);
    i.consumer_ack_pending.record(ack_pending, &attributes);
}

/// The executor's warm pool, read when metrics are collected.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolReading {
    /// Started and waiting for a job.
    pub idle: u64,
    /// Being started.
    pub starting: u64,
    /// Jobs that found a warm container, and jobs that had to wait for one to start.
    pub hits: u64,
    pub misses: u64,
}

/// Registers `read` as the source of the warm pool's gauges (`airlock.pool.containers` by
/// state, `airlock.pool.takes` by result). Called once by the executor.
pub fn watch_pool(read: impl Fn() -> PoolReading + Send + Sync + 'static) {
    let read = std::sync::Arc::new(read);
    let meter = meter();
    let containers = read.clone();
    meter
        .u64_observable_gauge("airlock.pool.containers")
        .with_description("Warm containers of the executor's pool, by state (idle, starting)")
        .with_callback(move |observer| {
            let reading = containers();
            observer.observe(reading.idle, &[KeyValue::new("state", "idle")]);
            observer.observe(reading.starting, &[KeyValue::new("state", "starting")]);
        })
        .build();
    meter
        .u64_observable_counter("airlock.pool.takes")
        .with_description("Jobs given a warm container (hit) or made to wait for one (miss)")
        .with_callback(move |observer| {
            let reading = read();
            observer.observe(reading.hits, &[KeyValue::new("result", "hit")]);
            observer.observe(reading.misses, &[KeyValue::new("result", "miss")]);
        })
        .build();
}

/// What the executor depends on and holds, read when metrics are collected.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ExecutorReading {
    /// Whether the container engine answered its last ping.
    pub engine_reachable: bool,
    /// How far behind the audit log is as this executor sees it: the age of the oldest decision
    /// it holds or ran that the auditor has not logged yet (zero when none).
    pub audit_lag: Duration,
    /// Requests held waiting (for a slot, the engine or the audit log), and runs in progress.
    pub waiting: u64,
    pub running: u64,
}

/// Registers `read` as the source of the executor's gauges (`airlock.executor.engine.reachable`,
/// `airlock.executor.audit.lag`, `airlock.executor.requests` by state). Called once by the
/// executor.
pub fn watch_executor(read: impl Fn() -> ExecutorReading + Send + Sync + 'static) {
    let read = std::sync::Arc::new(read);
    let meter = meter();
    let engine = read.clone();
    meter
        .u64_observable_gauge("airlock.executor.engine.reachable")
        .with_description("1 while the executor's container engine answers, 0 while it is unreachable")
        .with_callback(move |observer| observer.observe(u64::from(engine().engine_reachable), &[]))
        .build();
    let lag = read.clone();
    meter
        .f64_observable_gauge("airlock.executor.audit.lag")
        .with_unit("s")
        .with_description(
            "How far behind the audit log is as the executor sees it: the age of the oldest decision it holds or ran that is not logged yet",
        )
        .with_callback(move |observer| observer.observe(lag().audit_lag.as_secs_f64(), &[]))
        .build();
    meter
        .u64_observable_gauge("airlock.executor.requests")
        .with_description("Requests the executor holds, by state (waiting, running)")
        .with_callback(move |observer| {
            let reading = read();
            observer.observe(reading.waiting, &[KeyValue::new("state", "waiting")]);
            observer.observe(reading.running, &[KeyValue::new("state", "running")]);
        })
        .build();
}

/// The override requests a gate holds waiting for a human, read when metrics are collected.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OverridesReading {
    /// Requests waiting for an answer.
    pub pending: u64,
    /// How long the oldest of them has waited (zero when none).
    pub oldest_age: Duration,
    /// Time left before the nearest deadline (zero when none, or when one is already due).
    pub nearest_deadline: Duration,
}

/// Registers `read` as the source of the gate's gauges (`airlock.overrides.pending`,
/// `airlock.overrides.oldest.age`, `airlock.overrides.deadline.remaining`). Called once by the
/// override-gate.
pub fn watch_overrides(read: impl Fn() -> OverridesReading + Send + Sync + 'static) {
    let read = std::sync::Arc::new(read);
    let meter = meter();
    let pending = read.clone();
    meter
        .u64_observable_gauge("airlock.overrides.pending")
        .with_description("Override requests waiting for a human's answer")
        .with_callback(move |observer| observer.observe(pending().pending, &[]))
        .build();
    let oldest = read.clone();
    meter
        .f64_observable_gauge("airlock.overrides.oldest.age")
        .with_unit("s")
        .with_description("How long the oldest pending override request has waited (0 when none)")
        .with_callback(move |observer| observer.observe(oldest().oldest_age.as_secs_f64(), &[]))
        .build();
    meter
        .f64_observable_gauge("airlock.overrides.deadline.remaining")
        .with_unit("s")
        .with_description("Time left before the nearest deadline of a pending override request (0 when none)")
        .with_callback(move |observer| observer.observe(read().nearest_deadline.as_secs_f64(), &[]))
        .build();
}

/// The audit store's use, sampled by the auditor: bytes of every object of the log, and for a
/// local directory store its volume's used and total bytes (`airlock.audit.store.used`,
/// `airlock.audit.store.volume.used`, `airlock.audit.store.volume.size`).
pub fn audit_store_usage(bytes_used: u64, volume: Option<(u64, u64)>) {
    static GAUGES: std::sync::OnceLock<[Gauge<u64>; 3]> = std::sync::OnceLock::new();
    let [used, volume_used, volume_size] = GAUGES.get_or_init(|| {
        let bytes = |name: &'static str, description: &'static str| {
            meter()
                .u64_gauge(name)
                .with_unit("By")
                .with_description(description)
                .build()
        };
        [
            bytes(
                "airlock.audit.store.used",
                "Bytes the audit log takes in its store (every object)",
            ),
            bytes(
                "airlock.audit.store.volume.used",
                "Bytes used of the volume a local-directory audit store is on (reserved blocks count as used)",
            ),
            bytes(
                "airlock.audit.store.volume.size",
                "Size of the volume a local-directory audit store is on",
            ),
        ]
    });
    used.record(bytes_used, &[]);
    if let Some((volume_bytes_used, size)) = volume {
        volume_used.record(volume_bytes_used, &[]);
        volume_size.record(size, &[]);
    }
}

/// Records when this service started, so that a reset counter can be told from a drop, and which
/// build it runs (`airlock.build.info`, always 1, labelled with the version). Called by a
/// service as it starts (not by a CLI, whose short life is nothing to measure).
pub fn record_start() {
    meter()
        .u64_gauge("airlock.build.info")
        .with_description("Always 1: the version of the build this service runs, as its label")
        .build()
        .record(1, &[KeyValue::new("version", env!("CARGO_PKG_VERSION"))]);
    let start = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    meter()
        .f64_gauge("airlock.process.start_time")
        .with_unit("s")
        .with_description("When this service's process started (Unix time): its counters count from here")
        .build()
        .record(start, &[]);
}
