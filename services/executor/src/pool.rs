//! The warm pool: containers started before their job, per image and quota class, each used for
//! exactly one job and then destroyed.
//!
//! A class's target size follows its demand: the most jobs of the class running at once in the
//! last window, plus the jobs that arrive while one container starts (arrival rate times the
//! measured start time), between `min_idle` and `max_idle`. A class unused for `trim_after`
//! shrinks back to `min_idle`; containers older than `max_age` are replaced; nothing is
//! started when free memory runs low, and the idle ones are dropped when it runs out.
//!
//! Starting and removing containers is upkeep: while a class still has a ready container, it
//! waits for a quiet moment between runs (`quiet.rs`), at most [`START_BOUND`], so that the
//! engine's work does not share the CPU with a run's end and its receipt.

use crate::config::SandboxConfig;
use crate::docker::{self, ContainerEngine};
use crate::host;
use crate::launch::{self, LaunchRequest, Launched};
use crate::quiet::Quiet;
use airlock_protocol::Limits;
use airlock_protocol::Runtime;
use futures::FutureExt;
use futures::StreamExt;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// What makes two containers interchangeable: the image and every limit fixed at creation.
/// Wall time and output are enforced per job, so they are not part of it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Shape {
    pub image: String,
    pub runtime: Runtime,
    pub memory_bytes: u64,
    pub cpu_millis: u32,
    pub pids: u32,
    pub disk_bytes: u64,
    pub open_files: u32,
}

impl Shape {
    pub fn of(image: &str, runtime: Runtime, limits: &Limits) -> Shape {
        Shape {
            image: image.to_owned(),
            runtime,
            memory_bytes: limits.memory_bytes,
            cpu_millis: limits.cpu_millis,
            pids: limits.pids,
            disk_bytes: limits.disk_bytes,
            open_files: limits.open_files,
        }
    }
}

/// Rough cost of one idle warm container (an interpreter waiting on stdin is about 6 MiB).
const WARM_COST_BYTES: u64 = 32 * 1024 * 1024;
/// Window over which demand is measured.
const WINDOW: Duration = Duration::from_secs(10);
/// The longest a start waits for quiet while its class still has a ready container.
pub const START_BOUND: Duration = Duration::from_secs(1);

struct Class {
    limits: Limits,
    idle: VecDeque<Launched>,
    starting: usize,
    in_use: usize,
    takes: VecDeque<Instant>,
    peak_in_use: usize,
    peak_since: Instant,
    last_take: Option<Instant>,
    failures: u32,
    backoff_until: Option<Instant>,
    /// Since when a start this class wants has waited for quiet.
    deferred_since: Option<Instant>,
}

struct State {
    classes: HashMap<Shape, Class>,
    /// Moving average of how long a warm container takes to start, in seconds.
    launch_secs: f64,
    hits: u64,
    misses: u64,
}

/// Counters for tests, benchmarks and logs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    pub idle: usize,
    pub starting: usize,
    pub hits: u64,
    pub misses: u64,
}

pub struct Pool {
    engine: ContainerEngine,
    config: Arc<SandboxConfig>,
    state: Mutex<State>,
    wake: Notify,
    warmups: Arc<Semaphore>,
    quiet: Arc<Quiet>,
    shutdown: CancellationToken,
    tasks: TaskTracker,
}

/// Marks a class's job as running; dropping it ends the job for the pool's demand count.
pub struct InUse {
    pool: Arc<Pool>,
    shape: Shape,
}

impl Drop for InUse {
    fn drop(&mut self) {
        if let Ok(mut state) = self.pool.state.lock()
            && let Some(class) = state.classes.get_mut(&self.shape)
        {
            class.in_use = class.in_use.saturating_sub(1);
        }
    }
}

