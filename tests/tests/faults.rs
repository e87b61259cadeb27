//! What the executor depends on failing under a whole stack (issue 21): the container engine
//! away for seconds (through a forwarding socket the test cuts), an auditor frozen or unable to
//! write its store, and one client keeping the executor busy while another waits. No request
//! fails for the infrastructure's sake, nothing runs while the audit log cannot record it, and
//! the status says what is wrong.

use airlock_executor::engine_proxy::EngineProxy;
use airlock_protocol::{Event, EventKind, Progress};
use airlock_tests::{Stack, events_of, finish, progress_of, signal, start_long_run, terminals};
use std::path::Path;
use std::time::{Duration, Instant};

fn engine_socket() -> String {
    let host = std::env::var("DOCKER_HOST").unwrap_or_else(|_| "unix:///var/run/docker.sock".into());
    host.strip_prefix("unix://").unwrap_or(&host).to_owned()
}

/// `airlock status --json`, and whether it exited 0.
fn status(stack: &Stack) -> (serde_json::Value, bool) {
    let output = stack.output(&["status", "--json"]);
    let json = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "status printed no JSON ({e}): {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (json, output.status.success())
}

/// The problems the executor reports in the status.
fn executor_problems(status: &serde_json::Value) -> serde_json::Value {
    status["services"]["airlock-executor"][0]["problems"].clone()
}

