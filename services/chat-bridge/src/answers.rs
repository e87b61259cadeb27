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
    pub relay: Relay,
    pub counters: ServiceCounters,
    /// Wakes the outbox (a message to edit, a request to post).
    pub wake: tokio::sync::Notify,
    /// Requests known, and where each was posted: for typed ids.
    pub directory: Directory,
    /// Requests new or changed since the outbox last looked.
    changed: Mutex<BTreeSet<RequestId>>,
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
    pub fn new(store: Store, relay: Relay, counters: ServiceCounters) -> Self {
        Self {
            store,
            relay,
            counters,
            wake: tokio::sync::Notify::new(),
            directory: Directory::default(),
            changed: Mutex::new(BTreeSet::new()),
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
        let (verdict, accepted) = judge(&incoming, &rid, tracked.as_ref(), reason_problem.as_deref(), now);
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
        self.relay.send(answer).await?;
        if accepted && cmd.approve {
            let who = incoming.who.clone();
            self.update(&rid, |t| {
                if !t.approved_by.contains(&who) {
                    t.approved_by.push(who.clone());
                }
            })
            .await?;
        }
        tracing::info!(request_id = %rid, who = %incoming.who, system = incoming.system, approve = cmd.approve, accepted, "answer relayed");
        Ok(Reply {
            message: reply(
                &incoming.who,
                verdict,
                tracked.as_ref().map(|t| (&t.request_id, &t.asked)),
            ),
            request: Some(rid),
            relayed: true,
            accepted,
        })
    }
}

