//! A writer that commits the next batch while the last ones are still being written carries
//! their tiles in the next staging object: finishing that object alone, as a restart after a
//! crash does, must leave a whole log that `verify` accepts, across full-tile boundaries, and
//! every entry of the carried batches must be there to publish again.

mod common;

use airlock_auditlog::entry::Prepared;
use airlock_auditlog::store::Store;
use airlock_auditlog::trust::TrustedKey;
use airlock_auditlog::verify::{VerifyOptions, verify};
use airlock_auditlog::writer::Staged;
use common::*;

fn options() -> VerifyOptions {
    VerifyOptions {
        origin: ORIGIN.to_owned(),
        keys: vec![TrustedKey::always(key().verifier())],
        trusted_checkpoint: None,
        check_blobs: true,
    }
}

#[tokio::test]
async fn unwritten_batches_are_finished_from_the_last_staging_object_alone() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let mut writer = new_log(&url, vec![key()]).await;
    // A finished start: 200 entries, written.
    grow(&mut writer, &[200], "").await;
    // Three batches committed in turn, none written but their blobs (crossing the full bundle
    // at 256 and the next at 512): each carries those before it.
    let mut last: Option<Staged> = None;
    for size in [250u64, 300, 530] {
        let items: Vec<Prepared> = (writer.size()..size).map(|i| event(i, "")).collect();
        let mut batch = writer.prepare(items, 1_700_000_000_000 + size as i64, vec![]).unwrap();
        airlock_auditlog::writer::write_blobs(&writer.store, &batch.blobs)
            .await
            .unwrap();
        if let Some(earlier) = &last {
            batch.staged.carry(earlier);
        }
        writer.accept(&batch);
        last = Some(batch.staged);
    }
    let staged = last.expect("a staged batch");
    assert_eq!(staged.publish_from(), 200, "the earliest unwritten entry");
    assert!(!staged.carried.is_empty());
    // Nothing of 250, 300 or 530 is in the store: its checkpoint still says 200.
    let store = Store::open(&url).unwrap();
    assert_eq!(
        verify(&store, &options()).await.expect("the written log verifies").size,
        200
    );
    // The staging object round-trips, and finishing it alone finishes all three.
    let path = staged.stage(&store).await.unwrap();
    let loaded = Staged::load(&store, &path).await.unwrap().expect("staged");
    assert_eq!(loaded, staged);
    loaded.apply(&store, |_| {}).await.unwrap();
    assert_eq!(
        verify(&store, &options())
            .await
            .expect("the finished log verifies")
            .size,
        530
    );
}

#[tokio::test]
async fn writing_only_a_batchs_own_tiles_leaves_the_carried_ones_to_their_own_batch() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let mut writer = new_log(&url, vec![key()]).await;
    grow(&mut writer, &[100], "").await;
    let mut staged = Vec::new();
    for size in [180u64, 260] {
        let items: Vec<Prepared> = (writer.size()..size).map(|i| event(i, "")).collect();
        let mut batch = writer.prepare(items, 1_700_000_000_000 + size as i64, vec![]).unwrap();
        airlock_auditlog::writer::write_blobs(&writer.store, &batch.blobs)
            .await
            .unwrap();
        if let Some(earlier) = staged.last() {
            batch.staged.carry(earlier);
        }
        writer.accept(&batch);
        staged.push(batch.staged);
    }
    let store = Store::open(&url).unwrap();
    // In order, each batch writing its own objects: the log grows by each in turn.
    staged[0].apply_own(&store, |_| {}).await.unwrap();
    assert_eq!(verify(&store, &options()).await.unwrap().size, 180);
    staged[1].apply_own(&store, |_| {}).await.unwrap();
    assert_eq!(verify(&store, &options()).await.unwrap().size, 260);
}
