//! The sandbox against the real Docker engine: real containers, no mocks. Each test uses its
//! own executor instance label, so tests run concurrently and check their own leaks.

mod common;

use airlock_executor::docker::{LABEL_EXECUTOR, LABEL_REQUEST};
use airlock_executor::{Job, SandboxConfig, SandboxError, SandboxEvent};
use airlock_protocol::{Language, Limits, OutputStream, Runtime, ViolationKind};
use common::{config, job, run_ok, start, started, text};
use std::time::Duration;

fn quota() -> Limits {
    SandboxConfig::default().quotas.untrusted
}

#[tokio::test]
async fn hello_in_python_and_bash_on_warm_containers() {
    let (sandbox, leaks) = start(config("hello")).await;
    assert!(
        sandbox.wait_warm(Duration::from_secs(30)).await,
        "the pool did not warm up"
    );
    let (report, events) = run_ok(&sandbox, job(Language::Python, "print('hello')\n", quota())).await;
    assert_eq!(text(&report.stdout), "hello\n");
    assert_eq!(report.exit_code, Some(0));
    assert!(report.violation.is_none() && report.stderr.is_empty());
    assert!(started(&events).warm, "a warm container was ready and must be used");
    assert_eq!(started(&events).limits, quota());
    assert_eq!(started(&events).runtime, Runtime::Runc);
    assert_eq!(
        started(&events).seccomp,
        Some(airlock_executor::seccomp::digest(Runtime::Runc)),
        "the run's record names the seccomp profile it ran under"
    );
    assert!(report.usage.peak_memory_bytes > 1024 * 1024, "{:?}", report.usage);
    assert_eq!(report.usage.stdout_bytes, 6);

    assert!(sandbox.wait_warm(Duration::from_secs(30)).await);
    let (report, events) = run_ok(&sandbox, job(Language::Bash, "echo \"hi from $0\"; exit 4\n", quota())).await;
    assert!(text(&report.stdout).starts_with("hi from "), "{report:?}");
    assert_eq!(report.exit_code, Some(4));
    assert!(started(&events).warm);
    let stats = sandbox.pool_stats();
    assert!(stats.hits >= 2, "{stats:?}");
    sandbox.shutdown().await;
    leaks.assert_none();
}

#[tokio::test]
async fn stdin_args_and_env_reach_the_program() {
    let (sandbox, leaks) = start(config("inputs")).await;
    let mut python = job(
        Language::Python,
        "import os, sys\n\
         data = sys.stdin.buffer.read()\n\
         print(sys.argv[1:], os.environ['GREETING'], os.environ.get('AIRLOCK_BOOT'), len(data), data[:4], sep='|')\n",
        quota(),
    );
    python.inputs.args = vec!["one".into(), "two words".into(), "ünï".into(), "--flag".into()];
    python.inputs.env.insert("GREETING".into(), "héllo wörld".into());
    python.inputs.stdin = b"\0\x01AIRLOCK1 binary \xff".repeat(5000);
    let (report, _) = run_ok(&sandbox, python).await;
    assert_eq!(
        text(&report.stdout),
        "['one', 'two words', 'ünï', '--flag']|héllo wörld|None|95000|b'\\x00\\x01AI'\n",
        "stderr: {}",
        text(&report.stderr)
    );

    let mut bash = job(
        Language::Bash,
        "echo \"$# [$1] [$2] $GREETING\"; wc -c; read -r first < /dev/stdin; echo done\n",
        quota(),
    );
    bash.inputs.args = vec!["a b".into(), "$HOME".into()];
    bash.inputs.env.insert("GREETING".into(), "hi".into());
    bash.inputs.stdin = b"x".repeat(200_000);
    let (report, _) = run_ok(&sandbox, bash).await;
    assert_eq!(
        text(&report.stdout),
        "2 [a b] [$HOME] hi\n200000\ndone\n",
        "{}",
        text(&report.stderr)
    );
    sandbox.shutdown().await;
    leaks.assert_none();
}

