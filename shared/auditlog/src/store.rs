//! Object storage for the log, through `object_store`: a local directory by default, any
//! S3-compatible store by URL. Every object but `checkpoint` is written once with
//! `PutMode::Create`; writing an existing path again succeeds only with identical bytes (a
//! writer redoing a commit after a crash), and anything else is refused as a rewrite.

use bytes::Bytes;
use futures::TryStreamExt as _;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt as _, PutMode, PutOptions, PutPayload};
use std::sync::Arc;

pub const CHECKPOINT_PATH: &str = "checkpoint";

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("store URL {url:?}: {detail}")]
    Url {
        url: String,
        detail: String,
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    #[error("store {url}: {what}")]
    Unavailable {
        url: String,
        what: &'static str,
        #[source]
        source: object_store::Error,
    },
    #[error("{path}: refusing to rewrite an existing object with different bytes")]
    Rewrite { path: String },
    #[error("{path}")]
    Io {
        path: String,
        #[source]
        source: object_store::Error,
    },
}

impl StoreError {
    /// Whether waiting could help. A refused rewrite means the stored log is not what this
    /// writer thinks it is; a bad URL stays bad; anything else is the store being away.
    pub fn is_permanent(&self) -> bool {
        matches!(self, StoreError::Rewrite { .. } | StoreError::Url { .. })
    }
}

/// Whether a write-once put stored new bytes or found the same bytes already there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Put {
    Created,
    AlreadyThere,
}

#[derive(Clone)]
pub struct Store {
    inner: Arc<dyn ObjectStore>,
    url: String,
    is_s3: bool,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Store({})", self.url)
    }
}

