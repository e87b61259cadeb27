//! Crash tests against the real `airlock-auditor` binary: aborted at each commit step, and
//! kill -9'd at random points under load; restarted each time. Afterwards the log verifies,
//! holds every event of the stream exactly once and in order, and no object that was ever
//! written changed.

mod common;

use airlock_auditlog::store::Store;
use airlock_protocol::Producer;
use common::*;
use sha2::Digest as _;
use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt as _;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const STEPS: [&str; 8] = [
    "prepared",
    "blobs",
    "staged",
    "swapped",
    "tile",
    "checkpoint",
    "published",
    "acked",
];

struct Harness {
    nats: airlock_bus::testing::NatsServer,
    dir: tempfile::TempDir,
    config_file: std::path::PathBuf,
    store: Store,
    /// Every object ever seen, with the digest of its bytes then.
    seen: BTreeMap<String, Vec<u8>>,
}

impl Harness {
    async fn new() -> Harness {
        let nats = airlock_bus::testing::NatsServer::start().await;
        let dir = tempfile::tempdir().unwrap();
        let url = dir.path().join("log").display().to_string();
        let config = config(&url, dir.path());
        let config_file = dir.path().join("airlock.toml");
        std::fs::write(
            &config_file,
            format!("[auditor]\n{}", toml::to_string(&config).unwrap()),
        )
        .unwrap();
        Harness {
            nats,
            config_file,
            store: Store::open(&url).unwrap(),
            dir,
            seen: BTreeMap::new(),
        }
    }

    fn spawn(&self, crash_at: Option<&str>) -> Child {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("auditor.log"))
            .unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_airlock-auditor"));
        command
            .arg("--config")
            .arg(&self.config_file)
            .arg("--nats")
            .arg(&self.nats.url)
            .env("RUST_LOG", "warn,airlock_auditor=info")
            .env_remove(airlock_auditor::crash::ENV)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        if let Some(step) = crash_at {
            command.env(airlock_auditor::crash::ENV, step);
        }
        command.spawn().expect("the airlock-auditor binary")
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.dir.path().join("auditor.log")).unwrap_or_default();
        text.lines()
            .rev()
            .take(40)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Records every object; one seen before must still have the same bytes (or be gone, as
    /// staging objects and superseded partial tiles may be).
    async fn check_nothing_rewritten(&mut self) {
        for path in self.store.list("").await.unwrap() {
            if path == "checkpoint" {
                continue;
            }
            let Some(bytes) = self.store.get(&path).await.unwrap() else {
                continue;
            };
            let digest = sha2::Sha256::digest(&bytes).to_vec();
            if let Some(before) = self.seen.get(&path) {
                assert_eq!(before, &digest, "{path} was rewritten");
            }
            self.seen.insert(path, digest);
        }
    }

    async fn stream_last_seq(&self) -> u64 {
        let js = async_nats::jetstream::new(self.nats.client().await);
        let mut stream = js.get_stream("AIRLOCK").await.unwrap();
        stream.info().await.unwrap().state.last_sequence
    }

    /// Stops the auditor gracefully and checks the whole log.
    async fn finish(&mut self, mut child: Child, published: u64) {
        assert_eq!(self.stream_last_seq().await, published);
        let store = self.store.clone();
        let waited = tokio::time::timeout(
            Duration::from_secs(60),
            wait_for_size(&store, published, Duration::from_secs(60)),
        )
        .await;
        if waited.is_err() {
            let _ = std::fs::copy(
                self.dir.path().join("auditor.log"),
                "/tmp/airlock-auditor-crash-test.log",
            );
            panic!("log did not catch up; auditor log:\n{}", self.log_tail());
        }
        unsafe {
            libc::kill(child.id() as i32, libc::SIGTERM);
        }
        let status = child.wait().unwrap();
        assert!(
            status.success(),
            "auditor exited with {status}; log:\n{}",
            self.log_tail()
        );
        self.check_nothing_rewritten().await;
        let key = airlock_protocol::SigningKey::load(&self.dir.path().join("auditor.key")).unwrap();
        let report = verify_log(&self.store, &key).await;
        assert_eq!(report.size, published);
        assert_eq!(
            stream_seqs(&self.store).await,
            (1..=published).collect::<Vec<u64>>(),
            "every event exactly once, in stream order"
        );
        assert!(self.store.list("staging/").await.unwrap().is_empty());
    }
}

/// Publishes small events until told to stop; counts them.
fn start_load(
    client: async_nats::Client,
    batch: u64,
    pause_ms: u64,
) -> (Arc<AtomicBool>, Arc<AtomicU64>, tokio::task::JoinHandle<()>) {
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let (s, c) = (stop.clone(), count.clone());
    let task = tokio::spawn(async move {
        let executor = publisher(&client, Producer::Executor);
        let mut n: u64 = 0;
        while !s.load(Ordering::SeqCst) {
            for _ in 0..batch {
                let request = rid(&format!("load-{}", n / 100));
                executor
                    .emit(&request, output((n % 100) as u32, &format!("line {n}\n")))
                    .await
                    .unwrap();
                n += 1;
                c.store(n, Ordering::SeqCst);
            }
            tokio::time::sleep(Duration::from_millis(pause_ms)).await;
        }
    });
    (stop, count, task)
}

#[tokio::test]
async fn aborted_at_each_commit_step_and_restarted() {
    let mut h = Harness::new().await;
    let client = h.nats.client().await;
    let (stop, count, load) = start_load(client, 20, 20);
    for step in STEPS {
        let mut child = h.spawn(Some(&format!("{step}@2")));
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the auditor did not reach step {step}; log:\n{}",
                h.log_tail()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_eq!(
            status.signal(),
            Some(libc::SIGABRT),
            "step {step}: {status}; log:\n{}",
            h.log_tail()
        );
        h.check_nothing_rewritten().await;
        eprintln!(
            "aborted at {step}: log at {} entries, {} published",
            size(&h.store).await,
            count.load(Ordering::SeqCst)
        );
    }
    let child = h.spawn(None);
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::SeqCst);
    load.await.unwrap();
    let published = count.load(Ordering::SeqCst);
    h.finish(child, published).await;
}

#[tokio::test]
async fn killed_at_random_points_under_load_and_restarted() {
    let mut h = Harness::new().await;
    let client = h.nats.client().await;
    let (stop, count, load) = start_load(client, 20, 10);
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    eprintln!("random seed {seed}");
    let mut random = move |below: u64| {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 33) % below
    };
    let mut child = h.spawn(None);
    for round in 0..8 {
        tokio::time::sleep(Duration::from_millis(1_000 + random(2_500))).await;
        child.kill().unwrap();
        child.wait().unwrap();
        h.check_nothing_rewritten().await;
        eprintln!(
            "round {round}: killed with the log at {} entries, {} published",
            size(&h.store).await,
            count.load(Ordering::SeqCst)
        );
        child = h.spawn(None);
    }
    stop.store(true, Ordering::SeqCst);
    load.await.unwrap();
    let published = count.load(Ordering::SeqCst);
    h.finish(child, published).await;
}
