//! Read-only internet through the whole pipeline: `airlock run --network read-only` has the
//! gate grant it (Mai's own code, LOW), the executor put the program on an internal network
//! whose only peer is a proxy of the run's own, and the program fetch a page with Python's
//! urllib from an allow-listed HTTPS origin, while everything else it tries fails: other
//! methods, a body, a long URL, another host, an IP literal, DNS, UDP and raw TCP. Every proxied
//! request is an `egress` event in the request's log; the run's CA differs between runs and the
//! host does not trust it.
//!
//! The origin is a real HTTPS server on loopback (Python's `http.server` wrapped in `ssl`) with
//! a CA of its own, pinned as `docs.test` and given to the proxy as an upstream root, as an
//! operator pins a mirror.

use airlock_protocol::Event;
use airlock_tests::{Stack, events_of};
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};

const PAGE: &str = "read-only page of docs.test";

/// An HTTPS origin for `docs.test` on 127.0.0.1, stopped when dropped.
struct Origin {
    server: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Origin {
    fn start() -> Origin {
        let dir = tempfile::tempdir().expect("origin dir");
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::default();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca_params, ca_key);
        let key = KeyPair::generate().unwrap();
        let leaf = CertificateParams::new(vec!["docs.test".to_owned()])
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        std::fs::write(dir.path().join("ca.pem"), ca.pem()).unwrap();
        std::fs::write(dir.path().join("cert.pem"), leaf.pem()).unwrap();
        std::fs::write(dir.path().join("key.pem"), key.serialize_pem()).unwrap();
        std::fs::create_dir_all(dir.path().join("www")).unwrap();
        std::fs::write(dir.path().join("www/page"), PAGE).unwrap();
        let serve = r#"
import http.server, ssl, sys, functools
root = sys.argv[1]
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=root + "/www")
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(root + "/cert.pem", root + "/key.pem")
server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;
        let mut server = Command::new("python3")
            .args(["-u", "-c", serve])
            .arg(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 (the HTTPS origin)");
        let mut line = String::new();
        BufReader::new(server.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the origin's port");
        let port = line.trim().parse().unwrap_or_else(|_| panic!("no port: {line:?}"));
        Origin { server, port, dir }
    }

    fn config(&self, cache: &std::path::Path) -> String {
        format!(
            "[executor.egress]\nread_only_hosts = [\"docs.test\"]\nupstream_roots = [{:?}]\n\
             [executor.egress.pinned]\n\"docs.test\" = \"https://127.0.0.1:{}\"\n\
             [executor.packages]\ncache_dir = {:?}\n",
            self.dir.path().join("ca.pem").display().to_string(),
            self.port,
            cache.display().to_string(),
        )
    }
}

impl Drop for Origin {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// What the program tries, each printed as `name: ok ...` or `name: error ...`.
const PROBE: &str = r#"
import os, socket, threading, urllib.request, urllib.error
def attempt(name, fn):
    try:
        print(f"{name}: ok {fn()!r}"[:400], flush=True)
    except urllib.error.HTTPError as e:
        print(f"{name}: error HTTP {e.code} {e.read().decode()!r}"[:400], flush=True)
    except Exception as e:
        print(f"{name}: error {type(e).__name__}: {e}"[:400], flush=True)
def fetch(url, **kw):
    return urllib.request.urlopen(urllib.request.Request(url, **kw), timeout=15).read().decode()
attempt("get", lambda: fetch("https://docs.test/page"))
attempt("head", lambda: urllib.request.urlopen(urllib.request.Request("https://docs.test/page", method="HEAD"), timeout=15).status)
attempt("post", lambda: fetch("https://docs.test/page", data=b"secret=1"))
attempt("put", lambda: fetch("https://docs.test/page", data=b"secret=1", method="PUT"))
attempt("get_with_body", lambda: fetch("https://docs.test/page", data=b"secret=1", method="GET"))
attempt("long_url", lambda: fetch("https://docs.test/page?q=" + "x" * 5000))
attempt("other_host", lambda: fetch("https://example.com/"))
attempt("ip_literal", lambda: fetch("https://1.1.1.1/"))
def dns():
    found = []
    worker = threading.Thread(target=lambda: found.append(socket.getaddrinfo("example.com", 443)), daemon=True)
    worker.start()
    worker.join(8)
    if not found:
        raise OSError("no answer")
    return found[0][0][4]
attempt("dns", dns)
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(3)
    s.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01", ("1.1.1.1", 53))
    return s.recvfrom(512)
attempt("udp", udp)
attempt("tcp", lambda: socket.create_connection(("1.1.1.1", 443), timeout=3) and "connected")
attempt("direct", lambda: urllib.request.build_opener(urllib.request.ProxyHandler({})).open("https://docs.test/page", timeout=15).read().decode())
"#;

fn line<'a>(stdout: &'a str, name: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.starts_with(&format!("{name}: ")))
        .unwrap_or_else(|| panic!("no line for {name} in:\n{stdout}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_only_program_fetches_allowed_pages_and_nothing_else() {
    fetches_allowed_pages_and_nothing_else("", "runc").await;
}

/// Under gVisor the container has no network interface at all: the run's proxy is a unix
/// socket mounted into it, reached through the bootstrap's relay on gVisor's loopback. What the
/// program can and cannot do, and what the log records, is the same as under runc.
#[tokio::test(flavor = "multi_thread")]
async fn under_gvisor_a_read_only_program_fetches_allowed_pages_and_nothing_else() {
    fetches_allowed_pages_and_nothing_else(
        "[executor.runtimes]\navailable = [\"runc\", \"runsc\"]\n\n\
         [gate.policy.runtimes]\ngenerated = \"runsc\"\nunavailable = \"deny\"\n",
        "runsc",
    )
    .await;
}

async fn fetches_allowed_pages_and_nothing_else(extra_config: &str, runtime: &str) {
    let origin = Origin::start();
    let cache = tempfile::tempdir().expect("cache");
    let config = origin.config(cache.path()) + extra_config;
    let stack = tokio::task::spawn_blocking(move || Stack::start_with(&config))
        .await
        .expect("stack");

    let (result, _) = stack.run_code("probe.py", PROBE, &["--network", "read-only"]);
    assert_eq!(result["outcome"], "finished", "{result:#}\n{}", stack.diagnostics());
    assert_eq!(result["runtime"], runtime, "{result:#}");
    assert_eq!(result["network"], "read-only", "{result:#}");
    let stdout = result["stdout"].as_str().unwrap_or_default().to_owned();
    eprintln!("{stdout}");
    assert!(line(&stdout, "get").contains(PAGE), "{stdout}");
    assert!(line(&stdout, "head").contains("ok 200"), "{stdout}");
    for (name, why) in [
        ("post", "POST is refused"),
        ("put", "PUT is refused"),
        ("get_with_body", "a request with a body is refused"),
        ("long_url", "more than the 4096 allowed"),
        ("other_host", "example.com is not on the read-only allow-list"),
        ("ip_literal", "IP addresses are refused"),
    ] {
        let shown = line(&stdout, name);
        assert!(shown.contains("error") && shown.contains(why), "{name}: {shown}");
    }
    for name in ["dns", "udp", "tcp", "direct"] {
        assert!(line(&stdout, name).starts_with(&format!("{name}: error")), "{stdout}");
    }

    // Each request through the proxy is in the log: the two allowed, the six refused.
    let id = result["request_id"].as_str().expect("request id").to_owned();
    let egress: Vec<_> = events_of(&stack, &id)
        .await
        .into_iter()
        .filter_map(|e| match e.event {
            Event::Egress(egress) => Some(egress),
            _ => None,
        })
        .collect();
    let allowed: Vec<_> = egress.iter().filter(|e| e.allowed).collect();
    assert_eq!(allowed.len(), 2, "{egress:#?}");
    assert!(allowed.iter().any(|e| e.method == "GET"
        && e.url == "https://docs.test/page"
        && e.status == Some(200)
        && e.bytes == PAGE.len() as u64));
    let refused: Vec<_> = egress.iter().filter(|e| !e.allowed).collect();
    for (method, host) in [
        ("POST", "docs.test"),
        ("PUT", "docs.test"),
        ("GET", "docs.test"),
        ("CONNECT", "example.com"),
        ("CONNECT", "1.1.1.1"),
    ] {
        assert!(
            refused
                .iter()
                .any(|e| e.method == method && e.host == host && e.reason.is_some()),
            "{method} {host} is recorded as refused: {refused:#?}"
        );
    }
    assert!(refused.len() >= 6, "{refused:#?}");

    // The grant is in the decision the executor ran.
    let granted = events_of(&stack, &id).await.into_iter().any(|e| {
        let Event::Decided(decided) = &e.event else {
            return false;
        };
        decided
            .signed
            .peek::<airlock_protocol::Decision>()
            .and_then(|d| d.outcome.grant())
            .is_some_and(|g| g.network == airlock_protocol::NetworkMode::ReadOnly)
    });
    assert!(granted, "the decision grants read-only");

    // Without asking, the same program has no network at all, and nothing is proxied.
    let (plain, _) = stack.run_code("plain.py", PROBE, &[]);
    let plain_out = plain["stdout"].as_str().unwrap_or_default();
    assert!(line(plain_out, "get").starts_with("get: error"), "{plain_out}");
    let plain_id = plain["request_id"].as_str().expect("request id");
    assert!(
        !events_of(&stack, plain_id)
            .await
            .iter()
            .any(|e| matches!(e.event, Event::Egress(_)))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_run_has_its_own_ca_which_the_host_does_not_trust() {
    let origin = Origin::start();
    let cache = tempfile::tempdir().expect("cache");
    let config = origin.config(cache.path());
    let stack = tokio::task::spawn_blocking(move || Stack::start_with(&config))
        .await
        .expect("stack");
    let show = "print(open('/etc/airlock/run-ca.pem').read())\n";
    let mut seen = Vec::new();
    for name in ["ca1.py", "ca2.py"] {
        let (result, _) = stack.run_code(name, show, &["--network", "read-only"]);
        let pem = result["stdout"].as_str().unwrap_or_default().trim().to_owned();
        assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{result:#}");
        seen.push(pem);
    }
    assert_ne!(seen[0], seen[1], "a fresh CA for every run");
    // Not in the host's trust: no system bundle holds it.
    for bundle in ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt"] {
        if let Ok(text) = std::fs::read_to_string(bundle) {
            for pem in &seen {
                assert!(
                    !text.contains(pem.lines().nth(1).unwrap_or("")),
                    "{bundle} trusts a run CA"
                );
            }
        }
    }
    // And it is gone with its run: a program without read-only has no such file.
    let (plain, _) = stack.run_code(
        "noca.py",
        "import os\nprint(os.path.exists('/etc/airlock/run-ca.pem'))\n",
        &[],
    );
    assert_eq!(
        plain["stdout"].as_str().unwrap_or_default().trim(),
        "False",
        "{plain:#}"
    );
    // Removed with the run's network, in the background once its container is gone.
    let leftovers = || -> Vec<String> {
        std::fs::read_dir(cache.path())
            .map(|dir| {
                dir.filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|name| name.starts_with("run-ca-"))
                    .collect()
            })
            .unwrap_or_default()
    };
    let start = std::time::Instant::now();
    while !leftovers().is_empty() && start.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert!(
        leftovers().is_empty(),
        "the run CA files are removed after their runs: {:?}",
        leftovers()
    );
}

/// `[gate.policy.read_only] generated_hosts` narrows the executor's list for Mai's own code: the
/// decision names the narrower list, and the run's proxy allows that list only, so a host the
/// executor's list has but the policy left out is refused although it would have worked.
#[tokio::test(flavor = "multi_thread")]
async fn a_policy_narrowed_list_is_signed_and_is_all_the_run_gets() {
    let origin = Origin::start();
    let cache = tempfile::tempdir().expect("cache");
    let config = origin.config(cache.path()).replace(
        "read_only_hosts = [\"docs.test\"]",
        "read_only_hosts = [\"docs.test\", \"*.example.org\"]",
    ) + "[gate.policy.read_only]\ngenerated_hosts = [\"*.example.org\"]\n";
    let stack = tokio::task::spawn_blocking(move || Stack::start_with(&config))
        .await
        .expect("stack");
    let (result, _) = stack.run_code("narrowed.py", PROBE, &["--network", "read-only"]);
    assert_eq!(result["outcome"], "finished", "{result:#}\n{}", stack.diagnostics());
    let stdout = result["stdout"].as_str().unwrap_or_default();
    let get = line(stdout, "get");
    assert!(
        get.contains("error") && get.contains("docs.test is not on the read-only allow-list"),
        "{stdout}"
    );
    let id = result["request_id"].as_str().expect("request id");
    let hosts: Vec<Vec<String>> = events_of(&stack, id)
        .await
        .into_iter()
        .filter_map(|e| match e.event {
            Event::Decided(decided) => decided
                .signed
                .peek::<airlock_protocol::Decision>()
                .and_then(|d| d.outcome.grant())
                .map(|g| g.read_only_hosts),
            _ => None,
        })
        .collect();
    assert_eq!(
        hosts,
        [vec!["*.example.org".to_owned()]],
        "the decision signs the narrowed list"
    );
    // The terminal result says what the run could fetch from, as the receipt checks it.
    assert_eq!(
        result["read_only_hosts"],
        serde_json::json!(["*.example.org"]),
        "{result:#}"
    );
}
