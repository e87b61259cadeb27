//! The gate's loop: consume assessments and override answers, decide, sign, publish.
//!
//! Each request's state lives in the gate's key-value bucket (pending, or decided with the events
//! to publish), written with compare-and-swap, so that a restarted gate — or a second one —
//! republishes what was decided instead of deciding twice, and exactly one of a human's answer
//! and the deadline wins.

use crate::config::Config;
use crate::explain;
use crate::policy::Ruling;
use crate::records::{PendingOverride, Record};
use crate::remembered::{self, Remembered};
use crate::trust::{Current, Trust, TrustError};
use airlock_bus::runner::{Handled, Handler, Runner, Settling};
use airlock_bus::{
    BusError, Claim, ClaimError, Claims, Delivery, Ending, Failure, PublishError, Publisher, Refuser, ServiceCounters,
    Transience,
};
use airlock_protocol::decision::DECISION_DOMAIN;
use airlock_protocol::digest::execution_digest;
use airlock_protocol::event::Assessed;
use airlock_protocol::roles;
use airlock_protocol::subjects::{GATE_PENDING_ENDPOINT, GATE_REMEMBERED_ENDPOINT, GATE_REVOKE_ENDPOINT};
use airlock_protocol::{
    Approver, Assessment, Decided, Decision, DecisionOutcome, DecisionSummary, Event, ExecutionRequest, Grant,
    MessageId, Outcome, OverrideAsked, Producer, Progress, RefusalReason, RequestId, Signed, SigningKey, Terminal,
    now_ms,
};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

/// Answers from humans: checked, judged against the policy, counted or decided.
mod answers;
mod cancel;
mod chat_refusals;
/// Listing and revoking remembered approvals, for operators.
mod remembered_endpoints;

