//! The override-gate: turns each assessment into a decision the executor will honour only with
//! the gate's signature. Policy decides LOW to HIGH; BLOCKED asks a human, whose signed answer (or
//! silence until the deadline) decides.
//!
//! Reading order: [`config`] (policy, quotas, keys, people), [`policy`] (what each level gets and
//! what an approval grants), then the judgement of one answer, shared with the chat bridge
//! (`airlock_approvals`: people, and whether an answer counts), [`remembered`] ("approve again"
//! and when it stops holding),
//! [`trust`] (keys, people and policy in force, hot-reloaded), [`explain`] (what the human asked
//! is shown), [`records`] (state kept per request), [`service`] (the loop that consumes
//! assessments and answers and publishes decisions).

pub mod config;
pub mod explain;
pub mod history;
pub mod policy;
pub mod records;
pub mod remembered;
pub mod service;
pub mod trust;

pub use config::{Action, Config, Policy, Quotas};
pub use policy::EffectivePolicy;
pub use records::PendingOverride;
pub use service::{GateError, run};
