//! The sandbox as the executor service uses it: start it once, run jobs, shut it down.

use crate::config::SandboxConfig;
use crate::docker::{self, ContainerEngine};
use crate::engine_health::EngineHealth;
use crate::error::SandboxError;
use crate::events::EventSink;
use crate::host::Capacity;
use crate::launch::{self, Frame, LaunchRequest, Launched};
use crate::network::ReadOnlyNet;
use crate::packages::Installer;
use crate::pool::{Pool, PoolStats, Shape};
use crate::quiet::Quiet;
use crate::run::{self, Execution};
use airlock_protocol::{
    Activity, Egress, ExecStarted, Inputs, Language, Limits, NetworkMode, OutputChunk, Runtime, Usage, UsageSample,
    Violation,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::mpsc;
use tokio_util::task::TaskTracker;

/// One program to run.
#[derive(Clone, Debug)]
pub struct Job {
    pub request_id: String,
    pub language: Language,
    pub code: Vec<u8>,
    pub inputs: Inputs,
    /// The approved wheels, installed (each checked against its digest) before the code runs.
    pub packages: Vec<airlock_protocol::packages::Wheel>,
    /// The decision's limits; the sandbox may only lower them.
    pub limits: Limits,
    /// The runtime the decision names: run under it or not at all.
    pub runtime: Runtime,
    /// The network the decision grants: none, or read-only through a proxy of the run's own.
    pub network: NetworkMode,
    /// With a read-only network, the hosts the decision grants: the run's proxy allows these,
    /// provided each lies within `[executor.egress] read_only_hosts`.
    pub read_only_hosts: Vec<String>,
    /// Which run of the request this is (1, then 2 when an interrupted run is run again).
    pub attempt: u32,
}

/// What happens while a job runs, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SandboxEvent {
    Started(ExecStarted),
    Output(OutputChunk),
    Usage(UsageSample),
    Activity(Activity),
    Egress(Egress),
    /// The kernel's record of the run, after the run's other events.
    Observed(Box<airlock_protocol::Observed>),
}

/// How a job ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunReport {
    /// The program's exit status; `None` when the sandbox killed it for a violation.
    pub exit_code: Option<i64>,
    /// Captured output, stdout and stderr together at most `limits.output_bytes`.
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub output_truncated: bool,
    pub violation: Option<Violation>,
    pub usage: Usage,
    /// The files the program left under `out/`, or why they were not looked for.
    pub files: Vec<airlock_protocol::OutputFile>,
    pub files_unavailable: Option<String>,
}

struct Inner {
    engine: ContainerEngine,
    health: Arc<EngineHealth>,
    /// Stops the engine's watch at shutdown.
    stop: tokio_util::sync::CancellationToken,
    config: Arc<SandboxConfig>,
    capacity: Arc<Capacity>,
    pool: Option<Arc<Pool>>,
    installer: Installer,
    cleanup: TaskTracker,
    /// Runs in flight, so that upkeep waits for a quiet moment (`quiet.rs`).
    quiet: Arc<Quiet>,
    closing: AtomicBool,
    observation: crate::observation::Observation,
}

/// The sandbox. Cheap to clone; all clones share one pool.
#[derive(Clone)]
pub struct Sandbox {
    inner: Arc<Inner>,
}

impl Sandbox {
    /// Connects (negotiating the API version), checks the images exist, removes whatever a
    /// crashed executor of the same instance left behind, and starts the warm pool.
    pub async fn start(config: SandboxConfig) -> Result<Sandbox, SandboxError> {
        let engine = ContainerEngine::connect(&config).await?;
        docker::check_runtimes(&engine, &config.runtimes).await?;
        for image in [&config.images.python, &config.images.bash] {
            crate::image::check_image(&engine, image).await?;
        }
        let removed = docker::remove_labelled(&engine, &config.instance).await?;
        if removed > 0 {
            tracing::warn!(removed, instance = %config.instance, "removed containers left by an earlier executor");
        }
        let observation = crate::observation::Observation::start(&config.observe)
            .map_err(|reason| SandboxError::ObservationRequired { reason })?;
        let config = Arc::new(config);
        let capacity = Capacity::new(&config);
        let stop = tokio_util::sync::CancellationToken::new();
        let quiet = Quiet::new(config.pool.upkeep_settle);
        let pool = if config.pool.enabled {
            let mut classes: Vec<(String, Runtime, Limits)> = Vec::new();
            for (_, quota) in config.quotas.all() {
                let limits = capacity.effective_limits(&quota);
                for &runtime in &config.runtimes.available {
                    for image in [&config.images.python, &config.images.bash] {
                        if !classes
                            .iter()
                            .any(|(i, r, l)| Shape::of(i, *r, l) == Shape::of(image, runtime, &limits))
                        {
                            classes.push((image.clone(), runtime, limits));
                        }
                    }
                }
            }
            let pool = Pool::new(engine.clone(), config.clone(), classes, quiet.clone());
            pool.run();
            Some(pool)
        } else {
            None
        };
        let lost = pool.as_ref().map(Arc::downgrade);
        let health = EngineHealth::start(engine.clone(), stop.clone(), move |state| {
            if !state.is_reachable()
                && let Some(pool) = lost.as_ref().and_then(std::sync::Weak::upgrade)
            {
                pool.discard_idle();
            }
        });
        Ok(Sandbox {
            inner: Arc::new(Inner {
                installer: Installer::new(engine.clone(), config.clone()),
                engine,
                health,
                stop,
                config,
                capacity,
                pool,
                cleanup: TaskTracker::new(),
                quiet,
                closing: AtomicBool::new(false),
                observation,
            }),
        })
    }

