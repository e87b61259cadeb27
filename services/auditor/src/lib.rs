//! The auditor: the only writer of Airlock's audit log. It consumes every event of the events
//! stream, in order, appends each as an entry of a Merkle-tree transparency log on object
//! storage (`airlock-auditlog`), signs a checkpoint after each batch, and publishes entries,
//! checkpoints and receipts on the audit subjects.
//!
//! Reading order: [`config`] (the `[auditor]` section), [`head`] (the single-writer lease and
//! commit point in the KV bucket), [`service`] (the loop), [`crash`] (fault injection for the
//! crash tests).

pub mod config;
pub mod crash;
pub mod head;
pub mod service;

pub use config::Config;
pub use service::{Error, SERVICE_NAME, run};