#[tokio::test]
async fn exit_codes_and_tracebacks_are_the_programs_own() {
    let (sandbox, leaks) = start(config("exits")).await;
    let cases: [(Language, &str, i64); 9] = [
        (Language::Python, "import sys; sys.exit(3)", 3),
        (Language::Python, "import sys; sys.exit(None)", 0),
        (Language::Python, "import sys; sys.exit(258)", 2),
        (Language::Python, "raise KeyboardInterrupt", 130),
        // A message for an exit status goes to stderr, and the status is 1.
        (Language::Python, "import sys; sys.exit('no input')", 1),
        (Language::Python, "def f():\n    raise ValueError('boom')\nf()\n", 1),
        (
            Language::Python,
            "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
            137,
        ),
        (Language::Bash, "exit 42", 42),
        (Language::Bash, "false", 1),
    ];
    for (language, code, expected) in cases {
        let (report, _) = run_ok(&sandbox, job(language, code, quota())).await;
        assert_eq!(report.exit_code, Some(expected), "{code}: {report:?}");
        assert!(report.violation.is_none(), "{code}: {report:?}");
    }
    let (report, _) = run_ok(
        &sandbox,
        job(
            Language::Python,
            "def f():\n    raise ValueError('boom')\nf()\n",
            quota(),
        ),
    )
    .await;
    let stderr = text(&report.stderr);
    assert!(
        stderr.contains("File \"main.py\", line 3, in <module>") && stderr.contains("raise ValueError('boom')"),
        "{stderr}"
    );
    // What interpreter shutdown shows a program is kept: non-daemon threads finish, atexit
    // handlers run, buffered output is written, in that order.
    let shutdown = "import atexit, sys, threading, time\n\
        atexit.register(lambda: print('atexit ran'))\n\
        def late():\n    time.sleep(0.2)\n    print('thread done')\n\
        threading.Thread(target=late).start()\n\
        sys.stdout.write('buffered, no newline')\n\
        sys.exit(5)\n";
    let (report, _) = run_ok(&sandbox, job(Language::Python, shutdown, quota())).await;
    assert_eq!(report.exit_code, Some(5), "{report:?}");
    assert_eq!(
        text(&report.stdout),
        "buffered, no newlinethread done\natexit ran\n",
        "{}",
        text(&report.stderr)
    );
    let (report, _) = run_ok(
        &sandbox,
        job(Language::Python, "import sys; sys.exit('no input')", quota()),
    )
    .await;
    assert_eq!(text(&report.stderr), "no input\n");
    assert!(
        !stderr.contains("<string>"),
        "the bootstrap's frames are hidden: {stderr}"
    );
    sandbox.shutdown().await;
    leaks.assert_none();
}

#[tokio::test]
async fn cold_path_works_without_a_pool_and_labels_the_request() {
    let mut cfg = config("cold");
    cfg.pool.enabled = false;
    let instance = cfg.instance.clone();
    let (sandbox, leaks) = start(cfg).await;
    let mut slow = job(Language::Bash, "echo started; sleep 30", quota());
    slow.limits.wall_ms = 20_000;
    let request_id = slow.request_id.clone();
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let running = tokio::spawn({
        let sandbox = sandbox.clone();
        async move { sandbox.run(slow, tx).await }
    });
    let id = loop {
        match rx.recv().await.expect("events") {
            SandboxEvent::Started(s) => {
                assert!(!s.warm);
                break s.container;
            }
            _ => continue,
        }
    };
    // The hardening, as the engine reports it for the running container.
    let engine = airlock_executor::docker::ContainerEngine::connect(&SandboxConfig::default())
        .await
        .unwrap();
    let inspect = engine
        .docker
        .inspect_container(&id, None::<bollard::query_parameters::InspectContainerOptions>)
        .await
        .unwrap();
    let labels = inspect.config.as_ref().and_then(|c| c.labels.clone()).unwrap();
    assert_eq!(labels.get(LABEL_EXECUTOR), Some(&instance));
    assert_eq!(labels.get(LABEL_REQUEST), Some(&request_id));
    let config_user = inspect.config.as_ref().and_then(|c| c.user.clone());
    assert_eq!(config_user.as_deref(), Some("1000:1000"));
    let host = inspect.host_config.unwrap();
    let limits = quota();
    assert_eq!(host.network_mode.as_deref(), Some("none"));
    assert_eq!(host.readonly_rootfs, Some(true));
    assert_eq!(host.cap_drop, Some(vec!["ALL".to_owned()]));
    assert_eq!(
        host.security_opt,
        Some(vec![
            "no-new-privileges".to_owned(),
            format!("seccomp={}", airlock_executor::seccomp::profile(Runtime::Runc))
        ]),
        "no new privileges, and Airlock's seccomp profile rather than the engine's"
    );
    assert_eq!(host.runtime.as_deref(), Some("runc"));
    assert_eq!(host.privileged, Some(false));
    assert_eq!(host.pids_limit, Some(i64::from(limits.pids)));
    assert_eq!(host.memory, Some(limits.memory_bytes as i64));
    assert_eq!(host.memory_swap, host.memory, "no swap");
    assert_eq!(host.nano_cpus, Some(i64::from(limits.cpu_millis) * 1_000_000));
    assert_eq!(host.log_config.and_then(|l| l.typ).as_deref(), Some("none"));
    let tmpfs = host.tmpfs.unwrap();
    let tmp = tmpfs.get("/tmp").unwrap();
    assert!(
        tmp.contains(&format!("size={}", limits.disk_bytes)) && tmp.contains("noexec") && tmp.contains("nosuid"),
        "{tmp}"
    );
    let nofile = host
        .ulimits
        .unwrap()
        .into_iter()
        .find(|u| u.name.as_deref() == Some("nofile"))
        .unwrap();
    assert_eq!(nofile.hard, Some(i64::from(limits.open_files)));
    assert!(
        host.binds.unwrap_or_default().is_empty(),
        "nothing of the host is mounted"
    );
    // And the container can be told apart from the host's processes: it is still running now.
    assert_eq!(inspect.state.and_then(|s| s.running), Some(true));
    running.abort();
    sandbox.shutdown().await;
    leaks.assert_none();
}

