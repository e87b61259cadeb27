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
    /// An S3 store with no credentials configured. Without this check the S3 client would ask
    /// the cloud's instance metadata address (169.254.169.254) for some, and fail later with a
    /// generic error.
    #[error(
        "store {url}: no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or access_key_id= and secret_access_key= in the URL's query), or name another source (AWS_WEB_IDENTITY_TOKEN_FILE with AWS_ROLE_ARN, AWS_CONTAINER_CREDENTIALS_RELATIVE_URI, metadata_endpoint= for the instance metadata service, skip_signature=true for a public bucket)"
    )]
    Credentials { url: String },
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
    /// writer thinks it is; a bad URL or missing credentials stay so; anything else is the
    /// store being away.
    pub fn is_permanent(&self) -> bool {
        matches!(
            self,
            StoreError::Rewrite { .. } | StoreError::Url { .. } | StoreError::Credentials { .. }
        )
    }

    /// A store URL (`shown`, redacted) that is wrong as written.
    fn bad_url(shown: &str, detail: String) -> StoreError {
        StoreError::Url {
            url: shown.to_owned(),
            detail,
            source: None,
        }
    }

    /// A store URL that could not be used, with the error that said so.
    fn url_failed(shown: &str, detail: &str, source: Box<dyn std::error::Error + Send + Sync>) -> StoreError {
        StoreError::Url {
            url: shown.to_owned(),
            detail: detail.to_owned(),
            source: Some(source),
        }
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
    /// The directory of a local store, whose volume can fill.
    local_dir: Option<std::path::PathBuf>,
}

/// How much a store holds and, for a local directory, how full its volume is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Usage {
    /// Bytes of every object in the store (the log's own size).
    pub bytes_used: u64,
    /// The volume of a local directory store (none for S3 or memory, whose size is the
    /// provider's to tell).
    pub volume: Option<Volume>,
}

/// A file system's size and what is used of it, in bytes (blocks reserved for root count as
/// used: the auditor cannot write them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Volume {
    pub used: u64,
    pub size: u64,
}

impl Volume {
    /// The volume holding `dir`.
    pub fn of(dir: &std::path::Path) -> std::io::Result<Volume> {
        let stat = rustix::fs::statvfs(dir)?;
        let size = stat.f_blocks.saturating_mul(stat.f_frsize);
        let available = stat.f_bavail.saturating_mul(stat.f_frsize);
        Ok(Volume {
            used: size.saturating_sub(available),
            size,
        })
    }

    /// The fraction used, 0 to 1 (1 for a volume of no size).
    pub fn fraction(&self) -> f64 {
        if self.size == 0 {
            return 1.0;
        }
        self.used as f64 / self.size as f64
    }
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
    ///   environment variables. `max_retries=N` and `retry_timeout=30s` bound how long a request
    ///   is retried through an outage. Credentials must be configured: the cloud's instance
    ///   metadata service is asked only when `metadata_endpoint=` names it.
    /// - `memory://`: in memory (tests and benchmarks).
    ///
    /// The URL is kept, and said in errors, with its secrets replaced by `***`.
    pub fn open(url: &str) -> Result<Store, StoreError> {
        let shown = redacted(url);
        if url == "memory://" || url == "memory:" {
            return Ok(Store {
                inner: Arc::new(object_store::memory::InMemory::new()),
                url: url.to_owned(),
                is_s3: false,
                local_dir: None,
            });
        }
        if url.starts_with("s3://") {
            return Store::open_s3(url, object_store::aws::AmazonS3Builder::from_env());
        }
        let dir = match url.strip_prefix("file://") {
            Some(path) => std::path::PathBuf::from(path),
            None if url.contains("://") => {
                return Err(StoreError::bad_url(
                    &shown,
                    "unsupported scheme (file://, s3:// or memory://)".into(),
                ));
            }
            None => std::path::PathBuf::from(url),
        };
        std::fs::create_dir_all(&dir)
            .map_err(|e| StoreError::url_failed(&shown, "creating the directory", Box::new(e)))?;
        let local = object_store::local::LocalFileSystem::new_with_prefix(&dir)
            .map_err(|e| StoreError::url_failed(&shown, "opening the directory", Box::new(e)))?;
        Ok(Store {
            inner: Arc::new(local),
            url: url.to_owned(),
            is_s3: false,
            local_dir: Some(dir),
        })
    }

    /// An S3 store, `builder` holding what the environment configures.
    fn open_s3(url: &str, builder: object_store::aws::AmazonS3Builder) -> Result<Store, StoreError> {
        let shown = redacted(url);
        let parsed = url::Url::parse(url).map_err(|e| StoreError::url_failed(&shown, "not a URL", Box::new(e)))?;
        let bucket = parsed
            .host_str()
            .filter(|b| !b.is_empty())
            .ok_or_else(|| StoreError::bad_url(&shown, "no bucket".into()))?;
        let prefix = parsed.path().trim_matches('/');
        let mut builder = builder.with_bucket_name(bucket);
        let mut retry = object_store::RetryConfig::default();
        for (key, value) in parsed.query_pairs() {
            builder = match key.as_ref() {
                "allow_http" => builder.with_allow_http(value == "true"),
                "max_retries" => {
                    retry.max_retries = value
                        .parse()
                        .map_err(|_| StoreError::bad_url(&shown, format!("max_retries={value:?}")))?;
                    builder
                }
                "retry_timeout" => {
                    retry.retry_timeout = humantime::parse_duration(&value)
                        .map_err(|e| StoreError::url_failed(&shown, "retry_timeout", Box::new(e)))?;
                    builder
                }
                other => {
                    let key: object_store::aws::AmazonS3ConfigKey = other
                        .parse()
                        .map_err(|_| StoreError::bad_url(&shown, format!("unknown S3 option {other:?}")))?;
                    builder.with_config(key, value.as_ref())
                }
            };
            if key == "endpoint" && value.starts_with("http://") {
                builder = builder.with_allow_http(true);
            }
        }
        if !has_credentials(&builder) {
            return Err(StoreError::Credentials { url: shown });
        }
        let s3 = builder
            .with_retry(retry)
            .build()
            .map_err(|e| StoreError::url_failed(&shown, "configuring S3", Box::new(e)))?;
        let inner: Arc<dyn ObjectStore> = if prefix.is_empty() {
            Arc::new(s3)
        } else {
            Arc::new(object_store::prefix::PrefixStore::new(s3, prefix))
        };
        Ok(Store {
            inner,
            url: shown,
            is_s3: true,
            local_dir: None,
        })
    }

