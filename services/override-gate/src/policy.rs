//! The gate's policy, free of I/O: what code of each level and origin gets, who may answer an
//! override request from which chat system, the two-person rule, the escalation plan, and the
//! judgement of one answer. `service.rs` applies it; `config.rs` reads it from `[gate.policy]`.

use airlock_protocol::decision::CoApprover;
use airlock_protocol::overrides::{Escalation, EscalationTarget};
use airlock_protocol::{
    Approver, Assessment, CodeDigest, Level, Limits, Origin, OverrideAnswer, Quotas, RefusalReason, TrustLevel,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// The chat systems a bridge can relay from; `[gate.bridge_keys]`, `[gate.policy.approvers]` and
/// `[gate.policy.escalation]` are keyed by these names.
pub const CHAT_SYSTEMS: [&str; 4] = ["matrix", "slack", "discord", "webhook"];

/// What the gate does with code rated at one level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Run with the quota the request asked for.
    Approve,
    /// Run with at most the `untrusted` quota.
    ApproveUntrusted,
    /// Run with at most this quota, whatever the request asked for.
    ApproveWith(TrustLevel),
    /// Ask a human; no answer by the deadline is a denial.
    Ask,
    Deny,
}

/// Per-level actions for one origin, each replacing the level's general action when set.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct OriginActions {
    pub low: Option<Action>,
    pub medium: Option<Action>,
    pub high: Option<Action>,
    pub blocked: Option<Action>,
}

impl OriginActions {
    fn get(&self, level: Level) -> Option<Action> {
        match level {
            Level::Low => self.low,
            Level::Medium => self.medium,
            Level::High => self.high,
            Level::Blocked => self.blocked,
        }
    }
}

/// Who may answer requests of each level, in one chat system. A level's list replaces the
/// system's own list (`[bridge.<system>] approvers`) for that level.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LevelLists {
    pub low: Option<Vec<String>>,
    pub medium: Option<Vec<String>>,
    pub high: Option<Vec<String>>,
    pub blocked: Option<Vec<String>>,
}

impl LevelLists {
    fn get(&self, level: Level) -> Option<&Vec<String>> {
        match level {
            Level::Low => self.low.as_ref(),
            Level::Medium => self.medium.as_ref(),
            Level::High => self.high.as_ref(),
            Level::Blocked => self.blocked.as_ref(),
        }
    }
}

/// `[gate.policy]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Policy {
    pub low: Action,
    pub medium: Action,
    pub high: Action,
    pub blocked: Action,
    /// `[gate.policy.generated]`: per-level actions for code Mai wrote.
    pub generated: OriginActions,
    /// `[gate.policy.external]`: per-level actions for fetched or pasted code.
    pub external: OriginActions,
    /// The quota a human's approval of an asked request grants (at most what was requested).
    pub override_quota: TrustLevel,
    /// `[gate.policy.approvers.<system>]`: per-level allow-lists refining each chat system's own.
    pub approvers: BTreeMap<String, LevelLists>,
    /// BLOCKED requests need two different approvers; one deny ends them.
    pub two_person: bool,
    /// `[gate.policy.escalation.<system>]`: what each chat system does when half the time to
    /// answer has passed with no decision.
    pub escalation: BTreeMap<String, EscalationTarget>,
    /// The longest an approver may choose to approve the same code again without being asked
    /// (zero: the choice is not offered).
    #[serde(with = "humantime_serde")]
    pub approve_again_max: Duration,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            low: Action::Approve,
            medium: Action::Approve,
            high: Action::ApproveUntrusted,
            blocked: Action::Ask,
            generated: OriginActions::default(),
            external: OriginActions::default(),
            override_quota: TrustLevel::Untrusted,
            approvers: BTreeMap::new(),
            two_person: false,
            escalation: BTreeMap::new(),
            approve_again_max: Duration::ZERO,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ruling {
    Approve {
        quota: TrustLevel,
        limits: Limits,
        rule: String,
    },
    Ask,
    Deny {
        reason: String,
    },
}

