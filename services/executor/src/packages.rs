//! Dependencies without open internet, in two steps, each in a separate container with no user
//! code:
//!
//! - **resolving** ([`Installer::download`]): `pip download` (wheels only, dependencies
//!   included) on an internal Docker network (no route out) whose only way out is the egress
//!   proxy (`airlock-egress`: one of the executor's own per run, or a session on a standalone
//!   one). The wheels come back as a tar on stdout, read under a byte cap, and enter the wheel
//!   store by their SHA-256 ([`crate::wheels`]) to be rated ([`crate::package_rating`]) before the
//!   gate decides. A wheel an approval names that this executor's store lacks is fetched again the
//!   same way, pinned by name, version and `--require-hashes`.
//! - **installing** ([`Installer::ensure`]): exactly the approved wheels, each checked against its
//!   digest, mounted read-only into a container with no network at all, `pip install --no-index
//!   --no-deps` into a size-limited tmpfs; bytecode shipped in a wheel is deleted and the assessed
//!   sources compiled instead (checked-hash `.pyc`, never trusted over their source). `tar` streams
//!   the tree out, the executor unpacks it keeping only plain files and directories, and caches it
//!   per wheel set ([`crate::package_cache`]), mounted read-only into the program's container.
//!
//! Wheels only: pip never builds a source distribution, so no package code runs in either step.

use crate::SandboxEvent;
use crate::config::SandboxConfig;
use crate::docker::{self, ContainerEngine, ContainerSpec, NetworkMode};
use crate::error::SandboxError;
use crate::package_cache::{COMPLETE_MARKER, SITE, ensure_private_dir, set_key, unpack_into_cache};
use crate::wheels::{WheelError, WheelStore};
use airlock_egress::{EgressProxy, RemoteSession};
use airlock_protocol::Limits;
use airlock_protocol::packages::Wheel;
use airlock_protocol::request::valid_package_spec;
use bollard::container::LogOutput;
use bollard::query_parameters::{AttachContainerOptionsBuilder, CreateContainerOptionsBuilder};
use futures::StreamExt;
use std::collections::HashMap;
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;

const MAX_LOG_BYTES: usize = 16 * 1024;

/// Resolves and installs package sets, one at a time per set, and remembers them.
pub struct Installer {
    engine: ContainerEngine,
    config: Arc<SandboxConfig>,
    store: WheelStore,
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

/// Where a package set lives on the host, and whether it was there already.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Installed {
    pub site: PathBuf,
    pub cached: bool,
}

/// How reading the install container's output ended.
enum Streamed {
    Complete,
    Failed(String),
}

/// What one package container does.
enum Step<'a> {
    /// `pip download` of specs, dependencies included, through the egress proxy.
    Download { specs: &'a [String] },
    /// `pip download` of exact wheels, pinned by hash, through the egress proxy.
    Refetch { wheels: &'a [Wheel] },
    /// `pip install` of wheel files mounted read-only, with no network.
    Install { files: Vec<(PathBuf, String)> },
}

/// Where wheel files appear in the install container.
const WHEELS_MOUNT: &str = "/wheels";

const PIP: &str = "python3 -I -m pip --disable-pip-version-check --no-input --no-cache-dir";

impl Step<'_> {
    /// The script (pip's log on stderr; stdout carries only the tar of the result) and its
    /// arguments, each a validated spec, pin or path.
    fn command(&self) -> (String, Vec<String>) {
        // One retry, a bounded wait: an index that does not answer is reported, not waited for.
        let fetch = "--progress-bar off --retries 1 --timeout 20 --only-binary=:all: --dest /tmp/out \
                     --index-url \"$AIRLOCK_INDEX\" --trusted-host \"$AIRLOCK_PROXY_HOST\"";
        match self {
            Step::Download { specs } => (
                format!("{PIP} download {fetch} -- \"$@\" 1>&2 && exec tar -C /tmp/out -cf - ."),
                specs.to_vec(),
            ),
            Step::Refetch { wheels } => (
                format!(
                    "printf '%s\\n' \"$@\" > /tmp/pins.txt && {PIP} download {fetch} --no-deps --require-hashes \
                     -r /tmp/pins.txt 1>&2 && exec tar -C /tmp/out -cf - ."
                ),
                wheels
                    .iter()
                    .map(|w| {
                        format!(
                            "{}=={} --hash=sha256:{}",
                            w.name,
                            w.version,
                            w.sha256.as_str().trim_start_matches("sha256:")
                        )
                    })
                    .collect(),
            ),
            Step::Install { files } => (
                format!(
                    "{PIP} install --progress-bar off --no-index --no-deps --no-compile --only-binary=:all: \
                     --target /tmp/out -- \"$@\" 1>&2 && find /tmp/out -name '*.py[co]' -delete && \
                     {{ python3 -I -m compileall -q --invalidation-mode checked-hash /tmp/out 1>&2 || true; }} && \
                     exec tar -C /tmp/out -cf - ."
                ),
                files.iter().map(|(_, name)| format!("{WHEELS_MOUNT}/{name}")).collect(),
            ),
        }
    }
}

