//! The gate's signed decision, and the limits it grants.

use crate::assessment::{Assessment, Level};
use crate::digest::{Grant, NetworkMode, Runtime};
use crate::ids::{CodeDigest, MessageId, RequestId};
use crate::request::{ExecutionRequest, TrustLevel};
use crate::signed::Signed;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Domain string of decision signatures.
pub const DECISION_DOMAIN: &str = "airlock/decision/v1";

/// Resource limits for one execution. The executor may lower them to what the host can give,
/// never raise them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Limits {
    /// Memory, with no swap.
    pub memory_bytes: u64,
    /// CPU, in thousandths of a core.
    pub cpu_millis: u32,
    /// Processes and threads.
    pub pids: u32,
    /// Wall-clock time.
    pub wall_ms: u64,
    /// Captured stdout plus stderr.
    pub output_bytes: u64,
    /// The writable scratch space (a size-limited tmpfs).
    pub disk_bytes: u64,
    /// Open file descriptors (RLIMIT_NOFILE).
    pub open_files: u32,
}

impl Limits {
    /// The tighter of two limit sets, field by field.
    pub fn min(&self, other: &Limits) -> Limits {
        Limits {
            memory_bytes: self.memory_bytes.min(other.memory_bytes),
            cpu_millis: self.cpu_millis.min(other.cpu_millis),
            pids: self.pids.min(other.pids),
            wall_ms: self.wall_ms.min(other.wall_ms),
            output_bytes: self.output_bytes.min(other.output_bytes),
            disk_bytes: self.disk_bytes.min(other.disk_bytes),
            open_files: self.open_files.min(other.open_files),
        }
    }

    /// Whether every field of `self` is at most the same field of `bound`.
    pub fn within(&self, bound: &Limits) -> bool {
        self.min(bound) == *self
    }
}

const MIB: u64 = 1024 * 1024;

/// The limits of each trust level: the one definition the gate grants from and the executor
/// shapes its warm pool by (`[quotas]` in the stack's config).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct Quotas {
    pub untrusted: Limits,
    pub unknown: Limits,
    pub trusted: Limits,
}

impl Default for Quotas {
    /// `trusted` is 2 CPUs, 1 GiB, 120 s; `unknown` and `untrusted` are tighter.
    fn default() -> Self {
        Self {
            untrusted: Limits {
                memory_bytes: 256 * MIB,
                cpu_millis: 500,
                pids: 64,
                wall_ms: 10_000,
                output_bytes: 256 * 1024,
                disk_bytes: 16 * MIB,
                open_files: 128,
            },
            unknown: Limits {
                memory_bytes: 512 * MIB,
                cpu_millis: 1000,
                pids: 128,
                wall_ms: 30_000,
                output_bytes: MIB,
                disk_bytes: 64 * MIB,
                open_files: 256,
            },
            trusted: Limits {
                memory_bytes: 1024 * MIB,
                cpu_millis: 2000,
                pids: 256,
                wall_ms: 120_000,
                output_bytes: 2 * MIB,
                disk_bytes: 256 * MIB,
                open_files: 1024,
            },
        }
    }
}

impl Quotas {
    pub fn for_level(&self, trust: TrustLevel) -> Limits {
        match trust {
            TrustLevel::Untrusted => self.untrusted,
            TrustLevel::Unknown => self.unknown,
            TrustLevel::Trusted => self.trusted,
        }
    }

    pub fn all(&self) -> [(TrustLevel, Limits); 3] {
        [
            (TrustLevel::Untrusted, self.untrusted),
            (TrustLevel::Unknown, self.unknown),
            (TrustLevel::Trusted, self.trusted),
        ]
    }
}

/// Who decided.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum Approver {
    /// The gate's policy for the assessed level.
    Policy { rule: String },
    /// A human answering an override request.
    Human {
        who: String,
        reason: String,
        key: String,
        /// Where they answered (`matrix !room:server`), for answers relayed by a chat bridge.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        via: Option<String>,
        /// The other approvers, under the two-person rule.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        seconded_by: Vec<CoApprover>,
    },
    /// A human approved this exact execution earlier and chose to approve it again until
    /// `until_ms`.
    Remembered {
        who: String,
        reason: String,
        /// The request whose approval is remembered.
        approved_request: RequestId,
        until_ms: i64,
        /// The remembered approval's id (`airlock override remembered list`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        remembered: Option<String>,
        /// Where the approval was given (`matrix !room:server`): each use is posted there.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        via: Option<String>,
        /// When the approval was given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        approved_at_ms: Option<i64>,
    },
    /// Nobody answered an override request before its deadline.
    Deadline,
}

