//! `airlock-executor`: the executor as its own process.

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    airlock_bus::runner::serve_binary(
        &airlock_protocol::roles::EXECUTOR,
        airlock_executor::service::Config::load,
        airlock_executor::service::run,
    )
    .await?;
    Ok(())
}
