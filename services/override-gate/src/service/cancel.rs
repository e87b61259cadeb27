//! A client's cancellation, while the request is the gate's: not yet decided (being assessed)
//! or waiting for a human. Either way the request's record turns into a `cancelled` terminal
//! with compare-and-swap, so that exactly one of the cancellation, an answer and the deadline
//! wins; the override request is withdrawn (its chat message is edited at the terminal event).
//! Once the gate has decided, the request is the executor's, which stops it there.

use super::{Gate, GateError};
use crate::records::Record;
use airlock_bus::{ClaimError, Delivery};
use airlock_protocol::subjects::GATE_BUCKET;
use airlock_protocol::{CancelRequest, Event, Outcome, RefusalReason, RequestId, Terminal};

impl Gate {
    pub(super) async fn on_cancel(
        &self,
        delivery: &Delivery,
        rid: &RequestId,
        cancel: CancelRequest,
    ) -> Result<(), GateError> {
        if let Err(error) = cancel.check() {
            return self
                .refuse_message(delivery, RefusalReason::InvalidRequest, error.to_string())
                .await;
        }
        let mut terminal = Terminal::without_run(Outcome::Cancelled, cancel.ended_reason(rid));
        match self.records.get::<Record>(rid.as_str()).await? {
            // Not assessed yet (or never submitted): the record is claimed as cancelled, and an
            // assessment arriving later finds the request over.
            None => {
                self.counters.incr("cancelled");
                tracing::info!("cancelled by its client before a decision");
                self.commit(rid, vec![Event::Terminal(Box::new(terminal))]).await
            }
            Some((Record::Pending { assessment, .. }, revision)) => {
                terminal.level = Some(assessment.level);
                terminal.findings = assessment.findings.clone();
                let events = vec![Event::Terminal(Box::new(terminal))];
                let decided = Record::Decided {
                    events: events.clone(),
                    published: false,
                };
                match self.records.update(rid.as_str(), &decided, revision).await {
                    Ok(revision) => {
                        self.counters.incr("cancelled");
                        tracing::info!("cancelled by its client while waiting for a human");
                        self.deadlines.lock().unwrap_or_else(|p| p.into_inner()).remove(rid);
                        self.publish_decided(rid, events, revision).await
                    }
                    // An answer or the deadline decided meanwhile: that decision stands, and the
                    // executor stops the run if it is one. Handled again to see which.
                    Err(ClaimError::Conflict { .. }) => Err(GateError::Claims(ClaimError::Store {
                        bucket: GATE_BUCKET.to_owned(),
                        source: "the request changed while a cancellation was handled; handling it again".into(),
                    })),
                    Err(e) => Err(e.into()),
                }
            }
            // Decided: an approval is the executor's to stop; a denial has ended the request.
            Some((Record::Decided { .. }, _)) => Ok(()),
        }
    }
}
