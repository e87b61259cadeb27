//! Streams, subjects and buckets: the names every service and the NATS permissions share.

use crate::event::EventKind;
use crate::ids::RequestId;

/// The stream of every request event.
pub const EVENTS_STREAM: &str = "AIRLOCK";
/// The stream the auditor alone writes: entries, checkpoints, receipts.
pub const AUDIT_STREAM: &str = "AIRLOCK_AUDIT";
/// Messages a service gave up on after repeated failures, kept for an operator to inspect.
pub const DEAD_LETTER_STREAM: &str = "AIRLOCK_DEAD";

/// Everything under `airlock.audit.` is the auditor's.
pub const AUDIT_PREFIX: &str = "airlock.audit";
/// `airlock.audit.entry.<request id>`: one message per log entry.
pub const AUDIT_ENTRY_PREFIX: &str = "airlock.audit.entry";
/// Signed checkpoints, as they are issued.
pub const AUDIT_CHECKPOINT: &str = "airlock.audit.checkpoint";
/// `airlock.audit.receipt.<request id>`: published once a request's terminal event is logged.
pub const AUDIT_RECEIPT_PREFIX: &str = "airlock.audit.receipt";
/// `airlock.dead.<user>.<request id>`: a message the service `<user>` gave up on.
pub const DEAD_LETTER_PREFIX: &str = "airlock.dead";
/// `airlock.status.<service name>`: each service's counters, as JSON.
pub const STATUS_PREFIX: &str = "airlock.status";

/// Request id used in subjects when a refused message's own request id cannot be read.
pub const UNKNOWN_REQUEST: &str = "unknown";

/// The client user that submits when none is named: Mai.
pub const DEFAULT_CLIENT: &str = "mai";

/// Service-API endpoint on which the gate lists pending override requests.
pub const GATE_PENDING_ENDPOINT: &str = "airlock.gate.pending";
/// The gate lists the approvals humans chose to remember.
pub const GATE_REMEMBERED_ENDPOINT: &str = "airlock.gate.remembered";
/// The gate revokes remembered approvals (a `RevokeRemembered` in JSON).
pub const GATE_REVOKE_ENDPOINT: &str = "airlock.gate.remembered.revoke";
/// Every endpoint an operator may ask the gate.
pub const GATE_OPERATOR_ENDPOINTS: [&str; 3] = [GATE_PENDING_ENDPOINT, GATE_REMEMBERED_ENDPOINT, GATE_REVOKE_ENDPOINT];

/// Key-value buckets, one per service that needs durable state of its own.
pub const ASSESSOR_BUCKET: &str = "airlock_assessor";
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

/// `airlock.submit.<client>.<local id>`: the client's NATS user is in the subject, where the
/// server's permissions vouch for it (user `mai` may publish only under `airlock.submit.mai.`),
/// and it is the request id's own client part.
pub fn submit_subject(request_id: &RequestId) -> String {
    EventKind::Submitted.subject(request_id)
}

/// The client a submission subject names, if it is one.
pub fn submit_client(subject: &str) -> Option<&str> {
    let rest = subject
        .strip_prefix(EventKind::Submitted.subject_prefix())?
        .strip_prefix('.')?;
    let (client, rid) = rest.split_once('.')?;
    (!client.is_empty() && !rid.is_empty() && !rid.contains('.')).then_some(client)
}

/// The subject filter of one client's submissions.
pub fn client_submit_filter(client: &str) -> String {
    EventKind::Submitted.client_filter(client)
}

/// `airlock.audit.receipt.<client>.*`: one client's receipts.
pub fn client_receipt_filter(client: &str) -> String {
    format!("{AUDIT_RECEIPT_PREFIX}.{client}.*")
}

pub fn dead_letter_subject(user: &str, request_id: &str) -> String {
    format!("{DEAD_LETTER_PREFIX}.{user}.{request_id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn submit_subjects_carry_the_client() {
        let rid = RequestId::parse("mai.r1").unwrap();
        let subject = submit_subject(&rid);
        assert_eq!(subject, "airlock.submit.mai.r1");
        assert_eq!(submit_client(&subject), Some("mai"));
        assert_eq!(submit_client("airlock.submit.r1"), None);
        assert_eq!(submit_client("airlock.submit.mai.r1.x"), None);
        assert_eq!(submit_client("airlock.terminal.r1"), None);
    }
}
