//! Dependencies without open internet, through the whole pipeline: `airlock run --packages`
//! installs wheels in a separate container whose only way out is the egress proxy, then runs the
//! program with no network and the packages mounted read-only.
//!
//! The index is a real PEP 503 index served on loopback by Python's `http.server`, pinned in
//! the egress config (an operator's local mirror); a link in it to a host that is not allowed
//! must be refused by the proxy. The last test installs a real package from PyPI: this machine
//! class reaches PyPI (`ops/install-deps` installs from it), so it is not skipped when PyPI is
//! missing; it fails.

use airlock_protocol::{Event, EventKind};
use airlock_tests::{Stack, events_of};
use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// Builds two pure-Python wheels and a simple index over them:
/// - `airlock-probe 1.0`, a module with `VALUE = 'probe ok'`;
/// - `airlock-exfil 1.0`, whose only file link points at a host outside the allow-list.
const MAKE_INDEX: &str = r##"
import base64, hashlib, os, sys, zipfile
root = sys.argv[1]
os.makedirs(os.path.join(root, "files"))

def wheel(name, version, module_source):
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": module_source,
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: {version}\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: airlock-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{dist}/RECORD,,")
    files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    filename = f"{name}-{version}-py3-none-any.whl"
    path = os.path.join(root, "files", filename)
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in files.items():
            archive.writestr(member, data)
    with open(path, "rb") as f:
        return filename, hashlib.sha256(f.read()).hexdigest()

def project(project_name, link):
    directory = os.path.join(root, "simple", project_name)
    os.makedirs(directory)
    with open(os.path.join(directory, "index.html"), "w") as f:
        f.write(f'<!DOCTYPE html><html><body><a href="{link}">{link.split("/")[-1].split("#")[0]}</a></body></html>\n')

probe, probe_sha = wheel("airlock_probe", "1.0", b"VALUE = 'probe ok'\n")
project("airlock-probe", f"../../files/{probe}#sha256={probe_sha}")
exfil, exfil_sha = wheel("airlock_exfil", "1.0", b"VALUE = 'should never arrive'\n")
project("airlock-exfil", f"http://not-allowed.example/files/{exfil}#sha256={exfil_sha}")
"##;

/// A local package index on 127.0.0.1, stopped when dropped.
struct LocalIndex {
    server: Child,
    port: u16,
    _root: tempfile::TempDir,
}

impl LocalIndex {
    fn start() -> LocalIndex {
        let root = tempfile::tempdir().expect("index dir");
        let tree = root.path().join("index");
        let made = Command::new("python3")
            .args(["-c", MAKE_INDEX])
            .arg(&tree)
            .output()
            .expect("python3 (needed to build the test index)");
        assert!(made.status.success(), "building the index: {made:?}");
        let mut server = Command::new("python3")
            .args(["-u", "-m", "http.server", "--bind", "127.0.0.1", "0", "--directory"])
            .arg(&tree)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 -m http.server");
        // "Serving HTTP on 127.0.0.1 port 40123 (http://127.0.0.1:40123/) ..."
        let mut line = String::new();
        let stdout = server.stdout.take().expect("server stdout");
        BufReader::new(stdout).read_line(&mut line).expect("server banner");
        let port = line
            .split_whitespace()
            .skip_while(|w| *w != "port")
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in the server's banner {line:?}"));
        LocalIndex {
            server,
            port,
            _root: root,
        }
    }

    /// The executor's egress config for this index, as an operator would pin a local mirror.
    fn egress_config(&self) -> String {
        format!(
            "[executor.egress]\nallow_hosts = [\"index.test\"]\nindex_host = \"index.test\"\nindex_path = \"/simple/\"\n\
             [executor.egress.pinned]\n\"index.test\" = \"http://127.0.0.1:{}\"\n",
            self.port
        )
    }
}

impl Drop for LocalIndex {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

fn egress_of(events: &[airlock_protocol::Envelope]) -> Vec<airlock_protocol::Egress> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Egress(egress) => Some(egress.clone()),
            _ => None,
        })
        .collect()
}

fn write_program(dir: &Path, name: &str, code: &str) -> std::path::PathBuf {
    let file = dir.join(name);
    std::fs::write(&file, code).expect("program");
    file
}

