//! Discord, through its REST API (channel messages) and its interactions endpoint: each request
//! is posted with Approve and Deny buttons; a click answers with a modal asking for the reason
//! (and, where the policy allows, how long to approve this exact code again); the modal's
//! submission is the answer. Every interaction is checked as Discord documents: an Ed25519
//! signature by the application's key over the timestamp and the body; PING is answered with
//! PONG; a forged, stale or replayed interaction gets 401 and is recorded.

use crate::adapter::{Adapter, ChatError, ChatResult, http_client, json_reply};
use crate::answers::{Core, Incoming};
use crate::command::Command;
use crate::config::{DiscordConfig, read_secret};
use crate::interaction::{Arrived, Click, Response, admit, bounded, click};
use crate::render::{self, Message, View};
use crate::signatures::Signer;
use airlock_protocol::RequestId;
use airlock_protocol::overrides::Via;
use serde_json::{Value, json};
use std::time::Duration;

const SYSTEM: &str = "discord";

// Interaction and response types, as Discord numbers them.
const PING: u64 = 1;
const MESSAGE_COMPONENT: u64 = 3;
const MODAL_SUBMIT: u64 = 5;
const PONG: u64 = 1;
const CHANNEL_MESSAGE_WITH_SOURCE: u64 = 4;
const MODAL: u64 = 9;
/// Message flag: only the user who interacted sees the reply.
const EPHEMERAL: u64 = 1 << 6;

pub struct Discord {
    config: DiscordConfig,
    token: String,
    public_key: ed25519_dalek::VerifyingKey,
    http: reqwest::Client,
}

fn err(source: reqwest::Error) -> ChatError {
    ChatError::Http { system: SYSTEM, source }
}

impl Discord {
    pub fn new(config: DiscordConfig) -> Result<Self, ChatError> {
        let token = read_secret(&config.bot_token_file).map_err(|source| ChatError::Secret {
            system: SYSTEM,
            what: config.bot_token_file.display().to_string(),
            source,
        })?;
        let public_key = crate::signatures::parse_ed25519_public(&config.public_key).ok_or_else(|| ChatError::Api {
            system: SYSTEM,
            error: "bridge.discord.public_key is not an Ed25519 public key".into(),
        })?;
        Ok(Self {
            config,
            token,
            public_key,
            http: http_client(),
        })
    }

    async fn call(&self, request: reqwest::RequestBuilder, body: Value) -> Result<Value, ChatError> {
        let response = request
            .header("authorization", format!("Bot {}", self.token))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(err)?;
        json_reply(SYSTEM, response).await
    }

    /// Who the bot token belongs to (`GET /users/@me`): its user name and id, or Discord's
    /// refusal (401 for a token that is not valid).
    pub async fn verify(&self) -> Result<String, ChatError> {
        let url = format!("{}/users/@me", self.config.api_base.trim_end_matches('/'));
        let response = self
            .http
            .get(url)
            .header("authorization", format!("Bot {}", self.token))
            .send()
            .await
            .map_err(err)?;
        let me = json_reply(SYSTEM, response).await?;
        Ok(format!(
            "the token is the bot {} ({})",
            me["username"].as_str().unwrap_or("?"),
            me["id"].as_str().unwrap_or("?")
        ))
    }

    fn messages_url(&self, channel: &str) -> String {
        format!(
            "{}/channels/{}/messages",
            self.config.api_base.trim_end_matches('/'),
            percent_encoding::utf8_percent_encode(channel, percent_encoding::NON_ALPHANUMERIC)
        )
    }

    /// Handles one interaction (`POST` of JSON).
    pub async fn interaction(
        &self,
        core: &Core,
        timestamp: Option<&str>,
        signature: Option<&str>,
        body: &[u8],
    ) -> Response {
        let payload: Value = serde_json::from_slice(body).unwrap_or_default();
        let claimed = bounded(user_of(&payload), 32);
        let place = bounded(payload["channel_id"].as_str().unwrap_or(&self.config.channel_id), 32);
        let named = request_named(&payload);
        let arrived = Arrived {
            system: SYSTEM,
            place: &place,
            timestamp,
            signature,
            body,
            claimed: &claimed,
            named,
        };
        if let Err(refusal) = admit(core, Signer::Discord(&self.public_key), arrived).await {
            return refusal;
        }
        match payload["type"].as_u64() {
            Some(PING) => Response::json(json!({ "type": PONG })),
            Some(MESSAGE_COMPONENT) => self.button(core, &payload).await,
            Some(MODAL_SUBMIT) => self.submission(core, &payload, &place).await,
            _ => Response::bad_request("unsupported interaction type".into()),
        }
    }

