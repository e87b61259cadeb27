//! The bridge's configuration: `[bridge]` and one sub-section per chat system of the stack's
//! TOML file. The names of the Matrix keys are a contract with operators and their scripts.
//! Secrets (tokens, signing secrets) are never in the file itself: each is read from its own
//! file at start.

use airlock_bus::runner::{ConfigError, ConfigFile};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// How long a signed interaction stays acceptable after its timestamp (Slack documents five
/// minutes; the same window is applied to Discord and webhooks).
pub const SIGNATURE_WINDOW_SECS: i64 = 5 * 60;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    /// The bridge's Ed25519 key: it signs every answer it relays (the gate lists its verifier
    /// key per chat system in `[gate.bridge_keys]`) and, with `signing = "ed25519"`, webhooks.
    pub key_file: PathBuf,
    /// Key name, used when the key is created.
    pub key_name: String,
    /// Where the interaction endpoints listen (Slack, Discord, webhook answers). Put a TLS
    /// proxy in front for the SaaS chats.
    pub listen: SocketAddr,
    /// The address people open the bridge's pages at (`listen`, through your TLS proxy), such
    /// as `https://airlock.example.org`. When set, each request's message links to a page with
    /// its whole code (an unguessable link that lapses an hour after the request's deadline),
    /// and the bridge listens on `listen` for it even with Matrix alone.
    pub public_url: Option<String>,
    pub matrix: Option<MatrixConfig>,
    pub slack: Option<SlackConfig>,
    pub discord: Option<DiscordConfig>,
    pub webhook: Option<WebhookConfig>,
    /// The stack's top-level `[people]` (read with the bridge's section): the two-person rule
    /// counts people, in the bridge's quick reading of an answer as in the gate's judgement.
    #[serde(skip)]
    pub people: std::collections::BTreeMap<String, airlock_approvals::Person>,
    /// The Matrix rooms the gate's policy escalates to (`[gate.policy.escalation.matrix]
    /// place`): the bot joins them at start, reads answers there, and `airlock bridge test`
    /// says when it cannot join one.
    #[serde(skip)]
    pub matrix_escalation_rooms: Vec<String>,
    /// Everyone the gate's policy lists as a Matrix approver for some level
    /// (`[gate.policy.approvers.matrix]`): `airlock bridge test` checks they are in the room.
    #[serde(skip)]
    pub matrix_policy_approvers: Vec<String>,
    /// Who a Matrix escalation mentions (`[gate.policy.escalation.matrix] mention`): checked to be
    /// in the escalation room.
    #[serde(skip)]
    pub matrix_escalation_mentions: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            key_file: PathBuf::from("keys/bridge.key"),
            key_name: "airlock.local/bridge".to_owned(),
            listen: SocketAddr::from(([127, 0, 0, 1], 8790)),
            public_url: None,
            matrix: None,
            slack: None,
            discord: None,
            webhook: None,
            people: Default::default(),
            matrix_escalation_rooms: vec![],
            matrix_policy_approvers: vec![],
            matrix_escalation_mentions: vec![],
        }
    }
}

/// `[bridge.matrix]`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct MatrixConfig {
    /// The homeserver's client-server API base, e.g. `http://127.0.0.1:8008`.
    pub homeserver: String,
    /// The bot's user id, e.g. `@airlock:localhost`.
    pub user_id: String,
    /// File holding the bot's access token, read at start.
    pub access_token_file: PathBuf,
    /// The room override requests are posted to; the bot joins it when invited.
    pub room_id: String,
    /// Who may answer (per-level lists in `[gate.policy.approvers.matrix]` refine this).
    pub approvers: Vec<String>,
}

/// `[bridge.slack]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct SlackConfig {
    /// Web API base; tests and proxies point it elsewhere.
    pub api_base: String,
    /// File holding the bot token (`xoxb-...`).
    pub bot_token_file: PathBuf,
    /// File holding the app's signing secret (Basic Information → App Credentials).
    pub signing_secret_file: PathBuf,
    /// Channel id the requests are posted to.
    pub channel: String,
    /// Slack user ids (`U...`) who may answer.
    pub approvers: Vec<String>,
}

impl Default for SlackConfig {
    fn default() -> Self {
        Self {
            api_base: "https://slack.com/api".to_owned(),
            bot_token_file: PathBuf::new(),
            signing_secret_file: PathBuf::new(),
            channel: String::new(),
            approvers: vec![],
        }
    }
}

