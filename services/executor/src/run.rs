//! One job in one launched container, top-down. [`execute`] hands the bootstrap its frame,
//! supervises the run in four phases, and removes the container whatever happened:
//!
//! 1. [`Run::watch`]: stream the output under its cap and read the kernel's counters until the
//!    program is over and its output complete, a limit is crossed, or the container stops;
//! 2. [`Run::post_mortem`]: while PID 1 waits parked, read the final counters and what the
//!    program left (files, processes, and the untrusted inside report);
//! 3. [`Run::stopped`] takes the exit status of a container that stopped by itself from the
//!    engine (`docker wait`), or the container is killed on a violation; a parked PID 1 is let
//!    go later, as upkeep (below);
//! 4. [`Run::report`]: the activity events, usage and violation, into a [`RunReport`].
//!
//! What follows a run (releasing a parked PID 1, which tears the container down, checking the
//! engine's exit status, removing the container) waits for a quiet moment (`quiet.rs`), so that
//! the engine's work does not share the CPU with the run's result and receipt.
//!
//! Nothing the program can write decides anything here, and nothing is taken on trust from a
//! stream that may have been cut. Stdout opens with PID 1's start marker, written once the whole
//! job is in: without it the job never provably reached the container. Watched from the host,
//! the end of the program is PID 1's own name (`CODE:TOKEN`, which no other process can set)
//! with the pids cgroup holding PID 1 alone; the name carries the exit status PID 1 got from
//! `waitpid`; the end of each output stream is a marker PID 1 writes on request behind
//! everything the program wrote, whose token was drawn after the program's last process died.
//! The engine's `docker wait` status is checked against it afterwards. Not watched from the
//! host, the end is the container's stop as the engine confirms it (`docker wait`), with both
//! output streams ending in PID 1's end marker. A stream that ends or fails any other way (the
//! engine dropped the connection, a warm container lost its stdin before its job) ends the run
//! as [`SandboxError::Interrupted`], never with a status or output made up from what was left.
//! What the program writes on stdout and stderr is only ever its output.

use crate::activity::{self, InsideReport};
use crate::config::SandboxConfig;
use crate::docker::{self, ContainerEngine};
use crate::events::EventSink;
use crate::launch::{Frame, Launched};
use crate::monitor::{Finished, Observer};
use crate::outputs;
use crate::quiet::Quiet;
use crate::tally::{Output, StartWatch, StreamEnd, Tally, check, output_violation};
use crate::{RunReport, SandboxError, SandboxEvent};
use airlock_protocol::{
    Activity, ExecStarted, Limits, OutputFile, OutputStream, Usage, UsageSample, Violation, ViolationKind,
};
use bollard::container::{AttachContainerResults, LogOutput};
use futures::StreamExt;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio_util::sync::CancellationToken;
use tokio_util::task::{AbortOnDropHandle, TaskTracker};

/// The container's output as the engine streams it.
type OutputStreamOf = Pin<Box<dyn futures::Stream<Item = Result<LogOutput, bollard::errors::Error>> + Send>>;

