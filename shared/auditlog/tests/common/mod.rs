//! Building real logs for tests: realistic events, committed in batches with real signatures.
#![allow(dead_code)]

use airlock_auditlog::entry::Prepared;
use airlock_auditlog::store::Store;
use airlock_auditlog::writer::LogWriter;
use airlock_protocol::{
    Envelope, Event, ExecutionRequest, Language, Outcome, OutputChunk, OutputStream, Producer, RequestId, SigningKey,
    Terminal,
};

pub const ORIGIN: &str = "airlock.test/audit";

pub fn key() -> SigningKey {
    SigningKey::from_seed(ORIGIN, [7; 32]).unwrap()
}

pub fn other_key() -> SigningKey {
    SigningKey::from_seed(ORIGIN, [8; 32]).unwrap()
}

/// Event `i` of a stream of requests of four events each (submitted, output, terminal, and a
/// malformed message now and then), with `salt` in the code so two logs can differ.
pub fn event(i: u64, salt: &str) -> Prepared {
    let rid = RequestId::parse(&format!("req-{}", i / 4)).unwrap();
    let envelope = |producer, event| Envelope::new(rid.clone(), producer, event);
    match i % 4 {
        0 => Prepared::from_envelope(
            envelope(
                Producer::Mai,
                Event::Submitted(
                    ExecutionRequest::new(Language::Python, format!("print({})  # {salt}\n", i / 4).into_bytes())
                        .revises((i >= 4).then(|| RequestId::parse(&format!("req-{}", i / 4 - 1)).unwrap()))
                        .label("t.py"),
                ),
            ),
            Some(i + 1),
            None,
        ),
        1 => Prepared::from_envelope(
            envelope(
                Producer::Executor,
                Event::Output(OutputChunk {
                    stream: OutputStream::Stdout,
                    seq: 0,
                    data: format!("{}\n", i / 4).into_bytes(),
                }),
            ),
            Some(i + 1),
            None,
        ),
        2 => {
            let mut t = Terminal::without_run(Outcome::Finished, "done");
            t.exit_code = Some(0);
            t.stdout = format!("{}\n", i / 4).into_bytes();
            Prepared::from_envelope(
                envelope(Producer::Executor, Event::Terminal(Box::new(t))),
                Some(i + 1),
                None,
            )
        }
        _ => Prepared::malformed(
            &format!("airlock.submit.req-{}", i / 4),
            &airlock_protocol::Envelope::decode(b"test garbage").expect_err("garbage does not decode"),
            format!("garbage {i}").as_bytes(),
            Some(i + 1),
        ),
    }
}

/// Appends events until the log has each of `sizes` entries in turn, one commit (and one
/// checkpoint) per size; returns the checkpoint text at each size.
pub async fn grow(writer: &mut LogWriter, sizes: &[u64], salt: &str) -> Vec<String> {
    let mut checkpoints = Vec::new();
    for &size in sizes {
        let items: Vec<Prepared> = (writer.size()..size).map(|i| event(i, salt)).collect();
        let time = 1_700_000_000_000 + size as i64;
        let batch = writer.prepare(items, time, vec![]).unwrap();
        let batch = writer.commit_unguarded(batch).await.unwrap();
        checkpoints.push(batch.staged.checkpoint.clone());
    }
    checkpoints
}

pub async fn new_log(url: &str, keys: Vec<SigningKey>) -> LogWriter {
    LogWriter::open(Store::open(url).unwrap(), ORIGIN, keys, 0)
        .await
        .unwrap()
}

/// Copies every object of one store into another.
pub async fn copy_store(from: &Store, to: &Store) {
    for path in from.list("").await.unwrap() {
        let bytes = from.get(&path).await.unwrap().unwrap();
        to.put_overwrite(&path, bytes).await.unwrap();
    }
}
