//! `$AIRLOCK_HOME`: the one directory that holds a stack's state, so that every subcommand finds
//! the running stack with no further flags.
//!
//! Layout:
//! - `airlock.toml`      the stack's configuration (written by `airlock up` on first start)
//! - `stack.json`        where the running stack is (NATS URL, pids); present while `up` runs
//! - `nats/`             nats-server config, JetStream store, server log
//! - `creds/<user>.nk`   NATS nkey seeds, one per user (mode 0600)
//! - `keys/<name>.key`   Ed25519 private keys (gate, auditor, approver), `keys/<name>.pub` verifier keys
//! - `audit/`            the local audit store (tlog-tiles layout)
//! - `logs/`             one log file per service
//! - `tls/`              a clustered deployment's CA and NATS node certificates (`airlock init --cluster`)

use std::path::{Path, PathBuf};

#[derive(Clone, Debug)]
pub struct Home {
    root: PathBuf,
    /// `--nats`: the server(s) to use, whatever `stack.json` or `[nats] urls` say.
    nats: Option<String>,
    /// `--set section.key=value`: settings laid over `airlock.toml` as it is read, so that one
    /// file can serve several instances (each executor names its own `instance`).
    overrides: Vec<(String, toml::Value)>,
    /// The `--set` arguments as given, passed on to the services `airlock up` starts.
    settings: Vec<String>,
}

impl Home {
    /// `--home`, else `$AIRLOCK_HOME`, else `<data dir>/airlock` (e.g. `~/.local/share/airlock`),
    /// found the way the client library finds it.
    pub fn locate(explicit: Option<PathBuf>) -> anyhow::Result<Self> {
        let stack = airlock_client::StackHome::locate(explicit)?;
        Ok(Self {
            root: stack.root().to_owned(),
            nats: None,
            overrides: Vec::new(),
            settings: Vec::new(),
        })
    }

    /// Uses `nats` (a URL, or several separated by commas) as the stack's NATS.
    pub fn with_nats(mut self, nats: Option<String>) -> Self {
        self.nats = nats.filter(|n| !n.trim().is_empty());
        self
    }

    /// Lays `section.key=value` settings over the config file (values are TOML, else strings).
    pub fn with_overrides(mut self, settings: &[String]) -> anyhow::Result<Self> {
        for setting in settings {
            let Some((key, value)) = setting.split_once('=') else {
                anyhow::bail!("--set {setting:?}: expected section.key=value");
            };
            let key = key.trim();
            if key.split('.').count() < 2 || key.split('.').any(str::is_empty) {
                anyhow::bail!("--set {setting:?}: the key must name a section and a setting (executor.instance)");
            }
            self.overrides.push((key.to_owned(), parse_value(value)));
            self.settings.push(setting.clone());
        }
        Ok(self)
    }

    /// The `--set` arguments, as given.
    pub fn settings(&self) -> &[String] {
        &self.settings
    }

    /// When `error` is about a key a `--set` named, the error said as a mistake of that `--set`.
    pub fn set_mistake(&self, error: &anyhow::Error) -> Option<String> {
        let text = format!("{error:#}");
        self.overrides
            .iter()
            .zip(&self.settings)
            .find(|((key, _), _)| text.contains(key.as_str()) || text.contains(key.rsplit('.').next().unwrap_or(key)))
            .map(|(_, setting)| format!("--set {setting}: {text}"))
    }

    /// The `--nats` given, if any.
    pub fn nats_override(&self) -> Option<&str> {
        self.nats.as_deref()
    }

