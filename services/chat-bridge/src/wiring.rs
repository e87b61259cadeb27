//! `airlock bridge test`: checks every configured chat the way a real request will use it, and
//! says for each check what was found, or what is wrong and how to fix it. It catches the
//! mistakes that otherwise show only when a request waits unseen: a token of another user or one
//! that does not verify, an encrypted room, approvers who are not in the room, a room the bot
//! cannot join or post in. A test message is posted to every chat's own place last.

use crate::adapter::ChatError;
use crate::chats::Chats;
use crate::config::Config;
use crate::matrix::Matrix;
use airlock_protocol::{SigningKey, error_chain};

/// One check: its name, and what was found (`Ok`) or what is wrong, in one line an admin can act
/// on (`Err`).
#[derive(Clone, Debug)]
pub struct Check {
    pub name: String,
    pub outcome: Result<String, String>,
}

impl Check {
    fn new(name: impl Into<String>, outcome: Result<String, String>) -> Self {
        Self {
            name: name.into(),
            outcome,
        }
    }

    pub fn passed(&self) -> bool {
        self.outcome.is_ok()
    }
}

/// Runs every check of every configured chat, in order.
pub async fn test_wiring(config: &Config) -> Vec<Check> {
    let key = match SigningKey::load_or_generate(&config.key_file, &config.key_name) {
        Ok(key) => key,
        Err(e) => {
            return vec![Check::new(
                "bridge key",
                Err(format!("cannot read or create {}: {e}", config.key_file.display())),
            )];
        }
    };
    let chats = match Chats::build(config, &key) {
        Ok(chats) => chats,
        Err(e) => return vec![Check::new("configuration", Err(error_chain(&e)))],
    };
    let mut checks = Vec::new();
    if let (Some(matrix), Some(settings)) = (&chats.matrix, &config.matrix) {
        checks.push(Check::new("matrix token", matrix_token(matrix, settings).await));
        let mut approvers = settings.approvers.clone();
        for listed in &config.matrix_policy_approvers {
            if !approvers.contains(listed) {
                approvers.push(listed.clone());
            }
        }
        checks.extend(matrix_room(matrix, &settings.room_id, "room", &approvers, "approver").await);
        for room in config
            .matrix_escalation_rooms
            .iter()
            .filter(|r| **r != settings.room_id)
        {
            checks.extend(
                matrix_room(
                    matrix,
                    room,
                    "escalation room",
                    &config.matrix_escalation_mentions,
                    "escalation mention",
                )
                .await,
            );
        }
    }
    if let Some(slack) = &chats.slack {
        checks.push(Check::new(
            "slack token (auth.test)",
            slack.verify().await.map_err(|e| {
                format!(
                    "Slack does not accept the bot token: {}; put the app's Bot User OAuth Token (xoxb-...) in bot_token_file",
                    error_chain(&e)
                )
            }),
        ));
    }
    if let Some(discord) = &chats.discord {
        checks.push(Check::new(
            "discord token (GET /users/@me)",
            discord.verify().await.map_err(|e| {
                format!(
                    "Discord does not accept the bot token: {}; put the bot's token (developer portal, Bot, Reset Token) in bot_token_file",
                    error_chain(&e)
                )
            }),
        ));
    }
    checks.extend(test_messages(&chats).await);
    checks
}

/// The token must be the configured bot's: the homeserver says whose it is.
async fn matrix_token(matrix: &Matrix, settings: &crate::config::MatrixConfig) -> Result<String, String> {
    match matrix.whoami().await {
        Ok(who) if who == settings.user_id => Ok(format!("the token is {who}'s")),
        Ok(who) => Err(format!(
            "the access token in {} belongs to {who}, not to user_id {}: put {}'s token in that file, or set user_id to the account the token is for",
            settings.access_token_file.display(),
            settings.user_id,
            settings.user_id
        )),
        Err(e) => Err(format!(
            "the homeserver does not accept the access token in {}: {}; log in as {} again and store the new access_token",
            settings.access_token_file.display(),
            error_chain(&e),
            settings.user_id
        )),
    }
}

