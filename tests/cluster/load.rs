//! A bounded load: submitters, each its own connection as Mai (so they land on different
//! nodes), each submitting one request at a time and waiting for its end before the next,
//! until the phase's share is submitted. Every request's program prints a fresh random token
//! first, so that a second run of the same request would show as a second token in its output.

use crate::deployment::Deployment;
use airlock_bus::Publisher;
use airlock_protocol::subjects::EVENTS_STREAM;
use airlock_protocol::{Envelope, Event, EventKind, ExecutionRequest, Language, Producer, RequestId};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;

/// The program every request runs: a token, then a little work so that runs overlap.
pub fn program(sleep_ms: u64) -> String {
    format!(
        "import os, time\nprint('run', os.urandom(16).hex(), flush=True)\ntime.sleep({:.3})\nprint('done')\n",
        sleep_ms as f64 / 1000.0
    )
}

fn request(code: &str) -> ExecutionRequest {
    ExecutionRequest::new(Language::Python, code.as_bytes().to_vec()).label("cluster-load")
}

/// A load in progress.
pub struct Load {
    submitted: Arc<Mutex<Vec<RequestId>>>,
    tasks: tokio::task::JoinSet<()>,
}

impl Load {
    /// Starts `submitters` submitters sharing `requests` requests.
    pub async fn start(deployment: &Deployment, requests: usize, submitters: usize, code: String) -> Load {
        let submitted = Arc::new(Mutex::new(Vec::new()));
        let remaining = Arc::new(std::sync::atomic::AtomicUsize::new(requests));
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..submitters {
            let client = deployment.connect("mai").await;
            let submitted = submitted.clone();
            let remaining = remaining.clone();
            let code = code.clone();
            tasks.spawn(async move {
                let js = async_nats::jetstream::new(client);
                // Patient: a node may be down or cut off while it submits.
                let publisher = Publisher::new(js.clone(), Producer::Mai, tokio_util::sync::CancellationToken::new())
                    .with_patience(Duration::from_secs(120));
                loop {
                    let taken = remaining.fetch_update(
                        std::sync::atomic::Ordering::SeqCst,
                        std::sync::atomic::Ordering::SeqCst,
                        |n| n.checked_sub(1),
                    );
                    if taken.is_err() {
                        return;
                    }
                    let rid = RequestId::new_for("mai").unwrap();
                    let envelope = Envelope::new(rid.clone(), Producer::Mai, Event::Submitted(request(&code)));
                    if let Err(e) = publisher.publish(&envelope).await {
                        // Recorded all the same: the checks then say whether it was stored.
                        eprintln!("submitting {rid}: {}", airlock_bus::error_text(&e));
                    }
                    submitted.lock().await.push(rid.clone());
                    wait_for_terminal(&js, &rid, Duration::from_secs(240)).await;
                }
            });
        }
        Load { submitted, tasks }
    }

    /// How many requests are submitted so far.
    pub async fn submitted(&self) -> usize {
        self.submitted.lock().await.len()
    }

    /// Waits for every submitter to finish; returns every request submitted.
    pub async fn finish(mut self) -> Vec<RequestId> {
        while let Some(result) = self.tasks.join_next().await {
            result.expect("a submitter panicked");
        }
        self.submitted.lock().await.clone()
    }
}

/// Polls the stream for the request's terminal event (a live subscription would miss one
/// published while this connection was moving between nodes).
pub async fn wait_for_terminal(js: &async_nats::jetstream::Context, rid: &RequestId, limit: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    let subject = EventKind::Terminal.subject(rid);
    while tokio::time::Instant::now() < deadline {
        if let Ok(stream) = js.get_stream_no_info(EVENTS_STREAM).await
            && stream.direct_get_last_for_subject(subject.clone()).await.is_ok()
        {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    false
}