impl Pool {
    /// A pool with one class per `(image, runtime, limits)`; nothing starts until [`Pool::run`].
    pub fn new(
        engine: ContainerEngine,
        config: Arc<SandboxConfig>,
        classes: Vec<(String, Runtime, Limits)>,
        quiet: Arc<Quiet>,
    ) -> Arc<Pool> {
        let now = Instant::now();
        let classes = classes
            .into_iter()
            .map(|(image, runtime, limits)| {
                (
                    Shape::of(&image, runtime, &limits),
                    Class {
                        limits,
                        idle: VecDeque::new(),
                        starting: 0,
                        in_use: 0,
                        takes: VecDeque::new(),
                        peak_in_use: 0,
                        peak_since: now,
                        last_take: None,
                        failures: 0,
                        backoff_until: None,
                        deferred_since: None,
                    },
                )
            })
            .collect();
        Arc::new(Pool {
            warmups: Arc::new(Semaphore::new(config.pool.warmup_parallelism.max(1))),
            engine,
            config,
            state: Mutex::new(State {
                classes,
                launch_secs: 0.15,
                hits: 0,
                misses: 0,
            }),
            wake: Notify::new(),
            quiet,
            shutdown: CancellationToken::new(),
            tasks: TaskTracker::new(),
        })
    }

    /// Starts the background refill.
    pub fn run(self: &Arc<Self>) {
        let pool = self.clone();
        self.tasks.spawn(async move { pool.maintain().await });
    }

    /// A warm container of this shape, if one is ready; counts the job towards the class's
    /// demand either way (a miss makes the class grow).
    pub fn take(self: &Arc<Self>, shape: &Shape) -> (Option<Launched>, Option<InUse>) {
        let mut dead = Vec::new();
        let mut taken = None;
        let in_use = {
            let Ok(mut state) = self.state.lock() else {
                return (None, None);
            };
            let max_age = self.config.pool.max_age;
            let Some(class) = state.classes.get_mut(shape) else {
                return (None, None);
            };
            while let Some(mut candidate) = class.idle.pop_front() {
                // The bootstrap writes nothing before its frame: any output or an ended stream
                // means the container is not waiting any more; nor is one whose PID 1 is gone
                // (its stdin was closed by the engine, which dropped the attach connection,
                // before this process heard of it). What slips through both is caught by the
                // run: its job is never acknowledged.
                let waiting =
                    candidate.attach.output.next().now_or_never().is_none() && !candidate.is_gone(&self.config.host);
                if waiting && candidate.started.elapsed() < max_age {
                    taken = Some(candidate);
                    break;
                }
                dead.push(candidate.id);
            }
            let now = Instant::now();
            class.in_use += 1;
            class.peak_in_use = class.peak_in_use.max(class.in_use);
            class.takes.push_back(now);
            class.last_take = Some(now);
            if taken.is_some() {
                state.hits += 1;
            } else {
                state.misses += 1;
            }
            InUse {
                pool: self.clone(),
                shape: shape.clone(),
            }
        };
        for id in dead {
            self.remove_later(id);
        }
        self.wake.notify_one();
        (taken, Some(in_use))
    }

    pub fn stats(&self) -> PoolStats {
        let Ok(state) = self.state.lock() else {
            return PoolStats::default();
        };
        PoolStats {
            idle: state.classes.values().map(|c| c.idle.len()).sum(),
            starting: state.classes.values().map(|c| c.starting).sum(),
            hits: state.hits,
            misses: state.misses,
        }
    }

