//! `$AIRLOCK_HOME/airlock.toml`: the stack's configuration. `airlock up` writes it on first start
//! with the paths and keys of this home filled in; each service reads its own section, and
//! anything left out takes the service's defaults.

use crate::home::Home;
use crate::stack;
use airlock_bus::runner::ConfigFile;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Top-level sections a stack's config may have besides each service's own (`people` is read by
/// the gate, which counts people under the two-person rule, and checked with its config below).
const STACK_SECTIONS: [&str; 5] = ["nats", "quotas", "clients", "telemetry", "people"];

/// The chat bridge's key: its file name in `keys/` and its signed-note name.

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct NatsSection {
    /// Port of the embedded nats-server (0: any free port).
    pub port: u16,
    /// Replicas of streams and buckets (1 for a single server, 3 for a cluster).
    pub replicas: usize,
    /// The servers of a deployment whose NATS runs elsewhere (`tls://nats-1:4222`, ...): used
    /// when `--nats` names none and no stack of this home is running.
    pub urls: Vec<String>,
    /// The deployment's CA (PEM). When set, every connection is TLS, and only a server whose
    /// certificate this CA issued is accepted.
    pub ca_file: Option<PathBuf>,
    /// A client certificate and key (PEM), for servers that verify clients.
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
}

impl Default for NatsSection {
    fn default() -> Self {
        Self {
            port: 4222,
            replicas: 1,
            urls: Vec::new(),
            ca_file: None,
            cert_file: None,
            key_file: None,
        }
    }
}

impl NatsSection {
    /// How connections check the server, from `ca_file` (and the client certificate).
    pub fn tls(&self) -> anyhow::Result<Option<airlock_bus::TlsSettings>> {
        let client_cert = match (&self.cert_file, &self.key_file) {
            (Some(cert), Some(key)) => Some((cert.clone(), key.clone())),
            (None, None) => None,
            _ => anyhow::bail!("[nats] cert_file and key_file go together"),
        };
        match &self.ca_file {
            Some(ca) => Ok(Some(airlock_bus::TlsSettings {
                ca_file: ca.clone(),
                client_cert,
            })),
            None if client_cert.is_some() => anyhow::bail!("[nats] cert_file needs ca_file"),
            None => Ok(None),
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
    let sections: Vec<&str> = airlock_protocol::roles::services().map(|s| s.config_section).collect();
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
    let services: Vec<&str> = airlock_protocol::roles::services().map(|s| s.config_section).collect();
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
    if airlock_chat_bridge::Config::configured(&file) {
        airlock_chat_bridge::Config::load(&file, Some(home.root()))?;
    }
    Ok(())
}

/// Reads every key file the services will need (the auditor's signing keys, extra ones of a
/// rotation included), so that a missing or unreadable one stops `airlock up` with its path
/// before anything starts, instead of a service crash-looping behind "Airlock is up".
pub fn check_key_files(home: &Home) -> anyhow::Result<()> {
    let file = home.config()?;
    let auditor = airlock_auditor::Config::load(&file)?;
    let keys = auditor.signing_keys()?;
    auditor.trusted_keys(&keys)?;
    Ok(())
}

/// Where a config's paths point and how its services reach NATS: this machine's embedded
/// server by default; for a cluster (`airlock init --cluster`), the nodes over TLS, with the
/// paths the deployment's files will have where its services run.
pub struct Layout {
    /// The home as the services will see it (`/airlock` in a container).
    pub root: PathBuf,
    /// The body of `[nats]`.
    pub nats: String,
    /// The audit store's URL.
    pub store: String,
}

impl Layout {
    pub fn local(home: &Home) -> Layout {
        Layout {
            root: home.root().to_owned(),
            nats: "port = 4222\nreplicas = 1\n".to_owned(),
            store: format!("file://{}", home.audit_store().display()),
        }
    }

    fn path(&self, home: &Home, local: &Path) -> String {
        let relative = local.strip_prefix(home.root()).unwrap_or(local);
        self.root.join(relative).display().to_string()
    }
}

/// Writes the initial config unless one exists (an operator's edits are never overwritten).
pub fn ensure_config(home: &Home) -> anyhow::Result<()> {
    ensure_config_with(home, &Layout::local(home))
}

/// Like [`ensure_config`], with the paths and NATS of `layout`.
pub fn ensure_config_with(home: &Home, layout: &Layout) -> anyhow::Result<()> {
    let path = home.config_file();
    if path.exists() {
        return Ok(());
    }
    let gate_key = layout.path(home, &home.private_key(stack::GATE_KEY.0));
    let auditor_key = layout.path(home, &home.private_key(stack::AUDITOR_KEY.0));
    let text = format!(
        r#"# Airlock stack configuration, written by `airlock up` (or `airlock init`) on first start.
# Each service reads its own section; anything left out takes the service's defaults
# (see the README and docs/ for every setting).

[nats]
{nats}
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

# The chat bridge's key, per chat system: answers it relays count only when the user who gave
# them may answer that level from that chat ([bridge.<system>] approvers, refined per level in
# [gate.policy.approvers.<system>]). See docs/overrides.md.
[gate.bridge_keys]
matrix = [{bridge:?}]
slack = [{bridge:?}]
discord = [{bridge:?}]
webhook = [{bridge:?}]

# The approval policy (hot-reloaded; its version is recorded in every decision). Defaults:
# LOW and MEDIUM approved, HIGH approved with the untrusted quota, BLOCKED asks a human.
# [gate.policy]
# two_person = true              # BLOCKED needs two different approvers; one deny ends it
# approve_again_max = "8h"       # approvers may choose to approve the same code again
# [gate.policy.external]
# high = "ask"
# [gate.policy.escalation.matrix]
# mention = ["@oncall:example.org"]

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

# The chat bridge runs when a [bridge.<system>] section exists (docs/overrides.md), e.g.
# [bridge]
# key_file = {bridge_key:?}
# [bridge.matrix]
# homeserver = "http://127.0.0.1:8008"
# user_id = "@airlock:localhost"
# access_token_file = "/path/to/token"
# room_id = "!room:localhost"
# approvers = ["@alice:localhost"]
"#,
        nats = layout.nats,
        gate_key = gate_key,
        gate_name = stack::GATE_KEY.1,
        approver = stack::read_verifier(home, stack::APPROVER_KEY.0)?,
        bridge = stack::read_verifier(home, stack::BRIDGE_KEY.0)?,
        bridge_key = layout.path(home, &home.private_key(stack::BRIDGE_KEY.0)),
        gate_pub = stack::read_verifier(home, stack::GATE_KEY.0)?,
        store = layout.store,
        auditor_key = auditor_key,
        auditor_name = stack::AUDITOR_KEY.1,
        packages = layout.path(home, &home.packages_dir()),
        instance = format!("home-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]),
    );
    std::fs::write(path, text)?;
    Ok(())
}
