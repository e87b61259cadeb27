//! The Docker engine as the sandbox uses it: the connection (negotiated down to the engine's API
//! version, 1.41 here), the labels that let a restarted executor find what a crashed one left,
//! and the one hardened container definition every sandbox container is made from.

use crate::config::{RuntimesConfig, SandboxConfig};
use crate::error::{SandboxError, from_docker};
use airlock_protocol::{Limits, Runtime};
use bollard::Docker;
use bollard::models::{ContainerCreateBody, HostConfig, HostConfigLogConfig, ResourcesUlimits};
use std::collections::HashMap;

/// Label naming the executor instance that made a container or network.
pub const LABEL_EXECUTOR: &str = "airlock.executor";
/// Label naming the request a container runs (`warm` until a warm container is taken).
pub const LABEL_REQUEST: &str = "airlock.request";
/// Label naming what the object is: `sandbox`, `install`, `egress`.
pub const LABEL_ROLE: &str = "airlock.role";
/// Every object the sandbox makes carries this label, whatever the instance.
pub const LABEL_MANAGED: &str = "airlock.managed";

/// Where installed packages appear inside the program's container (read-only).
pub const PACKAGES_MOUNT: &str = "/opt/airlock/packages";
/// The program's working directory: the sandbox's writable tmpfs, where its files are placed
/// and whose `out/` comes back.
pub const WORKING_DIR: &str = "/tmp";

/// The engine, and the endpoint name used in errors.
#[derive(Clone)]
pub struct ContainerEngine {
    pub docker: Docker,
    pub endpoint: String,
}

impl ContainerEngine {
    /// Connects and negotiates the API version; a missing socket or a dead daemon is
    /// [`SandboxError::DockerUnreachable`].
    pub async fn connect(config: &SandboxConfig) -> Result<ContainerEngine, SandboxError> {
        let endpoint = config
            .docker_host
            .clone()
            .or_else(|| std::env::var("DOCKER_HOST").ok())
            .unwrap_or_else(|| "unix:///var/run/docker.sock".to_owned());
        let version = bollard::API_DEFAULT_VERSION;
        let docker = if let Some(path) = endpoint.strip_prefix("unix://") {
            Docker::connect_with_unix(path, config.docker_timeout.as_secs(), version)
        } else if endpoint.starts_with("tcp://") || endpoint.starts_with("http://") {
            Docker::connect_with_http(&endpoint, config.docker_timeout.as_secs(), version)
        } else {
            Docker::connect_with_unix(&endpoint, config.docker_timeout.as_secs(), version)
        }
        .map_err(|e| from_docker(&endpoint, "connect", e))?;
        // bollard speaks a newer API than Debian's engine; without this every call is refused.
        let docker = docker
            .negotiate_version()
            .await
            .map_err(|e| from_docker(&endpoint, "negotiate the API version", e))?;
        Ok(ContainerEngine { docker, endpoint })
    }

    /// The error of a call that failed while trying to `action`.
    pub fn err(&self, action: &'static str, error: bollard::errors::Error) -> SandboxError {
        from_docker(&self.endpoint, action, error)
    }
}

/// Checks that the engine has every runtime `runtimes` needs registered under its name (gVisor
/// as `runsc`, and as `runsc-read-only` for read-only runs, in `/etc/docker/daemon.json`): a
/// configured runtime that is missing stops the executor with the reason, rather than failing
/// each run that needs it.
pub async fn check_runtimes(engine: &ContainerEngine, runtimes: &RuntimesConfig) -> Result<(), SandboxError> {
    let info = engine
        .docker
        .info()
        .await
        .map_err(|e| engine.err("read the engine's runtimes", e))?;
    let registered = info.runtimes.unwrap_or_default();
    for name in runtimes.engine_names() {
        if !registered.contains_key(name) {
            let mut names: Vec<&str> = registered.keys().map(String::as_str).collect();
            names.sort_unstable();
            let runtime = if name == Runtime::Runc.as_str() {
                Runtime::Runc
            } else {
                Runtime::Runsc
            };
            return Err(SandboxError::RuntimeUnavailable {
                runtime: runtime.as_str(),
                reason: format!(
                    "the engine at {} has no runtime named {name} (it has {}); `ops/install-deps` installs gVisor and registers runsc and {}",
                    engine.endpoint,
                    names.join(", "),
                    crate::config::RUNSC_READ_ONLY,
                ),
            });
        }
    }
    Ok(())
}