#[tokio::test]
async fn output_streams_in_order_and_usage_is_sampled() {
    let mut cfg = config("usage");
    cfg.limits.sample = std::time::Duration::from_millis(100);
    let (sandbox, leaks) = start(cfg).await;
    let code = r#"
import sys, time, subprocess
block = bytearray(120 * 1024 * 1024)
block[::4096] = b'x' * (len(block) // 4096)
procs = [subprocess.Popen(['sleep', '1']) for _ in range(3)]
end = time.time() + 1.2
n = 0
while time.time() < end:
    n += 1
for i in range(50):
    print('out', i, flush=True)
    print('err', i, file=sys.stderr, flush=True)
[p.wait() for p in procs]
"#;
    let mut j = job(Language::Python, code, quota());
    j.limits.memory_bytes = 200 * 1024 * 1024;
    let (report, events) = run_ok(&sandbox, j).await;
    assert_eq!(report.exit_code, Some(0), "{}", text(&report.stderr));
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let mut seqs = Vec::new();
    let mut samples = Vec::new();
    for event in &events {
        match event {
            SandboxEvent::Output(chunk) => {
                seqs.push(chunk.seq);
                match chunk.stream {
                    OutputStream::Stdout => stdout.extend_from_slice(&chunk.data),
                    OutputStream::Stderr => stderr.extend_from_slice(&chunk.data),
                }
            }
            SandboxEvent::Usage(sample) => samples.push(*sample),
            _ => {}
        }
    }
    assert_eq!(stdout, report.stdout);
    assert_eq!(stderr, report.stderr);
    assert_eq!(
        seqs,
        (0..seqs.len() as u32).collect::<Vec<_>>(),
        "chunks are numbered in order"
    );
    assert!(
        samples.len() >= 5,
        "{} samples for a run over a second long",
        samples.len()
    );
    assert!(
        samples
            .windows(2)
            .all(|w| w[0].seq + 1 == w[1].seq && w[0].elapsed_ms <= w[1].elapsed_ms)
    );
    assert!(
        samples.iter().any(|s| s.memory_bytes >= 100 * 1024 * 1024),
        "a sample sees the 120 MiB block"
    );
    let usage = report.usage;
    assert!(usage.peak_memory_bytes >= 120 * 1024 * 1024, "{usage:?}");
    assert!(usage.peak_pids >= 4, "{usage:?}");
    assert!(usage.cpu_ms >= 300, "a busy second at half a core: {usage:?}");
    assert!(usage.wall_ms >= 1200, "{usage:?}");
    sandbox.shutdown().await;
    leaks.assert_none();
}

#[tokio::test]
async fn activity_lists_files_processes_and_network_attempts() {
    let (sandbox, leaks) = start(config("activity")).await;
    let code = r#"
import os, socket, subprocess
os.makedirs('/tmp/out/deep', exist_ok=True)
open('/tmp/out/deep/result.txt', 'w').write('x' * 1234)
open('/tmp/notes', 'w').write('hi')
subprocess.run(['sleep', '0.3'])
try:
    socket.create_connection(('203.0.113.9', 8080), timeout=1)
except OSError as e:
    print('blocked', e.errno)
"#;
    let (report, events) = run_ok(&sandbox, job(Language::Python, code, quota())).await;
    assert_eq!(report.exit_code, Some(0), "{}", text(&report.stderr));
    let activities: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            SandboxEvent::Activity(a) => Some(a.clone()),
            _ => None,
        })
        .collect();
    let outside = activities
        .iter()
        .find(|a| !a.untrusted)
        .expect("an outside activity report");
    assert!(
        outside
            .files_created
            .contains(&("/tmp/out/deep/result.txt".to_owned(), 1234)),
        "{outside:?}"
    );
    assert!(
        outside.files_created.contains(&("/tmp/notes".to_owned(), 2)),
        "{outside:?}"
    );
    assert!(outside.processes.iter().any(|p| p.contains("sleep")), "{outside:?}");
    let inside = activities
        .iter()
        .find(|a| a.untrusted)
        .expect("an inside (untrusted) report");
    assert!(
        inside
            .network_attempts
            .iter()
            .any(|n| n.contains("socket.connect") && n.contains("203.0.113.9")),
        "{inside:?}"
    );
    sandbox.shutdown().await;
    leaks.assert_none();
}

