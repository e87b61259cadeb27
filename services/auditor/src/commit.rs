//! One commit: blobs → staging object → swap of the head in the KV bucket (the commit point,
//! guarded by the lease) → receipts; then, in a task of its own, tiles → `checkpoint` →
//! publish entries and checkpoint → ack → tidy. Killed anywhere, a restarted auditor either
//! redoes the batch (before the swap: nothing of it was committed) or finishes it from the
//! staging object (after the swap, see [`crate::recovery`]), and skips redelivered messages its
//! head covers.
//!
//! The next batch's commit point does not wait for the last one's writes: a terminal event that
//! arrives while they are under way (a tile write that a busy disk holds up for tens of
//! milliseconds) is committed and receipted at once. The writes stay in order (each finish
//! waits for the one before), and a batch committed while earlier ones are unfinished carries
//! their tiles in its staging object ([`Staged::carry`]), so finishing it from that object alone
//! finishes them too.

use crate::crash::CrashPoint;
use crate::error::Error;
use crate::head::Head;
use crate::service::{Auditor, store_step};
use airlock_auditlog::entry::Entry;
use airlock_auditlog::proof::TlogProof;
use airlock_auditlog::reader::TileReader;
use airlock_auditlog::store::Store;
use airlock_auditlog::tile::TileId;
use airlock_auditlog::writer::{Batch, Staged, write_blobs};
use airlock_bus::{Backoff, retry_judged};
use airlock_protocol::subjects::{AUDIT_CHECKPOINT, audit_entry_subject, audit_receipt_subject};
use airlock_protocol::{AuditReceipt, RequestId};
use async_nats::jetstream;
use bytes::Bytes;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

/// A message for the audit stream.
pub(crate) struct Message {
    pub(crate) subject: String,
    pub(crate) payload: Bytes,
    pub(crate) id: String,
}

/// What a committed batch publishes.
pub(crate) struct Outgoing {
    /// A receipt for each request the batch ends.
    pub(crate) receipts: Vec<Message>,
    /// Its entries (when `publish_entries`) and its checkpoint.
    pub(crate) log: Vec<Message>,
}

impl Outgoing {
    /// Everything, receipts first.
    pub(crate) fn all(self) -> Vec<Message> {
        let mut all = self.receipts;
        all.extend(self.log);
        all
    }
}

/// A committed batch whose writes may still be under way.
pub(crate) struct Unfinished {
    staged: Arc<Staged>,
    done: Arc<AtomicBool>,
}

/// Committed batches that may still be finishing when the next one commits.
const MAX_UNFINISHED: usize = 2;

/// What finishing a committed batch needs, owned by its task.
struct Finish {
    store: Store,
    js: jetstream::Context,
    crash: Arc<CrashPoint>,
    tidying: tokio_util::task::TaskTracker,
    staged: Arc<Staged>,
    staging: String,
    log: Vec<Message>,
    last_message: Option<jetstream::Message>,
    done: Arc<AtomicBool>,
    /// When the commit began, and how far its commit point took (µs per step), for the debug line.
    began: Instant,
    steps: [u64; 4],
    entries: usize,
}

