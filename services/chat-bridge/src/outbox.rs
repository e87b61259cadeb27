//! Keeping every chat's messages in step with the requests: post a waiting request, carry out
//! its escalation when half the time has passed, edit its messages when approvals come in and
//! when it ends, and tell the chat a remembered approval came from each time it is used. Driven
//! by the records in the bridge's bucket, so a restart picks up where it stopped; a chat that is
//! down is retried with backoff and never holds the others up.

use crate::adapter::{Adapter, ChatError};
use crate::answers::Core;
use crate::render::{View, notices, request_message};
use crate::state::{Posted, RanAgain, Tracked};
use airlock_protocol::{ChatRefused, RequestId, error_chain, now_ms};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// What a message shows, so that it is edited only when that changes.
fn fingerprint(tracked: &Tracked, system: &str, now: i64) -> String {
    match &tracked.ended {
        Some(ended) => format!(
            "ended:{}",
            crate::txn_id(&[&serde_json::to_string(ended).unwrap_or_default()])
        ),
        None => format!(
            "waiting:{}:{}:{}",
            tracked.approved_by.len(),
            tracked.escalated_in.iter().any(|s| s == system),
            time_left_step(tracked.asked.deadline_ms, now)
        ),
    }
}

/// The time left to answer, in the steps at which a waiting message is edited so that its
/// "in N min" stays true: every five minutes, then at the last minute. (Every minute would be
/// an edit a minute per request, which a burst of requests cannot afford under a homeserver's
/// rate limits; the absolute time beside it is always right.)
fn time_left_step(deadline_ms: i64, now: i64) -> i64 {
    match (deadline_ms - now).max(0) / 60_000 {
        left @ 5.. => left / 5 * 5,
        1..=4 => 1,
        _ => 0,
    }
}

/// A stable transaction id for one action on one request (Matrix posts it once).
fn txn(rid: &RequestId, what: &str) -> String {
    format!("airlock-{}", crate::txn_id(&[rid.as_str(), what]))
}

/// A round of the outbox goes over its requests twice: first posting the ones not yet posted,
/// then doing everything else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pass {
    Posts,
    All,
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
    /// Per chat system: rate-limited until then. A 429 says the bot is sending too fast there
    /// (Synapse counts every message of a user), not that one message is unwelcome: nothing is
    /// sent to that chat until the time it named, so a burst waits its turn instead of knocking
    /// once per request.
    paused: BTreeMap<&'static str, Instant>,
    /// Per chat system: messages refused for good, and when the last was.
    refusals: std::sync::Mutex<BTreeMap<&'static str, (u64, Instant)>>,
}

/// How long a chat's refusals stay in `airlock status` after the last one.
const REFUSALS_SHOWN_FOR: Duration = Duration::from_secs(3600);

impl Outbox {
    pub fn new(core: Arc<Core>, adapters: Vec<Arc<dyn Adapter>>) -> Self {
        Self {
            core,
            adapters,
            active: BTreeSet::new(),
            retries: BTreeMap::new(),
            paused: BTreeMap::new(),
            refusals: Default::default(),
        }
    }

    /// Every request in the bucket, back in the directory and in the outbox's care.
    async fn rescan(&mut self) -> Result<(), airlock_bus::ClaimError> {
        for id in self.core.store.tracked_ids().await? {
            if let Some(tracked) = self.core.store.tracked(&id).await? {
                self.core.directory.note(&tracked);
            }
            self.active.insert(id);
        }
        self.active.extend(self.core.store.ran_again_ids().await?);
        Ok(())
    }

