//! The gate's policy chooses the runtime per request, through the real `airlock` binary: code
//! from outside runs under gVisor on a stack that offers it (the program sees gVisor's kernel, and
//! the audit log's start and terminal events name runsc); on a stack without runsc, a policy that
//! says so denies it rather than run it on the host's kernel.

use airlock_protocol::{Envelope, Event, Runtime};
use airlock_tests::{Stack, events_of};

/// Prints the kernel release the program sees.
const KERNEL: &str = "import os\nprint(os.uname().release)\n";

fn host_kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .expect("the host's kernel release")
        .trim()
        .to_owned()
}

/// The runtime the audit log records for a run: (exec_started's, the terminal decision's).
fn recorded_runtimes(events: &[Envelope]) -> (Option<Runtime>, Option<Runtime>) {
    let started = events.iter().find_map(|e| match &e.event {
        Event::ExecStarted(start) => Some(start.runtime),
        _ => None,
    });
    let decided = events.iter().find_map(|e| match &e.event {
        Event::Terminal(terminal) => terminal.decision.as_ref().and_then(|d| d.runtime),
        _ => None,
    });
    (started, decided)
}

#[tokio::test(flavor = "multi_thread")]
async fn external_code_runs_under_gvisor_and_generated_low_code_under_runc() {
    let stack =
        tokio::task::spawn_blocking(|| Stack::start_with("[executor.runtimes]\navailable = [\"runc\", \"runsc\"]\n"))
            .await
            .expect("stack");
    let host = host_kernel_release();

    let (json, status) = stack.run_code("outside.py", KERNEL, &["--origin", "external"]);
    assert_eq!(status, 0, "{json}");
    assert_eq!(json["decision"], "approved", "{json}");
    let seen = json["stdout"].as_str().unwrap_or_default().trim().to_owned();
    assert!(!seen.is_empty(), "{json}");
    assert_ne!(seen, host, "external code saw the host's kernel: {json}");
    let rid = json["request_id"].as_str().expect("request id");
    let events = events_of(&stack, rid).await;
    assert_eq!(
        recorded_runtimes(&events),
        (Some(Runtime::Runsc), Some(Runtime::Runsc)),
        "{json}"
    );

    let (json, status) = stack.run_code("mine.py", KERNEL, &["--origin", "generated"]);
    assert_eq!(status, 0, "{json}");
    assert_eq!(json["verdict"], "LOW", "{json}");
    assert_eq!(json["stdout"].as_str().unwrap_or_default().trim(), host, "{json}");
    let rid = json["request_id"].as_str().expect("request id");
    let events = events_of(&stack, rid).await;
    assert_eq!(
        recorded_runtimes(&events),
        (Some(Runtime::Runc), Some(Runtime::Runc)),
        "{json}"
    );

    // `airlock status` says which runtimes the executor checked with its engine and offers.
    let out = stack.output(&["status", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("status --json");
    let executor = &report["services"]["airlock-executor"][0];
    assert_eq!(
        executor["facts"]["runtimes"],
        serde_json::json!(["runc", "runsc"]),
        "{report}"
    );
    assert_eq!(executor["facts"]["runsc_read_only"], "runsc-read-only", "{report}");
    let out = stack.output(&["status"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("runtimes runc, runsc (read-only internet under runsc through the engine's runsc-read-only)"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn without_runsc_a_policy_that_requires_it_denies_external_code() {
    let stack = tokio::task::spawn_blocking(|| {
        Stack::start_with(
            "[executor.runtimes]\navailable = [\"runc\"]\n\n[gate.policy.runtimes]\nunavailable = \"deny\"\n",
        )
    })
    .await
    .expect("stack");

    let (json, status) = stack.run_code("outside.py", KERNEL, &["--origin", "external"]);
    assert_ne!(status, 0, "{json}");
    assert_eq!(json["decision"], "denied", "{json}");
    assert!(
        json.to_string().contains("runsc"),
        "the denial names the runtime: {json}"
    );
    let rid = json["request_id"].as_str().expect("request id");
    let events = events_of(&stack, rid).await;
    assert!(
        !events.iter().any(|e| matches!(e.event, Event::ExecStarted(_))),
        "a denied request started a container"
    );

    // Code the policy wants under runc still runs.
    let (json, status) = stack.run_code("mine.py", KERNEL, &["--origin", "generated"]);
    assert_eq!(status, 0, "{json}");
    assert_eq!(
        json["stdout"].as_str().unwrap_or_default().trim(),
        host_kernel_release(),
        "{json}"
    );
}
