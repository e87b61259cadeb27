//! C2SP tlog-checkpoint bodies: origin, tree size, base64 root hash, optional extension lines.

use crate::hash::Hash;
use crate::note::{Note, NoteError};
use airlock_protocol::{SigningKey, VerifierKey};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    #[error(transparent)]
    Note(#[from] NoteError),
    #[error("checkpoint body has fewer than three lines")]
    TooShort,
    #[error("checkpoint origin is empty")]
    EmptyOrigin,
    #[error("checkpoint tree size {0:?} is not a decimal without leading zeroes")]
    BadSize(String),
    #[error("checkpoint root hash {0:?} is not base64 of 32 bytes")]
    BadRoot(String),
    #[error("checkpoint has an empty extension line")]
    EmptyExtension,
    #[error("checkpoint is for log {found:?}, expected {expected:?}")]
    WrongOrigin { found: String, expected: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    pub origin: String,
    pub size: u64,
    pub root: Hash,
    pub extensions: Vec<String>,
}

impl Checkpoint {
    pub fn new(origin: &str, size: u64, root: Hash) -> Self {
        Self {
            origin: origin.to_owned(),
            size,
            root,
            extensions: Vec::new(),
        }
    }

    pub fn body(&self) -> String {
        let mut out = format!("{}\n{}\n{}\n", self.origin, self.size, self.root.to_base64());
        for line in &self.extensions {
            out.push_str(line);
            out.push('\n');
        }
        out
    }

    pub fn parse_body(text: &str) -> Result<Checkpoint, CheckpointError> {
        let text = text
            .strip_suffix('\n')
            .ok_or(CheckpointError::Note(NoteError::NoFinalNewline))?;
        let mut lines = text.split('\n');
        let (Some(origin), Some(size), Some(root)) = (lines.next(), lines.next(), lines.next()) else {
            return Err(CheckpointError::TooShort);
        };
        if origin.is_empty() {
            return Err(CheckpointError::EmptyOrigin);
        }
        let size_ok =
            !size.is_empty() && size.bytes().all(|b| b.is_ascii_digit()) && (size == "0" || !size.starts_with('0'));
        let size_value = size
            .parse::<u64>()
            .ok()
            .filter(|_| size_ok)
            .ok_or_else(|| CheckpointError::BadSize(size.to_owned()))?;
        let root_value = Hash::from_base64(root).ok_or_else(|| CheckpointError::BadRoot(root.to_owned()))?;
        let extensions: Vec<String> = lines.map(str::to_owned).collect();
        if extensions.iter().any(String::is_empty) {
            return Err(CheckpointError::EmptyExtension);
        }
        Ok(Checkpoint {
            origin: origin.to_owned(),
            size: size_value,
            root: root_value,
            extensions,
        })
    }

    pub fn sign(&self, keys: &[&SigningKey]) -> SignedCheckpoint {
        let note = Note::sign(&self.body(), keys);
        SignedCheckpoint {
            checkpoint: self.clone(),
            note,
        }
    }
}

/// A checkpoint with its note, parsed but not yet verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedCheckpoint {
    pub checkpoint: Checkpoint,
    pub note: Note,
}

impl SignedCheckpoint {
    pub fn parse(bytes: &[u8]) -> Result<SignedCheckpoint, CheckpointError> {
        let note = Note::parse(bytes)?;
        let checkpoint = Checkpoint::parse_body(&note.text)?;
        Ok(SignedCheckpoint { checkpoint, note })
    }

    pub fn to_text(&self) -> String {
        self.note.to_text()
    }

    /// Checks the origin and the signatures (see [`Note::verify`]); returns the keys that signed.
    pub fn verify<'k>(
        &self,
        origin: &str,
        keys: impl IntoIterator<Item = &'k VerifierKey>,
    ) -> Result<Vec<&'k VerifierKey>, CheckpointError> {
        if self.checkpoint.origin != origin {
            return Err(CheckpointError::WrongOrigin {
                found: self.checkpoint.origin.clone(),
                expected: origin.to_owned(),
            });
        }
        Ok(self.note.verify(keys)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_example_body_parses_and_round_trips() {
        let body = "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n";
        let c = Checkpoint::parse_body(body).unwrap();
        assert_eq!(c.origin, "example.com/behind-the-sofa");
        assert_eq!(c.size, 20852163);
        assert_eq!(c.body(), body);
    }

    #[test]
    fn bad_bodies_are_refused() {
        let root = Hash::ZERO.to_base64();
        for bad in [
            format!("o\n01\n{root}\n"),
            format!("o\n-1\n{root}\n"),
            format!("o\n\n{root}\n"),
            format!("\n1\n{root}\n"),
            "o\n1\nAAAA\n".to_owned(),
            "o\n1\n".to_owned(),
            format!("o\n1\n{root}\n\n"),
            format!("o\n1\n{root}"),
            format!("o\n99999999999999999999\n{root}\n"),
        ] {
            assert!(Checkpoint::parse_body(&bad).is_err(), "{bad:?}");
        }
        assert!(Checkpoint::parse_body(&format!("o\n0\n{root}\next\n")).is_ok());
    }

    #[test]
    fn signed_checkpoints_verify_only_for_their_origin_and_key() {
        let key = SigningKey::generate("airlock.test/log").unwrap();
        let signed = Checkpoint::new("airlock.test/log", 3, Hash::ZERO).sign(&[&key]);
        let parsed = SignedCheckpoint::parse(signed.to_text().as_bytes()).unwrap();
        assert!(parsed.verify("airlock.test/log", [&key.verifier()]).is_ok());
        assert!(matches!(
            parsed.verify("airlock.test/other", [&key.verifier()]),
            Err(CheckpointError::WrongOrigin { .. })
        ));
        let other = SigningKey::generate("airlock.test/log").unwrap();
        assert!(parsed.verify("airlock.test/log", [&other.verifier()]).is_err());
    }
}
