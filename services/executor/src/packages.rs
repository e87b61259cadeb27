//! Dependencies without open internet: a job's packages are installed first, in a separate
//! container with no user code, on an internal Docker network (no route out) whose only way
//! out is the egress proxy; the result is cached per package set and mounted read-only into the
//! program's container, which has no network at all.
//!
//! pip installs wheels only (by default), so no package code runs at install time, into the
//! install container's size-limited tmpfs; `tar` then streams the installed tree to stdout,
//! which the executor reads under a byte cap and unpacks on the host keeping only plain files
//! and directories.

use crate::config::SandboxConfig;
use crate::docker::{self, ContainerSpec, Engine, NetworkMode};
use crate::egress::EgressProxy;
use crate::error::SandboxError;
use crate::{SandboxEvent, image};
use airlock_protocol::request::valid_package_spec;
use bollard::container::LogOutput;
use bollard::models::{Ipam, NetworkCreateRequest};
use bollard::query_parameters::{
    AttachContainerOptionsBuilder, CreateContainerOptionsBuilder, WaitContainerOptionsBuilder,
};
use futures::StreamExt;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;

const COMPLETE_MARKER: &str = ".airlock-complete";
const SITE: &str = "site";
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

/// PEP 503 normalised name, plus the version as given.
fn normalise(spec: &str) -> String {
    let (name, version) = spec.split_once("==").unwrap_or((spec, ""));
    let mut name: String = name
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c == '_' || c == '.' { '-' } else { c })
        .collect();
    if !version.is_empty() {
        name.push_str("==");
        name.push_str(version);
    }
    name
}

/// The cache key of a package set: everything that changes what gets installed.
pub fn cache_key(config: &SandboxConfig, image_id: &str, specs: &[String]) -> String {
    let mut specs: Vec<String> = specs.iter().map(|s| normalise(s)).collect();
    specs.sort();
    specs.dedup();
    let mut hasher = Sha256::new();
    hasher.update(b"airlock-packages-v1\n");
    hasher.update(image_id.as_bytes());
    hasher.update(b"\n");
    hasher.update(config.egress.index_host.as_bytes());
    hasher.update(config.egress.index_path.as_bytes());
    if let Some(pinned) = config.egress.pinned.get(&config.egress.index_host) {
        hasher.update(pinned.as_bytes());
    }
    hasher.update(if config.packages.only_binary {
        "\nwheels\n"
    } else {
        "\nany\n"
    });
    for spec in specs {
        hasher.update(spec.as_bytes());
        hasher.update(b"\n");
    }
    hex::encode(hasher.finalize())
}

