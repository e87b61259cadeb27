//! `airlock bench pipeline`: a trivial script, submit to final result through the whole running
//! stack, against `docker run --rm -i` of the same script on the same image, measured in one
//! run; then throughput with concurrent submitters and the pipeline's share of the CPU.

use crate::home::Home;
use airlock_protocol::{ExecutionRequest, Inputs, Language, Origin, Outcome, RequestId, TrustLevel};
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Clone, Debug, clap::Subcommand)]
pub enum BenchCommand {
    /// End to end through the running stack (`airlock up` must be running).
    Pipeline(PipelineArgs),
}

#[derive(Clone, Debug, clap::Args)]
pub struct PipelineArgs {
    /// Sequential runs per contender.
    #[arg(long, default_value_t = 30)]
    pub runs: usize,
    /// Concurrent submitters for the throughput phase (0 skips it).
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
    /// Requests per submitter in the throughput phase.
    #[arg(long, default_value_t = 25)]
    pub per_submitter: usize,
    /// The sandbox image the baseline runs.
    #[arg(long, default_value = "airlock-sandbox:latest")]
    pub image: String,
    #[arg(long)]
    pub json: bool,
}

const SCRIPT: &str = "print('hello')\n";

pub async fn run(home: &Home, command: BenchCommand) -> anyhow::Result<ExitCode> {
    match command {
        BenchCommand::Pipeline(args) => pipeline(home, args).await,
    }
}

fn trivial_request() -> ExecutionRequest {
    ExecutionRequest {
        language: Language::Python,
        code: SCRIPT.as_bytes().to_vec(),
        origin: Origin::Generated,
        trust: TrustLevel::Unknown,
        inputs: Inputs::default(),
        packages: vec![],
        revises: None,
        deadline_ms: None,
        label: Some("bench.py".into()),
    }
}

/// Median and 99th percentile, in milliseconds.
pub fn percentiles(samples: &mut [Duration]) -> (f64, f64) {
    samples.sort();
    let at = |q: f64| {
        let i = ((samples.len() as f64 - 1.0) * q).round() as usize;
        samples.get(i).map(|d| d.as_secs_f64() * 1000.0).unwrap_or(f64::NAN)
    };
    (at(0.5), at(0.99))
}

async fn one_pipeline_run(client: &async_nats::Client) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let result = crate::run::submit_and_wait(
        client,
        &RequestId::new(),
        trivial_request(),
        Duration::from_secs(60),
        false,
        false,
    )
    .await?;
    let elapsed = started.elapsed();
    anyhow::ensure!(
        result.terminal.outcome == Outcome::Finished && result.terminal.stdout == b"hello\n",
        "unexpected result: {:?}",
        result.terminal
    );
    Ok(elapsed)
}

async fn one_docker_run(image: &str) -> anyhow::Result<Duration> {
    use tokio::io::AsyncWriteExt as _;
    let started = Instant::now();
    let mut child = tokio::process::Command::new("docker")
        .args(["run", "--rm", "-i", "--network", "none", image, "python3", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(SCRIPT.as_bytes()).await?;
    }
    let output = child.wait_with_output().await?;
    anyhow::ensure!(
        output.status.success() && output.stdout == b"hello\n",
        "docker run failed: {output:?}"
    );
    Ok(started.elapsed())
}

/// User+system CPU time of the given processes, from /proc.
fn cpu_seconds(pids: &[u32]) -> f64 {
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    pids.iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok())
        .filter_map(|stat| {
            // Fields after the command name (which may hold spaces) start after the last ')'.
            let rest = stat.rsplit_once(')')?.1;
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let utime: f64 = fields.get(11)?.parse().ok()?;
            let stime: f64 = fields.get(12)?.parse().ok()?;
            Some((utime + stime) / ticks)
        })
        .sum()
}

/// Busy CPU seconds of the whole machine, from /proc/stat.
fn machine_cpu_seconds() -> f64 {
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let Some(line) = stat.lines().next() else { return 0.0 };
    let fields: Vec<f64> = line.split_whitespace().skip(1).filter_map(|f| f.parse().ok()).collect();
    // user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
    let busy: f64 = fields
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 3 && *i != 4)
        .map(|(_, v)| v)
        .sum();
    busy / ticks
}

