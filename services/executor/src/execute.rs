//! One decision, from its delivery to its terminal event: [`Executor::judge`] reads and checks it
//! as it comes in (refusals, denials and expiries are concluded at once, approvals wait in the
//! queue of `dispatch`), then [`Executor::start`] claims the request, runs it while keeping the
//! claim's lease, and publishes its events and its one terminal event.
//!
//! A run the infrastructure interrupted (its executor died, the engine dropped its stream) is run
//! again once, in a fresh container, on whichever executor takes it (`[executor]
//! retry_interrupted`): the interruption is recorded in the request's record and announced with
//! a `retrying` progress event carrying the reason, both attempts' events are in the log, and
//! the client gets the second attempt's result. The program's own failures and violations are
//! results, never retried.

use crate::audit_gate::AuditGate;
use crate::lease::{Lease, Liveness, Record, Runs};
use crate::service::{Authorized, ExecutorError, Unauthorized, authorize};
use crate::{Job, RunReport, Sandbox, SandboxError, SandboxEvent};
use airlock_bus::{Claim, Claims, Delivery, Ending, Publisher, Refuser, ServiceCounters};
use airlock_protocol::{
    Decision, DecisionSummary, Envelope, Event, MessageId, Outcome, Progress, RefusalReason, RequestId, Terminal,
    VerifierSet, now_ms,
};
use futures::StreamExt as _;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A run's events published before the first of them is acknowledged.
const EVENTS_IN_FLIGHT: usize = 16;
/// How long the server waits for an ack before redelivering: runs and waiting requests report
/// progress well within it.
pub(crate) const ACK_WAIT: Duration = Duration::from_secs(10);
/// How often a run or a waiting request tells the server it is still being worked on.
pub(crate) const HEARTBEAT: Duration = Duration::from_millis(ACK_WAIT.as_millis() as u64 / 3);

pub(crate) struct Executor {
    /// For reading whether a request's terminal event is already stored.
    pub(crate) events: async_nats::jetstream::Context,
    pub(crate) sandbox: Sandbox,
    pub(crate) gate_keys: VerifierSet,
    pub(crate) publisher: Publisher,
    pub(crate) refuser: Refuser,
    pub(crate) records: Claims,
    pub(crate) runs: Runs,
    pub(crate) counters: ServiceCounters,
    pub(crate) audit: std::sync::Arc<AuditGate>,
    /// Runs of one request after the first, when the infrastructure interrupted it.
    pub(crate) retry_interrupted: u32,
    /// Cancelled once the runs in progress have ended (or could not end in time): what is
    /// still being published or acknowledged then gives up.
    pub(crate) stop: CancellationToken,
    /// Clients' cancellations, and which container runs which request here.
    pub(crate) cancels: std::sync::Arc<crate::cancel::Cancels>,
}

/// A run as it came back: its report (or why it has none), the events that could not be
/// recorded, and the output it published on the way.
struct Ran {
    report: Result<RunReport, SandboxError>,
    unrecorded: Option<String>,
    output: Output,
}

