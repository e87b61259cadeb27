//! `airlock-auditor`: the auditor as its own process.

use clap::Parser as _;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = airlock_bus::runner::ServiceArgs::parse();
    let config = airlock_auditor::Config::load(&args.config_file()?)?;
    let _telemetry = airlock_telemetry::init("airlock-auditor", &Default::default());
    let client = airlock_bus::connect(&args.connect_config(airlock_protocol::roles::AUDITOR.role.user)).await?;
    let shutdown = airlock_bus::runner::shutdown_on_signal();
    airlock_auditor::run(client, config, shutdown).await?;
    Ok(())
}
