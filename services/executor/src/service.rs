//! The executor's service: consume decisions, run only what a valid, unexpired, unused decision
//! signed by the gate approves for exactly the code delivered, and end each request with one
//! terminal event.
//!
//! Reading order: [`Config`], [`run`] (the wiring), [`authorize`] (the checks, pure), then
//! `dispatch` (the intake and the fair queue, waiting for the engine and the audit log) and
//! `execute` (claim, run, retry an interrupted run once, publish).

use crate::audit_gate::{AuditGate, AuditRequirement};
use crate::dispatch::{Counts, Sharing};
use crate::execute::{ACK_WAIT, Executor};
use crate::lease::Runs;
use crate::{Sandbox, SandboxConfig, SandboxError};
use airlock_bus::runner::{ConfigError, ConfigFile, Runner};
use airlock_bus::{BusError, ClaimError, Failure, PublishError, Publisher, Refuser, ServiceCounters, Transience};
use airlock_protocol::decision::DECISION_DOMAIN;
use airlock_protocol::roles;
use airlock_protocol::{
    Assessment, Decided, Decision, ExecutionRequest, Limits, Producer, RefusalReason, RequestId, VerifierKey,
    VerifierSet,
};
use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Decisions held by all executors at once (running or waiting in one's queue): the consumer's
/// bound. Each executor holds at most its own `queue_limit` waiting.
const HELD_BY_ALL_EXECUTORS: i64 = 4096;

/// The `[executor]` section of the stack's config: the gate's keys, how the executor shares its
/// slots and retries, and the sandbox's settings in the same table; with what it reads of
/// `[auditor]` and `[clients]`.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// Verifier keys of the gate (`name+keyid+base64`): nothing runs without a valid signature
    /// by one of them.
    pub gate_keys: Vec<String>,
    pub service: ServiceSettings,
    /// `[auditor] required` and `max_lag`: whether programs wait for the audit log.
    pub audit: AuditRequirement,
    /// How many clients the stack has (`mai` and `[clients] extra_users`): with more than one,
    /// the slots are shared.
    pub clients: usize,
    pub sandbox: SandboxConfig,
    /// The assessor's engine settings (`[assessor]`: rules, threat list, budgets), with which
    /// package code is rated: one engine, one set of rules for code and packages.
    pub assessor: airlock_assessor::EngineConfig,
}

/// The executor's own keys of `[executor]` (the rest of the table is the sandbox's).
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServiceSettings {
    /// How many times a run the infrastructure interrupted (its executor killed or restarted,
    /// the engine or the host lost) is run again, in a fresh container on any executor; 0 ends
    /// it as interrupted. The program's own failures and violations are never run again.
    pub retry_interrupted: u32,
    /// Most slots one client's runs may take at once. Unset: every slot when the stack has one
    /// client, all but one when it has more, so that another client's request always finds one
    /// soon.
    pub max_per_client: Option<usize>,
    /// Most requests this executor holds waiting for their turn; the rest wait in the stream.
    pub queue_limit: usize,
}

impl Default for ServiceSettings {
    fn default() -> Self {
        ServiceSettings {
            retry_interrupted: 1,
            max_per_client: None,
            queue_limit: 128,
        }
    }
}

/// The keys of `[executor]` that are the executor's own.
const SERVICE_KEYS: [&str; 4] = ["gate_keys", "retry_interrupted", "max_per_client", "queue_limit"];