    pub fn config(&self) -> &SandboxConfig {
        &self.inner.config
    }

    /// The package steps: resolving specs to wheels, installing approved wheels.
    pub fn installer(&self) -> &Installer {
        &self.inner.installer
    }

    /// The watch on the container engine: the executor starts nothing while it is unreachable.
    pub fn engine_health(&self) -> &Arc<EngineHealth> {
        &self.inner.health
    }

    /// Lowers `limits` to what the host can give now (never raises them).
    pub fn effective_limits(&self, limits: &Limits) -> Limits {
        self.inner.capacity.effective_limits(limits)
    }

    /// Why runs are not observed by the kernel, when they are not (`airlock status`).
    pub fn observation_unavailable(&self) -> Option<&str> {
        self.inner.observation.unavailable()
    }

    /// Pool counters (idle, starting, hits, misses).
    pub fn pool_stats(&self) -> PoolStats {
        self.inner.pool.as_ref().map(|p| p.stats()).unwrap_or_default()
    }

    /// Waits until each pool class has its minimum of ready containers; `false` on timeout or
    /// when there is no pool.
    pub async fn wait_warm(&self, timeout: std::time::Duration) -> bool {
        match &self.inner.pool {
            Some(pool) => pool.wait_ready(timeout).await,
            None => false,
        }
    }

    /// Runs one job in a fresh, single-use container (a warm one when one of its shape is ready),
    /// after waiting for room on the host. Events stream to `events` (consume them
    /// concurrently); the container is always removed.
    pub async fn run(&self, job: Job, events: mpsc::Sender<SandboxEvent>) -> Result<RunReport, SandboxError> {
        let sink = EventSink::new(events);
        let result = self.run_with(job, &sink).await;
        sink.finish().await;
        if let Err(error) = &result
            && (error.is_docker_unreachable() || error.may_have_run())
        {
            self.inner.health.suspect();
        }
        result
    }

    async fn run_with(&self, job: Job, events: &EventSink) -> Result<RunReport, SandboxError> {
        let inner = &self.inner;
        if inner.closing.load(Ordering::Acquire) {
            return Err(SandboxError::ShuttingDown);
        }
        if job.code.is_empty() {
            return Err(SandboxError::InvalidJob("the code is empty".into()));
        }
        if !inner.config.runtimes.available.contains(&job.runtime) {
            return Err(SandboxError::RuntimeUnavailable {
                runtime: job.runtime.as_str(),
                reason: "this executor does not offer it ([executor.runtimes] available)".into(),
            });
        }
        if job.network == NetworkMode::ReadOnly {
            crate::network::check_hosts(&inner.config.egress.read_only_hosts, &job.read_only_hosts)?;
        }
        let image = inner.config.image_for(job.language).to_owned();
        let installed = if job.packages.is_empty() {
            None
        } else {
            Some(
                inner
                    .installer
                    .ensure(&job.request_id, &image, &job.packages, events.sender())
                    .await?,
            )
        };
        let limits = self.effective_limits(&job.limits);
        let admission = inner.capacity.admit(limits.memory_bytes).await?;
        let shape = Shape::of(&image, job.runtime, &limits);
        // A read-only run has a network and a proxy of its own: never a warm container.
        let read_only = match job.network {
            NetworkMode::ReadOnly => Some(
                ReadOnlyNet::open(
                    &inner.engine,
                    &inner.config,
                    &job.request_id,
                    job.runtime,
                    &job.read_only_hosts,
                    events.sender(),
                )
                .await?,
            ),
            NetworkMode::None => None,
        };
        // Before the take: the pool's refill then sees this run in flight.
        let _running = inner.quiet.begin();
        let (warm, _in_use) = match (&inner.pool, &installed, &read_only) {
            (Some(pool), None, None) => pool.take(&shape),
            _ => (None, None),
        };
        let is_warm = warm.is_some();
        let launched = match warm {
            Some(launched) => {
                self.rename_later(&launched, &job.request_id);
                Ok(launched)
            }
            None => {
                self.launch_cold(&job, &image, limits, installed.as_ref(), read_only.as_ref())
                    .await
            }
        };
        let launched = match launched {
            Ok(launched) => launched,
            Err(error) => {
                if let Some(net) = read_only {
                    net.close(&inner.engine, &inner.cleanup).await;
                }
                return Err(error);
            }
        };
        let frame = Frame::for_job(
            job.language,
            &job.code,
            &job.inputs,
            limits.wall_ms,
            &inner.config,
            installed.is_some(),
        );
        tracing::debug!(request = %job.request_id, warm = is_warm, container = %launched.id, "running");
        // Before the frame is written: the program's first syscall is already watched.
        let mut launched = launched;
        let trace = launched.trace.take();
        let observation = if launched.seen_from_host {
            inner
                .observation
                .begin(&launched, job.runtime, &inner.config.host.proc_root, trace)
        } else {
            crate::observation::RunObservation::Unavailable(
                "the container's processes are not visible in the executor's /proc".into(),
            )
        };
        let report = run::execute(
            Execution {
                engine: &inner.engine,
                config: &inner.config,
                request_id: &job.request_id,
                limits,
                runtime: job.runtime,
                frame,
                stdin: job.inputs.stdin,
                warm: is_warm,
                attempt: job.attempt,
                helpers: launched.helpers,
                memory_used: admission.used.clone(),
                cleanup: &inner.cleanup,
                quiet: &inner.quiet,
                stop: &inner.stop,
            },
            launched,
            events,
        )
        .await;
        // The container has stopped (or the run failed): what the kernel saw goes out before
        // the run's result, so it precedes the terminal event.
        let observed = tokio::task::spawn_blocking(move || observation.finish())
            .await
            .unwrap_or_else(|error| airlock_protocol::Observed::unavailable(format!("the record was lost: {error}")));
        events.send(SandboxEvent::Observed(Box::new(observed)));
        if let Some(net) = read_only {
            net.close(&inner.engine, &inner.cleanup).await;
        }
        report
    }

