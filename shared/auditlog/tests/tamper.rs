//! The tamper matrix: a real log, on a local directory and on a real SeaweedFS S3 server, each
//! kind of damage applied to a fresh copy, and `verify` must name the right place and reason.

mod common;

use airlock_auditlog::entry::Entry;
use airlock_auditlog::store::Store;
use airlock_auditlog::tile::parse_bundle;
use airlock_auditlog::trust::TrustedKey;
use airlock_auditlog::verify::{VerifyError, VerifyErrorKind as Kind, VerifyOptions, verify};
use bytes::Bytes;
use common::*;

/// 600 entries: two full bundles and a partial one, so tiles exist at levels 0 and 1.
const SIZES: [u64; 4] = [100, 300, 400, 600];

fn options(trusted: Option<String>) -> VerifyOptions {
    VerifyOptions {
        origin: ORIGIN.to_owned(),
        keys: vec![TrustedKey::always(key().verifier())],
        trusted_checkpoint: trusted,
        check_blobs: true,
    }
}

struct Fixture {
    /// URL of the pristine log.
    pristine: String,
    /// Checkpoints at each of SIZES.
    checkpoints: Vec<String>,
    /// Makes a fresh URL for a copy.
    base: Box<dyn Fn(&str) -> String>,
    /// A copy of the log as it was at size 300 (a backup).
    backup_300: String,
}

async fn fixture(base: Box<dyn Fn(&str) -> String>) -> Fixture {
    let pristine = base("pristine");
    let backup = base("backup-300");
    let mut writer = new_log(&pristine, vec![key()]).await;
    let mut checkpoints = grow(&mut writer, &SIZES[..2], "").await;
    copy_store(&writer.store, &Store::open(&backup).unwrap()).await;
    checkpoints.extend(grow(&mut writer, &SIZES[2..], "").await);
    Fixture {
        pristine,
        checkpoints,
        base,
        backup_300: backup,
    }
}

impl Fixture {
    async fn copy(&self, name: &str) -> Store {
        let to = Store::open(&(self.base)(name)).unwrap();
        copy_store(&Store::open(&self.pristine).unwrap(), &to).await;
        to
    }
}

async fn flip_byte(store: &Store, path: &str, offset: usize) {
    let mut bytes = store.get(path).await.unwrap().unwrap().to_vec();
    bytes[offset] ^= 0x01;
    store.put_overwrite(path, Bytes::from(bytes)).await.unwrap();
}

/// Byte offset of entry `i` (its first content byte) in a bundle.
fn entry_offset(bundle: &[u8], i: usize) -> usize {
    let mut at = 0;
    for _ in 0..i {
        at += 2 + u16::from_be_bytes([bundle[at], bundle[at + 1]]) as usize;
    }
    at + 2
}

async fn rewrite_bundle(store: &Store, path: &str, width: u64, edit: impl FnOnce(&mut Vec<Vec<u8>>)) {
    let bytes = store.get(path).await.unwrap().unwrap();
    let mut entries: Vec<Vec<u8>> = parse_bundle(&bytes, width)
        .unwrap()
        .into_iter()
        .map(<[u8]>::to_vec)
        .collect();
    edit(&mut entries);
    let mut out = Vec::new();
    for e in &entries {
        airlock_auditlog::tile::push_bundle_entry(&mut out, e).unwrap();
    }
    store.put_overwrite(path, Bytes::from(out)).await.unwrap();
}

fn expect(
    result: Result<airlock_auditlog::Verified, VerifyError>,
    location: &str,
    reason: &str,
    case: &str,
    kind: Kind,
) {
    match result {
        Ok(report) => panic!("{case}: tampering not detected (verified {} entries)", report.size),
        Err(e) => {
            assert!(
                e.location.starts_with(location) && e.reason.contains(reason),
                "{case}: expected `{location}: ...{reason}...`, got `{e}`"
            );
            assert_eq!(e.kind, kind, "{case}: {e}");
            assert!(!e.is_outage(), "{case}: tampering said as an outage");
            eprintln!("{case}: detected as `{e}`");
        }
    }
}

