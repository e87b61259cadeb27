//! What every service binary does around its loop: read its section of the stack's config file,
//! and turn SIGINT/SIGTERM into a cancellation that lets the loop finish its current message.

use serde::de::DeserializeOwned;
use std::path::Path;
use tokio_util::sync::CancellationToken;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading config {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("config {path}: {detail}")]
    Parse { path: String, detail: String },
}

/// Reads `[section]` of a TOML file; a missing section gives the defaults.
pub fn load_section<T: DeserializeOwned + Default>(path: &Path, section: &str) -> Result<T, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.display().to_string(),
        source,
    })?;
    let table: toml::Table = toml::from_str(&text).map_err(|e| ConfigError::Parse {
        path: path.display().to_string(),
        detail: e.to_string(),
    })?;
    match table.get(section) {
        None => Ok(T::default()),
        Some(value) => value
            .clone()
            .try_into()
            .map_err(|e: toml::de::Error| ConfigError::Parse {
                path: path.display().to_string(),
                detail: format!("[{section}]: {e}"),
            }),
    }
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
    pub config: Option<std::path::PathBuf>,
    /// NATS server URL(s), comma-separated.
    #[arg(long, env = "AIRLOCK_NATS_URL", default_value = "nats://127.0.0.1:4222")]
    pub nats: String,
    /// File holding this service's NATS nkey seed.
    #[arg(long, env = "AIRLOCK_NATS_CREDS")]
    pub creds: Option<std::path::PathBuf>,
}

impl ServiceArgs {
    /// The service's config section (defaults when no file is given).
    pub fn section<T: DeserializeOwned + Default>(&self, section: &str) -> Result<T, ConfigError> {
        match &self.config {
            Some(path) => load_section(path, section),
            None => Ok(T::default()),
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
