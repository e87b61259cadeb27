//! The gate's policy, free of I/O: what code of each level and origin gets (and what an
//! approval grants: quota, runtime, network), who may answer an override request from which chat
//! system, the two-person rule, the escalation plan and the "approve again" bound. The judgement
//! of one answer is `airlock_approvals` (shared with the chat bridge), which reads this policy
//! through [`AnswerPolicy`]; `service.rs` applies both; `config.rs` reads the policy from
//! `[gate.policy]`.

use airlock_approvals::{AnswerPolicy, Verdict};
use airlock_protocol::overrides::{Escalation, EscalationTarget};
use airlock_protocol::{Assessment, Grant, Level, Limits, NetworkMode, Origin, Quotas, Runtime, TrustLevel};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

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
        runtime: Runtime,
        network: NetworkMode,
        rule: String,
    },
    Ask,
    Deny {
        reason: String,
    },
}

impl From<Verdict> for Ruling {
    fn from(verdict: Verdict) -> Self {
        match verdict {
            Verdict::Approve { grant, rule } => Ruling::approve(grant, rule),
            Verdict::Deny { reason } => Ruling::Deny { reason },
        }
    }
}

impl Ruling {
    pub fn approve(grant: Grant, rule: String) -> Self {
        Ruling::Approve {
            quota: grant.quota,
            limits: grant.limits,
            runtime: grant.runtime,
            network: grant.network,
            rule,
        }
    }

    /// What an approval grants.
    pub fn grant(&self) -> Option<Grant> {
        match *self {
            Ruling::Approve {
                quota,
                limits,
                runtime,
                network,
                ..
            } => Some(Grant {
                quota,
                limits,
                runtime,
                network,
            }),
            Ruling::Ask | Ruling::Deny { .. } => None,
        }
    }
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
            Action::Approve => self.approve(quotas, requested, format!("policy: {origin_name} {level} is approved")),
            Action::ApproveUntrusted => self.approve(
                quotas,
                requested.min(TrustLevel::Untrusted),
                format!("policy: {origin_name} {level} is approved with the untrusted quota"),
            ),
            Action::ApproveWith(cap) => self.approve(
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

    /// What an approval with `quota` grants: the quota's limits, the runtime and the network.
    pub fn grant(&self, quotas: &Quotas, quota: TrustLevel) -> Grant {
        Grant {
            quota,
            limits: quotas.for_level(quota),
            runtime: Runtime::Runc,
            network: NetworkMode::None,
        }
    }

    /// What a human's approval of a request that asked for `requested` grants: shown to the
    /// human, signed into the execution digest they answer.
    pub fn approval_grant(&self, quotas: &Quotas, requested: TrustLevel) -> Grant {
        self.grant(quotas, self.approval_quota(requested))
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

    fn approve(&self, quotas: &Quotas, quota: TrustLevel, rule: String) -> Ruling {
        Ruling::approve(self.grant(quotas, quota), rule)
    }
}

/// The policy in force, as the answer judgement reads it.
impl AnswerPolicy for EffectivePolicy {
    fn allowed(&self, system: &str, level: Level) -> &[String] {
        EffectivePolicy::allowed(self, system, level)
    }
    fn approvals_needed(&self, level: Level) -> u8 {
        EffectivePolicy::approvals_needed(self, level)
    }
    fn approve_again_max_ms(&self) -> u64 {
        EffectivePolicy::approve_again_max_ms(self)
    }
    fn version(&self) -> &str {
        &self.version
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(toml_text: &str, chat: &[(&str, &[&str])]) -> EffectivePolicy {
        let rules: Policy = toml::from_str(toml_text).expect("policy parses");
        let chat = chat
            .iter()
            .map(|(s, list)| ((*s).to_owned(), list.iter().map(|w| (*w).to_owned()).collect()))
            .collect();
        EffectivePolicy::new(rules, chat)
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
            packages: vec![],
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
