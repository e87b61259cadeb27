//! SIGPIPE and the threads that talk to the network.
//!
//! A write to a socket whose peer has gone away raises SIGPIPE in the writing thread, unless the
//! write asked not to (`send` with `MSG_NOSIGNAL`, which vectored writes do not use). A
//! service ignores SIGPIPE for the whole process (Rust's default, which `airlock serve` and
//! `airlock up` keep), so a collector or a NATS server closing a connection is an error, never
//! a death. A printing command (`airlock audit replay | head`) wants the opposite for its
//! output, so it restores SIGPIPE's default action; its network threads must then not take the
//! signal. Blocking SIGPIPE in a thread does that: the write fails with `EPIPE`, and the signal
//! stays pending on a thread that never unblocks it.

/// Blocks SIGPIPE in the calling thread (and so in every thread it starts from now on).
pub fn block_in_this_thread() {
    let _ = set_blocked(true);
}

/// Runs `f` with SIGPIPE blocked in the calling thread, so that every thread `f` starts (the
/// exporters' threads, the blocking HTTP client's runtime) inherits the block; the calling
/// thread's mask is restored afterwards.
pub fn with_blocked<T>(f: impl FnOnce() -> T) -> T {
    let previous = set_blocked(true);
    let result = f();
    if let Some(previous) = previous {
        // SAFETY: `previous` is the mask pthread_sigmask returned for this thread.
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &previous, std::ptr::null_mut());
        }
    }
    result
}

/// Blocks (or unblocks) SIGPIPE in this thread; returns the previous mask.
fn set_blocked(blocked: bool) -> Option<libc::sigset_t> {
    // SAFETY: plain calls on a zeroed sigset_t initialised by sigemptyset, on this thread only.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        let mut previous: libc::sigset_t = std::mem::zeroed();
        let how = if blocked { libc::SIG_BLOCK } else { libc::SIG_UNBLOCK };
        (libc::pthread_sigmask(how, &set, &mut previous) == 0).then_some(previous)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocked_here() -> bool {
        // SAFETY: reads this thread's mask into a zeroed sigset_t.
        unsafe {
            let mut current: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut current);
            libc::sigismember(&current, libc::SIGPIPE) == 1
        }
    }

    #[test]
    fn threads_started_inside_inherit_the_block_and_the_caller_gets_its_mask_back() {
        std::thread::spawn(|| {
            assert!(!blocked_here());
            let inner = with_blocked(|| std::thread::spawn(blocked_here).join().expect("thread"));
            assert!(inner, "a thread started inside with_blocked could take SIGPIPE");
            assert!(!blocked_here(), "the caller's mask was not restored");
            block_in_this_thread();
            assert!(blocked_here());
        })
        .join()
        .expect("test thread");
    }
}
