//! `airlock-auditor`: the auditor as its own process.

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    airlock_bus::runner::serve_binary(
        &airlock_protocol::roles::AUDITOR,
        airlock_auditor::Config::load,
        airlock_auditor::run,
    )
    .await?;
    Ok(())
}
