//! The gate's configuration: the `[gate]` section of the stack's TOML file.

use airlock_bus::runner::legacy_duration;
pub use airlock_protocol::Quotas;
use airlock_protocol::TrustLevel;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// What the gate does with code rated at one level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Run with the quota the request asked for.
    Approve,
    /// Run with at most this quota, whatever the request asked for.
    ApproveWith(TrustLevel),
    /// Ask a human; no answer by the deadline is a denial.
    Ask,
    Deny,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Policy {
    pub low: Action,
    pub medium: Action,
    pub high: Action,
    pub blocked: Action,
    /// The quota a human's approval of an asked request grants (at most what was requested).
    pub override_quota: TrustLevel,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            low: Action::Approve,
            medium: Action::Approve,
            high: Action::ApproveWith(TrustLevel::Untrusted),
            blocked: Action::Ask,
            override_quota: TrustLevel::Untrusted,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    /// The gate's Ed25519 key (signed-note private key format); created when missing.
    pub key_file: PathBuf,
    /// Key name, used when the key is created.
    pub key_name: String,
    /// Verifier keys (`name+keyid+base64`) whose signed override answers the gate accepts.
    pub approver_keys: Vec<String>,
    /// How long a decision stays valid for the executor.
    #[serde(with = "humantime_serde")]
    pub decision_ttl: Duration,
    /// How long a human has to answer, when the request names no earlier deadline.
    #[serde(with = "humantime_serde")]
    pub override_timeout: Duration,
    pub policy: Policy,
    /// The limits each trust level grants: the top-level `[quotas]` section, which the executor
    /// reads too (not a key of `[gate]`).
    #[serde(skip)]
    pub quotas: Quotas,
    // Keys of the previous release, read with a warning (see `legacy_duration`).
    #[doc(hidden)]
    #[serde(default, skip_serializing)]
    pub decision_ttl_secs: Option<u64>,
    #[doc(hidden)]
    #[serde(default, skip_serializing)]
    pub override_timeout_secs: Option<u64>,
}

impl Config {
    /// Reads `[gate]` and `[quotas]` of the stack's config file; the binary and `airlock serve`
    /// both load it this way.
    pub fn load(file: &airlock_bus::runner::ConfigFile) -> Result<Self, airlock_bus::runner::ConfigError> {
        let section = airlock_protocol::roles::GATE
            .service
            .map_or("gate", |s| s.config_section);
        let mut config: Config = file.section(section)?;
        config.quotas = file.section("quotas")?;
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
        Ok(config)
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            key_file: PathBuf::from("keys/gate.key"),
            key_name: "airlock.local/gate".to_owned(),
            approver_keys: vec![],
            decision_ttl: Duration::from_secs(600),
            override_timeout: Duration::from_secs(900),
            policy: Policy::default(),
            quotas: Quotas::default(),
            decision_ttl_secs: None,
            override_timeout_secs: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