/// A second approver under the two-person rule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CoApprover {
    pub who: String,
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum DecisionOutcome {
    Approved {
        quota: TrustLevel,
        limits: Limits,
        #[serde(default)]
        runtime: Runtime,
        #[serde(default)]
        network: NetworkMode,
        /// With `network = "read-only"`, exactly the hosts the program may fetch from, as
        /// signed (see `Grant::read_only_hosts`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        read_only_hosts: Vec<String>,
    },
    Denied {
        reason: String,
    },
}

impl DecisionOutcome {
    pub fn approved(grant: Grant) -> Self {
        DecisionOutcome::Approved {
            quota: grant.quota,
            limits: grant.limits,
            runtime: grant.runtime,
            network: grant.network,
            read_only_hosts: grant.read_only_hosts,
        }
    }

    /// What an approval grants; `None` for a denial.
    pub fn grant(&self) -> Option<Grant> {
        match self {
            DecisionOutcome::Approved {
                quota,
                limits,
                runtime,
                network,
                read_only_hosts,
            } => Some(Grant {
                quota: *quota,
                limits: *limits,
                runtime: *runtime,
                network: *network,
                read_only_hosts: read_only_hosts.clone(),
            }),
            DecisionOutcome::Denied { .. } => None,
        }
    }
}

/// What the gate signs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Decision {
    pub decision_id: MessageId,
    pub request_id: RequestId,
    /// The execution digest of the request run with what this decision grants (for a denial,
    /// with what an approval would have granted): everything that decides what runs, see
    /// [`crate::digest`]. The executor runs nothing whose digest differs.
    pub execution_digest: CodeDigest,
    /// SHA-256 of the code alone, for people comparing requests.
    pub code_digest: CodeDigest,
    pub level: Level,
    pub outcome: DecisionOutcome,
    pub approver: Approver,
    pub issued_at_ms: i64,
    /// The decision must not be acted on after this instant.
    pub expires_at_ms: i64,
    /// The version of the gate's policy that decided (a digest of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_version: Option<String>,
}

impl Decision {
    pub fn is_approved(&self) -> bool {
        matches!(self.outcome, DecisionOutcome::Approved { .. })
    }
}

/// The `decided` event: the signed decision, and for approvals the request it approves
/// (which the executor checks against the signed digests).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Decided {
    pub signed: Signed,
    #[serde(default)]
    pub request: Option<ExecutionRequest>,
    #[serde(default)]
    pub assessment: Option<Assessment>,
}

/// What a terminal event says of the decision behind it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DecisionSummary {
    /// `approved`, `denied` or `expired`.
    pub decision: String,
    pub approver: Approver,
    #[serde(default)]
    pub quota: Option<TrustLevel>,
    #[serde(default)]
    pub limits: Option<Limits>,
    /// The runtime and network an approval granted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<Runtime>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkMode>,
    /// With a read-only network, the hosts the program could fetch from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_only_hosts: Vec<String>,
    /// The version of the gate's policy that decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_version: Option<String>,
    /// The execution digest the decision was about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_digest: Option<CodeDigest>,
}

impl DecisionSummary {
    pub fn of(decision: &Decision) -> Self {
        let grant = decision.outcome.grant();
        Self {
            decision: if grant.is_some() { "approved" } else { "denied" }.into(),
            approver: decision.approver.clone(),
            quota: grant.as_ref().map(|g| g.quota),
            limits: grant.as_ref().map(|g| g.limits),
            runtime: grant.as_ref().map(|g| g.runtime),
            network: grant.as_ref().map(|g| g.network),
            read_only_hosts: grant.map(|g| g.read_only_hosts).unwrap_or_default(),
            policy_version: decision.policy_version.clone(),
            execution_digest: Some(decision.execution_digest.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_min_and_within() {
        let a = Limits {
            memory_bytes: 10,
            cpu_millis: 2000,
            pids: 5,
            wall_ms: 100,
            output_bytes: 7,
            disk_bytes: 9,
            open_files: 64,
        };
        let b = Limits {
            memory_bytes: 20,
            cpu_millis: 500,
            ..a
        };
        let m = a.min(&b);
        assert_eq!(m.memory_bytes, 10);
        assert_eq!(m.cpu_millis, 500);
        assert!(m.within(&a) && m.within(&b));
        assert!(!a.within(&b));
    }
}
