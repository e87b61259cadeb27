//! The runtime a decision names, against the real engine: code under runsc runs on gVisor's
//! kernel (not the host's), from a warm pool of its own, with the sandbox's limits still
//! enforced (wall time, output, pids, memory, CPU, /tmp, no network, exit status, cleanup); a
//! runtime the executor does not offer is refused, never replaced by another.
//! Needs `runsc` registered with the engine (`ops/install-deps` does it): these tests never skip.

mod common;

use airlock_executor::{SandboxConfig, SandboxError};
use airlock_protocol::{Language, Limits, Runtime, ViolationKind};
use common::{config, job, run, start, started, text};
use std::time::Duration;

fn quota() -> Limits {
    SandboxConfig::default().quotas.untrusted
}

fn both_runtimes(test: &str) -> SandboxConfig {
    let mut cfg = config(test);
    cfg.runtimes.available = vec![Runtime::Runc, Runtime::Runsc];
    // One class per quota and runtime: room for each to keep one warm.
    cfg.pool.max_total = 8;
    cfg
}

/// Starts processes that stay, until a fork is refused.
const FORKS_UNTIL_REFUSED: &str = "while true; do sleep 30 & done";

/// The kernel a program sees: its release and the first line of /proc/version.
const KERNEL: &str = "import os; print(os.uname().release); print(open('/proc/version').read().strip())";

fn host_kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .expect("the host's kernel release")
        .trim()
        .to_owned()
}

fn under_runsc(language: Language, code: &str, limits: Limits) -> airlock_executor::Job {
    let mut j = job(language, code, limits);
    j.runtime = Runtime::Runsc;
    j
}

/// Runs `job` as the service does (`[executor] retry_interrupted`, default 1): a run the
/// infrastructure interrupted is run once more, in a fresh container, and a second
/// interruption fails the test. (Under CI's full load about one runsc run in ten used to end
/// with status 2 before the bootstrap's end marker: the host's pids limit refused gVisor's Go
/// runtime a thread; see `host_pids_limit` in src/docker.rs.)
async fn run_ok(
    sandbox: &airlock_executor::Sandbox,
    job: airlock_executor::Job,
) -> (airlock_executor::RunReport, Vec<airlock_executor::SandboxEvent>) {
    let (result, events) = run(sandbox, job.clone()).await;
    match result {
        Ok(report) => (report, events),
        Err(airlock_executor::SandboxError::Interrupted { reason, .. }) => {
            eprintln!("interrupted ({reason}); run again, as the service would");
            // From the warm pool again where there is one (no wait without a pool).
            sandbox.wait_warm(std::time::Duration::from_secs(60)).await;
            let again = airlock_executor::Job {
                attempt: job.attempt + 1,
                ..job
            };
            let (result, events) = run(sandbox, again).await;
            (result.expect("the run failed twice"), events)
        }
        Err(other) => panic!("the run failed: {other}"),
    }
}

