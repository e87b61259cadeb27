//! The analysis budget of one request, and the stack the recursive walks run on: the bottom of
//! the analysis, used by the parsers, the walks and the matcher alike.

use std::time::Duration;

pub use airlock_bash_parser::with_stack;

/// The analysis budget of one request, in CPU time of the analysing thread: a machine busy with
/// other work slows the wall clock, not the amount of analysis a request may have (an ordinary
/// large file must not fail closed because the host is loaded). Checking the clock on every
/// node would cost more than the work it guards, so most checks only count.
pub struct Budget {
    /// How far parsing got (bytes) when it gave up.
    pub parsed_to: usize,
    clock: CpuClock,
    ticks: u32,
    exhausted: bool,
}

/// CPU time used by this thread since the clock was started.
#[derive(Clone, Copy)]
pub struct CpuClock {
    start: Duration,
    limit: Duration,
}

impl CpuClock {
    pub fn passed(&self) -> bool {
        thread_cpu_time().saturating_sub(self.start) >= self.limit
    }
}

/// CPU time this thread has used.
fn thread_cpu_time() -> Duration {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime only writes the timespec it is given; the thread CPU-time clock
    // exists on every Linux kernel.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    if rc != 0 {
        // Cannot happen on Linux; an unreadable clock must not make the budget endless.
        return Duration::MAX;
    }
    Duration::new(
        u64::try_from(now.tv_sec).unwrap_or(0),
        u32::try_from(now.tv_nsec).unwrap_or(0),
    )
}

impl Budget {
    pub fn new(limit: Duration) -> Budget {
        Budget {
            parsed_to: 0,
            clock: CpuClock {
                start: thread_cpu_time(),
                limit,
            },
            ticks: 0,
            exhausted: false,
        }
    }

    pub fn exhausted(&mut self) -> bool {
        if self.exhausted {
            return true;
        }
        self.ticks = self.ticks.wrapping_add(1);
        if self.ticks.is_multiple_of(128) {
            self.check_now()
        } else {
            false
        }
    }

    pub fn check_now(&mut self) -> bool {
        if !self.exhausted && self.clock.passed() {
            self.exhausted = true;
        }
        self.exhausted
    }

    /// The clock, for callbacks that cannot borrow the budget (tree-sitter's progress).
    pub fn clock(&self) -> CpuClock {
        self.clock
    }
}

/// The bash parser asks the same budget as the walks.
impl airlock_bash_parser::Budget for Budget {
    fn exhausted(&mut self) -> bool {
        Budget::exhausted(self)
    }
}