/// How long the engine may take to stop a released container, beyond `park_ms`, before the
/// check of its exit status gives up.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// What [`execute`] needs besides the container.
pub struct Execution<'a> {
    pub engine: &'a ContainerEngine,
    pub config: &'a SandboxConfig,
    pub request_id: &'a str,
    pub limits: Limits,
    pub runtime: airlock_protocol::Runtime,
    /// The job as the bootstrap receives it; its `park_ms` is cleared when the run cannot be
    /// watched from the host (nothing would look at a parked container).
    pub frame: Frame,
    pub stdin: Vec<u8>,
    pub warm: bool,
    /// Which run of the request this is.
    pub attempt: u32,
    /// Processes of Airlock's own in the sandbox besides PID 1 ([`Launched::helpers`]).
    pub helpers: u32,
    /// Where the monitor reports the job's memory use (for admission of other jobs).
    pub memory_used: Arc<AtomicU64>,
    /// Background removals, awaited at shutdown.
    pub cleanup: &'a TaskTracker,
    /// Runs in flight: upkeep after this run waits for quiet.
    pub quiet: &'a Arc<Quiet>,
    /// Cancelled at shutdown, when upkeep no longer waits.
    pub stop: &'a CancellationToken,
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
    let result = supervise(&exec, &id, &image, attach, host_pid, events).await;
    let engine = exec.engine.clone();
    // The status PID 1 showed, to be checked against the engine's once the container stopped.
    let (shown, parked) = match &result {
        Ok((_, end)) => (end.shown, end.parked),
        _ => (None, false),
    };
    let stop_bound = exec.config.limits.park + STOP_GRACE;
    let (quiet, stop) = (exec.quiet.clone(), exec.stop.clone());
    exec.cleanup.spawn(async move {
        tokio::select! {
            _ = quiet.settled(crate::quiet::UPKEEP_BOUND) => {}
            _ = stop.cancelled() => {}
        }
        // The program is over and its result known; a parked PID 1 that cannot be released
        // exits by itself after `park`.
        if parked && let Err(error) = docker::signal(&engine, &id, "SIGUSR1").await {
            tracing::warn!(container = %id, %error, "releasing PID 1; it exits by itself");
        }
        if let Some(shown) = shown {
            check_engine_status(&engine, &id, shown, stop_bound).await;
        }
        docker::remove_container_eventually(&engine, &id).await;
    });
    result.map(|(report, _)| report)
}

/// How PID 1 was left at the end of a run.
#[derive(Clone, Copy, Default)]
struct LeftBehind {
    /// The exit status PID 1 showed (in its name, or behind the seal).
    shown: Option<i64>,
    /// PID 1 waits, parked, for SIGUSR1.
    parked: bool,
}

/// The engine's record of the exit status (`docker wait`) must be the one PID 1 showed in its
/// name: they are the same `waitpid` result, by two ways out. A difference is a defect of the
/// sandbox, never of the program, and is logged as one.
async fn check_engine_status(engine: &ContainerEngine, id: &str, shown: i64, bound: Duration) {
    let asked = Instant::now();
    match tokio::time::timeout(bound, docker::exit_status(engine, id)).await {
        Ok(Ok(status)) if status == shown => {
            tracing::debug!(container = %id, after_us = asked.elapsed().as_micros() as u64, "the engine confirmed the exit status");
        }
        Ok(Ok(status)) => tracing::error!(
            container = %id,
            shown,
            engine = status,
            "PID 1 showed another exit status than the engine recorded"
        ),
        Ok(Err(error)) => tracing::warn!(container = %id, %error, "the engine's exit status is unknown"),
        Err(_) => tracing::warn!(container = %id, "the released container did not stop in time"),
    }
}

/// How long the output already written is read after a violation, before the kill.
const OUTPUT_AFTER_VIOLATION: Duration = Duration::from_millis(100);

