//! Fault injection for crash tests: `AIRLOCK_AUDITOR_CRASH_AT=<step>[@<n>]` makes the process
//! abort (as abruptly as kill -9: no unwinding, no flushing) the n-th time (default first) it
//! reaches the named step of a commit.
//!
//! Steps, in commit order: `prepared`, `blobs`, `staged`, `swapped`, `tile` (after the first
//! tile object), `checkpoint`, `published`, `acked`.
//!
//! Compiled in only with the `fault-injection` feature (the crate's own tests turn it on);
//! without it every step is a no-op and the variable is ignored, so no release binary can be
//! made to abort by its environment.

pub const ENV: &str = "AIRLOCK_AUDITOR_CRASH_AT";

#[cfg(feature = "fault-injection")]
pub use armed::CrashPoint;

#[cfg(not(feature = "fault-injection"))]
pub struct CrashPoint;

#[cfg(not(feature = "fault-injection"))]
impl CrashPoint {
    pub fn from_env() -> Self {
        CrashPoint
    }

    #[inline(always)]
    pub fn at(&self, _step: &str) {}
}

#[cfg(feature = "fault-injection")]
mod armed {
    use super::ENV;
    use std::sync::atomic::{AtomicU64, Ordering};

    pub struct CrashPoint {
        step: Option<String>,
        nth: u64,
        seen: AtomicU64,
    }

    impl CrashPoint {
        pub fn from_env() -> Self {
            let spec = std::env::var(ENV).ok().filter(|s| !s.is_empty());
            let (step, nth) = match spec.as_deref().map(|s| s.split_once('@').unwrap_or((s, "1"))) {
                Some((step, n)) => (Some(step.to_owned()), n.parse().unwrap_or(1)),
                None => (None, 1),
            };
            if let Some(step) = &step {
                tracing::warn!(
                    step,
                    nth,
                    "fault injection armed: the auditor will abort at this commit step"
                );
            }
            Self {
                step,
                nth,
                seen: AtomicU64::new(0),
            }
        }

        pub fn at(&self, step: &str) {
            if self.step.as_deref() == Some(step) && self.seen.fetch_add(1, Ordering::SeqCst) + 1 == self.nth {
                eprintln!("airlock-auditor: fault injection: aborting at step {step}");
                std::process::abort();
            }
        }
    }
}