async fn pipeline(home: &Home, args: PipelineArgs) -> anyhow::Result<ExitCode> {
    let client = crate::stack::connect(home, "mai").await?;
    let info = crate::stack::StackInfo::read(home)?.ok_or_else(|| anyhow::anyhow!("no stack.json"))?;
    let mut stack_pids: Vec<u32> = info.services.values().copied().collect();
    stack_pids.extend(info.nats_pid);

    // Warm both paths once (first container start, first JetStream consumer fetch).
    one_pipeline_run(&client).await?;
    one_docker_run(&args.image).await?;

    let mut airlock = Vec::with_capacity(args.runs);
    let mut docker = Vec::with_capacity(args.runs);
    // Interleaved, so drift on a noisy machine hits both alike.
    for _ in 0..args.runs {
        airlock.push(one_pipeline_run(&client).await?);
        docker.push(one_docker_run(&args.image).await?);
    }
    let (airlock_p50, airlock_p99) = percentiles(&mut airlock);
    let (docker_p50, docker_p99) = percentiles(&mut docker);

    let mut throughput = serde_json::Value::Null;
    if args.concurrency > 0 {
        let cpu_before = cpu_seconds(&stack_pids);
        let machine_before = machine_cpu_seconds();
        let started = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..args.concurrency {
            let client = client.clone();
            let n = args.per_submitter;
            tasks.push(tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(n);
                for _ in 0..n {
                    latencies.push(one_pipeline_run(&client).await?);
                }
                anyhow::Ok(latencies)
            }));
        }
        let mut latencies = Vec::new();
        for task in tasks {
            latencies.extend(task.await??);
        }
        let wall = started.elapsed().as_secs_f64();
        let pipeline_cpu = cpu_seconds(&stack_pids) - cpu_before;
        let machine_cpu = machine_cpu_seconds() - machine_before;
        let (p50, p99) = percentiles(&mut latencies);
        throughput = serde_json::json!({
            "submitters": args.concurrency,
            "executions": latencies.len(),
            "executions_per_s": latencies.len() as f64 / wall,
            "p50_ms": p50,
            "p99_ms": p99,
            "pipeline_cpu_s": pipeline_cpu,
            "machine_busy_cpu_s": machine_cpu,
            "pipeline_share_of_busy_cpu": if machine_cpu > 0.0 { pipeline_cpu / machine_cpu } else { f64::NAN },
            "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        });
    }

    let report = serde_json::json!({
        "script": SCRIPT.trim(),
        "runs": args.runs,
        "airlock_pipeline": { "p50_ms": airlock_p50, "p99_ms": airlock_p99 },
        "docker_run_rm": { "p50_ms": docker_p50, "p99_ms": docker_p99 },
        "speedup_p50_vs_docker_run": docker_p50 / airlock_p50,
        "speedup_p99_vs_docker_run": docker_p99 / airlock_p99,
        "throughput": throughput,
    });
    if args.json {
        println!("{report}");
    } else {
        println!(
            "trivial script, submit to final result, {} runs each (interleaved):",
            args.runs
        );
        println!("  airlock pipeline (warm pool): p50 {airlock_p50:7.1} ms  p99 {airlock_p99:7.1} ms");
        println!("  docker run --rm -i:           p50 {docker_p50:7.1} ms  p99 {docker_p99:7.1} ms");
        println!(
            "  airlock is {:.1}x faster at p50, {:.1}x at p99",
            docker_p50 / airlock_p50,
            docker_p99 / airlock_p99
        );
        if !throughput.is_null() {
            println!(
                "  throughput, {} submitters: {:.1} executions/s (p50 {:.1} ms, p99 {:.1} ms); pipeline processes used {:.0}% of the machine's busy CPU",
                args.concurrency,
                throughput["executions_per_s"].as_f64().unwrap_or(0.0),
                throughput["p50_ms"].as_f64().unwrap_or(0.0),
                throughput["p99_ms"].as_f64().unwrap_or(0.0),
                throughput["pipeline_share_of_busy_cpu"].as_f64().unwrap_or(0.0) * 100.0
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
