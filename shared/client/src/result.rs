//! What a request came to: its terminal event and its audit receipt, in the same shape as
//! `airlock run --json` (and the Python client's `Result`), and the receipt's check: that the
//! log holds exactly what this result says (outcome, exit code, output, every other field) and,
//! when the result knows what was submitted, that what ran is that code.

use crate::ClientError;
use airlock_auditlog::entry::{EVENT_SLOT, Entry};
use airlock_auditlog::proof::TlogProof;
use airlock_auditlog::trust::TrustedKey;
use airlock_protocol::digest::execution_digest;
use airlock_protocol::{AuditReceipt, CodeDigest, Event, Grant, Observed, Outcome, RequestId, Terminal};

#[derive(Clone, Debug)]
pub struct RunResult {
    pub request_id: RequestId,
    pub terminal: Terminal,
    pub receipt: Option<AuditReceipt>,
    /// The request digest of what this client submitted (`docs/clients.md`, "The execution
    /// digest"), when it submitted it: the receipt's check then proves that what was approved
    /// and ran is this code with these inputs.
    pub request_digest: Option<CodeDigest>,
    /// Why there is no receipt, and how to fetch it later, when the wait for it ran out.
    pub receipt_missing: Option<String>,
    /// The kernel's record of the run (the executor's `observed` event), when the code ran.
    pub observed: Option<Observed>,
}

/// What a receipt's check established.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifiedReceipt {
    /// The terminal entry's place in the log.
    pub index: u64,
    /// The size of the signed checkpoint that includes it.
    pub tree_size: u64,
    /// The keys whose signatures vouch for the checkpoint.
    pub signers: Vec<String>,
    /// Whether the code (the request digest) was checked against the logged decision.
    pub code_checked: bool,
}

