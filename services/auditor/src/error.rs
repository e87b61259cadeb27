//! What can stop the auditor, typed, so that the loop decides by kind and never by text: an
//! outage is waited out, while a store that refuses a rewrite or a log that is not the one the
//! head describes stops the auditor (another writer, or tampering, must be looked at by a human).

use crate::config::ConfigError;
use crate::head::HeadError;
use airlock_auditlog::store::StoreError;
use airlock_bus::{BusError, RetryError, Transience};

type Source = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("audit store: {what}")]
    Store {
        what: &'static str,
        /// Whether the store said no for good (a refused rewrite) rather than being away.
        permanent: bool,
        #[source]
        source: Source,
    },
    /// The log in the store is not what it must be (a size, a root or a staged batch that does
    /// not match the head): integrity, never retried.
    #[error("audit log: {what}")]
    Integrity {
        what: String,
        #[source]
        source: Option<Source>,
    },
    #[error(transparent)]
    Head(#[from] HeadError),
    #[error("NATS: {what}")]
    Nats {
        what: &'static str,
        #[source]
        source: Source,
    },
    #[error(transparent)]
    Bus(#[from] BusError),
    #[error("stopped while {what}")]
    Cancelled { what: &'static str },
}

impl Error {
    pub fn integrity(what: impl Into<String>) -> Self {
        Error::Integrity {
            what: what.into(),
            source: None,
        }
    }

    pub fn integrity_from(what: impl Into<String>, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        Error::Integrity {
            what: what.into(),
            source: Some(Box::new(source)),
        }
    }

    pub fn nats(what: &'static str, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        Error::Nats {
            what,
            source: Box::new(source),
        }
    }

    pub fn store(what: &'static str, source: StoreError) -> Self {
        Error::Store {
            what,
            permanent: source.is_permanent(),
            source: Box::new(source),
        }
    }

    /// The error a storage step ended with after retrying.
    pub fn from_store_retry<E: StoreFailure>(error: RetryError<E>) -> Self {
        match error {
            RetryError::Permanent { what, error } | RetryError::GaveUp { what, error, .. } => Error::Store {
                what,
                permanent: error.is_permanent(),
                source: Box::new(error),
            },
            RetryError::Cancelled { what } => Error::Cancelled { what },
        }
    }
}

/// A failure of a storage step, judged by the audit-log library.
pub trait StoreFailure: std::error::Error + Send + Sync + 'static {
    fn is_permanent(&self) -> bool;
}

impl StoreFailure for StoreError {
    fn is_permanent(&self) -> bool {
        StoreError::is_permanent(self)
    }
}

impl StoreFailure for airlock_auditlog::reader::ReadError {
    fn is_permanent(&self) -> bool {
        !matches!(self, airlock_auditlog::reader::ReadError::Store(e) if !e.is_permanent())
    }
}

impl StoreFailure for airlock_auditlog::writer::CommitError {
    fn is_permanent(&self) -> bool {
        airlock_auditlog::writer::CommitError::is_permanent(self)
    }
}

impl Transience for Error {
    fn is_permanent(&self) -> bool {
        match self {
            Error::Config(_) | Error::Integrity { .. } => true,
            Error::Store { permanent, .. } => *permanent,
            Error::Head(HeadError::AdoptUnreadable(e)) => StoreFailure::is_permanent(e.as_ref()),
            Error::Head(e) => !matches!(e, HeadError::Cancelled),
            Error::Nats { .. } | Error::Cancelled { .. } => false,
            Error::Bus(e) => e.is_permanent(),
        }
    }
}
