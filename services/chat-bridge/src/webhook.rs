//! A generic signed webhook, so that any other system (a paging service, an internal tool) can
//! take override requests and answer them without new code.
//!
//! Out: `POST <url>` with a JSON body — `{"type": "override_asked" | "override_updated" |
//! "override_ended" | "notice" | "test", "request_id", "text", ...}` — and the headers
//! `X-Airlock-Timestamp` (Unix seconds) and `X-Airlock-Signature` (`v1=<hex HMAC-SHA256 of
//! "<timestamp>.<body>">` with the shared secret, or `ed25519=<base64 signature of the same>` by
//! the bridge's key).
//!
//! In: `POST /webhook/answer` with `{"request_id", "approve", "reason", "who",
//! "approve_again_for"?}`, signed the same way (by the shared secret, or by the receiver's own
//! Ed25519 key), within five minutes; a forged, stale or replayed answer gets 401 and is recorded.

use crate::adapter::{Adapter, ChatError, ChatResult, http_client, json_reply};
use crate::answers::{Core, Incoming};
use crate::command::Command;
use crate::config::{WebhookConfig, WebhookSigning, read_secret};
use crate::interaction::{Arrived, Response, admit, bounded, now_secs};
use crate::render::{self, Message, View};
use crate::signatures::{Signer, webhook_ed25519_sign, webhook_hmac_sign};
use airlock_protocol::{RequestId, SigningKey};
use serde_json::{Value, json};
use std::time::Duration;

const SYSTEM: &str = "webhook";

pub struct Webhook {
    config: WebhookConfig,
    secret: Option<String>,
    answer_key: Option<ed25519_dalek::VerifyingKey>,
    bridge_key: SigningKey,
    http: reqwest::Client,
}

impl Webhook {
    pub fn new(config: WebhookConfig, bridge_key: SigningKey) -> Result<Self, ChatError> {
        let secret = match &config.secret_file {
            Some(path) => Some(read_secret(path).map_err(|source| ChatError::Secret {
                system: SYSTEM,
                what: path.display().to_string(),
                source,
            })?),
            None => None,
        };
        let answer_key = config
            .answer_public_key
            .as_deref()
            .and_then(crate::signatures::parse_ed25519_public);
        Ok(Self {
            config,
            secret,
            answer_key,
            bridge_key,
            http: http_client(),
        })
    }

    fn name(&self) -> &str {
        if self.config.name.is_empty() {
            "webhook"
        } else {
            &self.config.name
        }
    }

    /// Signs and POSTs one JSON body.
    async fn send(&self, body: Value) -> Result<Value, ChatError> {
        let bytes = body.to_string().into_bytes();
        let timestamp = now_secs().to_string();
        let signature = match (self.config.signing, &self.secret) {
            (WebhookSigning::HmacSha256, Some(secret)) => webhook_hmac_sign(secret, &timestamp, &bytes),
            _ => webhook_ed25519_sign(&self.bridge_key, &timestamp, &bytes),
        };
        let response = self
            .http
            .post(&self.config.url)
            .header("content-type", "application/json")
            .header("x-airlock-timestamp", &timestamp)
            .header("x-airlock-signature", signature)
            .body(bytes)
            .send()
            .await
            .map_err(|source| ChatError::Http { system: SYSTEM, source })?;
        json_reply(SYSTEM, response).await
    }