    /// The store's URL, secrets replaced by `***`.
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

    /// What the store holds (by listing it: every object's size) and, for a local directory, its
    /// volume's use.
    /// The volume of a local directory store (none for S3 or memory): a cheap look, without
    /// listing the store.
    pub fn volume(&self) -> Option<std::io::Result<Volume>> {
        self.local_dir.as_deref().map(Volume::of)
    }

    pub async fn usage(&self) -> Result<Usage, StoreError> {
        let bytes_used = self
            .inner
            .list(None)
            .try_fold(0u64, |sum, meta| async move { Ok(sum.saturating_add(meta.size)) })
            .await
            .map_err(|e| io("", e))?;
        let volume = match &self.local_dir {
            Some(dir) => Some(Volume::of(dir).map_err(|e| StoreError::Unavailable {
                url: self.url.clone(),
                what: "cannot read the size of its volume",
                source: object_store::Error::Generic {
                    store: "local",
                    source: Box::new(e),
                },
            })?),
            None => None,
        };
        Ok(Usage { bytes_used, volume })
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

/// Whether an S3 builder has a source of credentials someone configured: static keys, a web
/// identity, a container's credentials, the instance metadata service named explicitly, or
/// unsigned requests.
fn has_credentials(builder: &object_store::aws::AmazonS3Builder) -> bool {
    use object_store::aws::AmazonS3ConfigKey as Key;
    let set = |key: Key| builder.get_config_value(&key).is_some_and(|v| !v.is_empty());
    set(Key::AccessKeyId)
        || set(Key::SecretAccessKey)
        || (set(Key::WebIdentityTokenFile) && set(Key::RoleArn))
        || set(Key::ContainerCredentialsRelativeUri)
        || (set(Key::ContainerCredentialsFullUri) && set(Key::ContainerAuthorizationTokenFile))
        || set(Key::MetadataEndpoint)
        || builder.get_config_value(&Key::SkipSignature).as_deref() == Some("true")
}

/// A store URL with the values of its secret query parameters replaced by `***`, for logs and
/// error messages.
pub fn redacted(url: &str) -> String {
    let Some((base, query)) = url.split_once('?') else {
        return url.to_owned();
    };
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if is_secret(key) => format!("{key}=***"),
            _ => pair.to_owned(),
        })
        .collect();
    format!("{base}?{}", pairs.join("&"))
}

fn is_secret(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    key.contains("secret") || key.contains("token") || key == "aws_session_token"
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn usage_counts_every_object_and_a_local_store_s_volume() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(dir.path().to_str().expect("utf-8 path")).expect("open");
        store
            .put_once("tile/0", Bytes::from(vec![7u8; 1000]))
            .await
            .expect("put");
        store.put_checkpoint("twelve bytes").await.expect("checkpoint");
        let usage = store.usage().await.expect("usage");
        assert_eq!(usage.bytes_used, 1012);
        let volume = usage.volume.expect("a local store's volume");
        assert!(volume.size > 0 && volume.used <= volume.size, "{volume:?}");
        assert!((0.0..=1.0).contains(&volume.fraction()));
        let memory = Store::open("memory://").expect("memory").usage().await.expect("usage");
        assert_eq!(
            memory,
            Usage {
                bytes_used: 0,
                volume: None
            }
        );
    }

    #[test]
    fn secrets_in_a_store_url_are_not_repeated() {
        let url = "s3://b/p?endpoint=http://h:1&access_key_id=AK&secret_access_key=SK&token=T";
        assert_eq!(
            redacted(url),
            "s3://b/p?endpoint=http://h:1&access_key_id=AK&secret_access_key=***&token=***"
        );
        assert_eq!(redacted("/var/audit"), "/var/audit");
    }

    #[test]
    fn an_s3_store_without_credentials_says_so_and_asks_no_metadata_service() {
        // A builder with nothing from the environment, as on a machine with no AWS_* variables.
        let open = |url: &str| Store::open_s3(url, object_store::aws::AmazonS3Builder::new());
        let started = std::time::Instant::now();
        let error = open("s3://bucket/prefix?endpoint=http://127.0.0.1:1").unwrap_err();
        assert!(matches!(error, StoreError::Credentials { .. }), "{error}");
        assert!(error.to_string().contains("AWS_ACCESS_KEY_ID"), "{error}");
        assert!(error.is_permanent());
        assert!(
            started.elapsed() < std::time::Duration::from_secs(1),
            "it waited for something"
        );
        // Named explicitly, the metadata service is a source like any other.
        assert!(open("s3://bucket/prefix?endpoint=http://127.0.0.1:1&metadata_endpoint=http://127.0.0.1:2").is_ok());
        let with_keys =
            open("s3://bucket/p?endpoint=http://127.0.0.1:1&access_key_id=a&secret_access_key=b").expect("static keys");
        assert!(!with_keys.url().contains("secret_access_key=b"), "{}", with_keys.url());
    }
}