/// The output a run published, kept for a run whose report never comes (a cancelled run's
/// container is killed before PID 1's end): no more than the run's own output limit lets it
/// write.
#[derive(Default)]
struct Output {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

impl Output {
    fn add(&mut self, chunk: &airlock_protocol::OutputChunk) {
        match chunk.stream {
            airlock_protocol::OutputStream::Stdout => self.stdout.extend_from_slice(&chunk.data),
            airlock_protocol::OutputStream::Stderr => self.stderr.extend_from_slice(&chunk.data),
        }
    }
}

/// What a delivery is, read and checked as it comes in.
pub(crate) enum Judged {
    /// An approval to run: it waits for its turn.
    Run {
        rid: RequestId,
        authorized: Box<Authorized>,
    },
    /// A denial: nothing to run, nothing wrong.
    NothingToRun,
    /// Not a valid decision for this executor to act on.
    Refuse(RefusalReason, String),
    /// Valid but too late.
    Expired {
        rid: RequestId,
        decision: Option<Box<Decision>>,
        detail: String,
    },
}

/// How a started request left the executor.
pub(crate) enum Started {
    /// Done with here (ended, refused, or left to the executor whose run goes on).
    Settled,
    /// It must wait again, first of its client's: its container never took the job (the engine
    /// went away), or its run was interrupted and is to be run again.
    Again,
}

/// What claiming a request came to.
enum Claimed {
    /// Ours to run, as this attempt, with the record at this revision.
    Won {
        revision: u64,
        attempt: u32,
    },
    Handled(Handled),
}

/// How a delivery was handled.
enum Handled {
    Done,
    /// Its run is going on elsewhere (or here): look again after this long.
    Later(Duration),
    /// Back to the queue (see [`Started::Again`]).
    Again,
}

impl Executor {
    /// Reads and checks a delivery as it comes in (no I/O): what it is, and whether the decision
    /// authorizes a run now.
    pub(crate) fn judge(&self, delivery: &Delivery) -> Judged {
        let envelope = match delivery.envelope() {
            Ok(e) => e,
            Err(error) => return Judged::Refuse(RefusalReason::from(&error), airlock_bus::error_text(&error)),
        };
        let rid = envelope.request_id.clone();
        let Event::Decided(decided) = envelope.event else {
            return Judged::Refuse(RefusalReason::SubjectMismatch, "not a decision".into());
        };
        self.counters.incr("decisions");
        match authorize(&rid, &decided, &self.gate_keys, now_ms()) {
            Ok(authorized) => Judged::Run {
                rid,
                authorized: Box::new(authorized),
            },
            Err(Unauthorized::NothingToRun) => Judged::NothingToRun,
            Err(Unauthorized::Refuse(reason, detail)) => Judged::Refuse(reason, detail),
            Err(Unauthorized::Expired(detail)) => Judged::Expired {
                rid,
                decision: decided.signed.peek::<Decision>().map(Box::new),
                detail,
            },
        }
    }

    /// Concludes a delivery that runs nothing, and settles it.
    pub(crate) async fn conclude(&self, delivery: Delivery, judged: Judged) {
        let outcome = match judged {
            Judged::Run { .. } | Judged::NothingToRun => Ok(()),
            Judged::Refuse(reason, detail) => self.refuse(&delivery, reason, detail).await,
            Judged::Expired { rid, decision, detail } => {
                self.expire(&delivery, &rid, decision.as_deref(), detail).await
            }
        };
        delivery.settle(outcome, &self.refuser, &self.stop).await;
    }

    /// Ends a request whose decision or deadline passed before it could run (unless an earlier
    /// decision already ran it).
    pub(crate) async fn expire(
        &self,
        delivery: &Delivery,
        rid: &RequestId,
        decision: Option<&Decision>,
        detail: String,
    ) -> Result<(), ExecutorError> {
        self.refuse(delivery, RefusalReason::Expired, detail.clone()).await?;
        let decision_id = decision.map(|d| d.decision_id.clone()).unwrap_or_default();
        let record = Record::Done {
            stream_seq: delivery.position().0,
            decision_id,
            outcome: Outcome::Expired,
        };
        if let Claim::Won { .. } = self.records.claim(rid.as_str(), &record).await? {
            let mut terminal = Terminal::without_run(Outcome::Expired, detail);
            terminal.decision = decision.map(|d| DecisionSummary {
                decision: "expired".into(),
                ..DecisionSummary::of(d)
            });
            self.publisher.emit(rid, Event::Terminal(Box::new(terminal))).await?;
        }
        Ok(())
    }

    /// Ends a request its client cancelled while it waited for its turn (unless an earlier
    /// decision already ran it).
    pub(crate) async fn cancel_waiting(
        &self,
        delivery: &Delivery,
        rid: &RequestId,
        authorized: &Authorized,
    ) -> Result<(), ExecutorError> {
        let Some(cancel) = self.cancels.asked(rid) else {
            return Ok(());
        };
        let record = Record::Done {
            stream_seq: delivery.position().0,
            decision_id: authorized.decision.decision_id.clone(),
            outcome: Outcome::Cancelled,
        };
        if let Claim::Won { .. } = self.records.claim(rid.as_str(), &record).await? {
            self.counters.incr("cancelled");
            let mut terminal = self.terminal_base(authorized, Outcome::Cancelled);
            terminal.reason = Some(cancel.ended_reason(rid));
            self.publisher.emit(rid, Event::Terminal(Box::new(terminal))).await?;
        }
        Ok(())
    }

