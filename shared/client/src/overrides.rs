//! The operator's side: list the requests waiting for a human and answer them, with answers
//! signed by the approver key (`keys/approver.key` in the stack's home). The client must be
//! connected as a user that may do so (`operator`); the Python client's `Operator` does the same.
//!
//! ```no_run
//! # async fn example() -> Result<(), airlock_client::ClientError> {
//! use airlock_client::{AnswerOutcome, Client, Connect};
//! let operator = Client::connect(Connect {
//!     user: Some("operator".into()),
//!     ..Connect::default()
//! })
//! .await?;
//! for pending in operator.pending_overrides().await? {
//!     println!("{} {}: {}", pending.request_id, pending.asked.level, pending.asked.explanation);
//!     match operator.deny_override(&pending.request_id, "no downloads", Some("alice")).await? {
//!         AnswerOutcome::Decided { approved } => assert!(!approved),
//!         AnswerOutcome::Counted { .. } => unreachable!("a denial is never only counted"),
//!     }
//! }
//! # Ok(())
//! # }
//! ```

use crate::{Client, ClientError};
use airlock_bus::Publisher;
use airlock_protocol::overrides::ANSWER_DOMAIN;
use airlock_protocol::subjects::{GATE_PENDING_ENDPOINT, GATE_REMEMBERED_ENDPOINT, GATE_REVOKE_ENDPOINT};
use airlock_protocol::{
    Envelope, Event, EventKind, OverrideAnswer, OverrideAnswered, Producer, RequestId, Signed, SigningKey, now_ms,
};
use futures::StreamExt as _;
use std::time::Duration;

pub use airlock_protocol::{PendingOverride, RememberedApproval};

/// The name of the approver key in the stack's home (`keys/approver.key`).
pub const APPROVER_KEY: &str = "approver";
/// How long the override-gate may take to list the pending requests.
pub const GATE_PATIENCE: Duration = Duration::from_secs(10);
/// How long an answer is waited for: the gate's decision, its refusal, or (under the two-person
/// rule) the approval showing as counted.
pub const CONFIRM_WAIT: Duration = Duration::from_secs(15);
/// How often the pending list is read while waiting for a first approval to show as counted.
const COUNTED_POLL: Duration = Duration::from_millis(300);

/// What became of an answer the gate took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AnswerOutcome {
    /// The gate decided: the request was approved (it runs) or denied (it ends).
    Decided { approved: bool },
    /// An approval counted under the two-person rule: nothing is decided until `needed`
    /// different approvers have approved. `approved_by` is who has, so far.
    Counted { needed: u8, approved_by: Vec<String> },
}

impl Client {
    /// Asks one of the gate's endpoints and reads its JSON reply; an error reply (a service
    /// API `Nats-Service-Error` header) is the gate's refusal.
    async fn ask_gate<T: serde::de::DeserializeOwned>(
        &self,
        endpoint: &'static str,
        body: Vec<u8>,
        what: &'static str,
    ) -> Result<T, ClientError> {
        let reply = tokio::time::timeout(GATE_PATIENCE, self.nats.request(endpoint, body.into()))
            .await
            .map_err(|_| ClientError::GateSilent { waited: GATE_PATIENCE })?
            .map_err(|e| ClientError::nats(what, e))?;
        if let Some(error) = reply.headers.as_ref().and_then(|h| h.get("Nats-Service-Error")) {
            return Err(ClientError::GateRefused {
                detail: error.as_str().to_owned(),
            });
        }
        serde_json::from_slice(&reply.payload).map_err(|source| ClientError::GateReply {
            reply: airlock_protocol::text::clip_bytes(&reply.payload, 200),
            source,
        })
    }

    /// The requests waiting for a human, as the override-gate lists them (soonest deadline
    /// first).
    pub async fn pending_overrides(&self) -> Result<Vec<PendingOverride>, ClientError> {
        self.ask_gate(
            GATE_PENDING_ENDPOINT,
            vec![],
            "asking the override-gate for pending requests",
        )
        .await
    }

