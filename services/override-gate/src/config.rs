//! The gate's configuration: the `[gate]` section of the stack's TOML file, the `[quotas]` it
//! grants from, and each chat system's approver list (`[bridge.<system>] approvers`), which the
//! policy refines per level.

use crate::policy::EffectivePolicy;
pub use crate::policy::{Action, Policy};
use airlock_approvals::{CHAT_SYSTEMS, Person};
use airlock_bus::runner::{ConfigError, ConfigFile, legacy_duration};
pub use airlock_protocol::Quotas;
use airlock_protocol::Runtime;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    /// The gate's Ed25519 key (signed-note private key format); created when missing.
    pub key_file: PathBuf,
    /// Key name, used when the key is created.
    pub key_name: String,
    /// Verifier keys (`name+keyid+base64`) of operators, whose signed override answers the gate
    /// accepts for every level (`airlock override`).
    pub approver_keys: Vec<String>,
    /// `[gate.bridge_keys]`: per chat system, the verifier keys of the chat bridges that relay
    /// its humans' answers. An answer signed by one of them counts only if it comes from that
    /// system and its `who` is on the policy's allow-list for the system and the level.
    pub bridge_keys: BTreeMap<String, Vec<String>>,
    /// How long a decision stays valid for the executor.
    #[serde(with = "humantime_serde")]
    pub decision_ttl: Duration,
    /// How long a human has to answer, when the request names no earlier deadline.
    #[serde(with = "humantime_serde")]
    pub override_timeout: Duration,
    /// Re-read the policy, the keys and the approver lists when the config file changes (they
    /// are also re-read on SIGHUP).
    pub watch: bool,
    /// Operators' own verifier keys, one `NAME.pub` per person (`airlock keys add-operator
    /// NAME`): an answer signed by one is that person's, whatever else it claims. Relative to the
    /// config file's directory.
    pub operators_dir: PathBuf,
    pub policy: Policy,
    /// The top-level `[people]` table: each person's chat identities and operator keys.
    #[serde(skip)]
    pub people: BTreeMap<String, Person>,
    /// The limits each trust level grants: the top-level `[quotas]` section, which the executor
    /// reads too (not a key of `[gate]`).
    #[serde(skip)]
    pub quotas: Quotas,
    /// `[bridge.<system>] approvers`, read from the bridge's sections (not keys of `[gate]`).
    #[serde(skip)]
    pub chat_approvers: BTreeMap<String, Vec<String>>,
    /// `[executor.runtimes] available`, read from the executor's section (not a key of
    /// `[gate]`): the gate never grants a runtime the stack does not offer.
    #[serde(skip)]
    pub offered_runtimes: BTreeSet<Runtime>,
    /// `[executor.egress] read_only_hosts`, read from the executor's section (the egress proxy
    /// enforces it): shown to the approver of a run granted read-only internet.
    #[serde(skip)]
    pub read_only_hosts: Vec<String>,
    /// The file this was read from, for reloading.
    #[serde(skip)]
    pub source: Option<PathBuf>,
    // Keys of the previous release, read with a warning (see `legacy_duration`).
    #[doc(hidden)]
    #[serde(default, skip_serializing)]
    pub decision_ttl_secs: Option<u64>,
    #[doc(hidden)]
    #[serde(default, skip_serializing)]
    pub override_timeout_secs: Option<u64>,
}