    /// A button: answers with the reason modal.
    async fn button(&self, core: &Core, payload: &Value) -> Response {
        let custom_id = payload["data"]["custom_id"].as_str().unwrap_or_default();
        let Some((approve, rid)) = parse_custom_id(custom_id, "airlock:") else {
            return ephemeral("this button is not one of Airlock's");
        };
        let via = Via {
            system: SYSTEM.to_owned(),
            place: bounded(payload["channel_id"].as_str().unwrap_or(&self.config.channel_id), 32),
            reference: bounded(payload["message"]["id"].as_str().unwrap_or_default(), 32),
        };
        let again_max = match click(core, via, &bounded(user_of(payload), 32), &rid, render::discord::who).await {
            Click::Dialog { again_max_ms } => again_max_ms,
            Click::Unavailable(response) => return response,
            // Only the one who clicked sees it; no dialog opens.
            Click::Refused(why) => return ephemeral(&why),
        };
        let verb = if approve { "approve" } else { "deny" };
        let mut rows = vec![json!({
            "type": 1,
            "components": [{
                "type": 4,
                "custom_id": "reason",
                "label": "Reason (recorded in the audit log)",
                "style": 2,
                "min_length": 1,
                "max_length": crate::command::MAX_REASON_CHARS,
                "required": true,
            }],
        })];
        if approve && again_max > 0 {
            rows.push(json!({
                "type": 1,
                "components": [{
                    "type": 4,
                    "custom_id": "again",
                    "label": "Approve this exact code again for (e.g. 4h)",
                    "style": 1,
                    "max_length": 16,
                    "required": false,
                }],
            }));
        }
        let title = if approve { "Approve request" } else { "Deny request" };
        Response::json(json!({
            "type": MODAL,
            "data": {
                "custom_id": format!("airlock:answer:{verb}:{rid}"),
                "title": title,
                "components": rows,
            },
        }))
    }

    /// The modal's submission: the answer.
    async fn submission(&self, core: &Core, payload: &Value, place: &str) -> Response {
        let custom_id = payload["data"]["custom_id"].as_str().unwrap_or_default();
        let Some((approve, rid)) = parse_custom_id(custom_id, "airlock:answer:") else {
            return ephemeral("this form is not one of Airlock's");
        };
        let field = |name: &str| -> String {
            let value = payload["data"]["components"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|row| row["components"].as_array().into_iter().flatten())
                .find(|c| c["custom_id"] == name)
                .and_then(|c| c["value"].as_str())
                .unwrap_or_default();
            bounded(value, 2000)
        };
        let reason = field("reason");
        let again_text = field("again");
        let again = if again_text.trim().is_empty() {
            None
        } else {
            match humantime::parse_duration(again_text.trim()) {
                Ok(d) if approve && !d.is_zero() => Some(d),
                _ => {
                    return ephemeral(&format!(
                        "`{again_text}` is not a duration such as 4h; nothing was recorded"
                    ));
                }
            }
        };
        let incoming = Incoming {
            system: SYSTEM,
            place: place.to_owned(),
            reference: format!(
                "interaction:{}",
                bounded(payload["id"].as_str().unwrap_or_default(), 32)
            ),
            who: bounded(user_of(payload), 32),
            command: Command {
                approve,
                target: None,
                reason,
                again,
            },
            bound_to: Some(rid),
        };
        match tokio::time::timeout(Duration::from_millis(2500), core.answer(incoming)).await {
            Ok(Ok(reply)) => ephemeral_message(&reply.message),
            Ok(Err(e)) => Response::unavailable(&e),
            Err(_) => ephemeral("Airlock did not confirm in time; try again (an answer given twice counts once)"),
        }
    }
}

