//! Asking a human, and a human's answer.

use crate::assessment::{Finding, Level};
use crate::digest::Grant;
use crate::ids::{CodeDigest, RequestId};
use crate::refusal::RefusalReason;
use crate::request::{Language, Origin, TrustLevel};
use crate::signed::Signed;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Domain string of override-answer signatures.
pub const ANSWER_DOMAIN: &str = "airlock/override-answer/v1";

/// Published by the gate for a chat bridge to show a human.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OverrideAsked {
    pub level: Level,
    /// Why a human is asked, built from the findings.
    pub explanation: String,
    pub findings: Vec<Finding>,
    /// What an answer approves: the execution digest of the request run with [`Self::grant`]
    /// (see [`crate::digest`]). An answer signs it, and counts only for exactly it.
    pub execution_digest: CodeDigest,
    /// What an approval grants: quota and limits, runtime, network. Shown to the approver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<Grant>,
    /// The client that submitted the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// SHA-256 of the code alone (for "this code was decided before").
    pub code_digest: CodeDigest,
    pub language: Language,
    pub origin: Origin,
    /// The first lines of the code, for display.
    pub code_preview: String,
    /// The whole code, for the page an approver opens from the message (the chat shows the
    /// preview). Empty in records written before it was carried.
    #[schemars(with = "Vec<u8>")]
    #[serde(default, with = "serde_bytes", skip_serializing_if = "Vec::is_empty")]
    pub code: Vec<u8>,
    /// Arguments, environment, packages and stdin, one line each, for display: they change
    /// what the code does, so the approver sees them with it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<String>,
    /// The packages the request names, resolved to wheels (each with its version, digest and
    /// rating): what an approval installs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub packages: Vec<crate::packages::PackageRating>,
    /// An answer after this instant is too late: the request is denied.
    pub deadline_ms: i64,
    /// When the gate asked.
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub asked_at_ms: i64,
    /// The request's label (a file name), for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The quota the request asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_quota: Option<TrustLevel>,
    /// The quota an approval grants (the requested one, capped by the policy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_quota: Option<TrustLevel>,
    /// The version of the gate's policy that asked (a digest of it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub policy_version: String,
    /// Who may answer this request, per chat system (`matrix`, `slack`, ...), by that policy.
    /// The gate checks every answer against the policy in force when the answer arrives; this
    /// is for display and for the bridge's quick reply to a human.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub approvers: BTreeMap<String, Vec<String>>,
    /// Different approvers needed to approve (2 under the two-person rule; one deny ends it).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub approvals_needed: u8,
    /// What to do when half the time to answer has passed with no decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation: Option<Escalation>,
    /// The longest "approve this exact code again" an approver may grant (0: not offered).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub approve_again_max_ms: u64,
    /// The hosts a run granted read-only internet may fetch from (the executor's
    /// `[executor.egress] read_only_hosts` when the gate asked), for the approver to see what
    /// "read-only internet" reaches. Empty when the grant has no network.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_only_hosts: Vec<String>,
    /// An earlier request the approver should know of: the one this request says it revises
    /// (with the diff from its code), or one with the very same code, and how it was decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub earlier: Option<Box<EarlierRequest>>,
}

/// An earlier request, as the gate found it in its records (kept as long as the records bucket
/// keeps them, seven days by default).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EarlierRequest {
    pub request_id: RequestId,
    pub relation: EarlierRelation,
    /// How it was decided; `None` when the gate has no record of it (then `missing` says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<EarlierDecision>,
    /// A unified diff from the earlier request's code to this one's (for a revision), cut to
    /// [`MAX_EARLIER_DIFF_BYTES`] with a marker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// Why nothing more is known of it (the requester named a request the gate has no record
    /// of, or one of another client's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<String>,
}

/// Longest diff an override request carries: a chat message shows its start.
pub const MAX_EARLIER_DIFF_BYTES: usize = 4096;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EarlierRelation {
    /// The requester says this request revises it (`revises`).
    Revises,
    /// Not named by the requester: the same code was decided before.
    SameCode,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EarlierDecision {
    pub approved: bool,
    pub approver: crate::decision::Approver,
    pub at_ms: i64,
    /// A policy denial's reason (a human's is in `approver`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

fn one() -> u8 {
    1
}
fn is_one(n: &u8) -> bool {
    *n == 1
}
fn is_zero_i64(n: &i64) -> bool {
    *n == 0
}
fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

/// The gate's escalation plan for an override request, decided when it asks: at `at_ms`, if
/// the request is still waiting, each chat system named does what its target says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Escalation {
    pub at_ms: i64,
    pub targets: BTreeMap<String, EscalationTarget>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EscalationTarget {
    /// Post the request again where it was posted.
    #[serde(default)]
    pub repost: bool,
    /// Mention these (a second group of approvers), by their ids in that chat system.
    #[serde(default)]
    pub mention: Vec<String>,
    /// Post it to this second place (room or channel) too.
    #[serde(default)]
    pub place: Option<String>,
}

/// Where a relayed answer came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Via {
    /// `matrix`, `slack`, `discord` or `webhook`.
    pub system: String,
    /// The room or channel (or the webhook's name).
    pub place: String,
    /// The chat system's own id of the interaction (event id, interaction id): two deliveries
    /// of one interaction carry the same reference.
    pub reference: String,
}

/// An interaction the bridge refused before it could be an answer (a signature that does not
/// verify, a stale timestamp, a replay). It is relayed all the same, so that the gate refuses it
/// on the record: every refusal is in the audit log, and the gate stays the one that refuses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EdgeRefusal {
    pub reason: RefusalReason,
    pub detail: String,
}