impl Config {
    /// Reads `[executor]`, `[quotas]`, and what the executor needs of `[auditor]` and
    /// `[clients]`; the binary, `airlock serve` and `airlock image build` all load it this way.
    pub fn load(file: &ConfigFile) -> Result<Self, ConfigError> {
        let section = roles::EXECUTOR.config_section;
        let (mut sandbox, mut apart): (SandboxConfig, _) = file.section_apart(section, &SERVICE_KEYS)?;
        let gate_keys = match apart.remove("gate_keys") {
            Some(value) => value
                .try_into()
                .map_err(|e: toml::de::Error| file.invalid(&format!("{section}.gate_keys"), e.to_string()))?,
            None => Vec::new(),
        };
        let service: ServiceSettings = toml::Value::Table(apart)
            .try_into()
            .map_err(|e: toml::de::Error| file.invalid(section, e.to_string()))?;
        if service.queue_limit == 0 || service.max_per_client == Some(0) {
            return Err(file.invalid(section, "queue_limit and max_per_client must be at least 1"));
        }
        sandbox.read_legacy_keys();
        sandbox.quotas = file.section("quotas")?;
        if !sandbox.packages.only_binary {
            return Err(file.invalid(
                &format!("{section}.packages.only_binary"),
                "must be true: a source distribution runs its build code at install, before anyone could rate it",
            ));
        }
        let assessor = file.section("assessor")?;
        let clients: airlock_bus::ClientsConfig = file.section("clients")?;
        Ok(Config {
            gate_keys,
            service,
            audit: audit_requirement(file)?,
            clients: clients.users().len(),
            sandbox,
            assessor,
        })
    }

    /// How the slots are shared.
    fn sharing(&self, slots: usize) -> Sharing {
        let default_share = if self.clients > 1 {
            slots.saturating_sub(1)
        } else {
            slots
        };
        Sharing {
            slots,
            max_per_client: self.service.max_per_client.unwrap_or(default_share).clamp(1, slots),
            queue_limit: self.service.queue_limit,
        }
    }
}

