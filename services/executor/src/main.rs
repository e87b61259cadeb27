//! `airlock-executor`: the executor as its own process.

use clap::Parser as _;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = airlock_bus::runner::ServiceArgs::parse();
    let _telemetry = airlock_telemetry::init("airlock-executor", &Default::default());
    let mut config: airlock_executor::service::Config = args.section("executor")?;
    // The quotas are shared with the gate: one `[quotas]` section for both.
    config.sandbox.quotas = args.section("quotas")?;
    let client = airlock_bus::connect(&args.connect_config("executor")).await?;
    let shutdown = airlock_bus::runner::shutdown_on_signal();
    airlock_executor::service::run(client, config, shutdown).await?;
    Ok(())
}