/// The four phases, in order. Returns the report and how PID 1 was left.
async fn supervise(
    exec: &Execution<'_>,
    id: &str,
    image: &str,
    attach: AttachContainerResults,
    host_pid: Option<u32>,
    events: &EventSink,
) -> Result<(RunReport, LeftBehind), SandboxError> {
    let AttachContainerResults { mut output, input } = attach;
    let mut run = Run::start(exec, id, image, host_pid, events).await;
    let mut frame = exec.frame.clone();
    if !run.observer.is_host() {
        frame.park_ms = 0;
    }
    // Under gVisor PID 1 is another user than the program, so it can seal the run: the end is
    // then read from the stream itself, without waiting for the engine to record the exit
    // (which it does only after gVisor's teardown, about 150 ms).
    if exec.runtime == airlock_protocol::Runtime::Runsc {
        frame.seal = true;
        run.start = StartWatch::sealed();
    }
    let writer = feed(input, frame.encode()?, exec.stdin.clone());
    let ending = run.watch(&mut output).await;
    if run.wall.is_zero() {
        run.wall = run.started.elapsed();
    }
    let mut left = LeftBehind::default();
    let ended = match ending {
        Ending::ProgramOver(exit_code) => {
            left = LeftBehind {
                shown: Some(exit_code),
                parked: true,
            };
            // Where a run's time goes, for `RUST_LOG=airlock_executor::run=debug`.
            tracing::debug!(
                wall_us = run.wall.as_micros() as u64,
                output_ended_us = run.started.elapsed().as_micros() as u64,
                "program over"
            );
            let found = run.post_mortem().await;
            tracing::debug!(
                post_mortem_us = run.started.elapsed().as_micros() as u64,
                "post-mortem done"
            );
            Ok(Ended::over(exit_code, found))
        }
        Ending::ContainerStopped => run.stopped().await,
        Ending::Sealed(exit_code) => {
            left.shown = Some(exit_code);
            run.sealed_end(exit_code).await
        }
        Ending::Violation(violation) => {
            // What the program wrote before a violation the kernel's counters showed (memory,
            // disk, pids, time) is its output, and may still be in the stream: read what comes
            // within a moment (at most up to the output cap), or it was lost under load.
            if violation.kind != ViolationKind::Output {
                let until = tokio::time::Instant::now() + OUTPUT_AFTER_VIOLATION;
                while let Ok(item) = tokio::time::timeout_at(until, output.next()).await {
                    if !matches!(run.take(item), Flow::More) {
                        break;
                    }
                }
            }
            // Let go of both halves of the attach stream before the kill: the engine does not
            // mark a container stopped until its output is copied out, so a kill while a flood
            // sits unread in the stream would wait for a reader that never comes.
            writer.abort();
            drop(output);
            // The violation is what the kernel's counters or the clock showed: it stands even if
            // the engine cannot be reached to kill (PID 1's own net kills at wall + grace).
            kill(exec, id).await;
            Ok(Ended::killed(violation))
        }
        Ending::Lost(reason) => {
            writer.abort();
            drop(output);
            kill(exec, id).await;
            Err(run.interrupted(reason))
        }
    };
    writer.abort();
    Ok((run.report(ended?), left))
}

/// Kills a container whose run ended, as far as the engine can be reached.
async fn kill(exec: &Execution<'_>, id: &str) {
    if let Err(error) = docker::signal(exec.engine, id, "SIGKILL").await {
        tracing::warn!(container = %id, %error, "killing a sandbox container; it is removed later");
    }
}

/// Writes the frame and the program's stdin, then closes stdin; its own task, so that a program
/// that never reads stdin does not stall the watch.
fn feed(mut input: Pin<Box<dyn AsyncWrite + Send>>, frame: Vec<u8>, stdin: Vec<u8>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
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
    })
}

/// Why [`Run::watch`] stopped.
enum Ending {
    /// Every process of the program is gone and all of its output was read; PID 1 waits,
    /// parked, to be released. The program's exit status, as PID 1 showed it.
    ProgramOver(i64),
    /// The engine ended the attach stream: the container stopped (PID 1 exited or was killed),
    /// or the stream was lost; [`Run::stopped`] tells which.
    ContainerStopped,
    /// A sealed run's stdout and stderr ended with PID 1's marker of the seal, and stdout gave
    /// the program's exit status behind it: all of the program's output was read, and the
    /// program is over (see `StartWatch`).
    Sealed(i64),
    /// A limit was crossed; the container must be killed.
    Violation(Violation),
    /// The run can no longer be followed (the engine's stream failed, the end PID 1 showed
    /// never came through it, the job was never acknowledged): why.
    Lost(String),
}

/// What the post-mortem found while PID 1 was parked.
struct Found {
    outside: Activity,
    inside: Option<InsideReport>,
    violation: Option<Violation>,
    files: Vec<OutputFile>,
}

/// How the run ended: the program's exit status (none when it was killed for a violation), and
/// what was found after it.
struct Ended {
    exit_code: Option<i64>,
    violation: Option<Violation>,
    outside: Option<Activity>,
    inside: Option<InsideReport>,
    /// The files under `out/`, or why they were not looked for.
    files: Result<Vec<OutputFile>, String>,
}

/// Why a run's files were not looked for when the executor could not see its final state.
const FILES_NOT_SEEN: &str = "files under out/ are read while the sandbox holds still after the program; this sandbox could not be looked into (a remote engine, a container that stopped by itself, or a gVisor sandbox that ended without PID 1's files)";

