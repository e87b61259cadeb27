//! Starting up after anything: adopting a log found in the store when the bucket lost its head,
//! finishing a commit a crash interrupted (from its staging object), and rebuilding the index of
//! requests whose receipts are still to come.

use crate::config::Config;
use crate::error::Error;
use crate::head::{Head, HeadError, HeadStore};
use crate::service::{Auditor, store_step};
use airlock_auditlog::entry::Entry;
use airlock_auditlog::reader::LogReader;
use airlock_auditlog::store::Store;
use airlock_auditlog::tile::{TILE_WIDTH, TileId, TileKind, parse_bundle};
use airlock_auditlog::writer::{LogWriter, Staged};
use airlock_bus::ServiceCounters;
use airlock_protocol::subjects::UNKNOWN_REQUEST;
use airlock_protocol::{SigningKey, VerifierKey};
use async_nats::jetstream;
use std::collections::HashMap;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The head for a KV bucket that has none: an empty log, or the log already in the store (the
/// bucket was lost), whose stream position is read back from its last entries.
pub(crate) async fn adopt_from_store(store: &Store, origin: &str, trusted: &[VerifierKey]) -> Result<Head, HeadError> {
    let unreadable = |e| HeadError::AdoptUnreadable(Arc::new(e));
    let reader = LogReader::new(store.clone());
    let (size, root, last_stream_seq) = match reader.checkpoint().await.map_err(unreadable)? {
        None => (0, airlock_auditlog::hash::empty_root(), 0),
        Some((signed, _)) => {
            signed
                .verify(origin, trusted)
                .map_err(|e| HeadError::AdoptUntrusted(Arc::new(e)))?;
            let size = signed.checkpoint.size;
            let mut last = 0;
            let mut to = size;
            while to > 0 && last == 0 {
                let from = to.saturating_sub(TILE_WIDTH);
                let entries = reader.entries(from, to, size).await.map_err(unreadable)?;
                last = entries
                    .iter()
                    .rev()
                    .find_map(|(_, e)| e.stream_seq.or(e.gap.as_ref().map(|g| g.last_stream_seq)))
                    .unwrap_or(0);
                to = from;
            }
            // (Read at every start; said only when used: `HeadStore::acquire` finds no head.)
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

impl Auditor {
    /// Finishes a commit a crash interrupted, opens the log at the head, and rebuilds the
    /// index of open requests.
    pub(crate) async fn start(
        config: Config,
        keys: Vec<SigningKey>,
        store: Store,
        js: jetstream::Context,
        head: HeadStore,
        counters: ServiceCounters,
        shutdown: &CancellationToken,
    ) -> Result<Auditor, Error> {
        let unfinished = finish_interrupted_commit(&store, &head, shutdown).await?;
        let writer = LogWriter::open(store.clone(), &config.origin, keys, head.head.size)
            .await
            .map_err(|e| Error::integrity_from(format!("reading the log at size {}", head.head.size), e))?;
        if writer.root().to_hex() != head.head.root {
            return Err(Error::integrity(format!(
                "the store's tree of size {} has root {}, the head says {}: this is not the log the head describes",
                head.head.size,
                writer.root(),
                head.head.root
            )));
        }
        let requests = open_requests(&store, head.head.size).await?;
        let mut auditor = Auditor::new(config, store, js, writer, head, counters, requests);
        if let Some((path, staged)) = unfinished {
            let entries = staged_entries(&staged)?;
            // The carried batches' requests were indexed and receipted when they committed.
            for (entry, _) in entries.iter().filter(|(e, _)| e.seq >= staged.old_size) {
                auditor.index(entry);
            }
            let outgoing = auditor.outgoing(&staged, &entries, staged.old_size).await?;
            auditor.send_all(outgoing.all(), shutdown).await?;
            store_step(shutdown, "deleting the staging object", || auditor.store.delete(&path)).await?;
        }
        let orphans = store_step(shutdown, "listing staging objects", || auditor.store.list("staging/")).await?;
        for orphan in orphans {
            tracing::info!(path = %orphan, "removing a staging object of a batch that was never committed");
            store_step(shutdown, "deleting a staging object", || auditor.store.delete(&orphan)).await?;
        }
        Ok(auditor)
    }
}

/// When the head names a staging object, the crash came after the commit point: the batch is
/// finished from it (tiles and checkpoint written again, which is idempotent).
async fn finish_interrupted_commit(
    store: &Store,
    head: &HeadStore,
    shutdown: &CancellationToken,
) -> Result<Option<(String, Staged)>, Error> {
    let Some(path) = head.head.staging.clone() else {
        return Ok(None);
    };
    let loaded = Staged::load(store, &path)
        .await
        .map_err(|e| Error::integrity_from(format!("reading {path}"), e))?;
    match loaded {
        Some(staged) if staged.size == head.head.size => {
            tracing::warn!(size = staged.size, "finishing a commit interrupted by a crash");
            store_step(shutdown, "finishing the interrupted commit", || {
                staged.apply(store, |_| {})
            })
            .await?;
            Ok(Some((path, staged)))
        }
        Some(staged) => Err(Error::integrity(format!(
            "{path} is for size {}, the head for {}",
            staged.size, head.head.size
        ))),
        None => {
            let stored = LogReader::new(store.clone())
                .checkpoint()
                .await
                .map_err(|e| Error::integrity_from("reading the checkpoint", e))?;
            if stored.map(|(s, _)| s.checkpoint.size) != Some(head.head.size) {
                return Err(Error::integrity(format!(
                    "the head names {path}, which is gone, and the store's checkpoint is not at the head's size {}",
                    head.head.size
                )));
            }
            Ok(None)
        }
    }
}

/// The entries a staged commit added, read back from its bundles, with those of the earlier
/// batches it carries (their publication may not have happened).
pub(crate) fn staged_entries(staged: &Staged) -> Result<Vec<(Entry, Vec<u8>)>, Error> {
    let mut out = Vec::new();
    let from = staged.publish_from();
    for object in staged.objects() {
        let Some(id) = TileId::parse(&object.path) else {
            continue;
        };
        if id.kind != TileKind::Entries {
            continue;
        }
        let entries = parse_bundle(&object.bytes, id.width)
            .map_err(|e| Error::integrity_from(format!("staged bundle {}", object.path), e))?;
        for (i, raw) in entries.into_iter().enumerate() {
            let seq = id.index * TILE_WIDTH + i as u64;
            if seq >= from && seq < staged.size && !out.iter().any(|(e, _): &(Entry, Vec<u8>)| e.seq == seq) {
                let entry = Entry::decode(raw).map_err(|e| Error::integrity_from(format!("staged entry {seq}"), e))?;
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
        let bundle = reader
            .bundle(index, size)
            .await
            .map_err(|e| Error::integrity_from(format!("reading entry bundle {index}"), e))?;
        let Some(bundle) = bundle else {
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
