//! `airlock-assessor`: the assessor as its own process.

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    airlock_bus::runner::serve_binary(
        &airlock_protocol::roles::ASSESSOR,
        airlock_assessor::service::Config::load,
        airlock_assessor::service::run,
    )
    .await?;
    Ok(())
}
