//! Starting a sandbox container with the bootstrap waiting on stdin, and the frame that hands it
//! one job.
//!
//! The container's PID 1 is `src/bootstrap.py` (passed in the environment, so a bootstrap change
//! needs no image rebuild). Warm and cold containers are started the same way; a warm one is
//! simply started before its job exists.

use crate::config::SandboxConfig;
use crate::docker::{self, ContainerSpec, Engine, NetworkMode};
use crate::error::SandboxError;
use airlock_protocol::{Inputs, Language, Limits};
use bollard::container::AttachContainerResults;
use bollard::query_parameters::{AttachContainerOptionsBuilder, CreateContainerOptionsBuilder};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Instant;

/// The bootstrap: PID 1 of every sandbox container.
pub const BOOTSTRAP: &str = include_str!("bootstrap.py");
const BOOT_COMMAND: &str = "import os;exec(os.environ['AIRLOCK_BOOT'])";
const MAGIC: &[u8; 8] = b"AIRLOCK1";

/// A started container whose bootstrap waits for its frame.
pub struct Launched {
    pub id: String,
    pub name: String,
    pub image: String,
    /// The container's limits (a job may run in it only with these).
    pub limits: Limits,
    pub attach: AttachContainerResults,
    /// PID 1 as the host sees it, when the engine told us.
    pub host_pid: Option<u32>,
    pub started: Instant,
}

/// What a container is made for.
pub struct LaunchRequest<'a> {
    pub image: &'a str,
    pub limits: Limits,
    pub role: &'a str,
    pub request: &'a str,
    /// How long the bootstrap waits for its frame before exiting by itself.
    pub idle_secs: u64,
    pub read_only_binds: Vec<(String, String)>,
}

/// Creates, attaches (before start, so no output is lost) and starts one container; on any
/// failure the container is removed again.
pub async fn launch(
    engine: &Engine,
    config: &SandboxConfig,
    request: LaunchRequest<'_>,
) -> Result<Launched, SandboxError> {
    let name = docker::object_name(config, request.role, request.request);
    let mut env = docker::base_env();
    env.push(format!("AIRLOCK_BOOT={BOOTSTRAP}"));
    env.push(format!("AIRLOCK_IDLE_S={}", request.idle_secs));
    let body = docker::container_body(ContainerSpec {
        image: request.image.to_owned(),
        limits: request.limits,
        labels: docker::labels(config, request.role, request.request),
        env,
        cmd: vec!["python3".into(), "-I".into(), "-c".into(), BOOT_COMMAND.into()],
        network: NetworkMode::None,
        read_only_binds: request.read_only_binds,
        tmpfs_noexec: config.limits.tmpfs_noexec,
        shm_bytes: config.limits.shm_bytes,
    });
    let created = engine
        .docker
        .create_container(Some(CreateContainerOptionsBuilder::default().name(&name).build()), body)
        .await
        .map_err(|e| start_error(engine, request.image, e))?;
    let id = created.id;
    match attach_and_start(engine, request.image, &id).await {
        Ok((attach, host_pid)) => Ok(Launched {
            id,
            name,
            image: request.image.to_owned(),
            limits: request.limits,
            attach,
            host_pid,
            started: Instant::now(),
        }),
        Err(error) => {
            if let Err(cleanup) = docker::remove_container(engine, &id).await {
                tracing::warn!(container = %id, error = %cleanup, "removing a container that failed to start");
            }
            Err(error)
        }
    }
}

async fn attach_and_start(
    engine: &Engine,
    image: &str,
    id: &str,
) -> Result<(AttachContainerResults, Option<u32>), SandboxError> {
    let attach = engine
        .docker
        .attach_container(
            id,
            Some(
                AttachContainerOptionsBuilder::default()
                    .stdin(true)
                    .stdout(true)
                    .stderr(true)
                    .stream(true)
                    .logs(false)
                    .build(),
            ),
        )
        .await
        .map_err(|e| start_error(engine, image, e))?;
    engine
        .docker
        .start_container(id, None::<bollard::query_parameters::StartContainerOptions>)
        .await
        .map_err(|e| start_error(engine, image, e))?;
    let inspect = engine
        .docker
        .inspect_container(id, None::<bollard::query_parameters::InspectContainerOptions>)
        .await
        .map_err(|e| engine.err(e))?;
    let host_pid = inspect
        .state
        .and_then(|s| s.pid)
        .and_then(|p| u32::try_from(p).ok())
        .filter(|p| *p > 0);
    Ok((attach, host_pid))
}