/// The user id of an interaction: `member.user` in a server, `user` in a direct message.
fn user_of(payload: &Value) -> &str {
    payload["member"]["user"]["id"]
        .as_str()
        .or_else(|| payload["user"]["id"].as_str())
        .unwrap_or_default()
}

fn request_named(payload: &Value) -> Option<RequestId> {
    let custom_id = payload["data"]["custom_id"].as_str()?;
    let rid = custom_id.rsplit(':').next()?;
    RequestId::parse_client(rid).ok()
}

/// `<prefix>approve:<rid>` or `<prefix>deny:<rid>`.
fn parse_custom_id(custom_id: &str, prefix: &str) -> Option<(bool, RequestId)> {
    let rest = custom_id.strip_prefix(prefix)?;
    let (verb, rid) = rest.split_once(':')?;
    let approve = match verb {
        "approve" => true,
        "deny" => false,
        _ => return None,
    };
    Some((approve, RequestId::parse_client(rid).ok()?))
}

fn ephemeral(text: &str) -> Response {
    Response::json(json!({
        "type": CHANNEL_MESSAGE_WITH_SOURCE,
        "data": {
            "content": airlock_protocol::text::clip(text, 1900),
            "flags": EPHEMERAL,
            "allowed_mentions": { "parse": [] },
        },
    }))
}

/// A reply only the user who interacted sees.
fn ephemeral_message(message: &Message) -> Response {
    let (content, embeds) = render::discord::render(message);
    Response::json(json!({
        "type": CHANNEL_MESSAGE_WITH_SOURCE,
        "data": {
            "content": content,
            "embeds": embeds,
            "flags": EPHEMERAL,
            "allowed_mentions": { "parse": [] },
        },
    }))
}

fn buttons(message: &Message) -> Value {
    let Some(rid) = &message.buttons else {
        return json!([]);
    };
    json!([{
        "type": 1,
        "components": [
            { "type": 2, "style": 3, "label": "Approve…", "custom_id": format!("airlock:approve:{rid}") },
            { "type": 2, "style": 4, "label": "Deny…", "custom_id": format!("airlock:deny:{rid}") },
        ],
    }])
}

/// The JSON body of a message.
fn body(message: &Message) -> Value {
    let (content, embeds) = render::discord::render(message);
    json!({
        "content": content,
        "embeds": embeds,
        "components": buttons(message),
        "allowed_mentions": render::discord::allowed_mentions(message),
    })
}

impl Adapter for Discord {
    fn system(&self) -> &'static str {
        SYSTEM
    }

    fn place(&self) -> &str {
        &self.config.channel_id
    }

    fn post_request<'a>(
        &'a self,
        place: &'a str,
        _view: &'a View<'a>,
        message: &'a Message,
        now_ms: i64,
        txn: &'a str,
    ) -> ChatResult<'a, String> {
        self.post(place, None, message, now_ms, txn)
    }

    fn edit_request<'a>(
        &'a self,
        place: &'a str,
        id: &'a str,
        _view: &'a View<'a>,
        message: &'a Message,
        _now_ms: i64,
        _txn: &'a str,
    ) -> ChatResult<'a, ()> {
        Box::pin(async move {
            let url = format!(
                "{}/{}",
                self.messages_url(place),
                percent_encoding::utf8_percent_encode(id, percent_encoding::NON_ALPHANUMERIC)
            );
            self.call(self.http.patch(url), body(message)).await.map(|_| ())
        })
    }

    fn post<'a>(
        &'a self,
        place: &'a str,
        reply_to: Option<&'a str>,
        message: &'a Message,
        _now_ms: i64,
        _txn: &'a str,
    ) -> ChatResult<'a, String> {
        Box::pin(async move {
            let mut body = body(message);
            if let Some(original) = reply_to {
                body["message_reference"] = json!({ "message_id": original, "fail_if_not_exists": false });
            }
            let reply = self.call(self.http.post(self.messages_url(place)), body).await?;
            match reply["id"].as_str() {
                Some(id) => Ok(id.to_owned()),
                None => Err(ChatError::Api {
                    system: SYSTEM,
                    error: "no message id in the reply".into(),
                }),
            }
        })
    }
}
