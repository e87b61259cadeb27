//! C2SP tlog-proof: an offline-verifiable receipt that one entry is in a signed checkpoint.

use crate::checkpoint::{CheckpointError, SignedCheckpoint};
use crate::entry::Entry;
use crate::hash::{Hash, leaf_hash};
use crate::merkle::{ProofError, verify_inclusion};
use crate::trust::TrustedKey;
use airlock_protocol::VerifierKey;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;

pub const HEADER: &str = "c2sp.org/tlog-proof@v1";
/// Deeper than any tree of 2^63 leaves.
const MAX_PROOF_HASHES: usize = 64;

#[derive(Debug, thiserror::Error)]
pub enum TlogProofError {
    #[error("proof is not UTF-8 text")]
    NotUtf8,
    #[error("proof does not start with {HEADER}")]
    BadHeader,
    #[error("malformed extra line")]
    BadExtra,
    #[error("malformed index line")]
    BadIndex,
    #[error("malformed proof hash line {0}")]
    BadHash(usize),
    #[error("proof has more than {MAX_PROOF_HASHES} hashes")]
    TooManyHashes,
    #[error("proof has no checkpoint")]
    NoCheckpoint,
    #[error("checkpoint: {0}")]
    Checkpoint(#[from] CheckpointError),
    #[error("inclusion: {0}")]
    Inclusion(#[from] ProofError),
    #[error("the extra data is not the entry this proof is for")]
    ExtraMismatch,
    #[error("the proven entry does not decode")]
    Entry(#[source] crate::entry::EntryError),
    /// Every trusted key that signed was retired before the entry was appended: after a
    /// rotation, the old key no longer vouches for what came later.
    #[error("the checkpoint is signed only by keys retired before entry {seq} was appended ({signers})")]
    SignerRetired { seq: u64, signers: String },
}

impl TlogProofError {
    /// Whether the failure is about signatures (a key problem: the wrong key, a forgery, a
    /// retired key) rather than the proof or the entry being wrong.
    pub fn is_signature(&self) -> bool {
        use crate::note::NoteError;
        matches!(
            self,
            TlogProofError::Checkpoint(CheckpointError::Note(
                NoteError::BadSignature { .. } | NoteError::NoTrustedSignature
            )) | TlogProofError::Checkpoint(CheckpointError::WrongOrigin { .. })
                | TlogProofError::SignerRetired { .. }
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlogProof {
    /// Airlock puts the entry itself here, so the receipt is self-contained.
    pub extra: Option<Vec<u8>>,
    pub index: u64,
    pub hashes: Vec<Hash>,
    pub checkpoint: SignedCheckpoint,
}

impl TlogProof {
    pub fn to_text(&self) -> String {
        let mut out = format!("{HEADER}\n");
        if let Some(extra) = &self.extra {
            out.push_str(&format!("extra {}\n", B64.encode(extra)));
        }
        out.push_str(&format!("index {}\n", self.index));
        for h in &self.hashes {
            out.push_str(&h.to_base64());
            out.push('\n');
        }
        out.push('\n');
        out.push_str(&self.checkpoint.to_text());
        out
    }

    pub fn parse(bytes: &[u8]) -> Result<TlogProof, TlogProofError> {
        let text = std::str::from_utf8(bytes).map_err(|_| TlogProofError::NotUtf8)?;
        let rest = text
            .strip_prefix(HEADER)
            .and_then(|r| r.strip_prefix('\n'))
            .ok_or(TlogProofError::BadHeader)?;
        let (mut line, mut rest) = rest.split_once('\n').ok_or(TlogProofError::BadIndex)?;
        let mut extra = None;
        if let Some(data) = line.strip_prefix("extra ") {
            extra = Some(B64.decode(data).map_err(|_| TlogProofError::BadExtra)?);
            (line, rest) = rest.split_once('\n').ok_or(TlogProofError::BadIndex)?;
        }
        let index = line.strip_prefix("index ").ok_or(TlogProofError::BadIndex)?;
        if index.is_empty() || !index.bytes().all(|b| b.is_ascii_digit()) || (index.len() > 1 && index.starts_with('0'))
        {
            return Err(TlogProofError::BadIndex);
        }
        let index: u64 = index.parse().map_err(|_| TlogProofError::BadIndex)?;
        let mut hashes = Vec::new();
        loop {
            let (line, after) = rest.split_once('\n').ok_or(TlogProofError::NoCheckpoint)?;
            rest = after;
            if line.is_empty() {
                break;
            }
            if hashes.len() == MAX_PROOF_HASHES {
                return Err(TlogProofError::TooManyHashes);
            }
            hashes.push(Hash::from_base64(line).ok_or(TlogProofError::BadHash(hashes.len()))?);
        }
        let checkpoint = SignedCheckpoint::parse(rest.as_bytes())?;
        Ok(TlogProof {
            extra,
            index,
            hashes,
            checkpoint,
        })
    }

    /// Verifies the checkpoint's signature and the inclusion of `leaf` (the entry's leaf hash).
    pub fn verify_leaf(&self, leaf: &Hash, origin: &str, keys: &[VerifierKey]) -> Result<(), TlogProofError> {
        self.checkpoint.verify(origin, keys)?;
        let cp = &self.checkpoint.checkpoint;
        verify_inclusion(self.index, cp.size, leaf.as_bytes(), &self.hashes, cp.root.as_bytes())?;
        Ok(())
    }

    /// Verifies a proof that carries its entry in the extra data; returns the entry. When
    /// `entry` is given, the extra data must be exactly that entry.
    pub fn verify(&self, entry: Option<&[u8]>, origin: &str, keys: &[VerifierKey]) -> Result<Vec<u8>, TlogProofError> {
        let data = match (&self.extra, entry) {
            (Some(extra), Some(entry)) if extra.as_slice() != entry => return Err(TlogProofError::ExtraMismatch),
            (_, Some(entry)) => entry.to_vec(),
            (Some(extra), None) => extra.clone(),
            (None, None) => return Err(TlogProofError::ExtraMismatch),
        };
        self.verify_leaf(&leaf_hash(&data), origin, keys)?;
        Ok(data)
    }

    /// Verifies a receipt that carries its entry against keys that may be retired (a key set
    /// after rotations): the checkpoint must be signed by a trusted key not retired before the
    /// entry was appended. Returns the entry, decoded, with its bytes.
    pub fn verify_entry(&self, origin: &str, keys: &[TrustedKey]) -> Result<(Entry, Vec<u8>), TlogProofError> {
        let data = self.extra.clone().ok_or(TlogProofError::ExtraMismatch)?;
        let verifiers: Vec<VerifierKey> = keys.iter().map(|k| k.key.clone()).collect();
        let signers = self.checkpoint.verify(origin, &verifiers)?;
        let cp = &self.checkpoint.checkpoint;
        verify_inclusion(
            self.index,
            cp.size,
            leaf_hash(&data).as_bytes(),
            &self.hashes,
            cp.root.as_bytes(),
        )?;
        let entry = Entry::decode(&data).map_err(TlogProofError::Entry)?;
        let vouched = signers
            .iter()
            .any(|s| keys.iter().any(|k| &k.key == *s && k.could_cover(entry.time_ms)));
        if !vouched {
            return Err(TlogProofError::SignerRetired {
                seq: self.index,
                signers: signers.iter().map(|k| k.to_string()).collect::<Vec<_>>().join(", "),
            });
        }
        Ok((entry, data))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::Checkpoint;
    use crate::merkle::{inclusion_proof, root_of};
    use airlock_protocol::SigningKey;

    #[test]
    fn a_receipt_round_trips_and_verifies() {
        let entries: Vec<Vec<u8>> = (0..5u8).map(|i| vec![i; 3]).collect();
        let leaves: Vec<Hash> = entries.iter().map(|e| leaf_hash(e)).collect();
        let key = SigningKey::generate("airlock.test/log").unwrap();
        let checkpoint = Checkpoint::new("airlock.test/log", 5, root_of(&leaves)).sign(&[&key]);
        let hashes = inclusion_proof(3, 5, |level, index| -> Result<Hash, ()> {
            let start = (index << level) as usize;
            Ok(root_of(&leaves[start..start + (1 << level)]))
        })
        .unwrap()
        .unwrap();
        let proof = TlogProof {
            extra: Some(entries[3].clone()),
            index: 3,
            hashes,
            checkpoint,
        };
        let parsed = TlogProof::parse(proof.to_text().as_bytes()).unwrap();
        assert_eq!(parsed, proof);
        let keys = [key.verifier()];
        assert_eq!(parsed.verify(None, "airlock.test/log", &keys).unwrap(), entries[3]);
        assert!(parsed.verify(Some(&entries[2]), "airlock.test/log", &keys).is_err());
        let mut wrong_index = parsed.clone();
        wrong_index.index = 2;
        assert!(wrong_index.verify(None, "airlock.test/log", &keys).is_err());
        let mut no_extra = parsed.clone();
        no_extra.extra = None;
        let parsed = TlogProof::parse(no_extra.to_text().as_bytes()).unwrap();
        assert_eq!(
            parsed.verify(Some(&entries[3]), "airlock.test/log", &keys).unwrap(),
            entries[3]
        );
    }

    #[test]
    fn malformed_proofs_are_refused() {
        for bad in [
            "",
            "c2sp.org/tlog-proof@v2\nindex 0\n\n",
            "c2sp.org/tlog-proof@v1\nindex 01\n\n",
            "c2sp.org/tlog-proof@v1\nextra !!\nindex 0\n\n",
            "c2sp.org/tlog-proof@v1\nindex 0\nnot-a-hash\n\n",
            "c2sp.org/tlog-proof@v1\nindex 0\n",
            "c2sp.org/tlog-proof@v1\nindex 0\n\nnot a checkpoint\n",
        ] {
            assert!(TlogProof::parse(bad.as_bytes()).is_err(), "{bad:?}");
        }
    }
}
