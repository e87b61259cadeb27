//! What the bridge keeps in its key-value bucket, so that a restart (of the bridge, the gate,
//! NATS or a chat server) loses nothing: each request it tracks (the override request, what it
//! posted where, whether it ended), an index from chat messages to requests (for replies), the
//! interactions it has seen (so a repeat counts once and a replay is refused), and each chat's
//! sync position.

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
    /// Chat systems in which the escalation was carried out.
    #[serde(default)]
    pub escalated_in: Vec<String>,
}

impl Tracked {
    pub fn new(request_id: RequestId, asked: OverrideAsked) -> Self {
        Self {
            request_id,
            asked,
            ended: None,
            posts: vec![],
            approved_by: vec![],
            escalated_in: vec![],
        }
    }

    pub fn first_post(&self, system: &str) -> Option<&Posted> {
        self.posts.iter().find(|p| p.system == system && !p.escalation)
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