impl Auditor {
    pub(crate) async fn commit(&mut self, shutdown: &CancellationToken) -> Result<(), Error> {
        self.surface_finish_failure().await?;
        if self.pending.is_empty() {
            self.pending_since = None;
            return Ok(());
        }
        let items = std::mem::take(&mut self.pending);
        let last_message = self.pending_last.take();
        self.pending_since = None;
        let last_stream_seq = self.next_seq - 1;
        // A stalled finish (a store or NATS that holds up writes) must not let the pipeline
        // grow: every batch carries the unfinished ones' tiles, so an unbounded queue writes
        // staging objects ever larger (quadratic bytes; a small store filled up in the cluster
        // test). Past the bound, the next commit waits, as every commit did before pipelining.
        self.unfinished.retain(|u| !u.done.load(Ordering::Acquire));
        if self.unfinished.len() >= MAX_UNFINISHED {
            self.finish_all().await?;
            self.unfinished.retain(|u| !u.done.load(Ordering::Acquire));
        }
        let count = items.len();
        let began = Instant::now();
        let span = tracing::info_span!("audit.commit", entries = count, size = tracing::field::Empty);
        async {
            let mut batch = self
                .writer
                .prepare(
                    items,
                    airlock_protocol::now_ms(),
                    last_stream_seq.to_be_bytes().to_vec(),
                )
                .map_err(|e| Error::integrity_from("preparing the batch", e))?;
            tracing::Span::current().record("size", batch.staged.size);
            if let Some(earlier) = self.unfinished.last() {
                batch.staged.carry(&earlier.staged);
            }
            self.crash.at("prepared");
            // Microseconds from `began` to the end of each step of the commit point, for the
            // finish's debug line: which step holds a slow commit (and a client's receipt) up.
            let mut steps = [0u64; 4];
            let mark = |step: &mut u64| *step = began.elapsed().as_micros() as u64;
            store_step(shutdown, "writing blobs", || write_blobs(&self.store, &batch.blobs)).await?;
            mark(&mut steps[0]);
            self.crash.at("blobs");
            let staging = store_step(shutdown, "staging the batch", || batch.staged.stage(&self.store)).await?;
            mark(&mut steps[1]);
            self.crash.at("staged");
            self.swap_head(&batch, staging.clone(), last_stream_seq, shutdown)
                .await?;
            mark(&mut steps[2]);
            self.crash.at("swapped");
            // Committed: from here on the batch is finished, now or by the next start. Its
            // receipts go out at once: each carries its proof and the signed checkpoint, and
            // proves inclusion without the store, so a waiting client need not wait for the
            // tiles.
            for (entry, _) in &batch.entries {
                self.index(entry);
            }
            let Outgoing { receipts, log } = self
                .outgoing(&batch.staged, &batch.entries, batch.staged.old_size)
                .await?;
            self.send_all(receipts, shutdown).await?;
            mark(&mut steps[3]);
            self.metrics.committed(batch.staged.size);
            self.writer.accept(&batch);
            self.committed_seq = last_stream_seq;
            self.counters.add("entries", count as u64);
            self.counters.incr("checkpoints");
            let Batch { staged, .. } = batch;
            let staged = Arc::new(staged);
            let done = Arc::new(AtomicBool::new(false));
            self.unfinished.push(Unfinished {
                staged: staged.clone(),
                done: done.clone(),
            });
            let finish = Finish {
                store: self.store.clone(),
                js: self.js.clone(),
                crash: self.crash.clone(),
                tidying: self.tidying.clone(),
                staged,
                staging,
                log,
                last_message,
                done,
                began,
                steps,
                entries: count,
            };
            let earlier = self.finishing.take();
            let shutdown = shutdown.clone();
            self.finishing = Some(tokio::spawn(
                finish.run(earlier, shutdown).instrument(tracing::Span::current()),
            ));
            Ok::<(), Error>(())
        }
        .instrument(span)
        .await
    }

    /// A finish that failed (its writes refused, or stopped): the auditor stops with its error,
    /// as it would have had the writes been made in the commit; a restart finishes the batch.
    pub(crate) async fn surface_finish_failure(&mut self) -> Result<(), Error> {
        match self.finishing.take_if(|task| task.is_finished()) {
            Some(task) => joined(task.await),
            None => Ok(()),
        }
    }

    /// Waits until every committed batch is written, published and acked (at shutdown, and
    /// before a checkpoint is written outside a commit).
    pub(crate) async fn finish_all(&mut self) -> Result<(), Error> {
        match self.finishing.take() {
            Some(task) => joined(task.await),
            None => Ok(()),
        }
    }