    /// Runs an authorized request whose turn came, and settles its delivery unless it must wait
    /// again.
    pub(crate) async fn start(&self, delivery: &Delivery, rid: &RequestId, authorized: &Authorized) -> Started {
        match self.execute(delivery, rid, authorized).await {
            Ok(Handled::Again) => Started::Again,
            Ok(Handled::Later(delay)) => {
                delivery.retry_after(delay).await;
                Started::Settled
            }
            Ok(Handled::Done) => {
                delivery
                    .settle(Ok::<(), ExecutorError>(()), &self.refuser, &self.stop)
                    .await;
                Started::Settled
            }
            Err(error) => {
                delivery.settle(Err(error), &self.refuser, &self.stop).await;
                Started::Settled
            }
        }
    }

    /// Claims the request, runs it while keeping the claim's lease, publishes its events and
    /// its terminal event.
    async fn execute(
        &self,
        delivery: &Delivery,
        rid: &RequestId,
        authorized: &Authorized,
    ) -> Result<Handled, ExecutorError> {
        // The decision message's stream sequence tells a redelivery of the same message (after a
        // crash) from a replay of the decision in a new message.
        let stream_seq = delivery.position().0;
        let decision_id = authorized.decision.decision_id.clone();
        let (revision, attempt) = match self.claim(delivery, rid, authorized).await? {
            Claimed::Won { revision, attempt } => (revision, attempt),
            Claimed::Handled(handled) => return Ok(handled),
        };
        let record = self.running(stream_seq, &decision_id, attempt);
        let _in_progress = self.runs.enter(rid.as_str());
        let lease = Lease::new(&self.records, rid.as_str(), record, revision);
        if let Some(cancel) = self.cancels.lookup(&self.events, rid).await {
            // Its client cancelled it before it could start: nothing runs.
            self.counters.incr("cancelled");
            let mut terminal = self.terminal_base(authorized, Outcome::Cancelled);
            terminal.reason = Some(cancel.ended_reason(rid));
            self.finish(rid, terminal, stream_seq, decision_id, lease.revision())
                .await?;
            return Ok(Handled::Done);
        }
        let ran = self.run_leased(delivery, rid, authorized, attempt, &lease).await;
        self.cancels.ended(rid);
        let Some(Ran {
            report,
            unrecorded,
            output,
        }) = ran
        else {
            return Ok(Handled::Done);
        };
        // Cancelled while it ran: the killed container's stream ended without PID 1's end, so
        // there is no report, and the output the run published until then is what it wrote. A
        // run that reports came to its own end first (the cancellation was too late) and ends
        // as it did.
        if report.is_err()
            && let Some(cancel) = self.cancels.asked(rid)
        {
            self.counters.incr("cancelled");
            let mut terminal = self.terminal_base(authorized, Outcome::Cancelled);
            terminal.stdout = output.stdout;
            terminal.stderr = output.stderr;
            terminal.reason = Some(cancel.ended_reason(rid));
            self.finish(rid, terminal, stream_seq, decision_id, lease.revision())
                .await?;
            return Ok(Handled::Done);
        }
        let terminal = match report {
            Ok(report) => {
                let mut terminal = self.terminal_of(authorized, report);
                if let Some(unrecorded) = unrecorded {
                    // The run's result stands (its output is in this terminal event), but the
                    // record must not look complete when some of its events are missing.
                    let said = terminal.reason.take().map(|r| format!("{r}; ")).unwrap_or_default();
                    terminal.reason = Some(format!("{said}{unrecorded}"));
                }
                terminal
            }
            Err(error) if !error.may_have_run() => {
                if let SandboxError::ShuttingDown = error {
                    // Nothing of it ran: the claim goes back, and the next executor runs it.
                    self.give_back(rid, stream_seq, &decision_id, attempt, lease.revision())
                        .await?;
                    return Err(SandboxError::ShuttingDown.into());
                }
                if error.is_docker_unreachable() {
                    // Nothing of it ran either: it waits for the engine, first of its client's.
                    tracing::warn!(%error, "the engine went away before the run started; the request waits for it");
                    self.give_back(rid, stream_seq, &decision_id, attempt, lease.revision())
                        .await?;
                    return Ok(Handled::Again);
                }
                let mut terminal = self.terminal_base(authorized, Outcome::Failed);
                terminal.reason = Some(format!("the sandbox failed: {error}"));
                terminal
            }
            Err(error) => {
                self.counters.incr("interrupted");
                let reason = error.to_string();
                if attempt <= self.retry_interrupted {
                    self.retry(rid, stream_seq, &decision_id, attempt, &reason, lease.revision())
                        .await?;
                    return Ok(Handled::Again);
                }
                let mut terminal = self.terminal_base(authorized, Outcome::Failed);
                terminal.reason = Some(gave_up(&reason, attempt));
                terminal
            }
        };
        self.finish(rid, terminal, stream_seq, decision_id, lease.revision())
            .await?;
        Ok(Handled::Done)
    }

