//! Verification of a whole log from its objects and the public keys: every entry hash, the
//! hash chain, every tile, the root, the checkpoint's signatures (within each key's validity),
//! the blobs, and optionally consistency with a trusted earlier checkpoint. The first problem
//! found is reported with the object or entry it is in, what is wrong, and its kind: a store
//! that could not be read is said as such ([`VerifyErrorKind::Unreadable`]), never as a damaged
//! log.

mod error;

pub use error::{VerifyError, VerifyErrorKind, exit};

use crate::checkpoint::{CheckpointError, SignedCheckpoint};
use crate::entry::{BlobRef, Entry};
use crate::hash::{Hash, leaf_hash};
use crate::merkle::{self, verify_consistency};
use crate::note::NoteError;
use crate::prune::minimum_index;
use crate::reader::{LogReader, ReadError, TileReader};
use crate::store::{CHECKPOINT_PATH, Store};
use crate::tile::{TILE_WIDTH, TileId, TileKind, encode_hash_tile, parse_bundle, parse_hash_tile, tiles_for_size};
use crate::trust::TrustedKey;
use crate::writer::TreeState;
use VerifyErrorKind as Kind;
use std::collections::{BTreeMap, HashSet};

fn fail<T>(kind: Kind, location: impl Into<String>, reason: impl Into<String>) -> Result<T, VerifyError> {
    Err(VerifyError::new(kind, location, reason))
}

/// An object, or `None` when the store says it is not there; a store that cannot answer is
/// [`VerifyErrorKind::Unreadable`].
async fn get(store: &Store, path: &str) -> Result<Option<bytes::Bytes>, VerifyError> {
    store.get(path).await.map_err(|e| VerifyError::unreadable(path, e))
}

/// A checkpoint (or trusted checkpoint) that failed to parse or verify: a signature problem
/// when its notes' signatures are at fault, a malformed object otherwise.
fn checkpoint_error(location: &str, error: CheckpointError) -> VerifyError {
    let kind = match &error {
        CheckpointError::Note(NoteError::BadSignature { .. } | NoteError::NoTrustedSignature) => Kind::Signature,
        CheckpointError::WrongOrigin { .. } => Kind::Signature,
        _ => Kind::Malformed,
    };
    VerifyError::caused(kind, location, error)
}

fn entry_location(seq: u64, size: u64) -> String {
    let bundle = seq / TILE_WIDTH;
    let width = (size - bundle * TILE_WIDTH).min(TILE_WIDTH);
    format!("entry {seq} ({})", TileId::entries(bundle, width).path())
}

#[derive(Clone, Debug)]
pub struct VerifyOptions {
    /// The log's origin (checkpoint first line and key name).
    pub origin: String,
    pub keys: Vec<TrustedKey>,
    /// A checkpoint seen earlier (signed note text): the store must be consistent with it.
    pub trusted_checkpoint: Option<String>,
    /// Read every blob and check its BLAKE3 digest.
    pub check_blobs: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    pub size: u64,
    pub root: Hash,
    /// Entries below this index were pruned (their bundles are gone, their leaf hashes stay).
    pub min_index: u64,
    pub entries_checked: u64,
    pub blobs_checked: u64,
    pub tiles_checked: u64,
    /// Names and key ids of the keys whose signatures verified.
    pub signers: Vec<String>,
    /// Size of the trusted checkpoint the store was proved consistent with.
    pub consistent_with: Option<u64>,
    pub checkpoint: String,
}

/// The fields verification reads; the rest of an entry is covered by its hash.
#[derive(serde::Deserialize)]
struct EntryCore {
    v: u32,
    seq: u64,
    time_ms: i64,
    blobs: BTreeMap<String, BlobRef>,
    prev: Hash,
}

/// Verifies the whole log, phase by phase; the first problem found is the error.
pub async fn verify(store: &Store, options: &VerifyOptions) -> Result<Verified, VerifyError> {
    let mut v = Verification::start(store, options).await?;
    v.read_level0_tiles().await?;
    v.check_entries().await?;
    if !v.tiles_authentic {
        v.find_the_bad_level0_object()?;
    }
    let tiles_checked = v.check_higher_tiles().await?;
    v.check_signers_were_valid()?;
    let consistent_with = v.check_consistency_with_trusted().await?;
    Ok(Verified {
        size: v.size,
        root: v.root,
        min_index: v.min_index,
        entries_checked: v.entries_checked,
        blobs_checked: v.checked_blobs.len() as u64,
        tiles_checked,
        signers: v.signer_names(),
        consistent_with,
        checkpoint: String::from_utf8_lossy(&v.raw_checkpoint).into_owned(),
    })
}