impl Config {
    /// Reads `[gate]`, `[quotas]` and the approver lists of `[bridge.*]` of the stack's config
    /// file; the binary and `airlock serve` both load it this way.
    pub fn load(file: &ConfigFile) -> Result<Self, ConfigError> {
        let section = airlock_protocol::roles::GATE.config_section;
        let mut config: Config = file.section(section)?;
        config.quotas = file.section("quotas")?;
        config.people = file.section("people")?;
        // Checked here as well as when the gate builds its trust, so that `airlock up` refuses a
        // person counted twice before anything starts (operator key files are added later).
        airlock_approvals::People::new(&config.people, &BTreeMap::new())
            .map_err(|e| file.invalid("people", e.to_string()))?;
        if config.operators_dir.is_relative()
            && let Some(dir) = file.path().parent().filter(|d| !d.as_os_str().is_empty())
        {
            config.operators_dir = dir.join(&config.operators_dir);
        }
        config.chat_approvers = chat_approvers(file)?;
        config.offered_runtimes = offered_runtimes(file)?;
        config.read_only_hosts = read_only_hosts(file)?;
        // A policy narrows the executor's list per origin, never widens it: an entry outside it
        // would be shown to approvers and signed, then refused by the executor at every run.
        for (origin, narrower) in [
            ("generated_hosts", &config.policy.read_only.generated_hosts),
            ("external_hosts", &config.policy.read_only.external_hosts),
        ] {
            let Some(narrower) = narrower else { continue };
            let key = format!("gate.policy.read_only.{origin}");
            let outside = airlock_protocol::hosts::uncovered(&config.read_only_hosts, narrower);
            if !outside.is_empty() {
                return Err(file.invalid(
                    &key,
                    format!(
                        "{} not within [executor.egress] read_only_hosts ({}): a policy can only narrow that list",
                        outside.join(", "),
                        config.read_only_hosts.join(", ")
                    ),
                ));
            }
            if narrower.is_empty() {
                return Err(file.invalid(
                    &key,
                    "an empty list: to give this origin no internet, set its ceiling to \"never\"",
                ));
            }
        }
        if file.path().is_file() {
            config.source = Some(file.path().to_owned());
        }
        let second = Duration::from_secs(1);
        legacy_duration(
            config.decision_ttl_secs.take(),
            second,
            &mut config.decision_ttl,
            "gate.decision_ttl_secs",
            "gate.decision_ttl",
        );
        legacy_duration(
            config.override_timeout_secs.take(),
            second,
            &mut config.override_timeout,
            "gate.override_timeout_secs",
            "gate.override_timeout",
        );
        if config.decision_ttl.is_zero() || config.override_timeout.is_zero() {
            return Err(file.invalid("gate", "decision_ttl and override_timeout must be longer than zero"));
        }
        let named = |mut systems: Vec<&String>, key: &str| -> Result<(), ConfigError> {
            match systems.drain(..).find(|s| !CHAT_SYSTEMS.contains(&s.as_str())) {
                Some(system) => Err(file.invalid(
                    &format!("{key}.{system}"),
                    format!("not a chat system (one of: {})", CHAT_SYSTEMS.join(", ")),
                )),
                None => Ok(()),
            }
        };
        named(config.bridge_keys.keys().collect(), "gate.bridge_keys")?;
        named(config.policy.approvers.keys().collect(), "gate.policy.approvers")?;
        named(config.policy.escalation.keys().collect(), "gate.policy.escalation")?;
        Ok(config)
    }

    /// The policy in force with this configuration.
    pub fn effective_policy(&self) -> EffectivePolicy {
        EffectivePolicy::with_read_only_hosts(
            self.policy.clone(),
            self.chat_approvers.clone(),
            self.offered_runtimes.clone(),
            self.read_only_hosts.clone(),
        )
    }
}

/// The `approvers` list of each `[bridge.<system>]` section. Only that key is read here: the
/// bridge checks its own sections in full.
fn chat_approvers(file: &ConfigFile) -> Result<BTreeMap<String, Vec<String>>, ConfigError> {
    let bridge: toml::Table = file.section("bridge")?;
    let mut lists = BTreeMap::new();
    for system in CHAT_SYSTEMS {
        let Some(section) = bridge.get(system) else { continue };
        let Some(list) = section.get("approvers") else { continue };
        let key = format!("bridge.{system}.approvers");
        let list: Vec<String> = list
            .clone()
            .try_into()
            .map_err(|_| file.invalid(&key, "a list of user ids"))?;
        lists.insert(system.to_owned(), list);
    }
    Ok(lists)
}

/// `[executor.runtimes] available` (runc alone when unset, as the executor reads it). Only that
/// key is read here: the executor checks its own section in full.
fn offered_runtimes(file: &ConfigFile) -> Result<BTreeSet<Runtime>, ConfigError> {
    let executor: toml::Table = file.section("executor")?;
    let Some(available) = executor.get("runtimes").and_then(|r| r.get("available")) else {
        return Ok([Runtime::Runc].into());
    };
    let names: Vec<String> = available
        .clone()
        .try_into()
        .map_err(|_| file.invalid("executor.runtimes.available", "a list of runtime names"))?;
    names
        .iter()
        .map(|name| {
            name.parse()
                .map_err(|e: String| file.invalid("executor.runtimes.available", e))
        })
        .collect()
}

/// `[executor.egress] read_only_hosts` (the proxy's default when unset). Only that key is read
/// here: the executor checks its own section in full.
fn read_only_hosts(file: &ConfigFile) -> Result<Vec<String>, ConfigError> {
    let executor: toml::Table = file.section("executor")?;
    let Some(hosts) = executor.get("egress").and_then(|e| e.get("read_only_hosts")) else {
        return Ok(airlock_protocol::DEFAULT_READ_ONLY_HOSTS.map(str::to_owned).to_vec());
    };
    hosts
        .clone()
        .try_into()
        .map_err(|_| file.invalid("executor.egress.read_only_hosts", "a list of host names"))
}

