//! The auditor's set-up and loop: take the log's lease, finish any commit a crash interrupted
//! ([`crate::recovery`]), then consume every message of the events stream in stream order
//! ([`crate::consume`]) and commit in batches ([`crate::commit`]), acknowledging the stream only
//! once a batch is durable.
//!
//! Commits are grouped, not timed: a batch is committed as soon as the previous commit is
//! durable, holding everything that arrived meanwhile. A lone request is logged and receipted in
//! milliseconds; under load, batches grow by themselves; checkpoints are never more than
//! `commit_linger` (at most 1 s) behind an event.

use crate::config::Config;
use crate::crash::CrashPoint;
use crate::error::{Error, StoreFailure};
use crate::head::HeadStore;
use airlock_auditlog::entry::{Entry, Prepared};
use airlock_auditlog::store::Store;
use airlock_auditlog::writer::LogWriter;
use airlock_bus::runner::Runner;
use airlock_bus::{Backoff, ServiceCounters, retry_judged};
use airlock_protocol::EventKind;
use airlock_protocol::roles;
use airlock_protocol::subjects::{AUDITOR_BUCKET, UNKNOWN_REQUEST};
use async_nats::jetstream;
use futures::FutureExt as _;
use futures::StreamExt as _;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How long a pending activity report waits for its run's terminal event, which the executor
/// publishes right after it (well under a millisecond apart on one machine).
const TERMINAL_FOLLOWS: Duration = Duration::from_millis(3);

/// Runs the auditor until `shutdown`, then commits what it holds and returns.
pub async fn run(client: async_nats::Client, config: Config, shutdown: CancellationToken) -> Result<(), Error> {
    config.validate()?;
    let keys = config.signing_keys()?;
    let store = Store::open(&config.store).map_err(|e| Error::store("opening the store", e))?;
    store.check().await.map_err(|e| Error::store("checking the store", e))?;
    let js = jetstream::new(client.clone());
    let opened = retry_judged(
        &shutdown,
        Backoff::OUTAGE,
        "opening the auditor's bucket",
        |_| false,
        || js.get_key_value(AUDITOR_BUCKET),
    )
    .await;
    let Ok(kv) = opened else {
        return Ok(());
    };
    let counters = ServiceCounters::default();
    // Its consuming is its own (every event, appended in stream order, acknowledged by batch):
    // the runner answers for it and stops it.
    let runner = Runner::start(&roles::AUDITOR, client, counters.clone(), shutdown.clone()).await?;
    airlock_bus::consume::watch_depth(
        js.clone(),
        airlock_protocol::subjects::EVENTS_STREAM,
        roles::AUDITOR.consumes.durable,
        shutdown.clone(),
    );

    tokio::spawn(watch_store_volume(
        store.clone(),
        config.store_warn_percent,
        counters.clone(),
        shutdown.clone(),
    ));
    if airlock_telemetry::metrics::enabled() {
        tokio::spawn(sample_store_usage(store.clone(), shutdown.clone()));
    }

    let writer_id = format!("{}-{}", std::process::id(), airlock_protocol::MessageId::new());
    // The log may have been signed by keys since retired (a rotation): its key set counts.
    let trusted: Vec<_> = config.trusted_keys(&keys)?.into_iter().map(|k| k.key).collect();
    let adopt = crate::recovery::adopt_from_store(&store, &config.origin, &trusted).await;
    let head = HeadStore::acquire(kv, &config.origin, &writer_id, config.lease, &shutdown, adopt).await?;
    let result = match head {
        None => Ok(()),
        Some(head) => {
            tracing::info!(writer = %writer_id, size = head.head.size, store = store.url(), "auditor holds the log");
            match Auditor::start(config, keys, store, js, head, counters, &shutdown).await {
                Ok(mut auditor) => {
                    let result = match auditor.sign_with_current_keys(&shutdown).await {
                        Ok(()) => auditor.consume(&shutdown).await,
                        Err(e) => Err(e),
                    };
                    if result.is_ok() {
                        auditor.head.release().await;
                    }
                    result
                }
                Err(e) => Err(e),
            }
        }
    };
    runner.stop().await;
    result
}

