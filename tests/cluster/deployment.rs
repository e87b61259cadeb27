//! The compose topology without compose: three nats-server nodes, each in its own network
//! namespace, in one JetStream cluster with TLS and the configuration `airlock init --cluster`
//! writes; SeaweedFS as the audit store; and every service as its own `airlock serve` process
//! (two assessors, the gate, two auditors, several executors, each executor its own instance on
//! this machine's Docker engine).
//!
//! Like systemd or Docker's restart policy on real hosts, a supervisor starts again any process
//! that exits by itself; one the test kills stays down until the test starts it again. Every
//! restart the supervisor makes is counted and printed: a service that exits is worth knowing
//! about even when the deployment recovers.

use crate::netns::Network;
use airlock_auditlog::testing::SeaweedFs;
use airlock_tests::airlock_bin;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

pub const NODES: usize = 3;

/// One process of the deployment, which the test may kill and start again.
pub struct Proc {
    pub name: String,
    command: Vec<String>,
    /// The namespace (node index) it runs in, if not this machine's.
    node: Option<usize>,
    child: Option<Child>,
    log: PathBuf,
    /// When its current life began.
    pub started: SystemTime,
    /// Whether it should be running: the supervisor starts it again if it exits.
    wanted: bool,
    /// Exits the supervisor saw (and restarted it after).
    pub exits: usize,
}

