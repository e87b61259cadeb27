//! Appending: the in-memory right edge of the tree, the tiles one batch adds, and the staged
//! commit that makes a batch durable.
//!
//! A commit goes: blobs → staging object (every tile of the batch and the signed checkpoint, in
//! one write-once object) → compare-and-swap of the log head (done by the caller, e.g. in a
//! NATS KV bucket) → tiles → `checkpoint`. A writer killed at any point restarts from the head:
//! if the head names a staging object, its tiles are written again (identical bytes, so the
//! write-once puts succeed) and nothing is lost; a batch whose swap never happened is simply
//! done again. No object is ever rewritten with different bytes.

use crate::checkpoint::{Checkpoint, SignedCheckpoint};
use crate::entry::{Blob, blob_path};
use crate::hash::{Hash, leaf_hash};
use crate::merkle::{CompactRange, root_of};
use crate::reader::{ReadError, TileReader};
use crate::store::{Store, StoreError};
use crate::tile::{TILE_WIDTH, TileError, TileId, encode_hash_tile, push_bundle_entry};
use airlock_protocol::SigningKey;
use bytes::Bytes;
use futures::StreamExt as _;
use serde::{Deserialize, Serialize};

/// Object writes in flight at once (S3 latency, not CPU, bounds a commit).
const PARALLEL_WRITES: usize = 8;

/// The tree as the writer sees it: enough to append and to write the next tiles.
#[derive(Clone, Debug)]
pub struct TreeState {
    size: u64,
    range: CompactRange,
    /// Hashes of the rightmost, incomplete tile of each level.
    partial: Vec<Vec<Hash>>,
    /// The entries of the rightmost, incomplete bundle, encoded.
    bundle: Vec<u8>,
    last_leaf: Hash,
    /// Full tiles completed since the last [`TreeState::seal`].
    completed: Vec<(TileId, Vec<u8>)>,
}

impl Default for TreeState {
    fn default() -> Self {
        Self::new()
    }
}

impl TreeState {
    pub fn new() -> Self {
        Self {
            size: 0,
            range: CompactRange::default(),
            partial: Vec::new(),
            bundle: Vec::new(),
            last_leaf: Hash::ZERO,
            completed: Vec::new(),
        }
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn root(&self) -> Hash {
        self.range.root()
    }

    /// The leaf hash of the last entry (zero for an empty log): the next entry's `prev`.
    pub fn last_leaf(&self) -> Hash {
        self.last_leaf
    }

    /// Appends one encoded entry; returns its leaf hash.
    pub fn append(&mut self, entry: &[u8]) -> Result<Hash, TileError> {
        push_bundle_entry(&mut self.bundle, entry)?;
        let leaf = leaf_hash(entry);
        self.range.append(leaf);
        self.size += 1;
        self.last_leaf = leaf;
        if self.size.is_multiple_of(TILE_WIDTH) {
            let bundle = std::mem::take(&mut self.bundle);
            self.completed
                .push((TileId::entries(self.size / TILE_WIDTH - 1, TILE_WIDTH), bundle));
        }
        self.push_hash(0, leaf);
        Ok(leaf)
    }

    fn push_hash(&mut self, level: usize, hash: Hash) {
        if self.partial.len() <= level {
            self.partial.resize(level + 1, Vec::new());
        }
        self.partial[level].push(hash);
        if self.partial[level].len() as u64 == TILE_WIDTH {
            let tile = std::mem::take(&mut self.partial[level]);
            let hashes_at_level = self.size >> (8 * level);
            let index = hashes_at_level / TILE_WIDTH - 1;
            self.completed
                .push((TileId::hashes(level as u8, index, TILE_WIDTH), encode_hash_tile(&tile)));
            self.push_hash(level + 1, root_of(&tile));
        }
    }

    /// The tiles to write for the current size: those completed since the last seal, and the
    /// partial tiles and bundle of this size.
    pub fn seal(&mut self) -> Vec<(TileId, Vec<u8>)> {
        let mut out = std::mem::take(&mut self.completed);
        for (level, hashes) in self.partial.iter().enumerate() {
            if !hashes.is_empty() {
                let index = (self.size >> (8 * level)) / TILE_WIDTH;
                out.push((
                    TileId::hashes(level as u8, index, hashes.len() as u64),
                    encode_hash_tile(hashes),
                ));
            }
        }
        if !self.bundle.is_empty() {
            out.push((
                TileId::entries(self.size / TILE_WIDTH, self.size % TILE_WIDTH),
                self.bundle.clone(),
            ));
        }
        out
    }

    /// Rebuilds the state of a tree of `size` from the tiles in `store`.
    pub async fn load(store: &Store, size: u64) -> Result<TreeState, ReadError> {
        let mut reader = TileReader::new(store, size);
        let range = reader.compact_range().await?;
        let mut partial = Vec::new();
        let mut level = 0usize;
        while (size >> (8 * level)) > 0 {
            let hashes_at_level = size >> (8 * level);
            let width = hashes_at_level % TILE_WIDTH;
            let hashes = if width == 0 {
                Vec::new()
            } else {
                reader.tile(level as u8, hashes_at_level / TILE_WIDTH).await?.to_vec()
            };
            partial.push(hashes);
            level += 1;
        }
        let bundle = if size.is_multiple_of(TILE_WIDTH) {
            Vec::new()
        } else {
            let id = TileId::entries(size / TILE_WIDTH, size % TILE_WIDTH);
            let bytes = store.get(&id.path()).await?.ok_or(ReadError::Missing(id.path()))?;
            crate::tile::parse_bundle(&bytes, id.width).map_err(|e| ReadError::Corrupt {
                path: id.path(),
                detail: e.to_string(),
            })?;
            bytes.to_vec()
        };
        let last_leaf = if size == 0 {
            Hash::ZERO
        } else {
            reader.leaf(size - 1).await?
        };
        Ok(TreeState {
            size,
            range,
            partial,
            bundle,
            last_leaf,
            completed: Vec::new(),
        })
    }
}

/// Everything one commit writes after the compare-and-swap, in one write-once object, so a
/// writer that dies after the swap can finish the commit from it alone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Staged {
    pub old_size: u64,
    pub size: u64,
    pub root: Hash,
    /// The signed checkpoint, as written to `checkpoint`.
    pub checkpoint: String,
    /// Tiles and bundles: path and bytes, in write order.
    pub tiles: Vec<StagedObject>,
    /// Application data committed with the batch (the auditor keeps its stream position here).
    #[serde(with = "serde_bytes")]
    pub meta: Vec<u8>,
    /// Tiles and bundles of earlier batches that were committed (their swap done) but may not
    /// be written yet: a writer that commits the next batch while the last one's tiles are
    /// still being written carries them here, so that finishing this batch from its staging
    /// object alone also finishes those ([`Staged::carry`]). Empty when nothing was pending.
    #[serde(default)]
    pub carried: Vec<StagedObject>,
    /// The first entry whose publication may not have happened yet: the `old_size` of the
    /// earliest batch carried, `None` when nothing is carried (then `old_size`).
    #[serde(default)]
    pub published_from: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StagedObject {
    pub path: String,
    #[serde(with = "serde_bytes")]
    pub bytes: Vec<u8>,
}

#[derive(Debug, thiserror::Error)]
pub enum CommitError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("staging object {path} does not decode")]
    BadStaging {
        path: String,
        #[source]
        source: rmp_serde::decode::Error,
    },
}

