//! One job in one launched container: hand it the frame, stream its output under a hard cap,
//! watch the kernel's counters, kill on the first violation or at the wall time, and collect the
//! report. The container is removed afterwards whatever happened.

use crate::activity;
use crate::config::SandboxConfig;
use crate::docker::{self, Engine};
use crate::events::EventSink;
use crate::launch::Launched;
use crate::monitor::{Observer, Reading};
use crate::{RunReport, SandboxError, SandboxEvent};
use airlock_protocol::{
    Activity, ExecStarted, Limits, OutputChunk, OutputStream, Usage, UsageSample, Violation, ViolationKind,
};
use bollard::container::LogOutput;
use bollard::query_parameters::WaitContainerOptionsBuilder;
use futures::StreamExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio_util::task::TaskTracker;

/// What [`execute`] needs besides the container.
pub struct Execution<'a> {
    pub engine: &'a Engine,
    pub config: &'a SandboxConfig,
    pub request_id: &'a str,
    pub limits: Limits,
    pub frame: Vec<u8>,
    pub stdin: Vec<u8>,
    /// What the bootstrap writes on stdout and stderr once no process of the program is left.
    pub end_marker: Vec<u8>,
    pub warm: bool,
    /// Where the monitor reports the job's memory use (for admission of other jobs).
    pub memory_used: Arc<AtomicU64>,
    /// Background removals, awaited at shutdown.
    pub cleanup: &'a TaskTracker,
}

/// Output under the cap, in order.
struct Output {
    cap: u64,
    seen: u64,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    seq: u32,
    truncated: bool,
}

impl Output {
    /// Keeps what fits under the cap; returns the chunk to publish and whether the cap was hit.
    fn push(&mut self, stream: OutputStream, data: &[u8]) -> (Option<OutputChunk>, bool) {
        let kept_so_far = self.stdout.len() as u64 + self.stderr.len() as u64;
        self.seen += data.len() as u64;
        let room = self.cap.saturating_sub(kept_so_far);
        let keep = &data[..data.len().min(usize::try_from(room).unwrap_or(usize::MAX))];
        let over = (data.len() as u64) > room;
        if over {
            self.truncated = true;
        }
        if keep.is_empty() {
            return (None, over);
        }
        match stream {
            OutputStream::Stdout => self.stdout.extend_from_slice(keep),
            OutputStream::Stderr => self.stderr.extend_from_slice(keep),
        }
        let chunk = OutputChunk {
            stream,
            seq: self.seq,
            data: keep.to_vec(),
        };
        self.seq += 1;
        (Some(chunk), over)
    }
}

/// A fresh end marker for one job. It only has to be unlike anything a program prints by
/// accident: a program that reads it from its own memory and prints it early ends its own
/// output capture early, nothing more (the run still ends by PID 1's exit record or a limit).
pub fn end_marker() -> String {
    format!("\n\u{0}airlock-end-{}\u{0}", uuid::Uuid::new_v4().simple())
}

/// Finds the end marker in one output stream, across chunk boundaries, and keeps it out of the
/// program's output.
struct EndWatch {
    marker: Vec<u8>,
    /// The tail of what was read that could be the start of the marker.
    held: Vec<u8>,
    seen: bool,
}

impl EndWatch {
    fn new(marker: &[u8]) -> Self {
        Self { marker: marker.to_vec(), held: Vec::new(), seen: false }
    }

    /// The program's bytes in `data`: everything before the marker, less a held-back tail that
    /// may be the marker's beginning.
    fn feed(&mut self, data: &[u8]) -> Vec<u8> {
        if self.seen {
            return Vec::new();
        }
        let mut buf = std::mem::take(&mut self.held);
        buf.extend_from_slice(data);
        if let Some(at) = buf.windows(self.marker.len()).position(|w| w == self.marker.as_slice()) {
            self.seen = true;
            buf.truncate(at);
            return buf;
        }
        let keep = (1..self.marker.len().min(buf.len() + 1))
            .rev()
            .find(|&n| buf.ends_with(&self.marker[..n]))
            .unwrap_or(0);
        self.held = buf.split_off(buf.len() - keep);
        buf
    }

    /// What is still held back when the stream ends without a marker.
    fn flush(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.held)
    }
}

/// Peaks and totals from the readings.
#[derive(Default)]
struct Tally {
    baseline_cpu_ns: Option<u64>,
    last: Reading,
    peak_memory: u64,
    peak_pids: u32,
    samples: u32,
}

