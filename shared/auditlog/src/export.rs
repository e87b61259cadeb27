//! A self-contained copy of a log for someone outside the team: every object (tiles, bundles,
//! blobs, prune marks, checkpoint) in the tlog-tiles layout, plus `airlock-audit.json` with the
//! origin and verifier keys, and a README saying how to check it.

use crate::store::{Store, StoreError};
use crate::trust::KeyConfig;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

pub const MANIFEST: &str = "airlock-audit.json";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub origin: String,
    pub keys: Vec<KeyConfig>,
    pub checkpoint: String,
    pub objects: u64,
    pub exported_at_ms: i64,
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the log has no checkpoint")]
    Empty,
}

/// Copies the log in `from` into `to` (which should be empty), checkpoint last.
pub async fn export(from: &Store, to: &Store, origin: &str, keys: Vec<KeyConfig>) -> Result<Manifest, ExportError> {
    let checkpoint = from
        .get(crate::store::CHECKPOINT_PATH)
        .await?
        .ok_or(ExportError::Empty)?;
    let mut objects = 0;
    for path in from.list("").await? {
        if path.starts_with("staging/") || path == crate::store::CHECKPOINT_PATH || path == MANIFEST {
            continue;
        }
        if let Some(bytes) = from.get(&path).await? {
            to.put_overwrite(&path, bytes).await?;
            objects += 1;
        }
    }
    to.put_overwrite(crate::store::CHECKPOINT_PATH, checkpoint.clone())
        .await?;
    let manifest = Manifest {
        origin: origin.to_owned(),
        keys,
        checkpoint: String::from_utf8_lossy(&checkpoint).into_owned(),
        objects: objects + 1,
        exported_at_ms: airlock_protocol::now_ms(),
    };
    let json = serde_json::to_vec_pretty(&manifest).unwrap_or_default();
    to.put_overwrite(MANIFEST, Bytes::from(json)).await?;
    to.put_overwrite("README.txt", Bytes::from(README.replace("{origin}", origin)))
        .await?;
    Ok(manifest)
}

const README: &str = "This directory is a copy of the Airlock audit log {origin}.\n\
\n\
It is a C2SP tlog-tiles log: `checkpoint` is the signed tree head (a C2SP signed note),\n\
`tile/<L>/<N>` the Merkle hash tiles, `tile/entries/<N>` the entry bundles, and\n\
`blob/<blake3>` the content the entries reference. `airlock-audit.json` names the log's\n\
origin and the verifier keys; compare them with the keys the operators published.\n\
\n\
To check it with Airlock:  airlock audit verify --store <this directory>\n\
The format is documented in docs/audit-log.md of the Airlock repository, enough to\n\
write a verifier in another language.\n";
