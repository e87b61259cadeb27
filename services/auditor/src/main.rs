//! `airlock-auditor`: the auditor as its own process.

use clap::Parser as _;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = airlock_bus::runner::ServiceArgs::parse();
    let _telemetry = airlock_telemetry::init("airlock-auditor", &Default::default());
    let config: airlock_auditor::Config = args.section("auditor")?;
    let client = airlock_bus::connect(&args.connect_config("auditor")).await?;
    let shutdown = airlock_bus::runner::shutdown_on_signal();
    airlock_auditor::run(client, config, shutdown).await?;
    Ok(())
}
