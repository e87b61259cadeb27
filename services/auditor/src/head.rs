//! The log head in the auditor's NATS KV bucket: the committed size and root, the events-stream
//! position they cover, the staged commit still to finish, and the single-writer lease. Every
//! change is a revision-checked update (compare-and-swap), so of two auditors only the lease
//! holder can commit, and a commit is decided by exactly one successful swap.

use async_nats::jetstream::kv;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub const HEAD_KEY: &str = "head";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Head {
    pub origin: String,
    pub size: u64,
    /// Root hash (hex) of the committed tree.
    pub root: String,
    /// Events-stream sequence of the last message the committed tree covers.
    pub last_stream_seq: u64,
    /// A staged commit whose tiles may not all be written yet.
    pub staging: Option<String>,
    /// The process holding the lease, and until when.
    pub writer: String,
    pub lease_until_ms: i64,
}

#[derive(Clone, Debug, thiserror::Error)]
pub enum HeadError {
    #[error("the log head was changed by another writer ({0}): this auditor no longer holds the log")]
    LostLease(String),
    #[error("the log head in the KV bucket is unreadable")]
    Corrupt(#[source] Arc<serde_json::Error>),
    /// The bucket has no head and the log already in the store could not be read: an outage
    /// unless the store refuses for good.
    #[error("adopting the log in the store: it could not be read")]
    AdoptUnreadable(#[source] Arc<airlock_auditlog::reader::ReadError>),
    /// The bucket has no head and the store's checkpoint is not one this auditor trusts: no
    /// head is made from it.
    #[error("adopting the log in the store: its checkpoint does not verify")]
    AdoptUntrusted(#[source] Arc<airlock_auditlog::checkpoint::CheckpointError>),
    #[error("the KV bucket holds the head of log {found:?}, not {expected:?}")]
    WrongOrigin { found: String, expected: String },
    #[error("shutting down")]
    Cancelled,
}

/// The head as this writer last swapped it in.
pub struct HeadStore {
    kv: kv::Store,
    pub head: Head,
    revision: u64,
    lease: Duration,
}

fn now_ms() -> i64 {
    airlock_protocol::now_ms()
}

fn encode(head: &Head) -> Bytes {
    Bytes::from(serde_json::to_vec(head).unwrap_or_default())
}

impl HeadStore {
    /// Takes the lease: creates the head (from `adopt`, the state already in the store) when
    /// there is none, waits as a standby while another live writer holds it, and takes it over
    /// once that lease has run out. `None` if shut down while waiting.
    pub async fn acquire(
        kv: kv::Store,
        origin: &str,
        writer: &str,
        lease: Duration,
        shutdown: &CancellationToken,
        adopt: Result<Head, HeadError>,
    ) -> Result<Option<HeadStore>, HeadError> {
        let mut told_standby = false;
        loop {
            if shutdown.is_cancelled() {
                return Ok(None);
            }
            let current = match kv.entry(HEAD_KEY).await {
                Ok(entry) => entry.filter(|e| e.operation == kv::Operation::Put),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read the log head; retrying");
                    pause(shutdown, Duration::from_millis(500)).await;
                    continue;
                }
            };
            let Some(entry) = current else {
                let mut head = adopt.clone()?;
                if head.size > 0 {
                    tracing::warn!(
                        size = head.size,
                        last_stream_seq = head.last_stream_seq,
                        "no head in the KV bucket: adopting the log found in the store"
                    );
                }
                head.writer = writer.to_owned();
                head.lease_until_ms = now_ms() + lease.as_millis() as i64;
                match kv.create(HEAD_KEY, encode(&head)).await {
                    Ok(revision) => {
                        return Ok(Some(HeadStore {
                            kv,
                            head,
                            revision,
                            lease,
                        }));
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, "head appeared meanwhile; reading it again");
                        continue;
                    }
                }
            };
            let mut head: Head = serde_json::from_slice(&entry.value).map_err(|e| HeadError::Corrupt(Arc::new(e)))?;
            if head.origin != origin {
                return Err(HeadError::WrongOrigin {
                    found: head.origin,
                    expected: origin.to_owned(),
                });
            }
            let now = now_ms();
            if head.writer != writer && head.lease_until_ms > now {
                if !told_standby {
                    tracing::warn!(holder = %head.writer, "another auditor holds the log; standing by");
                    told_standby = true;
                }
                let wait = (head.lease_until_ms - now + 50).clamp(50, lease.as_millis() as i64) as u64;
                if !pause(shutdown, Duration::from_millis(wait)).await {
                    return Ok(None);
                }
                continue;
            }
            if head.writer != writer {
                tracing::info!(previous = %head.writer, "taking over the log");
            }
            head.writer = writer.to_owned();
            head.lease_until_ms = now + lease.as_millis() as i64;
            match kv.update(HEAD_KEY, encode(&head), entry.revision).await {
                Ok(revision) => {
                    return Ok(Some(HeadStore {
                        kv,
                        head,
                        revision,
                        lease,
                    }));
                }
                Err(e) => tracing::debug!(error = %e, "head changed while taking it; reading it again"),
            }
        }
    }

    /// Swaps in `next` (with a renewed lease) if the head is still the one this writer wrote.
    /// A timeout is ambiguous, so the head is read back before retrying.
    pub async fn swap(&mut self, mut next: Head, shutdown: &CancellationToken) -> Result<(), HeadError> {
        next.writer = self.head.writer.clone();
        next.lease_until_ms = now_ms() + self.lease.as_millis() as i64;
        let bytes = encode(&next);
        let mut backoff = Duration::from_millis(50);
        loop {
            match self.kv.update(HEAD_KEY, bytes.clone(), self.revision).await {
                Ok(revision) => {
                    self.revision = revision;
                    self.head = next;
                    return Ok(());
                }
                Err(e) if e.kind() == kv::UpdateErrorKind::WrongLastRevision => {
                    return Err(HeadError::LostLease(self.describe_current().await));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "updating the log head failed; checking what happened");
                    match self.kv.entry(HEAD_KEY).await {
                        Ok(Some(entry)) if entry.revision == self.revision => {}
                        Ok(Some(entry)) if entry.value == bytes => {
                            self.revision = entry.revision;
                            self.head = next;
                            return Ok(());
                        }
                        Ok(_) => return Err(HeadError::LostLease(self.describe_current().await)),
                        Err(e) => tracing::warn!(error = %e, "cannot read the log head"),
                    }
                }
            }
            if !pause(shutdown, backoff).await {
                return Err(HeadError::Cancelled);
            }
            backoff = (backoff * 2).min(Duration::from_secs(2));
        }
    }

    /// Renews the lease with no other change.
    pub async fn renew(&mut self, shutdown: &CancellationToken) -> Result<(), HeadError> {
        let next = self.head.clone();
        self.swap(next, shutdown).await
    }

    /// Gives the lease up so a successor need not wait for it to run out.
    pub async fn release(&mut self) {
        let mut next = self.head.clone();
        next.lease_until_ms = 0;
        if let Ok(revision) = self.kv.update(HEAD_KEY, encode(&next), self.revision).await {
            self.revision = revision;
            self.head = next;
        }
    }

    async fn describe_current(&self) -> String {
        match self.kv.entry(HEAD_KEY).await {
            Ok(Some(entry)) => serde_json::from_slice::<Head>(&entry.value)
                .map(|h| format!("now held by {} at size {}", h.writer, h.size))
                .unwrap_or_else(|_| "now unreadable".to_owned()),
            Ok(None) => "now deleted".to_owned(),
            Err(e) => format!("unreadable: {e}"),
        }
    }
}

/// Sleeps, or returns false at shutdown.
pub async fn pause(shutdown: &CancellationToken, duration: Duration) -> bool {
    tokio::select! {
        _ = shutdown.cancelled() => false,
        _ = tokio::time::sleep(duration) => true,
    }
}
