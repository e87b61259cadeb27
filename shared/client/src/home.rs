//! Finding a running stack through its home directory (`$AIRLOCK_HOME`), as every `airlock`
//! subcommand and the Python client do: `stack.json` says where NATS is while `airlock up` runs,
//! `creds/<user>.nk` holds each user's nkey seed, `keys/<name>.pub` the verifier keys and
//! `keys/auditor.keys` the auditor's keys across rotations.

use crate::ClientError;
use airlock_auditlog::trust::{KeySet, TrustedKey};
use airlock_protocol::VerifierKey;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The environment variable naming a stack's home.
pub const HOME_ENV: &str = "AIRLOCK_HOME";
/// The environment variable that overrides the stack's NATS URL.
pub const NATS_URL_ENV: &str = "AIRLOCK_NATS_URL";

#[derive(Clone, Debug)]
pub struct StackHome {
    root: PathBuf,
}

/// Where the running stack is; written by `airlock up`, removed when it stops.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StackInfo {
    pub nats_url: String,
    /// The nats-server `up` started, if it started one.
    pub nats_pid: Option<u32>,
    /// The `airlock up` process.
    pub supervisor_pid: u32,
    pub services: BTreeMap<String, u32>,
    pub started_ms: i64,
}

impl StackHome {
    /// `explicit`, else `$AIRLOCK_HOME`, else `<data dir>/airlock` (e.g. `~/.local/share/airlock`).
    pub fn locate(explicit: Option<PathBuf>) -> Result<Self, ClientError> {
        let root = match explicit.or_else(|| std::env::var_os(HOME_ENV).map(PathBuf::from)) {
            Some(p) => p,
            None => dirs::data_dir().ok_or(ClientError::NoHome)?.join("airlock"),
        };
        Ok(Self { root })
    }

    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn stack_file(&self) -> PathBuf {
        self.root.join("stack.json")
    }

    pub fn creds(&self, user: &str) -> PathBuf {
        self.root.join("creds").join(format!("{user}.nk"))
    }

    pub fn private_key(&self, name: &str) -> PathBuf {
        self.root.join("keys").join(format!("{name}.key"))
    }

    pub fn verifier_key(&self, name: &str) -> PathBuf {
        self.root.join("keys").join(format!("{name}.pub"))
    }

    /// Where operators' own keys live: `NAME.key` (private, 0600) and `NAME.pub`, one pair per
    /// person; the gate trusts every `.pub` there as that person's.
    pub fn operators_dir(&self) -> PathBuf {
        self.root.join("keys").join("operators")
    }

    /// Operator `name`'s private key.
    pub fn operator_key(&self, name: &str) -> PathBuf {
        self.operators_dir().join(format!("{name}.key"))
    }

    /// Makes operator `name`'s own key pair (kept when it exists) and returns its verifier key.
    pub fn add_operator(&self, name: &str) -> Result<VerifierKey, ClientError> {
        if !airlock_protocol::roles::valid_person_name(name) {
            return Err(ClientError::BadOperatorName { name: name.to_owned() });
        }
        let private = self.operator_key(name);
        let key = airlock_protocol::SigningKey::load_or_generate(&private, &format!("airlock.local/operator/{name}"))
            .map_err(|source| ClientError::Key {
            path: private.display().to_string(),
            source,
        })?;
        let verifier = key.verifier();
        let public = self.operators_dir().join(format!("{name}.pub"));
        std::fs::write(&public, format!("{verifier}\n")).map_err(|source| ClientError::Write {
            path: public.display().to_string(),
            source,
        })?;
        Ok(verifier)
    }

    /// The auditor's key set (`keys/auditor.keys`, written by `airlock keys rotate auditor`):
    /// every key that signed the log, a retired one with the time it stopped signing.
    pub fn auditor_key_set(&self) -> PathBuf {
        self.root.join("keys").join("auditor.keys")
    }

    /// The keys receipts are checked against: the auditor's key set, each retired key only for
    /// what was logged before its retirement, and the current key (`keys/auditor.pub`). Without
    /// a key set (no rotation yet), the current key alone.
    pub fn auditor_keys(&self) -> Result<Vec<TrustedKey>, ClientError> {
        let mut keys = KeySet::load(&self.auditor_key_set())
            .map_err(ClientError::AuditorKeys)?
            .map(|set| set.trusted())
            .unwrap_or_default();
        let path = self.verifier_key("auditor");
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let key = VerifierKey::parse(text.trim()).map_err(|source| ClientError::Key {
                    path: path.display().to_string(),
                    source,
                })?;
                if !keys.iter().any(|k| k.key == key) {
                    keys.push(TrustedKey::always(key));
                }
            }
            Err(source) if keys.is_empty() => {
                return Err(ClientError::Read {
                    path: path.display().to_string(),
                    source,
                });
            }
            Err(_) => {}
        }
        Ok(keys)
    }

    /// What `stack.json` says, if a stack has written one.
    pub fn stack_info(&self) -> Result<Option<StackInfo>, ClientError> {
        let path = self.stack_file();
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| ClientError::Corrupt {
                    path: path.display().to_string(),
                    source: Box::new(e),
                }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(ClientError::Read {
                path: path.display().to_string(),
                source,
            }),
        }
    }

    /// The running stack's NATS URL (`$AIRLOCK_NATS_URL` wins), or why there is none.
    pub fn nats_url(&self) -> Result<String, ClientError> {
        if let Ok(url) = std::env::var(NATS_URL_ENV) {
            return Ok(url);
        }
        let home = self.root.display().to_string();
        match self.stack_info()? {
            Some(info) if alive(info.supervisor_pid) => Ok(info.nats_url),
            Some(_) => Err(ClientError::Stale { home }),
            None => Err(ClientError::NotRunning { home }),
        }
    }
}

impl StackInfo {
    pub fn read(home: &StackHome) -> Result<Option<StackInfo>, ClientError> {
        home.stack_info()
    }

    pub fn write(&self, home: &StackHome) -> std::io::Result<()> {
        let tmp = home.stack_file().with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(self).unwrap_or_default())?;
        std::fs::rename(tmp, home.stack_file())
    }
}

/// Whether a process with this pid exists.
pub fn alive(pid: u32) -> bool {
    // Signal 0 checks existence and permission without delivering anything.
    unsafe { libc::kill(pid as libc::pid_t, 0) == 0 }
}