/// Labels of one object.
pub fn labels(config: &SandboxConfig, role: &str, request: &str) -> HashMap<String, String> {
    let mut labels: HashMap<String, String> = config.labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    labels.insert(LABEL_MANAGED.to_owned(), "true".to_owned());
    labels.insert(LABEL_EXECUTOR.to_owned(), config.instance.clone());
    labels.insert(LABEL_ROLE.to_owned(), role.to_owned());
    labels.insert(LABEL_REQUEST.to_owned(), request.to_owned());
    labels
}

/// A Docker-safe name: `airlock-{instance}-{role}-{request}-{random}`.
pub fn object_name(config: &SandboxConfig, role: &str, request: &str) -> String {
    let clean = |s: &str, max: usize| -> String {
        s.chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .take(max)
            .collect()
    };
    // The tail of a v7 UUID is random (its head is the time).
    let random = uuid::Uuid::now_v7().simple().to_string();
    format!(
        "airlock-{}-{}-{}-{}",
        clean(&config.instance, 24),
        role,
        clean(request, 40),
        &random[random.len() - 12..]
    )
}

/// How a container reaches the network.
pub enum NetworkMode {
    /// No interface but loopback: the program's containers.
    None,
    /// An internal network whose only way out is the egress proxy at `gateway`; DNS goes to the
    /// gateway too, where nothing answers, so names cannot leak through Docker's resolver.
    Egress { network: String, gateway: String },
    /// No interface but loopback, as `None`, under the engine runtime `runtime`: gVisor's
    /// registration that may connect to a host unix socket mounted into the container (a
    /// read-only run's proxy under runsc, reached through the bootstrap's relay, one process
    /// of Airlock's own in the sandbox besides PID 1).
    Relay { runtime: String },
}

impl NetworkMode {
    /// Processes of Airlock's own a container with this network holds besides PID 1.
    pub fn helpers(&self) -> u32 {
        match self {
            NetworkMode::Relay { .. } => 1,
            NetworkMode::None | NetworkMode::Egress { .. } => 0,
        }
    }
}

/// Everything that varies between sandbox containers; the rest is fixed hardening.
pub struct ContainerSpec {
    pub image: String,
    pub limits: Limits,
    pub labels: HashMap<String, String>,
    pub env: Vec<String>,
    pub cmd: Vec<String>,
    pub network: NetworkMode,
    /// Read-only bind mounts, `(host path, container path)`.
    pub read_only_binds: Vec<(String, String)>,
    pub tmpfs_noexec: bool,
    pub shm_bytes: u64,
    /// The runtime it runs under (its seccomp profile follows).
    pub runtime: Runtime,
    /// Whether PID 1 is the bootstrap, which starts the program as [`PROGRAM_USER`] itself
    /// where the runtime needs it (see [`Identity`]); any other container runs as that user.
    pub bootstrap: bool,
}

