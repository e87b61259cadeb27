//! Starting a sandbox container with the bootstrap waiting on stdin, and the frame that hands it
//! one job.
//!
//! The container's PID 1 is `src/bootstrap.py` (passed in the environment, so a bootstrap change
//! needs no image rebuild). Warm and cold containers are started the same way; a warm one is
//! simply started before its job exists.

use crate::config::{HostConfig, SandboxConfig};
use crate::docker::{self, ContainerEngine, ContainerSpec, NetworkMode};
use crate::error::SandboxError;
use airlock_protocol::{InputFile, Inputs, Language, Limits, Runtime};
use bollard::container::AttachContainerResults;
use bollard::query_parameters::{AttachContainerOptionsBuilder, CreateContainerOptionsBuilder};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// A duration as the whole milliseconds the bootstrap's frame header carries.
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

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
    /// The runtime it runs under (a job may run in it only under this one).
    pub runtime: Runtime,
    pub attach: AttachContainerResults,
    /// PID 1 as the host sees it, when the engine told us.
    pub host_pid: Option<u32>,
    /// Whether this process could see PID 1 in the container's cgroup when it started (an
    /// executor without the host's /proc cannot).
    pub seen_from_host: bool,
    pub started: Instant,
    /// Under runsc, gVisor's trace session for this sandbox, set up before any job reaches it
    /// (or why there is none); `None` under runc or with observation turned off.
    pub trace: Option<Result<crate::gvisor_trace::Trace, String>>,
    /// Processes of Airlock's own in the sandbox besides PID 1 (a read-only run's relay under
    /// gVisor), which gVisor's count of the program's processes leaves out.
    pub helpers: u32,
}

impl Launched {
    /// Whether PID 1 is visibly gone: it was seen from the host at the start and is not there
    /// now (it exits as soon as its stdin closes, which the engine does when it drops the
    /// attach connection). `false` when it cannot be told from here.
    pub fn is_gone(&self, host: &HostConfig) -> bool {
        self.seen_from_host && !in_cgroup_of(host, self.host_pid, &self.id)
    }
}

/// Whether `pid` is, per the host's /proc, a process in container `id`'s cgroup (cgroupfs paths
/// name the container).
fn in_cgroup_of(host: &HostConfig, pid: Option<u32>, id: &str) -> bool {
    let Some(pid) = pid else { return false };
    std::fs::read_to_string(host.proc_root.join(pid.to_string()).join("cgroup")).is_ok_and(|text| text.contains(id))
}

/// What a container is made for.
pub struct LaunchRequest<'a> {
    pub image: &'a str,
    pub limits: Limits,
    pub runtime: Runtime,
    pub role: &'a str,
    pub request: &'a str,
    /// How long the bootstrap waits for its frame before exiting by itself.
    pub idle_secs: u64,
    pub read_only_binds: Vec<(String, String)>,
    /// No network, or a read-only run's ([`crate::network::ReadOnlyNet`]).
    pub network: NetworkMode,
    /// Added to the base environment (a read-only run's proxy and CA).
    pub extra_env: Vec<String>,
}