    fn running(&self, stream_seq: u64, decision_id: &MessageId, attempt: u32) -> Record {
        let now = now_ms();
        Record::Running {
            stream_seq,
            decision_id: decision_id.clone(),
            claimed_at_ms: now,
            holder: self.runs.me().clone(),
            heartbeat_ms: now,
            attempt,
        }
    }

    /// Claims the request for this delivery, or settles what an earlier claim left: a run that
    /// ended, one still going on (looked at again later), one whose executor died or that was
    /// interrupted (run again once, else it ends as interrupted), or a replay.
    async fn claim(
        &self,
        delivery: &Delivery,
        rid: &RequestId,
        authorized: &Authorized,
    ) -> Result<Claimed, ExecutorError> {
        let stream_seq = delivery.position().0;
        let decision_id = &authorized.decision.decision_id;
        let first = self.running(stream_seq, decision_id, 1);
        match self.records.claim(rid.as_str(), &first).await? {
            Claim::Won { revision } => Ok(Claimed::Won { revision, attempt: 1 }),
            Claim::Held {
                value: Record::Done { stream_seq: done, .. },
                ..
            } if done == stream_seq => {
                // Redelivered after the terminal event was published: nothing left to do.
                Ok(Claimed::Handled(Handled::Done))
            }
            Claim::Held {
                value:
                    Record::Running {
                        stream_seq: held,
                        holder,
                        heartbeat_ms,
                        attempt,
                        ..
                    },
                revision,
            } if held == stream_seq => {
                if self.runs.judge(rid.as_str(), &holder, heartbeat_ms, now_ms()) == Liveness::Alive {
                    tracing::info!(holder = ?holder, "redelivered while its run goes on; looking again later");
                    return Ok(Claimed::Handled(Handled::Later(ACK_WAIT)));
                }
                if let Some(handled) = self.ended_already(rid, stream_seq, decision_id, revision).await? {
                    return Ok(Claimed::Handled(handled));
                }
                // Its executor died while the code ran.
                let reason = format!(
                    "interrupted: the executor running it (instance {}) stopped while the code ran",
                    holder.instance
                );
                self.counters.incr("interrupted");
                if attempt > self.retry_interrupted {
                    return self
                        .give_up(rid, authorized, &reason, attempt, stream_seq, revision)
                        .await;
                }
                // Announced only once the take-over is won: a holder judged dead may only have
                // been cut off (a partition) and, its heartbeat back first, goes on with its run;
                // announced before, that request said "retrying" and then ended from its first
                // run.
                let claimed = self
                    .take_over(rid, stream_seq, decision_id, attempt + 1, revision)
                    .await?;
                if let Claimed::Won { .. } = claimed {
                    self.publisher
                        .progress(rid, Progress::Retrying { reason: reason.clone() })
                        .await;
                }
                Ok(claimed)
            }
            Claim::Held {
                value:
                    Record::Interrupted {
                        stream_seq: held,
                        attempt,
                        reason,
                        ..
                    },
                revision,
            } if held == stream_seq => {
                if let Some(handled) = self.ended_already(rid, stream_seq, decision_id, revision).await? {
                    return Ok(Claimed::Handled(handled));
                }
                if attempt > self.retry_interrupted {
                    return self
                        .give_up(rid, authorized, &reason, attempt, stream_seq, revision)
                        .await;
                }
                self.take_over(rid, stream_seq, decision_id, attempt + 1, revision)
                    .await
            }
            Claim::Held { .. } => {
                self.refuse(
                    delivery,
                    RefusalReason::Replayed,
                    format!("request {rid} was already executed"),
                )
                .await?;
                Ok(Claimed::Handled(Handled::Done))
            }
        }
    }

