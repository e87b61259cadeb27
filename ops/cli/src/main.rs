//! `airlock`: run the stack, submit code, answer overrides, read and verify the audit log.

mod assess;
mod audit;
#[cfg(feature = "bench")]
mod bench;
#[cfg(feature = "bench")]
mod bench_slowest;
#[cfg(feature = "bench")]
mod bench_stages;
mod bridge;
mod cancel;
mod cluster;
mod config;
#[cfg(test)]
mod docs_check;
mod home;
mod image;
mod init;
mod keys;
mod mcp;
mod mcp_tools;
mod nats_auth;
mod override_stats;
mod overrides;
mod rotate;
mod run;
mod schema;
mod serve;
mod stack;
mod status;
mod up;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "airlock",
    version,
    about = "The safety layer between an AI assistant and the machine it runs on"
)]
struct Cli {
    /// The stack's state directory (default: $AIRLOCK_HOME, else <data dir>/airlock).
    #[arg(long, global = true)]
    home: Option<std::path::PathBuf>,
    /// The NATS server(s) to use, comma-separated (default: the running stack's, else
    /// `[nats] urls` of airlock.toml); `airlock up` then starts none of its own.
    #[arg(long, global = true)]
    nats: Option<String>,
    /// Lay a setting over airlock.toml, e.g. `--set executor.instance=executor-2` (repeatable).
    #[arg(long = "set", global = true, value_name = "SECTION.KEY=VALUE")]
    set: Vec<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create the stack's keys, credentials and airlock.toml in $AIRLOCK_HOME, without starting
    /// it; with --cluster, a deployment across machines (CA, NATS node certificates and configs).
    Init(cluster::InitArgs),
    /// Create or update the streams and buckets on the stack's NATS, with `[nats] replicas`.
    Setup(cluster::SetupArgs),
    /// Start NATS, the services (the chat bridge when [bridge.*] is configured) and the local audit store, in the foreground.
    Up(up::UpArgs),
    /// Submit a program as Mai and wait for its result.
    Run(run::RunArgs),
    /// Stop one of Mai's requests (waiting, or running) and wait for its end: `cancelled`.
    Cancel(cancel::CancelArgs),
    /// Serve the Model Context Protocol (stdio, or streamable HTTP on a loopback port): MCP
    /// clients run code through Airlock as client user `mcp`.
    Mcp(mcp::McpArgs),
    /// Rate files with the assessor's engine, without the pipeline.
    Assess(assess::AssessArgs),
    /// Read, verify and prove the audit log.
    #[command(subcommand)]
    Audit(audit::AuditCommand),
    /// Requests waiting for a human, and answers to them.
    #[command(subcommand)]
    Override(overrides::OverrideCommand),
    /// The stack's keys: operators' own keys (`airlock keys add-operator NAME`), and rotating
    /// the auditor's, the gate's or the chat bridge's (`airlock keys rotate auditor`).
    #[command(subcommand)]
    Keys(keys::KeysCommand),
    /// The chat bridge's wiring (`airlock bridge test`).
    #[command(subcommand)]
    Bridge(bridge::BridgeCommand),
    /// Run one service in this process.
    Serve {
        /// assessor, override-gate, executor, auditor or chat-bridge.
        #[arg(value_parser = serve::parse_command)]
        service: String,
    },
    /// Whether each service answers, with its counters.
    Status(status::StatusArgs),
    /// The sandbox image.
    #[command(subcommand)]
    Image(image::ImageCommand),
    /// Benchmarks that need the running stack (built with `--features bench`).
    #[cfg(feature = "bench")]
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// The JSON Schemas of the wire contract.
    #[command(subcommand)]
    Schema(schema::SchemaCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if !matches!(cli.command, Command::Serve { .. } | Command::Up(_)) {
        // Output piped into `head` and the like ends quietly when the reader goes away. Only
        // for commands that print: a service or the supervisor with SIGPIPE's default action
        // would die whenever a peer (a telemetry collector, say) closed a connection. Printing
        // happens on this thread; the runtime's threads, which talk to NATS and to a collector,
        // block the signal (a closed connection is an error there, not a death).
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    // A submission's whole life is one connection and a few messages: one thread does it with
    // no worker threads to start, wake and join, which is most of a new process's own cost.
    // (Not when spans are exported: the exporter runs on the runtime, and the flush at exit
    // would wait for it on the runtime's only thread.)
    let mut builder = match short_lived(&cli.command) && !airlock_telemetry::exports_configured() {
        true => tokio::runtime::Builder::new_current_thread(),
        false => tokio::runtime::Builder::new_multi_thread(),
    };
    let runtime = match builder
        .enable_all()
        .on_thread_start(airlock_telemetry::sigpipe::block_in_this_thread)
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("airlock: cannot start the async runtime: {e}");
            return ExitCode::from(run::status::AIRLOCK_FAILED);
        }
    };
    match runtime.block_on(dispatch(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("airlock: {e:#}");
            ExitCode::from(run::status::AIRLOCK_FAILED)
        }
    }
}

/// Commands that submit one request and exit (`airlock run` as Mai's tools call it).
fn short_lived(command: &Command) -> bool {
    match command {
        Command::Run(_) => true,
        #[cfg(feature = "bench")]
        Command::Bench(bench::BenchCommand::Connect) => true,
        _ => false,
    }
}

async fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    let home = home::Home::locate(cli.home)?
        .with_nats(cli.nats)
        .with_overrides(&cli.set)?;
    match cli.command {
        Command::Init(args) => init::run(&home, &args),
        Command::Setup(args) => cluster::setup(&home, &args).await,
        Command::Up(args) => up::run(&home, args).await,
        Command::Run(args) => run::run(&home, args).await,
        Command::Cancel(args) => cancel::run(&home, args).await,
        Command::Override(command) => overrides::run(&home, command).await,
        Command::Bridge(command) => bridge::run(&home, command).await,
        Command::Keys(command) => keys::run(&home, command).await,
        Command::Assess(args) => assess::run(args),
        Command::Audit(command) => audit::run(command, &home).await,
        Command::Serve { service } => serve::run(&home, &service).await,
        Command::Schema(command) => schema::run(command),
        Command::Status(args) => status::run(&home, args).await,
        #[cfg(feature = "bench")]
        Command::Bench(command) => bench::run(&home, command).await,
        Command::Image(command) => image::run(&home, command).await,
        Command::Mcp(args) => mcp::run(&home, args).await,
    }
}
