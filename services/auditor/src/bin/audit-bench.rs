//! `audit-bench`: the audit log's performance, measured in one run on this machine.
//!
//! 1. Raw JetStream publish rate (pipelined) of N events, as the reference.
//! 2. The auditor consuming those N events with a checkpoint every second: events/s, and the
//!    ratio to (1).
//! 3. Event→covering-checkpoint latency (p50, p99) under a steady publish rate.
//! 4. Append throughput of the log itself on one core (current-thread runtime): encode,
//!    hash, tile, sign and write to a local directory.
//! 5. Bytes stored per event, and the time to verify a log of `--verify-entries` entries.
//!
//! Needs `nats-server` on PATH. Usage: `audit-bench [--events N] [--verify-entries N]`.

use airlock_auditlog::entry::Prepared;
use airlock_auditlog::store::Store;
use airlock_auditlog::trust::TrustedKey;
use airlock_auditlog::verify::{VerifyOptions, verify};
use airlock_auditlog::writer::LogWriter;
use airlock_protocol::{Envelope, Event, OutputChunk, OutputStream, Producer, RequestId, SigningKey, UsageSample};
use anyhow::Context as _;
use clap::Parser as _;
use futures::StreamExt as _;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

#[derive(clap::Parser)]
struct Args {
    /// Events for the throughput runs.
    #[arg(long, default_value_t = 200_000)]
    events: u64,
    /// Entries in the log whose verification is timed.
    #[arg(long, default_value_t = 1_000_000)]
    verify_entries: u64,
    /// Events per second in the latency run, and for how long.
    #[arg(long, default_value_t = 5_000)]
    latency_rate: u64,
    #[arg(long, default_value_t = 10)]
    latency_seconds: u64,
    /// Run only one part: one-core, service or verify.
    #[arg(long)]
    only: Option<String>,
}

const ORIGIN: &str = "airlock.bench/audit";

/// A realistic mix: per request a submission is rare; usage samples and output lines dominate.
fn envelope(i: u64) -> Envelope {
    let rid = RequestId::parse(&format!("bench-{}", i / 50)).unwrap_or_default();
    let event = match i % 5 {
        0 | 1 => Event::Usage(UsageSample {
            seq: i as u32,
            elapsed_ms: i,
            memory_bytes: 10_000_000 + i,
            cpu_ms: i / 3,
            pids: 3,
        }),
        _ => Event::Output(OutputChunk {
            stream: OutputStream::Stdout,
            seq: i as u32,
            data: format!("output line {i} of a benchmark run\n").into_bytes(),
        }),
    };
    Envelope::new(rid, Producer::Executor, event)
}

