//! `airlock bench pipeline`: a trivial script, submit to final result through the whole running
//! stack, measured the way users get it — `airlock run` as a new process per request, and the
//! Python client in one process, both waiting for the audit receipt — against `docker run --rm
//! -i` of the same script on the same image (and, with `--llm-sandbox`, llm-sandbox's fresh and
//! reused sessions on that image), interleaved in one run; beside them, for context, the Rust
//! client in this process without the receipt. Then throughput with concurrent submitters and the
//! pipeline's share of the CPU.

use crate::bench_slowest::{Recorded, Recorder};
use crate::home::Home;
use airlock_executor::bench::{self as harness, RunOne};
use airlock_protocol::{ExecutionRequest, Language, Outcome};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};

#[derive(Clone, Debug, clap::Subcommand)]
pub enum BenchCommand {
    /// End to end through the running stack (`airlock up` must be running).
    Pipeline(PipelineArgs),
    /// Where a trivial request's time goes, stage by stage, and what a new process pays.
    Stages(crate::bench_stages::StagesArgs),
    /// Connect as Mai and exit (the fixed cost `stages` measures).
    #[command(hide = true)]
    Connect,
}

#[derive(Clone, Debug, clap::Args)]
pub struct PipelineArgs {
    /// Measured runs per contender (after one unmeasured warm-up run each).
    #[arg(long, default_value_t = 30)]
    pub runs: usize,
    /// Concurrent submitters for the throughput phase (0 skips it).
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
    /// Quiet before each measured run, so that what one contender leaves behind (the warm pool
    /// refilling, a container being removed) does not share the CPU with the next: each request
    /// meets an idle machine, as Mai's occasional requests do (`0ms`: back to back).
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    pub settle: std::time::Duration,
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
    /// A Python interpreter that can import `airlock_client` (`pip install clients/python`):
    /// measures the Python client in one process (`ops/bench/python_client_runner.py`).
    #[arg(long)]
    pub python_client: Option<String>,
    /// Sequential mode: only the user-facing contenders (`airlock run`, and the Python client
    /// with `--python-client`), one request at a time with this pause before each (as an
    /// assistant's occasional requests come), no baselines and no throughput phase. Shows
    /// whether the warm pool is there when a request comes after a quiet while.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub sequential_pause: Option<std::time::Duration>,
    /// Keep one core busy with a CPU-bound loop in this process while measuring (a noisy
    /// neighbour).
    #[arg(long)]
    pub cpu_neighbour: bool,
    /// A second running stack (its home) measured beside this one, interleaved, with `airlock
    /// run` as a new process: the same binaries with one setting changed (e.g. started with
    /// `--set executor.observe.enabled=false`) show what that setting costs a user.
    #[arg(long)]
    pub compare_home: Option<std::path::PathBuf>,
    /// What the second stack differs in, for the report.
    #[arg(long, default_value = "second stack")]
    pub compare_label: String,
    /// Also measure `airlock run` under this runtime (repeatable), interleaved with the default
    /// contender: `runsc` submits the script as external code, which the default policy runs
    /// under gVisor where the stack offers it (`[executor.runtimes] available`), `runc` as Mai's
    /// own. Each result must say it ran there, or the bench stops and says what the policy chose.
    #[arg(long, value_parser = ["runc", "runsc"])]
    pub runtime: Vec<String>,
    /// In sequential mode, split this many of this stack's slowest runs into stages (the
    /// services' stamps on their events): what decides the p99.
    #[arg(long, default_value_t = 3)]
    pub slowest: usize,
    #[arg(long)]
    pub json: bool,
}