    /// The approvals humans chose to remember ("approve this exact execution again"), each
    /// with whether it still holds under the policy in force.
    pub async fn remembered_approvals(&self) -> Result<Vec<RememberedApproval>, ClientError> {
        self.ask_gate(
            GATE_REMEMBERED_ENDPOINT,
            vec![],
            "asking the override-gate for remembered approvals",
        )
        .await
    }

    /// Revokes one remembered approval (by its id or an unambiguous prefix) or, with `None`,
    /// all of them; returns the ids revoked. Each revocation is in the audit log with who and
    /// why.
    pub async fn revoke_remembered(
        &self,
        id: Option<&str>,
        who: &str,
        reason: &str,
    ) -> Result<Vec<String>, ClientError> {
        if reason.trim().is_empty() {
            return Err(ClientError::EmptyReason);
        }
        if who.trim().is_empty() {
            return Err(ClientError::EmptyWho);
        }
        let body = airlock_protocol::RevokeRemembered {
            id: id.map(str::to_owned),
            all: id.is_none(),
            who: who.to_owned(),
            reason: reason.to_owned(),
        };
        let body = serde_json::to_vec(&body).unwrap_or_default();
        self.ask_gate(GATE_REVOKE_ENDPOINT, body, "asking the override-gate to revoke")
            .await
    }

    /// Who answers as this client: its operator when it has one, else `$USER`.
    pub fn answering_as(&self) -> String {
        self.operator.clone().unwrap_or_else(default_who)
    }

    /// Approves a waiting request: it runs, with the quota the gate grants approved requests.
    pub async fn approve_override(
        &self,
        request_id: &RequestId,
        reason: &str,
        who: Option<&str>,
    ) -> Result<AnswerOutcome, ClientError> {
        self.answer_override(request_id, true, reason, who).await
    }

    /// Denies a waiting request: it ends as denied.
    pub async fn deny_override(
        &self,
        request_id: &RequestId,
        reason: &str,
        who: Option<&str>,
    ) -> Result<AnswerOutcome, ClientError> {
        self.answer_override(request_id, false, reason, who).await
    }

    /// Answers a waiting request with an answer signed by the approver key, and waits until the
    /// gate has taken it ([`CONFIRM_WAIT`]).
    ///
    /// `reason` is recorded in the decision and the audit log: an empty (or blank) one is
    /// refused here, before anything is sent ([`ClientError::EmptyReason`]), as the gate would
    /// refuse it. `who` defaults to `$USER`, else `operator`. A request that is not waiting is
    /// [`ClientError::NotPending`]; an answer the gate refuses (too late, a second approval by
    /// the same person, ...) is [`ClientError::AnswerRefused`].
    pub async fn answer_override(
        &self,
        request_id: &RequestId,
        approve: bool,
        reason: &str,
        who: Option<&str>,
    ) -> Result<AnswerOutcome, ClientError> {
        self.answer(request_id, approve, reason, who, None).await
    }

    /// Approves a waiting request and chooses to approve this exact execution (the same code,
    /// inputs, packages, client and grant) again without being asked, for `again` (at most the
    /// policy's `approve_again_max`). Each later use is audited and re-checked against the policy
    /// in force; `airlock override remembered revoke` ends it.
    pub async fn approve_override_again(
        &self,
        request_id: &RequestId,
        reason: &str,
        who: Option<&str>,
        again: Duration,
    ) -> Result<AnswerOutcome, ClientError> {
        self.answer(request_id, true, reason, who, Some(again)).await
    }