struct Nats {
    child: std::process::Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Nats {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn start_nats() -> anyhow::Result<(Nats, async_nats::Client)> {
    let dir = tempfile::tempdir()?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let config = dir.path().join("server.conf");
    std::fs::write(&config, "max_payload: 8388608\n")?;
    let child = std::process::Command::new("nats-server")
        .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
        .arg(dir.path())
        .arg("-c")
        .arg(&config)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("starting nats-server (is it on PATH?)")?;
    let url = format!("nats://127.0.0.1:{port}");
    let started = Instant::now();
    let client = loop {
        match async_nats::connect(&url).await {
            Ok(c) => break c,
            Err(e) if started.elapsed() > Duration::from_secs(10) => return Err(e.into()),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    };
    let js = async_nats::jetstream::new(client.clone());
    airlock_bus::ensure_streams(&js, &airlock_bus::StreamSettings::default()).await?;
    Ok((Nats { child, url, _dir: dir }, client))
}

/// Publishes events `from..to`, pipelined in windows; returns the elapsed time.
async fn publish(js: &async_nats::jetstream::Context, from: u64, to: u64) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let mut acks = Vec::with_capacity(2048);
    for i in from..to {
        let env = envelope(i);
        let message = async_nats::jetstream::message::PublishMessage::build()
            .payload(env.encode()?.into())
            .message_id(env.dedup_id());
        acks.push(js.send_publish(env.subject(), message).await?);
        if acks.len() == 2048 {
            for ack in futures::future::join_all(acks.drain(..).map(std::future::IntoFuture::into_future)).await {
                ack?;
            }
        }
    }
    for ack in futures::future::join_all(acks.drain(..).map(std::future::IntoFuture::into_future)).await {
        ack?;
    }
    Ok(started.elapsed())
}

fn auditor_config(store: &str, dir: &std::path::Path) -> airlock_auditor::Config {
    airlock_auditor::Config {
        store: store.to_owned(),
        origin: ORIGIN.to_owned(),
        key_file: dir.join("auditor.key"),
        commit_linger: std::time::Duration::from_secs(1),
        max_batch: 50_000,
        ..Default::default()
    }
}

async fn log_size(store: &Store) -> u64 {
    match airlock_auditlog::LogReader::new(store.clone()).checkpoint().await {
        Ok(Some((signed, _))) => signed.checkpoint.size,
        _ => 0,
    }
}

fn dir_bytes(path: &std::path::Path) -> u64 {
    let mut total = 0;
    if let Ok(entries) = std::fs::read_dir(path) {
        for entry in entries.flatten() {
            let p = entry.path();
            if p.is_dir() {
                total += dir_bytes(&p);
            } else if let Ok(meta) = entry.metadata() {
                total += meta.len();
            }
        }
    }
    total
}

fn cpu_seconds() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    t(usage.ru_utime) + t(usage.ru_stime)
}

async fn throughput(args: &Args) -> anyhow::Result<()> {
    let (nats, client) = start_nats().await?;
    let js = async_nats::jetstream::new(client.clone());
    let n = args.events;
    let publish_time = publish(&js, 0, n).await?;
    let publish_rate = n as f64 / publish_time.as_secs_f64();
    println!("raw JetStream publish: {n} events in {publish_time:.2?} = {publish_rate:.0} events/s");

    let dir = tempfile::tempdir()?;
    let store_dir = dir.path().join("log");
    let url = store_dir.display().to_string();
    let store = Store::open(&url)?;
    let shutdown = CancellationToken::new();
    let cpu_before = cpu_seconds();
    let started = Instant::now();
    let auditor = tokio::spawn(airlock_auditor::run(
        async_nats::connect(&nats.url).await?,
        auditor_config(&url, dir.path()),
        shutdown.clone(),
    ));
    while log_size(&store).await < n {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let elapsed = started.elapsed();
    let cpu = cpu_seconds() - cpu_before;
    let rate = n as f64 / elapsed.as_secs_f64();
    println!(
        "auditor append (checkpoint every 1 s, entries published to the audit stream): {n} events in {elapsed:.2?} = {rate:.0} events/s = {:.2} x the raw publish rate; CPU {:.1} µs/event (auditor and nats-server client side)",
        rate / publish_rate,
        cpu * 1e6 / n as f64
    );
    let bytes = dir_bytes(&store_dir);
    println!(
        "bytes stored per event (tiles, bundles, blobs, checkpoint): {:.0}",
        bytes as f64 / n as f64
    );

    // Latency: a steady rate, each event's publish time against the arrival of the first
    // checkpoint that covers it.
    let mut checkpoints = client.subscribe("airlock.audit.checkpoint").await?;
    let rate = args.latency_rate;
    let total = rate * args.latency_seconds;
    let base = n;
    let mut sent_at = Vec::with_capacity(total as usize);
    let publisher = {
        let js = js.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            let mut times = Vec::with_capacity(total as usize);
            let tick = Duration::from_millis(10);
            let per_tick = (rate / 100).max(1);
            let mut i = 0;
            while i < total {
                let due = started + tick * (i / per_tick) as u32;
                tokio::time::sleep_until(due.into()).await;
                let upto = (i + per_tick).min(total);
                for j in i..upto {
                    let env = envelope(base + j);
                    let message = async_nats::jetstream::message::PublishMessage::build()
                        .payload(env.encode().unwrap_or_default().into())
                        .message_id(env.dedup_id());
                    times.push(Instant::now());
                    if let Ok(ack) = js.send_publish(env.subject(), message).await {
                        let _ = ack.await;
                    }
                }
                i = upto;
            }
            times
        })
    };
    let mut covered: Vec<(u64, Instant)> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(args.latency_seconds + 30);
    while covered.last().map(|c| c.0).unwrap_or(0) < base + total && Instant::now() < deadline {
        if let Ok(Some(message)) = tokio::time::timeout(Duration::from_secs(5), checkpoints.next()).await {
            let text = String::from_utf8_lossy(&message.payload).into_owned();
            if let Some(size) = text.lines().nth(1).and_then(|l| l.parse::<u64>().ok()) {
                covered.push((size, Instant::now()));
            }
        }
    }
    sent_at.extend(publisher.await?);
    let mut latencies: Vec<Duration> = sent_at
        .iter()
        .enumerate()
        .filter_map(|(j, sent)| {
            let index = base + j as u64;
            covered
                .iter()
                .find(|(size, _)| *size > index)
                .map(|(_, at)| at.saturating_duration_since(*sent))
        })
        .collect();
    latencies.sort();
    if !latencies.is_empty() {
        let p = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
        println!(
            "event → covering checkpoint at {rate} events/s for {} s (batch interval 1 s): p50 {:.0?}, p99 {:.0?}, max {:.0?} ({} events measured)",
            args.latency_seconds,
            p(0.5),
            p(0.99),
            latencies[latencies.len() - 1],
            latencies.len()
        );
    }
    shutdown.cancel();
    auditor.await??;
    Ok(())
}

