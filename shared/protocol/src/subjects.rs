//! Streams, subjects and buckets: the names every service and the NATS permissions share.

use crate::event::EventKind;

/// The stream of every request event.
pub const EVENTS_STREAM: &str = "AIRLOCK";
/// The stream the auditor alone writes: entries, checkpoints, receipts.
pub const AUDIT_STREAM: &str = "AIRLOCK_AUDIT";

/// Everything under `airlock.audit.` is the auditor's.
pub const AUDIT_PREFIX: &str = "airlock.audit";
/// `airlock.audit.entry.<request id>`: one message per log entry.
pub const AUDIT_ENTRY_PREFIX: &str = "airlock.audit.entry";
/// Signed checkpoints, as they are issued.
pub const AUDIT_CHECKPOINT: &str = "airlock.audit.checkpoint";
/// `airlock.audit.receipt.<request id>`: published once a request's terminal event is logged.
pub const AUDIT_RECEIPT_PREFIX: &str = "airlock.audit.receipt";

/// Request id used in subjects when a refused message's own request id cannot be read.
pub const UNKNOWN_REQUEST: &str = "unknown";

/// Service-API endpoint on which the gate lists pending override requests.
pub const GATE_PENDING_ENDPOINT: &str = "airlock.gate.pending";

/// Key-value buckets, one per service that needs durable state of its own.
pub const GATE_BUCKET: &str = "airlock_gate";
pub const EXECUTOR_BUCKET: &str = "airlock_executor";
pub const AUDITOR_BUCKET: &str = "airlock_auditor";

/// The subjects of the events stream.
pub fn event_subjects() -> Vec<String> {
    EventKind::ALL.into_iter().map(EventKind::subject_filter).collect()
}

/// The subjects of the audit stream.
pub fn audit_subjects() -> Vec<String> {
    vec![format!("{AUDIT_PREFIX}.>")]
}

pub fn audit_entry_subject(request_id: &str) -> String {
    format!("{AUDIT_ENTRY_PREFIX}.{request_id}")
}

pub fn audit_receipt_subject(request_id: &str) -> String {
    format!("{AUDIT_RECEIPT_PREFIX}.{request_id}")
}
