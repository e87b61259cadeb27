//! Discord, against a local server speaking Discord's REST API: the request is posted with
//! Approve and Deny buttons; PING is answered with PONG; a signed button click is answered with
//! the reason modal; its signed submission is the answer the gate decides on; the message is
//! edited when the request ends. A forged, stale or replayed interaction gets 401 and is
//! recorded by the gate.

mod common;

use airlock_chat_bridge::config::{Config, DiscordConfig};
use airlock_protocol::{Approver, DecisionOutcome, RefusalReason};
use common::{Harness, Recorder, fake_discord, free_addr, now_secs, write_secret};
use ed25519_dalek::Signer as _;
use serde_json::{Value, json};

const TOKEN: &str = "discord-bot-token";

/// Signs as Discord does: Ed25519 over the timestamp followed by the body.
fn sign(key: &ed25519_dalek::SigningKey, timestamp: i64, body: &[u8]) -> String {
    hex::encode(key.sign(&[timestamp.to_string().as_bytes(), body].concat()).to_bytes())
}

async fn send(h: &Harness, body: &[u8], timestamp: i64, signature: String) -> (u16, Value) {
    let (status, text) = h
        .post(
            "/discord/interactions",
            &[
                ("x-signature-ed25519", signature),
                ("x-signature-timestamp", timestamp.to_string()),
            ],
            body.to_vec(),
            "application/json",
        )
        .await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

async fn signed(h: &Harness, key: &ed25519_dalek::SigningKey, payload: &Value) -> (u16, Value) {
    let body = payload.to_string().into_bytes();
    let ts = now_secs();
    send(h, &body, ts, sign(key, ts, &body)).await
}

fn member(user: &str) -> Value {
    json!({ "user": { "id": user, "username": format!("user{user}"), "discriminator": "0" }, "roles": [] })
}

fn interaction(id: &str, kind: u64, user: &str, data: Value) -> Value {
    json!({
        "id": id,
        "application_id": "11",
        "type": kind,
        "token": "interaction-token",
        "version": 1,
        "guild_id": "22",
        "channel_id": "33",
        "member": member(user),
        "data": data,
    })
}

#[tokio::test]
async fn discord_ping_buttons_modal_signatures_and_edits() {
    let secrets = tempfile::tempdir().unwrap();
    let app_key = ed25519_dalek::SigningKey::from_bytes(&[9u8; 32]);
    let recorder = Recorder::default();
    let api = fake_discord(recorder.clone(), TOKEN).await;
    let config = Config {
        listen: free_addr(),
        discord: Some(DiscordConfig {
            api_base: api,
            bot_token_file: write_secret(secrets.path(), "token", TOKEN),
            public_key: hex::encode(app_key.verifying_key().to_bytes()),
            channel_id: "33".into(),
            approvers: vec!["1001".into()],
        }),
        ..Config::default()
    };
    let mut h = Harness::start("discord", &["1001"], config).await;

    // PING, as Discord sends when the endpoint is registered: PONG. Unsigned: 401.
    let ping = json!({ "id": "1", "application_id": "11", "type": 1, "token": "t", "version": 1 });
    let (status, reply) = signed(&h, &app_key, &ping).await;
    assert_eq!((status, reply), (200, json!({ "type": 1 })));
    let (status, _) = send(&h, ping.to_string().as_bytes(), now_secs(), "00".repeat(64)).await;
    assert_eq!(status, 401);
    h.refusal(None).await;

    let rid = h.blocked().await;
    let post = recorder
        .wait("posting the request", |c| {
            c.method == "POST" && c.body.to_string().contains(rid.as_str())
        })
        .await;
    assert_eq!(post.authorization, format!("Bot {TOKEN}"));
    assert_eq!(post.path, "channels/33/messages");
    let components = post.body["components"].to_string();
    assert!(components.contains(&format!("airlock:approve:{rid}")), "{components}");
    // Only the approvers are notified, by id; nothing in the text can ping anyone else.
    assert_eq!(post.body["allowed_mentions"], json!({ "parse": [], "users": ["1001"] }));
    let content = post.body["content"].as_str().unwrap_or_default();
    assert!(content.len() <= 2000 && content.contains("line 2"), "{content}");
    // The approver is shown as Discord shows a user (a mention, by name), never as a bare id.
    assert!(content.contains("<@1001>"), "{content}");
    let message_id = "1300000000000000001";

    // Someone not on the list clicks: refused at once, only they see it, no modal; the gate
    // records the attempt.
    let outsider = interaction(
        "500",
        3,
        "2002",
        json!({ "custom_id": format!("airlock:approve:{rid}"), "component_type": 2 }),
    );
    let (status, refusal) = signed(&h, &app_key, &outsider).await;
    assert_eq!(status, 200);
    assert_eq!(refusal["type"], 4, "an outsider got the reason modal: {refusal}");
    assert_eq!(refusal["data"]["flags"], 64, "{refusal}");
    let text = refusal["data"]["content"].as_str().unwrap_or_default();
    assert!(
        text.contains("you may not answer") && text.contains("<@1001>") && text.contains("nothing was counted"),
        "{text}"
    );
    let recorded = h.refusal(Some(&rid)).await;
    assert_eq!(recorded.reason, RefusalReason::UnknownSigner);
    assert!(recorded.detail.contains("2002 clicked"), "{}", recorded.detail);

    // A button click: answered with the reason modal.
    let click = interaction(
        "501",
        3,
        "1001",
        json!({ "custom_id": format!("airlock:approve:{rid}"), "component_type": 2 }),
    );
    let (status, modal) = signed(&h, &app_key, &click).await;
    assert_eq!(status, 200);
    assert_eq!(modal["type"], 9, "{modal}");
    let modal_id = modal["data"]["custom_id"].as_str().expect("modal custom_id").to_owned();
    assert_eq!(modal["data"]["components"][0]["components"][0]["custom_id"], "reason");

    let submit = |id: &str, user: &str, reason: &str| {
        interaction(
            id,
            5,
            user,
            json!({
                "custom_id": modal_id,
                "components": [{ "type": 1, "components": [{ "type": 4, "custom_id": "reason", "value": reason }] }],
            }),
        )
    };

    // Forged (signed by another key) and stale submissions: 401, recorded.
    let other = ed25519_dalek::SigningKey::from_bytes(&[8u8; 32]);
    let (status, _) = signed(&h, &other, &submit("502", "1001", "forged")).await;
    assert_eq!(status, 401);
    assert_eq!(h.refusal(Some(&rid)).await.reason, RefusalReason::BadSignature);
    let body = submit("503", "1001", "stale").to_string().into_bytes();
    let old = now_secs() - 3600;
    let (status, _) = send(&h, &body, old, sign(&app_key, old, &body)).await;
    assert_eq!(status, 401);
    assert_eq!(h.refusal(Some(&rid)).await.reason, RefusalReason::Expired);

    // Someone not on the list: told (only they see it), refused on the record.
    let (status, reply) = signed(&h, &app_key, &submit("504", "2002", "let me")).await;
    assert_eq!(status, 200);
    assert_eq!(reply["type"], 4);
    assert_eq!(reply["data"]["flags"], 64);
    assert!(
        reply["data"]["content"]
            .as_str()
            .unwrap_or_default()
            .contains("may not answer"),
        "{reply}"
    );
    assert_eq!(h.refusal(Some(&rid)).await.reason, RefusalReason::UnknownSigner);

    // The approver's submission is the answer.
    let body = submit("505", "1001", "checked with the team").to_string().into_bytes();
    let at = now_secs();
    let signature = sign(&app_key, at, &body);
    let (status, reply) = send(&h, &body, at, signature.clone()).await;
    assert_eq!(status, 200);
    assert!(
        reply["data"]["content"]
            .as_str()
            .unwrap_or_default()
            .contains("approved by <@1001>"),
        "{reply}"
    );
    let decision = h.decision(&rid).await;
    assert!(matches!(decision.outcome, DecisionOutcome::Approved { .. }));
    assert!(
        matches!(&decision.approver, Approver::Human { who, via, .. } if who == "1001" && via.as_deref() == Some("discord 33"))
    );
    // Replayed: 401, recorded.
    let (status, _) = send(&h, &body, at, signature).await;
    assert_eq!(status, 401);
    assert_eq!(h.refusal(Some(&rid)).await.reason, RefusalReason::Replayed);

    // The request ends: the message is edited and its buttons removed.
    h.finished(&rid, &decision).await;
    let edit = recorder
        .wait("editing the message", |c| {
            c.method == "PATCH" && c.body["content"].as_str().unwrap_or_default().contains("APPROVED, RAN")
        })
        .await;
    assert_eq!(edit.path, format!("channels/33/messages/{message_id}"));
    assert_eq!(edit.body["components"], json!([]));
}