/// The log's one writer, between commits.
pub(crate) struct Auditor {
    pub(crate) config: Config,
    pub(crate) store: Store,
    pub(crate) js: jetstream::Context,
    pub(crate) writer: LogWriter,
    pub(crate) head: HeadStore,
    pub(crate) counters: ServiceCounters,
    pub(crate) crash: Arc<CrashPoint>,
    /// Entries of each request not yet ended, for its receipt.
    pub(crate) requests: HashMap<String, Vec<u64>>,
    /// Events-stream sequence the committed tree covers up to.
    pub(crate) committed_seq: u64,
    /// The next stream sequence to append.
    pub(crate) next_seq: u64,
    pub(crate) pending: Vec<Prepared>,
    /// The highest-sequence message in `pending`: acking it acks the batch (AckPolicy::All).
    pub(crate) pending_last: Option<jetstream::Message>,
    pub(crate) pending_since: Option<Instant>,
    /// Messages that arrived ahead of a missing sequence number.
    pub(crate) waiting: BTreeMap<u64, jetstream::Message>,
    pub(crate) gap_since: Option<Instant>,
    pub(crate) last_head_write: Instant,
    pub(crate) metrics: crate::metrics::AuditMetrics,
    /// What is stored in full and what by digest only (per-client byte budgets).
    pub(crate) retention: crate::retention::Retention,
    /// Deletes a finished commit leaves behind (`commit::tidy_after`), awaited at shutdown.
    pub(crate) tidying: tokio_util::task::TaskTracker,
    /// The last committed batch's finish (tiles, checkpoint, log messages, ack), which waits
    /// for the one before; `None` once it was seen to end.
    pub(crate) finishing: Option<tokio::task::JoinHandle<Result<(), Error>>>,
    /// Committed batches whose finish may not have ended: the next batch carries their tiles.
    pub(crate) unfinished: Vec<crate::commit::Unfinished>,
}

/// How often the audit store's use is measured (a listing of the whole store).
const STORE_USAGE_EVERY: Duration = Duration::from_secs(60);

/// Measures the audit store's use for its gauges until `shutdown`, standby or writer alike (a
/// standby's store fills too); a failed measure is logged and tried at the next tick.
async fn sample_store_usage(store: Store, shutdown: CancellationToken) {
    let mut tick = tokio::time::interval(STORE_USAGE_EVERY);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        match store.usage().await {
            Ok(usage) => {
                airlock_telemetry::metrics::audit_store_usage(usage.bytes_used, usage.volume.map(|v| (v.used, v.size)))
            }
            Err(e) => tracing::warn!(error = %e, "measuring the audit store's use failed"),
        }
    }
}

/// How often the store's volume is looked at (one `statvfs`).
const STORE_VOLUME_EVERY: Duration = Duration::from_secs(10);

/// Says in the auditor's status (`airlock status` exits non-zero) while the local store's
/// volume is used beyond `warn_percent`, before a full disk stops the log and, with it,
/// every run (`[auditor] required`).
async fn watch_store_volume(store: Store, warn_percent: u8, counters: ServiceCounters, shutdown: CancellationToken) {
    let mut tick = tokio::time::interval(STORE_VOLUME_EVERY);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        match store.volume() {
            None => return,
            Some(Ok(volume)) if volume.fraction() * 100.0 >= f64::from(warn_percent) => counters.set_problem(
                "audit_store",
                format!(
                    "the audit store's volume is {:.0}% used ({} of {} MiB; said from {warn_percent}%, `[auditor] store_warn_percent`)",
                    volume.fraction() * 100.0,
                    volume.used / (1024 * 1024),
                    volume.size / (1024 * 1024),
                ),
            ),
            Some(Ok(_)) => counters.clear_problem("audit_store"),
            Some(Err(e)) => tracing::warn!(error = %e, "reading the size of the audit store's volume failed"),
        }
    }
}

impl Auditor {
    pub(crate) fn new(
        config: Config,
        store: Store,
        js: jetstream::Context,
        writer: LogWriter,
        head: HeadStore,
        counters: ServiceCounters,
        requests: HashMap<String, Vec<u64>>,
    ) -> Self {
        let committed_seq = head.head.last_stream_seq;
        airlock_telemetry::metrics::audit_log_size(head.head.size);
        Auditor {
            retention: crate::retention::Retention::new(config.retention.clone()),
            config,
            store,
            js,
            writer,
            head,
            counters,
            crash: Arc::new(CrashPoint::from_env()),
            requests,
            committed_seq,
            next_seq: committed_seq + 1,
            pending: Vec::new(),
            pending_last: None,
            pending_since: None,
            waiting: BTreeMap::new(),
            gap_since: None,
            last_head_write: Instant::now(),
            metrics: Default::default(),
            tidying: tokio_util::task::TaskTracker::new(),
            finishing: None,
            unfinished: Vec::new(),
        }
    }

    pub(crate) fn index(&mut self, entry: &Entry) {
        if entry.request_id != UNKNOWN_REQUEST {
            self.requests
                .entry(entry.request_id.clone())
                .or_default()
                .push(entry.seq);
        }
    }