impl CommitError {
    /// Whether waiting could help (see [`StoreError::is_permanent`]).
    pub fn is_permanent(&self) -> bool {
        match self {
            CommitError::Store(e) => e.is_permanent(),
            CommitError::BadStaging { .. } => true,
        }
    }
}

impl Staged {
    /// Seals the tree after a batch and signs its checkpoint.
    pub fn seal(tree: &mut TreeState, old_size: u64, origin: &str, keys: &[&SigningKey], meta: Vec<u8>) -> Staged {
        let tiles = tree
            .seal()
            .into_iter()
            .map(|(id, bytes)| StagedObject { path: id.path(), bytes })
            .collect();
        let checkpoint = Checkpoint::new(origin, tree.size(), tree.root()).sign(keys);
        Staged {
            old_size,
            size: tree.size(),
            root: tree.root(),
            checkpoint: checkpoint.to_text(),
            tiles,
            meta,
            carried: Vec::new(),
            published_from: None,
        }
    }

    /// Carries the objects of an earlier committed batch whose writing may not be finished
    /// (`earlier`, staged before this one), and the point from which its entries may still
    /// be unpublished. Objects this batch writes itself (the same path) are not carried.
    pub fn carry(&mut self, earlier: &Staged) {
        let own: std::collections::HashSet<&str> = self.tiles.iter().map(|t| t.path.as_str()).collect();
        let mut carried: Vec<StagedObject> = earlier
            .carried
            .iter()
            .chain(&earlier.tiles)
            .filter(|t| !own.contains(t.path.as_str()))
            .cloned()
            .collect();
        let seen: std::collections::HashSet<String> = carried.iter().map(|t| t.path.clone()).collect();
        carried.extend(self.carried.drain(..).filter(|t| !seen.contains(&t.path)));
        self.carried = carried;
        let from = earlier.published_from.unwrap_or(earlier.old_size);
        self.published_from = Some(self.published_from.map_or(from, |mine| mine.min(from)));
    }

