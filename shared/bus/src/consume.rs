//! Consuming the events stream through a durable pull consumer, one delivery at a time.
//!
//! A delivery is acknowledged only after the work it asked for is done and its results are
//! published, so a service killed mid-way gets the message again when it restarts and can find,
//! from its own durable state, how far it had got.
//!
//! No message can wedge a consumer: a failure judged permanent, or one that repeats
//! [`MAX_ATTEMPTS`] times, sets the message aside in the dead-letter stream with the reason,
//! refuses it, and (for services that may) ends its request with one terminal event. Every
//! refusal goes through [`Delivery::refuse`].

use crate::BusError;
use crate::publish::{PublishError, Publisher};
use crate::retry::{Backoff, Transience, pause};
use airlock_protocol::roles::{Role, ServiceRole};
use airlock_protocol::subjects::{EVENTS_STREAM, dead_letter_subject};
use airlock_protocol::{Envelope, Event, EventKind, Refusal, RefusalReason, RequestId, Terminal, WireError};
use async_nats::jetstream::{self, consumer::pull};
use futures::StreamExt as _;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Deliveries of one message a service attempts before setting it aside.
pub const MAX_ATTEMPTS: i64 = 5;

/// A failure to handle a delivery, as the consuming loop must judge it.
pub trait Failure: Transience + std::error::Error + Send + Sync + 'static {
    /// The refusal a request gets when its message is set aside because of this failure.
    fn refusal_reason(&self) -> RefusalReason {
        RefusalReason::DeadLettered
    }
}

impl Failure for crate::ClaimError {}

impl Failure for PublishError {
    fn refusal_reason(&self) -> RefusalReason {
        match self {
            PublishError::TooLarge { .. } => RefusalReason::Oversized,
            _ => RefusalReason::DeadLettered,
        }
    }
}

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
    /// Deliveries after which the server gives up on a message (-1: never). The service sets a
    /// failing message aside at [`MAX_ATTEMPTS`]; this is the backstop in case setting it aside
    /// keeps failing.
    pub max_deliver: i64,
    /// Most messages one subscriber asks for at once (its share of `max_ack_pending`).
    pub batch: usize,
    /// Whether an existing consumer is brought to this configuration when it differs (its
    /// bounds changed with a release).
    pub update_existing: bool,
}

impl ConsumerSpec {
    /// The consumer the roles table gives a service, on the events stream.
    pub fn for_role(service: &ServiceRole, ack_wait: Duration, max_ack_pending: i64) -> Self {
        let kinds = service.consumes.kinds;
        let filter_subjects = if kinds.is_empty() {
            Vec::new()
        } else {
            kinds.iter().map(|k| k.subject_filter()).collect()
        };
        Self {
            stream: EVENTS_STREAM.to_owned(),
            durable: service.consumes.durable.to_owned(),
            filter_subjects,
            ack_wait,
            max_ack_pending,
            max_deliver: MAX_ATTEMPTS + 3,
            batch: max_ack_pending.clamp(1, 256) as usize,
            update_existing: false,
        }
    }

    /// Each subscriber asks for at most `batch` messages at once, and an existing consumer
    /// whose bounds differ is updated to these.
    pub fn shared_by_subscribers(self, batch: usize) -> Self {
        Self {
            batch: batch.max(1),
            update_existing: true,
            ..self
        }
    }

    /// For consumers whose messages are put back on purpose while work goes on elsewhere.
    pub fn unbounded_redelivery(self) -> Self {
        Self {
            max_deliver: -1,
            ..self
        }
    }

    fn config(&self) -> pull::Config {
        pull::Config {
            durable_name: Some(self.durable.clone()),
            filter_subjects: self.filter_subjects.clone(),
            ack_policy: jetstream::consumer::AckPolicy::Explicit,
            ack_wait: self.ack_wait,
            max_ack_pending: self.max_ack_pending,
            deliver_policy: jetstream::consumer::DeliverPolicy::All,
            max_deliver: self.max_deliver,
            ..Default::default()
        }
    }
}

/// How a service ends what it cannot handle: its identity and whether it may end requests.
#[derive(Clone)]
pub struct Refuser {
    publisher: Publisher,
    /// The service's NATS user (its dead letters go under `airlock.dead.<user>.`).
    user: &'static str,
    /// Whether the service may publish terminal events (the auditor may not).
    may_end_requests: bool,
}

