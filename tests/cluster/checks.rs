//! What must hold after every disruption: each request ended exactly once; none ran more than
//! twice, and one ran twice only because the infrastructure interrupted its first run, which was
//! announced (`retrying`) and whose second run finished with its own output; no container is
//! left behind; the audit log on S3 verifies and holds each event once.

use crate::deployment::Deployment;
use airlock_protocol::subjects::EVENTS_STREAM;
use airlock_protocol::{Envelope, Event, Outcome, RequestId};
use futures::StreamExt as _;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

/// What the events stream holds about one request.
#[derive(Debug, Default)]
pub struct RequestRecord {
    pub terminals: Vec<Outcome>,
    pub reasons: Vec<String>,
    /// The terminal event's stdout.
    pub stdout: String,
    /// The attempt number of each run started, in order.
    pub attempts: Vec<u32>,
    /// `retrying` progress events: a run interrupted by the infrastructure, run again.
    pub retries: usize,
    /// The distinct run tokens its output showed: one per run of the program.
    pub run_tokens: HashSet<String>,
    /// The run tokens in the order they were printed, and the attempt that printed each.
    pub tokens_by_attempt: Vec<(u32, String)>,
    /// Stream sequences of all its events.
    pub stream_seqs: Vec<u64>,
    /// Its events' kinds in stream order, for a failure's story.
    pub kinds: Vec<String>,
}

/// Every message of the events stream, by request, read as the administrator.
pub async fn read_events(deployment: &Deployment) -> HashMap<String, RequestRecord> {
    let admin = deployment.connect("admin").await;
    let js = async_nats::jetstream::new(admin);
    let stream = js.get_stream(EVENTS_STREAM).await.expect("events stream");
    let consumer = stream
        .create_consumer(async_nats::jetstream::consumer::pull::OrderedConfig::default())
        .await
        .expect("ordered consumer");
    let pending = consumer.cached_info().num_pending as usize;
    let mut messages = consumer.messages().await.expect("messages");
    let mut records: HashMap<String, RequestRecord> = HashMap::new();
    let mut read = 0;
    while read < pending {
        let message = match tokio::time::timeout(Duration::from_secs(10), messages.next()).await {
            Ok(Some(Ok(m))) => m,
            other => panic!("reading the events stream stopped after {read} of {pending}: {other:?}"),
        };
        read += 1;
        let Ok(envelope) = Envelope::decode_on(message.subject.as_str(), &message.payload) else {
            continue;
        };
        let seq = message.info().map(|i| i.stream_sequence).unwrap_or(0);
        let record = records.entry(envelope.request_id.to_string()).or_default();
        record.stream_seqs.push(seq);
        record.kinds.push(format!("{}@{seq}", envelope.kind().as_str()));
        match envelope.event {
            Event::Terminal(t) => {
                record.terminals.push(t.outcome);
                record.reasons.push(t.reason.unwrap_or_default());
                record.stdout = String::from_utf8_lossy(&t.stdout).into_owned();
            }
            Event::ExecStarted(started) => record.attempts.push(started.attempt),
            Event::Progress(airlock_protocol::Progress::Retrying { .. }) => record.retries += 1,
            Event::Output(chunk) => {
                let attempt = record.attempts.last().copied().unwrap_or(0);
                for line in String::from_utf8_lossy(&chunk.data).lines() {
                    if let Some(token) = line.strip_prefix("run ") {
                        record.run_tokens.insert(token.trim().to_owned());
                        record.tokens_by_attempt.push((attempt, token.trim().to_owned()));
                    }
                }
            }
            _ => {}
        }
    }
    records
}

/// A phase's summary, for the log of the test.
#[derive(Debug, Default)]
pub struct Summary {
    pub outcomes: BTreeMap<String, usize>,
    /// Requests whose first run the infrastructure interrupted, and whose second run finished
    /// with its own output.
    pub run_again: usize,
}

