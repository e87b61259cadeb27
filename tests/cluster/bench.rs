//! Scale figures (a benchmark, never a test of speed): executions per second of a trivial
//! script through the whole clustered pipeline with 1, 2 and 3 executors on this machine, and
//! where the CPU went meanwhile (each of Airlock's processes, the NATS nodes, the Docker engine,
//! and the rest: containers, their runtime, anything else on the machine), to tell where the
//! bottleneck is. `tests/cluster/bench` runs it; `docs/benchmarks.md` has the figures.

use crate::deployment::{Deployment, Options};
use crate::load::Load;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const PROGRAM: &str = "print('hello')\n";

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Busy and total CPU ticks of the whole machine.
fn machine_ticks() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let fields: Vec<u64> = stat
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    let total: u64 = fields.iter().sum();
    // idle + iowait
    let idle = fields.get(3).copied().unwrap_or(0) + fields.get(4).copied().unwrap_or(0);
    (total - idle, total)
}

/// utime + stime of a process, in ticks.
fn process_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The command name is in parentheses and may hold spaces: count from after it.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let num = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    // After ")": state is field 0; utime is field 11, stime 12.
    num(11) + num(12)
}

/// Pids of processes whose command name is `name`.
fn pids_named(name: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|p| p.parse::<u32>().ok()) else {
                continue;
            };
            if std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == name) {
                pids.push(pid);
            }
        }
    }
    pids
}

/// The long-lived processes to account for, grouped.
fn groups(deployment: &Deployment) -> BTreeMap<String, Vec<u32>> {
    let mut groups: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for (name, pid) in deployment.pids() {
        let group = if name.starts_with("nats-") {
            "nats-server".to_owned()
        } else {
            format!(
                "airlock {}",
                name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '-')
            )
        };
        groups.entry(group).or_default().push(pid);
    }
    groups.insert("dockerd".into(), pids_named("dockerd"));
    groups.insert("containerd".into(), pids_named("containerd"));
    groups
}

fn sample(groups: &BTreeMap<String, Vec<u32>>) -> BTreeMap<String, u64> {
    groups
        .iter()
        .map(|(name, pids)| (name.clone(), pids.iter().map(|p| process_ticks(*p)).sum()))
        .collect()
}

/// Runs `requests` trivial requests; returns executions per second and the CPU report.
async fn measure(deployment: &Deployment, requests: usize, submitters: usize) -> (f64, String) {
    let groups = groups(deployment);
    let before = sample(&groups);
    let (busy0, total0) = machine_ticks();
    let start = Instant::now();
    let load = Load::start(deployment, requests, submitters, PROGRAM.to_owned()).await;
    let rids = load.finish().await;
    let elapsed = start.elapsed();
    let (busy1, total1) = machine_ticks();
    let after = sample(&groups);
    assert_eq!(rids.len(), requests);
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) as f64;
    let busy = (busy1 - busy0) as f64;
    let total = (total1 - total0).max(1) as f64;
    let mut report = format!(
        "machine busy {:.0}% of {cores} cores ({:.2} core-seconds)",
        100.0 * busy / total,
        busy / 100.0
    );
    let mut accounted = 0.0;
    for (name, ticks) in &after {
        let used = ticks.saturating_sub(before.get(name).copied().unwrap_or(0)) as f64;
        accounted += used;
        report.push_str(&format!(
            "\n    {name:<20} {:>5.1}% of busy",
            100.0 * used / busy.max(1.0)
        ));
    }
    report.push_str(&format!(
        "\n    {:<20} {:>5.1}% of busy",
        "the rest (containers, runc, shims, other)",
        100.0 * (busy - accounted).max(0.0) / busy.max(1.0)
    ));
    (requests as f64 / elapsed.as_secs_f64(), report)
}

pub async fn executor_scale() {
    let requests = env("AIRLOCK_BENCH_REQUESTS", 200);
    let submitters = env("AIRLOCK_BENCH_SUBMITTERS", 16);
    let concurrency = env("AIRLOCK_BENCH_CONCURRENCY", 2);
    let deployment = Deployment::start(Options {
        executors: 3,
        executor_concurrency: concurrency,
        extra_config: String::new(),
    })
    .await;
    for name in ["executor-2", "executor-3"] {
        deployment.stop(name, Duration::from_secs(30));
    }
    let mut results = Vec::new();
    for executors in 1..=3 {
        if executors > 1 {
            deployment.restart(&format!("executor-{executors}"));
            let start = Instant::now();
            while deployment.status()["services"]["airlock-executor"]
                .as_array()
                .map_or(0, |a| a.len())
                < executors
            {
                assert!(
                    start.elapsed() < Duration::from_secs(60),
                    "executor-{executors} does not answer"
                );
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
        // Warm-up: pools filled, connections made.
        let _ = measure(&deployment, 20, submitters).await;
        let (rate, report) = measure(&deployment, requests, submitters).await;
        println!(
            "{executors} executor(s): {rate:.1} executions/s over {requests} requests, {submitters} submitters\n    {report}"
        );
        results.push((executors, rate));
    }
    println!("summary: {results:?}");
}
