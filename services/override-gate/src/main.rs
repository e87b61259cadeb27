//! `airlock-override-gate`: the gate as its own process.

use clap::Parser as _;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = airlock_bus::runner::ServiceArgs::parse();
    let _telemetry = airlock_telemetry::init("airlock-override-gate", &Default::default());
    let mut config: airlock_override_gate::Config = args.section("gate")?;
    // The quotas are shared with the executor: one `[quotas]` section for both.
    config.quotas = args.section("quotas")?;
    let client = airlock_bus::connect(&args.connect_config("gate")).await?;
    let shutdown = airlock_bus::runner::shutdown_on_signal();
    airlock_override_gate::run(client, config, shutdown).await?;
    Ok(())
}
