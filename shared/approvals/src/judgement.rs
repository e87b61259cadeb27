//! The judgement of one human's answer to an override request, free of I/O: where it comes
//! from (an operator's key, or a chat bridge vouching for a chat system), whether it may count
//! (the bridge's edge checks, the allow-list of that system and level, a reason, the exact
//! execution digest the human was shown, the deadline, the "approve again" bound, the person
//! behind the identity), and what it does (counted under the two-person rule, or deciding).
//! The gate applies it and alone decides; the chat bridge runs the same judgement on what the
//! gate sent with the request, to tell a human at once what will become of their answer.

use crate::people::People;
use airlock_protocol::decision::CoApprover;
use airlock_protocol::{Approver, CodeDigest, Grant, Level, OverrideAnswer, OverrideAsked, RefusalReason};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What the judgement needs of a policy: who may answer, how many must approve, how long an
/// approval may be remembered. The gate's policy in force implements it; so does an override
/// request, as the policy the gate asked it under.
pub trait AnswerPolicy {
    /// Who may answer requests of `level` from chat `system`.
    fn allowed(&self, system: &str, level: Level) -> &[String];
    /// Different people who must approve a request of `level`.
    fn approvals_needed(&self, level: Level) -> u8;
    /// The longest "approve this exact execution again" (0: not offered).
    fn approve_again_max_ms(&self) -> u64;
    /// The policy's version, for refusals.
    fn version(&self) -> &str;
}

/// The policy an override request was asked under, as the gate sent it with the request (its
/// approvers are those of its level already).
impl AnswerPolicy for OverrideAsked {
    fn allowed(&self, system: &str, _level: Level) -> &[String] {
        self.approvers.get(system).map(Vec::as_slice).unwrap_or_default()
    }
    fn approvals_needed(&self, _level: Level) -> u8 {
        self.approvals_needed.max(1)
    }
    fn approve_again_max_ms(&self) -> u64 {
        self.approve_again_max_ms
    }
    fn version(&self) -> &str {
        &self.policy_version
    }
}

/// What a deciding answer decides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Run, with exactly what the human was shown.
    Approve {
        grant: Grant,
        rule: String,
    },
    Deny {
        reason: String,
    },
}

impl Verdict {
    pub fn is_approve(&self) -> bool {
        matches!(self, Verdict::Approve { .. })
    }
}

/// Where an answer comes from, as the key that signed it says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// An operator's approver key (`airlock override`): trusted for every level. When the key is
    /// a person's own (`airlock keys add-operator NAME`, or listed in `[people]`), `who` must be
    /// that person; with the shared approver key, `who` is what the operator typed.
    Operator { person: Option<String> },
    /// A chat bridge's key listed for this chat system: `who` is the chat's user id, checked
    /// against the allow-list of that system and level.
    Bridge(String),
}

/// One counted approval of a request still waiting (two-person rule).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    pub who: String,
    /// The person behind `who` (`[people]`), when known.
    #[serde(default)]
    pub person: Option<String>,
    pub reason: String,
    #[serde(default)]
    pub via: Option<String>,
    pub key: String,
    #[serde(default)]
    pub approve_again_for_ms: Option<u64>,
    pub at_ms: i64,
}

impl Approval {
    /// Who this approval counts as: the person, else the identity itself.
    fn counts_as(&self) -> &str {
        self.person.as_deref().unwrap_or(&self.who)
    }
}

/// What the request being answered is, as the gate recorded it when asking.
#[derive(Clone, Copy, Debug)]
pub struct Asked<'a> {
    pub level: Level,
    /// What the human was shown and an answer must sign: the request run with `grant`.
    pub execution_digest: &'a CodeDigest,
    /// What an approval grants (shown to the human).
    pub grant: &'a Grant,
    pub deadline_ms: i64,
    /// When the answer is judged.
    pub now_ms: i64,
}

/// What one answer does. (Judged once per answer: the size of its variants does not matter.)
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Judgement {
    /// Not an answer the gate can count; refused on the record.
    Refuse { reason: RefusalReason, detail: String },
    /// Counted; the request still needs more approvals.
    Count { approvals: Vec<Approval> },
    /// The request is decided. `again_for_ms`: every approver chose to approve this exact
    /// execution again for at least this long.
    Decide {
        verdict: Verdict,
        approver: Approver,
        again_for_ms: Option<u64>,
        /// The approvals that decided (empty for a denial).
        approvals: Vec<Approval>,
    },
}