    /// Where the entries that finishing this batch publishes start.
    pub fn publish_from(&self) -> u64 {
        self.published_from.unwrap_or(self.old_size).min(self.old_size)
    }

    /// Every tile and bundle this staging object holds, carried ones first.
    pub fn objects(&self) -> impl Iterator<Item = &StagedObject> {
        self.carried.iter().chain(&self.tiles)
    }

    /// Where this batch is staged: named by size and root, so two different batches of one
    /// size never share a name.
    pub fn path(&self) -> String {
        format!("staging/{}-{}", self.size, self.root.to_hex())
    }

    pub fn encode(&self) -> Vec<u8> {
        rmp_serde::to_vec_named(self).unwrap_or_default()
    }

    pub fn decode(path: &str, bytes: &[u8]) -> Result<Staged, CommitError> {
        rmp_serde::from_slice(bytes).map_err(|source| CommitError::BadStaging {
            path: path.to_owned(),
            source,
        })
    }

    pub fn signed_checkpoint(&self) -> Option<SignedCheckpoint> {
        SignedCheckpoint::parse(self.checkpoint.as_bytes()).ok()
    }

    /// Step 2: the staging object.
    pub async fn stage(&self, store: &Store) -> Result<String, CommitError> {
        let path = self.path();
        store.put_once(&path, Bytes::from(self.encode())).await?;
        Ok(path)
    }

    pub async fn load(store: &Store, path: &str) -> Result<Option<Staged>, CommitError> {
        match store.get(path).await? {
            Some(bytes) => Ok(Some(Staged::decode(path, &bytes)?)),
            None => Ok(None),
        }
    }

    /// Steps 4 and 5, after the swap: every tile (write-once, idempotent), then `checkpoint`.
    /// `written` is told of each object as it lands (crash tests stop the writer there).
    /// Carried objects are written too (before this batch's own): this finishes the earlier
    /// batches from this staging object alone, as a restart does.
    pub async fn apply(&self, store: &Store, written: impl FnMut(&str)) -> Result<(), CommitError> {
        self.write(store, self.objects(), written).await
    }

    /// [`Staged::apply`] without the carried objects: for the writer that commits in order and
    /// knows the earlier batches finished (their own writes came first).
    pub async fn apply_own(&self, store: &Store, written: impl FnMut(&str)) -> Result<(), CommitError> {
        self.write(store, self.tiles.iter(), written).await
    }

    async fn write<'a>(
        &self,
        store: &Store,
        objects: impl Iterator<Item = &'a StagedObject>,
        mut written: impl FnMut(&str),
    ) -> Result<(), CommitError> {
        // Owned jobs: futures that borrow from a closure argument are not `Send` for callers.
        let jobs: Vec<(Store, String, Bytes)> = objects
            .map(|t| (store.clone(), t.path.clone(), Bytes::from(t.bytes.clone())))
            .collect();
        let mut puts = futures::stream::iter(jobs)
            .map(|(store, path, bytes)| async move { store.put_once(&path, bytes).await.map(|_| path) })
            .buffer_unordered(PARALLEL_WRITES);
        while let Some(result) = puts.next().await {
            written(&result?);
        }
        store.put_checkpoint(&self.checkpoint).await?;
        written(crate::store::CHECKPOINT_PATH);
        Ok(())
    }
}

