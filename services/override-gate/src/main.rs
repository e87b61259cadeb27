//! `airlock-override-gate`: the gate as its own process.

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    airlock_bus::runner::serve_binary(
        &airlock_protocol::roles::GATE,
        airlock_override_gate::Config::load,
        airlock_override_gate::run,
    )
    .await?;
    Ok(())
}
