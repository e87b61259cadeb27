//! What the executor remembers of each request it took on (its KV bucket), and whether the
//! executor holding a run is still alive. A decision can be delivered again while its run goes
//! on (a lost progress ack, a NATS restart): that run must not be declared interrupted. When
//! its executor died, it must be, exactly once. So a running record names its holder (the
//! executor instance and this process) and carries a heartbeat the holder renews.

use airlock_bus::{ClaimError, Claims, Delivery};
use airlock_protocol::{MessageId, Outcome};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How long a holder's heartbeat keeps its run alive in the eyes of another executor instance:
/// longer than a holder can go unheard while alive (a stall, a NATS outage and reconnect, the
/// 30 s its pending pull requests live), at the cost of ending a dead instance's run as
/// interrupted this much later. (A run of this same instance is judged at once.)
pub(crate) const LEASE: Duration = Duration::from_secs(60);

/// What the executor remembers of a request it took on.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub(crate) enum Record {
    /// Claimed; the code may be running in `holder`, which renews `heartbeat_ms` while it runs.
    Running {
        stream_seq: u64,
        decision_id: MessageId,
        claimed_at_ms: i64,
        /// Absent in records written before holders were recorded: such a run is judged gone.
        #[serde(default)]
        holder: Holder,
        #[serde(default)]
        heartbeat_ms: i64,
        /// Which run of the request this is: 1, then 2 for the one run again after the
        /// infrastructure interrupted the first.
        #[serde(default = "first_attempt")]
        attempt: u32,
    },
    /// Run `attempt` was interrupted by the infrastructure, and the request is to be run again
    /// (the `retrying` progress event, with `reason`, is published): the next claim of the same
    /// delivery runs attempt + 1, on whichever executor takes it.
    Interrupted {
        stream_seq: u64,
        decision_id: MessageId,
        attempt: u32,
        reason: String,
    },
    /// The terminal event is published.
    Done {
        stream_seq: u64,
        decision_id: MessageId,
        outcome: Outcome,
    },
}

fn first_attempt() -> u32 {
    1
}

/// Which executor process holds a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Holder {
    /// The executor's `instance` (its containers' label).
    pub instance: String,
    /// Unique to one life of the executor's process.
    pub process: String,
}

/// Whether the run a record names may still be going on.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Liveness {
    Alive,
    Gone,
}

/// This process, and the runs it has in progress.
pub(crate) struct Runs {
    me: Holder,
    live: Mutex<HashSet<String>>,
}

/// Marks a run as in progress in this process until dropped.
pub(crate) struct InProgress<'a> {
    runs: &'a Runs,
    request: String,
}

impl Drop for InProgress<'_> {
    fn drop(&mut self) {
        if let Ok(mut live) = self.runs.live.lock() {
            live.remove(&self.request);
        }
    }
}

impl Runs {
    pub(crate) fn new(instance: &str) -> Runs {
        Runs {
            me: Holder {
                instance: instance.to_owned(),
                process: uuid::Uuid::new_v4().simple().to_string(),
            },
            live: Mutex::new(HashSet::new()),
        }
    }

    pub(crate) fn me(&self) -> &Holder {
        &self.me
    }

    pub(crate) fn enter(&self, request: &str) -> InProgress<'_> {
        if let Ok(mut live) = self.live.lock() {
            live.insert(request.to_owned());
        }
        InProgress {
            runs: self,
            request: request.to_owned(),
        }
    }

    /// Judges the holder of a running record found at a redelivery:
    /// - this process: alive exactly when the run is still in progress here;
    /// - an earlier life of this instance: gone, for its containers were removed when this
    ///   process started (instances never share a name on one engine);
    /// - another instance: alive while its heartbeat is younger than [`LEASE`].
    pub(crate) fn judge(&self, request: &str, holder: &Holder, heartbeat_ms: i64, now_ms: i64) -> Liveness {
        let alive = if holder.process == self.me.process {
            self.live.lock().map(|live| live.contains(request)).unwrap_or(false)
        } else if holder.instance == self.me.instance {
            false
        } else {
            now_ms.saturating_sub(heartbeat_ms) < LEASE.as_millis() as i64
        };
        if alive { Liveness::Alive } else { Liveness::Gone }
    }
}

/// A claimed run's record, kept fresh while the run goes on.
pub(crate) struct Lease<'a> {
    records: &'a Claims,
    key: &'a str,
    record: Record,
    revision: AtomicU64,
}