    async fn launch_cold(
        &self,
        job: &Job,
        image: &str,
        limits: Limits,
        installed: Option<&crate::packages::Installed>,
        read_only: Option<&ReadOnlyNet>,
    ) -> Result<Launched, SandboxError> {
        let mut binds = installed
            .map(|i| vec![(i.site.display().to_string(), docker::PACKAGES_MOUNT.to_owned())])
            .unwrap_or_default();
        let (network, extra_env) = match read_only.map(ReadOnlyNet::container_parts) {
            Some((network, env, ca_binds)) => {
                binds.extend(ca_binds);
                (network, env)
            }
            None => (docker::NetworkMode::None, vec![]),
        };
        launch::launch(
            &self.inner.engine,
            &self.inner.config,
            LaunchRequest {
                image,
                limits,
                runtime: job.runtime,
                role: "sandbox",
                request: &job.request_id,
                idle_secs: 60,
                read_only_binds: binds,
                network,
                extra_env,
            },
        )
        .await
    }

    /// A warm container was labelled before its request existed (labels are fixed at creation);
    /// its name carries the request instead. Off the hot path: the rename is cosmetic.
    fn rename_later(&self, launched: &Launched, request_id: &str) {
        let engine = self.inner.engine.clone();
        let id = launched.id.clone();
        let name = docker::object_name(&self.inner.config, "sandbox", request_id);
        let (quiet, stop) = (self.inner.quiet.clone(), self.inner.stop.clone());
        self.inner.cleanup.spawn(async move {
            tokio::select! {
                _ = quiet.settled(crate::quiet::UPKEEP_BOUND) => {}
                _ = stop.cancelled() => {}
            }
            let options = bollard::query_parameters::RenameContainerOptionsBuilder::default()
                .name(&name)
                .build();
            if let Err(error) = engine.docker.rename_container(&id, options).await {
                tracing::debug!(container = %id, %error, "renaming a warm container after its request");
            }
        });
    }

    /// Takes no more jobs: a job not yet started (waiting for room on the host, or still
    /// installing its packages) ends with [`SandboxError::ShuttingDown`], having run nothing;
    /// jobs already running go on to their end. The warm pool is emptied.
    pub async fn close(&self) {
        let inner = &self.inner;
        inner.closing.store(true, Ordering::Release);
        inner.capacity.close();
        if let Some(pool) = &inner.pool {
            pool.shutdown().await;
        }
    }

    /// Kills a running program's container now (a cancellation): its run then ends as a
    /// container that stopped, with the output it wrote until then.
    pub async fn kill(&self, container: &str) -> Result<(), SandboxError> {
        docker::signal(&self.inner.engine, container, "SIGKILL").await
    }

    /// [`Sandbox::close`], then waits for running removals and removes everything this
    /// instance made, running containers included.
    pub async fn shutdown(&self) {
        let inner = &self.inner;
        self.close().await;
        inner.stop.cancel();
        inner.cleanup.close();
        inner.cleanup.wait().await;
        if let Err(error) = docker::remove_labelled(&inner.engine, &inner.config.instance).await {
            tracing::warn!(%error, "removing the sandbox's containers at shutdown");
        }
    }
}
