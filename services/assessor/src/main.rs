//! `airlock-assessor`: the assessor as its own process.

use clap::Parser as _;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = airlock_bus::runner::ServiceArgs::parse();
    let config = airlock_assessor::service::Config::load(&args.config_file()?)?;
    let _telemetry = airlock_telemetry::init("airlock-assessor", &Default::default());
    let client = airlock_bus::connect(&args.connect_config(airlock_protocol::roles::ASSESSOR.role.user)).await?;
    let shutdown = airlock_bus::runner::shutdown_on_signal();
    airlock_assessor::service::run(client, config, shutdown).await?;
    Ok(())
}