impl<'a> Lease<'a> {
    pub(crate) fn new(records: &'a Claims, key: &'a str, record: Record, revision: u64) -> Lease<'a> {
        Lease {
            records,
            key,
            record,
            revision: AtomicU64::new(revision),
        }
    }

    /// The record's revision now (for the update that ends the run).
    pub(crate) fn revision(&self) -> u64 {
        self.revision.load(Ordering::Acquire)
    }

    /// Every `every`: tells the server the delivery is still being worked on, and renews the
    /// heartbeat. Returns only when the lease is lost: someone else changed the record (another
    /// executor judged this run gone and ended the request), so nothing more may be published.
    pub(crate) async fn keep(&self, every: Duration, delivery: &Delivery) {
        let mut record = self.record.clone();
        loop {
            tokio::time::sleep(every).await;
            delivery.in_progress().await;
            if let Record::Running { heartbeat_ms, .. } = &mut record {
                *heartbeat_ms = airlock_protocol::now_ms();
            }
            match self.records.update(self.key, &record, self.revision()).await {
                Ok(revision) => self.revision.store(revision, Ordering::Release),
                Err(ClaimError::Conflict { .. }) => match self.still_mine().await {
                    Ok(Some(revision)) => self.revision.store(revision, Ordering::Release),
                    Ok(None) => return,
                    Err(error) => tracing::warn!(%error, request = self.key, "reading a run's lease"),
                },
                // The bucket is unreachable for now: the run goes on, the next beat retries.
                Err(error) => tracing::warn!(%error, request = self.key, "renewing a run's lease"),
            }
        }
    }

    /// After a conflict: the record's revision if it is still this run's own. An earlier renewal
    /// whose reply was lost (it timed out in a partition, yet the server applied it) moved the
    /// revision on without telling us; that is not another executor taking the run, and taking
    /// it for one would drop the run without a terminal event.
    async fn still_mine(&self) -> Result<Option<u64>, ClaimError> {
        let Some((current, revision)) = self.records.get::<Record>(self.key).await? else {
            return Ok(None);
        };
        Ok(owns(&self.record, &current).then_some(revision))
    }
}

/// Whether `current` is still the running record `mine` (the same delivery, the same process);
/// only its heartbeat may differ.
fn owns(mine: &Record, current: &Record) -> bool {
    match (mine, current) {
        (
            Record::Running { stream_seq, holder, .. },
            Record::Running {
                stream_seq: current_seq,
                holder: current_holder,
                ..
            },
        ) => stream_seq == current_seq && holder == current_holder,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_of_the_previous_release_are_first_attempts() {
        #[derive(Serialize)]
        #[serde(tag = "state", rename_all = "snake_case")]
        enum Old {
            Running {
                stream_seq: u64,
                decision_id: MessageId,
                claimed_at_ms: i64,
            },
        }
        let bytes = rmp_serde::to_vec_named(&Old::Running {
            stream_seq: 3,
            decision_id: MessageId::default(),
            claimed_at_ms: 1,
        })
        .unwrap();
        match rmp_serde::from_slice::<Record>(&bytes).unwrap() {
            Record::Running { attempt, holder, .. } => assert_eq!((attempt, holder), (1, Holder::default())),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_holder_is_alive_only_while_its_run_can_still_be_going_on() {
        let runs = Runs::new("local");
        let me = runs.me().clone();
        assert_eq!(runs.judge("r1", &me, 0, 1_000_000), Liveness::Gone, "not running here");
        let in_progress = runs.enter("r1");
        assert_eq!(
            runs.judge("r1", &me, 0, 1_000_000),
            Liveness::Alive,
            "running here, whatever the heartbeat"
        );
        drop(in_progress);
        assert_eq!(runs.judge("r1", &me, 0, 1_000_000), Liveness::Gone);

        let earlier_life = Holder {
            instance: "local".into(),
            process: "dead".into(),
        };
        assert_eq!(runs.judge("r1", &earlier_life, 1_000_000, 1_000_001), Liveness::Gone);

        let other = Holder {
            instance: "other-host".into(),
            process: "p".into(),
        };
        let lease = LEASE.as_millis() as i64;
        assert_eq!(runs.judge("r1", &other, 1_000, 1_000 + lease - 1), Liveness::Alive);
        assert_eq!(runs.judge("r1", &other, 1_000, 1_000 + lease), Liveness::Gone);
        assert_eq!(
            runs.judge("r1", &Holder::default(), 0, 1_000_000),
            Liveness::Gone,
            "a record without a holder is judged gone"
        );
    }

    #[test]
    fn a_lease_is_still_ours_only_while_the_record_names_this_delivery_and_process() {
        let me = Runs::new("local").me().clone();
        let running = |stream_seq, holder: &Holder, heartbeat_ms| Record::Running {
            stream_seq,
            decision_id: MessageId::default(),
            claimed_at_ms: 1,
            holder: holder.clone(),
            heartbeat_ms,
            attempt: 1,
        };
        let mine = running(7, &me, 1);
        assert!(owns(&mine, &running(7, &me, 99)), "a renewal we did not hear of");
        assert!(!owns(&mine, &running(8, &me, 99)), "a later delivery's claim");
        let other = Holder {
            instance: "other".into(),
            process: "p".into(),
        };
        assert!(!owns(&mine, &running(7, &other, 99)), "another executor's");
        let done = Record::Done {
            stream_seq: 7,
            decision_id: MessageId::default(),
            outcome: Outcome::Failed,
        };
        assert!(!owns(&mine, &done), "ended by another executor");
    }
}
