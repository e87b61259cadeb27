//! What the bridge keeps in its key-value bucket, so that a restart (of the bridge, the gate,
//! NATS or a chat server) loses nothing: each request it tracks (the override request, what it
//! posted where, whether it ended), an index from chat messages to requests (for replies), the
//! interactions it has seen (so a repeat counts once and a replay is refused), each chat's
//! sync position, and the runs under a remembered approval still to be told about in the chat
//! the approval came from.

use crate::render::Ended;
use airlock_bus::{ClaimError, Claims};
use airlock_protocol::{OverrideAsked, RequestId};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

/// One message the bridge posted for a request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Posted {
    pub system: String,
    /// Room or channel.
    pub place: String,
    /// The chat's id of the message (Matrix event id, Slack `ts`, Discord message id).
    pub message: String,
    /// Posted by the escalation (a second post or a second place).
    #[serde(default)]
    pub escalation: bool,
    /// The message already shows how the request ended.
    #[serde(default)]
    pub shows_end: bool,
    /// What the message shows (see `outbox::fingerprint`), so it is edited only on a change.
    #[serde(default)]
    pub shown: String,
}

/// A request the bridge carries.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Tracked {
    pub request_id: RequestId,
    pub asked: OverrideAsked,
    #[serde(default)]
    pub ended: Option<Ended>,
    #[serde(default)]
    pub posts: Vec<Posted>,
    /// Approvals this bridge relayed that the gate should count (shown while two are needed).
    #[serde(default)]
    pub approved_by: Vec<String>,
    /// The same approvals as the answer judgement counts them (the person behind each).
    #[serde(default)]
    pub approvals: Vec<airlock_approvals::Approval>,
    /// Chat systems in which the escalation was carried out.
    #[serde(default)]
    pub escalated_in: Vec<String>,
    /// Chat systems that refused this request's messages for good (not tried again).
    #[serde(default)]
    pub refused_in: Vec<String>,
    /// Escalation places (`<system> <place>`) that refused the request for good: reported once,
    /// not tried again, and never in the way of the chat's main place.
    #[serde(default)]
    pub refused_places: Vec<String>,
    /// The kernel's record of the run in one line (`Observed::summary`), kept until the end
    /// is shown; the executor publishes it just before the terminal event.
    #[serde(default)]
    pub observed: Option<String>,
    /// The secret part of the link to the request's whole-code page (`code_page`); empty for
    /// records from before pages existed (no link then).
    #[serde(default)]
    pub code_token: String,
}

impl Tracked {
    pub fn new(request_id: RequestId, asked: OverrideAsked) -> Self {
        Self {
            request_id,
            asked,
            ended: None,
            posts: vec![],
            approved_by: vec![],
            approvals: vec![],
            escalated_in: vec![],
            refused_in: vec![],
            refused_places: vec![],
            observed: None,
            code_token: crate::code_page::new_token(),
        }
    }

    pub fn first_post(&self, system: &str) -> Option<&Posted> {
        self.posts.iter().find(|p| p.system == system && !p.escalation)
    }
}

/// A request that ran under a remembered approval given in a chat: posted there once.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RanAgain {
    pub request_id: RequestId,
    /// Where the remembered approval was given.
    pub system: String,
    pub place: String,
    pub ended: Ended,
    /// The request whose approval is remembered.
    pub approved_request: RequestId,
    /// The chat's id of the message, once posted.
    #[serde(default)]
    pub posted: Option<String>,
}

impl RanAgain {
    /// From a terminal event decided by a remembered approval given in a chat.
    pub fn of(request_id: &RequestId, terminal: &airlock_protocol::Terminal) -> Option<Self> {
        let decision = terminal.decision.as_ref()?;
        let airlock_protocol::Approver::Remembered {
            via: Some(via),
            approved_request,
            ..
        } = &decision.approver
        else {
            return None;
        };
        // `matrix !room:server`: the system, then the place.
        let (system, place) = via.split_once(' ')?;
        Some(Self {
            request_id: request_id.clone(),
            system: system.to_owned(),
            place: place.trim().to_owned(),
            ended: Ended::of(terminal),
            approved_request: approved_request.clone(),
            posted: None,
        })
    }
}

fn hashed(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for part in parts {
        h.update(part.as_bytes());
        h.update([0]);
    }
    hex::encode(&h.finalize()[..20])
}

fn request_key(rid: &RequestId) -> String {
    format!("req.{rid}")
}

fn again_key(rid: &RequestId) -> String {
    format!("again.{rid}")
}

#[derive(Clone)]
pub struct Store {
    claims: Claims,
}

impl Store {
    pub fn new(claims: Claims) -> Self {
        Self { claims }
    }

    pub async fn tracked(&self, rid: &RequestId) -> Result<Option<Tracked>, ClaimError> {
        Ok(self.claims.get::<Tracked>(&request_key(rid)).await?.map(|(t, _)| t))
    }