/// The policy in force: `[gate.policy]` with each chat system's own approver list, and the
/// version (a digest of both) recorded in every decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EffectivePolicy {
    pub rules: Policy,
    /// `[bridge.<system>] approvers`, by system.
    pub chat_approvers: BTreeMap<String, Vec<String>>,
    pub version: String,
}

impl Default for EffectivePolicy {
    fn default() -> Self {
        Self::new(Policy::default(), BTreeMap::new())
    }
}

/// Where an answer comes from, as the key that signed it says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// An operator's approver key (`airlock override`): trusted for every level, as before
    /// chat bridges existed; `who` is what the operator says.
    Operator,
    /// A chat bridge's key listed for this chat system: `who` is the chat's user id, checked
    /// against the allow-list of that system and level.
    Bridge(String),
}

/// One counted approval of a request still waiting (two-person rule).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    pub who: String,
    pub reason: String,
    #[serde(default)]
    pub via: Option<String>,
    pub key: String,
    #[serde(default)]
    pub approve_again_for_ms: Option<u64>,
    pub at_ms: i64,
}

/// What the request being answered is, as the gate recorded it when asking.
#[derive(Clone, Copy, Debug)]
pub struct Asked<'a> {
    pub level: Level,
    pub code_digest: &'a CodeDigest,
    pub deadline_ms: i64,
    pub requested: TrustLevel,
    /// When the answer is judged.
    pub now_ms: i64,
}

/// What one answer does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Judgement {
    /// Not an answer the gate can count; refused on the record.
    Refuse { reason: RefusalReason, detail: String },
    /// Counted; the request still needs more approvals.
    Count { approvals: Vec<Approval> },
    /// The request is decided. `again_for_ms`: every approver chose to approve this exact code
    /// again for at least this long.
    Decide {
        ruling: Ruling,
        approver: Approver,
        again_for_ms: Option<u64>,
    },
}

fn refuse(reason: RefusalReason, detail: impl Into<String>) -> Judgement {
    Judgement::Refuse {
        reason,
        detail: detail.into(),
    }
}

impl EffectivePolicy {
    pub fn new(rules: Policy, chat_approvers: BTreeMap<String, Vec<String>>) -> Self {
        // serde_json of BTreeMaps and structs is deterministic: the same policy, the same version.
        let canonical = serde_json::to_vec(&(&rules, &chat_approvers)).unwrap_or_default();
        let digest = Sha256::digest(&canonical);
        let version = format!("policy-{}", hex::encode(&digest[..6]));
        Self {
            rules,
            chat_approvers,
            version,
        }
    }

    pub fn action(&self, level: Level, origin: Origin) -> Action {
        let by_origin = match origin {
            Origin::Generated => &self.rules.generated,
            Origin::External => &self.rules.external,
        };
        by_origin.get(level).unwrap_or(match level {
            Level::Low => self.rules.low,
            Level::Medium => self.rules.medium,
            Level::High => self.rules.high,
            Level::Blocked => self.rules.blocked,
        })
    }

    /// What the policy says for code rated `level`, of `origin`, that asked for `requested`.
    pub fn decide(&self, quotas: &Quotas, level: Level, origin: Origin, requested: TrustLevel) -> Ruling {
        let origin_name = match origin {
            Origin::Generated => "generated",
            Origin::External => "external",
        };
        match self.action(level, origin) {
            Action::Approve => approve(quotas, requested, format!("policy: {origin_name} {level} is approved")),
            Action::ApproveUntrusted => approve(
                quotas,
                requested.min(TrustLevel::Untrusted),
                format!("policy: {origin_name} {level} is approved with the untrusted quota"),
            ),
            Action::ApproveWith(cap) => approve(
                quotas,
                requested.min(cap),
                format!(
                    "policy: {origin_name} {level} is approved with at most the {} quota",
                    cap.as_str()
                ),
            ),
            Action::Ask => Ruling::Ask,
            Action::Deny => Ruling::Deny {
                reason: format!("policy: {origin_name} {level} is denied"),
            },
        }
    }

