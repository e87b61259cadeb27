//! What the sandbox is configured with. Every field has a default, so an empty `[executor]`
//! section (or `SandboxConfig::default()`) gives a working, strict sandbox.

use airlock_protocol::{Language, Limits};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

const MIB: u64 = 1024 * 1024;

/// The default image, built by [`crate::ensure_image`] from `services/executor/image/recipe.sh`.
pub const DEFAULT_IMAGE: &str = "airlock-sandbox:latest";

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct SandboxConfig {
    /// The Docker endpoint (`unix:///var/run/docker.sock`, `tcp://...`); unset: `DOCKER_HOST` or
    /// the local socket.
    pub docker_host: Option<String>,
    /// Longest wait for the engine to answer one API call (not the run itself).
    pub docker_timeout_secs: u64,
    /// The image for each language; one image carries python3 and bash.
    pub images: Images,
    /// Names this executor's containers and networks (label `airlock.executor`), so that a
    /// restarted executor finds and removes what a crashed one left. Executors sharing a Docker
    /// engine need different names.
    pub instance: String,
    /// Extra labels put on every container and network.
    pub labels: BTreeMap<String, String>,
    /// The quota of each trust level. They define the warm pool's classes, so keep them equal
    /// to the gate's quotas: a job whose limits match no class runs on the cold path.
    pub quotas: Quotas,
    pub pool: PoolConfig,
    pub host: HostConfig,
    pub limits: LimitPolicy,
    pub packages: PackagesConfig,
    pub egress: EgressSettings,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            docker_host: None,
            docker_timeout_secs: 600,
            images: Images::default(),
            instance: "local".to_owned(),
            labels: BTreeMap::new(),
            quotas: Quotas::default(),
            pool: PoolConfig::default(),
            host: HostConfig::default(),
            limits: LimitPolicy::default(),
            packages: PackagesConfig::default(),
            egress: EgressSettings::default(),
        }
    }
}

impl SandboxConfig {
    pub fn image_for(&self, language: Language) -> &str {
        match language {
            Language::Python => &self.images.python,
            Language::Bash => &self.images.bash,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct Images {
    pub python: String,
    pub bash: String,
}

impl Default for Images {
    fn default() -> Self {
        Self {
            python: DEFAULT_IMAGE.to_owned(),
            bash: DEFAULT_IMAGE.to_owned(),
        }
    }
}

/// The limits of each trust level: one definition, shared with the gate (`[quotas]`).
pub use airlock_protocol::Quotas;

/// The warm pool: pre-started containers, per image and quota class, each used once.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct PoolConfig {
    pub enabled: bool,
    /// Warm containers kept per class even when idle (the pool grows above it with load).
    pub min_idle: usize,
    /// Most warm containers per class.
    pub max_idle: usize,
    /// Most warm containers in all, whatever the classes.
    pub max_total: usize,
    /// A warm container older than this is replaced (it also exits by itself a little later,
    /// so one left by a dead executor does not live on).
    pub max_age_secs: u64,
    /// A class unused for this long shrinks back to `min_idle`.
    pub trim_after_secs: u64,
    /// Containers started at once when refilling (start-up costs CPU that running jobs want).
    pub warmup_parallelism: usize,
}

impl Default for PoolConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            min_idle: 1,
            max_idle: 4,
            max_total: 8,
            max_age_secs: 60,
            trim_after_secs: 30,
            warmup_parallelism: 2,
        }
    }
}

/// What the host keeps for itself, and how the executor watches containers.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct HostConfig {
    /// Memory never granted to sandboxes (for the host, Docker and Airlock itself).
    pub reserve_memory_bytes: u64,
    /// Most jobs running at once; unset: one per core.
    pub max_concurrent: Option<usize>,
    /// Where the cgroup v1 hierarchies are mounted, to read usage straight from the kernel.
    pub cgroup_root: PathBuf,
    /// The host's /proc, to see a container's writable space and processes from outside.
    pub proc_root: PathBuf,
    /// `auto` reads cgroup files when they are there and falls back to the Docker stats API;
    /// `api` always uses the API (an executor without the host's /proc and /sys).
    pub observe: Observe,
}

impl Default for HostConfig {
    fn default() -> Self {
        Self {
            reserve_memory_bytes: 512 * MIB,
            max_concurrent: None,
            cgroup_root: PathBuf::from("/sys/fs/cgroup"),
            proc_root: PathBuf::from("/proc"),
            observe: Observe::Auto,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Observe {
    Auto,
    Api,
}

/// How limits are applied beyond the job's own numbers.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct LimitPolicy {
    /// Ceiling on every job, whatever its decision says (the executor only ever lowers).
    pub ceiling: Limits,
    /// After the wall time, the container's own supervisor kills the program this much later:
    /// the safety net when the executor is gone.
    pub grace_ms: u64,
    /// Longest the container waits for the executor to read its final state after the program
    /// ended.
    pub park_ms: u64,
    /// How often usage samples are published while code runs.
    pub sample_ms: u64,
    /// How often the kernel's counters are read to catch violations.
    pub watch_ms: u64,
    /// Mount the writable tmpfs `noexec` (programs cannot run binaries they write).
    pub tmpfs_noexec: bool,
    /// Size of /dev/shm (POSIX semaphores for multiprocessing); 0 mounts none.
    pub shm_bytes: u64,
}

impl Default for LimitPolicy {
    fn default() -> Self {
        Self {
            ceiling: Limits {
                memory_bytes: 4096 * MIB,
                cpu_millis: 4000,
                pids: 1024,
                wall_ms: 600_000,
                output_bytes: 16 * MIB,
                disk_bytes: 1024 * MIB,
                open_files: 4096,
            },
            grace_ms: 2_000,
            park_ms: 10_000,
            sample_ms: 250,
            watch_ms: 20,
            tmpfs_noexec: true,
            shm_bytes: MIB,
        }
    }
}

/// The package-install step: a container with no user code, whose only way out is the egress
/// proxy.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct PackagesConfig {
    /// Installed package sets, one directory per set (mounted read-only into the program's
    /// container). Must be on the Docker host.
    pub cache_dir: PathBuf,
    /// Limits of the install container (its tmpfs holds the installed files, so `disk_bytes`
    /// caps a package set's size).
    pub install_limits: Limits,
    /// Install wheels only: no package's setup code ever runs at install time.
    pub only_binary: bool,
}

impl Default for PackagesConfig {
    fn default() -> Self {
        Self {
            cache_dir: std::env::temp_dir().join("airlock-packages"),
            install_limits: Limits {
                memory_bytes: 1024 * MIB,
                cpu_millis: 1000,
                pids: 128,
                wall_ms: 180_000,
                output_bytes: 64 * 1024,
                disk_bytes: 512 * MIB,
                open_files: 1024,
            },
            only_binary: true,
        }
    }
}

/// The egress proxy of the package-install step: its rules (`airlock_egress::EgressConfig`,
/// the same keys a standalone `airlock-egress` reads), and where it runs.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct EgressSettings {
    #[serde(flatten)]
    pub rules: EgressConfig,
    /// The control address of an already-running `airlock-egress` (`http://127.0.0.1:3129`):
    /// each install opens a session there, and the proxy's own configuration applies. Unset:
    /// the executor runs a proxy of its own for each install, with `rules`.
    pub proxy: Option<String>,
}

pub use airlock_egress::EgressConfig;
