//! No poison message: a delivery whose handling fails for good, or fails again and again, is
//! set aside in the dead-letter stream with the reason, refused, and its request ends with one
//! terminal event — against a real nats-server.

use airlock_bus::testing::NatsServer;
use airlock_bus::{ConsumerSpec, DeliveryStream, Failure, Publisher, Refuser, Transience};
use airlock_protocol::roles;
use airlock_protocol::subjects::{DEAD_LETTER_STREAM, EVENTS_STREAM};
use airlock_protocol::{Envelope, Event, EventKind, ExecutionRequest, Language, Producer, RefusalReason, RequestId};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

#[derive(Debug, thiserror::Error)]
#[error("the handler failed (permanent: {0})")]
struct HandlerFailed(bool);

impl Transience for HandlerFailed {
    fn is_permanent(&self) -> bool {
        self.0
    }
}

impl Failure for HandlerFailed {}

fn submission(rid: &RequestId) -> Envelope {
    Envelope::new(
        rid.clone(),
        Producer::Mai,
        Event::Submitted(ExecutionRequest::new(Language::Python, b"print(1)".to_vec())),
    )
}

/// Consumes submissions as the assessor's role with a handler that always fails, until the
/// message has been set aside; returns how many deliveries it took.
async fn consume_failing(js: &async_nats::jetstream::Context, permanent: bool) -> i64 {
    let shutdown = CancellationToken::new();
    let publisher = Publisher::new(js.clone(), Producer::Assessor, shutdown.clone());
    let refuser = Refuser::new(publisher, &roles::ASSESSOR.role);
    let spec = ConsumerSpec::for_role(&roles::ASSESSOR, Duration::from_secs(30), 16);
    let mut deliveries = DeliveryStream::open(js.clone(), spec, shutdown.clone())
        .await
        .expect("consumer")
        .expect("open");
    loop {
        let delivery = tokio::time::timeout(Duration::from_secs(30), deliveries.next())
            .await
            .expect("a delivery within 30 s")
            .expect("a delivery");
        let attempts = delivery.position().1;
        delivery
            .settle(Err(HandlerFailed(permanent)), &refuser, &shutdown)
            .await;
        if permanent || attempts >= airlock_bus::consume::MAX_ATTEMPTS {
            return attempts;
        }
    }
}

async fn kinds_of(js: &async_nats::jetstream::Context, rid: &RequestId) -> Vec<(EventKind, Option<RefusalReason>)> {
    let stream = js.get_stream(EVENTS_STREAM).await.expect("stream");
    let mut found = Vec::new();
    for kind in EventKind::ALL {
        let mut seq = 1;
        while let Ok(message) = stream.direct_get_next_for_subject(kind.subject(rid), Some(seq)).await {
            seq = message.sequence + 1;
            let envelope = Envelope::decode(&message.payload).expect("envelope");
            let refusal = match &envelope.event {
                Event::Refused(r) => Some(r.reason),
                Event::Terminal(t) => t.refusal,
                _ => None,
            };
            found.push((kind, refusal));
        }
    }
    found
}

async fn run_case(permanent: bool) {
    let server = NatsServer::start().await;
    let js = async_nats::jetstream::new(server.client().await);
    let rid = RequestId::new_for("mai").unwrap();
    let mai = Publisher::new(js.clone(), Producer::Mai, CancellationToken::new());
    mai.publish(&submission(&rid)).await.expect("submitted");

    let attempts = consume_failing(&js, permanent).await;
    assert_eq!(
        attempts,
        if permanent {
            1
        } else {
            airlock_bus::consume::MAX_ATTEMPTS
        }
    );

    let dead = js.get_stream(DEAD_LETTER_STREAM).await.expect("dead-letter stream");
    let letter = dead
        .get_last_raw_message_by_subject(&format!("airlock.dead.assessor.{rid}"))
        .await
        .expect("the message is in the dead-letter stream");
    let reason = letter
        .headers
        .get("Airlock-Dead-Reason")
        .map(|v| v.to_string())
        .unwrap_or_default();
    assert!(reason.contains("the handler failed"), "{reason}");
    assert_eq!(
        Envelope::decode(&letter.payload)
            .expect("the original message")
            .request_id,
        rid
    );
    let kinds = kinds_of(&js, &rid).await;
    let terminals: Vec<_> = kinds.iter().filter(|(k, _)| *k == EventKind::Terminal).collect();
    assert_eq!(terminals.len(), 1, "{kinds:?}");
    assert_eq!(terminals[0].1, Some(RefusalReason::DeadLettered));
    assert!(
        kinds.contains(&(EventKind::Refused, Some(RefusalReason::DeadLettered))),
        "{kinds:?}"
    );

    // Set aside means acknowledged: nothing is delivered again.
    let shutdown = CancellationToken::new();
    let spec = ConsumerSpec::for_role(&roles::ASSESSOR, Duration::from_secs(30), 16);
    let mut deliveries = DeliveryStream::open(js.clone(), spec, shutdown)
        .await
        .expect("consumer")
        .expect("open");
    assert!(
        tokio::time::timeout(Duration::from_secs(3), deliveries.next())
            .await
            .is_err()
    );
}

#[tokio::test]
async fn a_permanent_failure_is_set_aside_at_once() {
    run_case(true).await;
}

#[tokio::test]
async fn a_repeating_failure_is_set_aside_after_bounded_attempts() {
    run_case(false).await;
}