    /// What the policy says for an assessed request: [`EffectivePolicy::decide`] on its level,
    /// except that code the assessor could not analyse is never approved by policy alone: a
    /// human is asked (a denial stays a denial).
    pub fn decide_assessed(
        &self,
        quotas: &Quotas,
        assessment: &Assessment,
        origin: Origin,
        requested: TrustLevel,
    ) -> Ruling {
        match self.decide(quotas, assessment.level, origin, requested) {
            Ruling::Approve { .. } if assessment.unanalysed => Ruling::Ask,
            ruling => ruling,
        }
    }

    /// The quota a human's approval grants.
    pub fn approval_quota(&self, requested: TrustLevel) -> TrustLevel {
        requested.min(self.rules.override_quota)
    }

    fn systems(&self) -> BTreeSet<&str> {
        self.chat_approvers
            .keys()
            .chain(self.rules.approvers.keys())
            .map(String::as_str)
            .collect()
    }

    /// Who may answer requests of `level` from `system`.
    pub fn allowed(&self, system: &str, level: Level) -> &[String] {
        self.rules
            .approvers
            .get(system)
            .and_then(|lists| lists.get(level))
            .or_else(|| self.chat_approvers.get(system))
            .map_or(&[], Vec::as_slice)
    }

    /// Who may answer requests of `level`, per chat system (systems with nobody are left out).
    pub fn approvers_for(&self, level: Level) -> BTreeMap<String, Vec<String>> {
        self.systems()
            .into_iter()
            .filter_map(|system| {
                let allowed = self.allowed(system, level);
                (!allowed.is_empty()).then(|| (system.to_owned(), allowed.to_vec()))
            })
            .collect()
    }

    pub fn approvals_needed(&self, level: Level) -> u8 {
        if self.rules.two_person && level == Level::Blocked {
            2
        } else {
            1
        }
    }

    /// The escalation plan for a request asked at `asked_at_ms` that must be answered by
    /// `deadline_ms`: at half the time, each configured system does what its target says.
    pub fn escalation_plan(&self, asked_at_ms: i64, deadline_ms: i64) -> Option<Escalation> {
        let targets: BTreeMap<String, EscalationTarget> = self
            .rules
            .escalation
            .iter()
            .filter(|(_, t)| t.repost || !t.mention.is_empty() || t.place.is_some())
            .map(|(s, t)| (s.clone(), t.clone()))
            .collect();
        (!targets.is_empty() && deadline_ms > asked_at_ms).then(|| Escalation {
            at_ms: asked_at_ms + (deadline_ms - asked_at_ms) / 2,
            targets,
        })
    }

    pub fn approve_again_max_ms(&self) -> u64 {
        u64::try_from(self.rules.approve_again_max.as_millis()).unwrap_or(u64::MAX)
    }

    /// Judges one answer to a waiting request, given the approvals already counted. Checks, in
    /// order: a refusal at the bridge's edge, the chat system the bridge key vouches for, the
    /// reason, the allow-list of that system and level, the code, the deadline, the "approve
    /// again" bound, then counts (a deny ends the request at once; an approval decides when
    /// enough different approvers have approved).
    pub fn judge(
        &self,
        quotas: &Quotas,
        asked: Asked<'_>,
        prior: &[Approval],
        answer: &OverrideAnswer,
        source: &Source,
        signer: &str,
    ) -> Judgement {
        if let Err((reason, detail)) = self.admissible(&asked, answer, source) {
            return refuse(reason, detail);
        }
        let via_text = answer.via.as_ref().map(|v| format!("{} {}", v.system, v.place));
        if !answer.approve {
            // One deny ends the request, whatever was approved before.
            return Judgement::Decide {
                ruling: Ruling::Deny {
                    reason: format!("denied by {}: {}", answer.who, answer.reason),
                },
                approver: Approver::Human {
                    who: answer.who.clone(),
                    reason: answer.reason.clone(),
                    key: signer.to_owned(),
                    via: via_text,
                    seconded_by: prior
                        .iter()
                        .map(|a| CoApprover {
                            who: a.who.clone(),
                            reason: a.reason.clone(),
                            via: a.via.clone(),
                        })
                        .collect(),
                },
                again_for_ms: None,
            };
        }
        self.count_approval(quotas, &asked, prior, answer, signer, via_text)
    }

