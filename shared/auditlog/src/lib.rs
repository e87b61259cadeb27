//! Airlock's audit log, below the bus: the entry format, RFC 6962 Merkle hashing and proofs,
//! C2SP signed notes and checkpoints, the tlog-tiles layout on object storage, the writer's
//! commit steps, and a verifier that names the first bad entry or object.
//!
//! Reading order: [`hash`] and [`merkle`] (the tree), [`note`], [`checkpoint`] and [`proof`]
//! (the signed formats), [`tile`] (the storage layout), [`entry`] (what one event becomes),
//! [`store`] (object storage), [`writer`] (appending and committing), [`reader`] and
//! [`verify`] (reading it back), [`prune`], [`replay`], [`approval_stats`] and [`export`] (operators' tools).

pub mod approval_stats;
pub mod checkpoint;
pub mod entry;
pub mod export;
pub mod hash;
pub mod merkle;
pub mod note;
pub mod proof;
pub mod prune;
pub mod reader;
pub mod replay;
pub mod store;
#[cfg(feature = "testing")]
pub mod testing;
pub mod tile;
pub mod trust;
pub mod verify;
pub mod writer;

pub use checkpoint::{Checkpoint, CheckpointError, SignedCheckpoint};
pub use entry::{BlobRef, Entry, Prepared};
pub use hash::{Hash, leaf_hash, node_hash};
pub use merkle::{CompactRange, ProofError};
pub use note::{Note, NoteError};
pub use proof::{TlogProof, TlogProofError};
pub use reader::{LogReader, ReadError, TileReader};
pub use store::{Store, StoreError};
pub use tile::{TileId, TileKind};
pub use trust::{KeyConfig, TrustedKey};
pub use verify::{Verified, VerifyError, VerifyErrorKind, VerifyOptions, verify};
pub use writer::{Staged, TreeState};
