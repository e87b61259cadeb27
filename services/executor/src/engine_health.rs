//! Whether the container engine answers, watched all the time: a ping every second while it
//! does, four a second while it does not, and at once when a call failed as if it were gone.
//! The executor starts nothing while the engine is unreachable (its requests wait, told so), says
//! so in its status and its metrics, drops the warm containers whose connections died with it,
//! and carries on by itself when the engine is back.

use crate::docker::ContainerEngine;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

/// How often the engine is pinged while it answers, and while it does not.
const HEALTHY_EVERY: Duration = Duration::from_secs(1);
const DOWN_EVERY: Duration = Duration::from_millis(250);
/// Longest wait for one ping.
const PING_TIMEOUT: Duration = Duration::from_secs(2);

/// The engine as last seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EngineState {
    Reachable,
    Unreachable {
        since: Instant,
        /// The endpoint and the last error, for people.
        detail: String,
    },
}

impl EngineState {
    pub fn is_reachable(&self) -> bool {
        matches!(self, EngineState::Reachable)
    }
}

/// The watch on one engine.
pub struct EngineHealth {
    state: watch::Sender<EngineState>,
    probe_now: Notify,
}

impl EngineHealth {
    /// Starts pinging `engine` until `stop`; `on_change` runs on every change of state.
    pub fn start(
        engine: ContainerEngine,
        stop: CancellationToken,
        on_change: impl Fn(&EngineState) + Send + Sync + 'static,
    ) -> Arc<EngineHealth> {
        let health = Arc::new(EngineHealth {
            state: watch::Sender::new(EngineState::Reachable),
            probe_now: Notify::new(),
        });
        on_change(&EngineState::Reachable);
        let watcher = health.clone();
        tokio::spawn(async move {
            loop {
                let every = if watcher.state.borrow().is_reachable() {
                    HEALTHY_EVERY
                } else {
                    DOWN_EVERY
                };
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(every) => {}
                    _ = watcher.probe_now.notified() => {}
                }
                let seen = ping(&engine).await;
                let changed = watcher.state.send_if_modified(|state| match (&*state, seen) {
                    (EngineState::Reachable, Ok(())) => false,
                    (EngineState::Unreachable { .. }, Err(detail)) => {
                        // Keep `since`; the detail may change without being news.
                        if let EngineState::Unreachable { detail: old, .. } = state {
                            *old = detail;
                        }
                        false
                    }
                    (_, Ok(())) => {
                        tracing::info!(endpoint = %engine.endpoint, "the container engine answers again");
                        *state = EngineState::Reachable;
                        true
                    }
                    (_, Err(detail)) => {
                        tracing::warn!(%detail, "the container engine is unreachable; starting nothing until it is back");
                        *state = EngineState::Unreachable {
                            since: Instant::now(),
                            detail,
                        };
                        true
                    }
                });
                if changed {
                    on_change(&watcher.state.borrow());
                }
            }
        });
        health
    }

    pub fn state(&self) -> EngineState {
        self.state.borrow().clone()
    }

    pub fn is_reachable(&self) -> bool {
        self.state.borrow().is_reachable()
    }

    /// Changes of state, for whoever waits for the engine.
    pub fn subscribe(&self) -> watch::Receiver<EngineState> {
        self.state.subscribe()
    }

    /// A call failed as if the engine were gone: look now rather than at the next tick.
    pub fn suspect(&self) {
        self.probe_now.notify_one();
    }
}

async fn ping(engine: &ContainerEngine) -> Result<(), String> {
    match tokio::time::timeout(PING_TIMEOUT, engine.docker.ping()).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(error)) => Err(format!(
            "the Docker engine at {} is unreachable: {error}",
            engine.endpoint
        )),
        Err(_) => Err(format!(
            "the Docker engine at {} did not answer a ping within {PING_TIMEOUT:?}",
            engine.endpoint
        )),
    }
}
