//! Whom the gate believes, and by which policy it judges: the approver, operator and bridge
//! keys, the people behind identities and keys, and the policy, swapped as a whole when the config
//! file changes (hot reload). A bad file keeps what is in force, and says why.

use crate::config::Config;
use crate::policy::EffectivePolicy;
use airlock_approvals::{People, PeopleError, Source, valid_person_name};
use airlock_bus::runner::ConfigFile;
use airlock_protocol::{KeyError, VerifierKey, VerifierSet};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};
use tokio_util::sync::CancellationToken;

#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("{what} key {key:?}")]
    Key {
        what: &'static str,
        key: String,
        #[source]
        source: KeyError,
    },
    #[error("reading operator keys in {dir}")]
    OperatorsDir {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("operator key file {path}: the file name must be a person's name (NAME.pub)")]
    OperatorName { path: PathBuf },
    #[error("[people]")]
    People(#[from] PeopleError),
}

/// The keys and policy in force.
pub struct Trust {
    pub policy: EffectivePolicy,
    /// Every key whose answers the gate reads (operators' and bridges').
    pub verifiers: VerifierSet,
    /// Who is who: chat identities and operator keys to people.
    pub people: People,
    /// Bridge keys, by their text, with the chat system each vouches for.
    bridge_keys: BTreeMap<String, String>,
}

impl Trust {
    pub fn from_config(config: &Config) -> Result<Self, TrustError> {
        let parse = |what: &'static str, key: &String| {
            VerifierKey::parse(key).map_err(|source| TrustError::Key {
                what,
                key: key.clone(),
                source,
            })
        };
        let mut keys = Vec::new();
        for key in &config.approver_keys {
            keys.push(parse("approver", key)?);
        }
        let mut operator_keys = BTreeMap::new();
        for (name, key) in read_operator_keys(&config.operators_dir)? {
            let parsed = parse("operator", &key)?;
            operator_keys.insert(parsed.to_string(), name);
            keys.push(parsed);
        }
        for person in config.people.values() {
            for key in &person.operator_keys {
                keys.push(parse("operator", key)?);
            }
        }
        let mut bridge_keys = BTreeMap::new();
        for (system, list) in &config.bridge_keys {
            for key in list {
                let parsed = parse("bridge", key)?;
                if let Some(other) = bridge_keys.insert(parsed.to_string(), system.clone()) {
                    // One key for several systems is fine; the answer's `via` picks the system
                    // and the judgement checks it. Keep the last for the map, log the sharing.
                    tracing::debug!(key = %parsed, system, other, "bridge key shared between chat systems");
                }
                keys.push(parsed);
            }
        }
        Ok(Self {
            policy: warn_of_fallbacks(config.effective_policy()),
            verifiers: VerifierSet::new(keys),
            people: People::new(&config.people, &operator_keys)?,
            bridge_keys,
        })
    }

    /// Whether answers signed by `key` (a verifier key's text) are read at all.
    pub fn trusts(&self, key: &str) -> bool {
        self.verifiers.keys().iter().any(|k| k.to_string() == key)
    }

    /// Where an answer signed by `signer` comes from. A bridge key is judged as a bridge even if
    /// an operator listed it as an approver key too: the stricter reading wins. A key shared by
    /// several systems vouches for the one the answer names, if that system lists it.
    pub fn source_of(&self, signer: &VerifierKey, claimed_system: Option<&str>, config: &Config) -> Source {
        let text = signer.to_string();
        if let Some(system) = claimed_system
            && config.bridge_keys.get(system).is_some_and(|keys| keys.contains(&text))
        {
            return Source::Bridge(system.to_owned());
        }
        match self.bridge_keys.get(&text) {
            Some(system) => Source::Bridge(system.clone()),
            None => Source::Operator {
                person: self.people.of_key(&text).map(str::to_owned),
            },
        }
    }
}

/// The trust in force, shared by the gate's tasks; readers take a snapshot.
pub struct Current {
    inner: RwLock<(Arc<Trust>, Arc<Config>)>,
}

impl Current {
    pub fn new(trust: Trust, config: Config) -> Self {
        Self {
            inner: RwLock::new((Arc::new(trust), Arc::new(config))),
        }
    }