    /// Everything an answer must be before it counts: not refused at the bridge's edge, from
    /// the chat system its key vouches for, with a reason, from someone allowed to answer this
    /// level there, for this code, in time, and within the "approve again" bound.
    fn admissible(
        &self,
        asked: &Asked<'_>,
        answer: &OverrideAnswer,
        source: &Source,
    ) -> Result<(), (RefusalReason, String)> {
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
        if let Source::Bridge(system) = source
            && !self.allowed(system, asked.level).iter().any(|a| a == &answer.who)
        {
            return Err((
                RefusalReason::UnknownSigner,
                format!(
                    "{} may not answer {} requests from {system} (policy {})",
                    answer.who, asked.level, self.version
                ),
            ));
        }
        if &answer.code_digest != asked.code_digest {
            return Err((
                RefusalReason::DigestMismatch,
                format!(
                    "answer is for code {}, the request's code is {}",
                    answer.code_digest, asked.code_digest
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
            && (!answer.approve || again > self.approve_again_max_ms())
        {
            return Err((
                RefusalReason::InvalidRequest,
                format!(
                    "approving again for {} is not allowed (at most {})",
                    humantime::format_duration(Duration::from_millis(again)),
                    humantime::format_duration(self.rules.approve_again_max)
                ),
            ));
        }
        Ok(())
    }

    /// Counts an approval; decides once enough different approvers have approved.
    fn count_approval(
        &self,
        quotas: &Quotas,
        asked: &Asked<'_>,
        prior: &[Approval],
        answer: &OverrideAnswer,
        signer: &str,
        via_text: Option<String>,
    ) -> Judgement {
        if prior.iter().any(|a| a.who == answer.who) {
            return refuse(
                RefusalReason::Replayed,
                format!(
                    "{} has already approved; a second approval must come from someone else",
                    answer.who
                ),
            );
        }
        let mut approvals = prior.to_vec();
        approvals.push(Approval {
            who: answer.who.clone(),
            reason: answer.reason.clone(),
            via: via_text,
            key: signer.to_owned(),
            approve_again_for_ms: answer.approve_again_for_ms,
            at_ms: asked.now_ms,
        });
        if approvals.len() < usize::from(self.approvals_needed(asked.level)) {
            return Judgement::Count { approvals };
        }
        let again_for_ms = approvals
            .iter()
            .map(|a| a.approve_again_for_ms)
            .collect::<Option<Vec<u64>>>()
            .and_then(|all| all.into_iter().min());
        let names: Vec<String> = approvals.iter().map(|a| a.who.clone()).collect();
        let first = approvals.remove(0);
        let ruling = approve(
            quotas,
            self.approval_quota(asked.requested),
            format!("override approved by {}", names.join(" and ")),
        );
        Judgement::Decide {
            ruling,
            approver: Approver::Human {
                who: first.who,
                reason: first.reason,
                key: first.key,
                via: first.via,
                seconded_by: approvals
                    .into_iter()
                    .map(|a| CoApprover {
                        who: a.who,
                        reason: a.reason,
                        via: a.via,
                    })
                    .collect(),
            },
            again_for_ms,
        }
    }
}

fn approve(quotas: &Quotas, quota: TrustLevel, rule: String) -> Ruling {
    Ruling::Approve {
        quota,
        limits: quotas.for_level(quota),
        rule,
    }
}

/// The ruling for code a human chose to approve again (a remembered approval).
pub fn approve_remembered(policy: &EffectivePolicy, quotas: &Quotas, requested: TrustLevel, who: &str) -> Ruling {
    approve(
        quotas,
        policy.approval_quota(requested),
        format!("approved again: {who} approved this exact code earlier"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_protocol::overrides::{EdgeRefusal, Via};
    use airlock_protocol::{RequestId, now_ms};

    fn policy(toml_text: &str, chat: &[(&str, &[&str])]) -> EffectivePolicy {
        let rules: Policy = toml::from_str(toml_text).expect("policy parses");
        let chat = chat
            .iter()
            .map(|(s, list)| ((*s).to_owned(), list.iter().map(|w| (*w).to_owned()).collect()))
            .collect();
        EffectivePolicy::new(rules, chat)
    }

    fn answer(who: &str, approve: bool, system: &str, digest: &CodeDigest) -> OverrideAnswer {
        OverrideAnswer {
            request_id: RequestId::parse("r1").expect("id"),
            code_digest: digest.clone(),
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

    fn asked(level: Level, digest: &CodeDigest) -> Asked<'_> {
        Asked {
            level,
            code_digest: digest,
            deadline_ms: now_ms() + 60_000,
            requested: TrustLevel::Trusted,
            now_ms: now_ms(),
        }
    }

    fn judge(p: &EffectivePolicy, a: Asked<'_>, prior: &[Approval], answer: &OverrideAnswer) -> Judgement {
        p.judge(
            &Quotas::default(),
            a,
            prior,
            answer,
            &Source::Bridge("matrix".into()),
            "bridge+1",
        )
    }

    #[test]
    fn default_policy_by_level() {
        let (p, q) = (EffectivePolicy::default(), Quotas::default());
        assert!(matches!(
            p.decide(&q, Level::Low, Origin::External, TrustLevel::Trusted),
            Ruling::Approve {
                quota: TrustLevel::Trusted,
                ..
            }
        ));
        match p.decide(&q, Level::High, Origin::Generated, TrustLevel::Trusted) {
            Ruling::Approve { quota, limits, .. } => {
                assert_eq!(quota, TrustLevel::Untrusted);
                assert_eq!(limits, q.untrusted);
            }
            other => panic!("HIGH should be approved with the untrusted quota, got {other:?}"),
        }
        assert_eq!(
            p.decide(&q, Level::Blocked, Origin::External, TrustLevel::Trusted),
            Ruling::Ask
        );
    }

    #[test]
    fn code_that_could_not_be_analysed_is_asked_about_whatever_the_level() {
        let q = Quotas::default();
        let assessed = |level: Level, unanalysed: bool| Assessment {
            level,
            findings: vec![],
            parse: airlock_protocol::ParseStatus::Complete,
            summary: String::new(),
            language: airlock_protocol::request::Language::Bash,
            origin: Origin::Generated,
            rules_version: "r".into(),
            threats_version: "t".into(),
            elapsed_us: 1,
            unanalysed,
        };
        let default = EffectivePolicy::default();
        for level in [Level::Low, Level::High] {
            assert!(matches!(
                default.decide_assessed(&q, &assessed(level, false), Origin::Generated, TrustLevel::Trusted),
                Ruling::Approve { .. }
            ));
            assert_eq!(
                default.decide_assessed(&q, &assessed(level, true), Origin::Generated, TrustLevel::Trusted),
                Ruling::Ask,
                "{level}"
            );
        }
        // A policy that denies keeps denying.
        let denying = policy("high = \"deny\"", &[]);
        assert!(matches!(
            denying.decide_assessed(&q, &assessed(Level::High, true), Origin::Generated, TrustLevel::Trusted),
            Ruling::Deny { .. }
        ));
    }

    #[test]
    fn origin_sections_refine_each_level() {
        let p = policy(
            r#"
            medium = { approve_with = "unknown" }
            high = "approve_untrusted"
            [external]
            medium = "ask"
            high = "deny"
            "#,
            &[],
        );
        let q = Quotas::default();
        assert_eq!(
            p.decide(&q, Level::Medium, Origin::External, TrustLevel::Trusted),
            Ruling::Ask
        );
        assert!(matches!(
            p.decide(&q, Level::Medium, Origin::Generated, TrustLevel::Trusted),
            Ruling::Approve {
                quota: TrustLevel::Unknown,
                ..
            }
        ));
        assert!(matches!(
            p.decide(&q, Level::High, Origin::External, TrustLevel::Trusted),
            Ruling::Deny { .. }
        ));
        // approve_with never raises the requested quota.
        assert!(matches!(
            p.decide(&q, Level::Medium, Origin::Generated, TrustLevel::Untrusted),
            Ruling::Approve {
                quota: TrustLevel::Untrusted,
                ..
            }
        ));
    }

    #[test]
    fn the_version_changes_with_the_policy_and_only_with_it() {
        let a = policy("two_person = true", &[("matrix", &["@a:x"])]);
        let b = policy("two_person = true", &[("matrix", &["@a:x"])]);
        let c = policy("two_person = true", &[("matrix", &["@a:x", "@b:x"])]);
        assert_eq!(a.version, b.version);
        assert_ne!(a.version, c.version);
        assert!(a.version.starts_with("policy-"));
    }

    #[test]
    fn level_lists_replace_the_systems_own_list() {
        let p = policy(
            r#"
            [approvers.matrix]
            blocked = ["@alice:x"]
            "#,
            &[("matrix", &["@alice:x", "@bob:x"]), ("slack", &["U1"])],
        );
        assert_eq!(p.allowed("matrix", Level::Blocked), ["@alice:x".to_owned()]);
        assert_eq!(p.allowed("matrix", Level::High).len(), 2);
        assert_eq!(p.allowed("discord", Level::High).len(), 0);
        let by_system = p.approvers_for(Level::Blocked);
        assert_eq!(by_system.len(), 2);
        assert_eq!(by_system["slack"], ["U1".to_owned()]);
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
                ruling: Ruling::Approve { quota, .. },
                approver: Approver::Human { who, via, .. },
                again_for_ms: None,
            } => {
                assert_eq!(quota, TrustLevel::Untrusted);
                assert_eq!(who, "@alice:x");
                assert_eq!(via.as_deref(), Some("matrix !room:localhost"));
            }
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
        let digest = CodeDigest::of(b"code");
        let a = asked(Level::Blocked, &digest);
        let Judgement::Count { approvals } = judge(&p, a, &[], &answer("@alice:x", true, "matrix", &digest)) else {
            panic!("the first approval should only be counted")
        };
        assert!(matches!(
            judge(&p, a, &approvals, &answer("@alice:x", true, "matrix", &digest)),
            Judgement::Refuse {
                reason: RefusalReason::Replayed,
                ..
            }
        ));
        match judge(&p, a, &approvals, &answer("@bob:x", true, "matrix", &digest)) {
            Judgement::Decide {
                ruling: Ruling::Approve { rule, .. },
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
        assert!(matches!(
            judge(&p, a, &approvals, &answer("@bob:x", false, "matrix", &digest)),
            Judgement::Decide {
                ruling: Ruling::Deny { .. },
                ..
            }
        ));
        // Below BLOCKED one approval is enough.
        assert!(matches!(
            judge(
                &p,
                asked(Level::High, &digest),
                &[],
                &answer("@bob:x", true, "matrix", &digest)
            ),
            Judgement::Decide { .. }
        ));
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

    #[test]
    fn escalation_is_planned_at_half_the_time() {
        let p = policy(
            r#"
            [escalation.matrix]
            mention = ["@carol:x"]
            "#,
            &[],
        );
        let plan = p.escalation_plan(1_000, 61_000).expect("a plan");
        assert_eq!(plan.at_ms, 31_000);
        assert_eq!(plan.targets["matrix"].mention, ["@carol:x".to_owned()]);
        assert!(EffectivePolicy::default().escalation_plan(1_000, 61_000).is_none());
    }
}