    /// Ends an interrupted request that has had all its attempts, as failed with the reason.
    async fn give_up(
        &self,
        rid: &RequestId,
        authorized: &Authorized,
        reason: &str,
        attempt: u32,
        stream_seq: u64,
        revision: u64,
    ) -> Result<Claimed, ExecutorError> {
        let mut terminal = self.terminal_base(authorized, Outcome::Failed);
        terminal.reason = Some(gave_up(reason, attempt));
        let decision_id = authorized.decision.decision_id.clone();
        self.finish(rid, terminal, stream_seq, decision_id, revision).await?;
        Ok(Claimed::Handled(Handled::Done))
    }

    /// When the request's terminal event is already stored although its record does not say
    /// so (the run ended and its terminal was published, but the record's update was lost in a
    /// partition or with its executor), brings the record up to date: the request is over and
    /// nothing of it may run again.
    async fn ended_already(
        &self,
        rid: &RequestId,
        stream_seq: u64,
        decision_id: &MessageId,
        revision: u64,
    ) -> Result<Option<Handled>, ExecutorError> {
        let subject = airlock_protocol::EventKind::Terminal.subject(rid);
        let stream = self
            .events
            .get_stream_no_info(airlock_protocol::subjects::EVENTS_STREAM)
            .await
            .map_err(|e| ExecutorError::EventsStream(e.into()))?;
        let message = match stream.direct_get_last_for_subject(subject.clone()).await {
            Ok(message) => message,
            Err(e) if e.kind() == async_nats::jetstream::stream::DirectGetErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(ExecutorError::EventsStream(e.into())),
        };
        let outcome = match airlock_protocol::Envelope::decode_on(&subject, &message.payload) {
            Ok(airlock_protocol::Envelope {
                event: Event::Terminal(terminal),
                ..
            }) => terminal.outcome,
            _ => return Ok(None),
        };
        tracing::info!(
            ?outcome,
            "the request already ended (its record missed it); nothing runs again"
        );
        let record = Record::Done {
            stream_seq,
            decision_id: decision_id.clone(),
            outcome,
        };
        if let Err(error) = self.records.update(rid.as_str(), &record, revision).await {
            tracing::warn!(%error, "bringing an ended request's record up to date");
        }
        Ok(Some(Handled::Done))
    }

    /// Claims a request whose earlier attempt was interrupted, for `attempt`; another executor
    /// that got there first keeps it.
    async fn take_over(
        &self,
        rid: &RequestId,
        stream_seq: u64,
        decision_id: &MessageId,
        attempt: u32,
        revision: u64,
    ) -> Result<Claimed, ExecutorError> {
        let record = self.running(stream_seq, decision_id, attempt);
        match self.records.update(rid.as_str(), &record, revision).await {
            Ok(revision) => {
                tracing::info!(attempt, "running an interrupted request again in a fresh container");
                Ok(Claimed::Won { revision, attempt })
            }
            Err(airlock_bus::ClaimError::Conflict { .. }) => Ok(Claimed::Handled(Handled::Later(HEARTBEAT))),
            Err(error) => Err(error.into()),
        }
    }

    /// Records that `attempt` was interrupted and is to be run again, and tells the client.
    async fn retry(
        &self,
        rid: &RequestId,
        stream_seq: u64,
        decision_id: &MessageId,
        attempt: u32,
        reason: &str,
        revision: u64,
    ) -> Result<(), ExecutorError> {
        tracing::warn!(
            attempt,
            reason,
            "the run was interrupted; it runs again in a fresh container"
        );
        let record = Record::Interrupted {
            stream_seq,
            decision_id: decision_id.clone(),
            attempt,
            reason: reason.to_owned(),
        };
        // Recorded first: the client is told of a retry only once the record holds it.
        self.records.update(rid.as_str(), &record, revision).await?;
        self.publisher
            .progress(
                rid,
                Progress::Retrying {
                    reason: reason.to_owned(),
                },
            )
            .await;
        Ok(())
    }

    /// Gives the claim of an attempt that did not start back: the request is as it was before.
    async fn give_back(
        &self,
        rid: &RequestId,
        stream_seq: u64,
        decision_id: &MessageId,
        attempt: u32,
        revision: u64,
    ) -> Result<(), ExecutorError> {
        if attempt <= 1 {
            self.records.remove(rid.as_str()).await?;
            return Ok(());
        }
        let before = Record::Interrupted {
            stream_seq,
            decision_id: decision_id.clone(),
            attempt: attempt - 1,
            reason: "the engine went away before the next attempt started".into(),
        };
        self.records.update(rid.as_str(), &before, revision).await?;
        Ok(())
    }

