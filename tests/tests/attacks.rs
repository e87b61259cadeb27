//! The attack suite (`tests/attacks/`), each program run through the whole pipeline: submitted
//! with `airlock run` as Mai, assessed, decided by the gate, run by the executor in real Docker,
//! logged by the auditor. Each must end with the containment its manifest entry names, and the
//! host must be left as it was: no container, network or volume of the stack's executor, and no
//! process of the stack, once it is stopped.

use airlock_executor::attacks::{Attack, Manifest};
use airlock_protocol::{Quotas, ViolationKind};
use airlock_tests::Stack;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

/// Lists what Docker holds with this executor's label, one kind of object at a time.
fn docker_objects(instance: &str) -> Vec<String> {
    let filter = format!("label=airlock.executor={instance}");
    let mut found = Vec::new();
    for (what, args) in [
        ("container", vec!["ps", "-a", "-q", "--filter", &filter]),
        ("network", vec!["network", "ls", "-q", "--filter", &filter]),
        ("volume", vec!["volume", "ls", "-q", "--filter", &filter]),
    ] {
        let out = Command::new("docker").args(&args).output().expect("docker");
        assert!(
            out.status.success(),
            "docker {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        found.extend(
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| format!("{what} {l}")),
        );
    }
    found
}

/// Processes whose command line names this stack's home.
fn processes_of(home: &Path) -> Vec<String> {
    let needle = home.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        if !entry.file_name().to_string_lossy().chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if cmdline.contains(&needle) {
                found.push(format!("{} {cmdline}", entry.file_name().to_string_lossy()));
            }
        }
    }
    found
}

/// Runs one attack through the stack; the error says which containment did not hold.
fn run_attack(stack: &Stack, dir: &Path, attack: &Attack) -> Result<(), String> {
    let mut extra: Vec<String> = vec![
        "--origin".into(),
        "generated".into(),
        "--trust".into(),
        "untrusted".into(),
    ];
    let inputs = attack.inputs();
    for arg in &inputs.args {
        extra.push(format!("--arg={arg}"));
    }
    for (name, value) in &inputs.env {
        extra.push(format!("--env={name}={value}"));
    }
    if !inputs.stdin.is_empty() {
        let path = stack.path().join(format!("{}.stdin", attack.file));
        std::fs::write(&path, &inputs.stdin).map_err(|e| e.to_string())?;
        extra.push(format!("--stdin={}", path.display()));
    }
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let (result, status) = stack.run_json(&dir.join(&attack.file), &extra);
    if result["decision"] != "approved" {
        return Err(format!("not approved (exit status {status}): {result}"));
    }
    let violation: Option<ViolationKind> = match &result["violation"] {
        serde_json::Value::Null => None,
        v => Some(serde_json::from_value(v["kind"].clone()).map_err(|e| format!("violation {v}: {e}"))?),
    };
    let text = |key: &str| result[key].as_str().unwrap_or_default().as_bytes().to_vec();
    attack.expect.check(
        result["exit_code"].as_i64(),
        &text("stdout"),
        &text("stderr"),
        violation,
    )?;
    // The exit status says the same as the JSON: 3 for a violation, else the program's own.
    let expected_status = match (violation, result["exit_code"].as_i64()) {
        (Some(_), _) => 3,
        (None, Some(0)) => 0,
        (None, _) => 1,
    };
    if status != expected_status {
        return Err(format!("exit status {status}, expected {expected_status}: {result}"));
    }
    Ok(())
}

#[test]
fn every_attack_is_contained_through_the_pipeline_and_the_host_is_left_clean() {
    let dir = Manifest::repo_dir();
    let manifest = Manifest::load(&dir).expect("attack manifest");
    let instance = format!("attacks-{}", std::process::id());
    // The suite's wall-time overrides, applied to the stack's untrusted quota (a request cannot
    // ask for less than its quota): the longest any attack needs.
    let quotas = Quotas::default();
    let mut untrusted = quotas.untrusted;
    untrusted.wall_ms = manifest
        .attack
        .iter()
        .map(|a| a.limits(&quotas).wall_ms)
        .filter(|&w| w < quotas.untrusted.wall_ms)
        .max()
        .unwrap_or(quotas.untrusted.wall_ms);
    for attack in &manifest.attack {
        let wanted = attack.limits(&quotas);
        assert_eq!(
            (wanted.memory_bytes, wanted.output_bytes, wanted.pids),
            (untrusted.memory_bytes, untrusted.output_bytes, untrusted.pids),
            "{}: through the pipeline only the wall time can be lowered (by the stack's quota)",
            attack.name
        );
    }
    let extra_config = format!(
        "[executor]\ninstance = {instance:?}\n\n[quotas.untrusted]\n{}",
        toml::to_string(&untrusted).expect("limits as TOML")
    );
    let mut stack = Stack::start_with(&extra_config);
    let home = stack.path().to_path_buf();

    // Two submitters at a time, as many as the machine has cores.
    let queue = Mutex::new(manifest.attack.iter());
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                loop {
                    let Some(attack) = queue.lock().expect("queue").next() else {
                        break;
                    };
                    let started = std::time::Instant::now();
                    let outcome = run_attack(&stack, &dir, attack);
                    eprintln!(
                        "attack {:<60} {:>6} ms  {}",
                        attack.name,
                        started.elapsed().as_millis(),
                        if outcome.is_ok() { "contained" } else { "FAILED" }
                    );
                    if let Err(problem) = outcome {
                        failures
                            .lock()
                            .expect("failures")
                            .push(format!("{}: {problem}", attack.name));
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().expect("failures");
    assert!(
        failures.is_empty(),
        "{} of {} attacks were not contained:\n{}\n{}",
        failures.len(),
        manifest.attack.len(),
        failures.join("\n\n"),
        stack.diagnostics()
    );

    // While the stack still runs, no container of a finished request is left behind: the only
    // ones still there are warm and waiting (running), never stopped ones.
    let filter = format!("label=airlock.executor={instance}");
    let stopped = Command::new("docker")
        .args([
            "ps",
            "-a",
            "-q",
            "--filter",
            &filter,
            "--filter",
            "status=exited",
            "--filter",
            "status=dead",
        ])
        .output()
        .expect("docker ps");
    let stopped = String::from_utf8_lossy(&stopped.stdout).trim().to_owned();
    assert!(
        stopped.is_empty(),
        "stopped containers of finished requests are left: {stopped}"
    );

    stack.stop();
    let mut left = docker_objects(&instance);
    for _ in 0..50 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
        left = docker_objects(&instance);
    }
    assert!(left.is_empty(), "the stopped stack left Docker objects: {left:?}");
    let processes = processes_of(&home);
    assert!(processes.is_empty(), "the stopped stack left processes: {processes:?}");
}