/// Waits until `check` holds for the status, or panics with `what`.
async fn status_until(stack: &Stack, what: &str, check: impl Fn(&serde_json::Value, bool) -> bool) {
    let start = Instant::now();
    loop {
        let (json, ok) = status(stack);
        if check(&json, ok) {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{what}: {json}\n{}",
            stack.diagnostics()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

fn has(progress: &[Progress], stage: &str) -> bool {
    progress.iter().any(|p| p.stage() == stage)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_six_second_engine_outage_fails_no_request() {
    let proxy = EngineProxy::start(Path::new(&engine_socket())).expect("the forwarding socket");
    let config = format!("[executor]\ndocker_host = \"{}\"\n", proxy.docker_host());
    let stack = tokio::task::spawn_blocking(move || Stack::start_with(&config))
        .await
        .expect("stack");
    // A run in progress when the engine goes away...
    let (running, running_rid) = start_long_run(
        &stack,
        "through.py",
        "import time\nprint('before', flush=True)\ntime.sleep(3)\nprint('after', flush=True)\n",
    )
    .await;
    proxy.outage();
    let outage = Instant::now();
    // ... and requests that arrive while it is away.
    let arriving: Vec<_> = (0..3)
        .map(|i| stack.spawn_run(&format!("during-{i}.py"), &format!("print('during {i}')\n"), &[]))
        .collect();
    status_until(
        &stack,
        "the status does not name the engine while it is away",
        |json, ok| {
            !ok && executor_problems(json)["engine"]
                .as_str()
                .is_some_and(|p| p.contains("engine") && p.contains("unreachable"))
        },
    )
    .await;
    // A human-facing run says what it waits for.
    let file = stack.path().join("programs").join("told.py");
    std::fs::write(&file, "print('told')\n").expect("program");
    let told = stack
        .airlock()
        .arg("run")
        .arg(&file)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("airlock run");
    tokio::time::sleep(Duration::from_secs(6).saturating_sub(outage.elapsed())).await;
    proxy.restore();

    let json = tokio::task::spawn_blocking(move || finish(running))
        .await
        .expect("join");
    assert_eq!(json["outcome"], "finished", "the interrupted run was run again: {json}");
    assert_eq!(json["stdout"], "before\nafter\n", "{json}");
    let events = events_of(&stack, &running_rid).await;
    assert!(
        has(&progress_of(&events), "retrying"),
        "{:?}",
        airlock_tests::kinds(&events)
    );
    for (i, child) in arriving.into_iter().enumerate() {
        let json = tokio::task::spawn_blocking(move || finish(child)).await.expect("join");
        assert_eq!(json["outcome"], "finished", "{json}");
        assert_eq!(json["stdout"], format!("during {i}\n"), "{json}");
        let rid = json["request_id"].as_str().expect("request id").to_owned();
        let progress = progress_of(&events_of(&stack, &rid).await);
        assert!(has(&progress, "waiting_for_engine"), "{rid} was not told: {progress:?}");
        assert_eq!(terminals(&stack, &rid).await.len(), 1);
    }
    let told = tokio::task::spawn_blocking(move || told.wait_with_output())
        .await
        .expect("join")
        .expect("airlock run");
    let stderr = String::from_utf8_lossy(&told.stderr);
    assert!(told.status.success(), "{stderr}");
    assert!(stderr.contains("waiting for the container engine"), "{stderr}");
    // Healthy again, by itself.
    status_until(&stack, "the executor did not recover", |json, ok| {
        ok && executor_problems(json).as_object().is_some_and(|p| p.is_empty())
    })
    .await;
    let (json, status) = stack.run_code("after.py", "print('after the outage')\n", &[]);
    assert_eq!(status, 0, "{json}");
}

#[tokio::test(flavor = "multi_thread")]
async fn nothing_runs_while_the_auditor_is_frozen_and_everything_runs_once_it_is_back() {
    let stack = tokio::task::spawn_blocking(|| Stack::start_with("[auditor]\nmax_lag = \"1s\"\n"))
        .await
        .expect("stack");
    let (json, status) = stack.run_code("first.py", "print('logged')\n", &[]);
    assert_eq!(status, 0, "{json}");
    let auditor = stack.service_pid("auditor").expect("auditor pid");
    signal(auditor, libc::SIGSTOP);
    // Longer than `max_lag`: the executor sees the log fall behind.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let child = stack.spawn_run("waits.py", "print('ran after all')\n", &[]);
    let admin = stack.connect("admin").await;
    status_until(
        &stack,
        "the status does not say runs wait for the audit log",
        |json, ok| !ok && executor_problems(json)["audit_log"].is_string(),
    )
    .await;
    // Nothing has started: the request waits, and its client is told why.
    let waiting = waiting_requests(&admin).await;
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    let events = events_of(&stack, &waiting[0]).await;
    assert!(
        !events.iter().any(|e| e.kind() == EventKind::ExecStarted),
        "a program started while the audit log could not record it: {:?}",
        airlock_tests::kinds(&events)
    );
    assert!(has(&progress_of(&events), "waiting_for_audit_log"));
    signal(auditor, libc::SIGCONT);

    let json = tokio::task::spawn_blocking(move || finish(child)).await.expect("join");
    assert_eq!(json["outcome"], "finished", "{json}");
    assert_eq!(json["stdout"], "ran after all\n");
    assert!(
        json["receipt"].is_object() || json["receipt"].is_string(),
        "no receipt: {json}"
    );
    status_until(&stack, "the executor did not recover", |json, ok| {
        ok && executor_problems(json).as_object().is_some_and(|p| p.is_empty())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn with_the_log_not_required_runs_go_on_while_the_auditor_is_frozen() {
    let stack = tokio::task::spawn_blocking(|| Stack::start_with("[auditor]\nrequired = false\n"))
        .await
        .expect("stack");
    let auditor = stack.service_pid("auditor").expect("auditor pid");
    signal(auditor, libc::SIGSTOP);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let child = stack.spawn_run("goes-on.py", "print('not waiting')\n", &[]);
    let admin = stack.connect("admin").await;
    // The terminal event is out while the auditor is still frozen (the receipt comes later).
    let start = Instant::now();
    let rid = loop {
        if let Some(rid) = ended_requests(&admin).await.into_iter().next() {
            break rid;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "{}", stack.diagnostics());
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    signal(auditor, libc::SIGCONT);
    let json = tokio::task::spawn_blocking(move || finish(child)).await.expect("join");
    assert_eq!(json["request_id"], rid.as_str());
    assert_eq!(json["outcome"], "finished", "{json}");
}

#[tokio::test(flavor = "multi_thread")]
async fn nothing_runs_while_the_auditors_store_fails() {
    let stack = tokio::task::spawn_blocking(|| Stack::start_with("[auditor]\nmax_lag = \"1s\"\n"))
        .await
        .expect("stack");
    let (json, status) = stack.run_code("first.py", "print('logged')\n", &[]);
    assert_eq!(status, 0, "{json}");
    // The store's staging directory becomes a file: no commit can be staged any more.
    let store = audit_store(&stack);
    let staging = store.join("staging");
    let aside = store.join("staging.aside");
    if staging.exists() {
        std::fs::rename(&staging, &aside).expect("set the staging directory aside");
    }
    std::fs::write(&staging, b"not a directory").expect("break the store");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let child = stack.spawn_run("waits.py", "print('ran once logged')\n", &[]);
    status_until(
        &stack,
        "the status does not say runs wait for the audit log",
        |json, ok| !ok && executor_problems(json)["audit_log"].is_string(),
    )
    .await;
    let admin = stack.connect("admin").await;
    let waiting = waiting_requests(&admin).await;
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    assert!(
        !events_of(&stack, &waiting[0])
            .await
            .iter()
            .any(|e| e.kind() == EventKind::ExecStarted),
        "a program started while the store could not record it"
    );
    std::fs::remove_file(&staging).expect("repair the store");
    if aside.exists() {
        std::fs::rename(&aside, &staging).expect("put the staging directory back");
    }
    let json = tokio::task::spawn_blocking(move || finish(child)).await.expect("join");
    assert_eq!(json["outcome"], "finished", "{json}");
    assert_eq!(json["stdout"], "ran once logged\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn another_clients_request_is_served_while_one_client_keeps_the_executor_busy() {
    let stack = tokio::task::spawn_blocking(|| {
        Stack::start_with("[clients]\nextra_users = [\"bob\"]\n[executor.host]\nmax_concurrent = 2\n")
    })
    .await
    .expect("stack");
    // Mai keeps the executor busy: four jobs of twelve seconds.
    let mai: Vec<_> = (0..4)
        .map(|i| {
            stack.spawn_run(
                &format!("busy-{i}.py"),
                &format!("import time\ntime.sleep(12)\nprint('busy {i}')\n"),
                &[],
            )
        })
        .collect();
    let admin = stack.connect("admin").await;
    let start = Instant::now();
    while started_requests(&admin).await.is_empty() {
        assert!(start.elapsed() < Duration::from_secs(60), "{}", stack.diagnostics());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    // Bob asks for something trivial.
    let bob = submit_as(&stack, "bob", "print('hi')\n").await;
    let start = Instant::now();
    let bob_ended = loop {
        if ended_requests(&admin).await.contains(&bob) {
            break start.elapsed();
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{}", stack.diagnostics());
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // Served while Mai's first jobs still run: no request of Mai's had ended yet.
    let ended = ended_requests(&admin).await;
    assert_eq!(ended, vec![bob.clone()], "bob waited behind mai ({bob_ended:?})");
    let events = events_of(&stack, &bob).await;
    let stdout = events.iter().find_map(|e| match &e.event {
        Event::Terminal(t) => Some(String::from_utf8_lossy(&t.stdout).into_owned()),
        _ => None,
    });
    assert_eq!(stdout.as_deref(), Some("hi\n"));
    // Mai's waiting requests were told they are queued, and how many are ahead.
    let mut queued = 0;
    for child in mai {
        let json = tokio::task::spawn_blocking(move || finish(child)).await.expect("join");
        assert_eq!(json["outcome"], "finished", "{json}");
        let rid = json["request_id"].as_str().expect("id").to_owned();
        queued += progress_of(&events_of(&stack, &rid).await)
            .iter()
            .filter(|p| matches!(p, Progress::Queued { .. }))
            .count();
    }
    assert!(queued >= 2, "mai's waiting requests were not told they are queued");
}

/// Submits `code` as client `user` (a submission on its own subject), returns the request id.
async fn submit_as(stack: &Stack, user: &str, code: &str) -> String {
    let client = stack.connect(user).await;
    let js = async_nats::jetstream::new(client);
    let publisher = airlock_bus::Publisher::new(
        js,
        airlock_protocol::Producer::Mai,
        tokio_util::sync::CancellationToken::new(),
    );
    let rid = airlock_protocol::RequestId::new_for(user).expect("id");
    let request = airlock_protocol::ExecutionRequest::new(airlock_protocol::Language::Python, code.as_bytes().to_vec());
    publisher
        .publish(&airlock_protocol::Envelope::new(
            rid.clone(),
            airlock_protocol::Producer::Mai,
            Event::Submitted(request),
        ))
        .await
        .expect("submit");
    rid.to_string()
}

/// Request ids with an event of `kind` on the events stream so far.
async fn requests_with(admin: &async_nats::Client, kind: EventKind) -> Vec<String> {
    use futures::StreamExt as _;
    let js = async_nats::jetstream::new(admin.clone());
    let stream = js.get_stream("AIRLOCK").await.expect("events stream");
    let consumer = stream
        .create_consumer(async_nats::jetstream::consumer::pull::OrderedConfig {
            filter_subject: format!("{}.>", kind.subject_prefix()),
            ..Default::default()
        })
        .await
        .expect("ordered consumer");
    let pending = consumer.cached_info().num_pending as usize;
    let mut messages = consumer.messages().await.expect("messages");
    let mut found = Vec::new();
    while found.len() < pending {
        match tokio::time::timeout(Duration::from_secs(5), messages.next()).await {
            Ok(Some(Ok(message))) => {
                if let Some((_, rid)) = EventKind::parse_subject(message.subject.as_str()) {
                    found.push(rid.to_owned());
                }
            }
            _ => break,
        }
    }
    found
}

async fn started_requests(admin: &async_nats::Client) -> Vec<String> {
    requests_with(admin, EventKind::ExecStarted).await
}

async fn ended_requests(admin: &async_nats::Client) -> Vec<String> {
    requests_with(admin, EventKind::Terminal).await
}

/// Requests decided but not yet ended.
async fn waiting_requests(admin: &async_nats::Client) -> Vec<String> {
    let ended = ended_requests(admin).await;
    requests_with(admin, EventKind::Decided)
        .await
        .into_iter()
        .filter(|rid| !ended.contains(rid))
        .collect()
}

/// Where the stack's auditor keeps its log (a directory, relative to the home unless absolute).
fn audit_store(stack: &Stack) -> std::path::PathBuf {
    let config: toml::Table =
        toml::from_str(&std::fs::read_to_string(stack.path().join("airlock.toml")).expect("airlock.toml"))
            .expect("toml");
    let store = config["auditor"]["store"].as_str().expect("auditor.store").to_owned();
    let store = store.strip_prefix("file://").unwrap_or(&store);
    let path = Path::new(store);
    if path.is_absolute() {
        path.to_owned()
    } else {
        stack.path().join(path)
    }
}

/// An audit store whose volume is used beyond `[auditor] store_warn_percent` is said in the
/// auditor's status, and `airlock status` exits non-zero, before a full disk stops every run.
/// (The test's volume is certainly more than 1% used, and, on a machine that can run these
/// tests, less than 100%.)
#[tokio::test(flavor = "multi_thread")]
async fn a_nearly_full_audit_store_is_said_in_the_status() {
    let stack = tokio::task::spawn_blocking(|| Stack::start_with("[auditor]\nstore_warn_percent = 1\n"))
        .await
        .expect("stack");
    status_until(
        &stack,
        "the status does not say the store is nearly full",
        |json, ok| {
            let problem = &json["services"]["airlock-auditor"][0]["problems"]["audit_store"];
            !ok && problem.as_str().is_some_and(|p| p.contains("% used"))
        },
    )
    .await;
    let (json, exit) = stack.run_code("still.py", "print('still runs')\n", &[]);
    assert_eq!(exit, 0, "a warning stops nothing: {json}");

    let roomy = tokio::task::spawn_blocking(|| Stack::start_with("[auditor]\nstore_warn_percent = 100\n"))
        .await
        .expect("stack");
    let (json, ok) = status(&roomy);
    assert!(ok, "{json}");
    assert!(
        json["services"]["airlock-auditor"][0]["problems"]["audit_store"].is_null(),
        "{json}"
    );
}
