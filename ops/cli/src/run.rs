//! `airlock run FILE`: submit code as Mai would, wait for its one terminal event, print the result.

use crate::home::Home;
use airlock_bus::Publisher;
use airlock_protocol::subjects::{AUDIT_STREAM, EVENTS_STREAM, audit_receipt_subject};
use airlock_protocol::{
    AuditReceipt, Envelope, Event, EventKind, ExecutionRequest, Inputs, Language, Origin, Outcome, Producer, RequestId,
    Terminal, TrustLevel,
};
use anyhow::Context as _;
use futures::StreamExt as _;
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
    /// The request this one revises.
    #[arg(long)]
    pub revises: Option<RequestId>,
    /// Seconds from now after which the request must not start.
    #[arg(long)]
    pub deadline: Option<u64>,
    /// Seconds to wait for the result before giving up (the request goes on).
    #[arg(long, default_value_t = 3600)]
    pub wait: u64,
}

pub async fn run(home: &Home, args: RunArgs) -> anyhow::Result<ExitCode> {
    let request = match build_request(&args) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("airlock run: {e:#}");
            return Ok(ExitCode::from(status::USAGE));
        }
    };
    let request_id = RequestId::new();
    // The request's trace starts here, as Mai's submission; every service continues it.
    let _telemetry = airlock_telemetry::init(
        "airlock-cli",
        &airlock_telemetry::TelemetryConfig { default_filter: Some("warn".into()), ..Default::default() },
    );
    let span = tracing::info_span!("airlock run", request_id = %request_id);
    let _entered = span.enter();
    let client = crate::stack::connect(home, "mai").await?;
    let result = submit_and_wait(
        &client,
        &request_id,
        request,
        Duration::from_secs(args.wait),
        !args.json,
        true,
    )
    .await?;
    let code = exit_status(&result.terminal);
    if args.json {
        println!("{}", serde_json::to_string(&result_json(&request_id, &result))?);
    } else {
        print_human(&request_id, &result);
    }
    Ok(ExitCode::from(code))
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
    let request = ExecutionRequest {
        language,
        code,
        origin: args.origin,
        trust: args.trust,
        inputs: Inputs {
            args: args.args.clone(),
            env,
            stdin,
        },
        packages: args.packages.clone(),
        revises: args.revises.clone(),
        deadline_ms: args.deadline.map(|s| airlock_protocol::now_ms() + (s as i64) * 1000),
        label: Some(name),
    };
    request.validate()?;
    Ok(request)
}

pub struct RunResult {
    pub terminal: Terminal,
    pub receipt: Option<AuditReceipt>,
}

/// Submits as Mai and waits for the terminal event, then (briefly) for the audit receipt.
pub async fn submit_and_wait(
    client: &async_nats::Client,
    request_id: &RequestId,
    request: ExecutionRequest,
    wait: Duration,
    chatty: bool,
    want_receipt: bool,
) -> anyhow::Result<RunResult> {
    // Subscribe before submitting, so the result cannot slip past.
    let mut terminals = client.subscribe(EventKind::Terminal.subject(request_id)).await?;
    let mut receipts = client.subscribe(audit_receipt_subject(request_id.as_str())).await?;
    let publisher = Publisher::new(
        async_nats::jetstream::new(client.clone()),
        Producer::Mai,
        tokio_util::sync::CancellationToken::new(),
    )
    .with_patience(Duration::from_secs(30));
    publisher
        .publish(&Envelope::new(
            request_id.clone(),
            Producer::Mai,
            Event::Submitted(request),
        ))
        .await
        .context("submitting the request")?;
    if chatty {
        eprintln!("submitted {request_id}");
    }

    let js = async_nats::jetstream::new(client.clone());
    let deadline = tokio::time::Instant::now() + wait;
    let mut told_waiting = false;
    let terminal = loop {
        // A live subscription misses what is published while the connection is down, so the
        // stream itself is asked too, every few seconds: a result is never missed for good.
        let next = tokio::time::timeout(STREAM_CHECK_EVERY, terminals.next());
        match tokio::time::timeout_at(deadline, next).await {
            Err(_) => anyhow::bail!("no result for {request_id} after {wait:?} (it may still finish)"),
            Ok(Err(_)) => {
                if let Some(terminal) = terminal_in_stream(&js, request_id).await {
                    break terminal;
                }
                if chatty && !told_waiting {
                    eprintln!("waiting for {request_id} (it may be waiting for a human: `airlock override list`)");
                    told_waiting = true;
                }
            }
            Ok(Ok(None)) => anyhow::bail!("connection to NATS closed while waiting for {request_id}"),
            Ok(Ok(Some(message))) => match Envelope::decode_on(message.subject.as_str(), &message.payload) {
                Ok(Envelope {
                    event: Event::Terminal(terminal),
                    ..
                }) => break *terminal,
                Ok(_) | Err(_) => continue,
            },
        }
    };
    let receipt = if want_receipt {
        wait_for_receipt(&js, &mut receipts, request_id, RECEIPT_WAIT).await
    } else {
        None
    };
    Ok(RunResult { terminal, receipt })
}

