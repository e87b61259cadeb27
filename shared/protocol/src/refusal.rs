//! A message a service would not act on. Refusals are events like any other: the auditor logs them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RefusalReason {
    /// Not a decodable envelope.
    Malformed,
    /// An envelope of a schema version this service does not speak.
    UnknownSchemaVersion,
    /// Larger than the message limit, or code larger than the code limit.
    Oversized,
    /// The body's kind or request id does not match the subject it came on.
    SubjectMismatch,
    /// The request itself is invalid (empty code, bad package spec, ...).
    InvalidRequest,
    /// Signed by a key that is not trusted.
    UnknownSigner,
    /// A signature that does not verify.
    BadSignature,
    /// A decision or answer whose digests do not match the code it came with.
    DigestMismatch,
    /// A decision past its expiry.
    Expired,
    /// A decision already used, or a request already executed.
    Replayed,
    /// A decision that does not approve running.
    NotApproved,
    /// An override answer for a request that is not waiting for one.
    NotPending,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Refusal {
    pub reason: RefusalReason,
    pub detail: String,
    /// The subject the refused message came on.
    pub subject: String,
    /// SHA-256 of the refused message's bytes.
    pub message_sha256: String,
}

impl RefusalReason {
    /// The refusal reason for a message that could not be read.
    pub fn of_wire_error(error: &crate::envelope::WireError) -> Self {
        use crate::envelope::WireError;
        match error {
            WireError::Oversized { .. } => RefusalReason::Oversized,
            WireError::UnknownSchemaVersion { .. } => RefusalReason::UnknownSchemaVersion,
            WireError::SubjectMismatch { .. } => RefusalReason::SubjectMismatch,
            WireError::Malformed(_) | WireError::BadId(_) => RefusalReason::Malformed,
        }
    }
}

impl Refusal {
    /// A refusal of the message `bytes` that arrived on `subject`.
    pub fn of_message(reason: RefusalReason, detail: impl Into<String>, subject: &str, bytes: &[u8]) -> Self {
        use sha2::Digest as _;
        Self {
            reason,
            detail: detail.into(),
            subject: subject.to_owned(),
            message_sha256: hex::encode(sha2::Sha256::digest(bytes)),
        }
    }
}
