//! Reading a log back: tiles (with a cache), leaf hashes, perfect subtree hashes, entries,
//! blobs, and proofs computed from the tiles.

use crate::checkpoint::SignedCheckpoint;
use crate::entry::{BlobRef, Entry};
use crate::hash::Hash;
use crate::merkle::{self, CompactRange, ProofError};
use crate::store::{CHECKPOINT_PATH, Store, StoreError};
use crate::tile::{TILE_HEIGHT, TILE_WIDTH, TileId, parse_bundle, parse_hash_tile};
use std::collections::HashMap;

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}: missing")]
    Missing(String),
    #[error("{path}: {detail}")]
    Corrupt { path: String, detail: String },
    #[error("{0}")]
    Proof(#[from] ProofError),
}

/// Hash tiles of one tree size, fetched on demand and cached.
pub struct TileReader<'s> {
    store: &'s Store,
    size: u64,
    cache: HashMap<(u8, u64), Vec<Hash>>,
}

/// A tile the synchronous proof code needs but that is not fetched yet.
struct NeedTile(u8, u64);

// The closures adapt `&mut dyn FnMut` to the `impl FnMut` the tree functions take.
#[allow(clippy::redundant_closure)]
impl<'s> TileReader<'s> {
    pub fn new(store: &'s Store, size: u64) -> Self {
        Self {
            store,
            size,
            cache: HashMap::new(),
        }
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// The id of hash tile `index` at `level` in a tree of this size (full or partial).
    pub fn tile_id(&self, level: u8, index: u64) -> TileId {
        let hashes_at_level = self.size >> (8 * level as u32);
        let width = if index < hashes_at_level / TILE_WIDTH {
            TILE_WIDTH
        } else {
            hashes_at_level % TILE_WIDTH
        };
        TileId::hashes(level, index, width)
    }

    pub async fn tile(&mut self, level: u8, index: u64) -> Result<&[Hash], ReadError> {
        if !self.cache.contains_key(&(level, index)) {
            let id = self.tile_id(level, index);
            if id.width == 0 {
                return Err(ReadError::Missing(format!("{} (beyond the tree)", id.path())));
            }
            let path = id.path();
            let bytes = match self.store.get(&path).await? {
                Some(bytes) => bytes.to_vec(),
                // A partial tile may have been replaced by the full one; its start is the same.
                None if !id.is_full() => {
                    let full = TileId {
                        width: TILE_WIDTH,
                        ..id
                    }
                    .path();
                    let bytes = self
                        .store
                        .get(&full)
                        .await?
                        .ok_or_else(|| ReadError::Missing(path.clone()))?;
                    bytes[..(id.width as usize * 32).min(bytes.len())].to_vec()
                }
                None => return Err(ReadError::Missing(path)),
            };
            let hashes = parse_hash_tile(&bytes, id.width).map_err(|e| ReadError::Corrupt {
                path,
                detail: e.to_string(),
            })?;
            self.cache.insert((level, index), hashes);
        }
        Ok(self.cache.get(&(level, index)).map(Vec::as_slice).unwrap_or_default())
    }

    /// Leaf hash `index`, from its level-0 tile.
    pub async fn leaf(&mut self, index: u64) -> Result<Hash, ReadError> {
        let tile = self.tile(0, index / TILE_WIDTH).await?;
        tile.get((index % TILE_WIDTH) as usize)
            .copied()
            .ok_or_else(|| ReadError::Missing(format!("leaf {index}")))
    }

    /// The hash of perfect subtree `index` of height `level`, from cached tiles only.
    fn perfect_cached(&self, level: u32, index: u64) -> Result<Hash, NeedTile> {
        let tile_level = (level / TILE_HEIGHT) as u8;
        let within = level % TILE_HEIGHT;
        let first = index << within;
        let count = 1u64 << within;
        let tile_index = first / TILE_WIDTH;
        let tile = self
            .cache
            .get(&(tile_level, tile_index))
            .ok_or(NeedTile(tile_level, tile_index))?;
        let start = (first % TILE_WIDTH) as usize;
        let hashes = tile
            .get(start..start + count as usize)
            .ok_or(NeedTile(tile_level, tile_index))?;
        Ok(merkle::root_of(hashes))
    }

    /// Runs a computation over perfect subtree hashes, fetching tiles until it has them all.
    async fn with_tiles<T>(
        &mut self,
        mut compute: impl FnMut(&mut dyn FnMut(u32, u64) -> Result<Hash, NeedTile>) -> Result<T, NeedTile>,
    ) -> Result<T, ReadError> {
        loop {
            let outcome = {
                let this = &*self;
                let mut perfect = |level, index| this.perfect_cached(level, index);
                compute(&mut perfect)
            };
            match outcome {
                Ok(value) => return Ok(value),
                Err(NeedTile(level, index)) => {
                    let before = self.cache.len();
                    self.tile(level, index).await?;
                    if self.cache.len() == before {
                        return Err(ReadError::Corrupt {
                            path: self.tile_id(level, index).path(),
                            detail: "tile is too narrow for this tree size".into(),
                        });
                    }
                }
            }
        }
    }

    pub async fn compact_range(&mut self) -> Result<CompactRange, ReadError> {
        let size = self.size;
        self.with_tiles(|perfect| CompactRange::from_perfect(size, |l, i| perfect(l, i)))
            .await
    }

    /// Root of the first `size` leaves (size at most this reader's size).
    pub async fn root_at(&mut self, size: u64) -> Result<Hash, ReadError> {
        self.with_tiles(|perfect| merkle::subtree_root(0, size, &mut |l, i| perfect(l, i)))
            .await
    }

    pub async fn inclusion_proof(&mut self, index: u64) -> Result<Vec<Hash>, ReadError> {
        let size = self.size;
        Ok(self
            .with_tiles(|perfect| merkle::inclusion_proof(index, size, |l, i| perfect(l, i)))
            .await??)
    }

    pub async fn consistency_proof(&mut self, old_size: u64) -> Result<Vec<Hash>, ReadError> {
        let size = self.size;
        Ok(self
            .with_tiles(|perfect| merkle::consistency_proof(old_size, size, |l, i| perfect(l, i)))
            .await??)
    }
}

/// A log in a store, read at its current checkpoint.
pub struct LogReader {
    pub store: Store,
}

impl LogReader {
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    /// The stored checkpoint, parsed (not verified: see [`crate::verify`]).
    pub async fn checkpoint(&self) -> Result<Option<(SignedCheckpoint, String)>, ReadError> {
        let Some(bytes) = self.store.get(CHECKPOINT_PATH).await? else {
            return Ok(None);
        };
        let signed = SignedCheckpoint::parse(&bytes).map_err(|e| ReadError::Corrupt {
            path: CHECKPOINT_PATH.into(),
            detail: e.to_string(),
        })?;
        Ok(Some((signed, String::from_utf8_lossy(&bytes).into_owned())))
    }

