//! NATS users and permissions, enforced by the server: only the auditor publishes audit subjects,
//! only the gate publishes decisions, Mai only submits and reads results.

use airlock_tests::{Stack, read_seed};
use std::time::Duration;
use tokio::sync::mpsc;

/// Connects as `user`, collecting the server's error messages (permission violations).
async fn connect_watching(stack: &Stack, user: &str) -> (async_nats::Client, mpsc::UnboundedReceiver<String>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let client = async_nats::ConnectOptions::with_nkey(read_seed(&stack.creds(user)))
        .custom_inbox_prefix(format!("_INBOX_{user}"))
        .event_callback(move |event| {
            let tx = tx.clone();
            async move {
                if let async_nats::Event::ServerError(e) = event {
                    let _ = tx.send(e.to_string());
                }
            }
        })
        .connect(stack.nats_url.clone())
        .await
        .expect("connect");
    (client, rx)
}

async fn expect_violation(errors: &mut mpsc::UnboundedReceiver<String>, subject: &str) {
    let message = tokio::time::timeout(Duration::from_secs(5), errors.recv())
        .await
        .unwrap_or_else(|_| panic!("the server did not refuse {subject}"))
        .expect("error channel");
    assert!(
        message.contains("Permissions Violation") && message.contains(subject),
        "expected a permissions violation for {subject}, got {message}"
    );
}

