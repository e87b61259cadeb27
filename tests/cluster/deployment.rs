//! The compose topology without compose: three nats-server nodes, each in its own network
//! namespace, in one JetStream cluster with TLS and the configuration `airlock init --cluster`
//! writes; SeaweedFS as the audit store; and every service as its own `airlock serve` process
//! (two assessors, the gate, two auditors, several executors, each executor its own instance on
//! this machine's Docker engine).

use crate::netns::Network;
use airlock_auditlog::testing::SeaweedFs;
use airlock_tests::airlock_bin;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
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
}

impl Proc {
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// SIGKILL, and reaped.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERM, then SIGKILL after `grace`.
    pub fn stop(&mut self, grace: Duration) {
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
    pub network: Network,
    pub home: tempfile::TempDir,
    pub s3: SeaweedFs,
    pub nodes: Vec<Proc>,
    pub services: Vec<Proc>,
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
        let network = Network::create(NODES);
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
        let instance_prefix = format!("cluster{}", std::process::id());
        let mut deployment = Deployment {
            network,
            s3,
            nodes: Vec::new(),
            services: Vec::new(),
            instance_prefix,
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
            let node = deployment.process(&name, command, Some(i));
            deployment.nodes.push(node);
        }
        for node in deployment.nodes.iter_mut() {
            node.spawn(&deployment.network);
        }
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
            let mut service = deployment.process(&name, command, None);
            service.spawn(&deployment.network);
            deployment.services.push(service);
            if name == "auditor-1" {
                // The first auditor takes the lease; the second stands by.
                deployment.wait_for_auditor_lease(Duration::from_secs(60)).await;
            }
        }
        deployment.wait_until_answering(Duration::from_secs(120));
        deployment
    }

    fn process(&self, name: &str, command: Vec<String>, node: Option<usize>) -> Proc {
        Proc {
            name: name.to_owned(),
            command,
            node,
            child: None,
            log: self.home.path().join("logs").join(format!("{name}.log")),
            started: SystemTime::now(),
        }
    }

    /// An `airlock` command against this deployment.
    pub fn airlock(&self) -> Command {
        let mut command = Command::new(airlock_bin());
        command.arg("--home").arg(self.home.path());
        command
    }

    pub fn service(&mut self, name: &str) -> &mut Proc {
        self.services
            .iter_mut()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no service {name}"))
    }

    pub fn node(&mut self, index: usize) -> &mut Proc {
        &mut self.nodes[index]
    }

    /// Starts a killed process again, as its supervisor (systemd, Docker's restart policy) would.
    pub fn restart(&mut self, name: &str) {
        let network = &self.network;
        let proc = self
            .services
            .iter_mut()
            .chain(self.nodes.iter_mut())
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no process {name}"));
        proc.kill9();
        proc.spawn(network);
    }

    /// The executor instances of this run.
    pub fn executor_instances(&self) -> Vec<String> {
        self.services
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
    pub async fn active_auditor(&mut self) -> Option<String> {
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
        self.services
            .iter()
            .find(|s| s.name.starts_with("auditor-") && s.pid() == Some(pid))
            .map(|s| s.name.clone())
    }

    async fn wait_for_auditor_lease(&mut self, limit: Duration) {
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

    /// The last lines of every process's log, for failure messages.
    pub fn diagnostics(&self) -> String {
        let mut out = String::new();
        for proc in self.nodes.iter().chain(self.services.iter()) {
            out.push_str(&format!("--- {} (last lines)\n{}\n", proc.name, proc.tail(25)));
        }
        out
    }
}

impl Drop for Deployment {
    fn drop(&mut self) {
        // Executors first, so that they remove their containers; the nodes last.
        for service in self.services.iter_mut().rev() {
            service.stop(Duration::from_secs(30));
        }
        for node in self.nodes.iter_mut() {
            node.stop(Duration::from_secs(5));
        }
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
