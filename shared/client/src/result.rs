//! What a request came to: its terminal event and its audit receipt, in the same shape as
//! `airlock run --json` (and the Python client's `Result`), and the receipt's check.

use crate::ClientError;
use airlock_auditlog::entry::Entry;
use airlock_auditlog::proof::TlogProof;
use airlock_protocol::{AuditReceipt, Event, Outcome, RequestId, Terminal, VerifierKey};

#[derive(Clone, Debug)]
pub struct RunResult {
    pub request_id: RequestId,
    pub terminal: Terminal,
    pub receipt: Option<AuditReceipt>,
}

impl RunResult {
    /// The one JSON object `airlock run --json` prints; field names are a contract shared with
    /// the Python client.
    pub fn to_json(&self) -> serde_json::Value {
        let t = &self.terminal;
        let decision = match (&t.decision, t.outcome) {
            (_, Outcome::Expired) => Some("expired".to_owned()),
            (Some(d), _) => Some(d.decision.clone()),
            (None, Outcome::Denied) => Some("denied".to_owned()),
            (None, _) => None,
        };
        serde_json::json!({
            "request_id": self.request_id,
            "outcome": t.outcome.as_str(),
            "verdict": t.level,
            "findings": t.findings,
            "decision": decision,
            "approver": t.decision.as_ref().map(|d| &d.approver),
            "quota": t.decision.as_ref().and_then(|d| d.quota),
            "exit_code": t.exit_code,
            "stdout": String::from_utf8_lossy(&t.stdout),
            "stderr": String::from_utf8_lossy(&t.stderr),
            "violation": t.violation.as_ref().map(|v| serde_json::json!({
                "kind": v.kind.as_str(),
                "detail": v.detail,
                "limit": v.limit,
                "measured": v.measured,
            })),
            "usage": t.usage.map(|u| serde_json::json!({
                "wall_ms": u.wall_ms,
                "cpu_ms": u.cpu_ms,
                "peak_memory_bytes": u.peak_memory_bytes,
                "peak_pids": u.peak_pids,
                "stdout_bytes": u.stdout_bytes,
                "stderr_bytes": u.stderr_bytes,
            })),
            "reason": t.reason,
            "refusal": t.refusal,
            "audit": self.receipt.as_ref().map(|r| r.entries.clone()).unwrap_or_default(),
            "checkpoint": self.receipt.as_ref().map(|r| r.checkpoint.clone()),
            "receipt": self.receipt.as_ref().map(|r| r.proof.clone()),
        })
    }

    /// Checks the receipt: the checkpoint is signed by one of `keys`, the proof puts the entry
    /// it carries in that checkpoint, and that entry is this request's terminal event, ending
    /// the way this result says.
    pub fn verify_receipt(&self, keys: &[VerifierKey]) -> Result<(), ClientError> {
        let receipt = self.receipt.as_ref().ok_or(ClientError::NoReceipt)?;
        let bad = |why: String| ClientError::Receipt(why.into());
        if receipt.request_id != self.request_id {
            return Err(bad(format!("the receipt is for request {}", receipt.request_id)));
        }
        let proof = TlogProof::parse(receipt.proof.as_bytes()).map_err(|e| ClientError::Receipt(Box::new(e)))?;
        let origin = proof.checkpoint.checkpoint.origin.clone();
        let entry = proof
            .verify(None, &origin, keys)
            .map_err(|e| ClientError::Receipt(Box::new(e)))?;
        let entry = Entry::decode(&entry).map_err(|e| ClientError::Receipt(Box::new(e)))?;
        if entry.request_id != self.request_id.as_str() || !entry.is_terminal() {
            return Err(bad(format!(
                "the proven entry is a {} of request {}",
                entry.kind, entry.request_id
            )));
        }
        match &entry.event {
            Some(Event::Terminal(logged))
                if logged.outcome == self.terminal.outcome && logged.exit_code == self.terminal.exit_code =>
            {
                Ok(())
            }
            // An event too large to stay inline was moved to a blob: the entry still names the
            // request and its terminal kind, which is what the proof binds.
            None if entry.blobs.contains_key(airlock_auditlog::entry::EVENT_SLOT) => Ok(()),
            _ => Err(bad("the logged terminal event says otherwise".into())),
        }
    }
}
