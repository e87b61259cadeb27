//! Approval health, read from the log: how often people are asked, how they answer, how long
//! they take, what expires, what escalates, and who carries the load. These are the figures
//! that show approval fatigue before it happens (a rising prompt rate, a falling time to
//! answer with approvals near 100 %, one approver answering everything).
//!
//! Read from the signed log rather than from the gate's counters: it covers every gate that
//! ever ran, survives restarts, and is the record an operator already trusts.

use crate::entry::Entry;
use crate::reader::{LogReader, ReadError};
use airlock_protocol::{Approver, Decision, DecisionOutcome, Event, OverrideAnswer};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};

/// What one window of the log says about approvals.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ApprovalStats {
    /// The window's start (Unix ms): entries before it are not counted.
    pub since_ms: i64,
    /// Entries read, and the log's size when read.
    pub entries: u64,
    pub log_size: u64,
    /// Requests decided in the window, by who decided.
    pub decided: u64,
    pub by_policy: u64,
    pub by_humans: u64,
    pub by_remembered: u64,
    /// Requests whose override request nobody answered in time.
    pub expired: u64,
    /// Requests a human was asked about (override requests).
    pub prompts: u64,
    /// Prompts per 100 decided requests.
    pub prompts_per_100_runs: f64,
    /// Human decisions by outcome.
    pub approved: u64,
    pub denied: u64,
    /// Prompts that were still waiting when their escalation was due.
    pub escalated: u64,
    /// Answers the bridge refused before they could count (outsiders, bad signatures, replays).
    pub refused_at_edge: u64,
    /// Prompts a chat refused to show for good (a room gone, a bot removed), by chat system.
    pub chat_refusals: BTreeMap<String, u64>,
    /// From the question to the first answer that counted.
    pub time_to_first_answer: Durations,
    /// From the question to the decision (what the requester waits for).
    pub time_to_decision: Durations,
    /// Per person answering (as the decision names them): what they were asked and answered.
    pub approvers: BTreeMap<String, ApproverStats>,
}

/// One approver's share.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ApproverStats {
    /// Prompts that named them among those who may answer.
    pub prompted: u64,
    /// Decisions their answer counted in (as the approver or the second approver).
    pub approved: u64,
    pub denied: u64,
    /// Their answers that counted in no decision (too late, not theirs to give, a second
    /// answer to one request).
    pub not_counted: u64,
    pub time_to_answer: Durations,
}

/// A spread of durations, in milliseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Durations {
    pub count: u64,
    pub p50_ms: Option<i64>,
    pub p90_ms: Option<i64>,
    pub max_ms: Option<i64>,
    #[serde(skip)]
    samples: Vec<i64>,
}

impl Durations {
    fn add(&mut self, ms: i64) {
        self.samples.push(ms.max(0));
    }

    fn finish(&mut self) {
        self.samples.sort_unstable();
        self.count = self.samples.len() as u64;
        // Nearest rank: the smallest sample with at least q of the samples at or below it.
        let rank = |q: f64| -> Option<i64> {
            let n = self.samples.len();
            (n > 0).then(|| self.samples[((q * n as f64).ceil() as usize).clamp(1, n) - 1])
        };
        self.p50_ms = rank(0.5);
        self.p90_ms = rank(0.9);
        self.max_ms = self.samples.last().copied();
    }
}

/// What is known of one prompt while the window is read.
#[derive(Default)]
struct Prompt {
    asked_at_ms: i64,
    escalate_at_ms: Option<i64>,
    /// Answers seen so far: who, when.
    answers: Vec<(String, i64)>,
}

/// Adds up the events of a window in log order.
#[derive(Default)]
pub struct Tally {
    stats: ApprovalStats,
    prompts: HashMap<String, Prompt>,
    /// Prompts already decided: an answer to one of them is too late to count.
    decided_prompts: HashSet<String>,
}

impl Tally {
    pub fn new(since_ms: i64) -> Self {
        Tally {
            stats: ApprovalStats {
                since_ms,
                ..Default::default()
            },
            prompts: HashMap::new(),
            decided_prompts: HashSet::new(),
        }
    }

