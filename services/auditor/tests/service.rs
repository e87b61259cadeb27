//! The auditor against a real nats-server and a real store: every event logged once and in
//! order (malformed messages too), checkpoints and receipts published and verifiable offline,
//! the service API answered, and one writer only.

mod common;

use airlock_auditlog::proof::TlogProof;
use airlock_auditlog::replay::{Filter, replay};
use airlock_auditlog::store::Store;
use airlock_auditor::head::{HEAD_KEY, Head};
use airlock_protocol::subjects::{AUDIT_STREAM, AUDITOR_BUCKET};
use airlock_protocol::{AuditReceipt, Envelope, Producer};
use common::*;
use futures::StreamExt as _;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

async fn logs_every_event(store_url: String, dir: &std::path::Path) {
    let nats = airlock_bus::testing::NatsServer::start().await;
    let client = nats.client().await;
    let config = config(&store_url, dir);
    let key = key(&config);
    let store = Store::open(&store_url).unwrap();
    let mut receipts = client.subscribe("airlock.audit.receipt.>").await.unwrap();
    let mut checkpoints = client.subscribe("airlock.audit.checkpoint").await.unwrap();
    let shutdown = CancellationToken::new();
    let auditor = tokio::spawn(airlock_auditor::run(
        nats.client().await,
        config.clone(),
        shutdown.clone(),
    ));

    let mai = publisher(&client, Producer::Mai);
    let executor = publisher(&client, Producer::Executor);
    mai.emit(&rid("r1"), submitted("print('one')\n", None)).await.unwrap();
    executor.emit(&rid("r1"), output(0, "one\n")).await.unwrap();
    executor.emit(&rid("r1"), terminal("one\n")).await.unwrap();
    mai.emit(&rid("r2"), submitted("print('two')\n", Some("r1")))
        .await
        .unwrap();
    executor.emit(&rid("r2"), terminal("two\n")).await.unwrap();
    // Messages no service can read: garbage, a future schema version, the wrong subject.
    let js = async_nats::jetstream::new(client.clone());
    let garbage = b"\xc1 not msgpack".to_vec();
    js.publish("airlock.submit.mai.r3", garbage.clone().into())
        .await
        .unwrap()
        .await
        .unwrap();
    let mut future = Envelope::new(rid("r4"), Producer::Mai, submitted("x", None));
    future.schema = 99;
    js.publish(
        "airlock.submit.mai.r4",
        rmp_serde::to_vec_named(&future).unwrap().into(),
    )
    .await
    .unwrap()
    .await
    .unwrap();
    let misplaced = Envelope::new(rid("r5"), Producer::Mai, submitted("y", None))
        .encode()
        .unwrap();
    js.publish("airlock.submit.mai.r6", misplaced.into())
        .await
        .unwrap()
        .await
        .unwrap();

    wait_for_size(&store, 8, Duration::from_secs(20)).await;
    let report = verify_log(&store, &key).await;
    assert_eq!(report.entries_checked, 8);
    assert_eq!(stream_seqs(&store).await, (1..=8).collect::<Vec<u64>>());

    // A receipt for each ended request, verifiable with the public key alone.
    let mut seen = Vec::new();
    for _ in 0..2 {
        let message = tokio::time::timeout(Duration::from_secs(10), receipts.next())
            .await
            .expect("a receipt")
            .unwrap();
        let receipt = AuditReceipt::decode(&message.payload).unwrap();
        let proof = TlogProof::parse(receipt.proof.as_bytes()).unwrap();
        let entry = proof.verify(None, ORIGIN, &[key.verifier()]).unwrap();
        let entry = airlock_auditlog::Entry::decode(&entry).unwrap();
        assert_eq!(entry.kind, "terminal");
        assert_eq!(entry.request_id, receipt.request_id.as_str());
        seen.push((receipt.request_id.as_str().to_owned(), receipt.entries));
    }
    seen.sort();
    assert_eq!(
        seen,
        vec![("mai.r1".to_owned(), vec![0, 1, 2]), ("mai.r2".to_owned(), vec![3, 4])]
    );
    let checkpoint = tokio::time::timeout(Duration::from_secs(5), checkpoints.next())
        .await
        .expect("a checkpoint")
        .unwrap();
    assert!(std::str::from_utf8(&checkpoint.payload).unwrap().starts_with(ORIGIN));

    // Every entry is on the audit stream too.
    let audit = js.get_stream(AUDIT_STREAM).await.unwrap();
    let info = audit.info_with_subjects("airlock.audit.entry.>").await.unwrap();
    let mut subjects = info;
    let mut entries_on_stream = 0;
    while let Some(Ok((_, count))) = subjects.next().await {
        entries_on_stream += count;
    }
    assert_eq!(entries_on_stream, 8);

    // The unreadable messages are entries with their subject, typed error and raw bytes.
    let (_, items) = replay(&airlock_auditlog::LogReader::new(store.clone()), &Filter::default())
        .await
        .unwrap();
    let malformed: Vec<_> = items.iter().filter(|i| i.entry.kind == "malformed").collect();
    let kinds: Vec<&str> = malformed
        .iter()
        .map(|i| i.entry.malformed.as_ref().unwrap().error_kind.as_str())
        .collect();
    assert_eq!(kinds, ["malformed", "unknown_schema_version", "subject_mismatch"]);
    assert_eq!(malformed[0].content[0].1.as_deref(), Some(garbage.as_slice()));
    // The revision shows its diff.
    let revision = items
        .iter()
        .find(|i| i.entry.request_id == "mai.r2" && i.entry.kind == "submitted")
        .unwrap();
    let (revises, diff) = revision.diff.as_ref().unwrap();
    assert_eq!(revises, "mai.r1");
    assert!(
        diff.contains("-print('one')") && diff.contains("+print('two')"),
        "{diff}"
    );

    // The NATS service API.
    let pong = client.request("$SRV.PING.airlock-auditor", "".into()).await.unwrap();
    assert!(String::from_utf8_lossy(&pong.payload).contains("airlock-auditor"));

    shutdown.cancel();
    auditor.await.unwrap().unwrap();
}

