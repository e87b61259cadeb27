//! `airlock-assessor`: the assessor as its own process.

use clap::Parser as _;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = airlock_bus::runner::ServiceArgs::parse();
    let _telemetry = airlock_telemetry::init("airlock-assessor", &Default::default());
    let config: airlock_assessor::EngineConfig = args.section("assessor")?;
    let client = airlock_bus::connect(&args.connect_config("assessor")).await?;
    let shutdown = airlock_bus::runner::shutdown_on_signal();
    airlock_assessor::service::run(client, config, shutdown).await?;
    Ok(())
}