#[tokio::test]
async fn runsc_runs_code_on_gvisors_kernel_from_its_own_warm_pool() {
    let (sandbox, leaks) = start(both_runtimes("gvisor")).await;
    assert!(
        sandbox.wait_warm(Duration::from_secs(60)).await,
        "the pool did not warm up for both runtimes"
    );
    let host = host_kernel_release();

    let mut under_runsc = job(Language::Python, KERNEL, quota());
    under_runsc.runtime = Runtime::Runsc;
    let (report, events) = run_ok(&sandbox, under_runsc).await;
    assert_eq!(report.exit_code, Some(0), "{}", text(&report.stderr));
    let seen = text(&report.stdout);
    let release = seen.lines().next().unwrap_or_default();
    assert_ne!(
        release, host,
        "under runsc the program must not see the host's kernel: {seen}"
    );
    assert!(
        !seen.contains(&host),
        "gVisor's /proc/version is its own, not the host's {host}: {seen}"
    );
    let start = started(&events);
    assert_eq!(start.runtime, Runtime::Runsc);
    assert!(start.warm, "a runsc container was warm and must be used");
    assert_eq!(start.seccomp, Some(airlock_executor::seccomp::digest(Runtime::Runsc)));

    // The control: the same program under runc sees the host's kernel.
    assert!(sandbox.wait_warm(Duration::from_secs(60)).await);
    let (report, events) = run_ok(&sandbox, job(Language::Python, KERNEL, quota())).await;
    assert_eq!(text(&report.stdout).lines().next(), Some(host.as_str()));
    assert_eq!(started(&events).runtime, Runtime::Runc);
    assert!(started(&events).warm);

    // Through docker inspect: the engine ran the container under the runtime named.
    let mut bash = job(
        Language::Bash,
        "cat /proc/version; cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null; echo end",
        quota(),
    );
    bash.runtime = Runtime::Runsc;
    let (report, events) = run_ok(&sandbox, bash).await;
    assert_eq!(report.exit_code, Some(0), "{}", text(&report.stderr));
    assert!(!text(&report.stdout).contains(&host), "{}", text(&report.stdout));
    assert_eq!(started(&events).runtime, Runtime::Runsc);

    // The run is sealed under runsc (its end read from the stream, not from the engine's record
    // of the exit): the program's status, after end markers the program forged with tokens of
    // its own and with statuses behind them, which stay its output.
    let forge = r#"
import os, sys
for token in (b"abcdefghijk", b"22222222222", b"zzzzzzzzzzz"):
    os.write(1, b"\x00airlock-end-" + token + b"000")
    os.write(2, b"\x00airlock-end-" + token)
print("after forged markers", flush=True)
sys.exit(7)
"#;
    let mut forged = job(Language::Python, forge, quota());
    forged.runtime = Runtime::Runsc;
    let (report, _) = run_ok(&sandbox, forged).await;
    assert_eq!(report.exit_code, Some(7), "{}", text(&report.stderr));
    assert!(
        text(&report.stdout).ends_with("after forged markers\n"),
        "{:?}",
        text(&report.stdout)
    );
    assert_eq!(text(&report.stdout).matches("\0airlock-end-").count(), 3);
    // Killed by a signal: 128 + the signal, as the engine records it.
    let mut killed = job(Language::Bash, "echo before\nkill -9 $$\n", quota());
    killed.runtime = Runtime::Runsc;
    let (report, _) = run_ok(&sandbox, killed).await;
    assert_eq!(
        (report.exit_code, text(&report.stdout).as_str()),
        (Some(137), "before\n")
    );

    let stats = sandbox.pool_stats();
    assert!(stats.hits >= 3, "{stats:?}");
    sandbox.shutdown().await;
    leaks.assert_none();
}

