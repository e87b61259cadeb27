//! The sandbox image: built from the recipe in the repo (`services/executor/image/`) when it is
//! missing or was built from another recipe.

use crate::home::Home;
use std::process::ExitCode;

#[derive(Clone, Debug, clap::Subcommand)]
pub enum ImageCommand {
    /// Build the sandbox image(s) unless they are current.
    Build,
}

/// The executor's sandbox settings: from `[executor]` of the home's config when there is one.
fn sandbox_config(home: &Home) -> anyhow::Result<airlock_executor::SandboxConfig> {
    Ok(airlock_executor::service::Config::load(&home.config()?)?.sandbox)
}

pub async fn ensure(home: &Home) -> anyhow::Result<()> {
    let status = airlock_executor::ensure_image(&sandbox_config(home)?).await?;
    for image in &status.built {
        println!("built the sandbox image {image}");
    }
    Ok(())
}

pub async fn run(home: &Home, command: ImageCommand) -> anyhow::Result<ExitCode> {
    match command {
        ImageCommand::Build => {
            let status = airlock_executor::ensure_image(&sandbox_config(home)?).await?;
            for image in &status.up_to_date {
                println!("{image}: up to date");
            }
            for image in &status.built {
                println!("{image}: built");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
