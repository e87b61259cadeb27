//! `airlock schema write|check`: the JSON Schemas of the wire contract in `schemas/`.

use std::path::Path;
use std::process::ExitCode;

#[derive(Clone, Debug, clap::Subcommand)]
pub enum SchemaCommand {
    /// Write the schemas into DIR.
    Write {
        #[arg(long, default_value = "schemas")]
        dir: std::path::PathBuf,
    },
    /// Fail if the schemas in DIR differ from what this build generates.
    Check {
        #[arg(long, default_value = "schemas")]
        dir: std::path::PathBuf,
    },
}

pub fn run(command: SchemaCommand) -> anyhow::Result<ExitCode> {
    match command {
        SchemaCommand::Write { dir } => {
            std::fs::create_dir_all(&dir)?;
            for (name, text) in airlock_protocol::schema::rendered() {
                std::fs::write(dir.join(name), text)?;
            }
            let vectors = dir.join("vectors");
            std::fs::create_dir_all(&vectors)?;
            for (name, envelope) in airlock_protocol::schema::vectors() {
                std::fs::write(vectors.join(format!("{name}.msgpack")), envelope.encode()?)?;
                let meaning = serde_json::to_string_pretty(&envelope)?;
                std::fs::write(vectors.join(format!("{name}.json")), format!("{meaning}\n"))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        SchemaCommand::Check { dir } => {
            let stale = stale_schemas(&dir);
            for name in &stale {
                eprintln!(
                    "{} is not current: run `airlock schema write --dir {}`",
                    dir.join(name).display(),
                    dir.display()
                );
            }
            Ok(if stale.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
    }
}

/// The schema and vector files in `dir` that are missing or differ from this build's.
pub fn stale_schemas(dir: &Path) -> Vec<String> {
    let mut stale: Vec<String> = airlock_protocol::schema::rendered()
        .into_iter()
        .filter(|(name, text)| std::fs::read_to_string(dir.join(name)).ok().as_deref() != Some(text.as_str()))
        .map(|(name, _)| name.to_owned())
        .collect();
    for (name, envelope) in airlock_protocol::schema::vectors() {
        let file = format!("vectors/{name}.msgpack");
        if std::fs::read(dir.join(&file)).ok() != envelope.encode().ok() {
            stale.push(file);
        }
    }
    stale
}