    fn signer(&self) -> Option<Signer<'_>> {
        match self.config.signing {
            WebhookSigning::HmacSha256 => self.secret.as_deref().map(Signer::WebhookHmac),
            WebhookSigning::Ed25519 => self.answer_key.as_ref().map(Signer::WebhookEd25519),
        }
    }

    /// Handles one signed answer.
    pub async fn answer(&self, core: &Core, timestamp: Option<&str>, signature: Option<&str>, body: &[u8]) -> Response {
        let payload: Value = serde_json::from_slice(body).unwrap_or_default();
        let claimed = bounded(payload["who"].as_str().unwrap_or_default(), 256);
        let named = payload["request_id"]
            .as_str()
            .and_then(|r| RequestId::parse_client(r).ok());
        let place = self.name().to_owned();
        let Some(signer) = self.signer() else {
            return Response::unavailable(&ChatError::Api {
                system: SYSTEM,
                error: "no key to check answers with".into(),
            });
        };
        let arrived = Arrived {
            system: SYSTEM,
            place: &place,
            timestamp,
            signature,
            body,
            claimed: &claimed,
            named: named.clone(),
        };
        if let Err(refusal) = admit(core, signer, arrived).await {
            return refusal;
        }
        let Some(rid) = named else {
            return Response::bad_request("request_id is missing or not a request id".into());
        };
        let Some(approve) = payload["approve"].as_bool() else {
            return Response::bad_request("approve must be true or false".into());
        };
        if claimed.trim().is_empty() {
            return Response::bad_request("who is required".into());
        }
        let again = match payload["approve_again_for"].as_str() {
            None => None,
            Some(text) => match humantime::parse_duration(text) {
                Ok(d) if approve && !d.is_zero() => Some(d),
                _ => {
                    return Response::bad_request(
                        "approve_again_for must be a duration such as \"4h\", with an approval".into(),
                    );
                }
            },
        };
        let incoming = Incoming {
            system: SYSTEM,
            place,
            reference: format!(
                "answer:{}",
                bounded(
                    payload["id"]
                        .as_str()
                        .unwrap_or(&crate::txn_id(&[signature.unwrap_or_default()])),
                    64
                )
            ),
            who: claimed,
            command: Command {
                approve,
                target: None,
                reason: bounded(payload["reason"].as_str().unwrap_or_default(), 2000),
                again,
            },
            bound_to: Some(rid.clone()),
        };
        match tokio::time::timeout(Duration::from_secs(5), core.answer(incoming)).await {
            Ok(Ok(reply)) => Response::json(json!({
                "request_id": rid.as_str(),
                "relayed": reply.relayed,
                "accepted": reply.accepted,
                "message": reply.text(),
            })),
            Ok(Err(e)) => Response::unavailable(&e),
            Err(_) => Response::unavailable(&ChatError::Api {
                system: SYSTEM,
                error: "the gate did not confirm in time".into(),
            }),
        }
    }

    /// What every outgoing body about a request carries. `text` is what a person reads (the
    /// requester's label and code in it are quoted data); `asked` is the request as the gate
    /// described it, for programs: its `label`, `code_preview`, `inputs` and findings' snippets
    /// are the requester's own text, to be shown as data.
    fn about(kind: &str, view: &View<'_>, message: &Message, now_ms: i64) -> Value {
        json!({
            "type": kind,
            "request_id": view.request_id.as_str(),
            "text": render::plain::render(message, now_ms, MAX_TEXT),
            "asked": view.asked,
            "approved_by": view.approved_by,
            "ended": view.ended,
            "answer": {
                "path": "/webhook/answer",
                "fields": ["request_id", "approve", "reason", "who", "approve_again_for"],
            },
        })
    }
}

/// Longest `text` of an outgoing body.
const MAX_TEXT: usize = 32 * 1024;

impl Adapter for Webhook {
    fn system(&self) -> &'static str {
        SYSTEM
    }

    fn place(&self) -> &str {
        self.name()
    }

    fn post_request<'a>(
        &'a self,
        _place: &'a str,
        view: &'a View<'a>,
        message: &'a Message,
        now_ms: i64,
        txn: &'a str,
    ) -> ChatResult<'a, String> {
        Box::pin(async move {
            let mut body = Self::about("override_asked", view, message, now_ms);
            body["delivery"] = json!(txn);
            self.send(body).await?;
            Ok(format!("{}:{}", view.request_id, txn))
        })
    }

    fn edit_request<'a>(
        &'a self,
        _place: &'a str,
        _id: &'a str,
        view: &'a View<'a>,
        message: &'a Message,
        now_ms: i64,
        txn: &'a str,
    ) -> ChatResult<'a, ()> {
        Box::pin(async move {
            let kind = if view.ended.is_some() {
                "override_ended"
            } else {
                "override_updated"
            };
            let mut body = Self::about(kind, view, message, now_ms);
            body["delivery"] = json!(txn);
            self.send(body).await.map(|_| ())
        })
    }

    fn post<'a>(
        &'a self,
        _place: &'a str,
        reply_to: Option<&'a str>,
        message: &'a Message,
        now_ms: i64,
        txn: &'a str,
    ) -> ChatResult<'a, String> {
        Box::pin(async move {
            self.send(json!({
                "type": "notice",
                "text": render::plain::render(message, now_ms, MAX_TEXT),
                "mention": message.mentions,
                "in_reply_to": reply_to,
                "delivery": txn,
            }))
            .await?;
            Ok(format!("notice:{txn}"))
        })
    }
}