/// The log alone on one core: envelopes → entries → tiles → signed checkpoint → local files.
fn one_core(args: &Args) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        let dir = tempfile::tempdir()?;
        let url = dir.path().join("log").display().to_string();
        let key = SigningKey::generate(ORIGIN)?;
        let mut writer = LogWriter::open(Store::open(&url)?, ORIGIN, vec![key], 0).await?;
        let n = args.events;
        let encoded: Vec<(String, Vec<u8>)> = (0..n)
            .map(|i| {
                let env = envelope(i);
                (env.subject(), env.encode().unwrap_or_default())
            })
            .collect();
        let cpu_before = cpu_seconds();
        let started = Instant::now();
        for chunk in encoded.chunks(20_000) {
            let items: Vec<Prepared> = chunk
                .iter()
                .enumerate()
                .map(|(i, (subject, bytes))| match Envelope::decode_on(subject, bytes) {
                    Ok(env) => Prepared::from_envelope(env, Some(i as u64), None),
                    Err(e) => Prepared::malformed(subject, &e, bytes, None),
                })
                .collect();
            let batch = writer.prepare(items, airlock_protocol::now_ms(), vec![])?;
            writer.commit_unguarded(batch).await?;
        }
        let elapsed = started.elapsed();
        let cpu = cpu_seconds() - cpu_before;
        println!(
            "log append on one core (decode, entry, blobs, hash, tiles, sign, write; 20,000 per checkpoint): {n} events in {elapsed:.2?} = {:.0} events/s, CPU {:.1} µs/event",
            n as f64 / elapsed.as_secs_f64(),
            cpu * 1e6 / n as f64
        );
        anyhow::Ok(())
    })
}

fn verification(args: &Args) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let dir = tempfile::tempdir()?;
        let store_dir = dir.path().join("log");
        let url = store_dir.display().to_string();
        let key = SigningKey::generate(ORIGIN)?;
        let mut writer = LogWriter::open(Store::open(&url)?, ORIGIN, vec![key.clone()], 0).await?;
        let n = args.verify_entries;
        let started = Instant::now();
        let mut i = 0;
        while i < n {
            let upto = (i + 50_000).min(n);
            let items: Vec<Prepared> = (i..upto)
                .map(|j| Prepared::from_envelope(envelope(j), Some(j), None))
                .collect();
            let batch = writer.prepare(items, airlock_protocol::now_ms(), vec![])?;
            writer.commit_unguarded(batch).await?;
            i = upto;
        }
        println!("built a log of {n} entries in {:.2?}", started.elapsed());
        let bytes = dir_bytes(&store_dir);
        println!("bytes stored per event at {n} entries: {:.0}", bytes as f64 / n as f64);
        let store = Store::open(&url)?;
        for check_blobs in [false, true] {
            let options = VerifyOptions {
                origin: ORIGIN.to_owned(),
                keys: vec![TrustedKey::always(key.verifier())],
                trusted_checkpoint: None,
                check_blobs,
            };
            let started = Instant::now();
            let report = verify(&store, &options).await?;
            println!(
                "verify {} entries ({}): {:.2?}",
                report.size,
                if check_blobs {
                    "entries, chain, tiles, root, signature and every blob"
                } else {
                    "entries, chain, tiles, root and signature"
                },
                started.elapsed()
            );
        }
        anyhow::Ok(())
    })
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let _telemetry = airlock_telemetry::init(
        "audit-bench",
        &airlock_telemetry::TelemetryConfig {
            default_filter: Some("warn".into()),
            ..Default::default()
        },
    );
    println!(
        "audit-bench, {} cores",
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
    );
    let run = |part: &str| args.only.as_deref().is_none_or(|only| only == part);
    if run("one-core") {
        one_core(&args)?;
    }
    if run("service") {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?
            .block_on(throughput(&args))?;
    }
    if run("verify") {
        verification(&args)?;
    }
    Ok(())
}
