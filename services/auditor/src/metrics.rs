//! What the auditor measures: it takes every event of every request, in stream order, so the
//! time each request spends in each stage is measured here, from the events' own times, for
//! all services at once; and it alone knows how long an event waits to be durable in the log
//! (the audit lag).
//!
//! Stage times come from the producers' clocks (`time_ms` of each envelope): on one machine
//! they agree; across machines a skew shows in the stages that cross them, and a negative
//! duration is dropped rather than recorded.

use airlock_protocol::{Envelope, EventKind};
use std::collections::{HashMap, VecDeque};
use std::time::Duration;

/// Requests whose stages are being followed at once; past this, the oldest is forgotten (a
/// request waiting for a human for days must not grow the auditor without bound).
const MAX_OPEN: usize = 100_000;

/// When a request reached each step, as its events say (Unix ms).
#[derive(Clone, Copy, Debug, Default)]
struct Marks {
    submitted: Option<i64>,
    assessed: Option<i64>,
    decided: Option<i64>,
    started: Option<i64>,
}

/// The stages of the requests in flight.
#[derive(Debug, Default)]
pub(crate) struct Stages {
    open: HashMap<String, Marks>,
    /// Request ids in the order they were first seen, for forgetting the oldest.
    order: VecDeque<String>,
}

fn between(from: Option<i64>, to: i64) -> Option<Duration> {
    let from = from?;
    u64::try_from(to - from).ok().map(Duration::from_millis)
}

impl Stages {
    /// Notes an event of request `rid` at `time_ms`; returns the stages it completes: `assess`
    /// (submitted → assessed), `decide` (assessed → decided, a human's answer included),
    /// `start` (decided → the program started), `run` (started → terminal) and `total`
    /// (submitted → terminal).
    pub(crate) fn observe(&mut self, rid: &str, kind: EventKind, time_ms: i64) -> Vec<(&'static str, Duration)> {
        let tracked = matches!(
            kind,
            EventKind::Submitted
                | EventKind::Assessed
                | EventKind::Decided
                | EventKind::ExecStarted
                | EventKind::Terminal
        );
        if !tracked {
            return Vec::new();
        }
        if kind == EventKind::Terminal {
            let Some(marks) = self.open.remove(rid) else {
                return Vec::new();
            };
            return [
                ("run", between(marks.started, time_ms)),
                ("total", between(marks.submitted, time_ms)),
            ]
            .into_iter()
            .filter_map(|(stage, d)| Some((stage, d?)))
            .collect();
        }
        if !self.open.contains_key(rid) {
            if self.open.len() >= MAX_OPEN {
                self.forget_oldest();
            }
            self.order.push_back(rid.to_owned());
        }
        let marks = self.open.entry(rid.to_owned()).or_default();
        // The first event of a kind counts: a republished one after a crash says nothing new.
        let (slot, stage, from) = match kind {
            EventKind::Submitted => (&mut marks.submitted, None, None),
            EventKind::Assessed => (&mut marks.assessed, Some("assess"), marks.submitted),
            EventKind::Decided => (&mut marks.decided, Some("decide"), marks.assessed),
            _ => (&mut marks.started, Some("start"), marks.decided),
        };
        if slot.is_some() {
            return Vec::new();
        }
        *slot = Some(time_ms);
        match (stage, between(from, time_ms)) {
            (Some(stage), Some(elapsed)) => vec![(stage, elapsed)],
            _ => Vec::new(),
        }
    }

    fn forget_oldest(&mut self) {
        while let Some(oldest) = self.order.pop_front() {
            if self.open.remove(&oldest).is_some() {
                return;
            }
        }
    }

    #[cfg(test)]
    fn open(&self) -> usize {
        self.open.len()
    }
}

/// The auditor's measurements between commits.
#[derive(Debug, Default)]
pub(crate) struct AuditMetrics {
    stages: Stages,
    /// When each message of the batch being built was stored in the events stream (Unix ms).
    stored: Vec<i64>,
}

impl AuditMetrics {
    /// A message taken into the batch: its envelope (when it could be read) and when the
    /// events stream stored it.
    pub(crate) fn taken(&mut self, envelope: Option<&Envelope>, stored_ms: Option<i64>) {
        if let Some(envelope) = envelope {
            for (stage, elapsed) in self
                .stages
                .observe(envelope.request_id.as_str(), envelope.kind(), envelope.time_ms)
            {
                airlock_telemetry::metrics::stage(stage, elapsed);
            }
        }
        if let Some(stored) = stored_ms {
            self.stored.push(stored);
        }
    }

    /// The batch is durable (checkpoint written) and the log has `size` entries.
    pub(crate) fn committed(&mut self, size: u64) {
        let now = airlock_protocol::now_ms();
        for stored in self.stored.drain(..) {
            airlock_telemetry::metrics::audit_lag(Duration::from_millis(u64::try_from(now - stored).unwrap_or(0)));
        }
        airlock_telemetry::metrics::audit_log_size(size);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_request_completes_each_stage_in_turn() {
        let mut stages = Stages::default();
        assert!(stages.observe("r", EventKind::Submitted, 1000).is_empty());
        assert_eq!(stages.observe("r", EventKind::Assessed, 1002), vec![("assess", ms(2))]);
        assert_eq!(stages.observe("r", EventKind::Decided, 1005), vec![("decide", ms(3))]);
        assert!(stages.observe("r", EventKind::Output, 1010).is_empty());
        assert_eq!(
            stages.observe("r", EventKind::ExecStarted, 1040),
            vec![("start", ms(35))]
        );
        assert_eq!(
            stages.observe("r", EventKind::Terminal, 1100),
            vec![("run", ms(60)), ("total", ms(100))]
        );
        assert_eq!(stages.open(), 0, "an ended request is forgotten");
    }

    #[test]
    fn a_denied_request_has_no_run_and_repeats_count_once() {
        let mut stages = Stages::default();
        stages.observe("r", EventKind::Submitted, 0);
        stages.observe("r", EventKind::Assessed, 5);
        assert!(
            stages.observe("r", EventKind::Assessed, 9).is_empty(),
            "a republished event counted twice"
        );
        assert_eq!(stages.observe("r", EventKind::Terminal, 20), vec![("total", ms(20))]);
    }

    #[test]
    fn clock_skew_is_dropped_not_recorded() {
        let mut stages = Stages::default();
        stages.observe("r", EventKind::Submitted, 1000);
        assert!(stages.observe("r", EventKind::Assessed, 990).is_empty());
    }

    #[test]
    fn the_oldest_open_request_is_forgotten_at_the_bound() {
        let mut stages = Stages::default();
        for i in 0..MAX_OPEN + 5 {
            stages.observe(&format!("r{i}"), EventKind::Submitted, 0);
        }
        assert_eq!(stages.open(), MAX_OPEN);
        assert!(
            stages.observe("r0", EventKind::Terminal, 10).is_empty(),
            "r0 should be forgotten"
        );
        assert_eq!(
            stages.observe(&format!("r{}", MAX_OPEN + 4), EventKind::Terminal, 10),
            vec![("total", ms(10))]
        );
    }
}
