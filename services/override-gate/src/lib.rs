//! The override-gate: turns each assessment into a decision the executor will honour only with
//! the gate's signature. Policy decides LOW to HIGH; BLOCKED asks a human, whose signed answer (or
//! silence until the deadline) decides.
//!
//! Reading order: [`config`] (policy, quotas, keys), [`policy`] (the pure decision),
//! [`service`] (the loop that consumes assessments and answers and publishes decisions).

pub mod config;
pub mod policy;
pub mod service;

pub use config::{Action, Config, Policy, Quotas};
pub use service::{GateError, PendingOverride, run};
