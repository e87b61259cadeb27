//! First-writer-wins records in a key-value bucket: how a service remembers, across crashes and
//! between replicas, that it has started or finished something for a request.

use crate::retry::{Backoff, Transience, retry};
use async_nats::jetstream::kv;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

type Source = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    #[error("key-value bucket {bucket}")]
    Store {
        bucket: String,
        #[source]
        source: Source,
    },
    #[error("record {key} in {bucket} is unreadable")]
    Corrupt {
        bucket: String,
        key: String,
        #[source]
        source: rmp_serde::decode::Error,
    },
    #[error("record {key} in {bucket} changed under us (another writer)")]
    Conflict { bucket: String, key: String },
    #[error("stopped before bucket {bucket} could be opened")]
    Stopped { bucket: String },
}

impl Transience for ClaimError {
    fn is_permanent(&self) -> bool {
        // A corrupt record stays corrupt; a conflict is an answer, not an outage.
        matches!(self, ClaimError::Corrupt { .. } | ClaimError::Conflict { .. })
    }
}

#[derive(Clone)]
pub struct Claims {
    bucket: String,
    store: kv::Store,
}

/// What `claim` found.
#[derive(Debug)]
pub enum Claim<T> {
    /// The key was free and now holds our value, at this revision.
    Won { revision: u64 },
    /// Someone (maybe an earlier life of this service) holds it already.
    Held { value: T, revision: u64 },
}

impl Claims {
    /// Opens the bucket, waiting (until `shutdown`) while it does not exist yet or NATS is away:
    /// the stack's administrator creates buckets, maybe after the service starts.
    pub async fn open(
        js: &async_nats::jetstream::Context,
        bucket: &str,
        shutdown: &CancellationToken,
    ) -> Result<Self, ClaimError> {
        let opened = retry(shutdown, Backoff::OUTAGE, "opening a key-value bucket", || async {
            js.get_key_value(bucket).await.map_err(|e| ClaimError::Store {
                bucket: bucket.to_owned(),
                source: Box::new(e),
            })
        })
        .await;
        match opened {
            Ok(store) => Ok(Self {
                bucket: bucket.to_owned(),
                store,
            }),
            Err(e) => Err(e.into_last_error().unwrap_or_else(|| ClaimError::Stopped {
                bucket: bucket.to_owned(),
            })),
        }
    }

    fn store_error(&self, e: impl std::error::Error + Send + Sync + 'static) -> ClaimError {
        ClaimError::Store {
            bucket: self.bucket.clone(),
            source: Box::new(e),
        }
    }

    // MessagePack, so that records holding code (bytes) stay compact.
    fn encode<T: Serialize>(value: &T) -> bytes::Bytes {
        rmp_serde::to_vec_named(value).unwrap_or_default().into()
    }

    /// Atomically creates `key` with `value` unless it exists.
    pub async fn claim<T: Serialize + DeserializeOwned>(&self, key: &str, value: &T) -> Result<Claim<T>, ClaimError> {
        match self.store.create(key, Self::encode(value)).await {
            Ok(revision) => Ok(Claim::Won { revision }),
            Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => match self.get(key).await? {
                Some((value, revision)) => Ok(Claim::Held { value, revision }),
                // Deleted between the two calls: a purge by an operator; treat as held by nobody.
                None => Err(ClaimError::Conflict {
                    bucket: self.bucket.clone(),
                    key: key.to_owned(),
                }),
            },
            Err(e) => Err(self.store_error(e)),
        }
    }

    pub async fn get<T: DeserializeOwned>(&self, key: &str) -> Result<Option<(T, u64)>, ClaimError> {
        let entry = self.store.entry(key).await.map_err(|e| self.store_error(e))?;
        match entry {
            Some(entry) if entry.operation == kv::Operation::Put => {
                let value = rmp_serde::from_slice(&entry.value).map_err(|source| ClaimError::Corrupt {
                    bucket: self.bucket.clone(),
                    key: key.to_owned(),
                    source,
                })?;
                Ok(Some((value, entry.revision)))
            }
            _ => Ok(None),
        }
    }

    /// Replaces the value if it is still at `revision`.
    pub async fn update<T: Serialize>(&self, key: &str, value: &T, revision: u64) -> Result<u64, ClaimError> {
        self.store
            .update(key, Self::encode(value), revision)
            .await
            .map_err(|e| {
                if e.kind() == kv::UpdateErrorKind::WrongLastRevision {
                    ClaimError::Conflict {
                        bucket: self.bucket.clone(),
                        key: key.to_owned(),
                    }
                } else {
                    self.store_error(e)
                }
            })
    }

    /// Every key currently in the bucket.
    pub async fn keys(&self) -> Result<Vec<String>, ClaimError> {
        use futures::TryStreamExt as _;
        let keys = self.store.keys().await.map_err(|e| self.store_error(e))?;
        keys.try_collect().await.map_err(|e| self.store_error(e))
    }

    pub async fn remove(&self, key: &str) -> Result<(), ClaimError> {
        self.store.purge(key).await.map_err(|e| self.store_error(e))
    }
}
