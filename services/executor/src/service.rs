//! The executor's loop: consume decisions, run only what a valid, unexpired, unused decision
//! signed by the gate approves for exactly the code delivered, and end each request with one
//! terminal event.
//!
//! Reading order: [`Config`], [`run`] (the consume loop), [`authorize`] (the checks, pure),
//! [`Executor::execute`] (claim, run, publish).

use crate::lease::{Lease, Liveness, Record, Runs};
use crate::{Job, RunReport, Sandbox, SandboxConfig, SandboxError, SandboxEvent};
use airlock_bus::consume::{ConsumerSpec, DeliveryStream};
use airlock_bus::{
    BusError, Claim, ClaimError, Claims, Delivery, Ending, Failure, PublishError, Publisher, Refuser, ServiceCounters,
    Transience,
};
use airlock_protocol::decision::DECISION_DOMAIN;
use airlock_protocol::roles::{self, ServiceRole};
use airlock_protocol::subjects::EXECUTOR_BUCKET;
use airlock_protocol::{
    Assessment, Decided, Decision, DecisionSummary, Event, ExecutionRequest, Limits, MessageId, Outcome, Producer,
    RefusalReason, RequestId, Terminal, VerifierKey, VerifierSet, now_ms,
};
use futures::StreamExt as _;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

/// A run's events published before the first of them is acknowledged.
const EVENTS_IN_FLIGHT: usize = 16;

/// The `[executor]` section of the stack's config: the gate's keys, and the sandbox's settings
/// in the same table.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// Verifier keys of the gate (`name+keyid+base64`): nothing runs without a valid signature
    /// by one of them.
    pub gate_keys: Vec<String>,
    pub sandbox: SandboxConfig,
    /// The assessor's engine settings (`[assessor]`: rules, threat list, budgets), with which
    /// package code is rated: one engine, one set of rules for code and packages.
    pub assessor: airlock_assessor::EngineConfig,
}

impl Config {
    /// Reads `[executor]` and `[quotas]` of the stack's config file; the binary, `airlock serve`
    /// and `airlock image build` all load it this way.
    pub fn load(file: &airlock_bus::runner::ConfigFile) -> Result<Self, airlock_bus::runner::ConfigError> {
        let section = service_role().config_section;
        let (mut sandbox, apart): (SandboxConfig, _) = file.section_apart(section, &["gate_keys"])?;
        let gate_keys = match apart.get("gate_keys") {
            Some(value) => value
                .clone()
                .try_into()
                .map_err(|e: toml::de::Error| file.invalid(&format!("{section}.gate_keys"), e.to_string()))?,
            None => Vec::new(),
        };
        sandbox.read_legacy_keys();
        sandbox.quotas = file.section("quotas")?;
        if !sandbox.packages.only_binary {
            return Err(file.invalid(
                &format!("{section}.packages.only_binary"),
                "must be true: a source distribution runs its build code at install, before anyone could rate it",
            ));
        }
        let assessor = file.section("assessor")?;
        Ok(Config {
            gate_keys,
            sandbox,
            assessor,
        })
    }
}