#[derive(Debug, thiserror::Error)]
pub enum GateError {
    #[error("the gate's signing key")]
    Key(#[from] airlock_protocol::KeyError),
    #[error("the gate's trusted keys")]
    Trust(#[from] TrustError),
    #[error("the gate's records")]
    Claims(#[from] ClaimError),
    #[error(transparent)]
    Bus(#[from] BusError),
    #[error("publishing")]
    Publish(#[from] PublishError),
}

impl Transience for GateError {
    fn is_permanent(&self) -> bool {
        match self {
            GateError::Key(_) | GateError::Trust(_) => true,
            GateError::Claims(e) => e.is_permanent(),
            GateError::Bus(e) => e.is_permanent(),
            GateError::Publish(e) => e.is_permanent(),
        }
    }
}

impl Failure for GateError {
    fn refusal_reason(&self) -> RefusalReason {
        match self {
            GateError::Publish(e) => e.refusal_reason(),
            _ => RefusalReason::DeadLettered,
        }
    }
}

/// A pending override request's times (Unix ms).
#[derive(Clone, Copy, Debug)]
struct Waiting {
    asked_at_ms: i64,
    deadline_ms: i64,
}

impl Waiting {
    fn of(asked: &airlock_protocol::OverrideAsked) -> Self {
        Waiting {
            asked_at_ms: asked.asked_at_ms,
            deadline_ms: asked.deadline_ms,
        }
    }
}

/// The pending overrides as metrics see them, at `now_ms`.
fn overrides_reading(
    waiting: &BTreeMap<RequestId, Waiting>,
    now_ms: i64,
) -> airlock_telemetry::metrics::OverridesReading {
    let since = |ms: i64| Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    airlock_telemetry::metrics::OverridesReading {
        pending: waiting.len() as u64,
        oldest_age: waiting
            .values()
            .map(|w| since(now_ms - w.asked_at_ms))
            .max()
            .unwrap_or_default(),
        nearest_deadline: waiting
            .values()
            .map(|w| since(w.deadline_ms - now_ms))
            .min()
            .unwrap_or_default(),
    }
}

struct Gate {
    /// The policy and trusted keys in force, reloaded when the config file changes.
    current: Arc<Current>,
    key: SigningKey,
    publisher: Publisher,
    refuser: Refuser,
    records: Claims,
    counters: ServiceCounters,
    /// When the pending requests this gate knows of were asked, and their deadlines.
    deadlines: Mutex<BTreeMap<RequestId, Waiting>>,
}

pub async fn run(client: async_nats::Client, config: Config, shutdown: CancellationToken) -> Result<(), GateError> {
    let key = SigningKey::load_or_generate(&config.key_file, &config.key_name)?;
    let trust = Trust::from_config(&config)?;
    if config.approver_keys.is_empty() && config.bridge_keys.is_empty() {
        tracing::warn!("no approver or bridge keys configured: override requests can only end by their deadline");
    }
    tracing::info!(policy_version = %trust.policy.version, "policy in force");
    let counters = ServiceCounters::default();
    let runner = Runner::start(&roles::GATE, client, counters.clone(), shutdown.clone()).await?;
    let Some(records) = runner.records().await? else {
        return Ok(());
    };
    let publisher = Publisher::new(runner.jetstream().clone(), Producer::OverrideGate, shutdown.clone());
    let gate = Arc::new(Gate {
        refuser: Refuser::new(publisher.clone(), &roles::GATE.role),
        publisher,
        key,
        current: Arc::new(Current::new(trust, config)),
        records,
        counters,
        deadlines: Mutex::new(BTreeMap::new()),
    });
    tracing::info!(key = %gate.key.verifier(), "override-gate signing decisions");
    let watched = gate.clone();
    airlock_telemetry::metrics::watch_overrides(move || {
        let waiting = watched.deadlines.lock().unwrap_or_else(|p| p.into_inner());
        overrides_reading(&waiting, now_ms())
    });

    let endpoint = |name: &'static str| runner.endpoint(name);
    tokio::spawn(serve_pending(gate.clone(), endpoint(GATE_PENDING_ENDPOINT).await?));
    tokio::spawn(remembered_endpoints::serve_list(
        gate.clone(),
        endpoint(GATE_REMEMBERED_ENDPOINT).await?,
    ));
    tokio::spawn(remembered_endpoints::serve_revoke(
        gate.clone(),
        endpoint(GATE_REVOKE_ENDPOINT).await?,
    ));
    tokio::spawn(enforce_deadlines(gate.clone(), shutdown.clone()));
    tokio::spawn(crate::trust::watch(
        gate.current.clone(),
        gate.counters.clone(),
        shutdown.clone(),
    ));

    let spec = runner.consumer(Duration::from_secs(30), 64);
    let settling = Settling::set_aside(gate.refuser.clone());
    runner.serve(spec, &*gate, settling).await?;
    Ok(())
}

impl Handler for Gate {
    type Error = GateError;

    async fn handle(&self, delivery: &Delivery) -> Handled<GateError> {
        self.on_delivery(delivery).await.into()
    }
}

impl Gate {
    async fn on_delivery(&self, delivery: &Delivery) -> Result<(), GateError> {
        let envelope = match delivery.envelope() {
            Ok(e) => e,
            Err(error) => {
                // Only the assessor may publish assessments and only approvers' users answers:
                // an unreadable one is refused, and the request it names is left to its
                // deadline rather than ended by a message anyone could have shaped.
                let detail = airlock_bus::error_text(&error);
                return self.refuse_message(delivery, RefusalReason::from(&error), detail).await;
            }
        };
        tracing::Span::current().record("request_id", envelope.request_id.as_str());
        self.counters.incr("handled");
        match envelope.event {
            Event::Assessed(assessed) => self.on_assessed(delivery, &envelope.request_id, *assessed).await,
            Event::OverrideAnswered(answer) => self.on_answer(delivery, &envelope.request_id, answer).await,
            Event::CancelRequested(cancel) => self.on_cancel(delivery, &envelope.request_id, cancel).await,
            Event::ChatRefused(refused) => self.on_chat_refused(delivery, &envelope.request_id, refused).await,
            other => {
                // The consumer's filter admits only the kinds above, and decode_on checks the
                // body against the subject; anything else is a bug worth refusing loudly.
                let detail = format!("unexpected {} event", other.kind());
                self.refuse_message(delivery, RefusalReason::SubjectMismatch, detail)
                    .await
            }
        }
    }

    async fn on_assessed(&self, delivery: &Delivery, rid: &RequestId, assessed: Assessed) -> Result<(), GateError> {
        if let Some((record, _)) = self.records.get::<Record>(rid.as_str()).await? {
            // Seen before (a redelivery after a crash): finish what the record says.
            return self.resume(rid, record).await;
        }
        let Assessed {
            request,
            assessment,
            request_digest,
        } = assessed;
        // What the assessor rated is what is decided on: one digest, recomputed here, over the
        // code, its inputs and the wheels its packages resolved to.
        let digest = request.request_digest(rid, &assessment.packages);
        if let Err(detail) = airlock_protocol::packages::covers(&request.packages, &assessment.packages) {
            let detail = format!("the assessment does not rate the request's packages: {detail}");
            self.counters.incr("refused");
            delivery
                .refuse(
                    &self.refuser,
                    RefusalReason::PackagesUnresolved,
                    &detail,
                    Ending::EndRequest,
                )
                .await?;
            return Ok(());
        }
        if request_digest.as_ref().is_some_and(|rated| rated != &digest) {
            let detail = format!(
                "the assessor rated request {}, the request delivered is {digest}",
                request_digest.unwrap_or(digest.clone())
            );
            self.counters.incr("refused");
            delivery
                .refuse(
                    &self.refuser,
                    RefusalReason::DigestMismatch,
                    &detail,
                    Ending::EndRequest,
                )
                .await?;
            return Ok(());
        }
        if request.deadline_ms.is_some_and(|d| d <= now_ms()) {
            let mut terminal =
                Terminal::without_run(Outcome::Expired, "the request's deadline passed before a decision");
            terminal.level = Some(assessment.level);
            terminal.findings = assessment.findings.clone();
            return self.commit(rid, vec![Event::Terminal(Box::new(terminal))]).await;
        }
        let (trust, _) = self.current.get();
        let ruling = trust
            .policy
            .decide_assessed(&self.quotas(&request), &assessment, request.origin, request.trust);
        let ruling = trust
            .policy
            .rule_network(ruling, assessment.level, request.origin, request.network);
        tracing::info!(level = %assessment.level, ?ruling, policy_version = %trust.policy.version, "policy ruling");
        match ruling {
            Ruling::Ask => {
                if let Some(events) = self.remembered(rid, &request, &assessment, &trust).await? {
                    return self.commit(rid, events).await;
                }
                self.ask(rid, request, assessment, &trust).await
            }
            ruling => {
                let approver = Approver::Policy {
                    rule: ruling_rule(&ruling),
                };
                let shown = trust.policy.grant(
                    &self.quotas(&request),
                    request.trust,
                    assessment.level,
                    request.origin,
                    request.network,
                );
                if matches!(ruling, Ruling::Deny { .. }) {
                    // Denied code tends to come back revised: its diff is kept for that.
                    crate::history::keep(&self.records, rid, &request).await;
                }
                let events = self.decision_events(rid, request, assessment, ruling, approver, shown, &trust);
                self.commit(rid, events).await
            }
        }
    }

    /// The decision for an execution a human chose to approve again, if that choice still holds:
    /// for exactly this execution (code, inputs, packages, client and what an approval grants),
    /// at this level, under the policy, allow-lists and keys in force now.
    async fn remembered(
        &self,
        rid: &RequestId,
        request: &ExecutionRequest,
        assessment: &Assessment,
        trust: &Trust,
    ) -> Result<Option<Vec<Event>>, GateError> {
        let grant = trust.policy.approval_grant(
            &self.quotas(request),
            request.trust,
            assessment.level,
            request.origin,
            request.network,
        );
        let digest = execution_digest(&request.request_digest(rid, &assessment.packages), &grant);
        let key = Remembered::key_of(&digest);
        let Some((remembered, _)) = self.records.get::<Remembered>(&key).await? else {
            return Ok(None);
        };
        if remembered.execution_digest != digest {
            return Ok(None);
        }
        if let Err(void) = remembered::still_holds(
            &remembered,
            assessment.level,
            &trust.policy,
            |k| trust.trusts(k),
            now_ms(),
        ) {
            self.counters.incr("approved_again_void");
            tracing::info!(remembered = %remembered.id, %void, "a remembered approval no longer holds: asking");
            return Ok(None);
        }
        self.counters.incr("approved_again");
        tracing::info!(who = %remembered.who(), approved_request = %remembered.approved_request, "approved again: this exact execution was approved earlier");
        let first = remembered.approvers.first();
        let ruling = Ruling::approve(
            grant.clone(),
            format!(
                "approved again: {} approved this exact execution earlier",
                remembered.who()
            ),
        );
        let approver = Approver::Remembered {
            who: remembered.who(),
            reason: first.map(|a| a.reason.clone()).unwrap_or_default(),
            approved_request: remembered.approved_request.clone(),
            until_ms: remembered.until_ms,
            remembered: Some(remembered.id.clone()),
            via: first.and_then(|a| a.via.clone()),
            approved_at_ms: Some(remembered.remembered_at_ms),
        };
        Ok(Some(self.decision_events(
            rid,
            request.clone(),
            assessment.clone(),
            ruling,
            approver,
            grant,
            trust,
        )))
    }

    /// The quotas this request may be granted from: each trust level's, lowered by the limits
    /// the request asks for (never raised), so that every grant made for it (by policy, shown
    /// to a human, remembered) is the lowered one and is what the gate signs.
    fn quotas(&self, request: &ExecutionRequest) -> airlock_protocol::Quotas {
        let mut quotas = self.current.get().1.quotas;
        if let Some(asked) = &request.limits {
            quotas.untrusted = asked.lower(&quotas.untrusted);
            quotas.unknown = asked.lower(&quotas.unknown);
            quotas.trusted = asked.lower(&quotas.trusted);
        }
        quotas
    }

    async fn ask(
        &self,
        rid: &RequestId,
        request: ExecutionRequest,
        assessment: Assessment,
        trust: &Trust,
    ) -> Result<(), GateError> {
        let (_, config) = self.current.get();
        let now = now_ms();
        let timeout = now + i64::try_from(config.override_timeout.as_millis()).unwrap_or(i64::MAX / 2);
        let deadline_ms = request.deadline_ms.map_or(timeout, |d| d.min(timeout));
        let policy = &trust.policy;
        let grant = policy.approval_grant(
            &self.quotas(&request),
            request.trust,
            assessment.level,
            request.origin,
            request.network,
        );
        let earlier = crate::history::earlier(&self.records, rid, &request).await;
        let asked = OverrideAsked {
            level: assessment.level,
            explanation: explain::explain(&request, &assessment),
            findings: assessment.findings.clone(),
            execution_digest: execution_digest(&request.request_digest(rid, &assessment.packages), &grant),
            grant: Some(grant.clone()),
            client: rid.client().map(str::to_owned),
            code_digest: request.code_digest(),
            language: request.language,
            origin: request.origin,
            code_preview: explain::code_preview(&request, 40, 4096),
            code: request.code.clone(),
            inputs: explain::inputs_preview(&request, &assessment, 4096),
            packages: assessment.packages.clone(),
            deadline_ms,
            asked_at_ms: now,
            label: request.label.clone(),
            requested_quota: Some(request.trust),
            approval_quota: Some(policy.approval_quota(request.trust)),
            policy_version: policy.version.clone(),
            approvers: policy.approvers_for(assessment.level),
            approvals_needed: policy.approvals_needed(assessment.level),
            escalation: policy.escalation_plan(now, deadline_ms),
            approve_again_max_ms: policy.approve_again_max_ms(),
            read_only_hosts: grant.read_only_hosts.clone(),
            earlier,
        };
        let record = Record::Pending {
            request: Box::new(request),
            assessment,
            asked: asked.clone(),
            traceparent: airlock_telemetry::current_traceparent(),
            approvals: vec![],
            chats_refused: vec![],
        };
        match self.records.claim(rid.as_str(), &record).await? {
            Claim::Won { .. } => {
                if let Record::Pending { request, .. } = &record {
                    crate::history::keep(&self.records, rid, request).await;
                }
                self.deadlines
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(rid.clone(), Waiting::of(&asked));
                self.counters.incr("asked");
                let posted_to = asked.approvers.keys().cloned().collect();
                let deadline_ms = asked.deadline_ms;
                self.publisher.emit(rid, Event::OverrideAsked(asked)).await?;
                self.publisher
                    .progress(
                        rid,
                        Progress::WaitingForHuman {
                            deadline_ms,
                            posted_to,
                            chats_refused: vec![],
                        },
                    )
                    .await;
                tracing::info!(deadline_ms, "asked for an override");
                Ok(())
            }
            Claim::Held { value, .. } => self.resume(rid, value).await,
        }
    }

    /// Signs the decision and builds the events that announce it. The decision names the
    /// execution digest of the request with what it grants (for a denial: with `shown`, what an
    /// approval would have granted).
    #[allow(clippy::too_many_arguments)]
    fn decision_events(
        &self,
        rid: &RequestId,
        request: ExecutionRequest,
        assessment: Assessment,
        ruling: Ruling,
        approver: Approver,
        shown: Grant,
        trust: &Trust,
    ) -> Vec<Event> {
        let _span = tracing::info_span!("decide", level = assessment.level.as_str(), ruling = ?ruling).entered();
        let now = now_ms();
        let decision_ttl = self.current.get().1.decision_ttl;
        let ttl_end = now + i64::try_from(decision_ttl.as_millis()).unwrap_or(i64::MAX / 2);
        // A denial is signed for what an approval would have granted.
        let grant = ruling.grant().unwrap_or(shown);
        let outcome = match &ruling {
            Ruling::Approve { .. } => DecisionOutcome::approved(grant.clone()),
            Ruling::Deny { reason } => DecisionOutcome::Denied { reason: reason.clone() },
            // Asking is not a decision; callers resolve it first.
            Ruling::Ask => DecisionOutcome::Denied {
                reason: "no decision".into(),
            },
        };
        let decision = Decision {
            decision_id: MessageId::new(),
            request_id: rid.clone(),
            execution_digest: execution_digest(&request.request_digest(rid, &assessment.packages), &grant),
            code_digest: request.code_digest(),
            level: assessment.level,
            outcome,
            approver,
            issued_at_ms: now,
            expires_at_ms: request.deadline_ms.map_or(ttl_end, |d| d.min(ttl_end)),
            policy_version: Some(trust.policy.version.clone()),
        };
        let signed = Signed::sign(&decision, DECISION_DOMAIN, &self.key);
        let summary = DecisionSummary::of(&decision);
        if decision.is_approved() {
            self.counters.incr("approved");
            let decided = Decided {
                signed,
                request: Some(request),
                assessment: Some(assessment),
            };
            vec![Event::Decided(Box::new(decided))]
        } else {
            self.counters.incr("denied");
            let reason = match &decision.outcome {
                DecisionOutcome::Denied { reason } => reason.clone(),
                DecisionOutcome::Approved { .. } => String::new(),
            };
            let mut terminal = Terminal::without_run(Outcome::Denied, reason);
            terminal.level = Some(assessment.level);
            terminal.findings = assessment.findings.clone();
            terminal.decision = Some(summary);
            let decided = Decided {
                signed,
                request: None,
                assessment: Some(assessment),
            };
            vec![Event::Decided(Box::new(decided)), Event::Terminal(Box::new(terminal))]
        }
    }

    /// Records the events as decided (first writer wins), then publishes them.
    async fn commit(&self, rid: &RequestId, events: Vec<Event>) -> Result<(), GateError> {
        match self
            .records
            .claim(
                rid.as_str(),
                &Record::Decided {
                    events: events.clone(),
                    published: false,
                },
            )
            .await?
        {
            Claim::Won { revision } => self.publish_decided(rid, events, revision).await,
            Claim::Held { value, .. } => self.resume(rid, value).await,
        }
    }

    async fn publish_decided(&self, rid: &RequestId, events: Vec<Event>, revision: u64) -> Result<(), GateError> {
        for event in &events {
            self.publisher.emit(rid, event.clone()).await?;
        }
        if let Some(progress) = events.iter().find_map(decided_progress) {
            self.publisher.progress(rid, progress).await;
        }
        // Marking as published only saves the republishing at the next start; losing the race
        // to another gate instance here is harmless.
        if let Err(e) = self
            .records
            .update(
                rid.as_str(),
                &Record::Decided {
                    events,
                    published: true,
                },
                revision,
            )
            .await
        {
            tracing::debug!(error = %e, "could not mark decision published");
        }
        Ok(())
    }

    /// Finishes whatever a record says was started: republishing is idempotent (fixed
    /// `Nats-Msg-Id`s), so this is safe after any crash.
    async fn resume(&self, rid: &RequestId, record: Record) -> Result<(), GateError> {
        match record {
            Record::Pending { asked, .. } => {
                self.deadlines
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(rid.clone(), Waiting::of(&asked));
                self.publisher.emit(rid, Event::OverrideAsked(asked)).await?;
            }
            Record::Decided { events, .. } => {
                for event in events {
                    self.publisher.emit(rid, event).await?;
                }
            }
        }
        Ok(())
    }

    /// Denies a pending request whose deadline has passed, unless an answer won first.
    async fn expire(&self, rid: &RequestId) -> Result<(), GateError> {
        let Some((record, revision)) = self.records.get::<Record>(rid.as_str()).await? else {
            return Ok(());
        };
        let Record::Pending {
            request,
            assessment,
            asked,
            traceparent,
            ..
        } = record
        else {
            return Ok(());
        };
        if now_ms() <= asked.deadline_ms {
            return Ok(());
        }
        let span = tracing::info_span!("override deadline", request_id = %rid);
        airlock_telemetry::set_parent_traceparent(&span, traceparent.as_deref());
        async move {
            let ruling = Ruling::Deny {
                reason: "no answer to the override request before its deadline".into(),
            };
            let (trust, _) = self.current.get();
            let shown = asked.grant.unwrap_or_else(|| {
                trust.policy.approval_grant(
                    &self.quotas(&request),
                    request.trust,
                    asked.level,
                    request.origin,
                    request.network,
                )
            });
            let events = self.decision_events(rid, *request, assessment, ruling, Approver::Deadline, shown, &trust);
            match self
                .records
                .update(
                    rid.as_str(),
                    &Record::Decided {
                        events: events.clone(),
                        published: false,
                    },
                    revision,
                )
                .await
            {
                Ok(revision) => {
                    self.counters.incr("override_expired");
                    tracing::info!(request_id = %rid, "override deadline passed: denied");
                    self.publish_decided(rid, events, revision).await
                }
                Err(ClaimError::Conflict { .. }) => Ok(()),
                Err(e) => Err(e.into()),
            }
        }
        .instrument(span)
        .await
    }

    /// Refuses one message; the request it names goes on (to its deadline if need be).
    async fn refuse_message(
        &self,
        delivery: &Delivery,
        reason: RefusalReason,
        detail: String,
    ) -> Result<(), GateError> {
        self.counters.incr("refused");
        delivery
            .refuse(&self.refuser, reason, &detail, Ending::MessageOnly)
            .await?;
        Ok(())
    }

    async fn pending(&self) -> Result<Vec<PendingOverride>, GateError> {
        let mut pending = Vec::new();
        for key in self.records.keys().await? {
            let Ok(request_id) = RequestId::parse(&key) else {
                continue;
            };
            if let Ok(Some((
                Record::Pending {
                    request,
                    mut asked,
                    approvals,
                    chats_refused,
                    ..
                },
                _,
            ))) = self.records.get::<Record>(&key).await
            {
                // Requests asked by an earlier release have no label in `asked`.
                asked.label = asked.label.or(request.label);
                // The list is one reply however many wait: the preview, not the whole code.
                asked.code = Vec::new();
                pending.push(PendingOverride {
                    request_id,
                    asked,
                    approved_by: approvals.into_iter().map(|a| a.who).collect(),
                    chats_refused,
                });
            }
        }
        pending.sort_by_key(|p| p.asked.deadline_ms);
        Ok(pending)
    }

    /// Reloads every record: pending deadlines into memory, and decisions not yet published.
    async fn rescan(&self) -> Result<(), GateError> {
        for key in self.records.keys().await? {
            let Ok(rid) = RequestId::parse(&key) else { continue };
            match self.records.get::<Record>(&key).await {
                Ok(Some((Record::Pending { asked, .. }, _))) => {
                    self.deadlines
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(rid, Waiting::of(&asked));
                }
                Ok(Some((
                    Record::Decided {
                        events,
                        published: false,
                    },
                    revision,
                ))) => {
                    self.publish_decided(&rid, events, revision).await?;
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(key, error = %e, "unreadable gate record"),
            }
        }
        Ok(())
    }
}

/// What a decision tells the request's client.
fn decided_progress(event: &Event) -> Option<Progress> {
    let Event::Decided(decided) = event else { return None };
    let decision = decided.signed.peek::<Decision>()?;
    let by = match &decision.approver {
        Approver::Policy { .. } => "policy".to_owned(),
        Approver::Human { who, seconded_by, .. } => std::iter::once(who.as_str())
            .chain(seconded_by.iter().map(|s| s.who.as_str()))
            .collect::<Vec<_>>()
            .join(" and "),
        Approver::Remembered { who, .. } => format!("{who} (remembered approval)"),
        Approver::Deadline => "the deadline (nobody answered)".to_owned(),
    };
    Some(match decision.is_approved() {
        true => Progress::Approved { by },
        false => Progress::Denied { by },
    })
}

fn ruling_rule(ruling: &Ruling) -> String {
    match ruling {
        Ruling::Approve { rule, .. } => rule.clone(),
        Ruling::Deny { reason } => reason.clone(),
        Ruling::Ask => "ask".into(),
    }
}

async fn enforce_deadlines(gate: Arc<Gate>, shutdown: CancellationToken) {
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    let mut since_rescan = Duration::MAX;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        // A full rescan picks up requests asked by another gate instance or before a restart.
        if since_rescan >= Duration::from_secs(15) {
            if let Err(e) = gate.rescan().await {
                tracing::warn!(error = %e, "rescan of gate records failed");
            }
            since_rescan = Duration::ZERO;
        }
        since_rescan += Duration::from_millis(500);
        let now = now_ms();
        let due: Vec<RequestId> = {
            let deadlines = gate.deadlines.lock().unwrap_or_else(|p| p.into_inner());
            deadlines
                .iter()
                .filter(|(_, w)| w.deadline_ms < now)
                .map(|(r, _)| r.clone())
                .collect()
        };
        for rid in due {
            match gate.expire(&rid).await {
                Ok(()) => {
                    gate.deadlines.lock().unwrap_or_else(|p| p.into_inner()).remove(&rid);
                }
                Err(e) => tracing::warn!(request_id = %rid, error = %e, "expiring an override failed; will retry"),
            }
        }
    }
}

async fn serve_pending(gate: Arc<Gate>, mut endpoint: async_nats::service::endpoint::Endpoint) {
    use futures::StreamExt as _;
    while let Some(request) = endpoint.next().await {
        let reply = match gate.pending().await {
            Ok(pending) => Ok(serde_json::to_vec(&pending).unwrap_or_default().into()),
            Err(e) => Err(async_nats::service::error::Error {
                status: e.to_string(),
                code: 503,
            }),
        };
        if let Err(e) = request.respond(reply).await {
            tracing::debug!(error = %e, "pending reply failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_reading_names_the_oldest_wait_and_the_nearest_deadline() {
        let rid = |local: &str| RequestId::for_client("mai", local).expect("request id");
        let mut waiting = BTreeMap::new();
        assert_eq!(overrides_reading(&waiting, 10_000), Default::default());
        waiting.insert(
            rid("a"),
            Waiting {
                asked_at_ms: 1_000,
                deadline_ms: 70_000,
            },
        );
        waiting.insert(
            rid("b"),
            Waiting {
                asked_at_ms: 4_000,
                deadline_ms: 40_000,
            },
        );
        // One already past its deadline (not yet expired by the loop) counts as zero time left.
        waiting.insert(
            rid("c"),
            Waiting {
                asked_at_ms: 5_000,
                deadline_ms: 9_000,
            },
        );
        let reading = overrides_reading(&waiting, 10_000);
        assert_eq!(reading.pending, 3);
        assert_eq!(reading.oldest_age, Duration::from_secs(9));
        assert_eq!(reading.nearest_deadline, Duration::ZERO);
        waiting.remove(&rid("c"));
        assert_eq!(
            overrides_reading(&waiting, 10_000).nearest_deadline,
            Duration::from_secs(30)
        );
    }
}
