//! `airlock keys rotate auditor|gate|bridge`: a new signing key, the old one kept as a verifier
//! of what it signed (in the signer's key set, `keys/<signer>.keys`, with when it was retired),
//! and the running stack switched without losing a request:
//!
//! - **auditor**: the new key replaces `key_file`; the running auditor re-reads it on SIGHUP,
//!   signs the tree as it stands with it at once, and every commit after; this command waits
//!   until the store's checkpoint verifies with the new key, then retires the old one at the
//!   time of the last entry it signed. Receipts and checkpoints signed before stay valid.
//! - **gate**: the new verifier is added to `[executor] gate_keys` and the executor restarted
//!   (the supervisor starts it again; decisions wait in JetStream meanwhile), then the new key
//!   replaces the gate's `key_file` and the gate is restarted. The old verifier stays in
//!   `gate_keys`: decisions it signed are valid for `decision_ttl`.
//! - **bridge**: the new verifier is added next to the old one in `[gate.bridge_keys]` (the gate
//!   reloads them), then the bridge's `key_file` is replaced and the bridge restarted.
//!
//! The old private key is moved to `keys/retired/` (mode 0600) for the operator to destroy.

use crate::home::Home;
use airlock_auditlog::reader::LogReader;
use airlock_auditlog::store::Store;
use airlock_auditlog::trust::{KeySet, format_time};
use airlock_protocol::roles::{self, ServiceRole};
use airlock_protocol::{SigningKey, VerifierKey};
use anyhow::{Context as _, bail};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

/// Which signer gets a new key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Signer {
    /// The auditor's checkpoint key.
    Auditor,
    /// The override-gate's decision key.
    Gate,
    /// The chat bridge's answer key.
    Bridge,
}

#[derive(Clone, Debug, clap::Args)]
pub struct RotateArgs {
    pub signer: Signer,
    /// How long to wait for the running services to switch (a restart waits for the runs in
    /// progress to end).
    #[arg(long, default_value = "120s", value_parser = humantime::parse_duration)]
    pub wait: Duration,
    /// Make no new key: finish an earlier auditor rotation whose switch was not seen (an auditor
    /// elsewhere, given the new key by hand), retiring the previous key once the store's
    /// checkpoint is signed with the new one.
    #[arg(long)]
    pub finish: bool,
}

/// Exit status when the new key is in place but the running service was not seen switching.
const NOT_SWITCHED: u8 = 3;

pub async fn run(home: &Home, args: RotateArgs) -> anyhow::Result<ExitCode> {
    match args.signer {
        Signer::Auditor => rotate_auditor(home, &args).await,
        Signer::Gate if !args.finish => rotate_gate(home, &args).await,
        Signer::Bridge if !args.finish => rotate_bridge(home, &args).await,
        _ => bail!("--finish is for the auditor (gate and bridge rotations finish in one step)"),
    }
}

/// What a rotation changed on disk.
struct NewKey {
    key: SigningKey,
}

/// The file steps of every rotation: `key` (a new one when `None`) listed as current in the key
/// set (the old one kept), the old private key moved to `keys/retired/`, the new one written
/// over `key_file` (a new file renamed over it), and the home's `keys/<name>.pub`.
fn replace_key(
    home: &Home,
    file_name: &str,
    key_file: &Path,
    set_file: &Path,
    what: &str,
    key: Option<SigningKey>,
) -> anyhow::Result<NewKey> {
    let old = SigningKey::load(key_file).with_context(|| format!("the current key {}", key_file.display()))?;
    let key = match key {
        Some(key) => key,
        None => SigningKey::generate(old.name())?,
    };
    let mut set = load_set(set_file)?;
    set.keep(old.verifier());
    set.add_current(key.verifier(), airlock_protocol::now_ms());
    // Trusted before it signs anything: a verifier reading the set meanwhile accepts both.
    set.save(set_file, what)?;
    let retired_dir = home.root().join("keys").join("retired");
    std::fs::create_dir_all(&retired_dir).with_context(|| format!("creating {}", retired_dir.display()))?;
    let retired_file = retired_dir.join(format!("{file_name}.{:08x}.key", old.key_id()));
    airlock_protocol::keys::write_secret(&retired_file, format!("{}\n", old.to_private_string()).as_bytes())
        .with_context(|| format!("writing {}", retired_file.display()))?;
    let fresh = key_file.with_extension("key.new");
    airlock_protocol::keys::write_secret(&fresh, format!("{}\n", key.to_private_string()).as_bytes())
        .with_context(|| format!("writing {}", fresh.display()))?;
    std::fs::rename(&fresh, key_file).with_context(|| format!("replacing {}", key_file.display()))?;
    std::fs::write(home.verifier_key(file_name), format!("{}\n", key.verifier()))
        .with_context(|| format!("writing {}", home.verifier_key(file_name).display()))?;
    println!("new {file_name} key {} ({})", key.verifier(), key_file.display());
    println!(
        "  previous key {} kept as a verifier in {}; its private key moved to {}",
        old.verifier(),
        set_file.display(),
        retired_file.display()
    );
    Ok(NewKey { key })
}

