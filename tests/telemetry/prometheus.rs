//! Debian's `prometheus` server (`ops/install-deps` installs it), run by a test in its own
//! process: it scrapes every second the targets named by Prometheus file-discovery target files
//! (the ones a stack's services write), and is read back over its HTTP API.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The scrape job of the target files.
pub const JOB: &str = "airlock";

/// One scrape target, as `/api/v1/targets` reports it.
#[derive(Clone, Debug)]
pub struct Target {
    /// The `service` label its target file gave it.
    pub service: String,
    /// `up`, `down` or `unknown` (not scraped yet).
    pub health: String,
    pub scrape_url: String,
    pub last_error: String,
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at {}: {}", self.service, self.scrape_url, self.health)?;
        if !self.last_error.is_empty() {
            write!(f, " ({})", self.last_error)?;
        }
        Ok(())
    }
}

pub struct Prometheus {
    child: Child,
    pub port: u16,
    dir: tempfile::TempDir,
    runtime: tokio::runtime::Runtime,
    client: reqwest::Client,
}

impl Prometheus {
    /// Starts `prometheus` on a free loopback port, scraping every second whatever the target
    /// files matching `target_files` (a glob such as `<dir>/*.json`) name, and waits until it
    /// is ready. A missing binary fails the test.
    pub fn start(target_files: &Path) -> Prometheus {
        let version = Command::new("prometheus").arg("--version").output();
        assert!(
            version.as_ref().is_ok_and(|v| v.status.success()),
            "`prometheus --version` does not answer ({version:?}): run ops/install-deps"
        );
        let dir = tempfile::Builder::new()
            .prefix("airlock-prometheus-")
            .tempdir()
            .expect("prometheus dir");
        // YAML reads a JSON string as it is: the path needs no other quoting.
        let files = serde_json::to_string(&target_files.display().to_string()).expect("path");
        let config = format!(
            "global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: {JOB}
    file_sd_configs:
      - files: [{files}]
        refresh_interval: 1s
"
        );
        let config_file = dir.path().join("prometheus.yml");
        std::fs::write(&config_file, config).expect("prometheus.yml");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .expect("HTTP client");
        let log_file = dir.path().join("prometheus.log");
        // The port is chosen here and given to Prometheus: a parallel test may take it in
        // between, and then Prometheus is started again on another.
        for _ in 0..5 {
            let port = {
                let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
                listener.local_addr().expect("address").port()
            };
            let log = std::fs::File::create(&log_file).expect("prometheus log");
            let mut child = Command::new("prometheus")
                .arg(format!("--config.file={}", config_file.display()))
                .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
                .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                .stdin(Stdio::null())
                .stdout(log.try_clone().expect("log"))
                .stderr(log)
                .spawn()
                .expect("starting prometheus (run ops/install-deps)");
            let ready = format!("http://127.0.0.1:{port}/-/ready");
            let start = Instant::now();
            loop {
                if let Ok(Some(status)) = child.try_wait() {
                    let log = std::fs::read_to_string(&log_file).unwrap_or_default();
                    assert!(
                        log.contains("address already in use"),
                        "prometheus exited at start ({status}):\n{log}"
                    );
                    break;
                }
                let answered =
                    runtime.block_on(async { client.get(&ready).send().await.is_ok_and(|r| r.status().is_success()) });
                if answered {
                    return Prometheus {
                        child,
                        port,
                        dir,
                        runtime,
                        client,
                    };
                }
                if start.elapsed() > Duration::from_secs(60) {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!(
                        "prometheus was not ready within 60 s:\n{}",
                        std::fs::read_to_string(&log_file).unwrap_or_default()
                    );
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        panic!("prometheus found no free port in 5 attempts");
    }

    /// Its log (stdout and stderr), for a failure's message.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("prometheus.log")).unwrap_or_default()
    }

    /// `GET path?query` of the HTTP API: its `data`, once the answer is a `success`.
    pub fn api(&self, path: &str, query: &[(&str, &str)]) -> serde_json::Value {
        let query = serde_urlencoded::to_string(query).expect("query string");
        let url = format!("http://127.0.0.1:{}{path}?{query}", self.port);
        let body: serde_json::Value = self.runtime.block_on(async {
            let response = self
                .client
                .get(&url)
                .send()
                .await
                .unwrap_or_else(|e| panic!("GET {url}: {e}\n{}", self.log()));
            response
                .json()
                .await
                .unwrap_or_else(|e| panic!("GET {url}: no JSON: {e}"))
        });
        assert_eq!(body["status"], "success", "GET {url}: {body}");
        body["data"].clone()
    }

    /// The active targets of the [`JOB`].
    pub fn targets(&self) -> Vec<Target> {
        let data = self.api("/api/v1/targets", &[("state", "active")]);
        let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
        data["activeTargets"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|t| t["labels"]["job"] == JOB)
            .map(|t| Target {
                service: text(&t["labels"]["service"]),
                health: text(&t["health"]),
                scrape_url: text(&t["scrapeUrl"]),
                last_error: text(&t["lastError"]),
            })
            .collect()
    }

    /// The value of an instant query whose answer is one number (such as a `sum(...)`); `None`
    /// while it has no series.
    pub fn value(&self, promql: &str) -> Option<f64> {
        let data = self.api("/api/v1/query", &[("query", promql)]);
        let result = data["result"].as_array().cloned().unwrap_or_default();
        assert!(result.len() <= 1, "{promql} gave more than one series: {data}");
        let value = result.first()?["value"][1].as_str()?;
        Some(value.parse().unwrap_or_else(|e| panic!("{promql} = {value:?}: {e}")))
    }

    /// Polls `check` until it gives something, or panics with `what` and the last thing it saw
    /// after `limit`.
    pub fn wait_until<T>(
        &self,
        what: &str,
        limit: Duration,
        mut check: impl FnMut(&Prometheus) -> Result<T, String>,
    ) -> T {
        let start = Instant::now();
        loop {
            match check(self) {
                Ok(done) => return done,
                Err(last) => assert!(
                    start.elapsed() < limit,
                    "Prometheus never showed {what} within {limit:?}; last: {last}\nits log:\n{}",
                    self.log()
                ),
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
