//! The kernel's record of a run, end to end: real stacks, real containers, the executor's eBPF
//! observer. A Python and a bash program read /etc/passwd, write a file, run `ls`, try a TCP
//! connect and a UDP send (both fail: the sandbox has no network) and delete the file; each
//! action must be in `observed` (`airlock run --json`) and in the audit log's replay. A program
//! that silences the Python audit hook and forges its own report is caught by the kernel's
//! record. Needs root and the kernel's BTF (the executor loads BPF programs): without them the
//! executor's record says `unavailable`, and these tests fail.

use airlock_tests::Stack;
use serde_json::Value;

fn observed(json: &Value) -> &Value {
    let observed = &json["observed"];
    assert!(observed.is_object(), "no observed record: {json}");
    assert!(
        observed.get("unavailable").is_none_or(Value::is_null),
        "kernel observation must work here: {observed}"
    );
    assert_eq!(observed["source"], "host kernel (eBPF)", "{observed}");
    assert_eq!(observed["events_lost"], 0, "{observed}");
    observed
}

fn entries<'a>(observed: &'a Value, list: &str) -> &'a [Value] {
    observed[list].as_array().map(Vec::as_slice).unwrap_or_default()
}

fn has_file(observed: &Value, path: &str, access: &str) -> bool {
    entries(observed, "files")
        .iter()
        .any(|f| f["path"] == path && f["access"] == access && f["failed"].as_u64() < f["count"].as_u64())
}

fn network<'a>(observed: &'a Value, call: &str, address: &str) -> Option<&'a Value> {
    entries(observed, "network")
        .iter()
        .find(|n| n["call"] == call && n["address"] == address)
}

/// The checks both languages share: the read, the write, `ls`, the unlink, the failed connect.
fn assert_the_common_actions(observed: &Value) {
    assert!(
        has_file(observed, "/etc/passwd", "read"),
        "the read of /etc/passwd: {observed:#}"
    );
    assert!(
        has_file(observed, "/tmp/observed.txt", "create"),
        "the written file: {observed:#}"
    );
    assert!(
        has_file(observed, "/tmp/observed.txt", "delete"),
        "the deletion: {observed:#}"
    );
    // The search through PATH shows as failed execs (ENOENT) before the one that ran.
    let ls = entries(observed, "processes")
        .iter()
        .find(|p| p["path"].as_str().is_some_and(|p| p.ends_with("/ls")) && p["result"] == "ok")
        .unwrap_or_else(|| panic!("the exec of ls: {observed:#}"));
    assert_eq!(ls["argv"][0], "ls", "{ls}");
    let tcp = network(observed, "connect", "10.1.2.3:8080").unwrap_or_else(|| panic!("the TCP connect: {observed:#}"));
    assert_eq!(tcp["family"], "inet");
    assert_eq!(tcp["result"], "ENETUNREACH", "no network in the sandbox: {tcp}");
}

#[tokio::test(flavor = "multi_thread")]
async fn python_and_bash_runs_are_observed_by_the_kernel() {
    let stack = tokio::task::spawn_blocking(Stack::start).await.expect("stack");
    let python = r#"
import os, socket, subprocess
with open("/etc/passwd") as f:
    f.read()
with open("/tmp/observed.txt", "w") as f:
    f.write("written")
subprocess.run(["ls", "/tmp"], check=True, stdout=subprocess.DEVNULL)
try:
    socket.create_connection(("10.1.2.3", 8080), timeout=2)
except OSError as e:
    print("tcp failed", e.errno)
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    udp.sendto(b"x", ("10.1.2.4", 53))
except OSError as e:
    print("udp failed", e.errno)
os.unlink("/tmp/observed.txt")
"#;
    let (json, status) = stack.run_code("observed.py", python, &[]);
    assert_eq!(status, 0, "{json}");
    let record = observed(&json);
    assert_the_common_actions(record);
    let udp = network(record, "send", "10.1.2.4:53").unwrap_or_else(|| panic!("the UDP send: {record:#}"));
    assert_eq!(udp["result"], "ENETUNREACH", "{udp}");
    // The audit hook reported both attempts: nothing to find.
    assert_eq!(record["findings"], serde_json::json!([]), "{record:#}");

    // The same record is in the audit log, shown by replay.
    let rid = json["request_id"].as_str().expect("request id");
    let replay = stack.output(&["audit", "replay", "--request", rid]);
    let text = String::from_utf8_lossy(&replay.stdout);
    assert!(replay.status.success(), "{text}");
    assert!(text.contains("observed"), "replay shows the observed entry: {text}");
    assert!(text.contains("connect inet 10.1.2.3:8080"), "{text}");
    // The executor says in the status that it observes runs.
    let status = stack.output(&["status"]);
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(status.contains("kernel observation on: host kernel (eBPF)"), "{status}");

    let bash = r#"
cat /etc/passwd > /dev/null
echo written > /tmp/observed.txt
ls /tmp > /dev/null
(exec 3<>/dev/tcp/10.1.2.3/8080) 2>/dev/null || echo "tcp failed"
(echo x > /dev/udp/10.1.2.4/53) 2>/dev/null || echo "udp failed"
rm /tmp/observed.txt
"#;
    let (json, status) = stack.run_code("observed.sh", bash, &[]);
    assert_eq!(status, 0, "{json}");
    let record = observed(&json);
    assert_the_common_actions(record);
    // bash's /dev/udp connects its datagram socket, then writes.
    let udp = network(record, "connect", "10.1.2.4:53").unwrap_or_else(|| panic!("the UDP attempt: {record:#}"));
    assert_eq!(udp["result"], "ENETUNREACH", "{udp}");
    assert!(
        entries(record, "processes")
            .iter()
            .any(|p| p["path"].as_str().is_some_and(|p| p.ends_with("/cat"))
                && p["result"] == "ok"
                && p["argv"][1] == "/etc/passwd"),
        "cat with its argv: {record:#}"
    );
    // bash has no audit hook: the kernel's attempts are findings.
    let findings = entries(record, "findings");
    assert!(
        findings
            .iter()
            .any(|f| f.as_str().is_some_and(|f| f.contains("10.1.2.3:8080"))),
        "{record:#}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_forged_activity_report_does_not_hide_what_the_kernel_saw() {
    let stack = tokio::task::spawn_blocking(Stack::start).await.expect("stack");
    // The bootstrap's audit hook writes to fd 9: the program writes a report of its own there,
    // then points fd 9 at /dev/null so the hook's real lines go nowhere.
    let forger = r#"
import json, os, socket
os.write(9, (json.dumps({"event": "socket.connect", "detail": "((<socket>, ('192.0.2.1', 443)),)"}) + "\n").encode())
os.dup2(os.open("/dev/null", os.O_WRONLY), 9)
try:
    socket.create_connection(("10.1.2.3", 8080), timeout=2)
except OSError as e:
    print("tcp failed", e.errno)
"#;
    let (json, status) = stack.run_code("forger.py", forger, &[]);
    assert_eq!(status, 0, "{json}");
    let record = observed(&json);
    assert!(network(record, "connect", "10.1.2.3:8080").is_some(), "{record:#}");
    assert!(
        network(record, "connect", "192.0.2.1:443").is_none(),
        "the forged attempt never happened: {record:#}"
    );
    let findings = entries(record, "findings");
    assert!(
        findings.iter().any(|f| f
            .as_str()
            .is_some_and(|f| f.contains("10.1.2.3:8080") && f.contains("not in the program's own report"))),
        "the hidden connect is a finding: {record:#}"
    );
}
