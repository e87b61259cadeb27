//! Latency of a trivial Python run from the warm pool under runc and under runsc, through the
//! sandbox API (no bus, gate or audit log): `cargo run -p airlock-executor --example runtime_latency`.
//! Needs runsc registered with the engine (`ops/install-deps`). `AIRLOCK_BENCH_OBSERVE=0` turns
//! the kernel's record off (eBPF under runc, gVisor's trace session under runsc), to measure
//! what it costs; `AIRLOCK_BENCH_CODE` replaces the trivial program, `AIRLOCK_BENCH_RUNS` the
//! 15 runs per round.
use airlock_executor::{Job, Sandbox, SandboxConfig};
use airlock_protocol::{Inputs, Language, Runtime};
use std::time::{Duration, Instant};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let mut cfg = SandboxConfig {
        instance: "bench-runtimes".into(),
        ..Default::default()
    };
    cfg.runtimes.available = vec![Runtime::Runc, Runtime::Runsc];
    cfg.pool.max_total = 8;
    cfg.observe.enabled = std::env::var("AIRLOCK_BENCH_OBSERVE").map_or(true, |v| v != "0");
    println!("observation {}", if cfg.observe.enabled { "on" } else { "off" });
    let code = std::env::var("AIRLOCK_BENCH_CODE").unwrap_or_else(|_| "print('hi')".into());
    let runs: usize = std::env::var("AIRLOCK_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(15);
    let sandbox = Sandbox::start(cfg).await?;
    for runtime in [Runtime::Runc, Runtime::Runsc, Runtime::Runc, Runtime::Runsc] {
        let mut times = Vec::new();
        for i in 0..runs {
            sandbox.wait_warm(Duration::from_secs(60)).await;
            let job = Job {
                request_id: format!("b{i}"),
                language: Language::Python,
                code: code.as_bytes().to_vec(),
                inputs: Inputs::default(),
                packages: vec![],
                limits: sandbox.config().quotas.untrusted,
                runtime,
                network: airlock_protocol::NetworkMode::None,
                read_only_hosts: vec![],
                attempt: 1,
            };
            let (tx, mut rx) = tokio::sync::mpsc::channel(64);
            let drain = tokio::spawn(async move { while rx.recv().await.is_some() {} });
            let t = Instant::now();
            let report = sandbox.run(job, tx).await?;
            times.push(t.elapsed().as_secs_f64() * 1000.0);
            drain.await?;
            assert_eq!(report.exit_code, Some(0));
        }
        times.sort_by(|a, b| a.total_cmp(b));
        println!(
            "{} warm trivial run: p50 {:.0} ms p90 {:.0} ms",
            runtime.as_str(),
            times[times.len() / 2],
            times[times.len() * 9 / 10]
        );
    }
    sandbox.shutdown().await;
    Ok(())
}
