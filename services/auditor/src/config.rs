//! The auditor's configuration: the `[auditor]` section of the stack's TOML file.

use airlock_auditlog::trust::{KeyConfig, KeySet, TrustedKey};
use airlock_bus::runner::{ConfigFile, legacy_duration};
use airlock_protocol::SigningKey;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    /// Where the log lives: a directory path or `file:///dir`, `s3://bucket/prefix?endpoint=...`
    /// (credentials from `AWS_*` variables or the query), or `memory://`.
    pub store: String,
    /// The log's origin: the checkpoint's first line and the name of its signing key.
    pub origin: String,
    /// The Ed25519 key that signs checkpoints (C2SP note private key; created if missing).
    pub key_file: PathBuf,
    /// Further signing keys. During a key rotation, old and new keys both sign every checkpoint.
    pub extra_key_files: Vec<PathBuf>,
    /// Verifier keys with validity windows, for `airlock audit verify`. The signing keys'
    /// own verifier keys are trusted without a window when they are not listed here.
    pub verifier_keys: Vec<KeyConfig>,
    /// The log's key set: every key that signed it, retired ones with the time they stopped
    /// (written by `airlock keys rotate auditor`). Default: beside `key_file`, the same name
    /// with `.keys` (`keys/auditor.keys`). A missing file is an empty set.
    pub key_set_file: Option<PathBuf>,
    /// How long the first event of a batch may wait for others before the batch is committed.
    /// Zero (the default) is group commit: a batch is committed as soon as the previous commit
    /// is durable, holding everything that arrived meanwhile, so a lone request is logged and
    /// receipted in milliseconds while batches grow under load. At most 1 s: checkpoints are
    /// never further apart while events arrive.
    #[serde(with = "humantime_serde")]
    pub commit_linger: Duration,
    /// Most entries in one commit.
    pub max_batch: usize,
    /// How long JetStream waits for the auditor's ack before redelivering.
    #[serde(with = "humantime_serde")]
    pub ack_wait: Duration,
    /// How long the single-writer lease lasts without renewal; a restarted or standby auditor
    /// takes over at most this long after the writer dies.
    #[serde(with = "humantime_serde")]
    pub lease: Duration,
    /// How long missing stream messages are waited for before a `gap` entry records them.
    #[serde(with = "humantime_serde")]
    pub gap_timeout: Duration,
    /// Keep entry bodies and blobs this many days (none: forever). Tiles are never pruned.
    pub retention_days: Option<u64>,
    /// How often retention runs.
    #[serde(with = "humantime_serde")]
    pub prune_interval: Duration,
    /// Publish each entry on `airlock.audit.entry.<request id>`.
    pub publish_entries: bool,
    /// `[auditor.retention]`: per-client byte budgets and what is kept by digest only.
    pub retention: crate::retention::RetentionConfig,
    /// No run without its record: executors start a program only while this log keeps up
    /// (its decision logged, or the log under `max_lag` behind). Read by the executors, which
    /// follow the published entries (so it needs `publish_entries`). `false`: runs go on while
    /// the auditor is away and are logged when it is back.
    pub required: bool,
    /// How far behind the log may be, as an executor sees it, for a program to start before
    /// its own decision is logged (read by the executors).
    #[serde(with = "humantime_serde")]
    pub max_lag: Duration,
    /// From this percentage of a local store's volume used, the auditor says so in its status
    /// (and `airlock status` exits non-zero). 100: only a full volume.
    pub store_warn_percent: u8,
    // Keys of the previous release, read with a warning (see `legacy_duration`); public only
    // so that struct-update syntax works outside the crate.
    #[doc(hidden)]
    #[serde(default, skip_serializing)]
    pub batch_interval_ms: Option<u64>,
    #[doc(hidden)]
    #[serde(default, skip_serializing)]
    pub ack_wait_ms: Option<u64>,
    #[doc(hidden)]
    #[serde(default, skip_serializing)]
    pub lease_ms: Option<u64>,
    #[doc(hidden)]
    #[serde(default, skip_serializing)]
    pub gap_timeout_ms: Option<u64>,
    #[doc(hidden)]
    #[serde(default, skip_serializing)]
    pub prune_interval_s: Option<u64>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            store: "airlock-audit".to_owned(),
            origin: "airlock.local/audit".to_owned(),
            key_file: PathBuf::from("auditor.key"),
            extra_key_files: Vec::new(),
            verifier_keys: Vec::new(),
            key_set_file: None,
            commit_linger: Duration::ZERO,
            max_batch: 10_000,
            ack_wait: Duration::from_secs(10),
            lease: Duration::from_secs(5),
            gap_timeout: Duration::from_secs(30),
            retention_days: None,
            prune_interval: Duration::from_secs(3_600),
            publish_entries: true,
            retention: crate::retention::RetentionConfig::default(),
            required: true,
            max_lag: Duration::from_secs(2),
            store_warn_percent: 90,
            batch_interval_ms: None,
            ack_wait_ms: None,
            lease_ms: None,
            gap_timeout_ms: None,
            prune_interval_s: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("auditor config: {0}")]
    Invalid(String),
    #[error("auditor key {path}")]
    Key {
        path: String,
        #[source]
        source: airlock_protocol::KeyError,
    },
    #[error("auditor key set {path}")]
    KeySet {
        path: String,
        #[source]
        source: airlock_auditlog::trust::KeySetError,
    },
    #[error(transparent)]
    File(#[from] airlock_bus::runner::ConfigError),
}

