//! Keeping every chat's messages in step with the requests: post a waiting request, carry out
//! its escalation when half the time has passed, and edit its messages when approvals come in and
//! when it ends. Driven by the records in the bridge's bucket, so a restart picks up where it
//! stopped; a chat that is down is retried with backoff and never holds the others up.

use crate::adapter::Adapter;
use crate::answers::Core;
use crate::render::View;
use crate::state::{Posted, Tracked};
use airlock_protocol::{RequestId, now_ms};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// What a message shows, so that it is edited only when that changes.
fn fingerprint(tracked: &Tracked, system: &str) -> String {
    match &tracked.ended {
        Some(ended) => format!("ended:{}", ended.summary),
        None => format!(
            "waiting:{}:{}",
            tracked.approved_by.len(),
            tracked.escalated_in.iter().any(|s| s == system)
        ),
    }
}

/// A stable transaction id for one action on one request (Matrix posts it once).
fn txn(rid: &RequestId, what: &str) -> String {
    format!("airlock-{}", crate::txn_id(&[rid.as_str(), what]))
}

struct Retry {
    at: Instant,
    failures: u32,
}

pub struct Outbox {
    core: Arc<Core>,
    adapters: Vec<Arc<dyn Adapter>>,
    /// Requests with something still to do.
    active: BTreeSet<RequestId>,
    retries: BTreeMap<(RequestId, &'static str), Retry>,
}

impl Outbox {
    pub fn new(core: Arc<Core>, adapters: Vec<Arc<dyn Adapter>>) -> Self {
        Self {
            core,
            adapters,
            active: BTreeSet::new(),
            retries: BTreeMap::new(),
        }
    }

    pub async fn run(mut self, shutdown: CancellationToken) {
        let mut tick = tokio::time::interval(Duration::from_millis(500));
        let mut rescan = true;
        loop {
            if rescan {
                match self.core.store.tracked_ids().await {
                    Ok(ids) => {
                        for id in ids {
                            self.core.remember(&id);
                            self.active.insert(id);
                        }
                        self.core.take_changed();
                        rescan = false;
                    }
                    Err(e) => tracing::warn!(error = %airlock_bus::error_text(&e), "cannot list tracked requests yet"),
                }
            }
            // Requests that are new or changed since the last round.
            self.active.extend(self.core.take_changed());
            let ids: Vec<RequestId> = self.active.iter().cloned().collect();
            for rid in ids {
                if shutdown.is_cancelled() {
                    return;
                }
                match self.step(&rid).await {
                    Ok(true) => {
                        self.active.remove(&rid);
                    }
                    Ok(false) => {}
                    Err(e) => {
                        tracing::warn!(request_id = %rid, error = %airlock_bus::error_text(&e), "bridge records unavailable")
                    }
                }
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = self.core.wake.notified() => {}
                _ = tick.tick() => {}
            }
        }
    }

    /// Does what is due for one request; true when nothing is left to do for it.
    async fn step(&mut self, rid: &RequestId) -> Result<bool, airlock_bus::ClaimError> {
        let Some(tracked) = self.core.store.tracked(rid).await? else {
            return Ok(true);
        };
        let now = now_ms();
        let mut done = true;
        for adapter in self.adapters.clone() {
            let system = adapter.system();
            let key = (rid.clone(), system);
            if self.retries.get(&key).is_some_and(|r| r.at > Instant::now()) {
                done = false;
                continue;
            }
            match self.step_system(&tracked, adapter.as_ref(), now).await {
                Ok(finished) => {
                    self.retries.remove(&key);
                    done &= finished;
                }
                Err(e) => {
                    done = false;
                    let failures = self.retries.get(&key).map_or(0, |r| r.failures) + 1;
                    let delay = e
                        .retry_after()
                        .unwrap_or_else(|| Duration::from_secs(1u64 << failures.min(6)).min(Duration::from_secs(60)));
                    self.core.counters.incr("chat_failures");
                    tracing::warn!(request_id = %rid, system, failures, retry_in = ?delay, error = %airlock_protocol::error_chain(&e), "chat unavailable");
                    self.retries.insert(
                        key,
                        Retry {
                            at: Instant::now() + delay,
                            failures,
                        },
                    );
                }
            }
        }
        Ok(done)
    }