/// The container definition, API 1.41 fields only. Each line is one of the limits the kernel or
/// the engine enforces; see docs/sandbox.md.
pub fn container_body(spec: ContainerSpec) -> ContainerCreateBody {
    let limits = spec.limits;
    let as_i64 = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    let mut tmpfs_options = format!("rw,nosuid,nodev,size={},mode=1777", limits.disk_bytes.max(4096));
    if spec.tmpfs_noexec {
        tmpfs_options.push_str(",noexec");
    }
    let (network_mode, dns, network_disabled) = match &spec.network {
        NetworkMode::None | NetworkMode::Relay { .. } => ("none".to_owned(), None, true),
        NetworkMode::Egress { network, gateway } => (network.clone(), Some(vec![gateway.clone()]), false),
    };
    let engine_runtime = match &spec.network {
        NetworkMode::Relay { runtime } => runtime.clone(),
        _ => spec.runtime.as_str().to_owned(),
    };
    let identity = if spec.bootstrap {
        Identity::for_bootstrap(spec.runtime)
    } else {
        Identity::PROGRAM
    };
    let mut env = spec.env;
    env.extend(identity.env());
    let host_config = HostConfig {
        network_mode: Some(network_mode),
        dns,
        readonly_rootfs: Some(true),
        cap_drop: Some(vec!["ALL".to_owned()]),
        cap_add: (!identity.init_capabilities.is_empty())
            .then(|| identity.init_capabilities.iter().map(|c| (*c).to_owned()).collect()),
        // Airlock's own seccomp profile (src/seccomp.rs), never the engine's default.
        security_opt: Some(vec![
            "no-new-privileges".to_owned(),
            crate::seccomp::security_opt(spec.runtime),
        ]),
        privileged: Some(false),
        pids_limit: Some(host_pids_limit(spec.runtime, limits.pids)),
        memory: Some(as_i64(limits.memory_bytes)),
        // Equal to `memory`: no swap at all.
        memory_swap: Some(as_i64(limits.memory_bytes)),
        nano_cpus: Some(i64::from(limits.cpu_millis.max(1)) * 1_000_000),
        // The host's OOM killer picks sandbox processes first, never the host's.
        oom_score_adj: Some(1000),
        tmpfs: Some(HashMap::from([("/tmp".to_owned(), tmpfs_options)])),
        ipc_mode: Some(if spec.shm_bytes == 0 { "none" } else { "private" }.to_owned()),
        shm_size: (spec.shm_bytes > 0).then(|| as_i64(spec.shm_bytes)),
        ulimits: Some(ulimits(spec.runtime, &limits)),
        // Output is read from the attach stream only; no log file can fill the host's disk.
        log_config: Some(HostConfigLogConfig {
            typ: Some("none".to_owned()),
            config: None,
        }),
        binds: (!spec.read_only_binds.is_empty()).then(|| {
            spec.read_only_binds
                .iter()
                .map(|(host, inside)| format!("{host}:{inside}:ro"))
                .collect()
        }),
        init: Some(false),
        auto_remove: Some(false),
        // Named even for runc: an engine whose default runtime is another must not choose.
        runtime: Some(engine_runtime),
        ..Default::default()
    };
    ContainerCreateBody {
        image: Some(spec.image),
        hostname: Some("sandbox".to_owned()),
        user: Some(identity.init_user.to_owned()),
        working_dir: Some(WORKING_DIR.to_owned()),
        env: Some(env),
        cmd: Some(spec.cmd),
        entrypoint: Some(vec![]),
        labels: Some(spec.labels),
        network_disabled: Some(network_disabled),
        attach_stdin: Some(true),
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        open_stdin: Some(true),
        stdin_once: Some(true),
        tty: Some(false),
        host_config: Some(host_config),
        ..Default::default()
    }
}

/// The unprivileged user every sandboxed program runs as.
pub const PROGRAM_USER: &str = "1000:1000";

/// Who PID 1 (the bootstrap) runs as, and how the program becomes [`PROGRAM_USER`].
struct Identity {
    init_user: &'static str,
    /// Added to an otherwise empty set; the program's process gives them up before it runs.
    init_capabilities: &'static [&'static str],
    /// Whether the bootstrap changes the program's user (`AIRLOCK_RUN_AS`).
    switches: bool,
}

impl Identity {
    /// Everything runs as the program's user, without capabilities.
    const PROGRAM: Self = Self {
        init_user: PROGRAM_USER,
        init_capabilities: &[],
        switches: false,
    };

    /// Under runc PID 1 is the program's user already: Linux ignores a signal sent to init
    /// from inside its namespace unless init handles it. gVisor (2022-12-19) does not, so a
    /// program could SIGKILL PID 1 and end its own sandbox before the end marker; there PID 1
    /// is root inside gVisor's kernel (never the host's: gVisor's users are its own) with only
    /// what it needs to start the program as another user (SETUID, SETGID, SETPCAP to empty the
    /// bounding set) and to end every process it leaves (KILL), and a process of another user
    /// without capabilities cannot signal it. It also reads the files the program left under
    /// `out/` whatever their mode (DAC_READ_SEARCH), as the host does under runc.
    fn for_bootstrap(runtime: Runtime) -> Self {
        match runtime {
            Runtime::Runc => Self::PROGRAM,
            Runtime::Runsc => Self {
                init_user: "0:0",
                init_capabilities: &["SETUID", "SETGID", "SETPCAP", "KILL", "DAC_READ_SEARCH"],
                switches: true,
            },
        }
    }

