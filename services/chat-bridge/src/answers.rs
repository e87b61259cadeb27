//! What happens to a human's answer, whichever chat it came from: find the one request it is for
//! (bound by a reply or a button, or named by a typed id that must be unambiguous and posted in
//! that very room: [`crate::routing`]), tell the human at once whether it can count (a quick
//! reading of the policy the gate sent with the request), and relay it to the gate, which alone
//! judges it and records every answer and refusal in the audit log. The reply says which of the
//! two happened, and names the request it was counted for (its id, its explanation's first line
//! and its label) so that the human can see it is the one they meant.

use crate::command::Command;
use crate::relay::{Answer, Relay};
use crate::render::notices::reply;
use crate::render::{Line, Message};
use crate::routing::{Directory, MAX_LISTED, Place, Resolved};
use crate::state::{Store, Tracked};
use airlock_approvals::{Approval, Asked, Judge, Judgement, People, Source, Verdict};
use airlock_bus::{ClaimError, PublishError, ServiceCounters};
use airlock_protocol::overrides::Via;
use airlock_protocol::{RefusalReason, RequestId, now_ms};
use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    #[error("the bridge's records")]
    Store(#[from] ClaimError),
    #[error("relaying the answer to the gate")]
    Publish(#[from] PublishError),
}

/// An answer as a chat delivered it.
#[derive(Clone, Debug)]
pub struct Incoming {
    pub system: &'static str,
    pub place: String,
    /// The chat's id of this interaction: the same for every delivery of it.
    pub reference: String,
    pub who: String,
    pub command: Command,
    /// The request the chat ties the answer to (a reply to the bot's message, a button).
    pub bound_to: Option<RequestId>,
}

impl Incoming {
    fn here(&self) -> Place {
        Place {
            system: self.system.to_owned(),
            place: self.place.clone(),
        }
    }
}

/// What to tell the human.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    pub message: Message,
    /// The request the answer went to, if any.
    pub request: Option<RequestId>,
    /// Relayed to the gate (it may still refuse it, on the record).
    pub relayed: bool,
    /// The bridge expects the gate to count it.
    pub accepted: bool,
}

impl Reply {
    /// A reply that reached no request.
    fn only(to: &str, verdict: Line) -> Self {
        Self {
            message: reply(to, verdict, None),
            request: None,
            relayed: false,
            accepted: false,
        }
    }

    /// The reply's text, for chats that answer in plain words (webhook responses, logs).
    pub fn text(&self) -> String {
        crate::render::plain::render(&self.message, now_ms(), 4000)
    }
}

pub struct Core {
    pub store: Store,
    /// Who is who (`[people]`): the two-person rule counts people.
    pub people: People,
    pub relay: Relay,
    pub counters: ServiceCounters,
    /// Wakes the outbox (a message to edit, a request to post).
    pub wake: tokio::sync::Notify,
    /// Requests known, and where each was posted: for typed ids.
    pub directory: Directory,
    /// Requests new or changed since the outbox last looked.
    changed: Mutex<BTreeSet<RequestId>>,
    /// `[bridge] public_url`: where the whole-code pages are opened, when they are served.
    pub public_url: Option<String>,
}

/// `a, b and 3 more`, as code.
fn listed(ids: &[RequestId]) -> Line {
    let mut line = Line::new();
    for (i, id) in ids.iter().take(MAX_LISTED).enumerate() {
        if i > 0 {
            line = line.text(", ");
        }
        line = line.code(id.as_str());
    }
    if ids.len() > MAX_LISTED {
        line = line.text(format!(" and {} more", ids.len() - MAX_LISTED));
    }
    line
}

fn waiting_here(ids: &[RequestId]) -> Line {
    if ids.is_empty() {
        Line::new().text("no request is waiting for an answer here")
    } else {
        Line::new().text("waiting here: ").extend(listed(ids))
    }
}

impl Core {
    pub fn new(store: Store, relay: Relay, counters: ServiceCounters, people: People) -> Self {
        Self {
            store,
            people,
            relay,
            counters,
            wake: tokio::sync::Notify::new(),
            directory: Directory::default(),
            changed: Mutex::new(BTreeSet::new()),
            public_url: None,
        }
    }