    /// One chat system's part; true when it has nothing left to do for this request.
    async fn step_system(&self, tracked: &Tracked, adapter: &dyn Adapter, now: i64) -> Result<bool, StepError> {
        let system = adapter.system();
        let rid = &tracked.request_id;
        let waiting = tracked.ended.is_none() && now <= tracked.asked.deadline_ms;
        if tracked.ended.is_none() && !waiting {
            // Past the deadline: the gate's denial (a terminal event) is on its way.
            return Ok(false);
        }
        // Post a waiting request once per chat.
        if waiting && tracked.first_post(system).is_none() {
            let place = adapter.place().to_owned();
            let message = {
                let view = view(tracked, system);
                adapter
                    .post(&place, &view, now, &txn(rid, &format!("post-{system}")))
                    .await?
            };
            self.record_post(rid, system, place, message, false, fingerprint(tracked, system))
                .await?;
            self.core.counters.incr("posted");
            return Ok(false);
        }
        if waiting {
            self.escalate_if_due(tracked, adapter, now).await?;
        }
        // Edit every message of this chat whose content is behind.
        let wanted = fingerprint(tracked, system);
        for (i, post) in tracked.posts.iter().enumerate() {
            if post.system != system || post.shows_end && tracked.ended.is_some() {
                continue;
            }
            if post_fingerprint(post) == wanted {
                continue;
            }
            let view = view(tracked, system);
            let what = format!("edit-{system}-{i}-{}", crate::txn_id(&[&wanted]));
            adapter
                .edit(&post.place, &post.message, &view, now, &txn(rid, &what))
                .await?;
            let ended = tracked.ended.is_some();
            let message = post.message.clone();
            let shown = wanted.clone();
            self.core
                .store
                .update(rid, |t| {
                    for p in t
                        .posts
                        .iter_mut()
                        .filter(|p| p.message == message && p.system == system)
                    {
                        p.shows_end = ended;
                        set_post_fingerprint(p, &shown);
                    }
                })
                .await?;
            self.core.counters.incr(if ended { "edited_at_end" } else { "edited" });
        }
        Ok(tracked.ended.is_some())
    }

    async fn escalate_if_due(&self, tracked: &Tracked, adapter: &dyn Adapter, now: i64) -> Result<(), StepError> {
        let system = adapter.system();
        let Some(plan) = &tracked.asked.escalation else {
            return Ok(());
        };
        let Some(target) = plan.targets.get(system) else {
            return Ok(());
        };
        if now < plan.at_ms || tracked.escalated_in.iter().any(|s| s == system) {
            return Ok(());
        }
        let rid = &tracked.request_id;
        let left = (tracked.asked.deadline_ms - now).max(0) / 1000;
        let text = format!(
            "Escalation: override request {rid} ({}) has had no answer for half its time; {left} s are left (until {}).",
            tracked.asked.level,
            crate::render::time_of(tracked.asked.deadline_ms)
        );
        let view = view(tracked, system);
        if target.repost {
            let place = adapter.place().to_owned();
            let message = adapter
                .post(&place, &view, now, &txn(rid, &format!("repost-{system}")))
                .await?;
            self.record_post(rid, system, place, message, true, fingerprint(tracked, system))
                .await?;
        }
        if let Some(place) = &target.place {
            let message = adapter
                .post(place, &view, now, &txn(rid, &format!("second-{system}")))
                .await?;
            self.record_post(rid, system, place.clone(), message, true, fingerprint(tracked, system))
                .await?;
            adapter
                .notice(
                    place,
                    None,
                    &text,
                    &target.mention,
                    &txn(rid, &format!("escalate-second-{system}")),
                )
                .await?;
        }
        let first = tracked.first_post(system).map(|p| p.message.clone());
        adapter
            .notice(
                adapter.place(),
                first.as_deref(),
                &text,
                &target.mention,
                &txn(rid, &format!("escalate-{system}")),
            )
            .await?;
        let system_name = system.to_owned();
        self.core
            .store
            .update(rid, |t| {
                if !t.escalated_in.contains(&system_name) {
                    t.escalated_in.push(system_name.clone());
                }
            })
            .await?;
        self.core.counters.incr("escalations");
        tracing::info!(request_id = %rid, system, mention = ?target.mention, second_place = ?target.place, repost = target.repost, "escalated: half the time passed without an answer");
        Ok(())
    }

    async fn record_post(
        &self,
        rid: &RequestId,
        system: &'static str,
        place: String,
        message: String,
        escalation: bool,
        shown: String,
    ) -> Result<(), airlock_bus::ClaimError> {
        self.core.store.index_message(system, &message, rid).await?;
        let mut post = Posted {
            system: system.to_owned(),
            place,
            message,
            escalation,
            shows_end: false,
            shown: String::new(),
        };
        set_post_fingerprint(&mut post, &shown);
        self.core
            .store
            .update(rid, |t| {
                if !t.posts.iter().any(|p| p.message == post.message) {
                    t.posts.push(post.clone());
                }
            })
            .await?;
        Ok(())
    }
}

fn post_fingerprint(post: &Posted) -> &str {
    &post.shown
}

fn set_post_fingerprint(post: &mut Posted, shown: &str) {
    post.shown = shown.to_owned();
}

fn view<'a>(tracked: &'a Tracked, system: &'a str) -> View<'a> {
    View {
        request_id: &tracked.request_id,
        asked: &tracked.asked,
        ended: tracked.ended.as_ref(),
        approved_by: &tracked.approved_by,
        system,
        escalated: tracked.escalated_in.iter().any(|s| s == system),
    }
}

#[derive(Debug, thiserror::Error)]
enum StepError {
    #[error(transparent)]
    Chat(#[from] crate::adapter::ChatError),
    #[error("the bridge's records")]
    Store(#[from] airlock_bus::ClaimError),
}

impl StepError {
    fn retry_after(&self) -> Option<Duration> {
        match self {
            StepError::Chat(e) => e.retry_after(),
            StepError::Store(_) => None,
        }
    }
}
