//! Publishing envelopes to JetStream, each event stored once.
//!
//! Two mechanisms keep the events stream free of doubles:
//! - every publish carries `Nats-Msg-Id` = the envelope's own random id, so a retry of the same
//!   message after a lost ack is dropped by the stream; being random, no client can guess and
//!   pre-claim the id of an event yet to come (de-duplication ids are Airlock's alone);
//! - events that happen once per request (`EventKind::once_per_request`) are published
//!   expecting no earlier message on their subject, so the stream itself refuses a second
//!   terminal, decision or assessment — whoever sends it, after any crash, for as long as the
//!   stream keeps the first. The one exception is the start of an interrupted run's second
//!   attempt (`ExecStarted::attempt` > 1), kept single by the executors' claim on the attempt.
//!
//! Errors are judged, not matched as text: a message too large or refused by the stream fails at
//! once ([`PublishError::is_permanent`]); outages are retried.

use crate::retry::{Backoff, RetryError, Transience, retry};
use airlock_protocol::{Approver, Decision, Envelope, Event, EventKind, Producer, RequestId, WireError};
use async_nats::jetstream::context::PublishErrorKind;
use async_nats::jetstream::{self, ErrorCode};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    #[error("encoding the message")]
    Encode(#[from] WireError),
    /// Larger than the server or the stream accepts: the same message never will be.
    #[error("{subject}: the message is too large for the stream")]
    TooLarge {
        subject: String,
        #[source]
        source: async_nats::jetstream::context::PublishError,
    },
    /// The stream refused it for a reason waiting cannot change.
    #[error("{subject}: refused by the server")]
    Refused {
        subject: String,
        #[source]
        source: async_nats::jetstream::context::PublishError,
    },
    /// Still failing (an outage) when patience ran out.
    #[error("{subject}: the server did not take it for {waited:?}")]
    Unavailable {
        subject: String,
        waited: Duration,
        #[source]
        source: async_nats::jetstream::context::PublishError,
    },
    #[error("{subject}: shutting down before it was published")]
    Cancelled { subject: String },
}

impl Transience for PublishError {
    fn is_permanent(&self) -> bool {
        matches!(
            self,
            PublishError::Encode(_) | PublishError::TooLarge { .. } | PublishError::Refused { .. }
        )
    }
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
    /// Where the message is stored; `None` when the stream already held this event.
    pub stream_sequence: Option<u64>,
    /// The stream already held this message (same `Nats-Msg-Id`) or, for a once-per-request
    /// event, an event of the same kind for the same request: nothing new was stored.
    pub duplicate: bool,
}

/// How one attempt went, judged.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Attempt(async_nats::jetstream::context::PublishError);

impl Transience for Attempt {
    fn is_permanent(&self) -> bool {
        !matches!(judge(&self.0), Judgement::Transient)
    }
}

enum Judgement {
    /// An earlier message already holds the subject (expected-last-subject-sequence).
    AlreadyThere,
    TooLarge,
    Refused,
    Transient,
}

/// Server error codes that an outage, a busy cluster or a leader moving (a node lost or cut
/// off) produces, and that pass.
const TRANSIENT_CODES: [ErrorCode; 16] = [
    // "duplicate message id is in process": an earlier try of this very message (same id) is
    // still being replicated, as in a partition that heals. Refused for good, a submission
    // that the stream then stored anyway was reported to its client as failed; tried again,
    // it ends as stored once (a duplicate) or stored now.
    ErrorCode::STREAM_DUPLICATE_MESSAGE_CONFLICT,
    ErrorCode::CLUSTER_NOT_AVAILABLE,
    ErrorCode::CLUSTER_INCOMPLETE,
    ErrorCode::CLUSTER_NO_PEERS,
    ErrorCode::CLUSTER_NOT_ACTIVE,
    ErrorCode::CLUSTER_NOT_ASSIGNED,
    ErrorCode::CLUSTER_NOT_LEADER,
    ErrorCode::CLUSTER_PEER_NOT_MEMBER,
    ErrorCode::CLUSTER_SERVER_NOT_MEMBER,
    ErrorCode::MEMORY_RESOURCES_EXCEEDED,
    ErrorCode::INSUFFICIENT_RESOURCES,
    ErrorCode::STORAGE_RESOURCES_EXCEEDED,
    ErrorCode::ACCOUNT_RESOURCES_EXCEEDED,
    ErrorCode::STREAM_STORE_FAILED,
    ErrorCode::TEMP_STORAGE_FAILED,
    ErrorCode::RAFT_GENERAL,
];

