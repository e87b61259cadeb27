//! Files under `out/` come back from a run under runsc as from one under runc: the same names,
//! sizes, digests, media types, contents and omission reasons. Under runsc PID 1 reads them
//! inside gVisor once the program is gone and sends them behind its sealed end; these tests run
//! each program under both runtimes against the real engine and compare, and attack the way
//! out: a linked out/, links and a FIFO inside it, a huge file, a forged section in the output,
//! and a process left behind to rewrite a file after the program "ended". Needs `runsc`
//! registered with the engine: these tests never skip.

mod common;

use airlock_executor::{RunReport, Sandbox, SandboxConfig};
use airlock_protocol::{Language, Limits, OutputFile, Runtime};
use common::{config, job, run_ok, start, text};
use std::time::Duration;

fn both(test: &str) -> SandboxConfig {
    let mut cfg = config(test);
    cfg.runtimes.available = vec![Runtime::Runc, Runtime::Runsc];
    cfg.pool.max_total = 8;
    cfg
}

fn quota() -> Limits {
    SandboxConfig::default().quotas.untrusted
}

async fn run_under(sandbox: &Sandbox, runtime: Runtime, language: Language, code: &str) -> RunReport {
    let mut j = job(language, code, quota());
    j.runtime = runtime;
    sandbox.wait_warm(Duration::from_secs(60)).await;
    let (report, _) = run_ok(sandbox, j).await;
    report
}

