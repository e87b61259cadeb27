//! "Approve this exact execution again": an approver's explicit choice, remembered until it
//! lapses, keyed on the execution digest (so on the code, the language, the inputs, the packages,
//! the client and the grant together: the same code with another stdin, as another language or
//! for another client asks again), and re-checked against the policy and the trusted keys in
//! force every time it is used. Free of I/O; the gate's service stores and lists these.

use crate::policy::EffectivePolicy;
use airlock_approvals::Approval;
use airlock_protocol::{CodeDigest, Level, RequestId};
use serde::{Deserialize, Serialize};

/// Prefix of remembered approvals' keys in the gate's bucket. Request ids start with a letter
/// or digit, so these keys cannot collide with request records.
pub const KEY_PREFIX: &str = "_again.";

/// An approver's explicit choice to approve this exact execution again, until `until_ms`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Remembered {
    /// What `airlock override remembered revoke` names: the first 16 hex digits of the digest.
    pub id: String,
    pub execution_digest: CodeDigest,
    pub code_digest: CodeDigest,
    pub until_ms: i64,
    pub remembered_at_ms: i64,
    /// Everyone whose approval is remembered (two under the two-person rule).
    pub approvers: Vec<Approval>,
    /// Requests rated above this level still ask.
    pub level: Level,
    pub approved_request: RequestId,
    #[serde(default)]
    pub label: Option<String>,
    #[serde(default)]
    pub client: Option<String>,
    /// The policy in force when it was approved: any change of policy voids it (the allow-lists,
    /// `approve_again_max` and the two-person rule are all part of the policy's version).
    pub policy_version: String,
}

impl Remembered {
    /// The id of the approval remembered for `digest`.
    pub fn id_of(digest: &CodeDigest) -> String {
        let hex = digest.as_str().rsplit(':').next().unwrap_or_default();
        hex.chars().take(16).collect()
    }

    /// Its key in the gate's bucket.
    pub fn key_of(digest: &CodeDigest) -> String {
        format!("{KEY_PREFIX}{}", Self::id_of(digest))
    }

    /// The first approver, as decisions name them.
    pub fn who(&self) -> String {
        let names: Vec<&str> = self.approvers.iter().map(|a| a.who.as_str()).collect();
        names.join(" and ")
    }
}

/// Why a remembered approval no longer holds.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Void {
    #[error("it lapsed")]
    Lapsed,
    #[error("the policy changed ({then} when approved, {now} now)")]
    PolicyChanged { then: String, now: String },
    #[error("approving again is no longer offered by the policy")]
    NotOffered,
    #[error("the code is now rated {now}, above the {then} that was approved")]
    LevelRaised { then: Level, now: Level },
    #[error("{who}'s key is no longer trusted")]
    KeyNotTrusted { who: String },
    #[error("{who} may no longer answer {level} requests from {system}")]
    ApproverRemoved { who: String, system: String, level: Level },
}

/// Whether `remembered` still approves a request rated `level` now: not lapsed, the same policy
/// (with approving again still offered), no higher rating, and every approver still trusted and
/// still allowed to answer. `trusted` says whether a signing key is still one the gate reads.
pub fn still_holds(
    remembered: &Remembered,
    level: Level,
    policy: &EffectivePolicy,
    trusted: impl Fn(&str) -> bool,
    now_ms: i64,
) -> Result<(), Void> {
    if now_ms >= remembered.until_ms {
        return Err(Void::Lapsed);
    }
    if policy.approve_again_max_ms() == 0 {
        return Err(Void::NotOffered);
    }
    if remembered.policy_version != policy.version {
        return Err(Void::PolicyChanged {
            then: remembered.policy_version.clone(),
            now: policy.version.clone(),
        });
    }
    if level > remembered.level {
        return Err(Void::LevelRaised {
            then: remembered.level,
            now: level,
        });
    }
    for approver in &remembered.approvers {
        if !trusted(&approver.key) {
            return Err(Void::KeyNotTrusted {
                who: approver.who.clone(),
            });
        }
        // A chat approval names its system first (`matrix !room:server`).
        if let Some(system) = approver.via.as_deref().and_then(|v| v.split_whitespace().next())
            && !policy.allowed(system, level).iter().any(|a| a == &approver.who)
        {
            return Err(Void::ApproverRemoved {
                who: approver.who.clone(),
                system: system.to_owned(),
                level,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Policy;

    fn policy(toml_text: &str, matrix: &[&str]) -> EffectivePolicy {
        let rules: Policy = toml::from_str(toml_text).expect("policy");
        EffectivePolicy::new(
            rules,
            [("matrix".to_owned(), matrix.iter().map(|s| (*s).to_owned()).collect())].into(),
            [airlock_protocol::Runtime::Runc].into(),
        )
    }

    fn remembered(p: &EffectivePolicy) -> Remembered {
        let digest = CodeDigest::of(b"execution");
        Remembered {
            id: Remembered::id_of(&digest),
            execution_digest: digest,
            code_digest: CodeDigest::of(b"code"),
            until_ms: 10_000,
            remembered_at_ms: 1_000,
            approvers: vec![Approval {
                who: "@alice:x".into(),
                person: Some("alice".into()),
                reason: "nightly job".into(),
                via: Some("matrix !room:x".into()),
                key: "bridge+1".into(),
                approve_again_for_ms: Some(9_000),
                at_ms: 1_000,
            }],
            level: Level::Blocked,
            approved_request: RequestId::parse("mai.r1").expect("id"),
            label: None,
            client: Some("mai".into()),
            policy_version: p.version.clone(),
        }
    }

    #[test]
    fn a_remembered_approval_holds_only_while_nothing_it_rests_on_changed() {
        let p = policy("approve_again_max = \"4h\"", &["@alice:x"]);
        let r = remembered(&p);
        let trusted = |k: &str| k == "bridge+1";
        assert_eq!(still_holds(&r, Level::Blocked, &p, trusted, 5_000), Ok(()));
        assert_eq!(still_holds(&r, Level::Blocked, &p, trusted, 10_000), Err(Void::Lapsed));
        assert!(matches!(
            still_holds(&r, Level::Blocked, &p, |_| false, 5_000),
            Err(Void::KeyNotTrusted { .. })
        ));
        // Alice removed from the allow-list: a new policy version.
        let without_alice = policy("approve_again_max = \"4h\"", &["@bob:x"]);
        assert!(matches!(
            still_holds(&r, Level::Blocked, &without_alice, trusted, 5_000),
            Err(Void::PolicyChanged { .. })
        ));
        // approve_again_max lowered to nothing.
        let off = policy("approve_again_max = \"0s\"", &["@alice:x"]);
        assert_eq!(
            still_holds(&r, Level::Blocked, &off, trusted, 5_000),
            Err(Void::NotOffered)
        );
        let mut lower = r.clone();
        lower.level = Level::High;
        assert!(matches!(
            still_holds(&lower, Level::Blocked, &p, trusted, 5_000),
            Err(Void::LevelRaised { .. })
        ));
    }

    #[test]
    fn ids_are_short_and_keys_cannot_be_request_ids() {
        let digest = CodeDigest::of(b"x");
        assert_eq!(Remembered::id_of(&digest).len(), 16);
        let key = Remembered::key_of(&digest);
        assert!(key.starts_with(KEY_PREFIX));
        assert!(RequestId::parse(&key).is_err());
    }
}