impl Default for Config {
    fn default() -> Self {
        Self {
            key_file: PathBuf::from("keys/gate.key"),
            key_name: "airlock.local/gate".to_owned(),
            approver_keys: vec![],
            bridge_keys: BTreeMap::new(),
            decision_ttl: Duration::from_secs(600),
            override_timeout: Duration::from_secs(900),
            watch: true,
            operators_dir: PathBuf::from("keys/operators"),
            policy: Policy::default(),
            people: BTreeMap::new(),
            quotas: Quotas::default(),
            chat_approvers: BTreeMap::new(),
            offered_runtimes: [Runtime::Runc].into(),
            read_only_hosts: airlock_protocol::DEFAULT_READ_ONLY_HOSTS.map(str::to_owned).to_vec(),
            source: None,
            decision_ttl_secs: None,
            override_timeout_secs: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_protocol::{Origin, TrustLevel};
    use std::path::Path;

    #[test]
    fn policy_reads_from_toml() {
        let policy: Policy = toml::from_str(
            r#"
            low = "approve"
            medium = { approve_with = "unknown" }
            high = "deny"
            blocked = "ask"
            "#,
        )
        .unwrap();
        assert_eq!(policy.medium, Action::ApproveWith(TrustLevel::Unknown));
        assert_eq!(policy.high, Action::Deny);
        assert_eq!(policy.override_quota, TrustLevel::Untrusted);
    }

    #[test]
    fn the_runtimes_offered_are_the_executors() {
        let parse = |text: &str| Config::load(&ConfigFile::parse(Path::new("a.toml"), text).unwrap());
        let default = parse("").unwrap();
        assert_eq!(default.effective_policy().offered, [Runtime::Runc].into());
        let both = parse("[executor.runtimes]\navailable = [\"runc\", \"runsc\"]\n").unwrap();
        assert_eq!(both.effective_policy().offered, [Runtime::Runc, Runtime::Runsc].into());
        assert_eq!(
            default.read_only_hosts,
            airlock_protocol::DEFAULT_READ_ONLY_HOSTS.map(str::to_owned).to_vec()
        );
        let hosts = parse("[executor.egress]\nread_only_hosts = [\"docs.rs\", \"*.example.org\"]\n").unwrap();
        assert_eq!(hosts.read_only_hosts, ["docs.rs", "*.example.org"]);
        assert!(parse("[executor.egress]\nread_only_hosts = \"docs.rs\"\n").is_err());
        let error = parse("[executor.runtimes]\navailable = [\"kata\"]\n").unwrap_err();
        assert!(airlock_bus::error_text(&error).contains("kata"), "{error}");
    }

    #[test]
    fn a_policy_narrows_the_read_only_hosts_and_never_widens_them() {
        let parse = |text: &str| Config::load(&ConfigFile::parse(Path::new("a.toml"), text).unwrap());
        let executor = "[executor.egress]\nread_only_hosts = [\"pypi.org\", \"*.example.org\"]\n";
        let narrowed = parse(&format!(
            "{executor}[gate.policy.read_only]\nexternal_hosts = [\"data.example.org\"]\n"
        ))
        .unwrap();
        assert_eq!(
            narrowed.effective_policy().rules.read_only.hosts_for(Origin::External),
            Some(&["data.example.org".to_owned()][..])
        );
        for (wider, named) in [
            ("external_hosts = [\"evil.test\"]", "evil.test"),
            ("generated_hosts = [\"pypi.org\", \"*.org\"]", "*.org"),
            ("external_hosts = [\"example.org\"]", "example.org"),
        ] {
            let error = parse(&format!("{executor}[gate.policy.read_only]\n{wider}\n")).unwrap_err();
            let text = airlock_bus::error_text(&error);
            assert!(text.contains(named) && text.contains("gate.policy.read_only"), "{text}");
        }
        let error = parse(&format!("{executor}[gate.policy.read_only]\nexternal_hosts = []\n")).unwrap_err();
        assert!(airlock_bus::error_text(&error).contains("never"), "{error}");
    }

    #[test]
    fn approver_lists_come_from_the_bridge_sections_and_misspellings_are_refused() {
        let file = ConfigFile::parse(
            Path::new("a.toml"),
            r#"
            [gate.policy]
            two_person = true
            [gate.policy.approvers.matrix]
            blocked = ["@alice:x"]
            [bridge.matrix]
            homeserver = "http://127.0.0.1:1"
            approvers = ["@alice:x", "@bob:x"]
            "#,
        )
        .unwrap();
        let config = Config::load(&file).unwrap();
        assert_eq!(config.chat_approvers["matrix"].len(), 2);
        assert!(config.effective_policy().rules.two_person);

        let typo = ConfigFile::parse(Path::new("a.toml"), "[gate.policy.approvers.matrx]\nblocked = []\n").unwrap();
        let error = Config::load(&typo).unwrap_err();
        assert!(airlock_bus::error_text(&error).contains("matrx"), "{error}");
        let unknown = ConfigFile::parse(Path::new("a.toml"), "[gate.policy]\ntwo_persons = true\n").unwrap();
        assert!(matches!(Config::load(&unknown), Err(ConfigError::UnknownKey { .. })));
    }
}
