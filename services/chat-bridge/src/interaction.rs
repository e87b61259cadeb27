//! What the HTTP endpoints of Slack, Discord and webhooks share: the response they send back,
//! bounds on untrusted fields, and the record of an interaction refused before it could be an
//! answer (relayed to the gate, which refuses it in the audit log).

use crate::answers::Core;
use crate::signatures::SignatureCheck;
use airlock_protocol::overrides::Via;
use airlock_protocol::{RefusalReason, RequestId};

/// An HTTP response: status, JSON body (possibly empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub body: String,
}

impl Response {
    pub fn json(value: serde_json::Value) -> Self {
        Self {
            status: 200,
            body: value.to_string(),
        }
    }
    pub fn ok_empty() -> Self {
        Self {
            status: 200,
            body: String::new(),
        }
    }
    fn error(status: u16, message: String) -> Self {
        Self {
            status,
            body: serde_json::json!({ "error": message }).to_string(),
        }
    }
    pub fn unauthorized(message: String) -> Self {
        Self::error(401, message)
    }
    pub fn bad_request(message: String) -> Self {
        Self::error(400, message)
    }
    /// NATS or the bucket is away: the sender should try again (nothing was recorded).
    pub fn unavailable(error: &(dyn std::error::Error + 'static)) -> Self {
        tracing::warn!(error = %airlock_protocol::error_chain(error), "interaction not handled: Airlock is unavailable");
        Self::error(503, "Airlock is unavailable; nothing was recorded, try again".into())
    }
}

/// An untrusted string, clipped and without control characters.
pub fn bounded(text: &str, max_bytes: usize) -> String {
    let clean: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    airlock_protocol::text::clip(&clean, max_bytes)
}

pub fn now_secs() -> i64 {
    airlock_protocol::now_ms() / 1000
}

/// An interaction refused at the edge.
pub struct Refused {
    pub request: Option<RequestId>,
    pub via: Via,
    pub who: String,
    pub reason: RefusalReason,
    pub detail: String,
}

fn fingerprint(signature: Option<&str>, body: &[u8]) -> String {
    crate::txn_id(&[signature.unwrap_or_default(), &String::from_utf8_lossy(body)])
}

impl Refused {
    pub fn signature(
        system: &'static str,
        place: &str,
        signature: Option<&str>,
        body: &[u8],
        claimed: &str,
        request: Option<RequestId>,
        check: &SignatureCheck,
    ) -> Self {
        Self {
            request,
            via: Via {
                system: system.to_owned(),
                place: place.to_owned(),
                reference: fingerprint(signature, body),
            },
            who: claimed.to_owned(),
            reason: check.reason(),
            detail: format!("{system} interaction (claiming to be from {claimed:?}): {check}"),
        }
    }

    pub fn replay(
        system: &'static str,
        place: &str,
        signature: Option<&str>,
        body: &[u8],
        claimed: &str,
        request: Option<RequestId>,
    ) -> Self {
        Self {
            request,
            via: Via {
                system: system.to_owned(),
                place: place.to_owned(),
                reference: fingerprint(signature, body),
            },
            who: claimed.to_owned(),
            reason: RefusalReason::Replayed,
            detail: format!("{system} interaction (from {claimed:?}) was already received once: a replay"),
        }
    }
}

/// Relays the refusal to the gate (so it is in the audit log) and answers the sender.
pub async fn relay_refusal(core: &Core, refused: Refused, response: Response) -> Response {
    core.counters.incr("interactions_refused");
    let record = core.relay.refused(
        refused.request,
        refused.via,
        &refused.who,
        refused.reason,
        refused.detail,
    );
    // The sender waits for this response: bounded, whatever NATS is doing.
    match tokio::time::timeout(std::time::Duration::from_secs(2), record).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::error!(error = %airlock_bus::error_text(&e), "could not record a refused interaction"),
        Err(_) => tracing::error!("recording a refused interaction timed out"),
    }
    response
}