/// Creates, attaches (before start, so no output is lost) and starts one container; on any
/// failure the container is removed again.
pub async fn launch(
    engine: &ContainerEngine,
    config: &SandboxConfig,
    request: LaunchRequest<'_>,
) -> Result<Launched, SandboxError> {
    let name = docker::object_name(config, request.role, request.request);
    let mut env = docker::base_env();
    env.push(format!("AIRLOCK_BOOT={BOOTSTRAP}"));
    env.push(format!("AIRLOCK_IDLE_S={}", request.idle_secs));
    env.extend(request.extra_env);
    let helpers = request.network.helpers();
    let body = docker::container_body(ContainerSpec {
        image: request.image.to_owned(),
        limits: request.limits,
        labels: docker::labels(config, request.role, request.request),
        env,
        cmd: vec!["python3".into(), "-I".into(), "-c".into(), BOOT_COMMAND.into()],
        network: request.network,
        read_only_binds: request.read_only_binds,
        tmpfs_noexec: config.limits.tmpfs_noexec,
        shm_bytes: config.limits.shm_bytes,
        runtime: request.runtime,
        bootstrap: true,
    });
    let created = engine
        .docker
        .create_container(Some(CreateContainerOptionsBuilder::default().name(&name).build()), body)
        .await
        .map_err(|e| start_error(engine, request.image, "create a sandbox container", e))?;
    let id = created.id;
    match attach_and_start(engine, request.image, &id).await {
        Ok((attach, host_pid)) => Ok(Launched {
            seen_from_host: in_cgroup_of(&config.host, host_pid, &id),
            trace: gvisor_trace(config, request.runtime, host_pid, &id).await,
            helpers,
            id,
            name,
            image: request.image.to_owned(),
            limits: request.limits,
            runtime: request.runtime,
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

/// Under runsc, with observation on, gVisor's trace session: set up here, while a warm
/// container waits in the pool, so that a job never waits for it. A failure is the record's
/// reason, never the run's.
async fn gvisor_trace(
    config: &SandboxConfig,
    runtime: Runtime,
    host_pid: Option<u32>,
    id: &str,
) -> Option<Result<crate::gvisor_trace::Trace, String>> {
    if runtime != Runtime::Runsc || !config.observe.enabled {
        return None;
    }
    let Some(pid) = host_pid else {
        return Some(Err("the engine did not report the sandbox's process".into()));
    };
    let trace = crate::gvisor_trace::Trace::open(&config.host.proc_root, pid, id).await;
    if let Err(error) = &trace {
        tracing::warn!(container = %id, %error, "no gVisor trace session for this sandbox");
    }
    Some(trace.map_err(|error| error.to_string()))
}

async fn attach_and_start(
    engine: &ContainerEngine,
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
        .map_err(|e| start_error(engine, image, "attach to a sandbox container", e))?;
    engine
        .docker
        .start_container(id, None::<bollard::query_parameters::StartContainerOptions>)
        .await
        .map_err(|e| start_error(engine, image, "start a sandbox container", e))?;
    let inspect = engine
        .docker
        .inspect_container(id, None::<bollard::query_parameters::InspectContainerOptions>)
        .await
        .map_err(|e| engine.err("inspect a started container", e))?;
    let host_pid = inspect
        .state
        .and_then(|s| s.pid)
        .and_then(|p| u32::try_from(p).ok())
        .filter(|p| *p > 0);
    Ok((attach, host_pid))
}

/// A refusal to make the container: the image is missing, the engine said no, or it is gone.
fn start_error(
    engine: &ContainerEngine,
    image: &str,
    action: &'static str,
    error: bollard::errors::Error,
) -> SandboxError {
    match error {
        bollard::errors::Error::DockerResponseServerError {
            status_code: 404,
            ref message,
        } if message.contains("image") => SandboxError::ImageMissing {
            image: image.to_owned(),
        },
        source @ bollard::errors::Error::DockerResponseServerError { .. } => SandboxError::StartFailed {
            role: "sandbox",
            source,
        },
        other => engine.err(action, other),
    }
}

/// One job as the bootstrap receives it. The frame is `MAGIC`, the JSON header's length (4
/// bytes, big-endian), the JSON header, then the code; the program's stdin follows on the same
/// stream. `bootstrap.py` reads it; [`Frame::decode`] is the same reading in Rust, so that tests
/// and the fuzzer can check that what the executor sends is exactly what the job asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    pub language: Language,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// Directories put in front of Python's `sys.path` (the packages' mount).
    pub path: Vec<String>,
    pub wall_ms: u64,
    /// How long after `wall_ms` PID 1 kills the program by itself (the executor is gone).
    pub grace_ms: u64,
    /// How long PID 1 waits, parked, for the executor to look at what the program left; 0: it
    /// exits as soon as the program is over.
    pub park_ms: u64,
    pub code: Vec<u8>,
    /// Files placed in the working directory before the program starts (checked names).
    pub files: Vec<InputFile>,
    /// Whether PID 1 seals the run (see `StartWatch` in `tally.rs`): only where it runs as
    /// another user than the program (gVisor), which the bootstrap checks too.
    pub seal: bool,
}

/// A file's place in the frame: its bytes follow the code, in this order.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FrameFile {
    name: String,
    len: usize,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FrameHeader {
    language: Language,
    args: Vec<String>,
    env: BTreeMap<String, String>,
    code_len: usize,
    wall_ms: u64,
    grace_ms: u64,
    park_ms: u64,
    path: Vec<String>,
    #[serde(default)]
    files: Vec<FrameFile>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    seal: bool,
}

/// Why bytes are not a frame (only a decoder's concern: the executor builds frames itself).
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("the frame is cut short: {needed} bytes needed, {available} available")]
    Short { needed: usize, available: usize },
    #[error("the frame does not start with the magic bytes")]
    Magic,
    #[error("the frame header is not valid JSON of the expected shape")]
    Header(#[source] serde_json::Error),
}

impl Frame {
    /// The frame of a job: its inputs, and the packages' directories when it has packages.
    pub fn for_job(
        language: Language,
        code: &[u8],
        inputs: &Inputs,
        wall_ms: u64,
        config: &SandboxConfig,
        with_packages: bool,
    ) -> Frame {
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
        Frame {
            language,
            args: inputs.args.clone(),
            env,
            path,
            wall_ms,
            grace_ms: millis(config.limits.grace),
            park_ms: millis(config.limits.park),
            code: code.to_vec(),
            files: inputs.files.clone(),
            seal: false,
        }
    }

    /// The bytes that hand this job to a waiting bootstrap.
    pub fn encode(&self) -> Result<Vec<u8>, SandboxError> {
        let header = FrameHeader {
            language: self.language,
            args: self.args.clone(),
            env: self.env.clone(),
            code_len: self.code.len(),
            wall_ms: self.wall_ms,
            grace_ms: self.grace_ms,
            park_ms: self.park_ms,
            path: self.path.clone(),
            files: self
                .files
                .iter()
                .map(|f| FrameFile {
                    name: f.name.clone(),
                    len: f.content.len(),
                })
                .collect(),
            seal: self.seal,
        };
        let header = serde_json::to_vec(&header).map_err(|source| SandboxError::Frame { source })?;
        let header_len = u32::try_from(header.len())
            .map_err(|_| SandboxError::InvalidJob("arguments and environment are too large".into()))?;
        let mut frame = Vec::with_capacity(MAGIC.len() + 4 + header.len() + self.code.len());
        frame.extend_from_slice(MAGIC);
        frame.extend_from_slice(&header_len.to_be_bytes());
        frame.extend_from_slice(&header);
        frame.extend_from_slice(&self.code);
        for file in &self.files {
            frame.extend_from_slice(&file.content);
        }
        Ok(frame)
    }

    /// Reads a frame as the bootstrap does; returns it and what follows it (the program's stdin).
    pub fn decode(bytes: &[u8]) -> Result<(Frame, &[u8]), FrameError> {
        let take = |from: usize, len: usize| -> Result<&[u8], FrameError> {
            let end = from.checked_add(len).filter(|end| *end <= bytes.len());
            end.map(|end| &bytes[from..end]).ok_or(FrameError::Short {
                needed: from.saturating_add(len),
                available: bytes.len(),
            })
        };
        if take(0, MAGIC.len())? != MAGIC {
            return Err(FrameError::Magic);
        }
        let len = take(MAGIC.len(), 4)?;
        let header_len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
        let header_at = MAGIC.len() + 4;
        let header: FrameHeader = serde_json::from_slice(take(header_at, header_len)?).map_err(FrameError::Header)?;
        let code_at = header_at + header_len;
        let code = take(code_at, header.code_len)?;
        let mut at = code_at + header.code_len;
        let mut files = Vec::with_capacity(header.files.len());
        for file in header.files {
            files.push(InputFile::new(file.name, take(at, file.len)?));
            at += file.len;
        }
        let frame = Frame {
            language: header.language,
            args: header.args,
            env: header.env,
            path: header.path,
            wall_ms: header.wall_ms,
            grace_ms: header.grace_ms,
            park_ms: header.park_ms,
            code: code.to_vec(),
            files,
            seal: header.seal,
        };
        Ok((frame, &bytes[at..]))
    }
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
            files: vec![],
        };
        let frame = Frame::for_job(
            Language::Bash,
            b"echo hi",
            &inputs,
            1000,
            &SandboxConfig::default(),
            false,
        );
        let f = frame.encode().unwrap();
        assert_eq!(&f[..8], MAGIC);
        let len = u32::from_be_bytes([f[8], f[9], f[10], f[11]]) as usize;
        let header: serde_json::Value = serde_json::from_slice(&f[12..12 + len]).unwrap();
        assert_eq!(header["language"], "bash");
        assert_eq!(header["args"][0], "a b");
        assert_eq!(header["env"]["K"], "v");
        assert_eq!(header["code_len"], 7);
        assert_eq!(&f[12 + len..], b"echo hi");
        let mut with_stdin = f.clone();
        with_stdin.extend_from_slice(b"stdin");
        let (decoded, rest) = Frame::decode(&with_stdin).unwrap();
        assert_eq!((decoded, rest), (frame, &b"stdin"[..]));
    }

    #[test]
    fn files_follow_the_code_in_their_order_and_then_stdin() {
        let inputs = Inputs {
            files: vec![InputFile::new("a.csv", "x,y\n"), InputFile::new("in/b.txt", "")],
            ..Default::default()
        };
        let frame = Frame::for_job(
            Language::Python,
            b"print(1)",
            &inputs,
            1,
            &SandboxConfig::default(),
            false,
        );
        let mut bytes = frame.encode().unwrap();
        assert!(bytes.ends_with(b"print(1)x,y\n"));
        bytes.extend_from_slice(b"stdin");
        let (decoded, rest) = Frame::decode(&bytes).unwrap();
        assert_eq!((decoded, rest), (frame, &b"stdin"[..]));
        let cut = &bytes[..bytes.len() - 7];
        assert!(matches!(Frame::decode(cut), Err(FrameError::Short { .. })));
    }

    #[test]
    fn a_frame_with_packages_points_python_and_bash_at_them() {
        let inputs = Inputs {
            env: [("PATH".to_owned(), "/mine".to_owned())].into(),
            ..Default::default()
        };
        let frame = Frame::for_job(Language::Python, b"x", &inputs, 1, &SandboxConfig::default(), true);
        assert_eq!(frame.path, vec![docker::PACKAGES_MOUNT.to_owned()]);
        assert_eq!(frame.env["PYTHONPATH"], docker::PACKAGES_MOUNT);
        assert_eq!(frame.env["PATH"], "/mine", "the job's own variables win");
    }

    #[test]
    fn truncated_or_foreign_bytes_are_not_a_frame() {
        let frame = Frame::for_job(
            Language::Python,
            b"print(1)",
            &Inputs::default(),
            1,
            &SandboxConfig::default(),
            false,
        )
        .encode()
        .unwrap();
        for cut in 0..frame.len() {
            assert!(Frame::decode(&frame[..cut]).is_err(), "{cut} bytes decoded");
        }
        let mut foreign = frame.clone();
        foreign[0] = b'X';
        assert!(matches!(Frame::decode(&foreign), Err(FrameError::Magic)));
        let mut huge = frame;
        huge[8..12].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(matches!(Frame::decode(&huge), Err(FrameError::Short { .. })));
    }
}
