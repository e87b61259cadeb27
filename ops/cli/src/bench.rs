//! `airlock bench pipeline`: a trivial script, submit to final result through the whole running
//! stack, against `docker run --rm -i` of the same script on the same image (and, with
//! `--llm-sandbox`, against llm-sandbox's fresh-session and reused-session paths on that image),
//! interleaved in one run; then throughput with concurrent submitters and the pipeline's share
//! of the CPU.

use crate::home::Home;
use airlock_executor::bench::{self as harness, RunOne};
use airlock_protocol::{ExecutionRequest, Inputs, Language, Origin, Outcome, RequestId, TrustLevel};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};

#[derive(Clone, Debug, clap::Subcommand)]
pub enum BenchCommand {
    /// End to end through the running stack (`airlock up` must be running).
    Pipeline(PipelineArgs),
}

#[derive(Clone, Debug, clap::Args)]
pub struct PipelineArgs {
    /// Measured runs per contender (after one unmeasured warm-up run each).
    #[arg(long, default_value_t = 30)]
    pub runs: usize,
    /// Concurrent submitters for the throughput phase (0 skips it).
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
    /// Requests per submitter in the throughput phase.
    #[arg(long, default_value_t = 25)]
    pub per_submitter: usize,
    /// The sandbox image the baselines run.
    #[arg(long, default_value = "airlock-sandbox:latest")]
    pub image: String,
    /// Also measure llm-sandbox (PyPI `llm-sandbox[docker]`, importable by `--python`).
    #[arg(long)]
    pub llm_sandbox: bool,
    /// The Python interpreter that runs the llm-sandbox contender.
    #[arg(long, default_value = "python3")]
    pub python: String,
    #[arg(long)]
    pub json: bool,
}

const SCRIPT: &str = "print('hello')\n";

/// The llm-sandbox contender's helper, run with `python3 -c`.
const LLM_SANDBOX_RUNNER: &str = include_str!("../../bench/llm_sandbox_runner.py");

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

async fn one_pipeline_run(client: async_nats::Client) -> Result<(), String> {
    let result = crate::run::submit_and_wait(
        &client,
        &RequestId::new(),
        trivial_request(),
        Duration::from_secs(60),
        false,
        false,
    )
    .await
    .map_err(|e| e.to_string())?;
    if result.terminal.outcome == Outcome::Finished && result.terminal.stdout == b"hello\n" {
        Ok(())
    } else {
        Err(format!("unexpected result: {:?}", result.terminal))
    }
}

