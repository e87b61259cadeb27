//! The compose topology, without compose, on every change: a three-node NATS JetStream cluster
//! (one network namespace per node, TLS, every stream and bucket at three replicas), SeaweedFS
//! as the audit store, two assessors, the gate, an auditor and its standby, and two executors
//! sharing this machine's Docker engine. Under a bounded load it loses a NATS node (kill -9),
//! then an executor mid-run, then the active auditor, then a node is cut off from the others and
//! let back. After each: every request ends in exactly one terminal event, none runs twice (a
//! fresh token printed by each run of the program), no container is left, the audit log on S3
//! verifies and holds each event once.
//!
//! `tests/cluster/soak` runs the same disruptions for longer (the `soak` test); the scale
//! figures of `docs/benchmarks.md` come from `tests/cluster/bench` (the `executor_scale` test).
//! Both are ignored in an ordinary run: they are not tests that CI counts.

mod bench;
mod checks;
mod deployment;
mod load;
mod netns;

use deployment::{Deployment, Options};
use load::Load;
use std::time::Duration;

/// How much load each disruption runs under.
#[derive(Clone, Copy, Debug)]
struct Scale {
    /// Requests per disruption.
    requests: usize,
    submitters: usize,
    /// How long each run's program works, so that runs are in progress when things die.
    run_ms: u64,
    /// How many times the four disruptions are repeated.
    rounds: usize,
}

/// What CI runs on two cores: a few minutes.
const CI: Scale = Scale {
    requests: 48,
    submitters: 8,
    run_ms: 500,
    rounds: 1,
};

const SOAK: Scale = Scale {
    requests: 300,
    submitters: 8,
    run_ms: 500,
    rounds: 3,
};

