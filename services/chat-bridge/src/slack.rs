//! Slack, through its Web API (`chat.postMessage`, `chat.update`, `views.open`) and its
//! interactivity requests: each request is posted with Approve and Deny buttons; a click opens a
//! dialog (a modal) asking for the reason and, where the policy allows, how long to approve this
//! exact code again; the dialog's submission is the answer. Every interaction request is checked
//! as Slack documents: `v0` HMAC-SHA256 of the timestamp and body with the app's signing secret,
//! within five minutes; a forged, stale or replayed one is refused and recorded.

use crate::adapter::{Adapter, ChatError, ChatResult, http_client, json_reply};
use crate::answers::{Core, Incoming};
use crate::command::Command;
use crate::config::{SlackConfig, read_secret};
use crate::interaction::{Arrived, Click, Response, admit, bounded, click};
use crate::render::{self, Message, View};
use crate::signatures::Signer;
use airlock_protocol::RequestId;
use airlock_protocol::overrides::Via;
use serde_json::{Value, json};
use std::time::Duration;

const SYSTEM: &str = "slack";
const CALLBACK: &str = "airlock_answer";

pub struct Slack {
    config: SlackConfig,
    token: String,
    secret: String,
    http: reqwest::Client,
}

fn err(source: reqwest::Error) -> ChatError {
    ChatError::Http { system: SYSTEM, source }
}

impl Slack {
    pub fn new(config: SlackConfig) -> Result<Self, ChatError> {
        let read = |path: &std::path::Path| {
            read_secret(path).map_err(|source| ChatError::Secret {
                system: SYSTEM,
                what: path.display().to_string(),
                source,
            })
        };
        Ok(Self {
            token: read(&config.bot_token_file)?,
            secret: read(&config.signing_secret_file)?,
            config,
            http: http_client(),
        })
    }

    /// Calls a Web API method; Slack answers 200 with `ok: false` for refusals.
    async fn api(&self, method: &str, body: Value) -> Result<Value, ChatError> {
        let url = format!("{}/{method}", self.config.api_base.trim_end_matches('/'));
        let response = self
            .http
            .post(url)
            .bearer_auth(&self.token)
            .header("content-type", "application/json; charset=utf-8")
            .body(body.to_string())
            .send()
            .await
            .map_err(err)?;
        let reply = json_reply(SYSTEM, response).await?;
        if reply["ok"].as_bool() != Some(true) {
            return Err(ChatError::Api {
                system: SYSTEM,
                error: reply["error"].as_str().unwrap_or("no error given").to_owned(),
            });
        }
        Ok(reply)
    }

    /// Who the bot token belongs to (`auth.test`): "<bot user> in <workspace>", or Slack's
    /// refusal (`invalid_auth`, `token_revoked`, ...).
    pub async fn verify(&self) -> Result<String, ChatError> {
        let reply = self.api("auth.test", json!({})).await?;
        Ok(format!(
            "the token is the bot {} in {}",
            reply["user"].as_str().or(reply["user_id"].as_str()).unwrap_or("?"),
            reply["team"].as_str().unwrap_or("?")
        ))
    }

    /// Handles one interactivity request (`POST` of `payload=<json>`).
    pub async fn interaction(
        &self,
        core: &Core,
        timestamp: Option<&str>,
        signature: Option<&str>,
        body: &[u8],
    ) -> Response {
        let place = self.config.channel.clone();
        let payload: Option<Value> = serde_urlencoded::from_bytes::<Vec<(String, String)>>(body)
            .ok()
            .and_then(|fields| fields.into_iter().find(|(k, _)| k == "payload"))
            .and_then(|(_, v)| serde_json::from_str(&v).ok());
        // Who the payload claims to be, for the record of a refusal (not trusted until verified).
        let claimed = payload
            .as_ref()
            .and_then(|p| p["user"]["id"].as_str())
            .map(|s| bounded(s, 64))
            .unwrap_or_default();
        let named = payload.as_ref().and_then(request_named);
        let arrived = Arrived {
            system: SYSTEM,
            place: &place,
            timestamp,
            signature,
            body,
            claimed: &claimed,
            named,
        };
        if let Err(refusal) = admit(core, Signer::Slack(&self.secret), arrived).await {
            return refusal;
        }
        let Some(payload) = payload else {
            return Response::bad_request("no payload".into());
        };
        match payload["type"].as_str() {
            Some("block_actions") => self.button(core, &payload).await,
            Some("view_submission") if payload["view"]["callback_id"] == CALLBACK => {
                self.submission(core, &payload).await
            }
            _ => Response::ok_empty(),
        }
    }

