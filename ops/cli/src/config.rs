//! `$AIRLOCK_HOME/airlock.toml`: the stack's configuration. `airlock up` writes it on first start
//! with the paths and keys of this home filled in; each service reads its own section, and
//! anything left out takes the service's defaults.

use crate::home::Home;
use crate::stack;
use airlock_bus::runner::ConfigFile;
use serde::{Deserialize, Serialize};

/// Top-level sections a stack's config may have besides each service's own.
const STACK_SECTIONS: [&str; 4] = ["nats", "quotas", "clients", "telemetry"];

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct NatsSection {
    /// Port of the embedded nats-server (0: any free port).
    pub port: u16,
    /// Replicas of streams and buckets (1 for a single server, 3 for a cluster).
    pub replicas: usize,
}

impl Default for NatsSection {
    fn default() -> Self {
        Self {
            port: 4222,
            replicas: 1,
        }
    }
}

pub fn nats_section(home: &Home) -> anyhow::Result<NatsSection> {
    Ok(home.config()?.section("nats")?)
}

/// `[telemetry]`: where each service serves its metrics (per-service keys checked against the
/// services' sections).
pub fn telemetry_section(file: &ConfigFile) -> anyhow::Result<airlock_telemetry::TelemetrySettings> {
    let settings: airlock_telemetry::TelemetrySettings = file.section("telemetry")?;
    let sections: Vec<&str> = airlock_protocol::roles::services()
        .map(|(_, s)| s.config_section)
        .collect();
    settings
        .validate(&sections)
        .map_err(|(key, reason)| file.invalid(&key, reason))?;
    Ok(settings)
}

/// Loads every section the way its service will, so that `airlock up` refuses a bad config
/// (an unknown section or key, a bad value) with the key's path before anything starts,
/// instead of a service crash-looping behind "Airlock is up."
pub fn check(home: &Home) -> anyhow::Result<()> {
    let file = home.config()?;
    let services: Vec<&str> = airlock_protocol::roles::services()
        .map(|(_, s)| s.config_section)
        .collect();
    for section in file.sections() {
        if !STACK_SECTIONS.contains(&section) && !services.contains(&section) {
            anyhow::bail!(
                "{}: unknown section [{section}] (known: {}, {})",
                file.path().display(),
                STACK_SECTIONS.join(", "),
                services.join(", ")
            );
        }
    }
    let _: NatsSection = file.section("nats")?;
    telemetry_section(&file)?;
    airlock_assessor::service::Config::load(&file)?;
    airlock_override_gate::Config::load(&file)?;
    airlock_executor::service::Config::load(&file)?;
    airlock_auditor::Config::load(&file)?;
    Ok(())
}

/// Writes the initial config unless one exists (an operator's edits are never overwritten).
pub fn ensure_config(home: &Home) -> anyhow::Result<()> {
    let path = home.config_file();
    if path.exists() {
        return Ok(());
    }
    let gate_key = home.private_key(stack::GATE_KEY.0);
    let auditor_key = home.private_key(stack::AUDITOR_KEY.0);
    let text = format!(
        r#"# Airlock stack configuration, written by `airlock up` on first start.
# Each service reads its own section; anything left out takes the service's defaults
# (see the README and docs/ for every setting).

[nats]
port = 4222
replicas = 1

# The limits of each trust level, read by the gate (what it grants) and the executor (its warm
# pool's shapes). Defaults: trusted 2 CPUs, 1 GiB, 120 s; unknown 1 CPU, 512 MiB, 30 s;
# untrusted 0.5 CPU, 256 MiB, 10 s. Override a level as a whole, e.g.
# [quotas.untrusted]
# memory_bytes = 268435456
# cpu_millis = 500
# pids = 64
# wall_ms = 10000
# output_bytes = 262144
# disk_bytes = 16777216
# open_files = 128

# Each service serves Prometheus metrics (GET /metrics) on a free loopback port by default,
# shown by `airlock status` and written to metrics/<service>.json for Prometheus's
# file_sd_configs. Fixed addresses, or "off" (see docs/observability.md):
# [telemetry]
# metrics_listen = "127.0.0.1:0"
# [telemetry.metrics_listen_for]
# executor = "127.0.0.1:9464"

[assessor]

[gate]
key_file = {gate_key:?}
key_name = {gate_name:?}
# Verifier keys whose signed override answers the gate accepts.
approver_keys = [{approver:?}]

[executor]
# Verifier keys of the gate: the executor runs nothing without a valid signature by one of them.
gate_keys = [{gate_pub:?}]
# Labels this stack's containers: at start the executor removes what a crashed run of the same
# instance left, so stacks sharing a Docker engine must not share an instance name.
instance = {instance:?}

[executor.packages]
# Installed package sets, kept per set and mounted read-only into the programs that named them.
cache_dir = {packages:?}

[auditor]
store = {store:?}
key_file = {auditor_key:?}
origin = {auditor_name:?}
"#,
        gate_key = gate_key.display().to_string(),
        gate_name = stack::GATE_KEY.1,
        approver = stack::read_verifier(home, stack::APPROVER_KEY.0)?,
        gate_pub = stack::read_verifier(home, stack::GATE_KEY.0)?,
        store = format!("file://{}", home.audit_store().display()),
        auditor_key = auditor_key.display().to_string(),
        auditor_name = stack::AUDITOR_KEY.1,
        packages = home.packages_dir().display().to_string(),
        instance = format!("home-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]),
    );
    std::fs::write(path, text)?;
    Ok(())
}