/// `[bridge.discord]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct DiscordConfig {
    /// REST API base (with its version); tests and proxies point it elsewhere.
    pub api_base: String,
    /// File holding the bot token.
    pub bot_token_file: PathBuf,
    /// The application's public key (hex, from the developer portal): interactions are signed
    /// with its private half.
    pub public_key: String,
    /// Channel id the requests are posted to.
    pub channel_id: String,
    /// Discord user ids (snowflakes) who may answer.
    pub approvers: Vec<String>,
}

impl Default for DiscordConfig {
    fn default() -> Self {
        Self {
            api_base: "https://discord.com/api/v10".to_owned(),
            bot_token_file: PathBuf::new(),
            public_key: String::new(),
            channel_id: String::new(),
            approvers: vec![],
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WebhookSigning {
    /// `X-Airlock-Signature: v1=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>`, both ways.
    #[default]
    HmacSha256,
    /// `X-Airlock-Signature: ed25519=<base64 signature of "<timestamp>.<body>">`: the bridge signs
    /// with its key; answers are signed with the receiver's key (`answer_public_key`).
    Ed25519,
}

/// `[bridge.webhook]`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct WebhookConfig {
    /// A short name for the receiving system, recorded as the place answers come from.
    pub name: String,
    /// Where override requests (and their ends) are POSTed as JSON.
    pub url: String,
    pub signing: WebhookSigning,
    /// File holding the shared secret (`hmac-sha256`).
    pub secret_file: Option<PathBuf>,
    /// The receiver's Ed25519 public key (base64 or hex of 32 bytes) that signs answers
    /// (`ed25519`).
    pub answer_public_key: Option<String>,
    /// The `who` values the receiver may answer for.
    pub approvers: Vec<String>,
}

impl Config {
    /// Reads `[bridge]`; relative file names are taken relative to `base` (the stack's home).
    pub fn load(file: &ConfigFile, base: Option<&Path>) -> Result<Self, ConfigError> {
        let section = airlock_protocol::roles::CHAT_BRIDGE.config_section;
        let mut config: Config = file.section(section)?;
        config.people = file.section("people")?;
        let gate: toml::Table = file.section("gate")?;
        // The gate checks its own section; here it is only read for what the bridge must serve.
        let policy = gate.get("policy");
        let escalation = policy.and_then(|p| p.get("escalation")).and_then(|e| e.get("matrix"));
        config.matrix_escalation_rooms = escalation
            .and_then(|m| m.get("place"))
            .and_then(|p| p.as_str())
            .map(|room| vec![room.to_owned()])
            .unwrap_or_default();
        config.matrix_escalation_mentions = escalation
            .and_then(|m| m.get("mention"))
            .map(strings)
            .unwrap_or_default();
        let mut listed: Vec<String> = policy
            .and_then(|p| p.get("approvers"))
            .and_then(|a| a.get("matrix"))
            .and_then(|m| m.as_table())
            .map(|levels| levels.values().flat_map(strings).collect())
            .unwrap_or_default();
        listed.sort();
        listed.dedup();
        config.matrix_policy_approvers = listed;
        if let Some(base) = base {
            config.resolve(base);
        }
        config.check(file)?;
        Ok(config)
    }

    fn resolve(&mut self, base: &Path) {
        let fix = |p: &mut PathBuf| {
            if !p.as_os_str().is_empty() && p.is_relative() {
                *p = base.join(&*p);
            }
        };
        fix(&mut self.key_file);
        if let Some(m) = self.matrix.as_mut() {
            fix(&mut m.access_token_file);
        }
        if let Some(s) = self.slack.as_mut() {
            fix(&mut s.bot_token_file);
            fix(&mut s.signing_secret_file);
        }
        if let Some(d) = self.discord.as_mut() {
            fix(&mut d.bot_token_file);
        }
        if let Some(secret) = self.webhook.as_mut().and_then(|w| w.secret_file.as_mut()) {
            fix(secret);
        }
    }

    /// Checks what serde cannot: required keys of each configured system.
    fn check(&self, file: &ConfigFile) -> Result<(), ConfigError> {
        let need = |key: &str, ok: bool, what: &str| if ok { Ok(()) } else { Err(file.invalid(key, what)) };
        if let Some(url) = &self.public_url {
            need(
                "bridge.public_url",
                (url.starts_with("https://") || url.starts_with("http://"))
                    && !url.contains(char::is_whitespace)
                    && !url.contains(['?', '#']),
                "an http(s) URL without a query (where people open the bridge's pages)",
            )?;
        }
        if let Some(m) = &self.matrix {
            need(
                "bridge.matrix.homeserver",
                m.homeserver.starts_with("http"),
                "an http(s) URL",
            )?;
            need(
                "bridge.matrix.user_id",
                m.user_id.starts_with('@') && m.user_id.contains(':'),
                "a Matrix user id (@name:server)",
            )?;
            need(
                "bridge.matrix.room_id",
                // Room versions before 12 have `!opaque:server`, version 12 `!hash` alone.
                m.room_id.starts_with('!') && m.room_id.len() > 1 && !m.room_id.contains(char::is_whitespace),
                "a Matrix room id (!id:server, or !id for room version 12)",
            )?;
            need(
                "bridge.matrix.access_token_file",
                !m.access_token_file.as_os_str().is_empty(),
                "the file holding the bot's access token",
            )?;
        }
        if let Some(s) = &self.slack {
            need("bridge.slack.channel", !s.channel.is_empty(), "a channel id")?;
            need(
                "bridge.slack.api_base",
                s.api_base.starts_with("http"),
                "an http(s) URL",
            )?;
            need(
                "bridge.slack.bot_token_file",
                !s.bot_token_file.as_os_str().is_empty(),
                "a file",
            )?;
            need(
                "bridge.slack.signing_secret_file",
                !s.signing_secret_file.as_os_str().is_empty(),
                "a file",
            )?;
        }
        if let Some(d) = &self.discord {
            need("bridge.discord.channel_id", !d.channel_id.is_empty(), "a channel id")?;
            need(
                "bridge.discord.api_base",
                d.api_base.starts_with("http"),
                "an http(s) URL",
            )?;
            need(
                "bridge.discord.bot_token_file",
                !d.bot_token_file.as_os_str().is_empty(),
                "a file",
            )?;
            need(
                "bridge.discord.public_key",
                crate::signatures::parse_ed25519_public(&d.public_key).is_some(),
                "the application's public key (64 hex digits)",
            )?;
        }
        if let Some(w) = &self.webhook {
            need("bridge.webhook.url", w.url.starts_with("http"), "an http(s) URL")?;
            match w.signing {
                WebhookSigning::HmacSha256 => need(
                    "bridge.webhook.secret_file",
                    w.secret_file.is_some(),
                    "the shared secret's file (signing = \"hmac-sha256\")",
                )?,
                WebhookSigning::Ed25519 => need(
                    "bridge.webhook.answer_public_key",
                    w.answer_public_key
                        .as_deref()
                        .and_then(crate::signatures::parse_ed25519_public)
                        .is_some(),
                    "the receiver's Ed25519 public key (signing = \"ed25519\")",
                )?,
            }
        }
        if self.matrix.is_none() && self.slack.is_none() && self.discord.is_none() && self.webhook.is_none() {
            return Err(file.invalid(
                "bridge",
                "no chat system is configured ([bridge.matrix], [bridge.slack], [bridge.discord] or [bridge.webhook])",
            ));
        }
        Ok(())
    }

    /// Whether the stack's file configures the bridge at all (`airlock up` starts it only then).
    pub fn configured(file: &ConfigFile) -> bool {
        file.has_section("bridge")
    }
}

/// The strings of a TOML array (anything else: none).
fn strings(value: &toml::Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| items.iter().filter_map(|i| i.as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

/// Reads a secret's file: its first line, trimmed.
pub fn read_secret(path: &Path) -> std::io::Result<String> {
    let text = std::fs::read_to_string(path)?;
    Ok(text.lines().next().unwrap_or_default().trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_matrix_contract_keys_are_read_and_typos_refused() {
        let text = r#"
            [bridge.matrix]
            homeserver = "http://127.0.0.1:8008"
            user_id = "@airlock:localhost"
            access_token_file = "/path/to/token"
            room_id = "!room:localhost"
            approvers = ["@alice:localhost"]
        "#;
        let file = ConfigFile::parse(Path::new("a.toml"), text).unwrap();
        let config = Config::load(&file, Some(Path::new("/home"))).unwrap();
        let matrix = config.matrix.unwrap();
        assert_eq!(matrix.approvers, ["@alice:localhost".to_owned()]);
        assert_eq!(config.key_file, PathBuf::from("/home/keys/bridge.key"));
        assert!(Config::configured(&file));

        let typo = text.replace("room_id", "room");
        let file = ConfigFile::parse(Path::new("a.toml"), &typo).unwrap();
        assert!(matches!(Config::load(&file, None), Err(ConfigError::UnknownKey { .. })));
        let bad = text.replace("!room:localhost", "#alias:localhost");
        let file = ConfigFile::parse(Path::new("a.toml"), &bad).unwrap();
        assert!(matches!(Config::load(&file, None), Err(ConfigError::Invalid { .. })));
    }

    #[test]
    fn an_empty_bridge_section_is_an_error() {
        let file = ConfigFile::parse(Path::new("a.toml"), "[bridge]\nlisten = \"127.0.0.1:1\"\n").unwrap();
        assert!(Config::load(&file, None).is_err());
    }
}
