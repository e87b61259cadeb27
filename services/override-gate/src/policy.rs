//! The gate's policy, free of I/O: what code of each level and origin gets (and what an
//! approval grants: quota, runtime, network), who may answer an override request from which chat
//! system, the two-person rule, the escalation plan and the "approve again" bound. The judgement
//! of one answer is `airlock_approvals` (shared with the chat bridge), which reads this policy
//! through [`AnswerPolicy`]; `service.rs` applies both; `config.rs` reads the policy from
//! `[gate.policy]`.

use airlock_approvals::{AnswerPolicy, Verdict};
use airlock_protocol::overrides::{Escalation, EscalationTarget};
use airlock_protocol::{Assessment, Grant, Level, NetworkMode, Origin, Quotas, Runtime, TrustLevel};
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

/// What the gate does when the runtime the policy chooses is not one the stack offers
/// (`[executor.runtimes] available`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WhenUnavailable {
    /// Run under the strongest runtime offered (runc where gVisor is not installed): the
    /// decision, the approver's message and the audit log name the runtime actually granted.
    #[default]
    FallBack,
    /// Deny the request: code the policy wants under gVisor never runs on the host's kernel.
    Deny,
}

/// `[gate.policy.runtimes]`: the container runtime each request runs under. A request gets the
/// strongest (runsc over runc) of its level's runtime and its origin's, when set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RuntimeChoice {
    pub low: Runtime,
    pub medium: Runtime,
    pub high: Runtime,
    pub blocked: Runtime,
    /// Code Mai wrote, whatever its level.
    pub generated: Option<Runtime>,
    /// Fetched or pasted code, whatever its level.
    pub external: Option<Runtime>,
    pub unavailable: WhenUnavailable,
}

impl Default for RuntimeChoice {
    fn default() -> Self {
        Self {
            low: Runtime::Runc,
            medium: Runtime::Runc,
            high: Runtime::Runsc,
            blocked: Runtime::Runsc,
            generated: None,
            external: Some(Runtime::Runsc),
            unavailable: WhenUnavailable::FallBack,
        }
    }
}

impl RuntimeChoice {
    /// The runtime the policy wants for code of `level` and `origin`, before asking what the
    /// stack offers.
    pub fn wanted(&self, level: Level, origin: Origin) -> Runtime {
        let by_level = match level {
            Level::Low => self.low,
            Level::Medium => self.medium,
            Level::High => self.high,
            Level::Blocked => self.blocked,
        };
        let by_origin = match origin {
            Origin::Generated => self.generated,
            Origin::External => self.external,
        };
        // `Runtime` is ordered by strength: runc < runsc.
        by_origin.map_or(by_level, |r| r.max(by_level))
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
    /// `[gate.policy.runtimes]`: which runtime each request runs under.
    pub runtimes: RuntimeChoice,
    /// `[gate.policy.read_only]`: which code may have read-only internet by policy alone.
    pub read_only: ReadOnlyRule,
}

/// The highest level at which code of an origin gets the read-only internet it asks for without
/// a human (`"never"`: always a human).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReadOnlyUpTo {
    Never,
    Low,
    Medium,
    High,
}

impl ReadOnlyUpTo {
    fn allows(self, level: Level) -> bool {
        match level {
            Level::Low => self >= ReadOnlyUpTo::Low,
            Level::Medium => self >= ReadOnlyUpTo::Medium,
            Level::High => self >= ReadOnlyUpTo::High,
            Level::Blocked => false,
        }
    }
}

/// `[gate.policy.read_only]`: a request that asks for `network = "read-only"` and that the
/// policy would approve gets it when its level is at most its origin's ceiling; above it, a
/// human is asked (and sees the network in the message). A denial stays a denial.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ReadOnlyRule {
    /// Code Mai wrote.
    pub generated: ReadOnlyUpTo,
    /// Fetched or pasted code.
    pub external: ReadOnlyUpTo,
    /// The hosts Mai's own code may fetch from, when fewer than `[executor.egress]
    /// read_only_hosts` (every entry must lie within that list).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generated_hosts: Option<Vec<String>>,
    /// The same for fetched or pasted code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external_hosts: Option<Vec<String>>,
}

