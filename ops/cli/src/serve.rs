//! `airlock serve <service>`: one service in this process, configured from `$AIRLOCK_HOME`.

use crate::home::Home;
use std::process::ExitCode;

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Service {
    Assessor,
    OverrideGate,
    Executor,
    Auditor,
}

impl Service {
    /// The service's NATS user and config section.
    pub fn user(self) -> &'static str {
        match self {
            Service::Assessor => "assessor",
            Service::OverrideGate => "gate",
            Service::Executor => "executor",
            Service::Auditor => "auditor",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Service::Assessor => "airlock-assessor",
            Service::OverrideGate => "airlock-override-gate",
            Service::Executor => "airlock-executor",
            Service::Auditor => "airlock-auditor",
        }
    }
}

pub async fn run(home: &Home, service: Service) -> anyhow::Result<ExitCode> {
    let _telemetry = airlock_telemetry::init(service.name(), &Default::default());
    let config_file = home.config_file();
    let client = crate::stack::connect(home, service.user()).await?;
    let shutdown = airlock_bus::runner::shutdown_on_signal();
    let section = service.user();
    match service {
        Service::OverrideGate => {
            let mut config: airlock_override_gate::Config = airlock_bus::runner::load_section(&config_file, section)?;
            config.quotas = airlock_bus::runner::load_section(&config_file, "quotas")?;
            airlock_override_gate::run(client, config, shutdown).await?;
        }
        Service::Assessor => {
            let config = airlock_bus::runner::load_section(&config_file, section)?;
            airlock_assessor::service::run(client, config, shutdown).await?;
        }
        Service::Executor => {
            let mut config: airlock_executor::service::Config =
                airlock_bus::runner::load_section(&config_file, section)?;
            config.sandbox.quotas = airlock_bus::runner::load_section(&config_file, "quotas")?;
            airlock_executor::service::run(client, config, shutdown).await?;
        }
        Service::Auditor => {
            let config = airlock_bus::runner::load_section(&config_file, section)?;
            airlock_auditor::run(client, config, shutdown).await?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