/// What an approver signs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OverrideAnswer {
    pub request_id: RequestId,
    /// The execution digest shown to the human: an answer is valid only for exactly that code,
    /// with those inputs, packages, client and grant.
    pub execution_digest: CodeDigest,
    pub approve: bool,
    pub reason: String,
    pub who: String,
    pub answered_at_ms: i64,
    /// For answers relayed by a chat bridge: where the human answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<Via>,
    /// The approver's explicit choice to approve this exact code (its digest) again, without
    /// asking, for this long (bounded by the policy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approve_again_for_ms: Option<u64>,
    /// Set when the bridge refused the interaction itself: never an answer, only a record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused_at_edge: Option<EdgeRefusal>,
}

/// One request waiting for a human, as the override-gate lists it on its pending endpoint
/// (`airlock.gate.pending`, a JSON array of these) and `airlock override list` shows it. The
/// JSON object is the request's [`OverrideAsked`] flattened (so its `label`, `level`, `findings`,
/// `code_preview`, ... are top-level keys) with `request_id` and `approved_by` beside it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PendingOverride {
    pub request_id: RequestId,
    #[serde(flatten)]
    pub asked: OverrideAsked,
    /// Who has approved so far (the two-person rule needs two).
    #[serde(default)]
    pub approved_by: Vec<String>,
    /// The chats that refused the request for good (`chat_refused`): when every chat of
    /// `approvers` is here, only `airlock override` can answer it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chats_refused: Vec<String>,
}

/// An approval a human chose to remember ("approve this exact execution again"), as the gate
/// lists it on its endpoint (`airlock.gate.remembered`) and `airlock override remembered list`
/// shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RememberedApproval {
    /// What `airlock override remembered revoke ID` names.
    pub id: String,
    pub execution_digest: CodeDigest,
    pub code_digest: CodeDigest,
    /// Who approved (two under the two-person rule), and where.
    pub approvers: Vec<String>,
    pub reason: String,
    pub level: Level,
    pub approved_request: RequestId,
    #[serde(default)]
    pub label: Option<String>,
    #[serde(default)]
    pub client: Option<String>,
    pub remembered_at_ms: i64,
    pub until_ms: i64,
    /// Why it would not be used now (lapsed, the policy changed, a key is no longer trusted...);
    /// `None` while it holds.
    #[serde(default)]
    pub void: Option<String>,
}

/// What `airlock override remembered revoke` asks the gate (`airlock.gate.remembered.revoke`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RevokeRemembered {
    /// One approval by its id (or an unambiguous prefix of it); `None` with `all`.
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub all: bool,
    /// Who revokes, and why: recorded in the audit log.
    pub who: String,
    pub reason: String,
}

/// The `approval_revoked` event: a remembered approval revoked by an operator, filed under the
/// request whose approval it was.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalRevoked {
    pub id: String,
    pub execution_digest: CodeDigest,
    pub who: String,
    pub reason: String,
}

/// The `override_answered` event: an answer signed by an approver key the gate trusts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OverrideAnswered {
    pub signed: Signed,
}

/// Longest chat system name, place and detail a `chat_refused` event may carry, in bytes.
pub const MAX_CHAT_SYSTEM: usize = 32;
pub const MAX_CHAT_PLACE: usize = 256;
pub const MAX_CHAT_DETAIL: usize = 1024;

/// The `chat_refused` event: a chat refused a request's message for good (a channel that is
/// gone, a bot that was removed, a message the chat will never take), so the bridge stops
/// trying there. Filed under the request, so the audit log keeps where the request could not
/// be shown; the gate reads it to tell the client, and the operator, when no chat took it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ChatRefused {
    /// The chat system (`matrix`, `slack`, `discord`, `webhook`), as in the policy's approvers.
    pub system: String,
    /// The room or channel that refused, when the chat says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub place: Option<String>,
    /// True when the request's main message was refused, so the request is not in this chat
    /// at all; false when only an escalation place refused (the main message stands).
    pub whole_chat: bool,
    /// What the chat answered, as data.
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChatRefusedError {
    #[error("the chat system name is empty, longer than {MAX_CHAT_SYSTEM} bytes or not lower-case letters")]
    System,
    #[error("the place is longer than {MAX_CHAT_PLACE} bytes")]
    PlaceTooLong,
    #[error("the detail is longer than {MAX_CHAT_DETAIL} bytes")]
    DetailTooLong,
}

