//! Slack, against a local server speaking Slack's Web API: the request is posted with Approve
//! and Deny buttons; a signed click opens the reason dialog; its signed submission is the answer
//! the gate decides on; the message is updated when the request ends. Interactions with a
//! forged or stale signature, or replayed, are refused (401) and recorded by the gate; so is an
//! answer by someone not on the list, who is told so in the thread.

mod common;

use airlock_chat_bridge::config::{Config, SlackConfig};
use airlock_protocol::{Approver, DecisionOutcome, RefusalReason};
use common::{Harness, Recorder, fake_slack, free_addr, now_secs, write_secret};
use hmac::{KeyInit as _, Mac as _};
use serde_json::{Value, json};

const TOKEN: &str = "xoxb-test-token";
const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";

/// Signs as Slack documents: `v0=` hex HMAC-SHA256 of `v0:<timestamp>:<body>`.
fn sign(timestamp: i64, body: &[u8]) -> String {
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(format!("v0:{timestamp}:").as_bytes());
    mac.update(body);
    format!("v0={}", hex::encode(mac.finalize().into_bytes()))
}

/// A form-encoded interactivity request, as Slack sends it.
fn form(payload: &Value) -> Vec<u8> {
    serde_urlencoded::to_string([("payload", payload.to_string())])
        .unwrap()
        .into_bytes()
}

async fn send(h: &Harness, body: Vec<u8>, timestamp: i64, signature: String) -> (u16, String) {
    h.post(
        "/slack/interactions",
        &[
            ("x-slack-request-timestamp", timestamp.to_string()),
            ("x-slack-signature", signature),
        ],
        body,
        "application/x-www-form-urlencoded",
    )
    .await
}

async fn signed(h: &Harness, payload: &Value) -> (u16, String) {
    let body = form(payload);
    let ts = now_secs();
    let sig = sign(ts, &body);
    send(h, body, ts, sig).await
}

fn click(user: &str, action: &str, rid: &str, ts: &str, trigger: &str) -> Value {
    json!({
        "type": "block_actions",
        "user": { "id": user, "username": user.to_lowercase(), "team_id": "T1" },
        "api_app_id": "A1",
        "trigger_id": trigger,
        "container": { "type": "message", "message_ts": ts, "channel_id": "C123", "is_ephemeral": false },
        "channel": { "id": "C123", "name": "approvals" },
        "actions": [{
            "type": "button",
            "action_id": action,
            "block_id": "airlock_answer",
            "value": rid,
            "action_ts": "1700000001.000200",
        }],
    })
}

fn submission(user: &str, view: &Value, reason: &str, again: Option<&str>) -> Value {
    let mut values = json!({ "reason": { "reason": { "type": "plain_text_input", "value": reason } } });
    if let Some(again) = again {
        values["again"] = json!({ "again": { "type": "static_select", "selected_option": { "value": again } } });
    }
    json!({
        "type": "view_submission",
        "user": { "id": user, "username": user.to_lowercase(), "team_id": "T1" },
        "api_app_id": "A1",
        "view": {
            "id": format!("V-{user}"),
            "type": "modal",
            "callback_id": view["callback_id"],
            "private_metadata": view["private_metadata"],
            "state": { "values": values },
        },
    })
}