    fn env(&self) -> Option<String> {
        self.switches.then(|| format!("AIRLOCK_RUN_AS={PROGRAM_USER}"))
    }
}

/// The container's resource limits (setrlimit), the same for every process in it.
fn ulimits(runtime: Runtime, limits: &Limits) -> Vec<ResourcesUlimits> {
    let ulimit = |name: &str, value: u64| ResourcesUlimits {
        name: Some(name.to_owned()),
        soft: Some(i64::try_from(value).unwrap_or(i64::MAX)),
        hard: Some(i64::try_from(value).unwrap_or(i64::MAX)),
    };
    let mut ulimits = vec![
        ulimit("nofile", u64::from(limits.open_files.max(16))),
        // No single file larger than the writable space; no core dumps at all.
        ulimit("fsize", limits.disk_bytes.max(4096)),
        ulimit("core", 0),
    ];
    // Under gVisor the program's processes live in gVisor's kernel, which the host's pids cgroup
    // sees only through the host threads they use (a zombie uses few, so zombies piled up far
    // past the limit). gVisor's kernel counts them itself against RLIMIT_NPROC, zombies
    // included; the executor asks it for that count every 3 s (`inside.rs`) and ends the
    // run as a pids violation past `pids`. Set at twice the pids limit, RLIMIT_NPROC bounds
    // what the time between two looks may hold. Not under runc, where RLIMIT_NPROC counts every process of the
    // sandbox user on the host (every other sandbox's too) and the pids cgroup already counts
    // this container's alone.
    if runtime == Runtime::Runsc {
        ulimits.push(ulimit("nproc", u64::from(runsc_process_bound(limits.pids))));
    }
    ulimits
}

/// Host threads a gVisor sandbox uses at rest (39 measured on the ptrace platform; more under
/// load, when Go's runtime starts threads for blocked calls), with room to spare.
const RUNSC_HOST_THREADS_AT_REST: u32 = 128;
/// Host threads gVisor adds for each process of the program on the ptrace platform (6 measured:
/// 63 with 4 subprocesses, 136 with 16, 332 with 50), with room to spare.
const RUNSC_HOST_THREADS_PER_PROCESS: u32 = 8;

/// The most processes gVisor's kernel lets the program hold (`RLIMIT_NPROC` there, zombies
/// included): twice its pids limit, for the time between two looks inside.
fn runsc_process_bound(pids: u32) -> u32 {
    pids.max(1).saturating_mul(2)
}

/// The engine's pids limit (the host's pids cgroup) for a program allowed `pids` processes.
/// Under runc the host's cgroup holds the program's own processes and threads. Under runsc it
/// holds gVisor's threads instead, and past it the host refuses gVisor a thread and the whole
/// sandbox dies (Go's exit status 2, before PID 1's end marker), or, with a `docker exec` in
/// flight (a look inside), stalls for about 30 s first. The limit there is scaled to what gVisor
/// needs for as many processes as its own kernel allows ([`runsc_process_bound`]), so that its
/// own refusal comes first and the host's is a backstop that still bounds the sandbox.
fn host_pids_limit(runtime: Runtime, pids: u32) -> i64 {
    let pids = pids.max(1);
    let limit = match runtime {
        Runtime::Runc => pids,
        Runtime::Runsc => runsc_host_threads_for(runsc_process_bound(pids)),
    };
    i64::from(limit)
}