fn scaled(default: Scale) -> Scale {
    let var = |name: &str, value: usize| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(value);
    Scale {
        requests: var("AIRLOCK_CLUSTER_REQUESTS", default.requests),
        submitters: var("AIRLOCK_CLUSTER_SUBMITTERS", default.submitters),
        run_ms: default.run_ms,
        rounds: var("AIRLOCK_CLUSTER_ROUNDS", default.rounds),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cluster_ends_every_request_once_through_node_executor_and_auditor_loss_and_a_partition() {
    chaos(scaled(CI)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "soak run outside CI: tests/cluster/soak"]
async fn soak() {
    chaos(scaled(SOAK)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "benchmark outside CI: tests/cluster/bench"]
async fn executor_scale() {
    bench::executor_scale().await;
}

async fn chaos(scale: Scale) {
    eprintln!("cluster chaos: {scale:?}");
    let deployment = Deployment::start(Options {
        executors: 2,
        executor_concurrency: 2,
        extra_config: String::new(),
    })
    .await;
    let instances = deployment.executor_instances();
    let status = deployment.status();
    for stream in status["streams"].as_array().expect("streams in status") {
        assert_eq!(stream["replicas"], 3, "{stream}");
        assert_eq!(stream["health"], "healthy", "{stream}");
    }
    // `AIRLOCK_CLUSTER_PHASES=partition,node` runs only those disruptions (to chase one).
    let phases = std::env::var("AIRLOCK_CLUSTER_PHASES").unwrap_or_default();
    let wanted = |phase: &str| phases.is_empty() || phases.split(',').any(|p| p.trim() == phase);
    for round in 1..=scale.rounds {
        eprintln!("round {round} of {}", scale.rounds);
        if wanted("node") {
            node_loss(&deployment, scale).await;
        }
        if wanted("executor") {
            executor_loss(&deployment, scale).await;
        }
        if wanted("auditor") {
            auditor_loss(&deployment, scale).await;
        }
        if wanted("partition") {
            partition(&deployment, scale).await;
        }
    }
    // Stopped in order, the executors leave nothing on the engine: not even warm containers.
    for name in ["executor-1", "executor-2"] {
        deployment.stop(name, Duration::from_secs(60));
    }
    let left = checks::containers(&instances);
    assert!(left.is_empty(), "containers left after the executors stopped: {left:?}");
    eprintln!(
        "processes that exited by themselves (and were started again): {:?}",
        deployment.exits()
    );
}

/// Starts a load of `scale.requests` and returns once a quarter of it is submitted: the
/// moment to disrupt.
async fn begin(deployment: &Deployment, scale: Scale, what: &str) -> Load {
    let load = Load::start(
        deployment,
        scale.requests,
        scale.submitters,
        load::program(scale.run_ms),
    )
    .await;
    while load.submitted().await < scale.requests / 4 {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!("{what}: disrupting after {} submissions", load.submitted().await);
    load
}

/// Lets the load finish, then checks everything; `gone` are containers that must have been
/// removed meanwhile.
async fn end(deployment: &Deployment, load: Load, what: &str, gone: &[String]) -> checks::Summary {
    let rids = load.finish().await;
    // An executor's run that died with it ends once the run is judged gone: at the latest the
    // executor lease (60 s) plus a redelivery after it.
    let summary = checks::every_request_ended_once(deployment, &rids, Duration::from_secs(180)).await;
    eprintln!(
        "{what}: {} requests, outcomes {:?}, interrupted and run again {}",
        rids.len(),
        summary.outcomes,
        summary.run_again
    );
    checks::audit_log_holds_each_event_once(deployment, &rids, Duration::from_secs(120)).await;
    checks::no_container_left(&deployment.executor_instances(), gone, Duration::from_secs(60)).await;
    summary
}

/// The events stream's leader, as a node index.
fn events_leader(deployment: &Deployment) -> usize {
    let status = deployment.status();
    let leader = status["streams"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["name"] == "AIRLOCK"))
        .and_then(|s| s["leader"].as_str())
        .map(str::to_owned)
        .expect("the events stream has a leader");
    leader
        .strip_prefix("nats-")
        .and_then(|n| n.parse::<usize>().ok())
        .map(|n| n - 1)
        .expect("a node name")
}

/// Waits until every stream and bucket has a leader and all replicas current again.
async fn wait_healthy(deployment: &Deployment, limit: Duration) {
    let start = std::time::Instant::now();
    loop {
        let status = deployment.status();
        let streams = status["streams"].as_array().cloned().unwrap_or_default();
        let unhealthy: Vec<String> = streams
            .iter()
            .filter(|s| s["health"] != "healthy")
            .map(|s| format!("{} {}", s["name"], s["health"]))
            .collect();
        if !streams.is_empty() && unhealthy.is_empty() {
            return;
        }
        assert!(
            start.elapsed() < limit,
            "the cluster is not healthy again after {limit:?}: {unhealthy:?}\n{}",
            deployment.diagnostics()
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

async fn node_loss(d: &Deployment, scale: Scale) {
    let load = begin(d, scale, "node loss").await;
    let leader = events_leader(d);
    let name = format!("nats-{}", leader + 1);
    eprintln!("kill -9 {name} (the events stream's leader)");
    d.kill9(&name);
    tokio::time::sleep(Duration::from_secs(5)).await;
    d.restart(&name);
    end(d, load, "node loss", &[]).await;
    wait_healthy(d, Duration::from_secs(120)).await;
}

async fn executor_loss(d: &Deployment, scale: Scale) {
    let victim = "executor-2";
    let instance = format!("{}-{victim}", d.instance_prefix);
    let load = begin(d, scale, "executor loss").await;
    {
        // Mid-run: as soon as one of its containers starts a program.
        let admin = d.connect("admin").await;
        let mut started = admin.subscribe("airlock.exec.started.>").await.expect("subscribe");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        loop {
            use futures::StreamExt as _;
            let message = tokio::time::timeout_at(deadline, started.next())
                .await
                .unwrap_or_else(|_| panic!("{victim} started no run:\n{}", d.diagnostics()))
                .expect("subscription");
            let Ok(envelope) = airlock_protocol::Envelope::decode_on(message.subject.as_str(), &message.payload) else {
                continue;
            };
            let airlock_protocol::Event::ExecStarted(exec) = envelope.event else {
                continue;
            };
            let label = std::process::Command::new("docker")
                .args([
                    "inspect",
                    "-f",
                    "{{index .Config.Labels \"airlock.executor\"}}",
                    &exec.container,
                ])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
                .unwrap_or_default();
            if label == instance {
                break;
            }
        }
        let before: Vec<String> = checks::containers(std::slice::from_ref(&instance))
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        eprintln!("kill -9 {victim} mid-run ({} containers of it)", before.len());
        d.kill9(victim);
        tokio::time::sleep(Duration::from_secs(3)).await;
        // Its supervisor starts it again; the new life removes what the old one left.
        d.restart(victim);
        assert!(!before.is_empty(), "the killed executor had no container");
        let summary = end(d, load, "executor loss", &before).await;
        // It was killed mid-run: that run was interrupted and run again, to its end.
        assert!(
            summary.run_again >= 1,
            "no request was run again after the executor's loss"
        );
    }
}

async fn auditor_loss(d: &Deployment, scale: Scale) {
    let load = begin(d, scale, "auditor loss").await;
    {
        let active = d.active_auditor().await.expect("an auditor holds the log");
        eprintln!("kill -9 {active} (holds the audit log's lease)");
        d.kill9(&active);
        // The standby takes over once the lease runs out.
        let start = std::time::Instant::now();
        loop {
            if let Some(now) = d.active_auditor().await
                && now != active
            {
                eprintln!("{now} took over after {:?}", start.elapsed());
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the standby auditor did not take over:\n{}",
                d.diagnostics()
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        d.restart(&active);
    }
    end(d, load, "auditor loss", &[]).await;
}

async fn partition(d: &Deployment, scale: Scale) {
    let load = begin(d, scale, "partition").await;
    {
        let cut = events_leader(d);
        eprintln!("cutting nats-{} off the other nodes", cut + 1);
        d.network.partition(cut);
        tokio::time::sleep(Duration::from_secs(15)).await;
        let status = d.status();
        eprintln!(
            "during the partition: {}",
            status["streams"]
                .as_array()
                .map(|s| s
                    .iter()
                    .map(|s| format!("{}={}@{}", s["name"], s["health"], s["leader"]))
                    .collect::<Vec<_>>()
                    .join(" "))
                .unwrap_or_default()
        );
        d.network.heal(cut);
        eprintln!("healed");
    }
    end(d, load, "partition", &[]).await;
    wait_healthy(d, Duration::from_secs(120)).await;
}
