//! Events go out through a forwarder so that a slow consumer never delays a kill: the watch loop
//! queues without waiting, and the queue is bounded by the output cap and the sample rate.

use crate::SandboxEvent;
use std::time::Duration;
use tokio::sync::mpsc;

pub struct EventSink {
    queue: mpsc::UnboundedSender<SandboxEvent>,
    forwarder: tokio::task::JoinHandle<()>,
}

impl EventSink {
    pub fn new(events: mpsc::Sender<SandboxEvent>) -> EventSink {
        let (queue, mut receiver) = mpsc::unbounded_channel::<SandboxEvent>();
        let forwarder = tokio::spawn(async move {
            while let Some(event) = receiver.recv().await {
                if events.send(event).await.is_err() {
                    // Nobody listens any more; the report still carries the result.
                    break;
                }
            }
        });
        EventSink { queue, forwarder }
    }

    pub fn send(&self, event: SandboxEvent) {
        let _ = self.queue.send(event);
    }

    /// A sender for producers outside the run loop (the egress proxy).
    pub fn sender(&self) -> mpsc::UnboundedSender<SandboxEvent> {
        self.queue.clone()
    }

    /// Waits until every queued event was handed to the consumer (bounded, so a consumer that
    /// stopped reading cannot hold the run's result back forever).
    pub async fn finish(self) {
        let EventSink { queue, mut forwarder } = self;
        drop(queue);
        if tokio::time::timeout(Duration::from_secs(30), &mut forwarder)
            .await
            .is_err()
        {
            tracing::warn!("the event consumer is not reading; dropping the remaining events");
            forwarder.abort();
        }
    }
}
