//! `airlock bench stages`: where a trivial request's time goes, stage by stage, through the
//! running stack. Each run is submitted by the Rust client in this process and followed to its
//! receipt; the events' own timestamps (each service stamps the envelope it publishes) split
//! the pipeline's part, this process's clock the client's. Then the fixed costs a new
//! `airlock run` process pays before it submits: starting the binary and connecting.
//!
//! The figures are milliseconds at the median (and p90) of `--runs` runs with `--settle` of quiet
//! before each, as in `airlock bench pipeline`; the stages are consecutive, so they add up to
//! the whole. Services stamp times in milliseconds, so a stage under 1 ms shows as 0 or 1.

use crate::home::Home;
use airlock_protocol::subjects::EVENTS_STREAM;
use airlock_protocol::{Envelope, EventKind, ExecutionRequest, Language, RequestId};
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Clone, Debug, clap::Args)]
pub struct StagesArgs {
    /// Measured runs (after one unmeasured warm-up run).
    #[arg(long, default_value_t = 30)]
    pub runs: usize,
    /// Quiet before each run, so that the warm pool's refill does not share the CPU with it.
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    pub settle: Duration,
    #[arg(long)]
    pub json: bool,
}

/// The stages, in order: a run's times are the differences between consecutive marks.
const STAGES: [&str; 8] = [
    "client: subscribe, publish, stream ack",
    "submitted -> assessed (assessor)",
    "assessed -> decided (gate)",
    "decided -> exec.started (executor: claim, warm container, start)",
    "exec.started -> terminal (program runs, output, end, usage)",
    "terminal published -> client has it",
    "terminal -> receipt at the client (auditor commit)",
    "total, submit to receipt",
];

/// One run's marks, in Unix milliseconds (fractional for the client's own).
struct Marks {
    start: f64,
    acked: f64,
    submitted: f64,
    assessed: f64,
    decided: f64,
    exec_started: f64,
    terminal: f64,
    terminal_seen: f64,
    receipt_seen: f64,
}

impl Marks {
    fn stages(&self) -> [f64; 8] {
        [
            self.acked - self.start,
            self.assessed - self.submitted,
            self.decided - self.assessed,
            self.exec_started - self.decided,
            self.terminal - self.exec_started,
            self.terminal_seen - self.terminal,
            self.receipt_seen - self.terminal_seen,
            self.receipt_seen - self.start,
        ]
    }
}

fn unix_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64() * 1000.0)
        .unwrap_or(0.0)
}

