//! `airlock run FILE`: submit code as Mai would, wait for its one terminal event, print the result.

use crate::home::Home;
use airlock_client::{RunResult, Submission, request::RECEIPT_WAIT};
use airlock_protocol::text::visible_line;
use airlock_protocol::{ExecutionRequest, Language, Origin, Outcome, RequestId, Terminal, TrustLevel};
use anyhow::Context as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Exit statuses of `airlock run`, distinct per way a request can end.
pub mod status {
    /// The code ran and exited 0.
    pub const OK: u8 = 0;
    /// The code ran and exited non-zero.
    pub const CODE_FAILED: u8 = 1;
    /// Bad command line or bad input file (as clap uses).
    pub const USAGE: u8 = 2;
    /// The code was stopped for exceeding a limit.
    pub const VIOLATION: u8 = 3;
    /// The request was denied, or expired before it could run.
    pub const DENIED: u8 = 4;
    /// Airlock itself failed (unreachable, internal error, could not run the code).
    pub const AIRLOCK_FAILED: u8 = 5;
    /// The request was cancelled by its client (`airlock cancel`) before it ended by itself.
    pub const CANCELLED: u8 = 6;
    /// `airlock cancel`: the request had already ended by itself; nothing was cancelled.
    pub const CANCEL_TOO_LATE: u8 = 7;
    /// `airlock run` was interrupted twice (Ctrl-C): it stopped waiting, the cancellation sent.
    pub const INTERRUPTED: u8 = 130;
}

#[derive(Clone, Debug, clap::Args)]
pub struct RunArgs {
    /// The program to run.
    pub file: PathBuf,
    /// Who wrote the code.
    #[arg(long, default_value = "generated")]
    pub origin: Origin,
    /// The quota class asked for.
    #[arg(long, default_value = "unknown")]
    pub trust: TrustLevel,
    /// The network asked for: `none`, or `read-only` (GET/HEAD to allow-listed hosts through
    /// Airlock's proxy; granted by the gate's policy or a human).
    #[arg(long, default_value = "none")]
    pub network: airlock_protocol::NetworkMode,
    /// The language (default: from the file name or its #! line).
    #[arg(long)]
    pub lang: Option<Language>,
    /// Print exactly one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Python packages to install first (NAME or NAME==VERSION, comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub packages: Vec<String>,
    /// An argument for the program (repeatable).
    #[arg(long = "arg")]
    pub args: Vec<String>,
    /// An environment variable for the program, NAME=VALUE (repeatable).
    #[arg(long = "env")]
    pub env: Vec<String>,
    /// A file whose bytes become the program's standard input.
    #[arg(long)]
    pub stdin: Option<PathBuf>,
    /// A file for the program, NAME=PATH: PATH's bytes placed read-only at NAME in its working
    /// directory (repeatable; NAME alone takes PATH's file name).
    #[arg(long = "file", value_name = "NAME=PATH")]
    pub files: Vec<String>,
    /// Write the files the program leaves under out/ into this directory.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The request this one revises.
    #[arg(long)]
    pub revises: Option<RequestId>,
    /// Seconds from now after which the request must not start.
    #[arg(long)]
    pub deadline: Option<u64>,
    /// Seconds to wait for the result before giving up (the request goes on).
    #[arg(long, default_value_t = 3600)]
    pub wait: u64,
    /// At most this much wall-clock time for this run (`5s`, `1m`), below the quota's.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub wall: Option<Duration>,
    /// At most this much memory for this run (`128MiB`, `1GiB`), below the quota's.
    #[arg(long)]
    pub memory: Option<bytesize::ByteSize>,
    /// At most this many cores for this run (`0.5`), below the quota's.
    #[arg(long)]
    pub cpus: Option<f64>,
}

