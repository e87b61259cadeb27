//! Publishing envelopes to JetStream, exactly once.
//!
//! Every publish carries a `Nats-Msg-Id` derived from the event (see `Event::dedup_id`), so a
//! retry after a timeout, or a service redoing unacknowledged work after a crash, is dropped by
//! the stream instead of stored twice. Publishes are retried through NATS outages.

use airlock_protocol::{Envelope, Event, Producer, RequestId, WireError};
use async_nats::jetstream;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    #[error("encoding the message: {0}")]
    Encode(#[from] WireError),
    #[error("publishing to {subject} failed for {waited:?}: {detail}")]
    GaveUp {
        subject: String,
        waited: Duration,
        detail: String,
    },
    #[error("publishing to {subject} was refused by the server: {detail}")]
    Refused { subject: String, detail: String },
    #[error("shutting down before {subject} was published")]
    Cancelled { subject: String },
}

/// Publishes envelopes as one producer.
#[derive(Clone)]
pub struct Publisher {
    js: jetstream::Context,
    producer: Producer,
    /// How long to keep retrying one publish through an outage before giving up.
    patience: Duration,
    shutdown: CancellationToken,
}

/// What the stream said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Published {
    pub stream_sequence: u64,
    /// The stream already held a message with this `Nats-Msg-Id`; nothing new was stored.
    pub duplicate: bool,
}

impl Publisher {
    pub fn new(js: jetstream::Context, producer: Producer, shutdown: CancellationToken) -> Self {
        Self {
            js,
            producer,
            patience: Duration::from_secs(600),
            shutdown,
        }
    }

    pub fn with_patience(mut self, patience: Duration) -> Self {
        self.patience = patience;
        self
    }

    pub fn producer(&self) -> Producer {
        self.producer
    }

    pub fn jetstream(&self) -> &jetstream::Context {
        &self.js
    }

    /// Wraps `event` in an envelope from this producer and publishes it.
    pub async fn emit(&self, request_id: &RequestId, event: Event) -> Result<Published, PublishError> {
        self.publish(&Envelope::new(request_id.clone(), self.producer, event))
            .await
    }

    pub async fn publish(&self, envelope: &Envelope) -> Result<Published, PublishError> {
        let payload = bytes::Bytes::from(envelope.encode()?);
        let subject = envelope.subject();
        let dedup_id = envelope.dedup_id();
        self.publish_raw(subject, payload, &dedup_id).await
    }

    /// Publishes already-encoded bytes (the auditor and tests use this for messages that are
    /// not envelopes, or deliberately bad ones).
    pub async fn publish_raw(
        &self,
        subject: String,
        payload: bytes::Bytes,
        dedup_id: &str,
    ) -> Result<Published, PublishError> {
        let started = tokio::time::Instant::now();
        let mut backoff = Duration::from_millis(50);
        loop {
            let mut headers = async_nats::HeaderMap::new();
            airlock_telemetry::inject_current(&mut headers);
            let message = jetstream::message::PublishMessage::build()
                .payload(payload.clone())
                .headers(headers)
                .message_id(dedup_id);
            let attempt = async {
                let ack = self.js.send_publish(subject.clone(), message).await?;
                ack.await
            };
            let error = match attempt.await {
                Ok(ack) => {
                    return Ok(Published {
                        stream_sequence: ack.sequence,
                        duplicate: ack.duplicate,
                    });
                }
                Err(e) => e,
            };
            use async_nats::jetstream::context::PublishErrorKind as Kind;
            if matches!(
                error.kind(),
                Kind::MaxPayloadExceeded | Kind::WrongLastMessageId | Kind::WrongLastSequence
            ) {
                return Err(PublishError::Refused {
                    subject,
                    detail: error.to_string(),
                });
            }
            if started.elapsed() >= self.patience {
                return Err(PublishError::GaveUp {
                    subject,
                    waited: started.elapsed(),
                    detail: error.to_string(),
                });
            }
            tracing::warn!(%subject, error = %error, retry_in = ?backoff, "publish failed; retrying");
            tokio::select! {
                _ = self.shutdown.cancelled() => return Err(PublishError::Cancelled { subject }),
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(Duration::from_secs(2));
        }
    }
}
