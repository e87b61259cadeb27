//! The NATS JetStream plumbing every Airlock service shares: connecting as a user, the streams
//! and buckets, publishing envelopes exactly once, consuming with typed refusals, the NATS
//! service API, and first-writer-wins claims.

pub mod claims;
pub mod connect;
pub mod consume;
pub mod publish;
pub mod runner;
pub mod service_api;
pub mod setup;
#[cfg(feature = "testing")]
pub mod testing;

pub use claims::{Claim, ClaimError, Claims};
pub use connect::{ConnectConfig, connect};
pub use consume::{ConsumerSpec, Delivery, DeliveryStream};
pub use publish::{PublishError, Publisher};
pub use service_api::{ServiceCounters, start_service};
pub use setup::{StreamSettings, ensure_streams};

/// Errors of the bus plumbing that callers treat alike: something about NATS failed.
#[derive(Debug, thiserror::Error)]
pub enum BusError {
    #[error("connecting to NATS at {url}: {detail}")]
    Connect { url: String, detail: String },
    #[error("reading NATS credentials {path}: {detail}")]
    Credentials { path: String, detail: String },
    #[error("setting up JetStream {what}: {detail}")]
    Setup { what: String, detail: String },
    #[error("JetStream consumer {consumer}: {detail}")]
    Consumer { consumer: String, detail: String },
}