    /// Notes a request's current record (for typed ids) and that the outbox has work for it.
    pub fn note(&self, tracked: &Tracked) {
        self.directory.note(tracked);
        self.changed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(tracked.request_id.clone());
        self.wake.notify_one();
    }

    /// Notes that the outbox has work for a request that is not tracked as asked.
    pub fn wake_for(&self, rid: &RequestId) {
        self.changed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(rid.clone());
        self.wake.notify_one();
    }

    /// Whether a request is waiting for an answer in this room or channel.
    pub fn has_waiting(&self, system: &str, place: &str) -> bool {
        let here = Place {
            system: system.to_owned(),
            place: place.to_owned(),
        };
        !self.directory.waiting_in(&here, now_ms()).is_empty()
    }

    pub fn take_changed(&self) -> BTreeSet<RequestId> {
        std::mem::take(&mut *self.changed.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Changes a tracked request, and notes the change.
    pub async fn update<F>(&self, rid: &RequestId, change: F) -> Result<Option<Tracked>, ClaimError>
    where
        F: FnMut(&mut Tracked),
    {
        let updated = self.store.update(rid, change).await?;
        if let Some(tracked) = &updated {
            self.note(tracked);
        }
        Ok(updated)
    }

    /// Which request an answer is for; `Err` holds the reply when it is for none. Ambiguous or
    /// misplaced typed ids are also recorded with the gate (refused at the edge): they are what
    /// an attempt to capture an approval looks like.
    async fn request_of(&self, incoming: &Incoming, now: i64) -> Result<RequestId, Reply> {
        let here = incoming.here();
        let who = incoming.who.as_str();
        let typed = incoming.command.target.as_deref();
        if let Some(bound) = &incoming.bound_to {
            if !self.directory.posted_in(bound, &here) {
                return Err(Reply::only(
                    who,
                    Line::new()
                        .text("the message you answered belongs to request ")
                        .code(bound.as_str())
                        .text(", which was not posted here; nothing was counted"),
                ));
            }
            // A reply that also names a request must name the same one.
            if let Some(typed) = typed
                && !crate::routing::starts(bound, typed)
            {
                let other = match self.directory.resolve(typed, &here, now) {
                    Resolved::One(rid) | Resolved::NotHere { named: rid, .. } => vec![rid],
                    Resolved::Ambiguous(ids) => ids,
                    // Not an id after all: the first word of the reason.
                    Resolved::Unknown { .. } => vec![],
                };
                if !other.is_empty() {
                    return Err(Reply::only(
                        who,
                        Line::new()
                            .text("you replied to request ")
                            .code(bound.as_str())
                            .text(" but named ")
                            .extend(listed(&other))
                            .text("; nothing was counted. Reply to the message of the request you mean"),
                    ));
                }
            }
            return Ok(bound.clone());
        }
        let Some(typed) = typed else {
            let usage = Line::new()
                .text("say which request: ")
                .code("approve <request-id> <reason>")
                .text(", or reply to the request's message; ");
            return Err(Reply::only(
                who,
                usage.extend(waiting_here(&self.directory.waiting_in(&here, now))),
            ));
        };
        match self.directory.resolve(typed, &here, now) {
            Resolved::One(rid) => Ok(rid),
            Resolved::Ambiguous(ids) => {
                self.counters.incr("answers_ambiguous");
                let detail = format!(
                    "{who} typed {typed:?}, which {} requests of the last 24 hours start with: {}",
                    ids.len(),
                    ids.iter().map(RequestId::as_str).collect::<Vec<_>>().join(", ")
                );
                self.refuse_at_edge(incoming, detail).await;
                Err(Reply::only(
                    who,
                    Line::new()
                        .code(typed)
                        .text(format!(" could be any of {} requests: ", ids.len()))
                        .extend(listed(&ids))
                        .text(". Nothing was counted: write more of the id, or reply to the request's message"),
                ))
            }
            Resolved::NotHere {
                named,
                waiting_here: here_ids,
            } => {
                self.counters.incr("answers_elsewhere");
                let detail = format!(
                    "{who} typed {typed:?} in {} {}, where request {named} was not posted",
                    incoming.system, incoming.place
                );
                self.refuse_at_edge(incoming, detail).await;
                Err(Reply::only(
                    who,
                    Line::new()
                        .text("request ")
                        .code(named.as_str())
                        .text(" was not posted here, so it cannot be answered here; nothing was counted (")
                        .extend(waiting_here(&here_ids))
                        .text(")"),
                ))
            }
            Resolved::Unknown { waiting_here: here_ids } => Err(Reply::only(
                who,
                Line::new()
                    .text("no request of the last 24 hours has an id starting with ")
                    .code(typed)
                    .text("; nothing was counted (")
                    .extend(waiting_here(&here_ids))
                    .text(")"),
            )),
        }
    }

    async fn refuse_at_edge(&self, incoming: &Incoming, detail: String) {
        let via = Via {
            system: incoming.system.to_owned(),
            place: incoming.place.clone(),
            reference: incoming.reference.clone(),
        };
        if let Err(e) = self
            .relay
            .refused(None, via, &incoming.who, RefusalReason::InvalidRequest, detail)
            .await
        {
            tracing::warn!(error = %airlock_bus::error_text(&e), "could not record a misdirected answer");
        }
    }

    /// Handles one answer; the reply is for the human who gave it.
    pub async fn answer(&self, incoming: Incoming) -> Result<Reply, AnswerError> {
        self.counters.incr("answers_received");
        let now = now_ms();
        let rid = match self.request_of(&incoming, now).await {
            Ok(rid) => rid,
            Err(reply) => return Ok(reply),
        };
        let tracked = self.store.tracked(&rid).await?;
        let is_bound = incoming.bound_to.is_some();
        let cmd = &incoming.command;
        let (reason, reason_problem) = match cmd.reason_for(&rid, is_bound) {
            Ok(reason) => (reason, None),
            Err(why) => (String::new(), Some(why)),
        };
        // A missing reason is relayed as it is (the gate refuses it); an oversized one is not
        // carried at all, only its refusal.
        let too_long = cmd.reason.trim().chars().count() > crate::command::MAX_REASON_CHARS;
        let answer = Answer {
            request_id: rid.clone(),
            execution_digest: tracked
                .as_ref()
                .map(|t| t.asked.execution_digest.clone())
                .unwrap_or_else(|| airlock_protocol::CodeDigest::of(b"")),
            approve: cmd.approve,
            reason,
            who: incoming.who.clone(),
            via: Via {
                system: incoming.system.to_owned(),
                place: incoming.place.clone(),
                reference: incoming.reference.clone(),
            },
            approve_again_for: cmd.again,
            refused: too_long.then(|| {
                (
                    RefusalReason::InvalidRequest,
                    format!(
                        "{}: the reason is longer than {} characters",
                        incoming.who,
                        crate::command::MAX_REASON_CHARS
                    ),
                )
            }),
        };
        let reading = match (&tracked, &reason_problem) {
            (Some(tracked), None) => read(&self.people, &self.signer(), &answer, tracked, now),
            (Some(tracked), Some(problem)) if tracked.ended.is_none() => Reading::refused(Line::new().text(problem)),
            (Some(tracked), Some(_)) => read(&self.people, &self.signer(), &answer, tracked, now),
            (None, _) => Reading::refused(
                Line::new()
                    .text("request ")
                    .code(rid.as_str())
                    .text(" is not waiting for an answer"),
            ),
        };
        self.relay.send(answer).await?;
        if !reading.approvals.is_empty() {
            let (who, approvals) = (incoming.who.clone(), reading.approvals.clone());
            self.update(&rid, |t| {
                if !t.approved_by.contains(&who) {
                    t.approved_by.push(who.clone());
                }
                t.approvals.clone_from(&approvals);
            })
            .await?;
        }
        tracing::info!(request_id = %rid, who = %incoming.who, system = incoming.system, approve = cmd.approve, accepted = reading.accepted, "answer relayed");
        Ok(Reply {
            message: reply(
                &incoming.who,
                reading.verdict,
                tracked.as_ref().map(|t| (&t.request_id, &t.asked)),
            ),
            request: Some(rid),
            relayed: true,
            accepted: reading.accepted,
        })
    }

    /// The bridge's key, as the gate names the signer of an answer.
    fn signer(&self) -> String {
        self.relay.key().verifier().to_string()
    }
}

/// The gate's own judgement of the answer, run here on the policy the gate sent with the request
/// (and the people of `[people]`), so that the human hears at once what will become of it. The
/// gate judges again against the policy in force, and alone decides.
fn read(people: &People, signer: &str, answer: &Answer, tracked: &Tracked, now: i64) -> Reading {
    if let Some(ended) = &tracked.ended {
        return Reading::refused(
            Line::new()
                .text("too late: the request has already ended (")
                .text(ended.headline())
                .text(")"),
        );
    }
    let asked = &tracked.asked;
    let judge = Judge { policy: asked, people };
    let grant = asked.grant.clone().unwrap_or(airlock_protocol::Grant {
        quota: airlock_protocol::TrustLevel::Untrusted,
        limits: airlock_protocol::Quotas::default().untrusted,
        runtime: airlock_protocol::Runtime::Runc,
        network: airlock_protocol::NetworkMode::None,
        read_only_hosts: vec![],
    });
    let judgement = judge.judge(
        Asked {
            level: asked.level,
            execution_digest: &asked.execution_digest,
            grant: &grant,
            deadline_ms: asked.deadline_ms,
            now_ms: now,
        },
        &tracked.approvals,
        &answer.body(now),
        &Source::Bridge(answer.via.system.clone()),
        signer,
    );
    let who = &answer.who;
    let again = |for_ms: Option<u64>| match for_ms {
        Some(ms) => format!(
            "; this exact execution will be approved again, without asking, for {}",
            humantime::format_duration(Duration::from_millis(ms))
        ),
        None => String::new(),
    };
    match judgement {
        Judgement::Refuse { detail, .. } => Reading::refused(Line::new().text(detail)),
        Judgement::Count { approvals } => {
            let needed = asked.approvals_needed.max(1);
            Reading {
                verdict: Line::new().text("approval by ").who(who.clone()).text(format!(
                    " counted ({} of {needed}); another person must approve",
                    approvals.len()
                )),
                accepted: true,
                approvals,
            }
        }
        Judgement::Decide {
            verdict: Verdict::Deny { .. },
            ..
        } => Reading {
            verdict: Line::new().text("denied by ").who(who.clone()),
            accepted: true,
            approvals: vec![],
        },
        Judgement::Decide {
            verdict: Verdict::Approve { .. },
            again_for_ms,
            approvals,
            ..
        } => Reading {
            verdict: Line::new()
                .text("approved by ")
                .who(who.clone())
                .text(format!("{}; it runs once the gate has signed", again(again_for_ms))),
            accepted: true,
            approvals,
        },
    }
}

/// The bridge's reading of an answer, for the human's reply.
struct Reading {
    verdict: Line,
    /// The bridge expects the gate to count it.
    accepted: bool,
    /// The approvals counted, this one included, when it is an approval that counts.
    approvals: Vec<Approval>,
}

impl Reading {
    fn refused(why: Line) -> Self {
        Self {
            verdict: why.text("; your answer is refused, and recorded"),
            accepted: false,
            approvals: vec![],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_approvals::Person;
    use airlock_protocol::{CodeDigest, Level, OverrideAsked};
    use std::collections::BTreeMap;

    fn tracked(needed: u8) -> Tracked {
        let asked = OverrideAsked {
            level: Level::Blocked,
            deadline_ms: now_ms() + 60_000,
            execution_digest: CodeDigest::of(b"the execution"),
            approvers: [(
                "matrix".to_owned(),
                vec!["@alice:x".to_owned(), "@alice-phone:x".to_owned(), "@bob:x".to_owned()],
            )]
            .into(),
            approvals_needed: needed,
            approve_again_max_ms: 3_600_000,
            ..OverrideAsked::display_only()
        };
        Tracked::new(RequestId::parse("mai.r1").expect("id"), asked)
    }

    /// Alice answers from two Matrix accounts; bob from one; mallory is nobody.
    fn people() -> People {
        let table: BTreeMap<String, Person> = [
            (
                "alice".to_owned(),
                Person {
                    matrix: vec!["@alice:x".into(), "@alice-phone:x".into()],
                    ..Person::default()
                },
            ),
            (
                "bob".to_owned(),
                Person {
                    matrix: vec!["@bob:x".into()],
                    ..Person::default()
                },
            ),
        ]
        .into();
        People::new(&table, &BTreeMap::new()).expect("people")
    }

    fn answer(tracked: &Tracked, who: &str, approve: bool) -> Answer {
        Answer {
            request_id: tracked.request_id.clone(),
            execution_digest: tracked.asked.execution_digest.clone(),
            approve,
            reason: "looked at it".into(),
            who: who.into(),
            via: Via {
                system: "matrix".into(),
                place: "!room:x".into(),
                reference: "$e".into(),
            },
            approve_again_for: None,
            refused: None,
        }
    }

    fn said(reading: &Reading) -> String {
        crate::render::plain::render(&Message::new(vec![reading.verdict.clone().para()]), 0, 4000)
    }

    #[test]
    fn the_reading_is_the_gates_judgement_on_the_policy_sent_with_the_request() {
        let (people, t, now) = (people(), tracked(1), now_ms());
        let r = read(&people, "bridge", &answer(&t, "@alice:x", true), &t, now);
        assert!(r.accepted && said(&r).contains("approved by @alice:x"), "{}", said(&r));
        let r = read(&people, "bridge", &answer(&t, "@bob:x", false), &t, now);
        assert!(r.accepted && said(&r).contains("denied by @bob:x"), "{}", said(&r));

        let r = read(&people, "bridge", &answer(&t, "@mallory:x", true), &t, now);
        let text = said(&r);
        assert!(
            !r.accepted && text.contains("may not answer BLOCKED") && text.contains("@bob:x"),
            "{text}"
        );
        let r = read(&people, "bridge", &answer(&t, "@alice:x", true), &t, now + 120_000);
        assert!(!r.accepted && said(&r).contains("after the deadline"), "{}", said(&r));
        let mut stale = answer(&t, "@alice:x", true);
        stale.execution_digest = CodeDigest::of(b"another execution");
        assert!(!read(&people, "bridge", &stale, &t, now).accepted);
        let mut again = answer(&t, "@alice:x", true);
        again.approve_again_for = Some(Duration::from_secs(7200));
        let r = read(&people, "bridge", &again, &t, now);
        assert!(!r.accepted && said(&r).contains("at most 1h"), "{}", said(&r));
        again.approve_again_for = Some(Duration::from_secs(1800));
        let r = read(&people, "bridge", &again, &t, now);
        assert!(
            r.accepted && said(&r).contains("approved again, without asking, for 30m"),
            "{}",
            said(&r)
        );

        let mut ended = tracked(1);
        ended.ended = Some(crate::render::Ended::default());
        let r = read(&people, "bridge", &answer(&ended, "@alice:x", true), &ended, now);
        assert!(!r.accepted && said(&r).contains("too late"), "{}", said(&r));
    }

    #[test]
    fn the_two_person_rule_counts_people_not_accounts() {
        let (people, mut t, now) = (people(), tracked(2), now_ms());
        let first = read(&people, "bridge", &answer(&t, "@alice:x", true), &t, now);
        assert!(first.accepted && said(&first).contains("1 of 2"), "{}", said(&first));
        t.approvals = first.approvals;
        // Alice's second account is still alice.
        let r = read(&people, "bridge", &answer(&t, "@alice-phone:x", true), &t, now);
        let text = said(&r);
        assert!(
            !r.accepted && text.contains("(as alice) has already approved"),
            "{text}"
        );
        let r = read(&people, "bridge", &answer(&t, "@bob:x", true), &t, now);
        assert!(r.accepted && said(&r).contains("approved by @bob:x"), "{}", said(&r));
        assert_eq!(r.approvals.len(), 2);
    }
}
