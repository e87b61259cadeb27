//! When the executor's own upkeep runs.
//!
//! A run leaves engine work behind: letting its parked PID 1 exit (which tears the container
//! down in containerd and runc), removing the container, renaming a warm one after its request,
//! and starting the warm container that replaces it. Each is a burst of CPU and disk writes in
//! dockerd, containerd and runc. Done at once, the burst lands on the run's last stages (the
//! terminal event, the auditor's commit and fsync, the receipt reaching the client's new
//! process), and on a host with one core kept busy by a neighbour it was what made the slowest
//! runs in a hundred two to four times the median.
//!
//! Upkeep that can wait therefore waits for a quiet moment: no run in flight, and [`SETTLE`]
//! since the last one ended (time for its terminal, commit and receipt). It never waits longer
//! than its bound, so under sustained load it runs anyway, only later; and work that a waiting
//! request needs now (a class with no ready container) does not wait at all (see `pool.rs`).

use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

/// How long after a run ends the executor counts as busy with it, by default
/// (`[executor.pool] upkeep_settle`): the terminal event reaching the auditor, its commit, and
/// the receipt reaching the client take a few milliseconds on a quiet host and a few tens on a
/// loaded one.
pub const SETTLE: Duration = Duration::from_millis(150);

/// The longest that removing, releasing or renaming a finished run's container waits for quiet.
pub const UPKEEP_BOUND: Duration = Duration::from_millis(500);

#[derive(Default)]
struct State {
    running: usize,
    last_end: Option<Instant>,
}

/// Counts the runs in flight and knows when the last one ended.
pub struct Quiet {
    state: Mutex<State>,
    changed: Notify,
    /// Zero: always quiet (upkeep never waits).
    settle: Duration,
}

/// A run in flight; dropping it ends the run for [`Quiet`].
pub struct Running {
    quiet: Arc<Quiet>,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(mut state) = self.quiet.state.lock() {
            state.running = state.running.saturating_sub(1);
            state.last_end = Some(Instant::now());
        }
        self.quiet.changed.notify_waiters();
    }
}

impl Quiet {
    pub fn new(settle: Duration) -> Arc<Quiet> {
        Arc::new(Quiet {
            state: Mutex::default(),
            changed: Notify::new(),
            settle,
        })
    }

    /// Marks a run as in flight until the guard is dropped.
    pub fn begin(self: &Arc<Self>) -> Running {
        if let Ok(mut state) = self.state.lock() {
            state.running += 1;
        }
        self.changed.notify_waiters();
        Running { quiet: self.clone() }
    }

    /// `None` when the executor is quiet at `now`; otherwise the earliest instant it can be
    /// (a guess of one settle ahead while runs are in flight: their end is not known).
    pub fn quiet_at(&self, now: Instant) -> Option<Instant> {
        if self.settle.is_zero() {
            return None;
        }
        let Ok(state) = self.state.lock() else { return None };
        if state.running > 0 {
            return Some(now + self.settle);
        }
        state
            .last_end
            .map(|end| end + self.settle)
            .filter(|&settled| settled > now)
    }

    /// A future that completes at the next change (a run begins or ends); created before the
    /// state is read, so that no change between the read and the wait is missed.
    pub fn changed(&self) -> std::pin::Pin<Box<tokio::sync::futures::Notified<'_>>> {
        let mut notified = Box::pin(self.changed.notified());
        notified.as_mut().enable();
        notified
    }

    /// Waits until the executor is quiet, or `bound` has passed.
    pub async fn settled(&self, bound: Duration) {
        let deadline = Instant::now() + bound;
        loop {
            let changed = self.changed();
            let now = Instant::now();
            let Some(at) = self.quiet_at(now) else { return };
            if now >= deadline {
                return;
            }
            tokio::select! {
                _ = changed => {}
                _ = tokio::time::sleep_until(at.min(deadline)) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn quiet_comes_one_settle_after_the_last_run_ends() {
        let quiet = Quiet::new(SETTLE);
        assert_eq!(quiet.quiet_at(Instant::now()), None, "nothing has run yet");
        let run = quiet.begin();
        assert!(quiet.quiet_at(Instant::now()).is_some(), "a run is in flight");
        tokio::time::advance(Duration::from_millis(40)).await;
        drop(run);
        let ended = Instant::now();
        assert_eq!(quiet.quiet_at(ended), Some(ended + SETTLE));
        let waited = Instant::now();
        quiet.settled(Duration::from_secs(5)).await;
        assert_eq!(waited.elapsed(), SETTLE, "upkeep waits out the settle and no more");
        assert_eq!(quiet.quiet_at(Instant::now()), None);
    }

    #[tokio::test(start_paused = true)]
    async fn upkeep_waits_for_every_run_in_flight_but_never_past_its_bound() {
        let quiet = Quiet::new(SETTLE);
        let first = quiet.begin();
        let second = quiet.begin();
        let waiter = {
            let quiet = quiet.clone();
            tokio::spawn(async move {
                let started = Instant::now();
                quiet.settled(Duration::from_secs(10)).await;
                started.elapsed()
            })
        };
        tokio::task::yield_now().await;
        tokio::time::advance(Duration::from_millis(300)).await;
        drop(first);
        tokio::time::advance(Duration::from_millis(300)).await;
        drop(second);
        let waited = waiter.await.expect("the waiter");
        assert_eq!(
            waited,
            Duration::from_millis(600) + SETTLE,
            "quiet after the second run"
        );

        let _busy = quiet.begin();
        let started = Instant::now();
        quiet.settled(UPKEEP_BOUND).await;
        assert_eq!(
            started.elapsed(),
            UPKEEP_BOUND,
            "a run that never ends holds upkeep back only so long"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_zero_settle_never_holds_upkeep_back() {
        let quiet = Quiet::new(Duration::ZERO);
        let _busy = quiet.begin();
        assert_eq!(quiet.quiet_at(Instant::now()), None);
        let started = Instant::now();
        quiet.settled(UPKEEP_BOUND).await;
        assert_eq!(started.elapsed(), Duration::ZERO);
    }
}