/// A CPU-bound loop on its own thread until dropped.
struct Neighbour {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Neighbour {
    fn start() -> Neighbour {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut x: u64 = 1;
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                for _ in 0..100_000 {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
            }
        });
        Neighbour {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Neighbour {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

const SCRIPT: &str = "print('hello')\n";

/// The llm-sandbox contender's helper, run with `python3 -c`.
const LLM_SANDBOX_RUNNER: &str = include_str!("../../bench/llm_sandbox_runner.py");
/// The Python client contender's helper, run with `python3 -c`.
const PYTHON_CLIENT_RUNNER: &str = include_str!("../../bench/python_client_runner.py");

pub async fn run(home: &Home, command: BenchCommand) -> anyhow::Result<ExitCode> {
    match command {
        BenchCommand::Pipeline(args) => pipeline(home, args).await,
        BenchCommand::Stages(args) => crate::bench_stages::stages(home, args).await,
        BenchCommand::Connect => crate::bench_stages::connect_only(home).await,
    }
}

fn trivial_request() -> ExecutionRequest {
    ExecutionRequest::new(Language::Python, SCRIPT).label("bench.py")
}

async fn one_pipeline_run(client: airlock_client::Client) -> Result<(), String> {
    let submission = airlock_client::Submission {
        request: trivial_request(),
        request_id: None,
    };
    let result = async {
        client
            .submit(submission)
            .await?
            .result(Duration::from_secs(60), false)
            .await
    }
    .await
    .map_err(|e| e.to_string())?;
    if result.terminal.outcome == Outcome::Finished && result.terminal.stdout == b"hello\n" {
        Ok(())
    } else {
        Err(format!("unexpected result: {:?}", result.terminal))
    }
}

/// `airlock run --json` as a new process, as Mai's shell tools call it: start-up, connecting,
/// submitting, the result and its audit receipt.
async fn one_cli_run(home: std::path::PathBuf, script: std::path::PathBuf) -> Result<(), String> {
    one_cli_run_under(home, script, None).await.map(|_| ())
}

/// [`one_cli_run`], remembered in `recorder` (to split the slowest runs afterwards).
fn recorded_cli_run(home: std::path::PathBuf, script: std::path::PathBuf, recorder: Arc<Recorder>) -> RunOne {
    harness::run_one(move || {
        let (home, script, recorder) = (home.clone(), script.clone(), recorder.clone());
        async move {
            let spawned_unix_ms = crate::bench_slowest::unix_ms();
            let started = std::time::Instant::now();
            let request_id = one_cli_run_under(home, script, None).await?;
            recorder.record(Recorded {
                request_id,
                spawned_unix_ms,
                total_ms: started.elapsed().as_secs_f64() * 1000.0,
            });
            Ok(())
        }
    })
}

/// The origin a script is submitted as so that the default policy runs it under `runtime`.
fn origin_for(runtime: &str) -> &'static str {
    match runtime {
        "runsc" => "external",
        _ => "generated",
    }
}

/// One `airlock run` as a new process, with its receipt; with `runtime`, submitted as the origin
/// the default policy sends there, and the result must say it ran there. Returns the request id.
async fn one_cli_run_under(
    home: std::path::PathBuf,
    script: std::path::PathBuf,
    runtime: Option<&'static str>,
) -> Result<String, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut command = tokio::process::Command::new(exe);
    command.arg("--home").arg(&home).args(["run", "--json"]);
    if let Some(runtime) = runtime {
        command.args(["--origin", origin_for(runtime)]);
    }
    let output = command
        .arg(&script)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .map_err(|e| format!("airlock run: {e}"))?;
    let result: serde_json::Value =
        serde_json::from_slice(&output.stdout).map_err(|e| format!("airlock run printed no JSON ({e}): {output:?}"))?;
    if let Some(wanted) = runtime
        && result["runtime"] != wanted
    {
        return Err(format!(
            "asked to measure {wanted}, but the stack's policy ran this {} request under {} \
             (runsc needs [executor.runtimes] available = [\"runc\", \"runsc\"] and the default \
             [gate.policy.runtimes]): {result}",
            origin_for(wanted),
            result["runtime"]
        ));
    }
    let receipt = result["audit"].as_array().is_some_and(|a| !a.is_empty());
    if output.status.success()
        && result["stdout"] == "hello\n"
        && receipt
        && let Some(request_id) = result["request_id"].as_str()
    {
        Ok(request_id.to_owned())
    } else {
        Err(format!("unexpected airlock run result (receipt: {receipt}): {result}"))
    }
}

/// What one run's `observed` record says on a stack (its one-line summary, or that there was
/// none), so that a comparison says what it compared.
async fn kernel_record_of(home: &std::path::Path, script: &std::path::Path) -> anyhow::Result<String> {
    let output = tokio::process::Command::new(std::env::current_exe()?)
        .arg("--home")
        .arg(home)
        .args(["run", "--json"])
        .arg(script)
        .stdin(std::process::Stdio::null())
        .output()
        .await?;
    let result: serde_json::Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| anyhow::anyhow!("airlock --home {} run printed no JSON ({e})", home.display()))?;
    Ok(match &result["observed"] {
        serde_json::Value::Null => "none".to_owned(),
        observed => match observed["unavailable"].as_str() {
            Some(reason) => format!("unavailable: {reason}"),
            None => format!("kept ({} events, {} lost)", observed["events"], observed["events_lost"]),
        },
    })
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

/// A running helper process: one request line in, one answer line out (the llm-sandbox and
/// Python-client contenders, whose interpreter start-up is paid once, not per run).
struct LineHelper {
    what: &'static str,
    child: tokio::sync::Mutex<tokio::process::Child>,
    /// `None` once closed.
    io: tokio::sync::Mutex<
        Option<(
            tokio::process::ChildStdin,
            tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
        )>,
    >,
}

impl LineHelper {
    fn spawn(python: &str, script: &str, args: &[&str], what: &'static str) -> anyhow::Result<Arc<LineHelper>> {
        let mut child = tokio::process::Command::new(python)
            .args(["-c", script])
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| anyhow::anyhow!("starting {python} for {what}: {e}"))?;
        let stdin = child.stdin.take().ok_or_else(|| anyhow::anyhow!("no stdin"))?;
        let stdout = child.stdout.take().ok_or_else(|| anyhow::anyhow!("no stdout"))?;
        Ok(Arc::new(LineHelper {
            child: tokio::sync::Mutex::new(child),
            io: tokio::sync::Mutex::new(Some((stdin, tokio::io::BufReader::new(stdout).lines()))),
            what,
        }))
    }

