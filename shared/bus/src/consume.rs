//! Consuming a stream through a durable pull consumer, one delivery at a time.
//!
//! A delivery is acknowledged only after the work it asked for is done and its results are
//! published, so a service killed mid-way gets the message again when it restarts and can find,
//! from its own durable state, how far it had got.

use crate::BusError;
use airlock_protocol::{Envelope, WireError};
use async_nats::jetstream::{self, consumer::pull};
use futures::StreamExt as _;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

#[derive(Clone, Debug)]
pub struct ConsumerSpec {
    pub stream: String,
    /// Durable consumer name; one per service role.
    pub durable: String,
    pub filter_subjects: Vec<String>,
    /// How long the server waits for an ack before redelivering.
    pub ack_wait: Duration,
    /// Deliveries handed out at once without an ack.
    pub max_ack_pending: i64,
}

impl ConsumerSpec {
    fn config(&self) -> pull::Config {
        pull::Config {
            durable_name: Some(self.durable.clone()),
            filter_subjects: self.filter_subjects.clone(),
            ack_policy: jetstream::consumer::AckPolicy::Explicit,
            ack_wait: self.ack_wait,
            max_ack_pending: self.max_ack_pending,
            deliver_policy: jetstream::consumer::DeliverPolicy::All,
            ..Default::default()
        }
    }
}

/// One message from the stream.
pub struct Delivery {
    message: jetstream::Message,
}

impl Delivery {
    pub fn subject(&self) -> &str {
        self.message.subject.as_str()
    }

    pub fn payload(&self) -> &[u8] {
        &self.message.payload
    }

    pub fn headers(&self) -> Option<&async_nats::HeaderMap> {
        self.message.headers.as_ref()
    }

    /// Stream sequence number and how many times this message has been delivered.
    pub fn position(&self) -> (u64, i64) {
        self.message
            .info()
            .map(|i| (i.stream_sequence, i.delivered))
            .unwrap_or((0, 1))
    }

    /// Reads the envelope, checking it against the subject it came on.
    pub fn envelope(&self) -> Result<Envelope, WireError> {
        Envelope::decode_on(self.subject(), self.payload())
    }

    /// A span for handling this delivery, joined to the trace that produced it.
    pub fn span(&self, service: &'static str) -> tracing::Span {
        let (stream_seq, delivered) = self.position();
        let span = tracing::info_span!(
            "handle",
            service,
            subject = %self.subject(),
            stream_seq,
            delivered,
            request_id = tracing::field::Empty,
        );
        airlock_telemetry::set_parent_from(&span, self.headers());
        span
    }

    /// Acknowledges and waits for the server to confirm, retrying through short outages: a lost
    /// ack only means a redelivery, which every handler tolerates.
    pub async fn ack(&self) {
        for attempt in 0..5u32 {
            match self.message.double_ack().await {
                Ok(()) => return,
                Err(e) => {
                    tracing::warn!(error = %e, attempt, "ack not confirmed; retrying");
                    tokio::time::sleep(Duration::from_millis(100 << attempt)).await;
                }
            }
        }
    }

    /// Tells the server the work is still going, resetting the redelivery timer.
    pub async fn in_progress(&self) {
        if let Err(e) = self.message.ack_with(jetstream::AckKind::Progress).await {
            tracing::debug!(error = %e, "progress ack failed");
        }
    }

    /// Asks for redelivery after `delay`.
    pub async fn retry_after(&self, delay: Duration) {
        if let Err(e) = self.message.ack_with(jetstream::AckKind::Nak(Some(delay))).await {
            tracing::debug!(error = %e, "nak failed");
        }
    }

    /// Ends a delivery by how its handling went: acked when done; left for redelivery when the
    /// service is stopping (another instance, or this one restarted, takes it up); otherwise
    /// redelivered after a short pause. Returns false when the consuming loop should stop.
    pub async fn settle<E: std::fmt::Display>(&self, outcome: Result<(), E>, shutdown: &CancellationToken) -> bool {
        match outcome {
            Ok(()) => {
                self.ack().await;
                true
            }
            Err(e) if shutdown.is_cancelled() => {
                tracing::info!(error = %e, "stopped mid-message; it will be redelivered");
                false
            }
            Err(e) => {
                tracing::error!(error = %e, "handling failed; asking for redelivery");
                self.retry_after(Duration::from_secs(2)).await;
                true
            }
        }
    }
}

/// Deliveries of a durable consumer, surviving disconnects and server restarts.
pub struct DeliveryStream {
    js: jetstream::Context,
    spec: ConsumerSpec,
    messages: Option<pull::Stream>,
    shutdown: CancellationToken,
}

impl DeliveryStream {
    /// Binds to (or creates) the durable consumer. Waits while the stream does not exist yet or
    /// the server is unreachable, until `shutdown`.
    pub async fn open(
        js: jetstream::Context,
        spec: ConsumerSpec,
        shutdown: CancellationToken,
    ) -> Result<Self, BusError> {
        let mut stream = Self {
            js,
            spec,
            messages: None,
            shutdown,
        };
        stream.reopen().await?;
        Ok(stream)
    }

    async fn reopen(&mut self) -> Result<(), BusError> {
        let mut backoff = Duration::from_millis(100);
        loop {
            match self.try_open().await {
                Ok(messages) => {
                    self.messages = Some(messages);
                    return Ok(());
                }
                Err(detail) => {
                    tracing::warn!(consumer = %self.spec.durable, %detail, retry_in = ?backoff, "consumer not ready");
                }
            }
            tokio::select! {
                _ = self.shutdown.cancelled() => {
                    return Err(BusError::Consumer { consumer: self.spec.durable.clone(), detail: "shut down".into() });
                }
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(Duration::from_secs(2));
        }
    }

    async fn try_open(&self) -> Result<pull::Stream, String> {
        let stream = self.js.get_stream(&self.spec.stream).await.map_err(|e| e.to_string())?;
        let consumer: jetstream::consumer::Consumer<pull::Config> = match stream.get_consumer(&self.spec.durable).await
        {
            Ok(c) => c,
            Err(_) => stream
                .create_consumer(self.spec.config())
                .await
                .map_err(|e| e.to_string())?,
        };
        consumer
            .stream()
            .max_messages_per_batch(self.spec.max_ack_pending.clamp(1, 256) as usize)
            .heartbeat(Duration::from_secs(5))
            .expires(Duration::from_secs(30))
            .messages()
            .await
            .map_err(|e| e.to_string())
    }

    /// The next delivery, or `None` once shut down.
    pub async fn next(&mut self) -> Option<Delivery> {
        loop {
            let Some(messages) = self.messages.as_mut() else {
                self.reopen().await.ok()?;
                continue;
            };
            let item = tokio::select! {
                _ = self.shutdown.cancelled() => return None,
                item = messages.next() => item,
            };
            match item {
                Some(Ok(message)) => return Some(Delivery { message }),
                Some(Err(e)) => {
                    tracing::warn!(consumer = %self.spec.durable, error = %e, "consumer stream error; reopening");
                    self.messages = None;
                }
                None => self.messages = None,
            }
        }
    }
}