#[tokio::test]
async fn a_cut_file_list_says_so_and_600_decoys_do_not_hide_the_file_that_matters() {
    let (sandbox, leaks) = start(config("decoys")).await;
    let code = r#"
import os
for n in range(600):
    open(f'/tmp/decoy-{n:03}', 'w').close()
os.makedirs('/tmp/.cache/x', exist_ok=True)
open('/tmp/.cache/x/exfil.tar', 'wb').write(b'k' * 4096)
"#;
    let (report, events) = run_ok(&sandbox, job(Language::Python, code, quota())).await;
    assert_eq!(report.exit_code, Some(0), "{}", text(&report.stderr));
    let outside = events
        .iter()
        .find_map(|e| match e {
            SandboxEvent::Activity(a) if !a.untrusted => Some(a.clone()),
            _ => None,
        })
        .expect("an outside activity report");
    assert!(
        outside
            .files_created
            .contains(&("/tmp/.cache/x/exfil.tar".to_owned(), 4096)),
        "the file that matters is listed among {} files",
        outside.files_created.len()
    );
    assert_eq!(outside.files_created.len() as u64 + outside.files_omitted, 601);
    assert!(outside.files_omitted > 0, "the list was cut and says so");
    assert_eq!(outside.files_omitted_bytes, 0, "only empty decoys were left out");
    sandbox.shutdown().await;
    leaks.assert_none();
}

#[tokio::test]
async fn signals_the_program_sends_pid_1_do_not_cut_its_end_short() {
    let (sandbox, leaks) = start(config("hurry")).await;
    let code = r#"
import os, signal, sys
open('/tmp/left-behind', 'w').write('x' * 42)
os.kill(1, signal.SIGUSR2)
os.kill(1, signal.SIGUSR1)
print('signalled', flush=True)
sys.exit(3)
"#;
    let (report, events) = run_ok(&sandbox, job(Language::Python, code, quota())).await;
    assert_eq!(report.exit_code, Some(3), "{}", text(&report.stderr));
    assert_eq!(text(&report.stdout), "signalled\n");
    let outside = events
        .iter()
        .find_map(|e| match e {
            SandboxEvent::Activity(a) if !a.untrusted => Some(a.clone()),
            _ => None,
        })
        .expect("an outside activity report");
    assert!(
        outside.files_created.contains(&("/tmp/left-behind".to_owned(), 42)),
        "PID 1 still waited for the look at what the program left: {outside:?}"
    );
    sandbox.shutdown().await;
    leaks.assert_none();
}