impl Store {
    /// Opens a store by URL:
    /// - a path or `file:///abs/dir`: a local directory (created if missing);
    /// - `s3://bucket[/prefix][?endpoint=http://host:port&region=...&allow_http=true]`: an
    ///   S3-compatible store; credentials and other settings also come from the usual `AWS_*`
    ///   environment variables;
    /// - `memory://`: in memory (tests and benchmarks).
    pub fn open(url: &str) -> Result<Store, StoreError> {
        let bad = |detail: String| StoreError::Url {
            url: url.to_owned(),
            detail,
            source: None,
        };
        let failed = |detail: &str, e: Box<dyn std::error::Error + Send + Sync>| StoreError::Url {
            url: url.to_owned(),
            detail: detail.to_owned(),
            source: Some(e),
        };
        if url == "memory://" || url == "memory:" {
            return Ok(Store {
                inner: Arc::new(object_store::memory::InMemory::new()),
                url: url.to_owned(),
                is_s3: false,
            });
        }
        if let Some(rest) = url.strip_prefix("s3://") {
            let parsed = url::Url::parse(url).map_err(|e| failed("not a URL", Box::new(e)))?;
            let bucket = parsed
                .host_str()
                .filter(|b| !b.is_empty())
                .ok_or_else(|| bad("no bucket".into()))?;
            let prefix = parsed.path().trim_matches('/');
            let mut builder = object_store::aws::AmazonS3Builder::from_env().with_bucket_name(bucket);
            for (key, value) in parsed.query_pairs() {
                builder = match key.as_ref() {
                    "allow_http" => builder.with_allow_http(value == "true"),
                    other => {
                        let key: object_store::aws::AmazonS3ConfigKey =
                            other.parse().map_err(|_| bad(format!("unknown S3 option {other:?}")))?;
                        builder.with_config(key, value.as_ref())
                    }
                };
                if key == "endpoint" && value.starts_with("http://") {
                    builder = builder.with_allow_http(true);
                }
            }
            let s3 = builder.build().map_err(|e| failed("configuring S3", Box::new(e)))?;
            let inner: Arc<dyn ObjectStore> = if prefix.is_empty() {
                Arc::new(s3)
            } else {
                Arc::new(object_store::prefix::PrefixStore::new(s3, prefix))
            };
            let _ = rest;
            return Ok(Store {
                inner,
                url: url.to_owned(),
                is_s3: true,
            });
        }
        let dir = match url.strip_prefix("file://") {
            Some(path) => std::path::PathBuf::from(path),
            None if url.contains("://") => return Err(bad("unsupported scheme (file://, s3:// or memory://)".into())),
            None => std::path::PathBuf::from(url),
        };
        std::fs::create_dir_all(&dir).map_err(|e| failed("creating the directory", Box::new(e)))?;
        let local = object_store::local::LocalFileSystem::new_with_prefix(&dir)
            .map_err(|e| failed("opening the directory", Box::new(e)))?;
        Ok(Store {
            inner: Arc::new(local),
            url: url.to_owned(),
            is_s3: false,
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// Fails unless the store answers. For S3 this lists the bucket, which fails for a bucket
    /// that does not exist (a misspelt bucket would otherwise be created on first write by some
    /// servers).
    pub async fn check(&self) -> Result<(), StoreError> {
        if self.is_s3 {
            let mut listing = self.inner.list(None);
            listing.try_next().await.map_err(|source| StoreError::Unavailable {
                url: self.url.clone(),
                what: "cannot list the bucket (does it exist?)",
                source,
            })?;
        }
        Ok(())
    }

    pub async fn get(&self, path: &str) -> Result<Option<Bytes>, StoreError> {
        match self.inner.get(&Path::from(path)).await {
            Ok(result) => Ok(Some(result.bytes().await.map_err(|e| io(path, e))?)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(io(path, e)),
        }
    }

    /// Writes an object that must never change.
    pub async fn put_once(&self, path: &str, bytes: Bytes) -> Result<Put, StoreError> {
        let options = PutOptions {
            mode: PutMode::Create,
            ..Default::default()
        };
        match self
            .inner
            .put_opts(&Path::from(path), PutPayload::from_bytes(bytes.clone()), options)
            .await
        {
            Ok(_) => Ok(Put::Created),
            Err(object_store::Error::AlreadyExists { .. }) => match self.get(path).await? {
                Some(existing) if existing == bytes => Ok(Put::AlreadyThere),
                _ => Err(StoreError::Rewrite { path: path.to_owned() }),
            },
            Err(e) => Err(io(path, e)),
        }
    }

    /// Writes the one mutable object, `checkpoint`.
    pub async fn put_checkpoint(&self, text: &str) -> Result<(), StoreError> {
        self.inner
            .put(
                &Path::from(CHECKPOINT_PATH),
                PutPayload::from_bytes(Bytes::from(text.to_owned())),
            )
            .await
            .map(|_| ())
            .map_err(|e| io(CHECKPOINT_PATH, e))
    }

    pub async fn delete(&self, path: &str) -> Result<(), StoreError> {
        match self.inner.delete(&Path::from(path)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(io(path, e)),
        }
    }

    /// Every object path under `prefix`, sorted (local directories list in no order).
    pub async fn list(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        let prefix_path = Path::from(prefix);
        let mut paths: Vec<String> = self
            .inner
            .list(Some(&prefix_path))
            .map_ok(|meta| meta.location.to_string())
            .try_collect()
            .await
            .map_err(|e| io(prefix, e))?;
        paths.sort();
        Ok(paths)
    }

    /// Overwrites an object whatever it holds: for tests that tamper with a log, and for
    /// copying a log elsewhere. The log's writer never calls this.
    pub async fn put_overwrite(&self, path: &str, bytes: Bytes) -> Result<(), StoreError> {
        self.inner
            .put(&Path::from(path), PutPayload::from_bytes(bytes))
            .await
            .map(|_| ())
            .map_err(|e| io(path, e))
    }
}

fn io(path: &str, source: object_store::Error) -> StoreError {
    StoreError::Io {
        path: path.to_owned(),
        source,
    }
}

impl Store {
    /// Writes a content-addressed blob; one already there under its digest is the same blob.
    pub async fn put_blob(&self, path: &str, bytes: &[u8]) -> Result<(), StoreError> {
        let options = PutOptions {
            mode: PutMode::Create,
            ..Default::default()
        };
        match self
            .inner
            .put_opts(
                &Path::from(path),
                PutPayload::from(Bytes::copy_from_slice(bytes)),
                options,
            )
            .await
        {
            Ok(_) | Err(object_store::Error::AlreadyExists { .. }) => Ok(()),
            Err(e) => Err(io(path, e)),
        }
    }
}