    /// Runs the job and publishes its events while the lease is kept; `None` when the lease
    /// was lost (another executor ended the request), after which nothing more is published.
    async fn run_leased(
        &self,
        delivery: &Delivery,
        rid: &RequestId,
        authorized: &Authorized,
        attempt: u32,
        lease: &Lease<'_>,
    ) -> Option<Ran> {
        let job = Job {
            request_id: rid.to_string(),
            language: authorized.request.language,
            code: authorized.request.code.clone(),
            inputs: authorized.request.inputs.clone(),
            packages: authorized
                .assessment
                .as_ref()
                .map(|a| airlock_protocol::packages::wheels_of(&a.packages))
                .unwrap_or_default(),
            limits: self.sandbox.effective_limits(&authorized.limits),
            runtime: authorized.runtime,
            network: authorized.network,
            read_only_hosts: authorized.read_only_hosts.clone(),
            attempt,
        };
        let (events_tx, mut events_rx) = tokio::sync::mpsc::channel::<SandboxEvent>(256);
        let output = std::sync::Mutex::new(Output::default());
        // The run's two phases, as spans of the request's trace: getting its container ready (a
        // warm one taken or one launched, packages installed) until the program starts, then
        // the program's run until its report.
        let mut phase = tracing::info_span!("container start", warm = tracing::field::Empty);
        // The program's own account of its network attempts, to hold the kernel's against.
        let mut self_reported: Vec<String> = Vec::new();
        // Pipelined: each event is sent as soon as it is there, in order on the one connection,
        // and its acknowledgement awaited alongside the next ones. Awaited one by one, the
        // run's last events (output, usage, activity) each held up the terminal event by a
        // round trip to the stream.
        let forward = futures::stream::poll_fn(|cx| events_rx.poll_recv(cx))
            .flat_map(|event| {
                let events = match event {
                    SandboxEvent::Started(e) => {
                        if self.cancels.started(rid, &e.container) {
                            let (sandbox, container) = (self.sandbox.clone(), e.container.clone());
                            tokio::spawn(async move {
                                if let Err(error) = sandbox.kill(&container).await {
                                    tracing::warn!(%error, "killing a cancelled run's container");
                                }
                            });
                        }
                        phase.record("warm", e.warm);
                        phase = tracing::info_span!("run", container = %e.container);
                        vec![Event::ExecStarted(e), Event::Progress(Progress::Running)]
                    }
                    SandboxEvent::Output(e) => {
                        output.lock().unwrap_or_else(|p| p.into_inner()).add(&e);
                        vec![Event::Output(e)]
                    }
                    SandboxEvent::Usage(e) => vec![Event::Usage(e)],
                    SandboxEvent::Activity(e) => {
                        if e.untrusted {
                            self_reported.extend(e.network_attempts.iter().cloned());
                        }
                        vec![Event::Activity(e)]
                    }
                    SandboxEvent::Observed(mut observed) => {
                        // After what the record found itself (gVisor's: a trace without its end).
                        let unreported = crate::observation::unreported_network(&observed, &self_reported);
                        observed.findings.extend(unreported);
                        observed.findings.truncate(airlock_protocol::observed::MAX_FINDINGS);
                        vec![Event::Observed(observed)]
                    }
                    SandboxEvent::Egress(e) => vec![Event::Egress(e)],
                };
                futures::stream::iter(events)
            })
            .map(|event| {
                // One envelope per event, kept for a later try: published again, it carries the
                // same message id, so the stream keeps it once even if the first try was stored.
                let envelope = Envelope::new(rid.clone(), self.publisher.producer(), event);
                async move {
                    let published = self.publisher.publish(&envelope).await;
                    (envelope, published)
                }
            })
            .buffered(EVENTS_IN_FLIGHT)
            .fold(Vec::new(), |mut failed, (envelope, published)| async move {
                if let Err(e) = published {
                    tracing::warn!(
                        error = %airlock_bus::error_text(&e),
                        kind = ?envelope.kind(),
                        "an execution event was not published; it is tried again before the terminal event"
                    );
                    failed.push(envelope);
                }
                failed
            });
        self.counters.incr("runs");
        let run = self.sandbox.run(job, events_tx);
        let outcome = tokio::select! {
            (report, failed) = async { tokio::join!(run, forward) } => Some((report, failed)),
            () = lease.keep(HEARTBEAT, delivery) => {
                tracing::error!("the run's lease was lost: another executor ended the request; nothing more of it is published");
                None
            }
        };
        drop(phase);
        let (report, failed) = outcome?;
        Some(Ran {
            report,
            unrecorded: self.republish(failed).await,
            output: output.into_inner().unwrap_or_else(|p| p.into_inner()),
        })
    }