    /// Sends one line, returns the answer line.
    async fn ask(&self, line: &str) -> Result<String, String> {
        let mut io = self.io.lock().await;
        let Some((stdin, lines)) = io.as_mut() else {
            return Err(format!("the {} helper is closed", self.what));
        };
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .map_err(|e| format!("{} helper: {e}", self.what))?;
        stdin.flush().await.map_err(|e| e.to_string())?;
        match lines.next_line().await.map_err(|e| e.to_string())? {
            Some(answer) => Ok(answer),
            None => Err(format!("the {} helper exited", self.what)),
        }
    }

    /// Reads the helper's first line, which says whether it is ready.
    async fn ready(&self) -> anyhow::Result<()> {
        let mut io = self.io.lock().await;
        let Some((_, lines)) = io.as_mut() else {
            anyhow::bail!("the {} helper is closed", self.what);
        };
        let line = lines.next_line().await?.unwrap_or_default();
        let ready: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
        if ready["ready"] != true {
            anyhow::bail!("the {} helper is not ready: {line}", self.what);
        }
        Ok(())
    }

    async fn run_llm_sandbox(&self, mode: &str) -> Result<(), String> {
        match self.ask(mode).await {
            Ok(line) if line == "ok" => Ok(()),
            Ok(line) => Err(line),
            Err(e) => Err(format!("{e} (is `llm-sandbox[docker]` importable by this python?)")),
        }
    }

    async fn run_python_client(&self) -> Result<(), String> {
        let line = self.ask("{}").await?;
        let answer: serde_json::Value = serde_json::from_str(&line).map_err(|e| format!("{e}: {line}"))?;
        if answer["ok"] == true && answer["receipt"] == true {
            Ok(())
        } else {
            Err(format!("the Python client: {line}"))
        }
    }

    /// Ends the helper by closing its input, so that it closes its reused session (removing
    /// that container) before it exits.
    async fn close(&self) {
        self.io.lock().await.take();
        let mut child = self.child.lock().await;
        if tokio::time::timeout(Duration::from_secs(30), child.wait())
            .await
            .is_err()
        {
            eprintln!(
                "the {} helper did not exit (for llm-sandbox, its reused container may be left running)",
                self.what
            );
        }
    }

