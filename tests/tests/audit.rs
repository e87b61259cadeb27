//! The audit log of a real run verifies, also with the stack stopped, and stops verifying after
//! a change, a deletion or a reordering of its stored data.

use airlock_tests::Stack;
use std::path::{Path, PathBuf};

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir").flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

/// The level-0 entry bundle holding the first entries (a full tile or its largest partial).
fn first_bundle(store: &Path) -> PathBuf {
    let full = store.join("tile/entries/000");
    if full.exists() {
        return full;
    }
    let partials = store.join("tile/entries/000.p");
    let widest = std::fs::read_dir(&partials)
        .expect("partial bundles")
        .flatten()
        .max_by_key(|e| e.file_name().to_string_lossy().parse::<u32>().unwrap_or(0))
        .expect("a bundle");
    widest.path()
}

/// Entries of a bundle: big-endian u16 length, then the entry.
fn split_bundle(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut entries = Vec::new();
    let mut at = 0;
    while at + 2 <= bytes.len() {
        let len = u16::from_be_bytes([bytes[at], bytes[at + 1]]) as usize;
        entries.push(bytes[at + 2..at + 2 + len].to_vec());
        at += 2 + len;
    }
    entries
}

fn join_bundle(entries: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in entries {
        out.extend_from_slice(&(e.len() as u16).to_be_bytes());
        out.extend_from_slice(e);
    }
    out
}

fn verify(stack: &Stack, store: &Path) -> (bool, String) {
    let out = stack.output(&["audit", "verify", "--store", store.to_str().expect("path")]);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_log_of_a_run_verifies_and_detects_change_deletion_and_reordering() {
    let mut stack = tokio::task::spawn_blocking(Stack::start).await.expect("stack");
    let (json, status) = stack.run_code("logged.py", "print('in the log')\n", &[]);
    assert_eq!(status, 0, "{json}");
    let (ok, text) = verify(&stack, &stack.path().join("audit"));
    assert!(ok, "the live log does not verify: {text}");

    // Stopped: the log verifies from the store alone.
    stack.stop();
    let store = stack.path().join("audit");
    let (ok, text) = verify(&stack, &store);
    assert!(ok, "the stopped stack's log does not verify: {text}");

    let scratch = tempfile::tempdir().expect("scratch");

    let changed = scratch.path().join("changed");
    copy_dir(&store, &changed);
    let bundle = first_bundle(&changed);
    let mut bytes = std::fs::read(&bundle).expect("bundle");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(&bundle, bytes).expect("write");
    let (ok, text) = verify(&stack, &changed);
    assert!(!ok, "a changed byte went unnoticed: {text}");
    assert!(text.contains("entry") || text.contains("bundle"), "the failure should name the entry: {text}");

    let deleted = scratch.path().join("deleted");
    copy_dir(&store, &deleted);
    std::fs::remove_file(first_bundle(&deleted)).expect("delete");
    let (ok, text) = verify(&stack, &deleted);
    assert!(!ok, "a deleted bundle went unnoticed: {text}");

    let reordered = scratch.path().join("reordered");
    copy_dir(&store, &reordered);
    let bundle = first_bundle(&reordered);
    let mut entries = split_bundle(&std::fs::read(&bundle).expect("bundle"));
    assert!(entries.len() >= 3, "too few entries to reorder");
    entries.swap(1, 2);
    std::fs::write(&bundle, join_bundle(&entries)).expect("write");
    let (ok, text) = verify(&stack, &reordered);
    assert!(!ok, "swapped entries went unnoticed: {text}");
    assert!(text.contains("entry 1"), "the failure should name entry 1, the first out of place: {text}");
}