/// The per-call limits `--wall`, `--memory` and `--cpus` ask for.
fn requested_limits(args: &RunArgs) -> anyhow::Result<airlock_protocol::RequestedLimits> {
    let cpu_millis = match args.cpus {
        Some(cpus) if !(cpus.is_finite() && cpus > 0.0 && cpus <= 1024.0) => {
            anyhow::bail!("--cpus {cpus} is not a number of cores above 0")
        }
        Some(cpus) => Some((cpus * 1000.0).round() as u32),
        None => None,
    };
    Ok(airlock_protocol::RequestedLimits {
        wall_ms: args.wall.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        memory_bytes: args.memory.map(|m| m.as_u64()),
        cpu_millis,
    })
}

pub async fn run(home: &Home, args: RunArgs) -> anyhow::Result<ExitCode> {
    let request = match build_request(&args) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("airlock run: {e:#}");
            return Ok(ExitCode::from(status::USAGE));
        }
    };
    let request_id = RequestId::new_for(airlock_protocol::roles::MAI.user)?;
    // The request's trace starts here, as Mai's submission; every service continues it.
    let _telemetry = airlock_telemetry::init(
        "airlock-cli",
        &airlock_telemetry::TelemetryConfig {
            default_filter: Some("warn".into()),
            ..Default::default()
        },
    );
    let span = tracing::info_span!("airlock run", request_id = %request_id);
    let _entered = span.enter();
    // Through the stack's own connection settings: `--nats`, a deployment's `[nats] urls` and
    // its TLS, as every other subcommand.
    let user = airlock_protocol::roles::MAI.user;
    let nats = crate::stack::connect(home, user).await?;
    let client = airlock_client::Client::from_connection(nats, user, home.stack());
    let submission = Submission {
        request,
        request_id: Some(request_id.clone()),
    };
    let mut submitted = client.submit(submission).await?;
    let chatty = !args.json;
    if chatty {
        eprintln!("submitted {request_id}");
        // Each stage on its own line: a person waiting can tell "waiting for a human" from slow.
        submitted.on_progress(|progress| eprintln!("[airlock] {}", visible_line(&progress.describe())));
    }
    let terminal = {
        let wait = submitted.terminal(Duration::from_secs(args.wait));
        tokio::pin!(wait);
        let slow = tokio::time::sleep(Duration::from_secs(3));
        tokio::pin!(slow);
        let (mut told, mut cancelled) = (false, false);
        loop {
            tokio::select! {
                terminal = &mut wait => break terminal,
                _ = &mut slow, if !told => {
                    told = true;
                    if chatty {
                        eprintln!("waiting for {request_id} (it may be waiting for a human: `airlock override list`)");
                    }
                }
                // Ctrl-C stops the request, not only the wait for it; a second one leaves.
                _ = tokio::signal::ctrl_c(), if !cancelled => {
                    cancelled = true;
                    eprintln!("interrupted: cancelling {request_id} (Ctrl-C again to stop waiting)");
                    if let Err(error) = client.cancel(&request_id, "airlock run was interrupted (Ctrl-C)").await {
                        eprintln!("airlock run: the cancellation failed: {}", airlock_protocol::error_chain(&error));
                    }
                }
                _ = tokio::signal::ctrl_c(), if cancelled => {
                    eprintln!("stopped waiting for {request_id} (its cancellation was sent)");
                    return Ok(ExitCode::from(status::INTERRUPTED));
                }
            }
        }
    }?;
    let code = exit_status(&terminal);
    let mut result = submitted.result_from(terminal);
    submitted.fetch_observed(&mut result).await;
    if let Some(dir) = &args.out
        && let Err(error) = write_files(dir, &result.terminal, chatty)
    {
        eprintln!("airlock run: --out {}: {error:#}", dir.display());
        return Ok(ExitCode::from(status::AIRLOCK_FAILED));
    }
    if args.json {
        submitted.fetch_receipt(&mut result, RECEIPT_WAIT).await;
        let checked = check_receipt(home, &result);
        let mut json = result.to_json();
        json["receipt_verified"] = serde_json::Value::Bool(checked.is_ok());
        if let Err(problem) = checked {
            json["receipt_problem"] = serde_json::Value::String(problem);
        }
        println!("{}", serde_json::to_string(&json)?);
    } else {
        // The result first: the receipt follows within milliseconds, but nobody should wait
        // for it to read their output.
        print_human(&result);
        submitted.fetch_receipt(&mut result, RECEIPT_WAIT).await;
        print_receipt(home, &result);
    }
    Ok(ExitCode::from(code))
}

