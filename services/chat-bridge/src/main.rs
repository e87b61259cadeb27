//! `airlock-chat-bridge`: the bridge as its own process.

use clap::Parser as _;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = airlock_bus::runner::ServiceArgs::parse();
    let file = args.config_file()?;
    let base = file.path().parent().map(std::path::Path::to_path_buf);
    let config = airlock_chat_bridge::Config::load(&file, base.as_deref())?;
    let _telemetry = airlock_telemetry::init("airlock-chat-bridge", &Default::default());
    let client = airlock_bus::connect(&args.connect_config(airlock_protocol::roles::CHAT_BRIDGE.role.user)).await?;
    let shutdown = airlock_bus::runner::shutdown_on_signal();
    airlock_chat_bridge::run(client, config, shutdown).await?;
    Ok(())
}