#[tokio::test(flavor = "multi_thread")]
async fn packages_come_only_through_the_proxy_are_cached_and_stay_with_their_request() {
    let index = LocalIndex::start();
    let config = index.egress_config();
    let stack = tokio::task::spawn_blocking(move || Stack::start_with(&config))
        .await
        .expect("stack");
    let programs = tempfile::tempdir().expect("programs");
    let uses_probe = write_program(
        programs.path(),
        "uses_probe.py",
        "import airlock_probe, os\nprint(airlock_probe.VALUE)\nprint(airlock_probe.__file__.startswith('/opt/airlock/packages'))\n",
    );

    // First install: every fetch goes through the proxy and is an audited egress event.
    let (json, status) = stack.run_json(&uses_probe, &["--packages", "airlock-probe==1.0"]);
    assert_eq!(status, 0, "{json}\n{}", stack.diagnostics());
    assert_eq!(json["stdout"], "probe ok\nTrue\n", "{json}");
    let rid = json["request_id"].as_str().expect("request id");
    let events = events_of(&stack, rid).await;
    let egress = egress_of(&events);
    assert!(
        egress.len() >= 2,
        "the index page and the wheel are two audited fetches: {egress:?}"
    );
    for fetch in &egress {
        assert!(fetch.allowed, "{fetch:?}");
        assert_eq!(fetch.host, "index.test", "{fetch:?}");
        assert!(fetch.method == "GET" || fetch.method == "HEAD", "{fetch:?}");
        assert_eq!(fetch.status, Some(200), "{fetch:?}");
    }
    assert!(
        egress.iter().any(|f| f.url.ends_with("airlock_probe-1.0-py3-none-any.whl") && f.bytes > 0),
        "the wheel's download is recorded with its size: {egress:?}"
    );
    let egress_audited = events.iter().filter(|e| e.kind() == EventKind::Egress).count();
    assert_eq!(egress_audited, egress.len());

    // The same set again comes from the cache: nothing is fetched.
    let (json, status) = stack.run_json(&uses_probe, &["--packages", "airlock_probe==1.0"]);
    assert_eq!(status, 0, "{json}");
    assert_eq!(json["stdout"], "probe ok\nTrue\n", "{json}");
    let again = events_of(&stack, json["request_id"].as_str().expect("rid")).await;
    assert_eq!(egress_of(&again), vec![], "a cached set is not fetched again");

    // The installed packages are mounted read-only, and only for the request that named them.
    let (json, status) = stack.run_code(
        "tamper.py",
        "import airlock_probe, pathlib\npathlib.Path(airlock_probe.__file__).write_text('VALUE = 1')\n",
        &["--packages", "airlock-probe==1.0"],
    );
    assert_eq!(status, 1, "writing into the package mount must fail: {json}");
    assert!(
        json["stderr"].as_str().unwrap_or("").contains("Read-only file system"),
        "{json}"
    );
    let (json, status) = stack.run_json(&uses_probe, &[]);
    assert_eq!(status, 1, "{json}");
    assert!(
        json["stderr"].as_str().unwrap_or("").contains("ModuleNotFoundError"),
        "a request without --packages sees none: {json}"
    );

    // A wheel linked from a host that is not allowed is refused by the proxy; the install fails
    // and the program never runs.
    let json = install_fails_before_the_program_runs(&stack, "airlock-exfil==1.0");
    let refused = egress_of(&events_of(&stack, json["request_id"].as_str().expect("rid")).await);
    assert!(
        refused.iter().any(|f| !f.allowed && f.host == "not-allowed.example"),
        "the refused fetch is audited with its host: {refused:?}"
    );

    // A package the index does not have fails the same way.
    install_fails_before_the_program_runs(&stack, "airlock-missing==9.9");
}

/// Submits a program naming `package`: the request must fail and the program must not run.
fn install_fails_before_the_program_runs(stack: &Stack, package: &str) -> serde_json::Value {
    let marker = "the program ran";
    let (json, status) = stack.run_code("never.py", &format!("print({marker:?})\n"), &["--packages", package]);
    assert_ne!(status, 0, "{package}: {json}");
    assert!(!json["stdout"].as_str().unwrap_or("").contains(marker), "{package}: {json}");
    json
}

#[tokio::test(flavor = "multi_thread")]
async fn a_real_package_from_pypi_through_the_proxy() {
    let stack = tokio::task::spawn_blocking(Stack::start).await.expect("stack");
    let (json, status) = stack.run_code(
        "six_version.py",
        "import six\nprint(six.__version__)\n",
        &["--packages", "six==1.16.0"],
    );
    assert_eq!(
        status,
        0,
        "installing six==1.16.0 from PyPI through the egress proxy (this machine class reaches PyPI): {json}\n{}",
        stack.diagnostics()
    );
    assert_eq!(json["stdout"], "1.16.0\n", "{json}");
    let egress = egress_of(&events_of(&stack, json["request_id"].as_str().expect("rid")).await);
    assert!(
        egress.iter().any(|f| f.allowed && f.host == "pypi.org"),
        "{egress:?}"
    );
    assert!(
        egress.iter().any(|f| f.allowed && f.host == "files.pythonhosted.org" && f.bytes > 0),
        "{egress:?}"
    );
}
