//! Where the slowest runs of `airlock bench pipeline --sequential-pause` spent their time.
//!
//! A p99 is decided by one or two runs in a hundred; the percentiles say how slow they were,
//! not why. Each `airlock run` the bench starts is remembered (its request id, when the process
//! was spawned, how long it took), and afterwards the slowest are split into stages with the
//! services' own stamps on the events they published (milliseconds): the new process's start-up
//! and submission, each service's step, and what followed the terminal event (the auditor's
//! commit, the receipt reaching the process, its exit).

use crate::home::Home;
use airlock_protocol::subjects::EVENTS_STREAM;
use airlock_protocol::{Envelope, EventKind, RequestId};
use std::sync::Mutex;

/// One measured `airlock run`.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub request_id: String,
    /// When the process was spawned, Unix milliseconds by this machine's clock.
    pub spawned_unix_ms: f64,
    pub total_ms: f64,
}

/// The runs of one contender, in the order they ran (the first is the unmeasured warm-up).
#[derive(Default)]
pub struct Recorder {
    runs: Mutex<Vec<Recorded>>,
}

/// The stages, in order: consecutive marks, so that they add up to the total.
const STAGES: [&str; 6] = [
    "start-up, connect, submit",
    "assessor",
    "gate",
    "executor: claim, container",
    "program, output, end",
    "terminal to exit: commit, receipt",
];

pub fn unix_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64() * 1000.0)
        .unwrap_or(0.0)
}

impl Recorder {
    pub fn record(&self, run: Recorded) {
        if let Ok(mut runs) = self.runs.lock() {
            runs.push(run);
        }
    }

    /// The `count` slowest measured runs, slowest first.
    fn slowest(&self, count: usize) -> Vec<Recorded> {
        let mut runs = self
            .runs
            .lock()
            .map(|r| r.iter().skip(1).cloned().collect::<Vec<_>>())
            .unwrap_or_default();
        runs.sort_by(|a, b| b.total_ms.total_cmp(&a.total_ms));
        runs.truncate(count);
        runs
    }

    /// Prints the `count` slowest runs, stage by stage, from the events' stamps on the stack
    /// in `home`.
    pub async fn print_slowest(&self, home: &Home, count: usize, label: &str) -> anyhow::Result<()> {
        let slowest = self.slowest(count);
        if slowest.is_empty() {
            return Ok(());
        }
        let admin = crate::stack::connect(home, airlock_protocol::roles::ADMIN.user).await?;
        let events = async_nats::jetstream::new(admin).get_stream(EVENTS_STREAM).await?;
        println!("  the {} slowest runs of {label}, stage by stage (ms):", slowest.len());
        println!("  {:>8}  {}", "total", STAGES.join(" | "));
        for run in slowest {
            let request_id: RequestId = run.request_id.parse().map_err(|e| anyhow::anyhow!("{e}"))?;
            let mut marks = vec![run.spawned_unix_ms];
            for kind in [
                EventKind::Submitted,
                EventKind::Assessed,
                EventKind::Decided,
                EventKind::ExecStarted,
                EventKind::Terminal,
            ] {
                let subject = kind.subject(&request_id);
                let message = events.direct_get_last_for_subject(subject.clone()).await?;
                marks.push(Envelope::decode_on(&subject, &message.payload)?.time_ms as f64);
            }
            marks.push(run.spawned_unix_ms + run.total_ms);
            let stages: Vec<String> = marks.windows(2).map(|w| format!("{:.0}", w[1] - w[0])).collect();
            println!("  {:8.1}  {}  ({})", run.total_ms, stages.join(" | "), run.request_id);
        }
        Ok(())
    }
}