/// The receipt's check against the home's auditor keys: what it established, or why there is
/// no proof (no receipt yet, or one that does not hold).
fn check_receipt(home: &Home, result: &RunResult) -> Result<airlock_client::VerifiedReceipt, String> {
    if result.receipt.is_none() {
        return Err(result
            .receipt_missing
            .clone()
            .unwrap_or_else(|| "no audit receipt".to_owned()));
    }
    let keys = home.stack().auditor_keys().map_err(|e| format!("{e:#}"))?;
    result
        .verify_receipt(&keys)
        .map_err(|e| airlock_protocol::error_chain(&e))
}

fn build_request(args: &RunArgs) -> anyhow::Result<ExecutionRequest> {
    let code = std::fs::read(&args.file).with_context(|| format!("reading {}", args.file.display()))?;
    let name = args
        .file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let language = match args.lang.or_else(|| Language::detect(&name, &code)) {
        Some(l) => l,
        None => anyhow::bail!("cannot tell the language of {name}: pass --lang python|bash"),
    };
    let mut env = std::collections::BTreeMap::new();
    for pair in &args.env {
        let (k, v) = pair
            .split_once('=')
            .with_context(|| format!("--env {pair:?} is not NAME=VALUE"))?;
        env.insert(k.to_owned(), v.to_owned());
    }
    let stdin = match &args.stdin {
        Some(path) => std::fs::read(path).with_context(|| format!("reading {}", path.display()))?,
        None => vec![],
    };
    let mut files = Vec::with_capacity(args.files.len());
    for spec in &args.files {
        let (name, path) = match spec.split_once('=') {
            Some((name, path)) => (name.to_owned(), PathBuf::from(path)),
            None => {
                let path = PathBuf::from(spec);
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .with_context(|| format!("--file {spec:?} names no file"))?;
                (name, path)
            }
        };
        let content = std::fs::read(&path).with_context(|| format!("--file {spec:?}: reading {}", path.display()))?;
        files.push(airlock_protocol::InputFile::new(name, content));
    }
    let request = ExecutionRequest::new(language, code)
        .origin(args.origin)
        .trust(args.trust)
        .network(args.network)
        .args(args.args.clone())
        .env(env)
        .stdin(stdin)
        .files(files)
        .packages(args.packages.clone())
        .revises(args.revises.clone())
        .deadline_ms(args.deadline.map(|s| airlock_protocol::now_ms() + (s as i64) * 1000))
        .label(name)
        .limits(requested_limits(args)?);
    request.validate()?;
    Ok(request)
}

pub fn exit_status(terminal: &Terminal) -> u8 {
    match terminal.outcome {
        Outcome::Finished if terminal.exit_code == Some(0) => status::OK,
        Outcome::Finished => status::CODE_FAILED,
        Outcome::Failed if terminal.violation.is_some() => status::VIOLATION,
        Outcome::Failed => status::AIRLOCK_FAILED,
        Outcome::Denied | Outcome::Expired => status::DENIED,
        Outcome::Cancelled => status::CANCELLED,
    }
}