impl ReadOnlyRule {
    /// The narrower host list the policy gives code of `origin`, if any.
    pub fn hosts_for(&self, origin: Origin) -> Option<&[String]> {
        match origin {
            Origin::Generated => self.generated_hosts.as_deref(),
            Origin::External => self.external_hosts.as_deref(),
        }
    }
}

impl Default for ReadOnlyRule {
    fn default() -> Self {
        Self {
            generated: ReadOnlyUpTo::Medium,
            external: ReadOnlyUpTo::Never,
            generated_hosts: None,
            external_hosts: None,
        }
    }
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
            runtimes: RuntimeChoice::default(),
            read_only: ReadOnlyRule::default(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ruling {
    Approve { grant: Grant, rule: String },
    Ask,
    Deny { reason: String },
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
        Ruling::Approve { grant, rule }
    }

    /// What an approval grants.
    pub fn grant(&self) -> Option<Grant> {
        match self {
            Ruling::Approve { grant, .. } => Some(grant.clone()),
            Ruling::Ask | Ruling::Deny { .. } => None,
        }
    }
}

/// The policy in force: `[gate.policy]` with each chat system's own approver list and the
/// runtimes the stack offers, and the version (a digest of all three) recorded in every decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EffectivePolicy {
    pub rules: Policy,
    /// `[bridge.<system>] approvers`, by system.
    pub chat_approvers: BTreeMap<String, Vec<String>>,
    /// `[executor.runtimes] available`: the only runtimes a decision may name.
    pub offered: BTreeSet<Runtime>,
    /// `[executor.egress] read_only_hosts`: the most a read-only grant may name.
    pub read_only_hosts: Vec<String>,
    pub version: String,
}

impl Default for EffectivePolicy {
    fn default() -> Self {
        Self::new(Policy::default(), BTreeMap::new(), [Runtime::Runc].into())
    }
}

impl EffectivePolicy {
    /// The policy with the executor's default `read_only_hosts`; see [`Self::with_read_only_hosts`].
    pub fn new(rules: Policy, chat_approvers: BTreeMap<String, Vec<String>>, offered: BTreeSet<Runtime>) -> Self {
        let hosts = airlock_protocol::DEFAULT_READ_ONLY_HOSTS.map(str::to_owned).to_vec();
        Self::with_read_only_hosts(rules, chat_approvers, offered, hosts)
    }

    pub fn with_read_only_hosts(
        rules: Policy,
        chat_approvers: BTreeMap<String, Vec<String>>,
        offered: BTreeSet<Runtime>,
        read_only_hosts: Vec<String>,
    ) -> Self {
        // serde_json of BTreeMaps and structs is deterministic: the same policy, the same version.
        let canonical = serde_json::to_vec(&(&rules, &chat_approvers, &offered, &read_only_hosts)).unwrap_or_default();
        let digest = Sha256::digest(&canonical);
        let version = format!("policy-{}", hex::encode(&digest[..6]));
        Self {
            rules,
            chat_approvers,
            offered,
            read_only_hosts,
            version,
        }
    }

    /// The runtime code of `level` and `origin` runs under, among those the stack offers; an
    /// error (the reason for a denial) when the policy wants a stronger runtime than any offered
    /// and says to deny then, or when nothing is offered.
    pub fn runtime(&self, level: Level, origin: Origin) -> Result<Runtime, String> {
        let wanted = self.rules.runtimes.wanted(level, origin);
        if self.offered.contains(&wanted) {
            return Ok(wanted);
        }
        // A stronger runtime than wanted is always acceptable; a weaker one only by fall-back.
        if let Some(&stronger) = self.offered.range(wanted..).next() {
            return Ok(stronger);
        }
        match (self.rules.runtimes.unavailable, self.offered.last()) {
            (WhenUnavailable::FallBack, Some(&strongest)) => Ok(strongest),
            (_, None) => Err("policy: the stack offers no container runtime".to_owned()),
            (WhenUnavailable::Deny, Some(_)) => Err(format!(
                "policy: {level} {} code must run under {}, which this stack does not offer",
                origin.as_str(),
                wanted.as_str()
            )),
        }
    }