    /// The loop: take what the stream delivers, commit groups, keep the lease, resolve gaps.
    async fn consume(&mut self, shutdown: &CancellationToken) -> Result<(), Error> {
        self.record_expired_messages().await?;
        let mut messages = self.open_messages(shutdown).await?;
        let mut tick = tokio::time::interval((self.config.lease / 4).max(Duration::from_millis(50)));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut prune_tick = tokio::time::interval(self.config.prune_interval);
        let mut hangups = crate::keys::hangups();
        loop {
            let linger_until = self.pending_since.map(|t| t + self.config.commit_linger);
            tokio::select! {
                biased;
                _ = shutdown.cancelled() => break,
                _ = sleep_until(linger_until), if linger_until.is_some() => self.commit(shutdown).await?,
                item = messages.next() => {
                    let mut healthy = self.take(item);
                    healthy = self.take_ready(&mut messages, healthy);
                    // A run's activity report is published right before its terminal event:
                    // committing it alone would make the terminal (and the receipt Mai waits
                    // for) wait for a whole commit. So it waits a moment for what follows.
                    let mut waits = 0;
                    while healthy && self.config.commit_linger.is_zero() && waits < 3 && self.terminal_follows() {
                        waits += 1;
                        match tokio::time::timeout(TERMINAL_FOLLOWS, messages.next()).await {
                            Ok(item) => {
                                healthy = self.take(item);
                                healthy = self.take_ready(&mut messages, healthy);
                            }
                            Err(_) => break,
                        }
                    }
                    if self.config.commit_linger.is_zero() || self.pending.len() >= self.config.max_batch {
                        self.commit(shutdown).await?;
                    }
                    if !healthy {
                        messages = self.open_messages(shutdown).await?;
                    }
                },
                _ = tick.tick() => {
                    self.surface_finish_failure().await?;
                    self.resolve_gap();
                    if self.pending.is_empty() && self.last_head_write.elapsed() >= self.config.lease / 3 {
                        self.head.renew(shutdown).await?;
                        self.last_head_write = Instant::now();
                    }
                }
                _ = prune_tick.tick(), if self.config.retention_days.is_some() => self.spawn_prune(),
                _ = crate::keys::next_hangup(&mut hangups) => self.reload_keys(shutdown).await?,
            }
        }
        // The final checkpoint: whatever arrived before shutdown.
        if !self.pending.is_empty() {
            self.commit(&CancellationToken::new()).await?;
        }
        self.finish_all().await?;
        self.tidying.close();
        self.tidying.wait().await;
        Ok(())
    }

    /// Group commit: everything delivered while the last commit was written is taken now,
    /// without waiting, to be committed together. False when the stream must be reopened.
    fn take_ready<S>(&mut self, messages: &mut S, mut healthy: bool) -> bool
    where
        S: futures::Stream<Item = Result<jetstream::Message, jetstream::consumer::pull::MessagesError>> + Unpin,
    {
        while healthy && self.pending.len() < self.config.max_batch {
            match messages.next().now_or_never() {
                Some(item) => healthy = self.take(item),
                None => break,
            }
        }
        healthy
    }

    /// Whether the newest pending event is a run's activity report or kernel record whose terminal event is not
    /// pending yet (the executor publishes it next).
    fn terminal_follows(&self) -> bool {
        let Some(last) = self.pending.last() else {
            return false;
        };
        (last.entry.kind == EventKind::Activity.as_str() || last.entry.kind == EventKind::Observed.as_str())
            && !self
                .pending
                .iter()
                .any(|p| p.entry.is_terminal() && p.entry.request_id == last.entry.request_id)
    }

    /// Accepts one item of the message stream; false when the stream must be reopened.
    fn take(&mut self, item: Option<Result<jetstream::Message, jetstream::consumer::pull::MessagesError>>) -> bool {
        match item {
            Some(Ok(message)) => {
                self.accept(message);
                true
            }
            Some(Err(e)) => {
                tracing::warn!(error = %e, "events stream error; reopening the consumer");
                false
            }
            None => false,
        }
    }

    fn spawn_prune(&self) {
        let Some(days) = self.config.retention_days else { return };
        let store = self.store.clone();
        let origin = self.config.origin.clone();
        let Some(key) = self.writer.keys().first().cloned() else {
            return;
        };
        // Marks signed before a key rotation are read with the keys the log trusts.
        let trusted: Vec<_> = match self.config.trusted_keys(self.writer.keys()) {
            Ok(keys) => keys.into_iter().map(|k| k.key).collect(),
            Err(e) => {
                tracing::warn!(error = %airlock_bus::error_text(&e), "retention run skipped: the trusted keys cannot be read");
                return;
            }
        };
        let before = airlock_protocol::now_ms() - (days as i64) * 86_400_000;
        tokio::spawn(async move {
            if let Err(e) = airlock_auditlog::prune::prune(&store, &origin, &key, &trusted, before).await {
                tracing::warn!(error = %airlock_bus::error_text(&e), "retention run failed");
            }
        });
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Retries a storage step through outages until it succeeds, fails permanently (a refused
/// rewrite), or the auditor shuts down.
pub(crate) async fn store_step<T, E, F, Fut>(
    shutdown: &CancellationToken,
    what: &'static str,
    step: F,
) -> Result<T, Error>
where
    E: StoreFailure,
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    let backoff = Backoff {
        first: Duration::from_millis(100),
        max: Duration::from_secs(5),
        patience: None,
    };
    retry_judged(shutdown, backoff, what, E::is_permanent, step)
        .await
        .map_err(Error::from_store_retry)
}
