//! Every request ends in exactly one terminal event, even when a service or the NATS server is
//! killed mid-flight and restarted; a run the infrastructure interrupted is run again once, in
//! a fresh container, and never more.

use airlock_protocol::{Event, EventKind, Outcome};
use airlock_tests::{Stack, events_of, finish, kill9, signal, start_long_run, start_long_run_with, terminals};
use std::process::Stdio;
use std::time::Duration;

/// A program that prints a fresh token first: each of its runs shows a different one.
const TOKENED: &str =
    "import os, time\nprint('run', os.urandom(8).hex(), flush=True)\ntime.sleep(4)\nprint('done', flush=True)\n";

/// The tokens a request's output chunks showed, in order.
fn tokens(events: &[airlock_protocol::Envelope]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Output(chunk) => Some(String::from_utf8_lossy(&chunk.data).into_owned()),
            _ => None,
        })
        .flat_map(|text| {
            text.lines()
                .filter_map(|l| l.strip_prefix("run ").map(str::to_owned))
                .collect::<Vec<_>>()
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

/// Waits until the killed run's containers are gone.
async fn no_container_of(rid: &str) {
    let mut leftover = containers_of(rid);
    for _ in 0..50 {
        if leftover.is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        leftover = containers_of(rid);
    }
    panic!("the killed run's container is still there: {leftover}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_whose_executor_is_killed_is_run_again_once_and_the_client_gets_the_second_attempts_result() {
    let stack = tokio::task::spawn_blocking(Stack::start).await.expect("stack");
    let (child, rid) = start_long_run(&stack, "interrupted.py", TOKENED).await;
    // Killed mid-run, once the first attempt's output is in the record.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while tokens(&events_of(&stack, &rid).await).is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the first attempt printed nothing"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let executor = stack.service_pid("executor").expect("executor pid");
    kill9(executor);

    let json = tokio::task::spawn_blocking(move || finish(child)).await.expect("join");
    assert_eq!(json["request_id"], rid.as_str());
    assert_eq!(json["outcome"], "finished", "run again after the interruption: {json}");
    assert_ne!(
        stack.service_pid("executor"),
        Some(executor),
        "the executor was not restarted"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let events = events_of(&stack, &rid).await;
    let attempts: Vec<u32> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::ExecStarted(started) => Some(started.attempt),
            _ => None,
        })
        .collect();
    assert_eq!(
        attempts,
        [1, 2],
        "two runs, numbered: {:?}",
        airlock_tests::kinds(&events)
    );
    let retrying: Vec<String> = airlock_tests::progress_of(&events)
        .into_iter()
        .filter_map(|p| match p {
            airlock_protocol::Progress::Retrying { reason } => Some(reason),
            _ => None,
        })
        .collect();
    assert_eq!(retrying.len(), 1, "one retry, announced with its reason");
    assert!(retrying[0].contains("executor"), "{retrying:?}");
    // The client's result is the second attempt's own output.
    let seen = tokens(&events);
    let stdout = json["stdout"].as_str().unwrap_or_default();
    assert!(
        seen.len() == 2 && seen[0] != seen[1],
        "each attempt printed its own token: {seen:?}"
    );
    assert_eq!(stdout, format!("run {}\ndone\n", seen[1]), "{json}");
    assert_eq!(terminals(&stack, &rid).await.len(), 1);
    no_container_of(&rid).await;

    // Both attempts and the reason are in the audit log.
    let replay = stack.output(&["audit", "replay", "--request", &rid]);
    let text = String::from_utf8_lossy(&replay.stdout);
    assert!(replay.status.success(), "{}", String::from_utf8_lossy(&replay.stderr));
    assert_eq!(text.matches("exec_started").count(), 2, "{text}");
    assert!(
        text.contains("attempt 2:")
            && text.contains("running it again")
            && text.contains(&seen[0])
            && text.contains(&seen[1]),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn with_retries_off_an_interrupted_run_ends_once_as_interrupted_and_removes_its_container() {
    let stack = tokio::task::spawn_blocking(|| Stack::start_with("[executor]\nretry_interrupted = 0\n"))
        .await
        .expect("stack");
    let (child, rid) = start_long_run(&stack, "slow.py", TOKENED).await;
    let executor = stack.service_pid("executor").expect("executor pid");
    kill9(executor);

    let json = tokio::task::spawn_blocking(move || finish(child)).await.expect("join");
    assert_eq!(json["request_id"], rid.as_str());
    assert_eq!(json["outcome"], "failed", "{json}");
    assert!(
        json["reason"].as_str().unwrap_or_default().starts_with("interrupted"),
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
    no_container_of(&rid).await;

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