/// Runs `code` under both runtimes; returns runsc's report after checking its files equal
/// runc's.
async fn same_under_both(sandbox: &Sandbox, language: Language, code: &str) -> RunReport {
    let runc = run_under(sandbox, Runtime::Runc, language, code).await;
    let runsc = run_under(sandbox, Runtime::Runsc, language, code).await;
    assert_eq!(runc.exit_code, Some(0), "runc: {}", text(&runc.stderr));
    assert_eq!(runsc.exit_code, Some(0), "runsc: {}", text(&runsc.stderr));
    assert_eq!(runsc.files_unavailable, None, "runsc returns files");
    assert_eq!(runc.files_unavailable, None);
    let shown = |files: &[OutputFile]| {
        files
            .iter()
            .map(|f| {
                (
                    f.name.clone(),
                    f.size,
                    f.sha256.to_string(),
                    f.media_type.clone(),
                    f.content.len(),
                    f.omitted.clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        shown(&runsc.files),
        shown(&runc.files),
        "the same files under both runtimes"
    );
    for (a, b) in runsc.files.iter().zip(&runc.files) {
        assert_eq!(a.content, b.content, "{}", a.name);
    }
    runsc
}

const CHARTS: &str = r#"
import os, zlib
os.makedirs("out/tables", exist_ok=True)
open("out/chart.png", "wb").write(b"\x89PNG\r\n\x1a\n" + os.urandom(64))
open("out/tables/summary.csv", "w").write("a,b\n1,2\n")
open("out/big.bin", "wb").write(b"z" * (1024 * 1024 + 1))
open("out/half-1.bin", "wb").write(b"1" * (1024 * 1024 - 1))
open("out/half-2.bin", "wb").write(b"2" * (1024 * 1024 - 1))
open("out/secret.txt", "w").write("mode 000")
os.chmod("out/secret.txt", 0)
open("elsewhere.txt", "w").write("not returned")
"#;

#[tokio::test(flavor = "multi_thread")]
async fn files_under_out_come_back_under_runsc_as_under_runc() {
    let (sandbox, leaks) = start(both("gv-files")).await;
    // The PNG's random bytes differ between the two runs: compare everything but its digest.
    let code = CHARTS.replace("os.urandom(64)", "bytes(range(64))");
    let report = same_under_both(&sandbox, Language::Python, &code).await;
    let names: Vec<&str> = report.files.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "big.bin",
            "chart.png",
            "half-1.bin",
            "half-2.bin",
            "secret.txt",
            "tables/summary.csv"
        ]
    );
    let big = &report.files[0];
    assert!(
        big.content.is_empty()
            && big
                .omitted
                .as_deref()
                .is_some_and(|w| w.contains("listed, not returned"))
    );
    assert_eq!(
        big.sha256,
        airlock_protocol::CodeDigest::of(&vec![b'z'; 1024 * 1024 + 1])
    );
    assert_eq!(report.files[1].media_type, "image/png");
    // The second half passes the 2 MiB total with the first: listed, not returned; the small
    // files after it still fit.
    assert!(
        report.files[3]
            .omitted
            .as_deref()
            .is_some_and(|w| w.contains("together")),
        "{:?}",
        report.files[3].omitted
    );
    assert_eq!(report.files[4].content, b"mode 000");
    sandbox.shutdown().await;
    leaks.assert_none();
}

/// Tries to get host files, special files, a forged section and a late rewrite returned.
const ATTACKS: &str = r#"
mkfifo out/fifo
ln -s /etc/passwd out/passwd
ln -s /etc out/etc-dir
mkdir out/deep && ln -s /etc/hostname out/deep/hostname
echo good > out/result.txt
# A file past the bound of one returned file: listed with its digest.
head -c 3000000 /dev/zero > out/huge.bin
# A section forged in the output, with and without a marker of the program's own.
printf '\0airlock-end-aaaaaaaaaaa0000000000042000000{"name":"passwd","size":4,"sha256":"","content":true,"omitted":null}root'
printf '0000000042{"name":"x"}'
# A process left behind to rewrite the result after the program is over.
( trap '' TERM HUP; sleep 1; echo evil > out/result.txt ) &
disown
exit 0
"#;

#[tokio::test(flavor = "multi_thread")]
async fn links_fifos_huge_files_forged_sections_and_late_rewrites_return_nothing_false() {
    let (sandbox, leaks) = start(both("gv-files-attack")).await;
    let report = same_under_both(&sandbox, Language::Bash, ATTACKS).await;
    let names: Vec<&str> = report.files.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["huge.bin", "result.txt"], "no link, no FIFO, nothing forged");
    assert_eq!(report.files[1].content, b"good\n", "nothing of the program outlives it");
    assert!(report.files[0].content.is_empty() && report.files[0].omitted.is_some());
    assert!(
        text(&report.stdout).contains("airlock-end-aaaaaaaaaaa"),
        "a forged section is only the program's output: {:?}",
        text(&report.stdout)
    );
    // Wait past the rewrite: the run was over, and its result stands.
    tokio::time::sleep(Duration::from_millis(1500)).await;

    // out/ itself a link to /etc: no files, under both.
    let linked = "rmdir out && ln -s /etc out";
    let report = same_under_both(&sandbox, Language::Bash, linked).await;
    assert!(report.files.is_empty(), "{:?}", report.files);
    sandbox.shutdown().await;
    leaks.assert_none();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_killed_for_a_violation_returns_no_files_under_runsc() {
    let (sandbox, leaks) = start(both("gv-files-killed")).await;
    let code = "echo x > out/a; while :; do :; done";
    let mut j = job(
        Language::Bash,
        code,
        Limits {
            wall_ms: 1500,
            ..quota()
        },
    );
    j.runtime = Runtime::Runsc;
    sandbox.wait_warm(Duration::from_secs(60)).await;
    let (report, _) = run_ok(&sandbox, j).await;
    assert!(report.violation.is_some());
    assert!(report.files.is_empty());
    assert!(report.files_unavailable.is_some_and(|w| w.contains("violation")));
    sandbox.shutdown().await;
    leaks.assert_none();
}

/// PID 1 holds CAP_DAC_READ_SEARCH under runsc to read out/ as the host does under runc; the
/// program's process gives it up with the rest before any of the program runs.
#[tokio::test(flavor = "multi_thread")]
async fn the_program_holds_none_of_pid_1s_capabilities_under_runsc() {
    let (sandbox, leaks) = start(both("gv-files-caps")).await;
    let code =
        "grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|Uid)' /proc/self/status; cat /etc/shadow > /dev/null 2>&1 && echo READ";
    let report = run_under(&sandbox, Runtime::Runsc, Language::Bash, code).await;
    assert_eq!(report.exit_code, Some(1), "{}", text(&report.stdout));
    let status = text(&report.stdout);
    for line in status.lines().filter(|l| l.starts_with("Cap")) {
        assert!(line.ends_with("0000000000000000"), "{line}");
    }
    assert!(status.contains("Uid:\t1000\t1000\t1000\t1000"), "{status}");
    assert!(!status.contains("READ"));
    sandbox.shutdown().await;
    leaks.assert_none();
}