impl Ended {
    fn over(exit_code: i64, found: Found) -> Ended {
        Ended {
            // A violation in the final reading: the program did not end by itself.
            exit_code: found.violation.is_none().then_some(exit_code),
            violation: found.violation,
            outside: Some(found.outside),
            inside: found.inside,
            files: Ok(found.files),
        }
    }

    fn killed(violation: Violation) -> Ended {
        Ended {
            exit_code: None,
            violation: Some(violation),
            outside: None,
            inside: None,
            files: Err("the run was killed for a violation; its files are not returned".to_owned()),
        }
    }
}

/// What one item of the attach stream means for the run.
enum Flow {
    More,
    Over(Violation),
    Ended,
    Failed(String),
}

/// The state of one run across its phases.
struct Run<'a> {
    exec: &'a Execution<'a>,
    id: &'a str,
    events: &'a EventSink,
    observer: Observer,
    tally: Tally,
    out: Output,
    /// PID 1's acknowledgement of the job, at the head of stdout.
    start: StartWatch,
    /// Where stdout and stderr end.
    ends: [StreamEnd; 2],
    /// Whether the ends are the seal's (read from the head of stdout).
    sealed: bool,
    processes: activity::Processes,
    started: Instant,
    wall: Duration,
    /// Not watched from the host, the engine's `docker wait`, asked when the run starts: its
    /// answer comes as the container stops, instead of one round trip after the stream ended.
    stop: Option<AbortOnDropHandle<Result<i64, SandboxError>>>,
}