const MS: Duration = Duration::from_millis(1);
const SECOND: Duration = Duration::from_secs(1);

impl Config {
    /// Reads `[auditor]` of the stack's config file; the binary and `airlock serve` both load
    /// it this way.
    pub fn load(file: &ConfigFile) -> Result<Self, ConfigError> {
        let section = airlock_protocol::roles::AUDITOR.config_section;
        let mut config: Config = file.section(section)?;
        config.read_legacy_keys();
        config.validate()?;
        Ok(config)
    }

    fn read_legacy_keys(&mut self) {
        legacy_duration(
            self.batch_interval_ms.take(),
            MS,
            &mut self.commit_linger,
            "auditor.batch_interval_ms",
            "auditor.commit_linger",
        );
        legacy_duration(
            self.ack_wait_ms.take(),
            MS,
            &mut self.ack_wait,
            "auditor.ack_wait_ms",
            "auditor.ack_wait",
        );
        legacy_duration(
            self.lease_ms.take(),
            MS,
            &mut self.lease,
            "auditor.lease_ms",
            "auditor.lease",
        );
        legacy_duration(
            self.gap_timeout_ms.take(),
            MS,
            &mut self.gap_timeout,
            "auditor.gap_timeout_ms",
            "auditor.gap_timeout",
        );
        legacy_duration(
            self.prune_interval_s.take(),
            SECOND,
            &mut self.prune_interval,
            "auditor.prune_interval_s",
            "auditor.prune_interval",
        );
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |m: &str| Err(ConfigError::Invalid(m.to_owned()));
        if self.commit_linger > SECOND {
            return invalid("commit_linger must be at most 1s: checkpoints are at most 1 s apart");
        }
        if self.max_batch == 0 {
            return invalid("max_batch must be at least 1");
        }
        if self.lease < Duration::from_millis(300) {
            return invalid("lease must be at least 300ms");
        }
        if self.gap_timeout <= self.ack_wait {
            return invalid("gap_timeout must be longer than ack_wait, or redeliveries would count as gaps");
        }
        if self.prune_interval < SECOND {
            return invalid("prune_interval must be at least 1s");
        }
        if self.origin.is_empty() || self.origin.contains(char::is_whitespace) || self.origin.contains('+') {
            return invalid("origin must be non-empty, without spaces or '+'");
        }
        if !(1..=100).contains(&self.store_warn_percent) {
            return invalid("store_warn_percent must be between 1 and 100");
        }
        if self.required && !self.publish_entries {
            return invalid("required needs publish_entries: executors follow the log through its published entries");
        }
        Ok(())
    }

