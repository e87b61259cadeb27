//! The operator's view of remembered approvals: list them (each with whether it still holds
//! under the policy in force), and revoke one or all, each revocation audited as an
//! `approval_revoked` event under the request whose approval it was.

use super::{Gate, GateError};
use crate::remembered::{self, KEY_PREFIX, Remembered};
use airlock_protocol::{ApprovalRevoked, Event, RememberedApproval, RevokeRemembered, now_ms};
use futures::StreamExt as _;
use std::sync::Arc;

impl Gate {
    /// Every remembered approval, soonest to lapse first.
    async fn remembered_approvals(&self) -> Result<Vec<Remembered>, GateError> {
        let mut all = Vec::new();
        for key in self.records.keys().await? {
            if !key.starts_with(KEY_PREFIX) {
                continue;
            }
            match self.records.get::<Remembered>(&key).await {
                Ok(Some((remembered, _))) => all.push(remembered),
                Ok(None) => {}
                Err(e) => tracing::warn!(key, error = %e, "unreadable remembered approval"),
            }
        }
        all.sort_by_key(|r| r.until_ms);
        Ok(all)
    }

    async fn list_remembered(&self) -> Result<Vec<RememberedApproval>, GateError> {
        let (trust, _) = self.current.get();
        let now = now_ms();
        Ok(self
            .remembered_approvals()
            .await?
            .into_iter()
            .map(|r| {
                // Whether it would be used now for a request rated as it was.
                let void = remembered::still_holds(&r, r.level, &trust.policy, |k| trust.trusts(k), now)
                    .err()
                    .map(|v| v.to_string());
                RememberedApproval {
                    approvers: r
                        .approvers
                        .iter()
                        .map(|a| match &a.via {
                            Some(via) => format!("{} ({via})", a.who),
                            None => a.who.clone(),
                        })
                        .collect(),
                    reason: r.approvers.first().map(|a| a.reason.clone()).unwrap_or_default(),
                    id: r.id,
                    execution_digest: r.execution_digest,
                    code_digest: r.code_digest,
                    level: r.level,
                    approved_request: r.approved_request,
                    label: r.label,
                    client: r.client,
                    remembered_at_ms: r.remembered_at_ms,
                    until_ms: r.until_ms,
                    void,
                }
            })
            .collect())
    }

    /// Revokes the approvals `revoke` names (one, by id or unambiguous prefix, or all); returns
    /// the ids revoked. Each revocation is published for the audit log before it is deleted.
    async fn revoke(&self, revoke: &RevokeRemembered) -> Result<Vec<String>, RevokeError> {
        if revoke.who.trim().is_empty() || revoke.reason.trim().is_empty() {
            return Err(RevokeError::Usage("a revocation needs who and a reason".into()));
        }
        let all = self.remembered_approvals().await.map_err(RevokeError::Gate)?;
        let chosen: Vec<Remembered> = match (&revoke.id, revoke.all) {
            (None, true) => all,
            (Some(id), false) => {
                let id = id.trim().to_ascii_lowercase();
                let matching: Vec<Remembered> = all.into_iter().filter(|r| r.id.starts_with(&id)).collect();
                match matching.len() {
                    0 => return Err(RevokeError::Usage(format!("no remembered approval {id}"))),
                    1 => matching,
                    n => {
                        let ids: Vec<&str> = matching.iter().map(|r| r.id.as_str()).collect();
                        return Err(RevokeError::Usage(format!(
                            "{id} names {n} remembered approvals ({}); give more of the id",
                            ids.join(", ")
                        )));
                    }
                }
            }
            _ => return Err(RevokeError::Usage("name one approval by its id, or all".into())),
        };
        let mut revoked = Vec::new();
        for remembered in chosen {
            let event = Event::ApprovalRevoked(ApprovalRevoked {
                id: remembered.id.clone(),
                execution_digest: remembered.execution_digest.clone(),
                who: airlock_protocol::text::clip(&revoke.who, 256),
                reason: airlock_protocol::text::clip(&revoke.reason, 1024),
            });
            self.publisher
                .emit(&remembered.approved_request, event)
                .await
                .map_err(|e| RevokeError::Gate(e.into()))?;
            self.records
                .remove(&Remembered::key_of(&remembered.execution_digest))
                .await
                .map_err(|e| RevokeError::Gate(e.into()))?;
            self.counters.incr("approvals_revoked");
            tracing::info!(id = %remembered.id, who = %revoke.who, "remembered approval revoked");
            revoked.push(remembered.id);
        }
        Ok(revoked)
    }
}

#[derive(Debug, thiserror::Error)]
enum RevokeError {
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Gate(GateError),
}

pub(super) async fn serve_list(gate: Arc<Gate>, mut endpoint: async_nats::service::endpoint::Endpoint) {
    while let Some(request) = endpoint.next().await {
        let reply = match gate.list_remembered().await {
            Ok(list) => Ok(serde_json::to_vec(&list).unwrap_or_default().into()),
            Err(e) => Err(async_nats::service::error::Error {
                status: airlock_bus::error_text(&e),
                code: 503,
            }),
        };
        if let Err(e) = request.respond(reply).await {
            tracing::debug!(error = %e, "remembered list reply failed");
        }
    }
}

pub(super) async fn serve_revoke(gate: Arc<Gate>, mut endpoint: async_nats::service::endpoint::Endpoint) {
    while let Some(request) = endpoint.next().await {
        let reply = match serde_json::from_slice::<RevokeRemembered>(&request.message.payload) {
            Err(e) => Err(async_nats::service::error::Error {
                status: format!("not a revocation: {e}"),
                code: 400,
            }),
            Ok(revoke) => match gate.revoke(&revoke).await {
                Ok(ids) => Ok(serde_json::to_vec(&ids).unwrap_or_default().into()),
                Err(RevokeError::Usage(status)) => Err(async_nats::service::error::Error { status, code: 400 }),
                Err(RevokeError::Gate(e)) => Err(async_nats::service::error::Error {
                    status: airlock_bus::error_text(&e),
                    code: 503,
                }),
            },
        };
        if let Err(e) = request.respond(reply).await {
            tracing::debug!(error = %e, "revoke reply failed");
        }
    }
}