/// Step 1: the blobs a batch references (content-addressed, so an existing one is the same).
pub async fn write_blobs(store: &Store, blobs: &[Blob]) -> Result<(), StoreError> {
    let jobs: Vec<(Store, String, Bytes)> = blobs
        .iter()
        .map(|b| (store.clone(), blob_path(&b.reference.b3), Bytes::from(b.bytes.clone())))
        .collect();
    let mut puts = futures::stream::iter(jobs)
        .map(|(store, path, bytes)| async move { store.put_blob(&path, &bytes).await })
        .buffer_unordered(PARALLEL_WRITES);
    while let Some(result) = puts.next().await {
        result?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tile::{TileKind, tiles_for_size};

    #[test]
    fn sealed_tiles_are_exactly_the_layout_of_each_size() {
        let mut tree = TreeState::new();
        let mut written = std::collections::BTreeMap::new();
        let mut sizes = vec![];
        for i in 0..70_000u64 {
            tree.append(&i.to_be_bytes()).unwrap();
            if [1, 255, 256, 257, 1000, 65_536, 70_000].contains(&tree.size()) {
                for (id, bytes) in tree.seal() {
                    written.insert(id, bytes);
                }
                sizes.push(tree.size());
            }
        }
        for size in sizes {
            for id in tiles_for_size(size) {
                assert!(written.contains_key(&id), "{id} missing for size {size}");
            }
        }
        let full_tiles = written
            .keys()
            .filter(|id| id.is_full() && id.kind == TileKind::Hashes(0))
            .count();
        assert_eq!(full_tiles, 273);
    }
}

impl TreeState {
    /// Appends a leaf whose entry is not at hand (verification of pruned ranges).
    pub fn append_leaf_hash(&mut self, leaf: Hash) {
        self.range.append(leaf);
        self.size += 1;
        self.last_leaf = leaf;
        self.push_hash(0, leaf);
    }

    /// The hash tiles (no bundles) for the current size.
    pub fn seal_hash_tiles(&mut self) -> Vec<(TileId, Vec<u8>)> {
        self.seal()
            .into_iter()
            .filter(|(id, _)| id.kind != crate::tile::TileKind::Entries)
            .collect()
    }
}

/// One batch, prepared against a copy of the tree: nothing changes until it is committed.
pub struct Batch {
    pub tree: TreeState,
    pub staged: Staged,
    /// The new entries and their encodings, in log order.
    pub entries: Vec<(crate::entry::Entry, Vec<u8>)>,
    pub blobs: Vec<Blob>,
}

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error(transparent)]
    Entry(#[from] crate::entry::EntryError),
    #[error(transparent)]
    Tile(#[from] TileError),
    #[error(transparent)]
    Commit(#[from] CommitError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Read(#[from] ReadError),
}

/// Appends batches to a log in a store and signs its checkpoints. Single-writer exclusion is
/// the caller's business (the auditor holds it in a NATS KV compare-and-swap between
/// [`Staged::stage`] and [`Staged::apply`]); [`LogWriter::commit_unguarded`] is for tools and
/// tests that own the store alone.
pub struct LogWriter {
    pub store: Store,
    origin: String,
    keys: Vec<SigningKey>,
    tree: TreeState,
}

impl LogWriter {
    /// Opens the log at `size` (0 for a new log), reading the right edge from the tiles.
    pub async fn open(store: Store, origin: &str, keys: Vec<SigningKey>, size: u64) -> Result<LogWriter, WriteError> {
        let tree = if size == 0 {
            TreeState::new()
        } else {
            TreeState::load(&store, size).await?
        };
        Ok(LogWriter {
            store,
            origin: origin.to_owned(),
            keys,
            tree,
        })
    }

    pub fn origin(&self) -> &str {
        &self.origin
    }

    pub fn size(&self) -> u64 {
        self.tree.size()
    }

    pub fn root(&self) -> Hash {
        self.tree.root()
    }

    pub fn keys(&self) -> &[SigningKey] {
        &self.keys
    }

    /// Signs with `keys` from the next checkpoint on (a key rotation).
    pub fn set_keys(&mut self, keys: Vec<SigningKey>) {
        self.keys = keys;
    }

    /// The checkpoint of the tree as it stands, signed with the current keys: after a key
    /// rotation, the same tree vouched for by the new key without waiting for new entries.
    pub fn checkpoint(&self) -> SignedCheckpoint {
        let keys: Vec<&SigningKey> = self.keys.iter().collect();
        Checkpoint::new(&self.origin, self.tree.size(), self.tree.root()).sign(&keys)
    }

    /// Places `items` after the current end, all stamped `time_ms`, and seals the result.
    pub fn prepare(
        &self,
        items: Vec<crate::entry::Prepared>,
        time_ms: i64,
        meta: Vec<u8>,
    ) -> Result<Batch, WriteError> {
        let mut tree = self.tree.clone();
        let old_size = tree.size();
        let mut entries = Vec::with_capacity(items.len());
        let mut blobs: Vec<Blob> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for item in items {
            let (entry, bytes, item_blobs) = item.place(tree.size(), time_ms, tree.last_leaf())?;
            tree.append(&bytes)?;
            for blob in item_blobs {
                if seen.insert(blob.reference.b3.clone()) {
                    blobs.push(blob);
                }
            }
            entries.push((entry, bytes));
        }
        let keys: Vec<&SigningKey> = self.keys.iter().collect();
        let staged = Staged::seal(&mut tree, old_size, &self.origin, &keys, meta);
        Ok(Batch {
            tree,
            staged,
            entries,
            blobs,
        })
    }

    /// The batch is committed (its swap succeeded): this writer continues from it.
    pub fn accept(&mut self, batch: &Batch) {
        self.tree = batch.tree.clone();
    }

    /// Every step of a commit with no swap in between: for tools and tests only.
    pub async fn commit_unguarded(&mut self, batch: Batch) -> Result<Batch, WriteError> {
        write_blobs(&self.store, &batch.blobs).await?;
        let path = batch.staged.stage(&self.store).await?;
        batch.staged.apply(&self.store, |_| {}).await?;
        self.store.delete(&path).await?;
        self.accept(&batch);
        Ok(batch)
    }
}
