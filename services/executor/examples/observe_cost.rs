//! What kernel observation costs a run, through the sandbox API (no bus, gate or audit log):
//! `cargo run --release -p airlock-executor --example observe_cost [runs]` (as root).
//!
//! Two sandboxes in one process, one with `[executor.observe] enabled = false`, take turns
//! (round-robin, so drift hits both alike) running a trivial Python program from the warm pool;
//! then a syscall-heavy one (100,000 file opens) once under each, with the kernel record's event
//! count and events lost.
use airlock_executor::{Job, Sandbox, SandboxConfig, SandboxEvent};
use airlock_protocol::{Inputs, Language, Observed, Runtime};
use std::time::{Duration, Instant};

const TRIVIAL: &str = "print('hi')";
const OPENS: &str = "for _ in range(100_000):\n    open('/etc/hostname').close()\n";

async fn sandbox(instance: &str, observe: bool) -> anyhow::Result<Sandbox> {
    let mut config = SandboxConfig {
        instance: instance.into(),
        ..Default::default()
    };
    config.observe.enabled = observe;
    config.pool.max_total = 4;
    Ok(Sandbox::start(config).await?)
}

/// One run: its time from the job to the report, and the kernel's record.
async fn run(sandbox: &Sandbox, id: String, code: &str) -> anyhow::Result<(f64, Option<Observed>)> {
    sandbox.wait_warm(Duration::from_secs(60)).await;
    let mut limits = sandbox.config().quotas.untrusted;
    limits.wall_ms = 60_000;
    limits.cpu_millis = 60_000;
    let job = Job {
        request_id: id,
        language: Language::Python,
        code: code.as_bytes().to_vec(),
        inputs: Inputs::default(),
        packages: vec![],
        limits,
        runtime: Runtime::Runc,
        network: airlock_protocol::NetworkMode::None,
        read_only_hosts: vec![],
        attempt: 1,
    };
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let collect = tokio::spawn(async move {
        let mut observed = None;
        while let Some(event) = rx.recv().await {
            if let SandboxEvent::Observed(record) = event {
                observed = Some(*record);
            }
        }
        observed
    });
    let started = Instant::now();
    let report = sandbox.run(job, tx).await?;
    let elapsed = started.elapsed().as_secs_f64() * 1000.0;
    anyhow::ensure!(report.exit_code == Some(0), "the run failed: {report:?}");
    Ok((elapsed, collect.await?))
}

fn percentile(sorted: &[f64], p: usize) -> f64 {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let runs: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(30);
    let on = sandbox("bench-observe-on", true).await?;
    let off = sandbox("bench-observe-off", false).await?;
    anyhow::ensure!(
        on.observation_unavailable().is_none(),
        "observation is unavailable: {:?}",
        on.observation_unavailable()
    );
    let (mut times_on, mut times_off) = (Vec::new(), Vec::new());
    for i in 0..=runs {
        let (t_on, record) = run(&on, format!("on{i}"), TRIVIAL).await?;
        let (t_off, _) = run(&off, format!("off{i}"), TRIVIAL).await?;
        if i == 0 {
            continue; // warm-up
        }
        if let Some(record) = record {
            anyhow::ensure!(record.unavailable.is_none(), "not observed: {:?}", record.unavailable);
        }
        times_on.push(t_on);
        times_off.push(t_off);
    }
    for (name, times) in [("observation on ", &mut times_on), ("observation off", &mut times_off)] {
        times.sort_by(f64::total_cmp);
        println!(
            "{name}: trivial warm run p50 {:.1} ms, p90 {:.1} ms ({} runs)",
            percentile(times, 50),
            percentile(times, 90),
            times.len()
        );
    }
    let (heavy_on, record) = run(&on, "heavy-on".into(), OPENS).await?;
    let (heavy_off, _) = run(&off, "heavy-off".into(), OPENS).await?;
    let record = record.ok_or_else(|| anyhow::anyhow!("no record of the heavy run"))?;
    println!(
        "100,000 opens: {heavy_on:.0} ms observed ({} events, {} lost, {} file entries), {heavy_off:.0} ms not observed",
        record.events,
        record.events_lost,
        record.files.len()
    );
    on.shutdown().await;
    off.shutdown().await;
    Ok(())
}
