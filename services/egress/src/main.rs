//! `airlock-egress`: the egress proxy as its own process (no Docker socket, no NATS). The
//! executor opens one session per package install on its control address
//! (`[executor.egress] proxy = "http://127.0.0.1:3129"`) and publishes the records the session
//! streams back.

use anyhow::Context as _;
use clap::Parser as _;
use std::net::SocketAddr;

#[derive(clap::Parser)]
#[command(
    name = "airlock-egress",
    version,
    about = "Airlock's egress proxy for package installs"
)]
struct Args {
    /// Where install containers reach the proxy. An install network's only way out is its
    /// gateway, so on the Docker host this is every address (requests need a live session).
    #[arg(long, default_value = "0.0.0.0:3128")]
    listen: SocketAddr,
    /// Where the executor opens sessions: keep it on loopback.
    #[arg(long, default_value = "127.0.0.1:3129")]
    control: SocketAddr,
    /// A TOML file whose `--section` table is the proxy's configuration (allow-list, pinned
    /// mirrors, byte caps); without it, the defaults (PyPI and docs.python.org).
    #[arg(long, env = "AIRLOCK_CONFIG")]
    config: Option<std::path::PathBuf>,
    /// The table of `--config` to read, dotted.
    #[arg(long, default_value = "executor.egress")]
    section: String,
}

fn load(args: &Args) -> anyhow::Result<airlock_egress::EgressConfig> {
    let Some(path) = &args.config else {
        return Ok(Default::default());
    };
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut table: toml::Value = toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    for key in args.section.split('.') {
        table = match table.get(key) {
            Some(inner) => inner.clone(),
            None => return Ok(Default::default()),
        };
    }
    // Unknown keys are refused: a misspelt rule must not silently keep its default.
    let mut unknown = Vec::new();
    let mut config: airlock_egress::EgressConfig =
        serde_ignored::deserialize(table, |key| unknown.push(key.to_string()))
            .with_context(|| format!("[{}] of {}", args.section, path.display()))?;
    if let Some(key) = unknown.first() {
        anyhow::bail!("[{}] of {}: unknown key {key}", args.section, path.display());
    }
    config.read_legacy_keys();
    Ok(config)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let config = load(&args)?;
    let server = airlock_egress::EgressServer::start(args.listen, args.control, config).await?;
    tracing::info!(data = %server.data_addr(), control = %server.control_url(), "airlock-egress ready");
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    server.stop().await;
    Ok(())
}
