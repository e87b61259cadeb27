//! What the auditor tells requesters about their entries in the audit log.

use crate::ids::RequestId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Published on `airlock.audit.receipt.<request id>` once a request's terminal event is in a
/// signed checkpoint. Mai may read it; only the auditor may publish it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AuditReceipt {
    pub request_id: RequestId,
    /// Sequence numbers (leaf indexes) of every entry of this request, in log order.
    pub entries: Vec<u64>,
    /// The signed checkpoint (C2SP signed note) that covers all of them.
    pub checkpoint: String,
    /// A C2SP tlog-proof of the terminal entry's inclusion in that checkpoint.
    pub proof: String,
}

impl AuditReceipt {
    pub fn encode(&self) -> Vec<u8> {
        rmp_serde::to_vec_named(self).unwrap_or_default()
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, crate::envelope::WireError> {
        rmp_serde::from_slice(bytes).map_err(crate::envelope::WireError::Malformed)
    }
}