/// The package cache holds code that runs in sandboxes, so it must belong to this user alone:
/// in a directory others can write to (a shared /tmp path they created first, say) they could
/// plant a "complete" package set for the next request that names it.
pub fn ensure_private_dir(dir: &Path) -> Result<(), SandboxError> {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let fail = |why: String| SandboxError::Internal(format!("package cache {}: {why}", dir.display()));
    std::fs::create_dir_all(dir).map_err(|e| fail(e.to_string()))?;
    let meta = std::fs::symlink_metadata(dir).map_err(|e| fail(e.to_string()))?;
    if !meta.is_dir() {
        return Err(fail("is not a directory (a symbolic link is refused)".into()));
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(fail(format!("belongs to uid {}, not to this user (uid {me})", meta.uid())));
    }
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(|e| fail(e.to_string()))?;
    }
    Ok(())
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
                other => self.engine.err(other),
            })?
            .id
            .unwrap_or_default();
        let cache_dir = &self.config.packages.cache_dir;
        ensure_private_dir(cache_dir)?;
        let key = cache_key(&self.config, &image_id, specs);
        let dir = cache_dir.join(&key);
        if dir.join(COMPLETE_MARKER).exists() {
            return Ok(Installed {
                site: dir.join(SITE),
                cached: true,
            });
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
            return Ok(Installed {
                site: dir.join(SITE),
                cached: true,
            });
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

    /// Runs pip in a fresh install container behind a fresh proxy on a fresh internal network,
    /// and returns the tar of what it installed (in a temporary file).
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
            .map_err(|e| self.engine.err(e))?;
        let result = self.install_on(&network_name, request_id, image, specs, events).await;
        if let Err(error) = self.engine.docker.remove_network(&network_name).await {
            tracing::warn!(network = %network_name, %error, "removing the egress network; the next start removes it");
        }
        result
    }

    async fn install_on(
        &self,
        network: &str,
        request_id: &str,
        image: &str,
        specs: &[String],
        events: UnboundedSender<SandboxEvent>,
    ) -> Result<tempfile::NamedTempFile, SandboxError> {
        let gateway = network_gateway(&self.engine, network).await?;
        let proxy = EgressProxy::start(SocketAddr::new(gateway, 0), self.config.egress.clone(), move |egress| {
            let _ = events.send(SandboxEvent::Egress(egress));
        })
        .await?;
        let result = self.run_pip(network, gateway, &proxy, request_id, image, specs).await;
        proxy.stop().await;
        result
    }

    async fn run_pip(
        &self,
        network: &str,
        gateway: IpAddr,
        proxy: &EgressProxy,
        request_id: &str,
        image: &str,
        specs: &[String],
    ) -> Result<tempfile::NamedTempFile, SandboxError> {
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
        cmd.extend(specs.iter().cloned());
        let mut env = docker::base_env();
        env.push(format!("AIRLOCK_INDEX={}", proxy.index_url()));
        env.push(format!("AIRLOCK_PROXY_HOST={gateway}"));
        env.push("PIP_CONFIG_FILE=/dev/null".to_owned());
        let name = docker::object_name(&self.config, "install", request_id);
        let body = docker::container_body(ContainerSpec {
            image: image.to_owned(),
            limits,
            labels: docker::labels(&self.config, "install", request_id),
            env,
            cmd,
            network: NetworkMode::Egress {
                network: network.to_owned(),
                gateway: gateway.to_string(),
            },
            read_only_binds: vec![],
            tmpfs_noexec: true,
            shm_bytes: 0,
        });
        let created = self
            .engine
            .docker
            .create_container(Some(CreateContainerOptionsBuilder::default().name(&name).build()), body)
            .await
            .map_err(|e| SandboxError::StartFailed(format!("install container: {e}")))?;
        let result = self.collect(&created.id, limits).await;
        if let Err(error) = docker::remove_container(&self.engine, &created.id).await {
            tracing::warn!(container = %created.id, %error, "removing the install container");
        }
        result
    }

    async fn collect(
        &self,
        id: &str,
        limits: airlock_protocol::Limits,
    ) -> Result<tempfile::NamedTempFile, SandboxError> {
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
            .map_err(|e| self.engine.err(e))?;
        self.engine
            .docker
            .start_container(id, None::<bollard::query_parameters::StartContainerOptions>)
            .await
            .map_err(|e| SandboxError::StartFailed(format!("install container: {e}")))?;
        let mut output = attach.output;
        drop(attach.input);
        let mut archive = tempfile::NamedTempFile::new_in(&self.config.packages.cache_dir)
            .map_err(|e| SandboxError::Internal(format!("package archive: {e}")))?;
        // The tar is a little larger than the files it holds.
        let cap = limits.disk_bytes + limits.disk_bytes / 8 + 1024 * 1024;
        let mut written: u64 = 0;
        let mut log: Vec<u8> = Vec::new();
        let deadline = tokio::time::sleep(Duration::from_millis(limits.wall_ms));
        tokio::pin!(deadline);
        let mut failure = None;
        loop {
            tokio::select! {
                item = output.next() => match item {
                    Some(Ok(LogOutput::StdOut { message })) => {
                        written += message.len() as u64;
                        if written > cap {
                            failure = Some(format!("the installed packages exceed {cap} bytes"));
                            break;
                        }
                        archive.write_all(&message).map_err(|e| SandboxError::Internal(format!("package archive: {e}")))?;
                    }
                    Some(Ok(LogOutput::StdErr { message })) => {
                        log.extend_from_slice(&message);
                        if log.len() > 4 * MAX_LOG_BYTES {
                            log.drain(..log.len() - MAX_LOG_BYTES);
                        }
                    }
                    Some(Ok(_)) => {}
                    Some(Err(error)) => { failure = Some(format!("reading the install container: {error}")); break; }
                    None => break,
                },
                _ = &mut deadline => {
                    failure = Some(format!("the install took longer than {} ms", limits.wall_ms));
                    break;
                }
            }
        }
        if let Some(failure) = failure {
            docker::signal(&self.engine, id, "SIGKILL").await?;
            return Err(SandboxError::Packages(failure));
        }
        let mut wait = self.engine.docker.wait_container(
            id,
            Some(WaitContainerOptionsBuilder::default().condition("not-running").build()),
        );
        let code = match wait.next().await {
            Some(Ok(response)) => response.status_code,
            Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. })) => code,
            Some(Err(error)) => return Err(self.engine.err(error)),
            None => -1,
        };
        if code != 0 {
            let text = String::from_utf8_lossy(&log);
            let tail: Vec<&str> = text.lines().rev().take(12).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            return Err(SandboxError::Packages(format!(
                "pip exited with {code}: {}",
                tail.join("\n")
            )));
        }
        archive
            .flush()
            .map_err(|e| SandboxError::Internal(format!("package archive: {e}")))?;
        Ok(archive)
    }
}