    /// Waits until every class holds at least `min_idle` ready containers (or the timeout).
    pub async fn wait_ready(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            let ready = self
                .state
                .lock()
                .map(|s| s.classes.values().all(|c| c.idle.len() >= self.config.pool.min_idle))
                .unwrap_or(false);
            if ready {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Stops refilling and removes every idle container.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        self.warmups.close();
        for id in self.drain_idle() {
            self.remove_later(id);
        }
        self.tasks.close();
        self.tasks.wait().await;
    }

    /// Drops every idle container: their attach connections died with the engine's (the
    /// engine closed their stdin, or will when it notices), so none can take a job. The pool
    /// refills once the engine answers again.
    pub fn discard_idle(&self) {
        let idle = self.drain_idle();
        if !idle.is_empty() {
            tracing::info!(
                containers = idle.len(),
                "dropping the warm containers of a lost engine connection"
            );
        }
        for id in idle {
            let engine = self.engine.clone();
            self.tasks
                .spawn(async move { docker::remove_container_eventually(&engine, &id).await });
        }
    }

    fn drain_idle(&self) -> Vec<String> {
        self.state
            .lock()
            .map(|mut s| {
                s.classes
                    .values_mut()
                    .flat_map(|c| c.idle.drain(..).map(|l| l.id))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn remove_later(&self, id: String) {
        let engine = self.engine.clone();
        let (quiet, shutdown) = (self.quiet.clone(), self.shutdown.clone());
        self.tasks.spawn(async move {
            tokio::select! {
                _ = quiet.settled(crate::quiet::UPKEEP_BOUND) => {}
                _ = shutdown.cancelled() => {}
            }
            if let Err(error) = docker::remove_container(&engine, &id).await {
                tracing::warn!(container = %id, %error, "removing a warm container");
            }
        });
    }

    async fn maintain(self: Arc<Self>) {
        loop {
            let quiet_changed = self.quiet.changed();
            let next = self
                .refill()
                .unwrap_or_else(|| Instant::now() + Duration::from_millis(500));
            tokio::select! {
                _ = self.shutdown.cancelled() => break,
                _ = self.wake.notified() => {}
                _ = quiet_changed => {}
                _ = tokio::time::sleep_until(next.into()) => {}
            }
        }
    }

    /// One pass: expire, trim, decide targets, start what is missing. Returns when a start it
    /// put off for quiet should be looked at again.
    fn refill(self: &Arc<Self>) -> Option<Instant> {
        if self.shutdown.is_cancelled() {
            return None;
        }
        let pool = &self.config.pool;
        let max_age = pool.max_age;
        let trim_after = pool.trim_after;
        let free = host::memory_available()
            .unwrap_or(0)
            .saturating_sub(self.config.host.reserve_memory_bytes);
        let now = Instant::now();
        let quiet_at = self.quiet.quiet_at(now.into()).map(Instant::from);
        let mut again: Option<Instant> = None;
        let mut remove = Vec::new();
        let mut start = Vec::new();
        {
            let Ok(mut state) = self.state.lock() else { return None };
            let launch_secs = state.launch_secs;
            let mut total: usize = state.classes.values().map(|c| c.idle.len() + c.starting).sum();
            let memory_short = free < WARM_COST_BYTES;
            // Containers warmed together expire together: replaced only at `max_age`, a class
            // had none ready for as long as a launch takes (seconds on a busy host), and every
            // request then missed. Those close to their age are replaced ahead of it, and
            // removed once their replacements are ready (the trim below, oldest first).
            let lead = Duration::from_secs_f64((3.0 * launch_secs).max(1.0)).min(max_age / 2);
            let expiring = |class: &Class| {
                class
                    .idle
                    .iter()
                    .filter(|c| c.started.elapsed() + lead >= max_age)
                    .count()
            };
            let refreshing: usize = state.classes.values().map(expiring).sum();
            for (shape, class) in state.classes.iter_mut() {
                while class
                    .idle
                    .front()
                    .is_some_and(|c| c.started.elapsed() >= max_age || memory_short)
                {
                    if let Some(old) = class.idle.pop_front() {
                        total = total.saturating_sub(1);
                        remove.push(old.id);
                    }
                }
                while class.takes.front().is_some_and(|t| now.duration_since(*t) > WINDOW) {
                    class.takes.pop_front();
                }
                if now.duration_since(class.peak_since) > WINDOW {
                    class.peak_in_use = class.in_use;
                    class.peak_since = now;
                }
                let rate = class.takes.len() as f64 / WINDOW.as_secs_f64();
                let demand = class.peak_in_use + (rate * launch_secs * 1.5).ceil() as usize;
                let idle_for_long = class.last_take.is_none_or(|t| now.duration_since(t) > trim_after);
                let target = if idle_for_long {
                    pool.min_idle
                } else {
                    demand.clamp(pool.min_idle, pool.max_idle)
                };
                while class.idle.len() > target {
                    if let Some(extra) = class.idle.pop_front() {
                        total = total.saturating_sub(1);
                        remove.push(extra.id);
                    }
                }
                if class.backoff_until.is_some_and(|t| now < t) || memory_short {
                    continue;
                }
                let have = class.idle.len() - expiring(class) + class.starting;
                let affordable = (free / WARM_COST_BYTES) as usize;
                // The ones being replaced do not count against `max_total`: they leave as
                // their replacements arrive.
                let counted = total.saturating_sub(refreshing);
                let mut want = target
                    .saturating_sub(have)
                    .min(pool.max_total.saturating_sub(counted))
                    .min(affordable.saturating_sub(total));
                // A class with a ready container can wait for quiet; one without cannot (the
                // next request would start cold).
                let ready = class.idle.len() - expiring(class);
                match quiet_at {
                    Some(quiet) if want > 0 && ready > 0 => {
                        let since = *class.deferred_since.get_or_insert(now);
                        if now.duration_since(since) < START_BOUND {
                            let at = quiet.min(since + START_BOUND);
                            again = Some(again.map_or(at, |a| a.min(at)));
                            want = 0;
                        } else {
                            class.deferred_since = None;
                        }
                    }
                    _ => class.deferred_since = None,
                }
                for _ in 0..want {
                    class.starting += 1;
                    total += 1;
                    start.push((shape.clone(), class.limits));
                }
            }
        }
        for id in remove {
            self.remove_later(id);
        }
        for (shape, limits) in start {
            let pool = self.clone();
            self.tasks.spawn(async move { pool.warm_one(shape, limits).await });
        }
        again
    }

    async fn warm_one(self: Arc<Self>, shape: Shape, limits: Limits) {
        let permit = self.warmups.clone().acquire_owned().await;
        let started = Instant::now();
        let result = match permit {
            Ok(_permit) if !self.shutdown.is_cancelled() => {
                launch::launch(
                    &self.engine,
                    &self.config,
                    LaunchRequest {
                        image: &shape.image,
                        runtime: shape.runtime,
                        limits,
                        role: "sandbox",
                        request: "warm",
                        idle_secs: self.config.pool.max_age.as_secs() + 30,
                        read_only_binds: vec![],
                        network: crate::docker::NetworkMode::None,
                        extra_env: vec![],
                    },
                )
                .await
            }
            _ => Err(crate::SandboxError::ShuttingDown),
        };
        let mut orphan = None;
        if let Ok(mut state) = self.state.lock() {
            let elapsed = started.elapsed().as_secs_f64();
            let shutting_down = self.shutdown.is_cancelled();
            if result.is_ok() {
                state.launch_secs = 0.8 * state.launch_secs + 0.2 * elapsed;
            }
            if let Some(class) = state.classes.get_mut(&shape) {
                class.starting = class.starting.saturating_sub(1);
                match result {
                    Ok(launched) if !shutting_down => {
                        class.failures = 0;
                        class.backoff_until = None;
                        class.idle.push_back(launched);
                    }
                    Ok(launched) => orphan = Some(launched.id),
                    Err(crate::SandboxError::ShuttingDown) => {}
                    Err(error) => {
                        class.failures += 1;
                        let backoff = Duration::from_millis(200u64 << class.failures.min(8));
                        class.backoff_until = Some(Instant::now() + backoff);
                        tracing::warn!(%error, ?backoff, "starting a warm container failed");
                    }
                }
            } else if let Ok(launched) = result {
                orphan = Some(launched.id);
            }
        }
        if let Some(id) = orphan {
            self.remove_later(id);
        }
    }
}