impl Proc {
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// SIGKILL, and reaped; it stays down until started again.
    pub fn kill9(&mut self) {
        self.wanted = false;
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERM, then SIGKILL after `grace`; it stays down until started again.
    pub fn stop(&mut self, grace: Duration) {
        self.wanted = false;
        if let Some(mut child) = self.child.take() {
            unsafe {
                libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
            }
            let start = Instant::now();
            while start.elapsed() < grace {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn spawn(&mut self, network: &Network) {
        assert!(self.child.is_none(), "{} is already running", self.name);
        self.wanted = true;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("log file");
        let program = PathBuf::from(&self.command[0]);
        let mut command = match self.node {
            Some(i) => network.command(i, &program),
            None => Command::new(&program),
        };
        command
            .args(&self.command[1..])
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log);
        self.child = Some(
            command
                .spawn()
                .unwrap_or_else(|e| panic!("starting {} ({e})", self.name)),
        );
        self.started = SystemTime::now();
    }

    /// Starts it again if it should run and has exited by itself.
    fn supervise(&mut self, network: &Network) {
        if !self.wanted {
            return;
        }
        let exited = match self.child.as_mut().map(|c| c.try_wait()) {
            Some(Ok(Some(status))) => Some(status),
            _ => None,
        };
        if let Some(status) = exited {
            eprintln!("supervisor: {} exited ({status}); starting it again", self.name);
            self.exits += 1;
            self.child = None;
            self.spawn(network);
        }
    }

    fn tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(lines).collect();
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    }
}

/// A real binary on PATH (a pyenv shim is a script: killing it would not kill the server).
pub fn real_binary(name: &str) -> PathBuf {
    let is_elf = |p: &Path| std::fs::read(p).map(|b| b.starts_with(b"\x7fELF")).unwrap_or(false);
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let candidate = dir.join(name);
        if is_elf(&candidate) {
            return candidate;
        }
    }
    if let Ok(output) = Command::new("pyenv").args(["which", name]).output() {
        let found = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
        if is_elf(&found) {
            return found;
        }
    }
    panic!("no {name} binary on PATH: run ops/install-deps");
}

pub struct Options {
    pub executors: usize,
    /// Jobs each executor runs at once.
    pub executor_concurrency: usize,
    /// Extra TOML merged into the deployment's airlock.toml.
    pub extra_config: String,
}

pub struct Deployment {
    pub network: Arc<Network>,
    pub home: tempfile::TempDir,
    pub s3: SeaweedFs,
    /// The nodes first (`nats-1`, ...), then the services in start order.
    procs: Arc<Mutex<Vec<Proc>>>,
    supervising: Arc<AtomicBool>,
    /// Distinguishes this run's executor instances from every other stack on the engine.
    pub instance_prefix: String,
}

impl Deployment {
    pub async fn start(options: Options) -> Deployment {
        let home = tempfile::Builder::new()
            .prefix("airlock-cluster-")
            .tempdir()
            .expect("temporary home");
        let s3 = SeaweedFs::start("airlock-audit").await;
        let network = Arc::new(Network::create(NODES));
        let nodes_arg: Vec<String> = (0..NODES)
            .map(|i| format!("nats-{}={}", i + 1, network.address(i)))
            .collect();
        let init = Command::new(airlock_bin())
            .arg("--home")
            .arg(home.path())
            .args(["init", "--cluster", "--node", &nodes_arg.join(",")])
            .args(["--store", &s3.url("log")])
            .output()
            .expect("airlock init --cluster");
        assert!(
            init.status.success(),
            "airlock init --cluster failed: {}",
            String::from_utf8_lossy(&init.stderr)
        );
        if !options.extra_config.is_empty() {
            merge_config(home.path(), &options.extra_config);
        }
        std::fs::create_dir_all(home.path().join("logs")).expect("logs dir");
        let deployment = Deployment {
            network,
            s3,
            procs: Arc::new(Mutex::new(Vec::new())),
            supervising: Arc::new(AtomicBool::new(true)),
            instance_prefix: format!("cluster{}", std::process::id()),
            home,
        };
        let nats = real_binary("nats-server");
        for i in 0..NODES {
            let name = format!("nats-{}", i + 1);
            let config = deployment.home.path().join("nats").join(format!("{name}.conf"));
            let command = vec![
                nats.display().to_string(),
                "-c".to_owned(),
                config.display().to_string(),
            ];
            deployment.launch(&name, command, Some(i));
        }
        deployment.supervise();
        let setup = deployment
            .airlock()
            .args(["setup", "--wait", "90"])
            .output()
            .expect("airlock setup");
        assert!(
            setup.status.success(),
            "airlock setup failed: {}\n{}",
            String::from_utf8_lossy(&setup.stderr),
            deployment.diagnostics()
        );
        let mut planned: Vec<(String, Vec<String>)> = Vec::new();
        for i in 1..=2 {
            planned.push((format!("auditor-{i}"), vec!["serve".into(), "auditor".into()]));
        }
        for i in 1..=2 {
            planned.push((format!("assessor-{i}"), vec!["serve".into(), "assessor".into()]));
        }
        planned.push(("gate".into(), vec!["serve".into(), "override-gate".into()]));
        for i in 1..=options.executors {
            planned.push((
                format!("executor-{i}"),
                vec![
                    "--set".into(),
                    format!("executor.instance={}-executor-{i}", deployment.instance_prefix),
                    "--set".into(),
                    format!("executor.host.max_concurrent={}", options.executor_concurrency),
                    "serve".into(),
                    "executor".into(),
                ],
            ));
        }
        for (name, args) in planned {
            let mut command = vec![
                airlock_bin().display().to_string(),
                "--home".into(),
                deployment.home.path().display().to_string(),
            ];
            command.extend(args);
            deployment.launch(&name, command, None);
            if name == "auditor-1" {
                // The first auditor takes the lease; the second stands by.
                deployment.wait_for_auditor_lease(Duration::from_secs(60)).await;
            }
        }
        deployment.wait_until_answering(Duration::from_secs(120));
        deployment
    }

    fn procs(&self) -> MutexGuard<'_, Vec<Proc>> {
        self.procs.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn launch(&self, name: &str, command: Vec<String>, node: Option<usize>) {
        let mut proc = Proc {
            name: name.to_owned(),
            command,
            node,
            child: None,
            log: self.home.path().join("logs").join(format!("{name}.log")),
            started: SystemTime::now(),
            wanted: true,
            exits: 0,
        };
        proc.spawn(&self.network);
        self.procs().push(proc);
    }

