//! A bad `airlock.toml` stops `airlock up` before anything starts, naming the key; each
//! service started on its own refuses it the same way.

use airlock_tests::airlock_bin;
use std::process::Command;

fn init() -> tempfile::TempDir {
    let home = tempfile::Builder::new()
        .prefix("airlock-config-")
        .tempdir()
        .expect("home");
    let out = Command::new(airlock_bin())
        .arg("--home")
        .arg(home.path())
        .arg("init")
        .output()
        .expect("airlock init");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    home
}

fn append(home: &tempfile::TempDir, text: &str) {
    let path = home.path().join("airlock.toml");
    let mut config = std::fs::read_to_string(&path).expect("airlock.toml");
    config.push_str(text);
    std::fs::write(&path, config).expect("write");
}

/// `airlock up` on this home: it must fail at once, with `needle` on stderr, and start nothing.
fn up_refuses(home: &tempfile::TempDir, needle: &str) {
    let mut up = Command::new(airlock_bin())
        .arg("--home")
        .arg(home.path())
        .args(["up", "--port", "0", "--no-image"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("airlock up");
    // An accepted config starts a stack that runs until stopped: give up (and stop it) rather
    // than wait forever.
    let started = std::time::Instant::now();
    while up.try_wait().expect("wait").is_none() {
        if started.elapsed() > std::time::Duration::from_secs(60) {
            // SIGTERM: `up` stops what it started before it exits.
            let _ = Command::new("kill").arg(up.id().to_string()).status();
            let _ = up.wait();
            panic!("airlock up accepted the config and kept running (expected {needle:?})");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let out = up.wait_with_output().expect("airlock up");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "airlock up accepted the config: {stderr}");
    assert!(stderr.contains(needle), "expected {needle:?} in: {stderr}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("Airlock is up"));
    assert!(!home.path().join("stack.json").exists(), "something started");
}

#[test]
fn a_misspelt_key_stops_airlock_up_with_its_path() {
    let home = init();
    append(&home, "\n[executor.pool]\nmin_idel = 3\n");
    up_refuses(&home, "executor.pool.min_idel");
}

#[test]
fn an_unknown_section_or_a_bad_value_stops_airlock_up() {
    let home = init();
    append(&home, "\n[exector]\ninstance = \"x\"\n");
    up_refuses(&home, "[exector]");
    let home = init();
    append(&home, "\n[clients]\nmax_in_flight = \"many\"\n");
    up_refuses(&home, "clients");
    let home = init();
    let path = home.path().join("airlock.toml");
    let text = std::fs::read_to_string(&path)
        .expect("config")
        .replace("[auditor]\n", "[auditor]\ncommit_linger = \"5s\"\n");
    std::fs::write(&path, text).expect("write");
    up_refuses(&home, "commit_linger");
}

#[test]
fn the_people_table_is_read_and_checked_by_airlock_up() {
    let home = init();
    append(
        &home,
        "\n[people.alice]\nmatrix = [\"@a:example.org\"]\n[people.bob]\nmatrix = [\"@a:example.org\"]\n",
    );
    up_refuses(&home, "is listed for both alice and bob");
}

#[test]
fn a_service_started_alone_refuses_a_bad_config_on_stderr() {
    let home = init();
    let path = home.path().join("airlock.toml");
    let text = std::fs::read_to_string(&path)
        .expect("config")
        .replace("[gate]\n", "[gate]\noverride_timeout = \"soon\"\n");
    std::fs::write(&path, text).expect("write");
    let out = Command::new(airlock_bin())
        .arg("--home")
        .arg(home.path())
        .args(["serve", "override-gate"])
        .output()
        .expect("airlock serve");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("gate") && stderr.contains("override_timeout"),
        "{stderr}"
    );
}

#[test]
fn a_missing_key_file_stops_airlock_up_with_its_path() {
    let home = init();
    let path = home.path().join("airlock.toml");
    let missing = home.path().join("keys").join("auditor-next.key");
    let text = std::fs::read_to_string(&path).expect("config").replace(
        "[auditor]\n",
        &format!("[auditor]\nextra_key_files = [\"{}\"]\n", missing.display()),
    );
    std::fs::write(&path, text).expect("write");
    up_refuses(&home, "auditor-next.key");
}

/// `airlock up` with this home and these `--set` settings must fail at once, naming `needle`.
fn up_with_set_refuses(home: &tempfile::TempDir, settings: &[&str], needle: &str) {
    let mut command = Command::new(airlock_bin());
    command.arg("--home").arg(home.path());
    for setting in settings {
        command.args(["--set", setting]);
    }
    let out = command
        .args(["up", "--port", "0", "--no-image"])
        .output()
        .expect("airlock up");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "airlock up accepted {settings:?}: {stderr}");
    assert!(stderr.contains(needle), "expected {needle:?} in: {stderr}");
    assert!(!home.path().join("stack.json").exists(), "something started");
}

#[test]
fn a_mistaken_set_is_reported_as_a_set_mistake() {
    let home = init();
    up_with_set_refuses(
        &home,
        &["executor.instanc=executor-2"],
        "--set executor.instanc=executor-2",
    );
    up_with_set_refuses(
        &home,
        &["gate.override_timeout=soon"],
        "--set gate.override_timeout=soon",
    );
}

#[test]
fn deprecated_settings_are_said_on_the_console_of_airlock_up() {
    let home = init();
    let path = home.path().join("airlock.toml");
    let text = std::fs::read_to_string(&path)
        .expect("config")
        .replace("[gate]\n", "[gate]\ndecision_ttl_secs = 60\n")
        // And a mistake, so that `up` stops right after reading the config.
        .replace("[executor]\n", "[executor]\nnot_a_key = 1\n");
    std::fs::write(&path, text).expect("write");
    let out = Command::new(airlock_bin())
        .arg("--home")
        .arg(home.path())
        .args(["up", "--port", "0", "--no-image"])
        .output()
        .expect("airlock up");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not_a_key"), "{stderr}");
    assert!(
        stderr.contains("deprecated setting: write gate.decision_ttl = \"1m\" instead of gate.decision_ttl_secs"),
        "{stderr}"
    );
}
