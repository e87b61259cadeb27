//! Shared by the Docker tests: a uniquely named sandbox instance per test (so tests run
//! concurrently and clean up only their own containers), loud failures when Docker or the image
//! is missing, and a leak check by label that also runs when a test panics.
#![allow(dead_code)]

use airlock_executor::docker::LABEL_EXECUTOR;
use airlock_executor::{Job, RunReport, Sandbox, SandboxConfig, SandboxError, SandboxEvent};
use airlock_protocol::{Inputs, Language, Limits};
use std::process::Command;

/// A config whose instance name is unique to this test run.
pub fn config(test: &str) -> SandboxConfig {
    let mut config = SandboxConfig::default();
    let random = uuid::Uuid::now_v7().simple().to_string();
    config.instance = format!("t-{test}-{}", &random[random.len() - 8..]);
    config.pool.min_idle = 1;
    config.pool.max_idle = 2;
    config.pool.max_total = 4;
    config
}

/// Starts the sandbox; a missing engine or image fails the test with the fix in the message.
/// `RUST_LOG` shows the sandbox's logs.
pub async fn start(config: SandboxConfig) -> (Sandbox, Leaks) {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let leaks = Leaks {
        instance: config.instance.clone(),
    };
    match Sandbox::start(config).await {
        Ok(sandbox) => (sandbox, leaks),
        Err(error @ SandboxError::DockerUnreachable { .. }) => {
            panic!("DOCKER IS REQUIRED: {error}. Start the engine (ops/install-deps does it); these tests never skip.")
        }
        Err(error @ SandboxError::ImageMissing { .. }) => panic!(
            "THE SANDBOX IMAGE IS REQUIRED: {error}. Build it with `airlock image build` or \
             `cargo test -p airlock-executor --test image`; these tests never skip."
        ),
        Err(other) => panic!("the sandbox did not start: {other}"),
    }
}

pub fn job(language: Language, code: &str, limits: Limits) -> Job {
    Job {
        request_id: format!("req-{}", uuid::Uuid::now_v7().simple()),
        language,
        code: code.as_bytes().to_vec(),
        inputs: Inputs::default(),
        packages: vec![],
        limits,
        runtime: airlock_protocol::Runtime::Runc,
        network: airlock_protocol::NetworkMode::None,
        read_only_hosts: vec![],
        attempt: 1,
    }
}

/// Runs a job, collecting its events.
pub async fn run(sandbox: &Sandbox, job: Job) -> (Result<RunReport, SandboxError>, Vec<SandboxEvent>) {
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let collector = tokio::spawn(async move {
        let mut events = Vec::new();
        while let Some(event) = rx.recv().await {
            events.push(event);
        }
        events
    });
    let result = sandbox.run(job, tx).await;
    let events = collector.await.expect("collector");
    (result, events)
}

pub async fn run_ok(sandbox: &Sandbox, job: Job) -> (RunReport, Vec<SandboxEvent>) {
    let (result, events) = run(sandbox, job).await;
    (result.expect("the run failed"), events)
}

pub fn started(events: &[SandboxEvent]) -> &airlock_protocol::ExecStarted {
    events
        .iter()
        .find_map(|e| match e {
            SandboxEvent::Started(s) => Some(s),
            _ => None,
        })
        .expect("a Started event")
}

/// Two busy processes for `seconds` of wall time: more CPU than a half-core quota allows.
pub fn two_busy_processes(seconds: u32) -> String {
    format!("for i in 1 2; do ( end=$((SECONDS+{seconds})); while [ $SECONDS -lt $end ]; do :; done ) & done; wait")
}

/// Fails unless the engine held a run of [`two_busy_processes`] to `cpu_millis` (with a fifth
/// of slack for sampling) and the program did run: at least [`RAN_CPU_MS`] of CPU, which a
/// program that never started cannot show. (The floor was a quarter of the wall time until a
/// CI run on a host loaded past 8 gave the two busy loops 384 ms in 1,952 ms: how much CPU a
/// neighbourless host gives is a benchmark's question, not this test's.)
pub fn assert_cpu_capped(usage: &airlock_protocol::Usage, cpu_millis: u64) {
    let allowed = usage.wall_ms * cpu_millis / 1000 + usage.wall_ms / 5 + 100;
    assert!(
        usage.cpu_ms <= allowed,
        "cpu {} ms in {} ms of wall at {cpu_millis} millicores",
        usage.cpu_ms,
        usage.wall_ms
    );
    assert!(usage.cpu_ms >= RAN_CPU_MS, "the program did run: {usage:?}");
}

/// CPU time that shows a busy program ran.
const RAN_CPU_MS: u64 = 100;

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn docker_ids(kind: &str, instance: &str) -> Vec<String> {
    let mut args = vec![kind.to_owned()];
    if kind == "ps" {
        args.push("-a".to_owned());
    } else {
        args.push("ls".to_owned());
    }
    args.extend([
        "-q".to_owned(),
        "--filter".to_owned(),
        format!("label={LABEL_EXECUTOR}={instance}"),
    ]);
    let out = Command::new("docker").args(&args).output().expect("the docker CLI");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .filter(|l| !l.is_empty())
        .collect()
}

/// What a test instance left behind; removed on drop (even after a panic).
pub struct Leaks {
    pub instance: String,
}

impl Leaks {
    /// Containers and networks still labelled with this instance.
    pub fn left(&self) -> (Vec<String>, Vec<String>) {
        (docker_ids("ps", &self.instance), docker_ids("network", &self.instance))
    }

    /// Fails when anything of this instance is left.
    pub fn assert_none(&self) {
        let (containers, networks) = self.left();
        assert!(
            containers.is_empty() && networks.is_empty(),
            "leaked: containers {containers:?}, networks {networks:?}"
        );
    }
}

impl Drop for Leaks {
    fn drop(&mut self) {
        let (containers, networks) = self.left();
        if !containers.is_empty() {
            let _ = Command::new("docker")
                .args(["rm", "-f", "-v"])
                .args(&containers)
                .output();
        }
        if !networks.is_empty() {
            let _ = Command::new("docker").args(["network", "rm"]).args(&networks).output();
        }
    }
}
