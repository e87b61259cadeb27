//! The NATS JetStream plumbing every Airlock service shares: connecting as a user, the streams
//! and buckets, publishing envelopes once, consuming with one refusal path and dead letters, one
//! retry helper, the permissions each role gets, the NATS service API, and first-writer-wins
//! claims.

pub mod claims;
pub mod clients;
pub mod connect;
pub mod consume;
pub mod permissions;
pub mod publish;
pub mod retry;
pub mod runner;
pub mod service_api;
pub mod setup;
#[cfg(feature = "testing")]
pub mod testing;

pub use claims::{Claim, ClaimError, Claims};
pub use clients::ClientsConfig;
pub use connect::{ConnectConfig, TlsSettings, connect, connect_now};
pub use consume::{ConsumerSpec, Delivery, DeliveryStream, Ending, Failure, Refuser};
pub use publish::{PublishError, Published, Publisher};
pub use retry::{Backoff, RetryError, Transience, retry, retry_judged};
pub use service_api::{METRICS_METADATA, ServiceCounters, start_service};
pub use setup::{StreamSettings, ensure_streams};

/// Errors of the bus plumbing that callers treat alike: something about NATS failed.
#[derive(Debug, thiserror::Error)]
pub enum BusError {
    #[error("connecting to NATS at {url}")]
    Connect {
        url: String,
        #[source]
        source: async_nats::ConnectError,
    },
    #[error("reading NATS credentials {path}")]
    Credentials {
        path: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("setting up JetStream {what}")]
    Setup {
        what: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("starting the NATS service API")]
    Service(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl Transience for BusError {
    fn is_permanent(&self) -> bool {
        // Bad credentials do not get better by waiting; the rest is NATS being away.
        matches!(self, BusError::Credentials { .. })
    }
}

/// An error and its causes, on one line, for logs.
pub fn error_text(error: &(dyn std::error::Error + 'static)) -> String {
    airlock_protocol::error_chain(error)
}
