//! `airlock-chat-bridge`: the bridge as its own process.

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // Relative file names in [bridge] are the stack home's: the config file's folder.
    let load = |file: &airlock_bus::runner::ConfigFile| {
        let base = file.path().parent().map(std::path::Path::to_path_buf);
        airlock_chat_bridge::Config::load(file, base.as_deref())
    };
    airlock_bus::runner::serve_binary(&airlock_protocol::roles::CHAT_BRIDGE, load, airlock_chat_bridge::run).await?;
    Ok(())
}
