//! Retention: removing old entry bundles and the blobs only they reference, while every tile
//! (so every leaf hash), the tree and the checkpoints stay verifiable.
//!
//! The log's minimum index is raised by a signed note stored write-once at `prune/<index>`:
//!
//! ```text
//! <origin>
//! prune
//! <minimum index>
//! <unix milliseconds>
//! ```
//!
//! Verifiers accept missing bundles below the highest minimum index signed by a trusted key and
//! nowhere else. The second line keeps the note from ever parsing as a checkpoint.

use crate::entry::Entry;
use crate::note::Note;
use crate::reader::{LogReader, ReadError};
use crate::store::{Store, StoreError};
use crate::tile::{TILE_WIDTH, TileId};
use crate::verify::{VerifyError, VerifyErrorKind as Kind};
use airlock_protocol::{SigningKey, VerifierKey};
use bytes::Bytes;
use std::collections::BTreeSet;

pub const PRUNE_PREFIX: &str = "prune/";

#[derive(Debug, thiserror::Error)]
pub enum PruneError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the log has no checkpoint")]
    Empty,
    /// The existing prune marks could not be read or do not hold.
    #[error("prune marks")]
    Marks(#[source] VerifyError),
}

impl PruneError {
    /// Told apart as `airlock audit verify` tells them apart: a store that could not be read
    /// (an outage), from a log that is not what it must be.
    pub fn kind(&self) -> Kind {
        match self {
            // A mark already there with other bytes: the log is not what this prune read.
            PruneError::Read(ReadError::Store(StoreError::Rewrite { .. }))
            | PruneError::Store(StoreError::Rewrite { .. }) => Kind::Malformed,
            PruneError::Read(ReadError::Store(_)) | PruneError::Store(_) => Kind::Unreadable,
            PruneError::Read(ReadError::Missing(_)) | PruneError::Empty => Kind::Missing,
            PruneError::Read(ReadError::Corrupt { .. }) => Kind::Malformed,
            PruneError::Read(ReadError::Proof(_)) => Kind::Inclusion,
            PruneError::Marks(e) => e.kind,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PruneMark {
    pub origin: String,
    pub min_index: u64,
    pub time_ms: i64,
}

impl PruneMark {
    pub fn body(&self) -> String {
        format!("{}\nprune\n{}\n{}\n", self.origin, self.min_index, self.time_ms)
    }

    pub fn path(&self) -> String {
        format!("{PRUNE_PREFIX}{}", self.min_index)
    }

    pub fn parse_body(text: &str) -> Option<PruneMark> {
        let mut lines = text.strip_suffix('\n')?.split('\n');
        let (origin, word, index, time) = (lines.next()?, lines.next()?, lines.next()?, lines.next()?);
        if lines.next().is_some() || word != "prune" || origin.is_empty() {
            return None;
        }
        Some(PruneMark {
            origin: origin.to_owned(),
            min_index: index.parse().ok()?,
            time_ms: time.parse().ok()?,
        })
    }
}

/// The highest minimum index signed by one of `keys` for `origin`. A store that cannot be read
/// is [`VerifyErrorKind::Unreadable`]; a mark that is unsigned, badly signed or malformed is an
/// error naming its object.
pub async fn minimum_index(store: &Store, origin: &str, keys: &[VerifierKey]) -> Result<u64, VerifyError> {
    let paths = store
        .list(PRUNE_PREFIX)
        .await
        .map_err(|e| VerifyError::unreadable(PRUNE_PREFIX, e))?;
    let mut min = 0;
    for path in paths {
        let bytes = store
            .get(&path)
            .await
            .map_err(|e| VerifyError::unreadable(&path, e))?
            .ok_or_else(|| VerifyError::new(Kind::Missing, &path, "vanished while reading"))?;
        let note = Note::parse(&bytes).map_err(|e| VerifyError::caused(Kind::Malformed, &path, e))?;
        note.verify(keys)
            .map_err(|e| VerifyError::caused(Kind::Signature, &path, e))?;
        let mark = PruneMark::parse_body(&note.text)
            .ok_or_else(|| VerifyError::new(Kind::Malformed, &path, "not a prune mark"))?;
        if mark.origin != origin || mark.path() != path || !mark.min_index.is_multiple_of(TILE_WIDTH) {
            return Err(VerifyError::new(
                Kind::Malformed,
                path,
                "prune mark for another log, index or alignment",
            ));
        }
        min = min.max(mark.min_index);
    }
    Ok(min)
}

/// What a prune removed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pruned {
    pub min_index: u64,
    pub bundles: u64,
    pub blobs: u64,
}

/// Removes the bodies of entries older than `before_ms`: whole bundles whose every entry is
/// older, and the blobs no remaining entry references. Tiles are never touched. The new mark is
/// signed with `key` (the auditor's current key); earlier marks are read with `trusted` (the
/// keys of the log, previous ones included after a rotation).
pub async fn prune(
    store: &Store,
    origin: &str,
    key: &SigningKey,
    trusted: &[VerifierKey],
    before_ms: i64,
) -> Result<Pruned, PruneError> {
    let reader = LogReader::new(store.clone());
    let (signed, _) = reader.checkpoint().await?.ok_or(PruneError::Empty)?;
    let size = signed.checkpoint.size;
    let mut trusted = trusted.to_vec();
    if !trusted.contains(&key.verifier()) {
        trusted.push(key.verifier());
    }
    let current = minimum_index(store, origin, &trusted)
        .await
        .map_err(PruneError::Marks)?;
    // Only full bundles, so the partial one a future checkpoint extends is never touched.
    let mut new_min = current;
    let full_bundles = size / TILE_WIDTH;
    for index in current / TILE_WIDTH..full_bundles {
        let Some(bundle) = reader.bundle(index, size).await? else {
            new_min = (index + 1) * TILE_WIDTH;
            continue;
        };
        let newest = bundle
            .iter()
            .filter_map(|raw| Entry::decode(raw).ok())
            .map(|e| e.time_ms)
            .max()
            .unwrap_or(i64::MAX);
        if newest >= before_ms {
            break;
        }
        new_min = (index + 1) * TILE_WIDTH;
    }
    if new_min <= current {
        return Ok(Pruned {
            min_index: current,
            ..Default::default()
        });
    }
    let mark = PruneMark {
        origin: origin.to_owned(),
        min_index: new_min,
        time_ms: airlock_protocol::now_ms(),
    };
    // The mark goes first: a crash after it leaves bundles that are allowed to go, never
    // missing bundles that are not.
    let note = Note::sign(&mark.body(), &[key]);
    store.put_once(&mark.path(), Bytes::from(note.to_text())).await?;

    let mut keep = BTreeSet::new();
    for (_, entry) in reader.entries(new_min, size, size).await? {
        keep.extend(entry.blobs.values().map(|b| b.b3.clone()));
    }
    let mut pruned = Pruned {
        min_index: new_min,
        ..Default::default()
    };
    for index in current / TILE_WIDTH..new_min / TILE_WIDTH {
        let path = TileId::entries(index, TILE_WIDTH).path();
        if let Some(bundle) = reader.bundle(index, size).await? {
            for raw in &bundle {
                let Ok(entry) = Entry::decode(raw) else { continue };
                for blob in entry.blobs.values() {
                    if !keep.contains(&blob.b3) && store.get(&blob.path()).await?.is_some() {
                        store.delete(&blob.path()).await?;
                        pruned.blobs += 1;
                    }
                }
            }
            store.delete(&path).await?;
            pruned.bundles += 1;
        }
    }
    tracing::info!(
        min_index = new_min,
        bundles = pruned.bundles,
        blobs = pruned.blobs,
        "pruned the audit log"
    );
    Ok(pruned)
}
