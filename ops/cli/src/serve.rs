//! `airlock serve <service>`: one service in this process, configured from `$AIRLOCK_HOME`. The
//! services and their names come from the roles table; the config is loaded (and refused if
//! bad) before anything connects.

use crate::home::Home;
use airlock_protocol::roles;
use std::process::ExitCode;

/// The `airlock serve` words, from the roles table.
pub fn commands() -> Vec<&'static str> {
    roles::services().map(|s| s.command).collect()
}

/// The services `airlock up` starts with this config: every `Start::Always` one, and the
/// `Start::WhenConfigured` ones whose section exists (the chat bridge with a `[bridge.*]`).
pub fn started(file: &airlock_bus::runner::ConfigFile) -> Vec<&'static str> {
    roles::services()
        .filter(|s| match s.start {
            roles::Start::Always => true,
            roles::Start::WhenConfigured => file.has_section(s.config_section),
        })
        .map(|s| s.command)
        .collect()
}

/// Clap's check of the `airlock serve` word.
pub fn parse_command(word: &str) -> Result<String, String> {
    if roles::by_command(word).is_some() {
        Ok(word.to_owned())
    } else {
        Err(format!("one of: {}", commands().join(", ")))
    }
}

pub async fn run(home: &Home, command: &str) -> anyhow::Result<ExitCode> {
    let Some(service) = roles::by_command(command) else {
        anyhow::bail!("no service {command:?} (one of: {})", commands().join(", "));
    };
    let file = home.config()?;
    // Rust ignores SIGPIPE in its own processes; a service keeps it ignored, so that a peer
    // closing a socket (a telemetry collector, a chat server) is an error, never a death.
    let telemetry = airlock_telemetry::TelemetryConfig::for_service(
        &crate::config::telemetry_section(&file)?,
        service.config_section,
        home.root().join("metrics"),
    );
    let _telemetry = airlock_telemetry::init(service.name, &telemetry);
    let shutdown = airlock_bus::runner::shutdown_on_signal();
    macro_rules! serve {
        ($config:expr, $run:path) => {{
            let config = $config;
            let client = crate::stack::connect(home, service.role.user).await?;
            $run(client, config, shutdown).await?;
        }};
    }
    match service.role.user {
        u if u == roles::ASSESSOR.role.user => serve!(
            airlock_assessor::service::Config::load(&file)?,
            airlock_assessor::service::run
        ),
        u if u == roles::GATE.role.user => {
            serve!(airlock_override_gate::Config::load(&file)?, airlock_override_gate::run)
        }
        u if u == roles::EXECUTOR.role.user => serve!(
            airlock_executor::service::Config::load(&file)?,
            airlock_executor::service::run
        ),
        u if u == roles::AUDITOR.role.user => serve!(airlock_auditor::Config::load(&file)?, airlock_auditor::run),
        u if u == roles::CHAT_BRIDGE.role.user => serve!(
            airlock_chat_bridge::Config::load(&file, Some(home.root()))?,
            airlock_chat_bridge::run
        ),
        other => anyhow::bail!("the roles table names service user {other:?}, which this build cannot run"),
    }
    Ok(ExitCode::SUCCESS)
}