/// `[auditor] required` and `max_lag` (the auditor's own section, which it checks as a whole);
/// a required log must publish its entries, or the executor could never see it keep up.
fn audit_requirement(file: &ConfigFile) -> Result<AuditRequirement, ConfigError> {
    let mut requirement = AuditRequirement::default();
    if let Some(value) = file.key("auditor", "required") {
        requirement.required = value
            .as_bool()
            .ok_or_else(|| file.invalid("auditor.required", "must be true or false"))?;
    }
    if let Some(value) = file.key("auditor", "max_lag") {
        let text = value
            .as_str()
            .ok_or_else(|| file.invalid("auditor.max_lag", "must be a duration such as \"2s\""))?;
        requirement.max_lag =
            humantime::parse_duration(text).map_err(|e| file.invalid("auditor.max_lag", e.to_string()))?;
    }
    if requirement.required && file.key("auditor", "publish_entries").and_then(toml::Value::as_bool) == Some(false) {
        return Err(file.invalid(
            "auditor.publish_entries",
            "must be true while auditor.required is (the executor follows the log through its published entries)",
        ));
    }
    Ok(requirement)
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
    RatingRules(#[from] airlock_assessor::EngineError),
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    #[error("the executor's records")]
    Claims(#[from] ClaimError),
    #[error(transparent)]
    Bus(#[from] BusError),
    #[error("publishing")]
    Publish(#[from] PublishError),
    /// Any of the JetStream calls that read it (each its own error type).
    #[error("reading the events stream")]
    EventsStream(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl Transience for ExecutorError {
    fn is_permanent(&self) -> bool {
        match self {
            ExecutorError::GateKey { .. } | ExecutorError::NoGateKeys | ExecutorError::RatingRules(_) => true,
            // A sandbox that failed is reported in the request's terminal event, not retried.
            ExecutorError::Sandbox(_) => false,
            ExecutorError::Claims(e) => e.is_permanent(),
            ExecutorError::EventsStream(_) => false,
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
    /// The network the decision signs.
    pub network: airlock_protocol::NetworkMode,
    /// With a read-only network, the hosts the decision signs.
    pub read_only_hosts: Vec<String>,
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
        // A refusal's detail travels on the wire and into the log as text; its reason is typed.
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
        network: grant.network,
        read_only_hosts: grant.read_only_hosts,
    })
}

pub async fn run(client: async_nats::Client, config: Config, shutdown: CancellationToken) -> Result<(), ExecutorError> {
    let gate_keys = config
        .gate_keys
        .iter()
        .map(|k| VerifierKey::parse(k).map_err(|source| ExecutorError::GateKey { key: k.clone(), source }))
        .collect::<Result<Vec<_>, _>>()?;
    if gate_keys.is_empty() {
        return Err(ExecutorError::NoGateKeys);
    }
    let slots = config
        .sandbox
        .host
        .max_concurrent
        .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1))
        .max(1);
    let counters = ServiceCounters::default();
    // Its consuming is its own (the fair queue in `dispatch`); the runner gives the rest.
    let runner = Runner::start(&roles::EXECUTOR, client.clone(), counters.clone(), shutdown.clone()).await?;
    let Some(sandbox) = start_sandbox(&config.sandbox, &counters, &shutdown).await? else {
        runner.stop().await;
        return Ok(());
    };
    let js = runner.jetstream().clone();
    let Some(records) = runner.records().await? else {
        return Ok(());
    };
    // `shutdown` stops the intake; runs in progress still publish and acknowledge until `stop`.
    let stop = CancellationToken::new();
    let publisher = Publisher::new(js.clone(), Producer::Executor, stop.clone());
    let audit = AuditGate::start(js.clone(), config.audit, stop.clone());
    let cancels = Arc::new(crate::cancel::Cancels::default());
    let executor = Arc::new(Executor {
        events: js.clone(),
        sandbox: sandbox.clone(),
        gate_keys: VerifierSet::new(gate_keys),
        refuser: Refuser::new(publisher.clone(), &roles::EXECUTOR.role),
        publisher,
        records,
        runs: Runs::new(&config.sandbox.instance),
        counters,
        audit: audit.clone(),
        retry_interrupted: config.service.retry_interrupted,
        stop: stop.clone(),
        cancels: cancels.clone(),
    });
    tokio::spawn(crate::cancel::listen(
        client.clone(),
        cancels,
        sandbox.clone(),
        stop.clone(),
    ));
    // Package code is rated with the assessor's engine and rules, reloaded when they change.
    let engine = Arc::new(airlock_assessor::SharedEngine::new(
        crate::package_rating::package_engine_config(&config.assessor),
    )?);
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
    let endpoint = runner.endpoint(airlock_protocol::packages::RESOLVE_ENDPOINT).await?;
    tokio::spawn(resolver.serve(endpoint));
    let counts = Arc::new(Counts::default());
    watch(&sandbox, &audit, &counts);
    let sharing = config.sharing(slots);
    tracing::info!(
        slots,
        max_per_client = sharing.max_per_client,
        audit_required = config.audit.required,
        "executor ready"
    );

    // The consumer hands decisions to every executor, each holding at most its own
    // `queue_limit` waiting; the rest wait in JetStream.
    let spec = runner
        .consumer(ACK_WAIT, HELD_BY_ALL_EXECUTORS)
        // A decision whose run another live executor holds is put back for later, again and
        // again while it runs: the server must never stop redelivering it, or a run whose
        // holder then dies would never be ended. Failures are still bounded by `settle`.
        .unbounded_redelivery()
        .shared_by_subscribers(sharing.queue_limit + sharing.slots);
    let Some(deliveries) = runner.deliveries(spec).await? else {
        stop.cancel();
        sandbox.shutdown().await;
        runner.stop().await;
        return Ok(());
    };
    let mut running = crate::dispatch::dispatch(deliveries, executor, sharing, counts, &shutdown).await;
    drain(&sandbox, &mut running, &config.sandbox).await;
    stop.cancel();
    sandbox.shutdown().await;
    runner.stop().await;
    Ok(())
}

/// Starts the sandbox, waiting (told in the status) while the engine is unreachable; `None`
/// when shut down first. Other failures (a missing image) are the executor's end.
async fn start_sandbox(
    config: &SandboxConfig,
    counters: &ServiceCounters,
    shutdown: &CancellationToken,
) -> Result<Option<Sandbox>, ExecutorError> {
    let mut delay = Duration::from_millis(250);
    loop {
        match Sandbox::start(config.clone()).await {
            Ok(sandbox) => {
                counters.clear_problem("engine");
                // Each was checked with the engine by the start: these are usable, not hoped for.
                let runtimes: Vec<&str> = config.runtimes.available.iter().map(|r| r.as_str()).collect();
                counters.set_fact("runtimes", runtimes);
                if config.runtimes.available.contains(&airlock_protocol::Runtime::Runsc) {
                    counters.set_fact("runsc_read_only", config.runtimes.runsc_read_only.as_str());
                }
                let observation = match sandbox.observation_unavailable() {
                    None => format!("on: {}", crate::observation::SOURCE),
                    Some(reason) => format!("unavailable: {reason}"),
                };
                counters.set_fact("observation", observation);
                return Ok(Some(sandbox));
            }
            Err(error) if error.is_docker_unreachable() => {
                tracing::warn!(%error, "the container engine is unreachable; waiting for it");
                counters.set_problem("engine", format!("{error}; the executor waits for it to start"));
            }
            Err(error) => return Err(error.into()),
        }
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(None),
            _ = tokio::time::sleep(delay) => {}
        }
        delay = (delay * 2).min(Duration::from_secs(5));
    }
}

/// The metrics' view of the executor: its warm pool, its engine, the audit log's lag, its queue.
fn watch(sandbox: &Sandbox, audit: &Arc<AuditGate>, counts: &Arc<Counts>) {
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
    let (health, audit, counts) = (sandbox.engine_health().clone(), audit.clone(), counts.clone());
    airlock_telemetry::metrics::watch_executor(move || airlock_telemetry::metrics::ExecutorReading {
        engine_reachable: health.is_reachable(),
        audit_lag: audit.lag(),
        waiting: counts.waiting.load(std::sync::atomic::Ordering::Relaxed),
        running: counts.running.load(std::sync::atomic::Ordering::Relaxed),
    });
}

/// A graceful stop: no new job starts (the waiting ones were given back to the stream for the
/// next executor), and the runs in progress end by themselves, each bounded by its own wall
/// time, publishing their events and terminal before this returns. Past the longest a run could
/// take, what is left is aborted: a later executor runs it again (or ends it as interrupted).
async fn drain(sandbox: &Sandbox, running: &mut tokio::task::JoinSet<()>, config: &SandboxConfig) {
    sandbox.close().await;
    if running.is_empty() {
        return;
    }
    let longest = Duration::from_millis(config.limits.ceiling.wall_ms)
        + Duration::from_millis(config.packages.install_limits.wall_ms)
        + Duration::from_secs(60);
    tracing::info!("stopping: letting the runs in progress finish");
    let finished = tokio::time::timeout(longest, async { while running.join_next().await.is_some() {} }).await;
    if finished.is_err() {
        tracing::warn!("runs still going at the stop's limit; aborting them");
        running.abort_all();
        while running.join_next().await.is_some() {}
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
    fn the_executors_own_keys_and_what_it_reads_of_the_auditor_and_clients() {
        let config = load("[executor]\ngate_keys = [\"k\"]\n").unwrap();
        assert_eq!(
            config.service.retry_interrupted, 1,
            "an interrupted run is run again once by default"
        );
        assert!(config.audit.required, "no run without its record, by default");
        assert_eq!(config.audit.max_lag, Duration::from_secs(2));
        assert_eq!(config.clients, 1);
        let alone = config.sharing(4);
        assert_eq!(
            (alone.slots, alone.max_per_client),
            (4, 4),
            "a lone client may use every slot"
        );

        let config = load(
            "[executor]\nretry_interrupted = 0\nmax_per_client = 3\nqueue_limit = 9\n\
             [auditor]\nrequired = false\nmax_lag = \"500ms\"\n[clients]\nextra_users = [\"bob\"]\n",
        )
        .unwrap();
        assert_eq!(config.service.retry_interrupted, 0);
        assert_eq!(
            (config.service.queue_limit, config.service.max_per_client),
            (9, Some(3))
        );
        assert!(!config.audit.required);
        assert_eq!(config.audit.max_lag, Duration::from_millis(500));
        assert_eq!(config.clients, 2);
        assert_eq!(config.sharing(2).max_per_client, 2, "as configured, at most every slot");
        let shared = load("[clients]\nextra_users = [\"bob\"]\n").unwrap();
        assert_eq!(
            shared.sharing(4).max_per_client,
            3,
            "two clients: one slot kept for the other"
        );
        assert_eq!(shared.sharing(1).max_per_client, 1);

        for bad in [
            "[executor]\nqueue_limit = 0\n",
            "[executor]\nmax_per_client = 0\n",
            "[executor]\nretry_interrupted = -1\n",
            "[auditor]\nrequired = \"yes\"\n",
            "[auditor]\nmax_lag = \"soon\"\n",
            "[auditor]\npublish_entries = false\n",
        ] {
            assert!(load(bad).is_err(), "accepted: {bad}");
        }
        assert!(load("[auditor]\nrequired = false\npublish_entries = false\n").is_ok());
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
    use airlock_protocol::{Approver, DecisionOutcome, Language, Level, MessageId, Signed, SigningKey, TrustLevel};

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
            read_only_hosts: vec![],
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
            (
                "a file added",
                r.clone()
                    .files(vec![airlock_protocol::InputFile::new("helper.py", "import os\n")]),
            ),
        ];
        for (what, changed) in changes {
            assert_eq!(
                refusal(authorize(&rid, &decided(&gate, &rid, &r, changed, 5000), &keys, 2000)),
                RefusalReason::DigestMismatch,
                "a changed {what} must be refused"
            );
        }
        // A file's content changed after approval.
        let with_file = r
            .clone()
            .files(vec![airlock_protocol::InputFile::new("data.csv", "a\n")]);
        let mut edited = with_file.clone();
        edited.inputs.files[0].content = b"b\n".to_vec();
        assert_eq!(
            refusal(authorize(
                &rid,
                &decided(&gate, &rid, &with_file, edited, 5000),
                &keys,
                2000
            )),
            RefusalReason::DigestMismatch,
            "a file's content changed after approval must be refused"
        );
        // A grant other than the one signed for.
        let mut more = grant();
        more.limits.wall_ms *= 10;
        let mut gvisor_signed = grant();
        gvisor_signed.runtime = airlock_protocol::Runtime::Runsc;
        let read_only = |hosts: &[&str]| airlock_protocol::Grant {
            network: airlock_protocol::NetworkMode::ReadOnly,
            read_only_hosts: hosts.iter().map(|h| (*h).to_owned()).collect(),
            ..grant()
        };
        let online = r.clone().network(airlock_protocol::NetworkMode::ReadOnly);
        let signed_docs_run_with = |granted: &[&str]| {
            let delivered = decided_with(
                &gate,
                &rid,
                &online,
                read_only(&["docs.python.org"]),
                read_only(granted),
                online.clone(),
                5000,
            );
            authorize(&rid, &delivered, &keys, 2000)
        };
        assert!(
            signed_docs_run_with(&["docs.python.org"]).is_ok_and(|a| a.read_only_hosts == ["docs.python.org"]),
            "the hosts signed are the hosts the run gets"
        );
        assert_eq!(
            refusal(signed_docs_run_with(&["docs.python.org", "evil.test"])),
            RefusalReason::DigestMismatch,
            "a read-only grant with a host added after signing must be refused"
        );
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
