//! A human's answer to an override request, in the order the gate handles it: the signature and
//! the request it names are checked; the answer is judged against the policy (who may answer
//! this level, by which chat system, under the two-person rule); a first approval is counted in
//! the request's record, a deciding answer turns the record into a decision, with
//! compare-and-swap, so that exactly one of the answers and the deadline wins.

use super::{Gate, GateError};
use crate::policy::Ruling;
use crate::records::Record;
use crate::remembered::Remembered;
use crate::trust::Trust;
use airlock_approvals::{Approval, Asked, Judge, Judgement};
use airlock_bus::{ClaimError, Delivery};
use airlock_protocol::overrides::ANSWER_DOMAIN;
use airlock_protocol::subjects::GATE_BUCKET;
use airlock_protocol::{
    CodeDigest, Event, Level, OverrideAnswer, OverrideAnswered, OverrideAsked, RefusalReason, RequestId, VerifierKey,
    now_ms,
};

/// An answer whose signature and request were checked.
struct CheckedAnswer {
    answer: OverrideAnswer,
    signer: VerifierKey,
    /// Who answered and where (`@alice:localhost (matrix !room:localhost)`), for the record.
    who_where: String,
}

/// A decision reached by an answer, ready to be recorded.
struct AnswerDecision {
    events: Vec<Event>,
    approved: bool,
    /// The approver chose to approve this exact code again for a while.
    remember: Option<Remember>,
}

/// What is remembered: the execution every approver approved, by whom, for how long.
struct Remember {
    digest: CodeDigest,
    code_digest: CodeDigest,
    level: Level,
    for_ms: u64,
    approvers: Vec<Approval>,
    label: Option<String>,
    client: Option<String>,
}

impl Gate {
    pub(super) async fn on_answer(
        &self,
        delivery: &Delivery,
        rid: &RequestId,
        answered: OverrideAnswered,
    ) -> Result<(), GateError> {
        let (trust, config) = self.current.get();
        let checked = match check_answer(rid, &answered, &trust) {
            Ok(checked) => checked,
            Err((reason, detail)) => return self.refuse_message(delivery, reason, detail).await,
        };
        let who_where = &checked.who_where;
        let Some((record, revision)) = self.records.get::<Record>(rid.as_str()).await? else {
            let detail = format!("{who_where}: no such request is waiting");
            return self.refuse_message(delivery, RefusalReason::NotPending, detail).await;
        };
        let Record::Pending {
            request,
            assessment,
            asked,
            traceparent,
            approvals,
            chats_refused,
        } = record
        else {
            let detail = format!("{who_where} answered after the request was decided");
            return self.refuse_message(delivery, RefusalReason::NotPending, detail).await;
        };
        let answer = &checked.answer;
        let source = trust.source_of(&checked.signer, answer.via.as_ref().map(|v| v.system.as_str()), &config);
        let grant = asked.grant.clone().unwrap_or_else(|| {
            trust.policy.approval_grant(
                &self.quotas(&request),
                request.trust,
                asked.level,
                request.origin,
                request.network,
            )
        });
        let judgement = Judge {
            policy: &trust.policy,
            people: &trust.people,
        }
        .judge(
            Asked {
                level: asked.level,
                execution_digest: &asked.execution_digest,
                grant: &grant,
                deadline_ms: asked.deadline_ms,
                now_ms: now_ms(),
            },
            &approvals,
            answer,
            &source,
            &checked.signer.to_string(),
        );
        tracing::info!(who = %who_where, approve = answer.approve, ?judgement, policy_version = %trust.policy.version, "override answer judged");
        match judgement {
            Judgement::Refuse { reason, detail } => self.refuse_message(delivery, reason, detail).await,
            Judgement::Count { approvals } => {
                let record = Record::Pending {
                    request,
                    assessment,
                    asked,
                    traceparent,
                    approvals,
                    chats_refused,
                };
                self.count_approval(rid, &record, revision).await
            }
            Judgement::Decide {
                verdict,
                approver,
                again_for_ms,
                approvals,
            } => {
                let remember = again_for_ms.map(|for_ms| remember_of(&asked, for_ms, approvals));
                let decision = AnswerDecision {
                    approved: verdict.is_approve(),
                    events: self.decision_events(
                        rid,
                        *request,
                        assessment,
                        Ruling::from(verdict),
                        approver,
                        grant,
                        &trust,
                    ),
                    remember,
                };
                self.record_decision(delivery, rid, decision, revision, &trust, who_where)
                    .await
            }
        }
    }

    /// A first approval under the two-person rule, kept in the request's record.
    async fn count_approval(&self, rid: &RequestId, record: &Record, revision: u64) -> Result<(), GateError> {
        match self.records.update(rid.as_str(), record, revision).await {
            Ok(_) => {
                self.counters.incr("override_approvals_counted");
                Ok(())
            }
            // Another answer or the deadline changed the record meanwhile: the delivery is
            // retried, and the answer judged again against what the record is now.
            Err(ClaimError::Conflict { .. }) => Err(GateError::Claims(ClaimError::Store {
                bucket: GATE_BUCKET.to_owned(),
                source: "the request changed while an answer was judged; judging it again".into(),
            })),
            Err(e) => Err(e.into()),
        }
    }