fn load_set(path: &Path) -> anyhow::Result<KeySet> {
    Ok(KeySet::load(path)?.unwrap_or_default())
}

/// Retires every key of the set but the current one at `at_ms`, and saves it.
fn retire_previous(set_file: &Path, what: &str, at_ms: i64) -> anyhow::Result<Vec<VerifierKey>> {
    let mut set = load_set(set_file)?;
    let current = set.current().map(|e| e.key.clone());
    let retiring: Vec<VerifierKey> = set
        .entries
        .iter()
        .filter(|e| e.retired_ms.is_none() && Some(&e.key) != current.as_ref())
        .map(|e| e.key.clone())
        .collect();
    for key in &retiring {
        set.retire(key, at_ms);
    }
    set.save(set_file, what)?;
    Ok(retiring)
}

fn auditor_config(home: &Home) -> anyhow::Result<airlock_auditor::Config> {
    Ok(if home.config_file().exists() {
        airlock_auditor::Config::load(&home.config()?)?
    } else {
        airlock_auditor::Config {
            origin: crate::stack::AUDITOR_KEY.1.to_owned(),
            key_file: home.private_key("auditor"),
            ..Default::default()
        }
    })
}

async fn rotate_auditor(home: &Home, args: &RotateArgs) -> anyhow::Result<ExitCode> {
    let config = auditor_config(home)?;
    let set_file = config.key_set_path();
    let what = format!("Verifier keys of the audit log {}", config.origin);
    if !args.finish {
        replace_key(home, "auditor", &config.key_file, &set_file, &what, None)?;
        match service_pid(home, &roles::AUDITOR) {
            Some(pid) => {
                signal(pid, libc::SIGHUP)?;
                println!("  the running auditor (pid {pid}) was asked to re-read its key (SIGHUP)");
            }
            None => println!(
                "  no auditor of this home is running: the next one started signs with the new key \
                 (an auditor elsewhere needs the new key file, then SIGHUP or a restart)"
            ),
        }
    }
    let current = load_set(&set_file)?
        .current()
        .map(|e| e.key.clone())
        .context("the key set names no current key")?;
    let store = Store::open(&config.store)?;
    match signed_by(&store, &config.origin, &current, args.wait).await? {
        Some(last_entry_ms) => {
            // Everything the old key signed was logged before the first checkpoint the new
            // key signed ends: retired at that entry's time, by the auditor's own clock.
            let retired = retire_previous(&set_file, &what, last_entry_ms)?;
            for key in retired {
                println!(
                    "  previous key {key} retired at {}: its signatures count for what was logged up to then",
                    format_time(last_entry_ms)
                );
            }
            println!("  the store's checkpoint is signed with the new key; receipts signed before still verify");
            println!("  verifiers elsewhere need the key set: `airlock audit pubkey` prints it");
            Ok(ExitCode::SUCCESS)
        }
        None => {
            eprintln!(
                "the new key is in place and trusted, but the store's checkpoint was not signed with it within {}: \
                 the previous key stays trusted without end until `airlock keys rotate auditor --finish` sees the switch",
                humantime::format_duration(args.wait)
            );
            Ok(ExitCode::from(NOT_SWITCHED))
        }
    }
}

