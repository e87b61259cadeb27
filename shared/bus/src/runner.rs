//! What every service is run by: its section of the stack's config file, a cancellation on
//! SIGINT/SIGTERM that lets it finish its current message, and the [`Runner`] that consumes,
//! settles and answers status for it.

mod service;

pub use service::{Handled, Handler, Later, Runner, Settling};

use airlock_protocol::roles::ServiceRole;
use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};
use tokio_util::sync::CancellationToken;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading config {path}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("config {path} is not valid TOML")]
    Syntax {
        path: String,
        #[source]
        source: Box<toml::de::Error>,
    },
    #[error("config {path}: [{section}]")]
    Section {
        path: String,
        section: String,
        #[source]
        source: Box<toml::de::Error>,
    },
    #[error("config {path}: unknown key {key} (a typo? `docs/configuration.md` lists every setting)")]
    UnknownKey { path: String, key: String },
    #[error("config {path}: {key}: {reason}")]
    Invalid { path: String, key: String, reason: String },
}

/// The stack's config file, read once; each service takes its own sections from it.
#[derive(Clone, Debug)]
pub struct ConfigFile {
    path: PathBuf,
    table: toml::Table,
}

impl ConfigFile {
    pub fn read(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(path, &text)
    }

    pub fn parse(path: &Path, text: &str) -> Result<Self, ConfigError> {
        let table = toml::from_str(text).map_err(|source| ConfigError::Syntax {
            path: path.display().to_string(),
            source: Box::new(source),
        })?;
        Ok(Self {
            path: path.to_owned(),
            table,
        })
    }

    /// No file: every section takes its defaults.
    pub fn empty() -> Self {
        Self {
            path: PathBuf::from("(defaults)"),
            table: toml::Table::new(),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The sections present in the file.
    pub fn sections(&self) -> impl Iterator<Item = &str> {
        self.table.keys().map(String::as_str)
    }

    pub fn has_section(&self, section: &str) -> bool {
        self.table.contains_key(section)
    }

    /// `[section]` as `T` (its defaults when the section is absent). A key `T` does not know
    /// is an error naming the key's full path: a misspelt setting must not silently keep its
    /// default.
    pub fn section<T: DeserializeOwned + Default>(&self, section: &str) -> Result<T, ConfigError> {
        let Some(value) = self.table.get(section) else {
            return Ok(T::default());
        };
        let mut unknown = Vec::new();
        let parsed: T =
            serde_ignored::deserialize(value.clone(), |path| unknown.push(path.to_string())).map_err(|source| {
                ConfigError::Section {
                    path: self.path.display().to_string(),
                    section: section.to_owned(),
                    source: Box::new(source),
                }
            })?;
        if let Some(key) = unknown.into_iter().next() {
            return Err(ConfigError::UnknownKey {
                path: self.path.display().to_string(),
                key: format!("{section}.{key}"),
            });
        }
        Ok(parsed)
    }

    /// `[section]` as `T` after taking out `keys`, which are returned apart (for a section read
    /// by two owners, such as the executor's: its own keys and its sandbox's). Unknown keys of
    /// the rest are refused with their full path.
    pub fn section_apart<T: DeserializeOwned + Default>(
        &self,
        section: &str,
        keys: &[&str],
    ) -> Result<(T, toml::Table), ConfigError> {
        let Some(toml::Value::Table(table)) = self.table.get(section) else {
            return Ok((self.section(section)?, toml::Table::new()));
        };
        let mut rest = table.clone();
        let apart: toml::Table = keys
            .iter()
            .filter_map(|k| rest.remove(*k).map(|v| ((*k).to_owned(), v)))
            .collect();
        let mut file = self.clone();
        file.table.insert(section.to_owned(), toml::Value::Table(rest));
        Ok((file.section(section)?, apart))
    }

    /// One key of another service's section, as written (`None` when absent): for a setting
    /// one service reads from a section another owns and checks.
    pub fn key(&self, section: &str, key: &str) -> Option<&toml::Value> {
        self.table.get(section)?.as_table()?.get(key)
    }

    /// An error about `key` of this file, for checks serde cannot make. The reason is text on
    /// purpose: it is the sentence the operator reads after the key's path (a parser's error,
    /// such as humantime's "expected number", is that sentence), and nothing handles it further.
    pub fn invalid(&self, key: &str, reason: impl Into<String>) -> ConfigError {
        ConfigError::Invalid {
            path: self.path.display().to_string(),
            key: key.to_owned(),
            reason: reason.into(),
        }
    }
}

/// A setting renamed when `airlock.toml` moved to one duration convention (humantime strings:
/// `"500ms"`, `"30s"`, `"15m"`): the old key, a number in its old unit, is still read for one
/// release, with a warning naming the new key. The old key wins when both are given, so that a
/// file written for the previous release means what it meant.
pub fn legacy_duration(
    old: Option<u64>,
    unit: std::time::Duration,
    new: &mut std::time::Duration,
    old_key: &str,
    new_key: &str,
) {
    if let Some(value) = old {
        let value = unit.saturating_mul(u32::try_from(value).unwrap_or(u32::MAX));
        let warning = format!(
            "deprecated setting: write {new_key} = \"{}\" instead of {old_key} (read for one more release)",
            humantime::format_duration(value)
        );
        tracing::warn!(old_key, new_key, "{warning}");
        remember_deprecation(warning);
        *new = value;
    }
}

/// Deprecation warnings given while reading config in this process, for a command with no log
/// (`airlock up` prints them on its console before it starts anything).
static DEPRECATIONS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

fn remember_deprecation(warning: String) {
    let mut all = DEPRECATIONS.lock().unwrap_or_else(|p| p.into_inner());
    if !all.contains(&warning) {
        all.push(warning);
    }
}

/// The deprecation warnings given so far, each once.
pub fn deprecations() -> Vec<String> {
    DEPRECATIONS.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// A token cancelled on the first SIGINT or SIGTERM.
pub fn shutdown_on_signal() -> CancellationToken {
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for SIGTERM");
                return;
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        tracing::info!("shutting down");
        cancel.cancel();
    });
    token
}

/// The command line every service binary takes.
#[derive(Clone, Debug, clap::Parser)]
pub struct ServiceArgs {
    /// The stack's TOML config file; the service reads its own section.
    #[arg(long, env = "AIRLOCK_CONFIG")]
    pub config: Option<PathBuf>,
    /// NATS server URL(s), comma-separated.
    #[arg(long, env = "AIRLOCK_NATS_URL", default_value = "nats://127.0.0.1:4222")]
    pub nats: String,
    /// File holding this service's NATS nkey seed.
    #[arg(long, env = "AIRLOCK_NATS_CREDS")]
    pub creds: Option<PathBuf>,
}

/// Why a service binary ended in error.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError<E: std::error::Error + 'static> {
    /// The config file, or the service's sections of it (whose errors are each service's own).
    #[error(transparent)]
    Config(Box<dyn std::error::Error + Send + Sync>),
    #[error(transparent)]
    Bus(#[from] crate::BusError),
    #[error(transparent)]
    Run(E),
}

/// What a service binary's `main` does: reads its command line and its section of the config
/// (`load`), starts telemetry under the service's name, connects as the role's user, and runs
/// the service (`run`) until SIGINT or SIGTERM.
pub async fn serve_binary<C, L, E, Fut>(
    role: &'static ServiceRole,
    load: impl FnOnce(&ConfigFile) -> Result<C, L>,
    run: impl FnOnce(async_nats::Client, C, CancellationToken) -> Fut,
) -> Result<(), ServiceError<E>>
where
    L: std::error::Error + Send + Sync + 'static,
    E: std::error::Error + 'static,
    Fut: std::future::Future<Output = Result<(), E>>,
{
    use clap::Parser as _;
    let args = ServiceArgs::parse();
    let file = args.config_file().map_err(|e| ServiceError::Config(e.into()))?;
    let config = load(&file).map_err(|e| ServiceError::Config(e.into()))?;
    let _telemetry = airlock_telemetry::init(role.name, &Default::default());
    let client = crate::connect(&args.connect_config(role.role.user)).await?;
    run(client, config, shutdown_on_signal())
        .await
        .map_err(ServiceError::Run)
}

impl ServiceArgs {
    /// The stack's config file (empty when none is given).
    pub fn config_file(&self) -> Result<ConfigFile, ConfigError> {
        match &self.config {
            Some(path) => ConfigFile::read(path),
            None => Ok(ConfigFile::empty()),
        }
    }