impl<'a> Run<'a> {
    /// Announces the run and takes the first reading, before the job is handed over.
    async fn start(
        exec: &'a Execution<'a>,
        id: &'a str,
        image: &str,
        host_pid: Option<u32>,
        events: &'a EventSink,
    ) -> Run<'a> {
        events.send(SandboxEvent::Started(ExecStarted {
            container: id.to_owned(),
            image: image.to_owned(),
            limits: exec.limits,
            warm: exec.warm,
            runtime: exec.runtime,
            seccomp: Some(crate::seccomp::digest(exec.runtime)),
            attempt: exec.attempt,
        }));
        // Under gVisor the host sees the sandbox's own processes (its kernel and gofer), never
        // the program's: neither PID 1's name nor the process list would be the program's, so
        // the run is watched through the engine (and the host's count of refused forks).
        let observer = match exec.runtime {
            airlock_protocol::Runtime::Runc => Observer::for_container(&exec.config.host, exec.engine, id, host_pid),
            airlock_protocol::Runtime::Runsc => Observer::for_gvisor(
                &exec.config.host,
                exec.engine,
                id,
                host_pid,
                exec.limits.pids,
                exec.helpers,
            ),
        };
        // A warm container's idle interpreter does not count towards the job's peak.
        observer.reset_peak();
        let mut tally = Tally::default();
        if let Some(reading) = observer.read().await {
            tally.add(reading);
        }
        let mut processes = activity::Processes::default();
        if let Some(pid) = host_pid.filter(|_| observer.is_host()) {
            processes.ignore(pid);
        }
        let stop = (!observer.is_host()).then(|| {
            let (engine, id) = (exec.engine.clone(), id.to_owned());
            AbortOnDropHandle::new(tokio::spawn(async move { docker::exit_status(&engine, &id).await }))
        });
        Run {
            exec,
            id,
            events,
            observer,
            tally,
            out: Output::new(exec.limits.output_bytes),
            start: StartWatch::default(),
            ends: Default::default(),
            sealed: false,
            processes,
            started: Instant::now(),
            wall: Duration::ZERO,
            stop,
        }
    }

    /// The container's exit status once it stopped, as the engine records it: the answer to
    /// the wait asked at the start when there is one, else (or if that one failed) asked now.
    async fn engine_status(&mut self) -> Result<i64, SandboxError> {
        if let Some(asked) = self.stop.take()
            && let Ok(Ok(status)) = asked.await
        {
            return Ok(status);
        }
        docker::exit_status(self.exec.engine, self.id).await
    }

    /// Phase 1: output, counters, the wall time, and (from the host) whether the program is
    /// over, looked at more often while the run is young, so a trivial run ends in
    /// milliseconds without a long run costing more than one look per `watch_ms`. Once it is
    /// over, PID 1 is asked to end both output streams, and the watch ends when both ended.
    async fn watch(&mut self, output: &mut OutputStreamOf) -> Ending {
        let limits = self.exec.limits;
        let policy = &self.exec.config.limits;
        let deadline = tokio::time::sleep(Duration::from_millis(limits.wall_ms));
        tokio::pin!(deadline);
        let watch_every = policy.watch.max(Duration::from_millis(1));
        let mut counters = tokio::time::interval(watch_every);
        counters.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let sample_every = policy.sample.max(policy.watch).max(Duration::from_millis(1));
        let mut next_sample = self.started + sample_every;
        let from_host = self.observer.is_host();
        let mut next_end_check = tokio::time::Instant::now() + Duration::from_millis(1);
        let mut over: Option<(i64, tokio::time::Instant)> = None;
        loop {
            tokio::select! {
                biased;
                item = output.next() => match self.take(item) {
                    Flow::More => {}
                    Flow::Over(violation) => return Ending::Violation(violation),
                    Flow::Ended => return Ending::ContainerStopped,
                    Flow::Failed(error) => {
                        return Ending::Lost(format!("the engine's output stream failed: {error}"));
                    }
                },
                _ = &mut deadline, if over.is_none() => return self.deadline().await,
                _ = counters.tick() => {
                    if let Some(violation) = self.sample(&mut next_sample, sample_every).await {
                        return Ending::Violation(violation);
                    }
                }
                _ = tokio::time::sleep_until(next_end_check), if from_host && over.is_none() => {
                    if let Some(finished) = self.observer.finished() {
                        self.wall = self.started.elapsed();
                        over = Some((finished.exit_code, self.end_output(&finished).await));
                    } else {
                        let every = (self.started.elapsed() / 16).clamp(Duration::from_millis(1), watch_every);
                        next_end_check = tokio::time::Instant::now() + every;
                    }
                }
                _ = tokio::time::sleep_until(over.map_or(next_end_check, |(_, by)| by)), if over.is_some() => {
                    return Ending::Lost(
                        "PID 1 showed the program was over, but the end of its output never came through the engine's stream".into(),
                    );
                }
            }
            if let Some((exit_code, _)) = over
                && self.ends.iter().all(|end| end.seen)
            {
                return Ending::ProgramOver(exit_code);
            }
            if self.sealed
                && self.ends.iter().all(StreamEnd::complete)
                && let Some(exit_code) = self.ends[0].status()
            {
                self.wall = self.started.elapsed();
                return Ending::Sealed(exit_code);
            }
        }
    }

    /// Asks PID 1 (which showed the program is over) to write the end marker on both streams;
    /// returns by when they must have ended.
    async fn end_output(&mut self, finished: &Finished) -> tokio::time::Instant {
        for end in &mut self.ends {
            end.expect(&finished.token);
        }
        if !self.observer.signal_init(libc::SIGUSR2)
            && let Err(error) = docker::signal(self.exec.engine, self.id, "SIGUSR2").await
        {
            tracing::warn!(container = %self.id, %error, "asking PID 1 to end the output");
        }
        tokio::time::Instant::now() + self.exec.config.limits.park + STOP_GRACE
    }

    /// Keeps one item of the attach stream's output, under the cap.
    fn take(&mut self, item: Option<Result<LogOutput, bollard::errors::Error>>) -> Flow {
        let (stream, data) = match item {
            Some(Ok(LogOutput::StdOut { message })) | Some(Ok(LogOutput::Console { message })) => {
                (OutputStream::Stdout, message)
            }
            Some(Ok(LogOutput::StdErr { message })) => (OutputStream::Stderr, message),
            Some(Ok(LogOutput::StdIn { .. })) => return Flow::More,
            Some(Err(error)) => return Flow::Failed(error.to_string()),
            None => {
                tracing::debug!(
                    stream_ended_us = self.started.elapsed().as_micros() as u64,
                    "the engine ended the output stream"
                );
                // What was held back as a possible marker is the program's after all, unless
                // it ends the stream.
                for (stream, end) in [OutputStream::Stdout, OutputStream::Stderr].into_iter().zip(0..2) {
                    let rest = self.ends[end].finish();
                    if self.keep(stream, &rest) {
                        return Flow::Over(output_violation(&self.out));
                    }
                }
                return Flow::Ended;
            }
        };
        tracing::trace!(
            at_us = self.started.elapsed().as_micros() as u64,
            len = data.len(),
            ?stream,
            "output"
        );
        let data = match stream {
            OutputStream::Stdout => {
                let program = self.start.feed(&data);
                if let Some(seal) = self.start.seal.take() {
                    self.ends[0].expect_with_status(&seal);
                    self.ends[1].expect(&seal);
                    self.sealed = true;
                }
                self.ends[0].feed(&program)
            }
            OutputStream::Stderr => self.ends[1].feed(&data),
        };
        if self.keep(stream, &data) {
            Flow::Over(output_violation(&self.out))
        } else {
            Flow::More
        }
    }

    /// The program's output under the cap, published as it comes; whether the cap was hit.
    fn keep(&mut self, stream: OutputStream, data: &[u8]) -> bool {
        if data.is_empty() {
            return false;
        }
        let (chunk, over) = self.out.push(stream, data);
        if let Some(chunk) = chunk {
            self.events.send(SandboxEvent::Output(chunk));
        }
        over
    }

    /// The run as interrupted, with why.
    fn interrupted(&self, reason: String) -> SandboxError {
        tracing::warn!(request = self.exec.request_id, container = %self.id, %reason, "run interrupted");
        SandboxError::Interrupted {
            container: self.id.to_owned(),
            reason,
        }
    }

    /// The wall time ran out before the end was seen: a timeout of the program's, unless the
    /// job was never acknowledged or (not watched from the host) the container had stopped
    /// without the engine's stream saying so.
    async fn deadline(&self) -> Ending {
        if !self.start.seen {
            return Ending::Lost("the container never acknowledged its job".into());
        }
        if !self.observer.is_host() && !docker::is_running(self.exec.engine, self.id).await {
            return Ending::Lost("the container stopped, and the engine's output stream never said so".into());
        }
        let timeout = self.timeout();
        if self.exec.runtime == airlock_protocol::Runtime::Runsc
            && let Some(violation) = self.last_look_inside().await
        {
            return Ending::Violation(violation);
        }
        Ending::Violation(timeout)
    }

    /// Under gVisor a pile of zombies or a full `/tmp` is seen only by a look inside, every
    /// 3 s (`inside.rs`), and under load looks were seen to miss their time: the run would then
    /// be called a timeout although the program had broken another limit long before, and
    /// slept or spun since. One more look, before the wall time is named as the cause.
    async fn last_look_inside(&self) -> Option<Violation> {
        // What the host counts now first: past the threads a look needs, a look stalls.
        let seen = self.observer.read().await;
        if let Some(violation) = seen.as_ref().and_then(|reading| check(&self.exec.limits, reading)) {
            return Some(violation);
        }
        let inside = crate::inside::look_once(self.exec.engine, self.id, self.exec.helpers).await?;
        let reading = crate::monitor::Reading {
            disk: Some(inside.disk),
            sandbox_processes: Some(inside.processes),
            ..seen.unwrap_or_default()
        };
        check(&self.exec.limits, &reading)
    }

    /// One look at the kernel's counters: a violation, or a usage sample when one is due.
    async fn sample(&mut self, next_sample: &mut Instant, sample_every: Duration) -> Option<Violation> {
        let reading = self.observer.read().await?;
        self.tally.add(reading);
        self.exec.memory_used.store(reading.memory_bytes, Ordering::Relaxed);
        self.processes.observe(&self.observer);
        if let Some(found) = check(&self.exec.limits, &reading) {
            return Some(found);
        }
        // Before the engine's first sample a reading holds the host's counts alone (under
        // gVisor): nothing to show as the run's usage yet.
        let sampled = reading.cpu_ns > 0;
        if sampled && Instant::now() >= *next_sample {
            *next_sample += sample_every;
            self.events.send(SandboxEvent::Usage(UsageSample {
                seq: self.tally.samples,
                elapsed_ms: self.started.elapsed().as_millis() as u64,
                memory_bytes: reading.memory_bytes,
                cpu_ms: self.tally.cpu_ms(),
                pids: reading.pids,
            }));
            self.tally.samples += 1;
        }
        None
    }

    fn timeout(&self) -> Violation {
        let wall_ms = self.exec.limits.wall_ms;
        Violation {
            kind: ViolationKind::Timeout,
            detail: format!("still running after the {wall_ms} ms wall-time limit; killed"),
            limit: Some(wall_ms),
            measured: Some(self.started.elapsed().as_millis() as u64),
        }
    }

    /// Phase 2: the program is over and PID 1 parked, so the container's final state holds
    /// still: its counters, the files left in its tmpfs, the processes seen, and what the
    /// program's audit hook reported (untrusted).
    async fn post_mortem(&mut self) -> Found {
        let mut violation = None;
        if let Some(reading) = self.observer.read().await {
            self.tally.add(reading);
            self.processes.observe(&self.observer);
            violation = check(&self.exec.limits, &reading);
        }
        let given: Vec<&str> = self.exec.frame.files.iter().map(|f| f.name.as_str()).collect();
        let files = activity::files_left(&self.observer, &given);
        let (processes, processes_omitted) = self.processes.seen();
        let returned = self
            .observer
            .container_root()
            .map(|root| outputs::collect(root, docker::WORKING_DIR))
            .unwrap_or_default();
        Found {
            outside: Activity {
                files_created: files.listed,
                files_omitted: files.omitted,
                files_omitted_bytes: files.omitted_bytes,
                processes,
                processes_omitted,
                ..Activity::default()
            },
            inside: activity::inside_report(&self.observer),
            violation,
            files: returned,
        }
    }

    /// Phase 3 when the engine's stream ended without the end seen from the host (not watched
    /// from the host, PID 1's safety net, an OOM kill of PID 1, or a lost stream): the exit
    /// status is the engine's (`docker wait`), and it is the program's only when the job was
    /// acknowledged and both output streams ended with PID 1's end marker. A container still
    /// running when its stream ended lost its stream; it is killed.
    async fn stopped(&mut self) -> Result<Ended, SandboxError> {
        let (engine, id) = (self.exec.engine, self.id);
        // A last look at the counters, while they may still be there: under gVisor a fork the
        // host refused at the pids limit ends the whole sandbox, so the stream's end can be the
        // first sign of it.
        if let Some(reading) = self.observer.read().await
            && let Some(violation) = check(&self.exec.limits, &reading)
        {
            return Ok(Ended::killed(violation));
        }
        let status = match tokio::time::timeout(STOP_GRACE, self.engine_status()).await {
            Ok(Ok(status)) => status,
            Ok(Err(error)) => {
                kill(self.exec, id).await;
                return Err(self.interrupted(format!(
                    "the engine's output stream ended and the container's exit could not be confirmed: {error}"
                )));
            }
            Err(_) => {
                kill(self.exec, id).await;
                return Err(self.interrupted(
                    "the engine's output stream ended while the container was still running: the stream was lost"
                        .into(),
                ));
            }
        };
        tracing::debug!(
            status,
            confirmed_us = self.started.elapsed().as_micros() as u64,
            "the engine confirmed the stop"
        );
        let mut violation = None;
        // An OOM kill of PID 1 itself ends the container before any counter shows it.
        if status == 137 && docker::oom_killed(engine, id).await {
            let limit = self.exec.limits.memory_bytes;
            violation = Some(Violation {
                kind: ViolationKind::Memory,
                detail: format!("killed by the OOM killer at the {limit} byte memory limit"),
                limit: Some(limit),
                measured: Some(self.tally.peak_memory),
            });
        } else if !self.start.seen {
            return Err(self.interrupted(
                "the container stopped without acknowledging its job: its input was lost before the job reached it"
                    .into(),
            ));
        } else if !self.ends.iter().all(|end| end.seen) {
            return Err(self.interrupted(format!(
                "the container stopped (status {status}), but its output did not end with PID 1's end marker: the engine's stream lost its end"
            )));
        }
        Ok(self.ended_unseen(violation.is_none().then_some(status), violation))
    }

    /// How a run ended that the executor could not look into afterwards (not from the host):
    /// the processes seen while it ran, and no files.
    fn ended_unseen(&self, exit_code: Option<i64>, violation: Option<Violation>) -> Ended {
        let (processes, processes_omitted) = self.processes.seen();
        Ended {
            exit_code,
            violation,
            outside: Some(Activity {
                processes,
                processes_omitted,
                ..Activity::default()
            }),
            inside: None,
            files: Err(FILES_NOT_SEEN.to_owned()),
        }
    }

    /// A sealed run's end: the status PID 1 wrote behind its marker, and a last look at the
    /// counters (a violation they show stands). A status of 137 (SIGKILL) may be an OOM kill
    /// only the engine can tell: that one waits for the engine as an unsealed run does.
    async fn sealed_end(&mut self, exit_code: i64) -> Result<Ended, SandboxError> {
        let files = self.sealed_files();
        // The program's own report (untrusted), which the host cannot read inside gVisor.
        let inside = self.ends[0]
            .sealed_tail()
            .map(|tail| activity::parse_inside(tail.report));
        if exit_code == 137 {
            let mut ended = self.stopped().await?;
            if ended.violation.is_none() {
                ended.files = files;
                ended.inside = inside;
            }
            return Ok(ended);
        }
        if let Some(reading) = self.observer.read().await
            && let Some(violation) = check(&self.exec.limits, &reading)
        {
            return Ok(Ended::killed(violation));
        }
        tracing::debug!(
            exit_code,
            sealed_us = self.started.elapsed().as_micros() as u64,
            "a sealed run ended"
        );
        let mut ended = self.ended_unseen(Some(exit_code), None);
        ended.files = files;
        ended.inside = inside;
        Ok(ended)
    }

    /// The files under `out/` that PID 1 sent behind its sealed end (under gVisor, where the
    /// host cannot read them), checked against the same bounds as from the host.
    fn sealed_files(&self) -> Result<Vec<OutputFile>, String> {
        match self.ends[0].sealed_tail() {
            Some(tail) => crate::sealed_files::parse(tail.files).map_err(|error| {
                tracing::warn!(container = %self.id, %error, "the files PID 1 sent are not returned");
                error.to_string()
            }),
            None => Err("PID 1's files section did not come behind its end".into()),
        }
    }

    /// Phase 4: the activity events, after all of the output, and the report.
    fn report(self, ended: Ended) -> RunReport {
        if let Some(outside) = ended.outside {
            self.events.send(SandboxEvent::Activity(outside));
        }
        if let Some(inside) = ended.inside
            && !inside.network_attempts.is_empty()
        {
            self.events.send(SandboxEvent::Activity(Activity {
                network_attempts: inside.network_attempts,
                network_attempts_omitted: inside.omitted,
                untrusted: true,
                ..Activity::default()
            }));
        }
        if let Some(v) = &ended.violation {
            tracing::info!(request = self.exec.request_id, kind = v.kind.as_str(), detail = %v.detail, "violation");
        }
        let usage = Usage {
            wall_ms: self.wall.as_millis() as u64,
            cpu_ms: self.tally.cpu_ms(),
            peak_memory_bytes: self.tally.peak_memory,
            peak_pids: self.tally.peak_pids,
            stdout_bytes: self.out.stdout.len() as u64,
            stderr_bytes: self.out.stderr.len() as u64,
        };
        let (files, files_unavailable) = match ended.files {
            Ok(files) => (files, None),
            Err(why) => (vec![], Some(why)),
        };
        RunReport {
            files,
            files_unavailable,
            exit_code: ended.exit_code,
            output_truncated: self.out.truncated,
            stdout: self.out.stdout,
            stderr: self.out.stderr,
            violation: ended.violation,
            usage,
        }
    }
}
