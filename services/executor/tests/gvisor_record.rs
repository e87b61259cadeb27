//! Under runsc the run's `observed` record is gVisor's own: the trace session the executor sets
//! up in each sandbox's kernel, read through gVisor's remote sink. Against the real engine and
//! runsc: a program that execs, writes and deletes a file, tries the network and a privileged
//! call shows all of it, labelled as gVisor's view; Airlock's own work inside the sandbox (PID 1,
//! the identity switch, the looks) is not the program's; a program that floods the trace gets a
//! bounded record whose cuts and drops are counted, and cannot mark its own points as
//! Airlock's. Needs root and `runsc` registered with the engine: these tests never skip.

mod common;

use airlock_executor::{SandboxConfig, SandboxEvent};
use airlock_protocol::{Language, Limits, Observed, Runtime};
use common::{config, job, run_ok, start, text};
use std::time::Duration;

fn gvisor(test: &str) -> SandboxConfig {
    let mut cfg = config(test);
    cfg.runtimes.available = vec![Runtime::Runc, Runtime::Runsc];
    cfg.pool.max_total = 8;
    cfg
}

fn quota() -> Limits {
    SandboxConfig::default().quotas.untrusted
}

fn under_runsc(language: Language, code: &str) -> airlock_executor::Job {
    let mut j = job(language, code, quota());
    j.runtime = Runtime::Runsc;
    j
}

fn observed(events: &[SandboxEvent]) -> &Observed {
    events
        .iter()
        .find_map(|e| match e {
            SandboxEvent::Observed(o) => Some(o.as_ref()),
            _ => None,
        })
        .expect("an observed record")
}

/// Execs, a file written then deleted, a connection attempt, and a privileged call.
const ACTS: &str = r#"
import os, socket, subprocess
subprocess.run(["/bin/true"])
with open("/tmp/notes.txt", "w") as f:
    f.write("x")
os.unlink("/tmp/notes.txt")
s = socket.socket()
try:
    s.connect(("10.1.2.3", 8080))
except OSError as e:
    print("connect:", e.errno)
try:
    os.setuid(0)
except OSError as e:
    print("setuid:", e.errno)
"#;

#[tokio::test(flavor = "multi_thread")]
async fn under_runsc_the_record_is_gvisors_view_of_what_the_program_did() {
    let (sandbox, leaks) = start(gvisor("gv-record")).await;
    assert!(sandbox.wait_warm(Duration::from_secs(60)).await);
    let (report, events) = run_ok(&sandbox, under_runsc(Language::Python, ACTS)).await;
    assert_eq!(report.exit_code, Some(0), "{}", text(&report.stderr));
    let record = observed(&events);
    assert_eq!(record.unavailable, None, "{record:#?}");
    assert!(
        record.source.starts_with("gVisor's kernel"),
        "labelled as gVisor's view: {}",
        record.source
    );
    assert_eq!(record.events_lost, 0, "{record:#?}");
    assert!(
        record.findings.is_empty()
            || record
                .findings
                .iter()
                .all(|f| f.contains("not in the program's own report")),
        "{record:#?}"
    );
    assert!(
        record
            .processes
            .iter()
            .any(|p| p.path == "/bin/true" && p.result == "ok"),
        "{record:#?}"
    );
    let file = |path: &str, access: &str| record.files.iter().any(|f| f.path == path && f.access == access);
    assert!(file("/tmp/notes.txt", "create"), "{record:#?}");
    assert!(
        file(airlock_executor::gvisor_trace::points::NO_PATH, "delete"),
        "{record:#?}"
    );
    assert!(
        record
            .network
            .iter()
            .any(|n| n.call == "connect" && n.address == "10.1.2.3:8080" && n.result != "ok"),
        "{record:#?}"
    );
    let setid: Vec<_> = record.privileged.iter().filter(|p| p.call == "setuid/setgid").collect();
    assert_eq!(
        setid.len(),
        1,
        "only the program's own setuid(0), not Airlock's switch: {record:#?}"
    );
    assert_eq!(
        (setid[0].detail.as_str(), setid[0].result.as_str()),
        ("0 -1 -1", "EPERM")
    );
    assert!(
        !record
            .files
            .iter()
            .any(|f| f.path.contains("airlock-trace") || f.path.starts_with("out")),
        "PID 1's markers and reads are not the program's: {record:#?}"
    );
    // The program's own account (its audit hook, untrusted), which PID 1 sends behind the seal
    // since the host cannot read it inside gVisor: it names the same connection.
    let reported: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            SandboxEvent::Activity(a) if a.untrusted => Some(&a.network_attempts),
            _ => None,
        })
        .flatten()
        .collect();
    assert!(
        reported
            .iter()
            .any(|line| line.starts_with("socket.connect") && line.contains("10.1.2.3")),
        "{reported:?}"
    );

    // Bash, whose process is exec'd after the switch: its exec is the program's.
    let (report, events) = run_ok(
        &sandbox,
        under_runsc(
            Language::Bash,
            "echo hi > /tmp/b && rm /tmp/b && cat /etc/hostname > /dev/null",
        ),
    )
    .await;
    assert_eq!(report.exit_code, Some(0), "{}", text(&report.stderr));
    let record = observed(&events);
    assert!(record.processes.iter().any(|p| p.path == "/bin/bash"), "{record:#?}");
    assert!(record.processes.iter().any(|p| p.path.ends_with("/cat")), "{record:#?}");
    assert!(
        record.files.iter().any(|f| f.path == "/tmp/b" && f.access == "create"),
        "{record:#?}"
    );
    sandbox.shutdown().await;
    leaks.assert_none();
}

/// Opens many distinct paths as fast as it can, and names both of Airlock's markers.
const FLOOD: &str = r#"
import os
for marker in ("/.airlock-trace-end", "/.airlock-trace-start"):
    try:
        os.open(marker, os.O_RDONLY)
    except OSError:
        pass
for i in range(20000):
    try:
        os.open("/tmp/no-such-%d" % i, os.O_RDONLY)
    except OSError:
        pass
print("done")
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_flood_gets_a_bounded_record_with_its_cuts_counted_and_forged_markers_are_the_programs() {
    let (sandbox, leaks) = start(gvisor("gv-flood")).await;
    assert!(sandbox.wait_warm(Duration::from_secs(60)).await);
    let (report, events) = run_ok(&sandbox, under_runsc(Language::Python, FLOOD)).await;
    assert_eq!(report.exit_code, Some(0), "{}", text(&report.stderr));
    assert_eq!(text(&report.stdout), "done\n");
    let record = observed(&events);
    assert_eq!(record.unavailable, None);
    assert!(
        record.files.len() <= airlock_protocol::observed::MAX_FILES,
        "{}",
        record.files.len()
    );
    // Every open was either listed, counted as cut, or counted as dropped by gVisor's sink.
    let listed: u64 = record.files.iter().map(|f| f.count).sum();
    assert!(
        listed + record.files_omitted + record.events_lost >= 20_000,
        "listed {listed}, cut {}, lost {}",
        record.files_omitted,
        record.events_lost
    );
    assert!(record.files_omitted > 0, "the list was cut and says so");
    for marker in ["/.airlock-trace-end", "/.airlock-trace-start"] {
        assert!(
            record.files.iter().any(|f| f.path == marker),
            "the program's own open of {marker} is the program's: {record:#?}"
        );
    }
    eprintln!(
        "flood: {} events, {} lost, {} files cut, wall {} ms",
        record.events, record.events_lost, record.files_omitted, report.usage.wall_ms
    );
    sandbox.shutdown().await;
    leaks.assert_none();
}