    /// Starts tracking a request; false when it was tracked already (a redelivery).
    pub async fn track(&self, tracked: &Tracked) -> Result<bool, ClaimError> {
        Ok(matches!(
            self.claims.claim(&request_key(&tracked.request_id), tracked).await?,
            airlock_bus::Claim::Won { .. }
        ))
    }

    /// Applies `change` to a tracked request, again on a concurrent change (compare-and-swap).
    /// `None` when the request is not tracked.
    pub async fn update<F>(&self, rid: &RequestId, mut change: F) -> Result<Option<Tracked>, ClaimError>
    where
        F: FnMut(&mut Tracked),
    {
        let key = request_key(rid);
        for _ in 0..32 {
            let Some((mut tracked, revision)) = self.claims.get::<Tracked>(&key).await? else {
                return Ok(None);
            };
            change(&mut tracked);
            match self.claims.update(&key, &tracked, revision).await {
                Ok(_) => return Ok(Some(tracked)),
                Err(ClaimError::Conflict { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(ClaimError::Conflict {
            bucket: airlock_protocol::roles::BRIDGE_BUCKET.to_owned(),
            key,
        })
    }

    /// Every tracked request id.
    pub async fn tracked_ids(&self) -> Result<Vec<RequestId>, ClaimError> {
        Ok(self
            .claims
            .keys()
            .await?
            .iter()
            .filter_map(|k| k.strip_prefix("req."))
            .filter_map(|r| RequestId::parse(r).ok())
            .collect())
    }

    /// Starts tracking a run under a remembered approval; false when it was already.
    pub async fn track_ran_again(&self, ran: &RanAgain) -> Result<bool, ClaimError> {
        Ok(matches!(
            self.claims.claim(&again_key(&ran.request_id), ran).await?,
            airlock_bus::Claim::Won { .. }
        ))
    }

    pub async fn ran_again(&self, rid: &RequestId) -> Result<Option<(RanAgain, u64)>, ClaimError> {
        self.claims.get::<RanAgain>(&again_key(rid)).await
    }

    /// Records where a run under a remembered approval was posted.
    pub async fn ran_again_posted(&self, ran: &RanAgain, revision: u64) -> Result<(), ClaimError> {
        match self.claims.update(&again_key(&ran.request_id), ran, revision).await {
            Ok(_) | Err(ClaimError::Conflict { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Runs under a remembered approval not yet posted.
    pub async fn ran_again_ids(&self) -> Result<Vec<RequestId>, ClaimError> {
        Ok(self
            .claims
            .keys()
            .await?
            .iter()
            .filter_map(|k| k.strip_prefix("again."))
            .filter_map(|r| RequestId::parse(r).ok())
            .collect())
    }

    /// Remembers which request a chat message belongs to (for replies).
    pub async fn index_message(&self, system: &str, message: &str, rid: &RequestId) -> Result<(), ClaimError> {
        let key = format!("msg.{}", hashed(&[system, message]));
        match self.claims.claim(&key, rid).await {
            Ok(_) => Ok(()),
            // Held already: the same message indexed before a restart.
            Err(ClaimError::Conflict { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    pub async fn request_of_message(&self, system: &str, message: &str) -> Result<Option<RequestId>, ClaimError> {
        let key = format!("msg.{}", hashed(&[system, message]));
        Ok(self.claims.get::<RequestId>(&key).await?.map(|(r, _)| r))
    }

    /// Whether an interaction was handled before (read only: see [`Store::first_sight`]).
    pub async fn seen(&self, system: &str, reference: &str) -> Result<bool, ClaimError> {
        let key = format!("seen.{}", hashed(&[system, reference]));
        Ok(self.claims.get::<i64>(&key).await?.is_some())
    }

    /// Records an interaction as seen; false when it had been seen before.
    pub async fn first_sight(&self, system: &str, reference: &str) -> Result<bool, ClaimError> {
        let key = format!("seen.{}", hashed(&[system, reference]));
        match self.claims.claim(&key, &airlock_protocol::now_ms()).await {
            Ok(airlock_bus::Claim::Won { .. }) => Ok(true),
            Ok(airlock_bus::Claim::Held { .. }) => Ok(false),
            Err(ClaimError::Conflict { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// A chat's sync position (Matrix `next_batch`).
    pub async fn position(&self, system: &str) -> Result<Option<String>, ClaimError> {
        Ok(self
            .claims
            .get::<String>(&format!("sync.{system}"))
            .await?
            .map(|(p, _)| p))
    }

    pub async fn set_position(&self, system: &str, position: &str) -> Result<(), ClaimError> {
        let key = format!("sync.{system}");
        let value = position.to_owned();
        for _ in 0..8 {
            let result = match self.claims.get::<String>(&key).await? {
                Some((_, revision)) => self.claims.update(&key, &value, revision).await.map(|_| ()),
                None => self.claims.claim(&key, &value).await.map(|_| ()),
            };
            match result {
                Err(ClaimError::Conflict { .. }) => continue,
                other => return other,
            }
        }
        Ok(())
    }
}
