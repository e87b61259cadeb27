//! Carrying a human's answer to the gate: an [`OverrideAnswer`] signed with the bridge's key,
//! naming who answered, where, and why, published as an `override_answered` event (the one kind
//! the bridge may publish). Interactions the bridge refuses itself (a forged or stale signature,
//! a replay) are relayed too, marked as refused, so that the gate refuses them on the record;
//! those are rate-limited, so that a flood of forgeries cannot flood the audit log. A chat that
//! refuses a request's message for good is told the same way, as a `chat_refused` event.

use airlock_bus::{PublishError, Publisher, ServiceCounters};
use airlock_protocol::overrides::{ANSWER_DOMAIN, EdgeRefusal, Via};
use airlock_protocol::{
    ChatRefused, CodeDigest, Envelope, Event, OverrideAnswer, OverrideAnswered, Producer, RefusalReason, RequestId,
    Signed, SigningKey, now_ms,
};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Refused interactions relayed per minute at most; the rest are counted and logged.
const EDGE_PER_MINUTE: u32 = 30;

/// One answer to relay.
#[derive(Clone, Debug)]
pub struct Answer {
    pub request_id: RequestId,
    pub execution_digest: CodeDigest,
    pub approve: bool,
    pub reason: String,
    pub who: String,
    pub via: Via,
    pub approve_again_for: Option<Duration>,
    pub refused: Option<(RefusalReason, String)>,
}

impl Answer {
    /// The answer as the gate will read it (what the bridge signs).
    pub fn body(&self, answered_at_ms: i64) -> OverrideAnswer {
        OverrideAnswer {
            request_id: self.request_id.clone(),
            execution_digest: self.execution_digest.clone(),
            approve: self.approve,
            reason: airlock_protocol::text::clip(&self.reason, 1024),
            who: airlock_protocol::text::clip(&self.who, 256),
            answered_at_ms,
            via: Some(self.via.clone()),
            approve_again_for_ms: self
                .approve_again_for
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            refused_at_edge: self.refused.as_ref().map(|(reason, detail)| EdgeRefusal {
                reason: *reason,
                detail: airlock_protocol::text::clip(detail, 512),
            }),
        }
    }
}

pub struct Relay {
    key: SigningKey,
    publisher: Publisher,
    counters: ServiceCounters,
    budget: Mutex<(Instant, u32)>,
}

impl Relay {
    pub fn new(key: SigningKey, publisher: Publisher, counters: ServiceCounters) -> Self {
        Self {
            key,
            publisher,
            counters,
            budget: Mutex::new((Instant::now(), 0)),
        }
    }

    pub fn key(&self) -> &SigningKey {
        &self.key
    }

    /// Signs and publishes the answer.
    pub async fn send(&self, answer: Answer) -> Result<(), PublishError> {
        let body = answer.body(now_ms());
        let signed = Signed::sign(&body, ANSWER_DOMAIN, &self.key);
        let envelope = Envelope::new(
            body.request_id.clone(),
            Producer::ChatBridge,
            Event::OverrideAnswered(OverrideAnswered { signed }),
        );
        self.publisher.publish(&envelope).await?;
        self.counters.incr(if body.refused_at_edge.is_some() {
            "refusals_relayed"
        } else {
            "answers_relayed"
        });
        Ok(())
    }

    /// Relays an interaction refused at the edge, within the rate budget.
    pub async fn refused(
        &self,
        request_id: Option<RequestId>,
        via: Via,
        who: &str,
        reason: RefusalReason,
        detail: String,
    ) -> Result<(), PublishError> {
        if !self.within_budget() {
            self.counters.incr("refusals_dropped");
            tracing::warn!(%reason, detail, system = via.system, "refused interaction not relayed: over the rate budget");
            return Ok(());
        }
        tracing::warn!(%reason, detail, system = via.system, place = via.place, "refused an interaction");
        self.send(Answer {
            request_id: request_id.unwrap_or_else(RequestId::unknown),
            execution_digest: CodeDigest::of(b""),
            approve: false,
            reason: String::new(),
            who: if who.is_empty() {
                "(unknown)".into()
            } else {
                who.to_owned()
            },
            via,
            approve_again_for: None,
            refused: Some((reason, detail)),
        })
        .await
    }

    /// Tells the gate, and the audit log, that a chat refused a request's message for good.
    /// At most one per chat and place per request (the outbox stops trying there), so no budget.
    pub async fn chat_refused(&self, request_id: &RequestId, refused: ChatRefused) -> Result<(), PublishError> {
        let envelope = Envelope::new(request_id.clone(), Producer::ChatBridge, Event::ChatRefused(refused));
        self.publisher.publish(&envelope).await?;
        self.counters.incr("chat_refusals_told");
        Ok(())
    }

    fn within_budget(&self) -> bool {
        let mut budget = self.budget.lock().unwrap_or_else(|p| p.into_inner());
        if budget.0.elapsed() >= Duration::from_secs(60) {
            *budget = (Instant::now(), 0);
        }
        budget.1 += 1;
        budget.1 <= EDGE_PER_MINUTE
    }
}
