//! Every request ends in exactly one terminal event, and no request runs twice, even when a
//! service or the NATS server is killed mid-flight and restarted.

use airlock_protocol::{Event, EventKind, Outcome};
use airlock_tests::{Stack, events_of, kill9};
use futures::StreamExt as _;
use std::process::Stdio;
use std::time::Duration;

/// Submits `code` in the background, returns the child and the request id once its container
/// has started.
async fn start_long_run(stack: &Stack, name: &str, code: &str) -> (std::process::Child, String) {
    let admin = stack.connect("admin").await;
    let mut started = admin.subscribe("airlock.exec.started.*").await.expect("subscribe");
    admin.flush().await.expect("flush");
    let dir = stack.path().join("programs");
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join(name);
    std::fs::write(&file, code).expect("program");
    let child = stack
        .airlock()
        .args(["run", "--json"])
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("airlock run");
    let message = tokio::time::timeout(Duration::from_secs(60), started.next())
        .await
        .unwrap_or_else(|_| panic!("the run never started:\n{}", stack.diagnostics()))
        .expect("subscription");
    let rid = message
        .subject
        .as_str()
        .rsplit('.')
        .next()
        .expect("request id")
        .to_owned();
    (child, rid)
}

fn finish(child: std::process::Child) -> serde_json::Value {
    let output = child.wait_with_output().expect("airlock run");
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("no JSON ({e}): {}", String::from_utf8_lossy(&output.stderr)))
}

async fn terminals(stack: &Stack, rid: &str) -> Vec<airlock_protocol::Terminal> {
    events_of(stack, rid)
        .await
        .into_iter()
        .filter_map(|e| match e.event {
            Event::Terminal(t) => Some(*t),
            _ => None,
        })
        .collect()
}

fn containers_of(rid: &str) -> String {
    let out = std::process::Command::new("docker")
        .args(["ps", "-a", "-q", "--filter", &format!("label=airlock.request={rid}")])
        .output()
        .expect("docker ps");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn killing_the_executor_mid_run_ends_the_request_once_and_removes_its_container() {
    let stack = tokio::task::spawn_blocking(Stack::start).await.expect("stack");
    let (child, rid) = start_long_run(
        &stack,
        "slow.py",
        "import time\nprint('started', flush=True)\ntime.sleep(20)\nprint('done')\n",
    )
    .await;
    let executor = stack.service_pid("executor").expect("executor pid");
    kill9(executor);

    let json = tokio::task::spawn_blocking(move || finish(child)).await.expect("join");
    assert_eq!(json["request_id"], rid.as_str());
    assert_eq!(json["outcome"], "failed", "{json}");
    assert!(
        json["reason"].as_str().unwrap_or_default().contains("interrupted"),
        "the terminal event should say the run was interrupted: {json}"
    );
    // Give a restarted executor the chance to (wrongly) run it again before counting.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let events = events_of(&stack, &rid).await;
    assert_eq!(
        events.iter().filter(|e| e.kind() == EventKind::ExecStarted).count(),
        1,
        "ran twice"
    );
    assert_eq!(terminals(&stack, &rid).await.len(), 1, "terminal events: {events:?}");
    assert_ne!(
        stack.service_pid("executor"),
        Some(executor),
        "the executor was not restarted"
    );
    let mut leftover = containers_of(&rid);
    for _ in 0..50 {
        if leftover.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        leftover = containers_of(&rid);
    }
    assert!(
        leftover.is_empty(),
        "the killed run's container is still there: {leftover}"
    );

    // The restarted executor runs new requests.
    let (json, status) = stack.run_code("after.py", "print('after the crash')\n", &[]);
    assert_eq!(status, 0, "{json}");
}

#[tokio::test(flavor = "multi_thread")]
async fn killing_the_nats_server_mid_run_loses_nothing() {
    let stack = tokio::task::spawn_blocking(Stack::start).await.expect("stack");
    let (child, rid) = start_long_run(
        &stack,
        "through-outage.py",
        "import time\ntime.sleep(4)\nprint('survived')\n",
    )
    .await;
    let info: serde_json::Value =
        serde_json::from_slice(&std::fs::read(stack.path().join("stack.json")).expect("stack.json")).expect("json");
    kill9(info["nats_pid"].as_u64().expect("nats pid") as u32);

    let json = tokio::task::spawn_blocking(move || finish(child)).await.expect("join");
    assert_eq!(json["outcome"], "finished", "{json}");
    assert_eq!(json["stdout"], "survived\n");
    let terminals = terminals(&stack, &rid).await;
    assert_eq!(terminals.len(), 1);
    assert_eq!(terminals[0].outcome, Outcome::Finished);
}

#[tokio::test(flavor = "multi_thread")]
async fn killing_the_gate_and_assessor_between_requests_loses_none() {
    let stack = tokio::task::spawn_blocking(Stack::start).await.expect("stack");
    let mut children = Vec::new();
    for i in 0..6 {
        let dir = stack.path().join("programs");
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join(format!("p{i}.py"));
        std::fs::write(&file, format!("print({i})\n")).expect("program");
        children.push(
            stack
                .airlock()
                .args(["run", "--json"])
                .arg(&file)
                .stdout(Stdio::piped())
                .spawn()
                .expect("run"),
        );
        if i == 2 {
            kill9(stack.service_pid("override-gate").expect("gate pid"));
            kill9(stack.service_pid("assessor").expect("assessor pid"));
        }
    }
    for (i, child) in children.into_iter().enumerate() {
        let json = tokio::task::spawn_blocking(move || finish(child)).await.expect("join");
        assert_eq!(json["stdout"], format!("{i}\n"), "{json}");
        let rid = json["request_id"].as_str().expect("id").to_owned();
        assert_eq!(terminals(&stack, &rid).await.len(), 1);
    }
}
