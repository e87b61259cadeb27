//! A message a service would not act on. Refusals are events like any other: the auditor logs them.

use crate::envelope::WireError;
use crate::signed::SignatureError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Longest refusal detail kept: details quote what was refused, and that came from outside.
pub const MAX_DETAIL_BYTES: usize = 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RefusalReason {
    /// Not a decodable envelope.
    Malformed,
    /// An envelope of a schema version this service does not speak.
    UnknownSchemaVersion,
    /// Larger than the message limit, or code larger than the code limit, or an event the
    /// request would cause that could not be published because of its size.
    Oversized,
    /// The body's kind or request id does not match the subject it came on.
    SubjectMismatch,
    /// The envelope names a producer that may not produce this kind of event.
    ProducerMismatch,
    /// The request itself is invalid (empty code, bad package spec, forbidden variable, ...).
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
    /// A submission reusing the id of a request already submitted.
    DuplicateRequest,
    /// The client submits faster than its rate limit allows.
    RateLimited,
    /// The client already has as many requests in flight as it may.
    TooManyInFlight,
    /// A service failed to handle the message repeatedly and set it aside (dead letter).
    DeadLettered,
    /// The packages the request names could not be resolved to wheels and rated (unknown,
    /// no wheel, index unreachable, too large, no executor): nothing runs unassessed. The
    /// detail starts with the kind (`crate::packages::ResolveFailure`).
    PackagesUnresolved,
}

impl RefusalReason {
    pub fn as_str(self) -> &'static str {
        match self {
            RefusalReason::Malformed => "malformed",
            RefusalReason::UnknownSchemaVersion => "unknown_schema_version",
            RefusalReason::Oversized => "oversized",
            RefusalReason::SubjectMismatch => "subject_mismatch",
            RefusalReason::ProducerMismatch => "producer_mismatch",
            RefusalReason::InvalidRequest => "invalid_request",
            RefusalReason::UnknownSigner => "unknown_signer",
            RefusalReason::BadSignature => "bad_signature",
            RefusalReason::DigestMismatch => "digest_mismatch",
            RefusalReason::Expired => "expired",
            RefusalReason::Replayed => "replayed",
            RefusalReason::NotApproved => "not_approved",
            RefusalReason::NotPending => "not_pending",
            RefusalReason::DuplicateRequest => "duplicate_request",
            RefusalReason::RateLimited => "rate_limited",
            RefusalReason::TooManyInFlight => "too_many_in_flight",
            RefusalReason::DeadLettered => "dead_lettered",
            RefusalReason::PackagesUnresolved => "packages_unresolved",
        }
    }
}

impl std::fmt::Display for RefusalReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The refusal reason for a message that could not be read.
impl From<&WireError> for RefusalReason {
    fn from(error: &WireError) -> Self {
        match error {
            WireError::Oversized { .. } => RefusalReason::Oversized,
            WireError::UnknownSchemaVersion { .. } => RefusalReason::UnknownSchemaVersion,
            WireError::SubjectMismatch { .. } => RefusalReason::SubjectMismatch,
            WireError::ProducerMismatch { .. } => RefusalReason::ProducerMismatch,
            WireError::Malformed(_) | WireError::Encode(_) | WireError::BadId(_) => RefusalReason::Malformed,
        }
    }
}

/// The refusal reason for a signature that does not hold (decisions, override answers).
impl From<&SignatureError> for RefusalReason {
    fn from(error: &SignatureError) -> Self {
        match error {
            SignatureError::UnknownKey { .. } => RefusalReason::UnknownSigner,
            SignatureError::BadSignature { .. } => RefusalReason::BadSignature,
            SignatureError::BadPayload { .. } => RefusalReason::Malformed,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Refusal {
    pub reason: RefusalReason,
    /// Why, for a human; at most [`MAX_DETAIL_BYTES`].
    pub detail: String,
    /// The subject the refused message came on.
    pub subject: String,
    /// SHA-256 of the refused message's bytes.
    pub message_sha256: String,
}

impl Refusal {
    /// A refusal of the message `bytes` that arrived on `subject`.
    pub fn of_message(reason: RefusalReason, detail: impl AsRef<str>, subject: &str, bytes: &[u8]) -> Self {
        use sha2::Digest as _;
        Self {
            reason,
            detail: crate::text::clip(detail.as_ref(), MAX_DETAIL_BYTES),
            subject: crate::text::clip(subject, 256),
            message_sha256: hex::encode(sha2::Sha256::digest(bytes)),
        }
    }
}

/// An error's whole chain of causes on one line (`what: why: root cause`), for refusal details
/// and logs that must say why without a debugger.
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        // Some errors already print their cause; saying it twice says nothing more.
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_are_bounded_by_character() {
        let refusal = Refusal::of_message(RefusalReason::Malformed, "é".repeat(5000), "s", b"x");
        assert!(refusal.detail.len() <= MAX_DETAIL_BYTES);
        assert!(refusal.detail.ends_with('…'));
    }

    #[test]
    fn error_chains_name_every_cause() {
        let inner = std::io::Error::other("disk on fire");
        #[derive(Debug, thiserror::Error)]
        #[error("writing the log")]
        struct Outer(#[source] std::io::Error);
        assert_eq!(error_chain(&Outer(inner)), "writing the log: disk on fire");
    }
}
