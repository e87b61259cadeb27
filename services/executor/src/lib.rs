//! Airlock's executor: runs approved code in fresh, hardened, single-use containers.
//!
//! Reading order: [`config`] (everything configurable, with defaults), [`sandbox`] (the API the
//! service calls: [`Sandbox::start`], [`Sandbox::run`], [`Sandbox::shutdown`]), then what a run
//! is made of: [`host`] (what the host can give, admission), [`pool`] (warm containers),
//! [`launch`] (the hardened container and the frame that hands it a job, with `bootstrap.py`
//! as its PID 1), [`run`] (one job, phase by phase: output cap, wall time, violations, the end read from outside), [`monitor`] (the
//! kernel's counters, read from outside), [`activity`] (what the code did), [`observation`] (the
//! kernel's own account of a run, by eBPF); then dependencies:
//! [`packages`] (resolve and install steps, through the `airlock-egress` proxy), [`wheels`] (the
//! wheel store, by digest), [`package_rating`] (a wheel's code rated with the assessor's engine),
//! [`resolve`] (the endpoint the assessor asks before the gate decides); and [`image`] (the
//! recipe). [`docker`] holds the engine connection, labels and the hardening itself. Behind
//! features, absent from release binaries: `bench` (the benchmark harness, for `airlock
//! bench`) and `testing` (`attacks`: the attack suite's expectations). `docs/sandbox.md`
//! describes the whole.

pub mod activity;
#[cfg(feature = "testing")]
pub mod attacks;
pub mod audit_gate;
#[cfg(feature = "bench")]
pub mod bench;
mod cancel;
pub mod config;
mod dispatch;
pub mod docker;
pub mod engine_health;
#[cfg(feature = "testing")]
pub mod engine_proxy;
mod error;
mod events;
mod execute;
pub mod gvisor_trace;
pub mod host;
pub mod image;
mod inside;
pub mod launch;
mod lease;
pub mod monitor;
pub mod network;
pub mod observation;
pub mod outputs;
pub mod package_cache;
pub mod package_rating;
pub mod packages;
pub mod pool;
mod queue;
pub mod quiet;
pub mod resolve;
pub mod run;
pub mod sandbox;
pub mod sealed_files;
pub mod seccomp;
pub mod service;
mod tally;
pub mod wheels;

pub use config::{
    DEFAULT_IMAGE, EgressConfig, EgressSettings, HostConfig, Images, LimitPolicy, PackagesConfig, PoolConfig, Quotas,
    SandboxConfig,
};
pub use error::SandboxError;
pub use image::{ImageStatus, ensure_image};
pub use pool::PoolStats;
pub use sandbox::{Job, RunReport, Sandbox, SandboxEvent};