fn start_error(engine: &Engine, image: &str, error: bollard::errors::Error) -> SandboxError {
    match error {
        bollard::errors::Error::DockerResponseServerError {
            status_code: 404,
            message,
        } if message.contains("image") => SandboxError::ImageMissing {
            image: image.to_owned(),
        },
        bollard::errors::Error::DockerResponseServerError { status_code, message } => {
            SandboxError::StartFailed(format!("{status_code}: {message}"))
        }
        other => engine.err(other),
    }
}

#[derive(Serialize)]
struct FrameHeader<'a> {
    language: &'a str,
    args: &'a [String],
    env: BTreeMap<String, String>,
    code_len: usize,
    wall_ms: u64,
    grace_ms: u64,
    park_ms: u64,
    path: Vec<String>,
    end_marker: &'a str,
}

/// The bytes that hand a job to a waiting bootstrap: magic, header length, JSON header, code.
/// The program's stdin follows on the same stream.
pub fn frame(
    language: Language,
    code: &[u8],
    inputs: &Inputs,
    wall_ms: u64,
    config: &SandboxConfig,
    with_packages: bool,
    end_marker: &str,
) -> Result<Vec<u8>, SandboxError> {
    let mut env = BTreeMap::new();
    let mut path = Vec::new();
    if with_packages {
        path.push(docker::PACKAGES_MOUNT.to_owned());
        // Bash programs reach the packages' modules and scripts through the environment.
        env.insert("PYTHONPATH".to_owned(), docker::PACKAGES_MOUNT.to_owned());
        env.insert(
            "PATH".to_owned(),
            format!(
                "{}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                docker::PACKAGES_MOUNT
            ),
        );
    }
    env.extend(inputs.env.iter().map(|(k, v)| (k.clone(), v.clone())));
    let header = FrameHeader {
        language: language.as_str(),
        args: &inputs.args,
        env,
        code_len: code.len(),
        wall_ms,
        grace_ms: config.limits.grace_ms,
        park_ms: config.limits.park_ms,
        path,
        end_marker,
    };
    let header = serde_json::to_vec(&header).map_err(|e| SandboxError::Internal(format!("frame header: {e}")))?;
    let header_len = u32::try_from(header.len())
        .map_err(|_| SandboxError::InvalidJob("arguments and environment are too large".into()))?;
    let mut frame = Vec::with_capacity(MAGIC.len() + 4 + header.len() + code.len());
    frame.extend_from_slice(MAGIC);
    frame.extend_from_slice(&header_len.to_be_bytes());
    frame.extend_from_slice(&header);
    frame.extend_from_slice(code);
    Ok(frame)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_layout() {
        let inputs = Inputs {
            args: vec!["a b".into()],
            env: [("K".to_owned(), "v".to_owned())].into(),
            stdin: b"ignored here".to_vec(),
        };
        let f = frame(
            Language::Bash,
            b"echo hi",
            &inputs,
            1000,
            &SandboxConfig::default(),
            false,
            "END",
        )
        .unwrap();
        assert_eq!(&f[..8], MAGIC);
        let len = u32::from_be_bytes([f[8], f[9], f[10], f[11]]) as usize;
        let header: serde_json::Value = serde_json::from_slice(&f[12..12 + len]).unwrap();
        assert_eq!(header["language"], "bash");
        assert_eq!(header["args"][0], "a b");
        assert_eq!(header["env"]["K"], "v");
        assert_eq!(header["code_len"], 7);
        assert_eq!(header["end_marker"], "END");
        assert_eq!(&f[12 + len..], b"echo hi");
    }
}