    /// Each level and origin whose code the policy wants under a runtime the stack does not
    /// offer and that falls back to a weaker one: (level, origin, wanted, granted). Said at
    /// start and on every reload, since that code runs on the host's kernel.
    pub fn fallbacks(&self) -> Vec<(Level, Origin, Runtime, Runtime)> {
        let mut found = Vec::new();
        for level in [Level::Low, Level::Medium, Level::High, Level::Blocked] {
            for origin in [Origin::Generated, Origin::External] {
                let wanted = self.rules.runtimes.wanted(level, origin);
                if let Ok(granted) = self.runtime(level, origin)
                    && granted < wanted
                {
                    found.push((level, origin, wanted, granted));
                }
            }
        }
        found
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
        let origin_name = origin.as_str();
        let action = self.action(level, origin);
        let runtime = match self.runtime(level, origin) {
            Ok(runtime) => runtime,
            Err(reason) if action != Action::Deny => return Ruling::Deny { reason },
            Err(_) => Runtime::Runc,
        };
        let approve = |quota: TrustLevel, rule: String| Ruling::approve(self.grant_under(quotas, quota, runtime), rule);
        match action {
            Action::Approve => approve(requested, format!("policy: {origin_name} {level} is approved")),
            Action::ApproveUntrusted => approve(
                requested.min(TrustLevel::Untrusted),
                format!("policy: {origin_name} {level} is approved with the untrusted quota"),
            ),
            Action::ApproveWith(cap) => approve(
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

    /// What an approval of code of `level` and `origin` with `quota` grants: the quota's limits,
    /// the runtime the policy chooses (the strongest offered when it cannot be had: a request
    /// the policy denies for that reason never reaches an approval) and the network.
    pub fn grant(
        &self,
        quotas: &Quotas,
        quota: TrustLevel,
        level: Level,
        origin: Origin,
        network: NetworkMode,
    ) -> Grant {
        let runtime = self
            .runtime(level, origin)
            .unwrap_or_else(|_| self.offered.last().copied().unwrap_or(Runtime::Runsc));
        self.with_network(self.grant_under(quotas, quota, runtime), origin, network)
    }

    /// `grant` with `network`, naming for a read-only network the hosts code of `origin` may
    /// fetch from: the origin's list in `[gate.policy.read_only]` when it has one (checked to
    /// lie within the executor's when the configuration is read), else the executor's whole
    /// `[executor.egress] read_only_hosts`.
    fn with_network(&self, grant: Grant, origin: Origin, network: NetworkMode) -> Grant {
        let read_only_hosts = match network {
            NetworkMode::None => vec![],
            NetworkMode::ReadOnly => self
                .rules
                .read_only
                .hosts_for(origin)
                .unwrap_or(&self.read_only_hosts)
                .to_vec(),
        };
        Grant {
            network,
            read_only_hosts,
            ..grant
        }
    }

    /// A ruling for a request that asked for `network`: an approval by policy carries it, unless
    /// the level is above what `[gate.policy.read_only]` allows the origin, when a human is
    /// asked instead.
    pub fn rule_network(&self, ruling: Ruling, level: Level, origin: Origin, network: NetworkMode) -> Ruling {
        let ceiling = match origin {
            Origin::Generated => self.rules.read_only.generated,
            Origin::External => self.rules.read_only.external,
        };
        match ruling {
            Ruling::Approve { .. } if network == NetworkMode::ReadOnly && !ceiling.allows(level) => Ruling::Ask,
            Ruling::Approve { grant, rule } => Ruling::Approve {
                grant: self.with_network(grant, origin, network),
                rule,
            },
            other => other,
        }
    }

    fn grant_under(&self, quotas: &Quotas, quota: TrustLevel, runtime: Runtime) -> Grant {
        Grant {
            quota,
            limits: quotas.for_level(quota),
            runtime,
            network: NetworkMode::None,
            read_only_hosts: vec![],
        }
    }

    /// What a human's approval of a request of `level` and `origin` that asked for `requested`
    /// grants: shown to the human, signed into the execution digest they answer.
    pub fn approval_grant(
        &self,
        quotas: &Quotas,
        requested: TrustLevel,
        level: Level,
        origin: Origin,
        network: NetworkMode,
    ) -> Grant {
        self.grant(quotas, self.approval_quota(requested), level, origin, network)
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
        EffectivePolicy::new(rules, chat, [Runtime::Runc].into())
    }

    #[test]
    fn default_policy_by_level() {
        let (p, q) = (EffectivePolicy::default(), Quotas::default());
        assert!(matches!(
            p.decide(&q, Level::Low, Origin::External, TrustLevel::Trusted),
            Ruling::Approve {
                grant: Grant {
                    quota: TrustLevel::Trusted,
                    ..
                },
                ..
            }
        ));
        match p.decide(&q, Level::High, Origin::Generated, TrustLevel::Trusted) {
            Ruling::Approve { grant, .. } => {
                assert_eq!(grant.quota, TrustLevel::Untrusted);
                assert_eq!(grant.limits, q.untrusted);
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

    fn offering(toml_text: &str, offered: &[Runtime]) -> EffectivePolicy {
        let rules: Policy = toml::from_str(toml_text).expect("policy parses");
        EffectivePolicy::new(rules, BTreeMap::new(), offered.iter().copied().collect())
    }

    fn granted_runtime(ruling: &Ruling) -> Option<Runtime> {
        ruling.grant().map(|g| g.runtime)
    }

    #[test]
    fn by_default_external_code_and_high_ratings_run_under_gvisor_where_offered() {
        let q = Quotas::default();
        let both = offering("", &[Runtime::Runc, Runtime::Runsc]);
        let runtime = |level, origin| granted_runtime(&both.decide(&q, level, origin, TrustLevel::Untrusted));
        assert_eq!(runtime(Level::Low, Origin::Generated), Some(Runtime::Runc));
        assert_eq!(runtime(Level::Medium, Origin::Generated), Some(Runtime::Runc));
        assert_eq!(runtime(Level::High, Origin::Generated), Some(Runtime::Runsc));
        assert_eq!(runtime(Level::Low, Origin::External), Some(Runtime::Runsc));
        // What a human is asked to approve names the runtime too.
        assert_eq!(
            both.approval_grant(
                &q,
                TrustLevel::Trusted,
                Level::Blocked,
                Origin::Generated,
                NetworkMode::None
            )
            .runtime,
            Runtime::Runsc
        );
        assert_eq!(
            both.approval_grant(
                &q,
                TrustLevel::Trusted,
                Level::Medium,
                Origin::Generated,
                NetworkMode::None
            )
            .runtime,
            Runtime::Runc
        );
    }

    #[test]
    fn read_only_internet_under_gvisor_is_granted_as_under_runc_and_keeps_its_runtime() {
        let q = Quotas::default();
        let policy = EffectivePolicy::new(
            toml::from_str("[runtimes]\nexternal = \"runsc\"\n[read_only]\nexternal = \"low\"\n").unwrap(),
            BTreeMap::new(),
            [Runtime::Runc, Runtime::Runsc].into(),
        );
        let ruling = policy.decide(&q, Level::Low, Origin::External, TrustLevel::Untrusted);
        match policy.rule_network(ruling, Level::Low, Origin::External, NetworkMode::ReadOnly) {
            Ruling::Approve { grant, .. } => {
                assert_eq!((grant.runtime, grant.network), (Runtime::Runsc, NetworkMode::ReadOnly))
            }
            other => panic!("LOW external code with read-only internet is approved under runsc: {other:?}"),
        }
        // What a human approves is the same: runsc, read-only.
        let grant = policy.approval_grant(
            &q,
            TrustLevel::Trusted,
            Level::High,
            Origin::External,
            NetworkMode::ReadOnly,
        );
        assert_eq!((grant.runtime, grant.network), (Runtime::Runsc, NetworkMode::ReadOnly));
    }

    #[test]
    fn read_only_internet_is_granted_by_policy_only_up_to_the_origins_ceiling() {
        let q = Quotas::default();
        let p = offering("", &[Runtime::Runc]);
        let network = |p: &EffectivePolicy, level, origin, asked| {
            let ruling = p.decide(&q, level, origin, TrustLevel::Untrusted);
            match p.rule_network(ruling, level, origin, asked) {
                Ruling::Approve { grant, .. } => Some(grant.network),
                _ => None,
            }
        };
        use NetworkMode::{None as Off, ReadOnly};
        // Mai's own code up to MEDIUM gets it; above, or external code, asks a human.
        assert_eq!(network(&p, Level::Low, Origin::Generated, ReadOnly), Some(ReadOnly));
        assert_eq!(network(&p, Level::Medium, Origin::Generated, ReadOnly), Some(ReadOnly));
        assert_eq!(network(&p, Level::High, Origin::Generated, ReadOnly), None);
        assert_eq!(network(&p, Level::Low, Origin::External, ReadOnly), None);
        // Without asking for it, nothing changes.
        assert_eq!(network(&p, Level::High, Origin::Generated, Off), Some(Off));
        assert_eq!(network(&p, Level::Low, Origin::External, Off), Some(Off));
        // A denial stays a denial.
        let deny = offering("low = \"deny\"", &[Runtime::Runc]);
        let ruling = deny.decide(&q, Level::Low, Origin::Generated, TrustLevel::Untrusted);
        assert!(matches!(
            deny.rule_network(ruling, Level::Low, Origin::Generated, ReadOnly),
            Ruling::Deny { .. }
        ));
        // Configurable per origin.
        let open = offering(
            "[read_only]\nexternal = \"low\"\ngenerated = \"never\"",
            &[Runtime::Runc],
        );
        assert_eq!(network(&open, Level::Low, Origin::External, ReadOnly), Some(ReadOnly));
        assert_eq!(network(&open, Level::Medium, Origin::External, ReadOnly), None);
        assert_eq!(network(&open, Level::Low, Origin::Generated, ReadOnly), None);
        // A human's approval grants what was asked.
        assert_eq!(
            p.approval_grant(&q, TrustLevel::Trusted, Level::High, Origin::External, ReadOnly)
                .network,
            ReadOnly
        );
    }

    #[test]
    fn a_read_only_grant_names_the_hosts_of_the_codes_origin() {
        let q = Quotas::default();
        let executor_hosts: Vec<String> = ["pypi.org", "docs.python.org", "*.example.org"]
            .map(str::to_owned)
            .into();
        let rules: Policy = toml::from_str(
            "[read_only]\nexternal = \"low\"\nexternal_hosts = [\"docs.python.org\", \"data.example.org\"]",
        )
        .expect("policy");
        let p = EffectivePolicy::with_read_only_hosts(
            rules,
            BTreeMap::new(),
            [Runtime::Runc].into(),
            executor_hosts.clone(),
        );
        let hosts = |origin, network| {
            let ruling = p.decide(&q, Level::Low, origin, TrustLevel::Untrusted);
            match p.rule_network(ruling, Level::Low, origin, network) {
                Ruling::Approve { grant, .. } => grant.read_only_hosts,
                other => panic!("approved by policy, got {other:?}"),
            }
        };
        // External code gets the policy's narrower list, Mai's own the executor's whole list.
        assert_eq!(
            hosts(Origin::External, NetworkMode::ReadOnly),
            ["docs.python.org", "data.example.org"]
        );
        assert_eq!(hosts(Origin::Generated, NetworkMode::ReadOnly), executor_hosts);
        // Without network, no hosts: the grant (and its digest) is that of before hosts existed.
        assert!(hosts(Origin::External, NetworkMode::None).is_empty());
        // What a human approves names the same list as what the policy approves.
        assert_eq!(
            p.approval_grant(
                &q,
                TrustLevel::Trusted,
                Level::High,
                Origin::External,
                NetworkMode::ReadOnly
            )
            .read_only_hosts,
            ["docs.python.org", "data.example.org"]
        );
        // The hosts are part of the policy's version.
        let wider = EffectivePolicy::with_read_only_hosts(
            p.rules.clone(),
            BTreeMap::new(),
            [Runtime::Runc].into(),
            vec!["pypi.org".into()],
        );
        assert_ne!(p.version, wider.version);
    }

    #[test]
    fn the_runtime_is_configured_per_level_and_origin() {
        let q = Quotas::default();
        let p = offering(
            r#"
            [runtimes]
            medium = "runsc"
            high = "runc"
            external = "runc"
            generated = "runsc"
            "#,
            &[Runtime::Runc, Runtime::Runsc],
        );
        let runtime = |level, origin| granted_runtime(&p.decide(&q, level, origin, TrustLevel::Untrusted));
        assert_eq!(runtime(Level::Low, Origin::External), Some(Runtime::Runc));
        assert_eq!(runtime(Level::High, Origin::External), Some(Runtime::Runc));
        // The stronger of the level's runtime and the origin's.
        assert_eq!(runtime(Level::Medium, Origin::External), Some(Runtime::Runsc));
        assert_eq!(runtime(Level::Low, Origin::Generated), Some(Runtime::Runsc));
        assert!(toml::from_str::<Policy>("[runtimes]\nlow = \"kata\"").is_err());
    }

    #[test]
    fn falling_back_to_a_weaker_runtime_is_named_for_each_kind_of_code() {
        let runc_only = offering("", &[Runtime::Runc]);
        let fallbacks = runc_only.fallbacks();
        // High and blocked code of either origin, and external code of any level: 2 + 2 + 2.
        assert_eq!(fallbacks.len(), 6, "{fallbacks:?}");
        assert!(fallbacks.contains(&(Level::High, Origin::Generated, Runtime::Runsc, Runtime::Runc)));
        assert!(fallbacks.contains(&(Level::Low, Origin::External, Runtime::Runsc, Runtime::Runc)));
        assert!(!fallbacks.iter().any(|f| f.0 == Level::Low && f.1 == Origin::Generated));
        // Offered, or denied instead: nothing falls back.
        assert!(offering("", &[Runtime::Runc, Runtime::Runsc]).fallbacks().is_empty());
        assert!(
            offering("[runtimes]\nunavailable = \"deny\"", &[Runtime::Runc])
                .fallbacks()
                .is_empty()
        );
    }

    #[test]
    fn a_runtime_the_stack_does_not_offer_is_never_granted() {
        let q = Quotas::default();
        // Default: fall back to the strongest runtime offered, named in the grant.
        let runc_only = offering("", &[Runtime::Runc]);
        for level in [Level::Low, Level::High] {
            let ruling = runc_only.decide(&q, level, Origin::External, TrustLevel::Untrusted);
            assert_eq!(granted_runtime(&ruling), Some(Runtime::Runc), "{level}");
        }
        // Configured to deny: code the policy wants under gVisor does not run at all, asked or not.
        let strict = offering("low = \"ask\"\n[runtimes]\nunavailable = \"deny\"", &[Runtime::Runc]);
        match strict.decide(&q, Level::Low, Origin::External, TrustLevel::Untrusted) {
            Ruling::Deny { reason } => assert!(reason.contains("runsc"), "{reason}"),
            other => panic!("expected a denial, got {other:?}"),
        }
        assert_eq!(
            strict.decide(&q, Level::Low, Origin::Generated, TrustLevel::Untrusted),
            Ruling::Ask
        );
        // A stronger runtime than wanted is always acceptable.
        let runsc_only = offering("[runtimes]\nunavailable = \"deny\"", &[Runtime::Runsc]);
        assert_eq!(
            granted_runtime(&runsc_only.decide(&q, Level::Low, Origin::Generated, TrustLevel::Untrusted)),
            Some(Runtime::Runsc)
        );
        // Nothing offered: nothing runs.
        let none = offering("", &[]);
        assert!(matches!(
            none.decide(&q, Level::Low, Origin::Generated, TrustLevel::Untrusted),
            Ruling::Deny { .. }
        ));
    }

    #[test]
    fn the_version_changes_with_the_runtimes_offered() {
        assert_ne!(
            offering("", &[Runtime::Runc]).version,
            offering("", &[Runtime::Runc, Runtime::Runsc]).version
        );
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
                grant: Grant {
                    quota: TrustLevel::Unknown,
                    ..
                },
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
                grant: Grant {
                    quota: TrustLevel::Untrusted,
                    ..
                },
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