#[tokio::test]
async fn cpu_is_capped_by_the_engine() {
    let mut cfg = config("cpu");
    cfg.pool.enabled = false;
    let (sandbox, leaks) = start(cfg).await;
    let mut j = job(Language::Bash, &common::two_busy_processes(2), quota());
    j.limits.cpu_millis = 500;
    let (report, _) = run_ok(&sandbox, j).await;
    common::assert_cpu_capped(&report.usage, 500);
    sandbox.shutdown().await;
    leaks.assert_none();
}

#[tokio::test]
async fn each_container_runs_one_job_and_is_removed() {
    let (sandbox, leaks) = start(config("single-use")).await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        let (report, events) = run_ok(
            &sandbox,
            job(Language::Python, "open('/tmp/mark','w').write('x'); print(1)", quota()),
        )
        .await;
        assert_eq!(report.exit_code, Some(0));
        ids.push(started(&events).container.clone());
    }
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 3, "a container is never reused: {ids:?}");
    // A file left by one job is not there for the next.
    let (report, _) = run_ok(
        &sandbox,
        job(
            Language::Python,
            "import os; print(os.path.exists('/tmp/mark'))",
            quota(),
        ),
    )
    .await;
    assert_eq!(text(&report.stdout), "False\n");
    sandbox.shutdown().await;
    for id in ids {
        let gone = std::process::Command::new("docker")
            .args(["inspect", &id])
            .output()
            .unwrap();
        assert!(!gone.status.success(), "container {id} still exists");
    }
    leaks.assert_none();
}

