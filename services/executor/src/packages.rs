//! Dependencies without open internet: a job's packages are installed first, in a separate
//! container with no user code, on an internal Docker network (no route out) whose only way
//! out is the egress proxy (`airlock-egress`: one of the executor's own per install, or a
//! session on a standalone one); the result is cached per package set ([`crate::package_cache`])
//! and mounted read-only into the program's container, which has no network at all.
//!
//! pip installs wheels only (by default), so no package code runs at install time, into the
//! install container's size-limited tmpfs; `tar` then streams the installed tree to stdout,
//! which the executor reads under a byte cap and unpacks on the host keeping only plain files
//! and directories.

use crate::SandboxEvent;
use crate::config::SandboxConfig;
use crate::docker::{self, ContainerSpec, Engine, NetworkMode};
use crate::error::SandboxError;
use crate::package_cache::{COMPLETE_MARKER, SITE, cache_key, ensure_private_dir, unpack_into_cache};
use airlock_egress::{EgressProxy, RemoteSession};
use airlock_protocol::Limits;
use airlock_protocol::request::valid_package_spec;
use bollard::container::LogOutput;
use bollard::models::{Ipam, NetworkCreateRequest};
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

/// Installs package sets, one at a time per set, and remembers them.
pub struct Installer {
    engine: Engine,
    config: Arc<SandboxConfig>,
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

impl Installer {
    pub fn new(engine: Engine, config: Arc<SandboxConfig>) -> Installer {
        Installer {
            engine,
            config,
            locks: Mutex::new(HashMap::new()),
        }
    }

    /// The installed set for `specs` (from the cache when it was installed before).
    pub async fn ensure(
        &self,
        request_id: &str,
        image: &str,
        specs: &[String],
        events: UnboundedSender<SandboxEvent>,
    ) -> Result<Installed, SandboxError> {
        if let Some(bad) = specs.iter().find(|s| !valid_package_spec(s)) {
            return Err(SandboxError::InvalidJob(format!(
                "package spec {bad:?} is not NAME or NAME==VERSION"
            )));
        }
        let image_id = self
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
            .unwrap_or_default();
        let cache_dir = &self.config.packages.cache_dir;
        ensure_private_dir(cache_dir)?;
        let key = cache_key(&self.config, &image_id, specs);
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
        let archive = self.install(request_id, image, specs, events).await?;
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

    /// Runs pip in a fresh install container on a fresh internal network whose only way out is
    /// the proxy, and returns the tar of what it installed (in a temporary file).
    async fn install(
        &self,
        request_id: &str,
        image: &str,
        specs: &[String],
        events: UnboundedSender<SandboxEvent>,
    ) -> Result<tempfile::NamedTempFile, SandboxError> {
        let network_name = docker::object_name(&self.config, "egress", request_id);
        self.engine
            .docker
            .create_network(NetworkCreateRequest {
                name: network_name.clone(),
                driver: Some("bridge".to_owned()),
                internal: Some(true),
                attachable: Some(false),
                ipam: Some(Ipam::default()),
                labels: Some(docker::labels(&self.config, "egress", request_id)),
                ..Default::default()
            })
            .await
            .map_err(|e| self.engine.err("create an install network", e))?;
        let result = self.install_on(&network_name, request_id, image, specs, events).await;
        if let Err(error) = self.engine.docker.remove_network(&network_name).await {
            tracing::warn!(network = %network_name, %error, "removing the egress network; the next start removes it");
        }
        result
    }

    /// The proxy for this install: a fresh one on the network's gateway, or a session on the
    /// standalone proxy (which listens where every install network's gateway reaches it).
    /// Either way its records reach `events`, all of them before this returns.
    async fn install_on(
        &self,
        network: &str,
        request_id: &str,
        image: &str,
        specs: &[String],
        events: UnboundedSender<SandboxEvent>,
    ) -> Result<tempfile::NamedTempFile, SandboxError> {
        let gateway = network_gateway(&self.engine, network).await?;
        let report = move |egress| {
            let _ = events.send(SandboxEvent::Egress(egress));
        };
        let pip = Pip {
            network,
            gateway,
            request_id,
            image,
            specs,
        };
        match &self.config.egress.proxy {
            None => {
                let proxy = EgressProxy::start(SocketAddr::new(gateway, 0), self.config.egress.clone(), report).await?;
                let result = self.run_pip(&pip, &proxy.index_url()).await;
                proxy.stop().await;
                result
            }
            Some(control) => {
                let session = RemoteSession::open(control, report).await?;
                let result = self.run_pip(&pip, &session.index_url(gateway)).await;
                session.close().await;
                result
            }
        }
    }

    async fn run_pip(&self, pip: &Pip<'_>, index_url: &str) -> Result<tempfile::NamedTempFile, SandboxError> {
        let limits = self.config.packages.install_limits;
        let binary = if self.config.packages.only_binary {
            "--only-binary=:all:"
        } else {
            "--prefer-binary"
        };
        // pip's own log goes to stderr; stdout carries only the tar of the installed tree.
        let script = format!(
            "python3 -I -m pip install --disable-pip-version-check --no-input --no-cache-dir \
             --progress-bar off {binary} --target /tmp/site --index-url \"$AIRLOCK_INDEX\" \
             --trusted-host \"$AIRLOCK_PROXY_HOST\" -- \"$@\" 1>&2 && exec tar -C /tmp/site -cf - ."
        );
        let mut cmd = vec!["bash".to_owned(), "-c".to_owned(), script, "install".to_owned()];
        cmd.extend(pip.specs.iter().cloned());
        let mut env = docker::base_env();
        env.push(format!("AIRLOCK_INDEX={index_url}"));
        env.push(format!("AIRLOCK_PROXY_HOST={}", pip.gateway));
        env.push("PIP_CONFIG_FILE=/dev/null".to_owned());
        let name = docker::object_name(&self.config, "install", pip.request_id);
        let body = docker::container_body(ContainerSpec {
            image: pip.image.to_owned(),
            limits,
            labels: docker::labels(&self.config, "install", pip.request_id),
            env,
            cmd,
            network: NetworkMode::Egress {
                network: pip.network.to_owned(),
                gateway: pip.gateway.to_string(),
            },
            read_only_binds: vec![],
            tmpfs_noexec: true,
            shm_bytes: 0,
            runtime: airlock_protocol::Runtime::Runc,
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

/// What one install container runs for.
struct Pip<'a> {
    network: &'a str,
    gateway: IpAddr,
    request_id: &'a str,
    image: &'a str,
    specs: &'a [String],
}

async fn network_gateway(engine: &Engine, network: &str) -> Result<IpAddr, SandboxError> {
    let inspect = engine
        .docker
        .inspect_network(network, None::<bollard::query_parameters::InspectNetworkOptions>)
        .await
        .map_err(|e| engine.err("inspect an install network", e))?;
    inspect
        .ipam
        .and_then(|ipam| ipam.config)
        .into_iter()
        .flatten()
        .filter_map(|c| c.gateway)
        .find_map(|g| g.parse::<IpAddr>().ok())
        .ok_or_else(|| SandboxError::Internal(format!("network {network} has no gateway address")))
}
