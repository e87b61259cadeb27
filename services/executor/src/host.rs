//! What the host can give: limits are lowered to it, and jobs wait for room instead of
//! overcommitting memory or cores.
//!
//! Memory is admitted on the worst case: a job is let in only when its memory limit, plus what
//! every running job may still grow to (its limit minus its current use), fits in the host's
//! available memory minus the reserve.

use crate::config::SandboxConfig;
use airlock_protocol::Limits;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

/// The host now.
#[derive(Clone, Copy, Debug)]
pub struct HostSnapshot {
    pub memory_available: u64,
    pub cores: usize,
}

impl HostSnapshot {
    pub fn now() -> HostSnapshot {
        HostSnapshot {
            memory_available: memory_available().unwrap_or(0),
            cores: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        }
    }
}

/// `MemAvailable` of /proc/meminfo, in bytes.
pub fn memory_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// One admitted job: its memory limit and its latest measured use.
struct Admitted {
    limit: u64,
    used: Arc<AtomicU64>,
}

/// The admission gate.
pub struct Capacity {
    slots: Arc<Semaphore>,
    admitted: Mutex<Vec<(u64, Admitted)>>,
    next_ticket: AtomicU64,
    freed: Notify,
    reserve: u64,
    ceiling: Limits,
}

/// Held while a job runs; dropping it lets the next one in.
pub struct Admission {
    capacity: Arc<Capacity>,
    ticket: u64,
    /// The monitor stores the job's current memory use here.
    pub used: Arc<AtomicU64>,
    _slot: OwnedSemaphorePermit,
}

impl Drop for Admission {
    fn drop(&mut self) {
        if let Ok(mut admitted) = self.capacity.admitted.lock() {
            admitted.retain(|(t, _)| *t != self.ticket);
        }
        self.capacity.freed.notify_waiters();
    }
}

impl Capacity {
    pub fn new(config: &SandboxConfig) -> Arc<Capacity> {
        let cores = HostSnapshot::now().cores;
        let slots = config.host.max_concurrent.unwrap_or(cores).max(1);
        Arc::new(Capacity {
            slots: Arc::new(Semaphore::new(slots)),
            admitted: Mutex::new(Vec::new()),
            next_ticket: AtomicU64::new(0),
            freed: Notify::new(),
            reserve: config.host.reserve_memory_bytes,
            ceiling: config.limits.ceiling,
        })
    }

    /// Memory the running jobs use now, and may still claim on top.
    fn running(&self) -> (u64, u64) {
        let Ok(admitted) = self.admitted.lock() else {
            return (0, 0);
        };
        admitted.iter().fold((0, 0), |(used, headroom), (_, a)| {
            let u = a.used.load(Ordering::Relaxed).min(a.limit);
            (used + u, headroom + (a.limit - u))
        })
    }

    /// `limits`, lowered to the configured ceiling and to what the host could give a job now
    /// if it waited for the running ones; never raised.
    pub fn effective_limits(&self, limits: &Limits) -> Limits {
        let host = HostSnapshot::now();
        let (used_by_jobs, _) = self.running();
        let memory = (host.memory_available + used_by_jobs).saturating_sub(self.reserve);
        let cores = u32::try_from(host.cores).unwrap_or(u32::MAX).saturating_mul(1000);
        let mut l = limits.min(&self.ceiling);
        l.memory_bytes = l.memory_bytes.min(memory);
        l.cpu_millis = l.cpu_millis.min(cores);
        l
    }

    /// Waits for a slot (one per core by default), then for the job's memory to fit.
    pub async fn admit(self: &Arc<Self>, memory_limit: u64) -> Result<Admission, crate::SandboxError> {
        let slot = self
            .slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| crate::SandboxError::ShuttingDown)?;
        loop {
            if self.slots.is_closed() {
                return Err(crate::SandboxError::ShuttingDown);
            }
            let freed = self.freed.notified();
            let available = memory_available().unwrap_or(0).saturating_sub(self.reserve);
            let (_, headroom) = self.running();
            let nothing_running = self.admitted.lock().map(|a| a.is_empty()).unwrap_or(true);
            // With nothing running there is nothing to wait for: the limit was already lowered
            // to what the host has.
            if nothing_running || memory_limit + headroom <= available {
                let ticket = self.next_ticket.fetch_add(1, Ordering::Relaxed);
                let used = Arc::new(AtomicU64::new(0));
                if let Ok(mut admitted) = self.admitted.lock() {
                    admitted.push((
                        ticket,
                        Admitted {
                            limit: memory_limit,
                            used: used.clone(),
                        },
                    ));
                }
                return Ok(Admission {
                    capacity: self.clone(),
                    ticket,
                    used,
                    _slot: slot,
                });
            }
            tracing::debug!(memory_limit, headroom, available, "waiting for memory");
            // Memory also frees up outside Airlock, so look again now and then.
            let _ = tokio::time::timeout(Duration::from_millis(200), freed).await;
        }
    }

    pub fn close(&self) {
        self.slots.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_only_lowered() {
        let mut config = SandboxConfig::default();
        config.host.reserve_memory_bytes = 0;
        let capacity = Capacity::new(&config);
        let huge = Limits {
            memory_bytes: u64::MAX,
            cpu_millis: u32::MAX,
            pids: u32::MAX,
            wall_ms: u64::MAX,
            output_bytes: u64::MAX,
            disk_bytes: u64::MAX,
            open_files: u32::MAX,
        };
        let e = capacity.effective_limits(&huge);
        assert!(e.within(&huge));
        assert!(e.memory_bytes <= memory_available().unwrap());
        assert!(e.cpu_millis <= 1000 * std::thread::available_parallelism().unwrap().get() as u32);
        assert!(e.within(&config.limits.ceiling));
        let small = config.quotas.untrusted;
        assert_eq!(capacity.effective_limits(&small), small);
    }

    #[tokio::test]
    async fn slots_queue_jobs() {
        let mut config = SandboxConfig::default();
        config.host.max_concurrent = Some(1);
        let capacity = Capacity::new(&config);
        let first = capacity.admit(1024).await.unwrap();
        let waiting = tokio::spawn({
            let capacity = capacity.clone();
            async move { capacity.admit(1024).await.map(|_| ()) }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "a second job must wait for the only slot");
        drop(first);
        waiting.await.unwrap().unwrap();
    }
}