    /// The supervisor: every half second, starts again what exited by itself.
    fn supervise(&self) {
        let procs = self.procs.clone();
        let network = self.network.clone();
        let on = self.supervising.clone();
        std::thread::spawn(move || {
            while on.load(Ordering::SeqCst) {
                {
                    let mut procs = procs.lock().unwrap_or_else(|p| p.into_inner());
                    for proc in procs.iter_mut() {
                        proc.supervise(&network);
                    }
                }
                std::thread::sleep(Duration::from_millis(500));
            }
        });
    }

    /// Runs `f` on the process named `name`.
    pub fn with<T>(&self, name: &str, f: impl FnOnce(&mut Proc) -> T) -> T {
        let mut procs = self.procs();
        let proc = procs
            .iter_mut()
            .find(|p| p.name == name)
            .unwrap_or_else(|| panic!("no process {name}"));
        f(proc)
    }

    pub fn kill9(&self, name: &str) {
        self.with(name, Proc::kill9);
    }

    pub fn stop(&self, name: &str, grace: Duration) {
        self.with(name, |p| p.stop(grace));
    }

    /// Pids of the running processes, by name.
    pub fn pids(&self) -> Vec<(String, u32)> {
        self.procs()
            .iter()
            .filter_map(|p| Some((p.name.clone(), p.pid()?)))
            .collect()
    }

    /// How many times each process exited by itself (and was started again).
    pub fn exits(&self) -> Vec<(String, usize)> {
        self.procs()
            .iter()
            .filter(|p| p.exits > 0)
            .map(|p| (p.name.clone(), p.exits))
            .collect()
    }

    /// Starts a stopped or killed process again, as its supervisor would.
    pub fn restart(&self, name: &str) {
        let network = self.network.clone();
        self.with(name, |p| {
            p.kill9();
            p.spawn(&network);
        });
    }

    /// An `airlock` command against this deployment.
    pub fn airlock(&self) -> Command {
        let mut command = Command::new(airlock_bin());
        command.arg("--home").arg(self.home.path());
        command
    }

    /// The executor instances of this run.
    pub fn executor_instances(&self) -> Vec<String> {
        self.procs()
            .iter()
            .filter(|s| s.name.starts_with("executor-"))
            .map(|s| format!("{}-{}", self.instance_prefix, s.name))
            .collect()
    }

    /// Every service answers (`airlock status` exits 0 once each has an instance).
    pub fn wait_until_answering(&self, limit: Duration) {
        let status = self
            .airlock()
            .args(["status", "--wait", &limit.as_secs().to_string()])
            .output()
            .expect("airlock status");
        assert!(
            status.status.success(),
            "not every service answers:\n{}\n{}",
            String::from_utf8_lossy(&status.stdout),
            self.diagnostics()
        );
    }