/// How often a waiting client reads the terminal event from the stream.
const STREAM_CHECK_EVERY: Duration = Duration::from_secs(2);
/// How long the audit receipt is waited for after the result (it follows within milliseconds
/// while the auditor is up).
const RECEIPT_WAIT: Duration = Duration::from_secs(15);

/// The request's terminal event, read from the events stream (direct get by subject).
async fn terminal_in_stream(js: &async_nats::jetstream::Context, request_id: &RequestId) -> Option<Terminal> {
    let subject = EventKind::Terminal.subject(request_id);
    let stream = js.get_stream_no_info(EVENTS_STREAM).await.ok()?;
    let message = stream.direct_get_last_for_subject(subject.clone()).await.ok()?;
    match Envelope::decode_on(&subject, &message.payload) {
        Ok(Envelope {
            event: Event::Terminal(terminal),
            ..
        }) => Some(*terminal),
        _ => None,
    }
}

/// The request's receipt: from the subscription, or from the audit stream when it was
/// published before (or while) the subscription could see it.
async fn wait_for_receipt(
    js: &async_nats::jetstream::Context,
    receipts: &mut async_nats::Subscriber,
    request_id: &RequestId,
    wait: Duration,
) -> Option<AuditReceipt> {
    let deadline = tokio::time::Instant::now() + wait;
    let subject = audit_receipt_subject(request_id.as_str());
    loop {
        let next = tokio::time::timeout(Duration::from_millis(500), receipts.next());
        match tokio::time::timeout_at(deadline, next).await {
            Err(_) => return None,
            Ok(Ok(Some(message))) => return AuditReceipt::decode(&message.payload).ok(),
            Ok(Ok(None)) => return None,
            Ok(Err(_)) => {
                if let Ok(stream) = js.get_stream_no_info(AUDIT_STREAM).await
                    && let Ok(message) = stream.direct_get_last_for_subject(subject.clone()).await
                {
                    return AuditReceipt::decode(&message.payload).ok();
                }
            }
        }
    }
}

pub fn exit_status(terminal: &Terminal) -> u8 {
    match terminal.outcome {
        Outcome::Finished if terminal.exit_code == Some(0) => status::OK,
        Outcome::Finished => status::CODE_FAILED,
        Outcome::Failed if terminal.violation.is_some() => status::VIOLATION,
        Outcome::Failed => status::AIRLOCK_FAILED,
        Outcome::Denied | Outcome::Expired => status::DENIED,
    }
}

/// The one JSON object `airlock run --json` prints.
pub fn result_json(request_id: &RequestId, result: &RunResult) -> serde_json::Value {
    let t = &result.terminal;
    let decision = match (&t.decision, t.outcome) {
        (_, Outcome::Expired) => Some("expired".to_owned()),
        (Some(d), _) => Some(d.decision.clone()),
        (None, Outcome::Denied) => Some("denied".to_owned()),
        (None, _) => None,
    };
    serde_json::json!({
        "request_id": request_id,
        "outcome": t.outcome.as_str(),
        "verdict": t.level,
        "findings": t.findings,
        "decision": decision,
        "approver": t.decision.as_ref().map(|d| &d.approver),
        "quota": t.decision.as_ref().and_then(|d| d.quota),
        "exit_code": t.exit_code,
        "stdout": String::from_utf8_lossy(&t.stdout),
        "stderr": String::from_utf8_lossy(&t.stderr),
        "violation": t.violation.as_ref().map(|v| serde_json::json!({
            "kind": v.kind.as_str(),
            "detail": v.detail,
            "limit": v.limit,
            "measured": v.measured,
        })),
        "usage": t.usage.map(|u| serde_json::json!({
            "wall_ms": u.wall_ms,
            "cpu_ms": u.cpu_ms,
            "peak_memory_bytes": u.peak_memory_bytes,
            "peak_pids": u.peak_pids,
            "stdout_bytes": u.stdout_bytes,
            "stderr_bytes": u.stderr_bytes,
        })),
        "reason": t.reason,
        "audit": result.receipt.as_ref().map(|r| r.entries.clone()).unwrap_or_default(),
        "checkpoint": result.receipt.as_ref().map(|r| r.checkpoint.clone()),
    })
}

fn print_human(request_id: &RequestId, result: &RunResult) {
    use std::io::Write as _;
    let t = &result.terminal;
    let _ = std::io::stdout().write_all(&t.stdout);
    let _ = std::io::stderr().write_all(&t.stderr);
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
    if let Some(v) = &t.violation {
        eprintln!("[airlock] limit violated: {} ({})", v.kind.as_str(), v.detail);
    }
    if let Some(reason) = &t.reason {
        eprintln!("[airlock] {reason}");
    }
    for f in t
        .findings
        .iter()
        .filter(|f| f.severity >= airlock_protocol::Level::Medium)
    {
        eprintln!(
            "[airlock]   line {} {} {}: {}",
            f.line, f.severity, f.rule_id, f.explanation
        );
    }
    if let Some(r) = &result.receipt {
        eprintln!("[airlock] audit entries {:?}", r.entries);
    }
}