    /// Counts one entry's event (entries before the window are skipped by the caller).
    pub fn add(&mut self, time_ms: i64, request_id: &str, event: &Event) {
        let stats = &mut self.stats;
        match event {
            Event::OverrideAsked(asked) => {
                // An override request is published once per request; a second one (a gate
                // retrying its publish) is the same prompt.
                if self.prompts.contains_key(request_id) {
                    return;
                }
                stats.prompts += 1;
                for who in asked.approvers.values().flatten() {
                    stats.approvers.entry(who.clone()).or_default().prompted += 1;
                }
                self.prompts.insert(
                    request_id.to_owned(),
                    Prompt {
                        asked_at_ms: if asked.asked_at_ms > 0 {
                            asked.asked_at_ms
                        } else {
                            time_ms
                        },
                        escalate_at_ms: asked.escalation.as_ref().map(|e| e.at_ms),
                        answers: vec![],
                    },
                );
            }
            Event::OverrideAnswered(answered) => {
                let Some(answer) = answered.signed.peek::<OverrideAnswer>() else {
                    return;
                };
                if answer.refused_at_edge.is_some() {
                    stats.refused_at_edge += 1;
                    return;
                }
                if let Some(prompt) = self.prompts.get_mut(request_id) {
                    prompt.answers.push((answer.who, time_ms));
                } else if self.decided_prompts.contains(request_id) {
                    stats.approvers.entry(answer.who).or_default().not_counted += 1;
                }
            }
            Event::ChatRefused(refused) if refused.whole_chat => {
                *stats.chat_refusals.entry(refused.system.clone()).or_default() += 1;
            }
            Event::Decided(decided) => {
                let Some(decision) = decided.signed.peek::<Decision>() else {
                    return;
                };
                self.decided(time_ms, request_id, &decision);
            }
            _ => {}
        }
    }

    fn decided(&mut self, time_ms: i64, request_id: &str, decision: &Decision) {
        let stats = &mut self.stats;
        stats.decided += 1;
        let prompt = self.prompts.remove(request_id);
        let approve = matches!(decision.outcome, DecisionOutcome::Approved { .. });
        let deciders: Vec<&str> = match &decision.approver {
            Approver::Policy { .. } => {
                stats.by_policy += 1;
                vec![]
            }
            Approver::Remembered { .. } => {
                stats.by_remembered += 1;
                vec![]
            }
            Approver::Deadline => {
                stats.expired += 1;
                vec![]
            }
            Approver::Human { who, seconded_by, .. } => {
                stats.by_humans += 1;
                if approve {
                    stats.approved += 1;
                } else {
                    stats.denied += 1;
                }
                std::iter::once(who.as_str())
                    .chain(seconded_by.iter().map(|c| c.who.as_str()))
                    .collect()
            }
        };
        let Some(prompt) = prompt else {
            return;
        };
        self.decided_prompts.insert(request_id.to_owned());
        if prompt.escalate_at_ms.is_some_and(|at| at <= time_ms) {
            stats.escalated += 1;
        }
        stats.time_to_decision.add(time_ms - prompt.asked_at_ms);
        let mut first_counted = None::<i64>;
        for (who, at) in &prompt.answers {
            let approver = stats.approvers.entry(who.clone()).or_default();
            // Each decider's first answer is the one that counted; any other is not.
            let counted = deciders.contains(&who.as_str())
                && prompt.answers.iter().find(|(w, _)| w == who).map(|(_, t)| t) == Some(at);
            if counted {
                if approve {
                    approver.approved += 1;
                } else {
                    approver.denied += 1;
                }
                approver.time_to_answer.add(at - prompt.asked_at_ms);
                first_counted = Some(first_counted.map_or(*at, |t| t.min(*at)));
            } else {
                approver.not_counted += 1;
            }
        }
        if let Some(at) = first_counted {
            stats.time_to_first_answer.add(at - prompt.asked_at_ms);
        }
    }

    pub fn finish(mut self, entries: u64, log_size: u64) -> ApprovalStats {
        let stats = &mut self.stats;
        stats.entries = entries;
        stats.log_size = log_size;
        stats.prompts_per_100_runs = if stats.decided == 0 {
            0.0
        } else {
            // A prompt still waiting at the window's end counts as a prompt, not yet a run.
            (stats.prompts as f64 * 100.0 / stats.decided as f64 * 10.0).round() / 10.0
        };
        stats.time_to_first_answer.finish();
        stats.time_to_decision.finish();
        for approver in stats.approvers.values_mut() {
            approver.time_to_answer.finish();
        }
        self.stats
    }
}

/// The kinds a tally reads: every other entry is skipped without fetching its blobs.
const KINDS: [&str; 3] = ["override_asked", "override_answered", "decided"];

/// Reads the log as of its current checkpoint from the first entry at or after `since_ms` and
/// adds up its approvals (read, not verified: `verify` is the integrity check).
pub async fn approval_stats(reader: &LogReader, since_ms: i64) -> Result<ApprovalStats, ReadError> {
    let Some((signed, _)) = reader.checkpoint().await? else {
        return Ok(Tally::new(since_ms).finish(0, 0));
    };
    let size = signed.checkpoint.size;
    let mut tally = Tally::new(since_ms);
    let mut read = 0u64;
    let step = 256 * 64;
    let mut from = 0;
    while from < size {
        let to = (from + step).min(size);
        for (_, entry) in reader.entries(from, to, size).await? {
            if entry.time_ms < since_ms || !KINDS.contains(&entry.kind.as_str()) {
                continue;
            }
            read += 1;
            if let Some(event) = restore(reader, &entry).await? {
                tally.add(entry.time_ms, &entry.request_id, &event);
            }
        }
        from = to;
    }
    Ok(tally.finish(read, size))
}

