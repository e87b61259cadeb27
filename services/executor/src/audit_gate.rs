//! No run without its record (`[auditor] required`, the default): a program starts only while
//! the audit log keeps up.
//!
//! The auditor logs the events stream strictly in order and publishes each entry it committed on
//! `airlock.audit.entry.<request id>`, with the event's stream sequence number. The executor
//! follows those entries (from the last one, through an ordered consumer of the audit stream),
//! so it knows up to which stream sequence the log holds everything. A run may start when:
//!
//! - its decision is in the log (the log holds everything up to the decision's sequence), or
//! - the log is less than `max_lag` behind as this executor sees it: the auditor committed
//!   within the last `max_lag`, and no decision this executor took in is older than `max_lag`
//!   without being logged.
//!
//! So under load runs do not wait for their own decision to be logged (the auditor commits
//! every few milliseconds), a run after a quiet spell waits for its decision's commit (a few
//! milliseconds), and within `max_lag` of the auditor stopping (frozen, crashed, its store
//! failing) no program starts any more: requests wait, told why, until the log catches up or
//! their deadline or decision passes. Whatever ran in that window is in the events stream and
//! is logged once the auditor is back.

use airlock_protocol::subjects::{AUDIT_ENTRY_PREFIX, AUDIT_STREAM};
use async_nats::jetstream;
use futures::StreamExt as _;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// What the executor reads of the `[auditor]` section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AuditRequirement {
    /// Whether programs wait for the audit log (`[auditor] required`, default true).
    pub required: bool,
    /// How far behind the log may be for a program to start before its decision is logged
    /// (`[auditor] max_lag`, default 2 s).
    pub max_lag: Duration,
}

impl Default for AuditRequirement {
    fn default() -> Self {
        AuditRequirement {
            required: true,
            max_lag: Duration::from_secs(2),
        }
    }
}

/// Whether a run may start now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Readiness {
    Ready,
    /// It waits for the audit log; why, for the client and the status.
    Wait(String),
}

#[derive(Default)]
struct Progress {
    /// Every stream message up to this sequence is in the log.
    committed: u64,
    /// When the auditor was last seen committing.
    last_commit: Option<Instant>,
    /// Decisions taken in and not yet known to be logged: stream sequence → when taken in.
    pending: BTreeMap<u64, Instant>,
}

/// Most decisions remembered as pending (the oldest are what matter).
const MAX_PENDING: usize = 4096;

/// The executor's view of the audit log's progress.
pub struct AuditGate {
    requirement: AuditRequirement,
    progress: Mutex<Progress>,
    /// Bumped at every commit seen: whoever waits for the log looks again.
    commits: watch::Sender<u64>,
}

/// The payload of `airlock.audit.entry.*` as far as the gate reads it: the entry's stream
/// sequence (`docs/audit-log.md`, entries; MessagePack with named fields).
#[derive(serde::Deserialize)]
struct LoggedEntry {
    #[serde(default)]
    stream_seq: Option<u64>,
}

impl AuditGate {
    /// A gate that follows the auditor's entries until `stop` (when the log is required).
    pub fn start(js: jetstream::Context, requirement: AuditRequirement, stop: CancellationToken) -> Arc<AuditGate> {
        let gate = Arc::new(AuditGate {
            requirement,
            progress: Mutex::new(Progress::default()),
            commits: watch::Sender::new(0),
        });
        if requirement.required {
            let follower = gate.clone();
            tokio::spawn(async move { follower.follow(js, stop).await });
        }
        gate
    }

    pub fn requirement(&self) -> AuditRequirement {
        self.requirement
    }

