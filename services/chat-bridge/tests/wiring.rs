//! `airlock bridge test`'s checks of Slack and Discord, against the local servers speaking their
//! APIs: a bot token the chat accepts passes (`auth.test`, `GET /users/@me`) and the test message
//! is posted; a token it does not accept fails the token check with the chat's own refusal and a
//! fix, and the test message fails too. (Matrix's checks run against a real Synapse in the
//! workspace's tests: `tests/tests/bridge_admin.rs`.)

mod common;

use airlock_chat_bridge::config::{Config, DiscordConfig, SlackConfig};
use airlock_chat_bridge::wiring::{Check, test_wiring};
use common::{Recorder, fake_discord, fake_slack, write_secret};

const SLACK_TOKEN: &str = "xoxb-good-token";
const DISCORD_TOKEN: &str = "discord-good-token";

async fn config(dir: &std::path::Path, slack_token: &str, discord_token: &str) -> (Config, Recorder, Recorder) {
    let (slack_calls, discord_calls) = (Recorder::default(), Recorder::default());
    let slack = SlackConfig {
        api_base: fake_slack(slack_calls.clone(), SLACK_TOKEN).await,
        bot_token_file: write_secret(dir, "slack-token", slack_token),
        signing_secret_file: write_secret(dir, "slack-secret", "s3cret"),
        channel: "C0APPROVALS".into(),
        approvers: vec!["U0ALICE001".into()],
    };
    let discord = DiscordConfig {
        api_base: fake_discord(discord_calls.clone(), DISCORD_TOKEN).await,
        bot_token_file: write_secret(dir, "discord-token", discord_token),
        public_key: hex::encode(
            ed25519_dalek::SigningKey::from_bytes(&[7; 32])
                .verifying_key()
                .to_bytes(),
        ),
        channel_id: "1200000000000000001".into(),
        approvers: vec!["401234567890123456".into()],
    };
    let config = Config {
        key_file: dir.join("bridge.key"),
        slack: Some(slack),
        discord: Some(discord),
        ..Default::default()
    };
    (config, slack_calls, discord_calls)
}

fn find<'a>(checks: &'a [Check], name: &str) -> &'a Check {
    checks
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no check {name:?} in {checks:#?}"))
}

#[tokio::test]
async fn tokens_the_chats_accept_pass_and_the_test_messages_are_posted() {
    let dir = tempfile::tempdir().unwrap();
    let (config, slack_calls, discord_calls) = config(dir.path(), SLACK_TOKEN, DISCORD_TOKEN).await;
    let checks = test_wiring(&config).await;
    assert!(checks.iter().all(Check::passed), "{checks:#?}");
    let slack = find(&checks, "slack token (auth.test)");
    assert!(
        slack.outcome.as_ref().unwrap().contains("airlock in Airlock Test"),
        "{slack:?}"
    );
    let discord = find(&checks, "discord token (GET /users/@me)");
    assert!(
        discord.outcome.as_ref().unwrap().contains(common::DISCORD_BOT_USER),
        "{discord:?}"
    );
    assert!(find(&checks, "slack C0APPROVALS: test message").passed());
    assert!(find(&checks, "discord 1200000000000000001: test message").passed());
    // The documented calls, with the bot's credentials.
    let auth = slack_calls.wait("auth.test", |c| c.path == "auth.test").await;
    assert_eq!(auth.authorization, format!("Bearer {SLACK_TOKEN}"));
    let me = discord_calls
        .wait("GET /users/@me", |c| c.method == "GET" && c.path == "users/@me")
        .await;
    assert_eq!(me.authorization, format!("Bot {DISCORD_TOKEN}"));
}

#[tokio::test]
async fn tokens_the_chats_refuse_fail_with_the_chats_reason_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let (config, _, _) = config(dir.path(), "xoxb-revoked", "discord-wrong").await;
    let checks = test_wiring(&config).await;
    let slack = find(&checks, "slack token (auth.test)");
    let why = slack.outcome.as_ref().expect_err("a refused Slack token passed");
    assert!(
        why.contains("invalid_auth") && why.contains("bot_token_file") && !why.contains('\n'),
        "{why}"
    );
    let discord = find(&checks, "discord token (GET /users/@me)");
    let why = discord.outcome.as_ref().expect_err("a refused Discord token passed");
    assert!(
        why.contains("401") && why.contains("bot_token_file") && !why.contains('\n'),
        "{why}"
    );
    assert!(!find(&checks, "slack C0APPROVALS: test message").passed());
    assert!(!find(&checks, "discord 1200000000000000001: test message").passed());
}