    pub fn connect_config(&self, user: &str) -> crate::ConnectConfig {
        let mut config = crate::ConnectConfig::new(self.nats.clone(), format!("airlock-{user}"));
        if let Some(creds) = &self.creds {
            config = crate::ConnectConfig::for_user(self.nats.clone(), user, creds.clone());
        }
        config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, serde::Deserialize)]
    #[serde(default)]
    struct Inner {
        min_idle: u32,
    }

    #[derive(Debug, Default, serde::Deserialize)]
    #[serde(default)]
    struct Section {
        size: u32,
        pool: Inner,
    }

    #[test]
    fn unknown_keys_are_refused_with_their_path() {
        let file = ConfigFile::parse(Path::new("a.toml"), "[x]\nsize = 3\n[x.pool]\nmin_idel = 3\n").unwrap();
        match file.section::<Section>("x") {
            Err(ConfigError::UnknownKey { key, .. }) => assert_eq!(key, "x.pool.min_idel"),
            other => panic!("expected an unknown key, got {other:?}"),
        }
        let file = ConfigFile::parse(Path::new("a.toml"), "[x]\nsize = 3\n[x.pool]\nmin_idle = 3\n").unwrap();
        let section: Section = file.section("x").unwrap();
        assert_eq!((section.size, section.pool.min_idle), (3, 3));
        let missing: Section = file.section("y").unwrap();
        assert_eq!(missing.size, 0);
    }

    #[test]
    fn bad_values_name_their_section() {
        let file = ConfigFile::parse(Path::new("a.toml"), "[x]\nsize = \"big\"\n").unwrap();
        let error = file.section::<Section>("x").unwrap_err();
        assert!(matches!(error, ConfigError::Section { .. }));
        assert!(
            crate::error_text(&error).contains("size"),
            "{}",
            crate::error_text(&error)
        );
    }
}
