//! A stack's state on disk and how to reach it: keys, NATS users, the server config, the
//! running stack's address (`stack.json`), and connecting as one of its users.

use crate::home::Home;
use crate::nats_auth::{self, UserKey};
use airlock_protocol::SigningKey;
use anyhow::Context as _;
use std::path::Path;

/// Key names: the signed-note names of the stack's signers.
pub const GATE_KEY: (&str, &str) = ("gate", "airlock.local/gate");
pub const APPROVER_KEY: (&str, &str) = ("approver", "airlock.local/operator");
pub const AUDITOR_KEY: (&str, &str) = ("auditor", "airlock.local/audit");
/// The chat bridge's key: the gate trusts it per chat system (`[gate.bridge_keys]`).
pub const BRIDGE_KEY: (&str, &str) = ("bridge", "airlock.local/bridge");

pub use airlock_client::StackInfo;
pub use airlock_client::home::alive;

/// The NATS URL(s) of the stack: `--nats` (or `$AIRLOCK_NATS_URL`), else the running stack's
/// (`stack.json`), else the deployment's servers (`[nats] urls`), else an error telling the
/// user to start one.
pub fn nats_url(home: &Home) -> anyhow::Result<String> {
    if let Some(url) = home.nats_override() {
        return Ok(url.to_owned());
    }
    if let Ok(url) = std::env::var("AIRLOCK_NATS_URL") {
        return Ok(url);
    }
    let info = StackInfo::read(&home.stack())?;
    if let Some(info) = info.as_ref().filter(|i| alive(i.supervisor_pid)) {
        return Ok(info.nats_url.clone());
    }
    let configured = crate::config::nats_section(home)?.urls;
    if !configured.is_empty() {
        return Ok(configured.join(","));
    }
    match info {
        Some(_) => anyhow::bail!(
            "the stack in {} is not running (stale stack.json); start it with `airlock up`",
            home.root().display()
        ),
        None => anyhow::bail!(
            "no stack is running in {}; start one with `airlock up` (or name a server with --nats)",
            home.root().display()
        ),
    }
}

/// How to connect as `user`: the stack's URL(s), the user's credentials, TLS when `[nats]`
/// names the deployment's CA.
pub fn connect_config(home: &Home, user: &str) -> anyhow::Result<airlock_bus::ConnectConfig> {
    let url = nats_url(home)?;
    let tls = crate::config::nats_section(home)?.tls()?;
    Ok(airlock_bus::ConnectConfig::for_user(url, user, home.creds(user)).with_tls(tls))
}

/// Connects to the running stack as `user`, with that user's credentials.
pub async fn connect(home: &Home, user: &str) -> anyhow::Result<async_nats::Client> {
    Ok(airlock_client::connect_with(&connect_config(home, user)?).await?)
}

/// Creates (once) every key and credential of the stack, and returns the NATS users.
pub fn ensure_identities(home: &Home) -> anyhow::Result<Vec<UserKey>> {
    for (file, name) in [GATE_KEY, APPROVER_KEY, AUDITOR_KEY, BRIDGE_KEY] {
        let key = SigningKey::load_or_generate(&home.private_key(file), name)
            .with_context(|| format!("key {}", home.private_key(file).display()))?;
        std::fs::write(home.verifier_key(file), format!("{}\n", key.verifier()))?;
    }
    let clients: airlock_bus::ClientsConfig = home.config()?.section("clients")?;
    clients
        .validate()
        .map_err(|reason| anyhow::anyhow!("[clients] {reason}"))?;
    nats_auth::users(&clients)
        .iter()
        .map(|user| nats_auth::load_or_create_user(user, &home.creds(user)))
        .collect()
}

pub fn read_verifier(home: &Home, file: &str) -> anyhow::Result<String> {
    let path = home.verifier_key(file);
    Ok(std::fs::read_to_string(&path)
        .with_context(|| format!("reading {}", path.display()))?
        .trim()
        .to_owned())
}

/// Writes the nats-server config for a single embedded server.
pub fn write_server_config(home: &Home, users: &[UserKey], port: u16) -> anyhow::Result<std::path::PathBuf> {
    let dir = home.nats_dir();
    std::fs::create_dir_all(dir.join("jetstream"))?;
    let config = format!(
        "# Written by `airlock up`; rewritten at every start.\n\
         server_name: airlock_embedded\n\
         listen: 127.0.0.1:{port}\n\
         max_payload: {max_payload}\n\
         jetstream {{\n  store_dir: {store:?}\n  max_file_store: 10GB\n  max_memory_store: 256MB\n}}\n\
         {auth}",
        // Above the largest envelope (MAX_MESSAGE_BYTES) with room for headers, so that the
        // stream's own size limit, not the connection, refuses an oversized event.
        max_payload = 8 * 1024 * 1024,
        store = dir.join("jetstream").display().to_string(),
        auth = nats_auth::authorization_block(users),
    );
    let path = dir.join("server.conf");
    airlock_protocol::keys::write_secret(&path, config.as_bytes())?;
    Ok(path)
}

/// A free TCP port on loopback.
pub fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

pub fn ensure_dir(path: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(path).with_context(|| format!("creating {}", path.display()))
}
