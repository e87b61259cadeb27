//! Taking the events stream in order: the auditor's own consumer (every subject, acked as a
//! whole batch), messages that arrive ahead of a missing one, and gaps — messages that left the
//! stream or were never delivered — recorded as entries so the log says what it is missing.

use crate::error::Error;
use crate::service::Auditor;
use airlock_auditlog::entry::Prepared;
use airlock_bus::{Backoff, retry_judged};
use airlock_protocol::Envelope;
use airlock_protocol::subjects::{EVENTS_STREAM, submit_client};
use async_nats::jetstream::{self, consumer::pull};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

type Source = Box<dyn std::error::Error + Send + Sync>;

impl Auditor {
    pub(crate) async fn open_messages(&self, shutdown: &CancellationToken) -> Result<pull::Stream, Error> {
        retry_judged(
            shutdown,
            Backoff::OUTAGE,
            "consuming the events stream",
            |_: &NotReady| false,
            || async { self.try_open_messages().await.map_err(NotReady) },
        )
        .await
        .map_err(|_| Error::Cancelled {
            what: "waiting for the events stream",
        })
    }

    async fn try_open_messages(&self) -> Result<pull::Stream, Source> {
        let stream = self.js.get_stream(EVENTS_STREAM).await?;
        let durable = airlock_protocol::roles::AUDITOR.consumes.durable;
        let config = pull::Config {
            durable_name: Some(durable.to_owned()),
            description: Some("the auditor: every event, in order".to_owned()),
            ack_policy: jetstream::consumer::AckPolicy::All,
            ack_wait: self.config.ack_wait,
            max_ack_pending: (self.config.max_batch as i64 * 4).max(20_000),
            deliver_policy: if self.committed_seq == 0 {
                jetstream::consumer::DeliverPolicy::All
            } else {
                jetstream::consumer::DeliverPolicy::ByStartSequence {
                    start_sequence: self.committed_seq + 1,
                }
            },
            ..Default::default()
        };
        let consumer: jetstream::consumer::Consumer<pull::Config> =
            stream.get_or_create_consumer(durable, config).await?;
        Ok(consumer
            .stream()
            .max_messages_per_batch(self.config.max_batch.clamp(1, 1000))
            .expires(Duration::from_secs(5))
            .heartbeat(Duration::from_secs(2))
            .messages()
            .await?)
    }

    /// Messages that left the stream (age or size limit) before the auditor read them are
    /// recorded as a gap, so the log says what it is missing.
    pub(crate) async fn record_expired_messages(&mut self) -> Result<(), Error> {
        let mut stream = self
            .js
            .get_stream(EVENTS_STREAM)
            .await
            .map_err(|e| Error::nats("reading the events stream", e))?;
        let info = stream
            .info()
            .await
            .map_err(|e| Error::nats("reading the events stream", e))?;
        let first = info.state.first_sequence;
        if first > self.next_seq && info.state.last_sequence >= self.next_seq {
            tracing::warn!(
                from = self.next_seq,
                to = first - 1,
                "events left the stream before they were logged"
            );
            self.push_gap(first - 1, "expired from the events stream before it was logged");
            self.next_seq = first;
        }
        Ok(())
    }

    pub(crate) fn accept(&mut self, message: jetstream::Message) {
        let Ok(info) = message.info() else {
            tracing::warn!(subject = %message.subject, "a message without stream information; ignored");
            return;
        };
        let seq = info.stream_sequence;
        if seq < self.next_seq {
            // Redelivered: already logged (or pending in this batch, whose ack covers it).
            self.counters.incr("redelivered");
            if seq <= self.committed_seq {
                tokio::spawn(async move {
                    let _ = message.ack().await;
                });
            }
            return;
        }
        if seq > self.next_seq {
            self.waiting.insert(seq, message);
            self.gap_since.get_or_insert_with(Instant::now);
            return;
        }
        self.append_message(message, seq);
        self.append_waiting();
        if self.waiting.is_empty() {
            self.gap_since = None;
        }
    }

    fn append_waiting(&mut self) {
        while let Some(next) = self.waiting.remove(&self.next_seq) {
            let seq = self.next_seq;
            self.append_message(next, seq);
        }
    }

    fn append_message(&mut self, message: jetstream::Message, seq: u64) {
        let subject = message.subject.as_str().to_owned();
        let traceparent = message
            .headers
            .as_ref()
            .and_then(|h| h.get("traceparent"))
            .map(|v| airlock_protocol::text::clip(v.as_str(), 128));
        let stored_ms = message
            .info()
            .ok()
            .map(|info| i64::try_from(info.published.unix_timestamp_nanos() / 1_000_000).unwrap_or(0));
        let span = tracing::info_span!(
            "audit.append",
            otel.name = "audit append",
            subject = %subject,
            stream_seq = seq,
            request_id = tracing::field::Empty,
        );
        airlock_telemetry::set_parent_from(&span, message.headers.as_ref());
        let _entered = span.enter();
        let prepared = match Envelope::decode_on(&subject, &message.payload) {
            Ok(envelope) => {
                span.record("request_id", envelope.request_id.as_str());
                self.metrics.taken(Some(&envelope), stored_ms);
                let client = envelope.request_id.client().map(str::to_owned);
                let event = envelope.event.clone();
                let mut prepared = Prepared::from_envelope(envelope, Some(seq), traceparent);
                // Who submitted is the NATS user the subject names (the server vouches for
                // it), not what the body says.
                if let Some(client) = submit_client(&subject) {
                    prepared.entry.producer = Some(client.to_owned());
                }
                self.retention.apply(
                    &mut prepared,
                    Some(&event),
                    client.as_deref(),
                    std::time::Instant::now(),
                );
                if !prepared.entry.withheld.is_empty() {
                    self.counters.incr("content_withheld");
                }
                prepared
            }
            Err(error) => {
                tracing::warn!(error = %airlock_bus::error_text(&error), "logging a message that cannot be read");
                self.counters.incr("malformed");
                self.metrics.taken(None, stored_ms);
                let mut prepared = Prepared::malformed(&subject, &error, &message.payload, Some(seq));
                let client = submit_client(&subject).map(str::to_owned);
                self.retention
                    .apply(&mut prepared, None, client.as_deref(), std::time::Instant::now());
                prepared
            }
        };
        self.pending.push(prepared);
        self.pending_last = Some(message);
        self.pending_since.get_or_insert_with(Instant::now);
        self.next_seq = seq + 1;
    }

    /// After `gap_timeout` of waiting for missing sequence numbers, records them as a gap.
    pub(crate) fn resolve_gap(&mut self) {
        let (Some(since), Some((&first_waiting, _))) = (self.gap_since, self.waiting.first_key_value()) else {
            return;
        };
        if since.elapsed() < self.config.gap_timeout {
            return;
        }
        tracing::warn!(
            from = self.next_seq,
            to = first_waiting - 1,
            "stream messages never delivered; logging a gap"
        );
        self.push_gap(
            first_waiting - 1,
            "never delivered to the auditor (deleted from the events stream?)",
        );
        self.next_seq = first_waiting;
        self.append_waiting();
        self.gap_since = (!self.waiting.is_empty()).then(Instant::now);
    }

    fn push_gap(&mut self, last: u64, reason: &str) {
        self.pending.push(Prepared::gap(self.next_seq, last, reason));
        self.pending_since.get_or_insert_with(Instant::now);
        self.counters.incr("gaps");
    }
}

/// The events stream or the auditor's consumer is not there yet.
#[derive(Debug, thiserror::Error)]
#[error("the events stream is not ready")]
struct NotReady(#[source] Source);