    pub async fn run(mut self, shutdown: CancellationToken) {
        let mut tick = tokio::time::interval(Duration::from_millis(500));
        let mut rescan = true;
        let mut pruned = Instant::now();
        loop {
            if rescan {
                match self.rescan().await {
                    Ok(()) => rescan = false,
                    Err(e) => tracing::warn!(error = %airlock_bus::error_text(&e), "cannot list tracked requests yet"),
                }
            }
            if pruned.elapsed() > Duration::from_secs(600) {
                self.core.directory.prune(now_ms());
                self.forget_old_refusals();
                pruned = Instant::now();
            }
            // Requests that are new or changed since the last round.
            self.active.extend(self.core.take_changed());
            let ids: Vec<RequestId> = self.active.iter().cloned().collect();
            // New requests first: under a chat's rate limit, the next message it takes is a
            // request nobody has seen yet rather than an edit of one already shown.
            for pass in [Pass::Posts, Pass::All] {
                for rid in &ids {
                    if shutdown.is_cancelled() {
                        return;
                    }
                    match self.step(rid, pass).await {
                        Ok(true) if pass == Pass::All => {
                            self.active.remove(rid);
                        }
                        Ok(_) => {}
                        Err(e) => {
                            tracing::warn!(request_id = %rid, error = %airlock_bus::error_text(&e), "bridge records unavailable")
                        }
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

    /// Does what is due for one request (in `Pass::Posts`, only its first posts); true when
    /// nothing is left to do for it.
    async fn step(&mut self, rid: &RequestId, pass: Pass) -> Result<bool, airlock_bus::ClaimError> {
        let Some(tracked) = self.core.store.tracked(rid).await? else {
            if pass == Pass::Posts {
                return Ok(false);
            }
            return self.step_ran_again(rid).await;
        };
        let now = now_ms();
        let mut done = true;
        for adapter in self.adapters.clone() {
            let system = adapter.system();
            let key = (rid.clone(), system);
            if self.waiting(&key) {
                done = false;
                continue;
            }
            if tracked.refused_in.iter().any(|s| s == system) {
                continue;
            }
            match self.step_system(&tracked, adapter.as_ref(), now, pass).await {
                Err(StepError::Chat(e)) if e.is_refusal() => {
                    // Told to the gate (and so the audit log) before it is final here: a
                    // refusal that could not be told is met again on the next try.
                    let whole_chat = tracked.first_post(system).is_none();
                    let told = ChatRefused::new(system, Some(adapter.place()), whole_chat, &error_chain(&e));
                    if let Err(publish) = self.core.relay.chat_refused(rid, told).await {
                        done &= self.after(key, Err(StepError::Tell(publish))).unwrap_or(false);
                        continue;
                    }
                    self.retries.remove(&key);
                    self.refused(rid, system, &e);
                    let system = system.to_owned();
                    self.core
                        .update(rid, |t| {
                            if !t.refused_in.contains(&system) {
                                t.refused_in.push(system.clone());
                            }
                        })
                        .await?;
                }
                outcome => done &= self.after(key, outcome).unwrap_or(false),
            }
        }
        Ok(done)
    }

    /// A chat refused a request's message for good: the other chats carry on, the operator
    /// sees it in `airlock status` (the bridge's problems) and the log; it is not retried.
    fn refused(&self, rid: &RequestId, system: &'static str, error: &crate::adapter::ChatError) {
        self.core.counters.incr("chat_refusals");
        let at = now_ms();
        let mut all = self.refusals.lock().unwrap_or_else(|p| p.into_inner());
        let refusals = all.entry(system).or_insert((0, Instant::now()));
        *refusals = (refusals.0 + 1, Instant::now());
        self.core.counters.set_problem(
            system,
            format!(
                "refused {} message(s) for good, the last at {} for request {rid}: {}",
                refusals.0,
                crate::render::time_of(at),
                airlock_protocol::error_chain(error)
            ),
        );
        tracing::error!(request_id = %rid, system, error = %airlock_protocol::error_chain(error), "the chat refused the request's message; not retried, the other chats still have it");
    }

    /// A chat's refusals stay in the bridge's problems for an hour after the last one.
    fn forget_old_refusals(&self) {
        let core = &self.core;
        let mut all = self.refusals.lock().unwrap_or_else(|p| p.into_inner());
        all.retain(|system, (_, last)| {
            let keep = last.elapsed() < REFUSALS_SHOWN_FOR;
            if !keep {
                core.counters.clear_problem(system);
            }
            keep
        });
    }

    /// Whether this request's step in this chat must wait: its own retry, or the chat's rate limit.
    fn waiting(&self, key: &(RequestId, &'static str)) -> bool {
        let now = Instant::now();
        self.retries.get(key).is_some_and(|r| r.at > now) || self.paused.get(key.1).is_some_and(|until| *until > now)
    }

    /// Notes the outcome of one chat's step: `None` when it failed and will be retried.
    fn after<T>(&mut self, key: (RequestId, &'static str), outcome: Result<T, StepError>) -> Option<T> {
        match outcome {
            Ok(value) => {
                self.retries.remove(&key);
                Some(value)
            }
            Err(StepError::Chat(ChatError::RateLimited { retry_after, .. })) => {
                // Expected under a burst (a homeserver's default limits let a user send one
                // message every five seconds after ten): not a failure, and not logged as one.
                let until = Instant::now() + retry_after;
                let first = self.paused.get(key.1).is_none_or(|at| *at <= Instant::now());
                self.paused.insert(key.1, until);
                self.core.counters.incr("chat_rate_limited");
                if first {
                    tracing::info!(system = key.1, retry_in = ?retry_after, "rate-limited by the chat; its messages wait");
                }
                None
            }
            Err(e) => {
                let failures = self.retries.get(&key).map_or(0, |r| r.failures) + 1;
                let delay = e
                    .retry_after()
                    .unwrap_or_else(|| Duration::from_secs(1u64 << failures.min(6)).min(Duration::from_secs(60)));
                self.core.counters.incr("chat_failures");
                tracing::warn!(request_id = %key.0, system = key.1, failures, retry_in = ?delay, error = %airlock_protocol::error_chain(&e), "chat unavailable");
                self.retries.insert(
                    key,
                    Retry {
                        at: Instant::now() + delay,
                        failures,
                    },
                );
                None
            }
        }
    }

    /// A run under a remembered approval: posted once in the chat the approval came from.
    async fn step_ran_again(&mut self, rid: &RequestId) -> Result<bool, airlock_bus::ClaimError> {
        let Some((mut ran, revision)) = self.core.store.ran_again(rid).await? else {
            return Ok(true);
        };
        if ran.posted.is_some() {
            return Ok(true);
        }
        let Some(adapter) = self.adapters.iter().find(|a| a.system() == ran.system).cloned() else {
            tracing::info!(request_id = %rid, system = ran.system, "ran under an approval given in a chat this bridge does not serve");
            return Ok(true);
        };
        let key = (rid.clone(), adapter.system());
        if self.waiting(&key) {
            return Ok(false);
        }
        let outcome = match self.post_ran_again(&ran, adapter.as_ref()).await {
            Err(StepError::Chat(e)) if e.is_refusal() => {
                self.retries.remove(&key);
                self.refused(rid, adapter.system(), &e);
                return Ok(true);
            }
            outcome => outcome,
        };
        match self.after(key, outcome) {
            Some(id) => {
                ran.posted = Some(id);
                self.core.store.ran_again_posted(&ran, revision).await?;
                self.core.counters.incr("ran_again_posted");
                Ok(true)
            }
            None => Ok(false),
        }
    }

    async fn post_ran_again(&self, ran: &RanAgain, adapter: &dyn Adapter) -> Result<String, StepError> {
        let approved = self.core.store.tracked(&ran.approved_request).await?;
        let mut message = notices::ran_again(
            &ran.request_id,
            &ran.ended,
            approved.as_ref().map(|t| (&t.request_id, &t.asked)),
        );
        // The approver hears of each use of their approval.
        if let Some(airlock_protocol::Approver::Remembered { who, .. }) = &ran.ended.approver
            && !who.contains(' ')
        {
            message.mentions = vec![who.clone()];
        }
        let id = adapter
            .post(&ran.place, None, &message, now_ms(), &txn(&ran.request_id, "ran-again"))
            .await?;
        self.core
            .store
            .index_message(adapter.system(), &id, &ran.approved_request)
            .await?;
        Ok(id)
    }

    /// One chat system's part; true when it has nothing left to do for this request.
    async fn step_system(
        &self,
        tracked: &Tracked,
        adapter: &dyn Adapter,
        now: i64,
        pass: Pass,
    ) -> Result<bool, StepError> {
        let system = adapter.system();
        let rid = &tracked.request_id;
        let waiting = tracked.ended.is_none() && now <= tracked.asked.deadline_ms;
        if tracked.ended.is_none() && !waiting {
            // Past the deadline: the gate's denial (a terminal event) is on its way.
            return Ok(false);
        }
        // Post a waiting request once per chat, notifying who may answer.
        if waiting && tracked.first_post(system).is_none() {
            let place = adapter.place().to_owned();
            let view = view(tracked, system, self.core.public_url.as_deref());
            let mut message = request_message(&view);
            message.mentions = view.approvers().to_vec();
            let id = adapter
                .post_request(&place, &view, &message, now, &txn(rid, &format!("post-{system}")))
                .await?;
            self.record_post(rid, system, place, id, false, fingerprint(tracked, system, now))
                .await?;
            self.core.counters.incr("posted");
            return Ok(false);
        }
        if pass == Pass::Posts {
            return Ok(false);
        }
        // Edit every message of this chat whose content is behind.
        let wanted = fingerprint(tracked, system, now);
        for (i, post) in tracked.posts.iter().enumerate() {
            if post.system != system || post.shows_end && tracked.ended.is_some() || post.shown == wanted {
                continue;
            }
            let view = view(tracked, system, self.core.public_url.as_deref());
            let message = request_message(&view);
            let what = format!("edit-{system}-{i}-{}", crate::txn_id(&[&wanted]));
            adapter
                .edit_request(&post.place, &post.message, &view, &message, now, &txn(rid, &what))
                .await?;
            let ended = tracked.ended.is_some();
            let id = post.message.clone();
            let shown = wanted.clone();
            self.core
                .update(rid, |t| {
                    for p in t.posts.iter_mut().filter(|p| p.message == id && p.system == system) {
                        p.shows_end = ended;
                        p.shown.clone_from(&shown);
                    }
                })
                .await?;
            self.core.counters.incr(if ended { "edited_at_end" } else { "edited" });
        }
        // After the edits, so that a second place that fails holds nothing else up.
        if waiting {
            self.escalate_if_due(tracked, adapter, now).await?;
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
        if now < plan.at_ms {
            return Ok(());
        }
        let rid = &tracked.request_id;
        let notice = notices::escalation(rid, &tracked.asked, &target.mention);
        if !tracked.escalated_in.iter().any(|s| s == system) {
            self.escalate_here(tracked, adapter, target, &notice, now).await?;
        }
        // The second place comes after the main one: a bot not (yet) invited there must not
        // keep the escalation from the main place. Until it has the request, it is tried again
        // with the chat's backoff. A refusal for good (a channel gone) is reported once (log,
        // `airlock status`) and not tried again; the main place's messages go on regardless.
        let refused_key = |place: &str| format!("{system} {place}");
        let second = target.place.as_deref().filter(|place| {
            *place != adapter.place()
                && !tracked.posts.iter().any(|p| p.system == system && p.place == *place)
                && !tracked.refused_places.contains(&refused_key(place))
        });
        if let Some(place) = second
            && let Err(e) = self.escalate_in(tracked, adapter, place, &notice, now).await
        {
            if let StepError::Chat(chat) = &e
                && chat.is_refusal()
            {
                let told = ChatRefused::new(system, Some(place), false, &error_chain(chat));
                self.core.relay.chat_refused(rid, told).await?;
                self.refused(rid, system, chat);
                let key = refused_key(place);
                self.core
                    .update(rid, |t| {
                        if !t.refused_places.contains(&key) {
                            t.refused_places.push(key.clone());
                        }
                    })
                    .await?;
                return Ok(());
            }
            return Err(e);
        }
        Ok(())
    }

    /// The escalation in the chat's main place: the request posted again if asked, and the
    /// notice mentioning the second group, as a reply to the first post.
    async fn escalate_here(
        &self,
        tracked: &Tracked,
        adapter: &dyn Adapter,
        target: &airlock_protocol::overrides::EscalationTarget,
        notice: &crate::render::Message,
        now: i64,
    ) -> Result<(), StepError> {
        let system = adapter.system();
        let rid = &tracked.request_id;
        if target.repost {
            let place = adapter.place().to_owned();
            let view = view(tracked, system, self.core.public_url.as_deref());
            let message = request_message(&view);
            let id = adapter
                .post_request(&place, &view, &message, now, &txn(rid, &format!("repost-{system}")))
                .await?;
            self.record_post(rid, system, place, id, true, fingerprint(tracked, system, now))
                .await?;
        }
        let first = tracked.first_post(system).map(|p| p.message.clone());
        let notice_id = adapter
            .post(
                adapter.place(),
                first.as_deref(),
                notice,
                now,
                &txn(rid, &format!("escalate-{system}")),
            )
            .await?;
        self.core.store.index_message(system, &notice_id, rid).await?;
        let system_name = system.to_owned();
        self.core
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

    /// Posts the request and the escalation notice in the escalation's second place.
    async fn escalate_in(
        &self,
        tracked: &Tracked,
        adapter: &dyn Adapter,
        place: &str,
        notice: &crate::render::Message,
        now: i64,
    ) -> Result<(), StepError> {
        let system = adapter.system();
        let rid = &tracked.request_id;
        let view = view(tracked, system, self.core.public_url.as_deref());
        let message = request_message(&view);
        let id = adapter
            .post_request(place, &view, &message, now, &txn(rid, &format!("second-{system}")))
            .await?;
        self.record_post(
            rid,
            system,
            place.to_owned(),
            id.clone(),
            true,
            fingerprint(tracked, system, now),
        )
        .await?;
        let notice_id = adapter
            .post(
                place,
                Some(&id),
                notice,
                now,
                &txn(rid, &format!("escalate-second-{system}")),
            )
            .await?;
        self.core.store.index_message(system, &notice_id, rid).await?;
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
        let post = Posted {
            system: system.to_owned(),
            place,
            message,
            escalation,
            shows_end: false,
            shown,
        };
        self.core
            .update(rid, |t| {
                if !t.posts.iter().any(|p| p.message == post.message) {
                    t.posts.push(post.clone());
                }
            })
            .await?;
        Ok(())
    }
}

fn view<'a>(tracked: &'a Tracked, system: &'a str, public_url: Option<&str>) -> View<'a> {
    View {
        code_page: public_url.and_then(|url| crate::code_page::link(url, tracked)),
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
    #[error("telling the gate a chat refused the request")]
    Tell(#[from] airlock_bus::PublishError),
}

impl StepError {
    fn retry_after(&self) -> Option<Duration> {
        match self {
            StepError::Chat(e) => e.retry_after(),
            StepError::Store(_) | StepError::Tell(_) => None,
        }
    }
}

#[cfg(test)]
mod time_left_tests {
    use super::time_left_step;

    #[test]
    fn a_waiting_message_is_edited_every_five_minutes_then_at_the_last_minute() {
        let deadline = 1_000 * 60_000;
        let step_at = |minutes_left: f64| time_left_step(deadline, deadline - (minutes_left * 60_000.0) as i64);
        // A fifteen-minute wait: posted at 14:59 left, edited at 9:59, 4:59 and 0:59 left.
        let steps: Vec<i64> = [14.99, 12.0, 10.0, 9.99, 5.0, 4.99, 1.0, 0.99, 0.0, -1.0]
            .into_iter()
            .map(step_at)
            .collect();
        assert_eq!(steps, [10, 10, 10, 5, 5, 1, 1, 0, 0, 0]);
        let mut changes = steps.clone();
        changes.dedup();
        assert_eq!(changes.len(), 4, "four edits in fifteen minutes: {steps:?}");
    }
}
