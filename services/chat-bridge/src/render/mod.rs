//! What approvers see. A message is composed once, as Airlock's words with outside text kept
//! apart as data ([`doc`]): the request itself ([`request`]) and everything said about it
//! afterwards ([`notices`]: replies to answers, escalations, results, runs under a remembered
//! approval). Each chat then draws it in its own markup, escaping data its own way and keeping
//! to its own size limits: [`plain`] (Matrix `body`, webhooks), [`html`] (Matrix
//! `formatted_body`), [`slack`] (Block Kit) and [`discord`]. Pure functions of what the bridge
//! knows and the time.

pub mod discord;
pub mod doc;
pub mod html;
pub mod notices;
pub mod plain;
pub mod request;
pub mod slack;

pub use doc::{Block, CodeLine, CodeView, Line, Message, Span};
pub use request::{View, request_message};

use airlock_protocol::{Approver, Outcome, Terminal, text::clip};
use serde::{Deserialize, Serialize};

/// Longest piece of outside text shown on one line (bytes, after deceptive characters are made
/// visible); longer ones are cut with `…`.
pub const MAX_DATA: usize = 400;

/// `2026-11-23 18:45 UTC`.
pub fn time_of(ms: i64) -> String {
    let secs = u64::try_from(ms.div_euclid(1000)).unwrap_or(0);
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
    let text = humantime::format_rfc3339_seconds(t).to_string();
    // `2026-11-23T18:45:07Z` → `2026-11-23 18:45 UTC`.
    format!("{} {} UTC", &text[..10], &text[11..16])
}

/// How far `at_ms` is from `now_ms`, in words: `in 12 min`, `in 40 s`, `3 min ago`.
pub fn relative(at_ms: i64, now_ms: i64) -> String {
    let delta = at_ms - now_ms;
    let magnitude = delta.unsigned_abs() / 1000;
    let amount = if magnitude < 60 {
        format!("{magnitude} s")
    } else if magnitude < 2 * 3600 {
        format!("{} min", magnitude / 60)
    } else if magnitude < 2 * 86_400 {
        format!("{} h", magnitude / 3600)
    } else {
        format!("{} days", magnitude / 86_400)
    };
    if delta >= 0 {
        format!("in {amount}")
    } else {
        format!("{amount} ago")
    }
}

/// How a request ended, as the bridge shows it (kept in the bucket with the request).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Ended {
    pub outcome: Option<Outcome>,
    /// The decision let it run.
    pub approved: bool,
    pub approver: Option<Approver>,
    pub exit_code: Option<i64>,
    /// `kind: detail` of the limit the program broke.
    pub violation: Option<String>,
    /// Why it could not run, or why it was denied.
    pub reason: Option<String>,
    /// The first lines of the program's stderr, when it failed.
    pub stderr_head: Vec<String>,
    /// What the kernel saw the program do, in one line (the executor's `observed` record:
    /// "1 program run, read 3 files, wrote out/chart.png, no network attempts, 0 events lost").
    /// Its paths are the program's choice: shown as data.
    pub observed: Option<String>,
}

/// Lines of stderr kept for a result.
const STDERR_LINES: usize = 5;

impl Ended {
    pub fn of(terminal: &Terminal) -> Self {
        let decision = terminal.decision.as_ref();
        let failed = terminal.outcome == Outcome::Failed || terminal.exit_code.is_some_and(|c| c != 0);
        let stderr_head = if failed {
            String::from_utf8_lossy(&terminal.stderr[..terminal.stderr.len().min(4096)])
                .lines()
                .filter(|l| !l.trim().is_empty())
                .take(STDERR_LINES)
                .map(|l| clip(l, 300))
                .collect()
        } else {
            vec![]
        };
        Self {
            outcome: Some(terminal.outcome),
            approved: decision.is_some_and(|d| d.decision == "approved"),
            approver: decision.map(|d| d.approver.clone()),
            exit_code: terminal.exit_code,
            violation: terminal
                .violation
                .as_ref()
                .map(|v| clip(&format!("{}: {}", v.kind.as_str(), v.detail), 400)),
            reason: terminal.reason.as_ref().map(|r| clip(r, 600)),
            stderr_head,
            observed: None,
        }
    }