/// Waits until the store's checkpoint verifies with `key`; returns the time of the last entry
/// it covers (now, for an empty log).
async fn signed_by(store: &Store, origin: &str, key: &VerifierKey, wait: Duration) -> anyhow::Result<Option<i64>> {
    let deadline = tokio::time::Instant::now() + wait;
    let reader = LogReader::new(store.clone());
    loop {
        if let Some((signed, _)) = reader.checkpoint().await?
            && signed.verify(origin, [key]).is_ok()
        {
            let size = signed.checkpoint.size;
            if size == 0 {
                return Ok(Some(airlock_protocol::now_ms()));
            }
            let last = reader.entries(size - 1, size, size).await?;
            let time = last
                .first()
                .map(|(_, e)| e.time_ms)
                .unwrap_or_else(airlock_protocol::now_ms);
            return Ok(Some(time));
        }
        if tokio::time::Instant::now() >= deadline {
            return Ok(None);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn rotate_gate(home: &Home, args: &RotateArgs) -> anyhow::Result<ExitCode> {
    let file = home.config()?;
    let gate = airlock_override_gate::Config::load(&file)?;
    let set_file = home.root().join("keys").join("gate.keys");
    let what = "Verifier keys of the override-gate's decisions";
    // The executors must trust the new key before the gate signs with it. (Should this stop
    // before the switch, they trust a key nobody holds: harmless.)
    let next = SigningKey::generate(&gate.key_name)?;
    let added = edit_config(home, |doc| {
        let keys = doc
            .get_mut("executor")
            .and_then(|t| t.get_mut("gate_keys"))
            .and_then(|k| k.as_array_mut())
            .context("airlock.toml has no [executor] gate_keys to add the new key to")?;
        Ok(push_unique(keys, &next.verifier().to_string()))
    })?;
    if added {
        println!("added the new gate key {} to [executor] gate_keys", next.verifier());
    }
    let mut switched = restart(home, &roles::EXECUTOR, args.wait).await?;
    replace_key(home, "gate", &gate.key_file, &set_file, what, Some(next))?;
    println!("  the previous key stays in [executor] gate_keys for the decisions it signed");
    switched &= restart(home, &roles::GATE, args.wait).await?;
    let now = airlock_protocol::now_ms();
    retire_previous(&set_file, what, now)?;
    println!(
        "  previous key retired at {}; decisions it signed stay valid for decision_ttl ({}): remove it from \
         [executor] gate_keys after {}",
        format_time(now),
        humantime::format_duration(gate.decision_ttl),
        format_time(now + gate.decision_ttl.as_millis() as i64)
    );
    Ok(if switched {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(NOT_SWITCHED)
    })
}

async fn rotate_bridge(home: &Home, args: &RotateArgs) -> anyhow::Result<ExitCode> {
    let file = home.config()?;
    let key_file = if airlock_chat_bridge::Config::configured(&file) {
        airlock_chat_bridge::Config::load(&file, Some(home.root()))?.key_file
    } else {
        home.private_key(crate::stack::BRIDGE_KEY.0)
    };
    let set_file = home.root().join("keys").join("bridge.keys");
    let what = "Verifier keys of the chat bridge's relayed answers";
    let old = SigningKey::load(&key_file).with_context(|| format!("the current key {}", key_file.display()))?;
    let new = replace_key(home, "bridge", &key_file, &set_file, what, None)?;
    // The gate trusts the new key for every chat system that trusted the old one.
    let previous = old.verifier().to_string();
    let systems = edit_config(home, |doc| {
        let mut systems = Vec::new();
        if let Some(table) = doc
            .get_mut("gate")
            .and_then(|g| g.get_mut("bridge_keys"))
            .and_then(|b| b.as_table_like_mut())
        {
            for (system, keys) in table.iter_mut() {
                if let Some(keys) = keys.as_array_mut()
                    && keys.iter().any(|k| k.as_str() == Some(previous.as_str()))
                {
                    push_unique(keys, &new.key.verifier().to_string());
                    systems.push(system.to_string());
                }
            }
        }
        Ok(systems)
    })?;
    if systems.is_empty() {
        println!("  [gate.bridge_keys] does not list the previous key: add the new one for each chat system");
    } else {
        println!("  added to [gate.bridge_keys] for {}", systems.join(", "));
    }
    if let Some(pid) = service_pid(home, &roles::GATE) {
        signal(pid, libc::SIGHUP)?;
        println!("  the running override-gate (pid {pid}) re-reads its keys (SIGHUP)");
    }
    let switched = restart(home, &roles::CHAT_BRIDGE, args.wait).await?;
    let now = airlock_protocol::now_ms();
    retire_previous(&set_file, what, now)?;
    println!(
        "  previous key retired at {}; it stays in [gate.bridge_keys] for answers relayed before the switch: \
         remove it once `airlock override list` shows none of them waiting",
        format_time(now)
    );
    Ok(if switched {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(NOT_SWITCHED)
    })
}

/// Adds `key` to a TOML array of strings unless it is there; whether it was added.
fn push_unique(keys: &mut toml_edit::Array, key: &str) -> bool {
    if keys.iter().any(|k| k.as_str() == Some(key)) {
        return false;
    }
    keys.push(key);
    true
}

/// Edits `airlock.toml` in place, keeping the operator's comments and layout; written whole
/// (a new file renamed over it), so a service reloading it never reads half a file.
fn edit_config<T>(
    home: &Home,
    edit: impl FnOnce(&mut toml_edit::DocumentMut) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let path = home.config_file();
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let mut doc: toml_edit::DocumentMut = text.parse().with_context(|| format!("parsing {}", path.display()))?;
    let out = edit(&mut doc)?;
    let fresh = path.with_extension("toml.new");
    std::fs::write(&fresh, doc.to_string()).with_context(|| format!("writing {}", fresh.display()))?;
    std::fs::rename(&fresh, &path).with_context(|| format!("replacing {}", path.display()))?;
    Ok(out)
}

/// The pid of a service this home's `airlock up` runs, if it runs.
fn service_pid(home: &Home, service: &ServiceRole) -> Option<u32> {
    let info = crate::stack::StackInfo::read(&home.stack()).ok()??;
    if !crate::stack::alive(info.supervisor_pid) {
        return None;
    }
    let pid = *info.services.get(service.command)?;
    crate::stack::alive(pid).then_some(pid)
}

fn signal(pid: u32, signal: libc::c_int) -> anyhow::Result<()> {
    // SAFETY: kill(2) with a pid read from this home's stack file and a signal number.
    if unsafe { libc::kill(pid as libc::pid_t, signal) } != 0 {
        bail!("cannot signal pid {pid}: {}", std::io::Error::last_os_error());
    }
    Ok(())
}

/// Restarts a service `airlock up` runs: a graceful stop (SIGTERM: runs in progress finish,
/// unacknowledged messages wait in JetStream), then the supervisor starts it again. Waits until
/// the new instance answers. False when it did not within `wait`; true (with a note) when this
/// home runs no such service.
async fn restart(home: &Home, service: &ServiceRole, wait: Duration) -> anyhow::Result<bool> {
    let Some(old) = service_pid(home, service) else {
        println!(
            "  no {} of this home is running: one started from now on uses the new key (restart any running elsewhere)",
            service.command
        );
        return Ok(true);
    };
    signal(old, libc::SIGTERM)?;
    println!(
        "  restarting {} (pid {old}): it finishes what it is doing first",
        service.command
    );
    let deadline = tokio::time::Instant::now() + wait;
    let client = crate::stack::connect(home, roles::OPERATOR.user).await?;
    while tokio::time::Instant::now() < deadline {
        if let Some(new) = service_pid(home, service).filter(|p| *p != old) {
            let ping = client.request(format!("$SRV.PING.{}", service.name), "".into());
            if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_secs(2), ping).await {
                println!("  {} is back (pid {new})", service.command);
                return Ok(true);
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!(
        "{} did not come back within {}: `airlock status` shows it once it does",
        service.command,
        humantime::format_duration(wait)
    );
    Ok(false)
}