/// Whether the stream holds any message on `subject` (read as admin).
async fn stored(admin: &async_nats::Client, stream: &str, subject: &str) -> bool {
    let js = async_nats::jetstream::new(admin.clone());
    let stream = js.get_stream(stream).await.expect("stream");
    stream.get_last_raw_message_by_subject(subject).await.is_ok()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_server_refuses_publishes_outside_each_users_permissions() {
    let stack = tokio::task::spawn_blocking(Stack::start).await.expect("stack");
    let admin = stack.connect("admin").await;
    let cases: &[(&str, &str)] = &[
        ("mai", "airlock.decision.forged-1"),
        ("mai", "airlock.audit.entry.forged-1"),
        ("mai", "airlock.override.answer.forged-1"),
        ("mai", "airlock.terminal.forged-1"),
        ("executor", "airlock.decision.forged-2"),
        ("assessor", "airlock.decision.forged-3"),
        ("gate", "airlock.audit.entry.forged-4"),
        ("executor", "airlock.audit.checkpoint"),
        ("operator", "airlock.decision.forged-5"),
        ("operator", "airlock.audit.entry.forged-5"),
    ];
    for (user, subject) in cases {
        let (client, mut errors) = connect_watching(&stack, user).await;
        client
            .publish(subject.to_string(), "forged".into())
            .await
            .expect("publish call");
        client.flush().await.expect("flush");
        expect_violation(&mut errors, subject).await;
        let stream = if subject.starts_with("airlock.audit") {
            "AIRLOCK_AUDIT"
        } else {
            "AIRLOCK"
        };
        assert!(
            !stored(&admin, stream, subject).await,
            "{user} managed to store a message on {subject}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn mai_cannot_read_decisions_or_answer_overrides_but_can_submit() {
    let stack = tokio::task::spawn_blocking(Stack::start).await.expect("stack");
    let (mai, mut errors) = connect_watching(&stack, "mai").await;
    let _sub = mai.subscribe("airlock.decision.*").await.expect("subscribe call");
    mai.flush().await.expect("flush");
    expect_violation(&mut errors, "airlock.decision.*").await;

    // The positive control: Mai's submission is stored (so the refusals above are not an
    // artefact of a broken connection).
    mai.publish("airlock.submit.mai.control-1", "not an envelope".into())
        .await
        .expect("publish");
    mai.flush().await.expect("flush");
    let admin = stack.connect("admin").await;
    let mut found = false;
    for _ in 0..50 {
        if stored(&admin, "AIRLOCK", "airlock.submit.mai.control-1").await {
            found = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(found, "Mai's submission was not stored");
}

/// Whether a NATS subject pattern (`*` one token, `>` the rest) matches a subject.
fn matches(pattern: &str, subject: &str) -> bool {
    let mut p = pattern.split('.');
    let mut s = subject.split('.');
    loop {
        match (p.next(), s.next()) {
            (Some(">"), Some(_)) => return true,
            (Some("*"), Some(_)) => {}
            (Some(a), Some(b)) if a == b => {}
            (None, None) => return true,
            _ => return false,
        }
    }
}

/// Subjects to probe: every event kind, every audit and dead-letter subject, service
/// endpoints, inboxes, buckets, and the JetStream API calls that read or reshape streams and
/// consumers.
fn probes() -> Vec<String> {
    use airlock_protocol::EventKind;
    use airlock_protocol::roles;
    // Every event of a request of each client (and of none): two clients x every subject.
    let mut subjects = Vec::new();
    for rid in ["probe", "mai.probe", "mai-b.probe", "stranger.probe"] {
        let rid = airlock_protocol::RequestId::parse(rid).expect("id");
        subjects.extend(EventKind::ALL.iter().map(|k| k.subject(&rid)));
        subjects.extend([
            format!("airlock.audit.entry.{rid}"),
            format!("airlock.audit.receipt.{rid}"),
            format!("$JS.API.DIRECT.GET.AIRLOCK.airlock.terminal.{rid}"),
            format!("$JS.API.DIRECT.GET.AIRLOCK.airlock.progress.{rid}"),
            format!("$JS.API.DIRECT.GET.AIRLOCK.airlock.exec.output.{rid}"),
            format!("$JS.API.DIRECT.GET.AIRLOCK_AUDIT.airlock.audit.receipt.{rid}"),
        ]);
    }
    subjects.extend([
        "airlock.audit.checkpoint".to_owned(),
        airlock_protocol::subjects::GATE_PENDING_ENDPOINT.to_owned(),
        "$SRV.PING".to_owned(),
    ]);
    subjects.extend(roles::services().flat_map(|s| s.endpoints.iter().map(|e| (*e).to_owned())));
    for role in roles::ROLES {
        subjects.push(format!("_INBOX_{}.probe", role.user));
        subjects.push(airlock_protocol::subjects::dead_letter_subject(role.user, "probe"));
        if let Some(service) = role.service() {
            subjects.push(service.status_subject());
            let durable = service.consumes.durable;
            subjects.extend([
                format!("$JS.API.CONSUMER.CREATE.AIRLOCK.{durable}"),
                format!("$JS.API.CONSUMER.CREATE.AIRLOCK.{durable}.airlock.nothing.*"),
                format!("$JS.API.CONSUMER.DURABLE.CREATE.AIRLOCK.{durable}"),
                format!("$JS.API.CONSUMER.DELETE.AIRLOCK.{durable}"),
                format!("$JS.API.CONSUMER.MSG.NEXT.AIRLOCK.{durable}"),
                format!("$JS.API.CONSUMER.INFO.AIRLOCK.{durable}"),
            ]);
            if let Some(bucket) = service.bucket {
                subjects.push(format!("$KV.{bucket}.probe"));
                subjects.push(format!("$JS.API.STREAM.INFO.KV_{bucket}"));
            }
        }
    }
    for stream in ["AIRLOCK", "AIRLOCK_AUDIT", "AIRLOCK_DEAD"] {
        subjects.extend([
            format!("$JS.API.STREAM.INFO.{stream}"),
            format!("$JS.API.STREAM.UPDATE.{stream}"),
            format!("$JS.API.STREAM.DELETE.{stream}"),
            format!("$JS.API.STREAM.PURGE.{stream}"),
            format!("$JS.API.STREAM.MSG.DELETE.{stream}"),
            format!("$JS.API.CONSUMER.CREATE.{stream}"),
            format!("$JS.API.DIRECT.GET.{stream}"),
        ]);
    }
    subjects.extend([
        "$JS.API.DIRECT.GET.AIRLOCK.airlock.terminal.probe".to_owned(),
        "$JS.API.DIRECT.GET.AIRLOCK.airlock.decision.probe".to_owned(),
        "$JS.API.DIRECT.GET.AIRLOCK_AUDIT.airlock.audit.receipt.probe".to_owned(),
        "$JS.API.STREAM.CREATE.EVIL".to_owned(),
        "$JS.API.INFO".to_owned(),
    ]);
    subjects.sort();
    subjects.dedup();
    subjects
}

/// The server enforces exactly what the roles table says: for every user and every probed
/// subject, publishing and subscribing are allowed when (and only when) one of the user's
/// patterns matches. Generated from the table, so a new role or subject is covered by itself.
#[tokio::test(flavor = "multi_thread")]
async fn every_user_may_do_exactly_what_the_roles_table_says() {
    let stack = tokio::task::spawn_blocking(|| Stack::start_with("[clients]\nextra_users = [\"mai-b\"]\n"))
        .await
        .expect("stack");
    let probes = probes();
    let mut users: Vec<&str> = airlock_protocol::roles::ROLES
        .iter()
        .map(|r| r.user)
        .filter(|u| *u != "admin")
        .collect();
    users.push("mai-b");
    let mut mismatches = Vec::new();
    for user in users {
        let table = match airlock_protocol::roles::by_user(user) {
            Some(role) => airlock_bus::permissions::of_role(role),
            None => airlock_bus::permissions::client(user),
        };
        let (client, mut errors) = connect_watching(&stack, user).await;
        let mut subscriptions = Vec::new();
        let mut denied = std::collections::BTreeSet::new();
        // In small batches: the client reports server errors through a bounded channel.
        for batch in probes.chunks(8) {
            for subject in batch {
                // An empty body: a JetStream API call that is allowed answers with an error and
                // changes nothing; an event subject stores a message the services refuse.
                client
                    .publish(subject.clone(), bytes::Bytes::new())
                    .await
                    .expect("publish call");
                subscriptions.push(client.subscribe(subject.clone()).await.expect("subscribe call"));
            }
            client.flush().await.expect("flush");
            tokio::time::sleep(Duration::from_millis(300)).await;
            while let Ok(message) = errors.try_recv() {
                denied.insert(message);
            }
        }
        for subject in &probes {
            for verb in ["Publish", "Subscription"] {
                let expected = match verb {
                    "Publish" => table.publish.iter().any(|p| matches(p, subject)),
                    _ => table.may_subscribe(subject, matches),
                };
                let refused = denied
                    .iter()
                    .any(|m| m.contains(&format!("Permissions Violation for {verb} to \"{subject}\"")));
                if expected == refused {
                    mismatches.push(format!(
                        "{user} {verb} {subject}: table says {}, server {}",
                        if expected { "allowed" } else { "denied" },
                        if refused { "refused" } else { "accepted" }
                    ));
                }
            }
        }
        drop(subscriptions);
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

/// The table itself keeps clients apart: each reads its own results, output, usage and receipts
/// and submits under its own name, and nothing of the other's.
#[test]
fn each_client_reads_only_its_own_results() {
    use airlock_protocol::EventKind;
    for (me, other) in [("mai", "mai-b"), ("mai-b", "mai")] {
        let table = airlock_bus::permissions::client(me);
        let reads = |subject: &str| table.subscribe.iter().any(|p| matches(p, subject));
        let gets = |subject: &str| table.publish.iter().any(|p| matches(p, subject));
        for (owner, allowed) in [(me, true), (other, false)] {
            let rid = airlock_protocol::RequestId::for_client(owner, "r1").expect("id");
            for kind in [
                EventKind::Terminal,
                EventKind::Output,
                EventKind::Usage,
                EventKind::Progress,
                EventKind::Observed,
            ] {
                assert_eq!(
                    reads(&kind.subject(&rid)),
                    allowed,
                    "{me} reading {}",
                    kind.subject(&rid)
                );
            }
            assert_eq!(
                reads(&format!("airlock.audit.receipt.{rid}")),
                allowed,
                "{me}: {owner}'s receipt"
            );
            assert_eq!(
                gets(&format!("$JS.API.DIRECT.GET.AIRLOCK.airlock.terminal.{rid}")),
                allowed,
                "{me}: {owner}'s terminal by direct get"
            );
            assert_eq!(
                gets(&format!("$JS.API.DIRECT.GET.AIRLOCK.airlock.exec.observed.{rid}")),
                allowed,
                "{me}: {owner}'s kernel record by direct get"
            );
            assert_eq!(
                gets(&format!("$JS.API.DIRECT.GET.AIRLOCK.airlock.progress.{rid}")),
                allowed,
                "{me}: {owner}'s latest stage by direct get"
            );
            assert_eq!(
                gets(&EventKind::Submitted.subject(&rid)),
                allowed,
                "{me} submitting as {owner}"
            );
            for kind in [EventKind::OverrideAsked, EventKind::Decided, EventKind::Assessed] {
                assert!(!reads(&kind.subject(&rid)), "{me} reading {}", kind.subject(&rid));
            }
        }
    }
}

#[test]
fn subject_patterns_match_like_nats() {
    assert!(matches("airlock.submit.mai.*", "airlock.submit.mai.r1"));
    assert!(!matches("airlock.submit.mai.*", "airlock.submit.mai-b.r1"));
    assert!(!matches("airlock.submit.mai.*", "airlock.submit.mai.r1.x"));
    assert!(matches(
        "$JS.API.DIRECT.GET.AIRLOCK.>",
        "$JS.API.DIRECT.GET.AIRLOCK.a.b"
    ));
    assert!(!matches("$JS.API.DIRECT.GET.AIRLOCK.>", "$JS.API.DIRECT.GET.AIRLOCK"));
    assert!(matches(">", "a"));
}
