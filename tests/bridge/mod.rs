//! Helpers of the chat-bridge tests: a real Synapse homeserver and Matrix users that talk to it
//! through the client-server API, as a human's client would.

// Each test file uses its own part of these helpers.
#![allow(dead_code)]

pub mod matrix;
pub mod synapse;

/// `[bridge.matrix]` for the bot `bot_id` posting to `room`, with `approvers` (as TOML values);
/// the bot's access token is written to a file in the homeserver's directory.
pub fn matrix_section(synapse: &synapse::Synapse, bot_id: &str, token: &str, room: &str, approvers: &[&str]) -> String {
    let token_file = synapse
        .path()
        .join(format!("token-{}", airlock_protocol::MessageId::new()));
    std::fs::write(&token_file, format!("{token}\n")).expect("token file");
    let approvers: Vec<String> = approvers.iter().map(|a| format!("{a:?}")).collect();
    format!(
        "[bridge.matrix]\nhomeserver = \"{url}\"\nuser_id = \"{bot_id}\"\naccess_token_file = \"{token}\"\nroom_id = \"{room}\"\napprovers = [{approvers}]\n",
        url = synapse.url,
        token = token_file.display(),
        approvers = approvers.join(", "),
    )
}
