//! `airlock bridge test`: sends a test message to every chat configured in `[bridge.*]`, so an
//! operator can check tokens, rooms and URLs before a real request needs them.

use crate::home::Home;
use std::process::ExitCode;

#[derive(Clone, Debug, clap::Subcommand)]
pub enum BridgeCommand {
    /// Send a test message to every configured chat and say what each answered.
    Test,
}

pub async fn run(home: &Home, command: BridgeCommand) -> anyhow::Result<ExitCode> {
    match command {
        BridgeCommand::Test => {
            let file = home.config()?;
            if !airlock_chat_bridge::Config::configured(&file) {
                eprintln!(
                    "no chat is configured: add a [bridge.matrix], [bridge.slack], [bridge.discord] or [bridge.webhook] section to {} (docs/overrides.md)",
                    file.path().display()
                );
                return Ok(ExitCode::from(crate::run::status::USAGE));
            }
            let config = airlock_chat_bridge::Config::load(&file, Some(home.root()))?;
            let mut failed = false;
            for (chat, outcome) in airlock_chat_bridge::chats::test_wiring(&config).await {
                match outcome {
                    Ok(()) => println!("{chat}: test message sent"),
                    Err(e) => {
                        failed = true;
                        println!("{chat}: FAILED: {}", airlock_protocol::error_chain(&e));
                    }
                }
            }
            Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
        }
    }
}