impl Tally {
    fn add(&mut self, reading: Reading) {
        if self.baseline_cpu_ns.is_none() {
            self.baseline_cpu_ns = Some(reading.cpu_ns);
        }
        self.peak_memory = self
            .peak_memory
            .max(reading.peak_memory_bytes)
            .max(reading.memory_bytes);
        self.peak_pids = self.peak_pids.max(reading.peak_pids).max(reading.pids);
        self.last = reading;
    }

    fn cpu_ms(&self) -> u64 {
        self.last.cpu_ns.saturating_sub(self.baseline_cpu_ns.unwrap_or(0)) / 1_000_000
    }
}

/// A violation the readings show, if any.
fn check(limits: &Limits, reading: &Reading) -> Option<Violation> {
    if reading.oom_kills > 0 {
        return Some(Violation {
            kind: ViolationKind::Memory,
            detail: format!(
                "the kernel's OOM killer killed {} process(es) at the {} byte memory limit (no swap)",
                reading.oom_kills, limits.memory_bytes
            ),
            limit: Some(limits.memory_bytes),
            measured: Some(reading.peak_memory_bytes.max(reading.memory_bytes)),
        });
    }
    if reading.fork_failures > 0 {
        return Some(Violation {
            kind: ViolationKind::Pids,
            detail: format!(
                "the pids limit of {} refused {} fork(s)",
                limits.pids, reading.fork_failures
            ),
            limit: Some(u64::from(limits.pids)),
            measured: Some(u64::from(reading.peak_pids.max(reading.pids))),
        });
    }
    if let Some((used, size)) = reading.disk
        && size > 0
        && size.saturating_sub(used) < 4096
    {
        return Some(Violation {
            kind: ViolationKind::Disk,
            detail: format!("the writable space (/tmp, a {size} byte tmpfs) is full"),
            limit: Some(limits.disk_bytes),
            measured: Some(used),
        });
    }
    None
}

/// Runs the job; the container is always removed (in the background, tracked by `cleanup`).
pub async fn execute(exec: Execution<'_>, launched: Launched, events: &EventSink) -> Result<RunReport, SandboxError> {
    let Launched {
        id,
        image,
        attach,
        host_pid,
        ..
    } = launched;
    let engine = exec.engine;
    let result = supervise(&exec, &id, &image, attach, host_pid, events).await;
    let cleanup_engine = engine.clone();
    let cleanup_id = id.clone();
    exec.cleanup.spawn(async move {
        if let Err(error) = docker::remove_container(&cleanup_engine, &cleanup_id).await {
            tracing::warn!(container = %cleanup_id, %error, "removing a sandbox container; the next start removes it");
        }
    });
    result
}