fn judge(error: &async_nats::jetstream::context::PublishError) -> Judgement {
    match error.kind() {
        PublishErrorKind::WrongLastSequence => Judgement::AlreadyThere,
        PublishErrorKind::MaxPayloadExceeded => Judgement::TooLarge,
        PublishErrorKind::WrongLastMessageId => Judgement::Refused,
        PublishErrorKind::StreamNotFound
        | PublishErrorKind::TimedOut
        | PublishErrorKind::BrokenPipe
        | PublishErrorKind::MaxAckPending => Judgement::Transient,
        PublishErrorKind::Other => {
            let code = std::error::Error::source(error)
                .and_then(|s| s.downcast_ref::<async_nats::jetstream::Error>())
                .map(|e| e.error_code());
            match code {
                Some(ErrorCode::STREAM_MESSAGE_EXCEEDS_MAXIMUM) => Judgement::TooLarge,
                Some(ErrorCode::STREAM_WRONG_LAST_SEQUENCE | ErrorCode::STREAM_WRONG_LAST_SEQUENCE_CONSTANT) => {
                    Judgement::AlreadyThere
                }
                Some(code) if TRANSIENT_CODES.contains(&code) => Judgement::Transient,
                Some(_) => Judgement::Refused,
                // No server answer to read (a reply that did not parse): try again.
                None => Judgement::Transient,
            }
        }
    }
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
    /// Tells the request's client where its request is. Progress decides nothing, so failing to
    /// publish it is logged, never an error of the step that made it.
    pub async fn progress(&self, request_id: &RequestId, progress: airlock_protocol::Progress) {
        if let Err(e) = self.emit(request_id, Event::Progress(progress)).await {
            tracing::debug!(request_id = %request_id, error = %crate::error_text(&e), "could not publish progress");
        }
    }

    pub async fn emit(&self, request_id: &RequestId, event: Event) -> Result<Published, PublishError> {
        self.publish(&Envelope::new(request_id.clone(), self.producer, event))
            .await
    }

    pub async fn publish(&self, envelope: &Envelope) -> Result<Published, PublishError> {
        let payload = bytes::Bytes::from(envelope.encode()?);
        let kind = envelope.kind();
        let expect_first = envelope.expects_first_on_its_subject();
        let send = self.send(envelope.subject(), payload, envelope.dedup_id(), expect_first);
        let published = match publish_span(kind, envelope.request_id.as_str()) {
            Some(span) => send.instrument(span).await?,
            None => send.await?,
        };
        if !published.duplicate {
            count(&envelope.event);
        }
        Ok(published)
    }

    /// Publishes a client's encoded submission on its own subject
    /// (`airlock.submit.<client>.<request id>`), once per request id.
    pub async fn submit(
        &self,
        subject: String,
        payload: bytes::Bytes,
        dedup_id: &str,
    ) -> Result<Published, PublishError> {
        let span = tracing::info_span!(
            "publish",
            otel.name = "publish submitted",
            otel.kind = "producer",
            messaging.system = "nats",
            messaging.destination.name = %subject,
        );
        self.send(subject, payload, dedup_id, true).instrument(span).await
    }

    /// Publishes already-encoded bytes (tests use this for deliberately bad messages).
    pub async fn publish_raw(
        &self,
        subject: String,
        payload: bytes::Bytes,
        dedup_id: &str,
    ) -> Result<Published, PublishError> {
        self.send(subject, payload, dedup_id, false).await
    }

    async fn send(
        &self,
        subject: String,
        payload: bytes::Bytes,
        dedup_id: &str,
        expect_first: bool,
    ) -> Result<Published, PublishError> {
        let backoff = Backoff {
            first: Duration::from_millis(50),
            ..Backoff::OUTAGE
        }
        .with_patience(self.patience);
        let attempt = || async {
            let mut headers = async_nats::HeaderMap::new();
            airlock_telemetry::inject_current(&mut headers);
            let mut message = jetstream::message::PublishMessage::build()
                .payload(payload.clone())
                .headers(headers)
                .message_id(dedup_id);
            if expect_first {
                message = message.expected_last_subject_sequence(0);
            }
            let ack = self.js.send_publish(subject.clone(), message).await.map_err(Attempt)?;
            ack.await.map_err(Attempt)
        };
        match retry(&self.shutdown, backoff, "publishing an event", attempt).await {
            Ok(ack) => Ok(Published {
                stream_sequence: Some(ack.sequence),
                duplicate: ack.duplicate,
            }),
            Err(RetryError::Cancelled { .. }) => Err(PublishError::Cancelled { subject }),
            Err(RetryError::GaveUp { waited, error, .. }) => Err(PublishError::Unavailable {
                subject,
                waited,
                source: error.0,
            }),
            Err(RetryError::Permanent { error, .. }) => match judge(&error.0) {
                Judgement::AlreadyThere => Ok(Published {
                    stream_sequence: None,
                    duplicate: true,
                }),
                Judgement::TooLarge => Err(PublishError::TooLarge {
                    subject,
                    source: error.0,
                }),
                Judgement::Refused | Judgement::Transient => Err(PublishError::Refused {
                    subject,
                    source: error.0,
                }),
            },
        }
    }
}

