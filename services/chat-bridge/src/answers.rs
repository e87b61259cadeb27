//! What happens to a human's answer, whichever chat it came from: find the request it names,
//! tell the human at once whether it can count (a quick reading of the policy the gate sent with
//! the request), and relay it to the gate, which alone judges it and records every answer and
//! refusal in the audit log. The human's reply says which of the two happened, and why.

use crate::command::{Command, Resolved, resolve};
use crate::relay::{Answer, Relay};
use crate::state::{Store, Tracked};
use airlock_bus::{ClaimError, PublishError, ServiceCounters};
use airlock_protocol::overrides::Via;
use airlock_protocol::{CodeDigest, RefusalReason, RequestId, now_ms};
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

/// What to tell the human.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    pub text: String,
    /// Relayed to the gate (it may still refuse it, on the record).
    pub relayed: bool,
    /// The bridge expects the gate to count it.
    pub accepted: bool,
}

impl Reply {
    fn only(text: String) -> Self {
        Self {
            text,
            relayed: false,
            accepted: false,
        }
    }
}

pub struct Core {
    pub store: Store,
    pub relay: Relay,
    pub counters: ServiceCounters,
    /// Wakes the outbox (a message to edit, a request to post).
    pub wake: tokio::sync::Notify,
    /// Requests tracked, for resolving id prefixes.
    known: Mutex<BTreeSet<RequestId>>,
    /// Requests new or changed since the outbox last looked.
    changed: Mutex<BTreeSet<RequestId>>,
}

impl Core {
    pub fn new(store: Store, relay: Relay, counters: ServiceCounters) -> Self {
        Self {
            store,
            relay,
            counters,
            wake: tokio::sync::Notify::new(),
            known: Mutex::new(BTreeSet::new()),
            changed: Mutex::new(BTreeSet::new()),
        }
    }

    /// Notes a request as tracked (for prefixes) and as having work for the outbox.
    pub fn remember(&self, rid: &RequestId) {
        self.known.lock().unwrap_or_else(|p| p.into_inner()).insert(rid.clone());
        self.changed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(rid.clone());
        self.wake.notify_one();
    }

    pub fn take_changed(&self) -> BTreeSet<RequestId> {
        std::mem::take(&mut *self.changed.lock().unwrap_or_else(|p| p.into_inner()))
    }

    pub fn known(&self) -> Vec<RequestId> {
        self.known
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .cloned()
            .collect()
    }

    /// Handles one answer; the reply is for the human who gave it.
    pub async fn answer(&self, incoming: Incoming) -> Result<Reply, AnswerError> {
        self.counters.incr("answers_received");
        let is_bound = incoming.bound_to.is_some();
        let rid = match (&incoming.bound_to, &incoming.command.target) {
            (Some(rid), _) => rid.clone(),
            (None, Some(token)) => match resolve(token, &self.known()) {
                Resolved::One(rid) => rid,
                Resolved::Ambiguous(ids) => {
                    let list: Vec<String> = ids.iter().take(5).map(|r| r.to_string()).collect();
                    return Ok(Reply::only(format!(
                        "`{token}` matches {} requests ({}): give more characters of the id",
                        ids.len(),
                        list.join(", ")
                    )));
                }
                // A full id the bridge does not know is still relayed: the gate says, on the
                // record, that no such request is waiting.
                Resolved::Unknown => match RequestId::parse(token) {
                    Ok(rid) if token.len() >= 32 => rid,
                    _ => {
                        return Ok(Reply::only(format!(
                            "no request waiting here has an id starting with `{token}`"
                        )));
                    }
                },
            },
            (None, None) => {
                return Ok(Reply::only(
                    "say which request: `approve <request-id> <reason>`, or reply to the request's message".into(),
                ));
            }
        };
        let tracked = self.store.tracked(&rid).await?;
        let via = Via {
            system: incoming.system.to_owned(),
            place: incoming.place.clone(),
            reference: incoming.reference.clone(),
        };
        let cmd = &incoming.command;
        let (reason, reason_problem) = match cmd.reason_for(&rid, is_bound) {
            Ok(reason) => (reason, None),
            Err(why) => (String::new(), Some(why)),
        };
        let (verdict, accepted) = judge(&incoming, &rid, tracked.as_ref(), reason_problem.as_deref(), now_ms());
        // A missing reason is relayed as it is (the gate refuses it); an oversized one is not
        // carried at all, only its refusal.
        let too_long = cmd.reason.trim().chars().count() > crate::command::MAX_REASON_CHARS;
        let answer = Answer {
            request_id: rid.clone(),
            execution_digest: tracked
                .as_ref()
                .map(|t| t.asked.execution_digest.clone())
                .unwrap_or_else(|| CodeDigest::of(b"")),
            approve: cmd.approve,
            reason,
            who: incoming.who.clone(),
            via,
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
            self.store
                .update(&rid, |t| {
                    if !t.approved_by.contains(&who) {
                        t.approved_by.push(who.clone());
                    }
                })
                .await?;
            self.remember(&rid);
        }
        tracing::info!(request_id = %rid, who = %incoming.who, system = incoming.system, approve = cmd.approve, accepted, "answer relayed");
        Ok(Reply {
            text: verdict,
            relayed: true,
            accepted,
        })
    }
}