/// The host threads gVisor needs for a program of `pids` processes, with room to spare. Past it
/// (under the engine's higher limit) the program holds more processes than its limit: the
/// executor reads the sandbox's host pids cgroup and ends the run as a pids violation there.
pub(crate) fn runsc_host_threads_for(pids: u32) -> u32 {
    pids.max(1)
        .saturating_mul(RUNSC_HOST_THREADS_PER_PROCESS)
        .saturating_add(RUNSC_HOST_THREADS_AT_REST)
}

/// The environment every sandbox process starts from (a job's own variables are added on top).
pub fn base_env() -> Vec<String> {
    [
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME=/tmp",
        "TMPDIR=/tmp",
        "USER=sandbox",
        "LOGNAME=sandbox",
        "LANG=C.UTF-8",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect()
}

/// Removes every container and network labelled with this executor instance: what a crashed
/// executor left behind (on start) or what this one made (on shutdown). Returns how many
/// containers were removed.
pub async fn remove_labelled(engine: &ContainerEngine, instance: &str) -> Result<usize, SandboxError> {
    use bollard::query_parameters::{
        ListContainersOptionsBuilder, ListNetworksOptionsBuilder, RemoveContainerOptionsBuilder,
    };
    let filter = HashMap::from([("label", vec![format!("{LABEL_EXECUTOR}={instance}")])]);
    let containers = engine
        .docker
        .list_containers(Some(
            ListContainersOptionsBuilder::default()
                .all(true)
                .filters(&filter)
                .build(),
        ))
        .await
        .map_err(|e| engine.err("list containers", e))?;
    let mut removed = 0;
    for container in containers {
        let Some(id) = container.id else { continue };
        match engine
            .docker
            .remove_container(
                &id,
                Some(RemoveContainerOptionsBuilder::default().force(true).v(true).build()),
            )
            .await
        {
            Ok(()) => removed += 1,
            Err(bollard::errors::Error::DockerResponseServerError { status_code: 404, .. }) => {}
            Err(e) => return Err(engine.err("remove a container", e)),
        }
    }
    let networks = engine
        .docker
        .list_networks(Some(ListNetworksOptionsBuilder::default().filters(&filter).build()))
        .await
        .map_err(|e| engine.err("list networks", e))?;
    for network in networks {
        let Some(id) = network.id else { continue };
        match engine.docker.remove_network(&id).await {
            Ok(()) | Err(bollard::errors::Error::DockerResponseServerError { status_code: 404, .. }) => {}
            Err(e) => return Err(engine.err("remove a network", e)),
        }
    }
    Ok(removed)
}

/// Force-removes one container (and its anonymous volumes); gone already is fine.
pub async fn remove_container(engine: &ContainerEngine, id: &str) -> Result<(), SandboxError> {
    use bollard::query_parameters::RemoveContainerOptionsBuilder;
    match engine
        .docker
        .remove_container(
            id,
            Some(RemoveContainerOptionsBuilder::default().force(true).v(true).build()),
        )
        .await
    {
        Ok(()) | Err(bollard::errors::Error::DockerResponseServerError { status_code: 404, .. }) => Ok(()),
        Err(e) => Err(engine.err("remove a container", e)),
    }
}

/// [`remove_container`], tried again for a while when the engine cannot be reached (a
/// container left by a lost connection is removed once the engine is back, not at the next
/// start of the executor).
pub async fn remove_container_eventually(engine: &ContainerEngine, id: &str) {
    let mut delay = std::time::Duration::from_millis(500);
    for _ in 0..12 {
        match remove_container(engine, id).await {
            Ok(()) => return,
            Err(error) if error.is_docker_unreachable() => {
                tracing::debug!(container = %id, %error, ?delay, "the engine is away; removing the container later");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(std::time::Duration::from_secs(30));
            }
            Err(error) => {
                tracing::warn!(container = %id, %error, "removing a sandbox container; the next start removes it");
                return;
            }
        }
    }
    tracing::warn!(container = %id, "the engine stayed away; the next start of the executor removes the container");
}

/// Sends a signal to a container's PID 1; a container that is already gone is fine.
pub async fn signal(engine: &ContainerEngine, id: &str, signal: &str) -> Result<(), SandboxError> {
    use bollard::query_parameters::KillContainerOptionsBuilder;
    match engine
        .docker
        .kill_container(id, Some(KillContainerOptionsBuilder::default().signal(signal).build()))
        .await
    {
        Ok(()) => Ok(()),
        Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 404 | 409, ..
        }) => Ok(()),
        Err(e) => Err(engine.err("signal a container", e)),
    }
}

