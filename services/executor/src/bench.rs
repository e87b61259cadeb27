//! A reusable latency and throughput harness: anything that can "run one" (the sandbox, `docker
//! run`, the whole pipeline, another sandbox library) is a [`RunOne`], and contenders measured in
//! the same call are interleaved so that drift on a busy machine hits them alike.

use futures::future::BoxFuture;
use serde::Serialize;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Runs one execution; `Err` describes a wrong result (which stops the benchmark). Text, because
/// a benchmark's only reader of it is the person who ran it.
pub type RunOne = Arc<dyn Fn() -> BoxFuture<'static, Result<(), String>> + Send + Sync>;

/// Wraps an async closure as a [`RunOne`].
pub fn run_one<F, Fut>(f: F) -> RunOne
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), String>> + Send + 'static,
{
    Arc::new(move || Box::pin(f()))
}

/// Latency figures, in milliseconds.
#[derive(Clone, Debug, Serialize)]
pub struct Latency {
    pub runs: usize,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub mean_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
}

impl Latency {
    pub fn of(samples: &[Duration]) -> Latency {
        let mut ms: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
        ms.sort_by(|a, b| a.total_cmp(b));
        let at = |q: f64| {
            if ms.is_empty() {
                return f64::NAN;
            }
            let i = ((ms.len() as f64 - 1.0) * q).round() as usize;
            ms[i.min(ms.len() - 1)]
        };
        Latency {
            runs: ms.len(),
            p50_ms: at(0.5),
            p90_ms: at(0.9),
            p99_ms: at(0.99),
            mean_ms: if ms.is_empty() {
                f64::NAN
            } else {
                ms.iter().sum::<f64>() / ms.len() as f64
            },
            min_ms: at(0.0),
            max_ms: at(1.0),
        }
    }
}

/// `runs` executions of each contender, round-robin, after `warmup` unmeasured ones each, with
/// `settle` of quiet before each measured one: what one contender leaves behind (a warm pool
/// refilling, a container being removed) must not run on the CPU while the next is measured.
pub async fn interleaved(
    contenders: &[(String, RunOne)],
    runs: usize,
    warmup: usize,
    settle: Duration,
) -> Result<Vec<(String, Latency)>, String> {
    for (name, run) in contenders {
        for _ in 0..warmup {
            run().await.map_err(|e| format!("{name}: {e}"))?;
        }
    }
    let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(runs); contenders.len()];
    for _ in 0..runs {
        for (i, (name, run)) in contenders.iter().enumerate() {
            tokio::time::sleep(settle).await;
            let started = Instant::now();
            run().await.map_err(|e| format!("{name}: {e}"))?;
            samples[i].push(started.elapsed());
        }
    }
    Ok(contenders
        .iter()
        .zip(samples)
        .map(|((name, _), s)| (name.clone(), Latency::of(&s)))
        .collect())
}

/// Throughput with `submitters` concurrent loops of `per_submitter` executions each.
#[derive(Clone, Debug, Serialize)]
pub struct Throughput {
    pub submitters: usize,
    pub executions: usize,
    pub seconds: f64,
    pub per_second: f64,
    pub latency: Latency,
}

pub async fn throughput(run: RunOne, submitters: usize, per_submitter: usize) -> Result<Throughput, String> {
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(submitters);
    for _ in 0..submitters {
        let run = run.clone();
        tasks.push(tokio::spawn(async move {
            let mut samples = Vec::with_capacity(per_submitter);
            for _ in 0..per_submitter {
                let t = Instant::now();
                run().await?;
                samples.push(t.elapsed());
            }
            Ok::<_, String>(samples)
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.map_err(|e| e.to_string())??);
    }
    let seconds = started.elapsed().as_secs_f64();
    Ok(Throughput {
        submitters,
        executions: all.len(),
        seconds,
        per_second: all.len() as f64 / seconds,
        latency: Latency::of(&all),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        let l = Latency::of(&samples);
        assert_eq!((l.runs, l.min_ms, l.max_ms), (100, 1.0, 100.0));
        assert!((l.p50_ms - 50.0).abs() <= 1.0 && (l.p99_ms - 99.0).abs() <= 1.0);
    }

    #[tokio::test]
    async fn harness_counts_every_run() {
        let counter = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let c = counter.clone();
        let run = run_one(move || {
            let c = c.clone();
            async move {
                c.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Ok(())
            }
        });
        let results = interleaved(
            &[("a".into(), run.clone()), ("b".into(), run.clone())],
            5,
            1,
            Duration::ZERO,
        )
        .await
        .unwrap();
        assert_eq!(results.len(), 2);
        assert_eq!(counter.load(std::sync::atomic::Ordering::Relaxed), 12);
        let t = throughput(run, 3, 4).await.unwrap();
        assert_eq!(t.executions, 12);
    }
}
