//! A test harness around the real thing: the `airlock` binary, started with `airlock up` in a
//! temporary `$AIRLOCK_HOME`, its own nats-server on a free port, and the machine's Docker.
//!
//! The binary is the one `cargo build --bin airlock` made in this workspace's target directory
//! (or `$AIRLOCK_BIN`); `ops/test` builds it before running the tests. A missing binary, Docker
//! daemon or nats-server fails the test with a message: nothing is skipped.

use anyhow::Context as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The airlock binary under test.
pub fn airlock_bin() -> PathBuf {
    if let Some(path) = std::env::var_os("AIRLOCK_BIN") {
        return PathBuf::from(path);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("target"));
    let profile = if cfg!(debug_assertions) { "debug" } else { "release" };
    let bin = target.join(profile).join("airlock");
    assert!(
        bin.exists(),
        "{} is missing: build it first (`cargo build --bin airlock`, as ops/test does) or set AIRLOCK_BIN",
        bin.display()
    );
    bin
}

/// The repository's root directory.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `airlock init` in a fresh temporary home, with `extra_config` (TOML) merged into its
/// airlock.toml: what `Stack::start_with` starts from, for commands that need no running stack.
pub fn init_home(extra_config: &str) -> tempfile::TempDir {
    let home = tempfile::Builder::new()
        .prefix("airlock-test-")
        .tempdir()
        .expect("temporary home");
    let init = Command::new(airlock_bin())
        .arg("--home")
        .arg(home.path())
        .arg("init")
        .output()
        .expect("airlock init");
    assert!(
        init.status.success(),
        "airlock init failed: {}",
        String::from_utf8_lossy(&init.stderr)
    );
    if !extra_config.is_empty() {
        let path = home.path().join("airlock.toml");
        let mut config: toml::Table =
            toml::from_str(&std::fs::read_to_string(&path).expect("airlock.toml")).expect("airlock.toml parses");
        let extra: toml::Table = toml::from_str(extra_config).expect("extra config parses");
        merge(&mut config, extra);
        std::fs::write(&path, toml::to_string(&config).expect("serialize")).expect("write airlock.toml");
    }
    home
}

/// A running stack in a temporary home. Stopped (and its home removed) when dropped.
pub struct Stack {
    pub home: tempfile::TempDir,
    up: Option<Child>,
    pub nats_url: String,
}

impl Stack {
    /// `airlock up --port 0` in a fresh home, waiting until all four services answer.
    pub fn start() -> Stack {
        Self::start_with("")
    }

    /// Like `start`, after `airlock init` and merging `extra_config` (TOML, such as
    /// `[gate.quotas.untrusted]` tables) into the home's airlock.toml.
    pub fn start_with(extra_config: &str) -> Stack {
        Self::start_with_env(extra_config, &[])
    }

    /// Like `start_with`, with `env` set for `airlock up` and so for every service (the
    /// `OTEL_*` variables of the telemetry tests).
    pub fn start_with_env(extra_config: &str, env: &[(&str, &str)]) -> Stack {
        let home = init_home(extra_config);
        let log = std::fs::File::create(home.path().join("up.log")).expect("up.log");
        let up = Command::new(airlock_bin())
            .arg("--home")
            .arg(home.path())
            .args(["up", "--port", "0"])
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("starting airlock up");
        let mut stack = Stack {
            home,
            up: Some(up),
            nats_url: String::new(),
        };
        stack.wait_until_up(Duration::from_secs(120));
        stack
    }

