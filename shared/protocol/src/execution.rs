//! What the executor reports while and after code runs.

use crate::assessment::{Finding, Level};
use crate::decision::{DecisionSummary, Limits};
use crate::digest::Runtime;
use crate::ids::CodeDigest;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The container was started (or taken from the warm pool) for this request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExecStarted {
    pub container: String,
    pub image: String,
    /// The limits actually applied (the decision's, lowered to what the host can give).
    pub limits: Limits,
    /// Whether a pre-started container was used.
    pub warm: bool,
    /// The container runtime that ran it (runc, or gVisor's runsc).
    #[serde(default)]
    pub runtime: Runtime,
    /// SHA-256 of the seccomp profile the container was started with (the executor's
    /// `services/executor/seccomp/<runtime>.json`); absent from executors that set none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seccomp: Option<CodeDigest>,
    /// Which run of the request this is: 1, or 2 when the infrastructure interrupted the first
    /// and it was run again in a fresh container (a `retrying` progress event says why).
    #[serde(default = "first_attempt")]
    pub attempt: u32,
}

fn first_attempt() -> u32 {
    1
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutputStream {
    Stdout,
    Stderr,
}

/// A piece of the program's output, in order within its request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OutputChunk {
    pub stream: OutputStream,
    /// 0-based position of this chunk among the request's chunks.
    pub seq: u32,
    #[schemars(with = "Vec<u8>")]
    #[serde(with = "serde_bytes")]
    pub data: Vec<u8>,
}

/// A resource sample taken while the code runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UsageSample {
    pub seq: u32,
    pub elapsed_ms: u64,
    pub memory_bytes: u64,
    pub cpu_ms: u64,
    pub pids: u32,
}

/// Totals and peaks of one execution.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Usage {
    pub wall_ms: u64,
    pub cpu_ms: u64,
    pub peak_memory_bytes: u64,
    pub peak_pids: u32,
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ViolationKind {
    Timeout,
    Memory,
    Pids,
    Output,
    Cpu,
    Disk,
}

impl ViolationKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ViolationKind::Timeout => "timeout",
            ViolationKind::Memory => "memory",
            ViolationKind::Pids => "pids",
            ViolationKind::Output => "output",
            ViolationKind::Cpu => "cpu",
            ViolationKind::Disk => "disk",
        }
    }
}

/// A limit the code hit, and how the sandbox knows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Violation {
    pub kind: ViolationKind,
    pub detail: String,
    #[serde(default)]
    pub limit: Option<u64>,
    #[serde(default)]
    pub measured: Option<u64>,
}

/// What the code did, as far as the sandbox can tell.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Activity {
    /// Files left in the writable space, with sizes. Bounded: the most telling ones first
    /// (executables and scripts, then a share of every directory, larger first).
    #[serde(default)]
    pub files_created: Vec<(String, u64)>,
    /// Files left beyond those listed, and their bytes: a list that was cut says so.
    #[serde(default)]
    pub files_omitted: u64,
    #[serde(default)]
    pub files_omitted_bytes: u64,
    /// Processes seen while sampling.
    #[serde(default)]
    pub processes: Vec<String>,
    /// Processes seen beyond those listed.
    #[serde(default)]
    pub processes_omitted: u64,
    /// Network attempts seen.
    #[serde(default)]
    pub network_attempts: Vec<String>,
    /// Network attempts reported beyond those listed.
    #[serde(default)]
    pub network_attempts_omitted: u64,
    /// True when this was reported from inside the container and so may be forged by the code.
    pub untrusted: bool,
}

/// One request made through the egress proxy while installing packages.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Egress {
    pub method: String,
    pub host: String,
    pub url: String,
    pub allowed: bool,
    #[serde(default)]
    pub status: Option<u16>,
    pub bytes: u64,
    #[serde(default)]
    pub reason: Option<String>,
}

/// How a request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The code ran and exited by itself (with any exit code).
    Finished,
    /// The code was stopped for a violation, or Airlock could not run it.
    Failed,
    /// The gate or a human said no (or nobody answered in time).
    Denied,
    /// The request or its decision was past its deadline before it could run.
    Expired,
    /// Its client cancelled it: it never ran, or it was stopped (its output up to then kept).
    Cancelled,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Finished => "finished",
            Outcome::Failed => "failed",
            Outcome::Denied => "denied",
            Outcome::Expired => "expired",
            Outcome::Cancelled => "cancelled",
        }
    }
}

/// The one terminal event of a request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Terminal {
    pub outcome: Outcome,
    #[serde(default)]
    pub level: Option<Level>,
    #[serde(default)]
    pub findings: Vec<Finding>,
    #[serde(default)]
    pub decision: Option<DecisionSummary>,
    #[serde(default)]
    pub exit_code: Option<i64>,
    #[schemars(with = "Vec<u8>")]
    #[serde(default, with = "serde_bytes")]
    pub stdout: Vec<u8>,
    #[schemars(with = "Vec<u8>")]
    #[serde(default, with = "serde_bytes")]
    pub stderr: Vec<u8>,
    #[serde(default)]
    pub violation: Option<Violation>,
    #[serde(default)]
    pub usage: Option<Usage>,
    /// Why Airlock could not run the code, or why it was denied.
    #[serde(default)]
    pub reason: Option<String>,
    /// Set when the request ended because a service refused it (its reason, typed, so that
    /// clients can tell a refusal from a failure without reading the text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<crate::refusal::RefusalReason>,
    /// Files the program left under `out/` ([`crate::files`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<crate::files::OutputFile>,
    /// Why files under `out/` could not be collected, when they could not (the executor could
    /// not look into the sandbox's filesystem); `None` when they were looked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files_unavailable: Option<String>,
}

impl Terminal {
    /// A terminal event with no execution behind it.
    pub fn without_run(outcome: Outcome, reason: impl Into<String>) -> Self {
        Self {
            outcome,
            level: None,
            findings: vec![],
            decision: None,
            exit_code: None,
            stdout: vec![],
            stderr: vec![],
            violation: None,
            usage: None,
            reason: Some(reason.into()),
            refusal: None,
            files: vec![],
            files_unavailable: None,
        }
    }

    /// The terminal event of a request a service refused.
    pub fn refused(reason: crate::refusal::RefusalReason, detail: &str) -> Self {
        Self {
            refusal: Some(reason),
            ..Self::without_run(Outcome::Failed, format!("the request was refused ({reason}): {detail}"))
        }
    }
}
