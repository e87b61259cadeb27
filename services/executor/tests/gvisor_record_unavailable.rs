//! When gVisor's trace session cannot be set up, the run goes on as without it and its record
//! says why. The failure here is a real one: a temporary directory so deep that a unix socket
//! cannot be named in it (the kernel's 108-byte limit). Its own test binary, since it changes
//! the process's `TMPDIR`. Needs `runsc` registered with the engine: it never skips.

mod common;

use airlock_executor::SandboxEvent;
use airlock_protocol::{Language, Runtime};
use common::{config, job, run_ok, start, text};

#[test]
fn without_a_trace_session_the_run_goes_on_and_its_record_says_why() {
    let deep = std::env::temp_dir()
        .join("a-directory-name-long-enough-that-no-unix-socket-can-be-named-below-it-at-all-0123456789");
    std::fs::create_dir_all(&deep).expect("a deep temporary directory");
    // SAFETY: set before any other thread of this test binary exists (the runtime is built
    // below); nothing else in this binary reads the environment concurrently.
    unsafe { std::env::set_var("TMPDIR", &deep) };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut cfg = config("gv-untraced");
        cfg.runtimes.available = vec![Runtime::Runc, Runtime::Runsc];
        // Room for a warm container of every class (quota and runtime).
        cfg.pool.max_total = 8;
        let (sandbox, leaks) = start(cfg).await;
        let limits = sandbox.config().quotas.untrusted;
        let mut j = job(
            Language::Python,
            "open('out/r.txt', 'w').write('fine'); print('hi')",
            limits,
        );
        j.runtime = Runtime::Runsc;
        sandbox.wait_warm(std::time::Duration::from_secs(60)).await;
        let (report, events) = run_ok(&sandbox, j).await;
        assert_eq!((report.exit_code, text(&report.stdout).as_str()), (Some(0), "hi\n"));
        assert_eq!(
            report.files.len(),
            1,
            "the rest of the run is whole: {:?}",
            report.files_unavailable
        );
        let record = events
            .iter()
            .find_map(|e| match e {
                SandboxEvent::Observed(o) => Some(o),
                _ => None,
            })
            .expect("a record");
        let why = record.unavailable.as_deref().unwrap_or_default();
        assert!(
            why.contains("gVisor's own trace session could not be set up") && why.contains("too long"),
            "{record:#?}"
        );
        assert!(record.processes.is_empty() && record.files.is_empty());
        sandbox.shutdown().await;
        leaks.assert_none();
    });
    let _ = std::fs::remove_dir_all(&deep);
}