    /// Turns the pending record into the decision, unless the deadline or another answer did
    /// first; then publishes it.
    async fn record_decision(
        &self,
        delivery: &Delivery,
        rid: &RequestId,
        decision: AnswerDecision,
        revision: u64,
        trust: &Trust,
        who_where: &str,
    ) -> Result<(), GateError> {
        let decided = Record::Decided {
            events: decision.events.clone(),
            published: false,
        };
        match self.records.update(rid.as_str(), &decided, revision).await {
            Ok(revision) => {
                self.counters.incr(if decision.approved {
                    "override_approved"
                } else {
                    "override_denied"
                });
                let waiting = self.deadlines.lock().unwrap_or_else(|p| p.into_inner()).remove(rid);
                if let Some(waiting) = waiting {
                    let waited = u64::try_from(now_ms() - waiting.asked_at_ms).unwrap_or(0);
                    airlock_telemetry::metrics::override_answered(
                        decision.approved,
                        std::time::Duration::from_millis(waited),
                    );
                }
                if let Some(remember) = &decision.remember {
                    self.remember(rid, remember, trust).await;
                }
                self.publish_decided(rid, decision.events, revision).await
            }
            Err(ClaimError::Conflict { .. }) => {
                let detail = format!("{who_where}: decided meanwhile (deadline or another answer)");
                self.refuse_message(delivery, RefusalReason::NotPending, detail).await
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Records the approvers' explicit choice to approve this exact execution again. Failing to
    /// record it only means the next run asks again.
    async fn remember(&self, rid: &RequestId, remember: &Remember, trust: &Trust) {
        let now = now_ms();
        let remembered = Remembered {
            id: Remembered::id_of(&remember.digest),
            execution_digest: remember.digest.clone(),
            code_digest: remember.code_digest.clone(),
            until_ms: now.saturating_add(i64::try_from(remember.for_ms).unwrap_or(i64::MAX / 2)),
            remembered_at_ms: now,
            approvers: remember.approvers.clone(),
            level: remember.level,
            approved_request: rid.clone(),
            label: remember.label.clone(),
            client: remember.client.clone(),
            policy_version: trust.policy.version.clone(),
        };
        let key = Remembered::key_of(&remember.digest);
        let stored = match self.records.get::<Remembered>(&key).await {
            Ok(Some((_, revision))) => self.records.update(&key, &remembered, revision).await.map(|_| ()),
            Ok(None) => self.records.claim(&key, &remembered).await.map(|_| ()),
            Err(e) => Err(e),
        };
        match stored {
            Ok(()) => {
                self.counters.incr("approvals_remembered");
                tracing::info!(who = %remembered.who(), execution = %remember.digest, until_ms = remembered.until_ms, "approval remembered for this exact execution");
            }
            Err(e) => tracing::warn!(error = %airlock_bus::error_text(&e), "could not remember the approval"),
        }
    }
}

fn remember_of(asked: &OverrideAsked, for_ms: u64, approvers: Vec<Approval>) -> Remember {
    Remember {
        digest: asked.execution_digest.clone(),
        code_digest: asked.code_digest.clone(),
        level: asked.level,
        for_ms,
        approvers,
        label: asked.label.clone(),
        client: asked.client.clone(),
    }
}

/// The answer's signature by a trusted key, for the request it arrived for, and not refused by
/// the chat bridge at its edge; else the refusal to record.
fn check_answer(
    rid: &RequestId,
    answered: &OverrideAnswered,
    trust: &Trust,
) -> Result<CheckedAnswer, (RefusalReason, String)> {
    let (answer, signer): (OverrideAnswer, VerifierKey) = answered
        .signed
        .verify(ANSWER_DOMAIN, "override answer", &trust.verifiers)
        // A refusal's detail travels on the wire and into the log as text; its reason is typed.
        .map_err(|e| (RefusalReason::from(&e), e.to_string()))?;
    if &answer.request_id != rid {
        let detail = format!("answer signed for request {} arrived for {rid}", answer.request_id);
        return Err((RefusalReason::SubjectMismatch, detail));
    }
    let who_where = match &answer.via {
        Some(via) => format!("{} ({} {})", answer.who, via.system, via.place),
        None => answer.who.clone(),
    };
    // An interaction the bridge refused at its edge (forged, stale, replayed) may name no
    // request at all: refuse it on the record before looking for one.
    if let Some(edge) = &answer.refused_at_edge {
        let detail = format!("{who_where}: refused by the chat bridge: {}", edge.detail);
        return Err((edge.reason, detail));
    }
    Ok(CheckedAnswer {
        answer,
        signer,
        who_where,
    })
}
