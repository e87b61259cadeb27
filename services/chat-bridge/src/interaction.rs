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
    request: Option<RequestId>,
    via: Via,
    who: String,
    reason: RefusalReason,
    detail: String,
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
    record(core, refused).await;
    response
}

/// Relays a refusal to the gate, bounded in time: the chat waits for the interaction's response
/// (Slack for three seconds), whatever NATS is doing.
async fn record(core: &Core, refused: Refused) {
    let record = core.relay.refused(
        refused.request,
        refused.via,
        &refused.who,
        refused.reason,
        refused.detail,
    );
    match tokio::time::timeout(std::time::Duration::from_secs(2), record).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::error!(error = %airlock_bus::error_text(&e), "could not record a refused interaction"),
        Err(_) => tracing::error!("recording a refused interaction timed out"),
    }
}

/// What a click on Approve or Deny gets.
pub enum Click {
    /// The reason dialog, offering "approve again" up to this long (0: not offered).
    Dialog { again_max_ms: u64 },
    /// A refusal for the one who clicked (no dialog): why, and that nothing was counted.
    Refused(String),
    /// NATS or the bucket is away.
    Unavailable(Response),
}

/// Whether a click may open the reason dialog: the request is waiting and the one who clicked
/// is on the allow-list of the policy it was asked under (the same list the answer judgement
/// checks, `AnswerPolicy::allowed`). Anyone else is refused at once, with who may answer, and
/// the attempt is recorded by the gate; the gate still judges every submitted answer itself.
/// `name` shows an identity as the chat shows a user.
pub async fn click(core: &Core, via: Via, who: &str, rid: &RequestId, name: impl Fn(&str) -> String) -> Click {
    use airlock_approvals::AnswerPolicy as _;
    let tracked = match core.store.tracked(rid).await {
        Ok(Some(tracked)) => tracked,
        Ok(None) => {
            return Click::Refused(format!(
                "request {rid} is not waiting for an answer here; nothing was counted"
            ));
        }
        Err(e) => return Click::Unavailable(Response::unavailable(&e)),
    };
    if let Some(ended) = &tracked.ended {
        return Click::Refused(format!(
            "too late: request {rid} has already ended ({}); nothing was counted",
            ended.headline()
        ));
    }
    let asked = &tracked.asked;
    let allowed = asked.allowed(&via.system, asked.level);
    if allowed.iter().any(|a| a == who) {
        return Click::Dialog {
            again_max_ms: asked.approve_again_max_ms,
        };
    }
    let who_may = if allowed.is_empty() {
        format!(
            "nobody answers it from {}; an operator can, with `airlock override`",
            via.system
        )
    } else {
        format!(
            "who may: {}",
            allowed.iter().map(|a| name(a)).collect::<Vec<_>>().join(", ")
        )
    };
    let detail = format!(
        "{who} clicked a button of request {rid} in {} {} but may not answer {} requests from {}",
        via.system, via.place, asked.level, via.system
    );
    core.counters.incr("clicks_refused");
    let refused = Refused {
        request: Some(rid.clone()),
        via,
        who: who.to_owned(),
        reason: RefusalReason::UnknownSigner,
        detail,
    };
    record(core, refused).await;
    Click::Refused(format!(
        "you may not answer request {rid} (not on the approvers' list for {} requests here); nothing was counted. {who_may}",
        asked.level
    ))
}