    /// The commit point: the head names the new size, root and staging object.
    async fn swap_head(
        &mut self,
        batch: &Batch,
        staging: String,
        last_stream_seq: u64,
        shutdown: &CancellationToken,
    ) -> Result<(), Error> {
        let next = Head {
            origin: self.config.origin.clone(),
            size: batch.staged.size,
            root: batch.staged.root.to_hex(),
            last_stream_seq,
            staging: Some(staging),
            writer: String::new(),
            lease_until_ms: 0,
        };
        self.head.swap(next, shutdown).await?;
        self.last_head_write = Instant::now();
        Ok(())
    }

    /// What a committed batch publishes: its entries, its checkpoint, and a receipt for each
    /// request it ends (entries from `receipts_from` on: a batch finished at a restart
    /// republishes the entries of the earlier batches it carries, whose receipts went out).
    pub(crate) async fn outgoing(
        &mut self,
        staged: &Staged,
        entries: &[(Entry, Vec<u8>)],
        receipts_from: u64,
    ) -> Result<Outgoing, Error> {
        let mut out = Vec::new();
        if self.config.publish_entries {
            for (entry, bytes) in entries {
                out.push(Message {
                    subject: audit_entry_subject(&entry.request_id),
                    payload: Bytes::from(bytes.clone()),
                    id: format!("entry.{}", entry.seq),
                });
            }
        }
        out.push(Message {
            subject: AUDIT_CHECKPOINT.to_owned(),
            payload: Bytes::from(staged.checkpoint.clone()),
            id: format!("checkpoint.{}", staged.size),
        });
        let Some(signed) = staged.signed_checkpoint() else {
            return Err(Error::integrity("a staged checkpoint does not parse"));
        };
        // Carried objects too: an earlier batch's tiles may not be in the store yet.
        let mut tiles = TileReader::new(&self.store, staged.size);
        for object in staged.objects() {
            tiles.preload(&object.path, &object.bytes);
        }
        let mut receipts = Vec::new();
        for (entry, bytes) in entries
            .iter()
            .filter(|(e, _)| e.is_terminal() && e.seq >= receipts_from)
        {
            let Ok(request_id) = RequestId::parse(&entry.request_id) else {
                continue;
            };
            let hashes = tiles
                .inclusion_proof(entry.seq)
                .await
                .map_err(|e| Error::integrity_from(format!("inclusion proof of entry {}", entry.seq), e))?;
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
            receipts.push(Message {
                subject: audit_receipt_subject(&entry.request_id),
                payload: Bytes::from(receipt.encode()),
                id: format!("receipt.{}", entry.request_id),
            });
            self.counters.incr("receipts");
        }
        Ok(Outgoing { receipts, log: out })
    }

    /// Publishes to the audit stream (see [`send_all`]).
    pub(crate) async fn send_all(&self, outgoing: Vec<Message>, shutdown: &CancellationToken) -> Result<(), Error> {
        send_all(&self.js, outgoing, shutdown).await
    }
}

impl Finish {
    /// Once the batch before is finished: tiles and `checkpoint`, the log messages (the
    /// checkpoint message only once the checkpoint object is there to be read), the ack, and
    /// what is left to tidy.
    async fn run(
        self,
        earlier: Option<tokio::task::JoinHandle<Result<(), Error>>>,
        shutdown: CancellationToken,
    ) -> Result<(), Error> {
        if let Some(earlier) = earlier {
            joined(earlier.await)?;
        }
        let waited_us = self.began.elapsed().as_micros() as u64;
        let crash = &self.crash;
        let first_tile = AtomicBool::new(true);
        store_step(&shutdown, "writing tiles", || {
            self.staged.apply_own(&self.store, |path| {
                if path.starts_with("tile/") && first_tile.swap(false, Ordering::SeqCst) {
                    crash.at("tile");
                }
            })
        })
        .await?;
        let tiles_us = self.began.elapsed().as_micros() as u64;
        crash.at("checkpoint");
        send_all(&self.js, self.log, &shutdown).await?;
        let published_us = self.began.elapsed().as_micros() as u64;
        crash.at("published");
        if let Some(message) = &self.last_message {
            airlock_bus::consume::ack(message).await;
        }
        crash.at("acked");
        self.done.store(true, Ordering::Release);
        tidy_after(&self.tidying, &self.store, &self.staged, self.staging);
        let [blobs_us, staged_us, swapped_us, receipts_us] = self.steps;
        tracing::debug!(
            size = self.staged.size,
            entries = self.entries,
            blobs_us,
            staged_us,
            swapped_us,
            receipts_us,
            waited_us,
            tiles_us,
            published_us,
            took_us = self.began.elapsed().as_micros() as u64,
            "checkpoint"
        );
        Ok(())
    }
}

