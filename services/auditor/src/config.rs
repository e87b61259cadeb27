//! The auditor's configuration: the `[auditor]` section of the stack's TOML file.

use airlock_auditlog::trust::{KeyConfig, TrustedKey};
use airlock_protocol::SigningKey;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

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
    /// Longest time between an event's arrival and the checkpoint that covers it (at most 1 s).
    pub batch_interval_ms: u64,
    /// Most entries in one commit.
    pub max_batch: usize,
    /// How long JetStream waits for the auditor's ack before redelivering.
    pub ack_wait_ms: u64,
    /// How long the single-writer lease lasts without renewal; a restarted or standby auditor
    /// takes over at most this long after the writer dies.
    pub lease_ms: u64,
    /// How long missing stream messages are waited for before a `gap` entry records them.
    pub gap_timeout_ms: u64,
    /// Keep entry bodies and blobs this many days (none: forever). Tiles are never pruned.
    pub retention_days: Option<u64>,
    /// How often retention runs.
    pub prune_interval_s: u64,
    /// Publish each entry on `airlock.audit.entry.<request id>`.
    pub publish_entries: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            store: "airlock-audit".to_owned(),
            origin: "airlock.local/audit".to_owned(),
            key_file: PathBuf::from("auditor.key"),
            extra_key_files: Vec::new(),
            verifier_keys: Vec::new(),
            batch_interval_ms: 200,
            max_batch: 10_000,
            ack_wait_ms: 10_000,
            lease_ms: 5_000,
            gap_timeout_ms: 30_000,
            retention_days: None,
            prune_interval_s: 3_600,
            publish_entries: true,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("auditor config: {0}")]
    Invalid(String),
    #[error("auditor key {path}: {source}")]
    Key {
        path: String,
        source: airlock_protocol::KeyError,
    },
}

impl Config {
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |m: &str| Err(ConfigError::Invalid(m.to_owned()));
        if !(1..=1000).contains(&self.batch_interval_ms) {
            return invalid("batch_interval_ms must be between 1 and 1000: checkpoints are at most 1 s apart");
        }
        if self.max_batch == 0 {
            return invalid("max_batch must be at least 1");
        }
        if self.lease_ms < 300 {
            return invalid("lease_ms must be at least 300");
        }
        if self.gap_timeout_ms <= self.ack_wait_ms {
            return invalid("gap_timeout_ms must be longer than ack_wait_ms, or redeliveries would count as gaps");
        }
        if self.origin.is_empty() || self.origin.contains(char::is_whitespace) || self.origin.contains('+') {
            return invalid("origin must be non-empty, without spaces or '+'");
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

    /// The keys a verifier of this log trusts: the configured ones with their windows, and the
    /// signing keys' own verifier keys.
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
store = "file:///tmp/audit"
key_file = "/tmp/keys/auditor.key"
origin = "airlock.local/audit"
"#;
        let config: Config = toml::from_str(text).unwrap();
        assert_eq!(config.store, "file:///tmp/audit");
        assert_eq!(config.batch_interval_ms, 200);
        config.validate().unwrap();
        let slow = Config {
            batch_interval_ms: 1500,
            ..Config::default()
        };
        assert!(slow.validate().is_err());
    }
}
