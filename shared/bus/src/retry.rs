//! The one way Airlock retries: exponential backoff, a judgement of whether the error could
//! pass, and a shutdown that ends the wait at once.
//!
//! Every loop that waits out an outage (NATS restarting, a bucket not created yet, the audit
//! store down) goes through [`retry`], so they all stop retrying what cannot succeed and all stop
//! waiting when the service is told to stop.

use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Whether retrying an operation that failed with this error could succeed.
pub trait Transience {
    /// True when the same operation will fail again however long one waits (a message too
    /// large, a corrupt record, a refused rewrite); false for outages and timeouts.
    fn is_permanent(&self) -> bool;
}

/// How long to wait between attempts, and for how long in all.
#[derive(Clone, Copy, Debug)]
pub struct Backoff {
    pub first: Duration,
    pub max: Duration,
    /// Give up after this long; `None` waits until shutdown.
    pub patience: Option<Duration>,
}

impl Backoff {
    /// For waiting out a server restart: quick at first, then every 2 s, for ever.
    pub const OUTAGE: Backoff = Backoff {
        first: Duration::from_millis(100),
        max: Duration::from_secs(2),
        patience: None,
    };

    pub fn with_patience(self, patience: Duration) -> Self {
        Self {
            patience: Some(patience),
            ..self
        }
    }

    /// The pause before attempt `attempt` (1 = the first retry).
    pub fn delay(&self, attempt: u32) -> Duration {
        let factor = 1u32.checked_shl(attempt.saturating_sub(1).min(16)).unwrap_or(u32::MAX);
        self.first.saturating_mul(factor).min(self.max)
    }
}

/// Why [`retry`] stopped without a result.
#[derive(Debug, thiserror::Error)]
pub enum RetryError<E: std::error::Error + 'static> {
    /// The error said retrying cannot help.
    #[error("{what}")]
    Permanent {
        what: &'static str,
        #[source]
        error: E,
    },
    /// Still failing when patience ran out.
    #[error("{what}: still failing after {waited:?}")]
    GaveUp {
        what: &'static str,
        waited: Duration,
        #[source]
        error: E,
    },
    /// The service is stopping.
    #[error("{what}: stopped while retrying")]
    Cancelled { what: &'static str },
}

impl<E: std::error::Error + 'static> RetryError<E> {
    /// The last error, if an attempt was made.
    pub fn last_error(&self) -> Option<&E> {
        match self {
            RetryError::Permanent { error, .. } | RetryError::GaveUp { error, .. } => Some(error),
            RetryError::Cancelled { .. } => None,
        }
    }

    pub fn into_last_error(self) -> Option<E> {
        match self {
            RetryError::Permanent { error, .. } | RetryError::GaveUp { error, .. } => Some(error),
            RetryError::Cancelled { .. } => None,
        }
    }
}

impl<E: std::error::Error + 'static> Transience for RetryError<E> {
    fn is_permanent(&self) -> bool {
        matches!(self, RetryError::Permanent { .. })
    }
}

/// Runs `step` until it succeeds, fails permanently, patience runs out, or `shutdown` fires.
/// Each failure is logged once with what was being done.
pub async fn retry<T, E, F, Fut>(
    shutdown: &CancellationToken,
    backoff: Backoff,
    what: &'static str,
    step: F,
) -> Result<T, RetryError<E>>
where
    E: Transience + std::error::Error + 'static,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    retry_judged(shutdown, backoff, what, E::is_permanent, step).await
}

/// [`retry`] for errors of other crates, judged by `is_permanent`.
pub async fn retry_judged<T, E, F, Fut>(
    shutdown: &CancellationToken,
    backoff: Backoff,
    what: &'static str,
    is_permanent: fn(&E) -> bool,
    mut step: F,
) -> Result<T, RetryError<E>>
where
    E: std::error::Error + 'static,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let started = Instant::now();
    let mut attempt = 0u32;
    loop {
        let error = match step().await {
            Ok(value) => return Ok(value),
            Err(error) => error,
        };
        if is_permanent(&error) {
            return Err(RetryError::Permanent { what, error });
        }
        let waited = started.elapsed();
        if backoff.patience.is_some_and(|p| waited >= p) {
            return Err(RetryError::GaveUp { what, waited, error });
        }
        attempt += 1;
        let delay = backoff.delay(attempt);
        tracing::warn!(what, error = %crate::error_text(&error), attempt, retry_in = ?delay, "failed; retrying");
        if !pause(shutdown, delay).await {
            return Err(RetryError::Cancelled { what });
        }
    }
}

/// Sleeps for `delay` unless `shutdown` fires first; false when it did.
pub async fn pause(shutdown: &CancellationToken, delay: Duration) -> bool {
    tokio::select! {
        _ = shutdown.cancelled() => false,
        _ = tokio::time::sleep(delay) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[derive(Debug, thiserror::Error)]
    #[error("test error (permanent: {0})")]
    struct TestError(bool);

    impl Transience for TestError {
        fn is_permanent(&self) -> bool {
            self.0
        }
    }

    const FAST: Backoff = Backoff {
        first: Duration::from_millis(1),
        max: Duration::from_millis(4),
        patience: None,
    };

    #[tokio::test]
    async fn transient_errors_are_retried_until_success() {
        let calls = AtomicU32::new(0);
        let result = retry(&CancellationToken::new(), FAST, "step", || async {
            if calls.fetch_add(1, Ordering::SeqCst) < 3 {
                Err(TestError(false))
            } else {
                Ok(7)
            }
        })
        .await;
        assert_eq!(result.ok(), Some(7));
        assert_eq!(calls.load(Ordering::SeqCst), 4);
    }

    #[tokio::test]
    async fn a_permanent_error_stops_at_once() {
        let calls = AtomicU32::new(0);
        let result: Result<(), _> = retry(&CancellationToken::new(), FAST, "step", || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(TestError(true))
        })
        .await;
        assert!(matches!(result, Err(RetryError::Permanent { .. })));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn patience_and_shutdown_end_the_wait() {
        let result: Result<(), _> = retry(
            &CancellationToken::new(),
            FAST.with_patience(Duration::from_millis(20)),
            "step",
            || async { Err(TestError(false)) },
        )
        .await;
        assert!(matches!(result, Err(RetryError::GaveUp { .. })));
        let shutdown = CancellationToken::new();
        shutdown.cancel();
        let result: Result<(), _> = retry(&shutdown, FAST, "step", || async { Err(TestError(false)) }).await;
        assert!(matches!(result, Err(RetryError::Cancelled { .. })));
    }

    #[test]
    fn delays_grow_to_their_cap() {
        let b = Backoff::OUTAGE;
        assert_eq!(b.delay(1), Duration::from_millis(100));
        assert_eq!(b.delay(2), Duration::from_millis(200));
        assert_eq!(b.delay(10), Duration::from_secs(2));
        assert_eq!(b.delay(u32::MAX), Duration::from_secs(2));
    }
}
