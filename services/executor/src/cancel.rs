//! A client's cancellation, once the request is the executor's: waiting for its turn, or
//! running. Every executor hears every cancellation (a plain subscription, not the shared
//! consumer, which would hand it to one executor only); the one running the request kills its
//! container at once, and the run ends `cancelled` with the output written until then. A
//! cancellation that comes before the decision does is found when the decision does: in memory,
//! or stored in the events stream, looked up before anything starts.

use airlock_protocol::{CancelRequest, Envelope, Event, EventKind, RequestId};
use futures::StreamExt as _;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use tokio_util::sync::CancellationToken;

/// Cancellations heard and not yet acted on are kept for this many requests at most (the
/// oldest forgotten first; the stored event still stops such a request before it starts).
const REMEMBERED: usize = 4096;

/// Which requests run in which container here, and which were asked to stop.
#[derive(Default)]
pub(crate) struct Cancels {
    running: Mutex<HashMap<String, String>>,
    asked: Mutex<(HashMap<String, CancelRequest>, VecDeque<String>)>,
    /// Wakes the dispatcher, which ends the cancelled requests waiting for their turn.
    pub(crate) heard: tokio::sync::Notify,
}

impl Cancels {
    /// The cancellation heard for `rid`, if any.
    pub(crate) fn asked(&self, rid: &RequestId) -> Option<CancelRequest> {
        let asked = self.asked.lock().unwrap_or_else(|p| p.into_inner());
        asked.0.get(rid.as_str()).cloned()
    }

    /// Notes a cancellation; returns the container to kill when the request runs here.
    fn heard(&self, rid: &RequestId, cancel: CancelRequest) -> Option<String> {
        {
            let mut asked = self.asked.lock().unwrap_or_else(|p| p.into_inner());
            let (map, order) = &mut *asked;
            if map.insert(rid.as_str().to_owned(), cancel).is_none() {
                order.push_back(rid.as_str().to_owned());
                while order.len() > REMEMBERED {
                    if let Some(oldest) = order.pop_front() {
                        map.remove(&oldest);
                    }
                }
            }
        }
        self.heard.notify_one();
        let running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        running.get(rid.as_str()).cloned()
    }

    /// The request's program started in `container`; true when it was cancelled meanwhile
    /// (between the look before the start and now), and the container is to be killed at once.
    pub(crate) fn started(&self, rid: &RequestId, container: &str) -> bool {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        running.insert(rid.as_str().to_owned(), container.to_owned());
        drop(running);
        self.asked(rid).is_some()
    }

    /// The request's run is over here.
    pub(crate) fn ended(&self, rid: &RequestId) {
        self.running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(rid.as_str());
    }

    /// Whether `rid` was asked to stop: in memory, else as stored in the events stream (a
    /// cancellation sent before this executor heard of the request, or while it was away).
    pub(crate) async fn lookup(
        &self,
        events: &async_nats::jetstream::Context,
        rid: &RequestId,
    ) -> Option<CancelRequest> {
        if let Some(cancel) = self.asked(rid) {
            return Some(cancel);
        }
        let stream = events
            .get_stream_no_info(airlock_protocol::subjects::EVENTS_STREAM)
            .await
            .ok()?;
        let subject = EventKind::CancelRequested.subject(rid);
        match stream.direct_get_last_for_subject(subject.clone()).await {
            Ok(message) => match Envelope::decode_on(&subject, &message.payload) {
                Ok(Envelope {
                    event: Event::CancelRequested(cancel),
                    ..
                }) if cancel.check().is_ok() => Some(cancel),
                _ => None,
            },
            // Not found, or the stream cannot be asked now: the run goes on, and a
            // cancellation heard later still stops it.
            Err(_) => None,
        }
    }
}

/// Hears every client's cancellations until `stop`, killing the container of a request that
/// runs here.
pub(crate) async fn listen(
    client: async_nats::Client,
    cancels: std::sync::Arc<Cancels>,
    sandbox: crate::Sandbox,
    stop: CancellationToken,
) {
    let filter = EventKind::CancelRequested.subject_filter();
    let mut subscription = match client.subscribe(filter.clone()).await {
        Ok(s) => s,
        Err(error) => {
            tracing::error!(%error, %filter, "cannot hear cancellations: a running program is stopped only by its limits");
            return;
        }
    };
    loop {
        let message = tokio::select! {
            _ = stop.cancelled() => return,
            message = subscription.next() => match message {
                Some(m) => m,
                None => return,
            },
        };
        let envelope = match Envelope::decode_on(&message.subject, &message.payload) {
            Ok(e) => e,
            Err(error) => {
                tracing::debug!(error = %airlock_bus::error_text(&error), "an unreadable cancellation; ignored (the gate refuses it on the record)");
                continue;
            }
        };
        let Event::CancelRequested(cancel) = envelope.event else {
            continue;
        };
        if cancel.check().is_err() {
            continue;
        }
        let rid = envelope.request_id;
        if let Some(container) = cancels.heard(&rid, cancel) {
            tracing::info!(request_id = %rid, %container, "cancelled by its client: killing its container");
            if let Err(error) = sandbox.kill(&container).await {
                tracing::warn!(request_id = %rid, %error, "killing a cancelled run's container");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancellation_names_the_container_of_a_run_here_and_is_remembered_boundedly() {
        let cancels = Cancels::default();
        let rid = RequestId::parse("mai.r1").unwrap();
        assert_eq!(cancels.heard(&rid, CancelRequest::new("stop")), None);
        assert_eq!(cancels.asked(&rid), Some(CancelRequest::new("stop")));
        let running = RequestId::parse("mai.r2").unwrap();
        assert!(!cancels.started(&running, "c0ffee"));
        assert_eq!(
            cancels.heard(&running, CancelRequest::new("stop")),
            Some("c0ffee".into())
        );
        cancels.ended(&running);
        // Cancelled between the look before the start and the start: killed as it starts.
        assert!(cancels.started(&running, "c0ffee"));
        for i in 0..REMEMBERED + 10 {
            let rid = RequestId::parse(&format!("mai.x{i}")).unwrap();
            cancels.heard(&rid, CancelRequest::new("stop"));
        }
        assert_eq!(cancels.asked(&rid), None, "the oldest is forgotten");
        assert_eq!(cancels.asked.lock().unwrap().0.len(), REMEMBERED);
    }
}