#[tokio::test]
async fn limits_and_isolation_hold_under_runsc() {
    let mut cfg = both_runtimes("gvisor-limits");
    cfg.pool.enabled = false;
    let (sandbox, leaks) = start(cfg).await;

    let mut limits = quota();
    limits.wall_ms = 1000;
    let (report, events) = run_ok(&sandbox, under_runsc(Language::Python, "while True: pass", limits)).await;
    assert_eq!(started(&events).runtime, Runtime::Runsc);
    let v = report.violation.expect("a timeout");
    assert_eq!(v.kind, ViolationKind::Timeout);
    assert!(
        v.measured.unwrap_or_default() >= 1000 && report.exit_code.is_none(),
        "{v:?}"
    );

    let mut limits = quota();
    limits.output_bytes = 1000;
    let (report, _) = run_ok(
        &sandbox,
        under_runsc(Language::Bash, "head -c 100000 /dev/zero | tr '\\0' x", limits),
    )
    .await;
    let v = report.violation.expect("output");
    assert_eq!(v.kind, ViolationKind::Output);
    assert_eq!(report.stdout.len(), 1000);

    // No network: no interface but loopback, and a connection out fails.
    let code = r#"
import socket, os
print(sorted(os.listdir('/sys/class/net')) if os.path.isdir('/sys/class/net') else 'no sysfs net')
try:
    socket.create_connection(('1.1.1.1', 53), timeout=2)
    print('CONNECTED')
except OSError as e:
    print('refused', e.errno)
"#;
    let (report, _) = run_ok(&sandbox, under_runsc(Language::Python, code, quota())).await;
    let out = text(&report.stdout);
    assert_eq!(report.exit_code, Some(0), "{report:?}");
    assert!(out.contains("refused") && !out.contains("CONNECTED"), "{out}");

    // The program's own exit status comes through.
    let (report, _) = run_ok(&sandbox, under_runsc(Language::Bash, "echo hi; exit 7", quota())).await;
    assert_eq!((report.exit_code, text(&report.stdout)), (Some(7), "hi\n".to_owned()));

    // A program may start processes up to its pids limit: under runsc the host's pids cgroup
    // counts gVisor's own threads (about 6 per process on ptrace), and a host limit of `pids`
    // (64 here) killed the sandbox (status 2) at the fourth subprocess.
    let (report, _) = run_ok(
        &sandbox,
        under_runsc(
            Language::Bash,
            "for i in $(seq 16); do sleep 1 & done; wait; echo waited",
            quota(),
        ),
    )
    .await;
    assert_eq!(
        (report.exit_code, text(&report.stdout), report.violation),
        (Some(0), "waited\n".to_owned(), None),
        "{}",
        text(&report.stderr)
    );

    // Past the pids limit the host refuses gVisor a thread, which ends the sandbox at once:
    // the kernel's count of refused forks names it a pids violation, not an interruption.
    let (result, _) = run(&sandbox, under_runsc(Language::Bash, FORKS_UNTIL_REFUSED, quota())).await;
    let report = result.expect("a fork bomb under runsc is a violation, not an interrupted run");
    let Some(v) = report.violation.clone() else {
        panic!("a pids violation: {report:?}")
    };
    assert_eq!((v.kind, report.exit_code), (ViolationKind::Pids, None), "{v:?}");

    // Usage comes from the engine's statistics, sampled once a second and followed in the
    // background: a run longer than a few samples reports the memory it held.
    let hold =
        "import time\nheld = bytearray(64 * 1024 * 1024)\nfor _ in range(30):\n    time.sleep(0.1)\nprint(len(held))";
    let (report, events) = run_ok(&sandbox, under_runsc(Language::Python, hold, quota())).await;
    assert_eq!(report.exit_code, Some(0), "{}", text(&report.stderr));
    assert!(
        report.usage.peak_memory_bytes >= 64 * 1024 * 1024,
        "the engine's samples must show the 64 MiB held: {:?}",
        report.usage
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, airlock_executor::SandboxEvent::Usage(u) if u.memory_bytes > 0)),
        "usage samples while it ran"
    );
    sandbox.shutdown().await;
    leaks.assert_none();
}

/// Writes to /tmp until the filesystem refuses, then says how much it wrote and why it stopped.
const FILL_TMP: &str = r#"
import os
written = 0
try:
    with open("/tmp/fill", "wb") as f:
        while True:
            f.write(b"\0" * 65536)
            f.flush()
            written += 65536
except OSError as e:
    print("stopped", written, e.errno)
"#;