    async fn answer(
        &self,
        request_id: &RequestId,
        approve: bool,
        reason: &str,
        who: Option<&str>,
        again: Option<Duration>,
    ) -> Result<AnswerOutcome, ClientError> {
        if reason.trim().is_empty() {
            return Err(ClientError::EmptyReason);
        }
        let who = match (who, &self.operator) {
            (Some(who), Some(operator)) if who != operator => {
                return Err(ClientError::NotTheKeysPerson {
                    operator: operator.clone(),
                    who: who.to_owned(),
                });
            }
            (_, Some(operator)) => operator.clone(),
            (Some(who), None) => who.to_owned(),
            (None, None) => default_who(),
        };
        if who.trim().is_empty() {
            return Err(ClientError::EmptyWho);
        }
        let key = self.approver_key()?;
        let request = self
            .pending_overrides()
            .await?
            .into_iter()
            .find(|p| &p.request_id == request_id)
            .ok_or_else(|| ClientError::NotPending {
                request_id: request_id.to_string(),
            })?;
        let needed = request.asked.approvals_needed;
        // Someone who has approved already is refused by the gate; only a new name in the list
        // is this answer counted.
        let counts = approve && needed > 1 && !request.approved_by.contains(&who);
        let signed = Signed::sign(
            &OverrideAnswer {
                request_id: request_id.clone(),
                // An answer is valid only for exactly the execution the human was shown.
                execution_digest: request.asked.execution_digest,
                approve,
                reason: reason.to_owned(),
                who: who.clone(),
                answered_at_ms: now_ms(),
                via: None,
                approve_again_for_ms: again.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
                refused_at_edge: None,
            },
            ANSWER_DOMAIN,
            &key,
        );
        // The gate's response is watched for before the answer is sent.
        let subscribe = |subject: String| async move {
            self.nats
                .subscribe(subject)
                .await
                .map_err(|e| ClientError::nats("subscribing to the gate's response", e))
        };
        let mut decided = subscribe(EventKind::Decided.subject(request_id)).await?;
        let mut refused = subscribe(EventKind::Refused.subject(request_id)).await?;
        let envelope = Envelope::new(
            request_id.clone(),
            Producer::Operator,
            Event::OverrideAnswered(OverrideAnswered { signed }),
        );
        Publisher::new(
            async_nats::jetstream::new(self.nats.clone()),
            Producer::Operator,
            tokio_util::sync::CancellationToken::new(),
        )
        .with_patience(Duration::from_secs(30))
        .publish(&envelope)
        .await
        .map_err(ClientError::Answer)?;
        // Under the two-person rule a first approval decides nothing: it shows in the list.
        let counted = async {
            if !counts {
                return std::future::pending().await;
            }
            loop {
                tokio::time::sleep(COUNTED_POLL).await;
                if let Ok(pending) = self.pending_overrides().await
                    && let Some(p) = pending.into_iter().find(|p| &p.request_id == request_id)
                    && p.approved_by.contains(&who)
                {
                    return p.approved_by;
                }
            }
        };
        tokio::select! {
            approved_by = counted => Ok(AnswerOutcome::Counted { needed, approved_by }),
            Some(_) = decided.next() => Ok(AnswerOutcome::Decided { approved: approve }),
            Some(message) = refused.next() => {
                let detail = match Envelope::decode(&message.payload) {
                    Ok(Envelope { event: Event::Refused(r), .. }) => r.detail,
                    _ => "refused".into(),
                };
                Err(ClientError::AnswerRefused { request_id: request_id.to_string(), detail })
            }
            () = tokio::time::sleep(CONFIRM_WAIT) => Err(ClientError::Unconfirmed {
                request_id: request_id.to_string(),
                waited: CONFIRM_WAIT,
            }),
        }
    }

    /// The approver key answers are signed with: the one given to
    /// [`Client::with_approver_key`], else `keys/approver.key` in the stack's home.
    fn approver_key(&self) -> Result<SigningKey, ClientError> {
        let path = match &self.approver_key {
            Some(path) => path.clone(),
            None => self.home.private_key(APPROVER_KEY),
        };
        SigningKey::load(&path).map_err(|source| ClientError::Key {
            path: path.display().to_string(),
            source,
        })
    }
}

/// Who answers when the caller does not say: the login name, else `operator`.
fn default_who() -> String {
    std::env::var("USER")
        .ok()
        .filter(|u| !u.trim().is_empty())
        .unwrap_or_else(|| "operator".into())
}