    fn expired(&self) -> bool {
        matches!(self.approver, Some(Approver::Deadline)) || self.outcome == Some(Outcome::Expired)
    }

    /// The word a chat shows first.
    pub fn headline(&self) -> &'static str {
        match self.outcome {
            _ if self.expired() => "EXPIRED",
            Some(Outcome::Finished) if self.exit_code.is_some_and(|c| c != 0) => "APPROVED, RAN (FAILED)",
            Some(Outcome::Finished) => "APPROVED, RAN",
            Some(Outcome::Failed) if self.approved => "APPROVED, FAILED",
            Some(Outcome::Failed) => "FAILED",
            Some(Outcome::Denied) => "DENIED",
            Some(Outcome::Cancelled) => "CANCELLED",
            Some(Outcome::Expired) | None => "ENDED",
        }
    }

    /// Who decided and why, and what happened then: one line, without the headline.
    pub fn summary(&self) -> Line {
        let by = self.approver.as_ref().map(describe_approver).unwrap_or_default();
        let mut line = Line::new();
        if self.expired() {
            return line.text("nobody answered before the deadline");
        }
        line = match self.outcome {
            Some(Outcome::Denied) => line.text("denied ").extend(by),
            _ if self.approved => line.text("approved ").extend(by),
            _ => line,
        };
        match self.outcome {
            Some(Outcome::Finished) => {
                let status = self.exit_code.map_or("unknown".into(), |c| c.to_string());
                line.text(format!("; ran and exited with status {status}"))
            }
            Some(Outcome::Cancelled) => {
                let sep = if line.is_empty() { "" } else { "; " };
                // The reason names the client and quotes its words (see `CancelRequest`).
                let why = self.reason.clone().unwrap_or_else(|| "cancelled by its client".into());
                line.text(format!("{sep}withdrawn: ")).data(why)
            }
            Some(Outcome::Failed) => {
                let sep = if line.is_empty() { "" } else { "; " };
                match (&self.violation, &self.reason) {
                    (Some(v), _) => line
                        .text(format!("{sep}stopped for breaking a limit: "))
                        .data(v.clone()),
                    (None, Some(r)) => line.text(format!("{sep}could not run: ")).data(r.clone()),
                    (None, None) => line.text(format!("{sep}failed")),
                }
            }
            _ => line,
        }
    }

    /// [`Self::summary`], then what the kernel saw the program do when it ran.
    pub fn summary_with_observed(&self) -> Line {
        let line = self.summary();
        match &self.observed {
            Some(seen) => line.text("; seen by the kernel: ").data(seen.clone()),
            None => line,
        }
    }
}

/// `by @alice ("reason")`, with the second approver under the two-person rule.
pub fn describe_approver(approver: &Approver) -> Line {
    match approver {
        Approver::Human {
            who,
            reason,
            seconded_by,
            ..
        } => {
            let mut line = Line::new()
                .text("by ")
                .who(who.clone())
                .text(" (reason: ")
                .data(reason.clone())
                .text(")");
            for other in seconded_by {
                line = line
                    .text(" and ")
                    .who(other.who.clone())
                    .text(" (reason: ")
                    .data(other.reason.clone())
                    .text(")");
            }
            line
        }
        Approver::Remembered {
            who, approved_at_ms, ..
        } => {
            let line = Line::new().text("again under ").who(who.clone()).text("'s approval");
            match approved_at_ms {
                Some(at) => line.text(" of ").time(*at, false),
                None => line,
            }
        }
        Approver::Policy { rule } => Line::new().text("by policy (").text(rule.clone()).text(")"),
        Approver::Deadline => Line::new().text("at the deadline"),
    }
}

#[cfg(test)]
mod tests;