/// What verification knows so far. Each phase reads what the earlier ones found.
struct Verification<'a> {
    store: &'a Store,
    options: &'a VerifyOptions,
    raw_checkpoint: bytes::Bytes,
    signers: Vec<airlock_protocol::VerifierKey>,
    size: u64,
    root: Hash,
    trusted: Option<crate::checkpoint::Checkpoint>,
    min_index: u64,
    /// The level-0 tiles, by index (`None` where missing).
    tile_leaves: Vec<Option<Vec<Hash>>>,
    /// The level-0 tiles add up to the signed root, so they can judge the entries.
    tiles_authentic: bool,
    /// Every entry's leaf hash, in order (from the entry, or from its tile where pruned).
    leaves: Vec<Hash>,
    checked_blobs: HashSet<String>,
    entries_checked: u64,
    last_time: Option<i64>,
}

impl<'a> Verification<'a> {
    /// Phase 1: the checkpoint verifies with the trusted keys, any trusted earlier checkpoint
    /// does too and is not ahead of it or forked from it, and the prune marker is sane.
    async fn start(store: &'a Store, options: &'a VerifyOptions) -> Result<Verification<'a>, VerifyError> {
        let keys: Vec<_> = options.keys.iter().map(|k| k.key.clone()).collect();
        let Some(raw_checkpoint) = get(store, CHECKPOINT_PATH).await? else {
            return fail(Kind::Missing, CHECKPOINT_PATH, "missing");
        };
        let signed = SignedCheckpoint::parse(&raw_checkpoint).map_err(|e| checkpoint_error(CHECKPOINT_PATH, e))?;
        let signers = signed
            .verify(&options.origin, &keys)
            .map_err(|e| checkpoint_error(CHECKPOINT_PATH, e))?
            .into_iter()
            .cloned()
            .collect();
        let size = signed.checkpoint.size;
        let root = signed.checkpoint.root;
        let trusted = match &options.trusted_checkpoint {
            None => None,
            Some(text) => Some(trusted_checkpoint(text, &options.origin, &keys, size, root)?),
        };
        let min_index = minimum_index(store, &options.origin, &keys).await?;
        if min_index > size {
            return fail(
                Kind::Malformed,
                format!("prune/{min_index}"),
                format!("prunes beyond the tree size {size}"),
            );
        }
        Ok(Verification {
            store,
            options,
            raw_checkpoint,
            signers,
            size,
            root,
            trusted,
            min_index,
            tile_leaves: Vec::new(),
            tiles_authentic: false,
            leaves: Vec::with_capacity(size as usize),
            checked_blobs: HashSet::new(),
            entries_checked: 0,
            last_time: None,
        })
    }

    fn signer_names(&self) -> Vec<String> {
        self.signers
            .iter()
            .map(|k| format!("{}+{:08x}", k.name(), k.key_id()))
            .collect()
    }

    /// Phase 2: level-0 tiles first. If they add up to the signed root they are authentic, and
    /// any entry that does not hash to its tile's leaf is the bad one.
    async fn read_level0_tiles(&mut self) -> Result<(), VerifyError> {
        for id in tiles_for_size(self.size)
            .into_iter()
            .filter(|t| t.kind == TileKind::Hashes(0))
        {
            self.tile_leaves.push(read_tile(self.store, &id).await?);
        }
        let tiles_root = if self.tile_leaves.iter().all(Option::is_some) {
            let leaves: Vec<Hash> = self.tile_leaves.iter().flatten().flatten().copied().collect();
            Some(merkle::root_of(&leaves))
        } else {
            None
        };
        self.tiles_authentic = tiles_root == Some(self.root);
        Ok(())
    }

    fn tile_leaf(&self, seq: u64) -> Option<Hash> {
        self.tile_leaves
            .get((seq / TILE_WIDTH) as usize)?
            .as_ref()?
            .get((seq % TILE_WIDTH) as usize)
            .copied()
    }

    /// Phase 3: every entry bundle, each entry against its tile, the hash chain and the blobs.
    async fn check_entries(&mut self) -> Result<(), VerifyError> {
        let reader = LogReader::new(self.store.clone());
        for bundle_index in 0..self.size.div_ceil(TILE_WIDTH) {
            let width = (self.size - bundle_index * TILE_WIDTH).min(TILE_WIDTH);
            let id = TileId::entries(bundle_index, width);
            let first = bundle_index * TILE_WIDTH;
            let Some(bytes) = self.read_bundle(bundle_index, width).await? else {
                self.take_pruned_leaves(bundle_index, first, width, &id)?;
                continue;
            };
            let entries =
                parse_bundle(&bytes, width).map_err(|e| VerifyError::caused(Kind::Malformed, id.path(), e))?;
            for (offset, raw) in entries.iter().enumerate() {
                self.check_entry(&reader, first + offset as u64, raw).await?;
            }
        }
        Ok(())
    }

    /// A bundle, or the first entries of the full bundle that replaced it since the checkpoint
    /// was read.
    async fn read_bundle(&self, bundle_index: u64, width: u64) -> Result<Option<bytes::Bytes>, VerifyError> {
        let id = TileId::entries(bundle_index, width);
        let bytes = get(self.store, &id.path()).await?;
        if bytes.is_some() || id.is_full() {
            return Ok(bytes);
        }
        let full = TileId::entries(bundle_index, TILE_WIDTH).path();
        let Some(full_bytes) = get(self.store, &full).await? else {
            return Ok(None);
        };
        let malformed = |e| VerifyError::caused(Kind::Malformed, full.clone(), e);
        let entries = parse_bundle(&full_bytes, TILE_WIDTH).map_err(malformed)?;
        let mut prefix = Vec::new();
        for entry in entries.iter().take(width as usize) {
            crate::tile::push_bundle_entry(&mut prefix, entry).map_err(malformed)?;
        }
        Ok(Some(bytes::Bytes::from(prefix)))
    }

    /// A missing bundle is fine only when pruned: its leaf hashes stay in the tiles, which the
    /// root authenticates.
    fn take_pruned_leaves(
        &mut self,
        bundle_index: u64,
        first: u64,
        width: u64,
        id: &TileId,
    ) -> Result<(), VerifyError> {
        if first + width > self.min_index {
            return fail(Kind::Missing, id.path(), "missing");
        }
        for seq in first..first + width {
            match self.tile_leaf(seq) {
                Some(h) if self.tiles_authentic => self.leaves.push(h),
                _ => {
                    return fail(
                        Kind::Missing,
                        TileId::hashes(0, bundle_index, width).path(),
                        "missing or not authentic, and the entries it covers were pruned",
                    );
                }
            }
        }
        Ok(())
    }

    async fn check_entry(&mut self, reader: &LogReader, seq: u64, raw: &[u8]) -> Result<(), VerifyError> {
        let size = self.size;
        let leaf = leaf_hash(raw);
        let core: Option<EntryCore> = rmp_serde::from_slice(raw).ok();
        if self.tiles_authentic && self.tile_leaf(seq) != Some(leaf) {
            let says = match &core {
                Some(c) if c.seq != seq => format!(" (it says it is entry {})", c.seq),
                Some(_) => String::new(),
                None => " (and it does not decode)".to_owned(),
            };
            return fail(
                Kind::Inclusion,
                entry_location(seq, size),
                format!("is not leaf {seq} of the signed tree: changed, swapped or inserted{says}"),
            );
        }
        let Some(core) = core else {
            let detail = Entry::decode(raw).err().map(|e| e.to_string()).unwrap_or_default();
            return fail(
                Kind::Malformed,
                entry_location(seq, size),
                format!("does not decode: {detail}"),
            );
        };
        if core.v != crate::entry::ENTRY_VERSION {
            return fail(
                Kind::Malformed,
                entry_location(seq, size),
                format!("format version {}", core.v),
            );
        }
        if core.seq != seq {
            return fail(
                Kind::Chain,
                entry_location(seq, size),
                format!("says it is entry {}", core.seq),
            );
        }
        let expected_prev = if seq == 0 {
            Hash::ZERO
        } else {
            self.leaves[seq as usize - 1]
        };
        if core.prev != expected_prev {
            return fail(
                Kind::Chain,
                entry_location(seq, size),
                format!(
                    "hash chain broken: prev is {}, entry {} hashes to {expected_prev}",
                    core.prev,
                    seq.saturating_sub(1)
                ),
            );
        }
        if self.options.check_blobs && seq >= self.min_index {
            for blob in core.blobs.values() {
                if self.checked_blobs.contains(&blob.b3) {
                    continue;
                }
                check_blob(reader, blob, seq).await?;
                self.checked_blobs.insert(blob.b3.clone());
            }
        }
        self.last_time = Some(core.time_ms);
        self.leaves.push(leaf);
        self.entries_checked += 1;
        Ok(())
    }

    /// Phase 4, when the level-0 tiles did not give the signed root: either the entries do (and
    /// a tile is the bad object), or neither does and the first disagreement is named.
    fn find_the_bad_level0_object(&self) -> Result<(), VerifyError> {
        let size = self.size;
        if merkle::root_of(&self.leaves) != self.root {
            // A missing tile is the likelier report; otherwise the first entry that disagrees
            // with its tile.
            if let Some(index) = self.tile_leaves.iter().position(Option::is_none) {
                return fail(Kind::Missing, tiles_for_size(size)[index].path(), "missing");
            }
            for (seq, leaf) in self.leaves.iter().enumerate() {
                if self.tile_leaf(seq as u64) != Some(*leaf) {
                    return fail(
                        Kind::Inclusion,
                        entry_location(seq as u64, size),
                        "neither it nor its tile hash is in the signed tree",
                    );
                }
            }
            return fail(
                Kind::Inclusion,
                CHECKPOINT_PATH,
                "the store's entries and tiles do not add up to the signed root",
            );
        }
        // The entries are authentic, so a level-0 tile is the bad object.
        let leaves = &self.leaves;
        for (index, tile) in self.tile_leaves.iter().enumerate() {
            let expected = &leaves[index * TILE_WIDTH as usize..((index + 1) * TILE_WIDTH as usize).min(leaves.len())];
            let id = TileId::hashes(0, index as u64, expected.len() as u64);
            match tile {
                None => return fail(Kind::Missing, id.path(), "missing"),
                Some(hashes) if hashes.as_slice() != expected => {
                    let at = hashes.iter().zip(expected).position(|(a, b)| a != b).unwrap_or(0);
                    return fail(
                        Kind::Inclusion,
                        id.path(),
                        format!("hash {at} is not the leaf hash of entry {}", index * 256 + at),
                    );
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// Phase 5: every stored tile above level 0 is exactly what the leaves give. Returns the
    /// number of tiles checked, level 0 included.
    async fn check_higher_tiles(&self) -> Result<u64, VerifyError> {
        let mut expected = TreeState::new();
        for leaf in &self.leaves {
            expected.append_leaf_hash(*leaf);
        }
        let tiles: BTreeMap<TileId, Vec<u8>> = expected.seal_hash_tiles().into_iter().collect();
        let mut tiles_checked = self.tile_leaves.len() as u64;
        for id in tiles_for_size(self.size)
            .into_iter()
            .filter(|t| t.kind != TileKind::Hashes(0))
        {
            let want = tiles.get(&id).map(Vec::as_slice).unwrap_or_default();
            let Some(have) = read_tile(self.store, &id).await? else {
                return fail(Kind::Missing, id.path(), "missing");
            };
            if encode_hash_tile(&have) != want {
                let at = have
                    .iter()
                    .zip(want.chunks(32))
                    .position(|(a, b)| a.as_bytes().as_slice() != b)
                    .unwrap_or(0);
                return fail(
                    Kind::Inclusion,
                    id.path(),
                    format!("hash {at} is not the hash of the tile below it"),
                );
            }
            tiles_checked += 1;
        }
        Ok(tiles_checked)
    }

    /// Phase 6: at least one signer was valid at the time of the last entry it covers.
    fn check_signers_were_valid(&self) -> Result<(), VerifyError> {
        let Some(time) = self.last_time else {
            return Ok(());
        };
        let valid = self
            .signers
            .iter()
            .any(|s| self.options.keys.iter().any(|k| &k.key == s && k.valid_at(time)));
        if !valid {
            return fail(
                Kind::Signature,
                CHECKPOINT_PATH,
                format!("signed only by keys that are not valid at its time ({time} ms, the last entry's)"),
            );
        }
        Ok(())
    }

    /// Phase 7: the log extends the trusted earlier checkpoint, by its leaves and by a
    /// consistency proof built from the tiles, as a remote client would check it.
    async fn check_consistency_with_trusted(&self) -> Result<Option<u64>, VerifyError> {
        let Some(t) = &self.trusted else {
            return Ok(None);
        };
        if t.size > 0 {
            let prefix_root = merkle::root_of(&self.leaves[..t.size as usize]);
            if prefix_root != t.root {
                return fail(
                    Kind::Consistency,
                    CHECKPOINT_PATH,
                    format!(
                        "not consistent with the trusted checkpoint of size {}: the log's first {} entries have root {prefix_root}, the trusted checkpoint says {} (rewritten history, a fork or a rollback)",
                        t.size, t.size, t.root
                    ),
                );
            }
            let proof = TileReader::new(self.store, self.size)
                .consistency_proof(t.size)
                .await
                .map_err(|e| read_error(CHECKPOINT_PATH, e))?;
            verify_consistency(t.size, self.size, &proof, t.root.as_bytes(), self.root.as_bytes()).map_err(|e| {
                VerifyError {
                    reason: format!("consistency proof from the tiles: {e}"),
                    ..VerifyError::caused(Kind::Consistency, CHECKPOINT_PATH, e)
                }
            })?;
        }
        Ok(Some(t.size))
    }
}

/// A trusted earlier checkpoint: signed by the trusted keys, not ahead of the store's, and not
/// a different tree of the same size.
fn trusted_checkpoint(
    text: &str,
    origin: &str,
    keys: &[airlock_protocol::VerifierKey],
    size: u64,
    root: Hash,
) -> Result<crate::checkpoint::Checkpoint, VerifyError> {
    let t = SignedCheckpoint::parse(text.as_bytes()).map_err(|e| checkpoint_error("trusted checkpoint", e))?;
    t.verify(origin, keys)
        .map_err(|e| checkpoint_error("trusted checkpoint", e))?;
    let t = t.checkpoint;
    if t.size > size {
        return fail(
            Kind::Rollback,
            CHECKPOINT_PATH,
            format!(
                "the log has {size} entries but a trusted checkpoint has {}: it was truncated or rolled back",
                t.size
            ),
        );
    }
    if t.size == size && t.root != root {
        return fail(
            Kind::Fork,
            CHECKPOINT_PATH,
            format!(
                "fork: the trusted checkpoint of size {size} has root {}, the store's has {root}",
                t.root
            ),
        );
    }
    Ok(t)
}

async fn read_tile(store: &Store, id: &TileId) -> Result<Option<Vec<Hash>>, VerifyError> {
    let Some(bytes) = read_with_fallback(store, id).await? else {
        return Ok(None);
    };
    parse_hash_tile(&bytes, id.width)
        .map(Some)
        .map_err(|e| VerifyError::caused(Kind::Malformed, id.path(), e))
}

/// A partial tile may have been replaced by the full one (or a wider partial) since the
/// checkpoint was read; its first hashes are the same.
async fn read_with_fallback(store: &Store, id: &TileId) -> Result<Option<Vec<u8>>, VerifyError> {
    if let Some(bytes) = get(store, &id.path()).await? {
        return Ok(Some(bytes.to_vec()));
    }
    if id.is_full() {
        return Ok(None);
    }
    let full = TileId {
        width: TILE_WIDTH,
        ..*id
    };
    if let Some(bytes) = get(store, &full.path()).await? {
        return Ok(Some(bytes[..(id.width as usize * 32).min(bytes.len())].to_vec()));
    }
    Ok(None)
}

async fn check_blob(reader: &LogReader, blob: &BlobRef, seq: u64) -> Result<(), VerifyError> {
    match reader.blob(blob).await {
        Ok(Some(bytes)) => {
            let digest = blake3::hash(&bytes).to_hex().to_string();
            if digest != blob.b3 {
                return fail(
                    Kind::Blob,
                    blob.path(),
                    format!("content hashes to {digest} (referenced by entry {seq})"),
                );
            }
            Ok(())
        }
        Ok(None) => fail(
            Kind::Missing,
            blob.path(),
            format!("missing (referenced by entry {seq})"),
        ),
        Err(e) => Err(read_error(&blob.path(), e)),
    }
}

/// A failed read through the log reader: the store not answering is an outage; anything the
/// reader found wrong in what it read is a damaged log.
fn read_error(location: &str, error: ReadError) -> VerifyError {
    match error {
        ReadError::Store(e) => VerifyError::unreadable(location, e),
        ReadError::Missing(_) => VerifyError::caused(Kind::Missing, location, error),
        ReadError::Corrupt { .. } => VerifyError::caused(Kind::Malformed, location, error),
        ReadError::Proof(_) => VerifyError::caused(Kind::Inclusion, location, error),
    }
}
