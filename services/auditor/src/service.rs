//! The auditor's loop: take the log's lease, finish any commit a crash interrupted, then consume
//! every message of the events stream in stream order, append each as an entry, and commit in
//! batches (at most `batch_interval_ms` after the first event of a batch, so checkpoints are at
//! most 1 s apart while events arrive), acknowledging the stream only once a batch is durable.
//!
//! One commit: blobs → staging object → swap of the head in the KV bucket (the commit point,
//! guarded by the lease) → tiles → `checkpoint` → publish entries, checkpoint and receipts →
//! ack → delete the staging object. Killed anywhere, a restarted auditor either redoes the
//! batch (before the swap: nothing of it was committed) or finishes it from the staging object
//! (after the swap), and skips redelivered messages its head already covers.

use crate::config::{Config, ConfigError};
use crate::crash::CrashPoint;
use crate::head::{Head, HeadError, HeadStore, pause};
use airlock_auditlog::entry::{Entry, Prepared};
use airlock_auditlog::proof::TlogProof;
use airlock_auditlog::reader::{LogReader, TileReader};
use airlock_auditlog::store::{Store, StoreError};
use airlock_auditlog::tile::{TILE_WIDTH, TileId, parse_bundle};
use airlock_auditlog::writer::{Batch, LogWriter, Staged, write_blobs};
use airlock_bus::ServiceCounters;
use airlock_protocol::subjects::{
    AUDIT_CHECKPOINT, AUDITOR_BUCKET, EVENTS_STREAM, UNKNOWN_REQUEST, audit_entry_subject, audit_receipt_subject,
};
use airlock_protocol::{AuditReceipt, Envelope, RequestId, SigningKey};
use async_nats::jetstream::{self, consumer::pull};
use bytes::Bytes;
use futures::StreamExt as _;
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

/// Retries a storage step through outages until it succeeds or the auditor shuts down. (A
/// macro rather than a function taking a closure, so the futures stay `Send` for any caller.)
macro_rules! retry {
    ($shutdown:expr, $what:expr, $step:expr) => {{
        let mut backoff = Duration::from_millis(100);
        loop {
            match $step.await {
                Ok(value) => break Ok::<_, Error>(value),
                Err(e) => {
                    let text = e.to_string();
                    if text.contains("refusing to rewrite") {
                        break Err(Error::Log(format!("{}: {text}", $what)));
                    }
                    tracing::warn!(error = %text, what = $what, "audit store step failed; retrying");
                }
            }
            if !pause($shutdown, backoff).await {
                break Err(Error::Log(format!("shut down while {}", $what)));
            }
            backoff = (backoff * 2).min(Duration::from_secs(5));
        }
    }};
}