/// A finished (or failed, or panicked) finish task, as the auditor's own result.
fn joined(result: Result<Result<(), Error>, tokio::task::JoinError>) -> Result<(), Error> {
    result.map_err(|e| Error::integrity_from("finishing a committed batch", e))?
}

/// What a finished batch leaves to tidy, done beside the next commits rather than before
/// them: a delete on a busy local disk took 50 ms and more (this VM mounts ext4 with
/// `discard`), which every request whose terminal event arrived meanwhile waited for. The
/// staging object is no longer needed (the head names it until the next swap, and a start
/// that finds it gone checks the checkpoint instead; one left by a crash is removed at the
/// next start). Once a full tile is written, the partial ones of the same index are redundant
/// (readers holding an older checkpoint fall back to the full tile), and no later batch writes
/// a partial of that index again. A clean shutdown waits for both.
fn tidy_after(tidying: &tokio_util::task::TaskTracker, store: &Store, staged: &Staged, staging: String) {
    let store = store.clone();
    let full_tiles: Vec<TileId> = staged
        .tiles
        .iter()
        .filter_map(|object| TileId::parse(&object.path))
        .filter(TileId::is_full)
        .collect();
    tidying.spawn(async move {
        if let Err(e) = store.delete(&staging).await {
            tracing::warn!(error = %airlock_bus::error_text(&e), "cannot delete the staging object; the next start will");
        }
        for id in full_tiles {
            let prefix = format!("{}.p/", id.path());
            if let Ok(paths) = store.list(&prefix).await {
                for path in paths {
                    let _ = store.delete(&path).await;
                }
            }
        }
    });
}

/// Publishes to the audit stream, pipelined, retrying the lot until every publish is
/// acknowledged (message ids make repeats harmless).
async fn send_all(js: &jetstream::Context, outgoing: Vec<Message>, shutdown: &CancellationToken) -> Result<(), Error> {
    let backoff = Backoff {
        first: Duration::from_millis(100),
        max: Duration::from_secs(5),
        patience: None,
    };
    retry_judged(
        shutdown,
        backoff,
        "publishing audit messages",
        |_| false,
        || send_once(js, &outgoing),
    )
    .await
    .map_err(|_| Error::Cancelled {
        what: "publishing audit messages",
    })
}

/// One attempt at publishing everything, in windows: the client caps acks in flight, and
/// holding more unpolled ack futures than that would wait forever.
async fn send_once(
    js: &jetstream::Context,
    outgoing: &[Message],
) -> Result<(), async_nats::jetstream::context::PublishError> {
    for window in outgoing.chunks(1024) {
        let mut acks = Vec::with_capacity(window.len());
        for o in window {
            let message = jetstream::message::PublishMessage::build()
                .payload(o.payload.clone())
                .message_id(&o.id);
            acks.push(js.send_publish(o.subject.clone(), message).await?);
        }
        for result in futures::future::join_all(acks.into_iter().map(std::future::IntoFuture::into_future)).await {
            result?;
        }
    }
    Ok(())
}
