//! Packages through an already-running egress proxy (`[executor.egress] proxy`): the resolve
//! container, and the install step re-fetching an approved wheel pinned by its hash, reach a
//! standalone `airlock-egress` server (here in this process, listening on every address as it
//! would on the Docker host) through a session the executor opens on its control address, and
//! the session's records come back as egress events. The index is a real
//! PEP 503 index on loopback, pinned in the proxy's own configuration only: the executor's own
//! rules (the defaults) would refuse it, so a successful install proves the proxy was used.

mod common;

use airlock_egress::{EgressConfig, EgressServer};
use airlock_executor::SandboxEvent;
use airlock_protocol::Language;
use common::{config, job, run_ok, start, text};
use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};

/// One pure-Python wheel, `airlock-probe 1.0` (`VALUE = 'probe ok'`), and its index page.
const MAKE_INDEX: &str = r##"
import base64, hashlib, os, sys, zipfile
root = sys.argv[1]
os.makedirs(os.path.join(root, "files"))
os.makedirs(os.path.join(root, "simple", "airlock-probe"))
dist = "airlock_probe-1.0.dist-info"
files = {
    "airlock_probe/__init__.py": b"VALUE = 'probe ok'\n",
    f"{dist}/METADATA": b"Metadata-Version: 2.1\nName: airlock-probe\nVersion: 1.0\n",
    f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: airlock-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = [f"{p},sha256={base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b'=').decode()},{len(d)}" for p, d in files.items()]
files[f"{dist}/RECORD"] = ("\n".join(record + [f"{dist}/RECORD,,"]) + "\n").encode()
name = "airlock_probe-1.0-py3-none-any.whl"
with zipfile.ZipFile(os.path.join(root, "files", name), "w") as archive:
    for member, data in files.items():
        archive.writestr(member, data)
digest = hashlib.sha256(open(os.path.join(root, "files", name), "rb").read()).hexdigest()
with open(os.path.join(root, "simple", "airlock-probe", "index.html"), "w") as f:
    f.write(f'<a href="../../files/{name}#sha256={digest}">{name}</a>\n')
print(digest)
"##;

struct Index(Child);

impl Drop for Index {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Builds the index in `dir` and serves it on loopback; returns the server, its port and the
/// wheel's SHA-256.
fn serve_index(dir: &std::path::Path) -> (Index, u16, String) {
    let made = Command::new("python3")
        .args(["-c", MAKE_INDEX])
        .arg(dir)
        .output()
        .expect("python3");
    assert!(made.status.success(), "building the index: {made:?}");
    let digest = String::from_utf8_lossy(&made.stdout).trim().to_owned();
    let mut server = Command::new("python3")
        .args(["-u", "-m", "http.server", "--bind", "127.0.0.1", "0", "--directory"])
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 -m http.server");
    let mut banner = String::new();
    BufReader::new(server.stdout.take().expect("stdout"))
        .read_line(&mut banner)
        .expect("banner");
    let port = banner
        .split_whitespace()
        .skip_while(|w| *w != "port")
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {banner:?}"));
    (Index(server), port, digest)
}

fn egress_of(events: &[SandboxEvent]) -> Vec<airlock_protocol::Egress> {
    events
        .iter()
        .filter_map(|e| match e {
            SandboxEvent::Egress(egress) => Some(egress.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn packages_install_through_an_already_running_proxy() {
    let root = tempfile::tempdir().unwrap();
    let (_index, port, digest) = serve_index(&root.path().join("index"));
    let rules = EgressConfig {
        allow_hosts: vec!["index.test".into()],
        index_host: "index.test".into(),
        pinned: [("index.test".to_owned(), format!("http://127.0.0.1:{port}"))].into(),
        ..Default::default()
    };
    let proxy = EgressServer::start("0.0.0.0:0".parse().unwrap(), "127.0.0.1:0".parse().unwrap(), rules)
        .await
        .expect("the standalone proxy");

    let mut cfg = config("ext-proxy");
    cfg.pool.enabled = false;
    cfg.packages.cache_dir = root.path().join("packages");
    cfg.egress.proxy = Some(proxy.control_url());
    let (sandbox, leaks) = start(cfg).await;

    // Resolving: the specs become the wheel, downloaded through the proxy's session and stored
    // by its digest.
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    let wheels = sandbox
        .installer()
        .download(
            "mai.resolve",
            &sandbox.config().images.python,
            &["airlock-probe==1.0".into()],
            sender,
        )
        .await
        .expect("resolving through the standalone proxy");
    let mut fetched = Vec::new();
    while let Ok(event) = receiver.try_recv() {
        fetched.push(event);
    }
    assert_eq!(wheels.len(), 1, "{wheels:?}");
    assert_eq!(wheels[0].file, "airlock_probe-1.0-py3-none-any.whl");
    assert_eq!(wheels[0].sha256.as_str(), format!("sha256:{digest}"));
    let egress = egress_of(&fetched);
    assert!(
        egress
            .iter()
            .any(|e| e.url.ends_with("/simple/airlock-probe/") && e.allowed),
        "the index page went through the proxy's session: {egress:?}"
    );

    // Installing on an executor whose store lacks the wheel (another host's): it is fetched
    // again, pinned by its hash, through the same proxy.
    std::fs::remove_dir_all(root.path().join("packages").join("wheels")).expect("emptying the wheel store");
    let mut program = job(
        Language::Python,
        "import airlock_probe\nprint(airlock_probe.VALUE)\n",
        airlock_executor::SandboxConfig::default().quotas.unknown,
    );
    program.packages = wheels;
    let (report, events) = run_ok(&sandbox, program).await;
    assert_eq!(text(&report.stdout), "probe ok\n", "{}", text(&report.stderr));
    let egress = egress_of(&events);
    assert!(
        egress
            .iter()
            .any(|e| e.url.ends_with("airlock_probe-1.0-py3-none-any.whl") && e.allowed && e.bytes > 0),
        "the wheel went through the proxy's session: {egress:?}"
    );
    sandbox.shutdown().await;
    proxy.stop().await;
    leaks.assert_none();
}
