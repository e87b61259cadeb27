//! `airlock assess` without the rest of the CLI: compiles the CLI's own module, so the command
//! can be tried and tested from this crate (`cargo run -p airlock-assessor --example assess --
//! FILE...`).

#[path = "../../../ops/cli/src/assess.rs"]
mod assess;

use clap::Parser;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "airlock-assess", about = "Rate files with the assessor's engine")]
struct Cli {
    #[command(flatten)]
    args: assess::AssessArgs,
}

fn main() -> ExitCode {
    match assess::run(Cli::parse().args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("airlock assess: {e:#}");
            ExitCode::from(5)
        }
    }
}