    fn wait_until_up(&mut self, limit: Duration) {
        let start = Instant::now();
        let stack_file = self.home.path().join("stack.json");
        loop {
            if let Some(up) = self.up.as_mut()
                && let Ok(Some(status)) = up.try_wait()
            {
                panic!(
                    "airlock up exited ({status}) before the stack was ready:\n{}",
                    self.diagnostics()
                );
            }
            if let Ok(bytes) = std::fs::read(&stack_file) {
                let info: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
                // Every service `up` started (four, and the chat bridge when configured).
                let names: Vec<&'static str> = info["services"]
                    .as_object()
                    .map(|m| {
                        m.keys()
                            .filter_map(|c| airlock_protocol::roles::by_command(c).map(|s| s.name))
                            .collect()
                    })
                    .unwrap_or_default();
                if names.len() >= 4 {
                    self.nats_url = info["nats_url"].as_str().unwrap_or_default().to_owned();
                    if self.services_answer(&names) {
                        return;
                    }
                }
            }
            if start.elapsed() > limit {
                panic!("the stack did not come up within {limit:?}:\n{}", self.diagnostics());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Whether all these services answer the NATS service API.
    fn services_answer(&self, names: &[&'static str]) -> bool {
        let url = self.nats_url.clone();
        let creds = self.creds("operator");
        let names = names.to_vec();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async move {
            let Ok(client) = async_nats::ConnectOptions::with_nkey(read_seed(&creds))
                .custom_inbox_prefix("_INBOX_operator")
                .connect(url)
                .await
            else {
                return false;
            };
            for name in names {
                let ping = client.request(format!("$SRV.PING.{name}"), "".into());
                match tokio::time::timeout(Duration::from_secs(2), ping).await {
                    Ok(Ok(_)) => {}
                    _ => return false,
                }
            }
            true
        })
    }

    pub fn path(&self) -> &Path {
        self.home.path()
    }

    pub fn creds(&self, user: &str) -> PathBuf {
        self.home.path().join("creds").join(format!("{user}.nk"))
    }

    /// An `airlock` command against this stack.
    pub fn airlock(&self) -> Command {
        let mut command = Command::new(airlock_bin());
        command.arg("--home").arg(self.home.path());
        command
    }

    /// Runs `airlock run --json FILE` with extra arguments; returns the parsed JSON and the
    /// exit status.
    pub fn run_json(&self, file: &Path, extra: &[&str]) -> (serde_json::Value, i32) {
        let output = self
            .airlock()
            .arg("run")
            .arg("--json")
            .arg(file)
            .args(extra)
            .output()
            .expect("airlock run");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let json = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
            panic!(
                "airlock run printed no JSON object ({e}):\nstdout: {stdout}\nstderr: {}\n{}",
                String::from_utf8_lossy(&output.stderr),
                self.diagnostics()
            )
        });
        (json, output.status.code().unwrap_or(-1))
    }

    /// Writes `code` to a file in the home and runs it.
    pub fn run_code(&self, name: &str, code: &str, extra: &[&str]) -> (serde_json::Value, i32) {
        let dir = self.home.path().join("programs");
        std::fs::create_dir_all(&dir).expect("programs dir");
        let file = dir.join(name);
        std::fs::write(&file, code).expect("program file");
        self.run_json(&file, extra)
    }

    /// Writes `code` to a file in the home and starts `airlock run --json` on it with `extra`
    /// arguments, without waiting (it may wait for a human); [`finish_run`] collects it.
    pub fn run_in_background(&self, name: &str, code: &str, extra: &[&str]) -> Child {
        let dir = self.home.path().join("programs");
        std::fs::create_dir_all(&dir).expect("programs dir");
        let file = dir.join(name);
        std::fs::write(&file, code).expect("program file");
        self.airlock()
            .args(["run", "--json"])
            .arg(&file)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("airlock run")
    }

    /// `airlock override approve|deny ID --reason REASON --who tester`, checked to succeed.
    pub fn answer(&self, verb: &str, request_id: &str, reason: &str) {
        let out = self.output(&["override", verb, request_id, "--reason", reason, "--who", "tester"]);
        assert!(
            out.status.success(),
            "override {verb} {request_id} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    pub fn output(&self, args: &[&str]) -> Output {
        self.airlock().args(args).output().expect("airlock")
    }

    /// Connects as one of the stack's NATS users.
    pub async fn connect(&self, user: &str) -> async_nats::Client {
        let config = airlock_bus::ConnectConfig::for_user(self.nats_url.clone(), user, self.creds(user));
        let client = airlock_bus::connect(&config).await.expect("connect");
        for _ in 0..100 {
            if client.connection_state() == async_nats::connection::State::Connected {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        client
    }

    /// The pid of a service, from stack.json.
    pub fn service_pid(&self, name: &str) -> Option<u32> {
        let bytes = std::fs::read(self.home.path().join("stack.json")).ok()?;
        let info: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
        info["services"][name].as_u64().map(|p| p as u32)
    }

    /// Logs of `up` and every service, for failure messages.
    pub fn diagnostics(&self) -> String {
        let mut out = String::new();
        let mut files = vec![
            self.home.path().join("up.log"),
            self.home.path().join("nats").join("server.log"),
        ];
        if let Ok(entries) = std::fs::read_dir(self.home.path().join("logs")) {
            files.extend(entries.flatten().map(|e| e.path()));
        }
        for file in files {
            if let Ok(text) = std::fs::read_to_string(&file) {
                let tail: Vec<&str> = text.lines().rev().take(40).collect();
                out.push_str(&format!("--- {} (last lines)\n", file.display()));
                for line in tail.into_iter().rev() {
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
        out
    }

    /// Stops the stack as Ctrl-C would, waiting for it to exit.
    pub fn stop(&mut self) {
        if let Some(mut up) = self.up.take() {
            unsafe {
                libc::kill(up.id() as libc::pid_t, libc::SIGINT);
            }
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(60) {
                if let Ok(Some(_)) = up.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = up.kill();
            let _ = up.wait();
        }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Deep-merges `extra` into `base`: tables merge, other values replace.
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

/// Waits for an `airlock run --json` started in the background; returns its JSON and exit status.
pub fn finish_run(child: Child) -> (serde_json::Value, i32) {
    let output = child.wait_with_output().expect("airlock run");
    let json = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("no JSON ({e}): {}", String::from_utf8_lossy(&output.stderr)));
    (json, output.status.code().unwrap_or(-1))
}

pub fn read_seed(path: &Path) -> String {
    std::fs::read_to_string(path)
        .with_context(|| format!("reading {}", path.display()))
        .expect("seed")
        .trim()
        .to_owned()
}

/// Every message of a request on the events stream, in stream order.
async fn messages_of(stack: &Stack, request_id: &str) -> Vec<async_nats::jetstream::Message> {
    use futures::StreamExt as _;
    let admin = stack.connect("admin").await;
    let js = async_nats::jetstream::new(admin);
    let stream = js.get_stream("AIRLOCK").await.expect("events stream");
    let rid = airlock_protocol::RequestId::parse(request_id).expect("request id");
    let filters = airlock_protocol::EventKind::ALL
        .iter()
        .map(|k| k.subject(&rid))
        .collect();
    let consumer = stream
        .create_consumer(async_nats::jetstream::consumer::pull::OrderedConfig {
            filter_subjects: filters,
            ..Default::default()
        })
        .await
        .expect("ordered consumer");
    let pending = consumer.cached_info().num_pending as usize;
    let mut messages = consumer.messages().await.expect("messages");
    let mut found = Vec::new();
    while found.len() < pending {
        match tokio::time::timeout(Duration::from_secs(5), messages.next()).await {
            Ok(Some(Ok(message))) => found.push(message),
            _ => break,
        }
    }
    found
}

/// A request's events, decoded, in order.
pub async fn events_of(stack: &Stack, request_id: &str) -> Vec<airlock_protocol::Envelope> {
    messages_of(stack, request_id)
        .await
        .iter()
        .filter_map(|message| airlock_protocol::Envelope::decode(&message.payload).ok())
        .collect()
}

/// The W3C trace id each of a request's events carried in its `traceparent` header, in order
/// (empty where the header is missing).
pub async fn trace_ids_of(stack: &Stack, request_id: &str) -> Vec<(airlock_protocol::EventKind, String)> {
    messages_of(stack, request_id)
        .await
        .iter()
        .filter_map(|message| {
            let (kind, _) = airlock_protocol::EventKind::parse_subject(message.subject.as_str())?;
            let trace = message
                .headers
                .as_ref()
                .and_then(|h| h.get("traceparent"))
                .and_then(|v| v.as_str().split('-').nth(1).map(str::to_owned))
                .unwrap_or_default();
            Some((kind, trace))
        })
        .collect()
}

/// The kinds of a request's events, in order.
pub fn kinds(events: &[airlock_protocol::Envelope]) -> Vec<airlock_protocol::EventKind> {
    events.iter().map(|e| e.kind()).collect()
}

/// Sends SIGKILL to a process.
pub fn kill9(pid: u32) {
    signal(pid, libc::SIGKILL);
}

/// Sends a signal to a process.
pub fn signal(pid: u32, signal: libc::c_int) {
    unsafe {
        libc::kill(pid as libc::pid_t, signal);
    }
}

/// Submits `code` with `airlock run --json` in the background; returns the child and the
/// request id once its container has started.
pub async fn start_long_run(stack: &Stack, name: &str, code: &str) -> (Child, String) {
    start_long_run_with(stack, name, code, &[]).await
}

/// [`start_long_run`] with more arguments for `airlock run`.
pub async fn start_long_run_with(stack: &Stack, name: &str, code: &str, extra: &[&str]) -> (Child, String) {
    use futures::StreamExt as _;
    let admin = stack.connect("admin").await;
    let mut started = admin.subscribe("airlock.exec.started.>").await.expect("subscribe");
    admin.flush().await.expect("flush");
    let child = stack.spawn_run(name, code, extra);
    let message = tokio::time::timeout(Duration::from_secs(60), started.next())
        .await
        .unwrap_or_else(|_| panic!("the run never started:\n{}", stack.diagnostics()))
        .expect("subscription");
    // `airlock.exec.started.<client>.<local>`
    let rid = message
        .subject
        .as_str()
        .splitn(4, '.')
        .nth(3)
        .expect("request id")
        .to_owned();
    (child, rid)
}

impl Stack {
    /// Writes `code` to a file in the home and starts `airlock run --json` on it in the
    /// background, its output piped.
    pub fn spawn_run(&self, name: &str, code: &str, extra: &[&str]) -> Child {
        let dir = self.home.path().join("programs");
        std::fs::create_dir_all(&dir).expect("programs dir");
        let file = dir.join(name);
        std::fs::write(&file, code).expect("program");
        self.airlock()
            .args(["run", "--json"])
            .args(extra)
            .arg(&file)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("airlock run")
    }
}

/// The JSON result `airlock run --json` printed.
pub fn finish(child: Child) -> serde_json::Value {
    let output = child.wait_with_output().expect("airlock run");
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("no JSON ({e}): {}", String::from_utf8_lossy(&output.stderr)))
}

/// A request's terminal events (exactly one, when all is well).
pub async fn terminals(stack: &Stack, rid: &str) -> Vec<airlock_protocol::Terminal> {
    events_of(stack, rid)
        .await
        .into_iter()
        .filter_map(|e| match e.event {
            airlock_protocol::Event::Terminal(t) => Some(*t),
            _ => None,
        })
        .collect()
}

/// A request's progress events, in order.
pub fn progress_of(events: &[airlock_protocol::Envelope]) -> Vec<airlock_protocol::Progress> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            airlock_protocol::Event::Progress(p) => Some(p.clone()),
            _ => None,
        })
        .collect()
}

/// A plain HTTP GET, for a metrics URL.
pub fn http_get(url: &str) -> String {
    use std::io::{Read as _, Write as _};
    let rest = url.strip_prefix("http://").expect("http URL");
    let (host, path) = rest.split_once('/').expect("a path");
    let mut stream = std::net::TcpStream::connect(host).expect("connect");
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .expect("timeout");
    write!(
        stream,
        "GET /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .expect("request");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("response");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    response
}
