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