/// One Matrix room the bot posts to: it can join it, it is not encrypted, the bot may post, and
/// the people who must see requests there are members (joined or invited).
async fn matrix_room(matrix: &Matrix, room: &str, what: &str, people: &[String], role: &str) -> Vec<Check> {
    let name = |check: &str| format!("matrix {what} {room}: {check}");
    let mut checks = Vec::new();
    if let Err(e) = matrix.join(room).await {
        checks.push(Check::new(
            name("the bot can join"),
            Err(format!(
                "the bot cannot join: {}; invite it from the room (or fix the room id)",
                error_chain(&e)
            )),
        ));
        // Nothing else about the room can be read by a bot outside it.
        return checks;
    }
    checks.push(Check::new(name("the bot can join"), Ok("joined".into())));
    checks.push(Check::new(
        name("not end-to-end encrypted"),
        match matrix.encrypted(room).await {
            Ok(false) => Ok("unencrypted".into()),
            Ok(true) => Err(
                "the room is end-to-end encrypted, so the bot can neither read answers nor post readable requests there, and encryption cannot be turned off: create a new room with encryption off, invite the bot and the approvers, and use its id"
                    .into(),
            ),
            Err(e) => Err(format!("cannot read the room's encryption state: {}", error_chain(&e))),
        },
    ));
    checks.push(Check::new(
        name("the bot may post"),
        match matrix.post_levels(room).await {
            Ok((mine, needed)) if mine >= needed => Ok(format!("power level {mine}, messages need {needed}")),
            Ok((mine, needed)) => Err(format!(
                "the bot's power level is {mine} but messages need {needed}: raise the bot's power level in the room's settings"
            )),
            Err(e) => Err(format!("cannot read the room's power levels: {}", error_chain(&e))),
        },
    ));
    if !people.is_empty() {
        checks.push(Check::new(
            name(&format!("every {role} is a member")),
            members(matrix, room, people, role).await,
        ));
    }
    checks
}

async fn members(matrix: &Matrix, room: &str, people: &[String], role: &str) -> Result<String, String> {
    let members = matrix
        .members(room)
        .await
        .map_err(|e| format!("cannot read the room's members: {}", error_chain(&e)))?;
    let missing: Vec<&str> = people
        .iter()
        .filter(|p| !members.contains_key(*p))
        .map(String::as_str)
        .collect();
    if missing.is_empty() {
        let invited: Vec<&str> = people
            .iter()
            .filter(|p| members.get(*p).is_some_and(|m| m == "invite"))
            .map(String::as_str)
            .collect();
        return Ok(if invited.is_empty() {
            format!("{} joined", people.join(", "))
        } else {
            format!(
                "{} joined or invited (not yet joined: {})",
                people.join(", "),
                invited.join(", ")
            )
        });
    }
    let (names, is) = (missing.join(", "), if missing.len() == 1 { "is" } else { "are" });
    Err(format!(
        "{names} {is} not in the room (neither joined nor invited) and would not see requests: invite {names} to {room}, or take them off the {role}s"
    ))
}

/// A test message to every chat's own place: the bot can post there.
async fn test_messages(chats: &Chats) -> Vec<Check> {
    let stamp = airlock_protocol::now_ms();
    let message = crate::render::notices::said(
        crate::render::Line::new()
            .text("Airlock test message (")
            .time(stamp, false)
            .text("): override requests will be posted here. No action needed."),
    );
    let mut checks = Vec::new();
    for adapter in chats.adapters() {
        let txn = format!("airlock-test-{stamp}-{}", adapter.system());
        let outcome: Result<String, ChatError> = adapter.post(adapter.place(), None, &message, stamp, &txn).await;
        checks.push(Check::new(
            format!("{} {}: test message", adapter.system(), adapter.place()),
            outcome
                .map(|_| "posted".into())
                .map_err(|e| format!("the test message was not posted: {}", error_chain(&e))),
        ));
    }
    checks
}