async fn network_gateway(engine: &Engine, network: &str) -> Result<IpAddr, SandboxError> {
    let inspect = engine
        .docker
        .inspect_network(network, None::<bollard::query_parameters::InspectNetworkOptions>)
        .await
        .map_err(|e| engine.err(e))?;
    inspect
        .ipam
        .and_then(|ipam| ipam.config)
        .into_iter()
        .flatten()
        .filter_map(|c| c.gateway)
        .find_map(|g| g.parse::<IpAddr>().ok())
        .ok_or_else(|| SandboxError::Internal(format!("network {network} has no gateway address")))
}

/// Unpacks the install's tar into `final_dir/site`: plain files and directories only, every
/// path inside the directory, modes reduced to 0644/0755; then marks it complete.
fn unpack_into_cache(
    archive: &tempfile::NamedTempFile,
    cache_dir: &Path,
    final_dir: &Path,
) -> Result<(), SandboxError> {
    let fail = |what: &str, e: std::io::Error| {
        SandboxError::Packages(format!("unpacking the installed packages: {what}: {e}"))
    };
    let staging = tempfile::Builder::new()
        .prefix(".staging-")
        .tempdir_in(cache_dir)
        .map_err(|e| fail("staging directory", e))?;
    let site = staging.path().join(SITE);
    std::fs::create_dir_all(&site).map_err(|e| fail("site directory", e))?;
    let file = std::fs::File::open(archive.path()).map_err(|e| fail("archive", e))?;
    let mut tar = tar::Archive::new(file);
    for entry in tar.entries().map_err(|e| fail("archive", e))? {
        let mut entry = entry.map_err(|e| fail("entry", e))?;
        let path = entry.path().map_err(|e| fail("entry path", e))?.into_owned();
        let mut relative = PathBuf::new();
        for component in path.components() {
            match component {
                Component::CurDir => {}
                Component::Normal(part) => relative.push(part),
                _ => {
                    return Err(SandboxError::Packages(format!(
                        "the installed packages hold an unsafe path {}",
                        path.display()
                    )));
                }
            }
        }
        let target = site.join(&relative);
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            std::fs::create_dir_all(&target).map_err(|e| fail("directory", e))?;
        } else if kind.is_file() {
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).map_err(|e| fail("directory", e))?;
            }
            let executable = entry.header().mode().map(|m| m & 0o111 != 0).unwrap_or(false);
            let mut out = std::fs::File::create(&target).map_err(|e| fail("file", e))?;
            std::io::copy(&mut entry, &mut out).map_err(|e| fail("file", e))?;
            use std::os::unix::fs::PermissionsExt;
            let mode = if executable { 0o755 } else { 0o644 };
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode)).map_err(|e| fail("mode", e))?;
        } else {
            tracing::debug!(path = %path.display(), ?kind, "skipping a non-regular entry of the installed packages");
        }
    }
    set_dir_modes(&site).map_err(|e| fail("modes", e))?;
    std::fs::write(staging.path().join(COMPLETE_MARKER), image::recipe_hash()).map_err(|e| fail("marker", e))?;
    let staged = staging.keep();
    if let Err(error) = std::fs::rename(&staged, final_dir) {
        // Another executor finished the same set first: theirs is as good.
        let _ = std::fs::remove_dir_all(&staged);
        if !final_dir.join(COMPLETE_MARKER).exists() {
            return Err(fail("moving into the cache", error));
        }
    }
    Ok(())
}