impl Refuser {
    pub fn new(publisher: Publisher, role: &Role) -> Self {
        Self {
            publisher,
            user: role.user,
            may_end_requests: role.publishes.contains(&EventKind::Terminal),
        }
    }

    pub fn publisher(&self) -> &Publisher {
        &self.publisher
    }
}

/// Whether a refusal also ends the request the message named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// The request can never progress: end it with a failed terminal event.
    EndRequest,
    /// Refuse only this message; the request goes on (a forged decision must not end the real
    /// request, nor a duplicate submission the first one).
    MessageOnly,
}

/// One message from the stream. A clone is the same delivery (for work that settles it in a
/// task of its own).
#[derive(Clone)]
pub struct Delivery {
    message: jetstream::Message,
    /// The durable consumer it came through, for metrics.
    consumer: std::sync::Arc<str>,
    /// When it was handed to the service: its handling is timed from here.
    received: std::time::Instant,
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

    /// The request the subject names, if it names a valid one; refusals of anything else are
    /// filed under [`RequestId::unknown`].
    pub fn request_id(&self) -> Option<RequestId> {
        EventKind::parse_subject(self.subject()).and_then(|(_, rid)| RequestId::parse_client(rid).ok())
    }

    /// A span for handling this delivery, joined to the trace that produced it.
    pub fn span(&self, service: &'static str) -> tracing::Span {
        let (stream_seq, delivered) = self.position();
        let kind = EventKind::parse_subject(self.subject()).map_or("message", |(kind, _)| kind.as_str());
        let span = tracing::info_span!(
            "handle",
            otel.name = %format!("handle {kind}"),
            otel.kind = "consumer",
            messaging.system = "nats",
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
        ack(&self.message).await;
    }

    /// Tells the server the work is still going, resetting the redelivery timer.
    pub async fn in_progress(&self) {
        if let Err(e) = self.message.ack_with(jetstream::AckKind::Progress).await {
            tracing::debug!(error = %e, "progress ack failed");
        }
    }

    /// Runs `work`, telling the server every `every` that the delivery is still being handled,
    /// so that work waiting on something slow is not redelivered meanwhile.
    pub async fn keep_alive<T>(&self, every: Duration, work: impl std::future::Future<Output = T>) -> T {
        tokio::pin!(work);
        let mut progress = tokio::time::interval(every);
        progress.tick().await;
        loop {
            tokio::select! {
                done = &mut work => return done,
                _ = progress.tick() => self.in_progress().await,
            }
        }
    }

    /// Asks for redelivery after `delay`.
    pub async fn retry_after(&self, delay: Duration) {
        if let Err(e) = self.message.ack_with(jetstream::AckKind::Nak(Some(delay))).await {
            tracing::debug!(error = %e, "nak failed");
        }
    }

    /// Refuses this message: publishes a typed, audited refusal and, with
    /// [`Ending::EndRequest`] (and a service that may), ends its request as failed. The one
    /// refusal path of every service.
    pub async fn refuse(
        &self,
        refuser: &Refuser,
        reason: RefusalReason,
        detail: &str,
        ending: Ending,
    ) -> Result<(), PublishError> {
        tracing::warn!(%reason, detail, subject = self.subject(), "refused a message");
        let refusal = Refusal::of_message(reason, detail, self.subject(), self.payload());
        let rid = self.request_id();
        let filed_under = rid.clone().unwrap_or_else(RequestId::unknown);
        refuser
            .publisher
            .publish(&Envelope::new(
                filed_under,
                refuser.publisher.producer(),
                Event::Refused(refusal),
            ))
            .await?;
        if let (Ending::EndRequest, true, Some(rid)) = (ending, refuser.may_end_requests, rid) {
            let terminal = Terminal::refused(reason, &airlock_protocol::text::clip(detail, 512));
            refuser
                .publisher
                .emit(&rid, Event::Terminal(Box::new(terminal)))
                .await?;
        }
        Ok(())
    }

    /// Ends a delivery by how its handling went: acked when done; left for redelivery when the
    /// service is stopping; set aside (dead letter, refusal, terminal) when the failure is
    /// permanent or has repeated [`MAX_ATTEMPTS`] times; otherwise redelivered after a backoff.
    /// Returns false when the consuming loop should stop.
    pub async fn settle<E: Failure>(
        &self,
        outcome: Result<(), E>,
        refuser: &Refuser,
        shutdown: &CancellationToken,
    ) -> bool {
        let error = match outcome {
            Ok(()) => {
                self.ack().await;
                self.measure("acked");
                return true;
            }
            Err(error) => error,
        };
        let text = crate::error_text(&error);
        if shutdown.is_cancelled() {
            tracing::info!(error = %text, "stopped mid-message; it will be redelivered");
            self.measure("interrupted");
            return false;
        }
        let (_, delivered) = self.position();
        if error.is_permanent() || delivered >= MAX_ATTEMPTS {
            self.measure("dead_lettered");
            tracing::error!(error = %text, delivered, permanent = error.is_permanent(), "setting the message aside");
            match self.dead_letter(refuser, error.refusal_reason(), &text).await {
                Ok(()) => self.ack().await,
                Err(e) => {
                    tracing::error!(error = %crate::error_text(&e), "could not set the message aside; it will be redelivered");
                    self.retry_after(Backoff::OUTAGE.delay(delivered as u32)).await;
                }
            }
            return true;
        }
        let delay = Backoff {
            first: Duration::from_millis(500),
            max: Duration::from_secs(30),
            patience: None,
        }
        .delay(delivered.max(1) as u32);
        tracing::error!(error = %text, delivered, retry_in = ?delay, "handling failed; asking for redelivery");
        self.measure("retried");
        self.retry_after(delay).await;
        true
    }

    /// Counts and times this delivery's handling as `result`.
    fn measure(&self, result: &'static str) {
        airlock_telemetry::metrics::delivery(&self.consumer, result, self.received.elapsed());
    }

    /// Copies the message to the dead-letter stream with why, then refuses it and ends its
    /// request.
    async fn dead_letter(&self, refuser: &Refuser, reason: RefusalReason, why: &str) -> Result<(), PublishError> {
        let rid = self.request_id().unwrap_or_else(RequestId::unknown);
        let (stream_seq, delivered) = self.position();
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Airlock-Dead-Reason", airlock_protocol::text::clip(why, 512).as_str());
        headers.insert("Airlock-Dead-Subject", self.subject());
        headers.insert("Airlock-Dead-Stream-Seq", stream_seq.to_string().as_str());
        headers.insert("Airlock-Dead-Delivered", delivered.to_string().as_str());
        let message = jetstream::message::PublishMessage::build()
            .payload(self.message.payload.clone())
            .headers(headers)
            .message_id(format!("{}.{stream_seq}", refuser.user));
        let subject = dead_letter_subject(refuser.user, rid.as_str());
        let publish = async {
            let ack = refuser
                .publisher
                .jetstream()
                .send_publish(subject.clone(), message)
                .await?;
            ack.await
        };
        if let Err(source) = publish.await {
            return Err(PublishError::Refused { subject, source });
        }
        self.refuse(refuser, reason, why, Ending::EndRequest).await
    }
}

/// Acknowledges a message and waits for the server to confirm it, through short outages.
pub async fn ack(message: &jetstream::Message) {
    for attempt in 0..5u32 {
        match message.double_ack().await {
            Ok(()) => return,
            Err(e) => {
                tracing::warn!(error = %e, attempt, "ack not confirmed; retrying");
                tokio::time::sleep(Duration::from_millis(100 << attempt)).await;
            }
        }
    }
}

/// Deliveries of a durable consumer, surviving disconnects and server restarts.
pub struct DeliveryStream {
    js: jetstream::Context,
    spec: ConsumerSpec,
    consumer: std::sync::Arc<str>,
    messages: Option<pull::Stream>,
    shutdown: CancellationToken,
}

impl DeliveryStream {
    /// Binds to (or creates) the durable consumer. Waits while the stream does not exist yet or
    /// the server is unreachable; `Ok(None)` when shut down meanwhile.
    pub async fn open(
        js: jetstream::Context,
        spec: ConsumerSpec,
        shutdown: CancellationToken,
    ) -> Result<Option<Self>, BusError> {
        watch_depth(js.clone(), &spec.stream, &spec.durable, shutdown.clone());
        let mut stream = Self {
            js,
            consumer: spec.durable.as_str().into(),
            spec,
            messages: None,
            shutdown,
        };
        if !stream.reopen().await {
            return Ok(None);
        }
        Ok(Some(stream))
    }