    /// A button: opens the reason dialog (the click alone answers nothing).
    async fn button(&self, core: &Core, payload: &Value) -> Response {
        let Some(action) = payload["actions"].as_array().and_then(|a| a.first()) else {
            return Response::ok_empty();
        };
        let approve = match action["action_id"].as_str() {
            Some("airlock_approve") => true,
            Some("airlock_deny") => false,
            _ => return Response::ok_empty(),
        };
        let Some(rid) = action["value"].as_str().and_then(|v| RequestId::parse(v).ok()) else {
            return Response::bad_request("the button names no request".into());
        };
        let Some(trigger) = payload["trigger_id"].as_str() else {
            return Response::bad_request("no trigger_id".into());
        };
        let channel = bounded(
            payload["container"]["channel_id"]
                .as_str()
                .unwrap_or(&self.config.channel),
            64,
        );
        let message_ts = bounded(payload["container"]["message_ts"].as_str().unwrap_or_default(), 64);
        let who = bounded(payload["user"]["id"].as_str().unwrap_or_default(), 64);
        let via = Via {
            system: SYSTEM.to_owned(),
            place: channel.clone(),
            reference: message_ts.clone(),
        };
        let again_max = match click(core, via, &who, &rid, render::slack::who).await {
            Click::Dialog { again_max_ms } => again_max_ms,
            Click::Unavailable(response) => return response,
            Click::Refused(why) => {
                // Only the one who clicked sees it (an ephemeral message, in the request's thread).
                let refusal = json!({
                    "channel": channel,
                    "user": who,
                    "text": why,
                    "thread_ts": message_ts,
                });
                // Bounded: Slack wants the click answered within three seconds.
                let told = tokio::time::timeout(Duration::from_millis(1500), self.api("chat.postEphemeral", refusal));
                match told.await {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => {
                        tracing::warn!(error = %airlock_protocol::error_chain(&e), "could not tell a click's refusal")
                    }
                    Err(_) => tracing::warn!("telling a click's refusal timed out"),
                }
                return Response::ok_empty();
            }
        };
        let metadata = json!({
            "r": rid.as_str(),
            "a": approve,
            "c": channel,
            "m": message_ts,
        });
        let view = dialog(&rid, approve, again_max, &metadata.to_string());
        match self
            .api("views.open", json!({ "trigger_id": trigger, "view": view }))
            .await
        {
            Ok(_) => Response::ok_empty(),
            Err(e) => {
                tracing::warn!(error = %airlock_protocol::error_chain(&e), "could not open the reason dialog");
                Response::ok_empty()
            }
        }
    }

    /// The dialog's submission: the answer, with its reason.
    async fn submission(&self, core: &Core, payload: &Value) -> Response {
        let view = &payload["view"];
        let metadata: Value = view["private_metadata"]
            .as_str()
            .and_then(|m| serde_json::from_str(m).ok())
            .unwrap_or_default();
        let Some(rid) = metadata["r"].as_str().and_then(|r| RequestId::parse(r).ok()) else {
            return Response::bad_request("the dialog names no request".into());
        };
        let approve = metadata["a"].as_bool().unwrap_or(false);
        let values = &view["state"]["values"];
        let reason = bounded(values["reason"]["reason"]["value"].as_str().unwrap_or_default(), 2000);
        if reason.trim().is_empty() {
            return Response::json(
                json!({ "response_action": "errors", "errors": { "reason": "A reason is required." } }),
            );
        }
        let again = values["again"]["again"]["selected_option"]["value"]
            .as_str()
            .and_then(|v| humantime::parse_duration(v).ok())
            .filter(|d| !d.is_zero() && approve);
        let who = bounded(payload["user"]["id"].as_str().unwrap_or_default(), 64);
        let channel = bounded(metadata["c"].as_str().unwrap_or(&self.config.channel), 64);
        let message_ts = bounded(metadata["m"].as_str().unwrap_or_default(), 64);
        let incoming = Incoming {
            system: SYSTEM,
            place: channel.clone(),
            reference: format!("view:{}", bounded(view["id"].as_str().unwrap_or_default(), 64)),
            who: who.clone(),
            command: Command {
                approve,
                target: None,
                reason,
                again,
            },
            bound_to: Some(rid.clone()),
        };
        let reply = match tokio::time::timeout(Duration::from_millis(2500), core.answer(incoming)).await {
            Ok(Ok(reply)) => reply,
            Ok(Err(e)) => return Response::unavailable(&e),
            Err(_) => {
                return Response::json(json!({
                    "response_action": "errors",
                    "errors": { "reason": "Airlock did not answer in time; nothing was recorded. Try again." },
                }));
            }
        };
        let now = airlock_protocol::now_ms();
        let mut body = json!({
            "channel": channel,
            "text": render::slack::fallback(&reply.message, now),
            "blocks": render::slack::blocks(&reply.message, now),
        });
        if !message_ts.is_empty() {
            body["thread_ts"] = json!(message_ts);
        }
        if let Err(e) = self.api("chat.postMessage", body).await {
            tracing::warn!(error = %airlock_protocol::error_chain(&e), "could not reply in the thread");
        }
        Response::ok_empty()
    }
}