impl Installer {
    pub fn new(engine: ContainerEngine, config: Arc<SandboxConfig>) -> Installer {
        Installer {
            store: WheelStore::new(&config.packages.cache_dir),
            engine,
            config,
            locks: Mutex::new(HashMap::new()),
        }
    }

    pub fn store(&self) -> &WheelStore {
        &self.store
    }

    /// The image's id: what resolved and installed sets are made with.
    pub async fn image_id(&self, image: &str) -> Result<String, SandboxError> {
        Ok(self
            .engine
            .docker
            .inspect_image(image)
            .await
            .map_err(|e| match e {
                bollard::errors::Error::DockerResponseServerError { status_code: 404, .. } => {
                    SandboxError::ImageMissing {
                        image: image.to_owned(),
                    }
                }
                other => self.engine.err("inspect an image", other),
            })?
            .id
            .unwrap_or_default())
    }

    /// Resolves `specs` to wheels (dependencies included) through the egress proxy and puts
    /// them in the wheel store; returns them, sorted.
    pub async fn download(
        &self,
        request_id: &str,
        image: &str,
        specs: &[String],
        events: UnboundedSender<SandboxEvent>,
    ) -> Result<Vec<Wheel>, SandboxError> {
        if let Some(bad) = specs.iter().find(|s| !valid_package_spec(s)) {
            return Err(SandboxError::InvalidJob(format!(
                "package spec {bad:?} is not NAME or NAME==VERSION"
            )));
        }
        ensure_private_dir(&self.config.packages.cache_dir)?;
        let archive = self
            .through_proxy(request_id, image, &Step::Download { specs }, events)
            .await?;
        let mut wheels = self.store_wheels(archive).await?;
        wheels.sort();
        Ok(wheels)
    }

    /// Takes the wheels of a download's tar into the store.
    async fn store_wheels(&self, archive: tempfile::NamedTempFile) -> Result<Vec<Wheel>, SandboxError> {
        let store = self.store.clone();
        let cache_dir = self.config.packages.cache_dir.clone();
        tokio::task::spawn_blocking(move || {
            let staging = tempfile::Builder::new()
                .prefix(".download-")
                .tempdir_in(&cache_dir)
                .map_err(|source| SandboxError::Io {
                    action: "creating a staging directory in",
                    path: cache_dir.clone(),
                    source,
                })?;
            let files = crate::package_cache::unpack_flat(&archive, staging.path())?;
            files
                .iter()
                .map(|(name, path)| store.put(name, path))
                .collect::<Result<Vec<_>, _>>()
        })
        .await
        .map_err(|e| SandboxError::Internal(format!("storing wheels: {e}")))?
    }

    /// The installed set of exactly `wheels` (from the cache when it was installed before).
    /// Each wheel is checked against its digest before it is used; one this executor's store
    /// lacks is fetched again, pinned by its hash. Nothing whose digest differs is installed.
    pub async fn ensure(
        &self,
        request_id: &str,
        image: &str,
        wheels: &[Wheel],
        events: UnboundedSender<SandboxEvent>,
    ) -> Result<Installed, SandboxError> {
        if let Some(bad) = wheels.iter().find(|w| !w.is_well_formed()) {
            return Err(SandboxError::InvalidJob(format!("wheel {:?} is malformed", bad.file)));
        }
        let image_id = self.image_id(image).await?;
        let cache_dir = &self.config.packages.cache_dir;
        ensure_private_dir(cache_dir)?;
        let key = set_key(&image_id, wheels);
        let dir = cache_dir.join(&key);
        let cached = Installed {
            site: dir.join(SITE),
            cached: true,
        };
        if dir.join(COMPLETE_MARKER).exists() {
            return Ok(cached);
        }
        let lock = {
            let mut locks = self
                .locks
                .lock()
                .map_err(|_| SandboxError::Internal("package lock poisoned".into()))?;
            locks.entry(key.clone()).or_default().clone()
        };
        let _guard = lock.lock().await;
        if dir.join(COMPLETE_MARKER).exists() {
            return Ok(cached);
        }
        let missing: Vec<Wheel> = wheels.iter().filter(|w| !self.store.has(w)).cloned().collect();
        if !missing.is_empty() {
            tracing::info!(
                wheels = missing.len(),
                "fetching approved wheels this executor does not hold, pinned by hash"
            );
            let archive = self
                .through_proxy(request_id, image, &Step::Refetch { wheels: &missing }, events)
                .await
                .map_err(|error| match error {
                    SandboxError::Packages { detail } if detail.contains("DO NOT MATCH THE HASHES") => {
                        WheelError::IndexChanged { detail }.into()
                    }
                    other => other,
                })?;
            let fetched = self.store_wheels(archive).await?;
            for wanted in &missing {
                if !fetched.contains(wanted) {
                    let found = fetched.iter().find(|w| w.file == wanted.file).map(|w| w.sha256.clone());
                    return Err(match found {
                        Some(found) => WheelError::DigestMismatch {
                            file: wanted.file.clone(),
                            expected: wanted.sha256.clone(),
                            found,
                        },
                        None => WheelError::Missing {
                            file: wanted.file.clone(),
                        },
                    }
                    .into());
                }
            }
        }
        let mut files = Vec::with_capacity(wheels.len());
        for wheel in wheels {
            files.push((self.store.verified(wheel)?, wheel.file.clone()));
        }
        let archive = self.offline(request_id, image, &Step::Install { files }).await?;
        let cache_dir = self.config.packages.cache_dir.clone();
        let final_dir = dir.clone();
        tokio::task::spawn_blocking(move || unpack_into_cache(&archive, &cache_dir, &final_dir))
            .await
            .map_err(|e| SandboxError::Internal(format!("unpacking packages: {e}")))??;
        Ok(Installed {
            site: dir.join(SITE),
            cached: false,
        })
    }

