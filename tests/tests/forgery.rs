//! No code runs without a valid gate signature for exactly that code: forged, altered, expired
//! and replayed decisions are refused, and the refusals are audited.

use airlock_protocol::decision::DECISION_DOMAIN;
use airlock_protocol::*;
use airlock_tests::{Stack, events_of};
use std::time::Duration;

fn request(code: &str) -> ExecutionRequest {
    ExecutionRequest::new(Language::Python, code.as_bytes().to_vec()).label("forged.py")
}

fn grant() -> Grant {
    Grant {
        quota: TrustLevel::Unknown,
        limits: Limits {
            memory_bytes: 256 << 20,
            cpu_millis: 1000,
            pids: 64,
            wall_ms: 10_000,
            output_bytes: 65536,
            disk_bytes: 16 << 20,
            open_files: 64,
        },
        runtime: Runtime::Runc,
        network: NetworkMode::None,
        read_only_hosts: vec![],
    }
}

fn decision(rid: &RequestId, request: &ExecutionRequest, expires_at_ms: i64) -> Decision {
    Decision {
        decision_id: MessageId::new(),
        request_id: rid.clone(),
        execution_digest: digest::execution_digest(&request.request_digest(rid, &[]), &grant()),
        code_digest: request.code_digest(),
        level: Level::Low,
        outcome: DecisionOutcome::approved(grant()),
        approver: Approver::Policy {
            rule: "forged by a test".into(),
        },
        issued_at_ms: now_ms(),
        expires_at_ms,
        policy_version: None,
    }
}

/// Publishes a `decided` event directly (as the admin user: the gate's own user is the only one
/// allowed to, and this test plays a compromised or replaying insider).
async fn publish_decided(stack: &Stack, rid: &RequestId, signed: Signed, request: ExecutionRequest) {
    let admin = stack.connect("admin").await;
    let envelope = Envelope::new(
        rid.clone(),
        Producer::OverrideGate,
        Event::Decided(Box::new(Decided {
            signed,
            request: Some(request),
            assessment: None,
        })),
    );
    let js = async_nats::jetstream::new(admin);
    // A fresh Nats-Msg-Id each time, so that de-duplication is not what stops a replay.
    let publish = async_nats::jetstream::message::PublishMessage::build()
        .payload(envelope.encode().expect("encode").into())
        .message_id(MessageId::new().as_str());
    js.send_publish(envelope.subject(), publish)
        .await
        .expect("publish")
        .await
        .expect("ack");
}

async fn wait_refusal(stack: &Stack, rid: &RequestId) -> Refusal {
    for _ in 0..100 {
        let events = events_of(stack, rid.as_str()).await;
        if let Some(Event::Refused(r)) = events.iter().map(|e| &e.event).find(|e| matches!(e, Event::Refused(_))) {
            assert!(
                !events.iter().any(|e| e.kind() == EventKind::ExecStarted),
                "code ran for a refused decision: {events:?}"
            );
            return r.clone();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("no refusal for {rid}:\n{}", stack.diagnostics());
}

#[tokio::test(flavor = "multi_thread")]
async fn forged_altered_expired_and_replayed_decisions_are_refused() {
    let stack = tokio::task::spawn_blocking(Stack::start).await.expect("stack");
    let gate = SigningKey::load(&stack.path().join("keys/gate.key")).expect("gate key");
    let in_ten_minutes = now_ms() + 600_000;

    // Signed by a key with the gate's name but not the gate's key.
    let rid = RequestId::new_for("mai").unwrap();
    let req = request("print('forged')\n");
    let impostor = SigningKey::generate(gate.name()).expect("key");
    publish_decided(
        &stack,
        &rid,
        Signed::sign(&decision(&rid, &req, in_ten_minutes), DECISION_DOMAIN, &impostor),
        req,
    )
    .await;
    assert!(
        matches!(
            wait_refusal(&stack, &rid).await.reason,
            RefusalReason::UnknownSigner | RefusalReason::BadSignature
        ),
        "an impostor's signature must be refused"
    );

    // A valid signature with a flipped bit.
    let rid = RequestId::new_for("mai").unwrap();
    let req = request("print('tampered')\n");
    let mut signed = Signed::sign(&decision(&rid, &req, in_ten_minutes), DECISION_DOMAIN, &gate);
    signed.signature[7] ^= 1;
    publish_decided(&stack, &rid, signed, req).await;
    assert_eq!(wait_refusal(&stack, &rid).await.reason, RefusalReason::BadSignature);

    // The gate's valid signature over other code than the code delivered.
    let rid = RequestId::new_for("mai").unwrap();
    let approved = request("print('approved code')\n");
    let swapped = request("print('swapped code')\n");
    publish_decided(
        &stack,
        &rid,
        Signed::sign(&decision(&rid, &approved, in_ten_minutes), DECISION_DOMAIN, &gate),
        swapped,
    )
    .await;
    assert_eq!(wait_refusal(&stack, &rid).await.reason, RefusalReason::DigestMismatch);

    // The gate's valid signature, expired.
    let rid = RequestId::new_for("mai").unwrap();
    let req = request("print('too late')\n");
    publish_decided(
        &stack,
        &rid,
        Signed::sign(&decision(&rid, &req, now_ms() - 1000), DECISION_DOMAIN, &gate),
        req,
    )
    .await;
    assert_eq!(wait_refusal(&stack, &rid).await.reason, RefusalReason::Expired);

    // A real run, then its decision replayed: it must not run twice.
    let (json, status) = stack.run_code("once.py", "print('once')\n", &[]);
    assert_eq!(status, 0, "{json}");
    let rid = RequestId::parse(json["request_id"].as_str().expect("id")).expect("rid");
    let original = events_of(&stack, rid.as_str())
        .await
        .into_iter()
        .find_map(|e| match e.event {
            Event::Decided(d) => Some(*d),
            _ => None,
        })
        .expect("the original decision");
    let request = original.request.clone().expect("approved request");
    publish_decided(&stack, &rid, original.signed, request).await;
    let mut refused = None;
    for _ in 0..100 {
        let events = events_of(&stack, rid.as_str()).await;
        assert_eq!(
            events.iter().filter(|e| e.kind() == EventKind::ExecStarted).count(),
            1,
            "replayed decision ran again"
        );
        if let Some(r) = events.iter().find_map(|e| match &e.event {
            Event::Refused(r) => Some(r.clone()),
            _ => None,
        }) {
            refused = Some(r);
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(refused.expect("the replay is refused").reason, RefusalReason::Replayed);
}