/// The rid a payload names, if any (for filing a refusal under its request).
fn request_named(payload: &Value) -> Option<RequestId> {
    let from_button = payload["actions"][0]["value"].as_str();
    let from_view = payload["view"]["private_metadata"]
        .as_str()
        .and_then(|m| serde_json::from_str::<Value>(m).ok())
        .and_then(|m| m["r"].as_str().map(str::to_owned));
    from_button
        .map(str::to_owned)
        .or(from_view)
        .and_then(|r| RequestId::parse_client(&r).ok())
}

/// The reason dialog.
fn dialog(rid: &RequestId, approve: bool, again_max_ms: u64, metadata: &str) -> Value {
    let verb = if approve { "Approve" } else { "Deny" };
    let mut blocks = vec![
        json!({
            "type": "section",
            "text": { "type": "mrkdwn", "text": format!("{verb} request `{rid}`") },
        }),
        json!({
            "type": "input",
            "block_id": "reason",
            "label": { "type": "plain_text", "text": "Reason (recorded in the audit log)" },
            "element": {
                "type": "plain_text_input",
                "action_id": "reason",
                "multiline": true,
                "min_length": 1,
                "max_length": crate::command::MAX_REASON_CHARS,
            },
        }),
    ];
    if approve && again_max_ms > 0 {
        let options: Vec<Value> = ["1h", "4h", "8h", "24h"]
            .iter()
            .filter(|d| humantime::parse_duration(d).is_ok_and(|d| d.as_millis() <= u128::from(again_max_ms)))
            .map(|d| json!({ "text": { "type": "plain_text", "text": format!("for {d}") }, "value": d }))
            .collect();
        if !options.is_empty() {
            blocks.push(json!({
                "type": "input",
                "block_id": "again",
                "optional": true,
                "label": { "type": "plain_text", "text": "Approve this exact code again without asking" },
                "element": { "type": "static_select", "action_id": "again", "options": options },
            }));
        }
    }
    json!({
        "type": "modal",
        "callback_id": CALLBACK,
        "private_metadata": metadata,
        "title": { "type": "plain_text", "text": format!("{verb} request") },
        "submit": { "type": "plain_text", "text": verb },
        "close": { "type": "plain_text", "text": "Cancel" },
        "blocks": blocks,
    })
}

impl Adapter for Slack {
    fn system(&self) -> &'static str {
        SYSTEM
    }

    fn place(&self) -> &str {
        &self.config.channel
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
        now_ms: i64,
        _txn: &'a str,
    ) -> ChatResult<'a, ()> {
        Box::pin(async move {
            let body = json!({
                "channel": place,
                "ts": id,
                "text": render::slack::fallback(message, now_ms),
                "blocks": render::slack::blocks(message, now_ms),
            });
            self.api("chat.update", body).await.map(|_| ())
        })
    }

    fn post<'a>(
        &'a self,
        place: &'a str,
        reply_to: Option<&'a str>,
        message: &'a Message,
        now_ms: i64,
        _txn: &'a str,
    ) -> ChatResult<'a, String> {
        Box::pin(async move {
            let mut body = json!({
                "channel": place,
                "text": render::slack::fallback(message, now_ms),
                "blocks": render::slack::blocks(message, now_ms),
                "unfurl_links": false,
                "unfurl_media": false,
            });
            if let Some(ts) = reply_to {
                body["thread_ts"] = json!(ts);
            }
            let reply = self.api("chat.postMessage", body).await?;
            match reply["ts"].as_str() {
                Some(ts) => Ok(ts.to_owned()),
                None => Err(ChatError::Api {
                    system: SYSTEM,
                    error: "no ts in the reply".into(),
                }),
            }
        })
    }
}
