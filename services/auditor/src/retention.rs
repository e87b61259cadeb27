//! What the log stores in full and what it keeps by digest only. Every event is logged, but a
//! hostile client must not be able to fill the store: a submission that will be refused as
//! invalid keeps only its content's digest and size (the refusal follows in the log), a client
//! over its byte budget likewise, and an unreadable message over a size keeps only its digest.
//! The entry says what was withheld and why; the digest stays under the tree, so the log still
//! proves what was sent.

use airlock_auditlog::entry::Prepared;
use airlock_protocol::Event;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// `[auditor.retention]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetentionConfig {
    /// Bytes of content (code, stdin, output) one client's requests may add to the store per
    /// minute; beyond it, new content is kept by digest and size only.
    pub client_bytes_per_minute: u64,
    /// An unreadable message larger than this keeps only its digest and size.
    pub max_unreadable_bytes: u64,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        Self {
            client_bytes_per_minute: 64 * 1024 * 1024,
            max_unreadable_bytes: 64 * 1024,
        }
    }
}

const WINDOW: Duration = Duration::from_secs(60);

/// The byte budgets, per client, over one-minute windows.
#[derive(Debug, Default)]
pub struct Retention {
    config: RetentionConfig,
    /// Client → (start of its window, bytes stored in it).
    spent: HashMap<String, (Instant, u64)>,
}

impl Retention {
    pub fn new(config: RetentionConfig) -> Self {
        Self {
            config,
            spent: HashMap::new(),
        }
    }

    /// Withholds what `prepared` must not store in full. `client` is the submitting client the
    /// request id names; `event` is the decoded event (`None` for an unreadable message).
    pub fn apply(&mut self, prepared: &mut Prepared, event: Option<&Event>, client: Option<&str>, now: Instant) {
        let bytes = prepared.blob_bytes();
        if bytes == 0 {
            return;
        }
        let Some(event) = event else {
            if bytes > self.config.max_unreadable_bytes {
                prepared.withhold(&format!(
                    "an unreadable message of {bytes} bytes: only its digest is kept (more than {})",
                    self.config.max_unreadable_bytes
                ));
            }
            return;
        };
        if let Event::Submitted(request) = event
            && let Err(e) = request.validate()
        {
            prepared.withhold(&format!("a submission refused as invalid: {e}"));
            return;
        }
        let Some(client) = client else { return };
        if self.spent.len() >= 1024 {
            self.forget_idle(now);
        }
        let (start, spent) = self.spent.entry(client.to_owned()).or_insert((now, 0));
        if now.duration_since(*start) >= WINDOW {
            *start = now;
            *spent = 0;
        }
        if *spent + bytes > self.config.client_bytes_per_minute {
            prepared.withhold(&format!(
                "client {client} is over its budget of {} bytes of content per minute",
                self.config.client_bytes_per_minute
            ));
            return;
        }
        *spent += bytes;
    }

    /// Forgets clients idle for a window (so the map stays as small as the active clients).
    pub fn forget_idle(&mut self, now: Instant) {
        self.spent.retain(|_, (start, _)| now.duration_since(*start) < WINDOW);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_protocol::{Envelope, ExecutionRequest, Language, Producer, RequestId};

    fn submitted(code: Vec<u8>) -> (Prepared, Event) {
        let event = Event::Submitted(ExecutionRequest::new(Language::Python, code));
        let envelope = Envelope::new(RequestId::parse("mai.r1").unwrap(), Producer::Mai, event.clone());
        (Prepared::from_envelope(envelope, Some(1), None), event)
    }

    #[test]
    fn a_refused_submission_keeps_only_its_digest() {
        let mut retention = Retention::new(RetentionConfig::default());
        let (mut prepared, event) = submitted(vec![b'#'; 600 * 1024]);
        retention.apply(&mut prepared, Some(&event), Some("mai"), Instant::now());
        assert!(prepared.blobs.is_empty() && prepared.entry.blobs.is_empty());
        let withheld = &prepared.entry.withheld["code"];
        assert_eq!(withheld.len, 600 * 1024);
        assert!(withheld.reason.contains("refused as invalid"), "{withheld:?}");
    }

    #[test]
    fn a_client_over_its_budget_keeps_only_digests_until_its_window_turns() {
        let mut retention = Retention::new(RetentionConfig {
            client_bytes_per_minute: 1000,
            ..RetentionConfig::default()
        });
        let now = Instant::now();
        let (mut first, event) = submitted(vec![b'a'; 600]);
        retention.apply(&mut first, Some(&event), Some("mai"), now);
        assert_eq!(first.blobs.len(), 1, "within the budget: stored");
        let (mut second, event) = submitted(vec![b'b'; 600]);
        retention.apply(&mut second, Some(&event), Some("mai"), now);
        assert!(second.blobs.is_empty() && second.entry.withheld["code"].reason.contains("over its budget"));
        // Another client has its own budget.
        let (mut other, event) = submitted(vec![b'c'; 600]);
        retention.apply(&mut other, Some(&event), Some("bob"), now);
        assert_eq!(other.blobs.len(), 1);
        let (mut later, event) = submitted(vec![b'd'; 600]);
        retention.apply(&mut later, Some(&event), Some("mai"), now + WINDOW);
        assert_eq!(later.blobs.len(), 1, "a new window");
    }

    #[test]
    fn a_large_unreadable_message_keeps_only_its_digest() {
        let mut retention = Retention::new(RetentionConfig::default());
        let error = Envelope::decode(b"\xc1").expect_err("garbage");
        let mut small = Prepared::malformed("airlock.submit.mai.r1", &error, &[0xc1; 100], Some(1));
        retention.apply(&mut small, None, Some("mai"), Instant::now());
        assert_eq!(small.blobs.len(), 1);
        let mut large = Prepared::malformed("airlock.submit.mai.r1", &error, &vec![0xc1; 3 << 20], Some(1));
        retention.apply(&mut large, None, Some("mai"), Instant::now());
        assert!(large.blobs.is_empty());
        assert_eq!(large.entry.withheld["raw"].len, 3 << 20);
    }
}