    /// The raw entries of bundle `index` in a tree of `size`, or `None` if the bundle is gone.
    pub async fn bundle(&self, index: u64, size: u64) -> Result<Option<Vec<Vec<u8>>>, ReadError> {
        let width = if index < size / TILE_WIDTH {
            TILE_WIDTH
        } else {
            size % TILE_WIDTH
        };
        let id = TileId::entries(index, width);
        let (bytes, stored_width) = match self.store.get(&id.path()).await? {
            Some(bytes) => (bytes, width),
            None if !id.is_full() => match self.store.get(&TileId::entries(index, TILE_WIDTH).path()).await? {
                // The partial bundle was replaced by the full one, which starts the same.
                Some(bytes) => (bytes, TILE_WIDTH),
                None => return Ok(None),
            },
            None => return Ok(None),
        };
        let entries = parse_bundle(&bytes, stored_width).map_err(|e| ReadError::Corrupt {
            path: id.path(),
            detail: e.to_string(),
        })?;
        Ok(Some(
            entries.into_iter().take(width as usize).map(<[u8]>::to_vec).collect(),
        ))
    }

    /// Raw entry `seq` of a tree of `size`.
    pub async fn entry_bytes(&self, seq: u64, size: u64) -> Result<Vec<u8>, ReadError> {
        let bundle = self
            .bundle(seq / TILE_WIDTH, size)
            .await?
            .ok_or_else(|| ReadError::Missing(format!("entry {seq} (its bundle is gone)")))?;
        bundle
            .into_iter()
            .nth((seq % TILE_WIDTH) as usize)
            .ok_or_else(|| ReadError::Missing(format!("entry {seq}")))
    }

    /// Decoded entries `from..to` of a tree of `size`, skipping pruned bundles.
    pub async fn entries(&self, from: u64, to: u64, size: u64) -> Result<Vec<(u64, Entry)>, ReadError> {
        let mut out = Vec::new();
        let to = to.min(size);
        if from >= to {
            return Ok(out);
        }
        for bundle_index in from / TILE_WIDTH..=(to - 1) / TILE_WIDTH {
            let Some(bundle) = self.bundle(bundle_index, size).await? else {
                continue;
            };
            for (i, raw) in bundle.into_iter().enumerate() {
                let seq = bundle_index * TILE_WIDTH + i as u64;
                if seq < from || seq >= to {
                    continue;
                }
                let entry = Entry::decode(&raw).map_err(|e| ReadError::Corrupt {
                    path: format!("entry {seq}"),
                    detail: e.to_string(),
                })?;
                out.push((seq, entry));
            }
        }
        Ok(out)
    }

    pub async fn blob(&self, blob: &BlobRef) -> Result<Option<Vec<u8>>, ReadError> {
        Ok(self.store.get(&blob.path()).await?.map(|b| b.to_vec()))
    }
}

impl TileReader<'_> {
    /// Seeds the cache with a hash tile about to be (or just) written.
    pub fn preload(&mut self, path: &str, bytes: &[u8]) {
        let Some(id) = TileId::parse(path) else { return };
        let crate::tile::TileKind::Hashes(level) = id.kind else {
            return;
        };
        if self.tile_id(level, id.index) != id {
            return;
        }
        if let Ok(hashes) = parse_hash_tile(bytes, id.width) {
            self.cache.insert((level, id.index), hashes);
        }
    }
}