fn service_role() -> &'static ServiceRole {
    match &roles::EXECUTOR.service {
        Some(service) => service,
        None => unreachable!("the executor's row names its service"),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ExecutorError {
    #[error("gate key {key:?}")]
    GateKey {
        key: String,
        #[source]
        source: airlock_protocol::KeyError,
    },
    #[error("no gate keys configured: the executor would refuse everything")]
    NoGateKeys,
    #[error("loading the assessor's rules, which rate package code")]
    Engine(#[from] airlock_assessor::EngineError),
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    #[error("the executor's records")]
    Claims(#[from] ClaimError),
    #[error(transparent)]
    Bus(#[from] BusError),
    #[error("publishing")]
    Publish(#[from] PublishError),
}

impl Transience for ExecutorError {
    fn is_permanent(&self) -> bool {
        match self {
            ExecutorError::GateKey { .. } | ExecutorError::NoGateKeys | ExecutorError::Engine(_) => true,
            // A sandbox that failed is reported in the request's terminal event, not retried.
            ExecutorError::Sandbox(_) => false,
            ExecutorError::Claims(e) => e.is_permanent(),
            ExecutorError::Bus(e) => e.is_permanent(),
            ExecutorError::Publish(e) => e.is_permanent(),
        }
    }
}

impl Failure for ExecutorError {
    fn refusal_reason(&self) -> RefusalReason {
        match self {
            ExecutorError::Publish(e) => e.refusal_reason(),
            _ => RefusalReason::DeadLettered,
        }
    }
}

/// A decision that passed every check: the executor may run `request` within `limits`.
#[derive(Debug)]
pub struct Authorized {
    pub decision: Decision,
    pub request: ExecutionRequest,
    pub assessment: Option<Assessment>,
    pub limits: Limits,
    /// The runtime the decision signs (the executor runs under it or refuses).
    pub runtime: airlock_protocol::Runtime,
}

/// Why a decision is not acted on.
#[derive(Debug, PartialEq, Eq)]
pub enum Unauthorized {
    /// A denial: nothing to run, nothing wrong.
    NothingToRun,
    Refuse(RefusalReason, String),
    /// Valid but too late: the request ends as expired.
    Expired(String),
}

/// The checks, in order: signature by a trusted gate key, the decision names this request, it
/// approves, it carries the code, the code and inputs are exactly those signed, it is not
/// expired, nor is the request's own deadline past.
pub fn authorize(
    rid: &RequestId,
    decided: &Decided,
    gate_keys: &VerifierSet,
    now_ms: i64,
) -> Result<Authorized, Unauthorized> {
    let (decision, _key): (Decision, VerifierKey) = decided
        .signed
        .verify(DECISION_DOMAIN, "decision", gate_keys)
        .map_err(|e| Unauthorized::Refuse(RefusalReason::from(&e), e.to_string()))?;
    if &decision.request_id != rid {
        return Err(Unauthorized::Refuse(
            RefusalReason::SubjectMismatch,
            format!("decision for request {} delivered for {rid}", decision.request_id),
        ));
    }
    let Some(grant) = decision.outcome.grant() else {
        return Err(Unauthorized::NothingToRun);
    };
    let Some(request) = decided.request.clone() else {
        return Err(Unauthorized::Refuse(
            RefusalReason::Malformed,
            "an approval without the request it approves".into(),
        ));
    };
    // One digest binds everything that decides what runs: the code, language and interpreter,
    // arguments, environment, stdin, packages, the client (the request id's own part) and what
    // the approval grants. Anything delivered that differs from what was signed is refused.
    // The packages are the wheels the assessment resolved and rated: the digest covers them,
    // so an assessment delivered with other wheels than those signed for is refused here too.
    let packages = decided
        .assessment
        .as_ref()
        .map(|a| a.packages.as_slice())
        .unwrap_or_default();
    let delivered = airlock_protocol::digest::execution_digest(&request.request_digest(rid, packages), &grant);
    if delivered != decision.execution_digest {
        return Err(Unauthorized::Refuse(
            RefusalReason::DigestMismatch,
            format!(
                "decision signs execution {}, what was delivered is {delivered}",
                decision.execution_digest
            ),
        ));
    }
    if let Err(e) = request.validate() {
        return Err(Unauthorized::Refuse(RefusalReason::InvalidRequest, e.to_string()));
    }
    // Never run a request's code without the packages it names, rated: a decision whose
    // assessment resolved none of them was not made on them.
    if let Err(detail) = airlock_protocol::packages::covers(&request.packages, packages) {
        return Err(Unauthorized::Refuse(
            RefusalReason::PackagesUnresolved,
            format!("the approved assessment does not resolve the request's packages: {detail}"),
        ));
    }
    if now_ms > decision.expires_at_ms {
        return Err(Unauthorized::Expired(format!(
            "the decision expired {} ms before it could run",
            now_ms - decision.expires_at_ms
        )));
    }
    if let Some(deadline) = request.deadline_ms.filter(|d| now_ms > *d) {
        return Err(Unauthorized::Expired(format!(
            "the request's deadline passed {} ms before it could run",
            now_ms - deadline
        )));
    }
    Ok(Authorized {
        decision,
        request,
        assessment: decided.assessment.clone(),
        limits: grant.limits,
        runtime: grant.runtime,
    })
}

struct Executor {
    sandbox: Sandbox,
    gate_keys: VerifierSet,
    publisher: Publisher,
    refuser: Refuser,
    records: Claims,
    runs: Runs,
    counters: ServiceCounters,
    /// Cancelled once the runs in progress have ended (or could not end in time): what is
    /// still being published or acknowledged then gives up.
    stop: CancellationToken,
}

/// What claiming a request came to.
enum Claimed {
    Won(u64),
    Handled(Handled),
}

/// How a delivery was handled.
enum Handled {
    Done,
    /// Its run is going on elsewhere (or here): look again after this long.
    Later(Duration),
}

/// How long the server waits for an ack before redelivering: runs report progress well within it.
const ACK_WAIT: Duration = Duration::from_secs(10);
/// How often a run tells the server it is still going, and renews its lease.
const HEARTBEAT: Duration = Duration::from_millis(ACK_WAIT.as_millis() as u64 / 3);

pub async fn run(client: async_nats::Client, config: Config, shutdown: CancellationToken) -> Result<(), ExecutorError> {
    let gate_keys = config
        .gate_keys
        .iter()
        .map(|k| VerifierKey::parse(k).map_err(|source| ExecutorError::GateKey { key: k.clone(), source }))
        .collect::<Result<Vec<_>, _>>()?;
    if gate_keys.is_empty() {
        return Err(ExecutorError::NoGateKeys);
    }
    let concurrency = config
        .sandbox
        .host
        .max_concurrent
        .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1))
        .max(1);
    let sandbox = Sandbox::start(config.sandbox.clone()).await?;
    let js = async_nats::jetstream::new(client.clone());
    let records = match Claims::open(&js, EXECUTOR_BUCKET, &shutdown).await {
        Ok(claims) => claims,
        Err(_) if shutdown.is_cancelled() => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    // `shutdown` stops the intake; runs in progress still publish and acknowledge until `stop`.
    let stop = CancellationToken::new();
    let publisher = Publisher::new(js.clone(), Producer::Executor, stop.clone());
    let executor = Arc::new(Executor {
        sandbox: sandbox.clone(),
        gate_keys: VerifierSet::new(gate_keys),
        refuser: Refuser::new(publisher.clone(), &roles::EXECUTOR),
        publisher,
        records,
        runs: Runs::new(&config.sandbox.instance),
        counters: ServiceCounters::default(),
        stop: stop.clone(),
    });
    let service = airlock_bus::start_service(&client, service_role(), executor.counters.clone()).await?;
    // Package code is rated with the assessor's engine and rules, reloaded when they change.
    let engine = Arc::new(airlock_assessor::SharedEngine::new(config.assessor.clone())?);
    let _watcher = if config.assessor.watch {
        Some(engine.watch()?)
    } else {
        None
    };
    let resolver = Arc::new(crate::resolve::Resolver::new(
        sandbox.clone(),
        engine,
        executor.publisher.clone(),
        executor.counters.clone(),
    ));
    let endpoint = service
        .endpoint(airlock_protocol::packages::RESOLVE_ENDPOINT)
        .await
        .map_err(BusError::Service)?;
    tokio::spawn(resolver.serve(endpoint));
    let pool = sandbox.clone();
    airlock_telemetry::metrics::watch_pool(move || {
        let stats = pool.pool_stats();
        airlock_telemetry::metrics::PoolReading {
            idle: stats.idle as u64,
            starting: stats.starting as u64,
            hits: stats.hits,
            misses: stats.misses,
        }
    });
    tracing::info!(concurrency, "executor ready");

    // The consumer hands out at most `concurrency` decisions at a time; the rest wait in
    // JetStream rather than in this process.
    let spec = ConsumerSpec::for_role(&roles::EXECUTOR, ACK_WAIT, concurrency as i64)
        .ok_or_else(|| BusError::Service("the executor's row names no consumer".into()))?
        // A decision whose run another live executor holds is put back for later, again and
        // again while it runs: the server must never stop redelivering it, or a run whose
        // holder then dies would never be ended. Failures are still bounded by `settle`.
        .unbounded_redelivery();
    let Some(deliveries) = DeliveryStream::open(js, spec, shutdown.clone()).await? else {
        sandbox.shutdown().await;
        let _ = service.stop().await;
        return Ok(());
    };
    let mut running = intake(deliveries, &executor, concurrency, &shutdown).await;
    drain(&sandbox, &mut running, &config.sandbox).await;
    stop.cancel();
    sandbox.shutdown().await;
    let _ = service.stop().await;
    Ok(())
}

/// Hands each decision to its own task once one of `concurrency` slots is free, until
/// `shutdown`; returns the tasks still running. A decision waiting for a slot when the stop
/// comes is left to the next executor.
async fn intake(
    mut deliveries: DeliveryStream,
    executor: &Arc<Executor>,
    concurrency: usize,
    shutdown: &CancellationToken,
) -> tokio::task::JoinSet<()> {
    let slots = Arc::new(tokio::sync::Semaphore::new(concurrency));
    let mut running = tokio::task::JoinSet::new();
    while let Some(delivery) = deliveries.next().await {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot,
            _ = shutdown.cancelled() => break,
        };
        let Ok(slot) = slot else { break };
        let executor = executor.clone();
        running.spawn(async move {
            let span = delivery.span(service_role().name);
            executor.handle(delivery).instrument(span).await;
            drop(slot);
        });
        while running.try_join_next().is_some() {}
    }
    running
}

/// A graceful stop: no new job starts (one still waiting for room gives its claim back and is
/// redelivered to the next executor), and the runs in progress end by themselves, each bounded
/// by its own wall time, publishing their events and terminal before this returns. Past the
/// longest a run could take, what is left is aborted: a later executor ends it as interrupted.
async fn drain(sandbox: &Sandbox, running: &mut tokio::task::JoinSet<()>, config: &SandboxConfig) {
    sandbox.close().await;
    if running.is_empty() {
        return;
    }
    let longest = Duration::from_millis(config.limits.ceiling.wall_ms)
        + Duration::from_millis(config.packages.install_limits.wall_ms)
        + Duration::from_secs(60);
    tracing::info!(runs = running.len(), "stopping: letting the runs in progress finish");
    let finished = tokio::time::timeout(longest, async { while running.join_next().await.is_some() {} }).await;
    if finished.is_err() {
        tracing::warn!(
            runs = running.len(),
            "runs still going at the stop's limit; aborting them"
        );
        running.abort_all();
        while running.join_next().await.is_some() {}
    }
}

impl Executor {
    async fn handle(&self, delivery: Delivery) {
        match self.try_handle(&delivery).await {
            Ok(Handled::Later(delay)) => delivery.retry_after(delay).await,
            outcome => {
                delivery.settle(outcome.map(|_| ()), &self.refuser, &self.stop).await;
            }
        }
    }

    async fn try_handle(&self, delivery: &Delivery) -> Result<Handled, ExecutorError> {
        let envelope = match delivery.envelope() {
            Ok(e) => e,
            Err(error) => {
                self.refuse(delivery, RefusalReason::from(&error), airlock_bus::error_text(&error))
                    .await?;
                return Ok(Handled::Done);
            }
        };
        let rid = envelope.request_id.clone();
        tracing::Span::current().record("request_id", rid.as_str());
        let Event::Decided(decided) = envelope.event else {
            self.refuse(delivery, RefusalReason::SubjectMismatch, "not a decision".into())
                .await?;
            return Ok(Handled::Done);
        };
        self.counters.incr("decisions");
        let authorized = match authorize(&rid, &decided, &self.gate_keys, now_ms()) {
            Ok(a) => a,
            Err(Unauthorized::NothingToRun) => return Ok(Handled::Done),
            Err(Unauthorized::Refuse(reason, detail)) => {
                self.refuse(delivery, reason, detail).await?;
                return Ok(Handled::Done);
            }
            Err(Unauthorized::Expired(detail)) => {
                self.refuse(delivery, RefusalReason::Expired, detail.clone()).await?;
                // Ends the request, unless an earlier decision already ran it.
                let decision_id = decided
                    .signed
                    .peek::<Decision>()
                    .map(|d| d.decision_id)
                    .unwrap_or_default();
                let record = Record::Done {
                    stream_seq: delivery.position().0,
                    decision_id,
                    outcome: Outcome::Expired,
                };
                if let Claim::Won { .. } = self.records.claim(rid.as_str(), &record).await? {
                    let mut terminal = Terminal::without_run(Outcome::Expired, detail);
                    terminal.decision = decided.signed.peek::<Decision>().map(|d| DecisionSummary {
                        decision: "expired".into(),
                        ..DecisionSummary::of(&d)
                    });
                    self.publisher.emit(&rid, Event::Terminal(Box::new(terminal))).await?;
                }
                return Ok(Handled::Done);
            }
        };
        self.execute(delivery, &rid, authorized).await
    }

    /// Claims the request, runs it while keeping the claim's lease, publishes its events and
    /// its terminal event.
    async fn execute(
        &self,
        delivery: &Delivery,
        rid: &RequestId,
        authorized: Authorized,
    ) -> Result<Handled, ExecutorError> {
        // The decision message's stream sequence tells a redelivery of the same message (after a
        // crash) from a replay of the decision in a new message.
        let stream_seq = delivery.position().0;
        let decision_id = authorized.decision.decision_id.clone();
        let now = now_ms();
        let record = Record::Running {
            stream_seq,
            decision_id: decision_id.clone(),
            claimed_at_ms: now,
            holder: self.runs.me().clone(),
            heartbeat_ms: now,
        };
        let revision = match self.claim(delivery, rid, &authorized, &record).await? {
            Claimed::Won(revision) => revision,
            Claimed::Handled(handled) => return Ok(handled),
        };
        let _in_progress = self.runs.enter(rid.as_str());
        let lease = Lease::new(&self.records, rid.as_str(), record, revision);
        let Some(report) = self.run_leased(delivery, rid, &authorized, &lease).await else {
            return Ok(Handled::Done);
        };
        if let Err(SandboxError::ShuttingDown) = report {
            // Nothing of it ran: the claim goes back, and the next executor runs it.
            self.records.remove(rid.as_str()).await?;
            return Err(SandboxError::ShuttingDown.into());
        }
        let terminal = match report {
            Ok(report) => self.terminal_of(&authorized, report),
            Err(e) => {
                let mut terminal = self.terminal_base(&authorized, Outcome::Failed);
                terminal.reason = Some(if e.may_have_run() {
                    self.counters.incr("interrupted");
                    e.to_string()
                } else {
                    format!("the sandbox failed: {e}")
                });
                terminal
            }
        };
        self.finish(rid, terminal, stream_seq, decision_id, lease.revision())
            .await?;
        Ok(Handled::Done)
    }

    /// Claims the request for this delivery, or settles what an earlier claim left: a run that
    /// ended, one still going on (looked at again later), one whose executor died (it ends as
    /// interrupted, never run again), or a replay.
    async fn claim(
        &self,
        delivery: &Delivery,
        rid: &RequestId,
        authorized: &Authorized,
        record: &Record,
    ) -> Result<Claimed, ExecutorError> {
        let stream_seq = delivery.position().0;
        match self.records.claim(rid.as_str(), record).await? {
            Claim::Won { revision } => Ok(Claimed::Won(revision)),
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
                        ..
                    },
                revision,
            } if held == stream_seq => {
                if self.runs.judge(rid.as_str(), &holder, heartbeat_ms, now_ms()) == Liveness::Alive {
                    tracing::info!(holder = ?holder, "redelivered while its run goes on; looking again later");
                    return Ok(Claimed::Handled(Handled::Later(ACK_WAIT)));
                }
                // Its executor died while the code ran. Running it again could do its effects
                // twice, so the request ends as failed.
                self.counters.incr("interrupted");
                let mut terminal = self.terminal_base(authorized, Outcome::Failed);
                terminal.reason =
                    Some("interrupted: the executor stopped while the code ran; it is not run again".into());
                self.finish(
                    rid,
                    terminal,
                    stream_seq,
                    authorized.decision.decision_id.clone(),
                    revision,
                )
                .await?;
                Ok(Claimed::Handled(Handled::Done))
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

    /// Runs the job and publishes its events while the lease is kept; `None` when the lease
    /// was lost (another executor ended the request), after which nothing more is published.
    async fn run_leased(
        &self,
        delivery: &Delivery,
        rid: &RequestId,
        authorized: &Authorized,
        lease: &Lease<'_>,
    ) -> Option<Result<RunReport, SandboxError>> {
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
        };
        let (events_tx, mut events_rx) = tokio::sync::mpsc::channel::<SandboxEvent>(256);
        // The run's two phases, as spans of the request's trace: getting its container ready (a
        // warm one taken or one launched, packages installed) until the program starts, then
        // the program's run until its report.
        let mut phase = tracing::info_span!("container start", warm = tracing::field::Empty);
        // Pipelined: each event is sent as soon as it is there, in order on the one connection,
        // and its acknowledgement awaited alongside the next ones. Awaited one by one, the
        // run's last events (output, usage, activity) each held up the terminal event by a
        // round trip to the stream.
        let forward = futures::stream::poll_fn(|cx| events_rx.poll_recv(cx))
            .map(|event| {
                let event = match event {
                    SandboxEvent::Started(e) => {
                        phase.record("warm", e.warm);
                        phase = tracing::info_span!("run", container = %e.container);
                        Event::ExecStarted(e)
                    }
                    SandboxEvent::Output(e) => Event::Output(e),
                    SandboxEvent::Usage(e) => Event::Usage(e),
                    SandboxEvent::Activity(e) => Event::Activity(e),
                    SandboxEvent::Egress(e) => Event::Egress(e),
                };
                self.publisher.emit(rid, event)
            })
            .buffered(EVENTS_IN_FLIGHT)
            .for_each(|published| async move {
                if let Err(e) = published {
                    tracing::warn!(error = %airlock_bus::error_text(&e), "an execution event was not published");
                }
            });
        self.counters.incr("runs");
        let run = self.sandbox.run(job, events_tx);
        let report = tokio::select! {
            (report, ()) = async { tokio::join!(run, forward) } => Some(report),
            () = lease.keep(HEARTBEAT, delivery) => {
                tracing::error!("the run's lease was lost: another executor ended the request; nothing more of it is published");
                None
            }
        };
        drop(phase);
        report
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

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<Config, airlock_bus::runner::ConfigError> {
        Config::load(&airlock_bus::runner::ConfigFile::parse(std::path::Path::new("airlock.toml"), text).unwrap())
    }

    #[test]
    fn misspelt_keys_anywhere_in_the_section_are_refused() {
        assert!(load("[executor]\ngate_keys = [\"k\"]\ninstance = \"x\"\n").is_ok());
        for bad in [
            "[executor]\ninstanse = \"x\"\n",
            "[executor.pool]\nmin_idel = 3\n",
            "[executor.egress]\nallow_host = [\"a\"]\n",
            "[executor]\nquotas = {}\n",
        ] {
            let error = load(bad).err().unwrap_or_else(|| panic!("accepted: {bad}"));
            assert!(
                airlock_bus::error_text(&error).contains("unknown key"),
                "{bad}: {}",
                airlock_bus::error_text(&error)
            );
        }
    }

    #[test]
    fn durations_are_humantime_and_old_keys_still_read() {
        let config = load("[executor.pool]\nmax_age = \"2m\"\n[executor.limits]\nwatch = \"5ms\"\n[executor.egress]\nproxy = \"http://127.0.0.1:3129\"\n").unwrap();
        assert_eq!(config.sandbox.pool.max_age, Duration::from_secs(120));
        assert_eq!(config.sandbox.limits.watch, Duration::from_millis(5));
        assert_eq!(config.sandbox.egress.proxy.as_deref(), Some("http://127.0.0.1:3129"));
        let old = load("[executor]\ndocker_timeout_secs = 30\n[executor.pool]\nmax_age_secs = 90\n[executor.limits]\npark_ms = 500\n[executor.egress]\nupstream_timeout_secs = 5\n").unwrap();
        assert_eq!(old.sandbox.docker_timeout, Duration::from_secs(30));
        assert_eq!(old.sandbox.pool.max_age, Duration::from_secs(90));
        assert_eq!(old.sandbox.limits.park, Duration::from_millis(500));
        assert_eq!(old.sandbox.egress.upstream_timeout, Duration::from_secs(5));
    }
    use airlock_protocol::{Approver, DecisionOutcome, Language, Level, Signed, SigningKey, TrustLevel};

    const LIMITS: Limits = Limits {
        memory_bytes: 1 << 28,
        cpu_millis: 1000,
        pids: 64,
        wall_ms: 10_000,
        output_bytes: 1 << 16,
        disk_bytes: 1 << 24,
        open_files: 64,
    };

    fn request(code: &str) -> ExecutionRequest {
        ExecutionRequest::new(Language::Python, code.as_bytes().to_vec())
    }

    fn grant() -> airlock_protocol::Grant {
        airlock_protocol::Grant {
            quota: TrustLevel::Unknown,
            limits: LIMITS,
            runtime: airlock_protocol::Runtime::Runc,
            network: airlock_protocol::NetworkMode::None,
        }
    }

    /// A decision signed for `signed_for` run with `signed_grant`, granting `granted`, delivered
    /// with `delivered`.
    fn decided_with(
        key: &SigningKey,
        rid: &RequestId,
        signed_for: &ExecutionRequest,
        signed_grant: airlock_protocol::Grant,
        granted: airlock_protocol::Grant,
        delivered: ExecutionRequest,
        expires: i64,
    ) -> Decided {
        let decision = Decision {
            decision_id: MessageId::new(),
            request_id: rid.clone(),
            execution_digest: airlock_protocol::digest::execution_digest(
                &signed_for.request_digest(rid, &[]),
                &signed_grant,
            ),
            code_digest: signed_for.code_digest(),
            level: Level::Low,
            outcome: DecisionOutcome::approved(granted),
            approver: Approver::Policy { rule: "test".into() },
            issued_at_ms: 1000,
            expires_at_ms: expires,
            policy_version: None,
        };
        Decided {
            signed: Signed::sign(&decision, DECISION_DOMAIN, key),
            request: Some(delivered),
            assessment: None,
        }
    }

    fn decided(
        key: &SigningKey,
        rid: &RequestId,
        signed_for: &ExecutionRequest,
        delivered: ExecutionRequest,
        expires: i64,
    ) -> Decided {
        decided_with(key, rid, signed_for, grant(), grant(), delivered, expires)
    }

    fn refusal(result: Result<Authorized, Unauthorized>) -> RefusalReason {
        match result {
            Err(Unauthorized::Refuse(reason, _)) => reason,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn only_a_valid_unexpired_decision_for_exactly_this_code_authorizes() {
        let gate = SigningKey::generate("test/gate").unwrap();
        let keys = VerifierSet::new(vec![gate.verifier()]);
        let rid = RequestId::parse("mai.r1").unwrap();
        let r = request("print(1)");

        let ok = authorize(&rid, &decided(&gate, &rid, &r, r.clone(), 5000), &keys, 2000).expect("valid decision");
        assert_eq!(ok.limits, LIMITS);
        assert_eq!(ok.request, r);

        let impostor = SigningKey::generate("test/gate").unwrap();
        assert_eq!(
            refusal(authorize(
                &rid,
                &decided(&impostor, &rid, &r, r.clone(), 5000),
                &keys,
                2000
            )),
            RefusalReason::UnknownSigner
        );

        let mut flipped = decided(&gate, &rid, &r, r.clone(), 5000);
        flipped.signed.signature[0] ^= 1;
        assert_eq!(
            refusal(authorize(&rid, &flipped, &keys, 2000)),
            RefusalReason::BadSignature
        );

        let swapped = decided(&gate, &rid, &r, request("print(2)"), 5000);
        assert_eq!(
            refusal(authorize(&rid, &swapped, &keys, 2000)),
            RefusalReason::DigestMismatch
        );

        // Each part of what runs, changed after approval, is refused.
        let changes: Vec<(&str, ExecutionRequest)> = vec![
            ("args", r.clone().args(["--evil"])),
            ("env", r.clone().env([("MODE", "evil")])),
            ("stdin", r.clone().stdin("rm -rf /\n")),
            ("language", {
                let mut bash = r.clone();
                bash.language = Language::Bash;
                bash
            }),
            ("network", r.clone().network(airlock_protocol::NetworkMode::ReadOnly)),
        ];
        for (what, changed) in changes {
            assert_eq!(
                refusal(authorize(&rid, &decided(&gate, &rid, &r, changed, 5000), &keys, 2000)),
                RefusalReason::DigestMismatch,
                "a changed {what} must be refused"
            );
        }
        // A grant other than the one signed for.
        let mut more = grant();
        more.limits.wall_ms *= 10;
        let mut gvisor_signed = grant();
        gvisor_signed.runtime = airlock_protocol::Runtime::Runsc;
        for (what, signed, granted) in [("limits", grant(), more), ("runtime", gvisor_signed, grant())] {
            assert_eq!(
                refusal(authorize(
                    &rid,
                    &decided_with(&gate, &rid, &r, signed, granted, r.clone(), 5000),
                    &keys,
                    2000
                )),
                RefusalReason::DigestMismatch,
                "a grant whose {what} differ from what was signed must be refused"
            );
        }

        // Packages named after approval: no wheel of them was rated, so none is installed.
        assert_eq!(
            refusal(authorize(
                &rid,
                &decided(&gate, &rid, &r, r.clone().packages(["evil-pkg==1.0"]), 5000),
                &keys,
                2000
            )),
            RefusalReason::PackagesUnresolved
        );

        let other_rid = RequestId::parse("bob.r1").unwrap();
        assert_eq!(
            refusal(authorize(
                &other_rid,
                &decided(&gate, &rid, &r, r.clone(), 5000),
                &keys,
                2000
            )),
            RefusalReason::SubjectMismatch
        );

        assert!(matches!(
            authorize(&rid, &decided(&gate, &rid, &r, r.clone(), 5000), &keys, 6000),
            Err(Unauthorized::Expired(_))
        ));
    }

    fn rated(file: &str, bytes: &[u8]) -> airlock_protocol::PackageRating {
        let (name, version) = crate::wheels::parse_file_name(file).unwrap();
        airlock_protocol::PackageRating {
            wheel: airlock_protocol::Wheel {
                name,
                version,
                file: file.into(),
                sha256: airlock_protocol::CodeDigest::of(bytes),
            },
            level: Level::Low,
            findings: vec![],
            finding_count: 0,
            files_assessed: 1,
            native_files: 0,
            unanalysed: false,
            trusted: false,
            summary: String::new(),
        }
    }

    fn assessment(packages: Vec<airlock_protocol::PackageRating>) -> Assessment {
        Assessment {
            level: Level::Low,
            findings: vec![],
            parse: airlock_protocol::ParseStatus::Complete,
            summary: String::new(),
            language: Language::Python,
            origin: airlock_protocol::Origin::Generated,
            rules_version: "t".into(),
            threats_version: "t".into(),
            elapsed_us: 0,
            unanalysed: false,
            packages,
        }
    }

    #[test]
    fn only_the_wheels_signed_for_are_installed() {
        let gate = SigningKey::generate("test/gate").unwrap();
        let keys = VerifierSet::new(vec![gate.verifier()]);
        let rid = RequestId::parse("mai.r1").unwrap();
        let r = request("import tablefmt_rt").packages(["tablefmt-rt==1.0"]);
        let approved = vec![rated("tablefmt_rt-1.0-py3-none-any.whl", b"assessed bytes")];
        let signed = |delivered: Option<Assessment>| {
            let decision = Decision {
                decision_id: MessageId::new(),
                request_id: rid.clone(),
                execution_digest: airlock_protocol::digest::execution_digest(
                    &r.request_digest(&rid, &approved),
                    &grant(),
                ),
                code_digest: r.code_digest(),
                level: Level::Low,
                outcome: DecisionOutcome::approved(grant()),
                approver: Approver::Policy { rule: "test".into() },
                issued_at_ms: 1000,
                expires_at_ms: 5000,
                policy_version: None,
            };
            Decided {
                signed: Signed::sign(&decision, DECISION_DOMAIN, &gate),
                request: Some(r.clone()),
                assessment: delivered,
            }
        };
        let ok =
            authorize(&rid, &signed(Some(assessment(approved.clone()))), &keys, 2000).expect("the approved wheels");
        assert_eq!(ok.assessment.map(|a| a.packages), Some(approved.clone()));

        // The same name and version with other bytes (a release swapped on the index), another
        // wheel added, or none: each differs from what was signed.
        let swapped = vec![rated("tablefmt_rt-1.0-py3-none-any.whl", b"swapped bytes")];
        let mut added = approved.clone();
        added.push(rated("helper-2.0-py3-none-any.whl", b"helper"));
        for (what, delivered) in [
            ("a swapped wheel", Some(assessment(swapped))),
            ("an added wheel", Some(assessment(added))),
        ] {
            assert_eq!(
                refusal(authorize(&rid, &signed(delivered), &keys, 2000)),
                RefusalReason::DigestMismatch,
                "{what}"
            );
        }
        assert_eq!(
            refusal(authorize(&rid, &signed(None), &keys, 2000)),
            RefusalReason::DigestMismatch,
            "no assessment: no wheels, not the signed ones"
        );
    }
}