fn print_human(result: &RunResult) {
    use std::io::IsTerminal as _;
    let request_id = &result.request_id;
    let t = &result.terminal;
    // On a terminal the program's output is shown, not obeyed: escapes in it (a cursor move, an
    // OSC 52 clipboard write) are the sandboxed program's, aimed at the operator. Piped or
    // redirected, it is passed on byte for byte.
    let write = |bytes: &[u8], out: &mut dyn std::io::Write, terminal: bool| {
        let _ = match terminal {
            true => out.write_all(airlock_protocol::text::visible_block(&String::from_utf8_lossy(bytes)).as_bytes()),
            false => out.write_all(bytes),
        };
    };
    write(&t.stdout, &mut std::io::stdout(), std::io::stdout().is_terminal());
    write(&t.stderr, &mut std::io::stderr(), std::io::stderr().is_terminal());
    let level = t.level.map(|l| l.to_string()).unwrap_or_else(|| "-".into());
    let mut line = format!("[airlock] {request_id}: {} (rated {level}", t.outcome.as_str());
    if let Some(code) = t.exit_code {
        line.push_str(&format!(", exit {code}"));
    }
    if let Some(u) = t.usage {
        line.push_str(&format!(", {} ms, peak {} KiB", u.wall_ms, u.peak_memory_bytes / 1024));
    }
    line.push(')');
    eprintln!("{line}");
    if let Some(observed) = &result.observed {
        eprintln!(
            "[airlock] observed by the kernel: {}",
            visible_line(&observed.summary())
        );
        for finding in &observed.findings {
            eprintln!("[airlock] finding: {}", visible_line(finding));
        }
    }
    if let Some(v) = &t.violation {
        eprintln!(
            "[airlock] limit violated: {} ({})",
            v.kind.as_str(),
            visible_line(&v.detail)
        );
    }
    if let Some(reason) = &t.reason {
        eprintln!("[airlock] {}", visible_line(reason));
    }
    for f in &t.files {
        eprintln!(
            "[airlock] returned out/{} ({}, {} bytes, {}){}",
            visible_line(&f.name),
            f.media_type,
            f.size,
            f.sha256,
            f.omitted
                .as_ref()
                .map(|w| format!(": content not returned, {}", visible_line(w)))
                .unwrap_or_default()
        );
    }
    if let Some(why) = &t.files_unavailable {
        eprintln!("[airlock] {}", visible_line(why));
    }
    for f in t
        .findings
        .iter()
        .filter(|f| f.severity >= airlock_protocol::Level::Medium)
    {
        eprintln!(
            "[airlock]   line {} {} {}: {}",
            f.line,
            f.severity,
            f.rule_id,
            visible_line(&f.explanation)
        );
    }
}

/// Writes the returned files under `dir`. Their names come from the sandbox: each is checked
/// as a plain relative path again before anything is written.
fn write_files(dir: &std::path::Path, terminal: &Terminal, chatty: bool) -> anyhow::Result<()> {
    for file in &terminal.files {
        airlock_protocol::files::check_name(&file.name)?;
        if let Some(why) = &file.omitted {
            if chatty {
                eprintln!(
                    "[airlock] out/{} not written: {}",
                    visible_line(&file.name),
                    visible_line(why)
                );
            }
            continue;
        }
        let path = dir.join(&file.name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, &file.content).with_context(|| format!("writing {}", path.display()))?;
        if chatty {
            eprintln!(
                "[airlock] out/{} ({}, {} bytes) written to {}",
                file.name,
                file.media_type,
                file.size,
                path.display()
            );
        }
    }
    Ok(())
}

fn print_receipt(home: &Home, result: &RunResult) {
    match (check_receipt(home, result), &result.receipt) {
        (Ok(verified), Some(r)) => eprintln!(
            "[airlock] receipt verified: this result is entry {} of the audit log (checkpoint of {} entries signed by {}{}); audit entries {:?}",
            verified.index,
            verified.tree_size,
            verified.signers.join(", "),
            if verified.code_checked {
                ", for this code and inputs"
            } else {
                ""
            },
            r.entries
        ),
        (Err(problem), Some(_)) => eprintln!("[airlock] the audit receipt does NOT verify: {problem}"),
        (Err(problem), None) => eprintln!("[airlock] {problem}"),
        (Ok(_), None) => {}
    }
}
