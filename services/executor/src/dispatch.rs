//! The executor's intake: every approved decision it takes in waits here, in its client's queue,
//! until a slot is free and its turn comes ([`crate::queue`]), the container engine answers, and
//! the audit log keeps up ([`crate::audit_gate`]). Meanwhile its delivery is kept alive (the
//! server does not hand it to another executor), its client is told what it waits for (a
//! `progress` event each time that changes: `queued` with how many are ahead, `waiting for the
//! engine`, `waiting for the audit log`), and it is bounded by its deadline always and by its
//! decision's TTL while it waits for the engine or the log (not while it waits for a slot: the
//! TTL is checked when the request is taken in).
//!
//! An executor whose engine stays away longer than [`RELEASE_AFTER`] gives its waiting requests
//! back to the stream, for another executor to run, and takes in nothing until the engine is
//! back. On shutdown, the waiting requests are given back at once.

use crate::audit_gate::Readiness;
use crate::engine_health::EngineState;
use crate::execute::{Executor, HEARTBEAT, Judged, Started};
use crate::queue::{FairQueue, Queued};
use crate::service::Authorized;
use airlock_bus::{Delivery, DeliveryStream};
use airlock_protocol::{Progress, RequestId, now_ms};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

/// How long the engine may be away before the waiting requests are given back to the stream.
pub(crate) const RELEASE_AFTER: Duration = Duration::from_secs(10);
/// How long a request given back waits in the stream before it is delivered again.
const RELEASE_DELAY: Duration = Duration::from_secs(2);
/// Most bytes of decisions held waiting (each carries its request's code and stdin).
const MAX_HELD_BYTES: usize = 64 << 20;
/// A request is told it waits for the audit log only once it waited this long: after a quiet
/// spell every run waits a few milliseconds for its decision's commit, which is no news.
const TELL_AUDIT_WAIT_AFTER: Duration = Duration::from_millis(300);

/// How the executor shares its slots.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sharing {
    pub(crate) slots: usize,
    pub(crate) max_per_client: usize,
    /// Most requests held waiting.
    pub(crate) queue_limit: usize,
}

/// What the metrics read of the queue.
#[derive(Default)]
pub(crate) struct Counts {
    pub(crate) waiting: AtomicU64,
    pub(crate) running: AtomicU64,
}

/// A request waiting for its turn.
struct Waiting {
    delivery: Delivery,
    rid: RequestId,
    client: String,
    authorized: Box<Authorized>,
    /// The decision's place in the events stream (the audit log's progress is counted in it).
    seq: u64,
    /// What the client was last told it waits for.
    told: Option<&'static str>,
    /// Since when it waits.
    since: Instant,
}

impl Queued for Waiting {
    fn client(&self) -> &str {
        &self.client
    }
}

/// What a task the dispatcher started came to.
enum Finished {
    /// Done with here.
    Gone,
    /// To wait again, first of its client's.
    Again(Box<Waiting>),
}

/// Why a waiting request cannot start now.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Blocked {
    Slot,
    Engine(String),
    AuditLog(String),
}

struct Dispatch {
    executor: Arc<Executor>,
    sharing: Sharing,
    queue: FairQueue<Waiting>,
    held_bytes: usize,
    tasks: JoinSet<Finished>,
    /// The client of each run in progress, by task.
    running: HashMap<tokio::task::Id, String>,
    counts: Arc<Counts>,
}

/// Takes decisions in and starts their runs until `shutdown`; returns the runs still going.
pub(crate) async fn dispatch(
    mut deliveries: DeliveryStream,
    executor: Arc<Executor>,
    sharing: Sharing,
    counts: Arc<Counts>,
    shutdown: &CancellationToken,
) -> JoinSet<()> {
    let mut engine = executor.sandbox.engine_health().subscribe();
    let mut commits = executor.audit.subscribe();
    let mut state = Dispatch {
        queue: FairQueue::new(sharing.slots, sharing.max_per_client),
        executor,
        sharing,
        held_bytes: 0,
        tasks: JoinSet::new(),
        running: HashMap::new(),
        counts,
    };
    let mut tick = tokio::time::interval(HEARTBEAT);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    // While requests wait, a look now and then: what they wait for may need telling.
    let mut look = tokio::time::interval(TELL_AUDIT_WAIT_AFTER);
    look.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let cancels = state.executor.cancels.clone();
    loop {
        state.start_what_can();
        state.tell();
        state.report();
        let room = state.has_room();
        tokio::select! {
            _ = shutdown.cancelled() => break,
            delivery = deliveries.next(), if room => match delivery {
                Some(delivery) => state.take_in(delivery),
                None => break,
            },
            Some(done) = state.tasks.join_next_with_id(), if !state.tasks.is_empty() => state.done(done),
            _ = tick.tick() => state.tick().await,
            () = cancels.heard.notified() => state.end_cancelled(),
            _ = look.tick(), if state.queue.waiting() > 0 => {}
            Ok(()) = engine.changed() => {}
            Ok(()) = commits.changed() => {}
        }
    }
    state.give_back_waiting(Duration::ZERO).await;
    // What is still running finishes by itself; the queue's accounting ends here.
    let mut still = JoinSet::new();
    let mut tasks = state.tasks;
    still.spawn(async move { while tasks.join_next().await.is_some() {} });
    still
}