fn refuse(reason: RefusalReason, detail: impl Into<String>) -> Judgement {
    Judgement::Refuse {
        reason,
        detail: detail.into(),
    }
}

/// The policy and the people it is judged by.
pub struct Judge<'a, P: AnswerPolicy + ?Sized> {
    pub policy: &'a P,
    pub people: &'a People,
}

impl<P: AnswerPolicy + ?Sized> Judge<'_, P> {
    /// Judges one answer to a waiting request, given the approvals already counted. Checks, in
    /// order: a refusal at the bridge's edge, the chat system the bridge key vouches for, the
    /// reason, the allow-list of that system and level, the person behind the answer, the
    /// execution digest, the deadline, the "approve again" bound, then counts (a deny ends the
    /// request at once; an approval decides when enough different people have approved).
    pub fn judge(
        &self,
        asked: Asked<'_>,
        prior: &[Approval],
        answer: &OverrideAnswer,
        source: &Source,
        signer: &str,
    ) -> Judgement {
        let person = match self.admissible(&asked, answer, source) {
            Ok(person) => person,
            Err((reason, detail)) => return refuse(reason, detail),
        };
        let via_text = answer.via.as_ref().map(|v| format!("{} {}", v.system, v.place));
        if !answer.approve {
            // One deny ends the request, whatever was approved before.
            return Judgement::Decide {
                verdict: Verdict::Deny {
                    reason: format!("denied by {}: {}", answer.who, answer.reason),
                },
                approver: Approver::Human {
                    who: answer.who.clone(),
                    reason: answer.reason.clone(),
                    key: signer.to_owned(),
                    via: via_text,
                    // Those who approved before a deny did not decide it: they are not its
                    // seconds (the record keeps their approvals).
                    seconded_by: vec![],
                },
                again_for_ms: None,
                approvals: vec![],
            };
        }
        let approval = Approval {
            who: answer.who.clone(),
            person,
            reason: answer.reason.clone(),
            via: via_text,
            key: signer.to_owned(),
            approve_again_for_ms: answer.approve_again_for_ms,
            at_ms: asked.now_ms,
        };
        self.count_approval(&asked, prior, approval)
    }

    /// Everything an answer must be before it counts: not refused at the bridge's edge, from
    /// the chat system its key vouches for, with a reason, from someone allowed to answer this
    /// level there, signed as the person its key belongs to, for exactly this execution, in
    /// time, and within the "approve again" bound. Returns the person behind the answer.
    fn admissible(
        &self,
        asked: &Asked<'_>,
        answer: &OverrideAnswer,
        source: &Source,
    ) -> Result<Option<String>, (RefusalReason, String)> {
        let policy = self.policy;
        let from = answer
            .via
            .as_ref()
            .map(|v| format!("{} {}", v.system, v.place))
            .unwrap_or_else(|| "the command line".into());
        if let Some(edge) = &answer.refused_at_edge {
            return Err((
                edge.reason,
                format!("refused by the chat bridge ({from}): {}", edge.detail),
            ));
        }
        if let Source::Bridge(system) = source {
            match &answer.via {
                Some(via) if &via.system == system => {}
                Some(via) => {
                    return Err((
                        RefusalReason::UnknownSigner,
                        format!(
                            "signed with the bridge key for {system} but relayed from {}",
                            via.system
                        ),
                    ));
                }
                None => {
                    return Err((
                        RefusalReason::UnknownSigner,
                        format!("a bridge key for {system} signed an answer that names no chat"),
                    ));
                }
            }
        }
        if answer.reason.trim().is_empty() {
            return Err((
                RefusalReason::InvalidRequest,
                format!(
                    "{} answered from {from} without a reason; a reason is required",
                    answer.who
                ),
            ));
        }
        if let Source::Bridge(system) = source {
            let allowed = policy.allowed(system, asked.level);
            if !allowed.iter().any(|a| a == &answer.who) {
                let who_may = if allowed.is_empty() {
                    "nobody".to_owned()
                } else {
                    allowed.join(", ")
                };
                return Err((
                    RefusalReason::UnknownSigner,
                    format!(
                        "{} may not answer {} requests from {system}; who may: {who_may} (policy {})",
                        answer.who,
                        asked.level,
                        policy.version()
                    ),
                ));
            }
        }
        let person = match source {
            Source::Bridge(system) => self.people.of_identity(system, &answer.who).map(str::to_owned),
            Source::Operator { person: Some(person) } => {
                if &answer.who != person {
                    return Err((
                        RefusalReason::UnknownSigner,
                        format!(
                            "signed with {person}'s operator key but answering as {:?}: who answers is the key's person",
                            answer.who
                        ),
                    ));
                }
                Some(person.clone())
            }
            Source::Operator { person: None } => None,
        };
        if &answer.execution_digest != asked.execution_digest {
            return Err((
                RefusalReason::DigestMismatch,
                format!(
                    "answer is for execution {}, the request is {}",
                    answer.execution_digest, asked.execution_digest
                ),
            ));
        }
        if asked.now_ms > asked.deadline_ms {
            return Err((
                RefusalReason::Expired,
                format!("{} answered from {from} after the deadline", answer.who),
            ));
        }
        if let Some(again) = answer.approve_again_for_ms
            && (!answer.approve || again > policy.approve_again_max_ms())
        {
            return Err((
                RefusalReason::InvalidRequest,
                format!(
                    "approving again for {} is not allowed (at most {})",
                    humantime::format_duration(Duration::from_millis(again)),
                    humantime::format_duration(Duration::from_millis(policy.approve_again_max_ms()))
                ),
            ));
        }
        Ok(person)
    }

    /// Counts an approval; decides once enough different people have approved. Under the
    /// two-person rule, an identity that maps to no person cannot be one of the two: otherwise
    /// one person with two accounts would be two approvers.
    fn count_approval(&self, asked: &Asked<'_>, prior: &[Approval], approval: Approval) -> Judgement {
        let needed = usize::from(self.policy.approvals_needed(asked.level));
        if needed > 1 && approval.person.is_none() {
            return refuse(
                RefusalReason::UnknownSigner,
                format!(
                    "{} is not mapped to a person in [people]; under the two-person rule only people can be counted",
                    approval.who
                ),
            );
        }
        if prior.iter().any(|a| a.counts_as() == approval.counts_as()) {
            let as_whom = match &approval.person {
                Some(person) if person != &approval.who => format!(" (as {person})"),
                _ => String::new(),
            };
            return refuse(
                RefusalReason::Replayed,
                format!(
                    "{}{as_whom} has already approved; a second approval must come from someone else",
                    approval.who
                ),
            );
        }
        let mut approvals = prior.to_vec();
        approvals.push(approval);
        if approvals.len() < needed {
            return Judgement::Count { approvals };
        }
        let again_for_ms = approvals
            .iter()
            .map(|a| a.approve_again_for_ms)
            .collect::<Option<Vec<u64>>>()
            .and_then(|all| all.into_iter().min());
        let names: Vec<&str> = approvals.iter().map(|a| a.who.as_str()).collect();
        // The human approved what they were shown: exactly this grant.
        let verdict = Verdict::Approve {
            grant: asked.grant.clone(),
            rule: format!("override approved by {}", names.join(" and ")),
        };
        let first = &approvals[0];
        let approver = Approver::Human {
            who: first.who.clone(),
            reason: first.reason.clone(),
            key: first.key.clone(),
            via: first.via.clone(),
            seconded_by: approvals[1..]
                .iter()
                .map(|a| CoApprover {
                    who: a.who.clone(),
                    reason: a.reason.clone(),
                    via: a.via.clone(),
                })
                .collect(),
        };
        Judgement::Decide {
            verdict,
            approver,
            again_for_ms,
            approvals,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::people::Person;
    use airlock_protocol::overrides::{EdgeRefusal, Via};
    use airlock_protocol::{NetworkMode, Quotas, RequestId, Runtime, TrustLevel, now_ms};
    use std::collections::BTreeMap;

    /// A policy as the gate's would answer: lists per chat system, the two-person rule for
    /// BLOCKED, an "approve again" bound.
    struct TestPolicy {
        chat: BTreeMap<String, Vec<String>>,
        two_person: bool,
        again_max_ms: u64,
    }

    impl AnswerPolicy for TestPolicy {
        fn allowed(&self, system: &str, _level: Level) -> &[String] {
            self.chat.get(system).map(Vec::as_slice).unwrap_or_default()
        }
        fn approvals_needed(&self, level: Level) -> u8 {
            if self.two_person && level == Level::Blocked {
                2
            } else {
                1
            }
        }
        fn approve_again_max_ms(&self) -> u64 {
            self.again_max_ms
        }
        fn version(&self) -> &str {
            "policy-test"
        }
    }

    /// `settings`: `two_person = true` and/or `approve_again_max = "8h"`.
    fn policy(settings: &str, chat: &[(&str, &[&str])]) -> TestPolicy {
        let again = settings
            .split("approve_again_max = \"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .map(|d| humantime::parse_duration(d).expect("duration").as_millis() as u64)
            .unwrap_or(0);
        TestPolicy {
            chat: chat
                .iter()
                .map(|(s, list)| ((*s).to_owned(), list.iter().map(|w| (*w).to_owned()).collect()))
                .collect(),
            two_person: settings.contains("two_person = true"),
            again_max_ms: again,
        }
    }

    fn people(text: &str) -> People {
        let table: BTreeMap<String, Person> = toml::from_str(text).expect("people");
        People::new(&table, &BTreeMap::new()).expect("valid people")
    }

    fn answer(who: &str, approve: bool, system: &str, digest: &CodeDigest) -> OverrideAnswer {
        OverrideAnswer {
            request_id: RequestId::parse("r1").expect("id"),
            execution_digest: digest.clone(),
            approve,
            reason: "looked at it".into(),
            who: who.into(),
            answered_at_ms: now_ms(),
            via: Some(Via {
                system: system.into(),
                place: "!room:localhost".into(),
                reference: "$event".into(),
            }),
            approve_again_for_ms: None,
            refused_at_edge: None,
        }
    }

    static GRANT: std::sync::LazyLock<Grant> = std::sync::LazyLock::new(|| Grant {
        quota: TrustLevel::Untrusted,
        limits: Quotas::default().untrusted,
        runtime: Runtime::Runc,
        network: NetworkMode::None,
        read_only_hosts: vec![],
    });

    fn asked(level: Level, digest: &CodeDigest) -> Asked<'_> {
        Asked {
            level,
            execution_digest: digest,
            grant: &GRANT,
            deadline_ms: now_ms() + 60_000,
            now_ms: now_ms(),
        }
    }

    fn judge_by(p: &TestPolicy, who: &People, a: Asked<'_>, prior: &[Approval], answer: &OverrideAnswer) -> Judgement {
        Judge { policy: p, people: who }.judge(a, prior, answer, &Source::Bridge("matrix".into()), "bridge+1")
    }

    fn judge(p: &TestPolicy, a: Asked<'_>, prior: &[Approval], answer: &OverrideAnswer) -> Judgement {
        judge_by(p, &people(""), a, prior, answer)
    }

    #[test]
    fn only_listed_users_with_a_reason_may_answer() {
        let p = policy("", &[("matrix", &["@alice:x"])]);
        let digest = CodeDigest::of(b"code");
        let a = asked(Level::Blocked, &digest);
        match judge(&p, a, &[], &answer("@mallory:x", true, "matrix", &digest)) {
            Judgement::Refuse { reason, detail } => {
                assert_eq!(reason, RefusalReason::UnknownSigner);
                assert!(detail.contains("@mallory:x") && detail.contains("BLOCKED"), "{detail}");
            }
            other => panic!("{other:?}"),
        }
        let mut no_reason = answer("@alice:x", true, "matrix", &digest);
        no_reason.reason = "  ".into();
        assert!(matches!(
            judge(&p, a, &[], &no_reason),
            Judgement::Refuse {
                reason: RefusalReason::InvalidRequest,
                ..
            }
        ));
        // A bridge key for matrix cannot vouch for a slack user.
        assert!(matches!(
            judge(&p, a, &[], &answer("@alice:x", true, "slack", &digest)),
            Judgement::Refuse {
                reason: RefusalReason::UnknownSigner,
                ..
            }
        ));
        match judge(&p, a, &[], &answer("@alice:x", true, "matrix", &digest)) {
            Judgement::Decide {
                verdict: Verdict::Approve { grant, .. },
                approver: Approver::Human { who, via, .. },
                again_for_ms: None,
                ..
            } => {
                assert_eq!(grant.quota, TrustLevel::Untrusted);
                assert_eq!(who, "@alice:x");
                assert_eq!(via.as_deref(), Some("matrix !room:localhost"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_approval_grants_exactly_what_the_human_was_shown() {
        let p = policy("", &[("matrix", &["@alice:x"])]);
        let digest = CodeDigest::of(b"code");
        let mut shown = GRANT.clone();
        shown.runtime = Runtime::Runsc;
        shown.limits.wall_ms = 1234;
        shown.network = NetworkMode::ReadOnly;
        shown.read_only_hosts = vec!["docs.python.org".into()];
        let mut a = asked(Level::Blocked, &digest);
        a.grant = &shown;
        match judge(&p, a, &[], &answer("@alice:x", true, "matrix", &digest)) {
            Judgement::Decide {
                verdict: Verdict::Approve { grant, .. },
                ..
            } => assert_eq!(&grant, a.grant),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn late_foreign_and_edge_refused_answers_are_refused() {
        let p = policy("", &[("matrix", &["@alice:x"])]);
        let digest = CodeDigest::of(b"code");
        let mut late = asked(Level::Blocked, &digest);
        late.deadline_ms = now_ms() - 1;
        assert!(matches!(
            judge(&p, late, &[], &answer("@alice:x", true, "matrix", &digest)),
            Judgement::Refuse {
                reason: RefusalReason::Expired,
                ..
            }
        ));
        let other = CodeDigest::of(b"other");
        assert!(matches!(
            judge(
                &p,
                asked(Level::Blocked, &digest),
                &[],
                &answer("@alice:x", true, "matrix", &other)
            ),
            Judgement::Refuse {
                reason: RefusalReason::DigestMismatch,
                ..
            }
        ));
        let mut edge = answer("@alice:x", true, "matrix", &digest);
        edge.refused_at_edge = Some(EdgeRefusal {
            reason: RefusalReason::Replayed,
            detail: "seen before".into(),
        });
        assert!(matches!(
            judge(&p, asked(Level::Blocked, &digest), &[], &edge),
            Judgement::Refuse {
                reason: RefusalReason::Replayed,
                ..
            }
        ));
    }

    #[test]
    fn two_person_rule_needs_two_different_approvers_and_one_deny_ends_it() {
        let p = policy("two_person = true", &[("matrix", &["@alice:x", "@bob:x"])]);
        let who = people("[alice]\nmatrix = [\"@alice:x\"]\n[bob]\nmatrix = [\"@bob:x\"]\n");
        let digest = CodeDigest::of(b"code");
        let a = asked(Level::Blocked, &digest);
        let Judgement::Count { approvals } = judge_by(&p, &who, a, &[], &answer("@alice:x", true, "matrix", &digest))
        else {
            panic!("the first approval should only be counted")
        };
        assert!(matches!(
            judge_by(&p, &who, a, &approvals, &answer("@alice:x", true, "matrix", &digest)),
            Judgement::Refuse {
                reason: RefusalReason::Replayed,
                ..
            }
        ));
        match judge_by(&p, &who, a, &approvals, &answer("@bob:x", true, "matrix", &digest)) {
            Judgement::Decide {
                verdict: Verdict::Approve { rule, .. },
                approver: Approver::Human { who, seconded_by, .. },
                ..
            } => {
                assert_eq!(who, "@alice:x");
                assert_eq!(seconded_by.len(), 1);
                assert_eq!(seconded_by[0].who, "@bob:x");
                assert!(rule.contains("@alice:x and @bob:x"), "{rule}");
            }
            other => panic!("{other:?}"),
        }
        match judge_by(&p, &who, a, &approvals, &answer("@bob:x", false, "matrix", &digest)) {
            Judgement::Decide {
                verdict: Verdict::Deny { reason },
                approver: Approver::Human { seconded_by, .. },
                ..
            } => {
                // A deny is the denier's alone: the earlier approval is not its second.
                assert!(seconded_by.is_empty());
                assert!(reason.contains("@bob:x") && !reason.contains("@alice:x"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        // Below BLOCKED one approval is enough.
        assert!(matches!(
            judge_by(
                &p,
                &who,
                asked(Level::High, &digest),
                &[],
                &answer("@bob:x", true, "matrix", &digest)
            ),
            Judgement::Decide { .. }
        ));
    }

    #[test]
    fn the_two_person_rule_counts_people_not_accounts() {
        let p = policy(
            "two_person = true",
            &[("matrix", &["@bob:x", "@carol:x", "@dave:x"]), ("slack", &["U0BOB"])],
        );
        let who = people("[bob]\nmatrix = [\"@bob:x\"]\nslack = [\"U0BOB\"]\n[carol]\nmatrix = [\"@carol:x\"]\n");
        let digest = CodeDigest::of(b"code");
        let a = asked(Level::Blocked, &digest);
        let judge = |prior: &[Approval], answer: &OverrideAnswer, system: &str| {
            Judge {
                policy: &p,
                people: &who,
            }
            .judge(a, prior, answer, &Source::Bridge(system.into()), "bridge+1")
        };
        let Judgement::Count { approvals } = judge(&[], &answer("U0BOB", true, "slack", &digest), "slack") else {
            panic!("bob's first approval counts")
        };
        assert_eq!(approvals[0].person.as_deref(), Some("bob"));
        // Bob again, from Matrix: the same person.
        match judge(&approvals, &answer("@bob:x", true, "matrix", &digest), "matrix") {
            Judgement::Refuse { reason, detail } => {
                assert_eq!(reason, RefusalReason::Replayed);
                assert!(detail.contains("as bob"), "{detail}");
            }
            other => panic!("{other:?}"),
        }
        // Dave is allowed in Matrix but is nobody in [people]: not one of the two.
        assert!(matches!(
            judge(&approvals, &answer("@dave:x", true, "matrix", &digest), "matrix"),
            Judgement::Refuse {
                reason: RefusalReason::UnknownSigner,
                ..
            }
        ));
        assert!(matches!(
            judge(&approvals, &answer("@carol:x", true, "matrix", &digest), "matrix"),
            Judgement::Decide { .. }
        ));
    }

    #[test]
    fn an_operator_key_of_a_person_answers_as_that_person_only() {
        let p = policy("", &[]);
        let digest = CodeDigest::of(b"code");
        let a = asked(Level::Blocked, &digest);
        let mut as_alice = answer("alice", true, "matrix", &digest);
        as_alice.via = None;
        let judge = |answer: &OverrideAnswer, person: Option<&str>| {
            Judge {
                policy: &p,
                people: &People::default(),
            }
            .judge(
                a,
                &[],
                answer,
                &Source::Operator {
                    person: person.map(str::to_owned),
                },
                "alice+1",
            )
        };
        assert!(matches!(judge(&as_alice, Some("alice")), Judgement::Decide { .. }));
        let mut as_bob = as_alice.clone();
        as_bob.who = "bob".into();
        assert!(matches!(
            judge(&as_bob, Some("alice")),
            Judgement::Refuse {
                reason: RefusalReason::UnknownSigner,
                ..
            }
        ));
        // The shared approver key: who is what was typed.
        assert!(matches!(judge(&as_bob, None), Judgement::Decide { .. }));
    }

    #[test]
    fn approving_again_is_bounded_by_the_policy_and_for_approvals_only() {
        let digest = CodeDigest::of(b"code");
        let off = policy("", &[("matrix", &["@alice:x"])]);
        let mut again = answer("@alice:x", true, "matrix", &digest);
        again.approve_again_for_ms = Some(3_600_000);
        assert!(matches!(
            judge(&off, asked(Level::Blocked, &digest), &[], &again),
            Judgement::Refuse {
                reason: RefusalReason::InvalidRequest,
                ..
            }
        ));
        let on = policy("approve_again_max = \"8h\"", &[("matrix", &["@alice:x"])]);
        assert!(matches!(
            judge(&on, asked(Level::Blocked, &digest), &[], &again),
            Judgement::Decide {
                again_for_ms: Some(3_600_000),
                ..
            }
        ));
        again.approve = false;
        assert!(matches!(
            judge(&on, asked(Level::Blocked, &digest), &[], &again),
            Judgement::Refuse { .. }
        ));
    }
}