fn set_dir_modes(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))?;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            set_dir_modes(&entry.path())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_is_made_private_and_foreign_or_linked_ones_are_refused() {
        use std::os::unix::fs::PermissionsExt as _;
        let root = tempfile::tempdir().unwrap();
        let cache = root.path().join("cache");
        std::fs::create_dir(&cache).unwrap();
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
        ensure_private_dir(&cache).unwrap();
        let mode = std::fs::metadata(&cache).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);

        let link = root.path().join("link");
        std::os::unix::fs::symlink(&cache, &link).unwrap();
        let refused = ensure_private_dir(&link).unwrap_err().to_string();
        assert!(refused.contains("symbolic link"), "{refused}");

        // A directory of another user: only testable as root, which CI is.
        if unsafe { libc::geteuid() } == 0 {
            let foreign = root.path().join("foreign");
            std::fs::create_dir(&foreign).unwrap();
            std::os::unix::fs::chown(&foreign, Some(65534), Some(65534)).unwrap();
            let refused = ensure_private_dir(&foreign).unwrap_err().to_string();
            assert!(refused.contains("uid 65534"), "{refused}");
        }
    }

    #[test]
    fn cache_key_ignores_order_and_spelling() {
        let config = SandboxConfig::default();
        let a = cache_key(&config, "img", &["Six==1.16.0".into(), "zope.interface".into()]);
        let b = cache_key(&config, "img", &["zope_interface".into(), "six==1.16.0".into()]);
        assert_eq!(a, b);
        assert_ne!(
            a,
            cache_key(&config, "other-image", &["six==1.16.0".into(), "zope.interface".into()])
        );
        assert_ne!(
            a,
            cache_key(&config, "img", &["six==1.17.0".into(), "zope.interface".into()])
        );
    }

    fn tar_with(entries: &[(&str, tar::EntryType, &[u8])]) -> tempfile::NamedTempFile {
        let file = tempfile::NamedTempFile::new().unwrap();
        let mut builder = tar::Builder::new(file.reopen().unwrap());
        for (path, kind, data) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(*kind);
            header.set_size(data.len() as u64);
            header.set_mode(0o4755);
            if *kind == tar::EntryType::Symlink {
                header.set_link_name("/etc/passwd").unwrap();
            }
            // Raw names, so that unsafe ones reach the unpacker as they would from a container.
            let name = &mut header.as_old_mut().name;
            name[..path.len()].copy_from_slice(path.as_bytes());
            header.set_cksum();
            builder.append(&header, *data).unwrap();
        }
        builder.finish().unwrap();
        file
    }

    #[test]
    fn unpacking_keeps_plain_files_only() {
        let cache = tempfile::tempdir().unwrap();
        let archive = tar_with(&[
            ("./pkg/", tar::EntryType::Directory, b""),
            ("./pkg/__init__.py", tar::EntryType::Regular, b"X = 1\n"),
            ("./bin/tool", tar::EntryType::Regular, b"#!/bin/sh\n"),
            ("./pkg/link", tar::EntryType::Symlink, b""),
        ]);
        let dest = cache.path().join("key");
        unpack_into_cache(&archive, cache.path(), &dest).unwrap();
        assert_eq!(std::fs::read(dest.join("site/pkg/__init__.py")).unwrap(), b"X = 1\n");
        assert!(!dest.join("site/pkg/link").exists(), "symlinks are dropped");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dest.join("site/bin/tool"))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777;
        assert_eq!(mode, 0o755, "setuid bits never survive");
        assert!(dest.join(COMPLETE_MARKER).exists());
    }

    #[test]
    fn unpacking_refuses_escapes() {
        let cache = tempfile::tempdir().unwrap();
        let archive = tar_with(&[("../escape.py", tar::EntryType::Regular, b"x")]);
        let err = unpack_into_cache(&archive, cache.path(), &cache.path().join("key")).unwrap_err();
        assert!(err.to_string().contains("unsafe path"), "{err}");
        assert!(!cache.path().join("escape.py").exists());
    }
}