/// A span for publishing an event that marks a step of its request (not for output chunks and
/// usage samples, of which a run has many): the next service's handling of it is its child, so
/// a request's trace reads as its chain of events.
fn publish_span(kind: EventKind, request_id: &str) -> Option<tracing::Span> {
    if matches!(
        kind,
        EventKind::Output
            | EventKind::Usage
            | EventKind::Activity
            | EventKind::Observed
            | EventKind::Egress
            | EventKind::Progress
    ) {
        return None;
    }
    Some(tracing::info_span!(
        "publish",
        otel.name = %format!("publish {kind}"),
        otel.kind = "producer",
        messaging.system = "nats",
        kind = kind.as_str(),
        request_id,
    ))
}

/// Counts what a published event says about its request: every event a service publishes
/// passes here once, so verdicts, decisions, outcomes, violations and refusals are counted in
/// one place rather than in each service.
fn count(event: &Event) {
    use airlock_telemetry::metrics;
    metrics::published(event.kind().as_str());
    match event {
        Event::Assessed(assessed) => metrics::assessed(assessed.assessment.level.as_str()),
        Event::Decided(decided) => {
            if let Some(decision) = decided.signed.peek::<Decision>() {
                let outcome = if decision.is_approved() { "approved" } else { "denied" };
                let approver = match decision.approver {
                    Approver::Policy { .. } => "policy",
                    Approver::Human { .. } => "human",
                    Approver::Deadline => "deadline",
                    Approver::Remembered { .. } => "remembered",
                };
                metrics::decided(outcome, approver);
            }
        }
        Event::Terminal(terminal) => metrics::ended(
            terminal.outcome.as_str(),
            terminal.violation.as_ref().map(|v| v.kind.as_str()),
        ),
        Event::Refused(refusal) => metrics::refused(refusal.reason.as_str()),
        _ => {}
    }
}
