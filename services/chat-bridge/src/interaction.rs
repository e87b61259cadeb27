//! What the HTTP endpoints of Slack, Discord and webhooks share: the response they send back,
//! bounds on untrusted fields, and their admission: a signed interaction is verified, checked
//! against its time window and the replay cache, or refused (relayed to the gate, which refuses it
//! in the audit log).

use crate::answers::Core;
use crate::signatures::Signer;
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
struct Refused {
    pub request: Option<RequestId>,
    pub via: Via,
    pub who: String,
    pub reason: RefusalReason,
    pub detail: String,
}

/// A signed interaction as it arrived, not yet trusted: what it claims (who, which request) is
/// kept only for the record of its refusal.
pub struct Arrived<'a> {
    pub system: &'static str,
    /// The channel, room or endpoint it came through.
    pub place: &'a str,
    pub timestamp: Option<&'a str>,
    pub signature: Option<&'a str>,
    pub body: &'a [u8],
    pub claimed: &'a str,
    pub named: Option<RequestId>,
}

impl Arrived<'_> {
    fn refused(self, reason: RefusalReason, detail: String) -> Refused {
        Refused {
            via: Via {
                system: self.system.to_owned(),
                place: self.place.to_owned(),
                reference: crate::txn_id(&[self.signature.unwrap_or_default(), &String::from_utf8_lossy(self.body)]),
            },
            who: self.claimed.to_owned(),
            request: self.named,
            reason,
            detail,
        }
    }
}

/// The one way a signed interaction gets in, for every chat: its signature and time window
/// checked as the chat documents them, then the replay cache (a signature is accepted once).
/// A refusal is relayed to the gate, so it is in the audit log, and `Err` carries the 401 to send
/// back; NATS being away is a 503 and records nothing.
pub async fn admit(core: &Core, signer: Signer<'_>, arrived: Arrived<'_>) -> Result<(), Response> {
    let system = arrived.system;
    let claimed = arrived.claimed;
    if let Err(check) = signer.verify(arrived.timestamp, arrived.signature, arrived.body, now_secs()) {
        let detail = format!("{system} interaction (claiming to be from {claimed:?}): {check}");
        let refused = arrived.refused(check.reason(), detail);
        return Err(relay_refusal(core, refused, Response::unauthorized(signer.refusal_text(&check))).await);
    }
    match core
        .store
        .first_sight(system, arrived.signature.unwrap_or_default())
        .await
    {
        Ok(true) => Ok(()),
        Ok(false) => {
            let detail = format!("{system} interaction (from {claimed:?}) was already received once: a replay");
            let refused = arrived.refused(RefusalReason::Replayed, detail);
            Err(relay_refusal(core, refused, Response::unauthorized("replayed request".into())).await)
        }
        Err(e) => Err(Response::unavailable(&e)),
    }
}

/// Relays the refusal to the gate (so it is in the audit log) and answers the sender.
async fn relay_refusal(core: &Core, refused: Refused, response: Response) -> Response {
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