    /// Opens the message stream, retrying until it works; false when shut down first.
    async fn reopen(&mut self) -> bool {
        let mut attempt = 0u32;
        loop {
            match self.try_open().await {
                Ok(messages) => {
                    self.messages = Some(messages);
                    return true;
                }
                Err(error) => {
                    attempt += 1;
                    tracing::warn!(consumer = %self.spec.durable, error = %crate::error_text(&*error), "consumer not ready");
                }
            }
            if !pause(&self.shutdown, Backoff::OUTAGE.delay(attempt)).await {
                return false;
            }
        }
    }

    async fn try_open(&self) -> Result<pull::Stream, Box<dyn std::error::Error + Send + Sync>> {
        let stream = self.js.get_stream(&self.spec.stream).await?;
        let consumer: jetstream::consumer::Consumer<pull::Config> = match stream.get_consumer(&self.spec.durable).await
        {
            Ok(c) => {
                let current = &c.cached_info().config;
                if self.spec.update_existing
                    && (current.max_ack_pending != self.spec.max_ack_pending
                        || current.max_deliver != self.spec.max_deliver
                        || current.ack_wait != self.spec.ack_wait)
                {
                    tracing::info!(consumer = %self.spec.durable, "bringing the consumer's bounds up to date");
                    stream.update_consumer(self.spec.config()).await?
                } else {
                    c
                }
            }
            Err(_) => stream.create_consumer(self.spec.config()).await?,
        };
        tracing::debug!(consumer = %self.spec.durable, batch = self.spec.batch, "pulling");
        Ok(consumer
            .stream()
            .max_messages_per_batch(self.spec.batch)
            .heartbeat(PULL_HEARTBEAT)
            .expires(PULL_EXPIRES)
            .messages()
            .await?)
    }

