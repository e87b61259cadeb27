//! `airlock-executor`: the executor as its own process.

use clap::Parser as _;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = airlock_bus::runner::ServiceArgs::parse();
    let config = airlock_executor::service::Config::load(&args.config_file()?)?;
    let _telemetry = airlock_telemetry::init("airlock-executor", &Default::default());
    let client = airlock_bus::connect(&args.connect_config(airlock_protocol::roles::EXECUTOR.role.user)).await?;
    let shutdown = airlock_bus::runner::shutdown_on_signal();
    airlock_executor::service::run(client, config, shutdown).await?;
    Ok(())
}