    /// The signing keys: `key_file` (created if missing), then `extra_key_files`.
    pub fn signing_keys(&self) -> Result<Vec<SigningKey>, ConfigError> {
        let key_error = |path: &PathBuf| {
            let path = path.display().to_string();
            move |source| ConfigError::Key { path, source }
        };
        let mut keys =
            vec![SigningKey::load_or_generate(&self.key_file, &self.origin).map_err(key_error(&self.key_file))?];
        for path in &self.extra_key_files {
            keys.push(SigningKey::load(path).map_err(key_error(path))?);
        }
        for key in &keys {
            if key.name() != self.origin {
                tracing::warn!(key = key.name(), origin = %self.origin, "checkpoint key name differs from the log origin");
            }
        }
        Ok(keys)
    }

    /// Where the log's key set is: `key_set_file`, else `key_file` with the extension `.keys`.
    pub fn key_set_path(&self) -> PathBuf {
        self.key_set_file
            .clone()
            .unwrap_or_else(|| self.key_file.with_extension("keys"))
    }

    /// The log's key set (empty when there is no file yet).
    pub fn key_set(&self) -> Result<KeySet, ConfigError> {
        let path = self.key_set_path();
        KeySet::load(&path)
            .map(Option::unwrap_or_default)
            .map_err(|source| ConfigError::KeySet {
                path: path.display().to_string(),
                source,
            })
    }

    /// The keys a verifier of this log trusts: the configured ones with their windows, the key
    /// set's (each retired key up to its retirement), and the signing keys' own verifier keys.
    pub fn trusted_keys(&self, signing: &[SigningKey]) -> Result<Vec<TrustedKey>, ConfigError> {
        let mut keys = self
            .verifier_keys
            .iter()
            .map(|k| {
                TrustedKey::from_config(k).map_err(|source| ConfigError::Key {
                    path: k.key.clone(),
                    source,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        for key in self.key_set()?.trusted() {
            if !keys.iter().any(|k| k.key == key.key) {
                keys.push(key);
            }
        }
        for key in signing {
            if !keys.iter().any(|k| k.key == key.verifier()) {
                keys.push(TrustedKey::always(key.verifier()));
            }
        }
        Ok(keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stack_section_parses_and_defaults_fill_in() {
        let text = r#"
[auditor]
store = "file:///tmp/audit"
key_file = "/tmp/keys/auditor.key"
origin = "airlock.local/audit"
commit_linger = "200ms"
"#;
        let file = ConfigFile::parse(std::path::Path::new("airlock.toml"), text).unwrap();
        let config = Config::load(&file).unwrap();
        assert_eq!(config.store, "file:///tmp/audit");
        assert_eq!(config.commit_linger, Duration::from_millis(200));
        assert_eq!(config.lease, Duration::from_secs(5));
        let slow = Config {
            commit_linger: Duration::from_millis(1500),
            ..Config::default()
        };
        assert!(slow.validate().is_err());
    }

    #[test]
    fn keys_of_the_previous_release_still_work() {
        let text = "[auditor]\nbatch_interval_ms = 100\nlease_ms = 1000\nack_wait_ms = 1000\ngap_timeout_ms = 4000\n";
        let file = ConfigFile::parse(std::path::Path::new("airlock.toml"), text).unwrap();
        let config = Config::load(&file).unwrap();
        assert_eq!(config.commit_linger, Duration::from_millis(100));
        assert_eq!(config.lease, Duration::from_secs(1));
        assert_eq!(config.gap_timeout, Duration::from_secs(4));
    }

    #[test]
    fn misspelt_keys_are_refused() {
        let file = ConfigFile::parse(std::path::Path::new("airlock.toml"), "[auditor]\nleas = \"5s\"\n").unwrap();
        assert!(matches!(
            Config::load(&file),
            Err(ConfigError::File(airlock_bus::runner::ConfigError::UnknownKey { .. }))
        ));
    }
}
