//! What a verification found wrong, typed by what a person must do about it: a store that could
//! not be read (an outage: nothing was concluded, try again) is a different answer from a log
//! that is damaged, badly signed or rewritten (evidence: look at it). Each kind has its exit
//! status in `airlock audit verify` (documented in `docs/audit-log.md`).

use crate::store::StoreError;

type Source = Box<dyn std::error::Error + Send + Sync>;

/// Which way a verification failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VerifyErrorKind {
    /// The store did not answer, refused access or has no credentials: nothing was concluded
    /// about the log.
    Unreadable,
    /// An object the log needs is not in the store (a store that answers "not found").
    Missing,
    /// An object or entry does not parse (a tile of the wrong length, an entry that does not
    /// decode, a note with a bad line, a prune mark for another log).
    Malformed,
    /// A signature does not verify, no trusted key signed, or the only signers were not valid at
    /// the checkpoint's time.
    Signature,
    /// An entry or tile is not part of the signed tree: changed, swapped, inserted or removed.
    Inclusion,
    /// The hash chain or the entries' sequence numbers are broken.
    Chain,
    /// A blob's content does not hash to its name.
    Blob,
    /// The log does not extend a trusted earlier checkpoint: history was rewritten.
    Consistency,
    /// A trusted earlier checkpoint is larger than the log: it was truncated or rolled back.
    Rollback,
    /// A trusted checkpoint of the same size has another root: the log forked.
    Fork,
}

impl VerifyErrorKind {
    /// The word `airlock audit verify` prints (and `--json` gives as `kind`).
    pub fn as_str(self) -> &'static str {
        match self {
            VerifyErrorKind::Unreadable => "unreadable",
            VerifyErrorKind::Missing => "missing",
            VerifyErrorKind::Malformed => "malformed",
            VerifyErrorKind::Signature => "signature",
            VerifyErrorKind::Inclusion => "inclusion",
            VerifyErrorKind::Chain => "chain",
            VerifyErrorKind::Blob => "blob",
            VerifyErrorKind::Consistency => "consistency",
            VerifyErrorKind::Rollback => "rollback",
            VerifyErrorKind::Fork => "fork",
        }
    }

    /// An outage, not evidence: the same command may succeed later.
    pub fn is_outage(self) -> bool {
        self == VerifyErrorKind::Unreadable
    }

    /// The exit status of `airlock audit verify` (and `prune`) for this kind:
    /// 1 the log is damaged or was tampered with, 3 its signatures do not hold, 4 its history
    /// was rewritten, rolled back or forked, 5 the store could not be read.
    pub fn exit_code(self) -> u8 {
        match self {
            VerifyErrorKind::Unreadable => exit::UNREADABLE,
            VerifyErrorKind::Signature => exit::SIGNATURE,
            VerifyErrorKind::Consistency | VerifyErrorKind::Rollback | VerifyErrorKind::Fork => exit::HISTORY,
            VerifyErrorKind::Missing
            | VerifyErrorKind::Malformed
            | VerifyErrorKind::Inclusion
            | VerifyErrorKind::Chain
            | VerifyErrorKind::Blob => exit::DAMAGED,
        }
    }
}

impl std::fmt::Display for VerifyErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Exit statuses of the audit commands that read a whole log (`verify`, `prune`).
pub mod exit {
    /// The log verified.
    pub const OK: u8 = 0;
    /// The log is damaged or was tampered with: an object changed, missing, malformed or out of
    /// place.
    pub const DAMAGED: u8 = 1;
    /// The checkpoint (or a prune mark) is not signed by a trusted key valid at its time.
    pub const SIGNATURE: u8 = 3;
    /// The log is not consistent with a trusted earlier checkpoint: rolled back, truncated,
    /// forked or rewritten.
    pub const HISTORY: u8 = 4;
    /// The store could not be read (unreachable, access refused, no credentials): nothing was
    /// concluded about the log.
    pub const UNREADABLE: u8 = 5;
}

/// Where a problem is, what kind it is, and what it is.
#[derive(Debug, thiserror::Error)]
#[error("{location}: {reason}")]
pub struct VerifyError {
    pub kind: VerifyErrorKind,
    /// An object path (`checkpoint`, `tile/0/000`, `blob/<digest>`) or `entry <seq> (<bundle>)`.
    pub location: String,
    pub reason: String,
    #[source]
    pub source: Option<Source>,
}

impl VerifyError {
    pub fn new(kind: VerifyErrorKind, location: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            kind,
            location: location.into(),
            reason: reason.into(),
            source: None,
        }
    }

    /// A problem with its cause (the parse error, the signature error) kept as the source.
    pub fn caused(
        kind: VerifyErrorKind,
        location: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self {
            kind,
            location: location.into(),
            reason: source.to_string(),
            source: Some(Box::new(source)),
        }
    }

    /// A store read that failed: an outage, or (for a refused rewrite, a bad URL) a store that
    /// is not usable as given; either way nothing was concluded about the log.
    pub fn unreadable(location: impl Into<String>, source: StoreError) -> Self {
        let reason = match &source {
            StoreError::Io { .. } => "could not be read".to_owned(),
            other => other.to_string(),
        };
        Self {
            kind: VerifyErrorKind::Unreadable,
            location: location.into(),
            reason,
            source: Some(Box::new(source)),
        }
    }

    pub fn is_outage(&self) -> bool {
        self.kind.is_outage()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_own_word_and_outage_alone_is_not_evidence() {
        let kinds = [
            VerifyErrorKind::Unreadable,
            VerifyErrorKind::Missing,
            VerifyErrorKind::Malformed,
            VerifyErrorKind::Signature,
            VerifyErrorKind::Inclusion,
            VerifyErrorKind::Chain,
            VerifyErrorKind::Blob,
            VerifyErrorKind::Consistency,
            VerifyErrorKind::Rollback,
            VerifyErrorKind::Fork,
        ];
        let words: std::collections::HashSet<_> = kinds.iter().map(|k| k.as_str()).collect();
        assert_eq!(words.len(), kinds.len());
        for kind in kinds {
            assert_eq!(kind.is_outage(), kind.exit_code() == exit::UNREADABLE, "{kind}");
            assert_ne!(kind.exit_code(), exit::OK);
            assert_ne!(kind.exit_code(), 2, "2 is clap's usage status");
        }
    }
}
