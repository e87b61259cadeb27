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

use std::path::{Path, PathBuf};

#[derive(Clone, Debug)]
pub struct Home {
    root: PathBuf,
}

impl Home {
    /// `--home`, else `$AIRLOCK_HOME`, else `<data dir>/airlock` (e.g. `~/.local/share/airlock`),
    /// found the way the client library finds it.
    pub fn locate(explicit: Option<PathBuf>) -> anyhow::Result<Self> {
        let stack = airlock_client::StackHome::locate(explicit)?;
        Ok(Self {
            root: stack.root().to_owned(),
        })
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
        let path = self.config_file();
        if path.exists() {
            airlock_bus::runner::ConfigFile::read(&path)
        } else {
            Ok(airlock_bus::runner::ConfigFile::empty())
        }
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
}
