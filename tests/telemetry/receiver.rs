//! The telemetry tests' side of `tests/telemetry/receiver.py`: a real OTLP receiver (or a
//! collector that hangs, or one that resets every connection) in its own process, and what it
//! decoded, read back as JSON lines.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One span as the receiver decoded it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Span {
    pub service: String,
    pub name: String,
    pub trace_id: String,
    pub span_id: String,
    pub parent_span_id: String,
}

pub struct Receiver {
    child: Child,
    pub port: u16,
    out: PathBuf,
    _dir: tempfile::TempDir,
}

impl Receiver {
    /// Starts the receiver in `mode` (`http`, `grpc`, `hang`, `reset`) on a free loopback port;
    /// its Python environment is made first if missing (`tests/telemetry/setup`).
    pub fn start(mode: &str) -> Receiver {
        let root = airlock_tests::repo_root();
        let setup = Command::new(root.join("tests/telemetry/setup"))
            .stderr(Stdio::inherit())
            .output()
            .expect("running tests/telemetry/setup");
        assert!(
            setup.status.success(),
            "tests/telemetry/setup failed: the OTLP receiver's Python packages are missing"
        );
        let python = String::from_utf8_lossy(&setup.stdout).trim().to_owned();
        let dir = tempfile::Builder::new()
            .prefix("airlock-otlp-")
            .tempdir()
            .expect("receiver dir");
        let port_file = dir.path().join("port");
        let out = dir.path().join("received.jsonl");
        let log = std::fs::File::create(dir.path().join("receiver.log")).expect("receiver log");
        let child = Command::new(python)
            .arg(root.join("tests/telemetry/receiver.py"))
            .args(["--mode", mode, "--port-file"])
            .arg(&port_file)
            .arg("--out")
            .arg(&out)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("starting the OTLP receiver");
        let mut receiver = Receiver {
            child,
            port: 0,
            out,
            _dir: dir,
        };
        let start = Instant::now();
        while receiver.port == 0 {
            if let Ok(Some(status)) = receiver.child.try_wait() {
                panic!("the {mode} receiver exited ({status}): {}", receiver.log());
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the {mode} receiver did not start: {}",
                receiver.log()
            );
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                receiver.port = text.trim().parse().unwrap_or(0);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        receiver
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("receiver.log")).unwrap_or_default()
    }

    /// Everything received so far.
    pub fn records(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.out)
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    }

    fn of_signal(&self, signal: &str) -> Vec<serde_json::Value> {
        let records = self.records();
        if let Some(error) = records.iter().find(|r| r["signal"] == "error") {
            panic!("the receiver could not decode what it was sent: {error}");
        }
        records.into_iter().filter(|r| r["signal"] == signal).collect()
    }

    pub fn spans(&self) -> Vec<Span> {
        let text = |v: &serde_json::Value, key: &str| v[key].as_str().unwrap_or_default().to_owned();
        self.of_signal("span")
            .iter()
            .map(|r| Span {
                service: text(r, "service"),
                name: text(r, "name"),
                trace_id: text(r, "trace_id"),
                span_id: text(r, "span_id"),
                parent_span_id: text(r, "parent_span_id"),
            })
            .collect()
    }

    /// `(service, metric name)` of every metric received.
    pub fn metrics(&self) -> Vec<(String, String)> {
        self.of_signal("metric")
            .iter()
            .map(|r| {
                (
                    r["service"].as_str().unwrap_or_default().to_owned(),
                    r["name"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    }

    /// Connections accepted (the `hang` and `reset` modes).
    pub fn connections(&self) -> usize {
        self.of_signal("connection").len()
    }

    /// Waits until `done` holds of what was received, or panics with `what` after `limit`.
    pub fn wait_until(&self, what: &str, limit: Duration, done: impl Fn(&Receiver) -> bool) {
        let start = Instant::now();
        while !done(self) {
            assert!(
                start.elapsed() < limit,
                "the receiver never saw {what} within {limit:?}; it has {} records",
                self.records().len()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The environment that points a process's OTLP export at `endpoint`, exporting often (so that
/// a test need not wait): spans every 200 ms, metrics every second.
pub fn otel_env(endpoint: &str, protocol: Option<&str>) -> Vec<(String, String)> {
    let mut env = vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT".to_owned(), endpoint.to_owned()),
        ("OTEL_BSP_SCHEDULE_DELAY".to_owned(), "200".to_owned()),
        ("OTEL_METRIC_EXPORT_INTERVAL".to_owned(), "1000".to_owned()),
    ];
    if let Some(protocol) = protocol {
        env.push(("OTEL_EXPORTER_OTLP_PROTOCOL".to_owned(), protocol.to_owned()));
    }
    env
}

/// `airlock run --json` of `code` against `stack`, with `env`: the JSON result, the exit
/// status, and how long the process took.
pub fn run_with_env(
    stack: &airlock_tests::Stack,
    env: &[(String, String)],
    name: &str,
    code: &str,
) -> (serde_json::Value, std::process::ExitStatus, Duration) {
    let dir = stack.path().join("programs");
    std::fs::create_dir_all(&dir).expect("programs dir");
    let file = dir.join(name);
    std::fs::write(&file, code).expect("program");
    let start = Instant::now();
    let output = stack
        .airlock()
        .args(["run", "--json"])
        .arg(&file)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("airlock run");
    let elapsed = start.elapsed();
    let json = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "airlock run printed no JSON ({e}), {}:\nstdout: {}\nstderr: {}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            stack.diagnostics()
        )
    });
    (json, output.status, elapsed)
}

pub fn env_refs(env: &[(String, String)]) -> Vec<(&str, &str)> {
    env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}