#[tokio::test]
async fn slack_buttons_dialog_signatures_and_updates() {
    let secrets = tempfile::tempdir().unwrap();
    let recorder = Recorder::default();
    let api = fake_slack(recorder.clone(), TOKEN).await;
    let config = Config {
        listen: free_addr(),
        slack: Some(SlackConfig {
            api_base: api,
            bot_token_file: write_secret(secrets.path(), "token", TOKEN),
            signing_secret_file: write_secret(secrets.path(), "secret", SECRET),
            channel: "C123".into(),
            approvers: vec!["U0ALICE".into()],
        }),
        ..Config::default()
    };
    let mut h = Harness::start("slack", &["U0ALICE"], config).await;
    let rid = h.blocked().await;

    // Posted with buttons, by the bot's token.
    let post = recorder
        .wait("posting the request", |c| {
            c.path == "chat.postMessage" && c.body.to_string().contains(rid.as_str())
        })
        .await;
    assert_eq!(post.authorization, format!("Bearer {TOKEN}"));
    assert_eq!(post.body["channel"], "C123");
    let blocks = post.body["blocks"].to_string();
    assert!(
        blocks.contains("airlock_approve") && blocks.contains("airlock_deny"),
        "{blocks}"
    );
    assert!(blocks.contains("line 2") && blocks.contains("no network"), "{blocks}");
    let ts = "1700000000.000001";

    // A forged click: 401, recorded by the gate, nothing opened.
    let body = form(&click("U0ALICE", "airlock_approve", rid.as_str(), ts, "T-forged"));
    let now = now_secs();
    let (status, _) = send(&h, body.clone(), now, sign(now, b"something else")).await;
    assert_eq!(status, 401);
    assert_eq!(h.refusal(Some(&rid)).await.reason, RefusalReason::BadSignature);
    // A stale one (signed six minutes ago): 401, recorded.
    let old = now - 360;
    let (status, _) = send(&h, body.clone(), old, sign(old, &body)).await;
    assert_eq!(status, 401);
    assert_eq!(h.refusal(Some(&rid)).await.reason, RefusalReason::Expired);
    // No signature at all.
    let (status, _) = h
        .post(
            "/slack/interactions",
            &[],
            body.clone(),
            "application/x-www-form-urlencoded",
        )
        .await;
    assert_eq!(status, 401);
    assert_eq!(h.refusal(Some(&rid)).await.reason, RefusalReason::Malformed);
    assert!(
        !recorder.calls().iter().any(|c| c.path == "views.open"),
        "a forged click opened a dialog"
    );

    // The approver is shown as Slack shows a user (a mention, by name), never as a bare id.
    assert!(blocks.contains("<@U0ALICE>"), "{blocks}");

    // Someone not on the list clicks: no dialog; only they are told, in the request's thread;
    // the gate records the attempt.
    let (status, _) = signed(
        &h,
        &click("U0MALLORY", "airlock_approve", rid.as_str(), ts, "T-outsider"),
    )
    .await;
    assert_eq!(status, 200);
    let told = recorder
        .wait("refusing mallory's click", |c| c.path == "chat.postEphemeral")
        .await;
    assert_eq!(told.body["user"], "U0MALLORY");
    assert_eq!(told.body["channel"], "C123");
    assert_eq!(told.body["thread_ts"], ts);
    let text = told.body["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("you may not answer") && text.contains("<@U0ALICE>") && text.contains("nothing was counted"),
        "{text}"
    );
    let recorded = h.refusal(Some(&rid)).await;
    assert_eq!(recorded.reason, RefusalReason::UnknownSigner);
    assert!(recorded.detail.contains("U0MALLORY clicked"), "{}", recorded.detail);
    assert!(
        !recorder.calls().iter().any(|c| c.path == "views.open"),
        "an outsider's click opened the dialog"
    );

    // A genuine click opens the reason dialog.
    let (status, _) = signed(&h, &click("U0ALICE", "airlock_approve", rid.as_str(), ts, "T-1")).await;
    assert_eq!(status, 200);
    let open = recorder.wait("opening the dialog", |c| c.path == "views.open").await;
    assert_eq!(open.body["trigger_id"], "T-1");
    let view = open.body["view"].clone();
    assert_eq!(view["type"], "modal");
    assert!(view.to_string().contains("plain_text_input"), "{view}");

    // An empty reason is refused in the dialog itself.
    let (status, reply) = signed(&h, &submission("U0ALICE", &view, "  ", None)).await;
    assert_eq!(status, 200);
    assert!(reply.contains("response_action") && reply.contains("reason"), "{reply}");

    // Someone not on the list: told in the thread, refused on the record.
    let (status, _) = signed(&h, &submission("U0MALLORY", &view, "let me", None)).await;
    assert_eq!(status, 200);
    let refusal = h.refusal(Some(&rid)).await;
    assert_eq!(refusal.reason, RefusalReason::UnknownSigner);
    assert!(refusal.detail.contains("U0MALLORY"), "{}", refusal.detail);
    recorder
        .wait("telling mallory", |c| {
            c.path == "chat.postMessage"
                && c.body["thread_ts"] == ts
                && c.body["text"].to_string().contains("may not answer")
        })
        .await;

    // Alice's submission is the answer.
    let answer = submission("U0ALICE", &view, "reviewed the script", None);
    let body = form(&answer);
    let at = now_secs();
    let signature = sign(at, &body);
    let (status, _) = send(&h, body.clone(), at, signature.clone()).await;
    assert_eq!(status, 200);
    let decision = h.decision(&rid).await;
    assert!(matches!(decision.outcome, DecisionOutcome::Approved { .. }));
    match &decision.approver {
        Approver::Human { who, reason, via, .. } => {
            assert_eq!(who, "U0ALICE");
            assert_eq!(reason, "reviewed the script");
            assert_eq!(via.as_deref(), Some("slack C123"));
        }
        other => panic!("{other:?}"),
    }
    // The same request sent again: a replay, refused and recorded.
    let (status, _) = send(&h, body, at, signature).await;
    assert_eq!(status, 401);
    assert_eq!(h.refusal(Some(&rid)).await.reason, RefusalReason::Replayed);

    // The request ends: the message is updated, without buttons.
    h.finished(&rid, &decision).await;
    let update = recorder
        .wait("updating the message", |c| {
            c.path == "chat.update" && c.body["text"].as_str().unwrap_or_default().contains("APPROVED, RAN")
        })
        .await;
    assert_eq!(update.body["channel"], "C123");
    assert!(!update.body["blocks"].to_string().contains("airlock_approve"));
}