/// Every request ended exactly once and ran at most once. Waits (up to `limit`) for the
/// stragglers: requests whose executor died end only once their run is judged gone.
pub async fn every_request_ended_once(deployment: &Deployment, rids: &[RequestId], limit: Duration) -> Summary {
    let start = Instant::now();
    let records = loop {
        let records = read_events(deployment).await;
        let missing: Vec<&RequestId> = rids
            .iter()
            .filter(|r| records.get(r.as_str()).is_none_or(|rec| rec.terminals.is_empty()))
            .collect();
        if missing.is_empty() {
            break records;
        }
        if start.elapsed() >= limit {
            // The stories first: CI shows the head and the tail of a long failure message.
            let stories: Vec<String> = missing
                .iter()
                .map(|rid| {
                    let kinds = records.get(rid.as_str()).map(|r| r.kinds.join(" ")).unwrap_or_default();
                    format!(
                        "request {rid}: events [{kinds}]\n{}",
                        deployment.lines_mentioning(rid.as_str(), 40)
                    )
                })
                .collect();
            panic!(
                "{} of {} requests have no terminal event after {limit:?}:\n{}\n{}",
                missing.len(),
                rids.len(),
                stories.join("\n"),
                deployment.diagnostics()
            );
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    };
    let mut summary = Summary::default();
    for rid in rids {
        let record = &records[rid.as_str()];
        let story = || format!("request {rid}: events [{}]", record.kinds.join(" "));
        assert_eq!(
            record.terminals.len(),
            1,
            "{} terminal events; {}",
            record.terminals.len(),
            story()
        );
        let outcome = record.terminals[0];
        // Counted as passing only when it ran to its end: an interrupted run is run again once
        // (`retry_interrupted` = 1), so none may end as interrupted.
        assert!(
            !record.reasons[0].starts_with("interrupted"),
            "it ended as interrupted ({}); {}",
            record.reasons[0],
            story()
        );
        match record.attempts.as_slice() {
            [] | [1] => {
                assert!(
                    record.run_tokens.len() <= 1,
                    "ran {:?} without a retry; {}",
                    record.run_tokens,
                    story()
                );
                assert_eq!(record.retries, 0, "a retry announced, never run; {}", story());
            }
            [1, 2] | [2] => {
                // Interrupted by the infrastructure, announced, and run once more in a fresh
                // container: the result is the second run's, with its own output. (An executor
                // killed between its claim and the start's publication leaves no first start.)
                assert_eq!(record.retries, 1, "run twice without a `retrying` event; {}", story());
                let second: Vec<&String> = record
                    .tokens_by_attempt
                    .iter()
                    .filter(|(attempt, _)| *attempt == 2)
                    .map(|(_, token)| token)
                    .collect();
                assert_eq!(second.len(), 1, "the second run printed {second:?}; {}", story());
                if outcome == Outcome::Finished {
                    assert_eq!(
                        record.stdout,
                        format!("run {}\ndone\n", second[0]),
                        "the result is not the second run's own output; {}",
                        story()
                    );
                    summary.run_again += 1;
                }
            }
            other => panic!("runs numbered {other:?}: more than one retry; {}", story()),
        }
        if outcome == Outcome::Finished {
            // A first run killed at once may have printed nothing before it was cut.
            assert!(
                (1..=record.attempts.len()).contains(&record.run_tokens.len()),
                "{} runs, tokens {:?}; {}",
                record.attempts.len(),
                record.run_tokens,
                story()
            );
            assert!(
                record.stdout.starts_with("run ") && record.stdout.ends_with("done\n"),
                "finished without its run's output; {}",
                story()
            );
        }
        *summary.outcomes.entry(outcome.as_str().to_owned()).or_default() += 1;
    }
    summary
}

/// The audit log on S3 holds every event of these requests exactly once (by events-stream
/// sequence), and no stream message twice; `airlock audit verify` passes over it.
pub async fn audit_log_holds_each_event_once(deployment: &Deployment, rids: &[RequestId], limit: Duration) {
    let records = read_events(deployment).await;
    let wanted: HashSet<u64> = rids
        .iter()
        .filter_map(|r| records.get(r.as_str()))
        .flat_map(|r| r.stream_seqs.iter().copied())
        .collect();
    let store = airlock_auditlog::store::Store::open(&deployment.s3.url("log")).expect("S3 store");
    let reader = airlock_auditlog::reader::LogReader::new(store);
    let start = Instant::now();
    loop {
        let (checkpoint, _) = reader
            .checkpoint()
            .await
            .expect("reading the checkpoint")
            .expect("the log has a checkpoint");
        let size = checkpoint.checkpoint.size;
        let entries = reader.entries(0, size, size).await.expect("reading entries");
        let mut seen: HashMap<u64, usize> = HashMap::new();
        for (_, entry) in &entries {
            if let Some(seq) = entry.stream_seq {
                *seen.entry(seq).or_default() += 1;
            }
        }
        if let Some((seq, n)) = seen.iter().find(|(_, n)| **n > 1) {
            panic!("stream message {seq} is in the audit log {n} times");
        }
        let missing: Vec<u64> = wanted.iter().filter(|s| !seen.contains_key(s)).copied().collect();
        if missing.is_empty() {
            break;
        }
        assert!(
            start.elapsed() < limit,
            "{} events are not in the audit log after {limit:?} (first: {:?}):\n{}",
            missing.len(),
            missing.iter().min(),
            deployment.diagnostics()
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let verify = deployment
        .airlock()
        .args(["audit", "verify"])
        .output()
        .expect("airlock audit verify");
    assert!(
        verify.status.success(),
        "airlock audit verify failed over S3:\n{}{}",
        String::from_utf8_lossy(&verify.stdout),
        String::from_utf8_lossy(&verify.stderr)
    );
}

/// Containers of these executor instances: (id, state).
pub fn containers(instances: &[String]) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for instance in instances {
        let output = std::process::Command::new("docker")
            .args(["ps", "-a", "--filter", &format!("label=airlock.executor={instance}")])
            .args(["--format", "{{.ID}} {{.State}}"])
            .output()
            .expect("docker ps");
        assert!(
            output.status.success(),
            "docker ps: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        for line in String::from_utf8_lossy(&output.stdout).lines() {
            if let Some((id, state)) = line.split_once(' ') {
                found.push((id.to_owned(), state.to_owned()));
            }
        }
    }
    found
}

/// No container is left from a run: everything of these instances is a warm container
/// waiting for a job (running), within `limit`; and none of `gone` (ids of a dead executor's
/// containers) exists any more.
pub async fn no_container_left(instances: &[String], gone: &[String], limit: Duration) {
    let start = Instant::now();
    loop {
        let now = containers(instances);
        let leftovers: Vec<&(String, String)> = now
            .iter()
            .filter(|(id, state)| state != "running" || gone.contains(id))
            .collect();
        if leftovers.is_empty() {
            return;
        }
        assert!(
            start.elapsed() < limit,
            "containers left behind after {limit:?}: {leftovers:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
