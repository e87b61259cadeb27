//! Retention and key rotation: after pruning, the tree, tiles and checkpoints still verify and
//! no leaf hash is gone; prune marks must be signed; rotated keys count only in their window.

mod common;

use airlock_auditlog::note::Note;
use airlock_auditlog::prune::{PruneMark, prune};
use airlock_auditlog::store::Store;
use airlock_auditlog::trust::TrustedKey;
use airlock_auditlog::verify::{VerifyOptions, verify};
use airlock_auditlog::writer::LogWriter;
use airlock_protocol::SigningKey;
use bytes::Bytes;
use common::*;

fn options(keys: Vec<TrustedKey>) -> VerifyOptions {
    VerifyOptions {
        origin: ORIGIN.to_owned(),
        keys,
        trusted_checkpoint: None,
        check_blobs: true,
    }
}

#[tokio::test]
async fn pruning_keeps_the_tree_verifiable() {
    let dir = tempfile::tempdir().unwrap();
    let url = dir.path().display().to_string();
    let mut writer = new_log(&url, vec![key()]).await;
    // Entries of the first commit are stamped 1_700_000_000_300, the next 1_700_000_000_700.
    let checkpoints = grow(&mut writer, &[300, 700], "").await;
    let store = Store::open(&url).unwrap();
    let keys = vec![TrustedKey::always(key().verifier())];
    let tiles_before: Vec<String> = store
        .list("tile/")
        .await
        .unwrap()
        .into_iter()
        .filter(|p| !p.starts_with("tile/entries"))
        .collect();

    let pruned = prune(&store, ORIGIN, &key(), &[], 1_700_000_000_500).await.unwrap();
    // Bundle 0 (entries 0..256) is wholly older; bundle 1 holds newer entries too.
    assert_eq!(pruned.min_index, 256);
    assert_eq!(pruned.bundles, 1);
    assert!(pruned.blobs > 100, "{pruned:?}");
    assert!(store.get("tile/entries/000").await.unwrap().is_none());
    let tiles_after: Vec<String> = store
        .list("tile/")
        .await
        .unwrap()
        .into_iter()
        .filter(|p| !p.starts_with("tile/entries"))
        .collect();
    assert_eq!(tiles_before, tiles_after, "pruning never removes a leaf hash");

    let report = verify(&store, &options(keys.clone())).await.unwrap();
    assert_eq!(report.min_index, 256);
    assert_eq!(report.size, 700);
    assert_eq!(report.entries_checked, 700 - 256);
    let mut trusted = options(keys.clone());
    trusted.trusted_checkpoint = Some(checkpoints[0].clone());
    verify(&store, &trusted).await.unwrap();

    // A bundle above the minimum index is still required.
    let copy = Store::open(&dir.path().join("copy").display().to_string()).unwrap();
    copy_store(&store, &copy).await;
    copy.delete("tile/entries/001").await.unwrap();
    let e = verify(&copy, &options(keys.clone())).await.unwrap_err();
    assert_eq!(
        (e.location.as_str(), e.reason.as_str()),
        ("tile/entries/001", "missing")
    );

    // A prune mark not signed by the log's key is refused.
    let forged = Note::sign(
        &PruneMark {
            origin: ORIGIN.into(),
            min_index: 512,
            time_ms: 0,
        }
        .body(),
        &[&other_key()],
    );
    copy.put_overwrite("prune/512", Bytes::from(forged.to_text()))
        .await
        .unwrap();
    let e = verify(&copy, &options(keys.clone())).await.unwrap_err();
    assert_eq!(e.location, "prune/512");

    // The writer carries on after a prune.
    let mut writer = LogWriter::open(store.clone(), ORIGIN, vec![key()], 700).await.unwrap();
    grow(&mut writer, &[900], "").await;
    assert_eq!(verify(&store, &options(keys)).await.unwrap().size, 900);
}

#[tokio::test]
async fn rotated_keys_count_only_in_their_window() {
    let dir = tempfile::tempdir().unwrap();
    let url = dir.path().display().to_string();
    let old = key();
    let new = SigningKey::from_seed(ORIGIN, [9; 32]).unwrap();
    // During the overlap both keys sign; after it only the new one.
    let mut writer = new_log(&url, vec![old.clone(), new.clone()]).await;
    grow(&mut writer, &[100], "").await;
    let store = Store::open(&url).unwrap();
    let window = |k: &SigningKey, from: Option<i64>, until: Option<i64>| TrustedKey {
        key: k.verifier(),
        not_before_ms: from,
        not_after_ms: until,
    };
    let t100 = 1_700_000_000_100;
    let report = verify(
        &store,
        &options(vec![window(&old, None, Some(t100)), window(&new, Some(t100), None)]),
    )
    .await
    .unwrap();
    assert_eq!(report.signers.len(), 2);
    // A verifier that only knows the new key accepts the overlap checkpoints too.
    verify(&store, &options(vec![window(&new, Some(t100), None)]))
        .await
        .unwrap();

    let mut writer = LogWriter::open(store.clone(), ORIGIN, vec![new.clone()], 100)
        .await
        .unwrap();
    grow(&mut writer, &[200], "").await;
    verify(
        &store,
        &options(vec![window(&old, None, Some(t100)), window(&new, Some(t100), None)]),
    )
    .await
    .unwrap();

    // A checkpoint signed only by the retired key after its window is refused.
    let mut stale = LogWriter::open(store.clone(), ORIGIN, vec![old.clone()], 200)
        .await
        .unwrap();
    grow(&mut stale, &[300], "").await;
    let e = verify(
        &store,
        &options(vec![window(&old, None, Some(t100)), window(&new, Some(t100), None)]),
    )
    .await
    .unwrap_err();
    assert_eq!(e.location, "checkpoint");
    assert!(e.reason.contains("not valid at its time"), "{e}");
}