#[tokio::test]
async fn logs_every_event_on_a_local_directory() {
    let dir = tempfile::tempdir().unwrap();
    logs_every_event(dir.path().join("log").display().to_string(), dir.path()).await;
}

#[tokio::test]
async fn logs_every_event_on_seaweedfs() {
    let s3 = airlock_auditlog::testing::SeaweedFs::start("audit-service").await;
    let dir = tempfile::tempdir().unwrap();
    logs_every_event(s3.url("log"), dir.path()).await;
}

async fn head(client: &async_nats::Client) -> (Head, u64) {
    let kv = async_nats::jetstream::new(client.clone())
        .get_key_value(AUDITOR_BUCKET)
        .await
        .unwrap();
    let entry = kv.entry(HEAD_KEY).await.unwrap().unwrap();
    (serde_json::from_slice(&entry.value).unwrap(), entry.revision)
}

#[tokio::test]
async fn a_second_auditor_stands_by_until_the_first_is_gone() {
    let nats = airlock_bus::testing::NatsServer::start().await;
    let client = nats.client().await;
    let dir = tempfile::tempdir().unwrap();
    let url = dir.path().join("log").display().to_string();
    let config = config(&url, dir.path());
    let store = Store::open(&url).unwrap();
    let mai = publisher(&client, Producer::Mai);

    let first_stop = CancellationToken::new();
    let first = tokio::spawn(airlock_auditor::run(
        nats.client().await,
        config.clone(),
        first_stop.clone(),
    ));
    mai.emit(&rid("a1"), submitted("1", None)).await.unwrap();
    wait_for_size(&store, 1, Duration::from_secs(10)).await;
    let (holder, _) = head(&client).await;

    let second_stop = CancellationToken::new();
    let second = tokio::spawn(airlock_auditor::run(
        nats.client().await,
        config.clone(),
        second_stop.clone(),
    ));
    for i in 2..=20 {
        mai.emit(&rid(&format!("a{i}")), submitted("x", None)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    wait_for_size(&store, 20, Duration::from_secs(10)).await;
    assert_eq!(
        head(&client).await.0.writer,
        holder.writer,
        "the second auditor took over a live log"
    );
    assert!(!second.is_finished());

    first_stop.cancel();
    first.await.unwrap().unwrap();
    for i in 21..=30 {
        mai.emit(&rid(&format!("a{i}")), submitted("x", None)).await.unwrap();
    }
    wait_for_size(&store, 30, Duration::from_secs(15)).await;
    assert_ne!(head(&client).await.0.writer, holder.writer);
    verify_log(&store, &key(&config)).await;
    assert_eq!(stream_seqs(&store).await, (1..=30).collect::<Vec<u64>>());
    second_stop.cancel();
    second.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_writer_whose_head_was_taken_cannot_commit() {
    let nats = airlock_bus::testing::NatsServer::start().await;
    let client = nats.client().await;
    let dir = tempfile::tempdir().unwrap();
    let url = dir.path().join("log").display().to_string();
    let config = config(&url, dir.path());
    let store = Store::open(&url).unwrap();
    let mai = publisher(&client, Producer::Mai);
    let stop = CancellationToken::new();
    let auditor = tokio::spawn(airlock_auditor::run(nats.client().await, config.clone(), stop.clone()));
    mai.emit(&rid("b1"), submitted("1", None)).await.unwrap();
    wait_for_size(&store, 1, Duration::from_secs(10)).await;
    let before: Vec<String> = store.list("").await.unwrap();
    let checkpoint = store.get("checkpoint").await.unwrap();

    // Someone else swaps the head in (as a second auditor with a stale view would try to).
    let (mut h, revision) = head(&client).await;
    h.writer = "intruder".into();
    h.lease_until_ms = airlock_protocol::now_ms() + 60_000;
    let kv = async_nats::jetstream::new(client.clone())
        .get_key_value(AUDITOR_BUCKET)
        .await
        .unwrap();
    kv.update(HEAD_KEY, serde_json::to_vec(&h).unwrap().into(), revision)
        .await
        .unwrap();

    mai.emit(&rid("b2"), submitted("2", None)).await.unwrap();
    let result = tokio::time::timeout(Duration::from_secs(10), auditor)
        .await
        .expect("the auditor stops");
    let error = result.unwrap().unwrap_err();
    assert!(error.to_string().contains("no longer holds the log"), "{error}");
    // Nothing of the refused batch reached the log.
    assert_eq!(store.get("checkpoint").await.unwrap(), checkpoint);
    let after: Vec<String> = store.list("").await.unwrap();
    let new_tiles: Vec<&String> = after
        .iter()
        .filter(|p| p.starts_with("tile/") && !before.contains(p))
        .collect();
    assert!(new_tiles.is_empty(), "{new_tiles:?}");
    verify_log(&store, &key(&config)).await;
}