/// The entry's event, with the event's own blob fetched when it was too large to stay inline
/// (the code and stdin blobs are not needed here).
async fn restore(reader: &LogReader, entry: &Entry) -> Result<Option<Event>, ReadError> {
    let event_blob = match entry.blobs.get(crate::entry::EVENT_SLOT) {
        Some(blob) if entry.event.is_none() => reader.blob(blob).await?,
        _ => None,
    };
    Ok(entry.restore(|blob| {
        (entry.blobs.get(crate::entry::EVENT_SLOT) == Some(blob))
            .then(|| event_blob.clone())
            .flatten()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_protocol::decision::{CoApprover, DECISION_DOMAIN};
    use airlock_protocol::overrides::{ANSWER_DOMAIN, EdgeRefusal, Escalation};
    use airlock_protocol::{
        CodeDigest, Level, MessageId, OverrideAnswered, OverrideAsked, RequestId, Signed, SigningKey, TrustLevel,
    };

    fn asked(at: i64, approvers: &[&str], escalate_at: Option<i64>) -> Event {
        Event::OverrideAsked(OverrideAsked {
            asked_at_ms: at,
            deadline_ms: at + 600_000,
            approvers: [("matrix".to_owned(), approvers.iter().map(|a| a.to_string()).collect())].into(),
            escalation: escalate_at.map(|at_ms| Escalation {
                at_ms,
                targets: BTreeMap::new(),
            }),
            ..OverrideAsked::display_only()
        })
    }

    fn answered(key: &SigningKey, rid: &str, who: &str, approve: bool, at: i64) -> Event {
        let answer = OverrideAnswer {
            request_id: RequestId::parse(rid).unwrap(),
            execution_digest: CodeDigest::of(b""),
            approve,
            reason: "r".into(),
            who: who.into(),
            answered_at_ms: at,
            via: None,
            approve_again_for_ms: None,
            refused_at_edge: None,
        };
        Event::OverrideAnswered(OverrideAnswered {
            signed: Signed::sign(&answer, ANSWER_DOMAIN, key),
        })
    }

    fn decided(key: &SigningKey, rid: &str, approver: Approver, approve: bool) -> Event {
        let decision = Decision {
            decision_id: MessageId::new(),
            request_id: RequestId::parse(rid).unwrap(),
            execution_digest: CodeDigest::of(b""),
            code_digest: CodeDigest::of(b""),
            level: Level::Blocked,
            outcome: if approve {
                DecisionOutcome::approved(airlock_protocol::Grant {
                    quota: TrustLevel::Unknown,
                    limits: airlock_protocol::Limits {
                        memory_bytes: 1,
                        cpu_millis: 1,
                        pids: 1,
                        wall_ms: 1,
                        output_bytes: 1,
                        disk_bytes: 1,
                        open_files: 1,
                    },
                    runtime: Default::default(),
                    network: Default::default(),
                    read_only_hosts: vec![],
                })
            } else {
                DecisionOutcome::Denied { reason: "no".into() }
            },
            approver,
            issued_at_ms: 0,
            expires_at_ms: 0,
            policy_version: None,
        };
        Event::Decided(Box::new(airlock_protocol::Decided {
            signed: Signed::sign(&decision, DECISION_DOMAIN, key),
            request: None,
            assessment: None,
        }))
    }

    fn human(who: &str, seconded: &[&str]) -> Approver {
        Approver::Human {
            who: who.into(),
            reason: "r".into(),
            key: "k".into(),
            via: None,
            seconded_by: seconded
                .iter()
                .map(|w| CoApprover {
                    who: w.to_string(),
                    reason: "r".into(),
                    via: None,
                })
                .collect(),
        }
    }

    #[test]
    fn a_window_of_decisions_adds_up_to_the_figures_an_operator_reads() {
        let key = SigningKey::generate("test").unwrap();
        let policy = || Approver::Policy { rule: "low".into() };
        let mut tally = Tally::new(0);
        // Eight runs decided by policy.
        for i in 0..8 {
            tally.add(
                1_000 + i,
                &format!("mai.p{i}"),
                &decided(&key, &format!("mai.p{i}"), policy(), true),
            );
        }
        // Alice approves after 30 s (bob answers too late to count).
        tally.add(10_000, "mai.a", &asked(10_000, &["@alice", "@bob"], Some(310_000)));
        tally.add(40_000, "mai.a", &answered(&key, "mai.a", "@alice", true, 40_000));
        tally.add(41_000, "mai.a", &decided(&key, "mai.a", human("@alice", &[]), true));
        tally.add(50_000, "mai.a", &answered(&key, "mai.a", "@bob", true, 50_000));
        // Bob denies after 400 s, past the escalation.
        tally.add(100_000, "mai.b", &asked(100_000, &["@alice", "@bob"], Some(400_000)));
        tally.add(500_000, "mai.b", &answered(&key, "mai.b", "@bob", false, 500_000));
        tally.add(500_100, "mai.b", &decided(&key, "mai.b", human("@bob", &[]), false));
        // Two people approve, 60 s and 120 s in.
        tally.add(200_000, "mai.c", &asked(200_000, &["@alice", "@bob"], None));
        tally.add(260_000, "mai.c", &answered(&key, "mai.c", "@alice", true, 260_000));
        tally.add(320_000, "mai.c", &answered(&key, "mai.c", "@bob", true, 320_000));
        tally.add(
            320_100,
            "mai.c",
            &decided(&key, "mai.c", human("@bob", &["@alice"]), true),
        );
        // Nobody answers.
        tally.add(300_000, "mai.d", &asked(300_000, &["@alice"], Some(600_000)));
        tally.add(900_000, "mai.d", &decided(&key, "mai.d", Approver::Deadline, false));

        let stats = tally.finish(20, 20);
        assert_eq!(
            (stats.decided, stats.by_policy, stats.by_humans, stats.expired),
            (12, 8, 3, 1)
        );
        assert_eq!(
            (stats.prompts, stats.approved, stats.denied, stats.escalated),
            (4, 2, 1, 2)
        );
        assert_eq!(stats.prompts_per_100_runs, 33.3);
        assert_eq!(stats.time_to_first_answer.count, 3);
        assert_eq!(stats.time_to_first_answer.p50_ms, Some(60_000));
        assert_eq!(stats.time_to_first_answer.max_ms, Some(400_000));
        assert_eq!(stats.time_to_decision.count, 4);
        assert_eq!(stats.time_to_decision.max_ms, Some(600_000));
        let alice = &stats.approvers["@alice"];
        assert_eq!(
            (alice.prompted, alice.approved, alice.denied, alice.not_counted),
            (4, 2, 0, 0)
        );
        assert_eq!(alice.time_to_answer.max_ms, Some(60_000));
        let bob = &stats.approvers["@bob"];
        assert_eq!((bob.prompted, bob.approved, bob.denied, bob.not_counted), (3, 1, 1, 1));
    }

    #[test]
    fn refusals_at_the_edge_are_counted_apart_and_never_as_answers() {
        let key = SigningKey::generate("test").unwrap();
        let mut tally = Tally::new(0);
        tally.add(0, "mai.a", &asked(0, &["@alice"], None));
        let refused = OverrideAnswer {
            request_id: RequestId::parse("mai.a").unwrap(),
            execution_digest: CodeDigest::of(b""),
            approve: true,
            reason: "r".into(),
            who: "@mallory".into(),
            answered_at_ms: 5,
            via: None,
            approve_again_for_ms: None,
            refused_at_edge: Some(EdgeRefusal {
                reason: airlock_protocol::RefusalReason::UnknownSigner,
                detail: "not an approver".into(),
            }),
        };
        tally.add(
            5,
            "mai.a",
            &Event::OverrideAnswered(OverrideAnswered {
                signed: Signed::sign(&refused, ANSWER_DOMAIN, &key),
            }),
        );
        tally.add(9, "mai.a", &decided(&key, "mai.a", Approver::Deadline, false));
        let stats = tally.finish(3, 3);
        assert_eq!((stats.refused_at_edge, stats.expired, stats.prompts), (1, 1, 1));
        assert!(!stats.approvers.contains_key("@mallory"));
        assert_eq!(stats.time_to_first_answer.count, 0);
    }

    #[test]
    fn a_chat_that_refused_a_prompt_is_counted_per_system_and_an_escalation_place_is_not() {
        let mut tally = Tally::new(0);
        tally.add(0, "mai.a", &asked(0, &["@alice"], None));
        let refused = |whole_chat| {
            Event::ChatRefused(airlock_protocol::ChatRefused::new(
                "slack",
                Some("C1"),
                whole_chat,
                "channel_not_found",
            ))
        };
        tally.add(1, "mai.a", &refused(true));
        tally.add(2, "mai.a", &refused(false));
        let stats = tally.finish(1, 1);
        assert_eq!(stats.chat_refusals.get("slack"), Some(&1));
        assert_eq!(stats.chat_refusals.len(), 1);
    }
}