/// The container's exit status as the engine reports it once the container stopped (`docker
/// wait`): for a sandbox container, PID 1's, which is the program's.
pub async fn exit_status(engine: &ContainerEngine, id: &str) -> Result<i64, SandboxError> {
    use bollard::query_parameters::WaitContainerOptionsBuilder;
    use futures::StreamExt as _;
    let mut wait = engine.docker.wait_container(
        id,
        Some(WaitContainerOptionsBuilder::default().condition("not-running").build()),
    );
    match wait.next().await {
        Some(Ok(response)) => Ok(response.status_code),
        // bollard reports a non-zero exit as an error; it is the exit status.
        Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. })) => Ok(code),
        Some(Err(error)) => Err(engine.err("wait for a container", error)),
        None => Err(SandboxError::Internal(format!(
            "the engine ended the wait for container {id} without an exit status"
        ))),
    }
}

/// Whether the kernel's OOM killer ended the container's PID 1 (as the engine recorded it).
pub async fn oom_killed(engine: &ContainerEngine, id: &str) -> bool {
    engine
        .docker
        .inspect_container(id, None::<bollard::query_parameters::InspectContainerOptions>)
        .await
        .ok()
        .and_then(|i| i.state)
        .and_then(|s| s.oom_killed)
        == Some(true)
}

/// Whether the engine reports the container running; `true` when it cannot tell (an
/// unreachable engine is not evidence that the container stopped).
pub async fn is_running(engine: &ContainerEngine, id: &str) -> bool {
    match engine
        .docker
        .inspect_container(id, None::<bollard::query_parameters::InspectContainerOptions>)
        .await
    {
        Ok(inspect) => inspect.state.and_then(|s| s.running).unwrap_or(false),
        Err(bollard::errors::Error::DockerResponseServerError { status_code: 404, .. }) => false,
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(runtime: Runtime, bootstrap: bool) -> ContainerCreateBody {
        container_body(ContainerSpec {
            image: "airlock-sandbox:latest".to_owned(),
            limits: crate::SandboxConfig::default().quotas.untrusted,
            labels: HashMap::new(),
            env: vec!["PATH=/usr/bin".to_owned()],
            cmd: vec!["true".to_owned()],
            network: NetworkMode::None,
            read_only_binds: vec![],
            tmpfs_noexec: true,
            shm_bytes: 0,
            runtime,
            bootstrap,
        })
    }

    #[test]
    fn only_a_bootstrap_under_gvisor_starts_as_root_and_only_with_what_it_gives_up() {
        let gvisor = body(Runtime::Runsc, true);
        let host = gvisor.host_config.as_ref().unwrap();
        assert_eq!(gvisor.user.as_deref(), Some("0:0"));
        assert_eq!(host.cap_drop.as_deref(), Some(&["ALL".to_owned()][..]));
        assert_eq!(
            host.cap_add.as_deref(),
            Some(&["SETUID", "SETGID", "SETPCAP", "KILL", "DAC_READ_SEARCH"].map(str::to_owned)[..])
        );
        assert!(
            gvisor
                .env
                .as_ref()
                .unwrap()
                .contains(&format!("AIRLOCK_RUN_AS={PROGRAM_USER}"))
        );
        // Everything else runs as the program's user with nothing added: runc's bootstrap
        // (Linux shields init), and any container that is not the bootstrap (an install).
        for other in [
            body(Runtime::Runc, true),
            body(Runtime::Runsc, false),
            body(Runtime::Runc, false),
        ] {
            assert_eq!(other.user.as_deref(), Some(PROGRAM_USER));
            assert_eq!(other.host_config.as_ref().unwrap().cap_add, None);
            assert!(
                !other
                    .env
                    .as_ref()
                    .unwrap()
                    .iter()
                    .any(|v| v.starts_with("AIRLOCK_RUN_AS="))
            );
        }
    }
}