    /// Runs `step` in a fresh container with no network at all.
    async fn offline(
        &self,
        request_id: &str,
        image: &str,
        step: &Step<'_>,
    ) -> Result<tempfile::NamedTempFile, SandboxError> {
        self.run_step(request_id, image, step, NetworkMode::None, vec![]).await
    }

    /// Runs `step` in a fresh container on a fresh internal network whose only way out is the
    /// proxy, and returns the tar it wrote (in a temporary file).
    async fn through_proxy(
        &self,
        request_id: &str,
        image: &str,
        step: &Step<'_>,
        events: UnboundedSender<SandboxEvent>,
    ) -> Result<tempfile::NamedTempFile, SandboxError> {
        let (network_name, gateway) =
            crate::network::create_internal(&self.engine, &self.config, "egress", request_id).await?;
        let result = self
            .on_network(&network_name, gateway, request_id, image, step, events)
            .await;
        crate::network::remove(&self.engine, &network_name).await;
        result
    }

    /// The proxy for this step: a fresh one on the network's gateway, or a session on the
    /// standalone proxy (which listens where every install network's gateway reaches it).
    /// Either way its records reach `events`, all of them before this returns.
    async fn on_network(
        &self,
        network: &str,
        gateway: IpAddr,
        request_id: &str,
        image: &str,
        step: &Step<'_>,
        events: UnboundedSender<SandboxEvent>,
    ) -> Result<tempfile::NamedTempFile, SandboxError> {
        let report = move |egress| {
            let _ = events.send(SandboxEvent::Egress(egress));
        };
        let mode = NetworkMode::Egress {
            network: network.to_owned(),
            gateway: gateway.to_string(),
        };
        let env = |index_url: String| {
            vec![
                format!("AIRLOCK_INDEX={index_url}"),
                format!("AIRLOCK_PROXY_HOST={gateway}"),
            ]
        };
        match &self.config.egress.proxy {
            None => {
                let proxy = EgressProxy::start(SocketAddr::new(gateway, 0), self.config.egress.clone(), report).await?;
                let result = self
                    .run_step(request_id, image, step, mode, env(proxy.index_url()))
                    .await;
                proxy.stop().await;
                result
            }
            Some(control) => {
                let session = RemoteSession::open(control, report).await?;
                let result = self
                    .run_step(request_id, image, step, mode, env(session.index_url(gateway)))
                    .await;
                session.close().await;
                result
            }
        }
    }

    async fn run_step(
        &self,
        request_id: &str,
        image: &str,
        step: &Step<'_>,
        network: NetworkMode,
        extra_env: Vec<String>,
    ) -> Result<tempfile::NamedTempFile, SandboxError> {
        let limits = self.config.packages.install_limits;
        let (script, args) = step.command();
        let mut cmd = vec![
            "bash".to_owned(),
            "-c".to_owned(),
            script,
            "airlock-packages".to_owned(),
        ];
        cmd.extend(args);
        let mut env = docker::base_env();
        env.extend(extra_env);
        env.push("PIP_CONFIG_FILE=/dev/null".to_owned());
        let read_only_binds = match step {
            Step::Install { files } => files
                .iter()
                .map(|(host, name)| (host.display().to_string(), format!("{WHEELS_MOUNT}/{name}")))
                .collect(),
            _ => vec![],
        };
        let name = docker::object_name(&self.config, "install", request_id);
        let body = docker::container_body(ContainerSpec {
            image: image.to_owned(),
            limits,
            labels: docker::labels(&self.config, "install", request_id),
            env,
            cmd,
            network,
            read_only_binds,
            tmpfs_noexec: true,
            shm_bytes: 0,
            runtime: airlock_protocol::Runtime::Runc,
            bootstrap: false,
        });
        let created = self
            .engine
            .docker
            .create_container(Some(CreateContainerOptionsBuilder::default().name(&name).build()), body)
            .await
            .map_err(|source| SandboxError::StartFailed {
                role: "install",
                source,
            })?;
        let result = self.collect(&created.id, limits).await;
        if let Err(error) = docker::remove_container(&self.engine, &created.id).await {
            tracing::warn!(container = %created.id, %error, "removing the install container");
        }
        result
    }

