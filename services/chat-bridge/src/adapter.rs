//! The one interface every chat system implements: post a request's message, edit it when the
//! request changes or ends, and say something about it to the humans (a reply to an answer, an
//! escalation, a result). Incoming answers do not go through this trait: each system delivers them its
//! own way (Matrix by sync, the others to the bridge's HTTP endpoints) into [`crate::answers`].

use crate::render::{Message, View};
use futures::future::BoxFuture;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    #[error("{system}: reaching the chat server")]
    Http {
        system: &'static str,
        #[source]
        source: reqwest::Error,
    },
    #[error("{system}: the chat server answered {status}: {body}")]
    Status {
        system: &'static str,
        status: u16,
        body: String,
    },
    #[error("{system}: rate-limited; retry in {retry_after:?}")]
    RateLimited {
        system: &'static str,
        retry_after: Duration,
    },
    #[error("{system}: the API refused the call: {error}")]
    Api { system: &'static str, error: String },
    #[error("{system}: unreadable reply from the chat server")]
    Unreadable {
        system: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("{system}: reading {what}")]
    Secret {
        system: &'static str,
        what: String,
        #[source]
        source: std::io::Error,
    },
}

impl ChatError {
    /// How long to wait before trying again, if the server said.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ChatError::RateLimited { retry_after, .. } => Some(*retry_after),
            _ => None,
        }
    }
}

impl airlock_bus::Transience for ChatError {
    fn is_permanent(&self) -> bool {
        // A bad token or a missing room does not fix itself; outages and rate limits pass.
        matches!(
            self,
            ChatError::Status {
                status: 401 | 403 | 404,
                ..
            } | ChatError::Secret { .. }
        )
    }
}

impl ChatError {
    /// The chat refused this message for good: a 4xx other than 408 and 429 (a malformed
    /// message, a channel that does not exist, a token that is not allowed), or a Web API
    /// error that is not one of Slack's documented transient ones. Sending the same message
    /// again gets the same answer, so it is not retried.
    pub fn is_refusal(&self) -> bool {
        match self {
            // Matrix answers 403 (M_FORBIDDEN) to a bot not yet in the room, which it joins when
            // invited: asked again once it has joined, the same message goes through.
            ChatError::Status {
                system: "matrix",
                status: 403,
                ..
            } => false,
            ChatError::Status { status, .. } => (400..500).contains(status) && !matches!(status, 408 | 429),
            // Other systems' `Api` errors are replies without the id they must carry: a broken
            // proxy more likely than a refusal.
            ChatError::Api { system, error } => {
                *system == "slack"
                    && !matches!(
                        error.as_str(),
                        "internal_error" | "fatal_error" | "service_unavailable" | "request_timeout" | "ratelimited"
                    )
            }
            ChatError::Secret { .. } => true,
            ChatError::Http { .. } | ChatError::RateLimited { .. } | ChatError::Unreadable { .. } => false,
        }
    }
}

pub type ChatResult<'a, T> = BoxFuture<'a, Result<T, ChatError>>;

pub trait Adapter: Send + Sync {
    /// `matrix`, `slack`, `discord` or `webhook`: the name the gate's policy uses.
    fn system(&self) -> &'static str;
    /// Where requests are posted (room, channel, webhook name).
    fn place(&self) -> &str;
    /// Posts a request's message in `place`; returns the chat's id of the message. `txn` is the
    /// same for every attempt of one post, so chats that support it post it once.
    fn post_request<'a>(
        &'a self,
        place: &'a str,
        view: &'a View<'a>,
        message: &'a Message,
        now_ms: i64,
        txn: &'a str,
    ) -> ChatResult<'a, String>;
    /// Replaces the message `id` with the request's current state.
    fn edit_request<'a>(
        &'a self,
        place: &'a str,
        id: &'a str,
        view: &'a View<'a>,
        message: &'a Message,
        now_ms: i64,
        txn: &'a str,
    ) -> ChatResult<'a, ()>;
    /// Says something in `place`, in reply to (in the thread of) `reply_to` where the chat can,
    /// notifying the message's mentions; returns the chat's id of the message.
    fn post<'a>(
        &'a self,
        place: &'a str,
        reply_to: Option<&'a str>,
        message: &'a Message,
        now_ms: i64,
        txn: &'a str,
    ) -> ChatResult<'a, String>;
}

/// Reads a response body as JSON, or says what the server answered instead.
pub async fn json_reply(system: &'static str, response: reqwest::Response) -> Result<serde_json::Value, ChatError> {
    let status = response.status();
    if status.as_u16() == 429 {
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .map(|s| Duration::from_millis((s.clamp(0.0, 3600.0) * 1000.0) as u64));
        let body = response.bytes().await.unwrap_or_default();
        let from_body = serde_json::from_slice::<serde_json::Value>(&body).ok().and_then(|v| {
            v.get("retry_after_ms")
                .and_then(|m| m.as_u64())
                .map(Duration::from_millis)
        });
        return Err(ChatError::RateLimited {
            system,
            retry_after: retry_after.or(from_body).unwrap_or(Duration::from_secs(2)),
        });
    }
    let body = response
        .bytes()
        .await
        .map_err(|source| ChatError::Http { system, source })?;
    if !status.is_success() {
        return Err(ChatError::Status {
            system,
            status: status.as_u16(),
            body: airlock_protocol::text::clip_bytes(&body, 300),
        });
    }
    if body.is_empty() {
        return Ok(serde_json::Value::Null);
    }
    serde_json::from_slice(&body).map_err(|source| ChatError::Unreadable { system, source })
}

/// A client for chat servers: bounded time per call, no redirects followed blindly.
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(40))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap_or_default()
}