pub const SERVICE_NAME: &str = "airlock-auditor";
/// The auditor's durable consumer on the events stream.
pub const DURABLE: &str = "auditor";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("audit store: {0}")]
    Store(#[from] StoreError),
    #[error(transparent)]
    Head(#[from] HeadError),
    #[error("audit log: {0}")]
    Log(String),
    #[error("NATS: {0}")]
    Nats(String),
    #[error("service API: {0}")]
    Service(String),
}

fn log_error(e: impl std::fmt::Display) -> Error {
    Error::Log(e.to_string())
}

/// Runs the auditor until `shutdown`, then commits what it holds and returns.
pub async fn run(client: async_nats::Client, config: Config, shutdown: CancellationToken) -> Result<(), Error> {
    config.validate()?;
    let keys = config.signing_keys()?;
    let store = Store::open(&config.store)?;
    store.check().await?;
    let js = jetstream::new(client.clone());
    let Some(kv) = open_bucket(&js, &shutdown).await else {
        return Ok(());
    };
    let counters = ServiceCounters::default();
    let service = airlock_bus::start_service(&client, SERVICE_NAME, "The audit log's only writer", counters.clone())
        .await
        .map_err(|e| Error::Service(e.to_string()))?;

    let writer_id = format!("{}-{}", std::process::id(), airlock_protocol::MessageId::new());
    let lease = Duration::from_millis(config.lease_ms);
    let adopt = adopt_from_store(&store, &config.origin, &keys).await;
    let head = HeadStore::acquire(kv, &config.origin, &writer_id, lease, &shutdown, adopt).await?;
    let result = match head {
        None => Ok(()),
        Some(head) => {
            tracing::info!(writer = %writer_id, size = head.head.size, store = store.url(), "auditor holds the log");
            match Auditor::start(config, keys, store, js, head, counters, &shutdown).await {
                Ok(mut auditor) => {
                    let result = auditor.consume(&shutdown).await;
                    if result.is_ok() {
                        auditor.head.release().await;
                    }
                    result
                }
                Err(e) => Err(e),
            }
        }
    };
    let _ = service.stop().await;
    result
}

async fn open_bucket(js: &jetstream::Context, shutdown: &CancellationToken) -> Option<jetstream::kv::Store> {
    loop {
        match js.get_key_value(AUDITOR_BUCKET).await {
            Ok(kv) => return Some(kv),
            Err(e) => tracing::warn!(error = %e, bucket = AUDITOR_BUCKET, "key-value bucket not ready; waiting"),
        }
        if !pause(shutdown, Duration::from_secs(1)).await {
            return None;
        }
    }
}

/// The head for a KV bucket that has none: an empty log, or the log already in the store (the
/// bucket was lost), whose stream position is read back from its last entries.
async fn adopt_from_store(store: &Store, origin: &str, keys: &[SigningKey]) -> Result<Head, HeadError> {
    let corrupt = |e: String| HeadError::Corrupt(format!("adopting the log in the store: {e}"));
    let reader = LogReader::new(store.clone());
    let (size, root, last_stream_seq) = match reader.checkpoint().await.map_err(|e| corrupt(e.to_string()))? {
        None => (0, airlock_auditlog::hash::empty_root(), 0),
        Some((signed, _)) => {
            let verifiers: Vec<_> = keys.iter().map(SigningKey::verifier).collect();
            signed
                .verify(origin, &verifiers)
                .map_err(|e| corrupt(format!("its checkpoint: {e}")))?;
            let size = signed.checkpoint.size;
            let mut last = 0;
            let mut to = size;
            while to > 0 && last == 0 {
                let from = to.saturating_sub(TILE_WIDTH);
                let entries = reader
                    .entries(from, to, size)
                    .await
                    .map_err(|e| corrupt(e.to_string()))?;
                last = entries
                    .iter()
                    .rev()
                    .find_map(|(_, e)| e.stream_seq.or(e.gap.as_ref().map(|g| g.last_stream_seq)))
                    .unwrap_or(0);
                to = from;
            }
            tracing::warn!(
                size,
                last_stream_seq = last,
                "no head in the KV bucket: adopting the log found in the store"
            );
            (size, signed.checkpoint.root, last)
        }
    };
    Ok(Head {
        origin: origin.to_owned(),
        size,
        root: root.to_hex(),
        last_stream_seq,
        staging: None,
        writer: String::new(),
        lease_until_ms: 0,
    })
}

struct Auditor {
    config: Config,
    store: Store,
    js: jetstream::Context,
    writer: LogWriter,
    head: HeadStore,
    counters: ServiceCounters,
    crash: CrashPoint,
    /// Entries of each request not yet ended, for its receipt.
    requests: HashMap<String, Vec<u64>>,
    /// Events-stream sequence the committed tree covers up to.
    committed_seq: u64,
    /// The next stream sequence to append.
    next_seq: u64,
    pending: Vec<Prepared>,
    /// The highest-sequence message in `pending`: acking it acks the batch (AckPolicy::All).
    pending_last: Option<jetstream::Message>,
    pending_since: Option<Instant>,
    /// Messages that arrived ahead of a missing sequence number.
    waiting: BTreeMap<u64, jetstream::Message>,
    gap_since: Option<Instant>,
    last_head_write: Instant,
}

impl Auditor {
    /// Finishes a commit a crash interrupted, opens the log at the head, and rebuilds the
    /// index of open requests.
    async fn start(
        config: Config,
        keys: Vec<SigningKey>,
        store: Store,
        js: jetstream::Context,
        head: HeadStore,
        counters: ServiceCounters,
        shutdown: &CancellationToken,
    ) -> Result<Auditor, Error> {
        let mut unfinished = None;
        if let Some(path) = head.head.staging.clone() {
            match Staged::load(&store, &path).await.map_err(log_error)? {
                Some(staged) if staged.size == head.head.size => {
                    tracing::warn!(size = staged.size, "finishing a commit interrupted by a crash");
                    retry!(
                        shutdown,
                        "finishing the interrupted commit",
                        staged.apply(&store, |_| {})
                    )?;
                    unfinished = Some((path, staged));
                }
                Some(staged) => {
                    return Err(Error::Log(format!(
                        "{path} is for size {}, the head for {}",
                        staged.size, head.head.size
                    )));
                }
                None => {
                    let stored = LogReader::new(store.clone()).checkpoint().await.map_err(log_error)?;
                    if stored.map(|(s, _)| s.checkpoint.size) != Some(head.head.size) {
                        return Err(Error::Log(format!(
                            "the head names {path}, which is gone, and the store's checkpoint is not at the head's size {}",
                            head.head.size
                        )));
                    }
                }
            }
        }
        let writer = LogWriter::open(store.clone(), &config.origin, keys, head.head.size)
            .await
            .map_err(|e| Error::Log(format!("reading the log at size {}: {e}", head.head.size)))?;
        if writer.root().to_hex() != head.head.root {
            return Err(Error::Log(format!(
                "the store's tree of size {} has root {}, the head says {}: this is not the log the head describes",
                head.head.size,
                writer.root(),
                head.head.root
            )));
        }
        let requests = open_requests(&store, head.head.size).await?;
        let committed_seq = head.head.last_stream_seq;
        let mut auditor = Auditor {
            config,
            store,
            js,
            writer,
            head,
            counters,
            crash: CrashPoint::from_env(),
            requests,
            committed_seq,
            next_seq: committed_seq + 1,
            pending: Vec::new(),
            pending_last: None,
            pending_since: None,
            waiting: BTreeMap::new(),
            gap_since: None,
            last_head_write: Instant::now(),
        };
        if let Some((path, staged)) = unfinished {
            let entries = staged_entries(&staged).map_err(log_error)?;
            for (entry, _) in &entries {
                auditor.index(entry);
            }
            let outgoing = auditor.outgoing(&staged, &entries).await?;
            auditor.send_all(outgoing, shutdown).await?;
            auditor.store.delete(&path).await?;
        }
        for orphan in auditor.store.list("staging/").await? {
            tracing::info!(path = %orphan, "removing a staging object of a batch that was never committed");
            auditor.store.delete(&orphan).await?;
        }
        Ok(auditor)
    }

    fn index(&mut self, entry: &Entry) {
        if entry.request_id != UNKNOWN_REQUEST {
            self.requests
                .entry(entry.request_id.clone())
                .or_default()
                .push(entry.seq);
        }
    }

    async fn consume(&mut self, shutdown: &CancellationToken) -> Result<(), Error> {
        self.record_expired_messages().await?;
        let mut messages = self.open_messages(shutdown).await?;
        let mut tick = tokio::time::interval(Duration::from_millis((self.config.lease_ms / 4).max(50)));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut prune_tick = tokio::time::interval(Duration::from_secs(self.config.prune_interval_s.max(1)));
        let batch_interval = Duration::from_millis(self.config.batch_interval_ms);
        loop {
            let deadline = self.pending_since.map(|t| t + batch_interval);
            tokio::select! {
                biased;
                _ = shutdown.cancelled() => break,
                _ = sleep_until(deadline), if deadline.is_some() => self.commit(shutdown).await?,
                item = messages.next() => match item {
                    Some(Ok(message)) => self.accept(message),
                    Some(Err(e)) => {
                        tracing::warn!(error = %e, "events stream error; reopening the consumer");
                        messages = self.open_messages(shutdown).await?;
                    }
                    None => messages = self.open_messages(shutdown).await?,
                },
                _ = tick.tick() => {
                    self.resolve_gap().await?;
                    if self.pending.is_empty() && self.last_head_write.elapsed() >= Duration::from_millis(self.config.lease_ms / 3) {
                        self.head.renew(shutdown).await?;
                        self.last_head_write = Instant::now();
                    }
                }
                _ = prune_tick.tick(), if self.config.retention_days.is_some() => self.spawn_prune(),
            }
            if self.pending.len() >= self.config.max_batch {
                self.commit(shutdown).await?;
            }
        }
        // The final checkpoint: whatever arrived before shutdown.
        if !self.pending.is_empty() {
            self.commit(&CancellationToken::new()).await?;
        }
        Ok(())
    }

    async fn open_messages(&self, shutdown: &CancellationToken) -> Result<pull::Stream, Error> {
        let mut backoff = Duration::from_millis(100);
        loop {
            match self.try_open_messages().await {
                Ok(stream) => return Ok(stream),
                Err(detail) => tracing::warn!(%detail, "cannot consume the events stream yet"),
            }
            if !pause(shutdown, backoff).await {
                return Err(Error::Nats("shut down before the events stream was ready".into()));
            }
            backoff = (backoff * 2).min(Duration::from_secs(2));
        }
    }

    async fn try_open_messages(&self) -> Result<pull::Stream, String> {
        let stream = self.js.get_stream(EVENTS_STREAM).await.map_err(|e| e.to_string())?;
        let config = pull::Config {
            durable_name: Some(DURABLE.to_owned()),
            description: Some("the auditor: every event, in order".to_owned()),
            ack_policy: jetstream::consumer::AckPolicy::All,
            ack_wait: Duration::from_millis(self.config.ack_wait_ms),
            max_ack_pending: (self.config.max_batch as i64 * 4).max(20_000),
            deliver_policy: if self.committed_seq == 0 {
                jetstream::consumer::DeliverPolicy::All
            } else {
                jetstream::consumer::DeliverPolicy::ByStartSequence {
                    start_sequence: self.committed_seq + 1,
                }
            },
            ..Default::default()
        };
        let consumer: jetstream::consumer::Consumer<pull::Config> = stream
            .get_or_create_consumer(DURABLE, config)
            .await
            .map_err(|e| e.to_string())?;
        consumer
            .stream()
            .max_messages_per_batch(self.config.max_batch.clamp(1, 1000))
            .expires(Duration::from_secs(5))
            .heartbeat(Duration::from_secs(2))
            .messages()
            .await
            .map_err(|e| e.to_string())
    }

    /// Messages that left the stream (age limit) before the auditor read them are recorded as
    /// a gap, so the log says what it is missing.
    async fn record_expired_messages(&mut self) -> Result<(), Error> {
        let mut stream = self
            .js
            .get_stream(EVENTS_STREAM)
            .await
            .map_err(|e| Error::Nats(e.to_string()))?;
        let info = stream.info().await.map_err(|e| Error::Nats(e.to_string()))?;
        let first = info.state.first_sequence;
        if first > self.next_seq && info.state.last_sequence >= self.next_seq {
            tracing::warn!(
                from = self.next_seq,
                to = first - 1,
                "events left the stream before they were logged"
            );
            self.pending.push(Prepared::gap(
                self.next_seq,
                first - 1,
                "expired from the events stream before it was logged",
            ));
            self.pending_since.get_or_insert_with(Instant::now);
            self.counters.incr("gaps");
            self.next_seq = first;
        }
        Ok(())
    }

    fn accept(&mut self, message: jetstream::Message) {
        let Ok(info) = message.info() else {
            tracing::warn!(subject = %message.subject, "a message without stream information; ignored");
            return;
        };
        let seq = info.stream_sequence;
        if seq < self.next_seq {
            // Redelivered: already logged (or pending in this batch, whose ack covers it).
            self.counters.incr("redelivered");
            if seq <= self.committed_seq {
                tokio::spawn(async move {
                    let _ = message.ack().await;
                });
            }
            return;
        }
        if seq > self.next_seq {
            self.waiting.insert(seq, message);
            self.gap_since.get_or_insert_with(Instant::now);
            return;
        }
        self.append_message(message, seq);
        while let Some(next) = self.waiting.remove(&self.next_seq) {
            let seq = self.next_seq;
            self.append_message(next, seq);
        }
        if self.waiting.is_empty() {
            self.gap_since = None;
        }
    }

    fn append_message(&mut self, message: jetstream::Message, seq: u64) {
        let subject = message.subject.as_str().to_owned();
        let traceparent = message
            .headers
            .as_ref()
            .and_then(|h| h.get("traceparent"))
            .map(|v| v.as_str().to_owned());
        let span = tracing::info_span!(
            "audit.append",
            subject = %subject,
            stream_seq = seq,
            request_id = tracing::field::Empty,
            traceparent = tracing::field::Empty,
        );
        airlock_telemetry::set_parent_from(&span, message.headers.as_ref());
        if let Some(tp) = &traceparent {
            span.record("traceparent", tp.as_str());
        }
        let _entered = span.enter();
        let prepared = match Envelope::decode_on(&subject, &message.payload) {
            Ok(envelope) => {
                span.record("request_id", envelope.request_id.as_str());
                Prepared::from_envelope(envelope, Some(seq), traceparent)
            }
            Err(error) => {
                tracing::warn!(%error, "logging a message that cannot be read");
                self.counters.incr("malformed");
                Prepared::malformed(&subject, &error, &message.payload, Some(seq))
            }
        };
        self.pending.push(prepared);
        self.pending_last = Some(message);
        self.pending_since.get_or_insert_with(Instant::now);
        self.next_seq = seq + 1;
    }

    /// After `gap_timeout_ms` of waiting for missing sequence numbers, records them as a gap.
    async fn resolve_gap(&mut self) -> Result<(), Error> {
        let (Some(since), Some((&first_waiting, _))) = (self.gap_since, self.waiting.first_key_value()) else {
            return Ok(());
        };
        if since.elapsed() < Duration::from_millis(self.config.gap_timeout_ms) {
            return Ok(());
        }
        tracing::warn!(
            from = self.next_seq,
            to = first_waiting - 1,
            "stream messages never delivered; logging a gap"
        );
        self.pending.push(Prepared::gap(
            self.next_seq,
            first_waiting - 1,
            "never delivered to the auditor (deleted from the events stream?)",
        ));
        self.pending_since.get_or_insert_with(Instant::now);
        self.counters.incr("gaps");
        self.next_seq = first_waiting;
        while let Some(next) = self.waiting.remove(&self.next_seq) {
            let seq = self.next_seq;
            self.append_message(next, seq);
        }
        self.gap_since = (!self.waiting.is_empty()).then(Instant::now);
        Ok(())
    }

    async fn commit(&mut self, shutdown: &CancellationToken) -> Result<(), Error> {
        if self.pending.is_empty() {
            self.pending_since = None;
            return Ok(());
        }
        let items = std::mem::take(&mut self.pending);
        let last_message = self.pending_last.take();
        self.pending_since = None;
        let last_stream_seq = self.next_seq - 1;
        let count = items.len();
        let span = tracing::info_span!("audit.commit", entries = count, size = tracing::field::Empty);
        async {
            let batch = self
                .writer
                .prepare(
                    items,
                    airlock_protocol::now_ms(),
                    last_stream_seq.to_be_bytes().to_vec(),
                )
                .map_err(log_error)?;
            tracing::Span::current().record("size", batch.staged.size);
            self.crash.at("prepared");
            retry!(shutdown, "writing blobs", write_blobs(&self.store, &batch.blobs))?;
            self.crash.at("blobs");
            let staging = retry!(shutdown, "staging the batch", batch.staged.stage(&self.store))?;
            self.crash.at("staged");
            let next = Head {
                origin: self.config.origin.clone(),
                size: batch.staged.size,
                root: batch.staged.root.to_hex(),
                last_stream_seq,
                staging: Some(staging.clone()),
                writer: String::new(),
                lease_until_ms: 0,
            };
            self.head.swap(next, shutdown).await?;
            self.last_head_write = Instant::now();
            self.crash.at("swapped");
            // Committed: from here on the batch is finished, now or by the next start.
            let crash = &self.crash;
            let first_tile = std::sync::atomic::AtomicBool::new(true);
            retry!(
                shutdown,
                "writing tiles",
                batch.staged.apply(&self.store, |path| {
                    if path.starts_with("tile/") && first_tile.swap(false, std::sync::atomic::Ordering::SeqCst) {
                        crash.at("tile");
                    }
                })
            )?;
            self.crash.at("checkpoint");
            self.writer.accept(&batch);
            self.committed_seq = last_stream_seq;
            for (entry, _) in &batch.entries {
                self.index(entry);
            }
            self.drop_superseded_partials(&batch).await;
            let outgoing = self.outgoing(&batch.staged, &batch.entries).await?;
            self.send_all(outgoing, shutdown).await?;
            self.crash.at("published");
            if let Some(message) = last_message {
                ack(&message).await;
            }
            self.crash.at("acked");
            if let Err(e) = self.store.delete(&staging).await {
                tracing::warn!(error = %e, "cannot delete the staging object; the next start will");
            }
            self.counters.add("entries", count as u64);
            self.counters.incr("checkpoints");
            tracing::debug!(size = batch.staged.size, "checkpoint");
            Ok::<(), Error>(())
        }
        .instrument(span)
        .await
    }

    /// Once a full tile is written, the partial ones of the same index are redundant (readers
    /// holding an older checkpoint fall back to the full tile).
    async fn drop_superseded_partials(&self, batch: &Batch) {
        for object in &batch.staged.tiles {
            let Some(id) = TileId::parse(&object.path) else {
                continue;
            };
            if !id.is_full() {
                continue;
            }
            let prefix = format!("{}.p/", id.path());
            if let Ok(paths) = self.store.list(&prefix).await {
                for path in paths {
                    let _ = self.store.delete(&path).await;
                }
            }
        }
    }

    /// What a committed batch publishes: its entries, its checkpoint, and a receipt for each
    /// request it ends.
    async fn outgoing(&mut self, staged: &Staged, entries: &[(Entry, Vec<u8>)]) -> Result<Vec<Outgoing>, Error> {
        let mut out = Vec::new();
        if self.config.publish_entries {
            for (entry, bytes) in entries {
                out.push(Outgoing {
                    subject: audit_entry_subject(&entry.request_id),
                    payload: Bytes::from(bytes.clone()),
                    id: format!("entry.{}", entry.seq),
                });
            }
        }
        out.push(Outgoing {
            subject: AUDIT_CHECKPOINT.to_owned(),
            payload: Bytes::from(staged.checkpoint.clone()),
            id: format!("checkpoint.{}", staged.size),
        });
        let Some(signed) = staged.signed_checkpoint() else {
            return Err(Error::Log("a staged checkpoint does not parse".into()));
        };
        let mut tiles = TileReader::new(&self.store, staged.size);
        for object in &staged.tiles {
            tiles.preload(&object.path, &object.bytes);
        }
        for (entry, bytes) in entries.iter().filter(|(e, _)| e.is_terminal()) {
            let Ok(request_id) = RequestId::parse(&entry.request_id) else {
                continue;
            };
            let hashes = tiles.inclusion_proof(entry.seq).await.map_err(log_error)?;
            let proof = TlogProof {
                extra: Some(bytes.clone()),
                index: entry.seq,
                hashes,
                checkpoint: signed.clone(),
            };
            let receipt = AuditReceipt {
                entries: self
                    .requests
                    .remove(&entry.request_id)
                    .unwrap_or_else(|| vec![entry.seq]),
                request_id,
                checkpoint: staged.checkpoint.clone(),
                proof: proof.to_text(),
            };
            out.push(Outgoing {
                subject: audit_receipt_subject(&entry.request_id),
                payload: Bytes::from(receipt.encode()),
                id: format!("receipt.{}", entry.request_id),
            });
            self.counters.incr("receipts");
        }
        Ok(out)
    }

    /// Publishes to the audit stream, pipelined, retrying the lot until every publish is
    /// acknowledged (message ids make repeats harmless).
    async fn send_all(&self, outgoing: Vec<Outgoing>, shutdown: &CancellationToken) -> Result<(), Error> {
        let mut backoff = Duration::from_millis(100);
        loop {
            let mut failure = None;
            // In windows: the client caps acks in flight, and holding more unpolled ack futures
            // than that would wait forever.
            for window in outgoing.chunks(1024) {
                let mut acks = Vec::with_capacity(window.len());
                for o in window {
                    let message = jetstream::message::PublishMessage::build()
                        .payload(o.payload.clone())
                        .message_id(&o.id);
                    match self.js.send_publish(o.subject.clone(), message).await {
                        Ok(ack) => acks.push(ack),
                        Err(e) => {
                            failure = Some(e.to_string());
                            break;
                        }
                    }
                }
                for result in
                    futures::future::join_all(acks.into_iter().map(std::future::IntoFuture::into_future)).await
                {
                    if let Err(e) = result {
                        failure = Some(e.to_string());
                    }
                }
                if failure.is_some() {
                    break;
                }
            }
            match failure {
                None => return Ok(()),
                Some(e) => tracing::warn!(error = %e, "publishing to the audit stream failed; retrying"),
            }
            if !pause(shutdown, backoff).await {
                return Err(Error::Nats("shut down while publishing audit messages".into()));
            }
            backoff = (backoff * 2).min(Duration::from_secs(5));
        }
    }

    fn spawn_prune(&self) {
        let Some(days) = self.config.retention_days else { return };
        let store = self.store.clone();
        let origin = self.config.origin.clone();
        let Some(key) = self.writer.keys().first().cloned() else {
            return;
        };
        let before = airlock_protocol::now_ms() - (days as i64) * 86_400_000;
        tokio::spawn(async move {
            if let Err(e) = airlock_auditlog::prune::prune(&store, &origin, &key, before).await {
                tracing::warn!(error = %e, "retention run failed");
            }
        });
    }
}

struct Outgoing {
    subject: String,
    payload: Bytes,
    id: String,
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

async fn ack(message: &jetstream::Message) {
    for attempt in 0..5u32 {
        match message.double_ack().await {
            Ok(()) => return,
            Err(e) => {
                tracing::warn!(error = %e, attempt, "ack not confirmed; retrying");
                tokio::time::sleep(Duration::from_millis(100 << attempt)).await;
            }
        }
    }
}

/// The entries a staged commit added, read back from its bundles.
fn staged_entries(staged: &Staged) -> Result<Vec<(Entry, Vec<u8>)>, String> {
    let mut out = Vec::new();
    for object in &staged.tiles {
        let Some(id) = TileId::parse(&object.path) else {
            continue;
        };
        if id.kind != airlock_auditlog::tile::TileKind::Entries {
            continue;
        }
        let entries = parse_bundle(&object.bytes, id.width).map_err(|e| e.to_string())?;
        for (i, raw) in entries.into_iter().enumerate() {
            let seq = id.index * TILE_WIDTH + i as u64;
            if seq >= staged.old_size && seq < staged.size {
                let entry = Entry::decode(raw).map_err(|e| e.to_string())?;
                out.push((entry, raw.to_vec()));
            }
        }
    }
    out.sort_by_key(|(e, _)| e.seq);
    Ok(out)
}

/// Requests with entries but no terminal entry yet, from the whole log.
async fn open_requests(store: &Store, size: u64) -> Result<HashMap<String, Vec<u64>>, Error> {
    #[derive(serde::Deserialize)]
    struct Light {
        kind: String,
        request_id: String,
    }
    let reader = LogReader::new(store.clone());
    let mut open: HashMap<String, Vec<u64>> = HashMap::new();
    for index in 0..size.div_ceil(TILE_WIDTH) {
        let Some(bundle) = reader.bundle(index, size).await.map_err(log_error)? else {
            continue;
        };
        for (i, raw) in bundle.iter().enumerate() {
            let Ok(light) = rmp_serde::from_slice::<Light>(raw) else {
                continue;
            };
            if light.request_id == UNKNOWN_REQUEST {
                continue;
            }
            if light.kind == "terminal" {
                open.remove(&light.request_id);
            } else {
                open.entry(light.request_id)
                    .or_default()
                    .push(index * TILE_WIDTH + i as u64);
            }
        }
    }
    Ok(open)
}