/// The bridge's quick reading of an answer, for the human's reply: the gate's own judgement
/// (against the policy in force) is what counts. Returns the text and whether it should count.
pub fn judge(
    incoming: &Incoming,
    rid: &RequestId,
    tracked: Option<&Tracked>,
    reason_problem: Option<&str>,
    now_ms: i64,
) -> (String, bool) {
    let who = &incoming.who;
    let Some(tracked) = tracked else {
        return (
            format!("request {rid} is not waiting for an answer (refused, and recorded)"),
            false,
        );
    };
    if let Some(ended) = &tracked.ended {
        return (
            format!(
                "too late: request {rid} has already ended ({}); your answer is refused and recorded",
                ended.summary
            ),
            false,
        );
    }
    let asked = &tracked.asked;
    if now_ms > asked.deadline_ms {
        return (
            format!(
                "too late: the deadline for request {rid} passed at {}; your answer is refused and recorded",
                crate::render::time_of(asked.deadline_ms)
            ),
            false,
        );
    }
    let allowed = asked
        .approvers
        .get(incoming.system)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if !allowed.iter().any(|a| a == who) {
        let list = if allowed.is_empty() {
            "nobody in this chat".to_owned()
        } else {
            allowed.join(", ")
        };
        return (
            format!(
                "{who} may not answer {} requests; who may: {list}. Your answer is refused and recorded",
                asked.level
            ),
            false,
        );
    }
    if let Some(problem) = reason_problem {
        return (format!("{problem}; nothing was counted"), false);
    }
    let cmd = &incoming.command;
    if let Some(again) = cmd.again {
        let max = Duration::from_millis(asked.approve_again_max_ms);
        if again > max {
            return (
                format!(
                    "approving this code again for {} is not allowed here (at most {}); nothing was counted",
                    humantime::format_duration(again),
                    humantime::format_duration(max)
                ),
                false,
            );
        }
    }
    if !cmd.approve {
        return (format!("request {rid} denied by {who}"), true);
    }
    if tracked.approved_by.contains(who) {
        return (
            format!("{who} has already approved request {rid}; a second approval must come from someone else"),
            false,
        );
    }
    let needed = usize::from(asked.approvals_needed.max(1));
    let count = tracked.approved_by.len() + 1;
    let again = cmd
        .again
        .map(|d| {
            format!(
                "; this exact code will be approved again for {}",
                humantime::format_duration(d)
            )
        })
        .unwrap_or_default();
    if count < needed {
        (
            // Counted from the approvals relayed by this bridge: one given elsewhere (the command
            // line, another chat) may already complete it, which the message's edit will show.
            format!("approval by {who} recorded ({count} of {needed} seen here); another approver is needed{again}"),
            true,
        )
    } else {
        (
            format!("request {rid} approved by {who}{again}; it runs once the gate has signed"),
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

    #[test]
    fn the_quick_reading_matches_the_policy_sent_with_the_request() {
        let rid = RequestId::parse("r1").unwrap();
        let t = tracked(1);
        let (text, ok) = judge(&incoming("@alice:x", true), &rid, Some(&t), None, now_ms());
        assert!(ok && text.contains("approved by @alice:x"), "{text}");
        let (text, ok) = judge(&incoming("@mallory:x", true), &rid, Some(&t), None, now_ms());
        assert!(
            !ok && text.contains("may not answer BLOCKED") && text.contains("@alice:x"),
            "{text}"
        );
        let (text, ok) = judge(&incoming("@alice:x", true), &rid, Some(&t), None, now_ms() + 120_000);
        assert!(!ok && text.contains("too late"), "{text}");
        let (text, ok) = judge(&incoming("@alice:x", true), &rid, None, None, now_ms());
        assert!(!ok && text.contains("not waiting"), "{text}");
        let (text, ok) = judge(
            &incoming("@alice:x", true),
            &rid,
            Some(&t),
            Some("a reason is required"),
            now_ms(),
        );
        assert!(!ok && text.contains("a reason is required"), "{text}");
        let mut again = incoming("@alice:x", true);
        again.command.again = Some(Duration::from_secs(7200));
        assert!(!judge(&again, &rid, Some(&t), None, now_ms()).1);
    }

    #[test]
    fn two_person_rule_is_explained_to_each_approver() {
        let rid = RequestId::parse("r1").unwrap();
        let mut t = tracked(2);
        let (text, ok) = judge(&incoming("@alice:x", true), &rid, Some(&t), None, now_ms());
        assert!(ok && text.contains("1 of 2"), "{text}");
        t.approved_by.push("@alice:x".into());
        let (text, ok) = judge(&incoming("@alice:x", true), &rid, Some(&t), None, now_ms());
        assert!(!ok && text.contains("already approved"), "{text}");
        let (text, ok) = judge(&incoming("@bob:x", true), &rid, Some(&t), None, now_ms());
        assert!(ok && text.contains("approved by @bob:x"), "{text}");
    }
}