    /// Wakes up at every commit seen.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.commits.subscribe()
    }

    /// A decision at stream sequence `seq` was taken in: until it is logged, it counts towards
    /// the lag.
    pub fn took_in(&self, seq: u64) {
        if !self.requirement.required {
            return;
        }
        let Ok(mut progress) = self.progress.lock() else { return };
        if seq > progress.committed {
            progress.pending.entry(seq).or_insert_with(Instant::now);
            while progress.pending.len() > MAX_PENDING {
                progress.pending.pop_last();
            }
        }
    }

    /// Whether the run of the decision at `seq` may start now.
    pub fn readiness(&self, seq: u64) -> Readiness {
        self.readiness_at(seq, Instant::now())
    }

    fn readiness_at(&self, seq: u64, now: Instant) -> Readiness {
        if !self.requirement.required {
            return Readiness::Ready;
        }
        let Ok(progress) = self.progress.lock() else {
            return Readiness::Wait("the executor's view of the audit log is unavailable".into());
        };
        if seq <= progress.committed {
            return Readiness::Ready;
        }
        let max_lag = self.requirement.max_lag;
        let lag = lag_of(&progress, now);
        let live = progress
            .last_commit
            .is_some_and(|at| now.saturating_duration_since(at) < max_lag);
        if live && lag < max_lag {
            return Readiness::Ready;
        }
        Readiness::Wait(match progress.last_commit {
            Some(at) => format!(
                "the audit log has not logged this request's decision, and is {:.1} s behind (last commit seen {:.1} s ago; runs start only while it is under {:?} behind)",
                lag.as_secs_f64(),
                now.saturating_duration_since(at).as_secs_f64(),
                max_lag
            ),
            None => {
                "the audit log has not logged this request's decision yet (no commit seen since the executor started)"
                    .into()
            }
        })
    }

    /// How far behind the log is as this executor sees it.
    pub fn lag(&self) -> Duration {
        self.progress
            .lock()
            .map(|p| lag_of(&p, Instant::now()))
            .unwrap_or_default()
    }

    /// The auditor committed the stream up to `seq`.
    fn committed(&self, seq: u64) {
        let Ok(mut progress) = self.progress.lock() else { return };
        progress.last_commit = Some(Instant::now());
        if seq > progress.committed {
            progress.committed = seq;
            progress.pending = progress.pending.split_off(&(seq + 1));
        }
        drop(progress);
        self.commits.send_modify(|n| *n += 1);
    }

    /// Reads the auditor's entries from the last one on, reconnecting through outages.
    async fn follow(&self, js: jetstream::Context, stop: CancellationToken) {
        let mut attempt = 0u32;
        loop {
            match self.read_entries(&js, &stop).await {
                Ok(()) => return,
                Err(error) => {
                    attempt += 1;
                    let error = airlock_protocol::error_chain(&*error);
                    tracing::warn!(%error, "following the audit log's entries; trying again");
                }
            }
            let delay = Duration::from_millis(250u64 << attempt.min(5));
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(delay) => {}
            }
        }
    }

    async fn read_entries(&self, js: &jetstream::Context, stop: &CancellationToken) -> Result<(), FollowError> {
        let stream = js.get_stream(AUDIT_STREAM).await?;
        let consumer = stream
            .create_consumer(jetstream::consumer::pull::OrderedConfig {
                // Named, so that its subjects are the ones the executor's permissions allow
                // (an ephemeral consumer of its own, `$JS.API.CONSUMER.CREATE.<stream>.<name>`).
                name: Some(format!("executor_{}", uuid::Uuid::new_v4().simple())),
                filter_subject: format!("{AUDIT_ENTRY_PREFIX}.>"),
                deliver_policy: jetstream::consumer::DeliverPolicy::Last,
                ..Default::default()
            })
            .await?;
        let mut entries = consumer.messages().await?;
        loop {
            let message = tokio::select! {
                _ = stop.cancelled() => return Ok(()),
                message = entries.next() => message,
            };
            match message {
                Some(Ok(message)) => {
                    if let Ok(LoggedEntry { stream_seq: Some(seq) }) = rmp_serde::from_slice(&message.payload) {
                        self.committed(seq);
                    }
                }
                Some(Err(error)) => return Err(error.into()),
                None => return Err("the audit stream's consumer ended".into()),
            }
        }
    }
}

/// Why following the audit log's entries stopped: any of the JetStream calls on the way (each
/// its own error type), retried alike.
type FollowError = Box<dyn std::error::Error + Send + Sync>;

/// The age of the oldest decision taken in and not yet logged.
fn lag_of(progress: &Progress, now: Instant) -> Duration {
    progress
        .pending
        .range(progress.committed + 1..)
        .map(|(_, at)| now.saturating_duration_since(*at))
        .max()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(required: bool) -> AuditGate {
        AuditGate {
            requirement: AuditRequirement {
                required,
                max_lag: Duration::from_secs(2),
            },
            progress: Mutex::new(Progress::default()),
            commits: watch::Sender::new(0),
        }
    }

    #[test]
    fn a_run_waits_for_its_decision_until_the_auditor_is_seen_keeping_up() {
        let gate = gate(true);
        let t0 = Instant::now();
        gate.took_in(10);
        assert!(
            matches!(gate.readiness_at(10, t0), Readiness::Wait(_)),
            "no commit seen yet: wait for the decision's own"
        );
        gate.committed(10);
        assert_eq!(gate.readiness(10), Readiness::Ready, "its decision is logged");
        // Under load: the auditor commits all the time, a new decision starts at once.
        gate.took_in(12);
        assert_eq!(gate.readiness(12), Readiness::Ready);
        assert!(gate.lag() < Duration::from_secs(1));
    }

    #[test]
    fn once_the_auditor_stops_runs_stop_starting_within_max_lag() {
        let gate = gate(true);
        gate.committed(5);
        let now = Instant::now();
        gate.took_in(6);
        assert_eq!(gate.readiness_at(6, now), Readiness::Ready, "the log is live and near");
        // Three seconds later the auditor has logged nothing more: decision 6 is 3 s behind.
        let later = now + Duration::from_secs(3);
        gate.took_in(7);
        match gate.readiness_at(7, later) {
            Readiness::Wait(why) => assert!(why.contains("behind"), "{why}"),
            Readiness::Ready => panic!("a run started while the log is 3 s behind"),
        }
        // A quiet stack: nothing pending, but no commit seen for long: a new decision waits for
        // its own commit rather than trusting an auditor that may have died meanwhile.
        let quiet = gate_after_commit_then_idle();
        assert!(matches!(quiet, Readiness::Wait(_)));
    }

    fn gate_after_commit_then_idle() -> Readiness {
        let gate = gate(true);
        gate.committed(100);
        gate.took_in(101);
        gate.readiness_at(101, Instant::now() + Duration::from_secs(60))
    }

    #[test]
    fn without_the_requirement_nothing_waits() {
        let gate = gate(false);
        gate.took_in(3);
        assert_eq!(
            gate.readiness_at(3, Instant::now() + Duration::from_secs(600)),
            Readiness::Ready
        );
        assert_eq!(gate.lag(), Duration::ZERO);
    }

    #[test]
    fn entries_are_read_for_their_stream_sequence_only() {
        #[derive(serde::Serialize)]
        struct Entry<'a> {
            v: u32,
            seq: u64,
            kind: &'a str,
            stream_seq: Option<u64>,
        }
        let bytes = rmp_serde::to_vec_named(&Entry {
            v: 1,
            seq: 7,
            kind: "decided",
            stream_seq: Some(42),
        })
        .unwrap();
        let read: LoggedEntry = rmp_serde::from_slice(&bytes).unwrap();
        assert_eq!(read.stream_seq, Some(42));
    }
}