    /// The next delivery, or `None` once shut down.
    pub async fn next(&mut self) -> Option<Delivery> {
        loop {
            let Some(messages) = self.messages.as_mut() else {
                if !self.reopen().await {
                    return None;
                }
                continue;
            };
            let item = tokio::select! {
                _ = self.shutdown.cancelled() => return None,
                item = messages.next() => item,
            };
            match item {
                Some(Ok(message)) => {
                    return Some(Delivery {
                        message,
                        consumer: self.consumer.clone(),
                        received: std::time::Instant::now(),
                    });
                }
                Some(Err(e)) => {
                    tracing::warn!(consumer = %self.spec.durable, error = %e, "consumer stream error; reopening");
                    self.messages = None;
                }
                None => self.messages = None,
            }
        }
    }
}

/// How long one pull request waits on the server. The client counts the messages it asked for
/// and asks again once half have come or the server says the request ended; a request the
/// server ends without saying so (seen once in CI: a decision reached an executor just started
/// 30 s late, this bound's old value) is renewed only when this passes. Short, so that such a
/// stall is short; each idle subscriber then sends a pull request every few seconds, which
/// costs the server nothing worth counting.
pub const PULL_EXPIRES: Duration = Duration::from_secs(8);
/// The server's sign of life while a pull request waits; two missed end the stream, which is
/// reopened.
pub const PULL_HEARTBEAT: Duration = Duration::from_secs(3);

/// How often a consumer's queue depth is read from the server for the metrics.
pub const DEPTH_INTERVAL: Duration = Duration::from_secs(5);

/// Keeps the metrics' view of a durable consumer's queue (messages not yet delivered, and
/// delivered but not settled) current, reading it from the server every [`DEPTH_INTERVAL`]
/// until `shutdown`. Does nothing when metrics go nowhere.
pub fn watch_depth(js: jetstream::Context, stream: &str, durable: &str, shutdown: CancellationToken) {
    if !airlock_telemetry::metrics::enabled() {
        return;
    }
    let (stream, durable) = (stream.to_owned(), durable.to_owned());
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(DEPTH_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tick.tick() => {}
            }
            let info = async {
                let mut consumer: jetstream::consumer::Consumer<pull::Config> =
                    js.get_consumer_from_stream(&durable, &stream).await?;
                Ok::<_, Box<dyn std::error::Error + Send + Sync>>(consumer.info().await?.clone())
            };
            match tokio::time::timeout(DEPTH_INTERVAL, info).await {
                Ok(Ok(info)) => airlock_telemetry::metrics::consumer_depth(
                    &durable,
                    info.num_pending,
                    u64::try_from(info.num_ack_pending).unwrap_or(0),
                ),
                // The consumer may not exist yet, or the server be away: the next tick will tell.
                Ok(Err(e)) => tracing::debug!(consumer = %durable, error = %e, "reading the consumer's depth"),
                Err(_) => tracing::debug!(consumer = %durable, "reading the consumer's depth timed out"),
            }
        }
    });
}