async fn supervise(
    exec: &Execution<'_>,
    id: &str,
    image: &str,
    attach: bollard::container::AttachContainerResults,
    host_pid: Option<u32>,
    events: &EventSink,
) -> Result<RunReport, SandboxError> {
    let engine = exec.engine;
    let limits = exec.limits;
    let bollard::container::AttachContainerResults { mut output, mut input } = attach;
    events.send(SandboxEvent::Started(ExecStarted {
        container: id.to_owned(),
        image: image.to_owned(),
        limits,
        warm: exec.warm,
    }));

    let observer = Observer::for_container(&exec.config.host, engine, id, host_pid);
    observer.reset_peak();
    let mut tally = Tally::default();
    if let Some(reading) = observer.read().await {
        tally.add(reading);
    }

    let started = Instant::now();
    let frame = exec.frame.clone();
    let stdin = exec.stdin.clone();
    // Its own task: a program that never reads stdin must not stall the watch loop.
    let writer = tokio::spawn(async move {
        let result = async {
            input.write_all(&frame).await?;
            input.write_all(&stdin).await?;
            input.flush().await?;
            input.shutdown().await
        }
        .await;
        if let Err(error) = result {
            tracing::debug!(%error, "stdin of the sandbox closed early");
        }
    });

    let mut out = Output {
        cap: limits.output_bytes,
        seen: 0,
        stdout: Vec::new(),
        stderr: Vec::new(),
        seq: 0,
        truncated: false,
    };
    let deadline = tokio::time::sleep(Duration::from_millis(limits.wall_ms));
    tokio::pin!(deadline);
    let mut watch = tokio::time::interval(Duration::from_millis(exec.config.limits.watch_ms.max(1)));
    watch.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let sample_every = Duration::from_millis(exec.config.limits.sample_ms.max(exec.config.limits.watch_ms).max(1));
    let mut next_sample = started + sample_every;
    let mut violation: Option<Violation> = None;
    let mut stdout_end = EndWatch::new(&exec.end_marker);
    let mut stderr_end = EndWatch::new(&exec.end_marker);
    let mut processes = activity::Processes::default();
    if let Some(pid) = host_pid {
        processes.ignore(pid);
    }

    loop {
        tokio::select! {
            biased;
            item = output.next() => match item {
                Some(Ok(LogOutput::StdOut { message })) | Some(Ok(LogOutput::Console { message })) => {
                    let data = stdout_end.feed(&message);
                    let (chunk, over) = out.push(OutputStream::Stdout, &data);
                    if let Some(chunk) = chunk { events.send(SandboxEvent::Output(chunk)); }
                    if over { violation = Some(output_violation(&out)); break; }
                    if stdout_end.seen && stderr_end.seen { break; }
                }
                Some(Ok(LogOutput::StdErr { message })) => {
                    let data = stderr_end.feed(&message);
                    let (chunk, over) = out.push(OutputStream::Stderr, &data);
                    if let Some(chunk) = chunk { events.send(SandboxEvent::Output(chunk)); }
                    if over { violation = Some(output_violation(&out)); break; }
                    if stdout_end.seen && stderr_end.seen { break; }
                }
                Some(Ok(LogOutput::StdIn { .. })) => {}
                Some(Err(error)) => {
                    tracing::warn!(container = %id, %error, "the attach stream failed");
                    break;
                }
                // The container stopped (PID 1 exited or was killed).
                None => {
                    for (stream, watch) in [(OutputStream::Stdout, &mut stdout_end), (OutputStream::Stderr, &mut stderr_end)] {
                        let (chunk, _) = out.push(stream, &watch.flush());
                        if let Some(chunk) = chunk { events.send(SandboxEvent::Output(chunk)); }
                    }
                    break;
                }
            },
            _ = &mut deadline => {
                violation = Some(Violation {
                    kind: ViolationKind::Timeout,
                    detail: format!("still running after the {} ms wall-time limit; killed", limits.wall_ms),
                    limit: Some(limits.wall_ms),
                    measured: Some(started.elapsed().as_millis() as u64),
                });
                break;
            }
            _ = watch.tick() => {
                if let Some(reading) = observer.read().await {
                    tally.add(reading);
                    exec.memory_used.store(reading.memory_bytes, Ordering::Relaxed);
                    processes.observe(&observer);
                    if let Some(found) = check(&limits, &reading) {
                        violation = Some(found);
                        break;
                    }
                    if Instant::now() >= next_sample {
                        next_sample += sample_every;
                        events.send(SandboxEvent::Usage(UsageSample {
                            seq: tally.samples,
                            elapsed_ms: started.elapsed().as_millis() as u64,
                            memory_bytes: reading.memory_bytes,
                            cpu_ms: tally.cpu_ms(),
                            pids: reading.pids,
                        }));
                        tally.samples += 1;
                    }
                }
            }
        }
    }
    let wall = started.elapsed();
    // Let go of both halves of the attach stream before anything else: the engine does not mark
    // a container stopped until its output is copied out, so a kill while a flood sits unread in
    // the stream would wait for a reader that never comes.
    writer.abort();
    let _ = writer.await;
    drop(output);

    let killed = violation.is_some();
    let mut exit_code = None;
    let mut inside = None;
    if killed {
        docker::signal(engine, id, "SIGKILL").await?;
    } else {
        // The program is over and the container parked: its final state can be read.
        if let Some(reading) = observer.read().await {
            tally.add(reading);
            processes.observe(&observer);
            violation = check(&limits, &reading);
        }
        events.send(SandboxEvent::Activity(Activity {
            files_created: activity::files_left(&observer),
            processes: processes.seen(),
            network_attempts: vec![],
            untrusted: false,
        }));
        inside = activity::inside_report(&observer);
        exit_code = inside.as_ref().and_then(|r| r.exit_code);
        if exit_code.is_none() {
            // No way to read PID 1's report from outside: release it and take its exit status.
            exit_code = release_and_wait(engine, id, exec.config.limits.park_ms).await?;
            // An OOM kill of PID 1 itself ends the container before any counter is read.
            if violation.is_none() && exit_code == Some(137) && oom_killed(engine, id).await {
                violation = Some(Violation {
                    kind: ViolationKind::Memory,
                    detail: format!(
                        "killed by the OOM killer at the {} byte memory limit",
                        limits.memory_bytes
                    ),
                    limit: Some(limits.memory_bytes),
                    measured: Some(tally.peak_memory),
                });
            }
        }
    }
    if violation.is_some() {
        // The program did not end by itself.
        exit_code = None;
    }
    if let Some(report) = inside
        && !report.network_attempts.is_empty()
    {
        events.send(SandboxEvent::Activity(Activity {
            files_created: vec![],
            processes: vec![],
            network_attempts: report.network_attempts,
            untrusted: true,
        }));
    }

    let usage = Usage {
        wall_ms: wall.as_millis() as u64,
        cpu_ms: tally.cpu_ms(),
        peak_memory_bytes: tally.peak_memory,
        peak_pids: tally.peak_pids,
        stdout_bytes: out.stdout.len() as u64,
        stderr_bytes: out.stderr.len() as u64,
    };
    if let Some(v) = &violation {
        tracing::info!(request = exec.request_id, kind = v.kind.as_str(), detail = %v.detail, "violation");
    }
    Ok(RunReport {
        exit_code,
        stdout: out.stdout,
        stderr: out.stderr,
        output_truncated: out.truncated,
        violation,
        usage,
    })
}