#[tokio::test]
async fn memory_cpu_and_tmp_limits_hold_under_runsc() {
    let mut cfg = both_runtimes("gvisor-resources");
    cfg.pool.enabled = false;
    let (sandbox, leaks) = start(cfg).await;

    // Memory: the host's memory cgroup holds the whole sandbox (gVisor's kernel and the
    // program), and its OOM kill is reported with the limit.
    let mut limits = quota();
    limits.memory_bytes = 64 * 1024 * 1024;
    let (report, events) = run_ok(
        &sandbox,
        under_runsc(Language::Python, "x = bytearray(300 * 1024 * 1024)", limits),
    )
    .await;
    assert_eq!(started(&events).runtime, Runtime::Runsc);
    let v = report.violation.expect("an OOM under runsc");
    assert_eq!(
        (v.kind, v.limit, report.exit_code),
        (ViolationKind::Memory, Some(64 * 1024 * 1024), None),
        "{v:?}"
    );

    // CPU: the engine's CFS quota holds gVisor's threads as it holds runc's processes. Under
    // runsc the CPU time comes from the engine's samples, once a second, which miss the last
    // second: the run lasts four, so that the samples show it ran.
    let mut limits = quota();
    limits.cpu_millis = 500;
    let busy = common::two_busy_processes(4);
    let (report, _) = run_ok(&sandbox, under_runsc(Language::Bash, &busy, limits)).await;
    assert_eq!(report.exit_code, Some(0), "{}", text(&report.stderr));
    common::assert_cpu_capped(&report.usage, 500);

    // /tmp: gVisor's own tmpfs enforces the size the engine was given, and writing stops at
    // the limit. A program that fills it and exits before the first look ends as it chose
    // (the executor asks gVisor's kernel about /tmp every 3 s, from the third second on).
    let mut limits = quota();
    limits.disk_bytes = 8 * 1024 * 1024;
    let (report, _) = run_ok(&sandbox, under_runsc(Language::Python, FILL_TMP, limits)).await;
    let out = text(&report.stdout);
    let written: u64 = out
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count: {out} {}", text(&report.stderr)));
    assert!(out.starts_with("stopped"), "{out}");
    assert!(
        written <= limits.disk_bytes && written >= limits.disk_bytes / 2,
        "wrote {written} bytes into a {} byte /tmp",
        limits.disk_bytes
    );
    assert_eq!(report.exit_code, Some(0), "{}", text(&report.stderr));

    // One that fills it and stays is stopped as a disk violation, with gVisor's own figures
    // (the host cannot read that tmpfs), well before its wall time.
    let fill_and_stay = format!("{FILL_TMP}\nimport time\ntime.sleep(60)\n");
    let (report, _) = run_ok(&sandbox, under_runsc(Language::Python, &fill_and_stay, limits)).await;
    let v = report.violation.expect("a disk violation under runsc");
    assert_eq!(
        (v.kind, v.limit),
        (ViolationKind::Disk, Some(limits.disk_bytes)),
        "{v:?}"
    );
    assert!(
        v.measured.is_some_and(|used| used + 4096 > limits.disk_bytes / 2),
        "{v:?}"
    );
    assert!(
        report.usage.wall_ms < limits.wall_ms,
        "ended at {} ms",
        report.usage.wall_ms
    );

    // Zombies, which the host cannot count under gVisor: gVisor's kernel counts them, and past
    // the pids limit the run ends as a pids violation with that count.
    let mut limits = quota();
    limits.pids = 16;
    let zombies = "import os, time\nfor _ in range(24):\n    if os.fork() == 0:\n        os._exit(0)\nprint('made zombies', flush=True)\ntime.sleep(60)\n";
    let (report, _) = run_ok(&sandbox, under_runsc(Language::Python, zombies, limits)).await;
    let v = report.violation.expect("a pids violation under runsc");
    assert_eq!((v.kind, v.limit), (ViolationKind::Pids, Some(16)), "{v:?}");
    assert!(v.measured.is_some_and(|n| n > 16), "{v:?}");

    // PID 1 cannot be killed from inside, as under runc: it is another user there.
    let (report, _) = run_ok(
        &sandbox,
        under_runsc(Language::Bash, "kill -9 1; kill -9 -1; echo still here\n", quota()),
    )
    .await;
    assert_eq!(
        (report.exit_code, text(&report.stdout).trim()),
        (Some(0), "still here"),
        "{}",
        text(&report.stderr)
    );

    // Cleanup: nothing of these runs is left with the engine.
    sandbox.shutdown().await;
    leaks.assert_none();
}

/// What a read-only program under gVisor tries: the run's proxy through `HTTP_PROXY` (which
/// refuses a host off the list, with its reason), any other way out, and the relay itself.
const READ_ONLY_PROBE: &str = r#"
import os, signal, socket, urllib.request, urllib.error
def attempt(name, fn):
    try:
        print(f"{name}: ok {fn()!r}"[:300], flush=True)
    except urllib.error.HTTPError as e:
        print(f"{name}: error HTTP {e.code} {e.read().decode()!r}"[:300], flush=True)
    except Exception as e:
        print(f"{name}: error {type(e).__name__}: {e}"[:300], flush=True)