impl ChatRefused {
    /// Builds one from what the chat answered, clipping the free text to its bounds.
    pub fn new(system: &str, place: Option<&str>, whole_chat: bool, detail: &str) -> Self {
        Self {
            system: system.to_owned(),
            place: place.map(|p| crate::text::clip(p, MAX_CHAT_PLACE)),
            whole_chat,
            detail: crate::text::clip(detail, MAX_CHAT_DETAIL),
        }
    }

    /// Whether the gate may act on it: a system name as the policy writes them, bounded text.
    pub fn check(&self) -> Result<(), ChatRefusedError> {
        let system_ok = !self.system.is_empty()
            && self.system.len() <= MAX_CHAT_SYSTEM
            && self
                .system
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b == b'_' || b == b'-');
        if !system_ok {
            return Err(ChatRefusedError::System);
        }
        if self.place.as_ref().is_some_and(|p| p.len() > MAX_CHAT_PLACE) {
            return Err(ChatRefusedError::PlaceTooLong);
        }
        if self.detail.len() > MAX_CHAT_DETAIL {
            return Err(ChatRefusedError::DetailTooLong);
        }
        Ok(())
    }
}

impl OverrideAsked {
    /// The fields an override request may leave at their defaults (no policy details): for
    /// building one with struct-update syntax.
    pub fn display_only() -> Self {
        Self {
            level: Level::Blocked,
            explanation: String::new(),
            findings: vec![],
            execution_digest: CodeDigest::of(b""),
            grant: None,
            client: None,
            code_digest: CodeDigest::of(b""),
            language: Language::Python,
            origin: Origin::External,
            code_preview: String::new(),
            code: vec![],
            inputs: vec![],
            packages: vec![],
            deadline_ms: 0,
            asked_at_ms: 0,
            label: None,
            requested_quota: None,
            approval_quota: None,
            policy_version: String::new(),
            approvers: BTreeMap::new(),
            approvals_needed: 1,
            escalation: None,
            approve_again_max_ms: 0,
            read_only_hosts: vec![],
            earlier: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pending_override_is_its_request_flattened_with_who_approved() {
        let pending = PendingOverride {
            request_id: RequestId::new(),
            asked: OverrideAsked {
                label: Some("job.py".into()),
                code_preview: "print(1)\n".into(),
                deadline_ms: 42,
                ..OverrideAsked::display_only()
            },
            approved_by: vec!["alice".into()],
            chats_refused: vec![],
        };
        let json = serde_json::to_value(&pending).expect("json");
        assert_eq!(json["request_id"], pending.request_id.as_str());
        assert_eq!(json["label"], "job.py");
        assert_eq!(json["level"], "BLOCKED");
        assert_eq!(json["code_preview"], "print(1)\n");
        assert_eq!(json["deadline_ms"], 42);
        assert_eq!(json["approved_by"][0], "alice");
        assert!(json.get("asked").is_none(), "{json}");
        let back: PendingOverride = serde_json::from_value(json).expect("read back");
        assert_eq!(back, pending);
        // A list from a gate that counts no approvals reads as approved by nobody.
        let mut json = serde_json::to_value(&pending).expect("json");
        json.as_object_mut().expect("object").remove("approved_by");
        let read: PendingOverride = serde_json::from_value(json).expect("read");
        assert!(read.approved_by.is_empty());
    }

    #[test]
    fn a_chat_refusal_is_bounded_and_names_a_system_as_the_policy_does() {
        let long = "x".repeat(5000);
        let refused = ChatRefused::new("slack", Some(&long), true, &long);
        assert!(
            refused.detail.len() <= MAX_CHAT_DETAIL
                && refused.place.as_ref().is_some_and(|p| p.len() <= MAX_CHAT_PLACE)
        );
        assert_eq!(refused.check(), Ok(()));
        for system in ["", "Slack", "sl ack", "slack.x", &"a".repeat(MAX_CHAT_SYSTEM + 1)] {
            assert_eq!(
                ChatRefused::new(system, None, true, "gone").check(),
                Err(ChatRefusedError::System),
                "{system:?}"
            );
        }
        let forged = ChatRefused {
            detail: long.clone(),
            ..ChatRefused::new("matrix", None, false, "")
        };
        assert_eq!(forged.check(), Err(ChatRefusedError::DetailTooLong));
        let forged = ChatRefused {
            place: Some(long),
            ..ChatRefused::new("matrix", None, false, "")
        };
        assert_eq!(forged.check(), Err(ChatRefusedError::PlaceTooLong));
    }
}