    /// `airlock status --json`.
    pub fn status(&self) -> serde_json::Value {
        let output = self
            .airlock()
            .args(["status", "--json"])
            .output()
            .expect("airlock status");
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
            panic!(
                "airlock status printed no JSON ({e}): {}",
                String::from_utf8_lossy(&output.stderr)
            )
        })
    }

    /// Connects as one of the deployment's users, over TLS, to every node's address.
    pub async fn connect(&self, user: &str) -> async_nats::Client {
        let urls: Vec<String> = (0..NODES)
            .map(|i| format!("tls://{}:4222", self.network.address(i)))
            .collect();
        let config = airlock_bus::ConnectConfig::for_user(
            urls.join(","),
            user,
            self.home.path().join("creds").join(format!("{user}.nk")),
        )
        .with_tls(Some(airlock_bus::TlsSettings {
            ca_file: self.home.path().join("tls").join("ca.pem"),
            client_cert: None,
        }));
        let client = airlock_bus::connect(&config).await.expect("connect");
        let start = Instant::now();
        while client.connection_state() != async_nats::connection::State::Connected {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "cannot reach the cluster as {user}:\n{}",
                self.diagnostics()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        client
    }

    /// The process holding the audit log's lease (its writer id starts with its pid).
    pub async fn active_auditor(&self) -> Option<String> {
        let admin = self.connect("admin").await;
        let js = async_nats::jetstream::new(admin);
        let kv = js
            .get_key_value(airlock_protocol::subjects::AUDITOR_BUCKET)
            .await
            .ok()?;
        let entry = kv.get("head").await.ok()??;
        let head: serde_json::Value = serde_json::from_slice(&entry).ok()?;
        let lease_until = head["lease_until_ms"].as_i64().unwrap_or(0);
        if lease_until < airlock_protocol::now_ms() {
            return None;
        }
        let pid: u32 = head["writer"].as_str()?.split('-').next()?.parse().ok()?;
        self.pids()
            .into_iter()
            .find(|(name, p)| name.starts_with("auditor-") && *p == pid)
            .map(|(name, _)| name)
    }

    async fn wait_for_auditor_lease(&self, limit: Duration) {
        let start = Instant::now();
        while self.active_auditor().await.is_none() {
            assert!(
                start.elapsed() < limit,
                "no auditor took the log's lease:\n{}",
                self.diagnostics()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The services' log lines that mention `needle` (a request id), oldest first, at most
    /// `limit` of them from each process.
    pub fn lines_mentioning(&self, needle: &str, limit: usize) -> String {
        let mut out = String::new();
        for proc in self.procs().iter().filter(|p| !p.name.starts_with("nats-")) {
            let text = std::fs::read_to_string(&proc.log).unwrap_or_default();
            let hits: Vec<&str> = text.lines().filter(|l| l.contains(needle)).collect();
            for line in &hits[hits.len().saturating_sub(limit)..] {
                out.push_str(&format!("  {}: {line}\n", proc.name));
            }
        }
        out
    }

    /// The last lines of every process's log, for failure messages.
    pub fn diagnostics(&self) -> String {
        let mut out = String::new();
        for proc in self.procs().iter() {
            out.push_str(&format!("--- {} (last lines)\n{}\n", proc.name, proc.tail(25)));
        }
        out
    }
}

impl Drop for Deployment {
    fn drop(&mut self) {
        self.supervising.store(false, Ordering::SeqCst);
        // Services in the reverse of their start order (executors first, so that they remove
        // their containers), the nodes last.
        let mut procs = self.procs();
        for proc in procs.iter_mut().rev() {
            let grace = if proc.name.starts_with("nats-") { 5 } else { 30 };
            proc.stop(Duration::from_secs(grace));
        }
        drop(procs);
        if std::env::var_os("AIRLOCK_KEEP_CLUSTER_HOME").is_some() {
            let kept = self.home.path().to_owned();
            eprintln!("keeping the deployment's home: {}", kept.display());
            std::mem::forget(std::mem::replace(
                &mut self.home,
                tempfile::tempdir().expect("placeholder"),
            ));
        }
    }
}

/// Deep-merges TOML `extra` into the home's airlock.toml.
fn merge_config(home: &Path, extra: &str) {
    fn merge(base: &mut toml::Table, extra: toml::Table) {
        for (key, value) in extra {
            match (base.get_mut(&key), value) {
                (Some(toml::Value::Table(b)), toml::Value::Table(e)) => merge(b, e),
                (_, value) => {
                    base.insert(key, value);
                }
            }
        }
    }
    let path = home.join("airlock.toml");
    let mut config: toml::Table = toml::from_str(&std::fs::read_to_string(&path).expect("airlock.toml")).expect("toml");
    merge(&mut config, toml::from_str(extra).expect("extra config"));
    std::fs::write(&path, toml::to_string(&config).expect("toml")).expect("airlock.toml");
}
