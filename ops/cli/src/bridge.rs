//! `airlock bridge test`: checks every chat configured in `[bridge.*]` as a request will use it
//! (tokens, rooms, encryption, approvers' membership) and sends each a test message, so an
//! operator finds their mistakes before a real request waits unseen.

use crate::home::Home;
use std::process::ExitCode;

#[derive(Clone, Debug, clap::Subcommand)]
pub enum BridgeCommand {
    /// Check every configured chat (tokens, rooms, approvers) and send each a test message;
    /// lists every check as ok or FAILED, and exits non-zero when any failed.
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
            let checks = airlock_chat_bridge::wiring::test_wiring(&config).await;
            for check in &checks {
                match &check.outcome {
                    Ok(found) => println!("ok      {}: {found}", check.name),
                    Err(why) => println!("FAILED  {}: {why}", check.name),
                }
            }
            let failures = checks.iter().filter(|c| !c.passed()).count();
            if failures > 0 {
                println!("{failures} of {} checks failed", checks.len());
            } else {
                println!("all {} checks passed", checks.len());
            }
            let failed = failures > 0;
            Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
        }
    }
}