fetch = lambda: urllib.request.urlopen("http://evil.test/x", timeout=15).read()
attempt("proxied", fetch)
attempt("interfaces", lambda: sorted(name for _, name in socket.if_nameindex()))
attempt("direct", lambda: socket.create_connection(("1.1.1.1", 80), timeout=3) and "connected")
def comm(pid):
    try:
        return open(f"/proc/{pid}/comm").read().strip()
    except OSError:
        return ""
relay = [int(p) for p in os.listdir("/proc") if p.isdigit() and comm(p) == "airlock-relay"]
attempt("relay", lambda: len(relay))
attempt("kill_relay", lambda: [os.kill(p, signal.SIGKILL) for p in relay])
attempt("proxied_again", fetch)
attempt("proxy_env", lambda: os.environ["HTTPS_PROXY"])
attempt("relay_env", lambda: os.environ.get("AIRLOCK_RELAY"))
"#;

#[tokio::test]
async fn read_only_internet_under_runsc_reaches_the_runs_proxy_and_nothing_else() {
    let mut cfg = both_runtimes("gvisor-read-only");
    cfg.pool.enabled = false;
    cfg.egress.read_only_hosts = vec!["docs.test".into()];
    let (sandbox, leaks) = start(cfg).await;
    let mut j = under_runsc(Language::Python, READ_ONLY_PROBE, quota());
    j.network = airlock_protocol::NetworkMode::ReadOnly;
    j.read_only_hosts = vec!["docs.test".into()];
    let (report, events) = run_ok(&sandbox, j).await;
    let stdout = text(&report.stdout);
    eprintln!("{stdout}{}", text(&report.stderr));
    assert_eq!(report.exit_code, Some(0), "{stdout}");
    assert_eq!(started(&events).runtime, Runtime::Runsc, "ran under gVisor");
    let line = |name: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(&format!("{name}: ")))
            .unwrap_or_else(|| panic!("no line for {name} in:\n{stdout}"))
            .to_owned()
    };
    // The proxy answered, through the relay and the unix socket, and said why it refused.
    for name in ["proxied", "proxied_again"] {
        let shown = line(name);
        assert!(
            shown.contains("HTTP 403") && shown.contains("evil.test is not on the read-only allow-list"),
            "{shown}"
        );
    }
    // No interface but loopback, so no other way out.
    assert_eq!(line("interfaces"), "interfaces: ok ['lo']");
    assert!(line("direct").starts_with("direct: error"), "{stdout}");
    // The relay is there, is not the program's to kill, and keeps serving.
    assert_eq!(line("relay"), "relay: ok 1");
    assert!(line("kill_relay").contains("PermissionError"), "{stdout}");
    assert_eq!(line("proxy_env"), "proxy_env: ok 'http://127.0.0.1:3128'");
    assert_eq!(
        line("relay_env"),
        "relay_env: ok None",
        "the relay's address is not the program's"
    );
    // Each request reached the run's proxy and is recorded.
    let refused: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            airlock_executor::SandboxEvent::Egress(egress) if !egress.allowed && egress.host == "evil.test" => {
                Some(egress)
            }
            _ => None,
        })
        .collect();
    assert_eq!(refused.len(), 2, "{events:?}");
    sandbox.shutdown().await;
    leaks.assert_none();
}

#[tokio::test]
async fn a_runtime_the_executor_does_not_offer_is_refused_not_replaced() {
    let mut cfg = config("runc-only");
    cfg.pool.enabled = false;
    assert_eq!(cfg.runtimes.available, vec![Runtime::Runc], "runc alone is the default");
    let (sandbox, leaks) = start(cfg).await;
    let mut j = job(Language::Python, "print('ran')", quota());
    j.runtime = Runtime::Runsc;
    let (result, events) = run(&sandbox, j).await;
    match result {
        Err(error @ SandboxError::RuntimeUnavailable { runtime: "runsc", .. }) => {
            assert!(error.is_permanent() && !error.may_have_run(), "{error}")
        }
        other => panic!("a run under a runtime not offered must be refused: {other:?}"),
    }
    assert!(events.is_empty(), "nothing started: {events:?}");
    sandbox.shutdown().await;
    leaks.assert_none();
}