    /// Starts the install container and takes its tar under a byte cap and its wall time; pip's
    /// exit status comes from the engine.
    async fn collect(&self, id: &str, limits: Limits) -> Result<tempfile::NamedTempFile, SandboxError> {
        let mut output = self.start_streaming(id).await?;
        let cache_dir = &self.config.packages.cache_dir;
        let mut archive = tempfile::NamedTempFile::new_in(cache_dir).map_err(|source| SandboxError::Io {
            action: "creating a package archive in",
            path: cache_dir.clone(),
            source,
        })?;
        let mut log: Vec<u8> = Vec::new();
        if let Streamed::Failed(detail) = self.stream_archive(&mut output, &mut archive, &mut log, limits).await? {
            docker::signal(&self.engine, id, "SIGKILL").await?;
            return Err(SandboxError::Packages { detail });
        }
        let code = docker::exit_status(&self.engine, id).await?;
        if code != 0 {
            let text = String::from_utf8_lossy(&log);
            let tail: Vec<&str> = text.lines().rev().take(12).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            return Err(SandboxError::Packages {
                detail: format!("pip exited with {code}: {}", tail.join("\n")),
            });
        }
        archive.flush().map_err(|source| SandboxError::Io {
            action: "writing",
            path: archive.path().to_path_buf(),
            source,
        })?;
        Ok(archive)
    }

    async fn start_streaming(
        &self,
        id: &str,
    ) -> Result<
        std::pin::Pin<Box<dyn futures::Stream<Item = Result<LogOutput, bollard::errors::Error>> + Send>>,
        SandboxError,
    > {
        let attach = self
            .engine
            .docker
            .attach_container(
                id,
                Some(
                    AttachContainerOptionsBuilder::default()
                        .stdout(true)
                        .stderr(true)
                        .stream(true)
                        .build(),
                ),
            )
            .await
            .map_err(|e| self.engine.err("attach to the install container", e))?;
        self.engine
            .docker
            .start_container(id, None::<bollard::query_parameters::StartContainerOptions>)
            .await
            .map_err(|source| SandboxError::StartFailed {
                role: "install",
                source,
            })?;
        drop(attach.input);
        Ok(attach.output)
    }

    /// Writes stdout (the tar) to `archive`, keeps the end of stderr (pip's log) in `log`.
    async fn stream_archive(
        &self,
        output: &mut std::pin::Pin<Box<dyn futures::Stream<Item = Result<LogOutput, bollard::errors::Error>> + Send>>,
        archive: &mut tempfile::NamedTempFile,
        log: &mut Vec<u8>,
        limits: Limits,
    ) -> Result<Streamed, SandboxError> {
        // The tar is a little larger than the files it holds.
        let cap = limits.disk_bytes + limits.disk_bytes / 8 + 1024 * 1024;
        let mut written: u64 = 0;
        let deadline = tokio::time::sleep(Duration::from_millis(limits.wall_ms));
        tokio::pin!(deadline);
        loop {
            let item = tokio::select! {
                item = output.next() => item,
                _ = &mut deadline => {
                    return Ok(Streamed::Failed(format!("the install took longer than {} ms", limits.wall_ms)));
                }
            };
            match item {
                Some(Ok(LogOutput::StdOut { message })) => {
                    written += message.len() as u64;
                    if written > cap {
                        return Ok(Streamed::Failed(format!("the installed packages exceed {cap} bytes")));
                    }
                    archive.write_all(&message).map_err(|source| SandboxError::Io {
                        action: "writing",
                        path: archive.path().to_path_buf(),
                        source,
                    })?;
                }
                Some(Ok(LogOutput::StdErr { message })) => {
                    log.extend_from_slice(&message);
                    if log.len() > 4 * MAX_LOG_BYTES {
                        log.drain(..log.len() - MAX_LOG_BYTES);
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(error)) => {
                    return Ok(Streamed::Failed(format!("reading the install container: {error}")));
                }
                None => return Ok(Streamed::Complete),
            }
        }
    }
}