    pub fn root(&self) -> &Path {
        &self.root
    }
    /// The same home, as the client library finds a running stack in it.
    pub fn stack(&self) -> airlock_client::StackHome {
        airlock_client::StackHome::at(&self.root)
    }
    pub fn config_file(&self) -> PathBuf {
        self.root.join("airlock.toml")
    }
    /// The stack's config file, read (every section at its defaults when there is none).
    pub fn config(&self) -> Result<airlock_bus::runner::ConfigFile, airlock_bus::runner::ConfigError> {
        use airlock_bus::runner::{ConfigError, ConfigFile};
        let path = self.config_file();
        if self.overrides.is_empty() {
            return if path.exists() {
                ConfigFile::read(&path)
            } else {
                Ok(ConfigFile::empty())
            };
        }
        let mut table = if path.exists() {
            let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read {
                path: path.display().to_string(),
                source,
            })?;
            toml::from_str::<toml::Table>(&text).map_err(|source| ConfigError::Syntax {
                path: path.display().to_string(),
                source: Box::new(source),
            })?
        } else {
            toml::Table::new()
        };
        for (key, value) in &self.overrides {
            set_dotted(&mut table, key, value.clone()).map_err(|reason| ConfigError::Invalid {
                path: path.display().to_string(),
                key: key.clone(),
                reason,
            })?;
        }
        // Serialised back so that the file's own reader (and its refusal of unknown keys, which
        // covers the overrides too) does the rest.
        let text = toml::to_string(&table).map_err(|e| ConfigError::Invalid {
            path: path.display().to_string(),
            key: "--set".into(),
            reason: e.to_string(),
        })?;
        ConfigFile::parse(&path, &text)
    }
    pub fn stack_file(&self) -> PathBuf {
        self.stack().stack_file()
    }
    pub fn nats_dir(&self) -> PathBuf {
        self.root.join("nats")
    }
    pub fn creds(&self, user: &str) -> PathBuf {
        self.stack().creds(user)
    }
    pub fn private_key(&self, name: &str) -> PathBuf {
        self.stack().private_key(name)
    }
    pub fn verifier_key(&self, name: &str) -> PathBuf {
        self.stack().verifier_key(name)
    }
    pub fn audit_store(&self) -> PathBuf {
        self.root.join("audit")
    }
    /// Installed package sets (the executor's cache, mounted read-only into sandboxes).
    pub fn packages_dir(&self) -> PathBuf {
        self.root.join("packages")
    }

    pub fn logs_dir(&self) -> PathBuf {
        self.root.join("logs")
    }
    /// A clustered deployment's CA and NATS node certificates.
    pub fn tls_dir(&self) -> PathBuf {
        self.root.join("tls")
    }
}

/// A `--set` value: TOML when it parses as a TOML value (`3`, `true`, `["a"]`), else a string.
fn parse_value(text: &str) -> toml::Value {
    let text = text.trim();
    match toml::from_str::<toml::Table>(&format!("v = {text}")) {
        Ok(mut table) => table
            .remove("v")
            .unwrap_or_else(|| toml::Value::String(text.to_owned())),
        Err(_) => toml::Value::String(text.to_owned()),
    }
}

/// Sets `a.b.c` in `table`, creating the tables on the way.
fn set_dotted(table: &mut toml::Table, key: &str, value: toml::Value) -> Result<(), String> {
    let mut parts: Vec<&str> = key.split('.').collect();
    let last = parts.pop().ok_or("empty key")?;
    let mut current = table;
    for part in parts {
        let entry = current
            .entry(part.to_owned())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        current = entry.as_table_mut().ok_or_else(|| format!("{part} is not a table"))?;
    }
    current.insert(last.to_owned(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_laid_over_the_file_and_still_checked() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("airlock.toml"),
            "[executor]\ninstance = \"shared\"\n[nats]\nreplicas = 1\n",
        )
        .unwrap();
        let home = Home::locate(Some(dir.path().to_owned()))
            .unwrap()
            .with_overrides(&["executor.instance=executor-2".into(), "nats.replicas=3".into()])
            .unwrap();
        let file = home.config().unwrap();
        let nats: crate::config::NatsSection = file.section("nats").unwrap();
        assert_eq!(nats.replicas, 3);
        let executor = airlock_executor::service::Config::load(&file).unwrap();
        assert_eq!(executor.sandbox.instance, "executor-2");

        let typo = Home::locate(Some(dir.path().to_owned()))
            .unwrap()
            .with_overrides(&["nats.replica=3".into()])
            .unwrap();
        assert!(
            typo.config()
                .unwrap()
                .section::<crate::config::NatsSection>("nats")
                .is_err()
        );
        assert!(
            Home::locate(None)
                .unwrap()
                .with_overrides(&["instance=x".into()])
                .is_err()
        );
    }
}