#[tokio::test]
async fn jobs_queue_for_capacity() {
    let mut cfg = config("queue");
    cfg.host.max_concurrent = Some(1);
    let (sandbox, leaks) = start(cfg).await;
    let first = job(Language::Bash, "sleep 1; echo first", quota());
    let second = job(Language::Bash, "echo second", quota());
    let a = tokio::spawn({
        let sandbox = sandbox.clone();
        async move {
            let (report, _) = run_ok(&sandbox, first).await;
            (report, std::time::Instant::now())
        }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let b = tokio::spawn({
        let sandbox = sandbox.clone();
        async move { sandbox.run(second, tx).await }
    });
    let mut second_started = None;
    while let Some(event) = rx.recv().await {
        if matches!(event, SandboxEvent::Started(_)) {
            second_started = Some(std::time::Instant::now());
        }
    }
    let (first_report, first_done) = a.await.unwrap();
    assert_eq!(text(&first_report.stdout), "first\n");
    assert_eq!(text(&b.await.unwrap().unwrap().stdout), "second\n");
    assert!(
        second_started.unwrap() >= first_done,
        "with one slot the second job starts after the first ends"
    );
    sandbox.shutdown().await;
    leaks.assert_none();
}

#[tokio::test]
async fn limits_are_lowered_to_the_host_never_raised() {
    let (sandbox, leaks) = start(config("effective")).await;
    let mut huge = quota();
    huge.memory_bytes = 1 << 50;
    huge.cpu_millis = 64_000;
    let effective = sandbox.effective_limits(&huge);
    assert!(effective.within(&huge));
    assert!(effective.memory_bytes < huge.memory_bytes && effective.cpu_millis < huge.cpu_millis);
    assert_eq!(sandbox.effective_limits(&quota()), quota());
    let (report, events) = run_ok(&sandbox, job(Language::Python, "print(1)", huge)).await;
    assert_eq!(report.exit_code, Some(0));
    assert_eq!(
        started(&events).limits,
        effective,
        "the run reports the limits it applied"
    );
    sandbox.shutdown().await;
    leaks.assert_none();
}

#[tokio::test]
async fn orphans_of_a_crashed_executor_are_removed_at_start() {
    let cfg = config("orphans");
    let instance = cfg.instance.clone();
    let label = format!("{LABEL_EXECUTOR}={instance}");
    // What a crashed executor leaves: a running labelled container and a labelled network.
    let image = cfg.images.python.clone();
    let out = std::process::Command::new("docker")
        .args([
            "run",
            "-d",
            "--network",
            "none",
            "--label",
            &label,
            "--label",
            "airlock.request=crashed",
            &image,
            "sleep",
            "600",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let orphan = text(&out.stdout).trim().to_owned();
    let net = std::process::Command::new("docker")
        .args([
            "network",
            "create",
            "--internal",
            "--label",
            &label,
            &format!("airlock-{instance}-orphan"),
        ])
        .output()
        .unwrap();
    assert!(net.status.success(), "{}", text(&net.stderr));
    let (sandbox, leaks) = start(cfg).await;
    let (containers, networks) = leaks.left();
    assert!(
        !containers.contains(&orphan) && !containers.iter().any(|c| orphan.starts_with(c.as_str())),
        "{containers:?}"
    );
    assert!(networks.is_empty(), "{networks:?}");
    sandbox.shutdown().await;
    leaks.assert_none();
}

#[tokio::test]
async fn a_container_outlives_a_dead_executor_by_a_bounded_time() {
    let mut cfg = config("dead-executor");
    cfg.pool.enabled = false;
    cfg.limits.grace = std::time::Duration::from_secs(1);
    let (sandbox, leaks) = start(cfg).await;
    let mut j = job(Language::Bash, "sleep 600", quota());
    j.limits.wall_ms = 1500;
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let running = tokio::spawn({
        let sandbox = sandbox.clone();
        async move { sandbox.run(j, tx).await }
    });
    let id = loop {
        if let Some(SandboxEvent::Started(s)) = rx.recv().await {
            break s.container;
        }
    };
    // The executor "dies": its run is dropped mid-flight, nothing kills or removes the container.
    running.abort();
    let _ = running.await;
    let mut stopped = false;
    for _ in 0..100 {
        let out = std::process::Command::new("docker")
            .args(["inspect", "-f", "{{.State.Running}}", &id])
            .output()
            .unwrap();
        if text(&out.stdout).trim() == "false" || !out.status.success() {
            stopped = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        stopped,
        "the container's own supervisor must end the program after wall time + grace"
    );
    sandbox.shutdown().await;
    leaks.assert_none();
}

#[tokio::test]
async fn a_dead_docker_engine_is_a_typed_error() {
    let cfg = SandboxConfig {
        docker_host: Some("unix:///nonexistent/airlock-docker.sock".into()),
        ..Default::default()
    };
    let error = airlock_executor::Sandbox::start(cfg)
        .await
        .err()
        .expect("no engine there");
    assert!(matches!(error, SandboxError::DockerUnreachable { .. }), "{error}");
    // A socket that exists but where nobody answers any more.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("docker.sock");
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    let cfg = SandboxConfig {
        docker_host: Some(format!("unix://{}", path.display())),
        ..Default::default()
    };
    let error = airlock_executor::Sandbox::start(cfg.clone())
        .await
        .err()
        .expect("nobody answers");
    assert!(error.is_docker_unreachable(), "{error}");
    let error = airlock_executor::ensure_image(&cfg).await.err().unwrap();
    assert!(error.is_docker_unreachable(), "{error}");
}

#[tokio::test]
async fn a_missing_image_is_a_typed_error() {
    let mut cfg = config("no-image");
    cfg.images.python = "airlock-no-such-image:never".into();
    match airlock_executor::Sandbox::start(cfg).await {
        Err(SandboxError::ImageMissing { image }) => assert_eq!(image, "airlock-no-such-image:never"),
        Err(other) => panic!("expected ImageMissing, got {other}"),
        Ok(_) => panic!("expected ImageMissing"),
    }
}

#[tokio::test]
async fn violations_carry_reason_and_measurement() {
    let (sandbox, leaks) = start(config("violations")).await;
    let mut j = job(Language::Python, "while True: pass", quota());
    j.limits.wall_ms = 1000;
    let (report, _) = run_ok(&sandbox, j).await;
    let v = report.violation.expect("a timeout");
    assert_eq!(v.kind, ViolationKind::Timeout);
    assert_eq!(v.limit, Some(1000));
    assert!(v.measured.unwrap() >= 1000 && report.exit_code.is_none(), "{v:?}");

    let mut j = job(Language::Python, "x = bytearray(300 * 1024 * 1024)", quota());
    j.limits.memory_bytes = 64 * 1024 * 1024;
    let (report, _) = run_ok(&sandbox, j).await;
    let v = report.violation.expect("an OOM");
    assert_eq!(v.kind, ViolationKind::Memory, "{v:?}");
    assert_eq!(v.limit, Some(64 * 1024 * 1024));
    assert!(v.measured.unwrap() > 32 * 1024 * 1024, "{v:?}");

    let mut j = job(Language::Bash, "head -c 100000 /dev/zero | tr '\\0' x", quota());
    j.limits.output_bytes = 1000;
    let (report, _) = run_ok(&sandbox, j).await;
    let v = report.violation.expect("output");
    assert_eq!(v.kind, ViolationKind::Output);
    assert_eq!(report.stdout.len(), 1000);
    assert!(report.output_truncated && v.measured.unwrap() > 1000);
    sandbox.shutdown().await;
    leaks.assert_none();
}

/// Warm containers started together expire together. Replaced only at their age, the pool was
/// empty for as long as the replacements took to start (seconds on a busy host), and every
/// request in that window missed it. They are replaced ahead of their age instead: sampled
/// every 25 ms over more than two ages, the pool never has fewer ready containers than it
/// warmed up with.
#[tokio::test]
async fn warm_containers_are_replaced_before_they_age_out() {
    let mut config = config("refresh");
    config.pool.max_age = Duration::from_secs(8);
    config.pool.max_total = 8;
    let (sandbox, leaks) = start(config).await;
    assert!(
        sandbox.wait_warm(Duration::from_secs(60)).await,
        "the pool did not warm up"
    );
    let warmed = sandbox.pool_stats().idle;
    assert!(warmed >= 1);
    let (mut fewest, mut most) = (warmed, warmed);
    let watch = std::time::Instant::now();
    while watch.elapsed() < Duration::from_secs(20) {
        let idle = sandbox.pool_stats().idle;
        fewest = fewest.min(idle);
        most = most.max(idle);
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(
        fewest >= warmed,
        "the pool fell to {fewest} ready containers (of {warmed}) while replacing old ones"
    );
    assert!(
        most > warmed,
        "no replacement was seen in 20 s with an 8 s maximum age (idle stayed {warmed})"
    );
    let (report, events) = run_ok(&sandbox, job(Language::Python, "print('still warm')\n", quota())).await;
    assert_eq!(text(&report.stdout), "still warm\n");
    assert!(started(&events).warm);
    sandbox.shutdown().await;
    leaks.assert_none();
}

/// Starting a warm replacement is engine work (dockerd, containerd, runc, an interpreter's
/// start) that shared the CPU with the end of the run that took the old one, and with its
/// receipt. While the class still has a ready container, the start waits until no run is in
/// flight (at most a bound); when a take leaves the class with none, it starts at once.
#[tokio::test]
async fn a_replacement_waits_for_the_run_to_end_unless_none_is_left() {
    let mut config = config("quiet");
    config.pool.min_idle = 2;
    config.pool.max_idle = 2;
    config.pool.max_total = 8;
    let (sandbox, leaks) = start(config).await;
    // Every class (one per quota) with its two.
    let warm_two = || async {
        assert!(
            sandbox.wait_warm(Duration::from_secs(60)).await,
            "the pool did not warm up two containers per class"
        );
    };
    // Samples the pool every 10 ms while `runs` are in flight; the most `starting` seen.
    let most_starting_while = |runs: Vec<Job>| {
        let sandbox = sandbox.clone();
        async move {
            let runs = futures::future::join_all(runs.into_iter().map(|job| run_ok(&sandbox, job)));
            tokio::pin!(runs);
            let mut most = 0;
            loop {
                tokio::select! {
                    done = &mut runs => return (most, done),
                    _ = tokio::time::sleep(Duration::from_millis(10)) => {
                        most = most.max(sandbox.pool_stats().starting);
                    }
                }
            }
        }
    };
    // Well within the pool's bound on waiting (`pool::START_BOUND`, 1 s), even on a busy host.
    let sleeper = || {
        job(
            Language::Python,
            "import time\ntime.sleep(0.3)\nprint('done')\n",
            quota(),
        )
    };

    warm_two().await;
    let (most, done) = most_starting_while(vec![sleeper()]).await;
    assert!(started(&done[0].1).warm);
    assert_eq!(
        most, 0,
        "a replacement started while the run was in flight, although one ready container was left"
    );
    warm_two().await;

    let (most, done) = most_starting_while(vec![sleeper(), sleeper()]).await;
    assert!(done.iter().all(|(_, events)| started(events).warm));
    assert!(
        most >= 1,
        "with no ready container left, the replacements waited for the runs to end"
    );
    warm_two().await;
    sandbox.shutdown().await;
    leaks.assert_none();
}