    pub fn get(&self) -> (Arc<Trust>, Arc<Config>) {
        self.inner.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set(&self, trust: Trust, config: Config) {
        *self.inner.write().unwrap_or_else(|p| p.into_inner()) = (Arc::new(trust), Arc::new(config));
    }

    /// Re-reads the config file; on success swaps policy and keys (the gate's own key, its
    /// timings and the quotas stay as started). Returns the new policy version when it changed.
    pub fn reload(&self, path: &Path) -> Result<Option<String>, Box<dyn std::error::Error + Send + Sync>> {
        let file = ConfigFile::read(path)?;
        let fresh = Config::load(&file)?;
        let trust = Trust::from_config(&fresh)?;
        let (old_trust, old_config) = self.get();
        let keys_changed = fresh.approver_keys != old_config.approver_keys
            || fresh.bridge_keys != old_config.bridge_keys
            || trust.verifiers.keys() != old_trust.verifiers.keys()
            || trust.people != old_trust.people;
        if trust.policy.version == old_trust.policy.version && !keys_changed {
            return Ok(None);
        }
        let version = trust.policy.version.clone();
        let config = Config {
            approver_keys: fresh.approver_keys,
            bridge_keys: fresh.bridge_keys,
            policy: fresh.policy,
            chat_approvers: fresh.chat_approvers,
            people: fresh.people,
            ..(*old_config).clone()
        };
        self.set(trust, config);
        Ok(Some(version))
    }
}

/// `NAME.pub` files of operators' own keys, as `(NAME, key text)`. A missing directory holds
/// none.
fn read_operator_keys(dir: &Path) -> Result<Vec<(String, String)>, TrustError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(source) => {
            return Err(TrustError::OperatorsDir {
                dir: dir.to_owned(),
                source,
            });
        }
    };
    let mut keys = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|source| TrustError::OperatorsDir {
                dir: dir.to_owned(),
                source,
            })?
            .path();
        if path.extension().is_none_or(|e| e != "pub") {
            continue;
        }
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
        if !valid_person_name(name) {
            return Err(TrustError::OperatorName { path });
        }
        let text = std::fs::read_to_string(&path).map_err(|source| TrustError::OperatorsDir {
            dir: dir.to_owned(),
            source,
        })?;
        keys.push((name.to_owned(), text.trim().to_owned()));
    }
    keys.sort();
    Ok(keys)
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Reloads on SIGHUP, and when `watch` is on, whenever the file's modification time changes.
pub async fn watch(current: Arc<Current>, counters: airlock_bus::ServiceCounters, shutdown: CancellationToken) {
    let (_, config) = current.get();
    let Some(path) = config.source.clone() else { return };
    let watching = config.watch;
    // Adding an operator's key (`airlock keys add-operator`) changes the directory, not the file.
    let operators = config.operators_dir.clone();
    let stamp = |path: &Path| (modified(path), modified(&operators));
    let mut hangup = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for SIGHUP; the policy reloads only on file changes");
            None
        }
    };
    let mut seen = stamp(&path);
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    loop {
        let hup = async {
            match hangup.as_mut() {
                Some(s) => s.recv().await,
                None => std::future::pending().await,
            }
        };
        let forced = tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tick.tick() => false,
            _ = hup => true,
        };
        let now = stamp(&path);
        if !forced && (!watching || now == seen) {
            continue;
        }
        seen = now;
        match current.reload(&path) {
            Ok(Some(version)) => {
                counters.incr("policy_reloads");
                tracing::info!(policy_version = %version, "policy reloaded");
            }
            Ok(None) => {}
            Err(e) => {
                counters.incr("policy_reload_failures");
                tracing::error!(error = %airlock_protocol::error_chain(&*e), "the changed config is not valid; keeping the policy in force");
            }
        }
    }
}

/// Logs, once per load, the kinds of code the policy wants under a runtime the stack does not
/// offer and that run under a weaker one instead (`unavailable = "fall_back"`, the default).
fn warn_of_fallbacks(policy: EffectivePolicy) -> EffectivePolicy {
    let fallbacks = policy.fallbacks();
    if !fallbacks.is_empty() {
        let kinds: Vec<String> = fallbacks
            .iter()
            .map(|(level, origin, wanted, granted)| {
                format!(
                    "{} {level} ({} wanted, {} granted)",
                    origin.as_str(),
                    wanted.as_str(),
                    granted.as_str()
                )
            })
            .collect();
        tracing::warn!(
            kinds = %kinds.join(", "),
            "the policy wants some code under a runtime the stack does not offer; it runs under a weaker one \
             (add the runtime to [executor.runtimes] available, or set [gate.policy.runtimes] unavailable = \"deny\")"
        );
    }
    policy
}