impl Dispatch {
    fn engine(&self) -> EngineState {
        self.executor.sandbox.engine_health().state()
    }

    /// Whether more deliveries may be taken in: under the queue's bounds, and not while the
    /// engine has been away long enough for the waiting requests to be given back.
    fn has_room(&self) -> bool {
        let engine_away_long =
            matches!(self.engine(), EngineState::Unreachable { since, .. } if since.elapsed() >= RELEASE_AFTER);
        self.queue.waiting() < self.sharing.queue_limit && self.held_bytes < MAX_HELD_BYTES && !engine_away_long
    }

    fn take_in(&mut self, delivery: Delivery) {
        let span = delivery.span("airlock-executor");
        let judged = span.in_scope(|| self.executor.judge(&delivery));
        match judged {
            Judged::Run { rid, authorized } => {
                span.record("request_id", rid.as_str());
                let seq = delivery.position().0;
                self.executor.audit.took_in(seq);
                self.held_bytes += delivery.payload().len();
                self.queue.push(Waiting {
                    client: rid.client().unwrap_or_default().to_owned(),
                    delivery,
                    rid,
                    authorized,
                    seq,
                    told: None,
                    since: Instant::now(),
                });
            }
            other => {
                let executor = self.executor.clone();
                self.tasks.spawn(
                    async move {
                        executor.conclude(delivery, other).await;
                        Finished::Gone
                    }
                    .instrument(span),
                );
            }
        }
    }

    /// Why `item` cannot start now, were its turn to come.
    fn blocked(&self, engine: &EngineState, item: &Waiting) -> Blocked {
        if let EngineState::Unreachable { detail, .. } = engine {
            return Blocked::Engine(detail.clone());
        }
        match self.executor.audit.readiness(item.seq) {
            Readiness::Wait(detail) => Blocked::AuditLog(detail),
            Readiness::Ready => Blocked::Slot,
        }
    }

    /// Starts the requests whose turn it is, while the engine answers and the log keeps up.
    fn start_what_can(&mut self) {
        let engine = self.engine();
        while let Some(next) = self.queue.peek() {
            if self.blocked(&engine, next) != Blocked::Slot {
                break;
            }
            let Some(item) = self.queue.pop() else { break };
            self.held_bytes = self.held_bytes.saturating_sub(item.delivery.payload().len());
            if let Some(detail) = overdue(&item, now_ms(), &Blocked::Slot) {
                self.queue.finished(&item.client);
                self.expire(item, detail);
                continue;
            }
            let executor = self.executor.clone();
            let client = item.client.clone();
            let span = item.delivery.span("airlock-executor");
            span.record("request_id", item.rid.as_str());
            let handle = self.tasks.spawn(
                async move {
                    match executor.start(&item.delivery, &item.rid, &item.authorized).await {
                        Started::Settled => Finished::Gone,
                        Started::Again => Finished::Again(Box::new(item)),
                    }
                }
                .instrument(span),
            );
            self.running.insert(handle.id(), client);
        }
    }

    fn done(&mut self, done: Result<(tokio::task::Id, Finished), tokio::task::JoinError>) {
        let id = match &done {
            Ok((id, _)) => *id,
            Err(error) => {
                tracing::error!(%error, "a run's task failed");
                error.id()
            }
        };
        if let Some(client) = self.running.remove(&id) {
            self.queue.finished(&client);
        }
        if let Ok((_, Finished::Again(mut item))) = done {
            // Told again: it now waits for something else (the engine, or a slot for its retry).
            item.told = None;
            item.since = Instant::now();
            self.held_bytes += item.delivery.payload().len();
            self.queue.push_first(*item);
        }
    }

    /// Tells each waiting request's client what it waits for, when that changed.
    fn tell(&mut self) {
        let engine = self.engine();
        let places = self.queue.places();
        let mut blocked: HashMap<String, Blocked> = HashMap::new();
        for item in self.queue.iter() {
            blocked.insert(item.rid.to_string(), self.blocked(&engine, item));
        }
        let mut notes = Vec::new();
        self.queue.for_each_waiting(|client, index, item| {
            let (stage, progress) = match blocked.remove(item.rid.as_str()) {
                Some(Blocked::Engine(detail)) => ("engine", Progress::WaitingForEngine { detail }),
                Some(Blocked::AuditLog(_)) if item.since.elapsed() < TELL_AUDIT_WAIT_AFTER => return,
                Some(Blocked::AuditLog(detail)) => ("audit_log", Progress::WaitingForAuditLog { detail }),
                Some(Blocked::Slot) | None => (
                    "slot",
                    Progress::Queued {
                        ahead: u32::try_from(places.ahead(client, index)).unwrap_or(u32::MAX),
                    },
                ),
            };
            if item.told != Some(stage) {
                item.told = Some(stage);
                notes.push((item.rid.clone(), progress));
            }
        });
        for (rid, progress) in notes {
            let publisher = self.executor.publisher.clone();
            tokio::spawn(async move { publisher.progress(&rid, progress).await });
        }
    }