pub async fn stages(home: &Home, args: StagesArgs) -> anyhow::Result<ExitCode> {
    let nats = crate::stack::connect(home, airlock_protocol::roles::MAI.user).await?;
    let client = airlock_client::Client::from_connection(nats.clone(), airlock_protocol::roles::MAI.user, home.stack());
    let admin = crate::stack::connect(home, airlock_protocol::roles::ADMIN.user).await?;
    let js = async_nats::jetstream::new(admin);
    let events = js.get_stream(EVENTS_STREAM).await?;

    let mut runs: Vec<[f64; 8]> = Vec::new();
    for i in 0..=args.runs {
        tokio::time::sleep(args.settle).await;
        let marks = one(&client, &events).await?;
        if i > 0 {
            runs.push(marks.stages());
        }
    }
    let startup = fixed_costs(home, args.runs).await?;

    let column = |k: usize| -> (f64, f64) {
        let mut values: Vec<f64> = runs.iter().map(|r| r[k]).collect();
        values.sort_by(f64::total_cmp);
        (percentile(&values, 0.5), percentile(&values, 0.9))
    };
    if args.json {
        let stages: Vec<serde_json::Value> = STAGES
            .iter()
            .enumerate()
            .map(|(k, name)| {
                let (p50, p90) = column(k);
                serde_json::json!({"stage": name, "p50_ms": p50, "p90_ms": p90})
            })
            .collect();
        let startup: Vec<serde_json::Value> = startup
            .iter()
            .map(|(name, p50, p90)| serde_json::json!({"step": name, "p50_ms": p50, "p90_ms": p90}))
            .collect();
        println!(
            "{}",
            serde_json::json!({"runs": args.runs, "stages": stages, "new_process": startup})
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "a trivial request, stage by stage ({} runs, settle {:?}):",
        args.runs, args.settle
    );
    for (k, name) in STAGES.iter().enumerate() {
        let (p50, p90) = column(k);
        println!("  {name:<66} p50 {p50:6.1} ms  p90 {p90:6.1} ms");
    }
    println!("what a new `airlock run` process pays besides:");
    for (name, p50, p90) in &startup {
        println!("  {name:<66} p50 {p50:6.1} ms  p90 {p90:6.1} ms");
    }
    Ok(ExitCode::SUCCESS)
}

/// One request, followed to its receipt, with its marks.
async fn one(client: &airlock_client::Client, events: &async_nats::jetstream::stream::Stream) -> anyhow::Result<Marks> {
    let request_id = RequestId::new_for(airlock_protocol::roles::MAI.user)?;
    let submission = airlock_client::Submission {
        request: ExecutionRequest::new(Language::Python, "print('hello')\n").label("bench-stages.py"),
        request_id: Some(request_id.clone()),
    };
    let start = unix_ms();
    let mut submitted = client.submit(submission).await?;
    let acked = unix_ms();
    submitted.terminal(Duration::from_secs(60)).await?;
    let terminal_seen = unix_ms();
    submitted
        .receipt(Duration::from_secs(60))
        .await
        .ok_or_else(|| anyhow::anyhow!("no receipt for {request_id}"))?;
    let receipt_seen = unix_ms();
    let stamp = |kind: EventKind| {
        let subject = kind.subject(&request_id);
        async move {
            let message = events.direct_get_last_for_subject(subject.clone()).await?;
            let envelope = Envelope::decode_on(&subject, &message.payload)?;
            anyhow::Ok(envelope.time_ms as f64)
        }
    };
    Ok(Marks {
        start,
        acked,
        submitted: stamp(EventKind::Submitted).await?,
        assessed: stamp(EventKind::Assessed).await?,
        decided: stamp(EventKind::Decided).await?,
        exec_started: stamp(EventKind::ExecStarted).await?,
        terminal: stamp(EventKind::Terminal).await?,
        terminal_seen,
        receipt_seen,
    })
}

/// What a new process pays before it can submit: exec of this binary to `main` and out again
/// (`airlock --version`), and connecting as Mai (`airlock bench connect`, a hidden step that
/// connects and exits).
async fn fixed_costs(home: &Home, runs: usize) -> anyhow::Result<Vec<(&'static str, f64, f64)>> {
    let exe = std::env::current_exe()?;
    let time = |args: Vec<String>| {
        let exe = exe.clone();
        async move {
            let mut values = Vec::new();
            for _ in 0..runs {
                let start = Instant::now();
                let status = tokio::process::Command::new(&exe)
                    .args(&args)
                    .stdout(std::process::Stdio::null())
                    .status()
                    .await?;
                anyhow::ensure!(status.success(), "{exe:?} {args:?}: {status}");
                values.push(start.elapsed().as_secs_f64() * 1000.0);
            }
            values.sort_by(f64::total_cmp);
            anyhow::Ok((percentile(&values, 0.5), percentile(&values, 0.9)))
        }
    };
    let home_arg = home.root().display().to_string();
    let version = time(vec!["--version".into()]).await?;
    let connect = time(vec!["--home".into(), home_arg, "bench".into(), "connect".into()]).await?;
    Ok(vec![
        ("process start and exit (`airlock --version`)", version.0, version.1),
        ("... and connect as Mai (`airlock bench connect`)", connect.0, connect.1),
    ])
}

/// Connects as Mai and exits: the fixed cost of a new client process.
pub async fn connect_only(home: &Home) -> anyhow::Result<ExitCode> {
    let nats = crate::stack::connect(home, airlock_protocol::roles::MAI.user).await?;
    nats.flush().await?;
    Ok(ExitCode::SUCCESS)
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}