async fn tamper_matrix(f: Fixture) {
    let pristine = Store::open(&f.pristine).unwrap();
    let report = verify(&pristine, &options(None)).await.unwrap();
    assert_eq!(report.size, 600);
    assert_eq!(report.entries_checked, 600);
    assert!(report.blobs_checked >= 250, "{}", report.blobs_checked);
    let report = verify(&pristine, &options(Some(f.checkpoints[1].clone())))
        .await
        .unwrap();
    assert_eq!(report.consistent_with, Some(300));

    // A changed byte inside entry 5 of the first bundle.
    let s = f.copy("entry-byte").await;
    let bundle = s.get("tile/entries/000").await.unwrap().unwrap();
    flip_byte(&s, "tile/entries/000", entry_offset(&bundle, 5) + 20).await;
    expect(
        verify(&s, &options(None)).await,
        "entry 5 ",
        "is not leaf 5",
        "changed entry byte",
        Kind::Inclusion,
    );

    // A changed byte in the partial bundle's last entry.
    let s = f.copy("partial-entry-byte").await;
    let bundle = s.get("tile/entries/002.p/88").await.unwrap().unwrap();
    flip_byte(&s, "tile/entries/002.p/88", entry_offset(&bundle, 87) + 10).await;
    expect(
        verify(&s, &options(None)).await,
        "entry 599 ",
        "is not leaf 599",
        "changed partial bundle byte",
        Kind::Inclusion,
    );

    // A changed byte in a level-0 hash tile, then in a level-1 tile.
    let s = f.copy("tile0-byte").await;
    flip_byte(&s, "tile/0/001", 32 * 7 + 3).await;
    expect(
        verify(&s, &options(None)).await,
        "tile/0/001",
        "hash 7 is not the leaf hash of entry 263",
        "changed hash tile byte",
        Kind::Inclusion,
    );
    let s = f.copy("tile1-byte").await;
    flip_byte(&s, "tile/1/000.p/2", 40).await;
    expect(
        verify(&s, &options(None)).await,
        "tile/1/000.p/2",
        "hash 1 is not the hash",
        "changed level-1 tile byte",
        Kind::Inclusion,
    );

    // A changed byte in a blob (the code of request 3).
    let s = f.copy("blob-byte").await;
    let entries = airlock_auditlog::LogReader::new(s.clone())
        .entries(12, 13, 600)
        .await
        .unwrap();
    let code = entries[0].1.blobs["code"].path();
    flip_byte(&s, &code, 0).await;
    expect(
        verify(&s, &options(None)).await,
        &code,
        "content hashes to",
        "changed blob byte",
        Kind::Blob,
    );

    // A changed byte in the checkpoint: in the root, then in the signature.
    let s = f.copy("checkpoint-root").await;
    // The root is the third line. Swap its first base64 character for another valid one:
    // flipping a bit could make it unparseable (`@` is not base64), which is a different failure.
    let mut bytes = s.get("checkpoint").await.unwrap().unwrap().to_vec();
    let mut newlines = bytes.iter().enumerate().filter(|&(_, &b)| b == b'\n').map(|(i, _)| i);
    let root_at = newlines.nth(1).unwrap() + 1;
    bytes[root_at] = if bytes[root_at] == b'A' { b'B' } else { b'A' };
    s.put_overwrite("checkpoint", Bytes::from(bytes)).await.unwrap();
    expect(
        verify(&s, &options(None)).await,
        "checkpoint",
        "",
        "changed checkpoint byte",
        Kind::Signature,
    );
    let s = f.copy("checkpoint-sig").await;
    // Swap one base64 character of the signature for another valid one (flipping a bit could
    // make it unparseable, which is a different failure).
    let mut bytes = s.get("checkpoint").await.unwrap().unwrap().to_vec();
    let at = bytes.len() - 10;
    bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
    s.put_overwrite("checkpoint", Bytes::from(bytes)).await.unwrap();
    expect(
        verify(&s, &options(None)).await,
        "checkpoint",
        "does not verify",
        "changed checkpoint signature",
        Kind::Signature,
    );

    // A deleted bundle; a deleted tile.
    let s = f.copy("deleted-bundle").await;
    s.delete("tile/entries/001").await.unwrap();
    expect(
        verify(&s, &options(None)).await,
        "tile/entries/001",
        "missing",
        "deleted bundle",
        Kind::Missing,
    );
    let s = f.copy("deleted-tile").await;
    s.delete("tile/0/001").await.unwrap();
    expect(
        verify(&s, &options(None)).await,
        "tile/0/001",
        "missing",
        "deleted hash tile",
        Kind::Missing,
    );
    let s = f.copy("deleted-blob").await;
    s.delete(&code).await.unwrap();
    expect(
        verify(&s, &options(None)).await,
        &code,
        "missing",
        "deleted blob",
        Kind::Missing,
    );

    // Two entries swapped.
    let s = f.copy("swapped").await;
    rewrite_bundle(&s, "tile/entries/000", 256, |e| e.swap(3, 4)).await;
    expect(
        verify(&s, &options(None)).await,
        "entry 3 ",
        "(it says it is entry 4)",
        "swapped entries",
        Kind::Inclusion,
    );

    // An entry inserted: the bundle grows by one; or the attacker keeps its width by dropping
    // the bundle's last entry.
    let forged = {
        let bundle = pristine.get("tile/entries/000").await.unwrap().unwrap();
        let raw = parse_bundle(&bundle, 256).unwrap()[9].to_vec();
        let mut entry = Entry::decode(&raw).unwrap();
        entry.request_id = "req-forged".into();
        entry.encode().unwrap()
    };
    let s = f.copy("inserted").await;
    rewrite_bundle(&s, "tile/entries/000", 256, |e| e.insert(10, forged.clone())).await;
    expect(
        verify(&s, &options(None)).await,
        "tile/entries/000",
        "holds 257 entries",
        "inserted entry",
        Kind::Malformed,
    );
    let s = f.copy("inserted-same-width").await;
    rewrite_bundle(&s, "tile/entries/000", 256, |e| {
        e.insert(10, forged.clone());
        e.pop();
    })
    .await;
    expect(
        verify(&s, &options(None)).await,
        "entry 10 ",
        "is not leaf 10",
        "inserted entry, width kept",
        Kind::Inclusion,
    );

    // Truncation and rollback: the log restored from the backup taken at size 300, checked
    // against a checkpoint seen at 400; then that backup extended with other events.
    let backup = Store::open(&f.backup_300).unwrap();
    verify(&backup, &options(None)).await.unwrap();
    expect(
        verify(&backup, &options(Some(f.checkpoints[2].clone()))).await,
        "checkpoint",
        "truncated or rolled back",
        "rollback to a backup",
        Kind::Rollback,
    );
    let s = f.copy("truncated").await;
    for path in ["tile/entries/002.p/88", "tile/0/002.p/88"] {
        s.delete(path).await.unwrap();
    }
    s.put_overwrite("checkpoint", Bytes::from(f.checkpoints[1].clone()))
        .await
        .unwrap();
    expect(
        verify(&s, &options(Some(f.checkpoints[3].clone()))).await,
        "checkpoint",
        "truncated or rolled back",
        "truncated log",
        Kind::Rollback,
    );
    let rolled = Store::open(&(f.base)("rolled-back-and-regrown")).unwrap();
    copy_store(&backup, &rolled).await;
    let mut writer = airlock_auditlog::writer::LogWriter::open(rolled.clone(), ORIGIN, vec![key()], 300)
        .await
        .unwrap();
    grow(&mut writer, &[350, 600], "rewritten").await;
    verify(&rolled, &options(None)).await.unwrap();
    expect(
        verify(&rolled, &options(Some(f.checkpoints[2].clone()))).await,
        "checkpoint",
        "not consistent with the trusted checkpoint of size 400",
        "rolled back and regrown",
        Kind::Consistency,
    );
    // A fork at the same size: the regrown log has 600 entries like the trusted checkpoint.
    expect(
        verify(&rolled, &options(Some(f.checkpoints[3].clone()))).await,
        "checkpoint",
        "fork",
        "fork at the same size",
        Kind::Fork,
    );

    // The whole log rebuilt with a changed entry and re-signed with another key.
    let resigned = Store::open(&(f.base)("resigned")).unwrap();
    let mut writer = airlock_auditlog::writer::LogWriter::open(resigned.clone(), ORIGIN, vec![other_key()], 0)
        .await
        .unwrap();
    grow(&mut writer, &SIZES, "edited").await;
    expect(
        verify(&resigned, &options(None)).await,
        "checkpoint",
        "no signature by a trusted key",
        "checkpoint re-signed with another key",
        Kind::Signature,
    );
}

#[tokio::test]
async fn tamper_matrix_on_a_local_directory() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_owned();
    tamper_matrix(fixture(Box::new(move |name| root.join(name).display().to_string())).await).await;
}

#[tokio::test]
async fn tamper_matrix_on_seaweedfs() {
    let s3 = airlock_auditlog::testing::SeaweedFs::start("audit-tamper").await;
    let urls: Vec<String> = Vec::new();
    drop(urls);
    let base = {
        let url = s3.url("PREFIX");
        move |name: &str| url.replace("PREFIX", name)
    };
    tamper_matrix(fixture(Box::new(base)).await).await;
}