async fn one_docker_run(image: String) -> Result<(), String> {
    let mut child = tokio::process::Command::new("docker")
        .args(["run", "--rm", "-i", "--network", "none", &image, "python3", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("docker: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(SCRIPT.as_bytes()).await.map_err(|e| e.to_string())?;
    }
    let output = child.wait_with_output().await.map_err(|e| e.to_string())?;
    if output.status.success() && output.stdout == b"hello\n" {
        Ok(())
    } else {
        Err(format!("docker run failed: {output:?}"))
    }
}

/// A running llm-sandbox helper: one request line in, one answer line out.
struct LlmSandbox {
    child: tokio::sync::Mutex<tokio::process::Child>,
    /// `None` once closed.
    io: tokio::sync::Mutex<
        Option<(
            tokio::process::ChildStdin,
            tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
        )>,
    >,
}

impl LlmSandbox {
    fn spawn(python: &str, image: &str) -> anyhow::Result<Arc<LlmSandbox>> {
        let mut child = tokio::process::Command::new(python)
            .args(["-c", LLM_SANDBOX_RUNNER, image])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| anyhow::anyhow!("starting {python} for llm-sandbox: {e}"))?;
        let stdin = child.stdin.take().ok_or_else(|| anyhow::anyhow!("no stdin"))?;
        let stdout = child.stdout.take().ok_or_else(|| anyhow::anyhow!("no stdout"))?;
        Ok(Arc::new(LlmSandbox {
            child: tokio::sync::Mutex::new(child),
            io: tokio::sync::Mutex::new(Some((stdin, tokio::io::BufReader::new(stdout).lines()))),
        }))
    }

    async fn run(&self, mode: &str) -> Result<(), String> {
        let mut io = self.io.lock().await;
        let Some((stdin, lines)) = io.as_mut() else {
            return Err("the llm-sandbox helper is closed".into());
        };
        stdin.write_all(format!("{mode}\n").as_bytes()).await.map_err(|e| format!("llm-sandbox helper: {e}"))?;
        stdin.flush().await.map_err(|e| e.to_string())?;
        match lines.next_line().await.map_err(|e| e.to_string())? {
            Some(line) if line == "ok" => Ok(()),
            Some(line) => Err(line),
            None => Err("the llm-sandbox helper exited (is `llm-sandbox[docker]` importable by this python?)".into()),
        }
    }

    /// Ends the helper by closing its input, so that it closes its reused session (removing
    /// that container) before it exits.
    async fn close(&self) {
        self.io.lock().await.take();
        let mut child = self.child.lock().await;
        if tokio::time::timeout(Duration::from_secs(30), child.wait()).await.is_err() {
            eprintln!("the llm-sandbox helper did not exit; its reused container may be left running");
        }
    }

    fn contender(self: &Arc<Self>, mode: &'static str) -> RunOne {
        let helper = self.clone();
        harness::run_one(move || {
            let helper = helper.clone();
            async move { helper.run(mode).await }
        })
    }
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

    let airlock = {
        let client = client.clone();
        harness::run_one(move || one_pipeline_run(client.clone()))
    };
    let image = args.image.clone();
    let mut contenders: Vec<(String, RunOne)> = vec![
        ("airlock pipeline (warm pool)".to_owned(), airlock.clone()),
        (
            "docker run --rm -i".to_owned(),
            harness::run_one(move || one_docker_run(image.clone())),
        ),
    ];
    let llm_sandbox = match args.llm_sandbox {
        true => Some(LlmSandbox::spawn(&args.python, &args.image)?),
        false => None,
    };
    if let Some(helper) = &llm_sandbox {
        contenders.push(("llm-sandbox, fresh session".to_owned(), helper.contender("fresh")));
        contenders.push(("llm-sandbox, reused session".to_owned(), helper.contender("reused")));
    }
    // Round-robin, so drift on a noisy machine hits every contender alike.
    let measured = harness::interleaved(&contenders, args.runs, 1).await;
    if let Some(helper) = &llm_sandbox {
        helper.close().await;
    }
    let latencies = measured.map_err(|e| anyhow::anyhow!(e))?;
    let ours = latencies[0].1.clone();
    let baselines: Vec<serde_json::Value> = latencies[1..]
        .iter()
        .map(|(name, l)| {
            serde_json::json!({
                "name": name,
                "latency": l,
                "airlock_speedup_p50": l.p50_ms / ours.p50_ms,
                "airlock_speedup_p99": l.p99_ms / ours.p99_ms,
            })
        })
        .collect();

    let mut throughput = serde_json::Value::Null;
    let mut printed_throughput = None;
    if args.concurrency > 0 {
        let cpu_before = cpu_seconds(&stack_pids);
        let machine_before = machine_cpu_seconds();
        let measured = harness::throughput(airlock, args.concurrency, args.per_submitter)
            .await
            .map_err(|e| anyhow::anyhow!(e))?;
        let pipeline_cpu = cpu_seconds(&stack_pids) - cpu_before;
        let machine_cpu = machine_cpu_seconds() - machine_before;
        let share = if machine_cpu > 0.0 { pipeline_cpu / machine_cpu } else { f64::NAN };
        throughput = serde_json::json!({
            "measured": &measured,
            "pipeline_cpu_s": pipeline_cpu,
            "machine_busy_cpu_s": machine_cpu,
            "pipeline_share_of_busy_cpu": share,
            "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        });
        printed_throughput = Some((measured, share));
    }

    let report = serde_json::json!({
        "script": SCRIPT.trim(),
        "runs": args.runs,
        "airlock_pipeline": ours,
        "baselines": baselines,
        "throughput": throughput,
    });
    if args.json {
        println!("{report}");
        return Ok(ExitCode::SUCCESS);
    }
    println!("trivial script, submit to final result, {} runs each (interleaved):", args.runs);
    for (name, l) in &latencies {
        println!("  {name:<32} p50 {:7.1} ms  p90 {:7.1} ms  p99 {:7.1} ms", l.p50_ms, l.p90_ms, l.p99_ms);
    }
    for (name, l) in &latencies[1..] {
        println!(
            "  airlock vs {name}: {:.1}x faster at p50, {:.1}x at p99",
            l.p50_ms / ours.p50_ms,
            l.p99_ms / ours.p99_ms
        );
    }
    if let Some((measured, share)) = printed_throughput {
        println!(
            "  throughput, {} submitters: {:.1} executions/s (p50 {:.1} ms, p99 {:.1} ms); pipeline processes used {:.0}% of the machine's busy CPU",
            measured.submitters,
            measured.per_second,
            measured.latency.p50_ms,
            measured.latency.p99_ms,
            share * 100.0
        );
    }
    Ok(ExitCode::SUCCESS)
}