    /// Tries the events that were not published once more, in their order, before the terminal
    /// event follows them; says how many are still missing from the record, if any.
    async fn republish(&self, failed: Vec<Envelope>) -> Option<String> {
        let tried = failed.len();
        let mut missing = std::collections::BTreeMap::<&str, usize>::new();
        let mut last_error = None;
        for envelope in failed {
            if let Err(e) = self.publisher.publish(&envelope).await {
                *missing.entry(envelope.kind().as_str()).or_default() += 1;
                last_error = Some(airlock_bus::error_text(&e));
            }
        }
        let error = last_error?;
        let count: usize = missing.values().sum();
        let kinds: Vec<String> = missing.iter().map(|(kind, n)| format!("{n} {kind}")).collect();
        self.counters.incr("events_unrecorded");
        tracing::error!(tried, missing = count, %error, "execution events are missing from the record");
        Some(format!(
            "{count} of the run's events ({}) could not be recorded: {error}",
            kinds.join(", ")
        ))
    }

    fn terminal_base(&self, authorized: &Authorized, outcome: Outcome) -> Terminal {
        let mut terminal = Terminal::without_run(outcome, String::new());
        terminal.reason = None;
        terminal.level = Some(authorized.decision.level);
        terminal.findings = authorized
            .assessment
            .as_ref()
            .map(|a| a.findings.clone())
            .unwrap_or_default();
        terminal.decision = Some(DecisionSummary::of(&authorized.decision));
        terminal
    }

    fn terminal_of(&self, authorized: &Authorized, report: RunReport) -> Terminal {
        let outcome = if report.violation.is_some() {
            Outcome::Failed
        } else {
            Outcome::Finished
        };
        let mut terminal = self.terminal_base(authorized, outcome);
        terminal.exit_code = report.exit_code;
        terminal.stdout = report.stdout;
        terminal.stderr = report.stderr;
        terminal.usage = Some(report.usage);
        terminal.files = report.files;
        crate::outputs::fit(
            &mut terminal.files,
            (terminal.stdout.len() + terminal.stderr.len()) as u64,
        );
        terminal.files_unavailable = report.files_unavailable;
        if let Some(v) = &report.violation {
            self.counters.incr("violations");
            terminal.reason = Some(format!("limit violated: {}", v.detail));
        }
        terminal.violation = report.violation;
        terminal
    }

    async fn finish(
        &self,
        rid: &RequestId,
        terminal: Terminal,
        stream_seq: u64,
        decision_id: MessageId,
        revision: u64,
    ) -> Result<(), ExecutorError> {
        let outcome = terminal.outcome;
        self.publisher.emit(rid, Event::Terminal(Box::new(terminal))).await?;
        self.records
            .update(
                rid.as_str(),
                &Record::Done {
                    stream_seq,
                    decision_id,
                    outcome,
                },
                revision,
            )
            .await?;
        Ok(())
    }

    /// Refuses a decision: only the gate may publish decisions, so a bad one is a forgery or a
    /// replay and must not end the request it names (the real decision may still come).
    async fn refuse(&self, delivery: &Delivery, reason: RefusalReason, detail: String) -> Result<(), ExecutorError> {
        self.counters.incr("refused");
        delivery
            .refuse(&self.refuser, reason, &detail, Ending::MessageOnly)
            .await?;
        Ok(())
    }
}

/// The reason a request ends with when its last allowed attempt was interrupted.
fn gave_up(reason: &str, attempt: u32) -> String {
    let reason = reason.strip_prefix("interrupted: ").unwrap_or(reason);
    match attempt {
        1 => format!("interrupted: {reason}; it is not run again (retry_interrupted = 0)"),
        n => format!("interrupted: {reason} (attempt {n} of {n}); it is not run again"),
    }
}