    fn llm_sandbox(self: &Arc<Self>, mode: &'static str) -> RunOne {
        let helper = self.clone();
        harness::run_one(move || {
            let helper = helper.clone();
            async move { helper.run_llm_sandbox(mode).await }
        })
    }

    fn python_client(self: &Arc<Self>) -> RunOne {
        let helper = self.clone();
        harness::run_one(move || {
            let helper = helper.clone();
            async move { helper.run_python_client().await }
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
    let client = airlock_client::Client::connect(airlock_client::Connect {
        home: Some(home.root().to_owned()),
        ..Default::default()
    })
    .await?;
    let info = crate::stack::StackInfo::read(&home.stack())?.ok_or_else(|| anyhow::anyhow!("no stack.json"))?;
    let mut stack_pids: Vec<u32> = info.services.values().copied().collect();
    stack_pids.extend(info.nats_pid);

    let script = tempfile::Builder::new().suffix(".py").tempfile()?;
    std::fs::write(script.path(), SCRIPT)?;
    let recorder = Arc::new(Recorder::default());
    let cli = recorded_cli_run(home.root().to_owned(), script.path().to_owned(), recorder.clone());
    let in_process = {
        let client = client.clone();
        harness::run_one(move || one_pipeline_run(client.clone()))
    };
    let image = args.image.clone();
    // The user-facing modes first: the speed-ups reported are theirs.
    let mut contenders: Vec<(String, RunOne)> = vec![("airlock run, new process, with receipt".to_owned(), cli)];
    if let Some(other) = &args.compare_home {
        for (name, home) in [
            ("this stack", home.root()),
            (args.compare_label.as_str(), other.as_path()),
        ] {
            println!("{name}: kernel record {}", kernel_record_of(home, script.path()).await?);
        }
        let (other, script) = (other.clone(), script.path().to_owned());
        contenders.push((
            format!("airlock run, {}", args.compare_label),
            harness::run_one(move || one_cli_run(other.clone(), script.clone())),
        ));
    }
    for runtime in &args.runtime {
        let runtime: &'static str = if runtime == "runsc" { "runsc" } else { "runc" };
        let (home, script) = (home.root().to_owned(), script.path().to_owned());
        contenders.push((
            format!("airlock run, under {runtime} ({} code)", origin_for(runtime)),
            harness::run_one(move || {
                let (home, script) = (home.clone(), script.clone());
                async move { one_cli_run_under(home, script, Some(runtime)).await.map(|_| ()) }
            }),
        ));
    }
    let python_client = match &args.python_client {
        Some(python) => {
            let home = home.root().display().to_string();
            let helper = LineHelper::spawn(python, PYTHON_CLIENT_RUNNER, &["--home", &home], "Python client")?;
            helper.ready().await?;
            contenders.push((
                "Python client, one process, with receipt".to_owned(),
                helper.python_client(),
            ));
            Some(helper)
        }
        None => None,
    };
    let ours = contenders.len();
    let _neighbour = args.cpu_neighbour.then(Neighbour::start);
    if let Some(pause) = args.sequential_pause {
        let measured = harness::interleaved(&contenders, args.runs, 1, pause).await;
        if let Some(helper) = &python_client {
            helper.close().await;
        }
        let latencies = measured.map_err(|e| anyhow::anyhow!(e))?;
        let code = print_sequential(&latencies, &args, pause)?;
        if !args.json && args.slowest > 0 {
            recorder.print_slowest(home, args.slowest, "this stack").await?;
        }
        return Ok(code);
    }
    contenders.push(("Rust client in-process, no receipt".to_owned(), in_process.clone()));
    contenders.push((
        "docker run --rm -i".to_owned(),
        harness::run_one(move || one_docker_run(image.clone())),
    ));
    let llm_sandbox = match args.llm_sandbox {
        true => Some(LineHelper::spawn(
            &args.python,
            LLM_SANDBOX_RUNNER,
            &[&args.image],
            "llm-sandbox",
        )?),
        false => None,
    };
    if let Some(helper) = &llm_sandbox {
        contenders.push(("llm-sandbox, fresh session".to_owned(), helper.llm_sandbox("fresh")));
        contenders.push(("llm-sandbox, reused session".to_owned(), helper.llm_sandbox("reused")));
    }
    // Round-robin, so drift on a noisy machine hits every contender alike.
    let measured = harness::interleaved(&contenders, args.runs, 1, args.settle).await;
    for helper in llm_sandbox.iter().chain(python_client.iter()) {
        helper.close().await;
    }
    let latencies = measured.map_err(|e| anyhow::anyhow!(e))?;
    let baselines = &latencies[ours + 1..];
    let speedups = |l: &harness::Latency| -> Vec<serde_json::Value> {
        baselines
            .iter()
            .map(|(name, b)| {
                serde_json::json!({
                    "against": name,
                    "p50": b.p50_ms / l.p50_ms,
                    "p90": b.p90_ms / l.p90_ms,
                    "p99": b.p99_ms / l.p99_ms,
                })
            })
            .collect()
    };
    let modes: Vec<serde_json::Value> = latencies[..ours]
        .iter()
        .map(|(name, l)| serde_json::json!({"name": name, "latency": l, "speedup": speedups(l)}))
        .collect();

    let mut throughput = serde_json::Value::Null;
    let mut printed_throughput = None;
    if args.concurrency > 0 {
        let cpu_before = cpu_seconds(&stack_pids);
        let machine_before = machine_cpu_seconds();
        let measured = harness::throughput(in_process, args.concurrency, args.per_submitter)
            .await
            .map_err(|e| anyhow::anyhow!(e))?;
        let pipeline_cpu = cpu_seconds(&stack_pids) - cpu_before;
        let machine_cpu = machine_cpu_seconds() - machine_before;
        let share = if machine_cpu > 0.0 {
            pipeline_cpu / machine_cpu
        } else {
            f64::NAN
        };
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
        "modes": modes,
        "contenders": latencies.iter().map(|(name, l)| serde_json::json!({"name": name, "latency": l})).collect::<Vec<_>>(),
        "throughput": throughput,
    });
    if args.json {
        println!("{report}");
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "trivial script, submit to final result, {} runs each (interleaved):",
        args.runs
    );
    for (name, l) in &latencies {
        println!(
            "  {name:<42} p50 {:7.1} ms  p90 {:7.1} ms  p99 {:7.1} ms",
            l.p50_ms, l.p90_ms, l.p99_ms
        );
    }
    for (name, l) in &latencies[..ours] {
        for (base, b) in baselines {
            println!(
                "  {name} vs {base}: {:.1}x faster at p50, {:.1}x at p90, {:.1}x at p99",
                b.p50_ms / l.p50_ms,
                b.p90_ms / l.p90_ms,
                b.p99_ms / l.p99_ms
            );
        }
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

fn print_sequential(
    latencies: &[(String, harness::Latency)],
    args: &PipelineArgs,
    pause: std::time::Duration,
) -> anyhow::Result<ExitCode> {
    if args.json {
        let report = serde_json::json!({
            "script": SCRIPT.trim(),
            "runs": args.runs,
            "sequential_pause_ms": pause.as_millis() as u64,
            "cpu_neighbour": args.cpu_neighbour,
            "contenders": latencies.iter().map(|(name, l)| serde_json::json!({"name": name, "latency": l})).collect::<Vec<_>>(),
        });
        println!("{report}");
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "trivial script, one at a time with {} before each, {} runs{}:",
        humantime::format_duration(pause),
        args.runs,
        if args.cpu_neighbour { ", one core kept busy" } else { "" }
    );
    for (name, l) in latencies {
        println!(
            "  {name:<42} p50 {:7.1} ms  p90 {:7.1} ms  p99 {:7.1} ms  max {:7.1} ms",
            l.p50_ms, l.p90_ms, l.p99_ms, l.max_ms
        );
    }
    if args.compare_home.is_some()
        && let [(_, this), (_, other), ..] = latencies
    {
        println!(
            "  this stack minus {}: p50 {:+.1} ms ({:+.1}%), p90 {:+.1} ms",
            args.compare_label,
            this.p50_ms - other.p50_ms,
            (this.p50_ms - other.p50_ms) / other.p50_ms * 100.0,
            this.p90_ms - other.p90_ms
        );
    }
    Ok(ExitCode::SUCCESS)
}
