//! A chat that refused a request for good (`chat_refused`, from the bridge: a room that is gone,
//! a bot removed from a channel). The gate notes it in the request's record; the refusal itself
//! is in the audit log already. When every chat the request was meant for has refused it, the
//! gate says so: to the client, as a `waiting_for_human` stage naming the chats that refused
//! (so Mai can tell its user why nobody is answering), and to the operator, as an error in the
//! log and the `no_chat` counter. The request still waits: `airlock override` can answer it, and
//! its deadline still denies it. Nothing here decides.

use super::{Gate, GateError};
use crate::records::Record;
use airlock_bus::{ClaimError, Delivery};
use airlock_protocol::subjects::GATE_BUCKET;
use airlock_protocol::{ChatRefused, Progress, RefusalReason, RequestId};

impl Gate {
    pub(super) async fn on_chat_refused(
        &self,
        delivery: &Delivery,
        rid: &RequestId,
        refused: ChatRefused,
    ) -> Result<(), GateError> {
        if let Err(error) = refused.check() {
            return self
                .refuse_message(delivery, RefusalReason::InvalidRequest, error.to_string())
                .await;
        }
        let place = refused.place.as_deref().unwrap_or("(not named)");
        if !refused.whole_chat {
            // Only an escalation place: the request's main message stands in that chat.
            tracing::warn!(system = %refused.system, place, detail = %refused.detail, "a chat refused a request's escalation");
            return Ok(());
        }
        let Some((mut record, revision)) = self.records.get::<Record>(rid.as_str()).await? else {
            return Ok(());
        };
        let Record::Pending {
            asked, chats_refused, ..
        } = &mut record
        else {
            // Decided meanwhile: nobody waits for that chat any more.
            return Ok(());
        };
        if chats_refused.contains(&refused.system) {
            return Ok(());
        }
        chats_refused.push(refused.system.clone());
        let chats_refused = chats_refused.clone();
        let posted_to: Vec<String> = asked
            .approvers
            .keys()
            .filter(|system| !chats_refused.contains(system))
            .cloned()
            .collect();
        let deadline_ms = asked.deadline_ms;
        match self.records.update(rid.as_str(), &record, revision).await {
            Ok(_) => {}
            // An answer, the deadline or a cancellation changed it meanwhile: handled again.
            Err(ClaimError::Conflict { .. }) => {
                return Err(GateError::Claims(ClaimError::Store {
                    bucket: GATE_BUCKET.to_owned(),
                    source: "the request changed while a chat's refusal was noted; noting it again".into(),
                }));
            }
            Err(e) => return Err(e.into()),
        }
        if posted_to.is_empty() {
            self.counters.incr("no_chat");
            tracing::error!(
                chats_refused = %chats_refused.join(", "),
                last = %refused.system,
                place,
                detail = %refused.detail,
                "no chat could take the override request: answer it with `airlock override approve|deny {rid}`, or it is denied at its deadline"
            );
        } else {
            tracing::warn!(system = %refused.system, place, detail = %refused.detail, still_in = %posted_to.join(", "), "a chat refused an override request; the others still have it");
        }
        self.publisher
            .progress(
                rid,
                Progress::WaitingForHuman {
                    deadline_ms,
                    posted_to,
                    chats_refused,
                },
            )
            .await;
        Ok(())
    }
}