/// Lets the parked bootstrap exit and returns its exit status (the program's).
async fn release_and_wait(engine: &Engine, id: &str, park_ms: u64) -> Result<Option<i64>, SandboxError> {
    docker::signal(engine, id, "SIGUSR1").await?;
    let mut wait = engine.docker.wait_container(
        id,
        Some(WaitContainerOptionsBuilder::default().condition("not-running").build()),
    );
    match tokio::time::timeout(Duration::from_millis(park_ms + 5_000), wait.next()).await {
        Ok(Some(Ok(response))) => Ok(Some(response.status_code)),
        // bollard reports a non-zero exit as an error; it is the program's exit status.
        Ok(Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. }))) => Ok(Some(code)),
        Ok(Some(Err(error))) => Err(engine.err(error)),
        Ok(None) | Err(_) => Ok(None),
    }
}

async fn oom_killed(engine: &Engine, id: &str) -> bool {
    engine
        .docker
        .inspect_container(id, None::<bollard::query_parameters::InspectContainerOptions>)
        .await
        .ok()
        .and_then(|i| i.state)
        .and_then(|s| s.oom_killed)
        == Some(true)
}

fn output_violation(out: &Output) -> Violation {
    Violation {
        kind: ViolationKind::Output,
        detail: format!(
            "stdout and stderr passed the {} byte output limit; reading stopped and the container was killed",
            out.cap
        ),
        limit: Some(out.cap),
        measured: Some(out.seen),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_capped_across_streams() {
        let mut out = Output {
            cap: 10,
            seen: 0,
            stdout: vec![],
            stderr: vec![],
            seq: 0,
            truncated: false,
        };
        let (chunk, over) = out.push(OutputStream::Stdout, b"123456");
        assert_eq!(chunk.unwrap().data, b"123456");
        assert!(!over);
        let (chunk, over) = out.push(OutputStream::Stderr, b"abcdef");
        let chunk = chunk.unwrap();
        assert_eq!((chunk.data.as_slice(), chunk.seq), (&b"abcd"[..], 1));
        assert!(over && out.truncated);
        let (chunk, over) = out.push(OutputStream::Stdout, b"x");
        assert!(chunk.is_none() && over);
        assert_eq!(out.seen, 13);
    }

    #[test]
    fn the_end_marker_is_found_across_chunks_and_kept_out_of_the_output() {
        let marker = end_marker();
        let bytes = marker.as_bytes();
        let mut watch = EndWatch::new(bytes);
        let mut got = watch.feed(b"hello\n");
        got.extend(watch.feed(&bytes[..5]));
        assert!(!watch.seen);
        got.extend(watch.feed(&bytes[5..]));
        assert!(watch.seen);
        assert_eq!(got, b"hello\n");
        assert!(watch.feed(b"after").is_empty());

        // A prefix of the marker that turns out not to be it is output after all.
        let mut watch = EndWatch::new(bytes);
        let mut got = watch.feed(&bytes[..3]);
        got.extend(watch.feed(b"xyz"));
        got.extend(watch.flush());
        assert_eq!(got, [&bytes[..3], b"xyz"].concat());
        assert!(!watch.seen);
    }

    #[test]
    fn readings_become_violations() {
        let limits = crate::SandboxConfig::default().quotas.untrusted;
        assert!(check(&limits, &Reading::default()).is_none());
        let forks = Reading {
            fork_failures: 2,
            pids: 64,
            ..Default::default()
        };
        assert_eq!(check(&limits, &forks).unwrap().kind, ViolationKind::Pids);
        let oom = Reading {
            oom_kills: 1,
            ..Default::default()
        };
        assert_eq!(check(&limits, &oom).unwrap().kind, ViolationKind::Memory);
        let full = Reading {
            disk: Some((16 << 20, 16 << 20)),
            ..Default::default()
        };
        assert_eq!(check(&limits, &full).unwrap().kind, ViolationKind::Disk);
        let half = Reading {
            disk: Some((8 << 20, 16 << 20)),
            ..Default::default()
        };
        assert!(check(&limits, &half).is_none());
    }
}