/// The bridge's quick reading of an answer, for the human's reply: the gate's own judgement
/// (against the policy in force) is what counts. Returns the verdict and whether it should count.
pub fn judge(
    incoming: &Incoming,
    rid: &RequestId,
    tracked: Option<&Tracked>,
    reason_problem: Option<&str>,
    now_ms: i64,
) -> (Line, bool) {
    let who = &incoming.who;
    let Some(tracked) = tracked else {
        return (
            Line::new()
                .text("request ")
                .code(rid.as_str())
                .text(" is not waiting for an answer (refused, and recorded)"),
            false,
        );
    };
    if let Some(ended) = &tracked.ended {
        return (
            Line::new()
                .text("too late: the request has already ended (")
                .text(ended.headline())
                .text("); your answer is refused and recorded"),
            false,
        );
    }
    let asked = &tracked.asked;
    if now_ms > asked.deadline_ms {
        return (
            Line::new()
                .text("too late: the deadline passed at ")
                .time(asked.deadline_ms, false)
                .text("; your answer is refused and recorded"),
            false,
        );
    }
    let allowed = asked
        .approvers
        .get(incoming.system)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if !allowed.iter().any(|a| a == who) {
        return (
            Line::new()
                .who(who.clone())
                .text(format!(" may not answer {} requests here; who may: ", asked.level))
                .people(allowed)
                .text(". Your answer is refused and recorded"),
            false,
        );
    }
    if let Some(problem) = reason_problem {
        return (Line::new().text(format!("{problem}; nothing was counted")), false);
    }
    let cmd = &incoming.command;
    if let Some(again) = cmd.again {
        let max = Duration::from_millis(asked.approve_again_max_ms);
        if again > max {
            return (
                Line::new().text(format!(
                    "approving this execution again for {} is not allowed here (at most {}); nothing was counted",
                    humantime::format_duration(again),
                    humantime::format_duration(max)
                )),
                false,
            );
        }
    }
    if !cmd.approve {
        return (Line::new().text("denied by ").who(who.clone()), true);
    }
    if tracked.approved_by.contains(who) {
        return (
            Line::new()
                .who(who.clone())
                .text(" has already approved this request; a second approval must come from someone else"),
            false,
        );
    }
    let needed = usize::from(asked.approvals_needed.max(1));
    let count = tracked.approved_by.len() + 1;
    let again = cmd
        .again
        .map(|d| {
            format!(
                "; this exact execution will be approved again for {}",
                humantime::format_duration(d)
            )
        })
        .unwrap_or_default();
    if count < needed {
        (
            // Counted from the approvals relayed by this bridge: one given elsewhere (the command
            // line, another chat) may already complete it, which the message's edit will show.
            Line::new().text("approval by ").who(who.clone()).text(format!(
                " recorded ({count} of {needed} seen here); another approver is needed{again}"
            )),
            true,
        )
    } else {
        (
            Line::new()
                .text("approved by ")
                .who(who.clone())
                .text(format!("{again}; it runs once the gate has signed")),
            true,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_protocol::{Level, OverrideAsked};

    fn tracked(needed: u8) -> Tracked {
        let asked = OverrideAsked {
            level: Level::Blocked,
            deadline_ms: now_ms() + 60_000,
            approvers: [("matrix".to_owned(), vec!["@alice:x".to_owned(), "@bob:x".to_owned()])].into(),
            approvals_needed: needed,
            approve_again_max_ms: 3_600_000,
            ..OverrideAsked::display_only()
        };
        Tracked::new(RequestId::parse("r1").unwrap(), asked)
    }

    fn incoming(who: &str, approve: bool) -> Incoming {
        Incoming {
            system: "matrix",
            place: "!room:x".into(),
            reference: "$e".into(),
            who: who.into(),
            command: Command {
                approve,
                target: None,
                reason: "ok".into(),
                again: None,
            },
            bound_to: None,
        }
    }

    fn said(line: &Line) -> String {
        crate::render::plain::render(&Message::new(vec![line.clone().para()]), 0, 4000)
    }

    #[test]
    fn the_quick_reading_matches_the_policy_sent_with_the_request() {
        let rid = RequestId::parse("r1").unwrap();
        let t = tracked(1);
        let (text, ok) = judge(&incoming("@alice:x", true), &rid, Some(&t), None, now_ms());
        assert!(ok && said(&text).contains("approved by @alice:x"), "{text:?}");
        let (text, ok) = judge(&incoming("@mallory:x", true), &rid, Some(&t), None, now_ms());
        let text = said(&text);
        assert!(
            !ok && text.contains("may not answer BLOCKED") && text.contains("@alice:x"),
            "{text}"
        );
        let (text, ok) = judge(&incoming("@alice:x", true), &rid, Some(&t), None, now_ms() + 120_000);
        assert!(!ok && said(&text).contains("too late"), "{text:?}");
        let (text, ok) = judge(&incoming("@alice:x", true), &rid, None, None, now_ms());
        assert!(!ok && said(&text).contains("not waiting"), "{text:?}");
        let (text, ok) = judge(
            &incoming("@alice:x", true),
            &rid,
            Some(&t),
            Some("a reason is required"),
            now_ms(),
        );
        assert!(!ok && said(&text).contains("a reason is required"), "{text:?}");
        let mut again = incoming("@alice:x", true);
        again.command.again = Some(Duration::from_secs(7200));
        assert!(!judge(&again, &rid, Some(&t), None, now_ms()).1);
    }

    #[test]
    fn two_person_rule_is_explained_to_each_approver() {
        let rid = RequestId::parse("r1").unwrap();
        let mut t = tracked(2);
        let (text, ok) = judge(&incoming("@alice:x", true), &rid, Some(&t), None, now_ms());
        assert!(ok && said(&text).contains("1 of 2"), "{text:?}");
        t.approved_by.push("@alice:x".into());
        let (text, ok) = judge(&incoming("@alice:x", true), &rid, Some(&t), None, now_ms());
        assert!(!ok && said(&text).contains("already approved"), "{text:?}");
        let (text, ok) = judge(&incoming("@bob:x", true), &rid, Some(&t), None, now_ms());
        assert!(ok && said(&text).contains("approved by @bob:x"), "{text:?}");
    }
}
