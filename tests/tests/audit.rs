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
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
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
    assert!(
        text.contains("entry") || text.contains("bundle"),
        "the failure should name the entry: {text}"
    );

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
    assert!(
        text.contains("entry 1"),
        "the failure should name entry 1, the first out of place: {text}"
    );
}

/// A TCP proxy in front of a server that goes away for good after it has forwarded `limit`
/// HTTP GET requests: the connections are cut and new ones refused, as when a store becomes
/// unreachable in the middle of a long read.
struct CuttingProxy {
    port: u16,
    cut: std::sync::Arc<tokio::sync::Notify>,
}

impl CuttingProxy {
    async fn start(upstream: u16, limit: usize) -> CuttingProxy {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("proxy bind");
        let port = listener.local_addr().expect("proxy address").port();
        let cut = Arc::new(tokio::sync::Notify::new());
        let gets = Arc::new(AtomicUsize::new(0));
        let signal = cut.clone();
        tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            loop {
                let accepted = tokio::select! {
                    _ = signal.notified() => break,
                    accepted = listener.accept() => accepted,
                };
                let Ok((mut client, _)) = accepted else { break };
                let (gets, signal) = (gets.clone(), signal.clone());
                connections.spawn(async move {
                    let Ok(mut server) = tokio::net::TcpStream::connect(("127.0.0.1", upstream)).await else {
                        return;
                    };
                    let (mut client_read, mut client_write) = client.split();
                    let (mut server_read, mut server_write) = server.split();
                    let requests = async {
                        let mut buffer = vec![0u8; 64 * 1024];
                        loop {
                            let n = match client_read.read(&mut buffer).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => n,
                            };
                            let seen = buffer[..n].windows(4).filter(|w| w == b"GET ").count();
                            if gets.fetch_add(seen, Ordering::SeqCst) + seen > limit {
                                signal.notify_waiters();
                                return;
                            }
                            if server_write.write_all(&buffer[..n]).await.is_err() {
                                return;
                            }
                        }
                    };
                    let replies = tokio::io::copy(&mut server_read, &mut client_write);
                    tokio::select! {
                        _ = requests => {}
                        _ = replies => {}
                    }
                });
            }
            // Cut: every connection dropped, the listener closed (new connections refused).
            connections.abort_all();
        });
        CuttingProxy { port, cut }
    }
}

impl Drop for CuttingProxy {
    fn drop(&mut self) {
        self.cut.notify_waiters();
    }
}

/// Writes a log of `size` entries (requests with output large enough for blobs) to `url`.
async fn write_log(url: &str, key: &airlock_protocol::SigningKey, size: u64) {
    use airlock_auditlog::entry::Prepared;
    use airlock_protocol::{Envelope, Event, OutputChunk, OutputStream, Producer, RequestId};
    let store = airlock_auditlog::Store::open(url).expect("store");
    let mut writer = airlock_auditlog::writer::LogWriter::open(store, key.name(), vec![key.clone()], 0)
        .await
        .expect("writer");
    while writer.size() < size {
        let items: Vec<Prepared> = (writer.size()..(writer.size() + 100).min(size))
            .map(|i| {
                let rid = RequestId::parse(&format!("mai.r{}", i / 2)).expect("id");
                let chunk = OutputChunk {
                    stream: OutputStream::Stdout,
                    seq: u32::try_from(i).expect("a small log"),
                    data: format!("{i:0>400}\n").into_bytes(),
                };
                Prepared::from_envelope(
                    Envelope::new(rid, Producer::Executor, Event::Output(chunk)),
                    Some(i + 1),
                    None,
                )
            })
            .collect();
        let batch = writer
            .prepare(items, airlock_protocol::now_ms(), vec![])
            .expect("batch");
        writer.commit_unguarded(batch).await.expect("commit");
    }
}

/// `airlock audit verify` tells an outage from tampering: a store that stops answering in the
/// middle of a verification ends it as INCOMPLETE with status 5 (nothing concluded), never as a
/// failed verification; the same log read directly verifies (0); damaged, it fails with 1.
#[tokio::test(flavor = "multi_thread")]
async fn a_store_that_fails_mid_verification_is_an_outage_not_tampering() {
    use airlock_auditlog::testing::SeaweedFs;
    let s3 = SeaweedFs::start("airlock-outage").await;
    let key = airlock_protocol::SigningKey::generate("airlock.test/outage").expect("key");
    let url = s3.url("log");
    write_log(&url, &key, 700).await;
    let home = tempfile::tempdir().expect("home");
    let verify = |url: String| {
        let key = key.verifier().to_string();
        let home = home.path().to_owned();
        async move {
            tokio::task::spawn_blocking(move || {
                std::process::Command::new(airlock_tests::airlock_bin())
                    .arg("--home")
                    .arg(home)
                    .args([
                        "audit",
                        "verify",
                        "--store",
                        &url,
                        "--key",
                        &key,
                        "--origin",
                        "airlock.test/outage",
                    ])
                    .output()
                    .expect("airlock audit verify")
            })
            .await
            .expect("verify")
        }
    };
    let text = |out: &std::process::Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };

    let whole = verify(url.clone()).await;
    assert_eq!(whole.status.code(), Some(0), "{}", text(&whole));

    // Through a proxy cut after a few reads: past the checkpoint and the tiles, into the entries.
    let proxy = CuttingProxy::start(s3.s3_port, 8).await;
    let proxied = url.replace(
        &format!("127.0.0.1:{}", s3.s3_port),
        &format!("127.0.0.1:{}", proxy.port),
    ) + "&max_retries=1&retry_timeout=2s";
    let cut = verify(proxied).await;
    let said = text(&cut);
    assert_eq!(cut.status.code(), Some(5), "an outage must exit 5: {said}");
    assert!(
        said.contains("INCOMPLETE") && said.contains("nothing was concluded"),
        "{said}"
    );
    assert!(
        !said.contains("FAILED"),
        "an outage said as a failed verification: {said}"
    );
    assert!(
        said.contains("tile/") || said.contains("blob/"),
        "it should name what it could not read: {said}"
    );
    drop(proxy);

    // The same log, damaged: a failed verification, status 1.
    let store = airlock_auditlog::Store::open(&url).expect("store");
    let bundle = "tile/entries/000";
    let mut bytes = store.get(bundle).await.expect("get").expect("bundle").to_vec();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    store
        .put_overwrite(bundle, bytes::Bytes::from(bytes))
        .await
        .expect("tamper");
    let damaged = verify(url.clone()).await;
    assert_eq!(damaged.status.code(), Some(1), "{}", text(&damaged));
    assert!(text(&damaged).contains("FAILED (inclusion)"), "{}", text(&damaged));
}
