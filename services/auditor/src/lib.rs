//! The auditor: the only writer of Airlock's audit log. It consumes every event of the events
//! stream, in order, appends each as an entry of a Merkle-tree transparency log on object
//! storage (`airlock-auditlog`), signs a checkpoint after each batch, and publishes entries,
//! checkpoints and receipts on the audit subjects.
//!
//! Reading order: [`config`] (the `[auditor]` section), [`service`] (set-up and the loop),
//! `consume` (the events stream, in order, with gaps), [`retention`] (what is stored in full
//! and what by digest only), `commit` (one commit, step by step),
//! `recovery` (start-up after a crash), `keys` (a new signing key, on SIGHUP), [`head`] (the single-writer lease and commit point in
//! the KV bucket), [`error`]; `metrics` (stage latencies and audit lag); `crash` is fault injection for the crash tests, compiled only
//! with the `fault-injection` feature.

mod commit;
pub mod config;
mod consume;
pub mod crash;
pub mod error;
pub mod head;
mod keys;
mod metrics;
mod recovery;
pub mod retention;
pub mod service;

pub use config::Config;
pub use error::Error;
pub use service::run;
