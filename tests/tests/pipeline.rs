//! The whole pipeline through the real `airlock` binary: NATS, the four services, Docker.

use airlock_protocol::EventKind;
use airlock_tests::{Stack, events_of, kinds, trace_ids_of};
use serde_json::Value;

fn count(events: &[airlock_protocol::Envelope], kind: EventKind) -> usize {
    events.iter().filter(|e| e.kind() == kind).count()
}

#[tokio::test(flavor = "multi_thread")]
async fn hello_world_runs_and_every_step_is_logged() {
    let stack = tokio::task::spawn_blocking(Stack::start).await.expect("stack");
    let (json, status) = stack.run_code(
        "hello.py",
        "import sys\nprint('hello, airlock')\nprint('to stderr', file=sys.stderr)\n",
        &[],
    );
    assert_eq!(status, 0, "{json}");
    assert_eq!(json["stdout"], "hello, airlock\n");
    assert_eq!(json["stderr"], "to stderr\n");
    assert_eq!(json["verdict"], "LOW");
    assert_eq!(json["decision"], "approved");
    assert_eq!(json["exit_code"], 0);
    assert_eq!(json["violation"], Value::Null);
    assert!(json["usage"]["wall_ms"].as_u64().is_some(), "{json}");
    assert!(json["usage"]["peak_memory_bytes"].as_u64().unwrap_or(0) > 0, "{json}");
    let audit = json["audit"].as_array().expect("audit sequence numbers");
    assert!(
        audit.len() >= 5,
        "expected submitted..terminal in the audit log: {json}"
    );

    let rid = json["request_id"].as_str().expect("request id");
    let events = events_of(&stack, rid).await;
    let kinds = kinds(&events);
    for kind in [
        EventKind::Submitted,
        EventKind::Assessed,
        EventKind::Decided,
        EventKind::ExecStarted,
        EventKind::Terminal,
    ] {
        assert_eq!(count(&events, kind), 1, "{kind} in {kinds:?}");
    }
    assert_eq!(kinds.last(), Some(&EventKind::Terminal), "{kinds:?}");

    // One trace per request, from Mai's submission through all four services.
    let traces = trace_ids_of(&stack, rid).await;
    let first = &traces.first().expect("events").1;
    assert_eq!(first.len(), 32, "the submission carries no traceparent: {traces:?}");
    assert!(
        traces.iter().all(|(_, t)| t == first),
        "events of one request span several traces: {traces:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn exit_codes_bash_and_inputs() {
    let stack = tokio::task::spawn_blocking(Stack::start).await.expect("stack");
    let (json, status) = stack.run_code("fail.py", "import sys\nsys.exit(7)\n", &[]);
    assert_eq!(status, 1, "a non-zero exit is status 1: {json}");
    assert_eq!(json["exit_code"], 7);

    let (json, status) = stack.run_code(
        "args.sh",
        "#!/bin/bash\necho \"args: $*\"\necho \"env: $GREETING\"\ncat\n",
        &["--arg", "one", "--arg", "two words", "--env", "GREETING=hi"],
    );
    assert_eq!(status, 0, "{json}");
    assert_eq!(json["stdout"], "args: one two words\nenv: hi\n");

    let stdin = stack.path().join("input.txt");
    std::fs::write(&stdin, "line from stdin\n").expect("stdin file");
    let (json, status) = stack.run_code(
        "stdin.py",
        "import sys\nprint(sys.stdin.read().upper(), end='')\n",
        &["--stdin", stdin.to_str().expect("path")],
    );
    assert_eq!(status, 0, "{json}");
    assert_eq!(json["stdout"], "LINE FROM STDIN\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn files_go_in_with_file_and_come_out_with_out_and_the_receipt_proves_them() {
    let stack = tokio::task::spawn_blocking(Stack::start).await.expect("stack");
    let data = stack.path().join("sales.csv");
    std::fs::write(&data, "north,120\nsouth,80\n").expect("data file");
    let out = stack.path().join("returned");
    let spec = format!("in/sales.csv={}", data.display());
    let (json, status) = stack.run_code(
        "report.sh",
        "#!/bin/bash\nset -e\ntest ! -w in/sales.csv\nmkdir -p out/tables\nsort -r in/sales.csv > out/tables/sorted.csv\nln -s /etc/passwd out/passwd\necho done\n",
        &["--file", &spec, "--out", out.to_str().expect("path")],
    );
    assert_eq!(status, 0, "{json}");
    assert_eq!(json["stdout"], "done\n");
    assert_eq!(
        json["receipt_verified"], true,
        "the receipt covers the returned files: {json}"
    );
    let files = json["files"].as_array().expect("files");
    assert_eq!(files.len(), 1, "a symlink is not a file that comes back: {json}");
    assert_eq!(files[0]["name"], "tables/sorted.csv");
    assert_eq!(files[0]["media_type"], "text/csv");
    assert_eq!(
        std::fs::read_to_string(out.join("tables/sorted.csv")).expect("written by --out"),
        "south,80\nnorth,120\n"
    );
    assert!(!out.join("passwd").exists());
    // The file given is in the log with the request, and the returned one with the result.
    let replay = stack.output(&[
        "audit",
        "replay",
        "--request",
        json["request_id"].as_str().expect("id"),
        "--json",
    ]);
    assert!(replay.status.success(), "{}", String::from_utf8_lossy(&replay.stderr));
    let mut slots = std::collections::BTreeMap::new();
    for line in String::from_utf8_lossy(&replay.stdout).lines() {
        let item: serde_json::Value = serde_json::from_str(line).expect("a replay item");
        for (slot, content) in item["content"].as_object().into_iter().flatten() {
            slots.insert(slot.clone(), content.clone());
        }
    }
    // An out/ swapped for a link to a host directory returns nothing (read from the host, an
    // absolute link would resolve against the executor's root).
    let (json, status) = stack.run_code(
        "link.sh",
        "#!/bin/bash\nrmdir out && ln -s /etc out && echo linked\n",
        &[],
    );
    assert_eq!((status, json["stdout"].as_str()), (0, Some("linked\n")), "{json}");
    assert_eq!(
        json["files"],
        serde_json::json!([]),
        "nothing of the host comes back: {json}"
    );
    assert_eq!(
        slots.get("file/in/sales.csv"),
        Some(&serde_json::json!("north,120\nsouth,80\n")),
        "{slots:?}"
    );
    assert_eq!(
        slots.get("out/tables/sorted.csv"),
        Some(&serde_json::json!("south,80\nnorth,120\n")),
        "{slots:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sandbox_has_no_network_and_a_read_only_root() {
    let stack = tokio::task::spawn_blocking(Stack::start).await.expect("stack");
    let probe = r#"
import os, socket
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2)
    print("NETWORK REACHABLE")
except OSError as e:
    print("no network:", e.errno)
try:
    open("/etc/airlock-test", "w")
    print("ROOT WRITABLE")
except OSError as e:
    print("read-only root:", e.errno)
print("uid", os.getuid())
"#;
    let (json, status) = stack.run_code("probe.py", probe, &[]);
    assert_eq!(status, 0, "{json}");
    let out = json["stdout"].as_str().unwrap_or_default();
    assert!(out.contains("no network:"), "{out}");
    assert!(!out.contains("NETWORK REACHABLE"), "{out}");
    assert!(out.contains("read-only root:"), "{out}");
    assert!(out.contains("uid 1000"), "{out}");
}

/// Tight quotas, so that the limit tests are quick.
const TIGHT: &str = r#"
[quotas.untrusted]
memory_bytes = 134217728
cpu_millis = 500
pids = 32
wall_ms = 3000
output_bytes = 65536
disk_bytes = 8388608
open_files = 64
"#;

#[tokio::test(flavor = "multi_thread")]
async fn limits_end_runs_as_violations() {
    let stack = tokio::task::spawn_blocking(|| Stack::start_with(TIGHT))
        .await
        .expect("stack");
    let untrusted = ["--trust", "untrusted"];

    let (json, status) = stack.run_code(
        "membomb.py",
        "x = []\nwhile True:\n    x.append(' ' * 10_000_000)\n",
        &untrusted,
    );
    assert_eq!(status, 3, "{json}");
    assert_eq!(json["violation"]["kind"], "memory", "{json}");

    let (json, status) = stack.run_code("loop.py", "while True:\n    pass\n", &untrusted);
    assert_eq!(status, 3, "{json}");
    assert_eq!(json["violation"]["kind"], "timeout", "{json}");
    let wall = json["usage"]["wall_ms"].as_u64().expect("wall time");
    assert!(
        (3000..6000).contains(&wall),
        "the loop should end near its 3 s limit, took {wall} ms: {json}"
    );

    let forkbomb =
        "import os, time\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        time.sleep(0.05)\n";
    let (json, status) = stack.run_code("forkbomb.py", forkbomb, &untrusted);
    assert_eq!(status, 3, "{json}");
    assert!(
        json["violation"]["kind"] == "pids" || json["violation"]["kind"] == "timeout",
        "a fork bomb ends contained (pids or timeout): {json}"
    );
    assert!(
        json["usage"]["peak_pids"].as_u64().unwrap_or(0) <= 32,
        "pids exceeded the limit: {json}"
    );

    let (json, status) = stack.run_code(
        "flood.py",
        "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n",
        &untrusted,
    );
    assert_eq!(status, 3, "{json}");
    assert_eq!(json["violation"]["kind"], "output", "{json}");
    let captured =
        json["stdout"].as_str().unwrap_or_default().len() + json["stderr"].as_str().unwrap_or_default().len();
    assert!(captured <= 65536, "captured {captured} bytes past the 64 KiB cap");

    // The host still runs code normally afterwards.
    let (json, status) = stack.run_code("after.py", "print('still fine')\n", &untrusted);
    assert_eq!(status, 0, "{json}");
}

/// The grant signed for request `request_id`, from its decision in the log.
async fn granted_limits(stack: &Stack, request_id: &str) -> airlock_protocol::Limits {
    events_of(stack, request_id)
        .await
        .iter()
        .find_map(|e| match &e.event {
            airlock_protocol::Event::Decided(d) => d.signed.peek::<airlock_protocol::Decision>(),
            _ => None,
        })
        .and_then(|decision| decision.outcome.grant())
        .map(|grant| grant.limits)
        .expect("an approved decision with its grant")
}

/// `--wall`, `--memory` and `--cpus` lower the quota for one call: the gate signs the lowered
/// limits, the sandbox enforces them, and asking for more than the quota gets the quota.
#[tokio::test(flavor = "multi_thread")]
async fn per_call_limits_lower_the_quota_and_are_what_the_gate_signs() {
    let stack = tokio::task::spawn_blocking(|| Stack::start_with(""))
        .await
        .expect("stack");
    let quota = airlock_protocol::Quotas::default().unknown;

    let (json, status) = stack.run_code("sleepy.py", "import time\ntime.sleep(8)\n", &["--wall", "1s"]);
    assert_eq!(status, 3, "{json}");
    assert_eq!(json["violation"]["kind"], "timeout", "{json}");
    let wall = json["usage"]["wall_ms"].as_u64().expect("wall time");
    assert!(
        (1000..4000).contains(&wall),
        "ended after {wall} ms, not near 1 s: {json}"
    );
    let rid = json["request_id"].as_str().expect("request id");
    let granted = granted_limits(&stack, rid).await;
    assert_eq!(granted.wall_ms, 1000, "{granted:?}");
    assert_eq!(
        granted.memory_bytes, quota.memory_bytes,
        "only what was asked is lowered"
    );

    let (json, status) = stack.run_code(
        "hungry.py",
        "x = []\nwhile True:\n    x.append(' ' * 10_000_000)\n",
        &["--memory", "64MiB", "--cpus", "0.5"],
    );
    assert_eq!(status, 3, "{json}");
    assert_eq!(json["violation"]["kind"], "memory", "{json}");
    let granted = granted_limits(&stack, json["request_id"].as_str().expect("request id")).await;
    assert_eq!(granted.memory_bytes, 64 * 1024 * 1024, "{granted:?}");
    assert_eq!(granted.cpu_millis, 500.min(quota.cpu_millis), "{granted:?}");

    // More than the quota is not granted: the quota is.
    let (json, status) = stack.run_code("fine.py", "print('fine')\n", &["--wall", "100h", "--memory", "64GiB"]);
    assert_eq!(status, 0, "{json}");
    let granted = granted_limits(&stack, json["request_id"].as_str().expect("request id")).await;
    assert_eq!(granted, quota, "asking for more than the quota raised it");

    // Below the floor: refused before anything is submitted, saying which limit.
    let tiny = stack.path().join("programs/tiny.py");
    std::fs::write(&tiny, "print('x')\n").expect("program");
    let output = stack.output(&["run", "--wall", "10ms", tiny.to_str().expect("utf-8 path")]);
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(said.contains("wall_ms") && said.contains("floor"), "{said}");
}
