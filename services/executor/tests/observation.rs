//! `[executor.observe]`: turned off, every run's record says so; required but turned off, the
//! sandbox refuses to start (it would run unobserved); on, a run's record comes after its other
//! events. Needs Docker and the sandbox image; the "on" case needs root and BTF.

mod common;

use airlock_executor::{SandboxError, SandboxEvent};
use airlock_protocol::{Language, Observed};
use common::{config, job, run_ok, start};

fn observed(events: &[SandboxEvent]) -> &Observed {
    let records: Vec<&Observed> = events
        .iter()
        .filter_map(|e| match e {
            SandboxEvent::Observed(o) => Some(o.as_ref()),
            _ => None,
        })
        .collect();
    assert_eq!(records.len(), 1, "one record per run: {events:?}");
    assert!(
        matches!(events.last(), Some(SandboxEvent::Observed(_))),
        "the record comes last: {events:?}"
    );
    records[0]
}

#[tokio::test(flavor = "multi_thread")]
async fn turned_off_the_record_says_so_and_required_refuses_to_start() {
    let mut off = config("observe-off");
    off.observe.enabled = false;
    let (sandbox, _leaks) = start(off.clone()).await;
    assert!(
        sandbox
            .observation_unavailable()
            .is_some_and(|r| r.contains("turned off"))
    );
    let limits = sandbox.config().quotas.untrusted;
    let (report, events) = run_ok(&sandbox, job(Language::Bash, "echo hi", limits)).await;
    assert_eq!(report.exit_code, Some(0));
    let record = observed(&events);
    assert!(
        record.unavailable.as_deref().is_some_and(|r| r.contains("turned off")),
        "{record:?}"
    );
    assert!(record.files.is_empty() && record.processes.is_empty());
    sandbox.shutdown().await;

    let mut required = off;
    required.observe.required = true;
    match airlock_executor::Sandbox::start(required).await {
        Err(SandboxError::ObservationRequired { reason }) => assert!(reason.contains("required = true"), "{reason}"),
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(_) => panic!("started without the observation it requires"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn on_a_runs_exec_and_files_are_recorded() {
    let mut on = config("observe-on");
    on.observe.required = true;
    let (sandbox, _leaks) = start(on).await;
    let limits = sandbox.config().quotas.untrusted;
    let (report, events) = run_ok(
        &sandbox,
        job(Language::Bash, "head -c 10 /etc/hostname > /tmp/h && rm /tmp/h", limits),
    )
    .await;
    assert_eq!(report.exit_code, Some(0));
    let record = observed(&events);
    assert_eq!(record.unavailable, None, "{record:?}");
    assert_eq!(record.events_lost, 0);
    assert!(
        record
            .processes
            .iter()
            .any(|p| p.path.ends_with("/head") && p.result == "ok" && p.argv[0] == "head"),
        "{record:#?}"
    );
    assert!(
        record
            .files
            .iter()
            .any(|f| f.path == "/etc/hostname" && f.access == "read"),
        "{record:#?}"
    );
    assert!(
        record.files.iter().any(|f| f.path == "/tmp/h" && f.access == "create"),
        "{record:#?}"
    );
    assert!(
        record.files.iter().any(|f| f.path == "/tmp/h" && f.access == "delete"),
        "{record:#?}"
    );
    sandbox.shutdown().await;
}