    /// The status's problems and the metrics' counts.
    fn report(&self) {
        let counters = &self.executor.counters;
        let waiting = self.queue.waiting();
        match self.engine() {
            EngineState::Unreachable { since, detail } => counters.set_problem(
                "engine",
                format!(
                    "{detail} (for {} s); {waiting} request(s) wait for it",
                    since.elapsed().as_secs()
                ),
            ),
            EngineState::Reachable => counters.clear_problem("engine"),
        }
        let audit = &self.executor.audit;
        let requirement = audit.requirement();
        let lag = audit.lag();
        let waiting_for_log = self.queue.iter().filter(|i| i.told == Some("audit_log")).count();
        if requirement.required && (waiting_for_log > 0 || lag >= requirement.max_lag) {
            counters.set_problem(
                "audit_log",
                format!(
                    "the audit log is {:.1} s behind as this executor sees it (runs start only under {:?}); {waiting_for_log} request(s) wait for it",
                    lag.as_secs_f64(),
                    requirement.max_lag
                ),
            );
        } else {
            counters.clear_problem("audit_log");
        }
        self.counts.waiting.store(waiting as u64, Ordering::Relaxed);
        self.counts.running.store(self.running.len() as u64, Ordering::Relaxed);
    }

    /// Every heartbeat: keeps the waiting deliveries alive, ends the overdue ones, and gives
    /// everything back to the stream when the engine has been away too long.
    async fn tick(&mut self) {
        self.end_cancelled();
        for item in self.queue.iter() {
            item.delivery.in_progress().await;
        }
        let engine = self.engine();
        let now = now_ms();
        let mut overdue_ones: HashMap<String, String> = HashMap::new();
        for item in self.queue.iter() {
            if let Some(detail) = overdue(item, now, &self.blocked(&engine, item)) {
                overdue_ones.insert(item.rid.to_string(), detail);
            }
        }
        if !overdue_ones.is_empty() {
            for item in self.queue.take_where(|i| overdue_ones.contains_key(i.rid.as_str())) {
                self.held_bytes = self.held_bytes.saturating_sub(item.delivery.payload().len());
                let detail = overdue_ones.remove(item.rid.as_str()).unwrap_or_default();
                self.expire(item, detail);
            }
        }
        if matches!(engine, EngineState::Unreachable { since, .. } if since.elapsed() >= RELEASE_AFTER)
            && self.queue.waiting() > 0
        {
            tracing::warn!(
                requests = self.queue.waiting(),
                "the engine is still away: giving the waiting requests back for another executor"
            );
            self.give_back_waiting(RELEASE_DELAY).await;
        }
    }

    /// Ends the waiting requests whose clients cancelled them: nothing of them runs.
    fn end_cancelled(&mut self) {
        let cancels = self.executor.cancels.clone();
        for item in self.queue.take_where(|i| cancels.asked(&i.rid).is_some()) {
            self.held_bytes = self.held_bytes.saturating_sub(item.delivery.payload().len());
            let executor = self.executor.clone();
            self.tasks.spawn(async move {
                let outcome = executor
                    .cancel_waiting(&item.delivery, &item.rid, &item.authorized)
                    .await;
                item.delivery.settle(outcome, &executor.refuser, &executor.stop).await;
                Finished::Gone
            });
        }
    }

    fn expire(&mut self, item: Waiting, detail: String) {
        let executor = self.executor.clone();
        self.tasks.spawn(async move {
            let outcome = executor
                .expire(&item.delivery, &item.rid, Some(&item.authorized.decision), detail)
                .await;
            item.delivery.settle(outcome, &executor.refuser, &executor.stop).await;
            Finished::Gone
        });
    }

    /// Puts every waiting request back in the stream, to be delivered again after `delay`.
    async fn give_back_waiting(&mut self, delay: Duration) {
        for item in self.queue.take_where(|_| true) {
            item.delivery.retry_after(delay).await;
        }
        self.held_bytes = 0;
    }
}

/// Why a waiting request can no longer run, if so: its deadline passed, or (while it waits for
/// the engine or the audit log, not for a slot) its decision expired.
fn overdue(item: &Waiting, now_ms: i64, blocked: &Blocked) -> Option<String> {
    if let Some(deadline) = item.authorized.request.deadline_ms.filter(|d| now_ms > *d) {
        return Some(format!(
            "the request's deadline passed {} ms before it could run",
            now_ms - deadline
        ));
    }
    let expires = item.authorized.decision.expires_at_ms;
    let waited_for = match blocked {
        Blocked::Slot => return None,
        Blocked::Engine(_) => "the container engine",
        Blocked::AuditLog(_) => "the audit log",
    };
    (now_ms > expires).then(|| {
        format!(
            "the decision expired {} ms before it could run, waiting for {waited_for}",
            now_ms - expires
        )
    })
}