/// A receipt that does not hold, and which part.
#[derive(Debug, thiserror::Error)]
pub enum ReceiptError {
    #[error("the receipt is for request {0}")]
    OtherRequest(String),
    #[error("the receipt's checkpoint is not the one its proof is against")]
    CheckpointMismatch,
    /// The proof, its checkpoint's signatures or the entry's inclusion.
    #[error(transparent)]
    Proof(#[from] airlock_auditlog::proof::TlogProofError),
    #[error("the proven entry is a {kind} entry of request {request_id}, not this request's terminal entry")]
    NotTheTerminal { kind: String, request_id: String },
    #[error("the proven entry is entry {entry}; the receipt lists {listed:?}")]
    Place { entry: u64, listed: Vec<u64> },
    /// A field this result carries is not what the log holds.
    #[error("the result's {field} is not the logged one ({detail})")]
    Field { field: &'static str, detail: String },
    #[error("the code that was approved and ran is not the code this result was submitted with")]
    Code,
}

impl ReceiptError {
    /// A signature problem (the wrong key, a forgery, a key retired before the entry), rather
    /// than a receipt that says something else than the result.
    pub fn is_signature(&self) -> bool {
        matches!(self, ReceiptError::Proof(e) if e.is_signature())
    }
}

impl RunResult {
    pub fn new(request_id: RequestId, terminal: Terminal) -> Self {
        Self {
            request_id,
            terminal,
            receipt: None,
            request_digest: None,
            receipt_missing: None,
            observed: None,
        }
    }

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
        let mut json = serde_json::json!({
            "request_id": self.request_id,
            "outcome": t.outcome.as_str(),
            "verdict": t.level,
            "findings": t.findings,
            "decision": decision,
            "approver": t.decision.as_ref().map(|d| &d.approver),
            "quota": t.decision.as_ref().and_then(|d| d.quota),
            "runtime": t.decision.as_ref().and_then(|d| d.runtime),
            "network": t.decision.as_ref().and_then(|d| d.network),
            "read_only_hosts": t.decision.as_ref().map(|d| d.read_only_hosts.clone()).unwrap_or_default(),
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
            "files": t.files.iter().map(|f| serde_json::json!({
                "name": f.name,
                "size": f.size,
                "sha256": f.sha256,
                "media_type": f.media_type,
                "content_base64": base64(&f.content),
                "omitted": f.omitted,
            })).collect::<Vec<_>>(),
            "files_unavailable": t.files_unavailable,
            "audit": self.receipt.as_ref().map(|r| r.entries.clone()).unwrap_or_default(),
            "checkpoint": self.receipt.as_ref().map(|r| r.checkpoint.clone()),
            "receipt": self.receipt.as_ref().map(|r| r.proof.clone()),
            "request_digest": self.request_digest,
            // The kernel's record (not covered by the terminal entry's receipt: its own entry).
            "observed": self.observed,
        });
        // Output that is not UTF-8 cannot be given back from its text: its exact bytes ride
        // along, so that a saved result can still be verified against the log.
        for (name, bytes) in [("stdout", &t.stdout), ("stderr", &t.stderr)] {
            if std::str::from_utf8(bytes).is_err() {
                json[format!("{name}_base64")] = serde_json::Value::String(base64(bytes));
            }
        }
        json
    }

    /// Checks the receipt against the auditor's keys (a key set: a retired key vouches only for
    /// what was logged before its retirement): the checkpoint is signed, the proof puts the
    /// entry it carries in that checkpoint, that entry is this request's terminal event, and
    /// every field of this result is the logged one (stdout and stderr through their BLAKE3
    /// digests when the log keeps them as blobs). With the request digest known, the logged
    /// decision must be for this code and these inputs.
    pub fn verify_receipt(&self, keys: &[TrustedKey]) -> Result<VerifiedReceipt, ClientError> {
        let receipt = self.receipt.as_ref().ok_or(ClientError::NoReceipt)?;
        self.check(receipt, keys).map_err(ClientError::Receipt)
    }

    fn check(&self, receipt: &AuditReceipt, keys: &[TrustedKey]) -> Result<VerifiedReceipt, ReceiptError> {
        if receipt.request_id != self.request_id {
            return Err(ReceiptError::OtherRequest(receipt.request_id.to_string()));
        }
        let proof = TlogProof::parse(receipt.proof.as_bytes())?;
        if proof.checkpoint.to_text() != receipt.checkpoint {
            return Err(ReceiptError::CheckpointMismatch);
        }
        let origin = proof.checkpoint.checkpoint.origin.clone();
        // The log's key is named after the log: a key of another name vouches for nothing here.
        let keys: Vec<TrustedKey> = keys.iter().filter(|k| k.key.name() == origin).cloned().collect();
        let (entry, _) = proof.verify_entry(&origin, &keys)?;
        if entry.request_id != self.request_id.as_str() || !entry.is_terminal() || entry.seq != proof.index {
            return Err(ReceiptError::NotTheTerminal {
                kind: entry.kind.clone(),
                request_id: entry.request_id.clone(),
            });
        }
        if !receipt.entries.contains(&entry.seq) {
            return Err(ReceiptError::Place {
                entry: entry.seq,
                listed: receipt.entries.clone(),
            });
        }
        self.compare_with(&entry)?;
        let code_checked = self.check_code()?;
        let signers = proof
            .checkpoint
            .note
            .signatures
            .iter()
            .filter(|s| {
                keys.iter()
                    .any(|k| k.key.name() == s.name && k.key.key_id() == s.key_id)
            })
            .map(|s| format!("{}+{:08x}", s.name, s.key_id))
            .collect();
        Ok(VerifiedReceipt {
            index: entry.seq,
            tree_size: proof.checkpoint.checkpoint.size,
            signers,
            code_checked,
        })
    }

    /// Compares this result with the logged terminal event, field by field.
    fn compare_with(&self, entry: &Entry) -> Result<(), ReceiptError> {
        let mut expected = self.terminal.clone();
        for (slot, bytes) in [("stdout", &mut expected.stdout), ("stderr", &mut expected.stderr)] {
            let reference = entry
                .blobs
                .get(slot)
                .map(|b| (&b.b3, b.len))
                .or_else(|| entry.withheld.get(slot).map(|w| (&w.b3, w.len)));
            if let Some((b3, len)) = reference {
                let field = if slot == "stdout" { "stdout" } else { "stderr" };
                if bytes.len() as u64 != len || blake3::hash(bytes).to_hex().as_str() != b3 {
                    return Err(ReceiptError::Field {
                        field,
                        detail: format!("{} bytes, the log holds {len} bytes with another digest", bytes.len()),
                    });
                }
                bytes.clear();
            }
        }
        // Returned files are always blobs: each one's content is checked against its digest.
        for file in &mut expected.files {
            let slot = airlock_auditlog::entry::output_slot(&file.name);
            let Some(reference) = entry
                .blobs
                .get(&slot)
                .map(|b| (&b.b3, b.len))
                .or_else(|| entry.withheld.get(&slot).map(|w| (&w.b3, w.len)))
            else {
                continue;
            };
            let (b3, len) = reference;
            if file.content.len() as u64 != len || blake3::hash(&file.content).to_hex().as_str() != b3 {
                return Err(ReceiptError::Field {
                    field: "files",
                    detail: format!(
                        "{}: {} bytes, the log holds {len} bytes with another digest",
                        file.name,
                        file.content.len()
                    ),
                });
            }
            file.content.clear();
        }
        match &entry.event {
            Some(Event::Terminal(logged)) => differences(logged, &expected),
            Some(other) => Err(ReceiptError::NotTheTerminal {
                kind: other.kind().as_str().to_owned(),
                request_id: entry.request_id.clone(),
            }),
            None => {
                // Too large to stay inline: the whole event is a blob, named by its digest.
                let reference = entry.blobs.get(EVENT_SLOT).ok_or_else(|| ReceiptError::Field {
                    field: "terminal event",
                    detail: "the entry holds none".into(),
                })?;
                let encoded = rmp_serde::to_vec_named(&Event::Terminal(Box::new(expected))).unwrap_or_default();
                if blake3::hash(&encoded).to_hex().as_str() != reference.b3 {
                    return Err(ReceiptError::Field {
                        field: "terminal event",
                        detail: "its digest is not the logged event's".into(),
                    });
                }
                Ok(())
            }
        }
    }

    /// With the request digest known and an approval logged: the approval's execution digest
    /// must be this request's with the grant it names (the decision is the logged one, checked
    /// before this). Returns whether the code was checked.
    fn check_code(&self) -> Result<bool, ReceiptError> {
        let (Some(request_digest), Some(summary)) = (&self.request_digest, &self.terminal.decision) else {
            return Ok(false);
        };
        let (Some(quota), Some(limits), Some(approved)) = (summary.quota, summary.limits, &summary.execution_digest)
        else {
            return Ok(false);
        };
        let grant = Grant {
            quota,
            limits,
            runtime: summary.runtime.unwrap_or_default(),
            network: summary.network.unwrap_or_default(),
            read_only_hosts: summary.read_only_hosts.clone(),
        };
        if &execution_digest(request_digest, &grant) != approved {
            return Err(ReceiptError::Code);
        }
        Ok(true)
    }
}

/// The first field in which `result` differs from `logged`, as an error.
fn differences(logged: &Terminal, result: &Terminal) -> Result<(), ReceiptError> {
    let field = |field: &'static str, detail: String| Err(ReceiptError::Field { field, detail });
    if logged.outcome != result.outcome {
        return field(
            "outcome",
            format!("{} against {}", result.outcome.as_str(), logged.outcome.as_str()),
        );
    }
    if logged.exit_code != result.exit_code {
        return field(
            "exit code",
            format!("{:?} against {:?}", result.exit_code, logged.exit_code),
        );
    }
    if logged.stdout != result.stdout {
        return field(
            "stdout",
            format!("{} bytes against {}", result.stdout.len(), logged.stdout.len()),
        );
    }
    if logged.stderr != result.stderr {
        return field(
            "stderr",
            format!("{} bytes against {}", result.stderr.len(), logged.stderr.len()),
        );
    }
    if logged.violation != result.violation {
        return field("violation", "differs".into());
    }
    if logged.level != result.level || logged.findings != result.findings {
        return field("assessment", "differs".into());
    }
    if logged.decision != result.decision {
        return field("decision", "differs".into());
    }
    if logged.files != result.files || logged.files_unavailable != result.files_unavailable {
        return field("files", "differ".into());
    }
    if logged != result {
        return field("terminal event", "another field differs".into());
    }
    Ok(())
}

fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
