//! The engine connection failing under the sandbox: through a forwarding socket the test cuts
//! (`airlock_executor::engine_proxy`), the executor's view of a run can be lost while the run
//! goes on, or a warm container can lose its job's only way in. Whatever happens, no result is
//! made up: a run ends with the program's own output and an exit status the engine confirmed,
//! or as interrupted.

mod common;

use airlock_executor::engine_proxy::EngineProxy;
use airlock_executor::{RunReport, SandboxConfig, SandboxError, SandboxEvent};
use airlock_protocol::{Language, Limits};
use common::{config, job, start, text};
use std::path::Path;
use std::time::Duration;

fn quota() -> Limits {
    SandboxConfig::default().quotas.untrusted
}

fn engine_socket() -> String {
    let host = std::env::var("DOCKER_HOST").unwrap_or_else(|_| "unix:///var/run/docker.sock".into());
    host.strip_prefix("unix://").unwrap_or(&host).to_owned()
}

fn proxied(test: &str) -> (SandboxConfig, EngineProxy) {
    let proxy = EngineProxy::start(Path::new(&engine_socket())).expect("the forwarding socket");
    let mut config = config(test);
    config.docker_host = Some(proxy.docker_host());
    (config, proxy)
}

/// A run's result is either the program's own (`expected` output, exit 0) or an interruption;
/// anything else is a false result.
fn assert_true_result(result: &Result<RunReport, SandboxError>, expected: &str) {
    match result {
        Ok(report) => {
            assert_eq!(
                text(&report.stdout),
                expected,
                "a result that is not the program's: {report:?}"
            );
            assert_eq!(report.exit_code, Some(0), "{report:?}");
        }
        Err(SandboxError::Interrupted { reason, .. }) => {
            assert!(!reason.is_empty());
        }
        Err(other) => panic!("neither the program's result nor an interruption: {other}"),
    }
}

#[tokio::test]
async fn a_warm_container_that_lost_its_engine_connection_never_gives_a_result() {
    let (config, proxy) = proxied("lost-warm");
    let (sandbox, leaks) = start(config).await;
    assert!(
        sandbox.wait_warm(Duration::from_secs(60)).await,
        "the pool did not warm up"
    );
    // The engine gives up on each warm container's attach stream (and so closes its stdin); the
    // executor hears of it only two seconds later.
    proxy.cut_attach_engine_side(Duration::from_secs(2));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (result, _) = common::run(&sandbox, job(Language::Python, "print('hello')\n", quota())).await;
    assert_true_result(&result, "hello\n");
    // The executor goes on with fresh containers over new connections.
    assert!(sandbox.wait_warm(Duration::from_secs(60)).await);
    let (result, _) = common::run(&sandbox, job(Language::Python, "print('again')\n", quota())).await;
    let report = result.expect("a run after the cut");
    assert_eq!(text(&report.stdout), "again\n");
    sandbox.shutdown().await;
    leaks.assert_none();
}

#[tokio::test]
async fn a_run_whose_engine_connection_is_lost_midway_is_interrupted_not_finished() {
    for (what, engine_side_only) in [("both ends", false), ("the engine's end", true)] {
        let (config, proxy) = proxied("lost-midway");
        let (sandbox, leaks) = start(config).await;
        let code = "import time\nprint('first', flush=True)\ntime.sleep(1.5)\nprint('second', flush=True)\n";
        let (tx, mut rx) = tokio::sync::mpsc::channel(64);
        let run = {
            let sandbox = sandbox.clone();
            tokio::spawn(async move { sandbox.run(job(Language::Python, code, quota()), tx).await })
        };
        // Cut as soon as the program's first line is out.
        while let Some(event) = rx.recv().await {
            if matches!(event, SandboxEvent::Output(_)) {
                break;
            }
        }
        if engine_side_only {
            proxy.cut_engine_side(Duration::from_secs(3));
        } else {
            proxy.cut();
        }
        tokio::spawn(async move { while rx.recv().await.is_some() {} });
        let result = tokio::time::timeout(Duration::from_secs(60), run)
            .await
            .expect("the run ended")
            .expect("join");
        match &result {
            Err(SandboxError::Interrupted { .. }) => {}
            other => panic!("cut at {what} mid-run: expected an interruption, got {other:?}"),
        }
        sandbox.shutdown().await;
        leaks.assert_none();
    }
}
