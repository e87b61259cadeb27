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
    start_long_run_with(stack, name, code, &[]).await
}

/// [`start_long_run`] with more arguments for `airlock run`.
async fn start_long_run_with(stack: &Stack, name: &str, code: &str, extra: &[&str]) -> (std::process::Child, String) {
    let admin = stack.connect("admin").await;
    let mut started = admin.subscribe("airlock.exec.started.>").await.expect("subscribe");
    admin.flush().await.expect("flush");
    let dir = stack.path().join("programs");
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join(name);
    std::fs::write(&file, code).expect("program");
    let child = stack
        .airlock()
        .args(["run", "--json"])
        .args(extra)
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("airlock run");
    let message = tokio::time::timeout(Duration::from_secs(60), started.next())
        .await
        .unwrap_or_else(|_| panic!("the run never started:\n{}", stack.diagnostics()))
        .expect("subscription");
    // `airlock.exec.started.<client>.<local>`: the id is everything after the prefix.
    let rid = message
        .subject
        .as_str()
        .strip_prefix("airlock.exec.started.")
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

/// Sends a signal to a process.
fn signal(pid: u32, signal: libc::c_int) {
    unsafe {
        libc::kill(pid as libc::pid_t, signal);
    }
}

/// Waits until `up` has restarted the executor (a new pid in stack.json) and it answers.
async fn restarted_executor(stack: &Stack, old: u32) -> u32 {
    for _ in 0..300 {
        if let Some(pid) = stack.service_pid("executor").filter(|p| *p != old) {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the executor was not restarted:\n{}", stack.diagnostics());
}

/// Nothing of the request after its one terminal event, and it ran once.
async fn ended_once_and_last(stack: &Stack, rid: &str) {
    let events = events_of(stack, rid).await;
    let kinds = airlock_tests::kinds(&events);
    assert_eq!(
        kinds.last(),
        Some(&EventKind::Terminal),
        "published after the terminal: {kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == EventKind::Terminal).count(),
        1,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == EventKind::ExecStarted).count(),
        1,
        "ran twice: {kinds:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_graceful_stop_of_the_executor_lets_its_run_finish_and_report_what_happened() {
    let stack = tokio::task::spawn_blocking(Stack::start).await.expect("stack");
    let (child, rid) = start_long_run(
        &stack,
        "graceful.py",
        "import time\nprint('started', flush=True)\ntime.sleep(3)\nprint('done', flush=True)\n",
    )
    .await;
    let executor = stack.service_pid("executor").expect("executor pid");
    signal(executor, libc::SIGTERM);

    let json = tokio::task::spawn_blocking(move || finish(child)).await.expect("join");
    assert_eq!(json["request_id"], rid.as_str());
    assert_eq!(json["outcome"], "finished", "the run completed: {json}");
    assert_eq!(json["exit_code"], 0, "{json}");
    assert_eq!(json["stdout"], "started\ndone\n", "{json}");
    // The stopped executor is restarted by `up`; give it the chance to (wrongly) end the
    // request again or run it twice before counting.
    restarted_executor(&stack, executor).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    ended_once_and_last(&stack, &rid).await;
    let (json, status) = stack.run_code("after.py", "print('after the restart')\n", &[]);
    assert_eq!(status, 0, "{json}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_decision_redelivered_while_its_run_goes_on_elsewhere_is_not_declared_interrupted() {
    let stack = tokio::task::spawn_blocking(Stack::start).await.expect("stack");
    // A second executor, another instance on the same engine, consuming the same decisions.
    let second_home = tempfile::tempdir().expect("second home");
    let mut config: toml::Table =
        toml::from_str(&std::fs::read_to_string(stack.path().join("airlock.toml")).expect("airlock.toml"))
            .expect("parses");
    if let Some(toml::Value::Table(executor)) = config.get_mut("executor") {
        executor.insert(
            "instance".into(),
            toml::Value::String(format!("second-{}", std::process::id())),
        );
    }
    std::fs::write(
        second_home.path().join("airlock.toml"),
        toml::to_string(&config).expect("toml"),
    )
    .expect("write");
    std::fs::copy(stack.path().join("stack.json"), second_home.path().join("stack.json")).expect("stack.json");
    std::fs::create_dir(second_home.path().join("creds")).expect("creds");
    std::fs::copy(stack.creds("executor"), second_home.path().join("creds/executor.nk")).expect("seed");

    // Trusted: a wall time (120 s) longer than the freeze below.
    let (child, rid) = start_long_run_with(
        &stack,
        "long.py",
        "import time\nprint('started', flush=True)\ntime.sleep(48)\nprint('done', flush=True)\n",
        &["--trust", "trusted"],
    )
    .await;
    let mut second = std::process::Command::new(airlock_tests::airlock_bin())
        .arg("--home")
        .arg(second_home.path())
        .args(["serve", "executor"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(stack.path().join("second-executor.log")).expect("log"))
        .spawn()
        .expect("a second executor");
    // The first executor freezes past the ack wait and past the expiry (30 s) of its own pull
    // requests, which would otherwise take the redeliveries: the server redelivers the decision
    // to the second, which finds the run claimed by another instance whose heartbeat is younger
    // than its lease (60 s).
    let first = stack.service_pid("executor").expect("executor pid");
    signal(first, libc::SIGSTOP);
    tokio::time::sleep(Duration::from_secs(42)).await;
    signal(first, libc::SIGCONT);

    let json = tokio::task::spawn_blocking(move || finish(child)).await.expect("join");
    // Stopped gracefully, so that it removes its own warm containers.
    signal(second.id(), libc::SIGTERM);
    let stopped = tokio::task::spawn_blocking(move || {
        for _ in 0..300 {
            if let Ok(Some(_)) = second.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = second.kill();
        let _ = second.wait();
        false
    })
    .await
    .expect("join");
    assert!(stopped, "the second executor did not stop on SIGTERM");
    let log = std::fs::read_to_string(stack.path().join("second-executor.log")).unwrap_or_default();
    assert_eq!(json["outcome"], "finished", "{json}\nsecond executor:\n{log}");
    assert_eq!(json["stdout"], "started\ndone\n", "{json}");
    assert!(
        log.contains("redelivered while its run goes on"),
        "the decision was not redelivered to the second executor, so this test proved nothing:\n{log}\n{}",
        stack.diagnostics()
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    ended_once_and_last(&stack, &rid).await;
}