#[tokio::test]
async fn escalation_posts_again_mentions_a_second_group_and_a_second_channel_then_expires() {
    let secrets = tempfile::tempdir().unwrap();
    let recorder = Recorder::default();
    let api = fake_slack(recorder.clone(), TOKEN).await;
    let config = Config {
        listen: free_addr(),
        slack: Some(SlackConfig {
            api_base: api,
            bot_token_file: write_secret(secrets.path(), "token", TOKEN),
            signing_secret_file: write_secret(secrets.path(), "secret", SECRET),
            channel: "C123".into(),
            approvers: vec!["U0ALICE".into()],
        }),
        ..Config::default()
    };
    let policy: airlock_override_gate::Policy = toml::from_str(
        r#"
        [escalation.slack]
        repost = true
        mention = ["U0ONCALL"]
        place = "C999"
        "#,
    )
    .unwrap();
    let mut h = Harness::start_with_policy("slack", &["U0ALICE"], config, policy).await;
    let asked_at = airlock_protocol::now_ms();
    let rid = h.blocked_until(Some(asked_at + 6_000)).await;
    let posted = |channel: &'static str| {
        let rid = rid.clone();
        move |c: &common::Call| {
            c.path == "chat.postMessage"
                && c.body["channel"] == channel
                && c.body["blocks"].to_string().contains(rid.as_str())
                // The request itself (with its buttons), not a notice about it.
                && c.body["blocks"].to_string().contains("airlock_approve")
        }
    };
    recorder.wait("the first post", posted("C123")).await;
    // At half the time: posted again, posted in the second channel, the second group mentioned.
    recorder.wait("the second channel's post", posted("C999")).await;
    let mention = recorder
        .wait("mentioning the on-call group", |c| {
            c.path == "chat.postMessage" && c.body["text"].as_str().unwrap_or_default().contains("<@U0ONCALL>")
        })
        .await;
    assert!(
        mention.body["text"].as_str().unwrap_or_default().contains("Escalation"),
        "{:?}",
        mention.body
    );
    let first_posts: Vec<_> = recorder.calls().into_iter().filter(|c| posted("C123")(c)).collect();
    assert_eq!(first_posts.len(), 2, "posted again in the first channel");
    let elapsed = airlock_protocol::now_ms() - asked_at;
    assert!(elapsed >= 2_500, "escalated after {elapsed} ms, before half the time");

    // Nobody answers: denied at the deadline; every post says so.
    let decision = h.decision(&rid).await;
    assert!(matches!(decision.approver, Approver::Deadline));
    for _ in 0..100 {
        let updates = recorder
            .calls()
            .into_iter()
            .filter(|c| c.path == "chat.update" && c.body["text"].as_str().unwrap_or_default().contains("EXPIRED"))
            .count();
        if updates == 3 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("not every post was updated: {:#?}", recorder.calls());
}
