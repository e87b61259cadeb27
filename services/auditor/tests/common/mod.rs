//! Shared set-up for the auditor's tests: a real nats-server with Airlock's streams and bucket,
//! a store, a config, events to publish, and reading the log back.
#![allow(dead_code)]

use airlock_auditlog::store::Store;
use airlock_auditlog::trust::TrustedKey;
use airlock_auditlog::verify::{Verified, VerifyOptions, verify};
use airlock_auditor::Config;
use airlock_bus::Publisher;
use airlock_protocol::{
    Event, ExecutionRequest, Language, Outcome, OutputChunk, OutputStream, Producer, RequestId, SigningKey, Terminal,
};
use std::path::Path;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

pub const ORIGIN: &str = "airlock.test/audit";

pub fn config(store: &str, dir: &Path) -> Config {
    Config {
        store: store.to_owned(),
        origin: ORIGIN.to_owned(),
        key_file: dir.join("auditor.key"),
        commit_linger: Duration::from_millis(100),
        ack_wait: Duration::from_secs(1),
        gap_timeout: Duration::from_secs(4),
        lease: Duration::from_secs(1),
        ..Config::default()
    }
}

pub fn key(config: &Config) -> SigningKey {
    SigningKey::load_or_generate(&config.key_file, ORIGIN).unwrap()
}

pub fn publisher(client: &async_nats::Client, producer: Producer) -> Publisher {
    Publisher::new(
        async_nats::jetstream::new(client.clone()),
        producer,
        CancellationToken::new(),
    )
}

/// The id `mai.<local>`: the client part every admitted submission's id carries.
pub fn rid(local: &str) -> RequestId {
    RequestId::for_client("mai", local).unwrap()
}

pub fn submitted(code: &str, revises: Option<&str>) -> Event {
    Event::Submitted(
        ExecutionRequest::new(Language::Python, code.as_bytes().to_vec())
            .revises(revises.map(rid))
            .label("test.py"),
    )
}

pub fn output(seq: u32, text: &str) -> Event {
    Event::Output(OutputChunk {
        stream: OutputStream::Stdout,
        seq,
        data: text.as_bytes().to_vec(),
    })
}

pub fn terminal(stdout: &str) -> Event {
    let mut t = Terminal::without_run(Outcome::Finished, "ran");
    t.exit_code = Some(0);
    t.stdout = stdout.as_bytes().to_vec();
    Event::Terminal(Box::new(t))
}

/// The checkpoint size of the store (0 when there is none yet).
pub async fn size(store: &Store) -> u64 {
    match airlock_auditlog::LogReader::new(store.clone()).checkpoint().await {
        Ok(Some((signed, _))) => signed.checkpoint.size,
        _ => 0,
    }
}

pub async fn wait_for_size(store: &Store, want: u64, within: Duration) {
    let started = Instant::now();
    loop {
        let have = size(store).await;
        if have >= want {
            assert_eq!(have, want, "the log has more entries than events were published");
            return;
        }
        assert!(
            started.elapsed() < within,
            "the log reached {have} of {want} entries in {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub async fn verify_log(store: &Store, key: &SigningKey) -> Verified {
    verify(
        store,
        &VerifyOptions {
            origin: ORIGIN.to_owned(),
            keys: vec![TrustedKey::always(key.verifier())],
            trusted_checkpoint: None,
            check_blobs: true,
        },
    )
    .await
    .unwrap_or_else(|e| panic!("the log does not verify: {e}"))
}

/// The events-stream sequence of every entry, in log order.
pub async fn stream_seqs(store: &Store) -> Vec<u64> {
    let size = size(store).await;
    let entries = airlock_auditlog::LogReader::new(store.clone())
        .entries(0, size, size)
        .await
        .unwrap();
    entries.iter().filter_map(|(_, e)| e.stream_seq).collect()
}
